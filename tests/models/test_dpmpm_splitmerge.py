"""DPMPM merge–split moves against exact enumeration (issue 10 item 1).

One move (``models/dpmpm/splitmerge.py``) must leave the collapsed target ``p(z | α, y)``
invariant. On tables small enough to list every allocation ``z ∈ {0..K-1}^n`` the move is
applied ``M_s ∝ p(s)`` times from every state ``s`` and the one-step distribution
``Σ_s p(s) T̂(s, ·)`` is compared with ``p`` state by state (binomial standard errors, as
``test_dpmpm_labels``). A merge–split move with the Hastings factor inverted (``q`` instead of
``1/q`` for a split) fails this check with |z| far above the tolerance (the sensitivity check
below uses a target whose label prior is reversed, which the move must also fail).
The whole sampler with the move is compared with the exact posterior (``tests/_exact.py``).
"""

from __future__ import annotations

import warnings

import arviz_stats
import numpy as np
import pandas as pd
import pytest
from _exact import collapsed_log_posterior, dpmpm_exact
from numba import njit

from bayes_risk.exceptions import ConvergenceWarning
from bayes_risk.models import DPMPM, Sampling
from bayes_risk.models._bayesian.stick_kernels import log_prior_counts
from bayes_risk.models.dpmpm.kernels import counts
from bayes_risk.models.dpmpm.splitmerge import split_merge

Z_TOL = 4.5  # |z| per state; several hundred states compared, fixed seeds


@njit(cache=False)
def _transitions(y, y_fix, z_fix, d, offsets, K, alpha, M, rng):  # M[s]: moves from state s
    n = y.shape[0]
    L = offsets[-1] + d[-1]
    S = K**n
    T = np.zeros((S, S))
    z0 = np.empty(n, dtype=np.int64)
    acc = 0
    nf = y_fix.shape[0]
    for s in range(S):
        x = s
        for i in range(n):
            z0[i] = x % K
            x //= K
        nk0, c0 = counts(y, z0, offsets, L, K)
        if nf:
            nk1, c1 = counts(y_fix, z_fix, offsets, L, K)
            nk0 += nk1
            c0 += c1
        for _ in range(M[s]):
            z = z0.copy()
            nk = nk0.copy()
            c = c0.copy()
            acc += split_merge(y, z, c, nk, d, offsets, alpha, 1.0, 1, rng)
            t = 0
            for i in range(n - 1, -1, -1):
                t = t * K + z[i]
            T[s, t] += 1.0
            # the counts handed back are those of the new state
            nk2, c2 = counts(y, z, offsets, L, K)
            if nf:
                nk3, c3 = counts(y_fix, z_fix, offsets, L, K)
                nk2 += nk3
                c2 += c3
            for k in range(K):
                if nk2[k] != nk[k]:
                    raise AssertionError("class sizes out of step")
            for r in range(L):
                for k in range(K):
                    if c2[r, k] != c[r, k]:
                        raise AssertionError("level counts out of step")
    return T, acc


