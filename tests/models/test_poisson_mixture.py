"""Poisson-mixture synthesizers MP / MM / TCMM (SPEC §3.3, §3.2 stick breaking, §2.9.4)."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats
from scipy.special import gammaln

import bayes_risk.models._bayesian.sticks as sticks
import bayes_risk.models.poisson.kernels as pk
from bayes_risk.attribute import EstimatorSpec
from bayes_risk.data import infer_schema
from bayes_risk.exceptions import (
    ConvergenceWarning,
    NotFittedError,
    SchemaError,
    ValidationError,
)
from bayes_risk.models import Sampling
from bayes_risk.models._bayesian.convergence_report import check_convergence
from bayes_risk.models.poisson.poisson_mixture import PoissonMixture

RTOL, ATOL = 1e-6, 1e-9

TRUE_PI = np.array([0.6, 0.4])
TRUE_LAM = np.array([[2.0, 20.0], [12.0, 4.0]])


def _simulate(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    k = rng.choice(2, size=n, p=TRUE_PI)
    return pd.DataFrame(rng.poisson(TRUE_LAM[k]), columns=["workers", "wages"])


def _fit(variant: str, df: pd.DataFrame, synthesized=None, **kw) -> PoissonMixture:
    settings = dict(n_components=8, sampling=Sampling(tune=150, draws=300), progressbar=False)
    settings.update(kw)
    if "region" in df.columns:
        synthesized = ["workers", "wages"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = PoissonMixture.from_settings({"variant": variant, **settings})
        return model.fit(df, synthesized=synthesized, random_seed=11)


@pytest.fixture(scope="module")
def data() -> pd.DataFrame:
    return _simulate(400, 2016)


@pytest.fixture(scope="module")
def mp(data) -> PoissonMixture:
    return _fit("mp", data)


@pytest.fixture(scope="module")
def mm(data) -> PoissonMixture:
    return _fit("mm", data)


# ------------------------------------------------------------------------------------------
# SPEC worked examples
# ------------------------------------------------------------------------------------------
def test_mp_record_likelihood_fixture():
    # SPEC §3.3: pi = (0.5, 0.5), lambda_1 = (2, 10), lambda_2 = (8, 1), y = (3, 9)
    log_pi = np.log([[0.5, 0.5]])
    lam = np.array([[[2.0, 10.0], [8.0, 1.0]]])
    ll = pk.record_loglik(np.array([[3.0, 9.0]]), log_pi, lam)
    np.testing.assert_allclose(ll[0, 0], -4.484025, rtol=RTOL, atol=1e-6)
    np.testing.assert_allclose(np.exp(ll[0, 0]), 0.0112879, rtol=1e-5)
    w = pk.class_log_weights(np.array([[3.0, 9.0]]), log_pi[0], lam[0])
    post = np.exp(w - np.logaddexp.reduce(w, axis=1, keepdims=True))[0]
    np.testing.assert_allclose(post, [0.9999987, 1.2855e-6], rtol=1e-4, atol=1e-9)


def test_gibbs_lambda_full_conditional_fixture():
    # members' values (2, 4, 3), prior Gamma(1, 0.1) -> Gamma(10, 3.1), mean 3.225806
    n_k, s = pk.component_stats(np.array([[2.0], [4.0], [3.0]]), np.zeros(3, dtype=np.int64), 1)
    shape, rate = pk.lambda_params(n_k, s, 1.0, 0.1)
    np.testing.assert_allclose(shape, [[10.0]], rtol=RTOL)
    np.testing.assert_allclose(rate, [[3.1]], rtol=RTOL)
    np.testing.assert_allclose(shape / rate, [[3.225806]], rtol=1e-6)


def test_mm_multinomial_fixtures():
    def p(values, total):
        return np.exp(pk.multinomial_group_loglik(np.array(values), total))

    np.testing.assert_allclose(p([2, 3], 5), 0.3125, rtol=RTOL)
    np.testing.assert_allclose(p([4, 0, 0], 4), 0.0123457, rtol=1e-5)
    np.testing.assert_allclose(p([2, 1, 1], 4), 12 / 81, rtol=RTOL)
    np.testing.assert_allclose(12 / 81, 0.148148, rtol=1e-5)
    # a group whose synthetic sum differs from its total has probability 0
    assert pk.multinomial_group_loglik(np.array([2, 2]), 5) == -np.inf


def test_tcmm_tail_fixture():
    y = np.array([1, 2, 3, 4, 50, 100])
    assert pk.tail_threshold(y, 0.6) == 4.0
    groups, tau = pk.tcmm_groups(y, np.zeros(6, dtype=np.int64), 1, 0.6)
    assert tau == 4.0
    np.testing.assert_array_equal(groups, [0, 0, 0, 0, 1, 1])  # tail = {50, 100}
    tail_total = y[groups == 1].sum()
    assert tail_total == 150
    np.testing.assert_allclose(np.exp(pk.multinomial_group_loglik(np.array([75, 75]), 150)),
                               0.0650385, rtol=1e-5)
    np.testing.assert_allclose(np.exp(pk.multinomial_group_loglik(np.array([100, 50]), 150)),
                               1.41031e-5, rtol=1e-5)


def test_stick_breaking_fixtures():
    # SPEC §3.2 (shared with DPMPM)
    np.testing.assert_allclose(np.exp(sticks.stick_breaking_log(np.array([0.5, 0.4]))),
                               [0.5, 0.2, 0.3], rtol=RTOL)
    a, b = sticks.stick_conditional(np.array([5, 3, 2]), 1.0)
    np.testing.assert_allclose(a, [6, 4])
    np.testing.assert_allclose(b, [6, 3])
    shape, rate = sticks.alpha_conditional_log(np.log1p(-np.array([0.5, 0.4])), 0.25,
                                               0.25)
    np.testing.assert_allclose([shape, rate], [2.25, 1.453973], rtol=1e-6)


@given(
    st.lists(st.integers(0, 30), min_size=1, max_size=12), st.integers(1, 4),
    st.integers(0, 2**31),
)
def test_redistribute_totals_preserves_group_sums(values, n_groups, seed):
    """Property: multinomial redistribution reproduces every group's total exactly."""
    rng = np.random.default_rng(seed)
    groups = rng.integers(0, n_groups, size=len(values))
    totals = np.bincount(groups, weights=values, minlength=n_groups)
    out = pk.redistribute_totals(groups, totals, rng)
    np.testing.assert_array_equal(np.bincount(groups, weights=out, minlength=n_groups), totals)
    assert out.min() >= 0


