"""Result of :func:`bayes_risk.compare_visit_orders` (Caiola & Reiter 2010 §3.2)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from bayes_risk.results._base import RiskResult, draws
from bayes_risk.results._summary import Summary

__all__ = ["VisitOrderComparison"]


@dataclass(repr=False)
class VisitOrderComparison(RiskResult):
    """Result of :func:`~bayes_risk.compare_visit_orders`.

    Attributes
    ----------
    table : DataFrame
        One row per order: ``order``, ``pmse``, ``pmse_ratio`` (means over the datasets) and the
        identification-risk measures.
    orders : list of tuple of str
    releases : dict
        ``{order: SyntheticData}`` when ``keep_releases=True``, else empty.
    settings : dict
    """

    table: pd.DataFrame
    orders: list[tuple[str, ...]]
    releases: dict[tuple[str, ...], Any] = field(default_factory=dict, repr=False)
    settings: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: the table as records and the settings."""
        rows = self.table.astype(object).where(self.table.notna(), None)
        return {"table": rows.to_dict(orient="records"), "settings": self.settings}

    def to_dataframe(self) -> pd.DataFrame:
        """The table (a copy)."""
        return self.table.copy()

    def summary(self) -> Summary:
        """Printable summary: utility and identification risk of each visit order."""
        st = self.settings
        return Summary(
            "Visit orders: utility and identification risk",
            header=[("synthesizer", st.get("synthesizer")), ("orders", len(self.orders)),
                    ("synthetic datasets m", st.get("m")),
                    ("known unsynthesized", ", ".join(st.get("known_unsynthesized", [])))],
            tables={"Per visit order": self.table},
            notes=["Caiola & Reiter (2010) §3.2: choose the order with the most desirable "
                   "risk-utility profile; pmse_ratio about 1 means the synthetic data cannot "
                   "be told from the original."],
        )

    plot_kinds = ("risk_utility",)

    @draws("risk_utility")
    def _plot_risk_utility(self, ax: Any) -> Any:
        """Risk-utility map: pMSE ratio against expected match risk, one point per order."""
        t = self.table
        x = t["pmse_ratio"].to_numpy(dtype=float)
        y = t["expected_match_risk"].to_numpy(dtype=float)
        ax.plot(x, y, "o")
        for xi, yi, lab in zip(x, y, t["order"], strict=True):
            ax.annotate(str(lab), (xi, yi), textcoords="offset points", xytext=(4, 4),
                        fontsize=8)
        ax.set_xlabel("pMSE ratio (utility: lower is better)")
        ax.set_ylabel("expected match risk (risk: lower is better)")
        return ax
