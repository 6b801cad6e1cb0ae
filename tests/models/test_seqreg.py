"""Sequential Bayesian regression synthesizers (SPEC §3.6; fixture normreg of §2.6)."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from _shared import shared_path
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from scipy.special import logsumexp

from bayes_risk.attribute import EstimatorSpec
from bayes_risk.data import infer_schema
from bayes_risk.exceptions import (
    ConvergenceWarning,
    NotFittedError,
    SchemaError,
    ValidationError,
)
from bayes_risk.models import Sampling
from bayes_risk.models._bayesian.design import (
    DesignSpec,
    family_loglik,
    normal_exact_posterior,
    parse_formula,
)
from bayes_risk.models.seqreg.seqreg import SequentialRegression

RTOL, ATOL = 1e-6, 1e-9


def _quiet(fn, *a, **k):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return fn(*a, **k)


# ------------------------------------------------------------------------------------------
# fixture normreg (SPEC §2.6)
# ------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def normreg():
    df = pd.DataFrame({"x": [9.8, 9.5, 10.0], "y": [11.6, 10.7, 11.0]})
    schema = infer_schema(df, synthesized=["y"])
    draws = np.array([[1.0, 1.0, 0.5], [1.2, 0.98, 0.6]])  # (beta0, beta1, sigma)
    model = _quiet(SequentialRegression.from_posterior, {"y": draws}, schema, data=df)
    return df, model


def test_normreg_dataset_loglik(normreg):
    _, model = normreg
    Z = pd.DataFrame({"x": [9.8, 9.5, 10.0], "y": [10.1, 10.7, 11.0]})
    L = model.dataset_loglik([Z])
    np.testing.assert_allclose(L[:, 0], [-1.737374, -1.962833], rtol=RTOL, atol=1e-6)


def test_normreg_candidate_ratios(normreg):
    df, model = normreg
    ll = model.candidate_loglik(df.iloc[[0]], pd.DataFrame({"y": [11.1, 11.6, 12.1]}))
    logr = ll - ll[:, [1]]
    np.testing.assert_allclose(logr[:, 0], [1.1, 0.758333], rtol=RTOL, atol=1e-6)
    np.testing.assert_allclose(logr[:, 2], [-2.1, -1.452778], rtol=RTOL, atol=1e-6)
    q = np.exp(logr - logsumexp(logr, axis=0))
    np.testing.assert_allclose(q[:, 0], [0.584595, 0.415405], rtol=1e-5)
    np.testing.assert_allclose(q[:, 2], [0.343616, 0.656384], rtol=1e-5)
    # the truth's ratio is 1 for every draw
    np.testing.assert_allclose(logr[:, 1], 0.0)


def test_normreg_is_estimator_end_to_end(normreg):
    """The pieces feed SPEC §2.6's estimator to the published loglik and posterior."""
    df, model = normreg
    Z = pd.DataFrame({"x": [9.8, 9.5, 10.0], "y": [10.1, 10.7, 11.0]})
    L = model.dataset_loglik([Z])
    lp = model.candidate_loglik(df.iloc[[0]], pd.DataFrame({"y": [11.1, 11.6, 12.1]}))
    logr = lp - lp[:, [1]]
    logq = logr - logsumexp(logr, axis=0)
    loglik = logsumexp(L[:, :, None] + logq[:, None, :], axis=0).sum(0)
    np.testing.assert_allclose(loglik, [-1.824949, -1.843763, -1.879504], rtol=RTOL, atol=1e-6)
    post = np.exp(loglik - logsumexp(loglik))
    np.testing.assert_allclose(post, [0.341499, 0.335134, 0.323367], rtol=1e-5)