# ------------------------------------------------------------------------------------------
# the PyMC model is the source of truth for the kernels
# ------------------------------------------------------------------------------------------
def test_record_kernel_matches_pymc_logp(mp, data):
    rng = np.random.default_rng(5)
    rows = data.iloc[rng.choice(len(data), 12, replace=False)].copy()
    rows.iloc[0] = [0, 0]
    rows.iloc[1] = [60, 1]  # far in the tail of both components
    draws = rng.choice(mp.n_draws, 6, replace=False)
    np.testing.assert_allclose(
        mp.record_loglik(rows, draw_indices=draws), mp.pymc_record_logp(rows, draw_indices=draws),
        rtol=1e-9, atol=1e-9,
    )


def test_k1_gibbs_posterior_is_conjugate_gamma(data):
    """With K = 1 the MP posterior of λ_j is Gamma(a + Σy, b + n) exactly (closed form)."""
    m = _fit("mp", data, n_components=1, tune=20, draws=4000, b_lambda=0.5)
    lam = m._stacked("lam")[:, 0, :]  # [H, p]
    shape = 1.0 + data.sum().to_numpy()
    rate = 0.5 + len(data)
    mean, sd = shape / rate, np.sqrt(shape) / rate
    # independent draws (Gibbs with K = 1 is exact sampling): 4 MC standard errors
    assert np.all(np.abs(lam.mean(0) - mean) <= 4 * sd / np.sqrt(lam.shape[0]))
    np.testing.assert_allclose(lam.std(0), sd, rtol=0.1)


# ------------------------------------------------------------------------------------------
# fitting, recovery, synthesis
# ------------------------------------------------------------------------------------------
def test_posterior_predictive_recovers_truth(mp, data):
    """Posterior predictive means, marginal tails and a two-way cell within 4 SE of the truth."""
    w = mp._stacked("w")
    lam = mp._stacked("lam")
    n = len(data)
    true_mean = TRUE_PI @ TRUE_LAM
    true_var = TRUE_PI @ (TRUE_LAM + TRUE_LAM**2) - true_mean**2
    pred_mean = np.einsum("hk,hkj->j", w, lam) / w.shape[0]
    # the posterior is centred on the sample; sample means vary with sd sqrt(var / n)
    tol = 4 * np.sqrt(true_var / n)
    assert np.all(np.abs(pred_mean - true_mean) <= tol), (pred_mean, true_mean)
    # marginal and two-way probabilities P(y1 > 6), P(y2 > 10), P(y1 > 6, y2 > 10)
    def probs(pi, lmb):
        s1 = stats.poisson.sf(6, lmb[..., 0])
        s2 = stats.poisson.sf(10, lmb[..., 1])
        return np.array([(pi * s1).sum(-1), (pi * s2).sum(-1), (pi * s1 * s2).sum(-1)])

    truth = probs(TRUE_PI, TRUE_LAM)
    pred = probs(w, lam).mean(axis=1)
    assert np.all(np.abs(pred - truth) <= 4 * np.sqrt(truth * (1 - truth) / n)), (pred, truth)


def test_posterior_has_expected_groups(mm):
    dt = mm.posterior_
    assert {"posterior", "sample_stats", "latent"} <= set(dt.children)
    post = dt["posterior"]
    assert set(post.data_vars) >= {"alpha", "v", "w", "lam"}
    assert post["lam"].dims == ("chain", "draw", "component", "column")
    assert dt["latent"]["z"].shape == (1, 300, 400)
    np.testing.assert_allclose(post["w"].sum("component"), 1.0)
    rep = check_convergence(mm)
    assert {"mean[workers]", "mean[wages]", "loglik", "n_occupied", "alpha"} <= set(rep.index)


