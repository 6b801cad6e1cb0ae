"""Monte Carlo node likelihood terms of the CART plug-in. See :doc:`/methods/attribute`."""

from __future__ import annotations

import numpy as np

from bayes_risk._numeric import logsumexp

_MC_BLOCK = 1 << 21  # entries per (bootstrap replicate × synthetic value) block: bounds memory


def _z_blocks(n_z: int, width: int) -> list[slice]:
    step = max(1, _MC_BLOCK // max(width, 1))
    return [slice(a, a + step) for a in range(0, n_z, step)]


def mc_node_loglik(counts: np.ndarray, log_k: np.ndarray, log_m: np.ndarray, z_weights: np.ndarray,
                   *, return_terms: bool = False) -> float | tuple[float, np.ndarray]:
    """``log (1/R) Σ_r Π_s p_r(z_s)`` of a node's distinct values (``z_weights``: their counts),
    ``p_r`` the kernel mixture of the donors with bootstrap multiplicities ``counts[r]``; with
    ``return_terms`` also the replicates' ``[R]`` terms (for :func:`mc_log_var`)."""
    R = counts.shape[0]
    with np.errstate(divide="ignore"):
        lf = -float(z_weights.sum()) * np.log(counts @ np.exp(log_m))
        for sl in _z_blocks(log_k.shape[0], max(R, counts.shape[1])):
            lk = log_k[sl]
            mx = lk.max(axis=1)
            if not np.all(np.isfinite(mx)):  # a value no donor can produce
                return (float("-inf"), np.full(R, -np.inf)) if return_terms else float("-inf")
            num = counts @ np.exp(lk - mx[:, None]).T  # (R, block)
            lf = lf + (np.log(num) + mx) @ z_weights[sl]
    val = float(logsumexp(lf) - np.log(R))
    return (val, lf) if return_terms else val


def mc_node_loglik_extra(counts: np.ndarray, log_k: np.ndarray, log_m: np.ndarray,
                         log_k_extra: np.ndarray, log_m_extra: np.ndarray, z_weights: np.ndarray, *,
                         return_terms: bool = False) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
    """:func:`mc_node_loglik` ``[n_x]`` for donors ``D`` plus one extra donor (the last column of
    ``counts``) taking each of ``n_x`` values within ``[min D, max D]`` (rank-one update)."""
    R = counts.shape[0]
    c_d, c_x = counts[:, :-1], counts[:, -1]
    n_x = log_k_extra.shape[0]
    with np.errstate(divide="ignore", invalid="ignore"):
        den = (c_d @ np.exp(log_m))[None, :] + c_x[None, :] * np.exp(log_m_extra)[:, None]
        lf = -float(z_weights.sum()) * np.log(den)  # (n_x, R)
        for sl in _z_blocks(log_k.shape[0], max(R, c_d.shape[1])):
            lk = log_k[sl]
            mx_d = lk.max(axis=1)
            safe_d = np.where(np.isfinite(mx_d), mx_d, 0.0)
            s_d = c_d @ np.exp(lk - safe_d[:, None]).T  # (R, block), scaled by exp(safe_d)
            mx = np.maximum(mx_d[None, :], log_k_extra[:, sl])  # (n_x, block)
            for x in range(n_x):
                if not np.all(np.isfinite(mx[x])):
                    lf[x] = -np.inf
                    continue
                num = s_d * np.exp(safe_d - mx[x])[None, :] + c_x[:, None] * np.exp(
                    log_k_extra[x, sl] - mx[x]
                )[None, :]
                lf[x] = lf[x] + (np.log(num) + mx[x]) @ z_weights[sl]
    vals = logsumexp(lf, axis=1) - np.log(R)
    return (vals, lf) if return_terms else vals


def mc_log_var(lf_a: np.ndarray, lf_b: np.ndarray | None = None, *, paired: bool = True) -> float:
    """Delta-method variance of ``log p̂_a − log p̂_b`` (``lf_b=None``: of ``log p̂_a``);
    ``paired``: common random numbers."""

    def u(lf: np.ndarray) -> np.ndarray | None:
        if not np.isfinite(lf).any():
            return None
        with np.errstate(under="ignore"):
            w = np.exp(lf - np.max(lf))
        return w / w.mean()

    ua = u(lf_a)
    R = lf_a.size
    if lf_b is None:
        return 0.0 if ua is None else float(np.var(ua) / R)
    ub = u(lf_b)
    if ua is None or ub is None:
        return 0.0
    if paired:
        return float(np.var(ua - ub) / R)
    return float((np.var(ua) + np.var(ub)) / R)


def atom_hit(z: np.ndarray, values: np.ndarray) -> bool:
    """Some synthetic value equals a donor value (to 1e-9 relative)."""
    if z.size == 0 or values.size == 0:
        return False
    v = np.unique(values)
    k = np.clip(np.searchsorted(v, z), 1, v.size - 1) if v.size > 1 else np.zeros(z.size, int)
    near = np.minimum(np.abs(z - v[k]), np.abs(z - v[np.maximum(k - 1, 0)]))
    return bool(np.any(near <= 1e-9 * np.maximum(1.0, np.abs(z))))
