"""Brute-force ground truth for the mixture models on tiny tables (shared by the test modules).

Exact posterior summaries and marginal likelihoods (evidences) of the truncated-DP mixtures of
the package — DPMPM (products of multinomials) and the Poisson mixture — by **dynamic programming
over class counts**: records with identical values form a cell; allocating the ``N_c`` records of
cell ``c`` to ``K`` classes only matters through the per-class sufficient statistics, so the
distribution of those statistics is accumulated cell by cell (merging identical states) with the
number of allocations ``Π_c N_c! / Π_k T_ck!`` as weight. Given the per-class statistics:

* the class parameters (φ or λ) integrate out conjugately (Dirichlet–multinomial,
  Gamma–Poisson);
* the truncated sticks integrate out: ``p(z | α) = Π_{k<K} α B(1 + n_k, α + Σ_{h>k} n_h)``;
* α ~ Gamma(a_α, b_α) is integrated by the trapezoid rule on ``t = log α`` over a wide grid.

:func:`brute_force_allocations` checks the dynamic programme against a plain sum over all
``K^N`` allocations.
"""

from __future__ import annotations

import itertools
from collections import Counter
from dataclasses import dataclass

import numpy as np
from numba import njit
from scipy import stats
from scipy.special import betaln, gammaln, logsumexp

__all__ = [
    "allocation_states",
    "brute_force_allocations",
    "collapsed_log_posterior",
    "DPMixtureExact",
    "dpmpm_exact",
    "dpmpm_exact_draws",
    "alpha_given_counts",
    "dpmpm_p_true_exact",
    "multinomial_column_terms",
    "poisson_mixture_exact",
    "poisson_predictive",
    "cells_of",
    "polya_brute",
    "normal_regression_log_predictive",
    "normal_regression_p_true_exact",
    "check_p_true",
    "t_bound",
]

#: log α grid of the quadrature (trapezoid in t = log α; the integrand decays like α^a_α at 0)
_LOG_ALPHA = np.linspace(-250.0, 9.0, 1201)
#: class-count vectors are grouped by counting over all ``radix**K`` keys up to this many
_MAX_DENSE_KEYS = 2**24


