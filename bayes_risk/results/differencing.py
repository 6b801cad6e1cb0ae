"""Result of :func:`~bayes_risk.disclosure.differencing_check`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from bayes_risk._io import to_jsonable
from bayes_risk.results._base import RiskResult, draws
from bayes_risk.results._summary import Summary

__all__ = ["DifferencingResult"]


@dataclass(frozen=True, repr=False)
class DifferencingResult(RiskResult):
    """What comparing the implicates of a partially synthetic release reveals (Hawala 2008).

    Attributes
    ----------
    m, n_records : int
        Implicates; records per implicate.
    varies : DataFrame of bool, shape (n_records, columns)
        Whether the record's value of the column differs between implicates.
    changed : DataFrame of bool or None
        Whether it differs from the original in some implicate (``None`` without the original).
    selected : ndarray of bool or None
        The records selected for synthesis, if known.
    selection_source : {"given", "release", "changed records"} or None
        Where ``selected`` comes from.
    duplicates : bool
        Whether two implicates are identical (``DUPLICATE_DATASETS``).
    """

    m: int
    n_records: int
    varies: pd.DataFrame
    changed: pd.DataFrame | None
    selected: np.ndarray | None
    selection_source: str | None = None
    duplicates: bool = False

    plot_kinds: ClassVar[tuple[str, ...]] = ("columns",)

    @property
    def revealed(self) -> np.ndarray:
        """Records whose values differ between implicates (boolean mask)."""
        return self.varies.any(axis=1).to_numpy()

    @property
    def n_revealed(self) -> int:
        """Number of records revealed as synthesized."""
        return int(self.revealed.sum())

    @property
    def revealed_columns(self) -> list[str]:
        """Columns in which some record differs between implicates."""
        return [str(c) for c in self.varies.columns if bool(self.varies[c].any())]

    @property
    def recall(self) -> float:
        """Share of the selected records the comparison reveals (NaN when unknown or none)."""
        if self.selected is None or not self.selected.any():
            return float("nan")
        return float((self.revealed & self.selected).sum() / self.selected.sum())

    @property
    def precision(self) -> float:
        """Share of the revealed records that were selected (NaN when unknown or none)."""
        if self.selected is None or not self.revealed.any():
            return float("nan")
        return float((self.revealed & self.selected).sum() / self.revealed.sum())

    @property
    def warnings(self) -> list[str]:
        """``SELECTION_REVEALED`` and ``DUPLICATE_DATASETS`` where they apply."""
        codes = ["DUPLICATE_DATASETS"] if self.duplicates else []
        explicit = self.selection_source in ("given", "release")
        if (explicit and self.n_revealed and self.selected is not None
                and not self.selected.all()):
            codes.append("SELECTION_REVEALED")
        return codes

    def to_dataframe(self) -> pd.DataFrame:
        """Per column: records that vary between implicates, and records the synthesis changed."""
        rows = []
        for c in self.varies.columns:
            row = {"column": str(c), "records_varying": int(self.varies[c].sum())}
            if self.changed is not None:
                row["records_changed"] = int(self.changed[c].sum())
            rows.append(row)
        return pd.DataFrame(rows)

    def to_dict(self) -> dict[str, Any]:
        return to_jsonable({
            "m": self.m, "n_records": self.n_records, "n_revealed": self.n_revealed,
            "revealed_columns": self.revealed_columns,
            "n_selected": None if self.selected is None else int(self.selected.sum()),
            "selection_source": self.selection_source,
            "recall": self.recall, "precision": self.precision,
            "revealed_records": np.flatnonzero(self.revealed).tolist(),
            "columns": self.to_dataframe().to_dict(orient="records"),
            "warnings": self.warnings,
        })

    def summary(self) -> Summary:
        sel = None if self.selected is None else int(self.selected.sum())
        notes = ["A record is revealed when its values differ between implicates: an intruder "
                 "comparing them learns that the agency judged it at risk, and which of its "
                 "variables are sensitive (Hawala 2008, §3.2)."]
        if self.m == 1:
            notes.append("One implicate: nothing can be found by differencing (the Census "
                         "Bureau's choice for its partially synthetic data).")
        elif self.n_revealed == self.n_records:
            notes.append("Every record varies: the comparison does not single out a selection.")
        return Summary(
            "Differencing the implicates",
            header=[("implicates m", self.m), ("records", self.n_records),
                    ("records revealed", self.n_revealed),
                    ("records selected for synthesis", "unknown" if sel is None
                     else f"{sel} ({self.selection_source})"),
                    ("selected records revealed (recall)", self.recall),
                    ("revealed records that were selected (precision)", self.precision),
                    ("columns revealed", ", ".join(self.revealed_columns) or "none")],
            tables={"By column": self.to_dataframe()},
            notes=notes,
            warnings=self.structured_warnings,
        )

    @draws("columns")
    def _plot_columns(self, ax: Any) -> Any:
        """Records varying between implicates per column (and changed, with the original)."""
        tab = self.to_dataframe()
        x = np.arange(len(tab))
        w = 0.4 if "records_changed" in tab else 0.8
        ax.bar(x - (w / 2 if w < 0.8 else 0), tab["records_varying"], width=w,
               label="vary between implicates")
        if "records_changed" in tab:
            ax.bar(x + w / 2, tab["records_changed"], width=w, label="changed by the synthesis")
        ax.set_xticks(x, tab["column"], rotation=45, ha="right")
        ax.set_ylabel("records")
        ax.set_title(f"differencing {self.m} implicates: {self.n_revealed} of "
                     f"{self.n_records} records revealed", fontsize=9)
        ax.legend(fontsize=8)
        return ax
