"""The between-chain check of the record estimates (flag ``CHAINS_DISAGREE``).

A categorical model ``p(y | x, θ) = θ[x, y]`` given by hand-made Dirichlet draws in two chains
and one augmented fit: for the ``x`` levels in ``affected`` the chains' augmented draws sit in
different states (chain 0 favours ``y = 0``, chain 1 ``y = 2``; both give ``y = 1`` the same
probability), elsewhere both chains draw from the same distribution. So the flag must fire for
exactly the records with ``x`` affected and ``y != 1``.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bayes_risk.attribute import EstimatorSpec, attribute_risk, prior_sensitivity, with_prior
from bayes_risk.attribute.chains import CHAIN_RATIO, CHAIN_TOLERANCE, chain_agreement
from bayes_risk.data import infer_schema
from bayes_risk.exceptions import ValidationError
from bayes_risk.models import ArrayModel, Sampling

N_LEVELS = 10


def _ll(records, theta):
    xi = records["x"].astype(int).to_numpy()
    yi = records["y"].astype(int).to_numpy()
    return np.log(np.asarray(theta)[:, xi, yi])


def _case(seed, *, n=200, affected=(0, 1), H=500, conc=200.0, rep=1, chains=2):
    """(data, model, augmented, x, y); ``rep`` repeats each draw (autocorrelated chains)."""
    rng = np.random.default_rng(seed)
    x = rng.integers(0, N_LEVELS, n)
    y = rng.integers(0, 3, n)
    df = pd.DataFrame({"x": pd.Categorical(x, categories=range(N_LEVELS)),
                       "y": pd.Categorical(y, categories=[0, 1, 2])})
    schema = infer_schema(df, synthesized=["y"])

    def draws(mean):
        out = []
        for c in range(2):
            th = np.empty((H, N_LEVELS, 3))
            for lv in range(N_LEVELS):
                th[:, lv] = np.repeat(rng.dirichlet(conc * mean(c, lv), size=H // rep), rep, 0)
            out.append(th)
        return np.concatenate(out)

    def aug_mean(c, lv):
        if lv in affected:
            return np.array([0.6, 0.3, 0.1]) if c == 0 else np.array([0.1, 0.3, 0.6])
        return np.array([0.5, 0.3, 0.2])

    base = draws(lambda c, lv: np.full(3, 1 / 3))
    aug = draws(aug_mean)
    ch = 2 if chains == 2 else None
    model = ArrayModel(_ll, base, schema, ratio_form="conditional", chains=ch)
    return df, model, [model.with_draws(aug, chains=ch)], x, y


def _run(df, model, aug, estimator="auto", **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return attribute_risk(df, [df], model=model, random_seed=3, progressbar=False,
                              estimator=EstimatorSpec(kind=estimator, augmented=aug), **kw)


def _flagged(res):
    return res.records["flag_codes"].str.contains("CHAINS_DISAGREE", regex=False).to_numpy()


def test_chains_in_different_states_flag_exactly_the_affected_records():
    df, model, aug, x, y = _case(1)
    res = _run(df, model, aug)
    expected = np.isin(x, [0, 1]) & (y != 1)
    assert expected.sum() > 10
    np.testing.assert_array_equal(_flagged(res), expected)
    r = res.records
    # the chains' own estimates bracket a difference of about 0.6 − 0.1 for flagged records
    spread = (r["p_true_chain_max"] - r["p_true_chain_min"]).to_numpy()
    assert np.all(spread[expected] > 0.4)
    assert np.all(spread[~expected] < CHAIN_TOLERANCE)
    note = res.to_dict()["between_chain_check"]
    assert note["status"] == "run" and note["chains"] == 2
    assert note["records_flagged"] == int(expected.sum())
    assert res.to_dict()["flag_counts"]["CHAINS_DISAGREE"] == int(expected.sum())
    assert any(w.code == "CHAINS_DISAGREE" for w in res.structured_warnings)
    assert "Between-chain check (2 chains" in str(res.summary())


@pytest.mark.parametrize("rep", [1, 10])
def test_well_mixed_chains_flag_almost_nothing(rep):
    # rep = 10: each draw repeated ten times (strongly autocorrelated chains); batch means of
    # 25 draws still see it, where independent-draw standard errors would be ~3x too small
    df, model, aug, _, _ = _case(2, n=400, affected=(), rep=rep)
    res = _run(df, model, aug)
    assert res.settings["chain_check"]["status"] == "run"
    assert _flagged(res).sum() <= 1  # at the test's level 0.001 per record, before materiality
    z = res.records["chain_z"].to_numpy()
    # |N(0, 1)| has mean 0.80: the standard errors are of the right size
    assert 0.5 < np.mean(z) < 1.3  # independent-draw errors: 3.3 with rep = 10


# ---------------------------------------------------------------------------- small p_true
# The floor of a material difference is relative to the estimate (CHAIN_RATIO): with N_SMALL
# candidate values p_true is about 1/N_SMALL = 0.02, where a difference of two points is the
# whole estimate. In the disagreeing case chain 0's augmented draws favour the even values and
# chain 1's the odd ones by a factor 2.5, so every affected record's p_true is about 0.029 under
# one chain and 0.011 under the other (NYexample record 6686: 0.033 and 0.013): a ratio of 2.5
# and a difference of 0.017, below the absolute floor.
N_SMALL = 50


def _small_case(seed, *, n=400, affected=(0, 1), H=500, conc=4000.0, rep=1):
    rng = np.random.default_rng(seed)
    x = rng.integers(0, N_LEVELS, n)
    y = rng.integers(0, N_SMALL, n)
    df = pd.DataFrame({"x": pd.Categorical(x, categories=range(N_LEVELS)),
                       "y": pd.Categorical(y, categories=range(N_SMALL))})
    schema = infer_schema(df, synthesized=["y"])
    even = np.arange(N_SMALL) % 2 == 0
    flat = np.full(N_SMALL, 1 / N_SMALL)

    def draws(mean):
        out = []
        for c in range(2):
            th = np.empty((H, N_LEVELS, N_SMALL))
            for lv in range(N_LEVELS):
                th[:, lv] = np.repeat(rng.dirichlet(conc * mean(c, lv), size=H // rep), rep, 0)
            out.append(th)
        return np.concatenate(out)

    def aug_mean(c, lv):
        if lv not in affected:
            return flat
        w = np.where(even == (c == 0), 2.5, 1.0)
        return w / w.sum()

    model = ArrayModel(_ll, draws(lambda c, lv: flat), schema, ratio_form="conditional",
                       chains=2)
    return df, model, [model.with_draws(draws(aug_mean), chains=2)], x, y


def test_chains_that_disagree_in_ratio_are_flagged_below_the_absolute_floor():
    df, model, aug, x, _ = _small_case(3)
    res = _run(df, model, aug)
    r = res.records
    lo, hi = r["p_true_chain_min"].to_numpy(), r["p_true_chain_max"].to_numpy()
    expected = np.isin(x, [0, 1])
    assert expected.sum() > 50
    # the affected records: ratio about 2.5, difference below the absolute floor of 0.02
    assert np.all(hi[expected] / lo[expected] > 2.0)
    assert np.all(hi[expected] - lo[expected] < CHAIN_TOLERANCE)
    assert np.median(r["p_true"]) < 0.03
    np.testing.assert_array_equal(_flagged(res), expected)
    assert res.settings["chain_check"]["ratio"] == CHAIN_RATIO
    # the absolute floor alone (the former rule) flags only the records whose truth is the
    # best guess under one chain and not the other (a criterion of its own)
    ch = chain_agreement(res.diagnostics, res.logprior, res._g0(), ratio=np.inf)
    np.testing.assert_array_equal(ch["flag"], ch["top_differs"])
    assert ch["flag"].sum() < expected.sum() / 4
    # a ratio below the material one is not flagged by the difference of p_true
    ch = chain_agreement(res.diagnostics, res.logprior, res._g0(), ratio=2.6)
    np.testing.assert_array_equal(ch["flag"], ch["top_differs"])


@pytest.mark.parametrize("rep", [1, 10])
def test_chains_from_one_posterior_with_small_p_true_are_calibrated(rep):
    # both chains draw from the same posterior; p_true is about 0.02, so only the test of a
    # difference beyond Monte Carlo error stands between noise and a flag: the batch-means z
    # must be calibrated (about |t| with 19 df per chain) and flags as rare as its level 0.001
    df, model, aug, _, _ = _small_case(4, affected=(), rep=rep)
    res = _run(df, model, aug)
    assert res.settings["chain_check"]["status"] == "run"
    assert np.median(res.records["p_true"]) < 0.03
    z = res.records["chain_z"].to_numpy()
    assert _flagged(res).sum() <= 1
    # |t_38| has mean 0.81 and 5 % above 2.02; 400 records: SE of that share 0.011
    assert 0.6 < np.mean(z) < 1.1, np.mean(z)
    assert 0.01 < np.mean(z > 2.02) < 0.10, np.mean(z > 2.02)


def test_one_chain_runs_no_check_and_says_so():
    df, model, aug, _, _ = _case(1, chains=1)
    res = _run(df, model, aug)
    assert not _flagged(res).any()
    assert "p_true_chain_min" not in res.records.columns
    note = res.to_dict()["between_chain_check"]
    assert note["status"] == "not run" and note["reason"].startswith("1 chain")
    assert note["records_flagged"] is None
    assert "Between-chain check: not run (1 chain" in str(res.summary())


def test_published_estimator_and_short_chains_are_not_checked():
    df, model, aug, _, _ = _case(1)
    res = _run(df, model, None, estimator="is")
    assert res.settings["chain_check"]["status"] == "not run"
    assert "'is' estimator" in res.settings["chain_check"]["reason"]
    df, model, aug, _, _ = _case(1, H=40)
    res = _run(df, model, aug)
    assert res.settings["chain_check"]["reason"].startswith("chains too short")


def test_the_check_changes_no_estimate_and_no_other_flag():
    df, model, aug, _, _ = _case(1)
    two = _run(df, model, aug)
    one = _run(df, ArrayModel(_ll, model.draws, model.schema_, ratio_form="conditional"),
               [ArrayModel(_ll, aug[0].draws, model.schema_, ratio_form="conditional")])
    for a, b in zip(two.loglik, one.loglik, strict=True):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(two.records["p_true"], one.records["p_true"])
    other = two.records["flag_codes"].str.replace(r";?CHAINS_DISAGREE", "", regex=True)
    assert other.tolist() == one.records["flag_codes"].tolist()


def test_each_chain_estimate_is_the_estimate_from_that_chain_alone():
    df, model, aug, _, _ = _case(1)
    res = _run(df, model, aug)
    H = model.n_draws // 2
    for c in range(2):
        part = slice(c * H, (c + 1) * H)
        alone = _run(df, ArrayModel(_ll, model.draws[part], model.schema_,
                                    ratio_form="conditional"),
                     [ArrayModel(_ll, aug[0].draws[part], model.schema_,
                                 ratio_form="conditional")])
        for d, ll in zip(res.diagnostics, alone.loglik, strict=True):
            np.testing.assert_allclose(d["chain_loglik"][c], ll, rtol=0, atol=1e-12)


def test_relabelling_the_chains_changes_no_flag():
    df, model, aug, _, _ = _case(1)
    res = _run(df, model, aug)
    H = model.n_draws // 2
    swap = np.r_[np.arange(H, 2 * H), np.arange(H)]
    sw = _run(df, model.with_draws(model.draws[swap], chains=2),
              [aug[0].with_draws(aug[0].draws[swap], chains=2)])
    assert sw.records["flag_codes"].tolist() == res.records["flag_codes"].tolist()
    for k in ("p_true_chain_min", "p_true_chain_max", "chain_z"):
        np.testing.assert_allclose(sw.records[k], res.records[k], rtol=1e-9)


def test_with_prior_recomputes_the_check():
    df, model, aug, _, _ = _case(1)
    res = _run(df, model, aug)
    new = with_prior(res, prior="truth-weighted:2")
    fresh = _run(df, model, aug, prior="truth-weighted:2")
    assert new.records["flag_codes"].tolist() == fresh.records["flag_codes"].tolist()
    np.testing.assert_allclose(new.records["chain_z"], fresh.records["chain_z"], rtol=1e-9)


def test_array_model_chains_are_validated():
    df, model, _, _, _ = _case(1)
    with pytest.raises(ValidationError, match="divisor"):
        ArrayModel(_ll, model.draws, model.schema_, chains=3)
    with pytest.raises(ValidationError, match="chain labels"):
        ArrayModel(_ll, model.draws, model.schema_, chains=[0, 1])
    labels = np.repeat([5, 2], model.n_draws // 2)
    m = ArrayModel(_ll, model.draws, model.schema_, chains=labels)
    np.testing.assert_array_equal(m.draw_chains(), labels)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), perm=st.permutations([0, 1, 2]))
def test_chain_agreement_does_not_depend_on_the_order_of_the_chains(seed, perm):
    rng = np.random.default_rng(seed)
    n, C, K, G = 6, 3, 8, 4
    diags = []
    for _ in range(n):
        ll = rng.normal(0, 1, (C, G)) + rng.normal(0, 2, G)
        diags.append({"chain_loglik": ll,
                      "chain_dev": rng.normal(0, 0.05, (C, K, G)).astype(np.float32)})
    for d in diags:
        d["chain_dev"] -= d["chain_dev"].mean(axis=1, keepdims=True)
    lp = [np.full(G, -np.log(G))] * n
    g0 = rng.integers(0, G, n)
    a = chain_agreement(diags, lp, g0)
    b = chain_agreement([{k: v[list(perm)] for k, v in d.items()} for d in diags], lp, g0)
    for k in a:
        np.testing.assert_allclose(a[k], b[k], rtol=1e-12)


def test_dpmpm_chains_reach_the_check_and_agree():
    # K = 1: the posterior is a product of Dirichlets, which the Gibbs sampler draws exactly,
    # so the two chains sample the same posterior and the check must flag nothing
    dpmpm = pytest.importorskip("bayes_risk.models.dpmpm.dpmpm")
    from bayes_risk.data import make_acs_like

    df = make_acs_like(150, random_seed=3)[["SEX", "AGE", "RACE", "EDUC"]]
    model = dpmpm.DPMPM(n_components=1, sampling=Sampling(tune=20, draws=300, chains=2, cores=1),
                        progressbar=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(df, random_seed=5)
        syn = model.synthesize(2, random_seed=6)
        res = attribute_risk(df, syn, model=model, records=range(40), random_seed=7,
                             progressbar=False)
    np.testing.assert_array_equal(model.draw_chains(), np.repeat([0, 1], model.n_draws // 2))
    assert res.settings["chain_check"]["status"] == "run"
    assert res.settings["chain_check"]["chains"] == 2
    assert not _flagged(res).any()
    assert np.all(res.records["p_true_chain_max"] - res.records["p_true_chain_min"] < 0.02)


def test_augmented_fit_with_other_chains_is_used_whole():
    # the chains of the case differ only in the augmented draws: used whole (one chain given),
    # they are common to both chains' estimates, which then agree
    df, model, aug, _, _ = _case(1)
    res = _run(df, model, [aug[0].with_draws(aug[0].draws)])
    assert res.settings["chain_check"]["status"] == "run"
    assert "used whole" in res.settings["chain_check"]["reason"]
    assert not _flagged(res).any()


def test_prior_sweep_is_with_prior_bit_for_bit_in_any_blocks(monkeypatch):
    # the sweep applies its priors in blocks over stacked aggregates; each prior's rows must be
    # exactly what with_prior (and so a run with that prior) gives, whatever the blocks
    from bayes_risk.attribute import api

    df, model, aug, _, _ = _case(1)
    res = _run(df, model, aug)
    priors = ["uniform", "truth-weighted:2", "truth-weighted:0.3", "empirical", "truth-weighted:40"]
    sweep = prior_sensitivity(res, priors=priors)
    monkeypatch.setattr(api, "_SWEEP_BLOCK", 1)  # one prior per block
    pd.testing.assert_frame_equal(prior_sensitivity(res, priors=priors), sweep, check_exact=True)
    labels = ["uniform", "truth-weighted:2", "truth-weighted:0.3", "empirical:1",
              "truth-weighted:40"]
    assert list(sweep["prior"].unique()) == labels
    for p, label in zip(priors, labels, strict=True):
        ref = with_prior(res, prior=p, bootstrap=False).records
        rows = sweep[sweep["prior"] == label]
        for k in ("p_true", "rank_min", "rank_avg", "n_tie", "top_share", "flag_codes"):
            np.testing.assert_array_equal(rows[k].to_numpy(), ref[k].to_numpy())
        np.testing.assert_array_equal(rows["is_top"].to_numpy(), ref["is_top"].to_numpy() > 0)


def test_prior_sweep_equals_numpy_one_prior_at_a_time():
    # the compiled sweep (a block of priors at once) against the numpy formulas applied to one
    # prior at a time: the posterior and ranks of the truth (Hu 2019 eq. 1), what the prior
    # alone gives, each chain's p_true; and every flag as with_prior sets it
    from bayes_risk.attribute.summaries import log_posterior, rank_summary

    df, model, aug, _, _ = _case(2, affected=(0, 1, 2))
    res = _run(df, model, aug)
    user = np.array([0.5, 0.0, 2.0])  # a candidate without weight
    priors = ["uniform", "truth-weighted:3", "empirical:0.5", "model-predictive", user,
              "truth-weighted:0.05"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sweep = prior_sensitivity(res, priors=priors)
        alone = [with_prior(res, prior=p, bootstrap=False) for p in priors]
    n, g0 = len(res.loglik), res._g0()
    ll = np.stack(res.loglik)
    cll = np.stack([d["chain_loglik"] for d in res.diagnostics])  # (n, C, G)
    dev = np.stack([d["chain_dev"] for d in res.diagnostics]).astype(np.float64)  # (n, C, K, G)
    K = dev.shape[2]
    assert res.records["flag_codes"].str.contains("CHAINS_DISAGREE").any()
    for k, one in enumerate(alone):
        rows = sweep.iloc[k * n : (k + 1) * n]
        lp = np.stack(one.logprior)
        ref = rank_summary(log_posterior(ll, lp), g0)
        for c in ("p_true", "rank_min", "n_tie", "rank_avg", "top_share"):
            np.testing.assert_allclose(rows[c].to_numpy(float), ref[c], rtol=1e-12, atol=0)
        np.testing.assert_allclose(rows["prior_p_true"], np.exp(lp[np.arange(n), g0]),
                                   rtol=1e-12, atol=0)
        pc = np.exp(log_posterior(cll, lp[:, None, :]))[np.arange(n), :, g0]  # (n, C)
        np.testing.assert_allclose(one.records["p_true_chain_min"], pc.min(axis=1), rtol=1e-12)
        np.testing.assert_allclose(one.records["p_true_chain_max"], pc.max(axis=1), rtol=1e-12)
        # chain_z: the delta-method batch-means z of the two chains' p_true
        post = np.exp(log_posterior(cll, lp[:, None, :]))
        grad = -pc[..., None] * post
        grad[np.arange(n), :, g0] += pc
        var = (np.einsum("rcg,rckg->rck", grad, dev) ** 2).sum(axis=-1) / (K * (K - 1))
        dp = np.abs(pc[:, 0] - pc[:, 1])
        z = np.where(dp == 0, 0.0, dp / np.sqrt(var.sum(axis=1)))
        np.testing.assert_allclose(one.records["chain_z"], z, rtol=1e-9)
        for c in ("p_true", "p_true_lower", "p_true_upper", "flag_codes"):
            np.testing.assert_array_equal(rows[c].to_numpy(), one.records[c].to_numpy())