def cells_of(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct rows of an integer table and their counts."""
    vals, counts = np.unique(np.asarray(rows, dtype=np.int64), axis=0, return_counts=True)
    return vals, counts


def _compositions(n: int, K: int) -> np.ndarray:
    """All ``K``-part compositions of ``n`` (rows sum to ``n``)."""
    if K == 1:
        return np.array([[n]], dtype=np.int64)
    out = []
    for first in range(n + 1):
        for rest in _compositions(n - first, K - 1):
            out.append([first, *rest])
    return np.array(out, dtype=np.int64)


@njit(cache=True)
def _sift_down(hk: np.ndarray, hp: np.ndarray, j: int, size: int) -> None:
    """Restore the min-heap order of ``(hk, hp)`` (key, stream) below position ``j``."""
    while True:
        c = 2 * j + 1
        if c >= size:
            return
        if c + 1 < size and (hk[c + 1] < hk[c] or (hk[c + 1] == hk[c] and hp[c + 1] < hp[c])):
            c += 1
        if hk[c] < hk[j] or (hk[c] == hk[j] and hp[c] < hp[j]):
            hk[c], hk[j] = hk[j], hk[c]
            hp[c], hp[j] = hp[j], hp[c]
            j = c
        else:
            return


@njit(cache=True)
def _merge_sorted(
    keys: np.ndarray, logw: np.ndarray, ckey: np.ndarray, lm: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Log-sum-exp of ``logw[i] + lm[p]`` over the pairs ``(i, p)`` sharing ``keys[i] + ckey[p]``.

    ``keys`` is increasing, so each ``p`` is an increasing stream ``keys + ckey[p]``: a heap
    merge of the ``P`` streams visits the ``T × P`` sums in key order (what sorting them all
    gives, without the sort), and each run of equal keys is summed as
    ``max + log Σ exp(w − max)``. Returns the distinct keys (increasing), one pair ``(i, p)``
    of each and the log sums.
    """
    T, P = keys.size, ckey.size
    hk = keys[0] + ckey  # heap of the streams' current keys
    hp = np.arange(P)
    for j in range(P // 2 - 1, -1, -1):
        _sift_down(hk, hp, j, P)
    pos = np.zeros(P, np.int64)
    size = P
    cap = max(T, P)
    ukeys = np.empty(cap, np.int64)
    fi = np.empty(cap, np.int64)
    fp = np.empty(cap, np.int64)
    out = np.empty(cap)
    buf = np.empty(64)
    n_u, nb = 0, 0
    while size > 0:
        k, p = hk[0], hp[0]
        i = pos[p]
        w = logw[i] + lm[p]
        if n_u == 0 or k != ukeys[n_u - 1]:
            if n_u > 0:  # close the previous run
                mx = buf[:nb].max()
                out[n_u - 1] = mx + np.log(np.exp(buf[:nb] - mx).sum())
            if n_u == cap:
                cap *= 2
                ukeys2, fi2, fp2, out2 = (np.empty(cap, np.int64), np.empty(cap, np.int64),
                                          np.empty(cap, np.int64), np.empty(cap))
                ukeys2[:n_u], fi2[:n_u], fp2[:n_u], out2[:n_u] = ukeys, fi, fp, out
                ukeys, fi, fp, out = ukeys2, fi2, fp2, out2
            ukeys[n_u], fi[n_u], fp[n_u] = k, i, p
            n_u += 1
            nb = 0
        if nb == buf.size:
            buf2 = np.empty(2 * nb)
            buf2[:nb] = buf
            buf = buf2
        buf[nb] = w
        nb += 1
        pos[p] = i + 1
        if i + 1 < T:
            hk[0] = keys[i + 1] + ckey[p]
        else:
            size -= 1
            hk[0], hp[0] = hk[size], hp[size]
        _sift_down(hk, hp, 0, size)
    mx = buf[:nb].max()
    out[n_u - 1] = mx + np.log(np.exp(buf[:nb] - mx).sum())
    return ukeys[:n_u].copy(), fi[:n_u].copy(), fp[:n_u].copy(), out[:n_u].copy()


@njit(cache=True)
def _extend_states(
    states: np.ndarray, fi: np.ndarray, fp: np.ndarray, comp: np.ndarray, s_c: np.ndarray
) -> np.ndarray:
    """``states[fi] + comp[fp][:, :, None] * s_c`` in one pass (no ``[T, K, S]`` temporaries)."""
    T, K, S = fi.size, states.shape[1], states.shape[2]
    out = np.empty((T, K, S), np.int64)
    for t in range(T):
        i, p = fi[t], fp[t]
        for k in range(K):
            for s in range(S):
                out[t, k, s] = states[i, k, s] + comp[p, k] * s_c[s]
    return out


def allocation_states(
    cell_stats: np.ndarray, cell_counts: np.ndarray, K: int, *, row_merge: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """Distribution of per-class sufficient statistics over all allocations to ``K`` classes.

    Parameters
    ----------
    cell_stats : int array [C, S]
        Sufficient-statistic contribution of one record of each cell (e.g. one-hot levels).
    cell_counts : int array [C]
        Records per cell.
    K : int
        Number of classes.
    row_merge : bool
        Merge identical states by comparing whole rows (slow) even when integer keys fit.

    Returns
    -------
    stats : int array [T, K, S]
        Per-class summed statistics of each distinct state.
    log_mult : array [T]
        Log number of allocations of the records (labelled records) giving that state.
    """
    cell_stats = np.asarray(cell_stats, dtype=np.int64)
    cell_counts = np.asarray(cell_counts, dtype=np.int64)
    S = cell_stats.shape[1]
    # states are merged by an integer key: mixed radix over the statistics of classes 1..K-1
    # (class K holds the rest, so it adds nothing); linear in the statistics, so a key moves
    # by a fixed amount when records are added. Fallback to row-wise unique if it overflows.
    radix = (cell_counts[:, None] * cell_stats).sum(axis=0) + 1  # [S]
    dims = np.tile(radix, max(K - 1, 0)).astype(float)
    use_keys = K > 1 and not row_merge and float(np.prod(dims)) < 2.0**62
    if use_keys:
        mult = np.concatenate([[1], np.cumprod(np.tile(radix, K - 1))[:-1]]).reshape(K - 1, S)
    states = np.zeros((1, K, S), dtype=np.int64)
    keys = np.zeros(1, dtype=np.int64)
    logw = np.zeros(1)
    for s_c, N in zip(cell_stats, cell_counts, strict=True):
        comp = _compositions(int(N), K)  # [P, K]
        lm = gammaln(N + 1) - gammaln(comp + 1).sum(axis=1)  # multinomial coefficients
        if use_keys:
            ckey = comp[:, : K - 1] @ (mult @ s_c)  # [P]
            keys, fi, fp, logw = _merge_sorted(keys, logw, ckey, lm)
            states = _extend_states(states, fi, fp, comp, s_c)
            continue
        nw = (logw[:, None] + lm[None, :]).ravel()
        new = states[:, None, :, :] + comp[None, :, :, None] * s_c[None, None, None, :]
        new = new.reshape(-1, K, S)
        ukeys, inv = np.unique(new.reshape(len(new), -1), axis=0, return_inverse=True)
        inv = inv.ravel()
        mx = np.full(len(ukeys), -np.inf)
        np.maximum.at(mx, inv, nw)
        acc = np.zeros(len(ukeys))
        np.add.at(acc, inv, np.exp(nw - mx[inv]))
        states = ukeys.reshape(-1, K, S)
        logw = mx + np.log(acc)
    return states, logw


def _log_p_z_given_alpha(nk: np.ndarray, log_alpha: np.ndarray) -> np.ndarray:
    """``[T, A]`` log p(z | α) of the truncated stick breaking for class counts ``nk [T, K]``."""
    nk_u, inv = np.unique(nk, axis=0, return_inverse=True)
    if len(nk_u) < len(nk):  # rows depend on their own counts alone: compute each once
        return _log_p_z_given_alpha(nk_u, log_alpha)[inv.ravel()]
    K = nk.shape[1]
    alpha = np.exp(log_alpha)[None, :]
    tail = np.cumsum(nk[:, ::-1], axis=1)[:, ::-1]  # Σ_{h>=k}
    out = np.zeros((nk.shape[0], log_alpha.size))
    for k in range(K - 1):
        out += log_alpha[None, :] + betaln(1.0 + nk[:, k : k + 1], alpha + tail[:, k + 1 : k + 2])
    return out


@dataclass
class DPMixtureExact:
    """Exact posterior of a truncated-DP mixture on a tiny table (see module docstring).

    Attributes
    ----------
    log_evidence : float
        ``log p(y)`` (α integrated).
    alpha_mean : float
        ``E[α | y]``.
    pi_mean : array [K]
        ``E[π_k | y]`` (labelled classes of the stick-breaking order).
    p_empty : float
        Posterior probability that at least one of the K classes is empty.
    k_occupied_mean : float
        ``E[#occupied classes | y]``.
    state_post : array [T]
        Posterior probability of each sufficient-statistic state.
    stats : int array [T, K, S]
    """

    log_evidence: float
    alpha_mean: float
    pi_mean: np.ndarray
    p_empty: float
    k_occupied_mean: float
    state_post: np.ndarray
    stats: np.ndarray
    nk: np.ndarray
    _alpha_given_state: np.ndarray  # E[α | state] [T]
    _pi_given_state: np.ndarray  # E[π | state] [T, K]


@njit(cache=True)
def _group_logsumexp(
    key: np.ndarray, a: np.ndarray, n_keys: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Log-sum-exp of ``a`` within the groups of equal ``key`` (integers in ``[0, n_keys)``).

    Returns the first index of each group (groups in increasing key order), the group of each
    element and ``max + log Σ exp(a − max)`` per group: ``np.unique(key, return_index=True,
    return_inverse=True)`` with ``np.maximum.at`` / ``np.add.at``, by counting instead of
    sorting."""
    slot = np.full(n_keys, -1, np.int64)
    for t in range(key.size - 1, -1, -1):
        slot[key[t]] = t  # ends as the first occurrence
    first_by_key = slot.copy()
    U = 0
    for v in range(n_keys):
        if first_by_key[v] >= 0:
            slot[v] = U
            U += 1
    first = np.empty(U, np.int64)
    for v in range(n_keys):
        if first_by_key[v] >= 0:
            first[slot[v]] = first_by_key[v]
    inv = np.empty(key.size, np.int64)
    mx = np.full(U, -np.inf)
    for t in range(key.size):
        u = slot[key[t]]
        inv[t] = u
        if a[t] > mx[u]:
            mx[u] = a[t]
    acc = np.zeros(U)
    for t in range(key.size):
        acc[inv[t]] += np.exp(a[t] - mx[inv[t]])
    return first, inv, mx + np.log(acc)


def _dp_exact(stats, log_mult, nk, log_lik_state, a_alpha, b_alpha) -> DPMixtureExact:
    t = _LOG_ALPHA
    alpha = np.exp(t)
    # prior of α in t = log α: Gamma density × α (Jacobian); trapezoid weights
    log_prior = a_alpha * np.log(b_alpha) - gammaln(a_alpha) + a_alpha * t - b_alpha * alpha
    dt = t[1] - t[0]
    wq = np.full(t.size, dt)
    wq[[0, -1]] = dt / 2
    base = log_prior + np.log(wq)
    T, K = nk.shape
    # p(z | α) and so the α integral depend on a state only through its class counts: the
    # states are summed within each distinct count vector first (U × A work, not T × A)
    radix = int(nk.max()) + 1
    nk_key = nk @ (radix ** np.arange(K, dtype=np.int64))  # 1-D keys: sorting rows is slow
    a_state = log_mult + log_lik_state  # [T]
    n_keys = radix**K
    if n_keys > _MAX_DENSE_KEYS:  # too many possible keys to count them: number the distinct ones
        _, nk_key = np.unique(nk_key, return_inverse=True)
        nk_key, n_keys = nk_key.ravel(), int(nk_key.max()) + 1
    first, nk_inv, g = _group_logsumexp(nk_key, a_state, n_keys)
    nk_u = nk[first]
    U = nk_u.shape[0]  # g: [U] log Σ_{states with these counts}
    joint = g[:, None] + _log_p_z_given_alpha(nk_u.astype(float), t) + base[None, :]  # [U, A]
    log_ev = float(logsumexp(joint))
    post_ua = np.exp(joint - log_ev)
    post_u = post_ua.sum(axis=1)
    am = post_ua @ alpha
    # E[π_k | z, α] = E[V_k] Π_{h<k} E[1 − V_h], V_k ~ Beta(1 + n_k, α + tail_{k+1})
    nkf = nk_u.astype(float)
    tail_all = np.cumsum(nkf[:, ::-1], axis=1)[:, ::-1]
    run = np.ones(post_ua.shape)
    pik = np.zeros((U, K))
    for k in range(K - 1):
        a = 1.0 + nkf[:, k : k + 1]
        b = alpha[None, :] + tail_all[:, k + 1 : k + 2]
        pik[:, k] = (post_ua * run * a / (a + b)).sum(axis=1)
        run = run * b / (a + b)
    pik[:, K - 1] = (post_ua * run).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        alpha_u = am / post_u
        pi_u = pik / post_u[:, None]
        state_post = np.exp(a_state - g[nk_inv]) * post_u[nk_inv]
    alpha_mean = float(am.sum())
    pi_mean = pik.sum(axis=0)
    alpha_given = alpha_u[nk_inv]
    pi_given = pi_u[nk_inv]
    occ = (nk > 0).sum(axis=1)
    return DPMixtureExact(
        log_evidence=log_ev,
        alpha_mean=float(alpha_mean),
        pi_mean=pi_mean,
        p_empty=float(state_post[occ < K].sum()),
        k_occupied_mean=float((state_post * occ).sum()),
        state_post=state_post,
        stats=stats,
        nk=nk,
        _alpha_given_state=alpha_given,
        _pi_given_state=pi_given,
    )


class DPMPMExact(DPMixtureExact):
    """:class:`DPMixtureExact` of a DPMPM, with the category-probability summaries."""

    d: np.ndarray
    a_dir: float

    def phi_mean(self) -> np.ndarray:
        """``E[φ_kjl | y]`` as ``[K, L]`` (levels of all columns stacked, column order)."""
        n = self.nk.astype(float)
        out = np.zeros(self.stats.shape[1:])
        off = np.concatenate([[0], np.cumsum(self.d)])
        for j, dj in enumerate(self.d):
            c = self.stats[:, :, off[j] : off[j + 1]].astype(float)
            e = (self.a_dir + c) / (dj * self.a_dir + n[:, :, None])
            out[:, off[j] : off[j + 1]] = np.einsum("t,tkl->kl", self.state_post, e)
        return out

    def predictive(self, row: np.ndarray) -> float:
        """Posterior predictive probability ``p(y_new = row | y)`` (label invariant)."""
        off = np.concatenate([[0], np.cumsum(self.d)])
        cols = off[:-1] + np.asarray(row, dtype=np.int64)
        return _dpmpm_predictive(self.stats, self.nk, cols, self.d * self.a_dir, self.a_dir,
                                 self.state_post, self._pi_given_state)


@njit(cache=True)
def _dpmpm_log_lik(
    stats: np.ndarray, nk: np.ndarray, off: np.ndarray, lg_a: np.ndarray, lg_d: np.ndarray
) -> np.ndarray:
    """``[T]`` integrated DPMPM log-likelihood of each state (φ integrated conjugately):
    ``Σ_jk [log Γ(d_j a) − log Γ(d_j a + n_k) + Σ_l (log Γ(a + c_kjl) − log Γ(a))]``."""
    T, K = nk.shape
    out = np.zeros(T)
    for t in range(T):
        acc = 0.0
        for j in range(off.size - 1):
            for k in range(K):
                acc += lg_d[j, nk[t, k]]
                for s in range(off[j], off[j + 1]):
                    acc += lg_a[stats[t, k, s]]
        out[t] = acc
    return out


@njit(cache=True)
def _dpmpm_predictive(
    stats: np.ndarray,
    nk: np.ndarray,
    cols: np.ndarray,
    dja: np.ndarray,
    a: float,
    state_post: np.ndarray,
    pi_given: np.ndarray,
) -> float:
    """``Σ_t P(t) Σ_k E[π_k | t] Π_j (a + c_{k, cols_j}) / (d_j a + n_k)`` (see ``predictive``)."""
    T, K = nk.shape
    total = 0.0
    for t in range(T):
        acc = 0.0
        for k in range(K):
            prod = 1.0
            for j in range(cols.size):
                prod *= (a + stats[t, k, cols[j]]) / (dja[j] + nk[t, k])
            acc += pi_given[t, k] * prod
        total += state_post[t] * acc
    return total


def dpmpm_exact(
    codes: np.ndarray,
    d: np.ndarray,
    K: int,
    *,
    alpha_prior: tuple[float, float] = (0.25, 0.25),
    dirichlet_prior: float = 1.0,
) -> DPMPMExact:
    """Exact posterior of the package's DPMPM (complete integer-coded records ``codes [n, p]``).

    Examples
    --------
    >>> ex = dpmpm_exact(np.array([[0, 1], [1, 1], [0, 0]]), np.array([2, 2]), 2)
    >>> round(float(ex.pi_mean.sum()), 12)
    1.0
    """
    codes = np.asarray(codes, dtype=np.int64)
    d = np.asarray(d, dtype=np.int64)
    off = np.concatenate([[0], np.cumsum(d)])
    vals, counts = cells_of(codes)
    S = int(d.sum())
    onehot = np.zeros((len(vals), S), dtype=np.int64)
    for j in range(len(d)):
        onehot[np.arange(len(vals)), off[j] + vals[:, j]] = 1
    stats, log_mult = allocation_states(onehot, counts, K)
    nk = stats[:, :, off[0] : off[1]].sum(axis=2)
    a = float(dirichlet_prior)
    # the counts are integers ≤ n: log Γ of ``a + c`` and ``d_j a + n_k`` from tables
    n_max = len(codes) + 1
    lg_a = gammaln(a + np.arange(n_max, dtype=float)) - gammaln(a)
    lg_d = np.array([gammaln(dj * a) - gammaln(dj * a + np.arange(n_max, dtype=float))
                     for dj in d])
    ll = _dpmpm_log_lik(stats, nk, off, lg_a, lg_d)
    base = _dp_exact(stats, log_mult, nk, ll, *alpha_prior)
    out = DPMPMExact(**base.__dict__)
    out.d = d
    out.a_dir = a
    return out


def poisson_mixture_exact(
    y: np.ndarray,
    K: int,
    *,
    a_lambda: float,
    b_lambda: np.ndarray,
    alpha_prior: tuple[float, float] = (0.25, 0.25),
) -> DPMixtureExact:
    """Exact posterior (and evidence, ``1/y!`` terms included) of the Poisson mixture."""
    y = np.asarray(y, dtype=np.int64)
    b = np.broadcast_to(np.asarray(b_lambda, dtype=float), (y.shape[1],))
    vals, counts = cells_of(y)
    cell = np.concatenate([np.ones((len(vals), 1), dtype=np.int64), vals], axis=1)
    stats, log_mult = allocation_states(cell, counts, K)
    nk = stats[:, :, 0]
    s = stats[:, :, 1:].astype(float)  # [T, K, p]
    a = float(a_lambda)
    ll = (
        a * np.log(b)[None, None, :]
        - gammaln(a)
        + gammaln(a + s)
        - (a + s) * np.log(b[None, None, :] + nk[:, :, None])
    ).sum(axis=(1, 2))
    ll -= float((gammaln(y + 1.0)).sum())
    return _dp_exact(stats, log_mult, nk, ll, *alpha_prior)


def collapsed_log_posterior(y, z, d, K, alpha, a):
    """``log p(z | α) + log p(y | z)`` of the DPMPM with sticks and φ integrated out, by the
    formulas: ``Σ_{k<K} [log B(1 + n_k, α + m_k) + log α]`` (``m_k = Σ_{h>k} n_h``) plus each
    class's Dirichlet–multinomial marginal ``Σ_j [log Γ(d_j a) − log Γ(d_j a + n_k) +
    Σ_c (log Γ(a + n_kjc) − log Γ(a))]``."""
    y, z = np.asarray(y), np.asarray(z)
    nk = np.bincount(z, minlength=K)
    tail = np.cumsum(nk[::-1])[::-1]  # Σ_{h>=k} n_h
    out = float(np.sum(betaln(1.0 + nk[:-1], alpha + tail[1:]) + np.log(alpha)))
    for k in range(K):
        for j, dj in enumerate(d):
            ckj = np.bincount(y[z == k, j], minlength=int(dj))
            out += float(gammaln(dj * a) - gammaln(dj * a + nk[k])
                         + np.sum(gammaln(a + ckj) - gammaln(a)))
    return out


def brute_force_allocations(
    log_lik_class, n: int, K: int, alpha_prior: tuple[float, float] = (0.25, 0.25)
) -> float:
    """``log p(y)`` by a plain sum over all ``K^n`` labelled allocations (tiny ``n`` only).

    ``log_lik_class(members)`` returns the integrated log-likelihood of the records ``members``
    (index array) forming one class.
    """
    t = _LOG_ALPHA
    a_a, b_a = alpha_prior
    log_prior = a_a * np.log(b_a) - gammaln(a_a) + a_a * t - b_a * np.exp(t)
    dt = t[1] - t[0]
    wq = np.full(t.size, dt)
    wq[[0, -1]] = dt / 2
    terms = []
    for z in itertools.product(range(K), repeat=n):
        z = np.array(z)
        nk = np.bincount(z, minlength=K)[None, :]
        ll = sum(log_lik_class(np.flatnonzero(z == k)) for k in range(K))
        terms.append(ll + _log_p_z_given_alpha(nk.astype(float), t)[0] + log_prior + np.log(wq))
    return float(logsumexp(np.stack(terms)))


def poisson_predictive(
    ex: DPMixtureExact, v: np.ndarray, *, a_lambda: float, b_lambda: np.ndarray
) -> float:
    """Posterior predictive ``p(y_new = v | y)`` of the Poisson mixture (label invariant):
    per class a product of negative binomials (Gamma–Poisson with ``a + S_kj``, ``b_j + n_k``)."""
    v = np.asarray(v, dtype=float)
    b = np.broadcast_to(np.asarray(b_lambda, dtype=float), v.shape)
    n = ex.nk.astype(float)[:, :, None]
    s = ex.stats[:, :, 1:].astype(float)
    a1 = a_lambda + s
    b1 = b[None, None, :] + n
    lp = (gammaln(a1 + v) - gammaln(a1) - gammaln(v + 1.0) + a1 * np.log(b1 / (b1 + 1.0))
          - v * np.log(b1 + 1.0)).sum(axis=2)
    return float(np.einsum("t,tk,tk->", ex.state_post, ex._pi_given_state, np.exp(lp)))


def dpmpm_p_true_exact(
    y: np.ndarray,
    datasets: list[np.ndarray],
    i: int,
    d: np.ndarray,
    K: int,
    *,
    vary: list[int] | None = None,
    rows: np.ndarray | None = None,
    alpha_prior: tuple[float, float] = (0.25, 0.25),
    dirichlet_prior: float = 1.0,
) -> float:
    """Exact ``p_true`` of record ``i`` of a DPMPM synthesis: ``P(Y_i = y_i | Z, y_{-i})`` over
    the one-variable-different candidates of the columns ``vary`` (default all), uniform prior.

    The ``m`` released datasets are independent given ``y`` (methods, The intruder's
    posterior), and each is generated from the posterior predictive of the fit to
    ``(y*, y_{-i})``, so

    ``p(Z_(l) | y*, y_{-i}) = ev(y*, y_{-i}, Z_(l)) / ev(y*, y_{-i})
    = p(Z_(l) | y_{-i}) · p(y* | y_{-i}, Z_(l)) / p(y* | y_{-i})``

    (``ev``: exact DPMPM evidence; the first factor does not depend on ``y*``). Only the rows
    ``rows`` of each ``Z_(l)`` are synthesized (partial synthesis of selected records; default
    all) and enter as full records — in ``conditional_us`` mode this is the target of the
    package's augmented fit, not of the conditional likelihood (see ``DPMPM.fit_augmented``).
    Two exact posteriors per dataset (``y_{-i}`` and ``y_{-i} ∪ Z_(l)``) serve every candidate.
    """
    y = np.asarray(y, dtype=np.int64)
    d = np.asarray(d, dtype=np.int64)
    vary = list(range(len(d))) if vary is None else list(vary)
    kw = {"alpha_prior": alpha_prior, "dirichlet_prior": dirichlet_prior}
    rest = np.delete(y, i, axis=0)
    cands = [y[i].copy()]
    for j in vary:
        for lev in range(d[j]):
            if lev != y[i, j]:
                c = y[i].copy()
                c[j] = lev
                cands.append(c)
    base = dpmpm_exact(rest, d, K, **kw)
    ll = -len(datasets) * np.log([base.predictive(c) for c in cands])
    for Z in datasets:
        Z = np.asarray(Z, dtype=np.int64)
        zr = Z if rows is None else Z[rows]
        aug = dpmpm_exact(np.vstack([rest, zr]), d, K, **kw)
        ll += np.log([aug.predictive(c) for c in cands])
    return float(1.0 / np.exp(ll - ll[0]).sum())


def multinomial_column_terms(alpha: np.ndarray, s: np.ndarray, a: int) -> np.ndarray:
    """A one-class DPMPM's (a product of multinomials, Dirichlet(1) priors) exact
    ``log p(Z | y*) − log p(Z | y)`` for the candidates ``y*`` that change a record's level of
    one column from ``a`` to each level ``b`` (0 at ``a``): ``α = 1 + c(y)`` the column's
    posterior Dirichlet parameters, ``s [m, d]`` its level counts in each released dataset
    (derivation: tests/attribute/test_flat_posterior.py)."""
    out = (np.log((alpha[None, :] + s) / alpha[None, :]).sum(axis=0)
           - np.log((alpha[a] - 1 + s[:, a]) / (alpha[a] - 1)).sum())
    out[a] = 0.0
    return out


# ------------------------------------------------------------------------------ normal regression
def normal_regression_log_predictive(
    X: np.ndarray, y: np.ndarray, X_new: np.ndarray, y_new: np.ndarray
) -> float:
    """``log p(y_new | y)`` of the normal linear model ``y = Xβ + ε``, ``ε ~ N(0, σ² I)``, under
    the package's prior ``p(β, σ²) ∝ σ^{-2}`` (``SequentialRegression``'s exact posterior).

    The posterior predictive of the rows ``X_new`` is multivariate Student t with ``ν = n − q``
    degrees of freedom, location ``X_new β̂`` and scale ``s² (I + X_new (XᵀX)^{-1} X_newᵀ)``
    (``β̂`` least squares, ``s²`` the residual mean square): the limit of the conjugate
    normal–inverse-gamma prior, whose evidence ratio it is. Computed with
    :class:`scipy.stats.multivariate_t`.
    """
    from scipy import stats

    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    n, q = X.shape
    beta, *_ = np.linalg.lstsq(X, y, rcond=None)
    resid = y - X @ beta
    nu = n - q
    s2 = float(resid @ resid) / nu
    xtx_inv = np.linalg.inv(X.T @ X)
    shape = s2 * (np.eye(len(X_new)) + X_new @ xtx_inv @ X_new.T)
    return float(stats.multivariate_t(loc=X_new @ beta, shape=shape, df=nu).logpdf(y_new))


def normal_regression_p_true_exact(
    X: np.ndarray,
    y: np.ndarray,
    datasets: list[np.ndarray],
    i: int,
    candidates: np.ndarray,
) -> np.ndarray:
    """Exact intruder posterior over ``candidates`` (value 0 the truth) for record ``i`` of a
    one-outcome normal regression synthesis, uniform prior: ``P(Y_i = y* | Z, y_{-i})``.

    Each ``Z_(l)`` (outcome column; design rows ``X``, the unsynthesized predictors released
    as they are) is a draw from the posterior predictive of the fit to ``(y*, y_{-i})``, and the
    ``m`` datasets are independent given the data, so ``log p(Z | y*, y_{-i}) =
    Σ_l log t-density of Z_(l)`` (:func:`normal_regression_log_predictive` with ``y_i = y*``).
    Returns the posterior probabilities of all candidates (``[0]`` is ``p_true``).
    """
    ll = np.zeros(len(candidates))
    for g, c in enumerate(candidates):
        yc = np.array(y, dtype=np.float64)
        yc[i] = c
        ll[g] = sum(normal_regression_log_predictive(X, yc, X, np.asarray(Z)) for Z in datasets)
    return np.exp(ll - logsumexp(ll))


# ------------------------------------------------------------------------------ comparisons
def _z_over_replicates(est: np.ndarray, truth: np.ndarray) -> np.ndarray:
    """(replicate mean − exact) / (sd / √reps), per record."""
    return (est.mean(axis=0) - truth) / (est.std(axis=0, ddof=1) / np.sqrt(len(est)))


def t_bound(reps: int, comparisons: int, family_alpha: float) -> float:
    """Bonferroni bound for ``comparisons`` statistics ``_z_over_replicates`` of one test.

    Each is Student-t with ``reps − 1`` degrees of freedom when the estimator is unbiased, so
    ``|t| ≤ t_{reps−1}(1 − family_alpha / (2 · comparisons))`` for all of them fails an
    unbiased estimator with probability at most ``family_alpha``. For 10 replicates and 3
    records the bound at a family-wise 5 % is 2.93 (the tests' default 3.0); for 16 replicates
    and 6 comparisons at 1 %, 3.82."""
    return float(stats.t.ppf(1.0 - family_alpha / (2.0 * comparisons), reps - 1))


def check_p_true(
    est: np.ndarray, truth: np.ndarray, max_abs: float, *, z_max: float = 3.0
) -> None:
    """|t| ≤ ``z_max`` per record (see :func:`t_bound`) and |mean − exact| ≤ ``max_abs``."""
    z = _z_over_replicates(est, truth)
    err = est.mean(axis=0) - truth
    msg = f"exact {truth.round(5)}, mean {est.mean(axis=0).round(5)}, z {z.round(2)}"
    assert np.all(np.abs(z) <= z_max), msg
    assert np.all(np.abs(err) <= max_abs), msg


# ------------------------------------------------------------------------------ exact draws
def dpmpm_exact_draws(
    codes: np.ndarray,
    d: np.ndarray,
    K: int,
    size: int,
    rng: np.random.Generator,
    *,
    alpha_prior: tuple[float, float] = (0.25, 0.25),
) -> tuple[np.ndarray, np.ndarray, float, float]:
    """Independent draws of ``(z, α)`` from the exact DPMPM posterior of a tiny table.

    Enumerates the allocations of each cell's records to the ``K`` classes (compositions of the
    cell count; ``Π_c N_c! / Π_k T_ck!`` allocations each), with ``φ`` (Dirichlet(1, …, 1)
    priors) and the sticks integrated out and ``α`` on the quadrature grid of
    :func:`dpmpm_exact`; a drawn state is turned into memberships by a random permutation of
    each cell's records. Returns ``z [size, n]``,
    ``α [size]`` and the exact ``E[α | y]`` and ``E[#occupied | y]`` of the enumeration (equal to
    :func:`dpmpm_exact`'s, checked by the tests). The grid draws of α carry the quadrature's
    discretisation (spacing 0.22 in log α), which leaves their mean exact.
    """
    codes = np.asarray(codes, dtype=np.int64)
    n = len(codes)
    cells, inv, nc = np.unique(codes, axis=0, return_inverse=True, return_counts=True)
    inv = inv.ravel()
    comps = [np.array([c for c in itertools.product(range(N + 1), repeat=K) if sum(c) == N])
             for N in nc]
    states = np.array([np.stack(s) for s in itertools.product(*comps)])  # [T, C, K]
    nk = states.sum(axis=1)
    log_w = sum(gammaln(nc[c] + 1) - gammaln(states[:, c] + 1).sum(axis=1)
                for c in range(len(nc)))
    for j, dj in enumerate(np.asarray(d, dtype=np.int64)):
        cnt = np.stack([states[:, cells[:, j] == v].sum(axis=1) for v in range(dj)], axis=-1)
        log_w = log_w + (gammaln(dj) - gammaln(dj + nk)).sum(axis=1) + gammaln(1 + cnt).sum(
            axis=(1, 2))
    a, b = alpha_prior
    t = _LOG_ALPHA
    dt = t[1] - t[0]
    wq = np.full(t.size, dt)
    wq[[0, -1]] = dt / 2
    base = a * np.log(b) - gammaln(a) + a * t - b * np.exp(t) + np.log(wq)
    joint = log_w[:, None] + _log_p_z_given_alpha(nk.astype(float), t) + base[None, :]
    post = np.exp(joint - logsumexp(joint))
    flat = rng.choice(post.size, size=size, p=post.ravel() / post.sum())
    si, ai = np.divmod(flat, t.size)
    z = np.empty((size, n), dtype=np.int64)
    for s in range(size):
        for c in range(len(nc)):
            idx = rng.permutation(np.flatnonzero(inv == c))
            z[s, idx] = np.repeat(np.arange(K), states[si[s], c])
    occ = (nk > 0).sum(axis=1)
    return z, np.exp(t[ai]), float(post.sum(axis=0) @ np.exp(t)), float(post.sum(axis=1) @ occ)


def alpha_given_counts(
    nk: np.ndarray, alpha_prior: tuple[float, float] = (0.25, 0.25)
) -> np.ndarray:
    """``E[α | z]`` of the truncated stick breaking for class counts ``nk [N, K]`` (labelled
    classes; the data enter only through ``z``), by the quadrature of :func:`dpmpm_exact`."""
    a, b = alpha_prior
    t = _LOG_ALPHA
    lp = _log_p_z_given_alpha(np.asarray(nk, dtype=float), t) + a * t - b * np.exp(t)
    w = np.exp(lp - lp.max(axis=1, keepdims=True))
    return (w @ np.exp(t)) / w.sum(axis=1)


def polya_brute(donors: Counter, syn: Counter, uniform: bool) -> float:
    """One CART node's Pólya-urn (multinomial for ``uniform``) log-likelihood in full, value by
    value: what ``trees.cart_polya.PolyaTables`` and the CART plug-in are tested against."""
    n_l = sum(donors.values())
    u_l = sum(syn.values())
    if u_l == 0:
        return 0.0
    if n_l == 0:
        return float("-inf")
    if any(donors.get(v, 0) == 0 for v, s in syn.items() if s > 0):
        return float("-inf")
    if uniform:  # each routed record copies a donor chosen uniformly: multinomial sequence
        return float(sum(s * (np.log(donors[v]) - np.log(n_l)) for v, s in syn.items()))
    out = gammaln(n_l) - gammaln(n_l + u_l)
    for v, s in syn.items():
        out += gammaln(donors[v] + s) - gammaln(donors[v])
    return float(out)