def test_mp_synthetic_marginals_close(mp, data):
    syn = mp.synthesize(3, random_seed=4)
    assert syn.model_class if hasattr(syn, "model_class") else True
    for z in syn:
        assert list(z.columns) == list(data.columns)
        assert len(z) == len(data)
        assert (z.to_numpy() >= 0).all() and z.dtypes.map(pd.api.types.is_integer_dtype).all()
        # synthetic means vary around the original's with sd about sqrt(2 var / n)
        sd = np.sqrt(2 * data.var().to_numpy() / len(data))
        assert np.all(np.abs(z.mean().to_numpy() - data.mean().to_numpy()) <= 5 * sd)
    assert syn.extra["model_class"] == "P"


def test_mm_reproduces_every_marginal_total_exactly(mm, data):
    syn = mm.synthesize(3, random_seed=8)
    for l, z in enumerate(syn):
        np.testing.assert_array_equal(z.sum().to_numpy(), data.sum().to_numpy())
        # and every component total under the memberships of the generating draw
        memb = mm.state_.memberships_of(syn.draw_index[l])
        for c in data.columns:
            np.testing.assert_array_equal(
                np.bincount(memb, weights=z[c], minlength=8),
                np.bincount(memb, weights=data[c], minlength=8),
            )
    assert mm.model_class == "O"
    # two datasets differ (the redistribution is random)
    assert not syn[0].equals(syn[1])


def test_tcmm_preserves_totals_and_collapses_tail(data):
    m = _fit("tcmm", data, q=0.8, tune=50, draws=60)
    syn = m.synthesize(2, random_seed=3)
    for z in syn:
        np.testing.assert_array_equal(z.sum().to_numpy(), data.sum().to_numpy())
        for c in data.columns:
            tau = pk.tail_threshold(data[c].to_numpy(), 0.8)
            tail = data[c].to_numpy() > tau
            assert z[c][tail].sum() == data[c][tail].sum()
    # more collapsing than MM: the tail records' synthetic values are exchangeable, so the
    # largest confidential value is (almost surely) not reproduced at its own record
    rec = int(np.argmax(data["wages"]))
    assert syn[0]["wages"][rec] != data["wages"][rec]


def test_mp_dataset_loglik_is_sum_of_record_logliks(mp):
    syn = mp.synthesize(2, random_seed=1)
    L = mp.dataset_loglik(syn, draw_indices=[0, 5, 9])
    rl = np.stack([mp.record_loglik(z, draw_indices=[0, 5, 9]).sum(1) for z in syn], axis=1)
    np.testing.assert_allclose(L, rl, rtol=1e-12)
    assert L.shape == (3, 2)


def test_mm_dataset_loglik_stored_memberships_by_hand(mm, data):
    syn = mm.synthesize(2, random_seed=6)
    h = syn.draw_index[0]
    L = mm.dataset_loglik(syn, draw_indices=[h], memberships="stored")
    memb = mm.state_.memberships_of(h)
    z = syn[0]
    want = 0.0
    for c in data.columns:
        for k in np.unique(memb):
            vals = z[c].to_numpy()[memb == k]
            tot = data[c].to_numpy()[memb == k].sum()
            want += gammaln(tot + 1) - gammaln(vals + 1).sum() - tot * np.log(vals.size)
    np.testing.assert_allclose(L[0, 0], want, rtol=1e-10)
    # a user-supplied membership array gives the same
    np.testing.assert_allclose(mm.dataset_loglik([z], draw_indices=[h], memberships=memb)[0, 0],
        want)


def test_mm_generating_memberships_default(mm, data):
    """Default for MM: the memberships that generated each dataset (found without draw_index)."""
    syn = mm.synthesize(2, random_seed=12)
    L = mm.dataset_loglik(syn, draw_indices=[0, 100, 299])
    assert np.all(np.isfinite(L))
    # given memberships the MM likelihood does not depend on Θ_h
    np.testing.assert_allclose(L, np.broadcast_to(L[0], L.shape))
    stored = mm.dataset_loglik(syn, draw_indices=syn.draw_index, memberships="stored")
    np.testing.assert_allclose(L[0], np.diag(stored))
    # plain frames: the generating draw is found by its group sums
    np.testing.assert_allclose(mm.dataset_loglik(list(syn), draw_indices=[0]), L[:1])
    # a dataset this model did not synthesize is refused, with advice
    other = data.sample(frac=1.0, random_state=1).reset_index(drop=True)
    with pytest.raises(ValidationError, match="no stored draw's memberships"):
        mm.dataset_loglik([other], draw_indices=[0])


def test_mm_through_attribute_engine_collapses(mm, data):
    """The attribute engine with the MM own-record term puts all mass on the truth (seed 003)."""
    from bayes_risk.attribute.api import attribute_risk

    syn = mm.synthesize(2, random_seed=13)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = attribute_risk(data, syn, model=mm, records=[3, 4], candidates="grid:additive:2:5",
                             progressbar=False,
                             estimator=EstimatorSpec(draw_indices=np.arange(0, 300, 10)))
    np.testing.assert_allclose(res.records["p_true"], 1.0)


