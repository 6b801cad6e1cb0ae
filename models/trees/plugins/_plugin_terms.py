"""Monte Carlo node likelihood terms of the CART plug-in. See :doc:`/methods/attribute`."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bayes_risk.models.trees.plugins._plugin_kernels import (
    difference_var,
    extra_base,
    extra_block,
    log_mean_exp_rows,
    log_var_rows,
    node_lf,
    node_lf_many,
)

_NO_W = np.zeros(0)  # no replicate weights (a kernel argument must be an array)
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
    counts = np.ascontiguousarray(counts, dtype=np.float64)
    val, lf = node_lf(counts, np.ascontiguousarray(log_k, dtype=np.float64),
                       np.ascontiguousarray(log_m, dtype=np.float64),
                       np.ascontiguousarray(z_weights, dtype=np.float64),
                       _NO_W if log_w is None else np.ascontiguousarray(log_w, dtype=np.float64),
                       log_w is not None)
    return (float(val), lf) if return_terms else float(val)


def mc_node_loglik_many(counts: np.ndarray, log_k: np.ndarray, log_m: np.ndarray,
                        z_weights: np.ndarray, *, log_w: np.ndarray | None = None
                        ) -> tuple[np.ndarray, np.ndarray]:
    """:func:`mc_node_loglik` ``[K]`` and its terms ``[K, R]`` of ``K`` sets of donors sharing
    ``counts`` (``log_k [K, n_z, n]``, ``log_m [K, n]``), in one call."""
    return node_lf_many(np.ascontiguousarray(counts, dtype=np.float64),
                        np.ascontiguousarray(log_k, dtype=np.float64),
                        np.ascontiguousarray(log_m, dtype=np.float64),
                        np.ascontiguousarray(z_weights, dtype=np.float64),
                        _NO_W if log_w is None else np.ascontiguousarray(log_w, dtype=np.float64),
                        log_w is not None)


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
    log_k_extra = np.ascontiguousarray(log_k_extra, dtype=np.float64)
    zw = np.ascontiguousarray(z_weights, dtype=np.float64)
    weighted = donors.log_w is not None
    lf = extra_base(donors.den, donors.c_x, np.ascontiguousarray(log_m_extra, dtype=np.float64),
                     float(zw.sum()), donors.log_w if weighted else _NO_W, weighted)
    for sl, s_d, mx_d, safe_d in donors.blocks:
        extra_block(lf, s_d, mx_d, safe_d, donors.c_x, np.ascontiguousarray(log_k_extra[:, sl]),
                     np.ascontiguousarray(zw[sl]))
    vals = log_mean_exp_rows(lf)
    return (vals, lf) if return_terms else vals


def mc_log_var(lf_a: np.ndarray, lf_b: np.ndarray | None = None, *,
               paired: bool | np.ndarray = True) -> float | np.ndarray:
    """Delta-method variance of ``log p̂_a − log p̂_b`` (``lf_b=None``: of ``log p̂_a``) from the
    replicates' terms ``[R]``; ``paired``: common random numbers. ``lf_a`` may hold one row a
    candidate, ``[G, R]`` (``paired`` then one flag a row): the ``[G]`` variances, in one pass
    rather than one call a candidate. No finite term: 0 (an impossible value has no Monte
    Carlo error)."""

    rows = np.ascontiguousarray(np.atleast_2d(np.asarray(lf_a, dtype=np.float64)))
    b = _NO_W if lf_b is None else np.ascontiguousarray(lf_b, dtype=np.float64)
    flags = np.broadcast_to(np.asarray(paired, dtype=np.bool_), rows.shape[:1])
    v = log_var_rows(rows, b, lf_b is not None, np.ascontiguousarray(flags))
    return float(v[0]) if np.ndim(lf_a) == 1 else v


def mc_difference_var(lf0: np.ndarray | None, exact0: bool, lf1: np.ndarray | None,
                      exact1: bool, row: np.ndarray, inside: np.ndarray, g0: int) -> np.ndarray:
    """``[G]`` Monte Carlo variance of each candidate's node term less the truth's (``g0``),
    from the node's rows of replicate terms without (``lf0``) and with (``lf1``) the candidate's
    value (``None``: no candidate on that side; ``exact``: every multiplicity vector, no
    error), ``row`` each candidate's row of its side (``inside``): paired on the truth's side
    (its replicates shared), the two terms' variances added across it (:func:`mc_log_var`)."""
    R = (lf0 if lf1 is None else lf1).shape[-1]
    none = np.empty((0, R))
    return difference_var(none if lf0 is None else np.ascontiguousarray(lf0, dtype=np.float64),
                          exact0,
                          none if lf1 is None else np.ascontiguousarray(lf1, dtype=np.float64),
                          exact1, row, inside, int(g0))


def atom_hit(z: np.ndarray, values: np.ndarray) -> bool:
    """Some synthetic value equals a donor value (to 1e-9 relative)."""
    if z.size == 0 or values.size == 0:
        return False
    v = np.unique(values)
    k = np.clip(np.searchsorted(v, z), 1, v.size - 1) if v.size > 1 else np.zeros(z.size, int)
    near = np.minimum(np.abs(z - v[k]), np.abs(z - v[np.maximum(k - 1, 0)]))
    return bool(np.any(near <= 1e-9 * np.maximum(1.0, np.abs(z))))
