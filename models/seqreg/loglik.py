"""Record, dataset, candidate and neighbourhood log-likelihoods of
:class:`~bayes_risk.models.SequentialRegression`, from its fitted state.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from bayes_risk.data.schema import Schema
from bayes_risk.data.validate import require_synthesized, validate_table
from bayes_risk.exceptions import SchemaError, ValidationError
from bayes_risk.models._bayesian.design import (
    NeighbourhoodUnavailable,
    column_values,
    family_loglik,
    row_frame,
)
from bayes_risk.models.seqreg.missing import check_missing, missing_cells
from bayes_risk.models.seqreg.state import SeqRegState


def values(state: SeqRegState, df: pd.DataFrame, name: str) -> dict[str, np.ndarray]:
    """The columns of ``df`` (checked against the schema, naming ``name``) as value arrays;
    missing values only where the likelihood integrates them out or a design pads them."""
    validate_table(df, state.schema, name=name, extra_columns=True, allow_nan=True)
    vals = column_values(df, state.schema, state.schema.names)
    if any(missing_cells(state.schema, vals, c).any() for c in vals):
        check_missing(state.schema, {c: d.predictors for c, d in state.designs.items()},
                      [p for d in state.designs.values() for p in d.padded], vals, name)
    return vals


def loglik_from_values(
    state: SeqRegState, vals: Mapping[str, np.ndarray], n: int, idx: np.ndarray
) -> np.ndarray:
    """``[H', n]`` sum over the chain of each regression's log-density of ``n`` records (a
    missing outcome's factor integrates to 1)."""
    out = np.zeros((idx.size, n))
    for c in state.order:
        fam = state.families[c]
        X = None if fam == "categorical" else state.designs[c].build(vals, n)
        ll = family_loglik(fam, vals[c], X, state.params(c, idx))
        miss = missing_cells(state.schema, vals, c)
        if miss.any():
            ll[:, miss] = 0.0
        out += ll
    return out


def design_matrix(state: SeqRegState, df: pd.DataFrame, column: str) -> np.ndarray:
    """``[n, q]`` design of ``column``'s regression (:meth:`SequentialRegression.design_matrix`)."""
    require_synthesized([column], state.order)
    return state.designs[column].build(values(state, df, "records"), len(df))


def record_loglik(state: SeqRegState, records: pd.DataFrame, idx: np.ndarray) -> np.ndarray:
    """``[H', n]`` (:meth:`SequentialRegression.record_loglik`) of the draws ``idx``."""
    return loglik_from_values(state, values(state, records, "records"), len(records), idx)


def dataset_loglik(state: SeqRegState, frames: Sequence[pd.DataFrame], idx: np.ndarray
                   ) -> np.ndarray:
    """``[H', m]`` (:meth:`SequentialRegression.dataset_loglik`) of the synthesized rows of
    each released dataset (``frames``)."""
    cols = []
    for l, z in enumerate(frames):
        vals = values(state, z, f"synthetic dataset {l + 1}")
        cols.append(loglik_from_values(state, vals, len(z), idx).sum(axis=1))
    return np.stack(cols, axis=1)


def candidate_rows(
    state: SeqRegState, record_row: pd.DataFrame | pd.Series, candidates: pd.DataFrame
) -> pd.DataFrame:
    """The record ``record_row`` with its values of the columns of ``candidates`` replaced by
    each candidate's (:meth:`SequentialRegression.candidate_loglik`)."""
    record_row = row_frame(record_row)
    if not isinstance(candidates, pd.DataFrame) or len(candidates) == 0:
        raise ValidationError(
            "candidates must be a non-empty DataFrame over synthesized columns."
        )
    require_synthesized(candidates.columns, state.order, "candidates",
                        note="; only synthesized values vary")
    G = len(candidates)
    rows = pd.concat([record_row[state.schema.names]] * G, ignore_index=True)
    for c in candidates.columns:
        src = candidates[c].reset_index(drop=True)
        if rows[c].dtype != src.dtype:
            rows[c] = rows[c].astype(object)
        rows[c] = src.to_numpy()
    return rows


def neighbourhood_unavailable(schema: Schema) -> None:
    """``NeighbourhoodUnavailable`` when a synthesized column is numeric."""
    num = [c for c in schema.synthesized if not schema[c].is_categorical]
    if num:
        raise NeighbourhoodUnavailable(
            f"synthesized column {num[0]!r} is {schema[num[0]].type}: a one-variable-"
            "different neighbourhood exists only for categorical columns; use "
            "candidate_loglik with a grid (docs: methods, Candidate sets).",
            code="WRONG_DTYPE"
        )


def neighbourhood_loglik(state: SeqRegState, records: pd.DataFrame, idx: np.ndarray
                         ) -> np.ndarray:
    """``[H', n, G]`` (:meth:`SequentialRegression.neighbourhood_loglik`) of the draws ``idx``;
    every synthesized column categorical (:func:`neighbourhood_unavailable`)."""
    syn = state.schema.synthesized
    vals_all = values(state, records, "records")
    for c in syn:
        miss = missing_cells(state.schema, vals_all, c)
        if miss.any():
            raise SchemaError(
                f"records: column {c!r} is missing in row {int(np.flatnonzero(miss)[0])}; "
                "a one-variable-different neighbourhood needs the record's synthesized values "
                "(candidate_loglik holds a missing value and integrates it out).",
                code="MISSING_VALUES")
    n = len(records)
    d = [state.schema[c].n_levels for c in syn]
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
        ll = loglik_from_values(state, flat, (b - a) * G, idx)
        out[:, a:b, :] = ll.reshape(idx.size, b - a, G)
    return out
