"""End-to-end tests of attribute_risk on models given as arrays (the worked examples of the
attribute-risk methods)."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from _bernoulli import _bern_frame, _bern_ll
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import betaln
from scipy.stats import norm

from bayes_risk.attribute import (
    CandidateSpec,
    EstimatorSpec,
    GridSpec,
    ScenarioSpec,
    attribute_risk,
    prior_sensitivity,
    with_prior,
)
from bayes_risk.attribute.estimator import is_estimate, log_ratios, stabilised_estimate
from bayes_risk.data import infer_schema
from bayes_risk.exceptions import DataWarning, ImportanceSamplingWarning, ValidationError
from bayes_risk.models import ArrayModel

RTOL, ATOL = 1e-6, 1e-9


@pytest.fixture
def bern3():
    orig = _bern_frame([1, 1, 0, 1, 0])  # target record 0 (truth 1), others hold two ones
    schema = infer_schema(orig, synthesized=["y"])
    model = ArrayModel(_bern_ll, np.array([0.3, 0.5, 0.7]), schema)
    z1 = _bern_frame([1, 1, 1, 1, 0])
    z2 = _bern_frame([1, 1, 1, 0, 0])
    return model, orig, z1, z2


def _run(*args, **kw):
    kw.setdefault("progressbar", False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ImportanceSamplingWarning)
        return attribute_risk(*args, **kw)


def _post_by_value(res, record=0, col="y"):
    cp = res.candidate_posteriors(record)
    return dict(zip(cp[col].astype(int), cp["posterior"], strict=False))



def test_array_model_draws_are_validated():
    # draws that are not arrays of draws: a ValidationError naming draws (was an IndexError)
    schema = infer_schema(_bern_frame([1, 0, 1]), synthesized=["y"])
    for bad, match in ((0.5, "draws must be an array"), ("abc", "draws must be an array"),
                       ({"p": 0.5}, r"draws\['p'\] is not an array of draws"),
                       ({"p": np.ones(4), "q": np.ones(5)}, "same leading")):
        with pytest.raises(ValidationError, match=match):
            ArrayModel(_bern_ll, bad, schema)
    assert ArrayModel(_bern_ll, {"p": np.ones(4)}, schema).n_draws == 4

# ----------------------------------------------------------------------------- bern3
def test_bern3_is_estimator_numbers(bern3):
    model, orig, z1, z2 = bern3
    res = _run(orig, [z1, z2], model=model, records=[0],
               estimator=EstimatorSpec(kind="is", bootstrap=0))
    cp = res.candidate_posteriors(0)
    ll = dict(zip(cp["y"].astype(int), cp["loglik"], strict=False))
    assert ll[0] == pytest.approx(-7.821074, abs=1e-6)
    assert ll[1] == pytest.approx(-6.999702, abs=1e-6)
    p = _post_by_value(res)
    assert (p[0], p[1]) == (pytest.approx(0.305473, abs=1e-6), pytest.approx(0.694527, abs=1e-6))
    assert "H_TOO_SMALL" in res.warnings
    assert res.records.loc[0, "rank_min"] == 1


def test_bern3_z1_only_diagnostics_and_truth_weighted(bern3):
    model, orig, z1, _ = bern3
    res = _run(orig, [z1], model=model, records=[0],
               estimator=EstimatorSpec(kind="is", bootstrap=0))
    p = _post_by_value(res)
    assert p[0] == pytest.approx(0.355475, abs=1e-6) and p[1] == pytest.approx(0.644525, abs=1e-6)
    d = res.diagnostics[0]
    g = {int(v): k for k, v in enumerate(res.candidate_posteriors(0)["y"])}
    assert d["ess_q"][g[0]] == pytest.approx(2.135135, abs=1e-6)
    assert d["ess_q"][g[1]] == pytest.approx(3.0)
    assert d["ess_omega"][0, g[0]] == pytest.approx(2.697782, abs=1e-6)
    assert d["ess_omega"][0, g[1]] == pytest.approx(1.915450, abs=1e-6)
    # omega vectors themselves (the worked example of the estimator), from the estimator function
    logp = np.log(np.array([[[0.7, 0.3], [0.5, 0.5], [0.3, 0.7]]]))  # [R, H, G] (truth=1 at g0=0)
    logr, _ = log_ratios(logp, np.array([0]))
    L = np.log(np.array([[0.00567], [0.03125], [0.07203]]))
    out = is_estimate(logr, L)
    assert out["max_omega"][0, 0, 0] == pytest.approx(0.661129, abs=1e-5)
    tw = with_prior(res, prior="truth-weighted:2")
    p = _post_by_value(tw)
    assert p[0] == pytest.approx(0.216157, abs=1e-6) and p[1] == pytest.approx(0.783843, abs=1e-6)
    assert tw.settings["prior"] == "truth-weighted:2"


def test_identity_equal_weights_for_truth():
    rng = np.random.default_rng(0)
    logp = rng.normal(size=(2, 50, 4))
    logr, _ = log_ratios(logp, np.array([1, 3]))
    out = is_estimate(logr, rng.normal(size=(50, 2)))
    np.testing.assert_allclose(out["ess_q"][0, 1], 50.0)
    np.testing.assert_allclose(out["ess_q"][1, 3], 50.0)
    np.testing.assert_allclose(logr[0, :, 1], 0.0)


def test_stabilised_worked_example(bern3):
    model, orig, z1, _ = bern3
    aug = [model.with_draws(np.array([0.6, 0.7, 0.8]))]
    res = _run(orig, [z1], model=model, records=[0],
               estimator=EstimatorSpec(augmented=aug, bootstrap=0))
    assert res.settings["estimator"] == "stabilised"
    cp = res.candidate_posteriors(0)
    ll = dict(zip(cp["y"].astype(int), cp["loglik"], strict=False))
    assert ll[0] - ll[1] == pytest.approx(-1.028354, abs=1e-6)
    p = _post_by_value(res)
    assert p[0] == pytest.approx(0.263403, abs=1e-6) and p[1] == pytest.approx(0.736597, abs=1e-6)
    logr0 = np.log(np.array([[[1, 0.7 / 0.3], [1, 1.0], [1, 0.3 / 0.7]]]))
    st_ = stabilised_estimate(
        logr0, [np.log(np.array([[[1, 0.4 / 0.6], [1, 0.3 / 0.7], [1, 0.2 / 0.8]]]))]
    )
    assert np.exp(st_["log_mean_r"][0, 1]) == pytest.approx(1.253968, abs=1e-6)
    assert np.exp(st_["log_mean_aug"][0, 0, 1]) == pytest.approx(0.448413, abs=1e-6)


@pytest.mark.slow
def test_stabilised_beta_posterior_check(bern3):
    """Exact Beta(4,3) and Beta(8,4) draws, H = 200,000 each: ratio E[r] must be 4/7 = 0.571429.

    r(0, θ) = (1-θ)/θ has finite variance under both Betas; the MC SE of the ratio is ~0.003,
    so the tolerance 0.01 is > 3 SE.
    """
    model, orig, z1, _ = bern3
    rng = np.random.default_rng(20260)
    m0 = model.with_draws(rng.beta(4, 3, size=200_000))
    m1 = model.with_draws(rng.beta(8, 4, size=200_000))
    res = _run(orig, [z1], model=m0, records=[0],
               estimator=EstimatorSpec(augmented=[m1], bootstrap=0))
    cp = res.candidate_posteriors(0)
    ll = dict(zip(cp["y"].astype(int), cp["loglik"], strict=False))
    assert np.exp(ll[0] - ll[1]) == pytest.approx(0.571429, abs=0.01)
    p = _post_by_value(res)
    assert p[0] == pytest.approx(0.363636, abs=0.01)


@pytest.mark.slow
def test_is_beta_bernoulli_closed_form(bern3):
    """Consistency of the estimator: H = 200,000 exact Beta(4,3) draws; tolerance 0.02."""
    model, orig, z1, _ = bern3
    rng = np.random.default_rng(7)
    m0 = model.with_draws(rng.beta(4, 3, size=200_000))
    res = _run(orig, [z1], model=m0, records=[0], estimator=EstimatorSpec(kind="is", bootstrap=0))
    cp = res.candidate_posteriors(0)
    ll = dict(zip(cp["y"].astype(int), cp["loglik"], strict=False))
    # the estimator is p(Z | y*) up to the constant p(Z|y)-free factor: compare differences and
    # absolute values (q normalised ⇒ absolute values are the closed form directly)
    exact = {ys: betaln(3 + ys + 4, 4 - ys + 1) - betaln(3 + ys, 4 - ys) for ys in (0, 1)}
    assert exact[0] == pytest.approx(-3.650658, abs=1e-6)
    assert exact[1] == pytest.approx(-3.091042, abs=1e-6)
    assert ll[0] == pytest.approx(exact[0], abs=0.02)
    assert ll[1] == pytest.approx(exact[1], abs=0.02)


# ----------------------------------------------------------------------------- normreg
def test_normreg_example():
    orig = pd.DataFrame({"x": [9.8, 9.5, 10.0], "y": [11.6, 10.0, 12.0]})
    syn = pd.DataFrame({"x": [9.8, 9.5, 10.0], "y": [10.1, 10.7, 11.0]})
    schema = infer_schema(orig, synthesized=["y"])
    draws = {"b0": np.array([1.0, 1.2]), "b1": np.array([1.0, 0.98]), "s": np.array([0.5, 0.6])}

    def ll(rec, d):
        mu = d["b0"][:, None] + d["b1"][:, None] * rec["x"].to_numpy()[None]
        return norm.logpdf(rec["y"].to_numpy()[None], mu, d["s"][:, None])

    model = ArrayModel(ll, draws, schema, ratio_form="conditional")
    np.testing.assert_allclose(model.dataset_loglik([syn])[:, 0], [-1.737374, -1.962833], atol=1e-6)
    spec = CandidateSpec("product", grids={"y": GridSpec("explicit", values=(11.1, 11.6, 12.1))})
    res = _run(orig, [syn], model=model, records=[0], candidates=spec,
               estimator=EstimatorSpec(kind="is", bootstrap=0))
    cp = res.candidate_posteriors(0)
    np.testing.assert_allclose(cp["y"], [11.1, 11.6, 12.1])
    np.testing.assert_allclose(cp["loglik"], [-1.824949, -1.843763, -1.879504], atol=1e-6)
    np.testing.assert_allclose(cp["posterior"], [0.341499, 0.335134, 0.323367], atol=1e-6)
    assert res.records.loc[0, "rank_min"] == 2
    # per-candidate q of the SPEC example
    logp = np.stack([ll(pd.DataFrame({"x": [9.8] * 3, "y": [11.1, 11.6, 12.1]}), draws)])
    logr, _ = log_ratios(logp, np.array([1]))
    np.testing.assert_allclose(logr[0, :, 0], [1.1, 0.758333], atol=1e-6)
    np.testing.assert_allclose(logr[0, :, 2], [-2.1, -1.452778], atol=1e-6)


# ------------------------------------------------------------------ a small categorical model
_CAT_CACHE: dict = {}


def _cat_model(n=40, H=60, seed=0):
    key = (n, H, seed)
    if key not in _CAT_CACHE:
        _CAT_CACHE[key] = _make_cat_model(n, H, seed)
    return _CAT_CACHE[key]


def _make_cat_model(n, H, seed):
    """Random 2-column categorical mixture draws + data (an array model with known answers)."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 3, n)
    b = rng.integers(0, 2, n)
    orig = pd.DataFrame(
        {
            "a": pd.Categorical(a, categories=[0, 1, 2]),
            "b": pd.Categorical(b, categories=[0, 1]),
            "u": pd.Categorical(rng.integers(0, 2, n), categories=[0, 1]),
        }
    )
    schema = infer_schema(orig, synthesized=["a", "b"])
    draws = {
        "pa": rng.dirichlet(np.ones(3) * 5, size=H),
        "pb": rng.dirichlet(np.ones(2) * 5, size=H),
    }

    def ll(rec, d):
        ca = rec["a"].astype(int).to_numpy()
        cb = rec["b"].astype(int).to_numpy()
        return np.log(d["pa"][:, ca]) + np.log(d["pb"][:, cb])

    model = ArrayModel(ll, draws, schema)
    syn = [
        orig.assign(a=pd.Categorical(rng.integers(0, 3, n), categories=[0, 1, 2])) for _ in range(2)
    ]
    aug = [
        model.with_draws(
            {
                "pa": rng.dirichlet(np.ones(3) * 5, size=H),
                "pb": rng.dirichlet(np.ones(2) * 5, size=H),
            }
        )
        for _ in range(2)
    ]
    return model, orig, syn, aug


