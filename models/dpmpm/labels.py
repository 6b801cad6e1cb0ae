"""Label swaps for the DPMPM allocations on the collapsed target ``p(z | α, y)`` (``V`` and ``φ``
integrated out): :func:`relabel` swaps two uniformly chosen labels, accepted with the prior
ratio; the caller redraws ``V`` and ``φ``. See :doc:`/methods/models` (DPMPM, Label swaps and
merge–split moves).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from bayes_risk.models._bayesian.generator import generator_of
from bayes_risk.models._bayesian.stick_kernels import (
    gamma_variates,
    slice_log_alpha,
    stick_variates,
)
from bayes_risk.models.dpmpm.kernels import normalise_levels
from bayes_risk.models.dpmpm.splitmerge import split_merge

__all__ = [
    "relabel",
]


@njit(cache=True)
def _prior_cache(nk, alpha, lb1, la, term, part):  # pragma: no cover - numba
    """The terms of ``log_prior_counts`` and its running sums: ``term[k]`` (``k < K − 1``),
    ``part[k]`` = the sum after term ``k`` (``part[K − 1] = part[K] = 0``), ``la[k]`` =
    ``lgamma(1 + n_k)``; the same operations in the same order, so ``part[0]`` is bitwise
    ``log_prior_counts(nk, alpha)``."""
    K = nk.shape[0]
    part[K] = 0.0
    part[K - 1] = 0.0
    m = 0.0
    for k in range(K - 1, -1, -1):
        a = 1.0 + nk[k]
        la[k] = math.lgamma(a)
        if k < K - 1:
            b = alpha + m
            term[k] = la[k] + math.lgamma(b) - math.lgamma(a + b) - lb1
            part[k] = part[k + 1] + term[k]
        m += nk[k]


@njit(cache=True)
def relabel(z, c, nk, alpha, n_props, rng):  # pragma: no cover - numba
    """``n_props`` Metropolis swaps of two uniformly chosen labels, accepted with the prior ratio;
    returns the permutation applied (``new_label[old] = new``). The prior after a swap reuses
    the unchanged terms with the same operations in the same order (bitwise the full one)."""
    K = nk.shape[0]
    new_label = np.arange(K)
    inv = np.arange(K)  # inv[label now] = original label
    lb1 = -math.log(alpha)  # log B(1, α), as log_prior_counts
    la = np.empty(K)
    term = np.zeros(K)
    part = np.zeros(K + 1)
    la_new = np.empty(K)
    term_new = np.empty(K)
    _prior_cache(nk, alpha, lb1, la, term, part)
    lp = part[0]
    for _ in range(n_props):
        k = int(rng.random() * K)
        l = int(rng.random() * (K - 1))
        if l >= k:
            l += 1
        u = rng.random()
        if nk[k] == nk[l]:
            continue
        tmp = nk[k]
        nk[k] = nk[l]
        nk[l] = tmp
        lo, hi = min(k, l), max(k, l)
        m = 0.0  # Σ_{h > hi} n_h, exact (integers)
        for h in range(K - 1, hi, -1):
            m += nk[h]
        out = part[hi + 1]
        la_new[lo] = la[hi]
        la_new[hi] = la[lo]
        for h in range(lo + 1, hi):
            la_new[h] = la[h]
        for h in range(hi, lo - 1, -1):
            if h < K - 1:
                a = 1.0 + nk[h]
                b = alpha + m
                term_new[h] = la_new[h] + math.lgamma(b) - math.lgamma(a + b) - lb1
                out += term_new[h]
            m += nk[h]
        for h in range(lo - 1, -1, -1):
            out += term[h]
        lp_new = out
        if math.log(1.0 - u) < lp_new - lp:
            lp = lp_new
            tmp = inv[k]
            inv[k] = inv[l]
            inv[l] = tmp
            for h in range(hi, lo - 1, -1):  # the cache of the new state
                la[h] = la_new[h]
                if h < K - 1:
                    term[h] = term_new[h]
                    part[h] = part[h + 1] + term[h]
            for h in range(lo - 1, -1, -1):
                part[h] = part[h + 1] + term[h]
        else:
            tmp = nk[k]
            nk[k] = nk[l]
            nk[l] = tmp
    for k in range(K):
        new_label[inv[k]] = k
    moved = False
    for k in range(K):
        if inv[k] != k:
            moved = True
    if moved:
        # c[:, :] = c[:, inv], element by element (splitmerge._set_column: no slice assignment)
        row = np.empty(K)
        for r in range(c.shape[0]):
            for k in range(K):
                row[k] = c[r, inv[k]]
            for k in range(K):
                c[r, k] = row[k]
        for r in range(z.shape[0]):
            z[r] = new_label[z[r]]
    return new_label


@njit(cache=True, nogil=True)  # nogil: as kernels.class_step_serial
def _collapsed_moves(y, z, c, nk, d, offsets, alpha, a, n_moves, n_props, a_alpha, b_alpha,
                    log_alpha_max, rng):  # pragma: no cover - numba
    """``n_moves`` merge–split moves, ``n_props`` label swaps and one slice update of α
    (``log α <= log_alpha_max``) in one compiled call; returns ``(new_label, α)``."""
    split_merge(y, z, c, nk, d, offsets, alpha, a, n_moves, rng)
    new_label = relabel(z, c, nk, alpha, n_props, rng)
    nkf = np.empty(nk.shape[0])
    for k in range(nk.shape[0]):
        nkf[k] = nk[k]
    return new_label, slice_log_alpha(nkf, alpha, a_alpha, b_alpha, 1.0, log_alpha_max, rng)


@njit(cache=True, nogil=True)
def _collapsed_moves_and_variates(y, z, c, nk, d, offsets, alpha, a, n_moves, n_props, a_alpha,
                                 b_alpha, log_alpha_max, floor, handle):  # pragma: no cover
    """:func:`_collapsed_moves`, then the sticks' random numbers and φ, in one compiled call (same
    draws as the calls in turn); ``rng`` is a ``generator.generator_handle``. Returns
    ``(new_label, α, stick variates, φ)``."""
    rng = generator_of(handle)
    new_label, alpha_new = _collapsed_moves(y, z, c, nk, d, offsets, alpha, a, n_moves, n_props,
                                           a_alpha, b_alpha, log_alpha_max, rng)
    sticks = stick_variates(nk, alpha_new, rng)
    return new_label, alpha_new, sticks, normalise_levels(gamma_variates(a + c, rng), offsets,
                                                          floor)
