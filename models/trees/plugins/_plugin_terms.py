"""Monte Carlo node likelihood terms of the CART plug-in. See :doc:`/methods/attribute`."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bayes_risk._numeric import logsumexp

_MC_BLOCK = 1 << 21  # entries per (bootstrap replicate × synthetic value) block: bounds memory


def _z_blocks(n_z: int, width: int) -> list[slice]:
    step = max(1, _MC_BLOCK // max(width, 1))
    return [slice(a, a + step) for a in range(0, n_z, step)]


def compositions(n: int, uniform: bool) -> tuple[np.ndarray, np.ndarray | None]:
    """Every bootstrap multiplicity vector of ``n`` donors (the ``C(2n−1, n)`` vectors of ``n``
    counts summing to ``n``) and their log weights, such that the mean of ``w_c e^{f(c)}`` over
    them is the bootstrap's expectation of ``e^{f}``: ``None`` for the Bayesian bootstrap, under
    which every vector is equally likely (Dirichlet–multinomial with parameters 1), the
    multinomial probability times their number for uniform donors."""
    from itertools import combinations

    from scipy.special import gammaln

    # stars and bars: n − 1 bars among 2n − 1 places
    bars = np.array(list(combinations(range(2 * n - 1), n - 1)), dtype=np.int64).reshape(-1, n - 1)
    edges = np.concatenate([np.full((len(bars), 1), -1), bars,
                            np.full((len(bars), 1), 2 * n - 1)], axis=1)
    c = (np.diff(edges, axis=1) - 1).astype(np.float64)
    if not uniform:
        return c, None
    log_p = gammaln(n + 1.0) - gammaln(c + 1.0).sum(axis=1) - n * np.log(n)
    return c, log_p + np.log(len(c))


def mc_node_loglik(counts: np.ndarray, log_k: np.ndarray, log_m: np.ndarray, z_weights: np.ndarray,
                   *, log_w: np.ndarray | None = None, return_terms: bool = False
                   ) -> float | tuple[float, np.ndarray]:
    """``log (1/R) Σ_r w_r Π_s p_r(z_s)`` of a node's distinct values (``z_weights``: their
    counts), ``p_r`` the kernel mixture of the donors with bootstrap multiplicities
    ``counts[r]`` and ``log_w`` their weights (none: 1; every vector of :func:`compositions`:
    the exact expectation); with ``return_terms`` also the ``[R]`` weighted terms (for
    :func:`mc_log_var`)."""
    R = counts.shape[0]
    with np.errstate(divide="ignore"):
        lf = -float(z_weights.sum()) * np.log(counts @ np.exp(log_m))
        if log_w is not None:
            lf = lf + log_w
        for sl in _z_blocks(log_k.shape[0], max(R, counts.shape[1])):
            lk = log_k[sl]
            mx = lk.max(axis=1)
            if not np.all(np.isfinite(mx)):  # a value no donor can produce
                return (float("-inf"), np.full(R, -np.inf)) if return_terms else float("-inf")
            num = counts @ np.exp(lk - mx[:, None]).T  # (R, block)
            lf = lf + (np.log(num) + mx) @ z_weights[sl]
    val = float(logsumexp(lf) - np.log(R))
    return (val, lf) if return_terms else val


@dataclass(frozen=True)
class DonorTerms:
    """The donors' side of :func:`mc_node_loglik_extra`: the extra donor's multiplicities
    ``c_x [R]``, the donors' normalising sums ``den [R]`` and, per block of synthetic values,
    the donors' kernel sums ``[R, block]`` scaled by their largest log-kernel."""

    c_x: np.ndarray
    den: np.ndarray
    blocks: list[tuple[slice, np.ndarray, np.ndarray, np.ndarray]]
    log_w: np.ndarray | None = None