@settings(max_examples=10, deadline=None)
@given(
    recs=st.lists(st.integers(0, 39), min_size=1, max_size=8, unique=True),
    chunk=st.integers(1, 9),
    est=st.sampled_from(["is", "stabilised"]),
)
def test_results_do_not_depend_on_chunk_size_or_order(recs, chunk, est):
    model, orig, syn, aug = _cat_model()
    r1 = _run(
        orig,
        syn,
        model=model,
        records=recs,
        random_seed=3,
        estimator=EstimatorSpec(augmented=aug, kind=est, chunk_size=chunk, bootstrap=30),
    )
    r2 = _run(
        orig,
        syn,
        model=model,
        records=sorted(recs)[::-1],
        random_seed=3,
        estimator=EstimatorSpec(augmented=aug, kind=est, chunk_size=64, bootstrap=30),
    )
    a = r1.records.sort_index()
    b = r2.records.sort_index()
    pd.testing.assert_frame_equal(a, b)
    assert r1.records.index.tolist() == recs  # input order kept


def test_to_dict_is_strict_json(tmp_path):
    import json

    from bayes_risk._io import write_json

    model, orig, syn, aug = _cat_model()
    res = _run(orig, syn, model=model, records=[0, 3], random_seed=0,
               estimator=EstimatorSpec(augmented=aug))
    write_json(tmp_path / "r.json", res.to_dict(records=True))
    back = json.loads((tmp_path / "r.json").read_text())
    assert back["records"]["record"] == [0, 3] and back["settings"]["estimator"] == "stabilised"


