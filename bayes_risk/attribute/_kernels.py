"""Numba kernels of the attribute-risk engine: ratio pass and sums, Pareto k̂ tail selection."""

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

__all__ = ["get_num_threads", "khat_tails", "neg_outer", "ratio_pass", "ratio_sums"]


@njit(cache=True)
def _partition(a, lo, hi, pivot, strict):  # pragma: no cover - compiled
    """Move ``a[lo:hi]``'s values below ``pivot`` (``<=`` unless ``strict``) to the front; count."""
    s = lo
    for i in range(lo, hi):
        v = a[i]
        a[i] = a[s]
        a[s] = v
        s += (v < pivot) if strict else (v <= pivot)
    return s


@njit(cache=True)
def _select(a, k):  # pragma: no cover - compiled
    """Quickselect in place: ``a[k]`` the ``k``-th smallest, ``a[:k] <= a[k] <= a[k:]``."""
    lo = 0
    hi = a.shape[0]
    while hi - lo > 1:
        mid = (lo + hi - 1) // 2
        x, y, z = a[lo], a[mid], a[hi - 1]
        pivot = max(min(x, y), min(max(x, y), z))
        below = _partition(a, lo, hi, pivot, True)
        if k < below:
            hi = below
            continue
        # the values equal to the pivot next: k among them is done (and the range shrinks
        # even when every value equals the pivot)
        upto = _partition(a, below, hi, pivot, False)
        if k < upto:
            return
        lo = upto


