"""Combining rules for synthetic data by generation scheme (:doc:`/methods/utility`)."""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from typing import Any, Literal

import numpy as np

from bayes_risk._constraints import Flag, Interval, SequenceOf, check_value, check_vector
from bayes_risk._utility_specs import COMBINING_RULES, check_rules
from bayes_risk.data.validate import check_probability
from bayes_risk.exceptions import CALLER, DataWarning, ValidationError
from bayes_risk.results.combining import MULTIVARIATE_TESTS, CombinedMultivariate, CombinedScalar

__all__ = ["CombinedScalar", "CombinedMultivariate", "combine_scalar", "combine_multivariate",
           "COMBINING_RULES", "check_rules", "CombiningRules", "MULTIVARIATE_TESTS", "SMALL_M",
           "SMALL_M_QUANTILE"]

CombiningRules = Literal["partial", "full-same-n", "full-population", "partial-sample"]



#: from this many synthetic datasets on, Reiter's (2003) ``ν_p`` is used as published
SMALL_M = 5
#: with ``m < SMALL_M``, ``ν_p`` is evaluated at this upper quantile bound of ``r``
SMALL_M_QUANTILE = 0.25


#: ``q`` and ``u`` of :func:`combine_scalar`: one number per synthetic dataset (a number alone
#: for one dataset)
_ESTIMATES = SequenceOf(Interval(float), "finite numbers, one per synthetic dataset")
_VARIANCES = SequenceOf(Interval(float, 0), "finite numbers >= 0, one per synthetic dataset")


def t_quantile(df: float, alpha: float) -> float:
    """The ``1 − α/2`` quantile of Student's t with ``df`` degrees of freedom (normal: inf)."""
    from scipy import special  # here, not at import: see bayes_risk/utility/__init__.py
    if math.isinf(df):
        return float(special.ndtri(1 - alpha / 2))
    return float(special.stdtrit(df, 1 - alpha / 2))


def combine_scalar(
    q: Sequence[float],
    u: Sequence[float],
    *,
    alpha: float = 0.05,
    rules: CombiningRules = "partial",
    proper: bool = True,
    size_ratio: float = 1.0,
) -> CombinedScalar:
    """Combine per-dataset estimates of a scalar with the rules of a generation scheme.

    Formulas and references: :doc:`/methods/utility` (Combining rules).

    Parameters
    ----------
    q : sequence of float, length m
        Point estimates computed on each synthetic dataset.
    u : sequence of float, length m
        Their estimated variances (squared standard errors), ``>= 0``.
    alpha : float
        ``1 −`` confidence level of the returned interval.
    rules : {"partial", "full-same-n", "full-population", "partial-sample"}
        The generation scheme whose rules apply (``"partial-sample"``: samples of the census
        from synthetic populations, Drechsler & Reiter 2010).
    proper : bool
        ``"full-same-n"`` only: each dataset drawn with its own parameter draw.
    size_ratio : float
        ``k/n``: records per synthetic dataset over records of the original (``> 0``); for
        ``"partial-sample"`` the sampling fraction ``f`` of the census (``< 1``).

    Returns
    -------
    CombinedScalar
        ``estimate``, ``between_var``, ``within_var``, ``total_var``, ``se``, ``r``, ``df``,
        ``ci_lower``, ``ci_upper``, ``alpha``, ``m``, ``warnings``, ``rules``.

    Raises
    ------
    ValidationError
        Lengths or values out of range, unknown ``rules``, or ``"full-population"`` with
        ``m = 1`` (``M_EQUALS_ONE``).

    Warns
    -----
    DataWarning
        ``M_EQUALS_ONE`` (partial rules, ``m = 1``); ``NEGATIVE_VARIANCE`` (``T_f <= 0``).

    Examples
    --------
    >>> r = combine_scalar([10.2, 9.8, 10.5, 9.9, 10.1], [0.25, 0.24, 0.26, 0.25, 0.25])
    >>> round(r.total_var, 6), round(r.df, 3)
    (0.265, 1248.444)
    >>> f = combine_scalar([10.2, 9.8, 10.5, 9.9, 10.1], [0.25, 0.24, 0.26, 0.25, 0.25],
    ...                    rules="full-same-n")
    >>> round(f.total_var, 6), f.df
    (0.35, inf)
    """
    from scipy import special  # here, not at import: see bayes_risk/utility/__init__.py
    rules, proper, size_ratio = _checked(rules, proper, size_ratio)
    qa, ua = check_vector(q, _ESTIMATES, "q"), check_vector(u, _VARIANCES, "u")
    if qa.shape != ua.shape:
        raise ValidationError(
            f"q and u must have one value per synthetic dataset each; got {qa.size} estimates "
            f"and {ua.size} variances.")
    alpha = check_probability(alpha, "alpha")
    m = qa.size
    codes: list[str] = []
    if rules == "partial-sample":  # the within variances with the sample's fpc (1 − f)
        ua = ua * _sample_fpc(size_ratio)
    elif rules != "partial":
        return _combine_full(qa, ua, alpha, rules, proper, size_ratio)
    if m == 1:
        warnings.warn(
            "combine_scalar with m = 1: the between-dataset variance is undefined, so the "
            "variance is the single dataset's u and the reference is normal (M_EQUALS_ONE).",
            DataWarning,
            skip_file_prefixes=CALLER)
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
            if m < SMALL_M:
                # Satterthwaite's df at r's upper quartile bound: Reiter's ν_p undercovers
                x *= 2 * float(special.gammaincinv((m - 1) / 2, SMALL_M_QUANTILE)) / (m - 1)
            # b negligible next to ubar (e.g. a subnormal b): the reference is normal
            df = (m - 1) * (1 + x) ** 2 if x < 1e150 else math.inf
    return _combined(qbar, b, ubar, tp, r, df, alpha, m, codes, rules)


