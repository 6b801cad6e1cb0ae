"""The multivariate (Wald) test of several estimands under each generation scheme's rules.

Hand-computed values, the choice carried over from a utility result (manifest / inferred /
user), refusals, and a size simulation per scheme (fixed seeds; 2,000 replications, so the
Monte Carlo SE of a 5 % rejection rate is 0.0049; tolerance 0.02, about 4 SEs).
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from scipy import stats

from bayes_risk.data import SyntheticData, infer_schema, make_ce_like
from bayes_risk.exceptions import DataWarning, ValidationError
from bayes_risk.utility import combine_multivariate, combine_scalar, compare_estimates

# k = 2, m = 5: deviations (0, .6, -.6, .3, -.3) and (0, -.6, .6, .3, -.3) around (1, 2)
Q = [(1.0, 2.0), (1.6, 1.4), (0.4, 2.6), (1.3, 2.3), (0.7, 1.7)]
U = [np.diag([0.01, 0.04])] * 5
# by hand: B = [[.225, -.135], [-.135, .225]], tr(B Ū^-1) = 22.5 + 5.625 = 28.125,
# d = (1, 2) - 0: dᵀ Ū^-1 d = 100 + 100 = 200, t = k (m - 1) = 8


def test_partial_by_hand():
    r = combine_multivariate(Q, U)
    np.testing.assert_allclose(r.between_cov, [[0.225, -0.135], [-0.135, 0.225]], rtol=1e-12)
    assert r.rules == "partial"
    assert r.r == pytest.approx(28.125 / 10, rel=1e-12)                 # 2.8125
    assert r.statistic == pytest.approx(200 / (2 * 3.8125), rel=1e-12)   # 26.2295
    assert r.df_den == pytest.approx(4 + 4 * (1 + 0.75 / 2.8125) ** 2, rel=1e-12)
    np.testing.assert_allclose(r.total_cov, np.diag([0.01, 0.04]) * 3.8125, rtol=1e-12)


@pytest.mark.parametrize(("proper", "ratio", "factor"),
                         [(True, 1.0, 1 + 2 / 5), (False, 1.0, 1 + 1 / 5),
                          (True, 2.0, 2 + 3 / 5)])
def test_full_same_n_by_hand(proper, ratio, factor):
    r = combine_multivariate(Q, U, rules="full-same-n", proper=proper, size_ratio=ratio)
    # T_s = Ū factor; Wald 200 / factor ~ chi2_2, whose upper tail is exp(-x/2)
    assert r.statistic == pytest.approx(200 / (2 * factor), rel=1e-12)
    assert r.df_den == math.inf and r.df_num == 2
    assert r.p_value == pytest.approx(math.exp(-100 / factor), rel=1e-9)
    np.testing.assert_allclose(r.total_cov, np.diag([0.01, 0.04]) * factor, rtol=1e-12)


def test_full_same_n_single_dataset():
    r = combine_multivariate(Q[:1], U[:1], rules="full-same-n")
    assert r.statistic == pytest.approx(200 / (2 * 3), rel=1e-12) and math.isnan(r.r)


def test_full_population_by_hand():
    r = combine_multivariate(Q, U, rules="full-population")
    rf = 1.2 * 28.125 / 2                                                 # 16.875
    assert r.r == pytest.approx(rf, rel=1e-12)
    assert r.statistic == pytest.approx(200 / (2 * (rf - 1)), rel=1e-12)  # 6.299213
    assert r.df_den == pytest.approx(4 + 4 * (1 - 0.75 / rf) ** 2, rel=1e-12)  # 7.652346
    assert r.p_value == pytest.approx(stats.f.sf(200 / 31.75, 2, r.df_den), rel=1e-12)
    np.testing.assert_allclose(r.total_cov, np.diag([0.01, 0.04]) * (rf - 1), rtol=1e-12)


@pytest.mark.parametrize("rules", ["partial", "full-same-n", "full-population"])
def test_k1_is_the_square_of_the_scalar_statistic(rules):
    q = np.array([10.2, 9.1, 10.9, 9.4, 10.6, 10.1, 9.7])
    u = np.array([0.05, 0.04, 0.06, 0.05, 0.05, 0.05, 0.04])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)
        s = combine_scalar(q, u, rules=rules)
        mv = combine_multivariate(q[:, None], u[:, None, None], Q0=9.0, rules=rules)
    assert s.warnings == []  # T_f > 0 here: no Reiter (2002) replacement
    assert mv.statistic == pytest.approx((s.estimate - 9.0) ** 2 / s.total_var, rel=1e-12)


def test_full_population_refuses_a_non_positive_variance():
    q = [(1, 2), (1.2, 1.8), (0.8, 2.2), (1.1, 2.1), (0.9, 1.9)]  # r_f = 0.54
    with pytest.raises(ValidationError, match="full-same-n.*combine_scalar") as exc:
        combine_multivariate(q, [np.diag([0.04, 0.09])] * 5, rules="full-population")
    assert exc.value.code == "NEGATIVE_VARIANCE"


def test_m1_refused_where_b_is_needed():
    for rules in ("partial", "full-population"):
        with pytest.raises(ValidationError, match="m >= 2") as exc:
            combine_multivariate(Q[:1], U[:1], rules=rules)
        assert exc.value.code == "M_EQUALS_ONE"
    with pytest.raises(ValidationError, match="rules must be one of") as exc:
        combine_multivariate(Q, U, rules="fully")
    assert exc.value.code == "UNKNOWN_COMBINING_RULES"
    with pytest.raises(ValidationError, match="combining settings"):
        combine_multivariate(Q, U, rules={"rules": "partial"})


# ---------------------------------------------------------------------------- the choice
CAT = ["Urban", "Marital", "Tenure"]


def test_choice_of_a_release_carries_over():
    d = make_ce_like(n=200, random_seed=4)
    rng = np.random.default_rng(2)
    full = [d.sample(frac=1.0, replace=True, random_state=int(rng.integers(1 << 30)))
            .reset_index(drop=True) for _ in range(4)]
    schema = infer_schema(d, categorical=CAT, synthesized=list(d.columns))
    for gen, proper in (("full-population", True), ("full-same-n", False), ("partial", True)):
        rel = SyntheticData(full, method="test", schema=schema, generation=gen, proper=proper)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t = compare_estimates(d, rel, formula="Income ~ Age")
        choice = t.attrs["combining"]
        assert choice["combining_rules"] == gen and choice["combining_rules_source"] == "manifest"
        q = np.array([[1.0, 0.02], [1.3, 0.01], [0.7, 0.03], [1.1, 0.025]])
        Ul = np.array([np.diag([0.01, 1e-5])] * 4)
        r = combine_multivariate(q, Ul, rules=choice)
        assert r.rules == gen
        same = combine_multivariate(q, Ul, rules=gen, proper=proper,
                                    size_ratio=choice["combining_size_ratio"])
        assert r.statistic == same.statistic and r.p_value == same.p_value
    # the choice object itself (choose_rules) works the same
    from bayes_risk.utility.compare import choose_rules

    obj = choose_rules("auto", rel, d, full, list(d.columns), list(d.columns))
    assert combine_multivariate(q, Ul, rules=obj).statistic == combine_multivariate(
        q, Ul, rules=obj.to_settings()).statistic
    # the user's proper= wins over the recorded one
    r = combine_multivariate(q, Ul, rules={"combining_rules": "full-same-n",
                                           "combining_proper": False}, proper=True)
    assert r.statistic == pytest.approx(combine_multivariate(
        q, Ul, rules="full-same-n").statistic, rel=1e-15)


# ---------------------------------------------------------------------------- size
R = 2000
TOL = 0.02
K = 3
MU0 = np.array([1.0, 2.0, 3.0])
S0 = np.array([[1.0, 0.5, 0.2], [0.5, 2.0, 0.3], [0.2, 0.3, 1.5]])


def _wishart(rng, df: int, L: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """Wishart(df, L Lᵀ) draws by Bartlett's decomposition, shape ``shape + (K, K)``."""
    A = np.zeros((*shape, K, K))
    for i in range(K):
        A[..., i, i] = np.sqrt(rng.chisquare(df - i, shape))
        A[..., i, :i] = rng.normal(size=(*shape, i))
    LA = np.broadcast_to(L, (*shape, K, K)) @ A
    return LA @ np.swapaxes(LA, -1, -2)


