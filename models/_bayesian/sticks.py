"""Truncated stick breaking and the concentration α, shared by the DPMPM and the Poisson mixtures.

The sticks are drawn in log space: clipping ``V_k`` below 1 would bias α (Ishwaran & James 2001).
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = [
    "log_gamma_variates",
    "stick_breaking_log",
    "stick_breaking_log_parts",
    "stick_conditional",
    "alpha_conditional_log",
    "sample_sticks",
    "sticks_and_weights_from_variates",
    "sample_alpha",
    "slice_alpha",
    "initial_memberships",
    "label_switch_moves",
]


def log_gamma_variates(shape: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """``log g`` with ``g ~ Gamma(shape, 1)``, exact also for tiny shapes (Marsaglia & Tsang
    2000, §6); one Gamma variate and one uniform per entry.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> x = log_gamma_variates(np.full(200_000, 0.01), rng)
    >>> bool(np.isfinite(x).all()), bool(x.min() < -700)  # exp(x) would underflow to 0
    (True, True)
    """
    shape = np.asarray(shape, dtype=np.float64)
    small = shape < 1.0
    if shape.ndim and not small.any():  # the sticks' shapes 1 + n_k, and most of the others
        g = rng.standard_gamma(shape)
        rng.random(shape.shape)  # the uniforms of the small shapes' branch: same streams
        return np.log(g)
    g = rng.standard_gamma(np.where(small, shape + 1.0, shape))
    return _log_gamma_of(shape, small, g, rng.random(shape.shape))


def _log_gamma_of(shape: np.ndarray, small: np.ndarray, g: np.ndarray, r: np.ndarray) -> Any:
    """:func:`log_gamma_variates` from its Gamma variates ``g`` and uniforms ``r``."""
    u = 1.0 - r  # in (0, 1]
    with np.errstate(divide="ignore"):
        out = np.log(g)
        out = np.where(small, out + np.log(u) / np.where(small, shape, 1.0), out)
    return out


def stick_breaking_log(V: np.ndarray) -> np.ndarray:
    """``log π`` from stick fractions ``V[..., K-1]`` (``V_K = 1``), stick breaking.

    For the sampler's draws use :func:`stick_breaking_log_parts` (``V`` may round to 1).

    Examples
    --------
    >>> np.exp(stick_breaking_log(np.array([0.5, 0.4]))).round(6).tolist()
    [0.5, 0.2, 0.3]
    """
    V = np.asarray(V, dtype=np.float64)
    with np.errstate(divide="ignore"):
        l1 = np.log1p(-V)
        lv = np.log(V)
    return stick_breaking_log_parts(lv, l1)


def stick_breaking_log_parts(log_v: np.ndarray, log_1mv: np.ndarray) -> np.ndarray:
    """``log π`` from ``log V_k`` and ``log(1 − V_k)``, ``k < K`` (``V_K = 1``).

    Examples
    --------
    >>> np.exp(stick_breaking_log_parts(np.log([0.5, 0.4]), np.log([0.5, 0.6]))).round(6).tolist()
    [0.5, 0.2, 0.3]
    """
    lv = np.asarray(log_v, dtype=np.float64)
    l1 = np.asarray(log_1mv, dtype=np.float64)
    cum = np.cumsum(l1, axis=-1)
    if lv.ndim == 1 and lv.size:  # one set of sticks (a sweep): the same sums, fewer calls
        out = np.empty(lv.size + 1)
        out[0] = lv[0] + 0.0  # as lv + head: -0.0 + 0.0 is +0.0
        np.add(lv[1:], cum[:-1], out=out[1:-1])
        out[-1] = cum[-1]
        return out
    head = np.concatenate([np.zeros(lv.shape[:-1] + (1,)), cum[..., :-1]], axis=-1)
    last = cum[..., -1:] if l1.shape[-1] else np.zeros(lv.shape[:-1] + (1,))
    return np.concatenate([lv + head, last], axis=-1)


def stick_conditional(nk: np.ndarray, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """Beta parameters ``(1 + n_k, α + Σ_{h>k} n_h)`` of the full conditionals of ``V_k``.

    Examples
    --------
    >>> a, b = stick_conditional(np.array([5, 3, 2]), 1.0)
    >>> a.tolist(), b.tolist()
    ([6.0, 4.0], [6.0, 3.0])
    """
    nk = np.asarray(nk, dtype=np.float64)
    tail = np.cumsum(nk[::-1])[::-1]  # tail[k] = Σ_{h >= k} n_h
    return 1.0 + nk[:-1], float(alpha) + tail[1:]


def alpha_conditional_log(
    log_1mv: np.ndarray, a_alpha: float, b_alpha: float
) -> tuple[float, float]:
    """Shape and rate of the full conditional of α given the sticks' ``log(1 − V_k)`` (Escobar &
    West 1995).

    Examples
    --------
    >>> shape, rate = alpha_conditional_log(np.log1p(-np.array([0.5, 0.4])), 0.25, 0.25)
    >>> round(shape, 6), round(rate, 6)
    (2.25, 1.453973)
    """
    l1 = np.asarray(log_1mv, dtype=np.float64)
    return float(a_alpha) + l1.size, float(b_alpha) - float(l1.sum())


def sample_sticks(
    nk: np.ndarray, alpha: float, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Draw ``(log V_k, log(1 − V_k))``, ``k < K``, from the full conditional, as log-Gamma
    variates (:func:`log_gamma_variates`)."""
    a, b = stick_conditional(nk, alpha)
    lg1 = log_gamma_variates(a, rng)
    lg2 = log_gamma_variates(b, rng)
    tot = np.logaddexp(lg1, lg2)
    return lg1 - tot, lg2 - tot


