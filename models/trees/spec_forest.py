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
#: randomForest redraws a bootstrap sample of one class (30 times) and regrows a
#: classification tree that is its root alone (without bound: here at most this often)
_RETRIES = 30


class ForestColumn:
    """One synthesized column drawn by synthpop's ``rf`` from its ``predictors``.

    As ``randomForest`` with synthpop's settings: ``N_TREES`` trees, each on a bootstrap sample,
    ``mtry`` = floor(p/3) predictors per split for a numeric column (leaves of at most 5
    records are not split) and floor(sqrt(p)) for a categorical one (grown until pure), p the
    number of inputs (a categorical input is one, its levels ordered by their mean outcome). A
    synthetic record's donors are all
    the original records that fall in its leaf, tree by tree, pooled with their multiplicity;
    it takes one donor's value uniformly (synthpop ignores ``proper`` for ``rf``, and so does
    the package: the draw is the same with either ``donor``). Each draw (synthetic dataset)
    grows its own forest, as synthpop's ``syn`` calls ``syn.rf`` for each of its ``m``
    datasets; the column holds the training data, not a forest. A numeric column with missing
    values is drawn in two steps as synthpop pads it (``padMis.syn``): its kind (observed,
    empty, a declared code) by a forest on all records, then, for a donor of the observed kind,
    its value by a forest on the observed records.
    """

    method = "rf"

    def __init__(self, column: str, predictors: Sequence[str], schema: Schema,
                 values: dict[str, np.ndarray], layout: Mapping[str, Mapping[str, Any]]) -> None:
        self.column, self.predictors, self.schema = column, list(predictors), schema
        self.layout = dict(layout)
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
        lay = self.layout.get(column)
        rows = np.arange(len(y))
        # each forest's training records: (design, nominal codes, outcome, rows, classes)
        if schema[column].is_categorical:
            n_classes = schema[column].n_levels + (lay is not None)
            self._data = (X, codes, np.asarray(y, dtype=np.float64), rows, n_classes)
            self.observed = self._value_data = None
        elif lay is None:
            self._data = (X, codes, yo, rows, 0)
            self.observed = self._value_data = None
        else:  # synthpop's padMis.syn: the kind (column.NA) by rf, then the value (column.0)
            kind = kind_codes(yo, lay["codes"])
            self._data = (X, codes, kind.astype(np.float64), rows, int(kind.max()) + 1)
            self.observed = kind == 0
            obs = np.flatnonzero(self.observed)
            self._value_data = (X[obs], codes[obs], yo[obs], obs, 0)

    def grow(self, rng: np.random.Generator) -> tuple[list[SeqTree], list[SeqTree] | None]:
        """A new forest (and, for a numeric column with missing values, the forest of its
        observed values), as ``syn.rf`` grows one for each synthetic dataset."""
        return (_forest(self.design, *self._data, rng),
                None if self._value_data is None else _forest(self.design, *self._value_data,
                                                               rng))

    def draw(self, value_of: Callable[[str], np.ndarray], rng: np.random.Generator) -> np.ndarray:
        """The donor row of each record, from the predictors' current values, by a forest
        grown for this draw (synthpop's ``syn`` calls ``syn.rf`` afresh for each dataset)."""
        return self.donors(self.grow(rng), value_of, rng)

    def donors(self, forests: tuple[list[SeqTree], list[SeqTree] | None],
               value_of: Callable[[str], np.ndarray], rng: np.random.Generator) -> np.ndarray:
        """The donor row of each record in the forests ``grow`` returned."""
        names, _, _, arrs = design_inputs(self.schema, self.predictors, self.layout, value_of)
        arrs = [self.rank[n][np.asarray(a, dtype=np.int64)] if n in self.rank else a
                for n, a in zip(names, arrs, strict=True)]
        X, codes = self.design.matrix(arrs)
        trees, value_trees = forests
        rows = _pooled_donor(trees, X, codes, rng)
        if value_trees is not None:  # a donor of an observed kind: a value's donor
            obs = np.flatnonzero(self.observed[rows])
            if obs.size:
                rows[obs] = _pooled_donor(value_trees, X[obs], codes[obs], rng)
        return rows


def _forest(design: Design, X: np.ndarray, codes: np.ndarray, y: np.ndarray, rows: np.ndarray,
            n_classes: int, rng: np.random.Generator) -> list[SeqTree]:
    """``N_TREES`` trees on bootstrap samples of the records ``rows`` (design ``X``, outcome
    ``y``: level codes when ``n_classes``); each record of ``rows`` is a donor of the leaf
    it falls in (synthpop's nodesobs)."""
    cat = n_classes > 0
    n, p = X.shape
    mtry = max(int(np.floor(np.sqrt(p) if cat else p / 3)), 1)
    Xf = X.astype(np.float64)
    several = cat and np.unique(y).size > 1
    trees = []
    for _ in range(N_TREES):
        for _attempt in range(_RETRIES):
            cnt = np.bincount(rng.integers(0, n, n), minlength=n)
            inb = np.flatnonzero(cnt)
            # randomForest redraws a sample of one class, and a classification tree that is
            # its root alone
            if several and np.unique(y[inb]).size < 2:
                continue
            tree = _grow(Xf[inb], cnt[inb].astype(np.float64), y[inb], n_classes, mtry,
                         NODESIZE[cat], rng)
            if not several or tree.node_count > 1:
                break
        trees.append(SeqTree(tree, design, X, codes, rows, y, cat, n_classes))
    return trees


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


def _grow(X: np.ndarray, w: np.ndarray, y: np.ndarray, n_classes: int, mtry: int,
          nodesize: int, rng: np.random.Generator) -> _Arrays:
    """One tree as randomForest grows it (``trees.rf_grow.grow_tree``) on the distinct in-bag
    records ``X`` with bootstrap counts ``w``; ``y``: class codes when ``n_classes``, else
    values."""
    from bayes_risk.models.trees.rf_grow import grow_tree

    return _Arrays(*grow_tree(np.ascontiguousarray(X, dtype=np.float64),
                              np.asarray(w, dtype=np.float64), np.asarray(y, dtype=np.float64),
                              int(n_classes), int(mtry), int(nodesize), rng))
