"""Bidirectional annealed importance sampling (Neal 2001) of the DPMPM's collapsed model: an
estimator of ``log Z = log p(y)`` written apart from ``models/dpmpm/evidence.py`` (which bounds
the same quantity by entropies), to validate its bounds (shared by the test modules).

The collapsed model is the one the evidence pass bounds: a partition ``P`` of the records with
the Ewens probability of the Dirichlet process, α integrated against its Gamma prior
(``exp(li[k]) Π_b Γ(n_b)``), and Dirichlet–multinomial classes (``d_j`` levels, Dirichlet(a),
missing entries left out). The annealing path tempers the likelihood,
``π_β(P) ∝ p(P) p(y | P)^β``, ``β`` from 0 (the prior, drawn exactly: α from its prior, then
the Chinese restaurant process) to 1, with one single-site Gibbs sweep of ``π_β`` a
temperature.

* **Forward** runs start from the prior; ``E[log w] ≤ log Z`` (Jensen), and
  ``log mean w`` is consistent: a stochastic lower bound.
* **Reverse** runs start from the posterior and anneal to the prior; ``E[w] = 1 / Z``, so
  ``-E[log w] ≥ log Z``: a stochastic upper bound — exact when the start is an exact posterior
  draw, of the region the start lies in when it is a state of a chain held in one region.

Where both runs agree within a few nats, ``log Z`` is pinned between them.
"""

from __future__ import annotations

import functools
import math

import numpy as np
from numba import njit
from scipy.special import gammaln

__all__ = ["ais", "log_joint", "posterior_states", "prior_partition"]


def _tables(codes: np.ndarray, d: np.ndarray, a: float, n: int):
    x = np.arange(n + 2, dtype=np.float64)
    lga = gammaln(a + x) - gammaln(a)
    lgd = gammaln(d[:, None] * a + x[None, :]) - gammaln(d[:, None] * a)
    return lga, lgd


@functools.lru_cache(maxsize=8)
def _log_alpha(n: int, k_max: int, a0: float, b0: float) -> np.ndarray:
    """``log ∫ α^k Γ(α)/Γ(α + n) Gamma(α; a0, b0) dα``, ``k = 0 .. k_max``, Simpson's rule in
    ``log α`` (a separate quadrature from the package's trapezoid)."""
    t = np.linspace(-300.0, 20.0, 64_001)
    al = np.exp(t)
    base = (gammaln(al) - gammaln(al + n) + a0 * math.log(b0) - gammaln(a0) + a0 * t - b0 * al)
    h = t[1] - t[0]
    w = np.ones(t.size)
    w[1:-1:2], w[2:-1:2] = 4.0, 2.0
    w *= h / 3.0
    k = np.arange(k_max + 1)[:, None]
    f = base[None, :] + k * t[None, :]
    m = f.max(axis=1, keepdims=True)
    out = (m + np.log(np.sum(w[None, :] * np.exp(f - m), axis=1, keepdims=True)))[:, 0]
    out[0] = 0.0
    return out


@njit(cache=True)
def _loglik(codes, offsets, d, a, z, S, lga, lgd):  # pragma: no cover - numba
    """``log p(y | P)`` of the partition ``z`` (labels below ``S``)."""
    n, p = codes.shape
    L = offsets[-1] + d[-1]
    cnt = np.zeros((S, L), dtype=np.int64)
    nbj = np.zeros((S, p), dtype=np.int64)
    for i in range(n):
        for j in range(p):
            c = codes[i, j]
            if c >= 0:
                cnt[z[i], offsets[j] + c] += 1
                nbj[z[i], j] += 1
    out = 0.0
    for b in range(S):
        for j in range(p):
            out -= lgd[j, nbj[b, j]]
        for r in range(L):
            out += lga[cnt[b, r]]
    return out


