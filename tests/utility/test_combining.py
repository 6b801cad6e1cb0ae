"""Combining rules for partially synthetic data (SPEC §5.1): worked examples, edge cases,
properties."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from scipy import stats

from bayes_risk.exceptions import DataWarning, ValidationError
from bayes_risk.utility.combining import combine_multivariate, combine_scalar

RTOL, ATOL = 1e-6, 1e-9


def test_comb5_fixture():
    r = combine_scalar([10.2, 9.8, 10.5, 9.9, 10.1], [0.25, 0.24, 0.26, 0.25, 0.25])
    np.testing.assert_allclose(r.estimate, 10.1, rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(r.between_var, 0.075, rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(r.within_var, 0.25, rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(r.total_var, 0.265, rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(r.r, 0.06, rtol=RTOL, atol=ATOL)
    # SPEC prints nu = 1248.444 (3 decimals)
    np.testing.assert_allclose(r.df, 1248.444, rtol=0, atol=5e-4)
    np.testing.assert_allclose(stats.t.ppf(0.975, r.df), 1.961866, rtol=RTOL)
    np.testing.assert_allclose(r.ci, (9.090068, 11.109932), rtol=RTOL, atol=1e-6)
    assert r.m == 5 and r.warnings == []
    json.dumps(r.to_dict(), allow_nan=False)


def test_m_equals_one_warns_and_uses_u1():
    with pytest.warns(DataWarning, match="M_EQUALS_ONE"):
        r = combine_scalar([3.0], [4.0])
    assert r.warnings == ["M_EQUALS_ONE"]
    assert r.estimate == 3.0 and r.total_var == 4.0 and math.isinf(r.df)
    np.testing.assert_allclose(r.ci, (3 - 1.959964 * 2, 3 + 1.959964 * 2), rtol=1e-6)
    d = r.to_dict()
    assert d["df"] == "inf" and d["between_var"] is None


def test_zero_between_variance_gives_infinite_df_and_normal_quantile():
    r = combine_scalar([2.0, 2.0, 2.0], [1.0, 1.0, 1.0])
    assert r.between_var == 0 and math.isinf(r.df)
    np.testing.assert_allclose(r.ci_upper - r.estimate, stats.norm.ppf(0.975), rtol=1e-12)


def test_zero_within_variance_gives_m_minus_one_df():
    r = combine_scalar([1.0, 2.0, 3.0, 4.0], [0.0, 0.0, 0.0, 0.0])
    assert r.df == 3.0
    np.testing.assert_allclose(r.total_var, np.var([1, 2, 3, 4], ddof=1) / 4)


@pytest.mark.parametrize(
    ("q", "u", "alpha", "match"),
    [
        ([1.0, 2.0], [0.1, -0.2], 0.05,
         r"u must be a non-empty sequence of finite numbers >= 0, .* Got \[0.1, -0.2\]\."),
        ([1.0, 2.0, 3.0], [0.1, 0.2], 0.05, "one value per synthetic dataset"),
        ([1.0, np.nan], [0.1, 0.2], 0.05,
         r"q must be a non-empty sequence of finite numbers, .* Got \[1.0, nan\]\."),
        ([], [], 0.05, "q must be a non-empty sequence"),
        ([1.0, 2.0], [0.1, 0.2], 1.5, "alpha must be"),
        ([1.0, 2.0], [0.1, 0.2], True, "alpha must be"),
        ([1.0, 2.0], [0.1, 0.2], "0.05", "alpha must be"),
    ],
)
def test_scalar_errors(q, u, alpha, match):
    with pytest.raises(ValidationError, match=match):
        combine_scalar(q, u, alpha=alpha)


@pytest.mark.parametrize("alpha", [np.float32(0.1), np.float64(0.1), 0.1])
def test_alpha_of_any_real_type(alpha):
    """A numpy scalar alpha (np.float32 is not a float subclass) is a number like any other."""
    r = combine_scalar([1.0, 1.4, 0.9], [0.2, 0.25, 0.2], alpha=alpha)
    ref = combine_scalar([1.0, 1.4, 0.9], [0.2, 0.25, 0.2], alpha=0.1)
    assert r.alpha == pytest.approx(0.1) and isinstance(r.alpha, float)
    assert (r.ci_lower, r.ci_upper) == pytest.approx((ref.ci_lower, ref.ci_upper), rel=1e-6)


def test_multivariate_example():
    q = [(1, 2), (1.2, 1.8), (0.8, 2.2), (1.1, 2.1), (0.9, 1.9)]
    U = [np.diag([0.04, 0.09])] * 5
    r = combine_multivariate(q, U, Q0=0)
    np.testing.assert_allclose(r.between_cov, [[0.025, -0.015], [-0.015, 0.025]], rtol=RTOL,
                               atol=ATOL)
    np.testing.assert_allclose(r.r, 0.0902778, rtol=RTOL)
    np.testing.assert_allclose(r.statistic, 31.84713, rtol=RTOL)
    np.testing.assert_allclose(r.df_den, 350.5325, rtol=RTOL)
    assert r.df_num == 2
    # SPEC prints the p-value to 3 significant digits (1.96e-13)
    np.testing.assert_allclose(r.p_value, 1.96e-13, rtol=5e-3)
    json.dumps(r.to_dict(), allow_nan=False)


def test_multivariate_small_t_warns_and_uses_four():
    q = [(1.0, 2.0), (1.1, 2.2), (0.9, 1.7)]  # k = 2, m = 3 -> t = 4
    U = [np.eye(2) * 0.1] * 3
    with pytest.warns(DataWarning, match="SMALL_T"):
        r = combine_multivariate(q, U)
    assert r.df_den == 4.0 and r.warnings == ["SMALL_T"]


def test_multivariate_agrees_with_scalar_rules_for_k1():
    # k = 1: S_p = (q̄ − Q0)² / (ū (1 + r)) = (q̄ − Q0)² / T_p and r_p = r_m
    q = np.array([10.2, 9.8, 10.5, 9.9, 10.1])
    u = np.array([0.25, 0.24, 0.26, 0.25, 0.25])
    s = combine_scalar(q, u)
    with pytest.warns(DataWarning, match="SMALL_T"):  # t = k(m − 1) = 4
        mv = combine_multivariate(q[:, None], u[:, None, None], Q0=9.0)
    np.testing.assert_allclose(mv.statistic, (s.estimate - 9.0) ** 2 / s.total_var, rtol=1e-12)
    np.testing.assert_allclose(mv.r, s.r, rtol=1e-12)


@pytest.mark.parametrize(
    ("q", "U", "match"),
    [
        ([(1.0, 2.0)], [np.eye(2)], "m >= 2"),
        ([(1.0, 2.0), (1.0, 2.0)], [np.eye(3)] * 2, "shape"),
        ([(1.0, 2.0), (1.0, 2.0)], [np.zeros((2, 2))] * 2, "singular"),
        ([(1.0, 2.0), (1.0, 2.0)], [np.array([[1.0, 0.5], [0.0, 1.0]])] * 2, "symmetric"),
    ],
)
def test_multivariate_errors(q, U, match):
    with pytest.raises(ValidationError, match=match):
        combine_multivariate(q, U)


finite = st.floats(-1e3, 1e3, allow_nan=False)
var = st.floats(1e-6, 1e3, allow_nan=False)


@given(st.lists(st.tuples(finite, var), min_size=2, max_size=12))
@example(pairs=[(0.0, 1.0), (2.273475693090237e-154, 1.0)])  # subnormal b: overflow in df
def test_scalar_properties(pairs):
    q = [p[0] for p in pairs]
    u = [p[1] for p in pairs]
    r = combine_scalar(q, u)
    m = len(q)
    assert r.total_var >= r.within_var * (1 - 1e-12)
    assert r.ci_lower <= r.estimate <= r.ci_upper
    assert r.df >= m - 1 - 1e-9
    # invariance under reordering of the datasets
    r2 = combine_scalar(q[::-1], u[::-1])
    np.testing.assert_allclose([r2.estimate, r2.total_var], [r.estimate, r.total_var],
                               rtol=1e-9, atol=1e-9)


def test_interval_coverage_for_proper_synthesis():
    """Partially synthetic release of y ~ N(μ, σ²) drawn from the posterior predictive of a
    normal model (flat prior): the combined 95% interval for the mean covers μ about 95% of
    the time. With 1,000 replicates the Monte Carlo SE of a coverage of 0.95 is
    sqrt(0.95 · 0.05 / 1000) ≈ 0.0069; tolerance 4 × SE ≈ 0.028.
    """
    rng = np.random.default_rng(20031)
    n, m, mu, sigma, reps = 50, 5, 3.0, 2.0, 1000
    covered = 0
    for _ in range(reps):
        y = rng.normal(mu, sigma, n)
        s2 = y.var(ddof=1)
        sig2 = (n - 1) * s2 / rng.chisquare(n - 1, size=m)  # σ² | y
        mus = rng.normal(y.mean(), np.sqrt(sig2 / n))  # μ | σ², y
        z = rng.normal(mus[:, None], np.sqrt(sig2)[:, None], size=(m, n))
        r = combine_scalar(z.mean(axis=1), z.var(axis=1, ddof=1) / n)
        covered += r.ci_lower <= mu <= r.ci_upper
    assert abs(covered / reps - 0.95) < 0.028


def test_the_distribution_functions_are_scipy_stats_values():
    """combining, compare and overlap evaluate scipy.special's functions (scipy.stats costs half
    a second of import): the values are scipy.stats' own, bit for bit, edges included."""
    from scipy import special

    from bayes_risk.utility.combining import t_quantile
    from bayes_risk.utility.overlap import _cdf

    dfs = [1e-300, 0.5, 1.0, 2.5, 4.0, 30.0, 1e10, 1e300, math.inf]
    for df in dfs:
        for alpha in [1e-12, 0.01, 0.05, 0.1, 0.5, 0.999]:
            ref = (stats.norm.ppf(1 - alpha / 2) if math.isinf(df)
                   else stats.t.ppf(1 - alpha / 2, df))
            assert t_quantile(df, alpha) == ref
    z = np.array([-np.inf, -40.0, -1.0, 0.0, 1.96, 40.0, np.inf, np.nan])
    for df in dfs:
        got = _cdf(z, np.zeros_like(z), np.ones_like(z), np.full(z.shape, df))
        ref = stats.norm.cdf(z) if math.isinf(df) else stats.t.cdf(z, df)
        np.testing.assert_array_equal(got, ref)
    np.testing.assert_array_equal(_cdf(z, np.zeros_like(z), np.ones_like(z), None),
                                  stats.norm.cdf(z))
    for k in [1, 2, 3, 7, 50]:
        for x in [0.0, 1e-8, 0.5, 3.0, 40.0, np.inf]:
            assert special.chdtrc(k, x * k) == stats.chi2.sf(x * k, k)
            for nu in [0.5, 4.0, 1e6]:
                assert special.fdtrc(k, nu, x) == stats.f.sf(x, k, nu)
        for q in [0.25, 0.75]:
            assert 2 * special.gammaincinv(k / 2, q) == stats.chi2.ppf(q, k)
