"""Compiled (numba) growth of one tree as R's randomForest 4.7 grows it (``classTree``'s
``findbestsplit`` and ``regTree``'s ``findBestSplit``), for synthpop's ``rf`` method
(``trees.spec_forest``)."""

from __future__ import annotations

import numba as _nb
import numpy as np

__all__ = ["grow_tree"]


@_nb.njit(cache=True, nogil=True)
def grow_tree(X, w, y, n_classes, mtry, nodesize, rng):  # noqa: C901 - one kernel
    """One tree on the in-bag records ``X`` (distinct records, float64 ``(n, p)``) with their
    bootstrap counts ``w``, drawing from the numpy Generator ``rng``; ``y`` holds class codes
    when ``n_classes > 0`` (classification: Gini), else values (least squares).

    As randomForest: ``mtry`` inputs are sampled without replacement at each node; a
    classification node takes the best split among them even when it does not lower the Gini
    index (``critmax`` starts at -1e25), a regression node only one that lowers the squared
    error; equal criteria are broken at random in randomForest's sequence (the first best
    kept with probability 2/(K+1) of K ties, each later one 1/(K+1)); a node is a leaf when no
    sampled input varies in it, when it is pure (classification) or when it holds at most
    ``nodesize`` distinct records (classification) or draws (regression). The threshold is
    midway between the two values it separates. One departure: a regression node whose sampled
    inputs vary but give no gain (its outcome is constant) is a leaf, where randomForest may
    split it at a stale cut-off (its donors' values are the same either way).

    Returns ``left``, ``right``, ``feature``, ``threshold`` of the nodes in pre-order (a leaf:
    ``left = right = -1``, ``feature = -2``).
    """
    n, p = X.shape
    cat = n_classes > 0
    cap = 2 * n + 1
    left = np.full(cap, -1, dtype=np.int64)
    right = np.full(cap, -1, dtype=np.int64)
    feature = np.full(cap, -2, dtype=np.int64)
    threshold = np.full(cap, -2.0)
    idx = np.arange(n)
    st_s = np.zeros(cap, dtype=np.int64)
    st_e = np.zeros(cap, dtype=np.int64)
    st_par = np.zeros(cap, dtype=np.int64)
    st_side = np.zeros(cap, dtype=np.int64)
    st_s[0], st_e[0], st_par[0], st_side[0] = 0, n, -1, 0
    sp = 1
    count = 0
    mind = np.zeros(p, dtype=np.int64)
    tot = np.zeros(max(n_classes, 1))
    wl = np.zeros(max(n_classes, 1))
    wr = np.zeros(max(n_classes, 1))
    while sp > 0:
        sp -= 1
        s, e, par, side = st_s[sp], st_e[sp], st_par[sp], st_side[sp]
        k = count
        count += 1
        if par >= 0:
            if side == 0:
                left[par] = k
            else:
                right[par] = k
        cases = idx[s:e]
        size = 0.0
        for i in range(e - s):
            size += w[cases[i]]
        if cat:
            tot[:] = 0.0
            for i in range(e - s):
                tot[np.int64(y[cases[i]])] += w[cases[i]]
            pure = False
            for j in range(n_classes):
                if tot[j] == size:
                    pure = True
            if k > 0 and (e - s <= nodesize or pure):
                continue
        elif k > 0 and size <= nodesize:
            continue
        for j in range(p):
            mind[j] = j
        nn = p
        best_var, best_pos = -1, -1
        best_order = np.empty(0, dtype=np.int64)
        if cat:
            pno = 0.0
            for j in range(n_classes):
                pno += tot[j] * tot[j]
            critmax = -1.0e25
        else:
            sumnode = 0.0
            for i in range(e - s):
                sumnode += w[cases[i]] * y[cases[i]]
            crit_parent = sumnode * sumnode / size
            best_all = 0.0
            tie_var = 1
        for _ in range(min(mtry, p)):
            jj = np.int64(nn * rng.random())
            var = mind[jj]
            mind[jj] = mind[nn - 1]
            mind[nn - 1] = var
            nn -= 1
            xs = X[cases, var]
            order = np.argsort(xs, kind="mergesort")
            if xs[order[0]] >= xs[order[-1]]:
                continue
            if cat:
                pos, critmax = _gini_scan(xs, order, cases, w, y, tot, wl, wr, n_classes, pno,
                                          size, critmax, rng)
                if pos >= 0:
                    best_var, best_pos, best_order = var, pos, order
            else:
                pos, within = _squares_scan(xs, order, cases, w, y, sumnode, size, crit_parent,
                                            rng)
                if pos < 0:
                    continue
                if within > best_all:
                    best_var, best_pos, best_order = var, pos, order
                    best_all = within
                    tie_var = 1
                if within == best_all:
                    tie_var += 1
                    if rng.random() < 1.0 / tie_var:
                        best_var, best_pos, best_order = var, pos, order
        if best_var < 0:
            continue
        xs = X[cases, best_var]
        thr = (xs[best_order[best_pos]] + xs[best_order[best_pos + 1]]) / 2.0
        feature[k], threshold[k] = best_var, thr
        # move the records of the left child first (a stable partition: deterministic)
        lo = cases[xs <= thr].copy()
        hi = cases[xs > thr].copy()
        mid = s + lo.size
        idx[s:mid] = lo
        idx[mid:e] = hi
        st_s[sp], st_e[sp], st_par[sp], st_side[sp] = mid, e, k, 1
        sp += 1
        st_s[sp], st_e[sp], st_par[sp], st_side[sp] = s, mid, k, 0
        sp += 1
    return left[:count], right[:count], feature[:count], threshold[:count]


