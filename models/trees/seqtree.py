"""Tree machinery of the CART synthesizer: the design matrix, fitted trees in flat arrays with
each node's donors (contiguous: pre-order nodes), and draws inside nodes.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from bayes_risk.data.schema import Schema
from bayes_risk.data.validate import encode

__all__ = ["Design", "SeqTree", "segment_choice", "column_codes"]

#: route ``"climb"`` records with the compiled walk (``trees.route``): ``True`` always, ``False``
#: never (the vectorised loop: the same nodes), ``None`` when it pays — at least
#: ``COMPILED_ROUTE_MIN`` records, or numba loaded already (loading costs ~0.45 s and 130 MiB).
COMPILED_ROUTE: bool | None = None
COMPILED_ROUTE_MIN = 50_000


def _compiled_route(n: int) -> bool:
    """Whether to route ``n`` records with the compiled walk (see ``COMPILED_ROUTE``)."""
    if COMPILED_ROUTE is not None:
        return bool(COMPILED_ROUTE)
    import sys

    return n >= COMPILED_ROUTE_MIN or "bayes_risk.models.trees.route" in sys.modules


def column_codes(df: pd.DataFrame, schema: Schema, col: str) -> np.ndarray:
    """Integer codes ``0..d-1`` of a categorical column (vectorised through pandas)."""
    spec = schema[col]
    levels = list(spec.levels or ())
    s = df[col]
    # fast path: exact equality with the levels (the common case: levels came from this data)
    try:
        # a Categorical's own categories may hold levels the schema dropped (UNUSED_LEVEL):
        # recoding it through set_categories maps by value (pandas deprecates the constructor)
        codes = (s.cat.set_categories(levels).cat.codes.to_numpy(np.int64)
                 if isinstance(s.dtype, pd.CategoricalDtype)
                 else pd.Categorical(s, categories=levels).codes.astype(np.int64))
    except (TypeError, ValueError):
        codes = np.full(len(s), -1, dtype=np.int64)
    if (codes < 0).any():  # 2 vs 2.0, str vs int after a CSV round trip: use the careful path
        codes = encode(df, schema, [col])[:, 0]
    return codes


@dataclass
class Design:
    """Predictor layout for one tree: per predictor its kind (``"numeric"``, ``"ordinal"`` or
    ``"nominal"``) and number of levels (0 for numeric)."""

    predictors: list[str]
    kinds: list[str]
    n_levels: list[int]
    feature_pred: np.ndarray = field(init=False)  # design column -> predictor index
    nominal_index: np.ndarray = field(init=False)  # predictor index -> nominal slot or -1
    nominal_offset: np.ndarray = field(init=False)  # nominal slot -> offset in seen table
    n_features: int = field(init=False)

    def __post_init__(self) -> None:
        fp: list[int] = []
        nom_idx = np.full(len(self.predictors), -1, dtype=np.int64)
        offs = [0]
        slot = 0
        for j, (k, d) in enumerate(zip(self.kinds, self.n_levels, strict=False)):
            if k == "nominal":
                fp.extend([j] * d)
                nom_idx[j] = slot
                offs.append(offs[-1] + d)
                slot += 1
            else:
                fp.append(j)
        self.feature_pred = np.asarray(fp, dtype=np.int64)
        self.nominal_index = nom_idx
        self.nominal_offset = np.asarray(offs, dtype=np.int64)
        self.n_features = len(fp)

    @property
    def n_nominal(self) -> int:
        return int((self.nominal_index >= 0).sum())

    def matrix(self, values: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        """The float32 design matrix ``(n, n_features)`` and the nominal codes ``(n, n_nominal)``
        of per-predictor arrays (float values, or int codes of ordinal/nominal predictors)."""
        n = len(values[0]) if values else 0
        X = np.zeros((n, self.n_features), dtype=np.float32)
        codes = np.zeros((n, self.n_nominal), dtype=np.int64)
        col = 0
        for j, (k, d) in enumerate(zip(self.kinds, self.n_levels, strict=False)):
            v = values[j]
            if k == "nominal":
                c = np.asarray(v, dtype=np.int64)
                X[np.arange(n), col + c] = 1.0
                codes[:, self.nominal_index[j]] = c
                col += d
            else:
                X[:, col] = np.asarray(v, dtype=np.float64)
                col += 1
        return X, codes


class SeqTree:
    """A fitted scikit-learn decision tree in flat arrays, with donors and seen levels per node
    (``X``, ``nominal_codes``: the training design; ``donor_rows``: their rows in the table;
    ``y``: the training outcome)."""

    def __init__(self, estimator, design: Design, X: np.ndarray, nominal_codes: np.ndarray,
                 donor_rows: np.ndarray, y: np.ndarray, categorical_outcome: bool,
                 n_classes: int = 0) -> None:
        t = estimator.tree_
        self.design = design
        self.left = t.children_left.astype(np.int64)
        self.right = t.children_right.astype(np.int64)
        self.feature = t.feature.astype(np.int64)
        self.threshold = t.threshold.astype(np.float64)
        self.n_nodes = int(t.node_count)
        self.categorical_outcome = categorical_outcome
        self.n_classes = n_classes
        # pre-order check and subtree ends
        end = np.arange(1, self.n_nodes + 1, dtype=np.int64)
        for k in range(self.n_nodes - 1, -1, -1):
            if self.left[k] != -1:
                if self.left[k] != k + 1 or self.right[k] != end[self.left[k]]:
                    raise RuntimeError("scikit-learn tree is not in pre-order; cannot index donors")
                end[k] = end[self.right[k]]
        self.subtree_end = end
        leaves = estimator.apply(X).astype(np.int64)
        order = np.argsort(leaves, kind="stable")
        self.donor_rows = np.asarray(donor_rows, dtype=np.int64)[order]
        self.y_sorted = np.asarray(y)[order]
        sorted_leaves = leaves[order]
        ids = np.arange(self.n_nodes)
        self.node_start = np.searchsorted(sorted_leaves, ids, side="left")
        self.node_stop = np.searchsorted(sorted_leaves, end, side="left")
        self.node_size = self.node_stop - self.node_start
        # levels of each nominal predictor seen in each node: mark leaves, propagate upwards
        tot = int(design.nominal_offset[-1])
        seen = np.zeros((self.n_nodes, max(tot, 1)), dtype=bool)
        if design.n_nominal:
            cols = nominal_codes + design.nominal_offset[:-1][None, :]
            seen[np.repeat(leaves, design.n_nominal), cols.ravel()] = True
            for k in range(self.n_nodes - 1, -1, -1):
                if self.left[k] != -1:
                    seen[k] = seen[self.left[k]] | seen[self.right[k]]
        self.seen = seen
        self.is_leaf = self.left == -1
        self.n_collapsed = 0

    def _deviance(self, k: int) -> float:
        v = self.y_sorted[self.node_start[k] : self.node_stop[k]]
        if v.size == 0:
            return 0.0
        if self.categorical_outcome:
            cnt = np.bincount(v.astype(np.int64), minlength=self.n_classes).astype(float)
            cnt = cnt[cnt > 0]
            return float(-2.0 * np.sum(cnt * np.log(cnt / v.size)))
        v = v.astype(np.float64)
        return float(np.sum((v - v.mean()) ** 2))

    def collapse_low_deviance(self, min_deviance: float) -> None:
        """Treat as a leaf every node whose deviance is below ``min_deviance`` × root deviance
        (R ``tree``'s ``mindev``, applied top-down after growing fully)."""
        if min_deviance <= 0:
            return
        thr = min_deviance * self._deviance(0)
        for k in range(self.n_nodes):
            if not self.is_leaf[k] and self._reachable(k) and self._deviance(k) < thr:
                self._make_leaf(k)

    def prune_to_diversity(self, k_min: int) -> None:
        """Collapse leaves into their parents until every leaf holds ≥ ``k_min`` distinct values
        (Reiter 2005's diversity criterion)."""
        if k_min is None or k_min <= 1:
            return
        parent = np.full(self.n_nodes, -1, dtype=np.int64)
        internal = np.flatnonzero(self.left != -1)
        parent[self.left[internal]] = internal
        parent[self.right[internal]] = internal
        changed = True
        while changed:
            changed = False
            for k in range(self.n_nodes - 1, 0, -1):
                if self.is_leaf[k] and self._reachable(k):
                    v = self.y_sorted[self.node_start[k] : self.node_stop[k]]
                    if np.unique(v).size < k_min:
                        self._make_leaf(int(parent[k]))
                        changed = True

    def _make_leaf(self, k: int) -> None:
        # nodes inside the subtree stay in the arrays but become unreachable
        self.is_leaf[k] = True
        self.n_collapsed += 1

    def _reachable(self, k: int) -> bool:
        # a node is unreachable when some ancestor was made a leaf
        node = 0
        while node != k:
            if self.is_leaf[node]:
                return False
            node = self.left[node] if k < self.right[node] else self.right[node]
        return True

    def leaves(self) -> np.ndarray:
        """Ids of the reachable leaves."""
        ids = [k for k in range(self.n_nodes) if self.is_leaf[k] and self._reachable(k)]
        return np.asarray(ids, dtype=np.int64)

    def route(self, X: np.ndarray, nominal_codes: np.ndarray, unroutable: str = "climb",
              rng: np.random.Generator | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Each record's node (a leaf, or where it climbed) and whether it met an unevaluable
        split (``unroutable``: the CART synthesizer's setting)."""
        design = self.design
        if unroutable == "climb" and X.shape[0] > 0 and _compiled_route(X.shape[0]):
            from bayes_risk.models.trees.route import route_climb

            return route_climb(X, nominal_codes, self.is_leaf, self.feature, self.threshold,
                               self.left, self.right, design.feature_pred, design.nominal_index,
                               design.nominal_offset, self.seen)
        n = X.shape[0]
        node = np.zeros(n, dtype=np.int64)
        flag = np.zeros(n, dtype=bool)
        active = np.arange(n)
        while active.size:
            nd = node[active]
            internal = ~self.is_leaf[nd]
            active, nd = active[internal], nd[internal]
            if not active.size:
                break
            f = self.feature[nd]
            pred = design.feature_pred[f]
            slot = design.nominal_index[pred]
            bad = np.zeros(active.size, dtype=bool)
            isnom = slot >= 0
            if isnom.any():
                a = active[isnom]
                code = nominal_codes[a, slot[isnom]]
                bad[isnom] = ~self.seen[nd[isnom], design.nominal_offset[slot[isnom]] + code]
            go_left = X[active, f] <= self.threshold[nd]
            nxt = np.where(go_left, self.left[nd], self.right[nd])
            if bad.any():
                flag[active[bad]] = True
                if unroutable == "climb":
                    keep = ~bad
                    node[active[keep]] = nxt[keep]
                    active = active[keep]
                    continue
                nb = nd[bad]
                nl = self.node_size[self.left[nb]].astype(float)
                nr = self.node_size[self.right[nb]].astype(float)
                u = rng.random(nb.size)
                nxt[bad] = np.where(u * (nl + nr) < nl, self.left[nb], self.right[nb])
            node[active] = nxt
        return node, flag


def segment_choice(seg_start: np.ndarray, seg_size: np.ndarray, which: np.ndarray,
                   rng: np.random.Generator, weights: np.ndarray | None = None,
                   bayes_bootstrap: bool = True) -> np.ndarray:
    """One position per request ``r`` inside segment ``which[r]``: by ``weights``, by fresh
    Dirichlet weights (``bayes_bootstrap``), or uniformly."""
    seg_start = np.asarray(seg_start, dtype=np.int64)
    seg_size = np.asarray(seg_size, dtype=np.int64)
    total = int(seg_start[-1] + seg_size[-1]) if seg_start.size else 0
    u = rng.random(which.size)
    if weights is None and not bayes_bootstrap:
        k = np.minimum((u * seg_size[which]).astype(np.int64), seg_size[which] - 1)
        return seg_start[which] + k
    if weights is None:
        w = rng.standard_exponential(total)
    else:
        w = np.asarray(weights, dtype=np.float64)
    C = np.cumsum(w)
    lo_idx = seg_start - 1
    base = np.where(lo_idx >= 0, C[np.maximum(lo_idx, 0)], 0.0)
    top = C[seg_start + seg_size - 1]
    target = base[which] + u * (top[which] - base[which])
    pos = np.searchsorted(C, target, side="right")
    # guard against floating-point edge cases and zero-weight tails
    return np.clip(pos, seg_start[which], seg_start[which] + seg_size[which] - 1)
