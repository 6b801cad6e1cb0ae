"""Compiled kernels of the identification engine (numba, ``cache=True``), imported only when
the compiled path is used.
"""

from __future__ import annotations

import numba as _nb
import numpy as np
from numba.extending import intrinsic


@_nb.njit(cache=True, nogil=True)
def build(rec_g, G, vals, orders, perms):
    """Counting sort by group, then by each radius column inside the group: ``gstart``,
    ``perms [max(q,1), n]`` (written into the caller's array, int32 when ``n`` fits) and
    ``sv [max(q,1), q, n]`` (values in each column's order)."""
    n = rec_g.shape[0]
    q = vals.shape[0]
    gstart = np.zeros(G + 1, dtype=np.int64)
    for k in range(n):
        gstart[rec_g[k] + 1] += 1
    for g in range(G):
        gstart[g + 1] += gstart[g]
    qq = max(q, 1)
    sv = np.empty((qq, q, n), dtype=vals.dtype)  # float64 values or int32 codes
    fill = np.empty(G, dtype=np.int64)
    if q == 0:
        for g in range(G):
            fill[g] = gstart[g]
        for k in range(n):
            g = rec_g[k]
            perms[0, fill[g]] = k
            fill[g] += 1
        return gstart, sv
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
    return gstart, sv

_DIGIT = 11  # bits a pass of value_order sorts by: 6 passes of 64-bit keys, 2048 counters


@_nb.njit(cache=True, nogil=True)
def value_order(bits, out):
    """``argsort`` of float64 values given as their bits (``x.view(np.uint64)``) into ``out``
    (int32 or int64): a least-significant-digit radix sort of their order keys, skipping the
    digits every value shares (6x faster than ``np.argsort`` at 10^6 values). Ties keep no
    particular order (as ``np.argsort``'s), ``-0.0`` comes before ``0.0`` and NaN last."""
    n = bits.shape[0]
    top = np.uint64(1) << np.uint64(63)
    expo = np.uint64(0x7FF0000000000000)
    mant = np.uint64(0x000FFFFFFFFFFFFF)
    keys = np.empty(n, dtype=np.uint64)
    for i in range(n):
        u = bits[i]
        if (u & expo) == expo and (u & mant) != np.uint64(0):
            keys[i] = ~np.uint64(0)  # NaN: last
        elif u & top:
            keys[i] = ~u  # negative: the larger magnitude first
        else:
            keys[i] = u | top
    passes = (64 + _DIGIT - 1) // _DIGIT
    width = 1 << _DIGIT
    mask = np.uint64(width - 1)
    hist = np.zeros((passes, width), dtype=np.int64)
    for i in range(n):
        k = keys[i]
        for d in range(passes):
            hist[d, np.int64((k >> np.uint64(d * _DIGIT)) & mask)] += 1
    idx = np.arange(n).astype(out.dtype)
    k2 = np.empty(n, dtype=np.uint64)
    i2 = np.empty(n, dtype=out.dtype)
    for d in range(passes):
        h = hist[d]
        if h.max() == n:  # every value has this digit: the pass would change nothing
            continue
        pos = np.empty(width, dtype=np.int64)
        acc = 0
        for b in range(width):
            pos[b] = acc
            acc += h[b]
        shift = np.uint64(d * _DIGIT)
        for i in range(n):
            k = keys[i]
            b = np.int64((k >> shift) & mask)
            p = pos[b]
            k2[p] = k
            i2[p] = idx[i]
            pos[b] = p + 1
        keys, k2 = k2, keys
        idx, i2 = i2, idx
    out[:] = idx


@_nb.njit(cache=True, nogil=True)
def bound_codes(lo, olo, hi, ohi, clo, chi, distinct):
    """``2·rank + 1`` of every bound ``lo[i]`` and ``hi[i]`` (each read in its sorted order
    ``olo``, ``ohi``; no NaN) among the distinct values of both, into ``clo`` and ``chi``,
    each distinct value once into ``distinct`` (a merge of the two); their number."""
    n = lo.shape[0]
    a = 0
    b = 0
    k = -1
    prev = 0.0
    while a < n or b < n:
        low = b >= n or (a < n and lo[olo[a]] <= hi[ohi[b]])
        v = lo[olo[a]] if low else hi[ohi[b]]
        if k < 0 or v != prev:  # -0.0 and 0.0 are one value, as in every comparison
            k += 1
            distinct[k] = v
            prev = v
        if low:
            clo[olo[a]] = 2 * k + 1
            a += 1
        else:
            chi[ohi[b]] = 2 * k + 1
            b += 1
    return k + 1


@_nb.njit(cache=True, nogil=True)
def value_codes(vals, order, bounds, codes):
    """``codes[i] = 2·#{bounds below vals[i]} + [vals[i] is a bound]`` (``bounds`` sorted and
    distinct, ``vals`` read in their sorted ``order``, no NaN): a merge of the two."""
    nb = bounds.shape[0]
    k = 0
    for t in range(order.shape[0]):
        i = order[t]
        v = vals[i]
        while k < nb and bounds[k] < v:
            k += 1
        codes[i] = 2 * k + (1 if k < nb and bounds[k] == v else 0)


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
def _sweep(gstart, sv, tgt_g, bound, order, j, upper, start, prim, bstart, blen):
    """:func:`_first_above` of column ``j`` for every target, walking the targets in (key,
    bound) ``order`` once over each key group: the lower bounds' positions into ``start``
    (``upper`` false), or with the upper bounds (``upper``) the slice ``[start, p)`` kept in
    ``prim, bstart, blen`` where it is the first column's or shorter than the slice kept."""
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
        if not upper:
            start[i] = p
            continue
        ln = max(p - start[i], 0)
        if j == 0 or ln < blen[i]:
            prim[i] = j
            bstart[i] = start[i]
            blen[i] = ln


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
    """Same as :func:`ranges`, by a merge sweep over the targets in (key, bound) order, one
    column's slice starts held at a time (not every column's starts and ends)."""
    N = tgt_g.shape[0]
    q = sv.shape[1]
    start = np.zeros(N, dtype=np.int64)
    prim = np.zeros(N, dtype=np.int64)
    bstart = np.zeros(N, dtype=np.int64)
    blen = np.zeros(N, dtype=np.int64)
    for j in range(q):
        _sweep(gstart, sv, tgt_g, lo, olo, j, False, start, prim, bstart, blen)
        _sweep(gstart, sv, tgt_g, hi, ohi, j, True, start, prim, bstart, blen)
    return prim, bstart, blen

@_nb.njit(cache=True, nogil=True)
def _scan(perms, sv, prim, bstart, blen, lo, hi, ell, centre, scale, strict, offsets,
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
    column (its rank inside its key group is that minus the group's start), in perms' type."""
    out = np.empty(n, dtype=perms.dtype)
    for p in range(n):
        out[perms[1, p]] = p
    return out


@_nb.njit(cache=True, nogil=True)
def fenwick_add(tree, base, size, i):
    """Add one at local position ``i`` (0-based) of the Fenwick tree ``tree[base:base + size]``."""
    i += 1
    while i <= size:
        tree[base + i - 1] += 1
        i += i & (-i)


@_nb.njit(cache=True, nogil=True)
def fenwick_prefix(tree, base, i):
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
    tree = np.zeros(perms.shape[1], dtype=perms.dtype)  # a count is at most n
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
                    fenwick_add(tree, base, size, rank1[perms[0, base + inserted]] - base)
                    inserted += 1
                counts[t] += sign * (fenwick_prefix(tree, base, e1[t])
                                     - fenwick_prefix(tree, base, s1[t]))
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
