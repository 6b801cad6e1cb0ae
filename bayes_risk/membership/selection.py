"""Releases that synthesize selected records only. See :doc:`/methods/membership`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from bayes_risk.exceptions import NotSupportedError, ValidationError, arg_name

__all__ = ["SelectionRule", "as_selection", "check_rule"]


@dataclass(frozen=True)
class SelectionRule:
    """A stated selection rule: ``kind``, ``description`` and ``function``."""

    kind: str
    description: str
    function: Callable[[pd.DataFrame], Any] | None = None

    def evaluate(self, table: pd.DataFrame, what: str = "the records") -> np.ndarray:
        """The rule on each row of ``table`` (``BAD_SELECTION_RULE`` if it fails)."""
        if self.kind == "independent":
            return np.ones(len(table), dtype=bool)
        try:
            out = self.function(table.reset_index(drop=True))
        except Exception as err:  # a user's expression or callable: say which and why
            raise ValidationError(
                f"{arg_name('selection')} {self.description!r} could not be evaluated on {what}: "
                f"{type(err).__name__}: {err}. Write it on the columns {list(table.columns)}.",
                code="BAD_SELECTION_RULE") from None
        arr = np.asarray(out.to_numpy() if isinstance(out, pd.Series) else out)
        if arr.shape != (len(table),) or not (arr.dtype == bool or (
                arr.dtype == object and all(isinstance(v, (bool, np.bool_)) for v in arr))):
            raise ValidationError(
                f"{arg_name('selection')} {self.description!r} must give one True/False per "
                "record of " f"{what} ({len(table)}); got {arr.dtype} of shape {arr.shape}.",
                code="BAD_SELECTION_RULE")
        return arr.astype(bool)


def as_selection(selection: Any, *, forms: str = "'independent', ") -> SelectionRule | None:
    """``selection=`` as a :class:`SelectionRule`; ``forms`` starts the list of accepted forms
    that an error names (membership: ``'independent'``; identification: its own)."""
    if selection is None or isinstance(selection, SelectionRule):
        return selection
    if isinstance(selection, str):
        text = selection.strip()
        if not text:
            raise ValidationError(f"selection is empty: give {forms}a rule such as "
                                  "'Income > 150000 or Age >= 90'.", code="BAD_SELECTION_RULE")
        if text == "independent":
            return SelectionRule("independent", "independent")
        return SelectionRule("rule", text, lambda table: table.eval(text))
    if callable(selection):
        name = getattr(selection, "__qualname__", None) or type(selection).__name__
        return SelectionRule("rule", f"callable {name}", selection)
    raise ValidationError(
        f"selection must be {forms}an expression on the columns (e.g. 'Income > 150000 "
        f"or Age >= 90') or a callable of a DataFrame. Got {type(selection).__name__}.",
        code="BAD_SELECTION_RULE")


def check_rule(rule: SelectionRule, original: pd.DataFrame, selected: np.ndarray) -> None:
    """Check that ``rule`` selects the synthesized rows, and the same on parts of the table."""
    if rule.kind == "independent":  # nothing to check: it selects without looking
        return
    got = rule.evaluate(original, "original")
    half = len(original) // 2
    parts = np.concatenate([
        rule.evaluate(original.iloc[:half], "original") if half else np.zeros(0, bool),
        rule.evaluate(original.iloc[half:], "original")])
    backwards = rule.evaluate(original.iloc[::-1], "original")[::-1]
    if not (np.array_equal(parts, got) and np.array_equal(backwards, got)):
        row = int(np.flatnonzero((parts != got) | (backwards != got))[0])
        raise NotSupportedError(
            f"selection {rule.description!r} depends on the other records, not only on a "
            f"record's own values (row {row} is selected, or not, depending on which other "
            "rows the rule sees): changing the record in one slot can then change the other "
            "records' selection, and the membership ratio for such a rule (a quantile such "
            "as the largest incomes, sample uniques on keys) is not derived. State a rule on "
            "each record's own values (e.g. a fixed threshold), or 'independent' (methods, "
            "Membership disclosure risk, Releases that synthesize selected records).",
            code="MEMBERSHIP_SELECTION_DATA_DEPENDENT")
    if not np.array_equal(got, selected):
        extra = np.flatnonzero(got & ~selected)
        left = np.flatnonzero(~got & selected)
        parts_ = []
        if left.size:
            parts_.append(f"{left.size} synthesized row(s) it does not select (first: "
                          f"{', '.join(str(int(r)) for r in left[:5])})")
        if extra.size:
            parts_.append(f"{extra.size} unsynthesized row(s) it selects (first: "
                          f"{', '.join(str(int(r)) for r in extra[:5])})")
        raise ValidationError(
            f"selection {rule.description!r} does not reproduce the records the model "
            f"synthesized: {'; '.join(parts_)}. The ratio is derived for the rule that made "
            "the release; give that rule (or 'independent' if the records were chosen without "
            "looking at their values).",
            code="MEMBERSHIP_SELECTION_MISMATCH")
