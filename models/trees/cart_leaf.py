"""Closed-form CART leaf likelihoods (Pólya urn, truncated Gaussian kernel). See
:doc:`/methods/attribute`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numba as _nb
import numpy as np
from scipy.special import gammaln, log_ndtr

from bayes_risk._constraints import InstanceOf, Interval, SequenceOf, check_value, check_vector
from bayes_risk._numeric import logsumexp
from bayes_risk.exceptions import ValidationError


def polya_logprob(donor_values: Sequence[Any], synthetic_values: Sequence[Any]) -> float:
    """Log-probability of an ordered sequence of synthetic values drawn from one leaf, the
    Pólya urn ``P = Γ(n_L)/Γ(n_L + u_L) · Π_c Γ(n_c + s_c)/Γ(n_c)`` (Reiter 2005).

    Parameters
    ----------
    donor_values : sequence
        Confidential values of the leaf's ``n_L`` training records (compared exactly).
    synthetic_values : sequence
        Synthetic values of the ``u_L`` records routed to the leaf.

    Returns
    -------
    float
        ``log P``; ``-inf`` when a synthetic value is not among the donors.

    Raises
    ------
    ValidationError
        If there are no donors.

    Examples
    --------
    >>> round(float(np.exp(polya_logprob(["a", "a", "a", "b"], ["a", "b"]))), 6)
    0.15
    """
    donors = np.asarray(check_value(np.asarray(donor_values, dtype=object).ravel().tolist(),
                                    SequenceOf(InstanceOf(object, "a value"), "donor values"),
                                    "donor_values"), dtype=object)
    syn = np.asarray(synthetic_values, dtype=object).ravel()
    if syn.size == 0:
        return 0.0
    levels, n_c = np.unique(np.asarray(donors.tolist()), return_counts=True)
    lookup = {v: k for k, v in enumerate(levels.tolist())}
    s_c = np.zeros(levels.size, dtype=np.int64)
    for v in np.asarray(syn.tolist()).tolist():
        k = lookup.get(v)
        if k is None:
            return float("-inf")
        s_c[k] += 1
    n_l, u_l = donors.size, syn.size
    return float(gammaln(n_l) - gammaln(n_l + u_l) + np.sum(gammaln(n_c + s_c) - gammaln(n_c)))


def log_ndtr_diff(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``log(Φ(b) − Φ(a))`` for ``a < b`` (computed stably; mirrored when ``a > 0``)."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    flip = a > 0
    lo = np.where(flip, -b, a)
    hi = np.where(flip, -a, b)
    lb = log_ndtr(hi)
    la = log_ndtr(lo)
    with np.errstate(divide="ignore", invalid="ignore"):
        return lb + np.log1p(-np.exp(la - lb))


@_nb.njit(cache=True, nogil=True)
def _rounding_interval(z, lo, hi, step, integer_output):  # pragma: no cover - compiled
    """Interval ``[a, b]`` of kernel draws in ``[lo_k, hi_k]`` released (rounded to multiples of
    ``step``) as ``z``, for each of the ``K`` supports (``[K, n_z]``), and where it is empty."""
    tol = 1e-6 * step
    half = 0.5 * step
    K, n_z = lo.shape[0], z.shape[0]
    a = np.empty((K, n_z))
    b = np.empty((K, n_z))
    empty = np.empty((K, n_z), dtype=np.bool_)
    for k in range(K):
        lo_k, hi_k = lo[k], hi[k]
        kl = np.rint(lo_k / step)
        below = kl * step < lo_k - tol  # draws in [lo, (kl + 1/2) step) round below lo: clipped up
        z_lo = np.rint(lo_k) if integer_output else lo_k
        kh = np.rint(hi_k / step)
        above = kh * step > hi_k + tol
        z_hi = np.rint(hi_k) if integer_output else hi_k
        for s in range(n_z):
            zs = z[s]
            on_grid = abs(zs - np.rint(zs / step) * step) <= tol
            if on_grid and zs >= lo_k - tol and zs <= hi_k + tol:
                lo_s, hi_s = max(zs - half, lo_k), min(zs + half, hi_k)
            else:
                lo_s, hi_s = np.inf, -np.inf
            if below and abs(zs - z_lo) <= tol:
                lo_s, hi_s = min(lo_s, lo_k), max(hi_s, min((kl + 0.5) * step, hi_k))
            if above and abs(zs - z_hi) <= tol:
                lo_s, hi_s = min(lo_s, max((kh - 0.5) * step, lo_k)), max(hi_s, hi_k)
            empty[k, s] = not lo_s < hi_s
            a[k, s] = lo_k if empty[k, s] else lo_s
            b[k, s] = hi_k if empty[k, s] else hi_s
    return a, b, empty


def kernel_log_terms(z: np.ndarray, centres: np.ndarray, h: float, lo: float, hi: float, *,
                     decimals: int | None = None,
                     integer_output: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Per-centre terms of the truncated kernel mixture ``p(z) = Σ_k c_k K_k(z) / Σ_k c_k M_k``
    (Wang & Reiter 2012; :doc:`/methods/attribute`).

    Parameters
    ----------
    z, centres : arrays, shapes (n_z,) and (n,)
        Synthetic values and kernel centres.
    h, lo, hi : float
        Bandwidth and support.
    decimals : int, optional
        Output rounded to this many decimals; ``None``: not rounded (densities).
    integer_output : bool
        The column's dtype is integer.

    Returns
    -------
    log_k, log_m : ndarrays, shapes (n_z, n) and (n,)
        ``log K_k(z)`` (``-inf`` where ``z`` cannot come from kernel ``k``) and ``log M_k``.
    """
    z = np.asarray(z, dtype=np.float64).ravel()
    b = np.asarray(centres, dtype=np.float64).ravel()
    if lo >= hi or not h > 0:
        if decimals is not None:
            out = np.clip(np.round(b, decimals), lo, hi)
            out = np.round(out) if integer_output else out
            tol = 1e-6 * 10.0 ** (-decimals)
        else:
            out = b
            tol = 1e-9 * np.maximum(1.0, np.abs(z))[:, None]
        hit = np.abs(z[:, None] - out[None, :]) <= tol
        return np.where(hit, 0.0, -np.inf), np.zeros(b.size)
    return smooth_log_terms(z, b, h, lo, hi, decimals, integer_output)


