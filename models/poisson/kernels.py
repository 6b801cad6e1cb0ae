"""Numerical kernels of the Poisson-mixture synthesizers (Hu 2019 §3.3.3)."""

from __future__ import annotations

import math

import numba as nb
import numpy as np
from scipy.special import gammaln

__all__ = [
    "class_log_weights",
    "sample_memberships",
    "component_stats",
    "lambda_params",
    "record_loglik",
    "map_memberships",
    "multinomial_group_loglik",
    "tail_threshold",
    "tcmm_groups",
    "redistribute_totals",
]


# A missing count is NaN in ``y``: the kernels leave its Poisson factor out, which sums it over
# 0, 1, 2, ... (the factor sums to 1), so every likelihood is that of the observed counts.
def _filled(y: np.ndarray) -> np.ndarray:
    """``y`` with missing counts set to 0, whose ``lgamma(0 + 1) = 0`` adds nothing."""
    return np.where(np.isnan(y), 0.0, y)


@nb.njit(cache=True)
def _class_log_weights(y, log_pi, lam, log_lam, lgy):  # pragma: no cover - compiled
    n, p = y.shape
    K = log_pi.shape[0]
    out = np.empty((n, K))
    for i in range(n):
        for k in range(K):
            s = log_pi[k]
            for j in range(p):
                if y[i, j] == y[i, j]:  # a missing count (NaN) is summed out: its factor is 1
                    s += y[i, j] * log_lam[k, j] - lam[k, j]
            out[i, k] = s - lgy[i]
    return out


def class_log_weights(y: np.ndarray, log_pi: np.ndarray, lam: np.ndarray) -> np.ndarray:
    """``[n, K]`` array of ``log π_k + Σ_j log Poisson(y_ij | λ_kj)`` (Hu 2019 §3.3.3), the sum
    over the observed counts (NaN: missing)."""
    y = np.ascontiguousarray(y, dtype=np.float64)
    lam = np.ascontiguousarray(lam, dtype=np.float64)
    with np.errstate(divide="ignore"):
        log_lam = np.log(lam)
    lgy = gammaln(_filled(y) + 1.0).sum(axis=1)
    return _class_log_weights(y, np.ascontiguousarray(log_pi, dtype=np.float64), lam, log_lam, lgy)


@nb.njit(cache=True)
def _sample_memberships(y, log_pi, lam, log_lam, u):  # pragma: no cover - compiled
    n, p = y.shape
    K = log_pi.shape[0]
    z = np.empty(n, dtype=np.int64)
    w = np.empty(K)
    loglik = 0.0  # Σ_i logsumexp_k(...) without the lgamma(y + 1) constant
    for i in range(n):
        mx = -np.inf
        for k in range(K):
            s = log_pi[k]
            for j in range(p):
                if y[i, j] == y[i, j]:  # missing (NaN): summed out
                    s += y[i, j] * log_lam[k, j] - lam[k, j]
            w[k] = s
            if s > mx:
                mx = s
        tot = 0.0
        for k in range(K):
            w[k] = math.exp(w[k] - mx)
            tot += w[k]
        loglik += mx + math.log(tot)
        target = u[i] * tot
        acc = 0.0
        zi = K - 1
        for k in range(K):
            acc += w[k]
            if acc >= target and w[k] > 0.0:
                zi = k
                break
        z[i] = zi
    return z, loglik


def sample_memberships(
    y: np.ndarray, log_pi: np.ndarray, lam: np.ndarray, rng: np.random.Generator,
    *, return_loglik: bool = False,
):
    """Draw ``z_i ~ Cat(softmax(log π_k + Σ_j log Poisson(y_ij|λ_kj)))`` for every record, the
    sum over its observed counts (NaN: missing, summed out).

    ``return_loglik``: also ``Σ_i log p(y_i | Θ)``, in the same pass.
    """
    y = np.ascontiguousarray(y, dtype=np.float64)
    lam = np.ascontiguousarray(lam, dtype=np.float64)
    with np.errstate(divide="ignore"):
        log_lam = np.log(lam)
    u = rng.random(y.shape[0])
    z, ll = _sample_memberships(y, np.ascontiguousarray(log_pi, dtype=np.float64), lam, log_lam, u)
    if return_loglik:
        return z, float(ll - gammaln(_filled(y) + 1.0).sum())
    return z