# ------------------------------------------------------------------------------------------
# exact normal posterior (SPEC §3.6 (b))
# ------------------------------------------------------------------------------------------
def test_exact_normal_posterior_moments():
    rng = np.random.default_rng(3)
    n, q = 12, 2  # nu = n - q = 10 residual degrees of freedom
    X = np.c_[np.ones(n), rng.normal(size=n)]
    e = rng.normal(size=n)
    e -= X @ np.linalg.lstsq(X, e, rcond=None)[0]  # residuals orthogonal to X
    e *= np.sqrt(4.0 * (n - q) / (e @ e))  # s^2 = 4 exactly
    y = X @ np.array([1.0, 2.0]) + e
    d = normal_exact_posterior(X, y, 100_000, np.random.default_rng(7))
    np.testing.assert_allclose(d["s2"], 4.0, rtol=1e-12)
    # E[sigma^2] = nu s^2 / (nu - 2) = 5.0; Monte Carlo tolerance 2 % (SPEC)
    np.testing.assert_allclose(np.mean(d["sigma"] ** 2), 5.0, rtol=0.02)
    # E[beta] = beta_hat; Cov(beta) = E[sigma^2] (X'X)^-1 (marginal multivariate t)
    cov = 5.0 * np.linalg.inv(X.T @ X)
    se = np.sqrt(np.diag(cov) / 100_000)
    assert np.all(np.abs(d["beta"].mean(0) - d["beta_hat"]) <= 4 * se)
    # sample covariance of 1e5 t_10 draws: SE about 0.005 x sqrt(c_ii c_jj); allow 0.03
    scale = np.sqrt(np.outer(np.diag(cov), np.diag(cov)))
    assert np.all(np.abs(np.cov(d["beta"].T) - cov) <= 0.03 * scale)


def test_exact_normal_rank_deficient_error():
    X = np.c_[np.ones(5), np.ones(5)]
    with pytest.raises(ValidationError, match="rank 1 < 2"):
        normal_exact_posterior(X, np.arange(5.0), 10, np.random.default_rng(0))


# ------------------------------------------------------------------------------------------
# reference run A1 of AttributeRiskCalculation
# ------------------------------------------------------------------------------------------
def test_a1_draws_reproduce_record_logliks_by_hand():
    base = shared_path("reference", "attribute", "inputs")
    orig = pd.read_csv(base / "origdata_first200.csv")
    draws = pd.read_csv(base / "A1_draws_LogIncome.csv")
    syn = [pd.read_csv(base / f"A1_syn{l}.csv") for l in (1, 2)]
    schema = infer_schema(orig, synthesized=["LogIncome"])
    model = _quiet(
        SequentialRegression.from_posterior, {"LogIncome": draws}, schema, data=orig,
        formulas={"LogIncome": "LogIncome ~ LogExpenditure"},
    )
    assert model.n_draws == 50
    assert model.designs_["LogIncome"].names == ("(Intercept)", "LogExpenditure")
    D = draws.to_numpy()
    X = np.c_[np.ones(len(orig)), orig["LogExpenditure"].to_numpy()]
    want = stats.norm.logpdf(orig["LogIncome"].to_numpy()[None, :], D[:, :2] @ X.T, D[:, [2]])
    np.testing.assert_allclose(model.record_loglik(orig), want, rtol=1e-12, atol=1e-12)
    want_L = np.stack(
        [stats.norm.logpdf(z["LogIncome"].to_numpy()[None, :], D[:, :2] @ X.T, D[:, [2]]).sum(1)
         for z in syn], axis=1,
    )
    np.testing.assert_allclose(model.dataset_loglik(syn), want_L, rtol=1e-12)
    # candidate grid of SPEC §2.3.3 for record 1: percent (0.1, 0.1), G = 11
    x = orig["LogIncome"].iloc[0]
    grid = np.linspace(x - 0.1 * abs(x), x + 0.1 * abs(x), 11)
    lp = model.candidate_loglik(orig.iloc[[0]], pd.DataFrame({"LogIncome": grid}))
    want_lp = stats.norm.logpdf(grid[None, :], (D[:, :2] @ X[0])[:, None], D[:, [2]])
    np.testing.assert_allclose(lp, want_lp, rtol=1e-12)
    # draws with the wrong coefficient names are refused, naming what is expected
    with pytest.raises(ValidationError, match=r"missing \['LogExpenditure'\]"):
        SequentialRegression.from_posterior(
            {"LogIncome": draws.rename(columns={"LogExpenditure": "logexp"})}, schema,
            data=orig, predictors={"LogIncome": ["LogExpenditure"]},
        )


