"""Results of the business-data attribute measures (:mod:`bayes_risk.attribute.business`): the
relative difference of the largest values and the percentage of closest match."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from bayes_risk._io import to_jsonable
from bayes_risk.results._base import RiskResult, draws
from bayes_risk.results._summary import Summary

__all__ = ["RelativeDifferenceResult", "ClosestMatchResult", "wilson_interval"]

#: the confidence level of the intervals (:data:`bayes_risk.attribute.business.LEVEL`)
_LEVEL = 0.95


def wilson_interval(share: float, n: int, level: float = _LEVEL) -> tuple[float, float]:
    """Wilson's score interval of a share of ``n`` units (``nan`` without units).

    Examples
    --------
    >>> [round(x, 4) for x in wilson_interval(0.5, 4)]
    [0.15, 0.85]
    """
    from scipy import stats

    if n < 1 or not math.isfinite(share):
        return (math.nan, math.nan)
    z = float(stats.norm.ppf(0.5 + level / 2))
    centre = (share + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(share * (1 - share) / n + z * z / (4 * n * n))
    return (max(0.0, centre - half), min(1.0, centre + half))


@dataclass(frozen=True, repr=False)
class RelativeDifferenceResult(RiskResult):
    """The relative difference between the largest true values and the intruder's estimates
    of them (:func:`~bayes_risk.attribute.business.relative_difference`).

    Attributes
    ----------
    table : DataFrame
        One row per column, rank of the target and estimator: the target ``record`` and its
        ``true_value``, the pooled ``estimate`` with its 95 % t interval (``estimate_lo``,
        ``estimate_hi``), ``relative_difference`` with the interval it implies (``rd_lo``,
        ``rd_hi``), its range over the datasets and ``within_delta``.
    m : int
        Synthetic datasets.
    delta : float
        A relative difference at most ``delta`` is a disclosure.
    top : int
        Targets per column.
    columns : list of str
    own_record_note : str
        Why the own-record estimator is not used (empty when it is).
    warnings : list of str
    """

    table: pd.DataFrame
    m: int
    delta: float
    top: int
    columns: list[str]
    own_record_note: str = ""
    warnings: list[str] = field(default_factory=list)

    plot_kinds: ClassVar[tuple[str, ...]] = ("relative_difference",)

    @property
    def warning_details(self) -> dict[str, str]:
        """What ``M_EQUALS_ONE`` means here."""
        return {"M_EQUALS_ONE": "one synthetic dataset: the intruder's estimate has no "
                                "interval (its spread over datasets is unknown)."}

    @property
    def smallest(self) -> pd.Series:
        """The row of the smallest relative difference: the worst case over the targets and
        the intruder's estimators (the verdict's)."""
        return self.table.loc[self.table["relative_difference"].idxmin()]

    @property
    def share_within_delta(self) -> float:
        """Share of the targets estimated within ``delta`` by at least one estimator."""
        hit = self.table.groupby(["column", "rank"])["within_delta"].any()
        return float(hit.mean())

    def to_dataframe(self) -> pd.DataFrame:
        """The ``table`` attribute (a copy)."""
        return self.table.copy()

    def to_dict(self) -> dict[str, Any]:
        s = self.smallest
        return to_jsonable({
            "measure": "relative difference between the true largest value and the intruder's "
                       "estimate (Kim et al. 2018)",
            "smallest": {k: s[k] for k in ("column", "rank", "record", "estimator",
                                           "true_value", "estimate", "relative_difference",
                                           "rd_lo", "rd_hi", "rd_dataset_min",
                                           "rd_dataset_max")},
            "share_within_delta": self.share_within_delta,
            "settings": {"columns": self.columns, "top": self.top, "delta": self.delta,
                         "m": self.m, "level": _LEVEL,
                         "estimators": sorted(set(self.table["estimator"])),
                         "own_record_note": self.own_record_note},
            "targets": self.table.to_dict(orient="records"),
            "warnings": list(self.warnings),
        })

    def headline(self) -> str:
        """The smallest relative difference in one line: its estimator and interval, and the
        share of the targets within ``delta``."""
        s = self.smallest
        interval = (f", 95 % interval {s['rd_lo']:.3g}–{s['rd_hi']:.3g}"
                    if s["rd_lo"] == s["rd_lo"] else ", no interval (one dataset)")
        return (f"relative difference of the largest values: smallest "
                f"{s['relative_difference']:.3g} ({s['column']}, rank {int(s['rank'])}, record "
                f"{int(s['record'])}, estimator {s['estimator']}{interval}); "
                f"{100 * self.share_within_delta:.3g} % of the targets within {self.delta:g} "
                "(a disclosure)")

    def summary(self) -> Summary:
        s = self.smallest
        notes = [
            "Relative difference |estimate − truth| / |truth| of the intruder's estimate of each "
            "of the largest true values (Kim et al. 2018): 'rank' estimates the r-th largest "
            "value by the r-th largest released value, 'own_record' by the record's own released "
            "value; with m datasets by their mean, with its 95 % t interval (none for m = 1). "
            f"Small is a disclosure: at most {self.delta:g} counts as one.",
        ]
        if self.own_record_note:
            notes.append(f"The own-record estimator is not used: {self.own_record_note}.")
        return Summary(
            "Relative difference of the largest values",
            header=[("columns", ", ".join(self.columns)), ("targets per column", self.top),
                    ("synthetic datasets m", self.m),
                    ("smallest relative difference",
                     f"{s['relative_difference']:.4g} ({s['column']}, rank {int(s['rank'])}, "
                     f"{s['estimator']})"),
                    (f"targets within {self.delta:g} (share)", self.share_within_delta)],
            tables={"Targets": self.table[["column", "rank", "record", "true_value",
                                           "estimator", "estimate", "estimate_lo",
                                           "estimate_hi", "relative_difference", "rd_lo",
                                           "rd_hi", "within_delta"]]},
            notes=notes, warnings=self.structured_warnings)

    @draws("relative_difference")
    def _plot_rd(self, ax: Any) -> Any:
        """The relative difference of each target and estimator, with its interval and delta."""
        t = self.table
        y = np.arange(len(t))
        err = np.vstack([t["relative_difference"] - t["rd_lo"],
                         t["rd_hi"] - t["relative_difference"]])
        ax.errorbar(t["relative_difference"], y, xerr=np.nan_to_num(err), fmt="o", ms=4,
                    capsize=3)
        ax.axvline(self.delta, color="#b00", ls="--", lw=1,
                   label=f"delta {self.delta:g}: a disclosure below")
        ax.set_yticks(y, [f"{c} #{int(r)} ({e})" for c, r, e in
                          zip(t["column"], t["rank"], t["estimator"], strict=True)])
        ax.set_xlabel("relative difference |estimate − truth| / |truth|")
        ax.invert_yaxis()
        ax.legend(fontsize=8)
        return ax

    def _figsize(self, kind: str) -> tuple[float, float]:
        return (6.0, 1.2 + 0.35 * len(self.table))


@dataclass(frozen=True, repr=False)
class ClosestMatchResult(RiskResult):
    """The percentage of closest match (:func:`~bayes_risk.attribute.business.closest_match`).

    Attributes
    ----------
    table : DataFrame
        One row per record complete in the keys: ``score_pooled`` (1/|C| when its own row is
        among the closest C over the pooled datasets), ``n_tied`` (|C|), ``own_distance``,
        ``closest_distance`` and the score in each dataset (``score_1`` ...).
    per_dataset : ndarray
        The share of records matched to their own row, dataset by dataset.
    pooled : float
        The share over the pooled datasets.
    keys, constant_keys : list of str
        The columns of the distance, and those left out for not varying.
    n_records, n_excluded, m : int
        Records of the original, those left out for an empty key, datasets.
    """

    table: pd.DataFrame
    per_dataset: np.ndarray
    pooled: float
    keys: list[str]
    constant_keys: list[str]
    n_records: int
    n_excluded: int
    m: int

    plot_kinds: ClassVar[tuple[str, ...]] = ("datasets",)

    @property
    def value(self) -> float:
        """The larger of the pooled share and the mean share per dataset: the intruder's better
        use of the datasets (the verdict's)."""
        return float(max(self.pooled, float(np.mean(self.per_dataset))))

    @property
    def strategy(self) -> str:
        """Which use of the datasets :attr:`value` is."""
        return ("pooled datasets" if self.pooled >= float(np.mean(self.per_dataset))
                else "one dataset at a time (mean)")

    @property
    def interval(self) -> tuple[float, float]:
        """95 % Wilson interval of :attr:`value` over the records assessed."""
        return wilson_interval(self.value, len(self.table))

    @property
    def random_guess(self) -> float:
        """The share a guess among the released rows would match: ``1 / n``."""
        return 1.0 / self.n_records

    @property
    def warnings(self) -> list[str]:
        """``RECORDS_EXCLUDED`` when records with an empty key are left out."""
        return ["RECORDS_EXCLUDED"] if self.n_excluded else []

    def to_dataframe(self) -> pd.DataFrame:
        """The ``table`` attribute (a copy)."""
        return self.table.copy()

    def to_dict(self) -> dict[str, Any]:
        lo, hi = self.interval
        return to_jsonable({
            "measure": "percentage of closest match (Domingo-Ferrer et al. 2001; Kim et al. "
                       "2015)",
            "value": self.value, "strategy": self.strategy, "interval": [lo, hi],
            "pooled": self.pooled, "per_dataset": [float(x) for x in self.per_dataset],
            "random_guess": self.random_guess, "n_assessed": len(self.table),
            "settings": {"keys": self.keys, "constant_keys": self.constant_keys,
                         "n_records": self.n_records, "n_excluded": self.n_excluded,
                         "m": self.m, "level": _LEVEL,
                         "distance": "Euclidean over the keys standardised by the original's "
                                     "standard deviations; pooled: over every dataset"},
            "warnings": self.warnings,
        })

    def headline(self) -> str:
        """The share of records whose own released row is closest in one line: its interval,
        the strategy and the random guess."""
        lo, hi = self.interval
        return (f"closest match: {100 * self.value:.3g} % of {len(self.table):,} records have "
                f"their own released row closest (95 % interval {100 * lo:.3g}–{100 * hi:.3g} "
                f"%; {self.strategy}; random guess {100 * self.random_guess:.3g} %; keys "
                f"{', '.join(self.keys)})")

    def summary(self) -> Summary:
        lo, hi = self.interval
        per = self.per_dataset
        return Summary(
            "Percentage of closest match",
            header=[("keys (standardised)", ", ".join(self.keys)),
                    ("records assessed", len(self.table)), ("synthetic datasets m", self.m),
                    ("closest match (%)", 100 * self.value),
                    ("95 % Wilson interval (%)", f"{100 * lo:.3g}–{100 * hi:.3g}"),
                    ("strategy", self.strategy), ("pooled (%)", 100 * self.pooled),
                    ("per dataset (%)", f"{100 * per.min():.3g}–{100 * per.max():.3g}"),
                    ("random guess (%)", 100 * self.random_guess)],
            tables={"Share matched by use of the datasets": pd.DataFrame({
                "datasets": [*(f"dataset {l}" for l in range(1, self.m + 1)), "pooled"],
                "records matched (%)": [*(100 * per), 100 * self.pooled]})},
            notes=["A record is matched when its own released row is the closest to its true "
                   "values (ties share the match); distance-based record linkage "
                   "(Domingo-Ferrer et al. 2001) as Kim et al. (2015) use it for synthetic "
                   "business data."]
            + ([f"Keys left out for not varying: {', '.join(self.constant_keys)}."]
               if self.constant_keys else []),
            warnings=self.structured_warnings)

    @draws("datasets")
    def _plot_datasets(self, ax: Any) -> Any:
        """The share per dataset, the pooled share and the random guess."""
        x = np.arange(1, self.m + 1)
        ax.bar(x, 100 * self.per_dataset, color="#7a9cc6", label="one dataset")
        ax.axhline(100 * self.pooled, color="#b00", lw=1.2, label="pooled datasets")
        ax.axhline(100 * self.random_guess, color="grey", ls=":", lw=1, label="random guess")
        ax.set_xticks(x)
        ax.set_xlabel("synthetic dataset")
        ax.set_ylabel("records matched to their own row (%)")
        ax.legend(fontsize=8)
        return ax
