"""Compiled merges of sorted (target, record) pair sums (numba, ``cache=True``): one linear
walk instead of searches and scatters, with the numpy twins' additions in the same order
(bitwise the same sums). Imported only when ``uncertainty.use_pair_kernels`` says so.
"""

from __future__ import annotations

import numba as _nb
import numpy as np


@_nb.njit(cache=True, nogil=True)
def _pairwise_block(v, s, n):
    """``v[s:s + n]``, ``n <= 128``, summed as numpy's ``pairwise_sum`` does: in order from
    ``-0.0`` below 8 values, else 8 accumulators combined pairwise, then the rest in order."""
    if n < 8:
        res = -0.0
        for i in range(s, s + n):
            res += v[i]
        return res
    r0, r1, r2, r3 = v[s], v[s + 1], v[s + 2], v[s + 3]
    r4, r5, r6, r7 = v[s + 4], v[s + 5], v[s + 6], v[s + 7]
    i = 8
    while i < n - n % 8:
        r0 += v[s + i]
        r1 += v[s + i + 1]
        r2 += v[s + i + 2]
        r3 += v[s + i + 3]
        r4 += v[s + i + 4]
        r5 += v[s + i + 5]
        r6 += v[s + i + 6]
        r7 += v[s + i + 7]
        i += 8
    res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    while i < n:
        res += v[s + i]
        i += 1
    return res


@_nb.njit(cache=True, nogil=True)
def _pairwise(v, s, n):
    """``v[s:s + n]`` summed in numpy's pairwise order (the sum of an add reduction: blocks of
    at most 128 values, halves at multiples of 8 above), bitwise. The halving recursion runs
    on an explicit stack (numba's cache does not reload recursive functions reliably)."""
    if n <= 128:
        return _pairwise_block(v, s, n)
    fs = np.empty(64, dtype=np.int64)  # frames: start, length, stage, left half's sum
    fn = np.empty(64, dtype=np.int64)
    stage = np.zeros(64, dtype=np.int64)
    left = np.empty(64)
    top = 0
    fs[0], fn[0] = s, n
    ret = 0.0
    while top >= 0:
        cs, cn = fs[top], fn[top]
        if cn <= 128:
            ret = _pairwise_block(v, cs, cn)
            top -= 1
            continue
        n2 = cn // 2
        n2 -= n2 % 8
        if stage[top] == 0:  # the left half first
            stage[top] = 1
            top += 1
            fs[top], fn[top], stage[top] = cs, n2, 0
        elif stage[top] == 1:  # then the right half
            left[top] = ret
            stage[top] = 2
            top += 1
            fs[top], fn[top], stage[top] = cs + n2, cn - n2, 0
        else:
            ret = left[top] + ret
            top -= 1
    return ret


@_nb.njit(cache=True, nogil=True)
def flush_sums(acc_k, acc_v, k, v):
    """Pending contributions ``v`` at the sorted keys ``k`` summed into the sorted unique
    ``acc_k``/``acc_v`` (compiled twin of ``_replicate_batches._merge_pairs``)."""
    A, P = acc_k.size, k.size
    n_new = 0
    i = j = 0
    while j < P:
        x = k[j]
        e = j + 1
        while e < P and k[e] == x:
            e += 1
        while i < A and acc_k[i] < x:
            i += 1
        if not (i < A and acc_k[i] == x):
            n_new += 1
        j = e
    out_k = np.empty(A + n_new, dtype=np.int64)
    out_v = np.empty(A + n_new)
    i = j = o = 0
    while j < P:
        x = k[j]
        e = j + 1
        while e < P and k[e] == x:
            e += 1
        while i < A and acc_k[i] < x:
            out_k[o] = acc_k[i]
            out_v[o] = acc_v[i]
            o += 1
            i += 1
        out_k[o] = x
        if i < A and acc_k[i] == x:
            out_v[o] = acc_v[i] + (0.0 + _pairwise(v, j, e - j))
            i += 1
        else:
            out_v[o] = v[j] + _pairwise(v, j + 1, e - j - 1)
        o += 1
        j = e
    while i < A:
        out_k[o] = acc_k[i]
        out_v[o] = acc_v[i]
        o += 1
        i += 1
    return out_k, out_v