def donor_terms(counts: np.ndarray, log_k: np.ndarray, log_m: np.ndarray,
                log_w: np.ndarray | None = None) -> DonorTerms:
    """:class:`DonorTerms` of donors with log-kernels ``log_k [n_z, n]`` and ``log_m [n]``,
    bootstrap multiplicities ``counts[:, :n]`` (the last column: the extra donor's) and their
    weights ``log_w`` (:func:`mc_node_loglik`)."""
    c_d = counts[:, :-1]
    blocks = []
    with np.errstate(divide="ignore", invalid="ignore"):
        den = c_d @ np.exp(log_m)
        for sl in _z_blocks(log_k.shape[0], max(counts.shape[0], c_d.shape[1])):
            lk = log_k[sl]
            mx_d = lk.max(axis=1)
            safe_d = np.where(np.isfinite(mx_d), mx_d, 0.0)
            blocks.append((sl, c_d @ np.exp(lk - safe_d[:, None]).T, mx_d, safe_d))
    return DonorTerms(counts[:, -1], den, blocks, log_w)


def mc_node_loglik_extra(donors: DonorTerms, log_k_extra: np.ndarray, log_m_extra: np.ndarray,
                         z_weights: np.ndarray, *, return_terms: bool = False
                         ) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
    """:func:`mc_node_loglik` ``[n_x]`` for donors ``D`` plus one extra donor taking each of
    ``n_x`` values within ``[min D, max D]`` (rank-one update); ``donors``: the donors' side,
    :func:`donor_terms`, computed once for every extra value a node is asked about."""
    R = donors.c_x.size
    n_x = log_k_extra.shape[0]
    with np.errstate(divide="ignore", invalid="ignore"):
        den = donors.den[None, :] + donors.c_x[None, :] * np.exp(log_m_extra)[:, None]
        lf = -float(z_weights.sum()) * np.log(den)  # (n_x, R)
        if donors.log_w is not None:
            lf = lf + donors.log_w[None, :]
        for sl, s_d, mx_d, safe_d in donors.blocks:
            mx = np.maximum(mx_d[None, :], log_k_extra[:, sl])  # (n_x, block)
            for x in range(n_x):
                if not np.all(np.isfinite(mx[x])):
                    lf[x] = -np.inf
                    continue
                num = s_d * np.exp(safe_d - mx[x])[None, :] + donors.c_x[:, None] * np.exp(
                    log_k_extra[x, sl] - mx[x]
                )[None, :]
                lf[x] = lf[x] + (np.log(num) + mx[x]) @ z_weights[sl]
    vals = logsumexp(lf, axis=1) - np.log(R)
    return (vals, lf) if return_terms else vals


def mc_log_var(lf_a: np.ndarray, lf_b: np.ndarray | None = None, *,
               paired: bool | np.ndarray = True) -> float | np.ndarray:
    """Delta-method variance of ``log p̂_a − log p̂_b`` (``lf_b=None``: of ``log p̂_a``) from the
    replicates' terms ``[R]``; ``paired``: common random numbers. ``lf_a`` may hold one row a
    candidate, ``[G, R]`` (``paired`` then one flag a row): the ``[G]`` variances, in one pass
    rather than one call a candidate. No finite term: 0 (an impossible value has no Monte
    Carlo error)."""

    def u(lf: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        ok = np.isfinite(lf).any(axis=-1)
        mx = np.where(ok, np.max(lf, axis=-1), 0.0)
        w = np.exp(lf - mx[:, None])
        return w / w.mean(axis=-1, keepdims=True), ok

    rows = np.atleast_2d(np.asarray(lf_a, dtype=np.float64))
    R = rows.shape[-1]
    with np.errstate(under="ignore", invalid="ignore", divide="ignore"):
        ua, ok = u(rows)
        if lf_b is None:
            v = np.var(ua, axis=-1) / R
        else:
            ub, ok_b = u(np.asarray(lf_b, dtype=np.float64)[None, :])
            v = np.where(paired, np.var(ua - ub, axis=-1),
                         np.var(ua, axis=-1) + np.var(ub, axis=-1)) / R
            ok = ok & ok_b
    v = np.where(ok, v, 0.0)
    return float(v[0]) if np.ndim(lf_a) == 1 else v


def atom_hit(z: np.ndarray, values: np.ndarray) -> bool:
    """Some synthetic value equals a donor value (to 1e-9 relative)."""
    if z.size == 0 or values.size == 0:
        return False
    v = np.unique(values)
    k = np.clip(np.searchsorted(v, z), 1, v.size - 1) if v.size > 1 else np.zeros(z.size, int)
    near = np.minimum(np.abs(z - v[k]), np.abs(z - v[np.maximum(k - 1, 0)]))
    return bool(np.any(near <= 1e-9 * np.maximum(1.0, np.abs(z))))