def test_mm_own_record_delta_collapses_on_truth(mm, data):
    """Under exact component totals only the true value keeps the synthetic sums possible."""
    syn = mm.synthesize(1, random_seed=6)
    h = syn.draw_index[0]
    rec = int(np.flatnonzero((data["workers"] > 0) & (data["wages"] > 0))[0])
    y = data.iloc[rec].to_numpy()
    cands = np.array([y, y + [1, 0], y + [0, 2], np.maximum(y - [1, 0], 0)])
    d = mm.own_record_delta(rec, cands, syn, draw_indices=[h], memberships="stored")
    assert d.shape == (1, 1, 4)
    assert d[0, 0, 0] == 0.0
    assert np.all(d[0, 0, 1:] == -np.inf)


def test_largest_value_scenario_pieces(mp, mm, data):
    syn = mp.synthesize(2, random_seed=2)
    top = float(data["wages"].max())
    res = mp.largest_value_loglik("wages", syn, upper=top + 5, draw_indices=np.arange(20),
        data=data)
    assert res.model_class == "P"
    assert res.candidates[res.g0] == top
    assert res.candidates[0] == np.sort(data["wages"].to_numpy())[-2]
    assert res.logp_rec.shape == (20, res.candidates.size)
    rec = data.iloc[[res.record] * res.candidates.size].copy()
    rec["wages"] = res.candidates.astype(np.int64)
    np.testing.assert_allclose(res.logp_rec, mp.record_loglik(rec, draw_indices=np.arange(20)))
    assert res.delta is None and res.L.shape == (20, 2)
    # class O: the component-total likelihood
    syn_mm = mm.synthesize(1, random_seed=2)
    h = syn_mm.draw_index[0]
    res_o = mm.largest_value_loglik("wages", syn_mm, upper=top + 3, draw_indices=[h],
        memberships="stored")
    assert res_o.model_class == "O"
    assert res_o.delta.shape == (1, 1, res_o.candidates.size)
    assert res_o.delta[0, 0, res_o.g0] == 0.0
    others = np.delete(res_o.delta[0, 0], res_o.g0)
    assert np.all(others == -np.inf)
    np.testing.assert_allclose(res_o.loglik_candidates[0, 0, res_o.g0], res_o.L[0, 0])
    from bayes_risk.attribute.largest_value import largest_value_posterior

    post_o, _ = largest_value_posterior(res_o)
    np.testing.assert_allclose(post_o, np.eye(res_o.candidates.size)[res_o.g0])  # MM collapses
    # class P: the posterior by hand from SPEC §2.6 steps 1-5
    post, loglik = largest_value_posterior(res)
    logr = res.logp_rec - res.logp_rec[:, [res.g0]]
    logq = logr - np.logaddexp.reduce(logr, axis=0)
    want = np.logaddexp.reduce(res.L[:, :, None] + logq[:, None, :], axis=0).sum(0)
    np.testing.assert_allclose(loglik, want, rtol=1e-10)
    np.testing.assert_allclose(post.sum(), 1.0)
    from bayes_risk.attribute.summaries import largest_value

    summ = largest_value(post, res.candidates, top, delta=0.05)
    assert 0.0 <= summ["P_interval"] <= 1.0


def test_sampler_loglik_stat_matches_record_kernel(mm, data):
    """The Gibbs step's recorded log-likelihood is Σ_i log p(y_i | Θ_h) for the recorded Θ_h."""
    ll = np.asarray(mm.posterior_["sample_stats"]["loglik"].values).reshape(-1)
    draws = np.array([0, 57, 299])
    np.testing.assert_allclose(ll[draws], mm.record_loglik(data, draw_indices=draws).sum(1),
        rtol=1e-10)


def test_two_chains_are_flattened_chain_major(data):
    m = _fit("mm", data.head(100), n_components=4, tune=20, draws=30, chains=2, cores=2)
    assert m.posterior_["latent"]["z"].shape == (2, 30, 100) and m.n_draws == 60
    ll = np.asarray(m.posterior_["sample_stats"]["loglik"].values).reshape(-1)
    np.testing.assert_allclose(ll, m.record_loglik(data.head(100)).sum(1), rtol=1e-10)
    syn = m.synthesize(2, random_seed=1)
    assert syn.draw_index == [29, 59]
    for l, z in enumerate(syn):  # the second dataset uses chain 2's memberships
        memb = m.state_.memberships_of(syn.draw_index[l])
        np.testing.assert_array_equal(
            np.bincount(memb, weights=z["wages"], minlength=4),
            np.bincount(memb, weights=data.head(100)["wages"], minlength=4),
        )


