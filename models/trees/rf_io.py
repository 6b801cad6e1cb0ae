"""Saved random-forest synthesizers: the fitted state as arrays and settings, and back (the
folder is ``bayes_risk.models.persistence``'s)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from bayes_risk.models.trees.io import StoredForest, check_missing_layout, split_data
from bayes_risk.models.trees.missing import encoded_values

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
        return {k: np.asarray(arrays[f"{prefix}.donors_{k}"]) for k in _DONORS}
    return arrays[f"{prefix}.table"], arrays[f"{prefix}.table_offsets"]


def forest_state(self: Any) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """The fitted state of a random-forest synthesizer as JSON-ready settings and named arrays."""

    def flat(f: Any) -> StoredForest:
        return f if isinstance(f, StoredForest) else StoredForest.from_sklearn(f)

    arrays: dict[str, np.ndarray] = {}
    groups_state: dict[str, Any] = {}
    for k, col in enumerate(self.visit_sequence_):
        arrays[f"records{k}"] = np.asarray(self.records_[col], dtype=bool)
        arrays.update(flat(self.forests_[col]).to_arrays(f"forest{k}"))
        table = self._tables[col]
        if isinstance(table, dict):
            arrays.update(_table_arrays(table, f"forest{k}"))
        else:  # the layout of the saved categorical forests, unchanged
            arrays[f"table{k}"], arrays[f"table{k}.offsets"] = table
        if col in self._inbag_:
            arrays[f"inbag{k}"] = self._inbag_[col]
        if col in self.groups_:
            codes = sorted(self.group_forests_[col])
            groups_state[col] = {
                "codes": [int(c) for c in codes],
                "sizes": [[lab, int(v)] for lab, v in self.group_sizes_[col].items()],
                "fallback": list(self.group_fallback_[col]),
            }
            for code in codes:
                pre = f"group{k}_{int(code)}"
                arrays.update(flat(self.group_forests_[col][code]).to_arrays(pre))
                arrays.update(_table_arrays(self._group_tables[col][code], pre))
                arrays[f"{pre}.tpos"] = self._group_tpos[col][code]
                if code in self._group_inbag[col]:
                    arrays[f"{pre}.inbag"] = self._group_inbag[col][code]
    state = {
        "visit_sequence": list(self.visit_sequence_),
        "predictors": {c: list(v) for c, v in self.predictors_.items()},
        "fit_call": self.fit_call_,
        "n_trees": {c: int(v) for c, v in self.n_trees_.items()},
        "groups": dict(self.groups_),
        "group_state": groups_state,
        "inbag": sorted(self._inbag_),
        # columns with missing values (absent for complete data: those files are unchanged)
        **({"missing": self.missing_} if getattr(self, "missing_", {}) else {}),
    }
    return state, arrays


def restore_forests(obj: Any, meta: dict[str, Any], arrays: Any, data: pd.DataFrame) -> None:
    """Set the fitted state of a random-forest synthesizer from its saved folder."""
    st = meta["state"]
    schema = obj.schema_
    obj._index, obj._data = split_data(data)
    n = len(obj._data)
    order = list(st["visit_sequence"])
    obj.visit_sequence_ = order
    obj.predictors_ = {c: list(v) for c, v in st["predictors"].items()}
    obj.fit_call_ = st["fit_call"]
    obj.n_trees_ = {c: int(v) for c, v in st["n_trees"].items()}
    obj.groups_ = dict(st["groups"])
    obj.records_, obj.forests_, obj._tables, obj._inbag_ = {}, {}, {}, {}
    obj.group_forests_, obj._group_tables, obj._group_inbag, obj._group_tpos = (
        {c: {} for c in obj.groups_} for _ in range(4))
    obj.group_sizes_, obj.group_fallback_ = {}, {}
    for k, col in enumerate(order):
        mk = np.asarray(arrays[f"records{k}"], dtype=bool)
        if mk.shape != (n,):
            raise ValueError(f"{n} records in the data, {mk.shape} flags for {col!r}")
        obj.records_[col] = mk
        obj.forests_[col] = StoredForest.from_arrays(arrays, f"forest{k}")
        obj._tables[col] = (_read_table(arrays, f"forest{k}") if f"table{k}" not in arrays
                            else (arrays[f"table{k}"], arrays[f"table{k}.offsets"]))
        if col in st["inbag"]:
            obj._inbag_[col] = arrays[f"inbag{k}"]
        if col in obj.groups_:
            g = st["group_state"][col]
            obj.group_sizes_[col] = {lab: int(v) for lab, v in g["sizes"]}
            obj.group_fallback_[col] = list(g["fallback"])
            for code in g["codes"]:
                pre = f"group{k}_{int(code)}"
                obj.group_forests_[col][code] = StoredForest.from_arrays(arrays, pre)
                obj._group_tables[col][code] = _read_table(arrays, pre)
                obj._group_tpos[col][code] = arrays[f"{pre}.tpos"]
                if f"{pre}.inbag" in arrays:
                    obj._group_inbag[col][code] = arrays[f"{pre}.inbag"]
    obj.missing_ = check_missing_layout(st.get("missing", {}), schema)
    obj._values = {c: v.astype(np.float64)
                   for c, v in encoded_values(obj._data, schema, obj.missing_).items()}
