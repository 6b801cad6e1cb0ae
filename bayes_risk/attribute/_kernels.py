"""Numba kernels of the attribute-risk engine (Pareto k̂ of SPEC Appendix A.2).

The numpy implementation in :mod:`bayes_risk.attribute.diagnostics` is the reference; the kernels
here follow it operation by operation (including numpy's pairwise summation order), so both agree
to rounding error. Results: ``+inf`` when the tail is constant or has a non-positive exceedance,
``nan`` when the maximum of a vector is not finite (all ``-inf``, a ``nan`` or a ``+inf`` entry).
"""

from __future__ import annotations

import math
import os

import numpy as np

# Numba's OpenMP/TBB layers abort in PyMC chains forked after a parallel region ran in the parent
# (platform fact, issue 4); the workqueue layer does not. A user's explicit choice is respected.
os.environ.setdefault("NUMBA_THREADING_LAYER", "workqueue")

from numba import config as _numba_config  # noqa: E402
from numba import njit, prange  # noqa: E402

if "NUMBA_THREADING_LAYER" in os.environ:
    _numba_config.THREADING_LAYER = os.environ["NUMBA_THREADING_LAYER"]

__all__ = ["pareto_khat_rows"]

_EPS100 = np.finfo(np.float64).eps / 100.0


@njit(cache=True)
def _block_sum(a, lo, n):  # pragma: no cover - compiled
    """Sum of ``a[lo:lo+n]``, ``n <= 128``, in numpy's unrolled ``pairwise_sum`` order."""
    if n < 8:
        res = 0.0
        for i in range(lo, lo + n):
            res += a[i]
        return res
    r0 = a[lo]
    r1 = a[lo + 1]
    r2 = a[lo + 2]
    r3 = a[lo + 3]
    r4 = a[lo + 4]
    r5 = a[lo + 5]
    r6 = a[lo + 6]
    r7 = a[lo + 7]
    i = 8
    stop = n - (n % 8)
    while i < stop:
        r0 += a[lo + i]
        r1 += a[lo + i + 1]
        r2 += a[lo + i + 2]
        r3 += a[lo + i + 3]
        r4 += a[lo + i + 4]
        r5 += a[lo + i + 5]
        r6 += a[lo + i + 6]
        r7 += a[lo + i + 7]
        i += 8
    res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    while i < n:
        res += a[lo + i]
        i += 1
    return res


@njit(cache=True)
def _pairwise_sum(a, lo, n):  # pragma: no cover - compiled
    """Sum of ``a[lo:lo+n]`` in numpy's ``pairwise_sum`` order (blocks of 128, halving splits)."""
    if n <= 128:
        return _block_sum(a, lo, n)
    n2 = n // 2
    n2 -= n2 % 8
    left = n2
    right = n - n2
    if left <= 128 and right <= 128:
        return _block_sum(a, lo, left) + _block_sum(a, lo + left, right)
    # deeper splits: explicit post-order evaluation with a value stack
    los = np.empty(128, dtype=np.int64)
    ns = np.empty(128, dtype=np.int64)
    state = np.zeros(128, dtype=np.int64)
    vals = np.empty(128)
    los[0] = lo
    ns[0] = n
    top = 0
    nv = 0
    while top >= 0:
        cn = ns[top]
        if cn <= 128:
            vals[nv] = _block_sum(a, los[top], cn)
            nv += 1
            top -= 1
            continue
        h = cn // 2
        h -= h % 8
        if state[top] == 0:
            state[top] = 1
            top += 1
            los[top] = los[top - 1]
            ns[top] = h
            state[top] = 0
        elif state[top] == 1:
            state[top] = 2
            top += 1
            los[top] = los[top - 1] + h
            ns[top] = cn - h
            state[top] = 0
        else:
            vals[nv - 2] = vals[nv - 2] + vals[nv - 1]
            nv -= 1
            top -= 1
    return vals[0]


