"""The membership likelihood ratio from posterior draws. See :doc:`/methods/membership`."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bayes_risk.attribute.diagnostics import (
    khat_threshold,
    kish_ess,
    logsumexp,
    low_ess_threshold,
    pareto_khat,
    tail_size,
)

__all__ = ["LogPredictive", "loo_log_predictive", "log_normaliser", "membership_log_lr",
           "posterior_membership", "tail_khat", "thresholds"]


@dataclass(frozen=True)
class LogPredictive:
    """LOO log predictives ``value [T]`` with the largest k̂ and smallest ESS of their two means."""

    value: np.ndarray
    khat: np.ndarray
    ess: np.ndarray


def tail_khat(log_r: np.ndarray) -> np.ndarray:
    """Pareto k̂ over the last axis (0: flat tail; ``nan``: repeated values)."""
    log_r = np.ascontiguousarray(log_r, dtype=np.float64)
    k = pareto_khat(log_r)
    s = log_r.shape[-1]
    m = tail_size(s)
    if s > m + 1:
        top = -np.sort(-np.partition(-log_r, m, axis=-1)[..., : m + 1], axis=-1)
        flat = top[..., 0] == top[..., m]
        tied = (np.diff(top, axis=-1) == 0).any(axis=-1)
        k = np.where(flat, 0.0, np.where(tied, np.nan, k))
    return k


def loo_log_predictive(target_ll: np.ndarray, slot_ll: np.ndarray, *,
                       khat: bool = True) -> LogPredictive:
    """``log p(x_t | y_{-i_t})`` from the draws of one posterior.

    Parameters
    ----------
    target_ll, slot_ll : arrays [H, T]
        ``log p(x_t | Θ_h)`` of the targets and ``log p(y_{i_t} | Θ_h)`` of their slots.
    khat : bool
        Compute the Pareto k̂ (``nan`` otherwise).

    Returns
    -------
    LogPredictive
    """
    target_ll = np.asarray(target_ll, dtype=np.float64)
    slot_ll = np.asarray(slot_ll, dtype=np.float64)
    log_r = (target_ll - slot_ll).T  # [T, H]: p(x | Θ) / p(y_i | Θ)
    log_w = (-slot_ll).T  # [T, H]: 1 / p(y_i | Θ), the leave-one-out weights
    value = logsumexp(log_r, axis=1) - logsumexp(log_w, axis=1)
    ess = np.minimum(kish_ess(log_r, axis=1), kish_ess(log_w, axis=1))
    if khat:
        k = np.maximum(tail_khat(log_r), tail_khat(log_w))
    else:
        k = np.full(value.shape, np.nan)
    return LogPredictive(value=value, khat=k, ess=ess)


def log_normaliser(
    pop_ll: list[np.ndarray], slot_ll: list[np.ndarray], *, block: int = 16,
    log_select: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``log E_{x' ~ p(· | y_{-i})}[s(x') Π_l A_l(x')]`` for each slot, by self-normalised
    importance sampling of population draws of ``p(· | y)``.

    Parameters
    ----------
    pop_ll : list of m + 1 arrays [H_p, S]
        ``log p(x'_s | Θ_h)`` under ``p(Θ | y)`` (first) and each ``p(Θ | y, Z_(l))``.
    slot_ll : list of m + 1 arrays [H_p, U]
        ``log p(y_i | Θ_h)`` of the ``U`` distinct slots, same posteriors.
    block : int
        Slots processed together (memory ``block × H × S``).
    log_select : array [S], optional
        ``log s(x'_s)``: 0 (selected) or ``-inf``.

    Returns
    -------
    log_d, khat, ess : arrays [U]
        The log normaliser per slot, its Pareto k̂ and Kish ESS.
    """
    m = len(pop_ll) - 1
    U = slot_ll[0].shape[1]
    H0 = pop_ll[0].shape[0]
    log_prop = logsumexp(pop_ll[0], axis=0) - np.log(H0)  # log p(x'_s | y)  [S]
    scaled = [(L, L.max(axis=0), np.exp(L - L.max(axis=0))) for L in pop_ll]
    log_d = np.empty(U)
    khat = np.empty(U)
    ess = np.empty(U)
    for a in range(0, U, block):
        b = min(U, a + block)
        lp = []
        for p in range(m + 1):
            Y = slot_ll[p][:, a:b]
            # [B, S]: log Σ_h exp(L_hs − Y_hi) − log Σ_h exp(−Y_hi)
            num = _log_cross(scaled[p], -Y)
            den = logsumexp(-Y, axis=0)[:, None]
            lp.append(num - den)
        log_v = lp[0] - log_prop[None, :]  # importance weights to p(· | y_{-i})
        log_prod = sum(lp[p] - lp[0] for p in range(1, m + 1))
        t = log_v + log_prod
        if log_select is None:
            log_d[a:b] = logsumexp(t, axis=1) - logsumexp(log_v, axis=1)
        else:
            ts = t + log_select[None, :]
            # m = 1: E[A_1] = 1 exactly, so divide by its estimate rather than by Σ v
            log_d[a:b] = logsumexp(ts, axis=1) - logsumexp(t if m == 1 else log_v, axis=1)
            t = ts
        khat[a:b] = tail_khat(t)
        ess[a:b] = kish_ess(t, axis=1)
    if log_select is not None:  # no population draw selected: no estimate (flagged)
        ess = np.where(np.isnan(ess), 0.0, ess)
    return log_d, khat, ess


def _log_cross(pop: tuple[np.ndarray, np.ndarray, np.ndarray], log_w: np.ndarray) -> np.ndarray:
    """``[B, S]`` of ``log Σ_h exp(L_hs + log_w_hb)`` as one scaled matrix product."""
    L, a, eL = pop
    bmax = log_w.max(axis=0)
    prod = np.exp(log_w - bmax).T @ eL  # [B, S]
    with np.errstate(divide="ignore"):
        out = np.log(prod) + bmax[:, None] + a[None, :]
    bad = np.argwhere(~(prod > 1e-250))
    for i, j in bad:
        out[i, j] = logsumexp(L[:, j] + log_w[:, i])
    return out


def membership_log_lr(base: LogPredictive, augmented: list[LogPredictive],
                      log_d: np.ndarray | None) -> np.ndarray:
    """``log Λ(x_t) = Σ_l [log p(x | y_{-i}, Z_(l)) − log p(x | y_{-i})] − log D_i``."""
    out = sum(a.value - base.value for a in augmented)
    if log_d is not None:
        out = out - log_d
    return np.asarray(out, dtype=np.float64)


def posterior_membership(log_lr: np.ndarray, prior: float) -> np.ndarray:
    """``P(member | Z, x) = π Λ / (π Λ + 1 − π)``, computed as a logistic of log odds."""
    log_odds = np.asarray(log_lr, dtype=np.float64) + np.log(prior) - np.log1p(-prior)
    with np.errstate(over="ignore", invalid="ignore"):  # ±inf odds: the other branch's nan
        return np.where(log_odds >= 0, 1.0 / (1.0 + np.exp(-log_odds)),
                        np.exp(log_odds) / (1.0 + np.exp(log_odds)))


def thresholds(n_draws: int) -> tuple[float, float]:
    """The k̂ and ESS flag thresholds of the attribute engine for ``n_draws`` draws."""
    return khat_threshold(n_draws), low_ess_threshold(n_draws)
