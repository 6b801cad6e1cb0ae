"""Importance-sampling diagnostics: Kish ESS, generalized-Pareto fit, Pareto k̂ and PSIS.

Draws are the **last** axis. See :doc:`/methods/attribute` (Diagnostics).
"""

from __future__ import annotations

import math

import numpy as np

from bayes_risk._numeric import (
    logsumexp,  # re-exported for the engine's modules
    threaded_map,
)

__all__ = [
    "logsumexp",
    "kish_ess",
    "gpdfit",
    "pareto_khat",
    "psis_log_mean",
    "khat_threshold",
    "low_ess_threshold",
    "tail_size",
    "khat_from_tails",
]


def kish_ess(logw: np.ndarray, axis: int = -1) -> np.ndarray:
    """Kish ESS ``(Σ w)² / Σ w²`` of log weights (``nan`` where all are ``-inf``)."""
    logw = np.asarray(logw, dtype=np.float64)
    a = logsumexp(logw, axis=axis)
    b = logsumexp(2.0 * logw, axis=axis)
    with np.errstate(invalid="ignore"):
        out = np.exp(2.0 * a - b)
    return np.where(np.isfinite(a), out, np.nan)


def khat_threshold(n_draws: int) -> float:
    """``min(1 − 1/log10(S), 0.7)`` (methods, Diagnostics, Vehtari et al. 2024)."""
    if n_draws <= 1:
        return -math.inf
    return float(min(1.0 - 1.0 / math.log10(n_draws), 0.7))


def low_ess_threshold(n_draws: int) -> float:
    """``max(20, 0.01 H)``: below this ESS_q a candidate is flagged ``LOW_ESS_Q``."""
    return float(max(20.0, 0.01 * n_draws))


def tail_size(n_draws: int) -> int:
    """Tail length ``M = ceil(min(0.2 S, 3 sqrt(S)))`` (relative efficiency 1, as loo)."""
    return int(math.ceil(min(0.2 * n_draws, 3.0 * math.sqrt(n_draws))))


