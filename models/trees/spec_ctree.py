"""synthpop 1.9-2's ``ctree`` method of a :class:`~bayes_risk.models.SynthesisSpec` (its
``syn.ctree``): a conditional inference tree (``party::ctree``, Hothorn, Hornik & Zeileis 2006)
whose leaves' records are the donors. See :doc:`/user_guide/synthesizers`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.stats import chi2

from bayes_risk.data.schema import Schema
from bayes_risk.models.trees.missing import design_inputs

__all__ = ["CtreeColumn", "CtreeSplit", "grow_ctree"]

#: synthpop's ``syn.ctree`` settings and party's ``ctree_control`` defaults it keeps
MINCRITERION, MINBUCKET, MINSPLIT = 0.9, 5, 20
#: party's ``minprob`` (a child holds at least this share of the node) and ``tol``
MINPROB, TOL = 0.01, float(np.sqrt(np.finfo(np.float64).eps))


@dataclass(frozen=True)
class CtreeSplit:
    """One inner node of a grown tree: ``input`` (its index), and either ``cutpoint`` (a
    numeric input: ``x <= cutpoint`` goes left) or ``left_levels`` (a nominal one: the codes
    that go left)."""

    input: int
    cutpoint: float | None
    left_levels: tuple[int, ...] | None


class _Tree:
    """A grown tree in flat lists: children (-1 at a leaf), splits, and each leaf's rows."""

    def __init__(self) -> None:
        self.left: list[int] = []
        self.right: list[int] = []
        self.split: list[CtreeSplit | None] = []
        self.rows: list[np.ndarray | None] = []

    def route(self, inputs: list[np.ndarray]) -> np.ndarray:
        """The leaf of each record (``inputs``: the predictors' arrays as at growing)."""
        n = len(inputs[0]) if inputs else 0
        node = np.zeros(n, dtype=np.int64)
        todo = [(0, np.arange(n))]
        while todo:
            k, idx = todo.pop()
            s = self.split[k]
            if s is None:
                node[idx] = k
                continue
            x = inputs[s.input][idx]
            go = x <= s.cutpoint if s.cutpoint is not None else \
                np.isin(np.asarray(x, dtype=np.int64), s.left_levels)
            todo += [(self.left[k], idx[go]), (self.right[k], idx[~go])]
        return node


def grow_ctree(inputs: Sequence[np.ndarray], nominal: Sequence[int], y: np.ndarray,
               n_classes: int = 0, *, mincriterion: float = MINCRITERION,
               minsplit: int = MINSPLIT, minbucket: int = MINBUCKET) -> _Tree:
    """Grow a conditional inference tree as ``party::ctree`` does with its default test
    (``teststat = "quad"``, ``testtype = "Bonferroni"``) and unit case weights.

    Parameters
    ----------
    inputs : sequence of ndarray
        The predictors: values of a numeric (or ordered) input, level codes of a nominal one.
    nominal : sequence of int
        Per input, its number of levels when nominal, else 0.
    y : ndarray
        The outcome: numeric values, or level codes ``0..n_classes-1`` when ``n_classes``.
    n_classes : int, default 0
        Number of levels of a categorical outcome (0: numeric).
    mincriterion, minsplit, minbucket
        ``ctree_control``'s: a node is split when its best input's Bonferroni-adjusted
        ``1 - p`` exceeds ``mincriterion``, it holds at least ``minsplit`` records, and each
        child at least ``minbucket``.

    Returns
    -------
    _Tree
        Splits (:class:`CtreeSplit`) and each leaf's rows of ``y``.

    Notes
    -----
    At a node, every input ``j`` is tested for independence of the outcome by the linear
    statistic ``T = sum g(x) h(y)^T`` (``g``: the value, or level indicators; ``h``: the
    value, or level indicators) and its permutation mean and covariance (Strasser & Weber
    1999); the quadratic form with the covariance's Moore-Penrose inverse is referred to
    chi-square with the covariance's rank as degrees of freedom, and ``(1 - p)`` is raised to
    the number of inputs (party's Bonferroni form). The input with the largest criterion
    (ties: the larger statistic) is split where the standardised two-sample statistic of the
    left child is largest (a nominal input: its levels ranked by their standardised
    statistics, per outcome column); when it has no admissible split, the next input is tried
    once, as party's ``C_Node`` does.
    """
    y = np.asarray(y)
    H = np.eye(n_classes)[y.astype(np.int64)] if n_classes else \
        np.asarray(y, dtype=np.float64)[:, None]
    G = [np.eye(d)[np.asarray(x, dtype=np.int64)] if d else
         np.asarray(x, dtype=np.float64)[:, None] for x, d in zip(inputs, nominal, strict=True)]
    tree = _Tree()

    def node(idx: np.ndarray) -> int:
        k = len(tree.left)
        tree.left.append(-1), tree.right.append(-1), tree.split.append(None)
        tree.rows.append(idx)
        n = len(idx)
        if n < minsplit or not G:
            return k
        Hn = H[idx]
        eh = Hn.mean(axis=0)
        ch = (Hn - eh).T @ (Hn - eh) / n
        stat = np.zeros(len(G))
        crit = np.zeros(len(G))
        for j, g in enumerate(G):
            stat[j], p = _quad_test(g[idx], Hn, eh, ch)
            crit[j] = (1.0 - p) ** len(G)
        for attempt in range(2):
            if not crit.max(initial=0.0) > mincriterion:
                return k
            j = _which_max(crit, stat)
            s = _split(G[j][idx], nominal[j], np.asarray(inputs[j])[idx], idx, Hn, eh, ch,
                       minbucket, j)
            if s is not None:
                break
            if attempt == 1:
                return k
            crit[j] = -np.inf
        tree.split[k] = s
        tree.rows[k] = None
        x = np.asarray(inputs[s.input])[idx]
        go = x <= s.cutpoint if s.cutpoint is not None else np.isin(x, s.left_levels)
        tree.left[k] = node(idx[go])
        tree.right[k] = node(idx[~go])
        return k

    node(np.arange(len(y)))
    return tree


