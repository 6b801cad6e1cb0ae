"""Saved random-forest synthesizers: the fitted state as arrays and settings, and back (the
folder is ``bayes_risk.models.persistence``'s)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from bayes_risk.data.schema import Schema
from bayes_risk.models.persistence import saved_array
from bayes_risk.models.trees.cart_state import FittedTable
from bayes_risk.models.trees.io import StoredForest, check_missing_layout
from bayes_risk.models.trees.missing import encoded_values
from bayes_risk.models.trees.state import ForestGroups, ForestState

__all__ = ["forest_state", "restore_forests"]

#: the arrays of a numeric column's leaf donors (forest_leaves.leaf_donors)
_DONORS = ("values", "counts", "start", "size", "offsets")


def _table_arrays(table: Any, prefix: str) -> dict[str, np.ndarray]:
    """A forest's leaf tables (categorical column) or leaf donors (numeric) as named arrays."""
    if isinstance(table, dict):
        return {f"{prefix}.donors_{k}": table[k] for k in _DONORS}
    return {f"{prefix}.table": table[0], f"{prefix}.table_offsets": table[1]}


def _read_table(arrays: Any, prefix: str) -> Any:
    """What :func:`_table_arrays` stored under ``prefix``."""
    if f"{prefix}.donors_values" in arrays:
        return {k: saved_array(arrays, f"{prefix}.donors_{k}", "f" if k == "values" else "iu",
                               (None,)) for k in _DONORS}
    return (saved_array(arrays, f"{prefix}.table", "f", (None, None)),
            saved_array(arrays, f"{prefix}.table_offsets", "iu", (None,)))


def forest_state(state: ForestState, fit_call: Mapping[str, Any]
                 ) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """The fitted state of a random-forest synthesizer (and its ``fit_call_``) as JSON-ready
    fields and named arrays."""

    def flat(f: Any) -> StoredForest:
        return f if isinstance(f, StoredForest) else StoredForest.from_sklearn(f)

    g = state.groups
    arrays: dict[str, np.ndarray] = {}
    groups_state: dict[str, Any] = {}
    for k, col in enumerate(state.visit_sequence):
        arrays[f"records{k}"] = np.asarray(state.records[col], dtype=bool)
        arrays.update(flat(state.forests[col]).to_arrays(f"forest{k}"))
        table = state.tables[col]
        if isinstance(table, dict):
            arrays.update(_table_arrays(table, f"forest{k}"))
        else:  # the layout of the saved categorical forests, unchanged
            arrays[f"table{k}"], arrays[f"table{k}.offsets"] = table
        if col in state.inbag:
            arrays[f"inbag{k}"] = state.inbag[col]
        if col in g.by:
            codes = sorted(g.forests[col])
            groups_state[col] = {
                "codes": [int(c) for c in codes],
                "sizes": [[lab, int(v)] for lab, v in g.sizes[col].items()],
                "fallback": list(g.fallback[col]),
            }
            for code in codes:
                pre = f"group{k}_{int(code)}"
                arrays.update(flat(g.forests[col][code]).to_arrays(pre))
                arrays.update(_table_arrays(g.tables[col][code], pre))
                arrays[f"{pre}.tpos"] = g.positions[col][code]
                if code in g.inbag[col]:
                    arrays[f"{pre}.inbag"] = g.inbag[col][code]
    saved = {
        "visit_sequence": list(state.visit_sequence),
        "predictors": {c: list(v) for c, v in state.predictors.items()},
        "fit_call": fit_call,
        "n_trees": {c: int(v) for c, v in state.n_trees.items()},
        "groups": dict(g.by),
        "group_state": groups_state,
        "inbag": sorted(state.inbag),
        # columns with missing values (absent for complete data: those files are unchanged)
        **({"missing": state.missing} if state.missing else {}),
    }
    return saved, arrays


def restore_forests(st: Mapping[str, Any], arrays: Mapping[str, np.ndarray], schema: Schema,
                    data: pd.DataFrame, index: pd.Index) -> ForestState:
    """The fitted state of a random-forest synthesizer saved by :func:`forest_state` (``st``:
    its ``model.json`` state; ``data``: the fitted table, its index reset, and ``index``), each
    field checked (a ``ValueError`` naming it: a damaged folder).

    Returns
    -------
    ForestState
    """
    n = len(data)
    order = list(st["visit_sequence"])
    by = dict(st["groups"])
    records, forests, tables, inbag = {}, {}, {}, {}
    g_forests, g_tables, g_inbag, g_tpos = ({c: {} for c in by} for _ in range(4))
    g_sizes, g_fallback = {}, {}
    for k, col in enumerate(order):
        records[col] = saved_array(arrays, f"records{k}", "b", (n,))
        forests[col] = StoredForest.from_arrays(arrays, f"forest{k}")
        tables[col] = (_read_table(arrays, f"forest{k}") if f"table{k}" not in arrays
                       else (saved_array(arrays, f"table{k}", "f", (None, None)),
                             saved_array(arrays, f"table{k}.offsets", "iu", (None,))))
        if col in st["inbag"]:
            inbag[col] = saved_array(arrays, f"inbag{k}", "b", (None, None))
        if col in by:
            saved = st["group_state"][col]
            g_sizes[col] = {lab: int(v) for lab, v in saved["sizes"]}
            g_fallback[col] = list(saved["fallback"])
            for code in saved["codes"]:
                pre = f"group{k}_{int(code)}"
                g_forests[col][code] = StoredForest.from_arrays(arrays, pre)
                g_tables[col][code] = _read_table(arrays, pre)
                g_tpos[col][code] = saved_array(arrays, f"{pre}.tpos", "iu", (None,))
                if f"{pre}.inbag" in arrays:
                    g_inbag[col][code] = saved_array(arrays, f"{pre}.inbag", "b", (None, None))
    missing = check_missing_layout(st.get("missing", {}), schema)
    values = {c: v.astype(np.float64) for c, v in encoded_values(data, schema, missing).items()}
    union = np.logical_or.reduce(list(records.values())) if records else np.zeros(n, bool)
    return ForestState(
        schema=schema, visit_sequence=order,
        predictors={c: list(v) for c, v in st["predictors"].items()}, missing=missing,
        records=records, forests=forests, tables=tables, inbag=inbag,
        n_trees={c: int(v) for c, v in st["n_trees"].items()},
        groups=ForestGroups(by=by, forests=g_forests, tables=g_tables, positions=g_tpos,
                            inbag=g_inbag, sizes=g_sizes, fallback=g_fallback),
        table=FittedTable(data=data, index=index, values=values, records=union))
