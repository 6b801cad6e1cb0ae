"""The fitted state of a :class:`~bayes_risk.models.trees.cart.CARTSynthesizer`: what the
module-level functions of ``trees.cart_synthesis`` read."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from bayes_risk.data.schema import Schema

__all__ = ["CARTState"]


@dataclass(frozen=True, eq=False)
class CARTState:
    """The fitted trees and table of a CART synthesizer.

    Attributes
    ----------
    schema : Schema
        Columns, types, levels and roles the synthesizer was fitted with.
    visit_sequence : sequence of str
        The synthesized columns in visit order.
    predictors : mapping of str to list of str
        Each synthesized column's predictors.
    trees : mapping of str to SeqTree
        Each synthesized column's fitted (value) tree.
    missing : mapping of str to dict
        The missing-value layout of each column with missing values.
    missing_trees : mapping of str to SeqTree
        The kind trees of two-step numeric columns.
    smoothed : sequence of str
        The kernel-smoothed columns.
    bandwidth : mapping of str to ndarray
        Each smoothed column's per-node bandwidths.
    integer, decimals : mapping of str
        Output rounding of each smoothed column (integer output; decimals of its values).
    records : ndarray of bool
        The records whose synthesized columns are replaced.
    data : DataFrame
        The fitted table (positional index).
    index : Index
        The fitted table's own index, restored on output.
    values : mapping of str to ndarray
        The encoded values of every column of the fitted table.
    """

    schema: Schema
    visit_sequence: Sequence[str]
    predictors: Mapping[str, list[str]]
    trees: Mapping[str, Any]
    missing: Mapping[str, dict]
    missing_trees: Mapping[str, Any]
    smoothed: Sequence[str]
    bandwidth: Mapping[str, np.ndarray]
    integer: Mapping[str, bool]
    decimals: Mapping[str, int | None]
    records: np.ndarray
    data: pd.DataFrame
    index: pd.Index
    values: Mapping[str, np.ndarray]
