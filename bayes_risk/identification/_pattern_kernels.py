"""The compiled kernels of the pooled measures counted by match pattern (:mod:`.patterns`): an
offline three-dimensional dominance count and, for each pattern and radius, the records of every
target's key group inside its window. See :doc:`/methods/identification`, "Counting match
patterns".
"""

from __future__ import annotations

import numba as _nb
import numpy as np

from bayes_risk.identification._kernels import fenwick_add, fenwick_prefix


@_nb.njit(cache=True, nogil=True)
def dominance_counts(gstart, slot, is_point, yr, zr):
    """For every query element ``q`` the points ``p`` of its segment with ``slot[p] <
    slot[q]``, ``yr[p] < yr[q]`` and ``zr[p] > zr[q]`` (offline 3-D dominance count by
    bottom-up divide and conquer over the slots, a Fenwick tree over ``zr``): segments
    ``gstart[g]:gstart[g + 1]``, each sorted by (slot, yr), slots from 0 in a segment,
    ``yr`` distinct ranks, and ``zr`` a point's rank among its segment's points (``0..P-1``
    for ``P`` points; a query's in ``-1..P-1``). The tree spans one segment's points, so that
    it stays in the processor's cache as the segments grow. O(L log S log P) for ``L``
    elements in ``S`` slots; the pooled match-pattern counts (:mod:`.patterns`)."""
    L = is_point.shape[0]
    cnt = np.zeros(L, dtype=np.int64)
    idx = np.arange(L)
    tmp = np.empty(L, dtype=np.int64)
    tree = np.zeros(L, dtype=np.int32)  # counts below 2^31: half the cache of int64
    for g in range(gstart.shape[0] - 1):
        b = gstart[g]
        e = gstart[g + 1]
        if e - b < 2:
            continue
        P = 0
        for k in range(b, e):
            P += is_point[k]
        ns = slot[e - 1] + 1
        sst = np.empty(ns + 1, dtype=np.int64)  # first element of every slot
        k = b
        for s_ in range(ns + 1):
            while k < e and slot[k] < s_:
                k += 1
            sst[s_] = k
        w = 1
        while w < ns:
            for k0 in range(0, ns, 2 * w):
                k1 = min(k0 + w, ns)
                k2 = min(k0 + 2 * w, ns)
                s = sst[k0]
                m = sst[k1]
                z = sst[k2]
                if m >= z or s >= m:  # one half empty: sorted by yr already, nothing to count
                    continue
                i = s
                j = m
                o = s
                added = 0
                # merge the halves by yr: a left point enters the tree before every right
                # query above it on yr, which reads the points above it on zr
                while i < m or j < z:
                    if j >= z or (i < m and yr[idx[i]] < yr[idx[j]]):
                        k = idx[i]
                        i += 1
                        if is_point[k]:
                            fenwick_add(tree, 0, P, zr[k])
                            added += 1
                    else:
                        k = idx[j]
                        j += 1
                        if not is_point[k]:
                            cnt[k] += added - fenwick_prefix(tree, 0, zr[k] + 1)
                    tmp[o] = k
                    o += 1
                # the tree emptied for the next pair of halves: zeroed whole where the left
                # half's points hold a large share of it (the upper levels), else walked back
                if 16 * added >= P:
                    tree[:P] = 0
                else:
                    for i2 in range(s, m):
                        k = idx[i2]
                        if is_point[k]:  # _fenwick_add's walk, subtracting
                            r = zr[k] + 1
                            while r <= P:
                                tree[r - 1] -= 1
                                r += r & (-r)
                for o2 in range(s, z):
                    idx[o2] = tmp[o2]
            w *= 2
    return cnt


@_nb.njit(cache=True, nogil=True)
def _walk_groups(order, tg, gstart, v, bound, ptr, out):
    """``out[t]``: the first record of target ``t``'s group ``tg[t]`` (``-1``: none, left
    alone) with ``v >= bound[t]``, ``v`` sorted in each group ``gstart[g]:gstart[g + 1]``:
    the targets taken in ``order`` (ascending ``bound``) and each group's records walked once
    (``ptr``: the walks' places). O(N + P)."""
    for g in range(ptr.shape[0]):
        ptr[g] = gstart[g]
    for i in range(order.shape[0]):
        t = order[i]
        g = tg[t]
        if g >= 0:
            p = ptr[g]
            while p < gstart[g + 1] and v[p] < bound[t]:
                p += 1
            ptr[g] = p
            out[t] = p


