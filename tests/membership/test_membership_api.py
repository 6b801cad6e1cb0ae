"""Membership risk: the estimator on a conjugate Bernoulli model (closed form), the flags, the
distance baseline by hand, the summaries, the refusals and the result API."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from bayes_risk import ArrayModel, AttackSpec, RatioSpec, infer_schema, membership_risk
from bayes_risk.exceptions import NotSupportedError, SchemaError, ValidationError
from bayes_risk.membership.dcr import closest_distance, overfitting_share
from bayes_risk.membership.estimator import posterior_membership
from bayes_risk.membership.summaries import auc
from bayes_risk.models import Sampling
from bayes_risk.results import MembershipRiskResult


# ------------------------------------------------------------------ a conjugate Bernoulli model
def _bern_loglik(records: pd.DataFrame, theta: np.ndarray) -> np.ndarray:
    x = records["a"].astype(int).to_numpy()[None, :]
    t = np.asarray(theta)[:, None]
    return x * np.log(t) + (1 - x) * np.log1p(-t)


def _bernoulli_case(H: int, seed: int, a0: float = 1.0):
    """y: 5 ones in 8; Z: 6 ones in 8; prior Beta(a0, 1): exact draws of both posteriors."""
    y = pd.DataFrame({"a": ["1"] * 5 + ["0"] * 3})
    z = pd.DataFrame({"a": ["1"] * 6 + ["0"] * 2})
    schema = infer_schema(y, categorical=["a"], synthesized=["a"])
    rng = np.random.default_rng(seed)
    th_y = stats.beta(a0 + 5, 1 + 3).rvs(H, random_state=rng)
    th_yz = stats.beta(a0 + 11, 1 + 5).rvs(H, random_state=rng)
    model = ArrayModel(_bern_loglik, th_y, schema)
    return y, z, model, model.with_draws(th_yz), a0


def _exact_log_lr(x: int, y_i: int, a0: float) -> float:
    """``log p(x | y_{-i}, Z) − log p(x | y_{-i})`` (Beta–Bernoulli predictives; m = 1)."""
    s, n = 5 - y_i, 7  # y_{-i}
    p_y = (a0 + s) / (a0 + 1 + n)
    p_yz = (a0 + s + 6) / (a0 + 1 + n + 8)
    return float(np.log(p_yz if x else 1 - p_yz) - np.log(p_y if x else 1 - p_y))


def test_bernoulli_log_lr_matches_closed_form():
    """Members (a one, a zero) and holdout records against the exact leave-one-out ratios;
    H = 40,000 exact draws, tolerance 0.01 on the log scale (Monte Carlo sd about 0.002)."""
    y, z, model, aug, a0 = _bernoulli_case(40_000, 1)
    hold = pd.DataFrame({"a": ["1", "0"]})
    res = membership_risk(model, y, z, holdout=hold, records=[0, 6], random_seed=2,
                          ratio=RatioSpec(augmented=[aug]), attack=AttackSpec(bootstrap=0))
    rec = res.records
    assert rec["role"].tolist() == ["member", "member", "non-member", "non-member"]
    xs = [1, 0, 1, 0]
    exact = [_exact_log_lr(x, int(y["a"].iloc[s] == "1"), a0)
             for x, s in zip(xs, rec["slot"], strict=True)]
    np.testing.assert_allclose(rec["log_lr"], exact, atol=0.01)
    assert (rec["flag_codes"] == "").all()
    np.testing.assert_allclose(rec["p_member"], posterior_membership(rec["log_lr"], 0.5))
    # a prior moves the posterior by Bayes' rule on the odds scale
    res2 = membership_risk(model, y, z, holdout=hold, records=[0, 6], random_seed=2,
                           ratio=RatioSpec(augmented=[aug]),
                           attack=AttackSpec(prior=0.1, bootstrap=0))
    odds = res2.records["p_member"] / (1 - res2.records["p_member"])
    np.testing.assert_allclose(np.log(odds), rec["log_lr"] + np.log(0.1 / 0.9), atol=1e-9)


def test_unstable_estimate_is_flagged_not_reported():
    """Draws θ ~ Beta(0.3, 3) make a one's leave-one-out weights 1/θ heavy-tailed (tail index
    0.3, so k = 1/0.3 > 1): the member's estimate must carry KHAT_HIGH and stay out of the
    summaries, which count it separately."""
    y, z, model, aug, _ = _bernoulli_case(400, 3)
    model = model.with_draws(stats.beta(0.3, 3).rvs(400, random_state=np.random.default_rng(5)))
    res = membership_risk(model, y, z, records=[0, 6], holdout=pd.DataFrame({"a": ["0"]}),
                          random_seed=1, ratio=RatioSpec(augmented=[aug]),
                          attack=AttackSpec(bootstrap=0))
    rec = res.records
    assert "KHAT_HIGH" in rec.loc[0, "flag_codes"].split(";")  # record 0 is a one
    assert rec.loc[0, "khat_max"] > res.settings["khat_threshold"]
    assert res.file["n_flagged_members"] >= 1
    assert "MEMBERSHIP_FLAGGED" in res.warnings
    where = {w.code: w.where for w in res.structured_warnings}
    assert where["KHAT_HIGH"].startswith("1 target(s): 0") or "0" in where["KHAT_HIGH"]
    # the summaries use the unflagged members only
    ok = (rec["role"] == "member") & (rec["flag_codes"] == "")
    assert res.file["mean_p_member_members"] == pytest.approx(rec.loc[ok, "p_member"].mean())


# ------------------------------------------------------------------ distance baseline by hand
def test_closest_distance_by_hand():
    df = pd.DataFrame({"c": ["a", "b", "a"], "x": [0.0, 10.0, 5.0]})
    schema = infer_schema(df, categorical=["c"])
    syn = [pd.DataFrame({"c": ["a"], "x": [4.0]}), pd.DataFrame({"c": ["b"], "x": [0.0]})]
    targets = pd.DataFrame({"c": ["a", "b", "b"], "x": [5.0, 10.0, np.nan]})
    d = closest_distance(targets, syn, df, schema)
    # range of x in the original is 10; distances averaged over the 2 columns
    # (a, 5): to (a, 4) = (0 + 0.1)/2; (b, 10): to (b, 0) = (0 + 1)/2, to (a, 4) = (1 + .6)/2
    # (b, nan): a missing value differs from any observed one: to (b, 0) = (0 + 1)/2
    np.testing.assert_allclose(d, [0.05, 0.5, 0.5])


def test_overfitting_share_counts_ties_half():
    df = pd.DataFrame({"c": ["a", "a"]})
    hold = pd.DataFrame({"c": ["b", "c"]})
    schema = infer_schema(pd.concat([df, hold]), categorical=["c"])
    syn = [pd.DataFrame({"c": ["a", "d"]})]  # "a": closer to training; "d": a tie
    out = overfitting_share(syn, df, hold, schema, np.random.default_rng(0))
    assert out == {"share_closer_to_training": 0.75, "share_ties": 0.5, "n_compared": 2}


def test_auc_matches_pairwise_count():
    rng = np.random.default_rng(4)
    pos, neg = rng.integers(0, 4, 30).astype(float), rng.integers(0, 4, 20).astype(float)
    pairs = (pos[:, None] > neg[None, :]) + 0.5 * (pos[:, None] == neg[None, :])
    assert auc(pos, neg) == pytest.approx(pairs.mean())
    assert np.isnan(auc(pos, neg[:0]))


# ------------------------------------------------------------------ DPMPM end to end, refusals
@pytest.fixture(scope="module")
def fitted():
    from bayes_risk.data import make_acs_like
    from bayes_risk.models import DPMPM

    df = make_acs_like(160, random_seed=1)[["SEX", "MAR", "MIG"]]
    train, hold = df.iloc[:120].reset_index(drop=True), df.iloc[120:].reset_index(drop=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = DPMPM(n_components=4, sampling=Sampling(tune=100, draws=200, chains=2, cores=1),
                      progressbar=False).fit(train, random_seed=1)
        syn = model.synthesize(2, random_seed=2)
    return model, train, hold, syn


def test_dpmpm_end_to_end_result(fitted):
    model, train, hold, syn = fitted
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = membership_risk(model, train, syn, holdout=hold, population=20, random_seed=5,
                              ratio=RatioSpec(normaliser_draws=100),
                              attack=AttackSpec(bootstrap=30))
    assert isinstance(res, MembershipRiskResult)
    rec = res.records
    assert (rec["role"] == "member").sum() == 120
    assert (rec["source"] == "holdout").sum() == 40 and (rec["source"] == "population").sum() == 20
    assert rec["p_member"].between(0, 1).all() and np.isfinite(rec["log_lr"]).all()
    assert {"log_normaliser", "normaliser_khat", "dcr", "flag_codes"} <= set(rec.columns)
    f = res.file
    lo, hi = f["auc_advantage_interval"]
    assert lo <= f["auc_advantage"] <= hi
    assert "dcr_overfitting" in f and 0 <= f["dcr_overfitting"]["share_closer_to_training"] <= 1
    json.dumps(res.to_dict())
    text = str(res.summary())
    assert "AUC − 0.5" in text and "distance to closest record" in text
    assert "<table" in res._repr_html_()
    for kind in ("p_member", "roc", "dcr"):
        assert res.plot(kind) is not None
    # the same seed gives the same result
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        again = membership_risk(model, train, syn, holdout=hold, population=20, random_seed=5,
                                ratio=RatioSpec(normaliser_draws=100),
                                attack=AttackSpec(bootstrap=30))
    pd.testing.assert_frame_equal(res.records, again.records)


def test_refusals_and_bad_input(fitted):
    model, train, hold, syn = fitted
    from bayes_risk.models import DPMPM

    with pytest.raises(ValidationError, match="prior"):
        membership_risk(model, train, syn, holdout=hold, attack=AttackSpec(prior=1.5))
    with pytest.raises(ValidationError, match="population_size"):
        membership_risk(model, train, syn, holdout=hold, attack=AttackSpec(prior="sampling"))
    with pytest.raises(ValidationError, match="AttackSpec.threshold"):
        membership_risk(model, train, syn, holdout=hold, attack=AttackSpec(threshold=1.0))
    with pytest.raises(ValidationError, match="RatioSpec.normaliser_draws"):
        membership_risk(model, train, syn, holdout=hold, ratio=RatioSpec(normaliser_draws=5))
    with pytest.raises(ValidationError, match="attack must be an AttackSpec"):
        membership_risk(model, train, syn, holdout=hold, attack={"threshold": 0.9})
    with pytest.raises(TypeError, match="threshold"):  # the settings moved to AttackSpec
        membership_risk(model, train, syn, holdout=hold, threshold=0.9)
    bad = hold.astype(object)
    bad.loc[3, "MAR"] = "Unheard-of"
    with pytest.raises(SchemaError, match="holdout row 3: column 'MAR'") as err:
        membership_risk(model, train, syn, holdout=bad)
    assert err.value.code == "UNKNOWN_LEVEL"
    with pytest.raises(SchemaError, match="holdout is missing"):
        membership_risk(model, train, syn, holdout=hold[["SEX"]])
    # class O (posterior_class mode) and partial synthesis are refused with a code
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        o = DPMPM(n_components=3,
                  sampling=Sampling(tune=20, draws=20, chains=1, cores=1), progressbar=False,
                  synthesis_mode="posterior_class").fit(train, random_seed=1)
        part = DPMPM(n_components=3, sampling=Sampling(tune=20, draws=20, chains=1, cores=1),
                     progressbar=False).fit(train, synthesized=["MAR"], random_seed=1)
    for mod, code in ((o, "MEMBERSHIP_MODEL_UNSUPPORTED"),
                      (part, "MEMBERSHIP_PARTIAL_SYNTHESIS")):
        with pytest.raises(NotSupportedError) as err:
            membership_risk(mod, train, syn, holdout=hold)
        assert err.value.code == code
    # a conditional record likelihood with no unsynthesized column is the joint one: accepted
    # (the sequential regressions of a fully synthetic release; tests/membership/
    # test_membership_seqreg.py checks their values)
    from bayes_risk.membership.api import check_model

    check_model(ArrayModel(_bern_loglik, np.full(10, 0.5), model.schema_,
                           ratio_form="conditional"))


def test_normaliser_matrix_product_matches_logsumexp():
    """The normaliser's sums over draws as one matrix product, with the entries that underflow
    (largest terms on different draws, 1,000 log units apart) recomputed in log space."""
    from bayes_risk._numeric import logsumexp
    from bayes_risk.membership.estimator import _log_cross

    rng = np.random.default_rng(0)
    L = rng.normal(-20, 3, size=(500, 40))
    W = rng.normal(5, 3, size=(500, 7))
    W[:, 0] = -1000 * np.arange(500) / 500
    L[:, 0] = -1000 * np.arange(500)[::-1] / 500
    ref = np.array([[logsumexp(L[:, j] + W[:, i]) for j in range(40)] for i in range(7)])
    got = _log_cross((L, L.max(axis=0), np.exp(L - L.max(axis=0))), W)
    np.testing.assert_allclose(got, ref, rtol=0, atol=1e-10)


def test_poisson_mixture_end_to_end():
    """The MP Poisson mixture (marginal mode) is supported: finite ratios, no flags on a tame
    table; m = 2 exercises the normaliser."""
    from bayes_risk.models import PoissonMixture

    rng = np.random.default_rng(1)
    df = pd.DataFrame({"a": rng.poisson(3, 150), "b": rng.poisson(8, 150)})
    train, hold = df.iloc[:110].reset_index(drop=True), df.iloc[110:].reset_index(drop=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = PoissonMixture(n_components=4,
                               sampling=Sampling(tune=100, draws=200, chains=2, cores=1),
                               progressbar=False).fit(train, random_seed=1)
        syn = model.synthesize(2, random_seed=2)
        res = membership_risk(model, train, syn, holdout=hold, random_seed=3,
                              ratio=RatioSpec(normaliser_draws=100),
                              attack=AttackSpec(bootstrap=20))
    rec = res.records
    assert np.isfinite(rec["log_lr"]).all() and (rec["flag_codes"] == "").all()
    assert (rec["dcr"] >= 0).all() and len(rec) == 150


def test_missing_modelled_values_are_flagged_as_unchecked(fitted):
    """A DPMPM release of data with empty cells: the ratio runs, with the code
    MEMBERSHIP_MISSING_VALUES (not derived nor checked against exact values); the complete
    data of the fixture do not raise it."""
    from bayes_risk.models import DPMPM

    model, train, hold, syn = fitted
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        complete = membership_risk(model, train, syn, holdout=hold, random_seed=3)
    assert "MEMBERSHIP_MISSING_VALUES" not in complete.warnings
    holes = train.astype(object)
    holes.iloc[::7, 1] = np.nan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m2 = DPMPM(n_components=4, sampling=Sampling(tune=50, draws=60, chains=1, cores=1),
                   progressbar=False).fit(holes, random_seed=1)
        res = membership_risk(m2, holes, m2.synthesize(1, random_seed=2), holdout=hold,
                              random_seed=3)
    assert "MEMBERSHIP_MISSING_VALUES" in res.warnings
    assert any("not checked against exact values" in w.message
               for w in res.structured_warnings)
