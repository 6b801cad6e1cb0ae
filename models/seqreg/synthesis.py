"""Synthesis of :class:`~bayes_risk.models.SequentialRegression` datasets from posterior draws
(dataset ``l`` from ``rngs[l]`` only; what they share prepared once)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np
import pandas as pd

from bayes_risk.models._bayesian.design import (
    apply_dtypes,
    column_values,
    family_sample,
    output_column,
)
from bayes_risk.models.seqreg.state import SeqRegState


def datasets(state: SeqRegState, dtypes: dict[str, str], mask: np.ndarray | None,
              draws: Sequence[int] | np.ndarray, rngs: Sequence[np.random.Generator],
              data: pd.DataFrame | None, n: int) -> Iterator[dict[str, object]]:
    """Each dataset's released columns (arrays, categoricals or Series), dataset by dataset;
    ``mask``: the synthesized records (``None``: all)."""
    schema = state.schema
    names = list(schema.names)
    order = list(state.order)
    idx = np.asarray(draws, dtype=np.int64).reshape(-1)
    base = column_values(data, schema, names) if data is not None else {}
    params = {c: state.params(c, idx) for c in order}
    synthesized = set(order)
    designs = {c: state.designs[c] for c in order}
    # a design of unsynthesized predictors only (or the intercept) is the same in every dataset
    fixed_x = {c: designs[c].build(base, n) for c in order
               if state.families[c] != "categorical"
               and not synthesized.intersection(designs[c].predictors)}
    convert = {c: output_column(schema, dtypes, c) for c in order}
    released: dict[str, pd.Series] = {}
    if data is not None:
        kept = [c for c in names if c not in synthesized]
        frame = apply_dtypes(data[kept].reset_index(drop=True), dtypes, schema)
        released = {c: frame[c] for c in kept}
    for k, rng in zip(range(idx.size), rngs, strict=True):
        vals = dict(base)
        columns: dict[str, object] = dict(released)
        for c in order:
            fam = state.families[c]
            X = None if fam == "categorical" else fixed_x.get(c)
            if X is None and fam != "categorical":
                X = designs[c].build(vals, n)
            # this draw's parameters as a fresh [1, ...] array, as one dataset at a time took
            # them (same values, same memory layout for the products)
            p = {name: v[[k]] for name, v in params[c].items()}
            new = family_sample(fam, X, p, 0, n, rng)
            if mask is not None and c in vals:
                new = np.where(mask, new, vals[c])
            vals[c] = new
            columns[c] = convert[c](new)
        yield {c: columns[c] for c in names}


def _stack(pieces: list[object]) -> object:
    """One column from its datasets' pieces, as ``pd.concat`` of the datasets gives it."""
    first = pieces[0]
    if all(isinstance(p, np.ndarray) and p.dtype == first.dtype for p in pieces):
        return np.concatenate(pieces)
    if all(isinstance(p, pd.Categorical) and p.dtype == first.dtype for p in pieces):
        return pd.Categorical.from_codes(np.concatenate([p.codes for p in pieces]),
                                         dtype=first.dtype)
    return pd.concat([pd.Series(p) for p in pieces], ignore_index=True)


def stacked(state: SeqRegState, dtypes: dict[str, str], mask: np.ndarray | None,
            idx: np.ndarray, rngs: Sequence[np.random.Generator], data: pd.DataFrame | None,
            n: int, rows: np.ndarray | None) -> tuple[pd.DataFrame, list[int]]:
    """The datasets of draws ``idx`` stacked in one table (only the rows ``rows`` of each when
    given), and each dataset's number of rows."""
    names = list(state.schema.names)
    drawn = list(state.order)
    pieces: dict[str, list[object]] = {c: [] for c in drawn}
    columns: dict[str, object] = {}
    for columns in datasets(state, dtypes, mask, idx, rngs, data, n):
        for c in drawn:
            col = columns[c]
            if rows is not None:
                col = col.iloc[rows] if isinstance(col, pd.Series) else col[rows]
            pieces[c].append(col)
    stacked = {c: _stack(pieces[c]) for c in drawn}
    # a released column is the same Series in every dataset: its rows repeated, in one take
    pos = np.arange(n) if rows is None else np.asarray(rows)
    for c in names:
        if c not in stacked:
            stacked[c] = columns[c].iloc[np.tile(pos, len(idx))].reset_index(drop=True)
    return pd.DataFrame({c: stacked[c] for c in names}), [int(pos.size)] * len(idx)