def test_posterior_class_mode_is_class_o(data):
    m = _fit("mp", data, synthesis_mode="posterior_class", tune=30, draws=40)
    assert m.model_class == "O" and m.data_ is not None
    syn = m.synthesize(1, random_seed=1)
    h = syn.draw_index[0]
    memb = m.state_.memberships_of(h)
    lam = m._stacked("lam", np.array([h]))[0]
    want = stats.poisson.logpmf(syn[0].to_numpy(), lam[memb]).sum()
    np.testing.assert_allclose(m.dataset_loglik(syn, draw_indices=[h], memberships="stored")[0,
        0], want)
    # default: the class is summed out with p(k | y_i, Θ) (SPEC §3.2 posterior_class row)
    w = m._stacked("w", np.array([h]))[0]
    y, z = data.to_numpy(), syn[0].to_numpy()
    joint = w[None, :] * stats.poisson.pmf(y[:, None, :], lam[None]).prod(-1)
    post = joint / joint.sum(1, keepdims=True)
    pz = stats.poisson.pmf(z[:, None, :], lam[None]).prod(-1)
    want_m = np.log((post * pz).sum(1)).sum()
    np.testing.assert_allclose(m.dataset_loglik(syn, draw_indices=[h])[0, 0], want_m, rtol=1e-10)
    # own-record term: only record 0's class probabilities change
    cands = np.array([y[0], y[0] + [3, 0], y[0] + [0, 5]])
    d = m.own_record_delta(0, cands, syn, draw_indices=[h])
    for g, c in enumerate(cands):
        jc = w * stats.poisson.pmf(c[None, :], lam).prod(-1)
        own = np.log(((jc / jc.sum()) * pz[0]).sum())
        np.testing.assert_allclose(d[0, 0, g], own - np.log((post[0] * pz[0]).sum()), atol=1e-10)


def test_tcmm_dataset_loglik_by_hand(data):
    m = _fit("tcmm", data, q=0.7, tune=30, draws=40)
    syn = m.synthesize(1, random_seed=5)
    h = syn.draw_index[0]
    memb = m.state_.memberships_of(h)
    want = 0.0
    for c in data.columns:
        y = data[c].to_numpy()
        groups = np.where(y > pk.tail_threshold(y, 0.7), 8, memb)  # tail group = K
        for g in np.unique(groups):
            vals = syn[0][c].to_numpy()[groups == g]
            tot = y[groups == g].sum()
            want += gammaln(tot + 1) - gammaln(vals + 1).sum() - tot * np.log(vals.size)
    np.testing.assert_allclose(m.dataset_loglik(syn, draw_indices=[h], memberships="stored")[0,
        0], want,
                               rtol=1e-10)


# ------------------------------------------------------------------------------------------
# persistence and external draws
# ------------------------------------------------------------------------------------------
def test_save_load_round_trip(mm, data, tmp_path):
    mm.save(tmp_path / "model")
    loaded = PoissonMixture.load(tmp_path / "model")
    a = mm.synthesize(2, random_seed=21)
    b = loaded.synthesize(2, random_seed=21)
    for x, y in zip(a, b, strict=False):
        pd.testing.assert_frame_equal(x, y)
    head = data.head(20)
    np.testing.assert_array_equal(mm.record_loglik(head), loaded.record_loglik(head))
    np.testing.assert_array_equal(
        mm.dataset_loglik(a, draw_indices=[0, 1], memberships="stored"),
        loaded.dataset_loglik(a, draw_indices=[0, 1], memberships="stored"),
    )
    assert loaded.get_params() == mm.get_params()


def test_from_posterior_dict(data):
    schema = infer_schema(data)
    H = 5
    lam = np.tile(TRUE_LAM, (H, 1, 1))
    w = np.tile(TRUE_PI, (H, 1))
    with pytest.warns(ConvergenceWarning, match="LOW_ESS"):  # 5 draws are 5 effective draws
        m = PoissonMixture.from_posterior({"w": w, "lam": lam}, schema, n_records=len(data),
                                          n_components=2)
    ll = m.record_loglik(data.head(3))
    pmf = stats.poisson.pmf(data.head(3).to_numpy()[:, None, :], TRUE_LAM).prod(-1)
    want = np.log((TRUE_PI[None, :] * pmf).sum(1))
    np.testing.assert_allclose(ll, np.tile(want, (H, 1)), rtol=1e-10)
    syn = m.synthesize(2, random_seed=1)
    assert syn.draw_index == [1, 4]
    with pytest.raises(ValidationError, match="n_components") as e:
        PoissonMixture.from_posterior({"w": w, "lam": lam}, schema, n_records=10)
    assert e.value.code == "POSTERIOR_INVALID"  # draws that do not fit the model
    with pytest.raises(ValidationError, match="summing to 1") as e:
        PoissonMixture.from_posterior({"w": 2 * w, "lam": lam}, schema, n_records=10,
                                      n_components=2)
    assert e.value.code == "POSTERIOR_INVALID"


