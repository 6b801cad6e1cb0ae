"""Brute-force ground truth for the mixture samplers (issues 10 and 17).

Exact posteriors come from ``tests/_exact.py`` (dynamic programming over class counts, α
integrated by quadrature), itself checked against a plain sum over all K^N allocations. The MCMC
estimates are compared within Monte Carlo error: ``z = (mean − exact) / (sd / sqrt(ESS))`` with
ArviZ's ESS of the mean. A sampler that clips the stick fractions (``V ≤ 1 − 1e-12``) fails the
K = 2 test (|z| up to 9 on P(a class empty), measured).

End-to-end ``p_true`` (issue 17's table): replicate runs of the package (fit, augmented fits,
estimator) with their own seeds against exact values (``_exact.dpmpm_p_true_exact``);
``z = (replicate mean − exact) / (sd / √reps)`` per record, a Student-t statistic with
``reps − 1`` degrees of freedom compared with a bound that accounts for the number of records and
estimators compared together (``_exact.t_bound``). The figures quoted in the tests
"with the clipped sticks" were measured by reintroducing ``V ∈ [1e-300, 1 − 1e-12]`` in
``models/_bayesian/sticks.py`` and running the same tests.
"""

from __future__ import annotations

import warnings

import arviz_stats
import numpy as np
import pandas as pd
import pytest
from _exact import (
    allocation_states,
    brute_force_allocations,
    cells_of,
    check_p_true,
    dpmpm_exact,
    dpmpm_p_true_exact,
    poisson_mixture_exact,
    t_bound,
)
from scipy.special import gammaln

from bayes_risk.attribute import EstimatorSpec
from bayes_risk.exceptions import ConvergenceWarning
from bayes_risk.models import DPMPM, PoissonMixture, Sampling
from bayes_risk.models._bayesian.sticks import (
    log_gamma_variates,
    sample_sticks,
    stick_breaking_log_parts,
)

Z_MAX = 3.5  # |z| tolerance per quantity (several quantities per test, fixed seeds)


def _z(x: np.ndarray, exact: float) -> float:
    x = np.asarray(x, dtype=np.float64)
    ess = float(arviz_stats.ess(x, method="mean"))
    return float((x.mean() - exact) / (x.std() / np.sqrt(ess)))


# ------------------------------------------------------------------------------ the helpers
def test_dynamic_programme_matches_sum_over_all_allocations():
    rng = np.random.default_rng(3)
    codes = rng.integers(0, 2, size=(7, 2))
    for K in (2, 3):
        ex = dpmpm_exact(codes, np.array([2, 2]), K)

        def llc(mem):
            out = 0.0
            for j in range(2):
                c = np.bincount(codes[mem, j], minlength=2)
                out += gammaln(2.0) - gammaln(2.0 + len(mem)) + gammaln(1 + c).sum()
            return out

        assert ex.log_evidence == pytest.approx(brute_force_allocations(llc, 7, K), abs=1e-10)
        assert ex.pi_mean.sum() == pytest.approx(1.0, abs=1e-10)
        # the exact predictive (used for p_true) is the evidence ratio ev(y ∪ x) / ev(y)
        for row in ([0, 0], [1, 0]):
            ev_x = dpmpm_exact(np.vstack([codes, row]), np.array([2, 2]), K).log_evidence
            assert np.log(ex.predictive(np.array(row))) == pytest.approx(
                ev_x - ex.log_evidence, abs=1e-10)
        # states merged by integer keys == merged by comparing rows
        vals, counts = cells_of(codes)
        onehot = np.concatenate([vals == 0, vals == 1], axis=1)[:, [0, 2, 1, 3]].astype(int)
        a = allocation_states(onehot, counts, K)
        b = allocation_states(onehot, counts, K, row_merge=True)
        ka = [tuple(x) for x in a[0].reshape(len(a[0]), -1)]
        kb = [tuple(x) for x in b[0].reshape(len(b[0]), -1)]
        assert sorted(ka) == sorted(kb)
        assert dict(zip(ka, a[1], strict=True)) == pytest.approx(
            dict(zip(kb, b[1], strict=True)), abs=1e-12)
    y = rng.poisson(3, size=(6, 1))
    ex = poisson_mixture_exact(y, 2, a_lambda=1.0, b_lambda=np.array([0.3]))

    def llp(mem):
        s, n = y[mem, 0].sum(), len(mem)
        return (np.log(0.3) + gammaln(1 + s) - (1 + s) * np.log(0.3 + n)
                - gammaln(y[mem, 0] + 1).sum())

    assert ex.log_evidence == pytest.approx(brute_force_allocations(llp, 6, 2), abs=1e-10)


