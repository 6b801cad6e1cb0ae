"""The tree synthesizers' fitted state as arrays and back: stored forests and trees, the
visit sequence and missing-value layout checked on loading (the folder is
``bayes_risk.models.persistence``'s).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import SimpleNamespace
from typing import Any

import numpy as np

from bayes_risk.models.persistence import saved_array

__all__ = ["StoredForest", "check_missing_layout", "check_visit_sequence", "seqtree_from_arrays",
           "seqtree_to_arrays"]


def check_visit_sequence(model: Any) -> None:
    """A ``ValueError`` unless a restored synthesizer's visit sequence and predictors hang
    together (an edited ``model.json`` is then reported as a damaged folder)."""
    schema = model.schema_
    order = getattr(model, "visit_sequence_", None)
    cols = list(order if order is not None else getattr(model, "synthesize_", []))
    preds = getattr(model, "predictors_", None) or {}
    if len(set(cols)) != len(cols) or (order is not None and set(cols) != set(schema.synthesized)) \
            or not set(cols) <= set(schema.synthesized):
        raise ValueError(f"the visit sequence {cols} is not an order of the columns the "
                         f"schema synthesizes ({schema.synthesized})")
    seen = set(schema.unsynthesized)
    for c in cols:
        p = preds.get(c)
        if p is None or c in p or not set(p) <= set(schema.names):
            raise ValueError(f"the predictors of column {c!r} ({p}) are not other columns of "
                             "the schema")
        late = [x for x in p if x not in seen]
        if getattr(model, "method_name", None) == "cart" and late:
            raise ValueError(f"the visit sequence {cols} visits {c!r} before its "
                             f"predictor(s) {late}")
        seen.add(c)


class StoredForest:
    """A fitted forest as flat arrays, standing in for scikit-learn's in a loaded synthesizer."""

    def __init__(self, left: np.ndarray, right: np.ndarray, feature: np.ndarray,
                 threshold: np.ndarray, missing_left: np.ndarray, offsets: np.ndarray,
                 samples: np.ndarray) -> None:
        self.left = np.ascontiguousarray(left, dtype=np.int64)
        self.right = np.ascontiguousarray(right, dtype=np.int64)
        self.feature = np.ascontiguousarray(feature, dtype=np.int64)
        self.threshold = np.ascontiguousarray(threshold, dtype=np.float64)
        self.missing_left = np.ascontiguousarray(missing_left, dtype=np.bool_)
        self.offsets = np.ascontiguousarray(offsets, dtype=np.int64)  # tree b: nodes offs[b]..
        self.samples = np.asarray(samples)  # (n_trees, n_train) bootstrap draws
        self.n_estimators = int(self.offsets.size)
        bounds = np.append(self.offsets, self.left.size)
        # each tree's ``tree_`` arrays, as the plug-in likelihood reads them
        self.estimators_ = [
            SimpleNamespace(tree_=SimpleNamespace(
                children_left=self.left[a:b], children_right=self.right[a:b],
                feature=self.feature[a:b], threshold=self.threshold[a:b], node_count=int(b - a)))
            for a, b in zip(bounds[:-1], bounds[1:], strict=True)]
        self.estimators_samples_ = [self.samples[b] for b in range(self.n_estimators)]

    @classmethod
    def from_sklearn(cls, rf: Any) -> StoredForest:
        """Flatten a fitted ``RandomForestClassifier`` or ``RandomForestRegressor``."""
        ests = rf.estimators_
        sizes = np.array([e.tree_.node_count for e in ests], dtype=np.int64)
        offs = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)

        def cat(attr: str) -> np.ndarray:
            return np.concatenate([np.asarray(getattr(e.tree_, attr)) for e in ests])

        mgl = (cat("missing_go_to_left") if hasattr(ests[0].tree_, "missing_go_to_left")
               else np.zeros(int(sizes.sum()), dtype=bool))
        samples = np.stack([np.asarray(s, dtype=np.int64) for s in rf.estimators_samples_])
        return cls(cat("children_left"), cat("children_right"), cat("feature"),
                   cat("threshold"), mgl, offs, samples)

    def to_arrays(self, prefix: str) -> dict[str, np.ndarray]:
        """The arrays to store under ``prefix``."""
        samples = self.samples
        if samples.size and samples.max() < 2**31:
            samples = samples.astype(np.int32)
        return {f"{prefix}.left": self.left.astype(np.int32),
                f"{prefix}.right": self.right.astype(np.int32),
                f"{prefix}.feature": self.feature.astype(np.int32),
                f"{prefix}.threshold": self.threshold, f"{prefix}.missing_left": self.missing_left,
                f"{prefix}.offsets": self.offsets, f"{prefix}.samples": samples}

    @classmethod
    def from_arrays(cls, arrays: Mapping[str, np.ndarray], prefix: str) -> StoredForest:
        """Read what :meth:`to_arrays` stored."""
        n = saved_array(arrays, f"{prefix}.left", "iu", (None,)).size
        a = {k: saved_array(arrays, f"{prefix}.{k}", kind, shape) for k, kind, shape in (
            ("left", "iu", (n,)), ("right", "iu", (n,)), ("feature", "iu", (n,)),
            ("threshold", "f", (n,)), ("missing_left", "b", (n,)), ("offsets", "iu", (None,)),
            ("samples", "iu", (None, None)))}
        offs = a["offsets"]
        if offs.size == 0 or offs[0] != 0 or np.any(np.diff(offs) <= 0) \
                or offs[-1] >= n or a["samples"].shape[0] != offs.size:
            raise ValueError(f"forest {prefix}: inconsistent tree offsets")
        internal = a["left"] >= 0
        sizes = np.diff(np.append(offs, n))
        local_max = np.repeat(sizes, sizes)
        if np.any(a["left"][internal] >= local_max[internal]) or \
                np.any(a["right"][internal] >= local_max[internal]):
            raise ValueError(f"forest {prefix}: a child id lies outside its tree")
        return cls(a["left"], a["right"], a["feature"], a["threshold"], a["missing_left"],
                   offs, a["samples"])

    def apply(self, X: np.ndarray) -> np.ndarray:
        """Leaf id (within its tree) of every row in every tree, shape ``(n, n_trees)``."""
        from bayes_risk.models.trees.route import forest_apply

        X = np.ascontiguousarray(X, dtype=np.float32)
        return forest_apply(X, self.left, self.right, self.feature, self.threshold,
                            self.missing_left, self.offsets)


