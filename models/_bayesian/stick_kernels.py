"""Compiled kernels of the stick-breaking concentration update (kept apart from ``sticks``
so that importing the models does not import numba)."""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from bayes_risk.models._bayesian.generator import generator_of

__all__ = [
    "gamma_variates",
    "label_switch_draws",
    "label_switch_kernel",
    "log_prior_counts",
    "slice_log_alpha",
    "stick_log_parts",
    "stick_variates",
]


@njit(cache=True)
def log_prior_counts(nk, alpha):  # pragma: no cover - numba
    """``log p(z | α)`` of truncated stick breaking with the sticks integrated out, from the
    class sizes: ``Σ_{k<K} [log B(1 + n_k, α + m_k) − log B(1, α)]``, ``m_k = Σ_{h>k} n_h``."""
    K = nk.shape[0]
    out = 0.0
    m = 0.0
    lb1 = -math.log(alpha)  # log B(1, α)
    for k in range(K - 1, -1, -1):
        if k < K - 1:
            a = 1.0 + nk[k]
            b = alpha + m
            out += math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b) - lb1
        m += nk[k]
    return out


@njit(cache=True)
def _log_target(t, nk, a_alpha, b_alpha):  # pragma: no cover - numba
    alpha = math.exp(t)
    return (a_alpha - 1.0) * t - b_alpha * alpha + log_prior_counts(nk, alpha) + t


@njit(cache=True)
def _log_target_below(t, t_max, nk, a_alpha, b_alpha):  # pragma: no cover - numba
    # the target times 1{t <= t_max}: t_max = inf leaves every comparison as it was
    if t > t_max:
        return -math.inf
    return _log_target(t, nk, a_alpha, b_alpha)


@njit(cache=True)
def slice_log_alpha(nk, alpha, a_alpha, b_alpha, width, t_max, rng):  # pragma: no cover - numba
    """One slice update of ``t = log α`` (stepping out, shrinkage) on ``p(α | z)`` restricted
    to ``t <= t_max`` (``inf``: unrestricted); ``log α`` must satisfy the restriction."""
    t0 = math.log(alpha)
    level = _log_target_below(t0, t_max, nk, a_alpha, b_alpha) + math.log(1.0 - rng.random())
    lo = t0 - width * rng.random()
    hi = lo + width
    for _ in range(50):  # stepping out
        if _log_target_below(lo, t_max, nk, a_alpha, b_alpha) < level:
            break
        lo -= width
    for _ in range(50):
        if _log_target_below(hi, t_max, nk, a_alpha, b_alpha) < level:
            break
        hi += width
    for _ in range(200):  # shrinkage
        t = lo + (hi - lo) * rng.random()
        if _log_target_below(t, t_max, nk, a_alpha, b_alpha) >= level:
            return math.exp(t)
        if t < t0:
            lo = t
        else:
            hi = t
    return alpha


@njit(cache=True, inline="always")
def _swap(x, a, b):  # pragma: no cover - numba
    tmp = x[a]
    x[a] = x[b]
    x[b] = tmp


@njit(cache=True)
def label_switch_kernel(nk, log_v, log_1mv, j, l, log_u1, js, log_u):  # pragma: no cover
    """The moves of ``sticks.label_switch_moves`` given their random numbers (``j < 0``: no move
    1), with numpy's operations in numpy's order; returns ``new_label``."""
    K = nk.shape[0]
    n = np.empty(K)
    for k in range(K):
        n[k] = nk[k]
    lv = log_v.copy()
    l1 = log_1mv.copy()
    inv = np.arange(K)  # inv[new] = old
    if j >= 0:
        # log π_j and log π_l as stick_breaking_log_parts forms them
        lpj = 0.0
        lpl = 0.0
        cum = 0.0
        for h in range(K):
            if h == K - 1:
                lp = cum
            elif h == 0:
                lp = lv[0] + 0.0
            else:
                lp = lv[h] + cum
            if h == j:
                lpj = lp
            if h == l:
                lpl = lp
            if h < K - 1:
                cum = l1[0] if h == 0 else cum + l1[h]
        logr = (n[l] - n[j]) * (lpj - lpl)
        if log_u1 < logr:
            _swap(n, j, l)
            _swap(inv, j, l)
    for t in range(js.shape[0]):
        a = js[t]
        b = a + 1
        if n[a] == 0 and n[b] == 0:
            continue  # a swap of two empty classes changes nothing that is kept
        logr = n[a] * l1[b] - n[b] * l1[a]
        if log_u[t] < logr:
            _swap(n, a, b)
            _swap(lv, a, b)
            _swap(l1, a, b)
            _swap(inv, a, b)
    new_label = np.empty(K, dtype=np.int64)
    for k in range(K):
        new_label[inv[k]] = k
    return new_label