# 50 draws: the augmented fit's convergence warning is expected (shapes are tested here)
@pytest.mark.filterwarnings("ignore::bayes_risk.exceptions.ConvergenceWarning")
def test_fit_augmented_uses_both_tables(data):
    m = _fit("mp", data, n_components=1, tune=10, draws=50)
    z = m.synthesize(1, random_seed=1)[0]
    aug = m.fit_augmented(data, z, random_seed=3)
    assert aug.n_records == 2 * len(data)
    assert aug.n_draws == m.n_draws


@pytest.mark.slow  # PyTensor compilation of the NUTS graph takes 10-40 s on 2 shared cores
def test_nuts_sampler_and_unsynthesized_columns(data):
    """NUTS on the class-marginalised PyMC model; other columns are copied unchanged."""
    rng = np.random.default_rng(3)
    df = data.head(80).copy()
    df["region"] = pd.Categorical(rng.integers(0, 3, len(df)))
    m = _fit("mm", df, n_components=3, sampler="nuts", tune=100, draws=60, synthesized=None)
    assert "latent" not in m.posterior_.children  # NUTS records no memberships
    syn = m.synthesize(2, random_seed=1)
    for z in syn:
        np.testing.assert_array_equal(z[["workers", "wages"]].sum(), df[["workers", "wages"]].sum())
        pd.testing.assert_series_equal(z["region"], df["region"].reset_index(drop=True))
    with pytest.raises(ValidationError, match="memberships='generating' needs"):
        m.dataset_loglik(syn, memberships="generating")
    assert np.all(np.isfinite(m.record_loglik(df, draw_indices=[0, 59])))


# ------------------------------------------------------------------------------------------
# partial synthesis of selected records
# ------------------------------------------------------------------------------------------
PARTIAL_N = 200


def _partial_flags() -> np.ndarray:
    flags = np.zeros(PARTIAL_N, bool)
    flags[::3] = True
    return flags


def _fit_partial(variant: str, data: pd.DataFrame, **kw) -> PoissonMixture:
    settings = dict(n_components=6, sampling=Sampling(tune=40, draws=60), progressbar=False)
    settings.update(kw)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return PoissonMixture.from_settings({"variant": variant, **settings}).fit(
            data.head(PARTIAL_N), records=_partial_flags(), random_seed=3
        )


def _check_unselected_kept(syn, df: pd.DataFrame, flags: np.ndarray) -> None:
    np.testing.assert_array_equal(syn.synthesized_records, flags)
    for z in syn:
        pd.testing.assert_frame_equal(z[~flags], df[~flags])
        assert (z[flags].to_numpy() != df[flags].to_numpy()).any(axis=1).mean() > 0.5


def test_partial_synthesis_mp_marginal(data):
    df, flags = data.head(PARTIAL_N), _partial_flags()
    m = _fit_partial("mp", data)
    assert m.model_class == "P" and m.data_ is not None  # the unselected records are copied
    # the posterior is fitted on all records: the same draws as for full synthesis
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        full = PoissonMixture(n_components=6,
                              sampling=Sampling(tune=40, draws=60), progressbar=False).fit(
            df, random_seed=3)
    np.testing.assert_array_equal(m._stacked("lam"), full._stacked("lam"))
    syn = m.synthesize(2, random_seed=4)
    _check_unselected_kept(syn, df, flags)
    L = m.dataset_loglik(syn, draw_indices=[0, 9])
    want = np.stack([m.record_loglik(z[flags], draw_indices=[0, 9]).sum(1) for z in syn], axis=1)
    np.testing.assert_allclose(L, want, rtol=1e-12)
    # p(Θ | y, Z_(l)) for that likelihood: only the selected rows of Z_(l) are appended
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        aug = m.fit_augmented(df, syn[0], random_seed=2)
    assert aug.n_records == PARTIAL_N + int(flags.sum()) and aug.synthesized_records_ is None


def test_partial_synthesis_mp_posterior_class(data):
    df, flags = data.head(PARTIAL_N), _partial_flags()
    m = _fit_partial("mp", data, synthesis_mode="posterior_class")
    syn = m.synthesize(1, random_seed=4)
    _check_unselected_kept(syn, df, flags)
    h = syn.draw_index[0]
    memb = m.state_.memberships_of(h)
    lam = m._stacked("lam", np.array([h]))[0]
    w = m._stacked("w", np.array([h]))[0]
    y, z = df.to_numpy(), syn[0].to_numpy()
    want = stats.poisson.logpmf(z[flags], lam[memb[flags]]).sum()
    np.testing.assert_allclose(m.dataset_loglik(syn, draw_indices=[h], memberships="stored")[0,
        0], want)
    joint = w[None, :] * stats.poisson.pmf(y[:, None, :], lam[None]).prod(-1)
    post = joint / joint.sum(1, keepdims=True)
    pz = stats.poisson.pmf(z[:, None, :], lam[None]).prod(-1)
    want_m = np.log((post * pz).sum(1))[flags].sum()
    np.testing.assert_allclose(m.dataset_loglik(syn, draw_indices=[h])[0, 0], want_m, rtol=1e-10)
    # own-record term: by hand for a selected record, 0 for a record released unchanged
    sel, non = int(np.flatnonzero(flags)[0]), int(np.flatnonzero(~flags)[0])
    for i in (sel, non):
        cands = np.array([y[i], y[i] + [3, 0], y[i] + [0, 5]])
        d = m.own_record_delta(i, cands, syn, draw_indices=[h])
        if i == non:
            np.testing.assert_array_equal(d, 0.0)
            cl = m.candidate_dataset_loglik(i, cands, syn, draw_indices=[h])
            np.testing.assert_allclose(cl[0, 0], want_m)
            continue
        for g, c in enumerate(cands):
            jc = w * stats.poisson.pmf(c[None, :], lam).prod(-1)
            own = np.log(((jc / jc.sum()) * pz[i]).sum())
            np.testing.assert_allclose(d[0, 0, g], own - np.log((post[i] * pz[i]).sum()),
                                       atol=1e-10)


