"""Combining rules for partially synthetic data (Reiter 2003; Reiter 2003).

Point estimates ``q_l`` and variance estimates ``u_l`` computed on each of the ``m`` synthetic
datasets, as if each were the real data, are combined into one estimate with variance
``T_p = ū_m + b_m / m`` and a t reference distribution with ``ν_p`` degrees of freedom. Unlike
Rubin's rules for missing data there is no ``(1 + 1/m) b_m`` term.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
from scipy import stats

from bayes_risk.data.validate import check_probability
from bayes_risk.exceptions import CALLER, DataWarning, ValidationError
from bayes_risk.results.combining import CombinedMultivariate, CombinedScalar

__all__ = ["CombinedScalar", "CombinedMultivariate", "combine_scalar", "combine_multivariate"]


def _as_vector(x: Any, name: str) -> np.ndarray:
    try:
        a = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise ValidationError(f"{name} must be a sequence of numbers. Got {x!r}.") from err
    if a.ndim == 0:
        a = a.reshape(1)
    if a.ndim != 1:
        raise ValidationError(f"{name} must be one-dimensional (one value per dataset). "
                              f"Got shape {a.shape}.")
    if a.size == 0:
        raise ValidationError(
            f"{name} is empty; expected one value per synthetic dataset (m >= 1)."
        )
    if not np.all(np.isfinite(a)):
        i = int(np.flatnonzero(~np.isfinite(a))[0])
        raise ValidationError(f"{name}[{i}] is {float(a[i])!r}; expected finite numbers.")
    return a


def _t_quantile(df: float, alpha: float) -> float:
    if math.isinf(df):
        return float(stats.norm.ppf(1 - alpha / 2))
    return float(stats.t.ppf(1 - alpha / 2, df))


def combine_scalar(q: Sequence[float], u: Sequence[float], alpha: float = 0.05) -> CombinedScalar:
    """Combine per-dataset estimates of a scalar with Reiter's (2003) partially-synthetic rules.

    Reiter 2003::

        q̄ = Σ q_l / m,  b = Σ (q_l − q̄)² / (m − 1),  ū = Σ u_l / m
        T_p = ū + b/m,  r = (b/m)/ū,  ν_p = (m − 1)(1 + 1/r)²

    Parameters
    ----------
    q : sequence of float, length m
        Point estimates computed on each synthetic dataset.
    u : sequence of float, length m
        Their estimated variances (squared standard errors), ``>= 0``.
    alpha : float
        ``1 −`` confidence level of the returned interval (default 0.05: 95% interval).

    Returns
    -------
    CombinedScalar
        ``estimate``, ``between_var``, ``within_var``, ``total_var``, ``se``, ``r``, ``df``,
        ``ci_lower``, ``ci_upper``, ``alpha``, ``m``, ``warnings``.

    Raises
    ------
    ValidationError
        If ``q`` and ``u`` differ in length, contain non-finite values, ``u`` has a negative
        entry, or ``alpha`` is not in (0, 1).

    Warns
    -----
    DataWarning
        When ``m = 1`` (code ``"M_EQUALS_ONE"``): ``b_m`` is undefined, so ``T_p = u_1`` and
        ``ν = inf``; single-implicate releases need other variance formulas.

    Notes
    -----
    Edge cases (Reiter 2003): ``b_m = 0`` gives ``ν_p = inf`` (normal quantile);
    ``ū_m = 0 < b_m`` gives ``ν_p = m − 1``.

    References
    ----------
    Reiter, J. P. (2003). Inference for partially synthetic, public use microdata sets.
    *Survey Methodology* 29, 181–188.

    Examples
    --------
    >>> r = combine_scalar([10.2, 9.8, 10.5, 9.9, 10.1], [0.25, 0.24, 0.26, 0.25, 0.25])
    >>> round(r.total_var, 6), round(r.df, 3)
    (0.265, 1248.444)
    """
    qa = _as_vector(q, "q")
    ua = _as_vector(u, "u")
    if qa.shape != ua.shape:
        raise ValidationError(
            f"q and u must have one value per synthetic dataset each; got {qa.size} estimates "
            f"and {ua.size} variances."
        )
    if np.any(ua < 0):
        i = int(np.flatnonzero(ua < 0)[0])
        raise ValidationError(
            f"u[{i}] = {float(ua[i])!r} is negative; variance estimates must be >= 0."
        )
    alpha = check_probability(alpha, "alpha")
    m = qa.size
    codes: list[str] = []
    if m == 1:
        warnings.warn(
            "combine_scalar with m = 1: the between-dataset variance is undefined, so the "
            "variance is the single dataset's u and the reference is normal (M_EQUALS_ONE).",
            DataWarning,
            skip_file_prefixes=CALLER,
        )
        codes.append("M_EQUALS_ONE")
        qbar, ubar = float(qa[0]), float(ua[0])
        b, r, df, tp = math.nan, math.nan, math.inf, ubar
    else:
        qbar = float(np.mean(qa))
        b = float(np.sum((qa - qbar) ** 2) / (m - 1))
        ubar = float(np.mean(ua))
        tp = ubar + b / m
        if b == 0:
            r, df = (0.0 if ubar > 0 else math.nan), math.inf
        elif ubar == 0:
            r, df = math.inf, float(m - 1)
        else:
            r = (b / m) / ubar
            x = m * ubar / b
            # b negligible next to ubar (e.g. a subnormal b): the reference is normal
            df = (m - 1) * (1 + x) ** 2 if x < 1e150 else math.inf
    se = math.sqrt(tp)
    half = _t_quantile(df, alpha) * se
    return CombinedScalar(
        estimate=qbar,
        between_var=b,
        within_var=ubar,
        total_var=tp,
        se=se,
        r=r,
        df=df,
        ci_lower=qbar - half,
        ci_upper=qbar + half,
        alpha=alpha,
        m=m,
        warnings=codes,
    )


def combine_multivariate(
    q: Any, U: Any, Q0: Any = 0.0
) -> CombinedMultivariate:
    """Wald test of ``H0: Q = Q0`` for a ``k``-vector from partially synthetic data.

    Reiter 2003 (Drechsler 2011, §7.1.2)::

        r_p = tr(B_m Ū_m^{-1}) / (m k)
        S_p = (q̄ − Q0)ᵀ Ū_m^{-1} (q̄ − Q0) / (k (1 + r_p))   ~  F_{k, ν_p}
        ν_p = 4 + (t − 4)(1 + (1 − 2/t)/r_p)²,   t = k(m − 1)

    Parameters
    ----------
    q : array_like, shape (m, k)
        Point estimates from each synthetic dataset.
    U : array_like, shape (m, k, k)
        Their estimated covariance matrices (symmetric, positive definite on average).
    Q0 : float or array_like, shape (k,)
        Null value (default 0).

    Returns
    -------
    CombinedMultivariate
        ``estimate``, ``between_cov``, ``within_cov``, ``r``, ``statistic``, ``df_num``,
        ``df_den``, ``p_value``, ``m``, ``warnings``.

    Raises
    ------
    ValidationError
        For ``m < 2``, shape mismatches, non-finite input, asymmetric ``U_l`` or a singular
        ``Ū_m``.

    Warns
    -----
    DataWarning
        When ``t = k(m − 1) <= 4`` (code ``"SMALL_T"``): the degrees-of-freedom formula is
        intended for ``t > 4`` and ``ν_p = 4`` is returned.

    Examples
    --------
    >>> import numpy as np
    >>> q = [(1, 2), (1.2, 1.8), (0.8, 2.2), (1.1, 2.1), (0.9, 1.9)]
    >>> U = [np.diag([0.04, 0.09])] * 5
    >>> round(combine_multivariate(q, U).statistic, 5)
    31.84713
    """
    qa = np.asarray(q, dtype=np.float64)
    Ua = np.asarray(U, dtype=np.float64)
    if qa.ndim != 2:
        raise ValidationError(f"q must have shape (m, k). Got shape {qa.shape}.")
    m, k = qa.shape
    if m < 2:
        raise ValidationError(
            f"combine_multivariate needs m >= 2 synthetic datasets (B_m is undefined). Got m = {m}."
        )
    if Ua.shape != (m, k, k):
        raise ValidationError(f"U must have shape (m, k, k) = ({m}, {k}, {k}). Got {Ua.shape}.")
    Q0a = np.broadcast_to(np.asarray(Q0, dtype=np.float64), (k,)) if np.ndim(Q0) == 0 else \
        np.asarray(Q0, dtype=np.float64)
    if Q0a.shape != (k,):
        raise ValidationError(f"Q0 must be a scalar or have shape ({k},). Got {Q0a.shape}.")
    for name, a in (("q", qa), ("U", Ua), ("Q0", Q0a)):
        if not np.all(np.isfinite(a)):
            raise ValidationError(f"{name} contains non-finite values; expected finite numbers.")
    if not np.allclose(Ua, np.swapaxes(Ua, 1, 2), rtol=1e-10, atol=1e-14):
        raise ValidationError("each U_l must be a symmetric covariance matrix.")
    qbar = qa.mean(axis=0)
    B = np.atleast_2d(np.cov(qa, rowvar=False, ddof=1))
    Ubar = Ua.mean(axis=0)
    try:
        Uinv = np.linalg.inv(Ubar)
        if not np.all(np.isfinite(Uinv)) or np.linalg.cond(Ubar) > 1e14:
            raise np.linalg.LinAlgError
    except np.linalg.LinAlgError as err:
        raise ValidationError("the mean within-dataset covariance Ū_m is singular.") from err
    r = float(np.trace(B @ Uinv) / (m * k))
    d = qbar - Q0a
    S = float(d @ Uinv @ d / (k * (1 + r)))
    t = k * (m - 1)
    codes: list[str] = []
    if t <= 4:
        warnings.warn(
            f"combine_multivariate: t = k(m − 1) = {t} <= 4; the degrees-of-freedom formula is "
            "intended for t > 4 and nu_p = 4 is used (SMALL_T).",
            DataWarning,
            skip_file_prefixes=CALLER,
        )
        codes.append("SMALL_T")
        nu = 4.0
    elif r == 0:
        nu = math.inf
    else:
        nu = 4 + (t - 4) * (1 + (1 - 2 / t) / r) ** 2
    if math.isinf(nu):
        p = float(stats.chi2.sf(S * k, k))
    else:
        p = float(stats.f.sf(S, k, nu))
    return CombinedMultivariate(
        estimate=qbar,
        between_cov=B,
        within_cov=Ubar,
        r=r,
        statistic=S,
        df_num=k,
        df_den=nu,
        p_value=p,
        m=m,
        warnings=codes,
    )
