"""Saved CART synthesizers: the fitted state as arrays and settings, and back (the folder is
``bayes_risk.models.persistence``'s)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from bayes_risk._numeric import decimals_of
from bayes_risk.data.schema import Schema
from bayes_risk.models.persistence import saved_array
from bayes_risk.models.trees.cart_state import CARTState, FittedTable, LeafDraw
from bayes_risk.models.trees.io import (
    check_missing_layout,
    seqtree_from_arrays,
    seqtree_to_arrays,
)
from bayes_risk.models.trees.missing import KIND_SUFFIX, encoded_values
from bayes_risk.models.trees.regression import RegressionColumn
from bayes_risk.models.trees.spec_ctree import CtreeColumn
from bayes_risk.models.trees.spec_forest import ForestColumn

__all__ = ["cart_state", "restore_cart"]


def cart_state(state: CARTState, fit_call: Mapping[str, Any], n_records: int
               ) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """The fitted state of a CART synthesizer (and its ``fit_call_`` and ``n_records_``) as
    JSON-ready fields and named arrays."""
    arrays: dict[str, np.ndarray] = {"records": np.asarray(state.table.records, dtype=bool)}
    trees = []
    for k, col in enumerate(state.visit_sequence):
        if col in state.regressions:  # refitted from the data on loading (no random draw)
            trees.append(None)
            continue
        info, arr = seqtree_to_arrays(state.trees[col], f"tree{k}")
        trees.append(info)
        arrays.update(arr)
        if col in state.leaf_draw.bandwidth:
            arrays[f"bandwidth{k}"] = np.asarray(state.leaf_draw.bandwidth[col], dtype=np.float64)
    kind_trees = {}
    for k, col in enumerate(state.visit_sequence):
        if col in state.missing_trees:
            info, arr = seqtree_to_arrays(state.missing_trees[col], f"kindtree{k}")
            kind_trees[col] = info
            arrays.update(arr)
    saved = {
        "visit_sequence": list(state.visit_sequence),
        "predictors": {c: list(v) for c, v in state.predictors.items()},
        "trees": trees,
        "fit_call": fit_call,
        "smoothed": list(state.leaf_draw.smoothed),
        "decimals": dict(state.leaf_draw.decimals),
        "integer": {c: bool(v) for c, v in state.leaf_draw.integer.items()},
        "n_records": int(n_records),
        # columns a spec draws by regression (absent otherwise: older folders are unchanged)
        **({"regressions": {c: r.method for c, r in state.regressions.items()}}
           if state.regressions else {}),
        # columns with missing values and the kind trees of two-step numeric columns
        # (absent in folders of complete data: their files are unchanged)
        **({"missing": state.missing, "kind_trees": kind_trees} if state.missing else {}),
    }
    return saved, arrays


def restore_cart(st: Mapping[str, Any], arrays: Mapping[str, np.ndarray], schema: Schema,
                 data: pd.DataFrame, index: pd.Index) -> CARTState:
    """The fitted state of a CART synthesizer saved by :func:`cart_state` (``st``: its
    ``model.json`` state; ``data``: the fitted table, its index reset, and ``index``), each
    field checked (a ``ValueError`` naming it: a damaged folder).

    Returns
    -------
    CARTState
    """
    order = list(st["visit_sequence"])
    predictors = {c: list(v) for c, v in st["predictors"].items()}
    trees = {c: seqtree_from_arrays(st["trees"][k], arrays, f"tree{k}")
             for k, c in enumerate(order) if st["trees"][k] is not None}
    methods = st.get("regressions", {})
    if set(methods) | set(trees) != set(order):
        raise ValueError("a visited column has neither a tree nor a regression method")
    for c, tree in trees.items():  # tree k is the k-th visited column's
        # its design's predictors, without the kind inputs and the constant cart_fit adds
        names = [p for p in tree.design.predictors
                 if p != "__const__" and not p.endswith(KIND_SUFFIX)]
        if names != predictors.get(c) or tree.categorical_outcome != schema[c].is_categorical:
            raise ValueError(f"the tree stored for column {c!r} was grown for another column "
                             f"(its predictors {list(tree.design.predictors)})")
    missing = check_missing_layout(st.get("missing", {}), schema)
    kinds = st.get("kind_trees", {})
    missing_trees = {c: seqtree_from_arrays(kinds[c], arrays, f"kindtree{k}")
                     for k, c in enumerate(order) if c in kinds}
    if any(missing.get(c, {}).get("type") == "two_step" and c not in missing_trees
           and c not in methods for c in order):  # regressions: no kind tree
        raise ValueError("a kind tree of a column with missing values is missing")
    smoothed = list(st["smoothed"])
    bandwidth = {c: saved_array(arrays, f"bandwidth{k}", "f",
                                (trees[c].n_nodes if c in trees else None,))
                 for k, c in enumerate(order) if c in smoothed}
    n = len(data)
    if int(st["n_records"]) != n:
        raise ValueError(f"model.json's n_records is {st['n_records']}, the fitted table has "
                         f"{n} records")
    records = saved_array(arrays, "records", "b", (n,))
    values = encoded_values(data, schema, missing)
    regressions = {
        # synthpop's rf grows its forests for each synthetic dataset (older folders also hold
        # "forest_seeds", the seeds of the forests they grew once)
        c: ForestColumn(c, predictors[c], schema, values, missing)
        if m == "rf" else
        CtreeColumn(c, predictors[c], schema, values, missing)
        if m == "ctree" else
        RegressionColumn(m, c, predictors[c], schema, values,
                         None if schema[c].is_categorical else decimals_of(values[c]), missing)
        for c, m in methods.items()}
    return CARTState(
        schema=schema, visit_sequence=order, predictors=predictors, trees=trees,
        missing=missing, missing_trees=missing_trees,
        table=FittedTable(data=data, index=index, values=values, records=records),
        leaf_draw=LeafDraw(smoothed=smoothed, bandwidth=bandwidth,
                           integer=dict(st["integer"]), decimals=dict(st["decimals"])),
        regressions=regressions)