@_nb.njit(cache=True, nogil=True)
def _gini_scan(xs, order, cases, w, y, tot, wl, wr, n_classes, pno, size, critmax, rng):
    """A classification node's cut-offs along one input (``xs``, sorted by ``order``): the
    last position that became the best (a larger Gini criterion than ``critmax``, or a tie
    drawn in randomForest's sequence; -1: none) and the largest criterion since. ``tot`` holds
    the node's weight per class; ``wl``, ``wr`` are work arrays."""
    rln, rld, rrn, rrd = 0.0, 0.0, pno, size
    wl[:] = 0.0
    wr[:n_classes] = tot[:n_classes]
    ntie = 1
    best = -1
    for i in range(cases.size - 1):
        c = cases[order[i]]
        u = w[c]
        kk = np.int64(y[c])
        rln += u * (2 * wl[kk] + u)
        rrn += u * (-2 * wr[kk] + u)
        rld += u
        rrd -= u
        wl[kk] += u
        wr[kk] -= u
        if xs[order[i]] < xs[order[i + 1]] and min(rrd, rld) > 1.0e-5:
            crit = rln / rld + rrn / rrd
            if crit > critmax:
                best = i
                critmax = crit
                ntie = 1
            if crit == critmax:
                ntie += 1
                if rng.random() < 1.0 / ntie:
                    best = i
    return best, critmax


@_nb.njit(cache=True, nogil=True)
def _squares_scan(xs, order, cases, w, y, sumnode, size, crit_parent, rng):
    """A regression node's best cut-off along one input (``xs``, sorted by ``order``): its
    position (-1: none lowers the squared error; ties drawn in randomForest's sequence) and
    its gain over the parent's criterion ``crit_parent``."""
    suml, sumr, npl, npr = 0.0, sumnode, 0.0, size
    within, pos, tie_val = 0.0, -1, 1
    for i in range(cases.size - 1):
        c = cases[order[i]]
        suml += w[c] * y[c]
        sumr -= w[c] * y[c]
        npl += w[c]
        npr -= w[c]
        if xs[order[i]] < xs[order[i + 1]]:
            crit = suml * suml / npl + sumr * sumr / npr - crit_parent
            if crit > within:
                pos, within, tie_val = i, crit, 1
            if crit == within:
                tie_val += 1
                if rng.random() < 1.0 / tie_val:
                    pos = i
    return pos, within
