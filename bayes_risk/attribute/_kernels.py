"""Numba kernels of the attribute-risk engine: tail selection for Pareto k̂ (SPEC Appendix A.2).

:func:`khat_tails` replaces the per-block ``np.partition`` + sort of the numpy reference
(:func:`bayes_risk.attribute.diagnostics._pareto_khat_numpy`) by a parallel in-place selection.
The selected tails are identical (as multisets, hence after sorting) to numpy's, so k̂ is
unchanged. The generalized-Pareto fit itself stays in numpy (:func:`_gpdfit_sorted`): its cost is
~3,700 ``log1p`` per vector, and numpy's SIMD ``log1p`` is several times faster than the scalar
libm call a numba loop makes (measured: a fully compiled fit was slower than the numpy one).
"""

from __future__ import annotations

import math
import os

import numpy as np

# Numba's OpenMP/TBB layers abort in PyMC chains forked after a parallel region ran in the parent
# (platform fact, issue 4); the workqueue layer does not. A user's explicit choice is respected.
os.environ.setdefault("NUMBA_THREADING_LAYER", "workqueue")

from numba import config as _numba_config  # noqa: E402
from numba import get_num_threads, njit, prange  # noqa: E402

if "NUMBA_THREADING_LAYER" in os.environ:
    _numba_config.THREADING_LAYER = os.environ["NUMBA_THREADING_LAYER"]

__all__ = ["get_num_threads", "khat_tails"]


@njit(cache=True)
def _select(a, k):  # pragma: no cover - compiled
    """Reorder ``a`` in place so that ``a[k]`` is its ``k``-th smallest value, ``a[:k] <= a[k]``
    and ``a[k:] >= a[k]`` (Hoare/Wirth selection, median-of-three pivot; no ``nan`` allowed)."""
    lo = 0
    hi = a.shape[0] - 1
    while hi > lo:
        mid = (lo + hi) // 2
        if a[mid] < a[lo]:
            t = a[mid]
            a[mid] = a[lo]
            a[lo] = t
        if a[hi] < a[lo]:
            t = a[hi]
            a[hi] = a[lo]
            a[lo] = t
        if a[hi] < a[mid]:
            t = a[hi]
            a[hi] = a[mid]
            a[mid] = t
        pivot = a[mid]
        i = lo
        j = hi
        while i <= j:
            while a[i] < pivot:
                i += 1
            while a[j] > pivot:
                j -= 1
            if i <= j:
                t = a[i]
                a[i] = a[j]
                a[j] = t
                i += 1
                j -= 1
        if k <= j:
            hi = j
        elif k >= i:
            lo = i
        else:
            return


@njit(cache=True, parallel=True)
def khat_tails(lr3, m):  # pragma: no cover - compiled
    """Largest ``M + 1`` shifted log ratios of every vector (SPEC A.2 steps 1 and 3).

    Parameters
    ----------
    lr3 : float64[A, B, S], any strides
        Log ratios; vector ``(a, b)`` is ``lr3[a, b, :]``. Strided views are read in place, so
        ``np.moveaxis(logr, 1, -1)`` of a ``[R, H, G]`` array needs no transposed copy.
    m : int
        Tail size ``M`` (``5 <= M < S``).

    Returns
    -------
    top : float64[A * B, M + 1]
        ``sort(lr − max(lr))[S − M − 1:]`` per vector (row ``a * B + b``) — the cutoff followed
        by the tail, ascending; zeros where ``bad``.
    bad : bool[A * B]
        The maximum is not finite (all ``-inf``, a ``nan`` or a ``+inf`` entry): ``k̂ = nan``.
    """
    nb = lr3.shape[1]
    s = lr3.shape[2]
    nrow = lr3.shape[0] * nb
    top = np.zeros((nrow, m + 1))
    bad = np.zeros(nrow, dtype=np.bool_)
    block = 256
    nblk = (nrow + block - 1) // block
    for blk in prange(nblk):
        lo = blk * block
        hi = min(lo + block, nrow)
        buf = np.empty(s)
        for r in range(lo, hi):
            ia = r // nb
            ib = r - ia * nb
            mx = -math.inf
            isnan = False
            for i in range(s):
                v = lr3[ia, ib, i]
                buf[i] = v
                if math.isnan(v):
                    isnan = True
                elif v > mx:
                    mx = v
            if isnan or not math.isfinite(mx):
                bad[r] = True
                continue
            for i in range(s):
                buf[i] = buf[i] - mx
            _select(buf, s - m - 1)
            top[r, :] = np.sort(buf[s - m - 1 :])
    return top, bad