@settings(max_examples=15, deadline=None)
@given(kappa=st.floats(0.1, 20), rec=st.integers(0, 39), est=st.sampled_from(["is", "stabilised"]))
def test_invariants_sum_to_one_and_prior_sweep(kappa, rec, est):
    model, orig, syn, aug = _cat_model()
    base = _run(
        orig, syn, model=model, records=[rec],
        random_seed=1
    ,
        estimator=EstimatorSpec(augmented=aug, kind=est, bootstrap=20))
    post = np.exp(base.log_post[0])
    assert post.sum() == pytest.approx(1.0, abs=1e-12)
    swept = with_prior(base, prior=f"truth-weighted:{kappa}")
    full = _run(
        orig,
        syn,
        model=model,
        records=[rec],
        random_seed=1,
        prior=f"truth-weighted:{kappa}",
        estimator=EstimatorSpec(augmented=aug, kind=est, bootstrap=20),
    )
    pd.testing.assert_frame_equal(swept.records, full.records)
    np.testing.assert_allclose(np.exp(swept.log_post[0]).sum(), 1.0)


def test_product_candidates_marginals_and_prior_sensitivity():
    model, orig, syn, aug = _cat_model()
    res = _run(orig, syn, model=model, records=[0, 1], candidates="full",
               random_seed=0,
               estimator=EstimatorSpec(augmented=aug))
    assert (res.records["G"] == 6).all()
    assert {"marg_a", "marg_b"} <= set(res.records.columns)
    ps = prior_sensitivity(res,
                           priors=["uniform", "truth-weighted:3", "empirical:1",
                                   "model-predictive"])
    assert len(ps) == 8 and set(ps["prior"]) == {
        "uniform",
        "truth-weighted:3",
        "empirical:1",
        "model-predictive",
    }
    assert res.to_dict()["n_records"] == 2