@_nb.njit(cache=True, nogil=True)
def _stretch_ranks(gstart, mnz, lo_g, hi_g):
    """The z ranks among each group's stretch ``lo_g:hi_g`` of records (:func:`_pattern_counts`):
    ``below[gstart[g] + k]`` the stretch's records of group ``g`` whose place ``mnz`` in the
    group's order of smallest values is below ``k``, ``inside[g]`` all of them."""
    G = gstart.shape[0] - 1
    below = np.empty(gstart[G], dtype=np.int64)
    inside = np.zeros(G, dtype=np.int64)
    for g in range(G):
        if hi_g[g] > lo_g[g]:
            b = gstart[g]
            below[b:gstart[g + 1]] = 0
            for p in range(lo_g[g], hi_g[g]):
                below[b + mnz[p]] = 1
            c = 0
            for k in range(b, gstart[g + 1]):
                v = below[k]
                below[k] = c
                c += v
            inside[g] = c
    return below, inside


@_nb.njit(cache=True, nogil=True)
def _query_z_ranks(oylo, tg, gstart, mns, ylo, ptr, mnz, lo_g, hi_g, e_lo, e_hi):
    """The z ranks of :func:`_pattern_counts`' queries and its stretches' records, both among
    the stretch's records: a query's the records whose smallest value is below ``ylo``, less
    one (``oylo``: the targets by ``ylo``; ``ptr``: the walks' scratch)."""
    N = tg.shape[0]
    zq = np.zeros(N, dtype=np.int64)
    _walk_groups(oylo, tg, gstart, mns, ylo, ptr, zq)
    below, inside = _stretch_ranks(gstart, mnz, lo_g, hi_g)
    for t in range(N):
        if e_hi[t] > e_lo[t]:
            g = tg[t]
            k = zq[t] - gstart[g]  # the group's records below ylo
            zq[t] = (inside[g] if k >= gstart[g + 1] - gstart[g] else below[gstart[g] + k]) - 1
    return zq, below


