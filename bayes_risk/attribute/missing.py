"""Records whose synthesized values are missing in the original (user guide, Missing values).

Such a record's missing values are integrated out with the model's own imputation: the intruder
guesses only the record's observed synthesized values (candidates that would fill a missing value
get probability 0: the candidate set covers observed values only), and every candidate's
likelihood ``p(y*_obs | Θ_h)`` marginalises the missing columns. Models do so when their record
likelihood marginalises a missing value (DPMPM: ``record_loglik`` leaves a missing column out of
the product within each latent class, the imputation its sampler draws from); for any other
model such records are refused with an error naming the column. A record's missing
unsynthesized values are marginalised the same way (they are released missing).

The tree plug-ins (CART, random forests) synthesize a missing value as a value of its own (a
level, or a numeric column's missingness kind), so there is nothing to integrate out: the
intruder is taken to know which of the record's values are missing and how (empty, or which
code), and guesses the observed ones. The candidates that would fill a missing value have
probability 0 as above, the record's missing values are held as they are in every candidate,
and a candidate that would make an observed value missing has probability 0 too
(``"held_at_kind"`` in the result's settings).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from bayes_risk.exceptions import ValidationError

__all__ = ["missing_truth", "check_missing_truth", "vary_missing", "n_guessable",
           "missing_policy"]


def integrates_missing(model: Any) -> bool:
    """Whether ``model``'s record likelihood marginalises missing values (DPMPM:
    ``ModelInfo.imputes``)."""
    from bayes_risk.contract import capabilities

    return capabilities(model).imputes


def holds_missing(model: Any) -> bool:
    """Whether ``model`` holds a record's missing values at their missingness kind (the tree
    plug-ins: the synthesizer releases missing values, the intruder knows which are missing)."""
    from bayes_risk.contract import capabilities

    return capabilities(model).holds_missing


def missing_policy(model: Any) -> str | None:
    """How ``model`` treats a record's missing values (recorded in the result's settings):
    ``"integrated_out"``, ``"held_at_kind"``, or ``None`` (such records are refused)."""
    if integrates_missing(model):
        return "integrated_out"
    if holds_missing(model):
        return "held_at_kind"
    return None


def missing_truth(values: np.ndarray, is_cat: np.ndarray) -> np.ndarray:
    """``[n, q]``: which varying values of the records are missing (code ``-1`` or ``NaN``)."""
    v = np.asarray(values, dtype=np.float64)
    return np.isnan(v) | (np.asarray(is_cat, dtype=bool)[None, :] & (v < 0))


def check_missing_truth(model: Any, vary: Sequence[str], values: np.ndarray,
                        is_cat: np.ndarray, positions: np.ndarray,
                        orig: pd.DataFrame | None = None) -> None:
    """Refuse records with missing values when the model can neither integrate them out nor
    hold them (:func:`missing_policy`).

    ``values`` are the varying (synthesized) columns' codes / values; ``orig`` (optional) the
    records' other model columns, checked too.

    Raises
    ------
    ValidationError
        Naming the first column with a missing value among the evaluated records.
    """
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
    # each column with its own count (the first column named with the records of all would
    # misstate it)
    also = ", ".join(f"{cols[k]!r} in {int(miss[:, k].sum())}" for k in hit[1:])
    raise ValidationError(
        f"column {cols[j]!r} is missing in {int(miss[:, j].sum())} evaluated record(s) "
        f"(first: record {first})" + (f"; also {also} ({n_rec} records in all)" if also else "")
        + f"; {type(model).__name__} cannot integrate out a record's missing values (DPMPM can: "
        "its likelihood marginalises them; the CART and random-forest plug-ins hold them as "
        "released). Leave those records out with records=, or fit a DPMPM, CART or random "
        "forest.",
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
    """Candidates of one record that do not fill a missing value (its ``G``; all when the
    record is complete)."""
    v = np.asarray(values, dtype=np.float64)
    return int(v.shape[0] - vary_missing(v[None], np.array([g0]), is_cat).sum())
