"""Likelihood protocol of :class:`~bayes_risk.models.SequentialRegression`.

Record, dataset, candidate and neighbourhood log-likelihoods: the product over the visit
order of each column's regression density given its design row.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from bayes_risk.data.synthetic import SyntheticData
from bayes_risk.data.validate import validate_table
from bayes_risk.exceptions import ValidationError
from bayes_risk.models._bayesian.design import (
    NeighbourhoodUnavailable,
    column_values,
    family_loglik,
    row_frame,
)

if TYPE_CHECKING:  # pragma: no cover
    pass


def values(model, df: pd.DataFrame, name: str) -> dict[str, np.ndarray]:
    validate_table(df, model.schema_, name=name, extra_columns=True)
    return column_values(df, model.schema_, model.schema_.names)


def loglik_from_values(
    model, vals: Mapping[str, np.ndarray], n: int, idx: np.ndarray
) -> np.ndarray:
    out = np.zeros((idx.size, n))
    for c in model.order_:
        X = None if model.families_[c] == "categorical" else model.designs_[c].build(vals, n)
        out += family_loglik(model.families_[c], vals[c], X, model._params(c, idx))
    return out


def design_matrix(model, df: pd.DataFrame, column: str) -> np.ndarray:
    """The work of :meth:`SequentialRegression.design_matrix` (documented there)."""
    model._check_fitted()
    if column not in model.order_:
        raise ValidationError(f"column {column!r} is not synthesized (chain: {model.order_}).")
    return model.designs_[column].build(model._values(df, "records"), len(df))


def record_loglik(model, records: pd.DataFrame, *, draw_indices: Any = None) -> np.ndarray:
    """The work of :meth:`SequentialRegression.record_loglik` (documented there)."""
    model._check_fitted()
    idx = model._draw_indices(draw_indices)
    return model._loglik_from_values(model._values(records, "records"), len(records), idx)


def dataset_loglik(
    model, synthetic: Sequence[pd.DataFrame] | SyntheticData, *, draw_indices: Any = None
) -> np.ndarray:
    """The work of :meth:`SequentialRegression.dataset_loglik` (documented there)."""
    model._check_fitted()
    if isinstance(synthetic, SyntheticData):
        frames = list(synthetic.datasets)
    elif isinstance(synthetic, pd.DataFrame):
        frames = [synthetic]
    else:
        frames = list(synthetic)
    idx = model._draw_indices(draw_indices)
    cols = []
    for l, z in enumerate(frames):
        z = model._synthesized_part(z, name=f"synthetic dataset {l + 1}")
        vals = model._values(z, f"synthetic dataset {l + 1}")
        cols.append(model._loglik_from_values(vals, len(z), idx).sum(axis=1))
    return np.stack(cols, axis=1)


def candidate_loglik(
    model, record_row: pd.DataFrame | pd.Series, candidates: pd.DataFrame, *,
    draw_indices: Any = None,
) -> np.ndarray:
    """The work of :meth:`SequentialRegression.candidate_loglik` (documented there)."""
    model._check_fitted()
    record_row = row_frame(record_row)
    if not isinstance(candidates, pd.DataFrame) or len(candidates) == 0:
        raise ValidationError(
            "candidates must be a non-empty DataFrame over synthesized columns."
        )
    bad = [c for c in candidates.columns if c not in model.order_]
    if bad:
        raise ValidationError(
            f"candidates: column {bad[0]!r} is not synthesized (synthesized: {model.order_}); "
            "only synthesized values vary."
        )
    G = len(candidates)
    rows = pd.concat([record_row[model.schema_.names]] * G, ignore_index=True)
    for c in candidates.columns:
        src = candidates[c].reset_index(drop=True)
        if rows[c].dtype != src.dtype:
            rows[c] = rows[c].astype(object)
        rows[c] = src.to_numpy()
    return model.record_loglik(rows, draw_indices=draw_indices)


def neighbourhood_loglik(model, records: pd.DataFrame, *, draw_indices: Any = None) -> np.ndarray:
    """The work of :meth:`SequentialRegression.neighbourhood_loglik` (documented there)."""
    model._check_fitted()
    syn = model.schema_.synthesized
    num = [c for c in syn if not model.schema_[c].is_categorical]
    if num:
        raise NeighbourhoodUnavailable(
            f"synthesized column {num[0]!r} is {model.schema_[num[0]].type}: a one-variable-"
            "different neighbourhood exists only for categorical columns; use "
            "candidate_loglik with a grid (docs: methods, Candidate sets).",
            code="WRONG_DTYPE"
        )
    idx = model._draw_indices(draw_indices)
    vals_all = model._values(records, "records")
    n = len(records)
    d = [model.schema_[c].n_levels for c in syn]
    G = 1 + sum(k - 1 for k in d)
    out = np.empty((idx.size, n, G))
    # chunk records so that one block holds at most ~2e7 numbers
    step_n = max(1, int(2e7 // max(1, idx.size * G)))
    for a in range(0, n, step_n):
        b = min(n, a + step_n)
        vals = {c: v[a:b] for c, v in vals_all.items()}
        big = {c: np.repeat(v[:, None], G, axis=1) for c, v in vals.items()}
        g = 1
        for c, k in zip(syn, d, strict=False):
            truth = vals[c].astype(np.int64)
            for lv in range(1, k):
                # levels ascending skipping the truth: the lv-th level not equal to the truth
                big[c][:, g] = lv - 1 + (lv - 1 >= truth).astype(np.int64)
                g += 1
        flat = {c: v.reshape(-1) for c, v in big.items()}
        ll = model._loglik_from_values(flat, (b - a) * G, idx)
        out[:, a:b, :] = ll.reshape(idx.size, b - a, G)
    return out
