"""Compiled kernels of the identification engine (numba, ``cache=True``), imported only when
the compiled path is used.
"""

from __future__ import annotations

import numba as _nb
import numpy as np
from numba.extending import intrinsic


@_nb.njit(cache=True, nogil=True)
def build(rec_g, G, vals, orders):
    """Counting sort by group, then by each radius column inside the group: ``gstart``,
    ``perms [max(q,1), n]`` and ``sv [max(q,1), q, n]`` (values in each column's order)."""
    n = rec_g.shape[0]
    q = vals.shape[0]
    gstart = np.zeros(G + 1, dtype=np.int64)
    for k in range(n):
        gstart[rec_g[k] + 1] += 1
    for g in range(G):
        gstart[g + 1] += gstart[g]
    qq = max(q, 1)
    perms = np.empty((qq, n), dtype=np.int64)
    sv = np.empty((qq, q, n), dtype=np.float64)
    fill = np.empty(G, dtype=np.int64)
    if q == 0:
        for g in range(G):
            fill[g] = gstart[g]
        for k in range(n):
            g = rec_g[k]
            perms[0, fill[g]] = k
            fill[g] += 1
        return gstart, perms, sv
    for j in range(q):
        o = orders[j]
        for g in range(G):
            fill[g] = gstart[g]
        # the sorted column itself is written as its records are placed (one random read a
        # record fewer than reading it back through ``perms``: 1.6x faster at 10^6 records)
        for t in range(n):
            k = o[t]
            g = rec_g[k]
            p = fill[g]
            perms[j, p] = k
            sv[j, j, p] = vals[j, k]
            fill[g] = p + 1
        for jj in range(q):
            if jj != j:
                for pos in range(n):
                    sv[j, jj, pos] = vals[jj, perms[j, pos]]
    return gstart, perms, sv

@_nb.njit(cache=True, nogil=True)
def _first_above(sv, j, base, end, x, upper):
    """The first position of ``sv[j, j, base:end]`` (sorted) holding a value above ``x``
    (``upper``) or not below it (branchless binary search)."""
    m = end - base
    while m > 1:
        half = m >> 1
        v = sv[j, j, base + half - 1]
        base = base + half if (v <= x if upper else v < x) else base
        m -= half
    if m == 1 and (sv[j, j, base] <= x if upper else sv[j, j, base] < x):
        base += 1
    return base


@_nb.njit(cache=True, nogil=True)
def _sweep(gstart, sv, tgt_g, bound, order, j, upper, out):
    """:func:`_first_above` of column ``j`` for every target, walking the targets in (key,
    bound) ``order`` once over each key group."""
    gprev = -2
    p = 0
    pend = 0
    for t in range(tgt_g.shape[0]):
        i = order[j, t]
        g = tgt_g[i]
        if g < 0:
            continue
        if g != gprev:
            p = gstart[g]
            pend = gstart[g + 1]
            gprev = g
        x = bound[i, j]
        while p < pend and (sv[j, j, p] <= x if upper else sv[j, j, p] < x):
            p += 1
        out[i, j] = p


@_nb.njit(cache=True, nogil=True)
def ranges(gstart, sv, tgt_g, lo, hi):
    """For each target: the radius column with the smallest window slice in its key group
    (``prim``), the slice start ``bs`` and length ``blen`` (branchless binary searches)."""
    N = tgt_g.shape[0]
    q = sv.shape[1]
    prim = np.zeros(N, dtype=np.int64)
    bstart = np.zeros(N, dtype=np.int64)
    blen_out = np.zeros(N, dtype=np.int64)
    for i in range(N):
        g = tgt_g[i]
        if g < 0:
            continue
        s0 = gstart[g]
        e0 = gstart[g + 1]
        if q == 0:
            bstart[i] = s0
            blen_out[i] = e0 - s0
            continue
        bj = 0
        bs = 0
        blen = -1
        for j in range(q):
            s = _first_above(sv, j, s0, e0, lo[i, j], False)
            ln = _first_above(sv, j, s, e0, hi[i, j], True) - s
            if blen < 0 or ln < blen:
                blen = ln
                bj = j
                bs = s
            if ln <= 0:
                break
        prim[i] = bj
        bstart[i] = bs
        blen_out[i] = max(blen, 0)
    return prim, bstart, blen_out

@_nb.njit(cache=True, nogil=True)
def ranges_sweep(gstart, sv, tgt_g, lo, hi, olo, ohi):
    """Same as :func:`ranges`, by a merge sweep over the targets in (key, bound) order."""
    N = tgt_g.shape[0]
    q = sv.shape[1]
    S = np.zeros((N, q), dtype=np.int64)
    E = np.zeros((N, q), dtype=np.int64)
    for j in range(q):
        _sweep(gstart, sv, tgt_g, lo, olo, j, False, S)
        _sweep(gstart, sv, tgt_g, hi, ohi, j, True, E)
    prim = np.zeros(N, dtype=np.int64)
    bstart = np.zeros(N, dtype=np.int64)
    blen = np.zeros(N, dtype=np.int64)
    for i in range(N):
        if tgt_g[i] < 0:
            continue
        best = -1
        for j in range(q):
            ln = E[i, j] - S[i, j]
            if ln < 0:
                ln = 0
            if best < 0 or ln < best:
                best = ln
                prim[i] = j
                bstart[i] = S[i, j]
        blen[i] = best
    return prim, bstart, blen