@njit(cache=True)
def _run(codes, offsets, d, a, z, betas, direction, li, lga, lgd, seed):  # pragma: no cover
    """One annealing run from ``z`` over ``betas`` (increasing); ``direction`` 1: forward (the
    weight ``Σ_t (β_t − β_{t−1}) log L(P_{t−1})``, a sweep at each ``β_t``), -1: reverse (from
    ``β = 1`` down, ``Σ_t (β_{t−1} − β_t) log L(P_t)``). Returns the log weight."""
    np.random.seed(seed)  # noqa: NPY002 - numba's own state, seeded per run
    n, p = codes.shape
    S = n + 1
    L = offsets[-1] + d[-1]
    cnt = np.zeros((S, L), dtype=np.int64)
    nbj = np.zeros((S, p), dtype=np.int64)
    nb = np.zeros(S, dtype=np.int64)
    for i in range(n):
        nb[z[i]] += 1
        for j in range(p):
            c = codes[i, j]
            if c >= 0:
                cnt[z[i], offsets[j] + c] += 1
                nbj[z[i], j] += 1
    log_new = np.zeros(n)
    for i in range(n):
        for j in range(p):
            if codes[i, j] >= 0:
                log_new[i] -= math.log(d[j])
    T = betas.size - 1
    lw = 0.0
    w = np.empty(S)
    for step in range(1, T + 1):
        if direction == 1:
            lo, hi = betas[step - 1], betas[step]
            beta = hi
        else:
            hi, lo = betas[T - step + 1], betas[T - step]
            beta = lo
        ll = 0.0
        for b in range(S):
            if nb[b] > 0:
                for j in range(p):
                    ll -= lgd[j, nbj[b, j]]
                for r in range(L):
                    ll += lga[cnt[b, r]]
        lw += (hi - lo) * ll if direction == 1 else (lo - hi) * ll
        if direction == -1 and step == T:
            break  # the last state is not moved: the prior's sweep adds nothing
        for i in range(n):
            b0 = z[i]
            nb[b0] -= 1
            for j in range(p):
                c = codes[i, j]
                if c >= 0:
                    cnt[b0, offsets[j] + c] -= 1
                    nbj[b0, j] -= 1
            k = 0
            free = -1
            for b in range(S):
                if nb[b] > 0:
                    k += 1
                elif free < 0:
                    free = b
            mx = -np.inf
            for b in range(S):
                if nb[b] > 0:
                    v = 0.0
                    for j in range(p):
                        c = codes[i, j]
                        if c >= 0:
                            v += math.log((a + cnt[b, offsets[j] + c]) / (d[j] * a + nbj[b, j]))
                    w[b] = math.log(nb[b]) + beta * v
                elif b == free:
                    w[b] = li[k + 1] - li[k] + beta * log_new[i]
                else:
                    w[b] = -np.inf
                if w[b] > mx:
                    mx = w[b]
            tot = 0.0
            for b in range(S):
                w[b] = math.exp(w[b] - mx) if w[b] > -np.inf else 0.0
                tot += w[b]
            u = np.random.random() * tot  # noqa: NPY002 - as above
            acc = 0.0
            nw = free
            for b in range(S):
                acc += w[b]
                if w[b] > 0.0 and u < acc:
                    nw = b
                    break
            z[i] = nw
            nb[nw] += 1
            for j in range(p):
                c = codes[i, j]
                if c >= 0:
                    cnt[nw, offsets[j] + c] += 1
                    nbj[nw, j] += 1
    return lw


def prior_partition(n: int, alpha_prior: tuple[float, float], rng: np.random.Generator
                    ) -> np.ndarray:
    """An exact draw of the partition prior: α ~ Gamma(a0, rate b0), then the Chinese
    restaurant process."""
    al = rng.gamma(alpha_prior[0], 1.0 / alpha_prior[1])
    z = np.zeros(n, dtype=np.int64)
    sizes: list[int] = []
    for i in range(n):
        w = np.array(sizes + [al], dtype=np.float64)
        b = int(rng.choice(w.size, p=w / w.sum())) if al > 0 or sizes else 0
        if b == len(sizes):
            sizes.append(0)
        sizes[b] += 1
        z[i] = b
    return z