@_nb.njit(cache=True, nogil=True)
def _pattern_counts(gstart, arank, slot, mxr, mnz, mns, tg, qlo, qhi, yhi, ylo, torder, olo,
                   ohi, oylo, has_y):
    """The records of every target's key group inside its window (:mod:`.patterns`), from
    one pattern's records prepared once for every radius: ``gstart`` the key groups' first
    records, each group sorted by (``arank``, ``mxr``); ``arank`` the rank of the
    unsynthesized radius value, ``slot`` its distinct values' index in the group; ``mxr`` the
    rank of the largest synthesized value over the pattern's datasets, ``mnz`` the smallest
    one's place in its group's slice of ``mns`` (those ranks, sorted in each group). A target
    of group ``tg`` (``-1``: none) counts the records with ``qlo <= arank < qhi``, ``mxr <
    yhi`` and smallest rank ``>= ylo`` (``has_y`` false: the first two only), as the
    difference of two prefix queries of :func:`dominance_counts`: each prefix a slot, its y
    rank ``2 yhi`` against the records' ``2 mxr + 1`` (no ties), its z rank the number of its
    group's records below ``ylo`` less one. ``torder``, ``olo``, ``ohi``, ``oylo``: the
    targets by ``yhi``, ``qlo``, ``qhi`` and ``ylo``, so that the queries are bucketed by slot
    already in y order and each bound is found by one walk over each group's records. Only
    the records of a group between its targets' lowest and highest bounds are laid out (those
    below count in both of a target's prefix queries, those above in neither), their z ranks
    taken among themselves: a partition of targets ordered by the radius value lays out its
    own stretch of a group, not the whole group. O(N + L) to lay the ``L`` elements out
    (and a pass over each queried group's ranks), besides the count."""
    N = tg.shape[0]
    G = gstart.shape[0] - 1
    out = np.zeros(N, dtype=np.int64)
    e_lo = np.zeros(N, dtype=np.int64)
    e_hi = np.zeros(N, dtype=np.int64)
    # the first record of the group at or above each bound, by walks over the groups (a
    # binary search per target reads the records out of order: at 10^5 records it took
    # nearly as long as the count itself)
    ptr = np.empty(G, dtype=np.int64)
    _walk_groups(olo, tg, gstart, arank, qlo, ptr, e_lo)
    _walk_groups(ohi, tg, gstart, arank, qhi, ptr, e_hi)
    # each group's stretch of records that a target's window reaches: [lo_g, hi_g)
    lo_g = gstart[1:].copy()
    hi_g = gstart[:-1].copy()
    for t in range(N):
        e_hi[t] = max(e_hi[t], e_lo[t])
        if e_hi[t] > e_lo[t]:  # only a target of a group has e_hi > 0
            if not has_y:
                out[t] = e_hi[t] - e_lo[t]
            else:
                lo_g[tg[t]] = min(lo_g[tg[t]], e_lo[t])
                hi_g[tg[t]] = max(hi_g[tg[t]], e_hi[t])
    if not has_y:
        return out
    nq = 0
    for t in range(N):
        if e_hi[t] > e_lo[t]:
            nq += 1 + (e_lo[t] > lo_g[tg[t]])
    if nq == 0:
        return out
    zq, below = _query_z_ranks(oylo, tg, gstart, mns, ylo, ptr, mnz, lo_g, hi_g, e_lo, e_hi)
    # slots: group g's ns_g distinct values and the group's end, numbered from sbase[g]
    sbase = np.zeros(G + 1, dtype=np.int64)
    for g in range(G):
        b = gstart[g]
        e = gstart[g + 1]
        sbase[g + 1] = sbase[g] + (slot[e - 1] + 2 if e > b else 1)
    S = sbase[G]
    # the queries bucketed by slot, each bucket in y order (targets walked in torder)
    qcount = np.zeros(S + 1, dtype=np.int64)
    for t in range(N):
        if e_hi[t] > e_lo[t]:
            g = tg[t]
            e = gstart[g + 1]
            qcount[sbase[g] + (slot[e_hi[t]] if e_hi[t] < e else slot[e - 1] + 1) + 1] += 1
            if e_lo[t] > lo_g[g]:
                qcount[sbase[g] + slot[e_lo[t]] + 1] += 1
    for s in range(S):
        qcount[s + 1] += qcount[s]
    qt = np.empty(nq, dtype=np.int64)  # target of each query, sign: +1 top, -1 bottom
    fill = qcount[:S].copy()
    for i in range(N):
        t = torder[i]
        if e_hi[t] > e_lo[t]:
            g = tg[t]
            e = gstart[g + 1]
            s = sbase[g] + (slot[e_hi[t]] if e_hi[t] < e else slot[e - 1] + 1)
            qt[fill[s]] = t + 1
            fill[s] += 1
            if e_lo[t] > lo_g[g]:
                s = sbase[g] + slot[e_lo[t]]
                qt[fill[s]] = -(t + 1)
                fill[s] += 1
    # the records and queries of each slot merged by y rank, groups in turn; a group no target
    # queries is left out (its records count for no target), so that a partition of the
    # targets lays out only its own groups' records, not all of them
    L = nq
    for g in range(G):
        if qcount[sbase[g + 1]] > qcount[sbase[g]]:
            L += hi_g[g] - lo_g[g]
    m_slot = np.empty(L, dtype=np.int64)
    m_point = np.empty(L, dtype=np.bool_)
    m_yr = np.empty(L, dtype=np.int64)
    m_zr = np.empty(L, dtype=np.int64)
    m_q = np.empty(L, dtype=np.int64)
    gs = np.zeros(G + 1, dtype=np.int64)
    o = 0
    for g in range(G):
        if qcount[sbase[g + 1]] == qcount[sbase[g]]:
            gs[g + 1] = o
            continue
        e = hi_g[g]
        p = lo_g[g]
        for s in range(sbase[g + 1] - sbase[g]):
            qi = qcount[sbase[g] + s]
            qe = qcount[sbase[g] + s + 1]
            while (p < e and slot[p] == s) or qi < qe:
                # a record before a query iff 2 mxr + 1 < 2 yhi
                if qi >= qe or (p < e and slot[p] == s and mxr[p] < yhi[abs(qt[qi]) - 1]):
                    m_point[o] = True
                    m_yr[o] = 2 * mxr[p] + 1
                    m_zr[o] = below[gstart[g] + mnz[p]]
                    m_q[o] = 0
                    p += 1
                else:
                    t = abs(qt[qi]) - 1
                    m_point[o] = False
                    m_yr[o] = 2 * yhi[t]
                    m_zr[o] = zq[t]
                    m_q[o] = qt[qi]
                    qi += 1
                m_slot[o] = s
                o += 1
        gs[g + 1] = o
    cnt = dominance_counts(gs, m_slot, m_point, m_yr, m_zr)
    for k in range(L):
        if m_q[k] > 0:
            out[m_q[k] - 1] += cnt[k]
        elif m_q[k] < 0:
            out[-m_q[k] - 1] -= cnt[k]
    return out
