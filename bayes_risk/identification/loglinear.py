"""Population counts from an all-two-way log-linear model fitted by IPF (Hu 2019 §4.2.3;
:doc:`/methods/identification`, Population counts from a log-linear model).
"""

from __future__ import annotations

import itertools
import warnings
from dataclasses import dataclass

import numpy as np

from bayes_risk._constraints import Interval, check_value
from bayes_risk.exceptions import CALLER, ConvergenceWarning, ValidationError

__all__ = ["IPFResult", "fit_all_two_way", "population_estimate", "expected_inverse"]

@dataclass(frozen=True)
class IPFResult:
    """Fitted cell means ``mu`` of the all-two-way model (shape of the table), whether IPF
    converged, its cycles and the largest absolute change of ``mu`` in the last one."""

    mu: np.ndarray
    converged: bool
    n_cycles: int
    max_change: float


def fit_all_two_way(
    table: np.ndarray, *, tol: float = 1e-10, max_cycles: int = 1000, warn: bool = True
) -> IPFResult:
    """Fit the all-two-way log-linear model to a contingency table by IPF.

    Cycles over the two-way margins until the largest change of ``μ`` is below ``tol``, or
    warns ``IPF_NOT_CONVERGED`` after ``max_cycles`` (:doc:`/methods/identification`).

    Parameters
    ----------
    table : ndarray of counts, shape (d_1, …, d_V)

    Returns
    -------
    IPFResult

    Examples
    --------
    >>> f = np.array([[[10, 5], [3, 1]], [[4, 6], [2, 0]]])
    >>> np.round(fit_all_two_way(f).mu[0, 0], 6)
    array([9.517738, 5.482262])
    """
    f = np.asarray(table, dtype=np.float64)
    if np.any(f < 0) or not np.all(np.isfinite(f)):
        raise ValidationError("IPF table must hold finite non-negative counts.")
    V = f.ndim
    if V <= 2:
        return IPFResult(mu=f.copy(), converged=True, n_cycles=1, max_change=0.0)
    mu = np.ones_like(f)
    pairs = list(itertools.combinations(range(V), 2))
    margins = []
    for a, b in pairs:
        other = tuple(k for k in range(V) if k not in (a, b))
        margins.append((other, f.sum(axis=other, keepdims=True)))
    change = np.inf
    cycles = 0
    for cycles in range(1, max_cycles + 1):
        prev = mu.copy()
        for other, obs in margins:
            fit = mu.sum(axis=other, keepdims=True)
            with np.errstate(divide="ignore", invalid="ignore"):
                ratio = np.where(fit > 0, obs / fit, 0.0)
            mu *= ratio
        change = float(np.max(np.abs(mu - prev)))
        if change < tol:
            return IPFResult(mu=mu, converged=True, n_cycles=cycles, max_change=change)
    if warn:
        warnings.warn(
            f"IPF_NOT_CONVERGED: the all-two-way log-linear fit did not converge in {max_cycles} "
            f"cycles (last max change {change:.3g}).",
            ConvergenceWarning,
            skip_file_prefixes=CALLER,
        )
    return IPFResult(mu=mu, converged=False, n_cycles=cycles, max_change=change)


def population_estimate(
    f: np.ndarray, mu: np.ndarray, a: float, kind: str = "default"
) -> np.ndarray:
    """``F̂_t`` from sample counts and fitted means (Drechsler & Reiter 2008 §3; Hu 2019 §4.2.3).

    ``kind="default"``: ``F̂ = f + (1 − a) μ̂ / a``; ``"scaled"``: ``F̂ = μ̂ / a``.
    (``"expected_inverse"`` is :func:`expected_inverse`, which returns ``E[1/F | f]``.)

    Examples
    --------
    >>> population_estimate(np.array([10.0]), np.array([9.517738]), 0.2)
    array([48.070952])
    """
    a = check_value(a, Interval(float, 0, 1, closed="right"), "sampling_fraction")
    f = np.asarray(f, dtype=np.float64)
    mu = np.asarray(mu, dtype=np.float64)
    if kind == "default":
        return f + (1.0 - a) * mu / a
    if kind == "scaled":
        return mu / a
    raise ValidationError(f"population estimate must be 'default' or 'scaled'. Got {kind!r}.",
                          code="INVALID_ARGUMENT")


def expected_inverse(f: np.ndarray, nu: np.ndarray, *, tail: float = 1e-15) -> np.ndarray:
    """``E[1/F_t | f_t] = Σ_{x≥0} Pois(x; ν) / (f_t + x)`` (Drechsler & Reiter 2008 eqs. 6–7).

    Summed until the Poisson tail is below ``tail``; for ``f_t = 0``, ``E[1/X | X ≥ 1]``.

    Examples
    --------
    >>> np.round(expected_inverse(np.array([1, 2]), np.array([2.0, 2.0])), 6)
    array([0.432332, 0.283834])
    """
    from scipy import stats  # here: scipy.stats costs ~0.3 s to import

    f = np.asarray(f, dtype=np.float64)
    nu = np.asarray(nu, dtype=np.float64)
    f_b, nu_b = np.broadcast_arrays(f, nu)
    out = np.empty(f_b.shape, dtype=np.float64)
    stacked = np.stack([f_b.ravel(), nu_b.ravel()], axis=1)
    pairs, inv = np.unique(stacked, axis=0, return_inverse=True)
    vals = np.empty(len(pairs))
    for i, (fi, vi) in enumerate(pairs):
        if vi <= 0:
            vals[i] = 1.0 / max(fi, 1.0)
            continue
        xmax = int(vi + 12.0 * np.sqrt(vi) + 40)
        while stats.poisson.sf(xmax, vi) >= tail:
            xmax *= 2
        x = np.arange(0, xmax + 1, dtype=np.float64)
        pmf = stats.poisson.pmf(x, vi)
        if fi >= 1:
            vals[i] = float(np.sum(pmf / (fi + x)))
        else:
            vals[i] = float(np.sum(pmf[1:] / x[1:]) / (-np.expm1(-vi)))
    out.ravel()[:] = vals[inv.ravel()]
    return out