def test_a1_through_attribute_engine_matches_r_package():
    """The A1 draws through the attribute engine reproduce the R package's TrueValProb."""
    from bayes_risk.attribute.api import attribute_risk

    base = shared_path("reference", "attribute")
    orig = pd.read_csv(base / "inputs" / "origdata_first200.csv")
    draws = pd.read_csv(base / "inputs" / "A1_draws_LogIncome.csv")
    syn = [pd.read_csv(base / "inputs" / f"A1_syn{l}.csv") for l in (1, 2)]
    ref = pd.read_csv(base / "outputs" / "A1_records.csv")
    schema = infer_schema(orig, synthesized=["LogIncome"])
    model = _quiet(SequentialRegression.from_posterior, {"LogIncome": draws}, schema, data=orig,
                   predictors={"LogIncome": ["LogExpenditure"]})
    recs = [0, 1, 2, 57, 199]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = attribute_risk(orig, syn, model=model, records=recs,
                             candidates="grid:percent:0.1:11", progressbar=False,
                             estimator=EstimatorSpec(kind="is", compat="AttributeRiskCalculation"))
    want = ref.set_index("record").loc[[r + 1 for r in recs], "TrueValProb"].to_numpy()
    np.testing.assert_allclose(res.records["p_true"].to_numpy(), want, rtol=1e-6)


# ------------------------------------------------------------------------------------------
# family log-densities against scipy
# ------------------------------------------------------------------------------------------
def test_family_logliks_match_scipy():
    rng = np.random.default_rng(1)
    n, q, H = 7, 3, 4
    X = np.c_[np.ones(n), rng.normal(size=(n, q - 1))]
    beta = rng.normal(size=(H, q))
    eta = beta @ X.T
    y01 = rng.integers(0, 2, n).astype(float)
    np.testing.assert_allclose(
        family_loglik("bernoulli_logit", y01, X, {"beta": beta}),
        stats.bernoulli.logpmf(y01[None, :], 1 / (1 + np.exp(-eta))), rtol=1e-10,
    )
    yc = rng.poisson(2, n).astype(float)
    np.testing.assert_allclose(
        family_loglik("poisson_log", yc, X, {"beta": beta}),
        stats.poisson.logpmf(yc[None, :], np.exp(eta)), rtol=1e-10,
    )
    B = rng.normal(size=(H, 2, q))  # 3 categories, baseline 0
    ym = rng.integers(0, 3, n).astype(float)
    full = np.concatenate([np.zeros((H, n, 1)), np.einsum("hcq,nq->hnc", B, X)], axis=2)
    p = np.exp(full) / np.exp(full).sum(2, keepdims=True)
    want = np.log(np.take_along_axis(p, ym.astype(int)[None, :, None].repeat(H, 0), 2)[..., 0])
    got = family_loglik("multinomial_logit", ym, X, {"beta": B})
    np.testing.assert_allclose(got, want, rtol=1e-10)
    probs = rng.dirichlet(np.ones(3), size=H)
    np.testing.assert_allclose(
        family_loglik("categorical", ym, None, {"probs": probs}), np.log(probs[:, ym.astype(int)])
    )


def test_design_dummy_coding_and_formula():
    df = pd.DataFrame({"g": pd.Categorical(["a", "b", "c", "a"]), "x": [1.0, 2.0, 3.0, 4.0]})
    schema = infer_schema(df)
    d = DesignSpec.from_schema(schema, ["x", "g"])
    assert d.names == ("(Intercept)", "x", "g[T.b]", "g[T.c]")
    X = d.matrix({"x": df["x"].to_numpy(), "g": np.array([0, 1, 2, 0])})
    np.testing.assert_array_equal(X, [[1, 1, 0, 0], [1, 2, 1, 0], [1, 3, 0, 1], [1, 4, 0, 0]])
    assert parse_formula("y ~ a + b") == ("y", ["a", "b"])
    assert parse_formula("y ~ 1") == ("y", [])
    with pytest.raises(ValidationError, match="term 'log\\(a\\)'"):
        parse_formula("y ~ log(a)")


# ------------------------------------------------------------------------------------------
# fitted chains
# ------------------------------------------------------------------------------------------
def _mixed_data(n=300, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=n)
    g = rng.integers(0, 3, n)
    b = (rng.random(n) < 1 / (1 + np.exp(-(0.3 + 1.2 * x)))).astype(int)
    y = 1.0 + 2.0 * x + 0.5 * (g == 1) + 0.8 * b + rng.normal(0, 0.7, n)
    c = rng.poisson(np.exp(0.2 + 0.4 * x))
    return pd.DataFrame({"x": x, "g": pd.Categorical(g), "b": pd.Categorical(b), "y": y, "c": c})


