"""The leaves of a random forest: class probabilities (Caiola & Reiter 2010) and donors
(Meinshausen 2006). See :doc:`/methods/models`."""

from __future__ import annotations

from typing import Any

import numpy as np

from bayes_risk._constraints import Interval, Options, check_value
from bayes_risk.models.trees.seqtree import segment_choice

__all__ = ["distinct_rows", "donor_weights", "draw_donors", "draw_smoothed",
           "forest_apply_distinct", "leaf_donors", "leaf_kernels", "leaf_probabilities"]


def distinct_rows(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct rows of a forest's input ``X`` (as float32 bytes) and ``inverse``, where
    each row is among them.

    Examples
    --------
    >>> u, inv = distinct_rows(np.array([[1.0, 2.0], [0.0, 1.0], [1.0, 2.0]]))
    >>> u.tolist(), inv.tolist()
    ([[0.0, 1.0], [1.0, 2.0]], [1, 0, 1])
    """
    Xf = np.ascontiguousarray(X, dtype=np.float32)
    if Xf.ndim != 2 or Xf.shape[1] == 0 or Xf.shape[0] < 2:
        return Xf, np.arange(Xf.shape[0], dtype=np.int64)
    # one opaque bytes value per row: a 1-d sort, ten times faster than np.unique(axis=0)
    rows = Xf.view(np.dtype((np.void, Xf.dtype.itemsize * Xf.shape[1]))).ravel()
    _, first, inverse = np.unique(rows, return_index=True, return_inverse=True)
    return Xf[first], inverse.reshape(-1).astype(np.int64, copy=False)


def forest_apply_distinct(forest: Any, X: np.ndarray) -> np.ndarray:
    """``forest.apply(X)`` ``(n, n_trees)`` with each distinct row routed once (the same leaves,
    row for row)."""
    distinct, inverse = distinct_rows(X)
    if distinct.shape[0] == inverse.size:  # nothing shared: route the rows in their order
        return forest.apply(np.ascontiguousarray(X, dtype=np.float32))
    return forest.apply(distinct)[inverse]


def leaf_probabilities(leaf_counts: np.ndarray, probabilities: str = "vote",
                       alpha: float = 1.0) -> np.ndarray:
    """Per-leaf class probabilities from leaf class counts (Caiola & Reiter 2010).

    Parameters
    ----------
    leaf_counts : array, shape (..., d)
        Class counts ``n_{b,c}`` of the training (bootstrap) records in each leaf.
    probabilities : {"vote", "leaf_dirichlet"}
        The leaf's majority vote (ties split equally), or ``(n_{b,c} + α)/(n_b + d α)``.
    alpha : float
        Dirichlet prior count per class (``leaf_dirichlet`` only; ``>= 0``).

    Returns
    -------
    ndarray, same shape as ``leaf_counts``
        Each row sums to 1 (rows of an empty leaf with ``α = 0`` are all-NaN).
    """
    check_value(probabilities, Options(("vote", "leaf_dirichlet"), listed=True), "probabilities")
    c = np.asarray(leaf_counts, dtype=np.float64)
    d = c.shape[-1]
    if probabilities == "vote":
        top = c.max(axis=-1, keepdims=True)
        win = (c == top) & (top > 0)
        with np.errstate(invalid="ignore", divide="ignore"):
            return win / win.sum(axis=-1, keepdims=True)
    check_value(alpha, Interval(float, 0), "alpha")
    with np.errstate(invalid="ignore", divide="ignore"):
        return (c + alpha) / (c.sum(axis=-1, keepdims=True) + d * alpha)


def leaf_donors(forest: Any, X: np.ndarray, y: np.ndarray) -> dict[str, np.ndarray]:
    """The donors of every leaf of a fitted regression forest: each tree's in-bag training
    records with their bootstrap counts, stacked tree after tree.

    Returns ``values``, ``counts`` (one entry per in-bag record and tree, by global node id),
    ``start``, ``size`` (each global node's entries) and ``offsets`` (of each tree's nodes).
    """
    n = X.shape[0]
    leaves = forest_apply_distinct(forest, X)
    sizes = np.array([e.tree_.node_count for e in forest.estimators_], dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
    node, rec, cnt = [], [], []
    for b, s in enumerate(forest.estimators_samples_):
        c = np.bincount(s, minlength=n)
        t = np.flatnonzero(c)
        node.append(leaves[t, b] + offsets[b])
        rec.append(t)
        cnt.append(c[t])
    node, rec, cnt = np.concatenate(node), np.concatenate(rec), np.concatenate(cnt)
    order = np.argsort(node, kind="stable")
    size = np.bincount(node, minlength=int(sizes.sum()))
    return {"values": np.asarray(y, dtype=np.float64)[rec[order]],
            "counts": cnt[order].astype(np.int32),
            "start": (np.cumsum(size) - size).astype(np.int64),
            "size": size.astype(np.int32), "offsets": offsets}


def donor_weights(donors: dict[str, np.ndarray], leaves: np.ndarray,
                  valid: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The forest's conditional distribution of each row (Meinshausen 2006).

    Parameters
    ----------
    donors : dict of ndarray
        :func:`leaf_donors` of the forest.
    leaves : array of int, shape (n, n_trees)
        Each row's leaf in each tree (``forest.apply``; node ids within the tree).
    valid : array of bool, shape (n, n_trees), optional
        The trees each row averages over (default all; ``oob_only``: its out-of-bag trees).

    Returns
    -------
    values : ndarray, shape (k,)
        The distinct donor values, sorted.
    weights : ndarray, shape (n, k)
        Each row sums to 1.
    """
    from scipy.sparse import csr_matrix

    values, vid = np.unique(donors["values"], return_inverse=True)
    size = donors["size"].astype(np.int64)
    counts = donors["counts"].astype(np.float64)
    entry_node = np.repeat(np.arange(size.size), size)  # entries are stored node after node
    share = counts / np.bincount(entry_node, weights=counts, minlength=size.size)[entry_node]
    # node x value: the leaf's donor shares; row x node: 1/(valid trees) at each valid leaf
    M = csr_matrix((share, (entry_node, vid.ravel())), shape=(size.size, values.size))
    node = np.asarray(leaves, dtype=np.int64) + donors["offsets"][None, :]
    use = np.ones(node.shape, dtype=bool) if valid is None else np.asarray(valid, dtype=bool)
    r, b = np.nonzero(use)
    A = csr_matrix((1.0 / use.sum(axis=1)[r], (r, node[r, b])), shape=(node.shape[0], size.size))
    out = (A @ M).toarray()
    return values, out


def _drawn_leaves(donors: dict[str, np.ndarray], leaves: np.ndarray, rng: np.random.Generator,
                  valid: np.ndarray | None) -> np.ndarray:
    """The global leaf of each row in a tree drawn uniformly among its valid ones."""
    n, B = leaves.shape
    u = rng.random(n)
    if valid is None:
        b = np.minimum((u * B).astype(np.int64), B - 1)
    else:
        k = valid.sum(axis=1)
        j = np.minimum((u * k).astype(np.int64), k - 1)  # the j-th valid tree of each row
        b = np.argmax(np.cumsum(valid, axis=1) > j[:, None], axis=1)
    return np.asarray(leaves, dtype=np.int64)[np.arange(n), b] + donors["offsets"][b]


def draw_donors(donors: dict[str, np.ndarray], leaves: np.ndarray, rng: np.random.Generator,
                valid: np.ndarray | None = None, bayes_bootstrap: bool = False) -> np.ndarray:
    """One value per row from its forest distribution (:func:`donor_weights`): a valid tree,
    then a leaf donor by bootstrap count (``bayes_bootstrap``: by Gamma(count, 1) weights)."""
    node = _drawn_leaves(donors, leaves, rng, valid)
    counts = donors["counts"].astype(np.float64)
    w = rng.standard_gamma(counts) if bayes_bootstrap else counts
    uniq, inv = np.unique(node, return_inverse=True)
    pos = segment_choice(donors["start"][uniq], donors["size"][uniq], inv.ravel(), rng, weights=w)
    return donors["values"][pos]


def _segments(start: np.ndarray, size: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The entries of the segments ``[start, start + size)``, concatenated, and the segment of
    each."""
    seg = np.repeat(np.arange(size.size), size)
    first = np.cumsum(size) - size
    return start[seg] + np.arange(seg.size) - first[seg], seg


def _weighted_quantile(v: np.ndarray, c: np.ndarray, seg: np.ndarray, n_seg: int,
                       q: float) -> np.ndarray:
    """``np.percentile(np.repeat(v, c), 100 q)`` (linear interpolation) of each segment."""
    order = np.lexsort((v, seg))
    v, c, seg = v[order], c[order].astype(np.int64), seg[order]
    C = np.cumsum(c)
    total = np.bincount(seg, weights=c, minlength=n_seg).astype(np.int64)
    base = np.concatenate([[0], np.cumsum(total)[:-1]])
    pos = q * (total - 1)
    lo_k, frac = np.floor(pos).astype(np.int64), pos - np.floor(pos)
    # the k-th copy of a segment is the entry whose cumulative count first exceeds base + k
    at_lo = v[np.searchsorted(C, base + lo_k, side="right")]
    at_hi = v[np.searchsorted(C, base + np.minimum(lo_k + 1, total - 1), side="right")]
    return at_lo + frac * (at_hi - at_lo)


def leaf_kernels(donors: dict[str, np.ndarray], nodes: np.ndarray, resolution: float
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The support and bandwidth of the smoothed distribution of each leaf in ``nodes``
    (Caiola & Reiter 2010 §5, as CART's smoothing, Reiter 2005): the smallest and the largest
    donor value, and Silverman's rule on the leaf's bootstrap copies (each donor repeated by its
    count), floored at the column's ``resolution`` (the smallest gap between its values).

    Returns
    -------
    lo, hi, h : ndarrays, shape (len(nodes),)
    """
    start, size = donors["start"][nodes], donors["size"][nodes].astype(np.int64)
    idx, seg = _segments(start, size)
    v, c = donors["values"][idx], donors["counts"][idx].astype(np.float64)
    first = np.cumsum(size) - size
    lo, hi = np.minimum.reduceat(v, first), np.maximum.reduceat(v, first)
    n = np.add.reduceat(c, first)
    mean = np.add.reduceat(c * v, first) / n
    ss = np.add.reduceat(c * (v - mean[seg]) ** 2, first)
    with np.errstate(invalid="ignore", divide="ignore"):
        sd = np.sqrt(np.where(n > 1, ss / (n - 1), 0.0))
        iqr = (_weighted_quantile(v, c, seg, nodes.size, 0.75)
               - _weighted_quantile(v, c, seg, nodes.size, 0.25)) / 1.34
        a = np.where(iqr > 0, np.minimum(sd, iqr), sd)
        h = np.where(n > 1, 0.9 * a * n ** -0.2, 0.0)
    return lo, hi, np.maximum(h, resolution)


def draw_smoothed(donors: dict[str, np.ndarray], leaves: np.ndarray, rng: np.random.Generator,
                  valid: np.ndarray | None = None, bayes_bootstrap: bool = False, *,
                  resolution: float = 0.0, decimals: int | None = None,
                  integer: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """One value per row from the smoothed leaves of its forest (Caiola & Reiter 2010 §5): a
    valid tree, then a draw of the truncated Gaussian kernel density of its leaf's bootstrap
    copies on ``[min, max]`` of the leaf's values, with :func:`leaf_kernels`' bandwidth. The
    leaf's density is ``Σ_k w_k φ((z − b_k)/h) / Σ_k w_k M_k`` over its donors ``b_k`` (weights
    ``w_k``: bootstrap counts, or Gamma(count, 1) with ``bayes_bootstrap``; ``M_k``: the kernel's
    mass inside the support): a donor is drawn with probability ``∝ w_k M_k``, then a value of
    its truncated kernel. Values are rounded to ``decimals`` (``integer``: to whole numbers),
    inside the support.

    Returns
    -------
    values : ndarray, shape (n,)
    point_mass : ndarray of bool, shape (n,)
        Drawn from a leaf whose donors hold one value: that value, unsmoothed.
    """
    from scipy.stats import truncnorm

    from bayes_risk.models.trees.cart_leaf import log_ndtr_diff

    node = _drawn_leaves(donors, leaves, rng, valid)
    uniq, inv = np.unique(node, return_inverse=True)
    inv = inv.ravel()
    lo, hi, h = leaf_kernels(donors, uniq, resolution)
    # every entry of the leaves drawn: its leaf, its weight times its kernel's inner mass
    idx, seg = _segments(donors["start"][uniq], donors["size"][uniq].astype(np.int64))
    b = donors["values"][idx]
    c = donors["counts"][idx].astype(np.float64)
    w = rng.standard_gamma(c) if bayes_bootstrap else c
    point = hi <= lo
    hs = np.where(point, 1.0, h)[seg]
    mass = np.where(point[seg], 1.0, np.exp(log_ndtr_diff((lo[seg] - b) / hs, (hi[seg] - b) / hs)))
    first = np.cumsum(donors["size"][uniq]) - donors["size"][uniq]
    k = segment_choice(first, donors["size"][uniq], inv, rng, weights=w * mass)
    centre, hk = b[k], hs[k]
    lo_r, hi_r, pt = lo[inv], hi[inv], point[inv]
    z = np.zeros(k.size)
    if (~pt).any():
        u = rng.random(int((~pt).sum()))
        z[~pt] = truncnorm.ppf(u, (lo_r[~pt] - centre[~pt]) / hk[~pt],
                               (hi_r[~pt] - centre[~pt]) / hk[~pt])
    vals = np.where(pt, centre, centre + hk * z)
    if integer:
        vals = np.round(vals)
    elif decimals is not None:
        vals = np.round(vals, decimals)
    return np.clip(vals, lo_r, hi_r), pt