def smooth_log_terms(z: np.ndarray, b: np.ndarray, h: float, lo: float | np.ndarray,
                     hi: float | np.ndarray, decimals: int | None,
                     integer_output: bool) -> tuple[np.ndarray, np.ndarray]:
    """:func:`kernel_log_terms` of a support that smooths (``lo < hi``, ``h > 0``), for one
    support (``b [n]``: ``[n_z, n]``, ``[n]``) or ``K`` at once (``b [K, n]``, ``lo`` and ``hi``
    ``[K]``: ``[K, n_z, n]``, ``[K, n]``), each entry computed as for its support alone."""
    if np.ndim(lo):
        lo = np.asarray(lo, dtype=np.float64)[:, None]
        hi = np.asarray(hi, dtype=np.float64)[:, None]
    log_m = log_ndtr_diff((lo - b) / h, (hi - b) / h)
    zc, bc = z[:, None], b[..., None, :]
    if decimals is None:
        zk = (zc - bc) / h
        log_k = -0.5 * zk**2 - 0.5 * np.log(2 * np.pi) - np.log(h)
        inside = (z >= lo) & (z <= hi)
        return np.where(inside[..., None], log_k, -np.inf), log_m
    a, top, empty = _rounding_interval(z, np.ravel(lo).astype(np.float64),
                                       np.ravel(hi).astype(np.float64), 10.0 ** (-decimals),
                                       integer_output)
    if not np.ndim(lo):
        a, top, empty = a[0], top[0], empty[0]
    with np.errstate(divide="ignore", invalid="ignore"):
        log_k = log_ndtr_diff((a[..., None] - bc) / h, (top[..., None] - bc) / h)
    return np.where(empty[..., None], -np.inf, log_k), log_m


def truncated_kde_logpdf(x: np.ndarray | float, b: Sequence[float], h: float, lo: float, hi: float,
                         *, weights: Sequence[float] | None = None, decimals: int | None = None,
                         integer_output: bool = False) -> np.ndarray:
    """Log-density (with ``decimals``: log-probability) of the truncated Gaussian kernel mixture
    of Wang & Reiter 2012 on ``[lo, hi]``.

    Parameters
    ----------
    x : float or array
        Points at which to evaluate.
    b : sequence of float
        Kernel centres (the leaf's bootstrap values).
    h, lo, hi : float
        Bandwidth (> 0) and support (``lo <= hi``; ``lo == hi``: a point mass).
    weights : sequence of float, optional
        Non-negative centre weights (default all 1).
    decimals : int, optional
        The output is rounded to this many decimals: return log-probabilities.
    integer_output : bool
        With ``decimals``: the column's dtype is integer.

    Returns
    -------
    ndarray
        ``log f(x)``; ``-inf`` outside ``[lo, hi]``.

    Raises
    ------
    ValidationError
        For ``h <= 0``, ``lo > hi`` or no centres.

    Examples
    --------
    >>> round(float(np.exp(truncated_kde_logpdf(11.0, [10, 10, 20], 2.0, 10, 20))), 6)
    0.234716
    """
    b = check_vector(np.ravel(b), SequenceOf(Interval(float), "finite numbers"),
                     "b (kernel centres)")
    x = np.asarray(x, dtype=np.float64)
    check_value(h, Interval(float, 0, closed="neither"), "bandwidth h")
    if not lo <= hi:
        raise ValidationError(f"support must satisfy lo <= hi. Got lo={lo!r}, hi={hi!r}.")
    w = np.ones(b.size) if weights is None else np.asarray(weights, dtype=np.float64).ravel()
    if w.shape != b.shape or np.any(w < 0) or not np.any(w > 0):
        raise ValidationError(
            f"weights must be {b.size} non-negative numbers, not all 0. Got {weights!r}.")
    log_k, log_m = kernel_log_terms(x.ravel(), b, h, lo, hi, decimals=decimals,
                                    integer_output=integer_output)
    with np.errstate(divide="ignore"):
        lw = np.log(w)
    out = logsumexp(log_k + lw, axis=-1) - logsumexp(log_m + lw)
    return out.reshape(x.shape)