def _sample_fpc(size_ratio: float) -> float:
    """``1 − f`` of a sample of ``f = k/N`` of the census (``"partial-sample"``), checked."""
    if not size_ratio < 1:
        raise ValidationError(
            f"the sampling-with-synthesis rules need datasets that are a sample of the original "
            f"(k/N < 1); got size_ratio = {size_ratio:g}. Give the census the samples were drawn "
            "from as the original.", code="INVALID_ARGUMENT")
    return 1.0 - size_ratio


def _combine_full(qa: np.ndarray, ua: np.ndarray, alpha: float, rules: str, proper: bool,
                  size_ratio: float) -> CombinedScalar:
    m = qa.size
    codes: list[str] = []
    qbar = float(np.mean(qa))
    ubar = float(np.mean(ua))
    b = float(np.sum((qa - qbar) ** 2) / (m - 1)) if m > 1 else math.nan
    if rules == "full-same-n":
        # Raab, Nowok & Dibben (2016); synthpop's summary.fit.synds, population inference
        k_n = size_ratio
        total = ubar * (k_n + (1 + k_n) / m) if proper else ubar * (k_n + 1 / m)
        df = math.inf
        r = (b / m) / ubar if m > 1 and ubar > 0 else math.nan
    else:
        if m == 1:
            raise ValidationError(
                "the synthetic-population combining rules (Raghunathan, Reiter & Rubin 2003) "
                "need m >= 2 synthetic datasets (b_m is undefined); got m = 1. Use "
                "rules='full-same-n' if the dataset was drawn for the same units.",
                code="M_EQUALS_ONE")
        tf = (1 + 1 / m) * b - ubar
        r = (b / m) / ubar if ubar > 0 else math.inf
        if tf > 0:
            total = tf
            df = (m - 1) * (1 - m * ubar / ((m + 1) * b)) ** 2
            if df < 1e-300:  # pragma: no cover - tf > 0 implies df > 0
                df = math.inf
        else:
            total = size_ratio * ubar
            df = math.inf
            codes.append("NEGATIVE_VARIANCE")
            warnings.warn(
                f"combine_scalar: the synthetic-population variance T_f = (1 + 1/m) b − ū = "
                f"{tf:.4g} is not positive (NEGATIVE_VARIANCE); Reiter's (2002) (k/n) ū = "
                f"{total:.4g} is used with a normal reference.",
                DataWarning,
                skip_file_prefixes=CALLER)
    return _combined(qbar, b, ubar, total, r, df, alpha, m, codes, rules)