def _linstat(g: np.ndarray, Hn: np.ndarray, eh: np.ndarray, ch: np.ndarray
             ) -> tuple[np.ndarray, np.ndarray]:
    """``T - mu`` (input-major) and its permutation covariance (Strasser & Weber 1999)."""
    n = len(g)
    sg = g.sum(axis=0)
    r = (g.T @ Hn - np.outer(sg, eh)).ravel()
    cov = n / (n - 1) * np.kron(g.T @ g, ch) - np.kron(np.outer(sg, sg), ch) / (n - 1)
    return r, cov


def _quad_test(g: np.ndarray, Hn: np.ndarray, eh: np.ndarray, ch: np.ndarray
               ) -> tuple[float, float]:
    """party's quadratic test statistic and its asymptotic p-value (chi-square, df = rank)."""
    r, cov = _linstat(g, Hn, eh, ch)
    keep = np.diag(cov) > 0  # party's C_linexpcovReduce: drop exactly-zero variances
    if keep.any() and not keep.all():
        r, cov = r[keep], cov[np.ix_(keep, keep)]
    u, d, vt = np.linalg.svd(cov)
    tol = TOL * max(d[0], 1.0) if len(d) else TOL  # party's C_MPinv
    pos = d > tol
    rank = int(pos.sum())
    if rank == 0:
        return 0.0, 1.0  # R: pchisq(0, df = 0, lower.tail = FALSE) is 1
    z = (vt[pos] @ r) / np.sqrt(d[pos])
    q = float(z @ z)
    return q, float(chi2.sf(q, rank))


def _which_max(crit: np.ndarray, stat: np.ndarray) -> int:
    """party's C_whichmax: the largest criterion, a tie to the larger statistic."""
    best, bc, bs = -1, 0.0, 0.0
    for j in range(len(crit)):
        if crit[j] > bc or (crit[j] == bc and stat[j] > bs):
            best, bc, bs = j, crit[j], stat[j]
    return best


def _cut_stat(x: np.ndarray, rows: np.ndarray, Hn: np.ndarray, eh: np.ndarray,
              ch: np.ndarray, minbucket: int) -> tuple[float, float]:
    """party's C_split: the cutpoint of ``x`` maximising the largest absolute standardised
    statistic of the records ``x <= cutpoint``, and that statistic (0: no admissible cut).

    A cut is admissible when it leaves at least ``max(n * minprob + 1, minbucket)`` records
    on the left and ``min(n * (1 - minprob) - 1, n - minbucket)`` at most, and is below the
    largest value; of equal statistics party keeps the one stored at the smallest row (the
    last record of a run of tied values, in ``order(x)``).
    """
    n = len(x)
    minobs = max(n * MINPROB + 1.0, minbucket)
    maxobs = min(n * (1 - MINPROB) - 1.0, n - minbucket)
    order = np.argsort(x, kind="stable")
    xs = x[order]
    last = np.flatnonzero(np.r_[xs[1:] != xs[:-1], True])  # last record of each run
    w = last + 1.0
    ok = (w >= minobs) & (w <= maxobs) & (xs[last] < xs[-1])
    if not ok.any():
        return 0.0, 0.0
    S = np.cumsum(Hn[order], axis=0)[last[ok]]
    w = w[ok]
    var = np.outer(w * n / (n - 1) - w * w / (n - 1), np.diag(ch))
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(var > TOL, np.abs(S - np.outer(w, eh)) / np.sqrt(var), 0.0)
    st = z.max(axis=1)
    m = st.max()
    if not m > 0:
        return 0.0, 0.0
    where = rows[order[last[ok]]]  # the row each statistic is stored at
    i = np.flatnonzero(st == m)
    i = i[np.argmin(where[i])]
    return float(xs[last[ok]][i]), float(m)