def _gpdfit_sorted(x: np.ndarray, wip: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Vectorised Zhang–Stephens fit; ``x`` sorted ascending along the last axis, all ``> 0``."""
    n = x.shape[-1]
    prior = 3.0
    mg = 30 + int(math.floor(math.sqrt(n)))
    xstar = x[..., int(math.floor(n / 4 + 0.5)) - 1]
    j = np.arange(1, mg + 1, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        theta = (
            1.0 / x[..., -1:] + (1.0 - np.sqrt(mg / (j - 0.5))) / prior / xstar[..., None]
        )  # [..., Mg]
        # (-θ)·x then log1p in place: one contiguous temporary (~5x faster, same values)
        if x.ndim == 2:  # the engine's blocks of tails: compiled products (same values)
            from bayes_risk.attribute._kernels import neg_outer

            t = neg_outer(np.ascontiguousarray(theta), np.ascontiguousarray(x))
        else:
            t = np.multiply((-theta)[..., :, None], x[..., None, :])  # [..., Mg, M]
        np.log1p(t, out=t)
        kk = t.sum(axis=-1) / n  # [..., Mg]
        del t
        lx = np.log(-theta / kk) - kk - 1.0
        ll = n * lx
        ll = np.where(np.isnan(ll), -np.inf, ll)
        w = np.exp(ll - logsumexp(ll, axis=-1)[..., None])
        theta_hat = np.sum(theta * np.where(np.isnan(w), 0.0, w), axis=-1)
        k = np.mean(np.log1p(-theta_hat[..., None] * x), axis=-1)
        sigma = -k / theta_hat
    if wip:
        k = k * n / (n + 10.0) + 10.0 * 0.5 / (n + 10.0)
    return k, sigma


def gpdfit(x: np.ndarray, *, wip: bool = True) -> tuple[float, float]:
    """Generalized-Pareto fit ``k, sigma`` of exceedances ``x > 0`` (Zhang & Stephens 2009).

    Examples
    --------
    >>> round(gpdfit([5, 3, 2, 4, 1])[0], 7)
    0.1265339
    """
    xs = np.sort(np.asarray(x, dtype=np.float64))
    k, s = _gpdfit_sorted(xs, wip=wip)
    return float(k), float(s)


def pareto_khat(log_ratios: np.ndarray, *, chunk: int | None = None) -> np.ndarray:
    """Pareto k̂ of log importance ratios over the last axis (Vehtari et al. 2024).

    ``+inf`` when the tail is too short (``M < 5``) or constant, ``nan`` when every ratio is
    ``-inf``; ``chunk``: vectors fitted at once.
    """
    lr = np.asarray(log_ratios, dtype=np.float64)
    shape = lr.shape[:-1]
    s = lr.shape[-1]
    m = tail_size(s)
    if m < 5 or s < m + 1 or lr.size == 0:
        return np.where(np.any(lr > -np.inf, axis=-1), np.inf, np.nan)
    from bayes_risk.attribute._kernels import khat_tails

    # [A, B, S] view without copying where possible (the engine passes moveaxis views)
    if lr.ndim == 1:
        lr3 = lr[None, None, :]
    elif lr.ndim == 2:
        lr3 = lr[None]
    else:
        lr3 = lr.reshape(-1, lr.shape[-2], s)
    top, bad = khat_tails(lr3, m)
    return khat_from_tails(top, bad, chunk=chunk).reshape(shape)


#: target size of the generalized-Pareto fit's temporary in :func:`khat_from_tails` (bytes):
#: at M = 95 about 140 rows a call (35 at 1 MB): fewer numpy calls, about 15 % less CPU
_FIT_BYTES = 1 << 22


def khat_from_tails(top: np.ndarray, bad: np.ndarray, *, chunk: int | None = None) -> np.ndarray:
    """Pareto k̂ ``(N,)`` from the tails ``top (N, M + 1)`` (``nan`` where ``bad``)."""
    job = KhatJob(top, bad, chunk=chunk)
    threaded_map(job.fit_part, list(range(len(job.cuts) - 1)))
    return job.result()


class KhatJob:
    """The k̂ fits of :func:`khat_from_tails` on background threads (:meth:`result` waits)."""

    def __init__(self, top: np.ndarray, bad: np.ndarray, *, chunk: int | None = None) -> None:
        from bayes_risk._numeric import n_threads

        self.top, self.bad = top, bad
        self.out = np.full(top.shape[0], np.inf)
        m = top.shape[1] - 1
        if chunk is None:
            # the fit's [rows, Mg, M] temporary is passed over several times: keep it in L2/L3
            chunk = max(8, _FIT_BYTES // (8 * max(m, 1) * (30 + math.isqrt(max(m, 0)))))
        self.step = max(int(chunk), 1)
        n = max(1, min(n_threads(), top.shape[0]))
        self.cuts = np.linspace(0, top.shape[0], n + 1).astype(np.int64)
        self._futures: list = []

    def fit_part(self, k: int) -> None:
        """Fit the rows of share ``k`` into ``self.out``."""
        lo, hi = int(self.cuts[k]), int(self.cuts[k + 1])
        const, x = _exceedances(self.top[lo:hi])
        ok = np.flatnonzero(~const & ~self.bad[lo:hi] & np.all(x > 0, axis=1))
        out = self.out[lo:hi]
        for a in range(0, ok.size, self.step):
            idx = ok[a : a + self.step]
            out[idx] = _gpdfit_sorted(x[idx])[0]

    def start(self) -> KhatJob:
        """Run the shares on the background pool (returns ``self``)."""
        from bayes_risk._numeric import _pool

        # a pool apart from the shared one: a job waiting there would queue the main thread's
        # threaded ufuncs behind it
        pool = _pool(len(self.cuts) - 1, name="bayes-risk-khat")
        self._futures = [pool.submit(self.fit_part, k) for k in range(len(self.cuts) - 1)]
        return self

    def result(self) -> np.ndarray:
        """``k̂`` per row (waits for :meth:`start`'s shares)."""
        for f in self._futures:
            f.result()
        self._futures = []
        self.out[self.bad] = np.nan
        return self.out


def _exceedances(top: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Constant tails and the exceedances of the tail over the cutoff (``top``'s column 0)."""
    with np.errstate(invalid="ignore", over="ignore"):
        const = (top[:, -1] - top[:, 1]) < np.finfo(np.float64).eps / 100
        return const, np.exp(top[:, 1:]) - np.exp(top[:, :1])


def psis_log_mean(log_ratios: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Pareto-smoothed ``log mean(r)`` over the last axis, with its k̂."""
    lr = np.asarray(log_ratios, dtype=np.float64)
    shape = lr.shape[:-1]
    s = lr.shape[-1]
    flat = lr.reshape(-1, s).copy()
    khat = pareto_khat(flat)
    m = tail_size(s)
    if m >= 5 and s > m:
        ok = np.isfinite(khat)
        for r in np.flatnonzero(ok):
            row = flat[r]
            mx = row.max()
            lw = row - mx
            order = np.argsort(lw)
            tail_idx = order[-m:]
            cutoff = lw[order[-m - 1]]
            x = np.exp(lw[tail_idx]) - np.exp(cutoff)
            k, sigma = gpdfit(x)
            if not (np.isfinite(k) and np.isfinite(sigma) and sigma > 0):
                continue
            p = (np.arange(1, m + 1) - 0.5) / m
            if abs(k) < 1e-12:
                q = -sigma * np.log1p(-p)
            else:
                q = sigma * np.expm1(-k * np.log1p(-p)) / k
            smoothed = np.log(q + np.exp(cutoff))
            smoothed = np.minimum(smoothed, 0.0)  # never above the largest raw ratio
            lw[tail_idx] = smoothed
            flat[r] = lw + mx
    log_mean = logsumexp(flat, axis=1) - math.log(s)
    return log_mean.reshape(shape), khat.reshape(shape)
