"""Log-space helpers and the tolerance rule for ties (SPEC §0.2, Appendix A.1)."""

from __future__ import annotations

import numpy as np
from scipy.special import logsumexp as _scipy_logsumexp

__all__ = ["logsumexp", "normalise_log", "ties", "log_ties", "TIE_RTOL", "TIE_ATOL"]

TIE_RTOL = 1e-9
TIE_ATOL = 1e-15
LOG_TIE_ATOL = 1e-9


def logsumexp(a: np.ndarray, axis: int | tuple[int, ...] | None = None) -> np.ndarray:
    """``log(sum(exp(a)))`` computed stably; all ``-inf`` gives ``-inf`` (never ``nan``)."""
    a = np.asarray(a, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = _scipy_logsumexp(a, axis=axis)
    return out


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