@pytest.fixture(scope="module")
def chain():
    df = _mixed_data()
    model = SequentialRegression(
        posterior_method={"b": "laplace", "c": "laplace"},
        sampling=Sampling(draws=400), progressbar=False,
    )
    _quiet(model.fit, df, synthesized=["b", "y", "c"], random_seed=5)
    return df, model


def test_chain_structure(chain):
    df, model = chain
    assert model.order_ == ["b", "y", "c"]
    assert model.families_ == {"b": "bernoulli_logit", "y": "normal", "c": "poisson_log"}
    assert model.predictors_["y"] == ["x", "g", "b"]
    assert model.ratio_form == "conditional" and model.model_class == "P"
    assert "laplace" in model.posterior_["posterior"].attrs["approximation"]


def test_normal_posterior_centred_on_ols(chain):
    df, model = chain
    X = model.design_matrix(df, "y")
    bhat = np.linalg.lstsq(X, df["y"].to_numpy(), rcond=None)[0]
    beta = model._stacked("y__beta")
    se = beta.std(0) / np.sqrt(beta.shape[0])
    assert np.all(np.abs(beta.mean(0) - bhat) <= 4 * se)


def test_laplace_logistic_close_to_mle(chain):
    df, model = chain
    X = model.design_matrix(df, "b")
    y = df["b"].cat.codes.to_numpy()
    beta = np.zeros(X.shape[1])
    for _ in range(50):  # plain Newton MLE
        p = 1 / (1 + np.exp(-X @ beta))
        beta += np.linalg.solve((X * (p * (1 - p))[:, None]).T @ X, X.T @ (y - p))
    draws = model._stacked("b__beta")
    # weak priors: posterior mean within 0.25 posterior sd of the MLE
    assert np.all(np.abs(draws.mean(0) - beta) <= 0.25 * draws.std(0))


def test_synthetic_data_reproduce_regression(chain):
    df, model = chain
    syn = model.synthesize(2, random_seed=9)
    X = model.design_matrix(df, "y")
    b_orig = np.linalg.lstsq(X, df["y"].to_numpy(), rcond=None)[0]
    for z in syn:
        assert list(z.columns) == list(df.columns)
        pd.testing.assert_series_equal(z["x"], df["x"])  # unsynthesized: unchanged
        assert set(z["b"].unique()) <= {0, 1}
        assert pd.api.types.is_integer_dtype(z["c"])
        Xz = model.design_matrix(z, "y")
        b_syn = np.linalg.lstsq(Xz, z["y"].to_numpy(), rcond=None)[0]
        # synthetic-data coefficients vary around the original ones by about sqrt(2) x SE
        resid = df["y"].to_numpy() - X @ b_orig
        se = np.sqrt(np.diag(np.linalg.inv(X.T @ X)) * resid.var())
        assert np.all(np.abs(b_syn - b_orig) <= 5 * np.sqrt(2) * se)
        assert abs(z["c"].mean() - df["c"].mean()) <= 5 * np.sqrt(2 * df["c"].var() / len(df))


def test_candidate_loglik_uses_candidate_as_earlier_predictor(chain):
    df, model = chain
    row = df.iloc[[3]]
    cands = pd.DataFrame({"b": [0, 1], "y": [1.5, 2.5]})
    lp = model.candidate_loglik(row, cands, draw_indices=[0, 1])
    by_hand = np.zeros((2, 2))
    for g in range(2):
        r = row.copy()
        r["b"] = pd.Categorical([cands["b"][g]], categories=[0, 1])
        r["y"] = cands["y"][g]
        by_hand[:, g] = model.record_loglik(r, draw_indices=[0, 1])[:, 0]
    np.testing.assert_allclose(lp, by_hand, rtol=1e-12)
    # the y regression sees b = candidate: changing only b changes y's term too
    bb = model._stacked("y__beta", np.array([0]))[0]
    names = model.designs_["y"].names
    assert names[-1] == "b[T.1]" and bb[-1] != 0


def test_dataset_loglik_is_sum_of_records(chain):
    df, model = chain
    syn = model.synthesize(2, random_seed=1)
    L = model.dataset_loglik(syn, draw_indices=[0, 7])
    want = np.stack([model.record_loglik(z, draw_indices=[0, 7]).sum(1) for z in syn], axis=1)
    np.testing.assert_allclose(L, want, rtol=1e-12)


