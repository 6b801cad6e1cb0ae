"""The fitted states of a :class:`~bayes_risk.models.RandomForestSynthesizer` and of a
:class:`~bayes_risk.models.SmallCellPMMSynthesizer`: what a fit leaves, what ``save`` writes
and ``load`` reads back (``trees.rf_io``, ``trees.pmm``; CART's: ``trees.cart_state``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from bayes_risk.data.schema import Schema
from bayes_risk.models.trees.cart_state import FittedTable

__all__ = ["ForestGroups", "ForestState", "PMMState"]


@dataclass(frozen=True, eq=False)
class ForestGroups:
    """The forests grown per level of a grouping column (``group_by``), per synthesized column.

    Attributes
    ----------
    by : mapping of str to str
        Per grouped column, its grouping column.
    forests : mapping of str to dict
        Per grouped column, ``{level code: forest}``.
    tables : mapping of str to dict
        Per grouped column, ``{level code: leaf tables or leaf donors}``.
    positions : mapping of str to dict
        Per grouped column, ``{level code: each replaced record's position among the group
        forest's records (-1: another level)}``.
    inbag : mapping of str to dict
        Per grouped column, ``{level code: in-bag matrix}`` (``oob_only``).
    sizes : mapping of str to dict
        Per grouped column, ``{level: replaced records}``.
    fallback : mapping of str to list
        Per grouped column, the levels synthesized by the pooled forest.
    """

    by: Mapping[str, str]
    forests: Mapping[str, dict[int, Any]]
    tables: Mapping[str, dict[int, Any]]
    positions: Mapping[str, dict[int, np.ndarray]]
    inbag: Mapping[str, dict[int, np.ndarray]]
    sizes: Mapping[str, dict[Any, int]]
    fallback: Mapping[str, list[Any]]


@dataclass(frozen=True, eq=False)
class ForestState:
    """The fitted state of a random-forest synthesizer (its fitted attributes of the same
    names, the fitted table in ``table`` and the group forests in ``groups``).

    Attributes
    ----------
    schema : Schema
    visit_sequence : sequence of str
    predictors : mapping of str to list of str
    missing : mapping of str to dict
        The columns with missing values and their layout.
    records : mapping of str to ndarray of bool
        Per synthesized column, its replaced records.
    forests : mapping of str to forest
        Per synthesized column, the pooled forest.
    tables : mapping of str to leaf tables or leaf donors
        Per synthesized column: a categorical column's stacked leaf probabilities and tree
        offsets, a numeric one's leaf donors.
    inbag : mapping of str to ndarray
        Per column (``oob_only``), the in-bag matrix of its forest.
    n_trees : mapping of str to int
    groups : ForestGroups
    table : FittedTable
        The fitted table (``records``: the records any column replaces).
    """

    schema: Schema
    visit_sequence: Sequence[str]
    predictors: Mapping[str, list[str]]
    missing: Mapping[str, dict]
    records: Mapping[str, np.ndarray]
    forests: Mapping[str, Any]
    tables: Mapping[str, Any]
    inbag: Mapping[str, np.ndarray]
    n_trees: Mapping[str, int]
    groups: ForestGroups
    table: FittedTable


@dataclass(frozen=True, eq=False)
class PMMState:
    """The fitted state of a small-cell PMM synthesizer (its fitted attributes of the same
    names).

    Attributes
    ----------
    schema : Schema
    identifying : list of str
        The identifying variables.
    synthesize : list of str
        The identifying variables synthesized, in order.
    predictors : mapping of str to list of str
    recipients : ndarray of bool
        The records of the sensitive cells (or the selection given to ``fit``).
    sensitive_cells : DataFrame
    min_cell_count_before : int
    constraints : mapping of str to list
        Per synthesized column, its constraints (callables: never saved).
    table : FittedTable
        The fitted table (``records``: the recipients; ``values``: empty, PMM reads ``data``).
    """

    schema: Schema
    identifying: list[str]
    synthesize: list[str]
    predictors: Mapping[str, list[str]]
    recipients: np.ndarray
    sensitive_cells: pd.DataFrame
    min_cell_count_before: int
    constraints: Mapping[str, list[Any]]
    table: FittedTable