@njit(cache=True)
def label_switch_draws(nk, handle):  # pragma: no cover - numba
    """The random numbers of ``sticks.label_switch_moves`` in numpy's order and algorithms (move
    1's pair as ``rng.choice(occupied, 2, replace=False)``, Floyd's algorithm). Returns
    ``(j, l, js, r)``, ``j = l = -1`` without move 1; the caller takes ``log(1 − r)``."""
    rng = generator_of(handle)
    K = nk.shape[0]
    n = 0
    for k in range(K):
        if nk[k] > 0:
            n += 1
    m = K - 2 if K >= 3 else 0
    r = np.zeros(1 + m)
    j = l = -1
    if n >= 2:
        occ = np.empty(n, dtype=np.int64)
        i = 0
        for k in range(K):
            if nk[k] > 0:
                occ[i] = k
                i += 1
        a = rng.integers(0, n - 1)
        b = rng.integers(0, n)
        if b == a:
            b = n - 1
        if rng.integers(0, 2) == 0:
            a, b = b, a
        j, l = occ[a], occ[b]
        r[0] = rng.random()
    js = np.empty(m, dtype=np.int64)
    for t in range(m):
        js[t] = rng.integers(0, K - 2)
    for t in range(m):
        r[1 + t] = rng.random()
    return j, l, js, r


@njit(cache=True, nogil=True)
def gamma_variates(shape, rng):  # pragma: no cover - numba
    """``rng.standard_gamma(shape)`` element by element in C order: numpy's draws bit for bit."""
    flat = shape.ravel()
    out = np.empty(flat.shape[0])
    for i in range(flat.shape[0]):
        out[i] = rng.standard_gamma(flat[i])
    return out.reshape(shape.shape)


@njit(cache=True, nogil=True)
def stick_variates(nk, alpha, rng):  # pragma: no cover - numba
    """The random numbers of ``sticks.sample_sticks(nk, alpha, rng)``, in its order:
    ``(a, g_a, u_a, b, g_b, u_b)`` for ``sticks.sticks_and_weights_from_variates``."""
    K = nk.shape[0]
    a = np.empty(K - 1)
    b = np.empty(K - 1)
    tail = 0.0  # Σ_{h>=k} n_h: whole numbers, exact in any order
    for k in range(K - 1, 0, -1):
        tail += nk[k]
        b[k - 1] = alpha + tail
    for k in range(K - 1):
        a[k] = 1.0 + nk[k]
    g_a, u_a = _log_gamma_draws(a, rng)
    g_b, u_b = _log_gamma_draws(b, rng)
    return a, g_a, u_a, b, g_b, u_b


@njit(cache=True, nogil=True)
def _log_gamma_draws(shape, rng):  # pragma: no cover - numba
    n = shape.shape[0]
    g = np.empty(n)
    u = np.empty(n)
    for i in range(n):
        s = shape[i]
        g[i] = rng.standard_gamma(s + 1.0 if s < 1.0 else s)
    for i in range(n):
        u[i] = rng.random()
    return g, u


@njit(cache=True)
def stick_log_parts(lg1, lg2, tot):  # pragma: no cover - numba
    """``(log V, log(1 − V), log π)`` from the sticks' log-Gamma variates, with the operations
    of ``sticks`` in the same order (the same numbers bit for bit)."""
    m = lg1.shape[0]
    log_v = np.empty(m)
    log_1mv = np.empty(m)
    for k in range(m):
        log_v[k] = lg1[k] - tot[k]
        log_1mv[k] = lg2[k] - tot[k]
    log_pi = np.empty(m + 1)
    if m == 0:
        log_pi[0] = 0.0
        return log_v, log_1mv, log_pi
    log_pi[0] = log_v[0] + 0.0  # as lv + head: -0.0 + 0.0 is +0.0
    cum = log_1mv[0]
    for k in range(1, m):
        log_pi[k] = log_v[k] + cum
        cum += log_1mv[k]
    log_pi[m] = cum
    return log_v, log_1mv, log_pi
