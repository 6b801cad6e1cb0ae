"""synthpop 1.9-2's ``rf`` method of a :class:`~bayes_risk.models.SynthesisSpec` (its
``syn.rf``): a small random forest whose donors are the records sharing a leaf with the
synthetic record in any tree. See :doc:`/user_guide/synthesizers`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from bayes_risk.data.schema import Schema
from bayes_risk.models.trees.missing import design_inputs, kind_codes
from bayes_risk.models.trees.seqtree import Design, SeqTree

__all__ = ["ForestColumn"]

#: synthpop's ``syn.rf`` default ``ntree``
N_TREES = 10
#: randomForest's ``nodesize`` (a node of at most this many draws is a leaf), by outcome type
#: (categorical: True)
NODESIZE = {True: 1, False: 5}


class ForestColumn:
    """One synthesized column drawn by synthpop's ``rf`` from its ``predictors``.

    As ``randomForest`` with synthpop's settings: ``N_TREES`` trees, each on a bootstrap sample,
    ``mtry`` = floor(p/3) predictors per split for a numeric column (leaves of at most 5
    records are not split) and floor(sqrt(p)) for a categorical one (grown until pure), p the
    number of inputs (a categorical input is one, its levels ordered by their mean outcome). A
    synthetic record's donors are all
    the original records that fall in its leaf, tree by tree, pooled with their multiplicity;
    it takes one donor's value uniformly (synthpop ignores ``proper`` for ``rf``, and so does
    the package: the draw is the same with either ``donor``). A numeric column with missing
    values is drawn in two steps as synthpop pads it (``padMis.syn``): its kind (observed,
    empty, a declared code) by a forest on all records, then, for a donor of the observed kind,
    its value by a forest on the observed records.
    """

    method = "rf"

    def __init__(self, column: str, predictors: Sequence[str], schema: Schema,
                 values: dict[str, np.ndarray], layout: Mapping[str, Mapping[str, Any]],
                 random_state: int) -> None:
        self.column, self.predictors, self.schema = column, list(predictors), schema
        self.layout, self.random_state = dict(layout), int(random_state)
        names, kinds, nlev, arrs = design_inputs(schema, self.predictors, self.layout,
                                                 values.__getitem__)
        y = values[column]
        # randomForest splits a factor by a subset of its levels: for a numeric outcome the
        # best subset is a cut of the levels ordered by their mean outcome (Breiman et al.
        # 1984, §9.4), so each unordered input becomes one input, its levels in that order
        # (for a categorical outcome, ordered by mean code: an approximation)
        self.rank = {}
        # the outcome that orders the levels: a numeric column's observed values
        yo = np.asarray(y, dtype=np.float64)
        fin = np.ones(len(yo), dtype=bool)
        if column in self.layout and not schema[column].is_categorical:
            fin = kind_codes(yo, self.layout[column]["codes"]) == 0
        for j, (name, kind, d) in enumerate(zip(names, kinds, nlev, strict=True)):
            if kind == "nominal":
                c = np.asarray(arrs[j], dtype=np.int64)
                tot = np.bincount(c[fin], weights=yo[fin], minlength=d)
                cnt = np.bincount(c[fin], minlength=d)
                mean = np.where(cnt > 0, tot / np.maximum(cnt, 1), yo[fin].mean())
                self.rank[name] = np.argsort(np.argsort(mean, kind="stable"), kind="stable")
                arrs[j] = self.rank[name][c]
                kinds[j] = "ordinal"
        self.design = Design(names, kinds, nlev)
        X, codes = self.design.matrix(arrs)
        cat = schema[column].is_categorical
        rng = np.random.default_rng(self.random_state)
        rows = np.arange(len(y))
        lay = self.layout.get(column)
        self.observed = self.value_trees = None
        if cat:
            n_classes = schema[column].n_levels + (lay is not None)
            self.trees = self._forest(X, codes, y, rows, n_classes, rng)
        elif lay is None:
            self.trees = self._forest(X, codes, y, rows, 0, rng)
        else:  # synthpop's padMis.syn: the kind (column.NA) by rf, then the value (column.0)
            kind = kind_codes(yo, lay["codes"])
            self.trees = self._forest(X, codes, kind, rows, int(kind.max()) + 1, rng)
            self.observed = kind == 0
            obs = np.flatnonzero(self.observed)
            self.value_trees = self._forest(X[obs], codes[obs], yo[obs], obs, 0, rng)

    def _forest(self, X: np.ndarray, codes: np.ndarray, y: np.ndarray, rows: np.ndarray,
                n_classes: int, rng: np.random.Generator) -> list[SeqTree]:
        """``N_TREES`` trees on bootstrap samples of the records ``rows`` (design ``X``, outcome
        ``y``: level codes when ``n_classes``); each record of ``rows`` is a donor of the leaf
        it falls in (synthpop's nodesobs)."""
        cat = n_classes > 0
        p = X.shape[1]
        mtry = max(int(np.floor(np.sqrt(p) if cat else p / 3)), 1)
        trees = []
        for _ in range(N_TREES):
            boot = rng.integers(0, len(y), len(y))
            tree = _grow(X[boot].astype(np.float64), y[boot], cat, n_classes, mtry,
                         NODESIZE[cat], rng)
            trees.append(SeqTree(tree, self.design, X, codes, rows, y, cat, n_classes))
        return trees

    def draw(self, value_of: Callable[[str], np.ndarray], rng: np.random.Generator) -> np.ndarray:
        """The donor row of each record, from the predictors' current values."""
        names, _, _, arrs = design_inputs(self.schema, self.predictors, self.layout, value_of)
        arrs = [self.rank[n][np.asarray(a, dtype=np.int64)] if n in self.rank else a
                for n, a in zip(names, arrs, strict=True)]
        X, codes = self.design.matrix(arrs)
        rows = _pooled_donor(self.trees, X, codes, rng)
        if self.value_trees is not None:  # a donor of an observed kind: a value's donor
            obs = np.flatnonzero(self.observed[rows])
            if obs.size:
                rows[obs] = _pooled_donor(self.value_trees, X[obs], codes[obs], rng)
        return rows


def _pooled_donor(trees: list[SeqTree], X: np.ndarray, codes: np.ndarray,
                  rng: np.random.Generator) -> np.ndarray:
    """Per record, one donor of its leaves in ``trees`` pooled with multiplicity (synthpop's
    ``unlist(n0)``): a tree in proportion to its leaf's size, then a record of that leaf."""
    nodes = np.column_stack([t.route(X, codes, "climb")[0] for t in trees])
    sizes = np.column_stack([t.node_size[nodes[:, k]] for k, t in enumerate(trees)])
    cum = np.cumsum(sizes, axis=1)
    u = rng.random(len(X)) * cum[:, -1]
    k = np.minimum((cum <= u[:, None]).sum(axis=1), len(trees) - 1)
    r = np.arange(len(X))
    node = nodes[r, k]
    pos = np.minimum((rng.random(len(X)) * sizes[r, k]).astype(np.int64), sizes[r, k] - 1)
    out = np.empty(len(X), dtype=np.int64)
    for j, t in enumerate(trees):
        sel = k == j
        out[sel] = t.donor_rows[t.node_start[node[sel]] + pos[sel]]
    return out

class _Arrays:
    """A grown tree in scikit-learn's layout (``tree_`` and ``apply``), as ``SeqTree`` reads it."""

    def __init__(self, left: list[int], right: list[int], feature: list[int],
                 threshold: list[float]) -> None:
        self.tree_ = self
        self.children_left = np.asarray(left, dtype=np.int64)
        self.children_right = np.asarray(right, dtype=np.int64)
        self.feature = np.asarray(feature, dtype=np.int64)
        self.threshold = np.asarray(threshold, dtype=np.float64)
        self.node_count = len(left)

    def apply(self, X: np.ndarray) -> np.ndarray:
        node = np.zeros(len(X), dtype=np.int64)
        active = np.flatnonzero(self.children_left[node] != -1)
        while active.size:
            nd = node[active]
            go_left = X[active, self.feature[nd]] <= self.threshold[nd]
            node[active] = np.where(go_left, self.children_left[nd], self.children_right[nd])
            active = active[self.children_left[node[active]] != -1]
        return node


def _grow(X: np.ndarray, y: np.ndarray, categorical: bool, n_classes: int, mtry: int,
          nodesize: int, rng: np.random.Generator) -> _Arrays:
    """One tree as randomForest grows it (its ``regTree``/``findbestsplit``): a node of at
    most ``nodesize`` draws, or a pure one, is a leaf; otherwise ``mtry`` inputs are sampled
    and the best split among them (least squares, or Gini for a categorical outcome; the
    threshold midway between adjacent values) is taken — and when none of them splits the
    node with a gain, the node is a leaf (scikit-learn would search the other inputs)."""
    left: list[int] = []
    right: list[int] = []
    feature: list[int] = []
    threshold: list[float] = []
    Y = np.eye(n_classes)[y.astype(np.int64)] if categorical else \
        y.astype(np.float64)[:, None]

    def score(S: np.ndarray, n: np.ndarray) -> np.ndarray:
        # sum over outcome columns of (sum)^2 / n: larger is better for both criteria
        return (S ** 2).sum(axis=-1) / n

    def node(idx: np.ndarray) -> int:
        k = len(left)
        left.append(-1), right.append(-1), feature.append(-2), threshold.append(-2.0)
        Yn = Y[idx]
        pure = categorical and (Yn.sum(axis=0) == len(idx)).any()
        if len(idx) <= nodesize or pure:
            return k
        parent = float(score(Yn.sum(axis=0), len(idx)))
        best = (parent * (1 + 1e-12) + 1e-12, -1, 0.0)
        for j in rng.choice(X.shape[1], size=min(mtry, X.shape[1]), replace=False):
            order = np.argsort(X[idx, j], kind="stable")
            x = X[idx[order], j]
            cum = np.cumsum(Yn[order], axis=0)[:-1]
            ok = x[1:] > x[:-1]
            if not ok.any():
                continue
            nl = np.arange(1, len(idx))
            gain = score(cum, nl) + score(cum[-1] + Yn[order][-1] - cum, len(idx) - nl)
            gain = np.where(ok, gain, -np.inf)
            i = int(np.argmax(gain))
            if gain[i] > best[0]:
                best = (float(gain[i]), int(j), (x[i] + x[i + 1]) / 2)
        if best[1] < 0:  # no sampled input splits the node: a leaf (randomForest's jstat)
            return k
        feature[k], threshold[k] = best[1], best[2]
        go = X[idx, best[1]] <= best[2]
        left[k] = node(idx[go])
        right[k] = node(idx[~go])
        return k

    node(np.arange(len(y)))
    return _Arrays(left, right, feature, threshold)
