"""Confidence-interval overlap and standardised coefficient differences.

See :doc:`/methods/utility`.
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np

from bayes_risk._constraints import Interval, Options, SequenceOf, check_value, check_vector
from bayes_risk.exceptions import ValidationError
from bayes_risk.results.combining import CoefDiffResult, OverlapResult

__all__ = ["OverlapResult", "CoefDiffResult", "ci_overlap", "std_coef_diff"]


#: the standard errors behind the estimates
_STANDARD_ERRORS = SequenceOf(Interval(float, 0, closed="neither"), "finite numbers > 0")


def _vec(x: Any, name: str) -> np.ndarray:
    try:
        a = np.atleast_1d(np.asarray(x, dtype=np.float64))
    except (TypeError, ValueError) as err:
        raise ValidationError(f"{name} must be numbers. Got {x!r}.") from err
    if a.ndim != 1:
        raise ValidationError(f"{name} must be a scalar or one-dimensional. Got shape {a.shape}.")
    if np.any(np.isnan(a)):
        i = int(np.flatnonzero(np.isnan(a))[0])
        raise ValidationError(f"{name} contains NaN at position {i}.")
    return a


def _per_estimand(x: Any, name: str, shape: tuple[int, ...]) -> np.ndarray:
    a = _vec(x, name)
    try:
        return np.broadcast_to(a, shape)
    except ValueError as err:
        raise ValidationError(
            f"{name} must be a scalar or have one value per estimand ({shape[0]}); got "
            f"{a.size} values."
        ) from err


def _check_interval(lo: np.ndarray, hi: np.ndarray, which: str) -> None:
    bad = ~np.isfinite(lo) | ~np.isfinite(hi)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValidationError(
            f"{which} interval {i} is ({lo[i]}, {hi[i]}); interval bounds must be finite.")
    if np.any(hi < lo):
        i = int(np.flatnonzero(hi < lo)[0])
        raise ValidationError(
            f"{which} interval {i} has upper bound {hi[i]} below lower bound {lo[i]}.")
    if np.any(hi == lo):
        i = int(np.flatnonzero(hi == lo)[0])
        raise ValidationError(
            f"{which} interval {i} has zero length ({lo[i]}, {hi[i]}); the overlap is undefined "
            "(Karr et al. 2006). Remove the estimand or give a non-degenerate interval.",
            code="DEGENERATE_INTERVAL")


def _cdf(x: np.ndarray, est: np.ndarray, se: np.ndarray, df: np.ndarray | None) -> np.ndarray:
    from scipy import special  # here, not at import: see bayes_risk/utility/__init__.py
    z = (x - est) / se
    if df is None:
        return special.ndtr(z)
    return np.where(np.isinf(df), special.ndtr(z), special.stdtr(np.where(np.isinf(df), 1, df), z))


def ci_overlap(
    lo_o: Any,
    hi_o: Any,
    lo_s: Any,
    hi_s: Any,
    *,
    kind: Literal["length", "signed", "probability"] = "length",
    est_o: Any = None,
    se_o: Any = None,
    est_s: Any = None,
    se_s: Any = None,
    df_o: Any = None,
    df_s: Any = None,
) -> OverlapResult:
    """Overlap of original and synthetic confidence intervals (Karr et al. 2006).

    Formulas and references: :doc:`/methods/utility`, Interval overlap.

    Parameters
    ----------
    lo_o, hi_o : float or array_like, shape (E,)
        Original-data interval bounds.
    lo_s, hi_s : float or array_like, shape (E,)
        Synthetic (combined) interval bounds.
    kind : {"length", "signed", "probability"}
        Which overlap.
    est_o, se_o, est_s, se_s : float or array_like, optional
        Estimates and standard errors (required for ``kind="probability"``).
    df_o, df_s : float or array_like, optional
        Degrees of freedom of the t densities (``None`` or ``inf``: normal).

    Returns
    -------
    OverlapResult
        ``values`` (per estimand), ``mean``, ``mean_truncated``, ``kind``.

    Raises
    ------
    ValidationError
        Degenerate, reversed or infinite intervals, NaN, shape mismatch, unknown ``kind``, or
        missing standard errors for ``kind="probability"``.

    Examples
    --------
    >>> r = ci_overlap([8, 8], [10, 10], [-12, 3], [30, 15])
    >>> np.round(r.values, 6).tolist()
    [0.52381, 0.583333]
    """
    check_value(kind, Options(("length", "signed", "probability"), listed=True), "kind")
    arrs = [_vec(v, n) for v, n in ((lo_o, "lo_o"), (hi_o, "hi_o"), (lo_s, "lo_s"),
                                     (hi_s, "hi_s"))]
    try:
        lo_o_a, hi_o_a, lo_s_a, hi_s_a = np.broadcast_arrays(*arrs)
    except ValueError as err:
        raise ValidationError(
            f"interval bounds must have the same length; got lengths {[a.size for a in arrs]}.",
            code="INVALID_ARGUMENT"
        ) from err
    _check_interval(lo_o_a, hi_o_a, "original")
    _check_interval(lo_s_a, hi_s_a, "synthetic")
    if kind in ("length", "signed"):
        ov = np.minimum(hi_o_a, hi_s_a) - np.maximum(lo_o_a, lo_s_a)
        if kind == "length":
            ov = np.maximum(ov, 0.0)
        vals = 0.5 * (ov / (hi_o_a - lo_o_a) + ov / (hi_s_a - lo_s_a))
    else:
        if any(v is None for v in (est_o, se_o, est_s, se_s)):
            raise ValidationError(
                "kind='probability' needs est_o, se_o, est_s and se_s (the estimates and "
                "standard errors behind the intervals).")
        e_o, s_o, e_s, s_s = (_per_estimand(v, n, lo_o_a.shape) for v, n in
                              ((est_o, "est_o"), (se_o, "se_o"), (est_s, "est_s"),
                               (se_s, "se_s")))
        for s, n in ((se_o, "se_o"), (se_s, "se_s")):
            check_vector(s, _STANDARD_ERRORS, n)
        d_o = None if df_o is None else _per_estimand(df_o, "df_o", lo_o_a.shape)
        d_s = None if df_s is None else _per_estimand(df_s, "df_s", lo_o_a.shape)
        for d, n in ((d_o, "df_o"), (d_s, "df_s")):
            if d is not None and np.any(~(d > 0)):
                raise ValidationError(f"{n} must be > 0 (or inf). Got {d.tolist()}.",
                                      code="INVALID_ARGUMENT")
        p_o = _cdf(hi_s_a, e_o, s_o, d_o) - _cdf(lo_s_a, e_o, s_o, d_o)
        p_s = _cdf(hi_o_a, e_s, s_s, d_s) - _cdf(lo_o_a, e_s, s_s, d_s)
        vals = 0.5 * (p_o + p_s)
    vals = np.asarray(vals, dtype=np.float64)
    return OverlapResult(
        values=vals,
        mean=float(np.mean(vals)),
        mean_truncated=float(np.mean(np.maximum(vals, 0.0))),
        kind=kind)


def std_coef_diff(beta_orig: Any, beta_syn: Any, se_orig: Any) -> CoefDiffResult:
    """Standardised coefficient difference ``|β̂_orig − β̂_syn| / se(β̂_orig)`` (Snoke et al. 2018 §5).

    Parameters
    ----------
    beta_orig, beta_syn : float or array_like, shape (E,)
        Coefficients from the original and (combined) synthetic data.
    se_orig : float or array_like, shape (E,)
        Standard errors of the original coefficients (> 0).

    Returns
    -------
    CoefDiffResult
        ``values``, ``mean``, ``median``.

    Raises
    ------
    ValidationError
        For non-positive or non-finite standard errors, NaN or shape mismatch.

    Examples
    --------
    >>> round(float(std_coef_diff(1.0, 1.3, 0.2).values[0]), 12)
    1.5
    """
    check_vector(se_orig, _STANDARD_ERRORS, "se_orig")
    arrs = [_vec(v, n) for v, n in ((beta_orig, "beta_orig"), (beta_syn, "beta_syn"),
                                     (se_orig, "se_orig"))]
    try:
        b_o, b_s, se = np.broadcast_arrays(*arrs)
    except ValueError as err:
        raise ValidationError(
            "beta_orig, beta_syn and se_orig must have the same length; got "
            f"{[a.size for a in arrs]}."
        ) from err
    vals = np.abs(b_o - b_s) / se
    return CoefDiffResult(values=vals, mean=float(np.mean(vals)), median=float(np.median(vals)))
