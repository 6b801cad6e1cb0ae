"""Weaker-than-worst-case intruders of the Wei & Reiter (2016) largest-value scenario
(``"second_largest"``, ``"two_largest_sum"``): :doc:`/methods/attribute` (Intruders of the
largest value).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.special import gammaln, logsumexp

import bayes_risk.models.poisson.loglik as _loglik
from bayes_risk.exceptions import ValidationError

__all__ = [
    "predictive_logpmf", "sum_logpmf", "group_constraints", "constraint_loglik", "FFT_FLOOR",
]

#: ``(σ, c, r, lo, hi, by_component)`` of one group-sum constraint (see ``group_constraints``)
Constraint = tuple[float, float, int, int, int, bool]

#: relative floor of FFT convolutions (their rounding noise is ~1e-16 of the largest term)
FFT_FLOOR = 1e-12
_DIRECT_MAX = 4_000_000  # size product up to which np.convolve (exact) is used


def predictive_logpmf(log_pi: np.ndarray, lam_j: np.ndarray, lo: int, hi: int) -> np.ndarray:
    """``[H, hi - lo + 1]`` log pmf of one unknown record's value (``log_pi [H, K]``, column
    rates ``lam_j [H, K]``) truncated to ``lo..hi``; ``-inf`` rows where the range has no mass."""
    y = np.arange(lo, hi + 1, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        log_lam = np.log(lam_j)[:, :, None]
        t = y[None, None, :] * log_lam - lam_j[:, :, None] - gammaln(y + 1.0)[None, None, :]
    t = np.where((lam_j[:, :, None] == 0) & (y[None, None, :] == 0), 0.0, t)
    t = np.where(np.isnan(t), -np.inf, t)
    lp = logsumexp(log_pi[:, :, None] + t, axis=1)
    norm = logsumexp(lp, axis=1, keepdims=True)
    with np.errstate(invalid="ignore"):
        out = lp - norm
    return np.where(np.isfinite(norm), out, -np.inf)


def _conv(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if a.size * b.size <= _DIRECT_MAX:
        return np.convolve(a, b)
    from scipy.signal import fftconvolve

    c = fftconvolve(a, b)
    c[c < FFT_FLOOR * c.max()] = 0.0
    return c


def _power(p: np.ndarray, r: int) -> np.ndarray:
    """``r``-fold convolution power of the pmf ``p`` (binary exponentiation, rescaled)."""
    out = np.ones(1)
    base = p / p.sum()
    while r:
        if r & 1:
            out = _conv(out, base)
            out /= out.sum()
        r >>= 1
        if r:
            base = _conv(base, base)
            base /= base.sum()
    return out


def sum_logpmf(member_logpmf: np.ndarray, lo: int, r: int, s: np.ndarray) -> np.ndarray:
    """``log P(S_r = s)`` for the sum of ``r`` independent values with the given pmf, per draw.

    The convolution power of the exponentially tilted pmf keeps a tail total's relative accuracy.

    ``member_logpmf [H, w]``: one value's log pmf on ``lo..lo+w-1``; ``s [G]``: the totals.
    Returns ``[H, G]``.
    """
    s = np.asarray(s, dtype=np.float64)
    H, w = member_logpmf.shape
    out = np.full((H, s.size), -np.inf)
    if r == 0:
        out[:, s == 0] = 0.0
        return out
    idx = s - r * lo
    ok = (idx >= 0) & (idx <= r * (w - 1)) & (idx % 1 == 0)
    if not ok.any():
        return out
    y = np.arange(w, dtype=np.float64)
    target = float(np.median(idx[ok])) / r  # tilted mean of one value (offset by lo)
    for h in range(H):
        lp = member_logpmf[h]
        if not np.isfinite(lp).any():
            continue
        theta = _tilt(lp, y, target)
        lt = lp + theta * y
        log_m = logsumexp(lt)
        pw = _power(np.exp(lt - lt.max()), r)
        with np.errstate(divide="ignore"):
            out[h, ok] = (np.log(pw[idx[ok].astype(np.int64)]) - theta * idx[ok]
                          + r * log_m)
    return out


def _tilt(lp: np.ndarray, y: np.ndarray, target: float) -> float:
    """``θ`` with ``E_θ[Y] = target`` under ``f_θ ∝ exp(lp + θy)`` (bisection; ``E_θ`` increases
    with ``θ``); 0 when the target is the untilted mean or outside the support's range."""
    fin = np.isfinite(lp)
    ymin, ymax = y[fin].min(), y[fin].max()
    if not ymin < target < ymax:
        return 0.0

    def mean(theta: float) -> float:
        a = lp + theta * y
        p = np.exp(a - a.max())
        return float(p @ y / p.sum())

    lo_t, hi_t = -1.0, 1.0
    while mean(lo_t) > target and lo_t > -1e6:
        lo_t *= 2
    while mean(hi_t) < target and hi_t < 1e6:
        hi_t *= 2
    for _ in range(80):
        mid = 0.5 * (lo_t + hi_t)
        if mean(mid) < target:
            lo_t = mid
        else:
            hi_t = mid
    return 0.5 * (lo_t + hi_t)


