"""The fitted state of a :class:`~bayes_risk.models.trees.cart.CARTSynthesizer`: what the
module-level functions of ``trees.cart_synthesis`` read."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from bayes_risk.data.schema import Schema

__all__ = ["CARTState", "FittedTable", "LeafDraw"]


@dataclass(frozen=True, eq=False)
class FittedTable:
    """The table a CART synthesizer was fitted to, as its synthesis reads it.

    Attributes
    ----------
    data : DataFrame
        The fitted table, its index reset.
    index : Index
        The fitted table's index (a synthetic dataset's).
    values : mapping of str to ndarray
        Each column's values as the trees code them.
    records : ndarray of bool
        The synthesized records.
    """

    data: pd.DataFrame
    index: pd.Index
    values: Mapping[str, np.ndarray]
    records: np.ndarray


@dataclass(frozen=True, eq=False)
class LeafDraw:
    """How a numeric column's value is drawn from its leaf and written out.

    Attributes
    ----------
    smoothed : sequence of str
        The kernel-smoothed columns (Wang & Reiter 2012).
    bandwidth : mapping of str to ndarray
        Per smoothed column, the kernel bandwidth of each node.
    integer : mapping of str to bool
        Columns whose values are whole numbers (drawn values rounded to them).
    decimals : mapping of str to int or None
        Decimal places the drawn values are rounded to, per column.
    """

    smoothed: Sequence[str]
    bandwidth: Mapping[str, np.ndarray]
    integer: Mapping[str, bool]
    decimals: Mapping[str, int | None]


@dataclass(frozen=True, eq=False)
class CARTState:
    """The fitted state of a CART synthesizer (its fitted attributes of the same names, the
    fitted table in ``table`` and the leaves' draw in ``leaf_draw``)."""

    schema: Schema
    visit_sequence: Sequence[str]
    predictors: Mapping[str, list[str]]
    trees: Mapping[str, Any]
    missing: Mapping[str, dict]
    missing_trees: Mapping[str, Any]
    table: FittedTable
    leaf_draw: LeafDraw
    #: the columns drawn by a regression method of a spec (``trees.regression``)
    regressions: Mapping[str, Any] = field(default_factory=dict)