def test_compiled_reference_kernels_match_plain_numpy(monkeypatch):
    """The numba kernels of ``_exact`` against the plain numpy they replace (sort-based merge of
    allocation states, ``np.unique`` + ``ufunc.at`` grouping, per-row stick probabilities,
    the predictive sum), to 1e-12."""
    import _exact

    rng = np.random.default_rng(7)
    # heap merge of sorted streams == sort all T × P sums, log-sum-exp per distinct key
    keys = np.unique(rng.integers(0, 400, 60))
    logw, ckey, lm = rng.normal(size=keys.size), rng.integers(0, 50, 9), rng.normal(size=9)
    uk, fi, fp, lw = _exact._merge_sorted(keys, logw, ckey, lm)
    allk = (keys[:, None] + ckey[None, :]).ravel()
    allw = (logw[:, None] + lm[None, :]).ravel()
    ref_k = np.unique(allk)
    assert np.array_equal(uk, ref_k)
    assert np.array_equal(keys[fi] + ckey[fp], uk)
    ref_w = np.array([np.log(np.exp(allw[allk == k]).sum()) for k in ref_k])
    np.testing.assert_allclose(lw, ref_w, rtol=0, atol=1e-12)
    # counting groups == np.unique with first index and inverse, then max / add .at
    key = rng.integers(0, 30, 500)
    a = rng.normal(size=500) * 50
    first, inv, g = _exact._group_logsumexp(key, a, 30)
    _, ref_first, ref_inv = np.unique(key, return_index=True, return_inverse=True)
    assert np.array_equal(first, ref_first) and np.array_equal(inv, ref_inv.ravel())
    ref_g = np.array([np.log(np.exp(a[key == k]).sum()) for k in np.unique(key)])
    np.testing.assert_allclose(g, ref_g, rtol=0, atol=1e-12)
    # p(z | α) of repeated count vectors computed once each == row by row
    nk = rng.integers(0, 4, size=(40, 3)).astype(float)
    t = np.linspace(-5.0, 3.0, 7)
    rows = np.vstack([_exact._log_p_z_given_alpha(r[None, :], t) for r in nk])
    assert np.array_equal(_exact._log_p_z_given_alpha(nk, t), rows)
    # a whole posterior through the fallback grouping (np.unique numbering) == counting, and
    # the compiled predictive == the numpy sum over states
    codes = rng.integers(0, 2, size=(9, 3))
    d = np.array([2, 2, 2])
    ex = dpmpm_exact(codes, d, 3)
    monkeypatch.setattr(_exact, "_MAX_DENSE_KEYS", 0)
    ex_fb = dpmpm_exact(codes, d, 3)
    for name in ("log_evidence", "alpha_mean", "p_empty", "k_occupied_mean"):
        assert getattr(ex_fb, name) == pytest.approx(getattr(ex, name), rel=0, abs=1e-12)
    np.testing.assert_allclose(ex_fb.state_post, ex.state_post, rtol=0, atol=1e-12)
    n = ex.nk.astype(float)
    for row in ([0, 0, 0], [1, 0, 1]):
        prod = np.ones(n.shape)
        for j in range(3):
            prod *= (1.0 + ex.stats[:, :, 2 * j + row[j]]) / (2.0 + n)
        plain = np.einsum("t,tk,tk->", ex.state_post, ex._pi_given_state, prod)
        assert ex.predictive(np.array(row)) == pytest.approx(plain, rel=0, abs=1e-12)