def test_prior_sensitivity_arguments():
    # one specification is one prior; an empty sweep names the argument; two priors with the
    # same label (every user prior is "user") stay apart
    model, orig, syn, aug = _cat_model()
    res = _run(orig, syn, model=model, records=[0, 1], random_seed=0,
               estimator=EstimatorSpec(augmented=aug))
    one = prior_sensitivity(res, priors="truth-weighted:2")
    pd.testing.assert_frame_equal(one, prior_sensitivity(res, priors=["truth-weighted:2"]))
    with pytest.raises(ValidationError, match="priors is empty"):
        prior_sensitivity(res, priors=[])
    with pytest.raises(ValidationError, match="priors must be a sequence"):
        prior_sensitivity(res, priors=3)
    G = int(res.records["G"].iloc[0])
    up = np.linspace(1, 2, G) / np.linspace(1, 2, G).sum()  # weights summing to 1
    down = up[::-1].copy()
    sweep = prior_sensitivity(res, priors=[up, down])
    assert list(dict.fromkeys(sweep["prior"])) == ["user", "user#2"]
    for label, w in (("user", up), ("user#2", down)):
        ref = with_prior(res, prior=w, bootstrap=False).records
        np.testing.assert_allclose(sweep.loc[sweep["prior"] == label, "p_true"], ref["p_true"])



