"""Compiled (numba) Monte Carlo node terms of the smoothed CART plug-in (:mod:`._plugin_terms`).

A node has few donors (a handful to a few dozen) and few distinct synthetic values, against
hundreds of bootstrap replicates: numpy's per-call cost on such small arrays outweighed the
arithmetic, so each term is one loop over the replicates here.
"""

from __future__ import annotations

import math

import numba as _nb
import numpy as np

__all__ = ["difference_var", "extra_base", "extra_block", "log_mean_exp_rows", "log_var_rows",
           "node_lf", "node_lf_many"]


@_nb.njit(cache=True, nogil=True)
def _log_mean_exp(lf):  # pragma: no cover - compiled
    """``log((1/R) Σ_r e^{lf_r})`` (max shift; all ``-inf``: ``-inf``)."""
    R = lf.shape[0]
    m = -np.inf
    for r in range(R):
        if lf[r] > m or math.isnan(lf[r]):
            m = lf[r]
    if not math.isfinite(m):
        if math.isnan(m):
            return m
        m = 0.0
    s = 0.0
    for r in range(R):
        s += math.exp(lf[r] - m)
    return math.log(s) + m - math.log(R)


@_nb.njit(cache=True, nogil=True)
def node_lf(counts, log_k, log_m, zw, log_w, weighted):  # pragma: no cover - compiled
    """The replicates' terms ``[R]`` of :func:`~._plugin_terms.mc_node_loglik` and their log
    mean: ``-W log Σ_j c_rj M_j + log w_r + Σ_s zw_s log Σ_j c_rj K_j(z_s)``."""
    R, n = counts.shape
    n_z = log_k.shape[0]
    lf = np.empty(R)
    mx = np.empty(n_z)
    for s in range(n_z):
        m = -np.inf
        for j in range(n):
            v = log_k[s, j]
            if v > m or math.isnan(v):
                m = v
        if not math.isfinite(m):  # a value no donor can produce
            lf[:] = -np.inf
            return -np.inf, lf
        mx[s] = m
    ek = np.empty((n_z, n))
    for s in range(n_z):
        for j in range(n):
            ek[s, j] = math.exp(log_k[s, j] - mx[s])
    em = np.empty(n)
    for j in range(n):
        em[j] = math.exp(log_m[j])
    W = 0.0
    for s in range(n_z):
        W += zw[s]
    for r in range(R):
        den = 0.0
        for j in range(n):
            den += counts[r, j] * em[j]
        t = -W * math.log(den)
        if weighted:
            t += log_w[r]
        acc = 0.0
        for s in range(n_z):
            num = 0.0
            for j in range(n):
                num += counts[r, j] * ek[s, j]
            acc += (math.log(num) + mx[s]) * zw[s]
        lf[r] = t + acc
    return _log_mean_exp(lf), lf


@_nb.njit(cache=True, nogil=True)
def node_lf_many(counts, log_k, log_m, zw, log_w, weighted):  # pragma: no cover - compiled
    """:func:`node_lf` of ``K`` supports at once (``log_k [K, n_z, n]``, ``log_m [K, n]``): their
    log means ``[K]`` and terms ``[K, R]``."""
    K = log_k.shape[0]
    vals = np.empty(K)
    lf = np.empty((K, counts.shape[0]))
    for k in range(K):
        vals[k], lf[k] = node_lf(counts, log_k[k], log_m[k], zw, log_w, weighted)
    return vals, lf


@_nb.njit(cache=True, nogil=True)
def extra_base(den, c_x, log_m_extra, W, log_w, weighted):  # pragma: no cover - compiled
    """``[n_x, R]`` normalising part of :func:`~._plugin_terms.mc_node_loglik_extra`."""
    n_x = log_m_extra.shape[0]
    R = den.shape[0]
    lf = np.empty((n_x, R))
    for x in range(n_x):
        em = math.exp(log_m_extra[x])
        for r in range(R):
            d = den[r] + c_x[r] * em
            t = -W * math.log(d)
            if weighted:
                t += log_w[r]
            lf[x, r] = t
    return lf


