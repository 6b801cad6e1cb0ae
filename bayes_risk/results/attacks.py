"""The results of anonymeter's attacks (:doc:`/methods/attacks`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from bayes_risk._io import to_jsonable
from bayes_risk.results._base import RiskResult, draws, legend_below
from bayes_risk.results._summary import Summary
from bayes_risk.warning_codes import ATTACK_MESSAGES, message

__all__ = ["SinglingOutResult", "LinkabilityResult", "InferenceResult"]

_RATES = (("main", "main (original)", "tab:red"),
          ("control", "control (holdout)", "tab:blue"),
          ("baseline", "baseline (random)", "0.5"))


@dataclass(frozen=True, repr=False)
class _AttackResult(RiskResult):
    """What both attacks' results share: the table, the settings, the warnings, the plots."""

    table: pd.DataFrame
    settings: dict[str, Any]
    warnings: list[str] = field(default_factory=list)

    plot_kinds: ClassVar[tuple[str, ...]] = ("risk", "rates")
    _measure: ClassVar[str] = ""
    _title: ClassVar[str] = ""
    #: the column that tells the rows of one dataset apart ("mode", "n_neighbors")
    _by: ClassVar[str] = ""

    def to_dataframe(self) -> pd.DataFrame:
        """The risk table (:attr:`table`)."""
        return self.table

    def _message(self, code: str) -> str:
        return ATTACK_MESSAGES.get(code) or message(code)

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe: ``measure``, ``settings``, ``table`` and the warnings."""
        return to_jsonable({
            "measure": self._measure,
            "settings": self.settings,
            "table": self.table.to_dict(orient="records"),
            **({} if getattr(self, "by_group", None) is None else
               {"by_group": self.by_group.to_dict(orient="records")}),
            "warnings": list(self.warnings),
            "structured_warnings": [w.to_dict() for w in self.structured_warnings],
        })

    def headline(self) -> pd.DataFrame:
        """The rows the verdict reads: per mode or at ``K`` neighbours, the riskiest dataset."""
        t = self._headline_rows()
        if t.empty:
            return t
        groups = {g: i for i, g in enumerate(dict.fromkeys(t[self._by]))}
        order = t.assign(_r=t["risk"].fillna(np.inf)).sort_values(
            ["_r", "dataset"], ascending=[False, True], kind="stable")
        top = order.groupby(self._by, sort=False).head(1).drop(columns="_r")
        return top.iloc[np.argsort([groups[g] for g in top[self._by]], kind="stable")
                        ].reset_index(drop=True)

    def headline_text(self) -> str:
        """:meth:`headline` in a line: the attack, then ``risk [interval]`` per mode, secret or
        ``k`` neighbours, each at the riskiest dataset."""
        by = self._by
        return f"{self._label()}: " + "; ".join(
            f"{f'k = {int(r[by])}' if by == 'n_neighbors' else r[by]} {r['risk']:.3f} "
            f"[{r['ci_low']:.3f}, {r['ci_high']:.3f}]" for _, r in self.headline().iterrows())

    def _label(self) -> str:
        return self._measure.replace("_", " ")

    def _headline_rows(self) -> pd.DataFrame:
        return self.table

    def _risk_table(self) -> pd.DataFrame:
        t = self.table
        lvl = int(round(100 * float(self.settings["confidence_level"])))
        return pd.DataFrame({
            "dataset": t["dataset"], self._by: t[self._by],
            "risk": t["risk"],
            f"{lvl} % interval": [f"[{a:.3f}, {b:.3f}]" for a, b in
                                  zip(t["ci_low"], t["ci_high"], strict=True)],
            "main rate": t["main_rate"], "control rate": t["control_rate"],
            "baseline rate": t["baseline_rate"],
        })

    @draws("risk")
    def _plot_risk(self, ax: Any) -> Any:
        """The risk and its interval, per dataset (and mode or neighbours)."""
        t = self.table
        groups = list(dict.fromkeys(t[self._by]))
        m = int(t["dataset"].max())
        width = 0.8 / max(m, 1)
        for l in range(1, m + 1):
            d = t[t["dataset"] == l].set_index(self._by).reindex(groups)
            x = np.arange(len(groups)) - 0.4 + width * (l - 0.5)
            y = d["risk"].to_numpy(float)
            err = np.vstack([y - d["ci_low"].to_numpy(float), d["ci_high"].to_numpy(float) - y])
            ax.errorbar(x, y, yerr=err, fmt="o", capsize=3,
                        label=f"dataset {l}" if m > 1 else "risk")
        ax.set_xticks(np.arange(len(groups)), [self._group_label(g) for g in groups])
        ax.set_xlim(-0.6, len(groups) - 0.4)  # a group's datasets around its tick
        ax.set_ylim(-0.02, max(0.1, float(np.nanmax(t["ci_high"].to_numpy(float),
                                                     initial=0.0)) * 1.15))
        lvl = int(round(100 * float(self.settings["confidence_level"])))
        ax.set_ylabel(f"{self._title.lower()} (with {lvl} % interval)")
        legend_below(ax)
        return ax

    @draws("rates")
    def _plot_rates(self, ax: Any) -> Any:
        """Success rates of the main, control and baseline attacks (the first dataset)."""
        t = self.table[self.table["dataset"] == self.table["dataset"].min()]
        groups = list(t[self._by])
        x = np.arange(len(groups))
        for i, (key, label, color) in enumerate(_RATES):
            r = t[f"{key}_rate"].to_numpy(float)
            if np.isnan(r).all():
                continue
            ax.errorbar(x + (i - 1) * 0.2, r, yerr=t[f"{key}_error"].to_numpy(float), fmt="o",
                        capsize=3, color=color, label=label)
        ax.set_xticks(x, [self._group_label(g) for g in groups])
        ax.set_xlim(-0.6, len(groups) - 0.4)
        ax.set_ylabel("success rate (Wilson interval)")
        legend_below(ax)
        return ax

    def _group_label(self, g: Any) -> str:
        return str(g)

    #: the risk table's last column, named and read off a column of :attr:`table`
    _extra_column: ClassVar[tuple[str, str]] = ("tied", "share_tied_main")

    def _summary_header(self) -> list[tuple[str, Any]]:
        raise NotImplementedError

    #: how to read the table: what the attack does and whom its rates count (before the
    #: risk's formula), the methods page's section, what follows the formula
    _reading: ClassVar[tuple[str, str, str]] = ("", "", "")

    def summary(self) -> Summary:
        """Header (columns, sizes, options), the risk table and how to read it."""
        name, column = self._extra_column
        before, section, after = self._reading
        return Summary(
            f"{self._title} (anonymeter)",
            header=self._summary_header(),
            tables={"risk": self._risk_table().assign(**{name: self.table[column].to_numpy()})},
            notes=[f"{before}Risk = (main − control) / (1 − control), clipped to [0, 1] (Giomi "
                   f"et al. 2023; methods page, {section}).{after}"],
            warnings=self.structured_warnings,
        )


@dataclass(frozen=True, repr=False)
class SinglingOutResult(_AttackResult):
    """Result of :func:`~bayes_risk.singling_out_risk` (:doc:`/methods/attacks`).

    Attributes
    ----------
    table : DataFrame
        One row per synthetic dataset and mode: attacks asked and written, predicates singling
        out a record of the original (``n_main``) and of the holdout (``n_control``, corrected
        for size), random ones (``n_baseline``), each attack's Wilson ``*_rate`` and ``*_error``,
        ``residual``, ``risk``, ``ci_low``, ``ci_high``.
    queries : DataFrame
        Every predicate written, with its columns and whom it singles out (with ``groups``:
        the group of its synthetic row, ``group``, and of the records it singles out).
    by_group : DataFrame or None
        With ``groups``: one row per dataset, mode and level of the grouping column, the
        predicates of that group (``n_queries``: those written on a synthetic row of the
        level) singling out a record of the original (``n_main``; ``n_main_other_group`` of
        them a record of another level) and of the holdout (``n_control``, corrected for size),
        their rates and the risk, the baseline of all predicates.
    settings : dict
        Options, sizes, the seed.
    warnings : list of str
        Machine-readable codes.
    """

    queries: pd.DataFrame = field(default_factory=pd.DataFrame)
    by_group: pd.DataFrame | None = None

    _measure: ClassVar[str] = "singling_out"
    _title: ClassVar[str] = "Singling-out risk"
    _by: ClassVar[str] = "mode"

    _extra_column: ClassVar[tuple[str, str]] = ("predicates", "n_queries")

    def _summary_header(self) -> list[tuple[str, Any]]:
        s = self.settings
        return [
            ("original records (distinct)",
             f"{s['n_original']:,} ({s['n_original_distinct']:,})"),
            ("holdout records (distinct)",
             "none" if s["n_holdout"] is None
             else f"{s['n_holdout']:,} ({s['n_holdout_distinct']:,})"),
            ("synthetic datasets m", s["m"]),
            ("predicates asked per dataset and mode", s["n_attacks"]),
            ("columns of a multivariate predicate", s["n_cols"]),
        ]

    _reading: ClassVar[tuple[str, str, str]] = (
        "A predicate written on a synthetic dataset singles out a person when it matches "
        "exactly one record. Main rate: on the original; control rate: on the holdout (records "
        "the synthesis did not use); baseline: random predicates on the original. ",
        "Singling out, linkability and inference", "")


@dataclass(frozen=True, repr=False)
class LinkabilityResult(_AttackResult):
    """Result of :func:`~bayes_risk.linkability_risk` (:doc:`/methods/attacks`).

    Attributes
    ----------
    table : DataFrame
        One row per synthetic dataset and ``n_neighbors`` ``k``: records linked by each attack,
        their Wilson ``*_rate`` and ``*_error``, ``residual``, ``risk``, ``ci_low``, ``ci_high``,
        ``share_tied_main`` and ``share_tied_control``.
    records : DataFrame
        Per dataset and attacked record: ``role``, ``row``, ``linked_at`` (missing: not linked)
        and ``tied``.
    by_group : DataFrame or None
        With ``groups``: one row per dataset and level of the grouping column, the attacked
        records of that level (main and control) linked within ``n_neighbors``, their rates
        and the risk (anonymeter's ``risk_for_groups``), the baseline of all records.
    settings : dict
        The two sets of columns, options, sizes, the seed.
    warnings : list of str
        Machine-readable codes.
    """

    records: pd.DataFrame = field(default_factory=pd.DataFrame)
    by_group: pd.DataFrame | None = None

    _measure: ClassVar[str] = "linkability"
    _title: ClassVar[str] = "Linkability risk"
    _by: ClassVar[str] = "n_neighbors"

    def _headline_rows(self) -> pd.DataFrame:
        return self.table[self.table["n_neighbors"] == self.settings["n_neighbors"]]

    def _group_label(self, g: Any) -> str:
        return f"k = {g}"

    def _label(self) -> str:
        a, b = self.settings["aux_columns"]
        return f"linkability of ({', '.join(a)}) with ({', '.join(b)})"


    def _summary_header(self) -> list[tuple[str, Any]]:
        s = self.settings
        a, b = s["aux_columns"]
        return [
            ("the intruder's first table", ", ".join(a)),
            ("the intruder's second table", ", ".join(b)),
            ("records attacked (original, holdout)",
             f"{s['n_attacks']:,}" + ("" if s["n_holdout"] is None else " each")),
            ("synthetic datasets m", s["m"]),
            ("nearest rows K", s["n_neighbors"]),
        ]

    _reading: ClassVar[tuple[str, str, str]] = (
        "A record is linked when its two parts share one of their k nearest synthetic rows. "
        "Main rate: records of the original; control rate: records of the holdout; baseline: "
        "random rows. ", "Singling out and linkability",
        " 'tied': share of the original's records whose k-th nearest row was as distant as the "
        "next (equally distant rows are taken in random order).")


@dataclass(frozen=True, repr=False)
class InferenceResult(_AttackResult):
    """Result of :func:`~bayes_risk.inference_risk` (:doc:`/methods/attacks`).

    Attributes
    ----------
    table : DataFrame
        One row per synthetic dataset and secret: whether a guess is right within the tolerance
        (``regression``) or when equal, the records attacked (``n_attacks``,
        ``n_attacks_control``, ``n_attacks_baseline``), the secrets guessed right by each attack,
        their Wilson ``*_rate`` and ``*_error``, ``residual``, ``risk``, ``ci_low``,
        ``ci_high``, ``share_tied_main`` and ``share_tied_control``.
    records : DataFrame
        Per dataset, secret and attacked record: ``role``, ``row``, ``correct`` and ``tied``
        (no value: the secrets are confidential).
    by_group : DataFrame or None
        With ``groups``: one row per dataset, secret and level of the grouping column, the
        attacked records of that level (main and control) guessed right, their rates and the
        risk (anonymeter's ``risk_for_groups``), the baseline of all records.
    settings : dict
        The secrets and each one's auxiliary columns, options, sizes, the seed.
    warnings : list of str
        Machine-readable codes.
    """

    records: pd.DataFrame = field(default_factory=pd.DataFrame)
    by_group: pd.DataFrame | None = None

    _measure: ClassVar[str] = "inference"
    _title: ClassVar[str] = "Inference risk"
    _by: ClassVar[str] = "secret"

    def _known(self, default: str) -> str:
        """The intruder's columns, or ``default`` when they are every column but the secret."""
        s = self.settings
        return default if s["aux_default"] else ", ".join(next(iter(s["aux_columns"].values())))

    def _label(self) -> str:
        return "inference from " + self._known("every other column")

    def _summary_header(self) -> list[tuple[str, Any]]:
        s = self.settings
        return [
            ("secrets guessed", ", ".join(s["secrets"])),
            ("the intruder's columns", self._known("every column but the secret")),
            ("records attacked (original, holdout)",
             f"{s['n_attacks']:,}" + ("" if s["n_holdout"] is None
                                      else f", {s['n_attacks_control']:,}")),
            ("a numeric guess is right within", f"{100 * s['tolerance']:.3g} % of the guess"),
            ("synthetic datasets m", s["m"]),
        ]

    _reading: ClassVar[tuple[str, str, str]] = (
        "The intruder knows a target's other columns and guesses its secret as the value of "
        "the nearest synthetic row. Main rate: targets of the original; control rate: targets "
        "of the holdout; baseline: the values of random synthetic rows. ",
        "Singling out, linkability and inference",
        " 'tied': share of the original's targets whose nearest row was drawn among equally "
        "distant ones.")