def test_a_grid_that_rounds_to_the_truth_is_reported():
    # a ±10 % grid on counts below 5 rounds to the truth alone: the record is offered no other
    # value, its p_true is 1 by construction, and the result says so (NO_ALTERNATIVE)
    from scipy.stats import poisson

    rng = np.random.default_rng(2)
    orig = pd.DataFrame({"kids": rng.poisson(2.0, 30) + 1})
    schema = infer_schema(orig, synthesized=["kids"])
    model = ArrayModel(lambda rec, d: poisson.logpmf(rec["kids"].to_numpy(), d[:, None]),
                       rng.gamma(60.0, 1 / 20.0, size=200), schema)
    syn = [orig.assign(kids=rng.poisson(3.0, 30) + 1) for _ in range(2)]
    small = int(np.flatnonzero(orig["kids"] < 5)[0])
    with pytest.warns(DataWarning, match=r"no candidate other than the truth in column\(s\) "
                                         r"'kids' \(1 of 1 records\).*\(NO_ALTERNATIVE\)"):
        res = _run(orig, syn, model=model, records=[small],
                   estimator=EstimatorSpec(kind="is", bootstrap=0))
    assert res.records["G"].iloc[0] == 1 and res.records["p_true"].iloc[0] == 1.0
    assert "NO_ALTERNATIVE" in res.warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error", DataWarning)
        wide = _run(orig, syn, model=model, records=[small],
                    candidates="one-variable,grid:additive:2:5",
                    estimator=EstimatorSpec(kind="is", bootstrap=0))
    assert wide.records["G"].iloc[0] > 1 and "NO_ALTERNATIVE" not in wide.warnings

def test_partially_known_and_scenarios():
    model, orig, syn, aug = _cat_model()
    res = _run(
        orig, syn, model=model, records=[0],
        scenario=ScenarioSpec(kind="partially_known", known=["b"]),
        estimator=EstimatorSpec(augmented=aug))
    assert res.columns == ("a",) and res.records.loc[0, "G"] == 3
    with pytest.raises(NotImplementedError, match="known_records"):
        _run(orig, syn, model=model, scenario="some_others_known")
    with pytest.raises(ValidationError, match="not synthesized"):
        _run(orig, syn, model=model, scenario=ScenarioSpec(kind="partially_known", known=["u"]),
             estimator=EstimatorSpec(augmented=aug))
    with pytest.raises(ValidationError, match="needs ScenarioSpec.known"):
        _run(orig, syn, model=model, scenario="partially_known",
             estimator=EstimatorSpec(augmented=aug))