@njit(cache=True)
def _top_sorted(v, n, k, out, small):  # pragma: no cover - compiled
    """Write the ``k`` largest of ``v[:n]`` (no ``nan``), ascending, into ``out[:k]``."""
    ns = min(n, 128)
    step = n // ns
    for a in range(ns):
        small[a] = v[a * step]
    # the sample's value with about 2k/n of the sample above it
    above = min(ns - 1, 2 * k * ns // n + 1)
    _select(small[:ns], ns - 1 - above)
    thr = small[ns - 1 - above]
    c = 0
    cap = small.shape[0]
    for a in range(n):
        if v[a] >= thr:
            if c < cap:
                small[c] = v[a]
            c += 1
    if k <= c <= cap:
        _select(small[:c], c - k)
        out[:k] = np.sort(small[c - k : c])
    else:
        _select(v[:n], n - k)
        out[:k] = np.sort(v[n - k : n])


@njit(cache=True, parallel=True)
def khat_tails(lr3, m):  # pragma: no cover - compiled
    """Largest ``m + 1`` shifted log ratios of every vector ``lr3[a, b, :]``, and ``bad``."""
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
        small = np.empty(max(4 * (m + 1), 256))
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
            _top_sorted(buf, s, m + 1, top[r], small)
    return top, bad


#: ``exp`` overflows above this: such shifted log ratios are written as ``-inf`` (ratio 0), the
#: convention of :class:`~bayes_risk.attribute.estimator.RatioStats` for non-finite ``E``
_EXP_MAX = 709.782712893384
#: draws per block of :func:`ratio_pass` (the transposed block ``[G, _HB]`` stays in L1)
_HB = 64


@njit(cache=True, parallel=True, nogil=True)
def ratio_pass(logp, g0, X, m_tail):  # pragma: no cover - compiled
    """Log ratios of ``logp[H, R, G]`` less their maxima into ``X``, and the Pareto tails."""
    H, R, G = logp.shape
    mx_out = np.empty((R, G))
    n_ok = np.zeros(R, dtype=np.int64)
    k = m_tail + 1
    top = np.zeros((R * G if m_tail > 0 else 0, k))
    bad = np.zeros(R * G if m_tail > 0 else 0, dtype=np.bool_)
    # the sample and threshold rule of _top_sorted
    ns = min(H, 128)
    step = H // ns
    above = min(ns - 1, 2 * k * ns // H + 1)
    cap = max(4 * k, 256)
    for r in prange(R):
        mx = np.full(G, -math.inf)
        hasnan = np.zeros(G, dtype=np.bool_)
        gt = g0[r]
        ok = 0
        # first pass: maxima only (the ratios are formed again, identically, when written),
        # and the strided sample of the ratios for the tails' thresholds
        tv = np.empty(H)
        samp = np.empty((G if m_tail > 0 else 0, ns))
        for h in range(H):
            t = logp[h, r, gt]
            tv[h] = t
            if math.isfinite(t):
                ok += 1
                for g in range(G):
                    v = logp[h, r, g] - t
                    if math.isnan(v):
                        hasnan[g] = True
                    elif v > mx[g]:
                        mx[g] = v
            if m_tail > 0 and h % step == 0 and h // step < ns:
                a = h // step
                for g in range(G):
                    samp[g, a] = logp[h, r, g] - t if math.isfinite(t) else -math.inf
        n_ok[r] = ok
        shift = np.empty(G)
        for g in range(G):
            mx_out[r, g] = math.nan if hasnan[g] else mx[g]
            shift[g] = mx[g] if (math.isfinite(mx[g]) and not hasnan[g]) else 0.0
        # per-candidate thresholds from the strided sample (+inf: no tail for this candidate);
        # subtracting the maximum after the selection picks the same value (x - mx is monotone),
        # and whatever the threshold, the selected tails are the same (only the work differs)
        thr = np.full(G, math.inf)
        if m_tail > 0:
            for g in range(G):
                if hasnan[g] or not math.isfinite(mx[g]):
                    bad[r * G + g] = True
                    continue
                sg = samp[g]
                _select(sg, ns - 1 - above)
                thr[g] = sg[ns - 1 - above] - mx[g]
        small = np.empty((G if m_tail > 0 else 0, cap + 1))
        cnt = np.zeros(G, dtype=np.int64)
        # rows in blocks of _HB draws; each block is also transposed into an L1-sized buffer so
        # that the tails are gathered from contiguous values
        tb = np.empty((G if m_tail > 0 else 0, _HB))
        for h0 in range(0, H, _HB):
            h1 = min(H, h0 + _HB)
            for h in range(h0, h1):
                t = tv[h]
                if math.isfinite(t):
                    for g in range(G):
                        x = (logp[h, r, g] - t) - shift[g]
                        x = x if x < _EXP_MAX else -math.inf  # (nan fails the test too)
                        X[h, r, g] = x
                else:  # the truth is impossible under this draw: the draw is dropped
                    for g in range(G):
                        X[h, r, g] = -math.inf
                if m_tail > 0:
                    for g in range(G):
                        tb[g, h - h0] = X[h, r, g]
            if m_tail > 0:
                # where shift = max, X is exactly _top_sorted's input (log r − max <= 0)
                _gather(tb, h1 - h0, thr, small, cnt)
        if m_tail > 0:
            _finish_tails(X, r, k, small, cnt, bad[r * G : (r + 1) * G], top[r * G : (r + 1) * G])
    return mx_out, n_ok, top, bad


@njit(cache=True, inline="always")
def _gather(tb, nh, thr, small, cnt):  # pragma: no cover - compiled
    """Append the values ``tb[g, :nh] >= thr[g]`` to ``small[g]`` (counted in ``cnt[g]``)."""
    cap = small.shape[1] - 1
    for g in range(tb.shape[0]):
        c = cnt[g]
        t = thr[g]
        sg = small[g]
        for hh in range(nh):
            x = tb[g, hh]
            sg[min(c, cap)] = x  # slot cap: overflow, never read
            c += 1 if x >= t else 0
        cnt[g] = c


@njit(cache=True, inline="always")
def _insertion_sort(a, out):  # pragma: no cover - compiled
    """``out[:n] = sort(a)`` (no ``nan``); for ~100 values faster than ``np.sort``."""
    n = a.shape[0]
    for i in range(n):
        v = a[i]
        j = i - 1
        while j >= 0 and out[j] > v:
            out[j + 1] = out[j]
            j -= 1
        out[j + 1] = v


@njit(cache=True)
def _finish_tails(X, r, k, small, cnt, bad, top):  # pragma: no cover - compiled
    """The ``k`` largest of each candidate's gathered values, ascending, into ``top[g]``."""
    H = X.shape[0]
    cap = small.shape[1] - 1
    tmp = np.empty(0)
    for g in range(top.shape[0]):
        if bad[g]:
            continue
        c = cnt[g]
        if k <= c <= cap:
            _select(small[g, :c], c - k)
            _insertion_sort(small[g, c - k : c], top[g])
        else:  # the threshold missed: select among all draws
            if tmp.shape[0] == 0:
                tmp = np.empty(H)
            for h in range(H):
                tmp[h] = X[h, r, g]
            _select(tmp, H - k)
            top[g, :] = np.sort(tmp[H - k :])


#: records per block of :func:`ratio_sums` (their ``[G]`` rows of one draw are contiguous)
_RB = 16


@njit(cache=True, parallel=True, nogil=True)
def ratio_sums(E, W, groups, n_groups):  # pragma: no cover - compiled
    """Sums over draws of ``E[H, R, G]`` (plain, squared, IS-weighted, per draw group)."""
    H, R, G = E.shape
    m = W.shape[1]
    s1 = np.zeros((R, G))
    s2 = np.zeros((R, G))
    num = np.zeros((R, m, G))
    sq = np.zeros((R, m, G))
    mxw = np.zeros((R, m, G))
    gsum = np.zeros((n_groups, R, G))
    for b in prange((R + _RB - 1) // _RB):
        r0 = b * _RB
        r1 = min(R, r0 + _RB)
        for h in range(H):
            for r in range(r0, r1):
                e = E[h, r]
                a1 = s1[r]
                a2 = s2[r]
                for g in range(G):
                    a1[g] += e[g]
                    a2[g] += e[g] * e[g]
                if n_groups > 0:
                    a3 = gsum[groups[h], r]
                    for g in range(G):
                        a3[g] += e[g]
                for li in range(m):
                    w = W[h, li]
                    nu = num[r, li]
                    sqr = sq[r, li]
                    mw = mxw[r, li]
                    for g in range(G):
                        ew = e[g] * w
                        nu[g] += ew
                        sqr[g] += ew * ew
                        if ew > mw[g]:
                            mw[g] = ew
    return s1, s2, num, sq, mxw, gsum


@njit(cache=True, nogil=True)
def neg_outer(theta, x):  # pragma: no cover - compiled
    """``out[i, j, l] = (−θ[i, j]) · x[i, l]`` (bitwise numpy's broadcast, faster)."""
    n, mg = theta.shape
    m = x.shape[1]
    out = np.empty((n, mg, m))
    for i in range(n):
        for j in range(mg):
            a = -theta[i, j]
            for e in range(m):
                out[i, j, e] = a * x[i, e]
    return out


#: ``|log p_g − log p_truth|`` at most this is a tie (``bayes_risk._numeric.LOG_TIE_ATOL``)
_TIE = 1e-9
#: rows per block of the prior kernels (buffers allocated once per block)
_PB = 256


@njit(cache=True, inline="always")
def _lse(a):  # pragma: no cover - compiled
    """``logsumexp`` of one row as :func:`bayes_risk._numeric.logsumexp` (``nan`` propagates)."""
    m = -math.inf
    for v in a:
        if math.isnan(v):
            return math.nan
        if v > m:
            m = v
    sh = m if math.isfinite(m) else 0.0
    s = 0.0
    for v in a:
        s += math.exp(v - sh)
    return math.log(s) + sh


@njit(cache=True, inline="always")
def _rank(x, t, out, p, r, at):  # pragma: no cover - compiled
    """Rank summary of row ``x`` (truth ``t``) into ``out[at:, p, r]``."""
    lt = x[t]
    bad = math.isnan(lt)
    above = 0
    tie = 0
    for v in x:
        if math.isnan(v):
            bad = True
        elif (v == -math.inf and lt == -math.inf) or abs(v - lt) <= _TIE:
            tie += 1
        elif v > lt:
            above += 1
    if bad:
        return
    rank = 1.0 + above
    share = 1.0 / max(tie, 1) if above == 0 else 0.0
    if at == 0:
        out[0, p, r] = math.exp(lt)
        out[1, p, r] = rank
        out[2, p, r] = tie
        out[3, p, r] = rank + (tie - 1) / 2.0
        out[4, p, r] = 1.0 if above == 0 else 0.0
        out[5, p, r] = share
    else:
        out[at, p, r] = math.exp(lt)
        out[at + 1, p, r] = share


@njit(cache=True, parallel=True, nogil=True, error_model="numpy")
def prior_point_columns(ll, lp, g0, alone, post):  # pragma: no cover - compiled
    """Log posteriors (into ``post``) and rank summaries of ``ll[n, G]`` under priors ``lp``."""
    P, n, G = lp.shape
    out = np.full((8 if alone else 6, P, n), np.nan)
    keep = post.shape[0] > 0
    for b in prange((P * n + _PB - 1) // _PB):
        a = np.empty(G)
        for i in range(b * _PB, min(P * n, (b + 1) * _PB)):
            p = i // n
            r = i - p * n
            for g in range(G):
                a[g] = ll[r, g] + lp[p, r, g]
            lse = _lse(a)
            for g in range(G):
                a[g] = a[g] - lse if math.isfinite(lse) else math.nan
                if keep:
                    post[p, r, g] = a[g]
            _rank(a, g0[r], out, p, r, 0)
            if alone:
                _rank(lp[p, r], g0[r], out, p, r, 6)
    return out


@njit(cache=True, parallel=True, nogil=True, error_model="numpy")
def chain_columns(ll, dev_t, lp, g0, crit, tolerance, ratio):  # pragma: no cover - compiled
    """The between-chain check of :func:`~bayes_risk.attribute.chains.agreement_columns`."""
    R, C, G = ll.shape
    K = dev_t.shape[3]
    P = lp.shape[0]
    out = np.full((5, P, R), np.nan)
    norm = 1.0 / (K * (K - 1))
    for b in prange((P * R + _PB - 1) // _PB):
        a = np.empty(G)
        post = np.empty(G)
        lin = np.empty(K)
        pc = np.empty(C)
        vp = np.empty(C)
        mg = np.empty(C)
        vm = np.empty(C)
        top = np.empty(C, dtype=np.bool_)
        for i in range(b * _PB, min(P * R, (b + 1) * _PB)):
            p = i // R
            r = i - p * R
            t = g0[r]
            ok = True
            for c in range(C):
                for g in range(G):
                    a[g] = ll[r, c, g] + lp[p, r, g]
                at = a[t]
                ok = ok and math.isfinite(at)
                # the normalised exp(a): the shifted exponentials of the logsumexp, divided
                m = -math.inf
                for g in range(G):
                    m = math.nan if (math.isnan(a[g]) or math.isnan(m)) else max(m, a[g])
                sh = m if math.isfinite(m) else 0.0
                tot = 0.0
                for g in range(G):
                    post[g] = math.exp(a[g] - sh)
                    tot += post[g]
                lse = math.log(tot) + sh
                for g in range(G):
                    post[g] = post[g] / tot if math.isfinite(lse) else math.nan
                pt = post[t]
                pc[c] = pt
                # delta method: d p_t = p_t (d ll_t − Σ_g post_g d ll_g)
                lin[:] = 0.0
                for g in range(G):
                    gr = -pt * post[g] + (pt if g == t else 0.0)
                    if math.isnan(gr):
                        gr = 0.0
                    elif math.isinf(gr):
                        gr = 1.7976931348623157e308 if gr > 0 else -1.7976931348623157e308
                    for k in range(K):
                        lin[k] += gr * dev_t[r, c, g, k]
                s = 0.0
                for k in range(K):
                    s += lin[k] * lin[k]
                vp[c] = s * norm
                # the best rival of the truth (np.argmax: the first nan, else the first maximum)
                rival = 0
                best = a[0] if t != 0 else -math.inf
                if not math.isnan(best):
                    for g in range(1, G):
                        v = a[g] if g != t else -math.inf
                        if math.isnan(v):
                            rival = g
                            best = v
                            break
                        if v > best:
                            rival = g
                            best = v
                mg[c] = at - best
                s = 0.0
                for k in range(K):
                    s += dev_t[r, c, rival, k] * dev_t[r, c, rival, k]
                vm[c] = s * norm
                top[c] = mg[c] >= -_TIE
            sig = False
            flip = False
            zmax = -math.inf
            for ci in range(C):
                for cj in range(ci + 1, C):
                    dp = abs(pc[ci] - pc[cj])
                    z = 0.0 if dp == 0 else dp / math.sqrt(vp[ci] + vp[cj])
                    zm = abs(mg[ci] - mg[cj]) / math.sqrt(vm[ci] + vm[cj])
                    if math.isnan(z) or math.isnan(zmax):
                        zmax = math.nan
                    elif z > zmax:
                        zmax = z
                    lo = min(pc[ci], pc[cj])
                    if math.isnan(pc[ci]) or math.isnan(pc[cj]):
                        lo = math.nan
                    # material: beyond the absolute floor, or beyond the relative one
                    # (p_max / p_min > ratio)
                    rel = (ratio - 1.0) * lo if math.isfinite(ratio) else math.inf
                    floor = math.nan if math.isnan(rel) else min(tolerance, rel)
                    sig = sig or (z > crit and dp > floor)
                    flip = flip or (top[ci] != top[cj] and zm > crit)
            pmin = pc[0]
            pmax = pc[0]
            for c in range(1, C):
                if math.isnan(pc[c]) or math.isnan(pmin):
                    pmin = math.nan
                    pmax = math.nan
                else:
                    pmin = min(pmin, pc[c])
                    pmax = max(pmax, pc[c])
            if ok:
                out[0, p, r] = pmin
                out[1, p, r] = pmax
                out[2, p, r] = zmax
            out[3, p, r] = 1.0 if (flip and ok) else 0.0
            out[4, p, r] = 1.0 if ((sig or flip) and ok) else 0.0
    return out
