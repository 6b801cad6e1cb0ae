"""Numba kernels of the DPMPM (Hu & Savitsky 2018): class step, counts, record and neighbourhood
log-likelihoods.

Layout: ``codes[n, p]`` level codes (``-1``: missing); ``offsets[p]`` the start row of column
``j`` in the stacked level axis ``L = Σ d_j``; ``logphi[L, K]`` or ``[H, L, K]`` (component axis
last, contiguous); ``log_pi[K]`` or ``[H, K]``. Uniforms are drawn by the caller and passed in.
"""

from __future__ import annotations

import math
import os
import types

import numpy as np

# Numba's OpenMP/TBB layers abort in PyMC chains forked after a parallel region ran in the parent
# (platform fact, issue 4); the workqueue layer does not. A user's explicit choice is respected.
os.environ.setdefault("NUMBA_THREADING_LAYER", "workqueue")

from numba import config as _numba_config  # noqa: E402
from numba import njit, prange  # noqa: E402

if "NUMBA_THREADING_LAYER" in os.environ:
    _numba_config.THREADING_LAYER = os.environ["NUMBA_THREADING_LAYER"]

__all__ = [
    "class_step_cuts",
    "class_step_finish",
    "class_step_plan",
    "class_step_serial",
    "class_step_setup",
    "counts",
    "lse_two",
    "lse_two_sum",
    "neighbourhood",
    "normalise_levels",
    "sorted_patterns",
]


@njit(cache=True, inline="always")
def _times_levels(w, codes, i, use, offsets, phi_h):  # pragma: no cover - numba
    """``w[k] *= Π_{j ∈ use, observed} φ_kj[codes[i, j]]`` (probability space, one draw)."""
    for j in range(codes.shape[1]):
        if use[j]:
            c = codes[i, j]
            if c >= 0:
                row = offsets[j] + c
                for k in range(w.shape[0]):
                    w[k] *= phi_h[row, k]


def sorted_patterns(codes: np.ndarray) -> np.ndarray:
    """Records in lexicographic order of their codes (``-1`` included): the class step's
    visiting order, in which records of the same observed pattern are adjacent."""
    return np.lexsort(codes.T[::-1]).astype(np.int64)


# columns multiplied together in one row of the class step's product table (four: the fewest
# multiplications a pattern at n = 10⁴–10⁵ of NYexample; the table holds used combinations only)
_GROUP = 4
# records of a pattern from which its level counts are added once per (pattern, class)
_HIST_MIN = 3
# patterns of a block: the log-likelihood is summed per block, blocks in order, so that it does
# not depend on how many parts or threads the step runs in
_BLOCK = 64
#: the class axis padded to whole AVX-512 vectors of doubles (padding: π = 0, φ = 1)
_KPAD = 8