@nb.njit(cache=True)
def _component_stats(y, z, K):  # pragma: no cover - compiled
    n, p = y.shape
    n_k = np.zeros(K)
    s_kj = np.zeros((K, p))
    for i in range(n):
        k = z[i]
        n_k[k] += 1.0
        for j in range(p):
            if y[i, j] == y[i, j]:  # a missing count adds nothing to T_kj
                s_kj[k, j] += y[i, j]
    return n_k, s_kj


def lambda_params(
    n_k: np.ndarray, s_kj: np.ndarray, a_lam: float, b_lam: np.ndarray | float
) -> tuple[np.ndarray, np.ndarray]:
    """Shape and rate of the full conditional ``λ_kj ~ Gamma(a_λ + T_kj, b_λj + n_k)``.

    ``n_k`` [K], or [K, p] with missing counts: ``n_kj``, the members of ``k`` observed in
    column ``j`` (their missing counts summed out, ``T_kj`` their observed total).

    Examples
    --------
    >>> n_k, s = component_stats(np.array([[2.0], [4.0], [3.0]]), np.zeros(3, dtype=int), 1)
    >>> lambda_params(n_k, s, 1.0, 0.1)
    (array([[10.]]), array([[3.1]]))
    """
    b = np.asarray(b_lam, dtype=np.float64)
    b = np.broadcast_to(b, (s_kj.shape[1],))
    n = np.asarray(n_k, dtype=np.float64)
    return a_lam + s_kj, b[None, :] + (n[:, None] if n.ndim == 1 else n)


def component_stats(y: np.ndarray, z: np.ndarray, K: int) -> tuple[np.ndarray, np.ndarray]:
    """Component sizes ``n_k`` and totals ``T_kj = Σ_{i: z_i = k} y_ij`` (observed counts only;
    NaN: missing)."""
    return _component_stats(
        np.ascontiguousarray(y, dtype=np.float64), np.ascontiguousarray(z, dtype=np.int64), int(K)
    )


@nb.njit(cache=True)
def _record_loglik(y, lgy, log_pi, lam, log_lam):  # pragma: no cover - compiled
    H, K = log_pi.shape
    n, p = y.shape
    out = np.empty((H, n))
    w = np.empty(K)
    for h in range(H):
        for i in range(n):
            mx = -np.inf
            for k in range(K):
                s = log_pi[h, k]
                for j in range(p):
                    if y[i, j] == y[i, j]:  # missing (NaN): summed out
                        s += y[i, j] * log_lam[h, k, j] - lam[h, k, j]
                w[k] = s
                if s > mx:
                    mx = s
            if mx == -np.inf:
                out[h, i] = -np.inf
                continue
            tot = 0.0
            for k in range(K):
                tot += math.exp(w[k] - mx)
            out[h, i] = mx + math.log(tot) - lgy[i]
    return out


def record_loglik(y: np.ndarray, log_pi: np.ndarray, lam: np.ndarray) -> np.ndarray:
    """MP record log-likelihood ``[H, n]`` (Hu 2019 §3.3.3).

    ``y [n, p]`` (NaN: missing, summed out), ``log_pi [H, K]``, ``lam [H, K, p]``.
    """
    y = np.ascontiguousarray(y, dtype=np.float64)
    lam = np.ascontiguousarray(lam, dtype=np.float64)
    with np.errstate(divide="ignore"):
        log_lam = np.log(lam)
    # 0 * log(0) = 0 for a zero count under a zero rate
    log_lam = np.where(np.isneginf(log_lam), -1e300, log_lam)
    lgy = gammaln(_filled(y) + 1.0).sum(axis=1)
    return _record_loglik(y, lgy, np.ascontiguousarray(log_pi, dtype=np.float64), lam, log_lam)


def map_memberships(y: np.ndarray, log_pi: np.ndarray, lam: np.ndarray) -> np.ndarray:
    """MAP component of every record under one draw: ``argmax_k p(k | y_i, Θ)`` (ties: lowest k)."""
    return np.argmax(class_log_weights(y, log_pi, lam), axis=1).astype(np.int64)