def sticks_and_weights_from_variates(
    a: np.ndarray, g_a: np.ndarray, u_a: np.ndarray,
    b: np.ndarray, g_b: np.ndarray, u_b: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`sample_sticks` from its random numbers (``stick_kernels.stick_variates``), and
    ``log π``: the logarithms in numpy (whose ``log`` may differ from C's in the last bit)."""
    from bayes_risk.models._bayesian.stick_kernels import stick_log_parts

    small_b = b < 1.0
    lg1 = np.log(g_a)  # a = 1 + n_k >= 1: log_gamma_variates' plain branch
    lg2 = _log_gamma_of(b, small_b, g_b, u_b) if small_b.any() else np.log(g_b)
    return stick_log_parts(lg1, lg2, np.logaddexp(lg1, lg2))


def sample_alpha(
    log_1mv: np.ndarray, a_alpha: float, b_alpha: float, rng: np.random.Generator
) -> float:
    """Draw ``α ~ Gamma(a_α + K − 1, b_α − Σ log(1 − V_k))`` (shape, rate) from log-space sticks."""
    shape, rate = alpha_conditional_log(log_1mv, a_alpha, b_alpha)
    return float(rng.gamma(shape, 1.0 / rate))


def slice_alpha(
    nk: np.ndarray,
    alpha: float,
    a_alpha: float,
    b_alpha: float,
    rng: np.random.Generator,
    width: float = 1.0,
    upper: float = np.inf,
) -> float:
    """One slice-sampling update (Neal 2003) of ``log α`` from ``p(α | z)``, the sticks
    integrated out; ``upper`` truncates it to ``α <= upper``."""
    from bayes_risk.models._bayesian.stick_kernels import slice_log_alpha

    nk = np.ascontiguousarray(nk, dtype=np.float64)
    return float(slice_log_alpha(nk, float(alpha), float(a_alpha), float(b_alpha),
                                  float(width), float(np.log(upper)), rng))


def initial_memberships(
    n: int, K: int, a_alpha: float, b_alpha: float, rng: np.random.Generator
) -> tuple[np.ndarray, float]:
    """Starting classes and α drawn from the prior, α bounded to [0.5, 5] (neither one class
    of everything nor all classes)."""
    alpha = float(np.clip(rng.gamma(a_alpha, 1.0 / b_alpha), 0.5, 5.0))
    if K == 1:
        return np.zeros(n, dtype=np.int64), alpha
    lv, l1 = sample_sticks(np.zeros(K), alpha, rng)
    log_pi = stick_breaking_log_parts(lv, l1)
    p = np.exp(log_pi - log_pi.max())
    cum = np.cumsum(p)
    u = rng.random(n) * cum[-1]
    z = np.minimum(np.searchsorted(cum, u, side="right"), K - 1).astype(np.int64)
    return z, alpha


def label_switch_moves(
    nk: np.ndarray, log_v: np.ndarray, log_1mv: np.ndarray, rng: np.random.Generator | np.ndarray
) -> np.ndarray:
    """Metropolis label-switching moves of the truncated stick-breaking mixture (Papaspiliopoulos &
    Roberts 2008; Hastie, Liverani & Richardson 2015): swap the labels of two occupied classes
    (``V`` kept), then of ``K − 2`` adjacent pairs with their sticks.

    ``rng``: the generator or its ``generator.generator_handle``. Returns ``new_label[old]``
    (apply as ``z = new_label[z]``; the caller redraws the class parameters).
    """
    from bayes_risk.models._bayesian.generator import generator_handle
    from bayes_risk.models._bayesian.stick_kernels import label_switch_draws, label_switch_kernel

    nk = np.ascontiguousarray(nk, dtype=np.float64)
    K = int(nk.size)
    if K < 2:
        return np.arange(K)
    # the logarithms in numpy (whose log may differ from C's in the last bit)
    handle = rng if isinstance(rng, np.ndarray) else generator_handle(rng)
    j, l, js, r = label_switch_draws(nk, handle)
    log_u = np.log(1.0 - r)
    return label_switch_kernel(nk, np.ascontiguousarray(log_v, dtype=np.float64),
                               np.ascontiguousarray(log_1mv, dtype=np.float64),
                               j, l, log_u[0], js, log_u[1:])