def test_log_space_sticks_tiny_shapes_and_exact_moments():
    rng = np.random.default_rng(0)
    from scipy.special import digamma

    # log Gamma(a) for a tiny shape: E[log g] = ψ(a), no underflow although g < 1e-300 is common
    lg = log_gamma_variates(np.full(400_000, 0.001), rng)
    assert np.isfinite(lg).all() and (lg < np.log(1e-300)).mean() > 0.4
    assert lg.mean() == pytest.approx(digamma(0.001), rel=0.01)  # sd of the mean ≈ 1.6
    # V ~ Beta(1, α) with α = 0.02: E[log(1 − V)] = ψ(α) − ψ(1 + α), far below log(1e-12)

    lv, l1 = sample_sticks(np.zeros(200_001), 0.02, rng)
    exact = digamma(0.02) - digamma(1.02)
    assert l1.mean() == pytest.approx(exact, rel=0.02)
    assert np.all(np.logaddexp(lv, l1) == pytest.approx(0.0, abs=1e-12))
    lp = stick_breaking_log_parts(lv[:5], l1[:5])
    assert np.exp(lp).sum() == pytest.approx(1.0)


# ------------------------------------------------------------------------------ DPMPM, K = 2
def _k2_table() -> np.ndarray:
    rng = np.random.default_rng(11)
    codes = rng.integers(0, 2, size=(30, 3))
    codes[:6, 1] = codes[:6, 0]
    return codes


@pytest.mark.slow
def test_dpmpm_k2_posterior_matches_exact():
    """Posterior means of α, π_1, φ, P(a class empty) and two predictive cell probabilities."""
    codes = _k2_table()
    ex = dpmpm_exact(codes, np.array([2, 2, 2]), 2)
    assert ex.p_empty > 0.15  # α is often small here: the regime where clipping biased α
    df = pd.DataFrame(codes, columns=list("abc")).astype(str)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        m = DPMPM(n_components=2, sampling=Sampling(tune=1000, draws=15000, chains=2, cores=1),
                  progressbar=False).fit(df, random_seed=5)
    post = m.posterior_["posterior"]
    phi = ex.phi_mean()
    lpi = np.log(np.clip(post["pi"].values, 1e-320, None))
    lphi = [np.log(post[f"phi_{j}"].values) for j in range(3)]
    checks = {
        "alpha": (post["alpha"].values, ex.alpha_mean),
        "pi_1": (post["pi"].values[..., 0], ex.pi_mean[0]),
        "phi_1a0": (post["phi_0"].values[..., 0, 0], phi[0, 0]),
        "phi_2b0": (post["phi_1"].values[..., 1, 0], phi[1, 2]),
        # k_occupied is the number of classes of the z behind each draw of Θ
        "P(empty)": ((m.posterior_["sample_stats"]["k_occupied"].values < 2) * 1.0, ex.p_empty),
    }
    for row in ([0, 0, 0], [1, 0, 1]):
        terms = [lpi[..., k] + sum(lphi[j][..., k, row[j]] for j in range(3)) for k in range(2)]
        checks[f"pred{row}"] = (np.exp(np.logaddexp(*terms)), ex.predictive(np.array(row)))
    zs = {k: _z(x, e) for k, (x, e) in checks.items()}
    assert max(abs(v) for v in zs.values()) <= Z_MAX, zs


# ------------------------------------------------------------------------------ p_true, end to end
def _exact_p_true(y: np.ndarray, Z: np.ndarray, i: int, d: np.ndarray, K: int) -> float:
    """``p(y_i | Z, y_{-i})`` over the one-variable candidates, uniform prior (marginal mode)."""
    return dpmpm_p_true_exact(y, [Z], i, d, K)