def multinomial_group_loglik(values: np.ndarray, total: float) -> float:
    """``log Multinomial(values; total, 1/g, …, 1/g)``, ``g = len(values)``; ``-inf`` if the sum
    differs.

    Hu 2019 §3.3.3: ``log [T! / Π z_i!] − T log g``.

    Examples
    --------
    >>> round(float(np.exp(multinomial_group_loglik(np.array([2, 3]), 5))), 7)
    0.3125
    """
    values = np.asarray(values, dtype=np.float64)
    g = values.size
    if g == 0:
        return 0.0 if total == 0 else -np.inf
    if not np.isclose(values.sum(), total, rtol=0.0, atol=1e-9):
        return -np.inf
    return float(gammaln(total + 1.0) - gammaln(values + 1.0).sum() - total * np.log(g))


def groups_loglik(z_values: np.ndarray, groups: np.ndarray, totals: np.ndarray) -> float:
    """Sum of :func:`multinomial_group_loglik` over groups ``0..G-1`` of one column.

    ``groups[i]`` is record ``i``'s group (``-1``: not part of any group); ``totals[g]`` the
    confidential total of group ``g``.
    """
    z_values = np.asarray(z_values, dtype=np.float64)
    groups = np.asarray(groups)
    ng = totals.shape[0]
    sums = np.bincount(groups[groups >= 0], weights=z_values[groups >= 0], minlength=ng)
    cnt = np.bincount(groups[groups >= 0], minlength=ng)
    if np.any(np.abs(sums - totals) > 1e-9):
        return -np.inf
    occupied = cnt > 0
    if np.any(~occupied & (totals != 0)):
        return -np.inf
    lg = gammaln(z_values[groups >= 0] + 1.0).sum()
    return float(
        np.sum(gammaln(totals[occupied] + 1.0) - totals[occupied] * np.log(cnt[occupied])) - lg
    )


def tail_threshold(x: np.ndarray, q: float) -> float:
    """Inverse-CDF empirical ``q``-quantile: smallest observed ``v`` with ``#{x ≤ v}/n ≥ q``
    (Hu 2019 §3.3.3).

    Examples
    --------
    >>> tail_threshold(np.array([1, 2, 3, 4, 50, 100]), 0.6)
    4.0
    """
    xs = np.sort(np.asarray(x, dtype=np.float64))
    n = xs.size
    # smallest index r (0-based) with (r+1)/n >= q, with a tolerance against 0.6*5 = 2.9999...
    r = int(np.ceil(q * n - 1e-9)) - 1
    r = min(max(r, 0), n - 1)
    return float(xs[r])


def tcmm_groups(y_col: np.ndarray, z: np.ndarray, K: int, q: float) -> tuple[np.ndarray, float]:
    """Groups of one column under TCMM: components for non-tail records, group ``K`` for the tail.

    Returns ``(groups [n], tau)``; tail ``Q_j = {i : y_ij > τ_j}``.
    """
    tau = tail_threshold(y_col, q)
    g = np.asarray(z, dtype=np.int64).copy()
    g[np.asarray(y_col) > tau] = K
    return g, tau


def redistribute_totals(
    groups: np.ndarray, totals: np.ndarray, rng: np.random.Generator
) -> np.ndarray:
    """Draw each group's values ``~ Multinomial(T_g; 1/n_g, …, 1/n_g)`` (Hu 2019 §3.3.3, MM step):
    ``groups [n]`` in ``0..G-1``, integer ``totals [G]``; each group's sum is its total exactly."""
    groups = np.asarray(groups, dtype=np.int64)
    out = np.zeros(groups.size, dtype=np.int64)
    order = np.argsort(groups, kind="stable")
    gs = groups[order]
    bounds = np.flatnonzero(np.diff(gs)) + 1
    starts = np.concatenate([[0], bounds])
    ends = np.concatenate([bounds, [gs.size]])
    for s, e in zip(starts, ends, strict=False):
        g = gs[s]
        size = e - s
        tot = int(round(float(totals[g])))
        out[order[s:e]] = rng.multinomial(tot, np.full(size, 1.0 / size))
    return out