def group_constraints(
    state: Any, rec: int, rec2: int, j: int, zs: list[np.ndarray], y: np.ndarray,
    gen: list[np.ndarray],
) -> list[Constraint]:
    """The distinct group-sum constraints on the target's value, one per distinct group.

    Datasets whose target group has the same members give one constraint (not ``m``
    independent looks at one sum).

    Returns
    -------
    list of ``(σ, c, r, lo, hi, by_component)``
        ``by_component``: the members share one component (MM).
    """
    K = state.n_components
    y1col = y[:, j]
    y2 = int(y1col[rec2])
    tail = state.variant == "tcmm"
    tau = None
    if tail:
        import bayes_risk.models.poisson.kernels as pk

        tau = int(np.floor(pk.tail_threshold(y1col, float(state.q))))
    seen: dict[tuple[int, ...], Constraint] = {}
    for zl, memb in zip(zs, gen, strict=True):
        groups, _ = state.groups(y1col, memb, K)
        members = np.flatnonzero(groups == groups[rec])
        key = tuple(int(i) for i in members)
        sigma = float(zl[members, j].sum())
        c = float(y2) if rec2 in key else 0.0
        r = int(members.size - 1 - (rec2 in key))
        in_tail = tail and groups[rec] == K
        lo = tau + 1 if in_tail else 0
        hi = y2 if (not tail or in_tail) else min(y2, tau)
        if key in seen:
            if seen[key][0] != sigma:  # cannot happen for a release of this model
                raise ValidationError(
                    "two synthetic datasets give the same synthesis group different sums: they "
                    "were not produced by this model with these memberships.",
                    code="RELEASE_NOT_REPRODUCED"
                )
            continue
        # an MM group is a component: its members share one (unknown) component
        seen[key] = (sigma, c, r, int(lo), int(hi), not in_tail)
    return list(seen.values())


def constraint_loglik(
    log_pi: np.ndarray, lam_j: np.ndarray, constraints: list[Constraint], candidates: np.ndarray,
) -> np.ndarray:
    """``[H, C, G]`` array of ``log P_h(S_r = σ − y*_g − c)`` for each constraint.

    A ``by_component`` group's component is weighted by ``π_hk Poisson(σ | n_G λ_hkj)``; other
    unknown values are draws from the truncated mixture predictive.
    """
    H = log_pi.shape[0]
    out = np.empty((H, len(constraints), candidates.size))
    for k, (sigma, c, r, lo, hi, by_comp) in enumerate(constraints):
        s = sigma - candidates - c
        if hi < lo:  # no room for an unknown member: only an empty group is possible
            out[:, k, :] = np.where((r == 0) & (s == 0), 0.0, -np.inf)[None, :]
            continue
        if not by_comp or r == 0:
            out[:, k, :] = sum_logpmf(predictive_logpmf(log_pi, lam_j, lo, hi), lo, r, s)
            continue
        n_g = r + 1 + (c > 0)
        with np.errstate(divide="ignore", invalid="ignore"):
            mu = n_g * lam_j
            lw = log_pi + sigma * np.log(mu) - mu - gammaln(sigma + 1.0)
        lw = np.where(np.isnan(lw), -np.inf, lw)
        lw = lw - logsumexp(lw, axis=1, keepdims=True)
        acc = np.full((H, candidates.size), -np.inf)
        for h in range(H):
            for kk in np.flatnonzero(lw[h] > np.log(1e-12)):
                one = predictive_logpmf(np.zeros((1, 1)), lam_j[h : h + 1, kk : kk + 1], lo, hi)
                acc[h] = np.logaddexp(acc[h], lw[h, kk] + sum_logpmf(one, lo, r, s)[0])
        out[:, k, :] = acc
    return out


def pair_dataset_loglik(
    state: Any, recs: tuple[int, int], cands: tuple[np.ndarray, np.ndarray], datasets: Any,
    idx: np.ndarray, memberships: Any, kept: Any,
) -> np.ndarray:
    """``[H, m, G]`` class-O log-likelihood of each dataset with *two* records' counts replaced.

    Records ``recs`` take ``cands[0][g]`` and ``cands[1][g]``; the others keep their values.
    """
    y = _loglik.confidential_counts(state, kept)
    zs = _loglik.synthetic_counts(state, datasets)
    log_pi, lam = state.params(idx)
    mode = _loglik.membership_mode(state, memberships)
    if isinstance(mode, str) and mode == "map":
        raise ValidationError(
            "memberships='map' is not available for the two-record scenario (the MAP class of "
            "a candidate pair is not defined); use 'generating', 'stored' or an array."
        )
    gen = (_loglik.generating_memberships(state, datasets, zs, y)
           if isinstance(mode, str) and mode == "generating" else None)
    return _loglik.replaced_dataset_loglik(state, zs, y, list(zip(recs, cands, strict=True)),
                                           idx, log_pi, lam, mode, gen)
