"""DPMPM (SPEC §3.2): fixture dpmpm2, Gibbs full conditionals, kernels vs the PyMC model's own
log-density, K = 1 closed form, parameter recovery, synthesis modes, missing-value imputation."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from _shared import shared_path
from hypothesis import given
from hypothesis import strategies as st

from bayes_risk.data import infer_schema
from bayes_risk.exceptions import (
    ConvergenceWarning,
    NotFittedError,
    SchemaError,
    ValidationError,
)
from bayes_risk.models import Sampling
from bayes_risk.models._bayesian.convergence_report import check_convergence
from bayes_risk.models._bayesian.sticks import (
    alpha_conditional_log,
    stick_breaking_log,
    stick_conditional,
)
from bayes_risk.models.dpmpm.coding import encode
from bayes_risk.models.dpmpm.dpmpm import DPMPM

pytestmark = pytest.mark.filterwarnings("ignore::bayes_risk.exceptions.ConvergenceWarning")


# ---------------------------------------------------------------------------- helpers
def simulate_lca(n, d, K, rng):
    """Data from a known latent-class model; returns (df, pi, phis)."""
    pi = rng.dirichlet(np.full(K, 5.0))
    phis = [rng.dirichlet(np.full(dj, 0.7), size=K) for dj in d]
    z = rng.choice(K, size=n, p=pi)
    cols = {}
    for j, dj in enumerate(d):
        cum = np.cumsum(phis[j][z], axis=1)
        u = rng.random(n)[:, None]
        cols[f"x{j}"] = pd.Categorical(
            1 + np.minimum((cum < u).sum(axis=1), dj - 1), categories=list(range(1, dj + 1))
        )
    return pd.DataFrame(cols), pi, phis


def dpmpm2_schema(synthesized=("a", "b")):
    df = pd.DataFrame({"a": pd.Categorical([1, 2], categories=[1, 2]),
                       "b": pd.Categorical([1, 2], categories=[1, 2])})
    return infer_schema(df, synthesized=list(synthesized))


DPMPM2 = {
    "pi": np.array([[0.6, 0.4]]),
    "phi_0": np.array([[[0.9, 0.1], [0.2, 0.8]]]),
    "phi_1": np.array([[[0.8, 0.2], [0.3, 0.7]]]),
}


def rec(a, b):
    return pd.DataFrame({"a": [a], "b": [b]})


def pymc_loglik(model, records, draws):
    """log p(y_i | Θ_h) from the PyMC model itself: [len(draws), n] (one chain)."""
    import pymc as pm

    pmodel = model.pymc_model(records)
    post = model.posterior_.copy()
    post["posterior"] = post["posterior"].isel(draw=np.asarray(draws))
    ll = pm.compute_log_likelihood(
        post, model=pmodel, extend_inferencedata=False, progressbar=False,
        compile_kwargs={"mode": "FAST_COMPILE"},
    )
    arr = ll["y"].transpose("chain", "draw", ...).values
    return arr.reshape(-1, arr.shape[-1])


@pytest.fixture(scope="module")
def lca_fit():
    rng = np.random.default_rng(20240501)
    d = (2, 3, 4, 2, 3)
    df, pi, phis = simulate_lca(2000, d, 3, rng)
    model = DPMPM(n_components=10,
                  sampling=Sampling(tune=150, draws=200, chains=1), progressbar=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model.fit(df, random_seed=11)
    return model, df, pi, phis


# ---------------------------------------------------------------------------- fixture dpmpm2
def test_dpmpm2_joint_probabilities():
    m = DPMPM.from_posterior(DPMPM2, dpmpm2_schema(), n_records=1)
    recs = pd.DataFrame({"a": [1, 2, 1, 2], "b": [1, 1, 2, 2]})
    p = np.exp(m.record_loglik(recs)[0])
    np.testing.assert_allclose(p, [0.456, 0.144, 0.164, 0.236], rtol=1e-6, atol=1e-9)
    assert p.sum() == pytest.approx(1.0)


def test_dpmpm2_class_posterior_and_conditional():
    m = DPMPM.from_posterior(DPMPM2, dpmpm2_schema(), n_records=1)
    pk = m.class_probabilities(rec(1, 1))[0, 0]
    np.testing.assert_allclose(pk, [0.947368, 0.052632], rtol=1e-6, atol=1e-6)
    # conditional_us with S = {b}: log p(z_b = 1 | y_a = 1) is the one-record dataset loglik
    mc = DPMPM.from_posterior(DPMPM2, dpmpm2_schema(["b"]), data=rec(1, 1))
    assert mc.synthesis_mode_ == "conditional_us" and mc.model_class == "P"
    ll = mc.dataset_loglik([rec(1, 1)])
    assert np.exp(ll[0, 0]) == pytest.approx(0.735484, rel=1e-6)


def test_dpmpm2_posterior_class_is_class_o():
    for truth, expected in (((1, 1), 0.226316), ((1, 2), 0.370732)):
        m = DPMPM.from_posterior(
            DPMPM2, dpmpm2_schema(["b"]), data=rec(*truth), synthesis_mode="posterior_class"
        )
        assert m.model_class == "O"
        ll = m.dataset_loglik([rec(truth[0], 2)])
        assert np.exp(ll[0, 0]) == pytest.approx(expected, rel=1e-5)
        # synthesis works in class-O mode (its frequency is checked in the next test)
        syn = m.synthesize(1, random_seed=5)
        assert syn[0].shape == (1, 2)


def test_dpmpm2_posterior_class_synthesis_frequency():
    data = pd.DataFrame({"a": [1] * 4000, "b": [1] * 4000})
    m = DPMPM.from_posterior(
        DPMPM2, dpmpm2_schema(["b"]), data=data, synthesis_mode="posterior_class"
    )
    z = m.synthesize(1, random_seed=1)[0]
    assert (z["a"] == 1).all()
    freq = float((z["b"] == 2).mean())
    se = np.sqrt(0.226316 * (1 - 0.226316) / 4000)
    assert abs(freq - 0.226316) < 4 * se


def test_stick_breaking_and_full_conditionals():
    np.testing.assert_allclose(np.exp(stick_breaking_log(np.array([0.5, 0.4]))), [0.5, 0.2, 0.3])
    a, b = stick_conditional(np.array([5, 3, 2]), 1.0)
    np.testing.assert_allclose(a, [6, 4])
    np.testing.assert_allclose(b, [6, 3])
    shape, rate = alpha_conditional_log(np.log1p(-np.array([0.5, 0.4])), 0.25, 0.25)
    assert shape == pytest.approx(2.25)
    assert rate == pytest.approx(1.453973, rel=1e-6)


# ---------------------------------------------------------------------------- kernels vs PyMC
def test_record_loglik_matches_pymc_logp(lca_fit):
    model, df, _, _ = lca_fit
    rng = np.random.default_rng(3)
    rows = df.iloc[rng.choice(len(df), 25, replace=False)].reset_index(drop=True)
    rows = rows.astype(object)
    rows.iloc[0, 1] = np.nan  # a missing value is marginalised by both
    draws = rng.choice(model.n_draws, 7, replace=False)
    ours = model.record_loglik(rows, draw_indices=draws)
    ref = pymc_loglik(model, rows, draws)
    np.testing.assert_allclose(ours, ref, rtol=1e-9, atol=1e-9)


def test_neighbourhood_matches_pymc_logp(lca_fit):
    model, df, _, _ = lca_fit
    rng = np.random.default_rng(4)
    rows = df.iloc[rng.choice(len(df), 6, replace=False)].reset_index(drop=True)
    draws = np.array([0, 57, 199])
    nb = model.neighbourhood_loglik(rows, draw_indices=draws)
    d = [2, 3, 4, 2, 3]
    G = 1 + sum(x - 1 for x in d)
    assert G == 10 == model.neighbourhood_size()
    assert nb.shape == (3, 6, G)
    for i in range(len(rows)):
        cands = [rows.iloc[i].to_dict()]
        for j, c in enumerate(rows.columns):
            for lev in range(1, d[j] + 1):
                if lev != rows.iloc[i][c]:
                    r = dict(rows.iloc[i].to_dict())
                    r[c] = lev
                    cands.append(r)
        cdf = pd.DataFrame(cands).astype(object)
        ref = pymc_loglik(model, cdf, draws)
        np.testing.assert_allclose(nb[:, i, :], ref, rtol=1e-9, atol=1e-9)


def test_neighbourhood_underflow_fallback_exact():
    # a class whose weight underflows for the truth but dominates a candidate
    post = {
        "pi": np.array([[0.999, 0.001]]),
        "phi_0": np.array([[[1e-306, 1 - 1e-306], [1 - 1e-300, 1e-300]]]),
        "phi_1": np.array([[[1e-306, 1 - 1e-306], [0.5, 0.5]]]),
    }
    m = DPMPM.from_posterior(post, dpmpm2_schema(), n_records=1)
    r = rec(1, 1)
    nb = m.neighbourhood_loglik(r)[0, 0]
    cands = pd.DataFrame({"a": [1, 2, 1], "b": [1, 1, 2]})
    ref = m.record_loglik(cands)[0]
    np.testing.assert_allclose(nb, ref, rtol=1e-9)


def test_dataset_loglik_modes_match_formulas(lca_fit):
    model, df, _, _ = lca_fit
    syn = model.synthesize(2, random_seed=9)
    L = model.dataset_loglik(syn, draw_indices=np.array([3, 100]))
    ref = model.record_loglik(syn[0], draw_indices=np.array([3, 100])).sum(axis=1)
    np.testing.assert_allclose(L[:, 0], ref, rtol=1e-10)
    assert model.model_class == "P" and model.ratio_form == "joint"


# ---------------------------------------------------------------------------- K = 1 closed form
def test_k1_is_product_of_dirichlet_multinomials():
    rng = np.random.default_rng(8)
    n = 300
    df = pd.DataFrame({
        "u": pd.Categorical(rng.choice([1, 2, 3], n, p=[0.5, 0.3, 0.2]), categories=[1, 2, 3]),
        "v": pd.Categorical(rng.choice([1, 2], n, p=[0.7, 0.3]), categories=[1, 2]),
    })
    model = DPMPM(n_components=1,
                  sampling=Sampling(tune=5, draws=800), progressbar=False).fit(df, random_seed=2)
    H = model.n_draws
    for j, (col, _d) in enumerate((("u", 3), ("v", 2))):
        counts = df[col].value_counts().sort_index().to_numpy()
        a = 1.0 + counts
        mean = a / a.sum()
        sd = np.sqrt(mean * (1 - mean) / (a.sum() + 1))
        draws = model._stacked(f"phi_{j}")[:, 0, :]
        # K = 1: each sweep draws φ exactly from its Dirichlet posterior (independent draws)
        assert np.all(np.abs(draws.mean(0) - mean) < 4 * sd / np.sqrt(H))
        np.testing.assert_allclose(draws.std(0), sd, rtol=0.15)
    # posterior predictive of a new record: Π_j (1 + n_jc) / (d_j + n)
    recs = pd.DataFrame({"u": [1, 3], "v": [2, 1]})
    pred = np.exp(model.record_loglik(recs)).mean(axis=0)
    nu = df["u"].value_counts().sort_index().to_numpy()
    nv = df["v"].value_counts().sort_index().to_numpy()
    exact = np.array([(1 + nu[0]) / (3 + n) * (1 + nv[1]) / (2 + n),
                      (1 + nu[2]) / (3 + n) * (1 + nv[0]) / (2 + n)])
    np.testing.assert_allclose(pred, exact, rtol=0.02)


# ---------------------------------------------------------------------------- recovery
def _cells(model, j, k=None):
    pi = np.exp(model.state_.log_pi)
    off, d = model.state_.offsets, model.state_.d
    phj = model.state_.phi[:, off[j] : off[j] + d[j], :]
    if k is None:
        return np.einsum("hk,hck->hc", pi, phj)
    phk = model.state_.phi[:, off[k] : off[k] + d[k], :]
    return np.einsum("hk,hak,hbk->hab", pi, phj, phk)


def test_parameter_recovery_marginals_and_two_way(lca_fit):
    model, df, pi, phis = lca_fit
    n = len(df)
    p = len(phis)
    for j in range(p):
        truth = pi @ phis[j]
        est = _cells(model, j).mean(0)
        # data sampling error dominates: 4 SE of a proportion from n records (+ MC error)
        tol = 4 * np.sqrt(truth * (1 - truth) / n) + 0.005
        assert np.all(np.abs(est - truth) < tol), (j, est, truth)
        for k in range(j + 1, p):
            truth2 = np.einsum("k,ka,kb->ab", pi, phis[j], phis[k])
            est2 = _cells(model, j, k).mean(0)
            tol2 = 4 * np.sqrt(truth2 * (1 - truth2) / n) + 0.005
            assert np.all(np.abs(est2 - truth2) < tol2), (j, k)


def test_synthetic_close_to_original(lca_fit):
    model, df, _, _ = lca_fit
    syn = model.synthesize(3, random_seed=21)
    n = len(df)
    assert syn.m == 3 and syn.draw_index == [65, 132, 199]
    for z in syn:
        assert list(z.columns) == list(df.columns) and len(z) == n
        assert z.notna().all().all()
        for c in df.columns:
            po = df[c].value_counts(normalize=True).sort_index()
            ps = z[c].value_counts(normalize=True).reindex(po.index, fill_value=0)
            # two independent samples of n from (nearly) the same distribution: 4 SE of the
            # difference, plus posterior uncertainty of the cell probability (same size)
            tol = 4 * np.sqrt(3 * po * (1 - po) / n)
            assert np.all(np.abs(po - ps) < tol), c
        to = pd.crosstab(df["x0"], df["x1"], normalize=True)
        ts = pd.crosstab(z["x0"], z["x1"], normalize=True).reindex_like(to).fillna(0)
        assert np.all(np.abs(to - ts).to_numpy() < 4 * np.sqrt(3 * to * (1 - to) / n).to_numpy())


def test_synthesize_draws_evenly_spaced(lca_fit):
    model, _, _, _ = lca_fit
    syn = model.synthesize(4, random_seed=1)
    assert syn.draw_index == [49, 99, 149, 199]
    assert syn.method == "dpmpm"
    a = model.synthesize(2, random_seed=7)
    b = model.synthesize(2, random_seed=7)
    assert all(x.equals(y) for x, y in zip(a, b, strict=False))


def test_convergence_report_label_invariant(lca_fit):
    model, _, _, _ = lca_fit
    rep = check_convergence(model)
    assert {"loglik", "alpha", "k_occupied"} <= set(rep.index)
    assert {"ess_bulk", "ess_tail", "rhat", "flag"} <= set(rep.columns)
    assert np.isfinite(rep.loc["loglik", "ess_bulk"])


# ---------------------------------------------------------------------------- partial synthesis
def test_partial_synthesis_columns_and_records():
    rng = np.random.default_rng(5)
    df, _, _ = simulate_lca(400, (2, 3, 3), 2, rng)
    flags = np.zeros(400, bool)
    flags[:100] = True
    model = DPMPM(n_components=4, sampling=Sampling(tune=30, draws=40), progressbar=False)
    model.fit(df, synthesized=["x2"], records=flags, random_seed=3)
    assert model.synthesis_mode_ == "conditional_us" and model.model_class == "P"
    syn = model.synthesize(2, random_seed=1)
    for z in syn:
        pd.testing.assert_series_equal(z["x0"], df["x0"])
        pd.testing.assert_series_equal(z["x1"], df["x1"])
        pd.testing.assert_series_equal(z["x2"].iloc[100:], df["x2"].iloc[100:])
        assert (z["x2"].iloc[:100] != df["x2"].iloc[:100]).any()
    np.testing.assert_array_equal(syn.synthesized_records, flags)
    # dataset loglik: only the synthesized records of the synthesized column contribute
    L = model.dataset_loglik(syn, draw_indices=np.array([0]))
    zc = syn[0].iloc[:100]
    num = model.record_loglik(zc, draw_indices=np.array([0]))
    den = model.record_loglik(zc.assign(x2=np.nan), draw_indices=np.array([0]))
    np.testing.assert_allclose(L[0, 0], (num - den).sum(), rtol=1e-10)


def test_fit_augmented_uses_both_datasets():
    rng = np.random.default_rng(6)
    df, _, _ = simulate_lca(200, (2, 3), 2, rng)
    model = DPMPM(n_components=3,
                  sampling=Sampling(tune=20, draws=30), progressbar=False).fit(df, random_seed=1)
    syn = model.synthesize(1, random_seed=2)[0]
    aug = model.fit_augmented(df, syn, random_seed=3)
    assert isinstance(aug, DPMPM) and aug is not model
    assert aug.n_records == 400 and aug.n_draws == model.n_draws
    assert aug.schema_.names == model.schema_.names
    # partial synthesis of selected records: only the synthesized rows are new information
    part = DPMPM(n_components=3, sampling=Sampling(tune=20, draws=30), progressbar=False).fit(
        df, records=np.arange(0, 200, 4), random_seed=1
    )
    z = part.synthesize(1, random_seed=2)[0]
    assert part.fit_augmented(df, z, random_seed=3).n_records == 250
    with pytest.raises(SchemaError, match="must have 200"):
        part.fit_augmented(df, z.iloc[:150], random_seed=3)


# ---------------------------------------------------------------------------- missing values
def test_missing_values_imputed_in_sampler():
    path = shared_path("data", "ss16pusa_sample_nozeros_miss.csv")
    from bayes_risk.data import read_table

    df = read_table(path)
    assert df.isna().any().any()
    model = DPMPM(n_components=8,
                  sampling=Sampling(tune=50, draws=60), progressbar=False).fit(df, random_seed=1)
    ll = model.posterior_["sample_stats"]["loglik"].values
    assert np.all(np.isfinite(ll))
    syn = model.synthesize(2, random_seed=4)
    for z in syn:
        assert z.notna().all().all() and len(z) == len(df)
        assert set(z["MAR"]) <= set(df["MAR"].dropna())


def test_imputation_recovers_marginal_under_mcar():
    rng = np.random.default_rng(12)
    df, pi, phis = simulate_lca(1500, (3, 2, 2), 2, rng)
    miss = df.astype(object)
    holes = rng.random(len(df)) < 0.3
    miss.loc[holes, "x0"] = np.nan
    model = DPMPM(n_components=4,
                  sampling=Sampling(tune=60, draws=120), progressbar=False).fit(miss, random_seed=2)
    truth = pi @ phis[0]
    est = _cells(model, 0).mean(0)
    n_obs = (~holes).sum()
    assert np.all(np.abs(est - truth) < 4 * np.sqrt(truth * (1 - truth) / n_obs) + 0.01)


# ---------------------------------------------------------------------------- errors
def test_errors():
    df = pd.DataFrame({"a": ["x", "y", "x", "y"], "n": [1, 2, 3, 4]})
    with pytest.raises(SchemaError, match="'n' is count"):
        DPMPM(progressbar=False).fit(df)
    with pytest.raises(ValidationError, match="n_components"):
        DPMPM(n_components=0).fit(df[["a"]])
    with pytest.raises(NotFittedError, match="not fitted"):
        DPMPM().synthesize(2)
    with pytest.raises(NotFittedError):
        DPMPM().record_loglik(df)
    with pytest.raises(ValidationError, match="mode"):
        DPMPM(synthesis_mode="bogus").fit(df[["a"]])
    m = DPMPM.from_posterior(DPMPM2, dpmpm2_schema(), n_records=1)
    with pytest.raises(ValidationError, match=r"draw indices in 0\.\.0 .*Got \[5\]"):
        m.record_loglik(rec(1, 1), draw_indices=[5])
    with pytest.raises(ValidationError, match="H = 1"):
        m.synthesize(2)
    with pytest.raises(SchemaError, match="missing column"):
        m.record_loglik(pd.DataFrame({"a": [1]}))
    # unknown level: probability 0
    assert m.record_loglik(rec(1, 3))[0, 0] == -np.inf
    with pytest.raises(SchemaError, match="not fitted with"):
        m.neighbourhood_loglik(rec(3, 1))


def test_categorical_override_for_integer_codes():
    df = pd.DataFrame({"a": [1, 2, 1, 2, 1, 1], "b": [3, 3, 4, 4, 3, 4]})
    model = DPMPM(n_components=2, sampling=Sampling(tune=5, draws=10), progressbar=False)
    model.fit(df, categorical=["a", "b"], random_seed=1)
    z = model.synthesize(1, random_seed=1)[0]
    assert z["a"].dtype == np.int64 and set(z["b"]) <= {3, 4}


@pytest.mark.slow
def test_nuts_option_small_problem():
    rng = np.random.default_rng(2)
    df, _, _ = simulate_lca(150, (2, 2), 2, rng)
    model = DPMPM(n_components=2, sampler="nuts",
                  sampling=Sampling(tune=100, draws=100), progressbar=False)
    model.fit(df, random_seed=1)
    assert model.n_draws == 2 * 100  # two chains by default
    assert np.all(np.isfinite(model.posterior_["sample_stats"]["loglik"].values))
    est = _cells(model, 0).mean(0)
    obs = df["x0"].value_counts(normalize=True).sort_index().to_numpy()
    assert np.all(np.abs(est - obs) < 0.1)


def test_own_record_delta_posterior_class_dpmpm2():
    # record (1,1), synthetic row (1,2): ℓ(y) = log P(z_b = 2 | y) = log 0.226316 for y = (1,1)
    # and log 0.370732 for the candidate y* = (1,2)
    m = DPMPM.from_posterior(DPMPM2, dpmpm2_schema(["b"]), data=rec(1, 1),
                             synthesis_mode="posterior_class")
    cands = pd.DataFrame({"b": [2]})
    d = m.own_record_delta(0, cands, [rec(1, 2)])
    assert d.shape == (1, 1, 1)
    assert d[0, 0, 0] == pytest.approx(np.log(0.370732 / 0.226316), rel=1e-5)
    # a Series from original.iloc[i] works, and class P modes give 0
    assert m.own_record_delta(rec(1, 1).iloc[0], cands, [rec(1, 2)])[0, 0, 0] == d[0, 0, 0]
    p = DPMPM.from_posterior(DPMPM2, dpmpm2_schema(["b"]), data=rec(1, 1))
    assert np.all(p.own_record_delta(0, cands, [rec(1, 2)]) == 0)


@given(
    K=st.integers(1, 4),
    d=st.lists(st.integers(1, 4), min_size=1, max_size=3),
    seed=st.integers(0, 2**31 - 1),
    conc=st.sampled_from([0.05, 1.0, 10.0]),
)
def test_property_probabilities_sum_to_one_and_neighbourhood_consistent(K, d, seed, conc):
    rng = np.random.default_rng(seed)
    H = 3
    cols = [f"c{j}" for j in range(len(d))]
    df = pd.DataFrame({c: pd.Categorical([1], categories=list(range(1, dj + 1)))
                       for c, dj in zip(cols, d, strict=False)})
    schema = infer_schema(df, synthesized=cols)
    post = {"pi": rng.dirichlet(np.full(K, conc), size=H)}
    for j, dj in enumerate(d):
        post[f"phi_{j}"] = rng.dirichlet(np.full(dj, conc), size=(H, K))
    m = DPMPM.from_posterior(post, schema, n_records=1)
    grid = pd.MultiIndex.from_product([range(1, dj + 1) for dj in d], names=cols).to_frame(
        index=False)
    ll = m.record_loglik(grid)
    # a joint distribution over the full cross-classification (SPEC §3.2 record likelihood)
    np.testing.assert_allclose(np.exp(ll).sum(axis=1), 1.0, rtol=1e-9)
    nb = m.neighbourhood_loglik(grid.iloc[:3])
    assert nb.shape == (H, min(3, len(grid)), 1 + sum(x - 1 for x in d))
    np.testing.assert_allclose(nb[:, :, 0], ll[:, :3], rtol=1e-9, atol=1e-12)


def test_gibbs_same_seed_same_draws_whatever_the_thread_count():
    import numba

    rng = np.random.default_rng(14)
    df, _, _ = simulate_lca(600, (2, 3, 2), 2, rng)
    draws = []
    old = numba.get_num_threads()
    try:
        for threads in (1, old):
            numba.set_num_threads(threads)
            m = DPMPM(n_components=4,
                      sampling=Sampling(tune=10, draws=15), progressbar=False).fit(df,
                      random_seed=5)
            draws.append(m._stacked("phi_1"))
    finally:
        numba.set_num_threads(old)
    np.testing.assert_array_equal(draws[0], draws[1])


# ---------------------------------------------------------------------------- fast paths (speed)
def test_dataset_loglik_underflow_fallback_and_zero_probability():
    # draw 0: record (1, 1) has probability 1e-400, which underflows in probability space and is
    # redone in log space; draw 1: that record has probability exactly 0
    tiny = [[1e-200, 1 - 1e-200], [1e-200, 1 - 1e-200]]
    post = {
        "pi": np.array([[0.3, 0.7], [0.5, 0.5]]),
        "phi_0": np.array([tiny, [[0.5, 0.5], [0.5, 0.5]]]),
        "phi_1": np.array([tiny, [[0.0, 1.0], [0.0, 1.0]]]),
    }
    m = DPMPM.from_posterior(post, dpmpm2_schema(), n_records=2)
    z = pd.DataFrame({"a": [1, 2], "b": [1, 2]})
    L = m.dataset_loglik([z])[:, 0]
    ref = m.record_loglik(z).sum(axis=1)  # exact log-space kernel
    np.testing.assert_allclose(L[0], ref[0], rtol=1e-12)
    np.testing.assert_allclose(L[0], 2 * np.log(1e-200) + np.log1p(-1e-200) * 2, rtol=1e-12)
    assert L[1] == ref[1] == -np.inf


def test_neighbourhood_out_buffer_and_chunking(lca_fit):
    model, df, _, _ = lca_fit
    rows = df.iloc[:37]
    draws = np.array([0, 5, 199, 5])
    ref = model.neighbourhood_loglik(rows, draw_indices=draws)
    buf = np.full_like(ref, np.nan)
    out = model.neighbourhood_loglik(rows, draw_indices=draws, chunk_size=10, out=buf)
    assert out is buf
    np.testing.assert_array_equal(out, ref)
    # the kernel leaves probabilities for numpy's log: compare with the exact log-space path
    full = model.record_loglik(rows.iloc[[3]], draw_indices=draws)[:, 0]
    np.testing.assert_allclose(ref[:, 3, 0], full, rtol=1e-12)
    with pytest.raises(ValidationError, match="out must be"):
        model.neighbourhood_loglik(rows, draw_indices=draws, out=np.empty((4, 37, 2)))


@pytest.mark.parametrize("K", [7, 8, 9, 30])
def test_neighbourhood_class_padding_matches_log_space(K):
    # the kernel pads the class axis to a multiple of 8 (terms of probability 0); every
    # candidate must still equal the exact log-space record likelihood of the full row
    rng = np.random.default_rng(K)
    d = (2, 4, 3, 5)
    cols = [f"c{j}" for j in range(len(d))]
    df = pd.DataFrame({c: pd.Categorical([1], categories=list(range(1, dj + 1)))
                       for c, dj in zip(cols, d, strict=True)})
    post = {"pi": rng.dirichlet(np.full(K, 0.5), size=4)}
    for j, dj in enumerate(d):
        post[f"phi_{j}"] = rng.dirichlet(np.full(dj, 0.5), size=(4, K))
    m = DPMPM.from_posterior(post, infer_schema(df, synthesized=cols), n_records=1)
    grid = pd.MultiIndex.from_product([range(1, dj + 1) for dj in d], names=cols).to_frame(
        index=False)
    recs = grid.iloc[rng.choice(len(grid), 9, replace=False)].reset_index(drop=True)
    nb = m.neighbourhood_loglik(recs)
    for i in range(len(recs)):
        cands = [recs.iloc[i].to_dict()]
        for c, dj in zip(cols, d, strict=True):
            cands += [{**recs.iloc[i].to_dict(), c: v} for v in range(1, dj + 1)
                      if v != recs.iloc[i][c]]
        ref = m.record_loglik(pd.DataFrame(cands))
        np.testing.assert_allclose(nb[:, i, :], ref, rtol=1e-13, atol=1e-13)


def test_encode_categorical_fast_path_equals_generic_path():
    # categorical columns map their categories once: same codes as factorising the values,
    # with -1 for a missing value and -2 for a level the model was not fitted with
    m = DPMPM.from_posterior(DPMPM2, dpmpm2_schema(), n_records=1)
    cat = pd.DataFrame({
        "a": pd.Categorical([2, 1, None, 3, 2.0], categories=[3, 2.0, 1]),
        "b": pd.Categorical([1, 1, 2, 2, 1], categories=[2, 1]),
    })
    obj = cat.astype(object)
    want = np.array([[1, 0], [0, 0], [-1, 1], [-2, 1], [1, 0]])
    np.testing.assert_array_equal(encode(m.schema_, cat), want)
    np.testing.assert_array_equal(encode(m.schema_, obj), want)
    np.testing.assert_array_equal(encode(m.schema_, cat.iloc[[4, 0]]), want[[4, 0]])