def _combined(qbar: float, b: float, ubar: float, total: float, r: float, df: float,
              alpha: float, m: int, codes: list[str], rules: str) -> CombinedScalar:
    se = math.sqrt(total)
    half = t_quantile(df, alpha) * se
    return CombinedScalar(estimate=qbar, between_var=b, within_var=ubar, total_var=total,
                          se=se, r=r, df=df, ci_lower=qbar - half, ci_upper=qbar + half,
                          alpha=alpha, m=m, warnings=codes, rules=rules)


def _rules_of(rules: Any, proper: bool | None, size_ratio: float | None
              ) -> tuple[str, bool, float]:
    """``(rules, proper, size_ratio)`` from a rules name, a ``CombiningChoice`` or
    ``combining_*`` settings; ``proper`` and ``size_ratio`` given explicitly win."""
    from collections.abc import Mapping

    rec_proper, rec_ratio = True, 1.0
    if hasattr(rules, "rules") and hasattr(rules, "size_ratio"):  # a CombiningChoice
        rules, rec_proper, rec_ratio = rules.rules, rules.proper, rules.size_ratio
    elif isinstance(rules, Mapping):
        if "combining_rules" not in rules:
            raise ValidationError(
                "rules given as a mapping must be the combining settings of a utility result "
                "(combining_rules, combining_proper, combining_size_ratio). Got keys "
                f"{sorted(map(str, rules))}.", code="UNKNOWN_COMBINING_RULES")
        rec_proper = rules.get("combining_proper", True)
        rec_ratio = rules.get("combining_size_ratio", 1.0)
        rules = rules["combining_rules"]
    return _checked(rules, rec_proper if proper is None else proper,
                    rec_ratio if size_ratio is None else size_ratio)


def _checked(rules: Any, proper: Any, size_ratio: Any) -> tuple[str, bool, float]:
    rules, proper = check_rules(rules), check_value(proper, Flag(), "proper")
    # k/n
    size_ratio = check_value(size_ratio, Interval(float, 0, closed="neither"), "size_ratio")
    return rules, proper, size_ratio


def _lrr_df(t: int, r: float, sign: float, codes: list[str]) -> float:
    """Denominator df ``4 + (t − 4)(1 ± (1 − 2/t)/r)²``; ``4`` with ``SMALL_T`` when ``t <= 4``."""
    if t <= 4:
        warnings.warn(
            f"combine_multivariate: t = k(m − 1) = {t} <= 4; the degrees-of-freedom formula is "
            "intended for t > 4 and nu = 4 is used (SMALL_T).",
            DataWarning,
            skip_file_prefixes=CALLER)
        codes.append("SMALL_T")
        return 4.0
    if r == 0:
        return math.inf
    return 4 + (t - 4) * (1 + sign * (1 - 2 / t) / r) ** 2


