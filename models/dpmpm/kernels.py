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
    "class_step_finish",
    "class_step_serial",
    "class_step_setup",
    "counts",
    "lse_two",
    "lse_two_sum",
    "neighbourhood",
    "normalise_levels",
    "shared_prefix",
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


def sorted_patterns(codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Records in lexicographic order of their codes (``-1`` included) and, for each record in
    that order, the number of leading columns it shares with the one before (``p``: the same
    observed pattern): :func:`_class_step`'s visiting order."""
    n, p = codes.shape
    order = np.lexsort(codes.T[::-1]).astype(np.int64)
    return order, shared_prefix(codes[order])


def shared_prefix(codes: np.ndarray) -> np.ndarray:
    """Number of leading columns each record shares with the record before (0 for the first)."""
    n, p = codes.shape
    lcp = np.zeros(n, dtype=np.int64)
    if n > 1:
        eq = codes[1:] == codes[:-1]
        lcp[1:] = np.where(eq.all(axis=1), p, np.argmin(eq, axis=1))
    return lcp


@njit(cache=True, inline="always")
def _prefix_products(codes, r, depth, offsets, phi, pre, at, w):  # pragma: no cover - numba
    """Class weights ``w[k] = π_k Π_j φ_kj[codes[r, j]]`` (observed columns) of record ``r``,
    from ``pre`` (partial products, ``pre[0] = π``; ``at[j]``: the row holding the product over
    the columns before ``j``), valid up to column ``depth``; updates ``pre`` and ``at``."""
    p = codes.shape[1]
    K = w.shape[0]
    at[0] = 0
    for j in range(depth, p):
        src = pre[at[j]]
        c = codes[r, j]
        if j < p - 1:
            if c >= 0:
                ph = phi[offsets[j] + c]
                dst = pre[j + 1]
                for k in range(K):
                    dst[k] = src[k] * ph[k]
                at[j + 1] = j + 1
            else:
                at[j + 1] = at[j]
        else:
            for k in range(K):
                w[k] = src[k]
            if c >= 0:
                ph = phi[offsets[j] + c]
                for k in range(K):
                    w[k] *= ph[k]


@njit(cache=True, inline="always")
def _impute_and_count(r, zi, offsets, phi_t, miss_ptr, miss_j, u_y, y, nk, cnt):  # pragma: no cover
    """Record ``r``'s missing entries drawn from ``φ_{zi j}`` (``phi_t[k, row]``), then its
    class and levels added to the counts ``nk``, ``cnt[L, K]``."""
    p = y.shape[1]
    L = phi_t.shape[1]
    for m in range(miss_ptr[r], miss_ptr[r + 1]):
        j = miss_j[m]
        base = offsets[j]
        d = (offsets[j + 1] if j + 1 < p else L) - base
        acc = 0.0
        c_new = d - 1
        for c in range(d):
            acc += phi_t[zi, base + c]
            if acc >= u_y[m]:
                c_new = c
                break
        y[r, j] = c_new
    nk[zi] += 1
    for j in range(p):
        cnt[offsets[j] + y[r, j], zi] += 1.0


# The flags of every class-step kernel: the same floating-point operations whichever runs them
_CLASS_FLAGS = {"reassoc", "contract", "arcp", "nsz"}


# not inlined (compiled once for _class_step, its serial twin and step's two threads); nogil
@njit(cache=True, nogil=True, fastmath=_CLASS_FLAGS)
def _class_step_part(  # pragma: no cover - numba
    codes, lcp, rec, offsets, logphi, phi, pi, phi_t, log_pi, u_z, miss_ptr, miss_j, u_y, y, z,
    lo, hi, ll, nk, cnt
):
    """:func:`_class_step` of the records ``lo..hi-1`` of the visiting order (``pi, phi_t``:
    :func:`class_step_setup`): writes their ``z``, imputations and ``ll[rec[r]]``, adds their
    class sizes to ``nk`` and their level counts to ``cnt``. The first record starts from no
    shared prefix."""
    p = codes.shape[1]
    K = log_pi.shape[0]
    w = np.empty(K)
    cum = np.empty(K)  # cum[k] = w[0] + ... + w[k], summed in order, for k < upto
    upto = 0
    pre = np.empty((p, K))  # pre[j + 1]: product over the observed columns <= j; pre[0] = π
    at = np.empty(p, dtype=np.int64)  # row of pre holding the product over columns < j
    for k in range(K):
        pre[0, k] = pi[k]
    s = 0.0
    lli = 0.0
    for r in range(lo, hi):
        depth = lcp[r] if r > lo else 0
        if depth < p:  # weights of a new pattern, from the shared prefix
            upto = 0
            _prefix_products(codes, r, depth, offsets, phi, pre, at, w)
            s = 0.0
            for k in range(K):
                s += w[k]
            if s > 1e-280 and s < 1e280:
                lli = math.log(s)
            else:  # underflow: log space
                for k in range(K):
                    w[k] = log_pi[k]
                for j in range(p):
                    c = codes[r, j]
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
                lli = mx + math.log(s)
        ll[rec[r]] = lli
        # the first class whose cumulative weight reaches t: the running sums of a pattern
        # are kept, so that records of the same pattern compare before adding further
        t = u_z[r] * s
        zi = -1
        for k in range(upto):
            if cum[k] >= t and w[k] > 0.0:
                zi = k
                break
        if zi < 0:
            zi = K - 1
            acc = cum[upto - 1] if upto > 0 else 0.0
            for k in range(upto, K):
                acc += w[k]
                cum[k] = acc
                upto = k + 1
                if acc >= t and w[k] > 0.0:
                    zi = k
                    break
        z[r] = zi
        _impute_and_count(r, zi, offsets, phi_t, miss_ptr, miss_j, u_y, y, nk, cnt)


@njit(cache=True, inline="always")
def _class_step_setup(phi, log_pi):  # pragma: no cover - numba
    """``π`` and ``φ`` by class (``[K, L]``: the imputations read one class's levels)."""
    K = log_pi.shape[0]
    L = phi.shape[0]
    pi = np.empty(K)
    for k in range(K):
        pi[k] = math.exp(log_pi[k])
    phi_t = np.empty((K, L))
    for row in range(L):
        for k in range(K):
            phi_t[k, row] = phi[row, k]
    return pi, phi_t


@njit(cache=True, inline="always")
def _class_step_finish(ll, nks, cs):  # pragma: no cover - numba
    """The log-likelihood summed in the data's order, and the parts' class sizes and level
    counts added up (integer-valued: exact in any order)."""
    n = ll.shape[0]
    nparts, L, K = cs.shape
    total = 0.0
    for i in range(n):
        total += ll[i]
    nk_all = np.zeros(K, dtype=np.int64)
    c_all = np.zeros((L, K))
    for ch in range(nparts):
        for k in range(K):
            nk_all[k] += nks[ch, k]
        for row in range(L):
            for k in range(K):
                c_all[row, k] += cs[ch, row, k]
    return total, nk_all, c_all


@njit(cache=True, parallel=True, fastmath=_CLASS_FLAGS)
def _class_step(  # pragma: no cover - numba
    codes, lcp, rec, offsets, logphi, phi, log_pi, u_z, miss_ptr, miss_j, u_y, y, z, nchunks
):
    """One Gibbs update of the classes and missing values given Θ (the DPMPM class step).

    Writes ``z`` and the imputed entries of ``y``; returns the observed-data log-likelihood,
    ``n_k`` and ``c[L, K]`` of the new ``(z, y)``. Records in the visiting order (``rec[r]``: the
    position in the data), sharing the partial products of leading columns; the results depend
    neither on the order nor on ``nchunks`` nor on the threads.
    """
    n = codes.shape[0]
    K = log_pi.shape[0]
    L = phi.shape[0]
    pi, phi_t = _class_step_setup(phi, log_pi)
    ll = np.empty(n)
    nks = np.zeros((nchunks, K), dtype=np.int64)
    cs = np.zeros((nchunks, L, K))
    size = (n + nchunks - 1) // nchunks
    for ch in prange(nchunks):
        _class_step_part(codes, lcp, rec, offsets, logphi, phi, pi, phi_t, log_pi, u_z, miss_ptr,
                        miss_j, u_y, y, z, ch * size, min(n, (ch + 1) * size), ll, nks[ch],
                        cs[ch])
    return _class_step_finish(ll, nks, cs)


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


# The set-up and finish of the class step split by the caller into parts run on its own threads
# (models.dpmpm.step), compiled with _class_step's flags.
@njit(cache=True, nogil=True, fastmath=_CLASS_FLAGS)
def class_step_setup(phi, log_pi):  # pragma: no cover - numba
    """``(π, φ by class)`` for :func:`_class_step_part`."""
    return _class_step_setup(phi, log_pi)


@njit(cache=True, nogil=True, fastmath=_CLASS_FLAGS)
def class_step_finish(ll, nks, cs):  # pragma: no cover - numba
    """``(log-likelihood, n_k, c)`` of :func:`_class_step` from the parts' outputs."""
    return _class_step_finish(ll, nks, cs)


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
    mx = -np.inf
    for k in range(K):
        if w[k] > mx:
            mx = w[k]
    if mx == -np.inf:
        return -np.inf
    s = 0.0
    for k in range(K):
        s += math.exp(w[k] - mx)
    return mx + math.log(s)


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


#: the class axis padded to a multiple of the AVX-512 width in doubles (K = 30: 20 % slower)
_KPAD = 8


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