def class_step_plan(codes: np.ndarray, d: np.ndarray,
                    offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """What the class step shares between records, fixed for a table (``codes`` in the sweep's
    order of records): ``(pat, rows, combos)``.

    ``pat[q]`` is where the ``q``-th run of equal rows (a pattern) starts (``pat[-1] = n``).
    The columns are grouped ``_GROUP`` at a time (the most levels with the fewest); ``combos``
    lists the level rows (``offsets[j] + code``, ``-1`` where missing) of each group's
    combinations that some pattern has, and ``rows[q, g]`` is pattern ``q``'s combination of
    group ``g``: a pattern's class weights are ``π`` times ``len(groups)`` rows of products.
    """
    n, p = codes.shape
    starts = np.flatnonzero(np.r_[True, (codes[1:] != codes[:-1]).any(axis=1)])[: max(n, 0)]
    pat = np.r_[starts, n].astype(np.int64)
    first = codes[starts]
    order = [int(j) for j in np.argsort(d, kind="stable")]
    groups = []
    while order:
        g = [order.pop()]
        while len(g) < _GROUP and order:
            g.append(order.pop(0))
        groups.append(g)
    rows = np.empty((len(starts), len(groups)), dtype=np.int64)
    combos = []
    for gi, g in enumerate(groups):
        uniq, inv = np.unique(first[:, g], axis=0, return_inverse=True)
        rows[:, gi] = len(combos) + inv.reshape(-1)
        level = np.where(uniq >= 0, uniq + offsets[g], -1)
        combos.extend(np.pad(level, ((0, 0), (0, _GROUP - len(g))), constant_values=-1))
    return pat, rows, np.array(combos, dtype=np.int64).reshape(-1, _GROUP)


@njit(cache=True, inline="always")
def _impute(r, zi, offsets, d, cdf, miss_ptr, miss_j, u_y, y, cnt):  # pragma: no cover - numba
    """Record ``r``'s missing entries drawn from ``φ_{zi j}`` (``cdf[k, row]``: the cumulative
    probabilities of column ``j``'s levels), each added to the level counts ``cnt``."""
    for m in range(miss_ptr[r], miss_ptr[r + 1]):
        j = miss_j[m]
        base = offsets[j]
        u = u_y[m]
        c_new = 0  # the first level whose cumulative probability reaches u (the last at most)
        for c in range(d[j] - 1):
            c_new += cdf[zi, base + c] < u
        y[r, j] = c_new
        cnt[base + c_new, zi] += 1.0


@njit(cache=True, inline="always")
def _drawn_class(w, cum, t, K):  # pragma: no cover - numba
    """The first class of positive weight whose cumulative weight ``cum`` reaches ``t``
    (counted, not searched: no branch a class), else the last class of positive weight."""
    zi = 0
    for k in range(K):
        zi += cum[k] < t
    while zi < K and not w[zi] > 0.0:  # t = 0
        zi += 1
    if zi >= K:  # t rounded beyond the total
        zi = K - 1
        while zi > 0 and not w[zi] > 0.0:
            zi -= 1
    return zi


@njit(cache=True, inline="always")
def _scanned_class(w, t, K):  # pragma: no cover - numba
    """The first class of positive weight whose cumulative weight reaches ``t``, summing only as
    far as it (one record of a pattern), else the last class of positive weight."""
    acc = 0.0
    for k in range(K):
        acc += w[k]
        if acc >= t and w[k] > 0.0:
            return k
    zi = K - 1
    while zi > 0 and not w[zi] > 0.0:
        zi -= 1
    return zi


# The flags of every class-step kernel: the same floating-point operations whichever runs them
_CLASS_FLAGS = {"reassoc", "contract", "arcp", "nsz"}


# not inlined (compiled once for _class_step, its serial twin and step's two threads); nogil
@njit(cache=True, nogil=True, fastmath=_CLASS_FLAGS)
def _class_step_part(  # pragma: no cover - numba
    codes, pat, rows, offsets, d, logphi, pi, tab, cdf, log_pi, u_z, miss_ptr, miss_j, u_y, y, z,
    blo, bhi, ll, nk, cnt, cnt_g
):
    """:func:`_class_step` of the patterns of blocks ``blo..bhi-1`` (``pi, tab, cdf``:
    :func:`class_step_setup`): writes their records' ``z`` and imputations and each block's
    log-likelihood ``ll[b]``, adds their class sizes to ``nk``, the imputed entries' level
    counts to ``cnt[L, K]`` and the observed ones to ``cnt_g[combination, K]``."""
    p = codes.shape[1]
    K = log_pi.shape[0]
    Kp = tab.shape[1]
    G = rows.shape[1]
    npat = pat.shape[0] - 1
    w = np.empty(Kp)
    cum = np.empty(Kp)
    hist = np.zeros(Kp)
    for b in range(blo, bhi):
        total = 0.0
        prod = 1.0  # the product of the singletons' probabilities since the last log
        for q in range(b * _BLOCK, min(npat, (b + 1) * _BLOCK)):
            lo = pat[q]
            hi = pat[q + 1]
            m = hi - lo
            for k in range(Kp):
                w[k] = pi[k]
            for g in range(G):
                row = rows[q, g]
                for k in range(Kp):
                    w[k] *= tab[row, k]
            s = 0.0
            for k in range(Kp):
                s += w[k]
            if s > 1e-280 and s < 1e280:
                if m == 1 and s > 1e-40:  # s <= 1: one log per few patterns, prod > 1e-290
                    prod *= s
                    if prod < 1e-250:
                        total += math.log(prod)
                        prod = 1.0
                else:
                    total += m * math.log(s)
            else:  # underflow: log space
                for k in range(K):
                    w[k] = log_pi[k]
                for j in range(p):
                    c = codes[lo, j]
                    if c >= 0:
                        row = offsets[j] + c
                        for k in range(K):
                            w[k] += logphi[row, k]
                mx = -np.inf
                for k in range(K):
                    if w[k] > mx:
                        mx = w[k]
                s = 0.0
                for k in range(K):
                    w[k] = math.exp(w[k] - mx)
                    s += w[k]
                total += m * (mx + math.log(s))
            acc = 0.0
            if m > 1:  # the cumulative weights, shared by the pattern's records
                for k in range(K):
                    acc += w[k]
                    cum[k] = acc
            for r in range(lo, hi):
                if m == 1:  # the cumulative weights as far as the record's class
                    zi = _scanned_class(w, u_z[r] * s, K)
                else:
                    zi = _drawn_class(w, cum, u_z[r] * acc, K)
                z[r] = zi
                if m >= _HIST_MIN:  # the pattern's classes counted, their levels added below
                    hist[zi] += 1.0
                else:
                    nk[zi] += 1
                    for g in range(G):
                        cnt_g[rows[q, g], zi] += 1.0
                _impute(r, zi, offsets, d, cdf, miss_ptr, miss_j, u_y, y, cnt)
            if m >= _HIST_MIN:
                for g in range(G):
                    row = rows[q, g]
                    for k in range(K):
                        cnt_g[row, k] += hist[k]
                for k in range(K):
                    nk[k] += int(hist[k])
                    hist[k] = 0.0
        ll[b] = total + math.log(prod)


# The set-up and finish of the class step: called by _class_step and its serial twin, and by
# models.dpmpm.step around parts run on its own threads (compiled once, not inlined)
@njit(cache=True, nogil=True, fastmath=_CLASS_FLAGS)
def class_step_setup(phi, log_pi, offsets, combos):  # pragma: no cover - numba
    """``π`` and the product table (classes padded to ``_KPAD``), and φ's cumulative
    probabilities by class (``[K, L]``: the imputations read one class's levels)."""
    L, K = phi.shape
    Kp = ((K + _KPAD - 1) // _KPAD) * _KPAD
    p = offsets.shape[0]
    pi = np.zeros(Kp)
    for k in range(K):
        pi[k] = math.exp(log_pi[k])
    R, width = combos.shape
    tab = np.ones((R, Kp))
    for r in range(R):
        for g in range(width):
            row = combos[r, g]
            if row >= 0:
                for k in range(K):
                    tab[r, k] *= phi[row, k]
    cdf = np.empty((K, L))
    for j in range(p):
        a = offsets[j]
        b = offsets[j + 1] if j + 1 < p else L
        for k in range(K):
            acc = 0.0
            for row in range(a, b):
                acc += phi[row, k]
                cdf[k, row] = acc
    return pi, tab, cdf


@njit(cache=True, nogil=True, fastmath=_CLASS_FLAGS)
def class_step_finish(ll, nks, cs, cgs, combos):  # pragma: no cover - numba
    """``(log-likelihood, n_k, c)`` of :func:`_class_step` from the parts' outputs: the blocks'
    log-likelihoods summed in order, the parts' class sizes and level counts added up
    (integer-valued: exact in any order), the combinations' counts spread over their levels."""
    nparts, L, K = cs.shape
    total = 0.0
    for b in range(ll.shape[0]):
        total += ll[b]
    nk_all = np.zeros(K, dtype=np.int64)
    c_all = np.zeros((L, K))
    for ch in range(nparts):
        for k in range(K):
            nk_all[k] += nks[ch, k]
        for row in range(L):
            for k in range(K):
                c_all[row, k] += cs[ch, row, k]
        for r in range(combos.shape[0]):
            for g in range(combos.shape[1]):
                row = combos[r, g]
                if row >= 0:
                    for k in range(K):
                        c_all[row, k] += cgs[ch, r, k]
    return total, nk_all, c_all


@njit(cache=True)
def class_step_cuts(pat, nparts):  # pragma: no cover - numba
    """Block boundaries splitting the class step into ``nparts`` parts of about equal numbers
    of records (``nparts + 1`` values from 0 to the number of blocks)."""
    npat = pat.shape[0] - 1
    n = pat[npat]
    nblocks = (npat + _BLOCK - 1) // _BLOCK
    cuts = np.empty(nparts + 1, dtype=np.int64)
    cuts[0] = 0
    q = 0
    for i in range(1, nparts):
        while pat[q] < (i * n) // nparts:  # the first pattern starting at or after the share
            q += 1
        cuts[i] = max(cuts[i - 1], min(nblocks, (q + _BLOCK // 2) // _BLOCK))
    cuts[nparts] = nblocks
    return cuts


@njit(cache=True, parallel=True, fastmath=_CLASS_FLAGS)
def _class_step(  # pragma: no cover - numba
    codes, pat, rows, combos, offsets, d, logphi, phi, log_pi, u_z, miss_ptr, miss_j, u_y, y, z,
    nchunks
):
    """One Gibbs update of the classes and missing values given Θ (the DPMPM class step).

    Writes ``z`` and the imputed entries of ``y``; returns the observed-data log-likelihood,
    ``n_k`` and ``c[L, K]`` of the new ``(z, y)``. Records in the visiting order, equal rows
    adjacent (``pat, rows, combos``: :func:`class_step_plan`): each pattern's class weights are
    computed once, from a table of the products of φ over groups of columns; the results depend
    neither on ``nchunks`` nor on the threads.
    """
    K = log_pi.shape[0]
    L = phi.shape[0]
    pi, tab, cdf = class_step_setup(phi, log_pi, offsets, combos)
    npat = pat.shape[0] - 1
    ll = np.empty((npat + _BLOCK - 1) // _BLOCK)
    cuts = class_step_cuts(pat, nchunks)
    nks = np.zeros((nchunks, K), dtype=np.int64)
    cs = np.zeros((nchunks, L, K))
    cgs = np.zeros((nchunks, combos.shape[0], K))
    for ch in prange(nchunks):
        _class_step_part(codes, pat, rows, offsets, d, logphi, pi, tab, cdf, log_pi, u_z,
                         miss_ptr, miss_j, u_y, y, z, cuts[ch], cuts[ch + 1], ll, nks[ch],
                         cs[ch], cgs[ch])
    return class_step_finish(ll, nks, cs, cgs, combos)


def _serial_twin(kernel, name: str):
    """``kernel`` compiled without threads under its own name (numba's cache key): same code,
    same floating-point operations."""
    f = kernel.py_func
    twin = types.FunctionType(f.__code__, f.__globals__, name, f.__defaults__, f.__closure__)
    twin.__qualname__ = name
    # nogil: while a one-chain fit runs it, ``bayes-risk fit`` imports its output stack on the
    # other core (models._bayesian.gibbs, bayes_risk._lazy.Background)
    return njit(cache=True, nogil=True,
                fastmath=kernel.targetoptions.get("fastmath", False))(twin)


#: :func:`_class_step` without threads (a parallel region costs ≈ 1 ms)
class_step_serial = _serial_twin(_class_step, "class_step_serial")


@njit(cache=True)
def normalise_levels(g, offsets, floor):  # pragma: no cover - numba
    """φ from the Gamma variates ``g[L, K]``: bitwise numpy's ``maximum(g[a:b] / where(tot > 0,
    tot, 1.0), floor)`` per column (no fastmath: the additions keep their order)."""
    L, K = g.shape
    p = offsets.shape[0]
    phi = np.empty((L, K))
    tot = np.empty(K)
    for j in range(p):
        a = offsets[j]
        b = offsets[j + 1] if j + 1 < p else L
        for k in range(K):
            tot[k] = g[a, k]
        for row in range(a + 1, b):
            for k in range(K):
                tot[k] += g[row, k]
        for k in range(K):
            if not tot[k] > 0.0:
                tot[k] = 1.0
        for row in range(a, b):
            for k in range(K):
                v = g[row, k] / tot[k]
                phi[row, k] = floor if v < floor else v  # NaN stays NaN, as np.maximum
    return phi


@njit(cache=True)
def counts(y, z, offsets, L, K):  # pragma: no cover - numba
    """Class sizes ``n_k`` and level counts ``c[offsets[j]+c, k] = #{i: z_i=k, y_ij=c}``."""
    n, p = y.shape
    nk = np.zeros(K, dtype=np.int64)
    c = np.zeros((L, K), dtype=np.float64)
    for i in range(n):
        k = z[i]
        nk[k] += 1
        for j in range(p):
            c[offsets[j] + y[i, j], k] += 1.0
    return nk, c


@njit(cache=True)
def _lse_row(a_codes, a_use, b_codes, b_use, offsets, logphi_h, log_pi_h, i, w):  # pragma: no cover
    K = log_pi_h.shape[0]
    p = a_codes.shape[1]
    for k in range(K):
        w[k] = log_pi_h[k]
    for j in range(p):
        if a_use[j]:
            c = a_codes[i, j]
            if c >= 0:
                row = offsets[j] + c
                for k in range(K):
                    w[k] += logphi_h[row, k]
        if b_use[j]:
            c = b_codes[i, j]
            if c >= 0:
                row = offsets[j] + c
                for k in range(K):
                    w[k] += logphi_h[row, k]
    return _lse_vec(w[:K])


@njit(cache=True)
def lse_two(a_codes, a_use, b_codes, b_use, offsets, logphi, log_pi):  # pragma: no cover - numba
    """``out[h, i] = logsumexp_k(log π_hk + Σ_{j∈A} log φ_hkj[a_ij]
    + Σ_{j∈B} log φ_hkj[b_ij])``.

    ``a_use``/``b_use`` are boolean column masks; code ``-1`` skips an entry (marginalised).
    """
    H = log_pi.shape[0]
    n = a_codes.shape[0]
    K = log_pi.shape[1]
    out = np.empty((H, n))
    w = np.empty(K)
    for h in range(H):
        for i in range(n):
            out[h, i] = _lse_row(
                a_codes, a_use, b_codes, b_use, offsets, logphi[h], log_pi[h], i, w
            )
    return out



@njit(cache=True, parallel=True, fastmath={"reassoc", "contract", "arcp", "nsz"})
def lse_two_sum(
    a_codes, a_use, b_codes, b_use, offsets, logphi, log_pi, rows, phi
):  # pragma: no cover - numba
    """``Σ_{i ∈ rows}`` of :func:`lse_two` for every draw (``[H]``), in probability space (a record
    whose sum leaves ``(1e-280, 1e280)`` in log space); thread-independent values."""
    H = log_pi.shape[0]
    K = log_pi.shape[1]
    # the products run over classes padded as in neighbourhood (whole vectors; each class's
    # product is the same); the sum stays over the K real classes (the same loop, same order)
    Kp = ((K + _KPAD - 1) // _KPAD) * _KPAD
    out = np.zeros(H)
    for h in prange(H):
        w = np.empty(Kp)
        pi = np.zeros(Kp)
        ph = np.ones((phi.shape[1], Kp))
        ph[:, :K] = phi[h]
        for k in range(K):
            pi[k] = math.exp(log_pi[h, k])
        acc = 0.0
        for r in range(rows.shape[0]):
            i = rows[r]
            for k in range(Kp):
                w[k] = pi[k]
            _times_levels(w, a_codes, i, a_use, offsets, ph)
            _times_levels(w, b_codes, i, b_use, offsets, ph)
            s = 0.0
            for k in range(K):
                s += w[k]
            if s > 1e-280 and s < 1e280:
                acc += math.log(s)
            else:  # underflow (or a zero probability): exact log space
                acc += _lse_row(a_codes, a_use, b_codes, b_use, offsets, logphi[h], log_pi[h], i, w)
        out[h] = acc
    return out


# nogil: the attribute engine fits k̂ on other threads meanwhile (attribute.strategies)
@njit(cache=True, parallel=True, nogil=True, fastmath={"reassoc", "contract", "arcp", "nsz"})
def neighbourhood(codes, syn_cols, d, offsets, logphi, phi, log_pi, out):  # pragma: no cover
    """``out[h, i, g] = log p(y*_g | Θ_h)`` over the one-variable-different set.

    Candidates: truth first, then for each column in ``syn_cols`` its other levels ascending.
    A candidate changing column ``j`` from ``a`` to ``c`` has probability ``Σ_k (e_k / φ_kj[a])
    φ_kj[c]``, ``e_k = π_k Π_j φ_kj[y_ij]``; a (record, draw) with some ``e_k < 1e-290`` or
    ``φ_kj[a] = 0`` is computed in log space. Returns ``logged[H, n]``: where false,
    ``out[h, i, :]`` holds **probabilities** (the caller takes their log).
    """
    H = log_pi.shape[0]
    K = log_pi.shape[1]
    n, p = codes.shape
    ns = syn_cols.shape[0]
    logged = np.zeros((H, n), dtype=np.bool_)
    L = phi.shape[1]
    Kp = ((K + _KPAD - 1) // _KPAD) * _KPAD
    for h in prange(H):  # draws are independent: parallel over draws, one buffer set each
        t = np.empty(K)
        e = np.empty(Kp)
        r = np.empty(Kp)
        # the draw's π and φ padded with classes of probability 0 (π = 0, φ = 1): their terms
        # are exact zeros in every sum, so only the vectorised loops' shape changes
        pi = np.zeros(Kp)
        iph = np.ones((L, Kp))
        ph = np.ones((L, Kp))
        lp = logphi[h]
        for k in range(K):
            pi[k] = math.exp(log_pi[h, k])
        for row in range(L):
            for k in range(K):
                v = phi[h, row, k]
                ph[row, k] = v
                iph[row, k] = 1.0 / v if v > 0.0 else np.inf
        for i in range(n):
            for k in range(Kp):
                e[k] = pi[k]
            for j in range(p):
                row = offsets[j] + codes[i, j]
                for k in range(Kp):
                    e[k] *= ph[row, k]
            s = 0.0
            emin = np.inf
            for k in range(Kp):
                s += e[k]
            for k in range(K):  # the real classes only (the padding's terms are 0)
                if e[k] < emin:
                    emin = e[k]
            if emin > 1e-290 and s < 1e290:
                out[h, i, 0] = s
                g = 1
                for jj in range(ns):
                    j = syn_cols[jj]
                    a_row = offsets[j] + codes[i, j]
                    for k in range(Kp):
                        r[k] = e[k] * iph[a_row, k]
                    for c in range(d[j]):
                        if c == codes[i, j]:
                            continue
                        c_row = offsets[j] + c
                        acc = 0.0
                        for k in range(Kp):
                            acc += r[k] * ph[c_row, k]
                        out[h, i, g] = acc
                        g += 1
                continue
            # exact log-space evaluation of every candidate
            logged[h, i] = True
            for k in range(K):
                t[k] = log_pi[h, k]
            for j in range(p):
                row = offsets[j] + codes[i, j]
                for k in range(K):
                    t[k] += lp[row, k]
            out[h, i, 0] = _lse_vec(t)
            g = 1
            for jj in range(ns):
                j = syn_cols[jj]
                a_row = offsets[j] + codes[i, j]
                for c in range(d[j]):
                    if c == codes[i, j]:
                        continue
                    c_row = offsets[j] + c
                    for k in range(K):
                        if lp[a_row, k] == -np.inf:
                            # recompute the class term without column j
                            tk = log_pi[h, k]
                            for j2 in range(p):
                                if j2 != j:
                                    tk += lp[offsets[j2] + codes[i, j2], k]
                            r[k] = tk + lp[c_row, k]
                        else:
                            r[k] = t[k] - lp[a_row, k] + lp[c_row, k]
                    out[h, i, g] = _lse_vec(r[:K])
                    g += 1
    return logged


@njit(cache=True)
def _lse_vec(a):  # pragma: no cover - numba
    mx = -np.inf
    for k in range(a.shape[0]):
        if a[k] > mx:
            mx = a[k]
    if mx == -np.inf:
        return -np.inf
    s = 0.0
    for k in range(a.shape[0]):
        s += math.exp(a[k] - mx)
    return mx + math.log(s)