def test_unknown_category_in_candidates_gets_zero():
    model, orig, syn, aug = _cat_model()
    orig = orig.copy()
    # another record holds a level the model was never fitted with (harmonised, SPEC §0.2.6)
    orig["a"] = pd.Categorical(
        np.where(np.arange(len(orig)) == 3, 3, orig["a"].astype(int)), categories=[0, 1, 2, 3]
    )
    syn = [z.assign(a=pd.Categorical(z["a"].astype(int), categories=[0, 1, 2, 3])) for z in syn]
    # record 3's truth is outside the model's support: flagged, and the flags are summarised
    with pytest.warns(ImportanceSamplingWarning, match="records are flagged") as flagged:
        with pytest.warns(ImportanceSamplingWarning, match="UNKNOWN_CATEGORY_IN_CANDIDATES"):
            res = attribute_risk(
                orig, syn, model=model, records=[0, 3], progressbar=False,
                estimator=EstimatorSpec(kind="is", bootstrap=0))
    # the warning names what a command-line user opens (records.csv), with its own code
    (w,) = [w.message for w in flagged if "records are flagged" in str(w.message)]
    assert w.code == "RECORDS_FLAGGED" and "'flag_codes' column of records.csv" in str(w)
    assert "see result.flagged" not in str(w)
    assert res.records.loc[3, "flag_codes"] == "TRUTH_OUTSIDE_SUPPORT"  # record 3, by label
    assert np.isnan(res.records.loc[3, "p_true"])
    cp = res.candidate_posteriors(0)
    assert cp.loc[cp["a"] == 3, "posterior"].item() == 0.0
    assert "UNKNOWN_CATEGORY_IN_CANDIDATES" in res.warnings
    # the codes column is named so that attribute access works: ``flags`` was DataFrame.flags
    assert res.records.flag_codes.value_counts()["TRUTH_OUTSIDE_SUPPORT"] == 1
    assert "flags" not in res.records.columns
    shadowing = [c for c in res.records.columns
                 if hasattr(pd.DataFrame, str(c)) or hasattr(pd.Series, str(c))]
    assert shadowing == []


def test_errors_name_the_argument():
    model, orig, syn, aug = _cat_model()
    with pytest.raises(ValidationError, match="out of range"):
        _run(orig, syn, model=model, records=[400], estimator=EstimatorSpec(augmented=aug))
    with pytest.raises(ValidationError, match="estimator"):
        _run(orig, syn, model=model, estimator="exact")
    with pytest.raises(ValidationError, match="augmented must hold one model"):
        _run(orig, syn, model=model, estimator=EstimatorSpec(augmented=aug[:1]))
    with pytest.raises(ValidationError, match="fit_augmented"):
        _run(orig, syn, model=model, records=[0], estimator="stabilised")
    # 'auto' chooses by capability: an ArrayModel without augment_fn has the IS estimator
    assert _run(orig, syn, model=model, records=[0]).settings["estimator"] == "is"
    with pytest.raises(ValidationError, match="protocol"):
        _run(orig, syn, model=object())
    with pytest.raises(ValidationError, match="was not evaluated"):
        _run(orig, syn, model=model, records=[0],
             estimator=EstimatorSpec(augmented=aug)).candidate_posteriors(5)


def test_draw_dropped_flag():
    orig = _bern_frame([1, 0, 1])
    schema = infer_schema(orig, synthesized=["y"])
    model = ArrayModel(_bern_ll, np.array([0.0, 0.4, 0.6] * 10), schema)
    res = _run(orig, [_bern_frame([1, 1, 0])], model=model, records=[1],
               estimator=EstimatorSpec(kind="is", bootstrap=0))
    # θ = 0 makes y = 1 impossible, but record 1 is y = 0: nothing dropped there
    assert res.records.loc[1, "n_dropped"] == 0
    res = _run(orig, [_bern_frame([0, 1, 0])], model=model, records=[0],
               estimator=EstimatorSpec(kind="is", bootstrap=0))
    assert res.records.loc[0, "n_dropped"] == 10
    assert "DRAW_DROPPED" in res.records.loc[0, "flag_codes"]
    assert res.flagged.index.tolist() == [0]