@_nb.njit(cache=True, nogil=True)
def add_blocks(sk, sv, su, sfb, ek, ev, eu, efb, n):
    """Sums of two blocks of replicates: keys, values, fallback flags (compiled twin of
    ``PooledSums.add``)."""
    A, B = sk.size, ek.size
    i = j = U = 0
    while i < A or j < B:
        if j < B and (i >= A or ek[j] < sk[i]):
            j += 1
        elif j < B and ek[j] == sk[i]:
            i += 1
            j += 1
        else:
            i += 1
        U += 1
    keys = np.empty(U, dtype=np.int64)
    vals = np.empty(U)
    in_u = np.empty(U, dtype=np.bool_)
    i = j = o = 0
    while i < A or j < B:
        if j < B and (i >= A or ek[j] < sk[i]):
            keys[o] = ek[j]
            v = ev[j]
            if eu[j]:
                v = v + sfb[ek[j] // n]
            vals[o] = v
            in_u[o] = eu[j]
            j += 1
        elif j < B and ek[j] == sk[i]:
            keys[o] = sk[i]
            vals[o] = sv[i] + ev[j]
            in_u[o] = eu[j]
            i += 1
            j += 1
        else:
            keys[o] = sk[i]
            v = sv[i]
            if su[i]:
                v = v + efb[sk[i] // n]
            vals[o] = v
            in_u[o] = su[i]
            i += 1
        o += 1
    return keys, vals, in_u


@_nb.njit(cache=True, nogil=True)
def sums_at(sk, sv, sfb, keys, in_u, n):
    """Sums ``sk``/``sv`` (sorted) at the sorted ``keys``; a key not stored gets its target's
    fallback mass ``sfb`` when it is in the fallback set (``in_u``), else 0
    (``PooledSums.on``)."""
    A = sk.size
    out = np.empty(keys.size)
    i = 0
    for j in range(keys.size):
        x = keys[j]
        while i < A and sk[i] < x:
            i += 1
        if i < A and sk[i] == x:
            out[j] = sv[i]
        elif in_u[j]:
            out[j] = sfb[x // n]
        else:
            out[j] = 0.0
    return out


@_nb.njit(cache=True, nogil=True)
def row_argmax(keys, vals, n):
    """Position of the first largest value of each target's run of the sorted ``keys``
    (``uncertainty.row_argmax``; exact comparisons, no temporaries)."""
    P = keys.size
    m = 0
    end = -1
    for i in range(P):
        if keys[i] >= end:
            m += 1
            end = (keys[i] // n + 1) * n
    out = np.empty(m, dtype=np.int64)
    o = -1
    end = -1
    best = 0.0
    for i in range(P):
        if keys[i] >= end:
            o += 1
            end = (keys[i] // n + 1) * n
            out[o] = i
            best = vals[i]
        elif vals[i] > best:
            out[o] = i
            best = vals[i]
    return out


@_nb.njit(cache=True, nogil=True)
def at_least(keys, vals, R, thr, n):
    """``vals / R >= thr[keys // n]`` pair by pair over the sorted ``keys`` (one division per
    target instead of per pair, no pair-sized temporaries; the same quotients)."""
    out = np.empty(keys.size, dtype=np.bool_)
    end = -1
    t = 0.0
    for i in range(keys.size):
        if keys[i] >= end:
            row = keys[i] // n
            end = (row + 1) * n
            t = thr[row]
        out[i] = vals[i] / R >= t
    return out


@_nb.njit(cache=True, nogil=True)
def contribution_sums(keys, V, R, n):
    """The sorted contribution keys ``(t · n + k) · R + r`` decoded to their pairs and summed
    (compiled twin of ``pooled._decoded_sums``)."""
    P = keys.size
    U = 0
    for j in range(P):
        if j == 0 or keys[j] // R != keys[j - 1] // R:
            U += 1
    out_k = np.empty(U, dtype=np.int64)
    out_v = np.empty(U)
    buf = np.empty(max(R, 1))
    j = 0
    o = 0
    while j < P:
        pair = keys[j] // R
        t = pair // n
        L = 0
        while j < P and keys[j] // R == pair:
            buf[L] = V[keys[j] - pair * R, t]
            L += 1
            j += 1
        out_k[o] = pair
        out_v[o] = buf[0] + _pairwise(buf, 1, L - 1)
        o += 1
    return out_k, out_v
