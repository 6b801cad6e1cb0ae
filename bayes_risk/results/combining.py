"""Results of the combining rules and of the interval-overlap and coefficient-difference
measures (:doc:`/methods/utility`)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from bayes_risk.results._base import RiskResult, draws
from bayes_risk.results._format import format_number
from bayes_risk.results._summary import Summary

__all__ = ["CombinedScalar", "CombinedMultivariate", "OverlapResult", "CoefDiffResult",
           "MULTIVARIATE_TESTS"]

#: the multivariate (Wald) tests by generation scheme, with the paper each follows
MULTIVARIATE_TESTS: dict[str, str] = {
    "partial": "Reiter (2003)",
    "full-same-n": "Raab, Nowok & Dibben (2016), matrix form",
    "full-population": "Reiter (2005)",
    "partial-sample": "Reiter (2003), the within covariances times 1 − f",
}


def _bar_plot(ax: Any, values: Any, mean: float, label: str) -> Any:
    v = np.asarray(values, dtype=float)
    pos = np.arange(1, v.size + 1)
    ax.bar(pos, v, width=0.6)
    if np.isfinite(mean):
        ax.axhline(mean, color="k", ls="--", lw=1, label=f"mean {mean:.3g}")
        ax.legend(loc="best")
    ax.set_xticks(pos)
    ax.set_ylabel(label)
    return ax


_RULE_NOTES = {
    "partial": "T_p = within_var + between_var / m; t reference with df degrees of freedom "
               "(Reiter 2003; with m < 5, evaluated at the upper quartile bound of r, where "
               "Reiter's degrees of freedom undercover).",
    "full-same-n": "Full synthesis of the same units: total_var = within_var (k/n + (1 + k/n)/m) "
                   "(proper) or within_var (k/n + 1/m); normal reference (Raab, Nowok & Dibben "
                   "2016).",
    "partial-sample": "A sample of the census from partially synthetic populations (Drechsler "
                      "& Reiter 2010): Reiter's partial rules with within_var already times the "
                      "finite-population correction 1 − f; conservative for synthesized "
                      "variables.",
    "full-population": "Samples from synthetic populations: total_var = (1 + 1/m) between_var − "
                       "within_var, t reference with df degrees of freedom (Raghunathan, Reiter "
                       "& Rubin 2003); (k/n) within_var when that is not positive (Reiter 2002).",
}


@dataclass(frozen=True, repr=False)
class CombinedScalar(RiskResult):
    """Result of :func:`~bayes_risk.utility.combine_scalar` (:doc:`/methods/utility`, Combining
    rules).

    Attributes
    ----------
    estimate : float
        ``q̄_m``, the mean of the per-dataset point estimates.
    between_var : float
        ``b_m`` (divisor ``m − 1``); ``nan`` when ``m = 1``.
    within_var : float
        ``ū_m``, the mean of the per-dataset variance estimates.
    total_var : float
        ``T_p = ū_m + b_m / m`` (``u_1`` when ``m = 1``).
    se : float
        ``sqrt(T_p)``.
    r : float
        ``r_m = (b_m / m) / ū_m`` (``inf`` when ``ū_m = 0 < b_m``; ``nan`` when ``m = 1``).
    df : float
        ``ν_p = (m − 1)(1 + 1/r_m)^2`` (``inf`` when ``b_m = 0`` or ``m = 1``; for ``m < 5``
        under the partial rules with the upper quartile bound of ``r_m``).
    ci_lower, ci_upper : float
        ``q̄_m ∓ t_{ν_p, 1−α/2} sqrt(T_p)``.
    alpha : float
        ``1 −`` confidence level of the interval.
    m : int
        Number of synthetic datasets.
    warnings : list of str
        Machine-readable codes.
    rules : str
        ``"partial"``, ``"full-same-n"`` or ``"full-population"``.
    """

    estimate: float
    between_var: float
    within_var: float
    total_var: float
    se: float
    r: float
    df: float
    ci_lower: float
    ci_upper: float
    alpha: float
    m: int
    warnings: list[str] = field(default_factory=list)
    rules: str = "partial"

    @property
    def ci(self) -> tuple[float, float]:
        """The interval ``(ci_lower, ci_upper)``."""
        return (self.ci_lower, self.ci_upper)

    def to_dataframe(self) -> pd.DataFrame:
        """One row: the combined estimate, its variances, interval and degrees of freedom."""
        d = asdict(self)
        d.pop("warnings")
        return pd.DataFrame([d])

    def summary(self) -> Summary:
        """Printable summary of the combined estimate (Reiter 2003)."""
        return Summary(
            "Combined estimate over synthetic datasets",
            header=[("synthetic datasets m", self.m),
                    ("confidence level", 1 - self.alpha)],
            tables={"Combined estimate": self.to_dataframe().drop(columns=["m", "alpha"])},
            notes=[_RULE_NOTES.get(self.rules, self.rules)],
            warnings=self.structured_warnings,
        )

    plot_kinds = ("interval",)

    @draws("interval")
    def _plot_interval(self, ax: Any) -> Any:
        """The combined estimate with its confidence interval."""
        lo, hi = self.ci
        ax.errorbar([self.estimate], [0], xerr=[[self.estimate - lo], [hi - self.estimate]],
                    fmt="o", capsize=4)
        ax.set_yticks([])
        ax.set_xlabel(f"combined estimate, {100 * (1 - self.alpha):g}% interval")
        return ax


@dataclass(frozen=True, repr=False)
class CombinedMultivariate(RiskResult):
    """Result of :func:`~bayes_risk.utility.combine_multivariate` (:doc:`/methods/utility`).

    Attributes
    ----------
    estimate : ndarray, shape (k,)
        ``q̄_m``.
    between_cov, within_cov : ndarray, shape (k, k)
        ``B_m`` (divisor ``m − 1``) and ``Ū_m``.
    r : float
        ``r_p = tr(B_m Ū_m^{-1}) / (m k)`` or, for ``"full-population"``,
        ``r_f = (1 + 1/m) tr(B_m Ū_m^{-1}) / k``.
    statistic : float
        ``S = (q̄ − Q0)ᵀ total_cov^{-1} (q̄ − Q0) / k``.
    df_num : int
        ``k``.
    df_den : float
        ``ν_p`` or ``ν_f`` (``inf`` for ``"full-same-n"`` and when ``r_p = 0``).
    p_value : float
        Upper tail of ``F_{k, df_den}`` at ``statistic``.
    m : int
    warnings : list of str
        ``"SMALL_T"`` when ``t = k(m − 1) ≤ 4``.
    rules : str
        The generation scheme whose test was used.
    total_cov : ndarray, shape (k, k), optional
        The covariance matrix of ``q̄`` the statistic uses.
    """

    estimate: np.ndarray
    between_cov: np.ndarray
    within_cov: np.ndarray
    r: float
    statistic: float
    df_num: int
    df_den: float
    p_value: float
    m: int
    warnings: list[str] = field(default_factory=list)
    rules: str = "partial"
    total_cov: np.ndarray | None = None

    def to_dataframe(self) -> pd.DataFrame:
        """One row per component: estimate and the within and between variances."""
        return pd.DataFrame({
            "component": np.arange(1, len(self.estimate) + 1),
            "estimate": self.estimate,
            "within_var": np.diag(self.within_cov),
            "between_var": np.diag(self.between_cov),
        })

    def summary(self) -> Summary:
        """Printable summary of the multivariate test."""
        ref = MULTIVARIATE_TESTS.get(self.rules, self.rules)
        r_name = "r_f" if self.rules == "full-population" else "r_p"
        return Summary(
            "Combined multivariate test over synthetic datasets",
            header=[("synthetic datasets m", self.m), ("rules", f"{self.rules} ({ref})"),
                    ("statistic", self.statistic), (r_name, self.r),
                    ("df", f"{self.df_num}, {format_number(self.df_den)}"),
                    ("p-value", self.p_value)],
            tables={"Components": self.to_dataframe()},
            notes=[f"The statistic is referred to an F distribution with (k, nu) degrees of "
                   f"freedom ({ref}); nu = inf is the chi-square reference."],
            warnings=self.structured_warnings,
        )


@dataclass(frozen=True, repr=False)
class OverlapResult(RiskResult):
    """Result of :func:`~bayes_risk.utility.ci_overlap`.

    Attributes
    ----------
    values : ndarray of float, shape (E,)
        Overlap per estimand.
    mean : float
        Mean over estimands.
    mean_truncated : float
        Mean with negative values set to 0 (synthpop's summary of the signed overlap).
    kind : str
        ``"length"``, ``"signed"`` or ``"probability"``.
    """

    values: np.ndarray
    mean: float
    mean_truncated: float
    kind: str

    def to_dataframe(self) -> pd.DataFrame:
        """One row per estimand: its overlap."""
        return pd.DataFrame({"estimand": np.arange(1, self.values.size + 1),
                             "overlap": self.values})

    def summary(self) -> Summary:
        """Printable summary: overlap per estimand and the means."""
        return Summary(
            f"Confidence-interval overlap ({self.kind})",
            header=[("estimands", int(self.values.size)), ("mean", self.mean),
                    ("mean, negatives as 0", self.mean_truncated)],
            tables={"Per estimand": self.to_dataframe()},
            notes=["Karr et al. (2006); Snoke et al. (2018) §5: 1 = identical intervals."],
        )

    plot_kinds = ("values",)

    @draws("values")
    def _plot_values(self, ax: Any) -> Any:
        """Overlap per estimand, with the mean."""
        return _bar_plot(ax, self.values, self.mean, f"interval overlap ({self.kind})")


@dataclass(frozen=True, repr=False)
class CoefDiffResult(RiskResult):
    """Result of :func:`~bayes_risk.utility.std_coef_diff`.

    Attributes
    ----------
    values : ndarray of float, shape (E,)
        ``|β̂_orig − β̂_syn| / se(β̂_orig)`` per coefficient.
    mean, median : float
        Summaries over coefficients.
    """

    values: np.ndarray
    mean: float
    median: float

    def to_dataframe(self) -> pd.DataFrame:
        """One row per coefficient: its standardised difference."""
        return pd.DataFrame({"coefficient": np.arange(1, self.values.size + 1),
                             "std_coef_diff": self.values})

    def summary(self) -> Summary:
        """Printable summary: standardised difference per coefficient, mean and median."""
        return Summary(
            "Standardised coefficient differences",
            header=[("coefficients", int(self.values.size)), ("mean", self.mean),
                    ("median", self.median)],
            tables={"Per coefficient": self.to_dataframe()},
            notes=["|beta_orig - beta_syn| / se(beta_orig); 0 = the synthetic fit reproduces "
                   "the original's coefficient."],
        )

    plot_kinds = ("values",)

    @draws("values")
    def _plot_values(self, ax: Any) -> Any:
        """Standardised difference per coefficient, with the mean."""
        return _bar_plot(ax, self.values, self.mean, "standardised coefficient difference")
