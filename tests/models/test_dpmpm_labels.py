"""The DPMPM label swaps leave their target invariant (exact enumeration; issue 10 item 1).

On a table small enough to enumerate every allocation ``z ∈ {0..K-1}^n``, the exact target
``p(z | α, y)`` (sticks and category probabilities integrated out) is computed for each state;
one call of the label swaps is applied ``M_s`` times from every state ``s`` (``M_s ∝ p(s)``), and
the one-step distribution ``Σ_s p(s) T̂(s, ·)`` is compared with ``p`` state by state, with the
binomial standard error of ``T̂``. Swaps accepted with the inverse prior ratio fail this with
|z| far above the tolerance (checked below).
"""

from __future__ import annotations

import math

import numpy as np
from _exact import collapsed_log_posterior
from numba import njit

from bayes_risk.models.dpmpm.kernels import counts
from bayes_risk.models.dpmpm.labels import relabel


@njit(cache=False)
def _transitions(y, d, offsets, K, alpha, M, rng):  # M[s]: calls from state s
    n = y.shape[0]
    L = offsets[-1] + d[-1]
    S = K**n
    T = np.zeros((S, S))
    z0 = np.empty(n, dtype=np.int64)
    for s in range(S):
        x = s
        for i in range(n):
            z0[i] = x % K
            x //= K
        nk0, c0 = counts(y, z0, offsets, L, K)
        for _ in range(M[s]):
            z = z0.copy()
            relabel(z, c0.copy(), nk0.copy(), alpha, 1, rng)
            t = 0
            for i in range(n - 1, -1, -1):
                t = t * K + z[i]
            T[s, t] += 1.0
    return T


def _states(n: int, K: int) -> np.ndarray:
    s = np.arange(K**n)
    return np.stack([(s // K**i) % K for i in range(n)], axis=1).astype(np.int64)


def _one_step_z(logp: np.ndarray, y, d, offsets, K, alpha) -> tuple[np.ndarray, float]:
    p = np.exp(logp - logp.max())
    p /= p.sum()
    M = np.maximum(20, np.round(200_000 * p)).astype(np.int64)
    cnt = _transitions(y, d, offsets, K, alpha, M, np.random.default_rng(11))
    T = cnt / M[:, None]
    moved = 1.0 - float(np.sum(p * np.diag(T)))
    Ts = (cnt + 0.5) / (M[:, None] + 1.0)  # smoothed: an unseen transition has variance too
    se = np.sqrt((p[:, None] ** 2 * Ts * (1 - Ts) / M[:, None]).sum(axis=0))
    z = (p @ T - p) / se
    return z[p > 1e-3], moved


def test_label_swaps_leave_collapsed_posterior_invariant():
    y = np.array([[0, 0], [0, 0], [0, 1], [1, 1], [1, 1], [1, 2]], dtype=np.int64)
    d = np.array([2, 3], dtype=np.int64)
    offsets = np.array([0, 2], dtype=np.int64)
    K, alpha = 3, 0.8
    states = _states(len(y), K)
    logp = np.array([collapsed_log_posterior(y, z, d, K, alpha, 1.0) for z in states])
    z, moved = _one_step_z(logp, y, d, offsets, K, alpha)
    assert moved > 0.05, moved  # the swaps are not a no-op on this table
    assert np.max(np.abs(z)) < 4.5, np.max(np.abs(z))
    # sensitivity: against a target whose label prior is reversed the same swaps are far off
    from bayes_risk.models._bayesian.stick_kernels import log_prior_counts

    nk = np.stack([np.bincount(s, minlength=K) for s in states])
    wrong = logp - 2 * np.array([log_prior_counts(k, alpha) for k in nk])
    z_wrong, _ = _one_step_z(wrong, y, d, offsets, K, alpha)
    assert np.max(np.abs(z_wrong)) > 10


def test_label_swaps_keep_counts_consistent():
    rng = np.random.default_rng(3)
    y = rng.integers(0, 3, size=(200, 4)).astype(np.int64)
    offsets = np.arange(0, 12, 3, dtype=np.int64)
    K = 10
    z = rng.integers(0, 4, size=200).astype(np.int64)
    nk, c = counts(y, z, offsets, 12, K)
    relabel(z, c, nk, 1.0, 100, rng)
    nk2, c2 = counts(y, z, offsets, 12, K)
    assert np.array_equal(nk, nk2) and np.array_equal(c, c2)
    assert np.flatnonzero(nk2).max() < 9  # occupied labels moved towards the front


def _relabel_full(nk, alpha, n_props, rng):
    """The label swaps with the prior evaluated in full for every proposal (reference)."""
    from bayes_risk.models._bayesian.stick_kernels import log_prior_counts

    nk = nk.copy()
    K = nk.size
    inv = np.arange(K)
    lp = log_prior_counts(nk, alpha)
    for _ in range(n_props):
        k = int(rng.random() * K)
        l = int(rng.random() * (K - 1))
        l += l >= k
        u = rng.random()
        if nk[k] == nk[l]:
            continue
        nk[[k, l]] = nk[[l, k]]
        lp_new = log_prior_counts(nk, alpha)
        if math.log(1.0 - u) < lp_new - lp:
            lp = lp_new
            inv[[k, l]] = inv[[l, k]]
        else:
            nk[[k, l]] = nk[[l, k]]
    return nk, inv


def test_label_swaps_make_the_decisions_of_the_full_prior():
    """:func:`relabel` re-evaluates only the prior terms between the swapped labels: the same
    values, hence the same decisions and permutation, as evaluating the prior in full."""
    for seed in range(300):
        g = np.random.default_rng(seed)
        K = int(g.integers(2, 90))
        z = np.minimum(g.geometric(float(g.choice([0.05, 0.3])), 400) - 1, K - 1).astype(np.int64)
        nk = np.bincount(z, minlength=K).astype(np.int64)
        c = g.random((3, K))
        alpha = float(g.choice([0.05, 0.7, 4.0, 60.0]))
        want_nk, inv = _relabel_full(nk, alpha, 2 * K, np.random.default_rng(seed))
        got = relabel(z.copy(), c.copy(), nk, alpha, 2 * K, np.random.default_rng(seed))
        assert np.array_equal(nk, want_nk), seed
        assert np.array_equal(got[inv], np.arange(K)), seed
