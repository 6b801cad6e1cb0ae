"""Records whose synthesized values are missing in the original.

See :doc:`/methods/attribute` (Tree synthesizers: missing values).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from bayes_risk.exceptions import ValidationError

__all__ = ["missing_truth", "check_missing_truth", "vary_missing", "n_guessable",
           "missing_policy"]


def missing_policy(model: Any) -> str | None:
    """How ``model`` treats missing values: "integrated_out", "held_at_kind" or None (refused)."""
    from bayes_risk.contract import capabilities

    caps = capabilities(model)
    if caps.imputes:
        return "integrated_out"
    return "held_at_kind" if caps.holds_missing else None


def missing_truth(values: np.ndarray, is_cat: np.ndarray) -> np.ndarray:
    """``[n, q]``: which varying values of the records are missing (code ``-1`` or ``NaN``)."""
    v = np.asarray(values, dtype=np.float64)
    return np.isnan(v) | (np.asarray(is_cat, dtype=bool)[None, :] & (v < 0))


def check_missing_truth(model: Any, vary: Sequence[str], values: np.ndarray,
                        is_cat: np.ndarray, positions: np.ndarray,
                        orig: pd.DataFrame | None = None) -> None:
    """Refuse records with missing values the model can neither integrate out nor hold."""
    if missing_policy(model) is not None:
        return
    cols = list(vary)
    miss = missing_truth(values[positions], is_cat)
    if orig is not None:
        other = [c for c in orig.columns if c not in cols]
        cols += other
        miss = np.concatenate([miss, orig.iloc[positions][other].isna().to_numpy()], axis=1)
    if not miss.any():
        return
    hit = np.flatnonzero(miss.any(axis=0))
    j = int(hit[0])
    n_rec = int(miss.any(axis=1).sum())
    first = int(positions[np.flatnonzero(miss[:, j])[0]])
    # each column with its own count
    also = ", ".join(f"{cols[k]!r} in {int(miss[:, k].sum())}" for k in hit[1:])
    raise ValidationError(
        f"column {cols[j]!r} is missing in {int(miss[:, j].sum())} evaluated record(s) "
        f"(first: record {first})" + (f"; also {also} ({n_rec} records in all)" if also else "")
        + f"; {type(model).__name__} cannot integrate out a record's missing values (DPMPM, "
        "the MP Poisson mixture and the sequential regressions can: their likelihoods "
        "marginalise them; the CART and random-forest plug-ins hold them as released). Leave "
        "those records out with records=, or fit a DPMPM, MP Poisson mixture, sequential "
        "regressions, CART or random forest.",
        code="MISSING_VALUES",
    )


def vary_missing(vals: np.ndarray, g0: np.ndarray, is_cat: np.ndarray) -> np.ndarray:
    """``[R, G]``: candidates that fill a value missing in the record's truth (probability 0)."""
    r = vals.shape[0]
    miss = missing_truth(vals[np.arange(r), g0], is_cat)  # [R, q]
    if not miss.any():
        return np.zeros(vals.shape[:2], dtype=bool)
    filled = ~missing_truth(vals.reshape(-1, vals.shape[2]), is_cat).reshape(vals.shape)
    return (miss[:, None, :] & filled).any(axis=2)


def n_guessable(values: np.ndarray, g0: int, is_cat: np.ndarray) -> int:
    """Candidates of one record that do not fill a missing value."""
    v = np.asarray(values, dtype=np.float64)
    return int(v.shape[0] - vary_missing(v[None], np.array([g0]), is_cat).sum())
