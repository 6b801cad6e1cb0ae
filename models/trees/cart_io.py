"""Saved CART synthesizers: the fitted state as arrays and settings, and back (the folder is
``bayes_risk.models.persistence``'s)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from bayes_risk._numeric import decimals_of
from bayes_risk.models.trees.cart_state import CARTState
from bayes_risk.models.trees.io import (
    check_missing_layout,
    seqtree_from_arrays,
    seqtree_to_arrays,
    split_data,
)
from bayes_risk.models.trees.missing import KIND_SUFFIX, encoded_values
from bayes_risk.models.trees.regression import RegressionColumn
from bayes_risk.models.trees.spec_ctree import CtreeColumn
from bayes_risk.models.trees.spec_forest import ForestColumn

__all__ = ["cart_state", "restore_cart"]


def cart_state(model: Any) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """The fitted state of a CART synthesizer as JSON-ready settings and named arrays."""
    state: CARTState = model.state_
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
        "fit_call": model.fit_call_,
        "smoothed": list(state.leaf_draw.smoothed),
        "decimals": dict(state.leaf_draw.decimals),
        "integer": {c: bool(v) for c, v in state.leaf_draw.integer.items()},
        "n_records": int(model.n_records_),
        # columns a spec draws by regression (absent otherwise: older folders are unchanged)
        **({"regressions": {c: r.method for c, r in state.regressions.items()}}
           if state.regressions else {}),
        # columns with missing values and the kind trees of two-step numeric columns
        # (absent in folders of complete data: their files are unchanged)
        **({"missing": state.missing, "kind_trees": kind_trees} if state.missing else {}),
    }
    return saved, arrays


def restore_cart(obj: Any, meta: dict[str, Any], arrays: Any, data: pd.DataFrame) -> None:
    """Set the fitted attributes of a new CART synthesizer from a saved folder (a ``ValueError``:
    a damaged folder)."""
    st = meta["state"]
    schema = obj.schema_
    obj.visit_sequence_ = list(st["visit_sequence"])
    obj.predictors_ = {c: list(v) for c, v in st["predictors"].items()}
    obj.trees_ = {c: seqtree_from_arrays(st["trees"][k], arrays, f"tree{k}")
                  for k, c in enumerate(obj.visit_sequence_) if st["trees"][k] is not None}
    methods = st.get("regressions", {})
    if set(methods) | set(obj.trees_) != set(obj.visit_sequence_):
        raise ValueError("a visited column has neither a tree nor a regression method")
    for c, tree in obj.trees_.items():  # tree k is the k-th visited column's
        # its design's predictors, without the kind inputs and the constant cart_fit adds
        names = [p for p in tree.design.predictors
                 if p != "__const__" and not p.endswith(KIND_SUFFIX)]
        if names != obj.predictors_.get(c) or \
                tree.categorical_outcome != schema[c].is_categorical:
            raise ValueError(f"the tree stored for column {c!r} was grown for another column "
                             f"(its predictors {list(tree.design.predictors)})")
    obj.fit_call_ = st["fit_call"]
    obj.missing_ = check_missing_layout(st.get("missing", {}), schema)
    kinds = st.get("kind_trees", {})
    obj.missing_trees_ = {
        c: seqtree_from_arrays(kinds[c], arrays, f"kindtree{k}")
        for k, c in enumerate(obj.visit_sequence_) if c in kinds
    }
    if any(obj.missing_.get(c, {}).get("type") == "two_step" and c not in obj.missing_trees_
           and c not in methods for c in obj.visit_sequence_):  # regressions: no kind tree
        raise ValueError("a kind tree of a column with missing values is missing")
    obj.smoothed_ = list(st["smoothed"])
    obj.bandwidth_ = {c: arrays[f"bandwidth{k}"]
                      for k, c in enumerate(obj.visit_sequence_) if c in obj.smoothed_}
    obj._decimals = dict(st["decimals"])
    obj._integer = dict(st["integer"])
    obj._index, obj._data = split_data(data)
    n = len(obj._data)
    obj.n_records_ = int(st["n_records"])
    obj.records_ = np.asarray(arrays["records"], dtype=bool)
    if obj.records_.shape != (n,) or obj.n_records_ != n:
        raise ValueError(f"{n} records in the data, {obj.records_.shape} flags")
    obj._values = encoded_values(obj._data, schema, obj.missing_)
    obj.regressions_ = {
        # synthpop's rf grows its forests for each synthetic dataset (older folders also hold
        # "forest_seeds", the seeds of the forests they grew once)
        c: ForestColumn(c, obj.predictors_[c], schema, obj._values, obj.missing_)
        if m == "rf" else
        CtreeColumn(c, obj.predictors_[c], schema, obj._values, obj.missing_)
        if m == "ctree" else
        RegressionColumn(m, c, obj.predictors_[c], schema, obj._values,
                         None if schema[c].is_categorical else decimals_of(obj._values[c]),
                         obj.missing_)
        for c, m in methods.items()}