@_nb.njit(cache=True, nogil=True)
def scan(perms, sv, prim, bstart, blen, lo, hi, ell, centre, scale, strict, offsets,
             out, write):
    """Scan each target's slice, testing every radius column (and the ellipse); counts per
    target, and with ``write`` the matched records at ``out[offsets[i]:]``."""
    N = prim.shape[0]
    q = sv.shape[1]
    counts = np.zeros(N, dtype=np.int64)
    for i in range(N):
        ln = blen[i]
        if ln <= 0:
            continue
        bj = prim[i]
        bs = bstart[i]
        c = 0
        if q == 0:
            if write:
                for pos in range(bs, bs + ln):
                    out[offsets[i] + pos - bs] = perms[0, pos]
            counts[i] = ln
            continue
        if not write and not ell:
            # the slice holds the records inside the window on column ``bj`` (its bounds not
            # NaN): only the other columns are tested, two of them in a loop the compiler
            # vectorises (6x faster than testing every column at 10^6 records)
            if not (lo[i, bj] <= hi[i, bj]):
                continue
            if q == 2:
                jj = 1 - bj
                lj = lo[i, jj]
                hj = hi[i, jj]
                for pos in range(bs, bs + ln):
                    v = sv[bj, jj, pos]
                    c += (v >= lj) & (v <= hj)
            else:
                for pos in range(bs, bs + ln):
                    ok = 1
                    for jj in range(q):
                        if jj != bj:
                            v = sv[bj, jj, pos]
                            ok &= (v >= lo[i, jj]) & (v <= hi[i, jj])
                    c += ok
            counts[i] = c
            continue
        o = offsets[i]
        for pos in range(bs, bs + ln):
            ok = True
            for jj in range(q):
                if jj == bj:
                    continue
                v = sv[bj, jj, pos]
                if not (v >= lo[i, jj] and v <= hi[i, jj]):  # NaN: no match
                    ok = False
                    break
            if ok and ell:
                acc = 0.0
                for jj in range(q):
                    sc = scale[i, jj]
                    if sc > 0.0:
                        d = (sv[bj, jj, pos] - centre[i, jj]) / sc
                        acc += d * d
                if strict:
                    ok = acc < 1.0
                else:
                    ok = acc <= 1.0
            if ok:
                if write:
                    out[o + c] = perms[bj, pos]
                c += 1
        counts[i] = c
    return counts

@_nb.njit(cache=True, nogil=True)
def ranks(perms, n):
    """``out[perms[1, p]] = p``: each record's position in the order of the second radius
    column (its rank inside its key group is that minus the group's start)."""
    out = np.empty(n, dtype=np.int64)
    for p in range(n):
        out[perms[1, p]] = p
    return out


@_nb.njit(cache=True, nogil=True)
def _fenwick_add(tree, base, size, i):
    """Add one at local position ``i`` (0-based) of the Fenwick tree ``tree[base:base + size]``."""
    i += 1
    while i <= size:
        tree[base + i - 1] += 1
        i += i & (-i)


@_nb.njit(cache=True, nogil=True)
def _fenwick_prefix(tree, base, i):
    """How many were added at local positions ``< i``."""
    s = 0
    while i > 0:
        s += tree[base + i - 1]
        i -= i & (-i)
    return s