_SEQTREE_ARRAYS = ("left", "right", "feature", "threshold", "subtree_end", "donor_rows",
                   "y_sorted", "node_start", "node_stop", "node_size", "seen", "is_leaf")
#: the dtype kinds of the fields that are not integers (``y_sorted``: a categorical tree's codes
#: or a numeric one's values)
_SEQTREE_KINDS = {"threshold": ("f",), "y_sorted": ("fiu",), "seen": ("b",), "is_leaf": ("b",)}
#: the fields with one entry per node
_PER_NODE = ("left", "right", "feature", "threshold", "subtree_end", "node_start", "node_stop",
             "node_size", "is_leaf")


def seqtree_to_arrays(tree: Any, prefix: str) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """JSON description and arrays of a fitted :class:`~bayes_risk.models.trees.seqtree.SeqTree`."""
    d = tree.design
    info = {"predictors": list(d.predictors), "kinds": list(d.kinds),
            "n_levels": [int(v) for v in d.n_levels], "n_nodes": int(tree.n_nodes),
            "categorical_outcome": bool(tree.categorical_outcome),
            "n_classes": int(tree.n_classes), "n_collapsed": int(tree.n_collapsed)}
    return info, {f"{prefix}.{k}": np.asarray(getattr(tree, k)) for k in _SEQTREE_ARRAYS}


def seqtree_from_arrays(info: Mapping[str, Any], arrays: Mapping[str, np.ndarray],
                        prefix: str) -> Any:
    """Rebuild the :class:`~bayes_risk.models.trees.seqtree.SeqTree` written by
    :func:`seqtree_to_arrays` (checked for consistent sizes and child ids)."""
    from bayes_risk.models.trees.seqtree import Design, SeqTree

    tree = SeqTree.__new__(SeqTree)
    tree.design = Design(list(info["predictors"]), list(info["kinds"]),
                         [int(v) for v in info["n_levels"]])
    n = int(info["n_nodes"])
    tree.n_nodes = n
    tree.categorical_outcome = bool(info["categorical_outcome"])
    tree.n_classes = int(info["n_classes"])
    tree.n_collapsed = int(info["n_collapsed"])
    for k in _SEQTREE_ARRAYS:  # each field's kind and, per node, its length
        setattr(tree, k, saved_array(arrays, f"{prefix}.{k}", *_SEQTREE_KINDS.get(k, ("iu",)),
                                     **({"shape": (n,)} if k in _PER_NODE else
                                        {"shape": (n, None)} if k == "seen" else {})))
    internal = tree.left != -1
    if np.any(tree.left[internal] >= n) or np.any(tree.right[internal] >= n) or \
            np.any(tree.node_stop > tree.donor_rows.size) or \
            tree.donor_rows.shape != tree.y_sorted.shape:
        raise ValueError(f"tree {prefix}: node or donor ids out of range")
    if tree.design.n_features != 0 and np.any(tree.feature[internal] >= tree.design.n_features):
        raise ValueError(f"tree {prefix}: a split feature lies outside the design")
    return tree


def check_missing_layout(missing: dict[str, Any], schema: Any) -> dict[str, dict[str, Any]]:
    """The saved missing-value layout, checked against the schema (``ValueError``: damaged)."""
    out = {c: dict(v) for c, v in missing.items()}
    for c, lay in out.items():
        if c not in schema.names or lay.get("type") not in ("level", "two_step") or \
                (lay["type"] == "two_step") == schema[c].is_categorical:
            raise ValueError(f"missing-value layout of column {c!r} does not fit")
    return out
