"""Sequentially allocated merge–split moves for the DPMPM allocations on the collapsed target
``p(z | α, y)`` of :mod:`bayes_risk.models.dpmpm.labels` (Dahl 2003, 2005; Jain & Neal 2004,
https://doi.org/10.1198/1061860043001). The move: :doc:`/methods/models` (DPMPM, Label swaps
and merge–split moves).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

__all__ = ["split_merge"]


@njit(cache=True)
def _log_marg_vec(cv, n, d, offsets, a):  # pragma: no cover - numba
    """Dirichlet–multinomial log marginal likelihood of one class with level counts ``cv[L]`` and
    size ``n`` (terms constant in the counts left out, as in ``dpmpm.labels``)."""
    out = 0.0
    lga = math.lgamma(a)
    for j in range(d.shape[0]):
        out -= math.lgamma(d[j] * a + n) - math.lgamma(d[j] * a)
        for cc in range(d[j]):
            x = cv[offsets[j] + cc]
            if x > 0:
                out += math.lgamma(a + x) - lga
    return out


@njit(cache=True)
def _log_prior_span(nk, alpha, lo, hi):  # pragma: no cover - numba
    """The terms ``k = lo..hi`` of ``log p(z | α)`` (``log_prior_counts``): the only ones that
    change when records move between classes ``lo`` and ``hi`` (the tail sums ``m_k`` of the
    classes before ``lo`` do not)."""
    K = nk.shape[0]
    m = 0.0
    for k in range(K - 1, hi, -1):
        m += nk[k]
    out = 0.0
    for k in range(hi, lo - 1, -1):
        if k < K - 1:
            a = 1.0 + nk[k]
            b = alpha + m
            out += math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b) + math.log(alpha)
        m += nk[k]
    return out


@njit(cache=True)
def _add(y, r, cv, sign, offsets):  # pragma: no cover - numba
    for j in range(y.shape[1]):
        cv[offsets[j] + y[r, j]] += sign


@njit(cache=True)
def _allocate(y, order, i, j, ca, cb, na, nb, d, offsets, a, split, rng, target_a,
              base, log_u):  # pragma: no cover - numba
    """Sequential allocation of ``order`` to classes A (holding ``i``) and B (holding ``j``)
    whose counts without the records of ``y`` are ``ca, cb`` (level counts, filled in place)
    and ``na, nb`` (sizes). ``split``: draw each record (``target_a`` receives the choices);
    otherwise follow ``target_a``. Returns ``(log q, nA, nB, complete)``.

    The odds are multiplied in probability space (logs only outside ``[1e-150, 1e150]``). A
    merge stops as soon as ``base + log q`` falls below ``log u`` (every term of ``log q`` is
    ``<= 0``): ``complete`` false, ``log q`` and the counts partial.
    """
    _add(y, i, ca, 1.0, offsets)
    _add(y, j, cb, 1.0, offsets)
    na += 1.0
    nb += 1.0
    p = y.shape[1]
    logq = 0.0
    for t in range(order.shape[0]):
        r = order[t]
        ratio = na / nb
        log_acc = 0.0
        for jj in range(p):
            row = offsets[jj] + y[r, jj]
            ratio *= (a + ca[row]) * (d[jj] * a + nb) / ((a + cb[row]) * (d[jj] * a + na))
            if ratio > 1e150 or ratio < 1e-150:
                log_acc += math.log(ratio)
                ratio = 1.0
        lo = log_acc + math.log(ratio)  # log odds of A
        # log P(A) = −log(1 + e^{−lo}), log P(B) = −log(1 + e^{lo}), without overflow
        if lo > 0:
            log_pa = -math.log1p(math.exp(-lo))
            log_pb = -lo + log_pa
        else:
            log_pb = -math.log1p(math.exp(lo))
            log_pa = lo + log_pb
        if split:
            to_a = rng.random() < math.exp(log_pa)
            target_a[t] = to_a
        else:
            to_a = target_a[t]
        if to_a:
            logq += log_pa
            _add(y, r, ca, 1.0, offsets)
            na += 1.0
        else:
            logq += log_pb
            _add(y, r, cb, 1.0, offsets)
            nb += 1.0
        if base + logq < log_u:
            return logq, na, nb, False
    return logq, na, nb, True


@njit(cache=True)
def _members(z, ki, kj, i, j, members):  # pragma: no cover - numba
    """The records of classes ``ki`` and ``kj`` other than ``i`` and ``j``, in record order,
    into ``members``; returns their number."""
    m = 0
    for r in range(z.shape[0]):
        if (z[r] == ki or z[r] == kj) and r != i and r != j:
            members[m] = r
            m += 1
    return m


@njit(cache=True)
def _shuffle(order, u):  # pragma: no cover - numba
    """Fisher–Yates shuffle of ``order`` with the uniforms ``u`` (``len(order) - 1`` of them,
    in the order a shuffle drawing them one at a time would use them)."""
    m = order.shape[0]
    for t in range(m - 1, 0, -1):
        s = int(u[m - 1 - t] * (t + 1))
        tmp = order[t]
        order[t] = order[s]
        order[s] = tmp


@njit(cache=True)
def _set_column(c, k, v):  # pragma: no cover - numba
    """``c[:, k] = v``. Element by element: an array assigned to a slice makes numba compile
    its shape-mismatch error message (string formatting, ≈ 2 s of a first compile)."""
    for row in range(c.shape[0]):
        c[row, k] = v[row]


@njit(cache=True)
def _fixed_part(y, z, c, nk, real, k, offsets, out):  # pragma: no cover - numba
    """Level counts of class ``k`` not held by ``y`` into ``out``; returns their number."""
    nf = nk[k] - real[k]
    for row in range(out.shape[0]):  # element by element: see _set_column
        out[row] = c[row, k] if nf > 0 else 0.0
    if nf > 0:
        for r in range(y.shape[0]):
            if z[r] == k:
                _add(y, r, out, -1.0, offsets)
    return float(nf)


@njit(cache=True)
def _merge(y, z, c, nk, real, d, offsets, alpha, a, i, j, ki, kj, m, u, members, u_shuffle,
           target_a, ca, cb, cm, rng):  # pragma: no cover - numba
    """The merge of class ``kj`` into ``ki`` proposed by records ``i, j`` (``split_merge``), with
    the ``m − 1`` shuffle uniforms and the acceptance uniform ``u`` drawn; updates the state
    if accepted and returns 1, else 0."""
    K = nk.shape[0]
    L = c.shape[0]
    if nk[kj] != real[kj]:
        return 0  # fixed counts in kj: the label would not become empty
    first_empty = K
    for k in range(K):
        if nk[k] == 0:
            first_empty = k
            break
    if kj > first_empty:
        return 0  # the reverse split would start its class at another label
    # log r = base + log q (the same operations, in the same order, as one expression)
    lm_old = (_log_marg_vec(c[:, ki], float(nk[ki]), d, offsets, a)
              + _log_marg_vec(c[:, kj], float(nk[kj]), d, offsets, a))
    for row in range(L):
        cm[row] = c[row, ki] + c[row, kj]
    nm = nk[ki] + nk[kj]
    lm_new = _log_marg_vec(cm, float(nm), d, offsets, a)
    lo, hi = min(ki, kj), max(ki, kj)
    lp_old = _log_prior_span(nk, alpha, lo, hi)
    nk_ki, nk_kj = nk[ki], nk[kj]
    nk[ki] = nm
    nk[kj] = 0
    base = _log_prior_span(nk, alpha, lo, hi) - lp_old + lm_new - lm_old
    nk[ki] = nk_ki
    nk[kj] = nk_kj
    log_u = math.log(1.0 - u)
    if base < log_u:
        return 0  # log q ≤ 0: rejected whatever the allocation gives
    order = members[:_members(z, ki, kj, i, j, members)]
    _shuffle(order, u_shuffle)
    nfa = _fixed_part(y, z, c, nk, real, ki, offsets, ca)
    cb[:] = 0.0
    for t in range(m):
        target_a[t] = z[order[t]] == ki
    logq, na, nb, complete = _allocate(y, order, i, j, ca, cb, nfa, 0.0, d, offsets, a, False,
                                       rng, target_a, base, log_u)
    if not (complete and log_u < base + logq):
        return 0
    nk[ki] = nm
    nk[kj] = 0
    _set_column(c, ki, cm)
    c[:, kj] = 0.0
    for r in range(z.shape[0]):
        if z[r] == kj:
            z[r] = ki
    real[ki] += real[kj]
    real[kj] = 0
    return 1


@njit(cache=True)
def split_merge(y, z, c, nk, d, offsets, alpha, a, n_moves, rng):  # pragma: no cover - numba
    """``n_moves`` sequentially allocated merge–split moves on ``p(z | α, y)`` (module docstring).

    Updates ``z [n]``, the level counts ``c [L, K]`` and sizes ``nk [K]`` (plus any fixed
    counts) in place; returns the number of accepted moves.

    Each move draws the pair, the shuffle's uniforms and the acceptance uniform whatever
    happens next; a merge is rejected as soon as that is certain (``q <= 1``).
    """
    n = y.shape[0]
    K = nk.shape[0]
    L = c.shape[0]
    accepted = 0
    if n < 2 or K < 2:
        return accepted
    real = np.zeros(K, dtype=np.int64)  # records of y per class (the rest of nk is fixed)
    total = 0
    for k in range(K):
        total += nk[k]
    if total == n:  # no fixed counts (they are never negative): real = nk, no pass over z
        for k in range(K):
            real[k] = nk[k]
    else:
        for r in range(n):
            real[z[r]] += 1
    members = np.empty(n, dtype=np.int64)
    u_shuffle = np.empty(n, dtype=np.float64)
    target_a = np.zeros(n, dtype=np.bool_)
    ca = np.empty(L)
    cb = np.empty(L)
    cm = np.empty(L)
    for _ in range(n_moves):
        i = int(rng.random() * n)
        j = int(rng.random() * (n - 1))
        if j >= i:
            j += 1
        ki = z[i]
        kj = z[j]
        # the other records of the two classes are shuffled uniformly (Fisher–Yates): their
        # uniforms are drawn here, the records gathered only when the move needs their order
        m = real[ki] - 2 if ki == kj else real[ki] + real[kj] - 2
        for t in range(m - 1):
            u_shuffle[t] = rng.random()
        u = rng.random()
        if ki == kj:  # split: j starts a class at the first empty label
            e = -1
            for k in range(K):
                if nk[k] == 0:
                    e = k
                    break
            if e < 0:
                continue
            order = members[:_members(z, ki, kj, i, j, members)]
            _shuffle(order, u_shuffle)
            nfa = _fixed_part(y, z, c, nk, real, ki, offsets, ca)
            cb[:] = 0.0
            logq, na, nb, _ = _allocate(y, order, i, j, ca, cb, nfa, 0.0, d, offsets, a, True,
                                        rng, target_a, -math.inf, -math.inf)
            lm_old = _log_marg_vec(c[:, ki], float(nk[ki]), d, offsets, a)
            lm_new = _log_marg_vec(ca, na, d, offsets, a) + _log_marg_vec(cb, nb, d, offsets, a)
            lo, hi = min(ki, e), max(ki, e)
            lp_old = _log_prior_span(nk, alpha, lo, hi)
            nk_ki = nk[ki]
            nk[ki] = int(na)
            nk[e] = int(nb)
            log_r = _log_prior_span(nk, alpha, lo, hi) - lp_old + lm_new - lm_old - logq
            if math.log(1.0 - u) < log_r:
                accepted += 1
                _set_column(c, ki, ca)
                _set_column(c, e, cb)
                z[j] = e
                for t in range(m):
                    if not target_a[t]:
                        z[order[t]] = e
                real[e] = int(nb)
                real[ki] -= real[e]
            else:
                nk[ki] = nk_ki
                nk[e] = 0
        else:  # merge: every record of kj moves to ki
            accepted += _merge(y, z, c, nk, real, d, offsets, alpha, a, i, j, ki, kj, m, u,
                               members, u_shuffle, target_a, ca, cb, cm, rng)
    return accepted