@_nb.njit(cache=True, nogil=True)
def extra_block(lf, s_d, mx_d, safe_d, c_x, log_k_extra, zw):  # pragma: no cover - compiled
    """Add one block of synthetic values' terms to ``lf [n_x, R]`` (in place): the donors'
    kernel sums ``s_d [R, block]`` plus the extra donor's."""
    n_x, R = lf.shape
    B = s_d.shape[1]
    mx = np.empty(B)
    a = np.empty(B)
    b = np.empty(B)
    for x in range(n_x):
        dead = False
        for s in range(B):
            m = log_k_extra[x, s]
            if not (m >= mx_d[s]) and not math.isnan(m):
                m = mx_d[s]
            if not math.isfinite(m):
                dead = True
                break
            mx[s] = m
            a[s] = math.exp(safe_d[s] - m)
            b[s] = math.exp(log_k_extra[x, s] - m)
        if dead:
            lf[x, :] = -np.inf
            continue
        for r in range(R):
            acc = 0.0
            for s in range(B):
                num = s_d[r, s] * a[s] + c_x[r] * b[s]
                acc += (math.log(num) + mx[s]) * zw[s]
            lf[x, r] += acc


@_nb.njit(cache=True, nogil=True)
def log_mean_exp_rows(lf):  # pragma: no cover - compiled
    out = np.empty(lf.shape[0])
    for x in range(lf.shape[0]):
        out[x] = _log_mean_exp(lf[x])
    return out


@_nb.njit(cache=True, nogil=True)
def _rel_weights(lf, out):  # pragma: no cover - compiled
    """``out = e^{lf} / mean(e^{lf})`` (max shift); whether some term is finite."""
    R = lf.shape[0]
    ok = False
    m = -np.inf
    for r in range(R):
        v = lf[r]
        if math.isfinite(v):
            ok = True
        if v > m or math.isnan(v):
            m = v
    if not ok:  # no finite term: the caller reports no variance
        return False
    s = 0.0
    for r in range(R):
        out[r] = math.exp(lf[r] - m)
        s += out[r]
    mean = s / R
    for r in range(R):
        out[r] = out[r] / mean
    return ok


@_nb.njit(cache=True, nogil=True)
def _var(u):  # pragma: no cover - compiled
    R = u.shape[0]
    s = 0.0
    for r in range(R):
        s += u[r]
    mean = s / R
    q = 0.0
    for r in range(R):
        d = u[r] - mean
        q += d * d
    return q / R


@_nb.njit(cache=True, nogil=True)
def log_var_rows(rows, lf_b, has_b, paired):  # pragma: no cover - compiled
    """``[G]`` delta-method variances of :func:`~._plugin_terms.mc_log_var`."""
    G, R = rows.shape
    out = np.zeros(G)
    ua = np.empty(R)
    ub = np.empty(R)
    ok_b = _rel_weights(lf_b, ub) if has_b else True
    for g in range(G):
        if not (_rel_weights(rows[g], ua) and ok_b):
            continue
        if not has_b:
            out[g] = _var(ua) / R
        elif paired[g]:
            for r in range(R):
                ua[r] = ua[r] - ub[r]
            out[g] = _var(ua) / R
        else:
            out[g] = (_var(ua) + _var(ub)) / R
    return out


@_nb.njit(cache=True, nogil=True)
def _side_var(lf, exact, same, ub, ok_b, own_t):  # pragma: no cover - compiled
    """Variances of one side's rows of :func:`difference_var`."""
    n, R = lf.shape
    out = np.zeros(n)
    ua = np.empty(R)
    for i in range(n):
        if same:
            if not exact and _rel_weights(lf[i], ua) and ok_b:
                for r in range(R):
                    ua[r] = ua[r] - ub[r]
                out[i] = _var(ua) / R
        else:
            v = _var(ua) / R if not exact and _rel_weights(lf[i], ua) else 0.0
            out[i] = v + own_t
    return out


@_nb.njit(cache=True, nogil=True)
def difference_var(lf0, exact0, lf1, exact1, row, inside, g0):  # pragma: no cover - compiled
    """``[G]`` variances of each candidate's node term less the truth's (``g0``): the rows of
    replicate terms without (``lf0``) and with (``lf1``) the candidate's value, ``row`` each
    candidate's row of its side (``inside``); paired on the truth's side, the two terms'
    variances added across it; an exact side has none (:func:`log_var_rows` each)."""
    t_side = inside[g0]
    truth = lf1[row[g0]] if t_side else lf0[row[g0]]
    R = truth.shape[0]
    ub = np.empty(R)
    ok_b = _rel_weights(truth, ub)
    t_exact = exact1 if t_side else exact0
    own_t = _var(ub) / R if ok_b and not t_exact else 0.0
    v0 = _side_var(lf0, exact0, not t_side, ub, ok_b, own_t)
    v1 = _side_var(lf1, exact1, t_side, ub, ok_b, own_t)
    out = np.empty(row.shape[0])
    for g in range(row.shape[0]):
        out[g] = v1[row[g]] if inside[g] else v0[row[g]]
    return out