def _release(seed: int, n: int, m: int, n_syn: int, proper: bool = True):
    """m synthetic samples of n_syn records of a K-variate normal sample of n records: each
    from its own posterior draw of (μ, Σ) (normal–inverse-Wishart, Jeffreys-type prior) or,
    not proper, from the fitted (ȳ, S). The synthetic mean and covariance are drawn from
    their exact sampling distributions. Returns q (R, m, K) and U (R, m, K, K)."""
    rng = np.random.default_rng(seed)
    L0 = np.linalg.cholesky(S0)
    ybar = MU0 + rng.normal(size=(R, K)) @ L0.T / np.sqrt(n)
    S = _wishart(rng, n - 1, L0, (R,)) / (n - 1)
    if proper:
        Linv = np.linalg.cholesky(np.linalg.inv((n - 1) * S))[:, None]
        sig = np.linalg.inv(_wishart(rng, n - 1, Linv, (R, m)))
        Lsig = np.linalg.cholesky(sig)
        mu = ybar[:, None] + (Lsig @ rng.normal(size=(R, m, K, 1)))[..., 0] / np.sqrt(n)
    else:
        Lsig = np.broadcast_to(np.linalg.cholesky(S)[:, None], (R, m, K, K))
        mu = np.broadcast_to(ybar[:, None], (R, m, K))
    q = mu + (Lsig @ rng.normal(size=(R, m, K, 1)))[..., 0] / np.sqrt(n_syn)
    U = _wishart(rng, n_syn - 1, Lsig, (R, m)) / ((n_syn - 1) * n_syn)
    return q, U


def _size(q, U, **kw) -> float:
    rej = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)
        for qi, Ui in zip(q, U, strict=True):
            rej += combine_multivariate(qi, Ui, Q0=MU0, **kw).p_value < 0.05
    return rej / len(q)


def test_size_partial_synthesis():
    # the K columns synthesized for the same 200 units (other columns released unchanged)
    q, U = _release(seed=11, n=200, m=5, n_syn=200)
    size = _size(q, U, rules="partial")
    assert abs(size - 0.05) < TOL, size


@pytest.mark.parametrize("proper", [True, False])
def test_size_full_same_n(proper):
    q, U = _release(seed=12, n=200, m=5, n_syn=200, proper=proper)
    size = _size(q, U, rules="full-same-n", proper=proper)
    assert abs(size - 0.05) < TOL, size


def test_size_full_population():
    # m = 10 samples of n_syn = 10 n records from synthetic populations
    q, U = _release(seed=13, n=200, m=10, n_syn=2000)
    size = _size(q, U, rules="full-population", size_ratio=10.0)
    assert abs(size - 0.05) < TOL, size
    # Reiter's partial rules ignore the variance of the populations' parameters
    wrong = _size(q, U, rules="partial")
    assert wrong > 0.3, wrong