@pytest.mark.parametrize("variant", ["mm", "tcmm"])
def test_partial_synthesis_mm_tcmm(data, variant):
    """Within each component the selected records' total is redistributed over them."""
    df, flags = data.head(PARTIAL_N), _partial_flags()
    m = _fit_partial(variant, data, q=0.7)
    syn = m.synthesize(2, random_seed=4)
    _check_unselected_kept(syn, df, flags)
    K = m.n_components

    def groups_of(c: str, h: int) -> np.ndarray:
        # groups of the selected records: components; the TCMM tail is the selected records
        # above the q-quantile of the selected records' values
        memb = m.state_.memberships_of(h)[flags]
        if variant == "mm":
            return memb
        y = df[c].to_numpy()[flags]
        tail = y > pk.tail_threshold(y, 0.7)
        assert tail.any()
        return np.where(tail, K, memb)

    for l, z in enumerate(syn):
        # every column total is preserved, and so is each group's total of selected records
        np.testing.assert_array_equal(z.sum().to_numpy(), df.sum().to_numpy())
        for c in df.columns:
            g = groups_of(c, syn.draw_index[l])
            np.testing.assert_array_equal(
                np.bincount(g, weights=z[c].to_numpy()[flags], minlength=K + 1),
                np.bincount(g, weights=df[c].to_numpy()[flags], minlength=K + 1),
            )
    # dataset likelihood by hand: multinomials over the selected members of each group
    h = syn.draw_index[0]
    want = 0.0
    for c in df.columns:
        y = df[c].to_numpy()[flags]
        vals_all = syn[0][c].to_numpy()[flags]
        groups = groups_of(c, h)
        for g in np.unique(groups):
            vals = vals_all[groups == g]
            tot = y[groups == g].sum()
            want += gammaln(tot + 1) - gammaln(vals + 1).sum() - tot * np.log(vals.size)
    L = m.dataset_loglik(syn, draw_indices=[h, 0], memberships="stored")
    np.testing.assert_allclose(L[0, 0], want, rtol=1e-10)
    # default memberships: the generating ones (from draw_index), the same for every draw
    np.testing.assert_allclose(m.dataset_loglik(syn, draw_indices=[0, 7])[:, 0], want, rtol=1e-10)
    # own-record term: the MM collapse for a selected record, 0 for one released unchanged
    y_all = df.to_numpy()
    sel = int(np.flatnonzero(flags & (y_all > 0).all(1))[0])
    non = int(np.flatnonzero(~flags)[0])
    for i in (sel, non):
        cands = np.array([y_all[i], y_all[i] + [1, 0], y_all[i] + [0, 2]])
        d = m.own_record_delta(i, cands, syn, draw_indices=[0, 5])
        assert d.shape == (2, 2, 3)
        if i == sel:
            assert np.all(d[..., 0] == 0.0) and np.all(d[..., 1:] == -np.inf)
        else:
            np.testing.assert_array_equal(d, 0.0)


def test_partial_synthesis_attribute_risk(data):
    """Engine on a partial release: a selected record of MM collapses on its truth (seed 003);
    a record released unchanged is read off the release (every other candidate is impossible,
    the factor 1{z_i = y*} of the likelihood). MP (class P) gives a proper posterior for the
    selected record."""
    from bayes_risk.attribute.api import attribute_risk

    df, flags = data.head(PARTIAL_N), _partial_flags()
    sel, non = int(np.flatnonzero(flags)[1]), int(np.flatnonzero(~flags)[1])
    for variant in ("mm", "mp"):
        m = _fit_partial(variant, data)
        syn = m.synthesize(2, random_seed=4)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = attribute_risk(df, syn, model=m, records=[sel, non],
                                 candidates="grid:additive:2:5",
                                 progressbar=False, random_seed=1,
                                 estimator=EstimatorSpec(draw_indices=np.arange(0, 60, 3)))
        p = res.records["p_true"].to_numpy()
        assert p[1] == 1.0 and res.records["synthesized"].tolist() == [True, False]
        if variant == "mm":
            assert p[0] == pytest.approx(1.0)
        else:
            assert 0 < p[0] < 1
            for lp in res.log_post:
                np.testing.assert_allclose(np.exp(lp).sum(), 1.0)


