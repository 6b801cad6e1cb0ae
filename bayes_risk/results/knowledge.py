"""Result of the knowledge sweep over subsets of the intruder's known variables (Hu 2019 §5)."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from bayes_risk._io import to_jsonable
from bayes_risk.results._base import RiskResult, draws
from bayes_risk.results._identification_summary import ID_MEASURES
from bayes_risk.results._summary import Summary

__all__ = ["KnowledgeSweepResult", "SWEEP_MEASURES", "ATTRIBUTE_SWEEP_MEASURES",
           "SHAPLEY_MEASURES", "SWEEP_TABLES"]

#: the sweep's tables, file name -> attribute (``KnowledgeSweepResult.files``)
SWEEP_TABLES = {"known_sweep.csv": "table", "known_sweep_drivers.csv": "drivers",
                "known_sweep_levels.csv": "levels"}
#: file-level measures reported for every subset (those of ``identification_risk``)
SWEEP_MEASURES = tuple(name for name, _ in ID_MEASURES)
#: file-level measures of an attribute-risk sweep, and what they are
ATTRIBUTE_MEASURES = (
    ("mean_p_true", "mean probability of the true values (p_true)"),
    ("prop_top", "share of records whose true values are the best guess"),
    ("null_mean_p_true", "mean p_true if the release said nothing of the records"),
    ("null_prop_top", "share ranked first if the release said nothing of the records"),
    ("mean_baseline", "mean 1/G: p_true under the uniform prior alone, before the release"),
    ("n_records", "records evaluated (p_true not nan)"),
    ("n_flagged", "records flagged (unreliable estimates)"),
)
ATTRIBUTE_SWEEP_MEASURES = tuple(name for name, _ in ATTRIBUTE_MEASURES)
#: the measures Shapley values are computed for (additive over targets or records); the first
#: ranks the drivers
SHAPLEY_MEASURES = {"identification": ("expected_match_risk", "true_match_rate_targets"),
            "attribute": ("mean_p_true", "prop_top")}
#: the measures a summary shows beside the subsets (frontier tables)
_SHOWN = {"identification": ("expected_match_risk", "true_match_rate_targets",
                             "false_match_rate"),
          "attribute": ("mean_p_true", "prop_top", "null_prop_top")}
_LABEL = dict(ID_MEASURES) | dict(ATTRIBUTE_MEASURES)
_RISK = {"identification": "Identification risk", "attribute": "Attribute risk"}


def subset_label(s: Collection[str], cands: Sequence[str]) -> str:
    """The label of a subset: its variables in the candidates' order, ``"(none)"`` if empty."""
    return ", ".join(c for c in cands if c in s) or "(none)"


