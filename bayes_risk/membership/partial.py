"""Partially synthetic releases: the factor of the unsynthesized values.

See :doc:`/methods/membership`, Partially synthetic releases.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from bayes_risk.data.levels import level_codes

__all__ = ["cell_keys", "n_cells", "log_p_unsynthesized", "resolution", "slot_match"]

#: finest decimal unit looked for in a numeric column (10 ** -_MAX_DECIMALS)
_MAX_DECIMALS = 15
_EPS = float(np.finfo(np.float64).eps)


def resolution(values: pd.Series) -> float:
    """The finest decimal unit ``10^-k`` (``k >= 0``) of a numeric column's values."""
    v = pd.to_numeric(values, errors="coerce").to_numpy(dtype=np.float64)
    v = v[np.isfinite(v)]
    if v.size == 0:
        return 1.0
    for k in range(_MAX_DECIMALS + 1):
        q = v * 10.0**k
        # a few float spacings: the decimal written in a file reads back as the nearest float,
        # and a looser tolerance would pass a coarser unit (fewer cells, a smaller ratio)
        if np.all(np.abs(q - np.round(q)) <= 64 * _EPS * np.maximum(1.0, np.abs(q))):
            return 10.0**-k
    return float(np.min(np.spacing(np.abs(v))))


def _column_codes(table: pd.DataFrame, reference: pd.DataFrame, schema: Any,
                  column: str) -> np.ndarray:
    """Integer codes of one column (``-1``: missing, ``-2``: unknown to the reference)."""
    spec = schema[column]
    if spec.is_categorical:
        return level_codes(table[column], spec.levels, column=column)
    ref = pd.to_numeric(reference[column], errors="coerce").to_numpy(dtype=np.float64)
    distinct = np.unique(ref[~np.isnan(ref)])
    v = pd.to_numeric(table[column], errors="coerce").to_numpy(dtype=np.float64)
    missing = table[column].isna().to_numpy()
    pos = np.clip(np.searchsorted(distinct, v), 0, max(distinct.size - 1, 0))
    # the release copies the values as they are: a cell is an exact value
    found = distinct.size > 0
    hit = (distinct[pos] == v) if found else np.zeros(v.size, dtype=bool)
    # a value that is not a number is no record's value, not a missing one
    return np.where(missing, -1, np.where(hit, pos, -2)).astype(np.int64)


def cell_keys(tables: list[pd.DataFrame], schema: Any, columns: list[str], *,
              reference: pd.DataFrame) -> list[np.ndarray]:
    """One integer per row of each table naming its cell of ``columns`` among the reference's
    distinct cells (``-1``: a cell no reference record has).

    Parameters
    ----------
    tables : list of DataFrame
    schema : Schema
        The model's schema (categorical values compared as levels, numeric ones exactly).
    columns : list of str
    reference : DataFrame
        The confidential data, whose records define the cells.

    Returns
    -------
    list of ndarray of int64
    """
    def codes(t: pd.DataFrame) -> np.ndarray:
        cols = [_column_codes(t, reference, schema, c) for c in columns]
        return np.column_stack(cols) if cols else np.zeros((len(t), 0), np.int64)

    ref_cells = np.unique(codes(reference), axis=0)
    out = []
    for t in tables:
        tc = codes(t)
        if ref_cells.shape[1] == 0:
            out.append(np.zeros(len(t), dtype=np.int64))
            continue
        both, inv = np.unique(np.vstack([ref_cells, tc]), axis=0, return_inverse=True)
        inv = inv.ravel()
        lookup = np.full(len(both), -1, dtype=np.int64)
        lookup[inv[: len(ref_cells)]] = np.arange(len(ref_cells))
        key = lookup[inv[len(ref_cells):]]
        # a row with a value the reference never takes (-2) is in no reference cell
        key[(tc == -2).any(axis=1)] = -1
        out.append(key)
    return out


def n_cells(original: pd.DataFrame, schema: Any, columns: list[str]) -> int:
    """``C``: the number of cells of the unsynthesized columns (a Python int)."""
    c = 1
    for col in columns:
        missing = int(original[col].isna().any())
        if schema[col].is_categorical:
            c *= int(schema[col].n_levels) + missing
            continue
        v = pd.to_numeric(original[col], errors="coerce").to_numpy(dtype=np.float64)
        v = v[np.isfinite(v)]
        span = 0 if v.size == 0 else int(round((v.max() - v.min()) / resolution(original[col])))
        c *= span + (v.size > 0) + missing
    return c


def log_p_unsynthesized(slot_keys: np.ndarray, original_keys: np.ndarray, n_cells_: int,
                        concentration: float) -> np.ndarray:
    """``log p(r_i | y_{-i}) = log (n_r^{(-i)} + α / C) − log (n − 1 + α)`` of each slot.

    Parameters
    ----------
    slot_keys, original_keys : array [T], array [n]
        The cell of each slot's record and of every confidential record (:func:`cell_keys`).
    n_cells_ : int
        ``C``, the cells of the unsynthesized columns.
    concentration : float
        ``α > 0``.

    Returns
    -------
    ndarray of float64
    """
    uniq, counts = np.unique(original_keys, return_counts=True)
    n_r = counts[np.searchsorted(uniq, slot_keys)]  # the slot's own record is among them
    n = original_keys.size
    # α / C in log space: C of a finely recorded numeric column can exceed a float's range
    log_base = math.log(concentration) - math.log(n_cells_)
    with np.errstate(divide="ignore"):  # log 0 = -inf
        log_others = np.log(np.asarray(n_r - 1, dtype=np.float64))
    return np.logaddexp(log_others, log_base) - np.log(n - 1 + concentration)


def slot_match(orig: pd.DataFrame, targets: pd.DataFrame, slots: np.ndarray, schema: Any,
               us: list[str], alpha: float
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, np.ndarray | None]:
    """Whether each target's unsynthesized values are its slot's, and ``log p(r | y_{-i})``."""
    T = len(targets)
    if not us:
        return np.ones(T, dtype=bool), np.zeros(T), None, None
    orig_keys, target_keys = cell_keys([orig, targets], schema, us, reference=orig)
    slot_keys = orig_keys[slots]
    log_p_us = log_p_unsynthesized(slot_keys, orig_keys, n_cells(orig, schema, us), float(alpha))
    return target_keys == slot_keys, log_p_us, orig_keys, slot_keys