def test_save_load_round_trip(chain, tmp_path):
    df, model = chain
    model.save(tmp_path / "m")
    from bayes_risk.models import load_model

    loaded = load_model(tmp_path / "m")
    assert isinstance(loaded, SequentialRegression)
    a = model.synthesize(2, random_seed=4)
    b = loaded.synthesize(2, random_seed=4)
    for x, y in zip(a, b, strict=False):
        pd.testing.assert_frame_equal(x, y)
    np.testing.assert_array_equal(model.record_loglik(df.head(9)), loaded.record_loglik(df.head(9)))
    np.testing.assert_array_equal(model.dataset_loglik(a), loaded.dataset_loglik(a))


def test_fit_augmented_exact_normal_uses_stacked_data(chain):
    df, model = chain
    z = model.synthesize(1, random_seed=2)[0]
    aug = _quiet(model.fit_augmented, df, z, random_seed=4)
    assert aug.n_records == 2 * len(df)
    both = pd.concat([df, z], ignore_index=True)
    X = aug.design_matrix(both, "y")
    bhat = np.linalg.lstsq(X, both["y"].to_numpy(), rcond=None)[0]
    beta = aug._stacked("y__beta")
    assert np.all(np.abs(beta.mean(0) - bhat) <= 4 * beta.std(0) / np.sqrt(beta.shape[0]))


@given(st.integers(0, 299), st.floats(-5, 5), st.integers(0, 1))
@settings(max_examples=15)
def test_candidate_at_truth_equals_record_loglik(chain, i, yv, bv):
    """Property: a candidate equal to the record itself gives the record's own log-likelihood,
    and the log-likelihood is additive over the chain's regressions."""
    df, model = chain
    row = df.iloc[[i]]
    truth = pd.DataFrame({"b": [row["b"].iloc[0]], "y": [row["y"].iloc[0]]})
    np.testing.assert_allclose(model.candidate_loglik(row, truth, draw_indices=[0, 3]),
                               model.record_loglik(row, draw_indices=[0, 3]), rtol=1e-12)
    cand = pd.DataFrame({"b": [bv], "y": [yv]})
    lp = model.candidate_loglik(df.iloc[i], cand, draw_indices=[1])  # a Series row works too
    assert lp.shape == (1, 1) and np.isfinite(lp).all()


def test_laplace_multinomial_logit_close_to_mle():
    import statsmodels.api as sm

    rng = np.random.default_rng(8)
    n = 400
    x = rng.normal(size=n)
    eta = np.c_[np.zeros(n), 0.5 + x, -0.3 - x]
    pr = np.exp(eta) / np.exp(eta).sum(1, keepdims=True)
    m3 = (rng.random(n)[:, None] > np.cumsum(pr, 1)).sum(1)
    df = pd.DataFrame({"x": x, "m": pd.Categorical(m3)})
    model = SequentialRegression(posterior_method="laplace",
                                 sampling=Sampling(draws=2000), progressbar=False)
    _quiet(model.fit, df, synthesized=["m"], random_seed=2)
    draws = model._stacked("m__beta")  # [H, d-1, q]
    mle = sm.MNLogit(m3, sm.add_constant(x)).fit(disp=0)
    # statsmodels: params [q, d-1]; weak priors move the mode by far less than one posterior sd
    assert np.all(np.abs(draws.mean(0) - mle.params.T) <= 0.25 * draws.std(0))
    np.testing.assert_allclose(draws.std(0), np.asarray(mle.bse).T, rtol=0.1)


def test_categorical_chain_and_neighbourhood():
    rng = np.random.default_rng(2)
    n = 200
    a = rng.integers(0, 3, n)
    b = (rng.random(n) < np.where(a == 2, 0.8, 0.3)).astype(int)
    df = pd.DataFrame({"a": pd.Categorical(a), "b": pd.Categorical(b)})
    model = SequentialRegression(
        families={"a": "categorical"}, posterior_method={"b": "laplace"},
        sampling=Sampling(draws=50),
        progressbar=False,
    )
    _quiet(model.fit, df, random_seed=1)
    # categorical without covariates: exact Dirichlet(1 + counts) posterior
    probs = model._stacked("a__probs")
    np.testing.assert_allclose(probs.sum(1), 1.0)
    nb = model.neighbourhood_loglik(df.head(4))
    assert nb.shape == (50, 4, 1 + 2 + 1)
    for i in range(4):
        ai, bi = int(df["a"].iloc[i]), int(df["b"].iloc[i])
        cands = [(ai, bi)] + [(v, bi) for v in range(3) if v != ai] + [(ai, 1 - bi)]
        cdf = pd.DataFrame({"a": pd.Categorical([c[0] for c in cands], categories=[0, 1, 2]),
                            "b": pd.Categorical([c[1] for c in cands], categories=[0, 1])})
        want = model.candidate_loglik(df.iloc[[i]], cdf)
        np.testing.assert_allclose(nb[:, i, :], want, rtol=1e-12)