def log_joint(codes: np.ndarray, d, z: np.ndarray, *, alpha_prior=(0.25, 0.25),
              dirichlet_prior: float = 1.0) -> float:
    """``log p(P, y)`` of the partition ``z`` under the collapsed model."""
    codes = np.ascontiguousarray(codes, dtype=np.int64)
    d = np.asarray(d, dtype=np.int64)
    n = codes.shape[0]
    _, z = np.unique(z, return_inverse=True)
    k = int(z.max()) + 1
    li = _log_alpha(n, n + 2, *alpha_prior)
    lga, lgd = _tables(codes, d, dirichlet_prior, n)
    offsets = np.concatenate([[0], np.cumsum(d)[:-1]]).astype(np.int64)
    return float(li[k] + gammaln(np.bincount(z)).sum()
                 + _loglik(codes, offsets, d, float(dirichlet_prior), z.astype(np.int64), k,
                           lga, lgd))


def ais(codes: np.ndarray, d, *, starts: list[np.ndarray] | None = None, runs: int = 8,
        temperatures: int = 2000, alpha_prior=(0.25, 0.25), dirichlet_prior: float = 1.0,
        random_seed: int = 0) -> dict[str, float]:
    """Forward runs from the prior (``runs`` of them) and, when ``starts`` (posterior states) are
    given, one reverse run from each. Returns ``forward`` (``log mean w``), ``forward_mean``
    (``mean log w``, the stochastic lower bound), ``reverse`` (``-mean log w`` of the reverse
    runs, the stochastic upper bound; ``nan`` without ``starts``) and their standard errors."""
    codes = np.ascontiguousarray(codes, dtype=np.int64)
    d = np.asarray(d, dtype=np.int64)
    n = codes.shape[0]
    offsets = np.concatenate([[0], np.cumsum(d)[:-1]]).astype(np.int64)
    li = _log_alpha(n, n + 2, *alpha_prior)
    lga, lgd = _tables(codes, d, dirichlet_prior, n)
    # β = (t/T)^4: fine steps near the prior, where log L changes fastest
    betas = np.linspace(0.0, 1.0, temperatures + 1) ** 4
    rng = np.random.default_rng(random_seed)
    fwd = np.array([_run(codes, offsets, d, float(dirichlet_prior),
                         prior_partition(n, alpha_prior, rng), betas, 1, li, lga, lgd,
                         int(rng.integers(2**31))) for _ in range(runs)])
    m = fwd.max()
    out = {"forward": float(m + np.log(np.mean(np.exp(fwd - m)))),
           "forward_mean": float(fwd.mean()),
           "forward_se": float(fwd.std(ddof=1) / np.sqrt(runs)) if runs > 1 else float("nan"),
           "reverse": float("nan"), "reverse_se": float("nan")}
    if starts:
        rev = np.array([-_run(codes, offsets, d, float(dirichlet_prior),
                              np.unique(np.asarray(z), return_inverse=True)[1].astype(np.int64),
                              betas, -1, li, lga, lgd, int(rng.integers(2**31)))
                        for z in starts])
        out["reverse"] = float(rev.mean())
        out["reverse_se"] = (float(rev.std(ddof=1) / np.sqrt(rev.size)) if rev.size > 1
                             else float("nan"))
    return out


def posterior_states(codes: np.ndarray, d, count: int, *, sweeps: int = 300,
                     alpha_prior=(0.25, 0.25), dirichlet_prior: float = 1.0,
                     random_seed: int = 0, start: np.ndarray | None = None) -> list[np.ndarray]:
    """``count`` partitions drawn from the prior (or ``start``, a partition of a region to stay
    in) and moved by ``sweeps`` Gibbs sweeps of the posterior (``β = 1``): approximate posterior
    draws, the starts of reverse runs where the partitions cannot be enumerated."""
    codes = np.ascontiguousarray(codes, dtype=np.int64)
    d = np.asarray(d, dtype=np.int64)
    n = codes.shape[0]
    offsets = np.concatenate([[0], np.cumsum(d)[:-1]]).astype(np.int64)
    li = _log_alpha(n, n + 2, *alpha_prior)
    lga, lgd = _tables(codes, d, dirichlet_prior, n)
    rng = np.random.default_rng(random_seed)
    out = []
    for _ in range(count):
        z = (prior_partition(n, alpha_prior, rng) if start is None
             else np.unique(np.asarray(start), return_inverse=True)[1].astype(np.int64))
        _run(codes, offsets, d, float(dirichlet_prior), z, np.ones(sweeps + 1), 1, li, lga,
             lgd, int(rng.integers(2**31)))  # z moved in place
        out.append(z)
    return out
