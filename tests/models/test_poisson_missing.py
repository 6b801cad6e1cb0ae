"""Poisson mixtures fitted to counts with empty cells (methods, Poisson mixtures: missing values).

MP sums a missing count out of every likelihood (its Poisson factor is left out) and the Gibbs
sampler counts in ``λ_kj``'s rate only the members observed in column ``j``; MM and TCMM refuse
empty cells. Checked against brute force: truncated sums over the missing counts, and the exact
conjugate posterior of ``λ`` when ``K = 1``.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from scipy.special import logsumexp

import bayes_risk.models.poisson.kernels as pk
from bayes_risk.data.schema import infer_schema
from bayes_risk.exceptions import SchemaError, ValidationError
from bayes_risk.models import PoissonMixture, Sampling

pytestmark = pytest.mark.filterwarnings(
    "ignore::bayes_risk.exceptions.ConvergenceWarning",
    "ignore::bayes_risk.exceptions.ImportanceSamplingWarning",
)

# largest count of the truncated enumeration: with every rate below 30 the Poisson mass above
# 200 is below 1e-80, far under the stated tolerance
TRUNCATE = 200
RTOL = 1e-10


@pytest.fixture(scope="module")
def counts() -> pd.DataFrame:
    rng = np.random.default_rng(5)
    z = rng.integers(0, 2, 120)
    df = pd.DataFrame({"emp": rng.poisson(np.where(z, 20, 4)).astype(float),
                       "est": rng.poisson(np.where(z, 9, 2)).astype(float),
                       "sites": rng.poisson(np.where(z, 3, 1)).astype(float)})
    df.loc[rng.random(120) < 0.2, "emp"] = np.nan
    df.loc[rng.random(120) < 0.15, "est"] = np.nan
    df.loc[[0, 1], ["emp", "est"]] = np.nan  # two records missing two counts
    return df


@pytest.fixture(scope="module")
def mp(counts) -> PoissonMixture:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return PoissonMixture(n_components=4,
                              sampling=Sampling(tune=100, draws=60), progressbar=False).fit(
            counts, schema=_schema(counts), random_seed=3)


def _schema(df: pd.DataFrame):
    """Counts with empty cells are read as floats: declare them counts."""
    return infer_schema(df, count=list(df.columns))


def _brute_loglik(model: PoissonMixture, row: pd.Series) -> np.ndarray:
    """``log Σ`` of the complete-record likelihoods over every value of the missing counts."""
    miss = [c for c in model.columns_ if np.isnan(row[c])]
    grids = np.meshgrid(*[np.arange(TRUNCATE + 1.0)] * len(miss), indexing="ij")
    filled = pd.DataFrame({c: np.full(grids[0].size, row[c]) for c in model.columns_})
    for c, g in zip(miss, grids, strict=True):
        filled[c] = g.ravel()
    return logsumexp(model.record_loglik(filled, draw_indices=np.arange(10)), axis=1)


@pytest.mark.parametrize("record", [0, 2, 5])
def test_record_loglik_sums_the_missing_counts_out(mp, counts, record):
    row = counts.iloc[record]
    rec = counts.iloc[[record]].reset_index(drop=True)
    got = mp.record_loglik(rec, draw_indices=np.arange(10))[:, 0]
    assert np.isnan(row[mp.columns_]).any()
    np.testing.assert_allclose(got, _brute_loglik(mp, row), rtol=RTOL)


def test_kernels_leave_missing_factors_out():
    """The class weights and the record likelihood of a record with a NaN count equal those of
    its observed counts alone (hand-built parameters, K = 3)."""
    rng = np.random.default_rng(0)
    lam = rng.gamma(2.0, 3.0, (2, 3, 3))
    log_pi = np.log(rng.dirichlet(np.ones(3), 2))
    y = np.array([[4.0, np.nan, 1.0], [np.nan, np.nan, 0.0], [2.0, 7.0, 3.0]])
    for h in range(2):
        lp = stats.poisson.logpmf(y[:, None, :], lam[h][None])  # [n, K, p]
        w = log_pi[h] + np.where(np.isnan(y)[:, None, :], 0.0, lp).sum(axis=2)
        np.testing.assert_allclose(pk.class_log_weights(y, log_pi[h], lam[h]), w, rtol=1e-12)
        np.testing.assert_allclose(pk.record_loglik(y, log_pi, lam)[h], logsumexp(w, axis=1),
                                   rtol=1e-12)
    n_k, s = pk.component_stats(y, np.array([0, 0, 1]), 2)
    np.testing.assert_array_equal(n_k, [2.0, 1.0])
    np.testing.assert_array_equal(s, [[4.0, 0.0, 1.0], [2.0, 7.0, 3.0]])


def test_gibbs_draws_of_lambda_match_the_conjugate_posterior():
    """K = 1: λ_j | y ~ Gamma(a + Σ_obs y_ij, b_j + n_obs,j) exactly; the sampler's draws agree
    (Kolmogorov–Smirnov at level 0.001, fixed seed). Counting the missing cells as members would
    shift the rate by their number and fail."""
    rng = np.random.default_rng(11)
    y = rng.poisson([6.0, 2.0], (60, 2)).astype(float)
    y[rng.random(60) < 0.5, 0] = np.nan
    y[:5, 1] = np.nan
    df = pd.DataFrame(y, columns=["a", "b"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = PoissonMixture(n_components=1, b_lambda=0.5, sampling=Sampling(tune=10, draws=3000),
                           progressbar=False).fit(df, schema=_schema(df), random_seed=4)
    lam = m.posterior_["posterior"]["lam"].values.reshape(-1, 2)
    for j in range(2):
        obs = y[~np.isnan(y[:, j]), j]
        exact = stats.gamma(1.0 + obs.sum(), scale=1.0 / (0.5 + obs.size))
        assert stats.kstest(lam[:, j], exact.cdf).pvalue > 1e-3
        assert lam[:, j].mean() == pytest.approx(exact.mean(), rel=0.01)
    wrong = stats.gamma(1.0 + np.nansum(y[:, 0]), scale=1.0 / (0.5 + 60))
    assert stats.kstest(lam[:, 0], wrong.cdf).pvalue < 1e-6
    # the default prior rate is 1 / mean of the observed counts
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        d = PoissonMixture(n_components=1, sampling=Sampling(tune=5, draws=5), progressbar=False)
        np.testing.assert_allclose(d._b_lambda_vector(y), 1 / np.nanmean(y, axis=0))


def test_pymc_model_sums_missing_counts_out(mp, counts):
    """The PyMC model (NUTS's density) agrees with the kernels on records with empty cells."""
    pytest.importorskip("pymc")
    recs = counts.iloc[:8].reset_index(drop=True)
    idx = np.arange(3)
    np.testing.assert_allclose(mp.pymc_record_logp(recs, draw_indices=idx),
                               mp.record_loglik(recs, draw_indices=idx), rtol=1e-8)


def test_mp_releases_complete_counts(mp, counts):
    assert sorted(mp.imputed_columns_) == ["emp", "est"]
    for d in mp.synthesize(2, random_seed=1):
        assert not d.isna().any().any() and len(d) == len(counts)
    cls_o = PoissonMixture(n_components=4, synthesis_mode="posterior_class",
                           sampling=Sampling(tune=20, draws=10),
                           progressbar=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cls_o.fit(counts, schema=_schema(counts), random_seed=2)
    syn = cls_o.synthesize(2, random_seed=1)
    assert not any(d.isna().any().any() for d in syn)
    # its class-O likelihood sums the record's class (given its observed counts) out
    L = cls_o.dataset_loglik(syn, draw_indices=np.arange(3))
    assert np.isfinite(L).all()
    cand = np.array([[np.nan, np.nan, 0.0], [np.nan, np.nan, 3.0]])
    d = cls_o.own_record_delta(0, cand, syn, draw_indices=np.arange(3))
    assert d.shape == (3, 2, 2) and np.isfinite(d).all()


def test_partial_synthesis_keeps_the_empty_cells_of_records_not_replaced(counts):
    chosen = np.arange(60, 120)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = PoissonMixture(n_components=3,
                           sampling=Sampling(tune=20, draws=10), progressbar=False).fit(
            counts, schema=_schema(counts), records=chosen, random_seed=1)
    d = m.synthesize(1, random_seed=2)[0]
    keep = counts.iloc[:60]
    pd.testing.assert_frame_equal(d.iloc[:60], keep, check_dtype=False)
    assert not d.iloc[60:].isna().any().any()


@pytest.mark.parametrize("variant", ["mm", "tcmm"])
def test_mm_and_tcmm_refuse_empty_cells_naming_the_column(counts, variant):
    with pytest.raises(SchemaError, match=r"column 'emp'.*totals") as err:
        PoissonMixture(variant=variant, n_components=3, sampling=Sampling(tune=5, draws=5),
                       progressbar=False).fit(counts, schema=_schema(counts))
    assert err.value.code == "MISSING_VALUES"


def test_all_missing_column_is_refused(counts):
    df = counts.assign(est=np.nan)
    with pytest.raises(SchemaError, match="column 'est' is missing in every record") as err:
        PoissonMixture(n_components=3, sampling=Sampling(tune=5, draws=5), progressbar=False).fit(
            df, schema=_schema(counts))
    assert err.value.code == "MISSING_VALUES"


def test_largest_value_uses_the_observed_values(mp, counts):
    lv = mp.largest_value_loglik("emp", mp.synthesize(2, random_seed=1), upper=200,
                                 draw_indices=np.arange(5), data=counts)
    assert lv.record == int(np.nanargmax(counts["emp"].to_numpy()))
    assert lv.candidates[lv.g0] == np.nanmax(counts["emp"].to_numpy())
    assert np.isfinite(lv.logp_rec).all()
    with pytest.raises(ValidationError, match="column 'emp' has .* missing value") as err:
        mp.largest_value_loglik("emp", mp.synthesize(1, random_seed=1), upper=200,
                                scenario="second_largest", total_known=True, data=counts)
    assert err.value.code == "MISSING_VALUES"


def test_attribute_risk_guesses_the_observed_counts_only(mp, counts):
    """A record's missing count is not guessed: one candidate in that column (its NaN), the
    likelihood integrating it out (``settings["missing_values"] == "integrated_out"``)."""
    from bayes_risk.attribute import attribute_risk

    syn = mp.synthesize(2, random_seed=2)
    rows = [0, 3]  # two counts missing, none (every count positive: 3 grid values each)
    res = attribute_risk(counts, syn, model=mp, records=rows, estimator="is",
                         candidates="grid:additive:1:3", random_seed=3, progressbar=False)
    assert res.settings["missing_values"] == "integrated_out"
    miss = counts.iloc[rows].isna().sum(axis=1).to_numpy()
    np.testing.assert_array_equal(miss, [2, 0])
    np.testing.assert_array_equal(res.records["G"].to_numpy(), [3, 27])
    cp = res.candidate_posteriors(0)
    assert cp["emp"].isna().all() and cp["est"].isna().all()
    assert cp["posterior"].sum() == pytest.approx(1.0, abs=1e-12)


def test_command_line_fit_with_empty_cells(tmp_path, counts, capsys):
    from bayes_risk import cli
    from bayes_risk.models import load_model

    path = tmp_path / "counts.csv"
    counts.to_csv(path, index=False)
    # counts with empty cells are read as floats: --count declares them
    common = ["fit", str(path), "--method", "poisson-mixture", "--count", "emp", "est", "sites",
              "--components", "3", "--tune", "10", "--draws", "10", "--quiet",
              "--random-seed", "1"]
    assert cli.main([*common, "--out", str(tmp_path / "mp")]) == 0
    model = load_model(tmp_path / "mp")
    assert sorted(model.imputed_columns_) == ["emp", "est"]
    assert not model.synthesize(1, random_seed=1)[0].isna().any().any()
    capsys.readouterr()
    assert cli.main([*common, "--variant", "mm", "--out", str(tmp_path / "mm")]) == 2
    err = capsys.readouterr().err
    assert "[MISSING_VALUES]" in err and "column 'emp'" in err and "--variant mp" in err


def _fit_codes(counts: pd.DataFrame, **kw) -> tuple[PoissonMixture, list[str]]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = PoissonMixture.from_settings({"progressbar": False, **kw})
        m = m.fit(counts, schema=_schema(counts), random_seed=2)
    return m, [w["code"] for w in m.mcmc_warnings()]


def test_chains_started_at_both_ends_reach_one_regime_with_empty_cells(counts):
    """The regime check runs on a fit with empty cells as on complete counts: chains started
    with every class occupied and with three are two regimes when the warm-up is cut
    (REGIMES_DISAGREE, the fit does not pass); after a warm-up they leave their starts and
    agree on α, k* and the observed-data log-likelihood."""
    m, codes = _fit_codes(counts, n_components=30, tune=1, draws=5, chains=2,
                          starts=("spread", "few"))
    first = m.posterior_["warmup_sample_stats"]["n_occupied"].values[:, 0]
    assert first[0] >= 20 and first[1] <= 5, first  # after one sweep
    assert "REGIMES_DISAGREE" in codes and not m.convergence_summary()["passed"]

    m, codes = _fit_codes(counts, n_components=30, tune=300, draws=300, chains=2,
                          starts=("spread", "few"))
    regimes = m.convergence_summary()["regimes"]
    assert regimes["agree"] and "REGIMES_DISAGREE" not in codes
    assert [c["start"] for c in regimes["chains"]] == ["spread", "few"]
    k = m.posterior_["sample_stats"]["n_occupied"].values.mean(axis=1)
    assert k.max() < 8, k  # the spread chain left its 30 classes
    ll = m.posterior_["sample_stats"]["loglik"].values.mean(axis=1)
    assert abs(ll[0] - ll[1]) < 1.0, ll