def test_nuts_poisson_regression_recovers_coefficients():
    rng = np.random.default_rng(4)
    n = 200
    x = rng.normal(size=n)
    df = pd.DataFrame({"x": x, "c": rng.poisson(np.exp(0.5 + 0.6 * x))})
    model = SequentialRegression(posterior_method="nuts",
                                 sampling=Sampling(tune=300, draws=300), progressbar=False)
    _quiet(model.fit, df, synthesized=["c"], random_seed=3)
    beta = model._stacked("c__beta")
    lap = SequentialRegression(posterior_method="laplace",
                               sampling=Sampling(draws=2000), progressbar=False)
    _quiet(lap.fit, df, synthesized=["c"], random_seed=3)
    # NUTS and the Laplace approximation agree on a well-identified GLM
    np.testing.assert_allclose(beta.mean(0), lap._stacked("c__beta").mean(0), atol=0.05)


# ------------------------------------------------------------------------------------------
# partial synthesis of selected records
# ------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def partial_chain():
    df = _mixed_data(200, seed=1)
    flags = np.zeros(len(df), bool)
    flags[:80] = True
    model = SequentialRegression(
        posterior_method={"b": "laplace", "c": "laplace"},
        sampling=Sampling(draws=100), progressbar=False,
    )
    # positions are accepted as well as a mask
    _quiet(model.fit, df, synthesized=["b", "y", "c"], records=np.arange(80),
           random_seed=5)
    return df, flags, model


def test_partial_synthesis_keeps_unselected_records(partial_chain):
    df, flags, model = partial_chain
    np.testing.assert_array_equal(model.synthesized_records_, flags)
    syn = model.synthesize(2, random_seed=3)
    np.testing.assert_array_equal(syn.synthesized_records, flags)
    for z in syn:
        assert list(z.dtypes) == list(df.dtypes)
        pd.testing.assert_frame_equal(z[~flags], df[~flags])
        pd.testing.assert_series_equal(z["x"], df["x"])  # unsynthesized column
        assert (z.loc[flags, "y"] != df.loc[flags, "y"]).all()
        assert (z.loc[flags, "b"] != df.loc[flags, "b"]).any()
    # the posterior is fitted on all records: the same as for full synthesis
    full = _quiet(
        SequentialRegression(posterior_method={"b": "laplace", "c": "laplace"},
                             sampling=Sampling(draws=100),
                             progressbar=False).fit,
        df, synthesized=["b", "y", "c"], random_seed=5,
    )
    for v in ("b__beta", "y__beta", "y__sigma", "c__beta"):
        np.testing.assert_array_equal(model._stacked(v), full._stacked(v))


def test_partial_synthesis_dataset_loglik_sums_selected_records(partial_chain):
    df, flags, model = partial_chain
    syn = model.synthesize(2, random_seed=3)
    L = model.dataset_loglik(syn, draw_indices=[0, 7])
    want = np.stack([model.record_loglik(z[flags], draw_indices=[0, 7]).sum(1) for z in syn],
        axis=1)
    np.testing.assert_allclose(L, want, rtol=1e-12)
    with pytest.raises(SchemaError, match="has 10 rows"):
        model.dataset_loglik([syn[0].head(10)])


def test_partial_synthesis_save_load_and_fit_augmented(partial_chain, tmp_path):
    df, flags, model = partial_chain
    model.save(tmp_path / "m")
    from bayes_risk.models import load_model

    loaded = load_model(tmp_path / "m")
    np.testing.assert_array_equal(loaded.synthesized_records_, flags)
    a = model.synthesize(2, random_seed=4)
    b = loaded.synthesize(2, random_seed=4)
    for x, y in zip(a, b, strict=True):
        pd.testing.assert_frame_equal(x, y)
    np.testing.assert_array_equal(model.dataset_loglik(a), loaded.dataset_loglik(a))
    # p(Θ | y, Z_(l)) for the likelihood above: only the selected rows of Z_(l) are appended
    aug = _quiet(model.fit_augmented, df, a[0], random_seed=4)
    assert aug.n_records == len(df) + int(flags.sum())
    assert aug.synthesized_records_ is None