@_nb.njit(cache=True, nogil=True)
def count_rect2(gstart, perms, sv, rank1, tgt_g, lo, hi, olo, ohi):
    """Match counts of a rectangle over two radius columns, by an offline range count: inside
    each key group the records enter a Fenwick tree over their rank on the second column in
    the order of the first, and each target reads the tree twice, once the records below its
    window on the first column have entered and once those up to its top have. ``olo`` /
    ``ohi``: the targets sorted by (key, lower) and (key, upper) bound of the first column.
    O((n + N) log n) in place of a scan of each target's slice; the same counts."""
    N = tgt_g.shape[0]
    counts = np.zeros(N, dtype=np.int64)
    tree = np.zeros(perms.shape[1], dtype=np.int64)
    # per target: records of its group below / up to its window on the first column, and its
    # slice on the second (local ranks [s1, e1)); an empty window is not read
    plo = np.zeros(N, dtype=np.int64)
    phi = np.zeros(N, dtype=np.int64)
    s1 = np.zeros(N, dtype=np.int64)
    e1 = np.zeros(N, dtype=np.int64)
    live = np.zeros(N, dtype=np.bool_)
    for i in range(N):
        g = tgt_g[i]
        if g < 0:
            continue
        if lo[i, 0] != lo[i, 0] or hi[i, 0] != hi[i, 0] or lo[i, 1] != lo[i, 1] \
                or hi[i, 1] != hi[i, 1]:
            continue  # a NaN bound matches nothing
        b = gstart[g]
        e = gstart[g + 1]
        x = _first_above(sv, 0, b, e, lo[i, 0], False)
        y = _first_above(sv, 0, x, e, hi[i, 0], True)
        if y <= x:
            continue
        u = _first_above(sv, 1, b, e, lo[i, 1], False)
        v = _first_above(sv, 1, u, e, hi[i, 1], True)
        if v <= u:
            continue
        plo[i] = x - b
        phi[i] = y - b
        s1[i] = u - b
        e1[i] = v - b
        live[i] = True
    a = 0
    while a < N:
        # the next key group: the same targets at olo[a:a2] and ohi[a:a2]
        g = tgt_g[olo[a]]
        a2 = a
        while a2 < N and tgt_g[olo[a2]] == g:
            a2 += 1
        if g >= 0:
            base = gstart[g]
            size = gstart[g + 1] - base
            inserted = 0
            pa = a
            pz = a
            while pa < a2 or pz < a2:
                # the next reading in the order of its prefix on the first column
                if pa < a2 and not live[olo[pa]]:
                    pa += 1
                    continue
                if pz < a2 and not live[ohi[pz]]:
                    pz += 1
                    continue
                if pz >= a2 or (pa < a2 and plo[olo[pa]] <= phi[ohi[pz]]):
                    t = olo[pa]
                    pa += 1
                    p = plo[t]
                    sign = -1
                else:
                    t = ohi[pz]
                    pz += 1
                    p = phi[t]
                    sign = 1
                while inserted < p:
                    _fenwick_add(tree, base, size, rank1[perms[0, base + inserted]] - base)
                    inserted += 1
                counts[t] += sign * (_fenwick_prefix(tree, base, e1[t])
                                     - _fenwick_prefix(tree, base, s1[t]))
            if inserted:  # the tree back to zeros for the next group
                for k in range(base, base + size):
                    tree[k] = 0
        a = a2
    return counts


@_nb.njit(cache=True, nogil=True)
def compact(buf, offsets, counts):
    out = np.empty(counts.sum(), dtype=np.int64)
    p = 0
    for i in range(counts.shape[0]):
        o = offsets[i]
        for t in range(counts[i]):
            out[p] = buf[o + t]
            p += 1
    return out


@intrinsic
def _popcount(typingctx, x):
    """Number of set bits of a uint64 (LLVM's ``ctpop``: one instruction where the CPU has it)."""
    if x != _nb.types.uint64:
        return None

    def codegen(context, builder, signature, args):
        return builder.ctpop(args[0])

    return _nb.types.uint64(_nb.types.uint64), codegen


@_nb.njit(cache=True, nogil=True)
def lattice_counts(masks, col, level, out, rec, r, counts, own):
    """Match counts and own-record flags of many subsets of columns in replicate ``r``, target
    by target, following the depth-first program ``col, level, out`` of ``masks._program``."""
    C, N, W = masks.shape
    S = col.shape[0]
    depth = 1
    for i in range(S):
        depth = max(depth, level[i] + 1)
    stack = np.empty((depth, W), dtype=np.uint64)
    one = np.uint64(1)
    for t in range(N):
        k = rec[t]
        for i in range(S):
            lv = level[i]
            c = col[i]
            n = np.uint64(0)
            if lv == 0:
                for w in range(W):
                    m = masks[c, t, w]
                    stack[0, w] = m
                    n += _popcount(m)
            else:
                for w in range(W):
                    m = stack[lv - 1, w] & masks[c, t, w]
                    stack[lv, w] = m
                    n += _popcount(m)
            o = out[i]
            if o >= 0:
                counts[o, t, r] = np.int64(n)
                if k >= 0:
                    own[o, t, r] = ((stack[lv, k >> 6] >> np.uint64(k & 63)) & one) == one
                else:
                    own[o, t, r] = False


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
                            _fenwick_add(tree, 0, P, zr[k])
                            added += 1
                    else:
                        k = idx[j]
                        j += 1
                        if not is_point[k]:
                            cnt[k] += added - _fenwick_prefix(tree, 0, zr[k] + 1)
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
    """The z ranks among each group's stretch ``lo_g:hi_g`` of records (:func:`pattern_counts`):
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
def pattern_counts(gstart, arank, slot, mxr, mnz, mns, tg, qlo, qhi, yhi, ylo, torder, olo,
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
    # z rank: the group's records whose smallest value is below ylo, less one
    zq = np.zeros(N, dtype=np.int64)
    _walk_groups(oylo, tg, gstart, mns, ylo, ptr, zq)
    for t in range(N):
        if tg[t] >= 0:
            zq[t] -= gstart[tg[t]] + 1
    below, inside = _stretch_ranks(gstart, mnz, lo_g, hi_g)
    for t in range(N):
        if e_hi[t] > e_lo[t]:
            g = tg[t]
            k = zq[t] + 1  # the stretch's records placed below it, less one
            zq[t] = (inside[g] if k >= gstart[g + 1] - gstart[g] else below[gstart[g] + k]) - 1
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
