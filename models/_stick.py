"""Truncated stick breaking and the concentration parameter (SPEC §3.2 steps 2 and 4).

Shared by every mixture model with a truncated Dirichlet-process prior (DPMPM, Poisson mixtures).
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "V_MAX",
    "stick_breaking_log",
    "stick_conditional",
    "alpha_conditional",
    "sample_sticks",
    "sample_alpha",
]

#: stick fractions are clipped below 1 so that ``log1p(-V)`` stays finite (SPEC §3.2 step 2)
V_MAX = 1.0 - 1e-12


def stick_breaking_log(V: np.ndarray) -> np.ndarray:
    """``log π`` from stick fractions ``V[..., K-1]`` (``V_K = 1``), SPEC §3.2 step 2.

    ``log π_k = log V_k + Σ_{h<k} log1p(−V_h)``; the last class gets ``Σ_{h<K} log1p(−V_h)``.

    Examples
    --------
    >>> np.exp(stick_breaking_log(np.array([0.5, 0.4]))).round(6).tolist()
    [0.5, 0.2, 0.3]
    """
    V = np.asarray(V, dtype=np.float64)
    with np.errstate(divide="ignore"):
        l1 = np.log1p(-V)
        lv = np.log(V)
    cum = np.cumsum(l1, axis=-1)
    head = np.concatenate([np.zeros(V.shape[:-1] + (1,)), cum[..., :-1]], axis=-1)
    return np.concatenate([lv + head, cum[..., -1:]], axis=-1)


def stick_conditional(nk: np.ndarray, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """Beta parameters of the full conditionals of ``V_1..V_{K-1}`` (SPEC §3.2 step 2).

    ``V_k | · ~ Beta(1 + n_k, α + Σ_{h>k} n_h)``.

    Examples
    --------
    >>> a, b = stick_conditional(np.array([5, 3, 2]), 1.0)
    >>> a.tolist(), b.tolist()
    ([6.0, 4.0], [6.0, 3.0])
    """
    nk = np.asarray(nk, dtype=np.float64)
    tail = np.cumsum(nk[::-1])[::-1]  # tail[k] = Σ_{h >= k} n_h
    return 1.0 + nk[:-1], float(alpha) + tail[1:]


def alpha_conditional(V: np.ndarray, a_alpha: float, b_alpha: float) -> tuple[float, float]:
    """Shape and rate of the full conditional of α (SPEC §3.2 step 4).

    ``α | V ~ Gamma(a_α + K − 1, b_α − Σ_{k<K} log1p(−V_k))`` with ``K − 1 = len(V)``.

    Examples
    --------
    >>> shape, rate = alpha_conditional(np.array([0.5, 0.4]), 0.25, 0.25)
    >>> round(shape, 6), round(rate, 6)
    (2.25, 1.453973)
    """
    V = np.asarray(V, dtype=np.float64)
    return float(a_alpha) + V.size, float(b_alpha) - float(np.log1p(-V).sum())


def sample_sticks(nk: np.ndarray, alpha: float, rng: np.random.Generator) -> np.ndarray:
    """Draw ``V_1..V_{K-1}`` from their full conditional, clipped to ``[1e-300, V_MAX]``."""
    a, b = stick_conditional(nk, alpha)
    return np.clip(rng.beta(a, b), 1e-300, V_MAX)


def sample_alpha(V: np.ndarray, a_alpha: float, b_alpha: float, rng: np.random.Generator) -> float:
    """Draw ``α ~ Gamma(a_α + K − 1, b_α − Σ log1p(−V_k))`` (shape, rate)."""
    shape, rate = alpha_conditional(V, a_alpha, b_alpha)
    return float(rng.gamma(shape, 1.0 / rate))
