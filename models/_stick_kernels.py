"""Compiled kernels of the stick-breaking concentration update (kept apart from ``_stick`` so
that importing the models does not import numba)."""

from __future__ import annotations

import math

from numba import njit

__all__ = ["log_prior_counts", "slice_log_alpha"]


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
def slice_log_alpha(nk, alpha, a_alpha, b_alpha, width, rng):  # pragma: no cover - numba
    t0 = math.log(alpha)
    level = _log_target(t0, nk, a_alpha, b_alpha) + math.log(1.0 - rng.random())
    lo = t0 - width * rng.random()
    hi = lo + width
    for _ in range(50):  # stepping out
        if _log_target(lo, nk, a_alpha, b_alpha) < level:
            break
        lo -= width
    for _ in range(50):
        if _log_target(hi, nk, a_alpha, b_alpha) < level:
            break
        hi += width
    for _ in range(200):  # shrinkage
        t = lo + (hi - lo) * rng.random()
        if _log_target(t, nk, a_alpha, b_alpha) >= level:
            return math.exp(t)
        if t < t0:
            lo = t
        else:
            hi = t
    return alpha
