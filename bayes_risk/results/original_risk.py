"""Result of the re-identification risk of the original on its keys (sdcMicro's measures)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from bayes_risk._constraints import Options, check_value
from bayes_risk._io import to_jsonable
from bayes_risk.results._base import RiskResult, draws, legend_below
from bayes_risk.results._summary import Summary

__all__ = ["OriginalRisk"]


@dataclass(frozen=True, repr=False)
class OriginalRisk(RiskResult):
    """Result of :func:`~bayes_risk.disclosure.original_risk`: sdcMicro's risk measures of the
    original on its keys (:doc:`/methods/disclosure`).

    Attributes
    ----------
    keys : list of str
    records : DataFrame
        One row per record, sdcMicro's names: ``fk``, ``Fk``, ``risk``; with SUDA2
        ``suda_score``, ``dis_suda_score``, ``min_msu_size`` (0: none) and
        ``<key>_contribution``; per sensitive column ``<col>_Distinct_Ldiversity``,
        ``<col>_Entropy_Ldiversity`` and ``<col>_Recursive_Ldiversity``.
    global_risk : dict
        ``expected_reidentifications`` (sdcMicro's ``global_risk_ER``), ``global_risk``,
        ``global_risk_pct``, ``max_risk`` and ``n_high_risk``.
    k_anonymity : dict
        Per ``k``: ``n_violating`` and ``pct_violating`` (``f_k < k``), with weights also
        ``n_violating_population`` (``F_k < k``).
    key_cells : dict
        ``n_records``, ``n_key_combinations``, ``n_sample_uniques``, ``pct_sample_uniques``.
    suda : dict or None
        SUDA2's contributions, ``dis_table``, MSU counts and settings; ``None`` without SUDA2.
    l_diversity : dict
        Per sensitive column: distinct l-diversity over records (``min``, quartiles, ``mean``,
        ``max``), ``n_records_l1`` / ``pct_records_l1``, ``min_entropy``, ``min_recursive``.
    settings : dict
    warnings : list of str
    """

    keys: list[str]
    records: pd.DataFrame
    global_risk: dict[str, Any]
    k_anonymity: dict[str, Any]
    key_cells: dict[str, Any]
    suda: dict[str, Any] | None = None
    l_diversity: dict[str, Any] = field(default_factory=dict)
    settings: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    plot_kinds = ("risk", "suda", "l_diversity")

    @property
    def weighted(self) -> bool:
        """Whether survey weights were given (else the risk is ``1/f_k``)."""
        return bool(self.settings.get("weighted"))

    def to_dataframe(self) -> pd.DataFrame:
        """The per-record table (a copy)."""
        return self.records.copy()

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe dictionary (``summary.json``), without the per-record table."""
        suda = None
        if self.suda is not None:
            suda = {k: (v.to_dict(orient="records") if isinstance(v, pd.DataFrame) else v)
                    for k, v in self.suda.items()}
        return to_jsonable({
            "keys": self.keys,
            "n_records": self.key_cells["n_records"],
            "global_risk": self.global_risk,
            "k_anonymity": self.k_anonymity,
            "key_cells": self.key_cells,
            "suda": suda,
            "l_diversity": self.l_diversity,
            "settings": self.settings,
            "warnings": self.warnings,
        })

    def _risk_text(self) -> str:
        if self.weighted:
            return ("Benedetti–Franconi risk with survey weights, F_k = sum of the weights of "
                    "the key cell" + (" (exact expectation)" if self.settings.get("method")
                                      == "exact" else " (sdcMicro's approximation for f_k >= 3)"))
        return ("no survey weights: the sample-based risk 1/f_k (sdcMicro with every weight 1), "
                "an upper bound of the risk in the population the sample stands for")

    def headline(self) -> str:
        """The measures in a few lines, as ``bayes-risk original-risk`` prints them: expected
        re-identifications, the individual risk, k-anonymity, SUDA2 and l-diversity."""
        g, kc = self.global_risk, self.key_cells
        lines = [
            f"Risk of the original on the keys {', '.join(self.keys)}: "
            f"{g['expected_reidentifications']:,.4g} expected re-identifications among "
            f"{kc['n_records']:,} records (global risk {g['global_risk_pct']:.3g} %)",
            self._risk_text(),
            "records violating k-anonymity (f_k < k): " + "; ".join(
                f"k = {k}: {v['n_violating']:,} ({v['pct_violating']:.3g} %)"
                for k, v in self.k_anonymity.items()),
        ]
        if self.suda is not None:
            lines.append(f"SUDA2: {self.suda['n_records_with_msu']:,} records with a minimal "
                         "sample unique; contributions " + ", ".join(
                             f"{r.variable} {r.contribution:.3g} %"
                             for r in self.suda["attribute_contributions"].itertuples()))
        lines += [f"l-diversity of {c}: {s['n_records_l1']:,} records in key cells with one "
                  f"value (min distinct l {s['min']:g}, median {s['median']:g})"
                  for c, s in self.l_diversity.items()]
        return "\n".join(lines)

    def summary(self) -> Summary:
        """Printable summary: global risk, k-anonymity, SUDA2 and l-diversity."""
        g, kc = self.global_risk, self.key_cells
        header = [("keys", ", ".join(self.keys)), ("records", kc["n_records"]),
                  ("key combinations", kc["n_key_combinations"]),
                  ("individual risk", self._risk_text()),
                  ("expected re-identifications", g["expected_reidentifications"]),
                  ("global risk (%)", g["global_risk_pct"]),
                  ("largest individual risk", g["max_risk"]),
                  ("records with higher risk than the main part", g["n_high_risk"])]
        if self.settings.get("compat"):
            header.append(("compat", self.settings["compat"]))
        rows = []
        for k, d in self.k_anonymity.items():
            row = {"k": int(k), "records f_k < k": d["n_violating"],
                   "% of records": d["pct_violating"]}
            if "n_violating_population" in d:
                row["records F_k < k"] = d["n_violating_population"]
            rows.append(row)
        tables = {"k-anonymity: records in key cells of fewer than k records": pd.DataFrame(rows)}
        notes = []
        if self.suda is not None:
            s = self.suda
            tables["SUDA2: contribution of each key to the total score (%)"] = \
                s["attribute_contributions"]
            tables["SUDA2: records per interval of the DIS score"] = s["dis_table"]
            notes.append(f"SUDA2: {s['n_records_with_msu']:,} record(s) have a minimal sample "
                         f"unique (MSUs by size: "
                         + ", ".join(f"{k}: {v:,}" for k, v in s["n_msu_by_size"].items())
                         + f"); DIS sampling fraction {s['dis_fraction']:g}.")
        if self.l_diversity:
            tables["l-diversity of the key cells (distinct values of the sensitive column)"] = \
                pd.DataFrame([{"sensitive": c, "min": d["min"], "median": d["median"],
                               "mean": d["mean"], "max": d["max"],
                               "records with l = 1": d["n_records_l1"],
                               "min entropy l": d["min_entropy"],
                               "min recursive l": d["min_recursive"]}
                              for c, d in self.l_diversity.items()])
        notes.append("Measures of the original alone (sdcMicro: measure_risk, suda2, "
                     "ldiversity): the same for every release, a baseline to compare it with.")
        return Summary("Re-identification risk of the original (sdcMicro)", header=header,
                       tables=tables, notes=notes, warnings=self.structured_warnings)

    # ---- plots --------------------------------------------------------------------------------
    @draws("risk")
    def _plot_risk(self, ax: Any) -> Any:
        """Records by individual risk (log axis), with the global risk dashed."""
        r = self.records["risk"].to_numpy(dtype=np.float64)
        lo = max(float(r.min()), 1e-8)
        bins = np.geomspace(lo / 1.05, 1.05 * float(r.max()), 31) if r.max() > lo * 1.1 \
            else np.geomspace(lo / 1.5, lo * 1.5, 4)
        ax.hist(r, bins=bins, color="#4c72b0", edgecolor="white")
        ax.set_xscale("log")
        ax.axvline(float(r.mean()), color="#333333", linestyle="--", linewidth=1,
                   label=f"global risk {100 * r.mean():.3g} % (mean)")
        ax.set_xlabel("individual re-identification risk"
                      + (" (survey weights)" if self.weighted else " (1/f_k, no weights)"))
        ax.set_ylabel("records")
        legend_below(ax, ncols=1)
        return ax

    @draws("suda")
    def _plot_suda(self, ax: Any) -> Any:
        """The contribution of each key to the total SUDA score (%)."""
        from bayes_risk.exceptions import ValidationError

        if self.suda is None:
            raise ValidationError("this result has no SUDA2 scores (suda=False).",
                                  code="RESULT_UNSUITED")
        c = self.suda["attribute_contributions"]
        pos = np.arange(len(c))
        ax.barh(pos, c["contribution"].to_numpy(dtype=np.float64), color="#4c72b0")
        ax.set_yticks(pos, c["variable"].tolist())
        ax.invert_yaxis()
        ax.set_xlabel("share of the total SUDA score from MSUs holding the key (%)")
        return ax

    @draws("l_diversity")
    def _plot_l_diversity(self, ax: Any, sensitive: str | None = None) -> Any:
        """Records by the distinct l-diversity of their key cell for ``sensitive``."""
        from bayes_risk.exceptions import ValidationError

        if not self.l_diversity:
            raise ValidationError("this result has no l-diversity (no sensitive column).",
                                  code="RESULT_UNSUITED")
        col = next(iter(self.l_diversity)) if sensitive is None else sensitive
        check_value(col, Options(tuple(self.l_diversity)), "sensitive")
        d = self.records[f"{col}_Distinct_Ldiversity"].to_numpy(dtype=np.float64)
        vals, cnt = np.unique(d, return_counts=True)
        ax.bar(vals, cnt, width=0.8, color=np.where(vals <= 1, "#c44e52", "#4c72b0"))
        ax.set(xlabel=f"distinct l-diversity of the key cell ({col})", ylabel="records")
        return ax
