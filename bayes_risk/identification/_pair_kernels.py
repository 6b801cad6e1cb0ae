"""Compiled merges of sorted (target, record) pair sums (numba, ``cache=True``).

The posterior-replicate run (:mod:`bayes_risk.identification.replicates`) accumulates pooled
sums on sorted unique pair keys ``target · n + record``. Both sides of every merge are sorted, so
one linear walk replaces binary searches and boolean-mask scatters over the accumulated pairs
(which cost time and pair-sized temporaries). The arithmetic is that of the numpy code these
kernels replace (same additions in the same order: bitwise the same sums); imported only when the
pairs are many enough to repay importing numba (``uncertainty.use_pair_kernels``).
"""

from __future__ import annotations

import numba as _nb
import numpy as np


@_nb.njit(cache=True, nogil=True)
def locate(acc_k, k):
    """Position of each of the sorted keys ``k`` in the sorted ``acc_k`` (``searchsorted``,
    left) and whether it is stored there."""
    A = acc_k.size
    pos = np.empty(k.size, dtype=np.int64)
    stored = np.empty(k.size, dtype=np.bool_)
    i = 0
    for j in range(k.size):
        x = k[j]
        while i < A and acc_k[i] < x:
            i += 1
        pos[j] = i
        stored[j] = i < A and acc_k[i] == x
    return pos, stored


@_nb.njit(cache=True, nogil=True)
def merge_sums(acc_k, acc_v, k, sums, stored, n_new):
    """Sorted union of ``acc_k`` and ``k``: ``acc_v + sums`` where both hold a key, the value
    of the side that holds it otherwise (``stored``: ``k`` in ``acc_k``; ``n_new`` keys not)."""
    A, P = acc_k.size, k.size
    out_k = np.empty(A + n_new, dtype=np.int64)
    out_v = np.empty(A + n_new)
    i = j = o = 0
    while i < A or j < P:
        if j < P and (i >= A or k[j] < acc_k[i]):
            out_k[o] = k[j]
            out_v[o] = sums[j]
            j += 1
        elif j < P and stored[j] and k[j] == acc_k[i]:
            out_k[o] = acc_k[i]
            out_v[o] = acc_v[i] + sums[j]
            i += 1
            j += 1
        else:
            out_k[o] = acc_k[i]
            out_v[o] = acc_v[i]
            i += 1
        o += 1
    return out_k, out_v


@_nb.njit(cache=True, nogil=True)
def add_blocks(sk, sv, su, sfb, ek, ev, eu, efb, n):
    """Sums of two blocks of replicates (``PooledSums.add``): keys, values, fallback flags.

    A pair stored on one side only gets the other side's fallback mass of its target when it
    is in the target's fallback set (``su``/``eu``; the set is the same in every block).
    """
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