def test_class_o_own_record_term():
    """A class O toy: Z's record-i value copies y_i with prob 0.9 (given θ); delta enters."""
    orig = _bern_frame([1, 0, 1, 1])
    schema = infer_schema(orig, synthesized=["y"])

    def delta(record, cands, datasets, d):
        z = int(datasets[0]["y"].astype(int).iloc[0])
        y = int(record["y"])
        lik = lambda v: np.log(0.9 if v == z else 0.1)  # noqa: E731
        vals = cands["y"].astype(int).to_numpy()
        dl = np.array([lik(v) - lik(y) for v in vals])
        return np.broadcast_to(dl, (np.shape(d)[0], len(datasets), len(vals))).copy()

    model = ArrayModel(
        _bern_ll, np.linspace(0.2, 0.8, 30), schema, model_class="O", own_record_delta_fn=delta
    )
    z = _bern_frame([0, 0, 1, 1])
    res = _run(orig, [z], model=model, records=[0], estimator=EstimatorSpec(bootstrap=0))
    assert res.settings["estimator"] == "is"
    p = _post_by_value(res)
    assert p[0] > p[1]  # the released value 0 at record 0 dominates the prior-free posterior
    with pytest.raises(ValidationError, match="class P models only"):
        _run(orig, [z], model=model, records=[0], estimator="stabilised")


def test_psis_option_runs_and_reports_khat():
    model, orig, syn, aug = _cat_model(H=200)
    res = _run(orig, syn, model=model, records=[0, 1],
               estimator=EstimatorSpec(augmented=aug, psis=True, bootstrap=0))
    plain = _run(orig, syn, model=model, records=[0, 1],
                 estimator=EstimatorSpec(augmented=aug, bootstrap=0))
    np.testing.assert_allclose(res.records["p_true"], plain.records["p_true"], atol=0.02)
    assert np.isfinite(res.records["khat_max"]).all()


def test_is_fast_path_equals_log_space_path():
    """The product-space fast path of is_estimate / bootstrap_is equals the log-space algorithm."""
    from bayes_risk.attribute.estimator import bootstrap_counts, bootstrap_is

    rng = np.random.default_rng(4)
    logp = rng.normal(scale=2.0, size=(3, 80, 5))
    logp[1, 7, :] = -np.inf  # a dropped draw
    logr, _ = log_ratios(logp, np.array([0, 2, 4]))
    L = rng.normal(scale=40.0, size=(80, 2))
    zero = np.zeros((3, 80, 2, 5))
    fast = is_estimate(logr, L)
    slow = is_estimate(logr, L, delta=zero)
    for k in ("loglik", "ess_q", "ess_omega", "max_omega"):
        np.testing.assert_allclose(fast[k], slow[k], rtol=1e-10, atol=1e-12)
    c = bootstrap_counts(np.random.default_rng(0), 7, 80)
    np.testing.assert_allclose(
        bootstrap_is(logr, L, c), bootstrap_is(logr, L, c, delta=zero), rtol=1e-10, atol=1e-10
    )



def test_records_are_indexed_by_record_and_join_the_original(tmp_path):
    """The record number (row of the original, 0-based) is the index of the record table, in
    the order given; joining on it lines each estimate up with its own original row, and the
    table written to CSV keeps a ``record`` column that reads back to the same index."""
    from bayes_risk.results.attribute import records_by_record

    orig = _bern_frame([1, 0, 1, 0, 0, 1])
    schema = infer_schema(orig, synthesized=["y"])
    model = ArrayModel(_bern_ll, np.array([0.2, 0.5, 0.8] * 4), schema)
    recs = [4, 1, 5]
    res = _run(orig, [_bern_frame([1, 1, 0, 0, 1, 1])], model=model, records=recs,
               estimator=EstimatorSpec(kind="is", bootstrap=0))
    assert res.records.index.name == "record" and "record" not in res.records.columns
    assert res.records.index.tolist() == recs
    joined = res.records.join(orig)  # by label, not by position
    assert joined["y"].tolist() == [0, 0, 1]
    for r in recs:  # each record's own posterior: the truth is its own original value
        cp = res.candidate_posteriors(r)
        assert cp.loc[cp["is_truth"], "y"].item() == orig.loc[r, "y"]
    path = tmp_path / "records.csv"
    res.records.to_csv(path)
    back = pd.read_csv(path)
    assert back.columns[0] == "record" and back["record"].tolist() == recs
    pd.testing.assert_frame_equal(records_by_record(back), res.records, check_dtype=False)
    with pytest.raises(ValidationError, match="'record'"):
        records_by_record(back.drop(columns="record"))