@pytest.mark.slow
def test_dpmpm_p_true_end_to_end_matches_exact_evidence_ratios():
    """Stabilised estimator on the package's own Gibbs draws vs exact evidence ratios.

    n = 20, two binary columns, K = 2, m = 1; 8 replicate fits (fixed seeds); z = replicate
    mean error / its standard error. Before the log-space sticks the same design gave |z| up to
    4 (issue 17).
    """
    from bayes_risk.attribute import attribute_risk

    rng = np.random.default_rng(2024)
    d = np.array([2, 2])
    y = rng.integers(0, 2, size=(20, 2))
    y[:7, 1] = y[:7, 0]
    Z = rng.integers(0, 2, size=(20, 2))
    records = [0, 7, 12]
    truth = np.array([_exact_p_true(y, Z, i, d, 2) for i in records])
    df = pd.DataFrame(y, columns=["a", "b"]).astype(str)
    zf = pd.DataFrame(Z, columns=["a", "b"]).astype(str)
    est = []
    for r in range(8):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            m = DPMPM(n_components=2, sampling=Sampling(tune=300, draws=2000, chains=2, cores=1),
                      progressbar=False).fit(df, random_seed=100 + r)
            res = attribute_risk(df, [zf], model=m, records=records, random_seed=200 + r,
                                 progressbar=False,
                                 estimator=EstimatorSpec(kind="stabilised", bootstrap=0))
        est.append(res.records["p_true"].to_numpy())
    est = np.array(est)
    z = (est.mean(axis=0) - truth) / (est.std(axis=0, ddof=1) / np.sqrt(len(est)))
    assert np.all(np.abs(z) <= 3.0), (truth, est.mean(axis=0), z)
    assert np.all(np.abs(est.mean(axis=0) - truth) < 0.01)


def _replicate_p_true(
    y: np.ndarray,
    datasets: list[np.ndarray],
    records: list[int],
    K: int,
    *,
    reps: int,
    draws: int,
    tune: int | None = 200,
    estimators: tuple[str, ...] = ("stabilised",),
    synthesized: list[str] | None = None,
    synthesized_records: np.ndarray | None = None,
    synthesis_mode: str | None = None,
    seed: int = 0,
) -> dict[str, np.ndarray]:
    """``p_true`` of ``records`` from ``reps`` independent end-to-end runs of the package
    (DPMPM fit, augmented fits, estimator), each with its own seeds: ``{estimator: [reps, R]}``.
    Two chains of ``tune + draws`` sweeps per fit (``tune=None``: the model's default warm-up).
    α mixes within a few sweeps on these tables but the number of occupied classes does not
    (integrated autocorrelation time ≈ 120 sweeps on the K = 3 table of
    :func:`test_dpmpm_p_true_k3_matches_exact_both_estimators`), so a short warm-up can leave
    the start in the kept draws."""
    from bayes_risk.attribute import attribute_risk

    cols = [chr(ord("a") + j) for j in range(y.shape[1])]
    df = pd.DataFrame(y, columns=cols).astype(str)
    zfs = [pd.DataFrame(Z, columns=cols).astype(str) for Z in datasets]
    out: dict[str, list[np.ndarray]] = {e: [] for e in estimators}
    for r in range(reps):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            kw = {} if tune is None else {"tune": tune}
            m = DPMPM(n_components=K, sampling=Sampling(draws=draws, chains=2, cores=1, **kw),
                      synthesis_mode=synthesis_mode, progressbar=False)
            m.fit(df, synthesized=synthesized, records=synthesized_records,
                  random_seed=seed + 1000 * r + 1)
            for e in estimators:
                res = attribute_risk(df, zfs, model=m, records=records,
                                     random_seed=seed + 1000 * r + 2, progressbar=False,
                                     estimator=EstimatorSpec(kind=e, bootstrap=0))
                out[e].append(res.records["p_true"].to_numpy())
    return {e: np.array(v) for e, v in out.items()}