@njit(cache=True)
def _gpd_k(x, theta, ll, tmp, w):  # pragma: no cover - compiled
    """Zhang–Stephens ``k`` with the weakly-informative adjustment; ``x`` sorted, all ``> 0``."""
    n = x.shape[0]
    mg = theta.shape[0]
    prior = 3.0
    xstar = x[int(math.floor(n / 4 + 0.5)) - 1]
    inv_last = 1.0 / x[n - 1]
    for j in range(mg):
        theta[j] = inv_last + (1.0 - math.sqrt(mg / (j + 1.0 - 0.5))) / prior / xstar
    for j in range(mg):
        th = -theta[j]
        for i in range(n):
            tmp[i] = math.log1p(th * x[i])
        kk = _pairwise_sum(tmp, 0, n) / n
        lx = math.log(-theta[j] / kk) - kk - 1.0
        v = n * lx
        if math.isnan(v):
            v = -math.inf
        ll[j] = v
    # logsumexp(ll) exactly as bayes_risk._numeric.logsumexp
    m = -math.inf
    anynan = False
    for j in range(mg):
        if math.isnan(ll[j]):
            anynan = True
        elif ll[j] > m:
            m = ll[j]
    if anynan:
        m = math.nan
    if not math.isfinite(m):
        m = 0.0
    for j in range(mg):
        w[j] = math.exp(ll[j] - m)
    lse = math.log(_pairwise_sum(w, 0, mg)) + m
    for j in range(mg):
        wj = math.exp(ll[j] - lse)
        if math.isnan(wj):
            wj = 0.0
        w[j] = theta[j] * wj
    theta_hat = _pairwise_sum(w, 0, mg)
    th = -theta_hat
    for i in range(n):
        tmp[i] = math.log1p(th * x[i])
    k = _pairwise_sum(tmp, 0, n) / n
    return k * n / (n + 10.0) + 10.0 * 0.5 / (n + 10.0)


@njit(cache=True)
def _khat_block(flat, out, lo, hi, m):  # pragma: no cover - compiled
    """Pareto k̂ of rows ``lo..hi-1`` of ``flat`` into ``out`` (tail size ``m``)."""
    s = flat.shape[1]
    mg = 30 + int(math.floor(math.sqrt(m)))
    buf = np.empty(s)
    x = np.empty(m)
    theta = np.empty(mg)
    ll = np.empty(mg)
    w = np.empty(mg)
    tmp = np.empty(m)
    kth = s - m - 1
    for r in range(lo, hi):
        mx = -math.inf
        bad = False
        for i in range(s):
            v = flat[r, i]
            if math.isnan(v):
                bad = True
                break
            if v > mx:
                mx = v
        if bad or not math.isfinite(mx):
            out[r] = math.nan
            continue
        for i in range(s):
            buf[i] = flat[r, i] - mx
        part = np.partition(buf, kth)
        top = np.sort(part[kth:])
        cutoff = top[0]
        if (top[m] - top[1]) < _EPS100:
            out[r] = math.inf
            continue
        ec = math.exp(cutoff)
        ok = True
        for i in range(m):
            xi = math.exp(top[i + 1]) - ec
            if not (xi > 0.0):
                ok = False
                break
            x[i] = xi
        if not ok:
            out[r] = math.inf
            continue
        out[r] = _gpd_k(x, theta, ll, tmp, w)


@njit(cache=True, parallel=True)
def pareto_khat_rows(flat, m):  # pragma: no cover - compiled
    """Pareto k̂ of every row of ``flat`` (``float64[R, S]``, C-contiguous), tail size ``m``.

    Requires ``m >= 5`` and ``S >= m + 1``; rows are processed in parallel blocks.
    """
    nrow = flat.shape[0]
    out = np.empty(nrow)
    block = 64
    nblk = (nrow + block - 1) // block
    for b in prange(nblk):
        lo = b * block
        hi = min(lo + block, nrow)
        _khat_block(flat, out, lo, hi, m)
    return out