def test_partial_synthesis_uses_synthetic_earlier_columns_as_predictors():
    """Selected records: y is drawn given their synthetic b; other records are untouched."""
    rng = np.random.default_rng(8)
    n = 60
    x = rng.normal(size=n)
    df = pd.DataFrame({"x": x, "b": pd.Categorical((x > 0).astype(int)),
                       "y": 1.0 + 2.0 * x + rng.normal(0, 0.5, n)})
    schema = infer_schema(df, synthesized=["b", "y"])
    H = 4
    draws_b = np.tile([0.0, 0.0], (H, 1))  # P(b = 1) = 1/2 whatever x
    draws_y = pd.DataFrame({"(Intercept)": [1.0] * H, "x": [2.0] * H, "b[T.1]": [5.0] * H,
                            "sigma": [1e-6] * H})
    flags = np.arange(n) % 2 == 0
    model = _quiet(SequentialRegression.from_posterior, {"b": draws_b, "y": draws_y}, schema,
                   data=df, synthesized_records=flags)
    syn = model.synthesize(2, random_seed=1)
    for z in syn:
        pd.testing.assert_frame_equal(z[~flags], df[~flags])
        zb = z["b"].astype(int).to_numpy()
        np.testing.assert_allclose(z["y"].to_numpy()[flags], (1 + 2 * x + 5 * zb)[flags],
                                   atol=1e-4)
        assert (zb[flags] != df["b"].astype(int).to_numpy()[flags]).any()
    # partial synthesis copies the records that are not selected: the data are needed
    with pytest.raises(ValidationError, match=r"synthesized_records needs data \(the records "
                       "not synthesized are released as they are, from the confidential data"):
        SequentialRegression.from_posterior({"b": draws_b, "y": draws_y}, schema, n_records=n,
                                            synthesized_records=flags)


def test_partial_synthesis_attribute_risk():
    """The engine on a partially synthesized release agrees with the model's likelihoods.

    For a selected record the engine's log-likelihoods are the IS estimator's on the model's
    own likelihoods. A non-selected record is released as it is: every other candidate is
    impossible (the factor 1{z_i = y*} of p(Z | y*, y_-i)), so its truth has probability 1.
    """
    from bayes_risk.attribute.api import attribute_risk
    from bayes_risk.attribute.estimator import is_estimate

    rng = np.random.default_rng(2)
    n = 200
    a = rng.integers(0, 3, n)
    b = (rng.random(n) < np.where(a == 2, 0.8, 0.3)).astype(int)
    df = pd.DataFrame({"a": pd.Categorical(a), "b": pd.Categorical(b)})
    flags = np.arange(n) < 100
    model = SequentialRegression(
        families={"a": "categorical"}, posterior_method={"b": "laplace"},
        sampling=Sampling(draws=60),
        progressbar=False,
    )
    _quiet(model.fit, df, records=flags, random_seed=1)
    syn = model.synthesize(2, random_seed=2)
    recs = [0, 150]  # selected, not selected
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = attribute_risk(df, syn, model=model, records=recs, progressbar=False,
                             random_seed=1,
                             estimator="is")
        st_ = attribute_risk(df, syn, model=model, records=recs, progressbar=False, random_seed=1)
    L = model.dataset_loglik(syn)
    k = 0  # the selected record
    cands = res.candidates[k].frame(model.schema_)
    lp = model.candidate_loglik(df.iloc[[recs[k]]], cands)
    logr = lp - lp[:, [res.candidates[k].g0]]
    want = is_estimate(logr[None], L)["loglik"][0]
    got = res.loglik[k]
    np.testing.assert_allclose(got - got[0], want - want[0], rtol=1e-8, atol=1e-8)
    for r in (res, st_):
        p = r.records["p_true"].to_numpy()
        assert 0 < p[0] < 1 and p[1] == 1.0
        assert r.records["synthesized"].tolist() == [True, False]
        assert "RECORDS_RELEASED_UNCHANGED" in r.warnings
        ll = r.loglik[1]
        assert ll[r.candidates[1].g0] == 0 and np.isneginf(np.delete(ll, r.candidates[1].g0)).all()