@dataclass(frozen=True, repr=False)
class KnowledgeSweepResult(RiskResult):
    """Identification or attribute risk over subsets of the candidate known variables
    (:doc:`/user_guide/knowledge`).

    Attributes
    ----------
    candidates, synthesized : tuple of str
        The candidate known variables; those synthesized.
    measure : str
        The measure the frontier and the greedy path rank subsets by.
    table : DataFrame
        One row per subset: ``known``, ``n_known``, one boolean column per candidate, the
        file-level measures, ``greedy_step`` (``-1``: off the path) and ``frontier``.
    drivers : DataFrame
        One row per candidate: Shapley values of the two measures and the risk removed without it
        (``*_without``, ``*_removed``, ``*_removed_share``).
    levels : DataFrame
        Per-level contributions under the full set (``share_risk``, ``risk_ratio``, …).
    shapley_note : str
        How the Shapley values were computed (or why not).
    settings : dict
    warnings : tuple of str
    warning_details : dict
    kind : {"identification", "attribute"}
        Which risk was swept.
    """

    candidates: tuple[str, ...]
    synthesized: tuple[str, ...]
    measure: str
    table: pd.DataFrame
    drivers: pd.DataFrame
    levels: pd.DataFrame
    shapley_note: str
    settings: dict[str, Any]
    warnings: tuple[str, ...] = ()
    warning_details: dict[str, str] = field(default_factory=dict)
    kind: str = "identification"

    plot_kinds = ("frontier", "drivers", "levels")

    @property
    def measures(self) -> tuple[str, ...]:
        """The file-level measures of every subset (columns of ``table``)."""
        return SWEEP_MEASURES if self.kind == "identification" else ATTRIBUTE_SWEEP_MEASURES

    @property
    def shown_measures(self) -> tuple[str, ...]:
        """The three measures the summaries show beside each subset."""
        return _SHOWN[self.kind]

    @property
    def shapley_measures(self) -> tuple[str, ...]:
        """The measures of the drivers; the first is the headline's."""
        return SHAPLEY_MEASURES[self.kind]

    # -- tables -----------------------------------------------------------------------------
    @property
    def frontier(self) -> pd.DataFrame:
        """The subsets on the Pareto frontier of risk against the number known."""
        cols = ["known", "n_known", *self.measures]
        return self.table.loc[self.table["frontier"], cols].reset_index(drop=True)

    @property
    def greedy_path(self) -> pd.DataFrame:
        """The greedy forward path beyond ``max_size`` (empty when the lattice was complete)."""
        t = self.table[self.table["greedy_step"] >= 0].sort_values("greedy_step")
        return t[["known", "n_known", *self.measures]].reset_index(drop=True)

    def risk(self, known: Any, measure: str | None = None) -> float:
        """The risk of one subset evaluated (``known``: variables or its label).

        Raises
        ------
        KeyError
            When the subset was not evaluated.
        """
        measure = measure or self.measure
        if isinstance(known, str):
            label = known
        else:
            label = subset_label({str(c) for c in known}, self.candidates)
        hit = self.table.loc[self.table["known"] == label, measure]
        if hit.empty:
            raise KeyError(f"subset {label!r} was not evaluated")
        return float(hit.iloc[0])

    def files(self) -> tuple[dict[str, pd.DataFrame], dict[str, tuple[Any, str]]]:
        """The sweep's tables (file name -> DataFrame) and figures (file name -> (result, plot
        kind)), the one naming of the command line's and the audit's files.

        Returns
        -------
        tuple of dict
            ``known_sweep.csv`` (``table``), ``known_sweep_drivers.csv`` (``drivers``) and
            ``known_sweep_levels.csv`` (``levels``); the figures ``known_sweep.png``
            (``"frontier"``) and ``known_sweep_drivers.png`` (``"drivers"``).
        """
        tables = {name: getattr(self, part) for name, part in SWEEP_TABLES.items()}
        return tables, {"known_sweep.png": (self, "frontier"),
                        "known_sweep_drivers.png": (self, "drivers")}

    def to_frame(self) -> pd.DataFrame:
        """The per-subset table (``table``)."""
        return self.table.copy()

    to_dataframe = to_frame

    def headline(self) -> str:
        """One sentence naming the variable whose removal lowers the risk most."""
        m = self.shapley_measures[0]
        d = self.drivers.sort_values(f"{m}_removed", ascending=False, kind="stable")
        top = d.iloc[0]
        full = self.risk(self.candidates, m)
        share = top[f"{m}_removed_share"]
        what = "expected match risk" if m == "expected_match_risk" else _LABEL[m]
        return (f"Withholding {top['variable']} from an intruder who knows all of "
                f"{', '.join(self.candidates)} lowers the {what} from {full:.4g} "
                f"to {top[f'{m}_without']:.4g}"
                + (f" ({100 * share:.1f}% of it)." if np.isfinite(share) else "."))

    def text_line(self) -> str:
        """The sweep in one line (the commands print it): its subsets, then :meth:`headline`."""
        return (f"knowledge sweep over {len(self.table)} subsets of "
                f"{', '.join(self.candidates)}: {self.headline()}")

    def summary(self) -> Summary:
        """Printable summary: the frontier, the drivers and the top levels."""
        m = self.measure
        s1, s2 = self.shapley_measures
        lev = self.levels.sort_values("share_risk", ascending=False).head(10) \
            if len(self.levels) else self.levels
        shap_cols = ["variable", f"shapley_{s1}", f"shapley_{s2}", f"{s1}_without",
                     f"{s1}_removed_share"]
        shown = ["known", "n_known", *self.shown_measures]
        how = ("aggregation", self.settings.get("aggregation", "")) \
            if self.kind == "identification" else ("estimator", self.settings.get("estimator", ""))
        what = ("the measures are those of identification_risk for each subset"
                if self.kind == "identification" else
                "the measures are those of attribute_risk for each subset (the known variables "
                "of a record fixed at their true values)")
        return Summary(
            f"{_RISK[self.kind]} by the intruder's knowledge",
            header=[
                ("candidate known variables", ", ".join(self.candidates)),
                ("synthesized", ", ".join(self.synthesized) or "none"),
                how,
                ("subsets evaluated", len(self.table)),
                ("exhaustive up to size", self.settings.get("max_size")),
                ("ranked by", _LABEL.get(m, m)),
                ("risk with every candidate known", self.risk(self.candidates)),
            ],
            tables={
                "Pareto frontier (fewest variables for the most risk)": self.frontier[shown],
                "Drivers": self.drivers[shap_cols],
                "Levels holding the most risk (full set)": lev[
                    ["variable", "level", "share_targets", "share_risk", "risk_ratio"]],
            },
            notes=[self.shapley_note + ".", self.headline(),
                   "Sensitivity to the intruder's knowledge is the open question of Hu (2019) "
                   f"§5; {what}."],
            warnings=self.structured_warnings,
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe dictionary (the tables as lists of records)."""
        return to_jsonable({
            "candidates": list(self.candidates),
            "synthesized": list(self.synthesized),
            "kind": self.kind,
            "measure": self.measure,
            "subsets": self.table.to_dict(orient="records"),
            "frontier": self.frontier.to_dict(orient="records"),
            "drivers": self.drivers.to_dict(orient="records"),
            "levels": self.levels.to_dict(orient="records"),
            "shapley_note": self.shapley_note,
            "headline": self.headline(),
            "settings": self.settings,
            "warnings": list(self.warnings),
            "warning_details": dict(self.warning_details),
        })

    # -- plots ------------------------------------------------------------------------------
    def _figsize(self, kind: str) -> tuple[float, float]:
        if kind == "levels":
            return (7.0, max(3.0, 0.25 * len(self.levels) + 1.5))
        return (6.5, 4.2)

    @draws("frontier")
    def _plot_frontier(self, ax: Any, measure: str | None = None) -> Any:
        """Risk against the number of known variables; the frontier joined and labelled."""
        m = measure or self.measure
        t = self.table
        rng = np.random.default_rng(0)  # horizontal jitter only, to separate the points
        x = t["n_known"].to_numpy(dtype=float) + rng.uniform(-0.12, 0.12, len(t))
        ax.scatter(x, t[m], s=14, color="0.55", label="subset", zorder=2)
        g = t[t["greedy_step"] >= 0].sort_values("greedy_step")
        if len(g):
            ax.plot(g["n_known"], g[m], "--", color="C2", lw=1, label="greedy path", zorder=3)
        f = t[t["frontier"]].sort_values("n_known")
        ax.plot(f["n_known"], f[m], "o-", color="C3", ms=6, lw=1.5, label="frontier", zorder=4)
        right = len(self.candidates) / 2
        for _, r in f.iterrows():
            # labels of the right half end at their point, so the longest stay inside the figure
            at_right = r["n_known"] > right
            ax.annotate(r["known"], (r["n_known"], r[m]), textcoords="offset points",
                        xytext=(-4 if at_right else 4, 4), ha="right" if at_right else "left",
                        fontsize=7)
        ax.set_xticks(range(0, len(self.candidates) + 1))
        ax.set(xlabel="number of known variables", ylabel=_LABEL.get(m, m))
        ax.set_title(f"{_RISK[self.kind]} by the intruder's knowledge")
        ax.legend(loc="best", fontsize=8)
        return ax

    @draws("drivers")
    def _plot_drivers(self, ax: Any) -> Any:
        """Bars: each variable's Shapley value (else the risk its removal takes away)."""
        d = self.drivers
        m = self.shapley_measures[0]
        shap = d[f"shapley_{m}"].notna().all()
        col = f"shapley_{m}" if shap else f"{m}_removed"
        y = np.arange(len(d))
        ax.barh(y, d[col], color="C0", label="Shapley value" if shap else "removed")
        if shap:
            ax.scatter(d[f"{m}_removed"], y, color="C3", zorder=3,
                       label="risk removed by withholding it (from the full set)")
        ax.set_yticks(y, d["variable"])
        ax.invert_yaxis()
        what = "expected match risk" if m == "expected_match_risk" else _LABEL[m]
        ax.set_xlabel(f"contribution to the {what}")
        ax.set_title(f"What drives the {self.kind} risk")
        ax.legend(loc="best", fontsize=8)
        return ax

    @draws("levels")
    def _plot_levels(self, ax: Any) -> Any:
        """Share of the risk against share of the targets, by level of every variable."""
        lv = self.levels
        labels = [f"{v}: {lvl}" for v, lvl in zip(lv["variable"], lv["level"], strict=True)]
        y = np.arange(len(lv))
        ax.barh(y - 0.2, lv["share_risk"], height=0.4, color="C3", label="share of risk")
        ax.barh(y + 0.2, lv["share_targets"], height=0.4, color="0.6",
                label="share of targets" if self.kind == "identification" else "share of records")
        ax.set_yticks(y, labels, fontsize=7)
        ax.invert_yaxis()
        ax.set_xlabel("share")
        ax.set_title("Where the risk sits (every candidate known)")
        ax.legend(loc="best", fontsize=8)
        return ax
