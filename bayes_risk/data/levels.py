"""Level codes: the one encoder of categorical values (every fast path lives here)."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
import pandas as pd

from bayes_risk.data.schema import Schema, _level_to_json
from bayes_risk.exceptions import CALLER, DataWarning, SchemaError, arg_name, on_command_line

__all__ = ["level_codes", "normalise_level", "unused_levels", "drop_unused_levels"]

#: largest integer level for which integer codes are mapped through a lookup table
_LUT_MAX = 1_000_000


def normalise_level(v: Any) -> Any:
    """2.0 and 2 are one level (CSV / Parquet round trips); numpy scalars as Python values."""
    v = _level_to_json(v)
    if isinstance(v, float) and v.is_integer():
        return int(v)
    return v


def level_codes(values: pd.Series | np.ndarray | Sequence[Any], levels: Sequence[Any], *,
                unknown: Literal["raise", "missing"] = "raise", column: str = "") -> np.ndarray:
    """Codes ``0..d-1`` of ``values`` among ``levels``; ``-1`` for a missing value.

    Values are compared after normalisation (``2.0`` and ``2`` are one level).

    Parameters
    ----------
    values : Series, ndarray or sequence
    levels : sequence
        The column's levels, in code order.
    unknown : {"raise", "missing"}
        A value that is not a level: a ``SchemaError`` (``UNKNOWN_LEVEL``) or code ``-1``.
    column : str
        Column name for the error message.

    Returns
    -------
    ndarray of int64
    """
    levels = list(levels)
    lookup: dict[Any, int] = {}
    for k, v in enumerate(levels):
        lookup.setdefault(normalise_level(v), k)
    if isinstance(values, pd.Series) and isinstance(values.dtype, pd.CategoricalDtype):
        cats = level_codes(np.asarray(values.cat.categories, dtype=object), levels,
                           unknown="missing")
        raw = values.cat.codes.to_numpy()
        codes = np.where(raw >= 0, cats[np.maximum(raw, 0)], -1).astype(np.int64)
        if unknown == "raise":
            _raise_unknown(np.asarray(values.cat.categories, dtype=object)[
                np.unique(raw[(raw >= 0) & (codes < 0)])], levels, column)
        return codes
    vals = values.to_numpy() if isinstance(values, pd.Series) else np.asarray(values)
    int_levels = [v for v in lookup if isinstance(v, int) and not isinstance(v, bool)]
    if vals.dtype.kind in "iu" and len(int_levels) == len(lookup) and lookup \
            and min(int_levels) >= 0 and max(int_levels) < _LUT_MAX:
        # small non-negative integer codes: a lookup table instead of hashing
        top = max(int_levels)
        lut = np.full(top + 2, -1, dtype=np.int64)
        for v, k in lookup.items():
            lut[v] = k
        v = vals.astype(np.int64)
        ok = (v >= 0) & (v <= top)
        codes = np.where(ok, lut[np.where(ok, v, top + 1)], -1)
        if unknown == "raise" and (codes < 0).any():
            _raise_unknown(np.unique(vals[codes < 0]), levels, column)
        return codes
    inv, uniques = pd.factorize(vals, use_na_sentinel=True)
    umap = np.array([lookup.get(normalise_level(u), -1) for u in uniques], dtype=np.int64)
    if unknown == "raise" and (umap < 0).any():
        _raise_unknown(np.asarray(uniques, dtype=object)[umap < 0], levels, column)
    return np.where(inv >= 0, umap[np.maximum(inv, 0)] if umap.size else -1, -1).astype(np.int64)


def _raise_unknown(bad: np.ndarray, levels: Sequence[Any], column: str) -> None:
    if not len(bad):
        return
    v = min(bad, key=str)  # the first in string order: the same value whatever the row order
    raise SchemaError(f"column {column!r} has value {_level_to_json(v)!r} that is not among its "
                      f"levels {list(levels)}.", code="UNKNOWN_LEVEL")


def unused_levels(values: pd.Series, levels: Sequence[Any]) -> list[Any]:
    """The ``levels`` no value of ``values`` holds (``2`` and ``2.0`` are one level)."""
    seen = {normalise_level(v) for v in pd.unique(values.dropna())}
    return [v for v in levels if normalise_level(v) not in seen]


def drop_unused_levels(data: pd.DataFrame, schema: Schema, *, name: str = "data") -> Schema:
    """``schema`` without the levels no record of ``data`` holds (``UNUSED_LEVEL``), except in
    columns marked ``keep_unused_levels``."""
    dropped: dict[str, list[Any]] = {}
    for spec in schema:
        if (not spec.is_categorical or spec.levels is None or spec.keep_unused_levels
                or spec.name not in data.columns):
            continue
        unused = unused_levels(data[spec.name], spec.levels)
        if unused and len(unused) < len(spec.levels):
            dropped[spec.name] = unused
    if not dropped:
        return schema
    shown = "; ".join(f"{c!r}: {', '.join(map(repr, u))}" for c, u in dropped.items())
    cols = list(dropped)
    warnings.warn(DataWarning(
        f"{name}: declared level(s) that no record holds were dropped ({shown}), so that no "
        "model gives them probability and no release holds them (UNUSED_LEVEL). To keep them "
        "(a codebook level that must stay possible), give "
        + (arg_name("keep_unused_levels", cli=" ".join(cols)) if on_command_line()
           else f"the schema of infer_schema(..., keep_unused_levels={cols!r})") + ".",
        code="UNUSED_LEVEL"), skip_file_prefixes=CALLER)
    return schema.with_levels({c: [v for v in schema[c].levels if v not in u]
                               for c, u in dropped.items()})