def test_partial_synthesis_record_errors():
    df = _mixed_data(30)
    model = SequentialRegression(sampling=Sampling(draws=10), progressbar=False)
    with pytest.raises(ValidationError, match="one flag per record \\(30\\)"):
        model.fit(df, synthesized=["y"], records=np.ones(5, bool))
    with pytest.raises(ValidationError, match="index 30 is outside 0..29"):
        model.fit(df, synthesized=["y"], records=[0, 30])
    with pytest.raises(ValidationError, match="boolean mask or integer record indices"):
        model.fit(df, synthesized=["y"], records=["a"])


# ------------------------------------------------------------------------------------------
# errors
# ------------------------------------------------------------------------------------------
def test_errors():
    df = _mixed_data(60)
    with pytest.raises(ValidationError,
                       match=r"^families\['y'\] must be one of \[.*'normal'.*\]\. Got 'gamma'\.$"):
        SequentialRegression(families={"y": "gamma"}).fit(df, synthesized=["y"])
    with pytest.raises(ValidationError, match="cannot model column 'y' of type continuous"):
        SequentialRegression(families={"y": "poisson_log"}).fit(df, synthesized=["y"])
    with pytest.raises(ValidationError, match="predictor 'c' of 'y' is neither"):
        SequentialRegression(predictors={"y": ["c"]}).fit(df, synthesized=["y", "c"])
    with pytest.raises(ValidationError, match="order must list every synthesized column"):
        SequentialRegression(order=["y"]).fit(df, synthesized=["y", "c"])
    with pytest.raises(SchemaError, match="'z'"):
        SequentialRegression(formulas={"y": "y ~ z"}).fit(df, synthesized=["y"])
    with pytest.raises(ValidationError, match="'exact' exists only for normal"):
        SequentialRegression(posterior_method="exact").fit(df, synthesized=["c"])
    with pytest.raises(NotFittedError):
        SequentialRegression().record_loglik(df)
    model = _quiet(SequentialRegression(
                                        sampling=Sampling(draws=20), progressbar=False).fit, df,
                                        synthesized=["y"])
    with pytest.raises(ValidationError, match="'x' is not synthesized"):
        model.candidate_loglik(df.iloc[[0]], pd.DataFrame({"x": [1.0]}))
    with pytest.raises(ValidationError, match="continuous: a one-variable-different"):
        model.neighbourhood_loglik(df.head(2))
    with pytest.raises(SchemaError, match="missing column"):
        model.record_loglik(df.drop(columns="x"))


# ------------------------------------------------------------------------------------------
# command line
# ------------------------------------------------------------------------------------------
def test_cli_fit_regression(tmp_path, capsys):
    from bayes_risk.cli import main
    from bayes_risk.models import load_model

    df = _mixed_data(80)
    csv = tmp_path / "d.csv"
    df.to_csv(csv, index=False)
    rc = main(["fit", str(csv), "--method", "regression", "--categorical", "g", "b",
               "--synthesize", "b", "y", "--family", "b=bernoulli_logit",
               "--formula", "y ~ x + b", "--order", "b", "y", "--posterior-method", "laplace",
               "--draws", "40", "--random-seed", "3", "--quiet", "--out", str(tmp_path / "m")])
    assert rc == 0
    m = load_model(tmp_path / "m")
    assert m.order_ == ["b", "y"] and m.predictors_["y"] == ["x", "b"]
    assert m.families_ == {"b": "bernoulli_logit", "y": "normal"}
    assert m.n_draws == 40
    rc = main(["synthesize", "--model", str(tmp_path / "m"), "-m", "2", "--random-seed", "1",
               "--out", str(tmp_path / "syn")])
    assert rc == 0
    assert main(["fit", str(csv), "--method", "regression", "--family", "y=gamma",
                 "--synthesize", "y", "--quiet", "--out", str(tmp_path / "bad")]) == 2
    assert "families['y'] must be one of" in capsys.readouterr().err
    assert not (tmp_path / "bad").exists()


def test_fit_augmented_refuses_a_table_without_a_column_of_the_model(normreg):
    """The base's refit checks both tables before fitting (a KeyError before issue 87)."""
    from bayes_risk.exceptions import SchemaError

    df, model = normreg
    for data, syn, name in ((df[["y"]], df, "data"), (df, df[["x"]], "synthetic")):
        with pytest.raises(SchemaError, match=name) as err:
            model.fit_augmented(data, syn)
        assert err.value.code == "MISSING_COLUMN"
