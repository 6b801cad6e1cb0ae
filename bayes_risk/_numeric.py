"""Log-space helpers, the tolerance rule for ties (log-sum-exp with a max shift) and the
precision to which values are recorded."""

from __future__ import annotations

import os

import numpy as np

__all__ = ["logsumexp", "normalise_log", "ties", "threaded_map", "threaded_ufunc", "TIE_RTOL",
           "TIE_ATOL", "decimals_of"]

TIE_RTOL = 1e-9
TIE_ATOL = 1e-15
LOG_TIE_ATOL = 1e-9


def logsumexp(a: np.ndarray, axis: int | tuple[int, ...] | None = None) -> np.ndarray:
    """``log(sum(exp(a)))`` computed stably (max shift; all ``-inf`` gives ``-inf``, ``nan``
    propagates): scipy's result without its per-call overhead on millions of short vectors."""
    a = np.asarray(a, dtype=np.float64)
    if a.size == 0:
        from scipy.special import logsumexp as _scipy_logsumexp  # rare: not imported eagerly

        return _scipy_logsumexp(a, axis=axis)
    m = np.max(a, axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        out = np.log(np.sum(np.exp(a - m), axis=axis, keepdims=True)) + m
    if axis is None:
        return out.reshape(())[()]
    return np.squeeze(out, axis=axis)


def normalise_log(a: np.ndarray, axis: int = -1) -> np.ndarray:
    """Return ``exp(a - logsumexp(a))`` along ``axis``; rows that are all ``-inf`` give ``nan``."""
    a = np.asarray(a, dtype=np.float64)
    lse = logsumexp(a, axis=axis)
    lse_b = np.expand_dims(lse, axis)
    with np.errstate(invalid="ignore"):
        out = np.exp(a - lse_b)
    bad = ~np.isfinite(lse_b)
    if np.any(bad):
        out = np.where(np.broadcast_to(bad, out.shape), np.nan, out)
    return out


def ties(
    a: np.ndarray | float, b: np.ndarray | float, rtol: float = TIE_RTOL, atol: float = TIE_ATOL
) -> np.ndarray:
    """``a`` ties ``b`` on the probability scale: ``|a-b| <= rtol*max(|a|,|b|) + atol``."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    return np.abs(a - b) <= rtol * np.maximum(np.abs(a), np.abs(b)) + atol


_POOL: dict[tuple[str, int], object] = {}
# a forked child (e.g. a PyMC chain process) inherits the pool objects but not their threads:
# forget them there, so that the child creates its own instead of waiting on dead workers
os.register_at_fork(after_in_child=_POOL.clear)


def _pool(n: int, name: str = "bayes-risk"):
    """A persistent thread pool of ``n`` workers; ``name`` keeps pools apart (background work,
    the attribute engine's k̂ fits, gets its own so neither queues behind the other)."""
    from concurrent.futures import ThreadPoolExecutor

    if (name, n) not in _POOL:
        _POOL[name, n] = ThreadPoolExecutor(n, thread_name_prefix=name)
    return _POOL[name, n]


def n_threads() -> int:
    """Threads the compiled kernels use (numba's setting, e.g. ``NUMBA_NUM_THREADS``)."""
    try:
        from numba import get_num_threads

        return int(get_num_threads())
    except ImportError:  # pragma: no cover - numba is a dependency
        return 1


def threaded_map(fn, items: list) -> list:
    """``[fn(x) for x in items]`` on the shared pool when there are several threads, for
    GIL-releasing numpy work; in order, each item alone, so the thread count changes nothing."""
    n = min(n_threads(), len(items))
    if n <= 1:
        return [fn(x) for x in items]
    return list(_pool(n).map(fn, items))


def threaded_ufunc(
    ufunc: np.ufunc, a: np.ndarray, out: np.ndarray | None = None, **errstate: str
) -> np.ndarray:
    """Elementwise ``ufunc(a, out=out)`` split over threads along the first axis; the values
    equal a single call's (``errstate`` applied in every worker)."""
    if out is None:
        out = np.empty_like(a)

    def run(lo: int, hi: int) -> None:
        with np.errstate(**errstate):
            ufunc(a[lo:hi], out=out[lo:hi])

    n = n_threads()
    if n <= 1 or a.size < 1_000_000 or a.ndim == 0 or a.shape[0] < n:
        with np.errstate(**errstate):
            ufunc(a, out=out)
        return out
    cuts = np.linspace(0, a.shape[0], n + 1).astype(int)
    threaded_map(lambda k: run(cuts[k], cuts[k + 1]), list(range(n)))
    return out


def decimals_of(values: np.ndarray, max_decimals: int = 6) -> int | None:
    """Number of decimals to which every value is recorded (``None`` if more than 6)."""
    v = values[np.isfinite(values)]
    for d in range(max_decimals + 1):
        s = v * 10.0**d
        if np.all(np.abs(s - np.round(s)) <= 1e-6 * np.maximum(1.0, np.abs(s)) * 1e-3 + 1e-9):
            return d
    return None
