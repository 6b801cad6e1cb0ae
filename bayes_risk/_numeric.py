"""Log-space helpers and the tolerance rule for ties (SPEC §0.2, Appendix A.1)."""

from __future__ import annotations

import numpy as np
from scipy.special import logsumexp as _scipy_logsumexp

__all__ = ["logsumexp", "normalise_log", "ties", "log_ties", "TIE_RTOL", "TIE_ATOL"]

TIE_RTOL = 1e-9
TIE_ATOL = 1e-15
LOG_TIE_ATOL = 1e-9


def logsumexp(a: np.ndarray, axis: int | tuple[int, ...] | None = None) -> np.ndarray:
    """``log(sum(exp(a)))`` computed stably; all ``-inf`` gives ``-inf`` (never ``nan``).

    A plain-numpy implementation (max shift, SPEC Appendix A.1): it gives scipy's result without
    scipy's per-call array-API overhead, which dominates for the millions of short vectors of the
    risk engines. ``nan`` propagates; ``+inf`` gives ``+inf``.
    """
    a = np.asarray(a, dtype=np.float64)
    if a.size == 0:
        return _scipy_logsumexp(a, axis=axis)
    m = np.max(a, axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        out = np.log(np.sum(np.exp(a - m), axis=axis, keepdims=True)) + m
    if axis is None:
        return out.reshape(())[()]
    return np.squeeze(out, axis=axis)


def normalise_log(a: np.ndarray, axis: int = -1) -> np.ndarray:
    """Return ``exp(a - logsumexp(a))`` along ``axis``; rows that are all ``-inf`` give ``nan``."""
    a = np.asarray(a, dtype=np.float64)
    lse = logsumexp(a, axis=axis)
    lse_b = np.expand_dims(lse, axis)
    with np.errstate(invalid="ignore"):
        out = np.exp(a - lse_b)
    bad = ~np.isfinite(lse_b)
    if np.any(bad):
        out = np.where(np.broadcast_to(bad, out.shape), np.nan, out)
    return out


def ties(
    a: np.ndarray | float, b: np.ndarray | float, rtol: float = TIE_RTOL, atol: float = TIE_ATOL
) -> np.ndarray:
    """``a`` ties ``b`` on the probability scale: ``|a-b| <= rtol*max(|a|,|b|) + atol``."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    return np.abs(a - b) <= rtol * np.maximum(np.abs(a), np.abs(b)) + atol


def log_ties(la: np.ndarray | float, lb: np.ndarray | float, atol: float = LOG_TIE_ATOL) -> np.ndarray:
    """``a`` ties ``b`` on the log scale: ``|log a - log b| <= 1e-9`` (``-inf`` ties ``-inf``)."""
    la = np.asarray(la, dtype=np.float64)
    lb = np.asarray(lb, dtype=np.float64)
    both_ninf = np.isneginf(la) & np.isneginf(lb)
    with np.errstate(invalid="ignore"):
        close = np.abs(la - lb) <= atol
    return both_ninf | close