def test_partial_synthesis_save_load_round_trip(data, tmp_path):
    m = _fit_partial("tcmm", data, q=0.8)
    m.save(tmp_path / "model")
    loaded = PoissonMixture.load(tmp_path / "model")
    np.testing.assert_array_equal(loaded.synthesized_records_, _partial_flags())
    a = m.synthesize(2, random_seed=21)
    b = loaded.synthesize(2, random_seed=21)
    for x, y in zip(a, b, strict=True):
        pd.testing.assert_frame_equal(x, y)
    np.testing.assert_array_equal(m.dataset_loglik(a, draw_indices=[0, 1], memberships="stored"),
                                  loaded.dataset_loglik(a, draw_indices=[0, 1],
                                      memberships="stored"))
    # the largest value belongs to a record released unchanged: flagged
    res = loaded.largest_value_loglik("wages", a, upper=1000, draw_indices=[0],
                                      memberships="stored")
    assert ("TARGET_NOT_SYNTHESIZED" in res.warnings) == (not _partial_flags()[res.record])
    with pytest.raises(ValidationError, match="index 200 is outside 0..199"):
        PoissonMixture(n_components=2).fit(data.head(PARTIAL_N), records=[200])


# ------------------------------------------------------------------------------------------
# errors
# ------------------------------------------------------------------------------------------
def test_errors(data, mp):
    bad = data.assign(wages=data["wages"] + 0.5)
    with pytest.raises(SchemaError, match="'wages' is continuous"):
        PoissonMixture(n_components=2,
                       sampling=Sampling(draws=5, tune=5), progressbar=False).fit(bad)
    with pytest.raises(ValidationError, match="variant must be one of"):
        PoissonMixture(variant="mmm").fit(data)
    with pytest.raises(ValidationError, match=r"q must be a number in \(0, 1\]"):
        PoissonMixture(variant="tcmm", q=1.5).fit(data)
    with pytest.raises(ValidationError, match="n_components"):
        PoissonMixture(n_components=0).fit(data)
    with pytest.raises(ValidationError,
                       match="synthesis_mode='posterior_class' needs variant='mp'"):
        PoissonMixture(variant="mm", synthesis_mode="posterior_class").fit(data)
    with pytest.raises(NotFittedError):
        PoissonMixture().record_loglik(data)
    with pytest.raises(ValidationError, match="no one-variable-different"):
        mp.neighbourhood_loglik(data.head(2))
    with pytest.raises(ValidationError, match="class-O models only"):
        mp.own_record_delta(0, data.head(2).to_numpy(), [data])
    with pytest.raises(SchemaError, match="wages"):
        mp.record_loglik(data[["workers"]])
    # impossible counts have probability 0 (candidate grids may contain them)
    odd = pd.DataFrame({"workers": [2.0, -1.0, 2.5], "wages": [3.0, 3.0, 3.0]})
    ll = mp.record_loglik(odd, draw_indices=[0])
    assert np.isfinite(ll[0, 0]) and np.all(ll[0, 1:] == -np.inf)
    with pytest.raises(ValidationError, match="upper"):
        mp.largest_value_loglik("wages", [data], upper=0, data=data)


# ------------------------------------------------------------------------------------------
# command line
# ------------------------------------------------------------------------------------------
def test_cli_fit_and_synthesize_mm(data, tmp_path, capsys):
    from bayes_risk.cli import main
    from bayes_risk.data import SyntheticData

    csv = tmp_path / "counts.csv"
    data.to_csv(csv, index=False)
    rc = main(["fit", str(csv), "--method", "poisson-mixture", "--variant", "mm",
               "--components", "4", "--tune", "20", "--draws", "30", "--random-seed", "1",
               "--quiet", "--out", str(tmp_path / "model")])
    assert rc == 0
    loaded = PoissonMixture.load(tmp_path / "model")
    assert loaded.variant == "mm" and loaded.n_components == 4 and loaded.n_draws == 30
    rc = main(["synthesize", "--model", str(tmp_path / "model"), "-m", "2",
               "--random-seed", "2", "--out", str(tmp_path / "syn")])
    assert rc == 0
    syn = SyntheticData.load(tmp_path / "syn")
    for z in syn:
        np.testing.assert_array_equal(z.sum().to_numpy(), data.sum().to_numpy())
    # an option of another model is refused with a one-line error (exit status 2)
    # an option of another model, or a non-count column, is a one-line error with status 2
    assert main(["fit", str(csv), "--method", "poisson-mixture", "--family", "workers=normal",
                 "--quiet", "--out", str(tmp_path / "bad")]) == 2
    assert "--family: not an option of --method poisson-mixture" in capsys.readouterr().err
    data.assign(wages=data["wages"] + 0.5).to_csv(tmp_path / "bad.csv", index=False)
    assert main(["fit", str(tmp_path / "bad.csv"), "--method", "poisson-mixture", "--quiet",
                 "--out", str(tmp_path / "bad")]) == 2
    assert "'wages' is continuous" in capsys.readouterr().err
    assert not (tmp_path / "bad").exists()