def _states(n: int, K: int) -> np.ndarray:
    s = np.arange(K**n)
    return np.stack([(s // K**i) % K for i in range(n)], axis=1).astype(np.int64)


def _one_step_z(logp, y, y_fix, z_fix, d, offsets, K, alpha, seed=11):
    p = np.exp(logp - logp.max())
    p /= p.sum()
    M = np.maximum(20, np.round(200_000 * p)).astype(np.int64)
    cnt, acc = _transitions(y, y_fix, z_fix, d, offsets, K, alpha, M, np.random.default_rng(seed))
    T = cnt / M[:, None]
    moved = 1.0 - float(np.sum(p * np.diag(T)))
    Ts = (cnt + 0.5) / (M[:, None] + 1.0)  # smoothed: an unseen transition has variance too
    se = np.sqrt((p[:, None] ** 2 * Ts * (1 - Ts) / M[:, None]).sum(axis=0))
    z = (p @ T - p) / se
    return z[p > 1e-3], moved


def _target(y, y_fix, z_fix, d, offsets, K, alpha):
    states = _states(len(y), K)
    y_all = np.vstack([y, y_fix]).astype(np.int64)
    return states, np.array([
        collapsed_log_posterior(y_all, np.concatenate([s, z_fix]), d, K, alpha, 1.0)
        for s in states])


_Y = np.array([[0, 0], [0, 0], [0, 1], [1, 1], [1, 1], [1, 2]], dtype=np.int64)
_D = np.array([2, 3], dtype=np.int64)
_OFF = np.array([0, 2], dtype=np.int64)


@pytest.mark.parametrize("K, alpha", [(3, 0.8), (4, 2.0)])
def test_merge_split_leaves_collapsed_posterior_invariant(K, alpha):
    y = _Y if K == 3 else _Y[:5]
    none = np.zeros((0, 2), dtype=np.int64)
    states, logp = _target(y, none, np.zeros(0, np.int64), _D, _OFF, K, alpha)
    z, moved = _one_step_z(logp, y, none, np.zeros(0, np.int64), _D, _OFF, K, alpha)
    assert moved > 0.05, moved  # the move is not a no-op on this table
    assert np.max(np.abs(z)) < Z_TOL, np.max(np.abs(z))
    # sensitivity: against a target whose label prior is reversed the same move is far off
    nk = np.stack([np.bincount(s, minlength=K) for s in states])
    wrong = logp - 2 * np.array([log_prior_counts(k, alpha) for k in nk])
    z_wrong, _ = _one_step_z(wrong, y, none, np.zeros(0, np.int64), _D, _OFF, K, alpha)
    assert np.max(np.abs(z_wrong)) > 10


def test_merge_split_with_fixed_counts_leaves_conditional_invariant():
    """Counts that never move (the augmented records of structural zeros) in classes 0 and 2."""
    K, alpha = 3, 1.2
    y = _Y[:5]
    y_fix = np.array([[1, 2], [0, 0], [1, 1]], dtype=np.int64)
    z_fix = np.array([0, 2, 0], dtype=np.int64)
    _, logp = _target(y, y_fix, z_fix, _D, _OFF, K, alpha)
    z, moved = _one_step_z(logp, y, y_fix, z_fix, _D, _OFF, K, alpha, seed=5)
    assert moved > 0.02, moved
    assert np.max(np.abs(z)) < Z_TOL, np.max(np.abs(z))


def test_merge_split_keeps_counts_and_changes_the_class_count():
    rng = np.random.default_rng(3)
    # two well-separated groups started as one class: a split is accepted quickly
    y = np.concatenate([np.zeros((100, 4)), np.full((100, 4), 2)]).astype(np.int64)
    offsets = np.arange(0, 12, 3, dtype=np.int64)
    d = np.full(4, 3, dtype=np.int64)
    K = 10
    z = np.zeros(200, dtype=np.int64)
    nk, c = counts(y, z, offsets, 12, K)
    acc = split_merge(y, z, c, nk, d, offsets, 1.0, 1.0, 50, rng)
    nk2, c2 = counts(y, z, offsets, 12, K)
    assert acc >= 1 and np.array_equal(nk, nk2) and np.array_equal(c, c2)
    assert np.count_nonzero(nk2) >= 2
    mode = [np.bincount(z[:100]).argmax(), np.bincount(z[100:]).argmax()]
    assert mode[0] != mode[1]  # the two groups were split apart
    assert (z[:100] == mode[0]).mean() > 0.8 and (z[100:] == mode[1]).mean() > 0.8


def test_prior_span_differences_equal_full_prior_differences():
    from bayes_risk.models.dpmpm.splitmerge import _log_prior_span

    rng = np.random.default_rng(0)
    for _ in range(50):
        K = int(rng.integers(2, 12))
        nk = rng.integers(0, 5, size=K).astype(np.int64)
        lo, hi = sorted(rng.choice(K, size=2, replace=False))
        nk2 = nk.copy()
        nk2[lo], nk2[hi] = nk[lo] + nk[hi], 0
        full = log_prior_counts(nk2, 0.7) - log_prior_counts(nk, 0.7)
        span = _log_prior_span(nk2, 0.7, lo, hi) - _log_prior_span(nk, 0.7, lo, hi)
        assert span == pytest.approx(full, abs=1e-10)


def _z(x: np.ndarray, exact: float) -> float:
    x = np.asarray(x, dtype=np.float64)
    ess = float(arviz_stats.ess(x, method="mean"))
    return float((x.mean() - exact) / (x.std() / np.sqrt(ess)))


@pytest.mark.slow
def test_sampler_with_merge_split_matches_exact_posterior_k3():
    """The whole Gibbs sweep (merge–split moves included) against exact enumeration, K = 3.

    n = 24, three binary columns with two clear groups; P(a class empty | y), E[α | y],
    E[k* | y] and E[π_1 | y] from 2 chains × 12,000 kept sweeps; |z| <= 3.5 with ESS-based
    standard errors (four quantities, fixed seed).
    """
    rng = np.random.default_rng(8)
    g = rng.random(24) < 0.5
    codes = np.where(rng.random((24, 3)) < 0.85, g[:, None], ~g[:, None]).astype(np.int64)
    ex = dpmpm_exact(codes, np.array([2, 2, 2]), 3)
    assert 0.2 < ex.p_empty < 0.9  # both one/two-class and three-class states matter
    df = pd.DataFrame(codes, columns=list("abc")).astype(str)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        m = DPMPM(n_components=3, sampling=Sampling(tune=500, draws=12_000, chains=2, cores=1),
                  progressbar=False).fit(df, random_seed=21)
    k = m.posterior_["sample_stats"]["k_occupied"].values
    checks = {
        "P(empty)": ((k < 3) * 1.0, ex.p_empty),
        "alpha": (m.posterior_["posterior"]["alpha"].values, ex.alpha_mean),
        "k*": (k * 1.0, ex.k_occupied_mean),
        "pi_1": (m.posterior_["posterior"]["pi"].values[..., 0], ex.pi_mean[0]),
    }
    zs = {name: _z(x, e) for name, (x, e) in checks.items()}
    assert max(abs(v) for v in zs.values()) <= 3.5, zs