def _structured_table(seed: int, n: int, p: int, tied: int) -> np.ndarray:
    """Binary table whose first ``tied`` rows repeat column 0 in column 1 (and the first
    ``tied // 2`` also in column 2 when there is one): enough association that one and two
    occupied classes both keep posterior mass — the regime where the clipped sticks biased α."""
    rng = np.random.default_rng(seed)
    t = rng.integers(0, 2, size=(n, p))
    t[:tied, 1] = t[:tied, 0]
    if p > 2:
        t[: tied // 2, 2] = t[: tied // 2, 0]
    return t


@pytest.mark.slow
def test_dpmpm_p_true_k2_three_columns_two_datasets_matches_exact():
    """Issue 17, first case: n = 30, three binary columns, K = 2, m = 2.

    Exact ``p_true`` from exact DPMPM posteriors of ``y_{-i}`` and ``y_{-i} ∪ Z_(l)``
    (``_exact.dpmpm_p_true_exact``); 10 replicate end-to-end runs of H = 4,000 draws; |z| ≤ 3
    per record and |mean − exact| ≤ 0.01. With the clipped sticks (``V ≤ 1 − 1e-12``) this
    design gave z = (−3.3, −3.7, 2.9); after the fix (0.9, 0.8, −1.1).
    """
    truth, est = _case_k2_m2()
    check_p_true(est["stabilised"], truth, 0.01)


def _case_k2_m2() -> tuple[np.ndarray, dict[str, np.ndarray]]:
    d = np.array([2, 2, 2])
    y = _structured_table(50, 30, 3, 12)  # P(a class empty | y) = 0.32
    Zs = [_structured_table(s, 30, 3, 12) for s in (150, 250)]
    # records whose p_true moves most between one and two occupied classes (±0.1–0.2)
    records = [2, 0, 17]
    truth = np.array([dpmpm_p_true_exact(y, Zs, i, d, 2) for i in records])
    return truth, _replicate_p_true(y, Zs, records, 2, reps=10, draws=2000, seed=10)


@pytest.mark.slow
def test_dpmpm_p_true_k3_matches_exact_both_estimators():
    """Issue 17, third case: n = 20, two binary columns, K = 3, m = 1 — the stabilised
    estimator and the published importance-sampling estimator (same fits).

    16 replicate runs of H = 4,000 draws; |mean − exact| ≤ 0.01, and the six statistics t (three
    records, two estimators; Student-t with 15 degrees of freedom for an unbiased estimator) are
    held to the Bonferroni bound at a family-wise 1 %, |t| ≤ 3.82 (``_exact.t_bound``). A bound of 3
    for each of six such statistics fails an unbiased estimator about 5 % of the time.

    Measured (label swaps, α given the classes): stabilised errors −0.0020, +0.0029, −0.0027,
    t = (−2.94, 3.65, −2.78); published (−0.71, 0.05, −0.70). The stabilised t are inflated by
    a small replicate sd (0.0027–0.0039, where 60 further replicates give 0.005–0.007 at this
    H) and its three errors move together: they come from the same augmented fits. Those 60
    replicates (docs, methods, the stabilised estimator) give mean errors within 1.4 standard
    errors of zero at H = 2,000, 8,000 and 16,000, at most 0.0016, 0.0008 and 0.0004: no
    finite-draw bias of the size seen here (the logarithm of a mean is biased by < 1e-4 at
    these H). The same seeds with the default 1,000 warm-up sweeps instead of 200 give
    −0.0021, +0.0035, −0.0035 (t = −1.84, 2.19, −2.55): not a warm-up effect either.
    Sensitivity: with the clipped sticks (``V ≤ 1 − 1e-12``) the published estimator gave
    t = (−4.6, 4.8, −5.9), beyond the bound; a bias of ±0.005 in every record's stabilised
    ``p_true`` is beyond it too (checked below on these replicates).
    """
    truth, est = _case_k3()
    bound = t_bound(reps=16, comparisons=6, family_alpha=0.01)
    for e in ("stabilised", "is"):
        check_p_true(est[e], truth, 0.01, z_max=bound)
    for shift in (0.005, -0.005):  # the design has the power to see a bias of 0.005
        with pytest.raises(AssertionError):
            check_p_true(est["stabilised"] + shift, truth, 0.01, z_max=bound)


def _case_k3() -> tuple[np.ndarray, dict[str, np.ndarray]]:
    d = np.array([2, 2])
    y = _structured_table(2024, 20, 2, 7)
    Z = np.random.default_rng(2025).integers(0, 2, size=(20, 2))
    # one record of each of three distinct patterns
    records = [int(np.flatnonzero((y == y[i]).all(axis=1))[0]) for i in (0, 12)]
    records.append(int(next(i for i in range(20) if not (y[i] == y[records]).all(axis=1).any())))
    truth = np.array([dpmpm_p_true_exact(y, [Z], i, d, 3) for i in records])
    return truth, _replicate_p_true(y, [Z], records, 3, reps=16, draws=2000, seed=20,
                                    estimators=("stabilised", "is"))


def _partial_tables(
    n_syn: int, flag_seed: int, unsynthesized: tuple[int, ...] = ()
) -> tuple[np.ndarray, list[np.ndarray], np.ndarray]:
    """n = 30, three binary columns; ``n_syn`` records synthesized; m = 2 released datasets
    (rows not synthesized, and the ``unsynthesized`` columns, are released as they are)."""
    y = _structured_table(50, 30, 3, 12)
    flags = np.zeros(30, dtype=bool)
    flags[np.random.default_rng(flag_seed).choice(30, n_syn, replace=False)] = True
    Zs = []
    for s in (150, 250):
        Z = y.copy()
        Z[flags] = _structured_table(s, 30, 3, 12)[flags]
        Z[:, list(unsynthesized)] = y[:, list(unsynthesized)]
        Zs.append(Z)
    return y, Zs, flags


@pytest.mark.slow
def test_dpmpm_p_true_partial_synthesis_of_records_matches_exact():
    """Partial synthesis, default (marginal) mode: 15 of n = 30 records synthesized, all three
    binary columns, K = 2, m = 2. ``p(Z_(l) | y*, y_{-i})`` involves only the synthesized rows
    of ``Z_(l)``; a record released unchanged has ``p_true = 1`` exactly.

    10 replicate runs of H = 4,000 draws; |z| ≤ 3, |mean − exact| ≤ 0.01. With the clipped
    sticks: z = (−1.2, −1.5, 4.1); after the fix (−0.8, −0.4, 1.0).
    """
    truth, est = _case_partial_records()
    est = est["stabilised"]
    assert np.all(est[:, -1] == 1.0)
    check_p_true(est[:, :-1], truth, 0.01)


def _case_partial_records() -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """The last record is released unchanged (not in ``truth``)."""
    d = np.array([2, 2, 2])
    y, Zs, flags = _partial_tables(15, 34)
    records = [2, 0, 12]  # p_true moves by 0.22, 0.18, −0.09 between one and two classes
    assert flags[records].all()
    truth = np.array([dpmpm_p_true_exact(y, Zs, i, d, 2, rows=flags) for i in records])
    unchanged = int(np.flatnonzero(~flags)[0])
    return truth, _replicate_p_true(y, Zs, records + [unchanged], 2, reps=10, draws=2000,
                                    seed=30, synthesized_records=flags)


@pytest.mark.slow
def test_dpmpm_p_true_conditional_us_matches_exact_augmented_target():
    """Partial synthesis in ``conditional_us`` mode: column ``a`` unsynthesized, ``b`` and
    ``c`` synthesized for 15 of n = 30 records, K = 2, m = 2; candidates vary ``b`` and ``c``.

    Reference: the exact value of what the package estimates. Its augmented fit appends the
    synthetic rows as full records (``DPMPM.fit_augmented``, documented approximation), so its
    target is the evidence ratio with ``Z_(l)`` as full records — computed exactly here, so no
    extra tolerance is needed. The target under the conditional likelihood
    ``Π_r p(z_r^S | z_r^US, Θ)`` differs from it by 0.0004, −0.0001, 0.0007 (± 0.0005) on these
    records (measured with exact i.i.d. draws of the full-record posterior reweighted by
    ``1 / Π_r p(z_r^US | Θ)``; issue 17: ≤ 0.0007), a fifth of this test's standard error.
    10 replicate runs of H = 4,000 draws; |z| ≤ 3, |mean − exact| ≤ 0.01. With the clipped
    sticks: z = (1.0, −2.8, 3.3); after the fix (−0.8, −1.0, 1.1).
    """
    truth, est = _case_conditional_us()
    check_p_true(est["stabilised"], truth, 0.01)


def _case_conditional_us() -> tuple[np.ndarray, dict[str, np.ndarray]]:
    d = np.array([2, 2, 2])
    y, Zs, flags = _partial_tables(15, 32, unsynthesized=(0,))
    records = [17, 2, 14]
    assert flags[records].all()
    truth = np.array([dpmpm_p_true_exact(y, Zs, i, d, 2, vary=[1, 2], rows=flags)
                      for i in records])
    return truth, _replicate_p_true(y, Zs, records, 2, reps=10, draws=2000, seed=40,
                                    synthesized=["b", "c"], synthesized_records=flags,
                                    synthesis_mode="conditional_us")


# ------------------------------------------------------------------------------ Poisson mixture
@pytest.mark.slow
def test_poisson_mixture_k2_posterior_matches_exact():
    """MP model, K = 2, one count column of 12 records: α, P(a class empty) and the posterior
    predictive of three values vs the exact posterior (log-space sticks are shared with DPMPM)."""
    from _exact import poisson_predictive

    y = np.array([0, 1, 1, 2, 2, 3, 3, 4, 5, 6, 7, 9])[:, None]  # P(a class empty) ≈ 0.29
    b = 1.0 / max(1.0, y.mean())
    ex = poisson_mixture_exact(y, 2, a_lambda=1.0, b_lambda=np.array([b]))
    df = pd.DataFrame({"y": y[:, 0]})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = PoissonMixture(variant="mp", n_components=2,
                           sampling=Sampling(tune=1000, draws=10000, chains=2, cores=1),
                           progressbar=False).fit(df, random_seed=3)
    post = m.posterior_["posterior"]
    w = post["w"].transpose("chain", "draw", "component").values
    lam = post["lam"].transpose("chain", "draw", "component", "column").values[..., 0]
    from scipy.stats import poisson

    checks = {
        "alpha": (post["alpha"].values, ex.alpha_mean),
        "P(empty)": ((m.posterior_["sample_stats"]["n_occupied"].values < 2) * 1.0, ex.p_empty),
    }
    for v in (1, 4, 9):
        pred = (w * poisson.pmf(v, lam)).sum(axis=-1)
        checks[f"pred({v})"] = (pred, poisson_predictive(ex, np.array([v]), a_lambda=1.0,
                                                         b_lambda=np.array([b])))
    zs = {k: _z(x, e) for k, (x, e) in checks.items()}
    assert max(abs(v) for v in zs.values()) <= Z_MAX, zs


def test_poisson_mixture_augmented_fit_keeps_the_base_prior_rate():
    """K = 1: λ | y, Z ~ Gamma(a + Σy + ΣZ, b + 2n) with the base fit's default
    b = 1 / max(1, mean y) — not b recomputed on y ∪ Z (issue 17)."""
    y = pd.DataFrame({"y": [1, 2, 3, 4, 5]})
    z = pd.DataFrame({"y": [10, 10, 10, 10, 10]})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = PoissonMixture(variant="mp", n_components=1,
                           sampling=Sampling(tune=100, draws=2000, chains=2, cores=1),
                           progressbar=False).fit(y, random_seed=1)
        aug = m.fit_augmented(y, z, random_seed=2)
    lam = aug.posterior_["posterior"]["lam"].values[..., 0, 0]
    shape = 1.0 + 15 + 50
    exact = shape / (1.0 / 3.0 + 10)
    wrong = shape / (1.0 / 6.5 + 10)  # prior rate from the mean of y ∪ Z
    assert abs(_z(lam, exact)) <= Z_MAX
    assert abs(_z(lam, wrong)) > 5
