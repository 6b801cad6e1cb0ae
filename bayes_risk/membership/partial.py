"""Partially synthetic releases: what the released unsynthesized values tell the intruder
(methods, Membership disclosure risk, Partially synthetic releases).

Every released dataset carries the unsynthesized values ``y^us`` of every confidential record
as they are. An intruder who knows ``y_{-i}`` therefore reads the unsynthesized values ``r`` of
the unknown record off the release (the multiset of released unsynthesized values minus those
of ``y_{-i}``). Under "the target ``x`` is in slot ``i``" the release shows ``r = x^us`` with
probability 1; under "slot ``i`` holds a record ``x'`` of the population" it shows ``r`` with the
population's probability ``p(x'^us = r | y_{-i})``. The likelihood ratio of membership thus
holds the factor

    1{x^us = r} / p(r | y_{-i}),

times the ratio of the synthesized part given ``r``, which the model's conditional record
likelihood gives (:mod:`bayes_risk.membership.estimator`). The population model of the
unsynthesized values is a Dirichlet process with concentration ``α`` and a uniform base
measure over the cells of the unsynthesized columns (categorical columns, missing a level of
its own): ``p(r | y_{-i}) = (n_r^{(-i)} + α / C) / (n − 1 + α)`` with ``n_r^{(-i)}`` the other
records with the values ``r`` and ``C`` the number of cells.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from bayes_risk.data.levels import level_codes

__all__ = ["cell_keys", "n_cells", "log_p_unsynthesized"]


def cell_keys(tables: list[pd.DataFrame], schema: Any, columns: list[str]) -> list[np.ndarray]:
    """One integer per row of each table naming its cell of ``columns`` (the same cell, the same
    integer across the tables; a missing value is a level of its own).

    Parameters
    ----------
    tables : list of DataFrame
        Tables holding ``columns``.
    schema : Schema
        The model's schema: ``columns`` are categorical, and their values are compared as its
        levels (``2`` and ``2.0`` are one level).
    columns : list of str
        The unsynthesized columns.

    Returns
    -------
    list of ndarray of int64
        One array per table, one key per row.
    """
    codes = []
    for t in tables:
        cols = [level_codes(t[c], schema[c].levels, column=c) + 1 for c in columns]
        codes.append(np.column_stack(cols) if cols else np.zeros((len(t), 0), np.int64))
    radix = [int(schema[c].n_levels) + 1 for c in columns]
    out = []
    for a in codes:
        key = np.zeros(len(a), dtype=np.int64)
        for j, r in enumerate(radix):
            key = key * r + a[:, j]
        out.append(key)
    return out


def n_cells(original: pd.DataFrame, schema: Any, columns: list[str]) -> int:
    """``C``: the cells of the unsynthesized columns (their levels, plus "missing" for a column
    with a missing value in the original).

    Parameters
    ----------
    original : DataFrame
        The confidential data.
    schema : Schema
        The model's schema.
    columns : list of str
        The unsynthesized columns.

    Returns
    -------
    int
    """
    c = 1
    for col in columns:
        c *= int(schema[col].n_levels) + int(original[col].isna().any())
    return c


def log_p_unsynthesized(
    slot_keys: np.ndarray, original_keys: np.ndarray, n_cells_: int, concentration: float
) -> np.ndarray:
    """``log p(r_i | y_{-i})`` of each slot's unsynthesized values under the Dirichlet-process
    population model (module docstring).

    Parameters
    ----------
    slot_keys : array [T]
        The cell of each slot's record (:func:`cell_keys` of the original at the slots).
    original_keys : array [n]
        The cells of every confidential record.
    n_cells_ : int
        ``C``, the cells of the unsynthesized columns.
    concentration : float
        ``α > 0``.

    Returns
    -------
    ndarray of float64
        ``log p(r_i | y_{-i})`` per slot.
    """
    uniq, counts = np.unique(original_keys, return_counts=True)
    n_r = counts[np.searchsorted(uniq, slot_keys)]  # the slot's own record is among them
    n = original_keys.size
    return np.log(n_r - 1 + concentration / n_cells_) - np.log(n - 1 + concentration)