def _split(g: np.ndarray, d: int, x: np.ndarray, rows: np.ndarray, Hn: np.ndarray,
           eh: np.ndarray, ch: np.ndarray, minbucket: int, j: int) -> CtreeSplit | None:
    """The best split of input ``j`` at a node (None when it has none), as party's C_split
    (numeric) or C_splitcategorical (nominal: per outcome column, the levels ranked by their
    standardised linear statistics, then cut as a numeric input; levels ranked above the
    cutpoint go left)."""
    if not d:
        cut, m = _cut_stat(x, rows, Hn, eh, ch, minbucket)
        return CtreeSplit(j, cut, None) if m > 0 else None
    r, cov = _linstat(g, Hn, eh, ch)
    sd = np.diag(cov)
    with np.errstate(divide="ignore", invalid="ignore"):
        std = np.where(sd > TOL, r / np.sqrt(sd), 0.0).reshape(d, -1)  # (level, outcome col)
    best, levels = 0.0, None
    codes = np.asarray(x, dtype=np.int64)
    for k in range(std.shape[1]):
        s = std[:, k]
        rank = 1 + (s[None, :] < s[:, None]).sum(axis=1)
        cut, m = _cut_stat(rank[codes].astype(np.float64), rows, Hn, eh, ch, minbucket)
        if m > best:
            best, levels = m, tuple(int(v) for v in np.flatnonzero(rank > cut))
    return CtreeSplit(j, None, levels) if levels is not None else None


class CtreeColumn:
    """One synthesized column drawn by synthpop's ``ctree`` from its ``predictors``.

    As ``syn.ctree`` (``minbucket = 5``, ``mincriterion = 0.9``; party's other defaults): a
    conditional inference tree (:func:`grow_ctree`) of the column on its predictors; each
    synthetic record takes, uniformly, the value of an original record of the leaf its
    synthetic predictors fall in. With ``proper=True`` (the package's ``donor =
    "bayes_bootstrap"``), the tree is grown afresh on a bootstrap sample of the records for
    each synthetic table and the donors are that sample's records (what synthpop 1.9-2's
    ``proper = TRUE`` branch means to do; it stops there with an error).
    """

    method = "ctree"

    def __init__(self, column: str, predictors: Sequence[str], schema: Schema,
                 values: dict[str, np.ndarray], layout: Mapping[str, Mapping[str, Any]]) -> None:
        self.column, self.predictors, self.schema = column, list(predictors), schema
        self.layout = dict(layout)
        _, kinds, nlev, self.inputs = design_inputs(schema, self.predictors, self.layout,
                                                    values.__getitem__)
        self.nominal = [d if k == "nominal" else 0 for k, d in zip(kinds, nlev, strict=True)]
        self.y = values[column]
        self.n_classes = int(schema[column].n_levels) if schema[column].is_categorical else 0
        self.tree = grow_ctree(self.inputs, self.nominal, self.y, self.n_classes)

    def draw(self, value_of: Callable[[str], np.ndarray], rng: np.random.Generator,
             proper: bool = False) -> np.ndarray:
        """The donor row of each record, from the predictors' current values."""
        _, _, _, arrs = design_inputs(self.schema, self.predictors, self.layout, value_of)
        n = len(arrs[0]) if arrs else len(value_of(self.column))
        tree, rows = self.tree, np.arange(len(self.y))
        if proper:
            rows = rng.integers(0, len(self.y), len(self.y))
            tree = grow_ctree([x[rows] for x in self.inputs], self.nominal, self.y[rows],
                              self.n_classes)
        leaf = tree.route(arrs) if arrs else np.zeros(n, dtype=np.int64)
        out = np.empty(n, dtype=np.int64)
        for k in np.unique(leaf):
            sel = np.flatnonzero(leaf == k)
            donors = tree.rows[k]
            out[sel] = rows[donors[rng.integers(0, len(donors), len(sel))]]
        return out
