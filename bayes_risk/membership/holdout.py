"""Is the holdout disjoint from the original? Exact copies of original records, judged against
how often the original's own records copy one another (a copy scored as a non-member would
understate the risk)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

__all__ = ["HoldoutOverlap", "holdout_overlap", "overlapping_rows"]

#: a share of copies this improbable under a holdout drawn apart from the original is overlap
ALPHA = 1e-3


@dataclass(frozen=True)
class HoldoutOverlap:
    """The holdout rows copying the original, the chance rate and the p-value."""

    copies: np.ndarray
    reference_share: float
    p_value: float

    @property
    def overlapping(self) -> bool:
        """Whether the copies are more than chance explains (``p_value < 1e-3``)."""
        return bool(self.copies.any()) and self.p_value < ALPHA

    def describe(self) -> str:
        """A sentence with the counts, for warnings and errors."""
        k, n = int(self.copies.sum()), len(self.copies)
        first = int(np.flatnonzero(self.copies)[0]) if k else -1
        return (f"{k} of the {n} holdout rows ({100 * k / n:.3g} %; first: holdout row {first}, "
                "rows numbered from 0) equal a record of the original on every column, where "
                f"{100 * self.reference_share:.3g} % of the original's own records equal another "
                f"of its records (p = {self.p_value:.2g})")


def _keys(df: pd.DataFrame) -> pd.MultiIndex:
    # object values hash 3 and 3.0 alike; a missing value is one key of its own
    obj = df.astype(object).where(df.notna(), "\x00<missing>")
    return pd.MultiIndex.from_frame(obj)


def holdout_overlap(original: pd.DataFrame, holdout: pd.DataFrame) -> HoldoutOverlap:
    """Which holdout rows copy a record of the original, and whether that is more than chance.

    Parameters
    ----------
    original, holdout : DataFrame
        The same columns (the model's).

    Returns
    -------
    HoldoutOverlap
    """
    cols = list(original.columns)
    orig_keys = _keys(original[cols])
    copies = np.asarray(_keys(holdout[cols]).isin(orig_keys), dtype=bool)
    n = len(original)
    d = int(orig_keys.duplicated(keep=False).sum())
    k = int(copies.sum())
    p = 1.0
    if k:  # SciPy's distributions only when a row is copied: a second of start-up (issue 69)
        from scipy import stats

        p = float(stats.betabinom.sf(k - 1, len(copies), d + 1, n - d + 1))
    return HoldoutOverlap(copies=copies, reference_share=d / n if n else 0.0, p_value=p)


def overlapping_rows(original: pd.DataFrame, holdout: pd.DataFrame, why: str,
                     kept: str) -> np.ndarray | None:
    """The holdout rows that copy a record of the original beyond chance (``None``: none): a
    holdout of nothing but copies is refused, one with some is warned of (``why``: what a copy
    spoils; ``kept``: what is done with the rows)."""
    import warnings

    from bayes_risk.exceptions import CALLER, DataWarning, ValidationError

    ov = holdout_overlap(original, holdout)
    if not ov.overlapping:
        return None
    if ov.copies.all():
        raise ValidationError(f"holdout: {ov.describe()}: is it a part of the original? {why}.",
                              code="HOLDOUT_OVERLAPS_ORIGINAL")
    warnings.warn(DataWarning(
        f"holdout: {ov.describe()}, more than chance explains; {why}. These rows are {kept} "
        "(HOLDOUT_OVERLAPS_ORIGINAL).", code="HOLDOUT_OVERLAPS_ORIGINAL"),
        skip_file_prefixes=CALLER)
    return ov.copies


def screen_holdout(original: pd.DataFrame, holdout: pd.DataFrame | None) -> np.ndarray | None:
    """The holdout rows to flag ``HOLDOUT_IN_ORIGINAL`` (``None``: no overlap)."""
    if holdout is None or not len(holdout):
        return None
    return overlapping_rows(
        original, holdout, "a holdout must hold records of the population that are not in the "
        "original; a member scored as a non-member lowers the attack's measured advantage",
        "flagged HOLDOUT_IN_ORIGINAL and left out of the summaries and of the distance baseline")


def flag_copies(flags: list[list[str]], source: np.ndarray, row: np.ndarray,
                copies: np.ndarray | None) -> None:
    """Add ``HOLDOUT_IN_ORIGINAL`` to the flags of the holdout targets that copy a record."""
    if copies is None:
        return
    for t in np.flatnonzero(np.asarray(source) == "holdout"):
        if copies[int(row[t])]:
            flags[t].append("HOLDOUT_IN_ORIGINAL")