def combine_multivariate(
    q: Any, U: Any, Q0: Any = 0.0, *, rules: Any = "partial", proper: bool | None = None,
    size_ratio: float | None = None,
) -> CombinedMultivariate:
    """Wald test of ``H0: Q = Q0`` for a ``k``-vector, with the rules of a generation scheme.

    Formulas: :doc:`/methods/utility` (Multivariate tests).

    Parameters
    ----------
    q : array_like, shape (m, k)
        Point estimates from each synthetic dataset.
    U : array_like, shape (m, k, k)
        Their estimated covariance matrices (symmetric, positive definite on average).
    Q0 : float or array_like, shape (k,)
        Null value (default 0).
    rules : {"partial", "full-same-n", "full-population"}, CombiningChoice or mapping
        The generation scheme whose test applies; a utility result's choice
        (``attrs["combining"]``, ``settings``) also gives ``proper`` and ``size_ratio``.
    proper, size_ratio : optional
        As in :func:`combine_scalar` (default True and 1, or the choice's).

    Returns
    -------
    CombinedMultivariate
        ``estimate``, ``between_cov``, ``within_cov``, ``total_cov``, ``r``, ``statistic``,
        ``df_num``, ``df_den``, ``p_value``, ``m``, ``warnings``, ``rules``.

    Raises
    ------
    ValidationError
        Bad shapes or values, a singular ``Ū_m``, unknown ``rules``, ``m < 2`` with rules that
        need ``B_m`` (``M_EQUALS_ONE``), ``"full-population"`` with ``r_f <= 1``.

    Warns
    -----
    DataWarning
        ``SMALL_T`` when ``t = k(m − 1) <= 4``: ``ν = 4`` is returned.

    Examples
    --------
    >>> import numpy as np
    >>> q = [(1, 2), (1.2, 1.8), (0.8, 2.2), (1.1, 2.1), (0.9, 1.9)]
    >>> U = [np.diag([0.04, 0.09])] * 5
    >>> round(combine_multivariate(q, U).statistic, 5)
    31.84713
    >>> round(combine_multivariate(q, U, rules="full-same-n").statistic, 5)
    24.80159
    """
    from scipy import special  # here, not at import: see bayes_risk/utility/__init__.py
    rules, proper, size_ratio = _rules_of(rules, proper, size_ratio)
    qa = np.asarray(q, dtype=np.float64)
    Ua = np.asarray(U, dtype=np.float64)
    if qa.ndim != 2:
        raise ValidationError(f"q must have shape (m, k). Got shape {qa.shape}.")
    m, k = qa.shape
    if m < 2 and rules != "full-same-n":
        raise ValidationError(
            f"combine_multivariate needs m >= 2 synthetic datasets (B_m is undefined) under "
            f"the {rules!r} rules. Got m = {m}. A single dataset of a full synthesis of the "
            "same units is tested with rules='full-same-n'.",
            code="M_EQUALS_ONE")
    if m < 1:
        raise ValidationError("q is empty; expected one row per synthetic dataset (m >= 1).")
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
        raise ValidationError("each U_l must be a symmetric covariance matrix.",
                              code="INVALID_ARGUMENT")
    qbar = qa.mean(axis=0)
    B = np.atleast_2d(np.cov(qa, rowvar=False, ddof=1)) if m > 1 else np.full((k, k), np.nan)
    Ubar = Ua.mean(axis=0)
    if rules == "partial-sample":  # the within covariances with the sample's fpc (1 − f)
        Ubar = Ubar * _sample_fpc(size_ratio)
    try:
        Uinv = np.linalg.inv(Ubar)
        if not np.all(np.isfinite(Uinv)) or np.linalg.cond(Ubar) > 1e14:
            raise np.linalg.LinAlgError
    except np.linalg.LinAlgError as err:
        raise ValidationError("the mean within-dataset covariance Ū_m is singular.",
                              code="SINGULAR_COVARIANCE") from err
    d = qbar - Q0a
    quad = float(d @ Uinv @ d)
    t = k * (m - 1)
    codes: list[str] = []
    if rules in ("partial", "partial-sample"):
        r = float(np.trace(B @ Uinv) / (m * k))
        S = quad / (k * (1 + r))
        nu = _lrr_df(t, r, +1.0, codes)
        total = Ubar * (1 + r)
    elif rules == "full-same-n":
        # Raab, Nowok & Dibben (2016): the same variance factor for every linear combination
        factor = size_ratio + ((1 + size_ratio) / m if proper else 1 / m)
        r = float(np.trace(B @ Uinv) / (m * k)) if m > 1 else math.nan
        total = Ubar * factor
        S = quad / (k * factor)
        nu = math.inf
    else:
        r = float((1 + 1 / m) * np.trace(B @ Uinv) / k)
        if not r > 1:
            raise ValidationError(
                f"combine_multivariate: r_f = (1 + 1/m) tr(B_m Ū_m^-1) / k = {r:.4g} <= 1, so "
                "the synthetic-population variance Ū_m (r_f − 1) is not positive and Reiter's "
                "(2005) test is undefined (NEGATIVE_VARIANCE); no published multivariate test "
                "covers this case. Release more synthetic datasets (larger m), use "
                "rules='full-same-n' if the datasets redraw the original's units, or test the "
                "components one at a time with combine_scalar (which then applies Reiter's "
                "2002 variance).",
                code="NEGATIVE_VARIANCE")
        S = quad / (k * (r - 1))
        nu = _lrr_df(t, r, -1.0, codes)
        total = Ubar * (r - 1)
    if not S > 0:  # the distributions' support starts at 0 (nan stays nan)
        p = 1.0 if S <= 0 else math.nan
    elif math.isinf(nu):
        p = float(special.chdtrc(k, S * k))  # scipy.stats.chi2.sf(S k, k)
    else:
        p = float(special.fdtrc(k, nu, S))  # scipy.stats.f.sf(S, k, nu)
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
        rules=rules,
        total_cov=total)
