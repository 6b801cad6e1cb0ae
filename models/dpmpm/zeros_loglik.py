"""Likelihoods and synthesis of the DPMPM truncated to the allowed cells (structural zeros).

Hooks called by :class:`~bayes_risk.models.dpmpm.dpmpm.DPMPM` when it has structural zeros
(:mod:`bayes_risk.models.dpmpm.zeros`): every density is the latent class model's,
set to zero on ``S`` and divided by ``1 − P(S | Θ)`` (Manrique-Vallier & Reiter 2014); marginal
and conditional densities subtract the part of ``S`` they sum over.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from bayes_risk._numeric import logsumexp
from bayes_risk.exceptions import SchemaError, ValidationError
from bayes_risk.models.dpmpm.coding import class_logw, encode, encode_dataset
from bayes_risk.models.dpmpm.state import DPMPMState
from bayes_risk.models.dpmpm.zeros import MAX_REJECTION_ROUNDS, UNKNOWN, inverse_cdf

__all__ = [
    "convergence_cells",
    "dataset_loglik",
    "fix_synthesis",
    "neighbourhood",
    "own_record_terms",
    "record_loglik",
]

_CELLS = 2e7  # float64 cells of one [H, rows, K] block


def _chunks(n: int, H: int, K: int):
    step = max(1, int(_CELLS // max(1, H * K)))
    for a in range(0, n, step):
        yield a, min(n, a + step)


def _minus_log(u: np.ndarray, t: np.ndarray) -> np.ndarray:
    """``log(exp(u) − exp(t))``; ``-inf`` where ``t >= u`` (all the mass lies in ``S``)."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        out = u + np.log1p(-np.exp(t - u))
    return np.where((t >= u) | ~np.isfinite(u), -np.inf, out)


def allowed_joint(state: DPMPMState, codes, cond, lp, lpi, ph, *, per_class: bool = False):
    """``log P(y_C = x_C, y ∉ S | Θ)`` of each record (``[H, n]``; ``[H, n, K]`` per class).

    ``x_C``: the observed entries of ``codes`` in the columns ``cond``; the others are summed
    over. Unnormalised (not divided by ``1 − P(S | Θ)``).
    """
    zs = state.zeros
    H, K = lpi.shape
    n = codes.shape[0]
    out = np.empty((H, n, K) if per_class else (H, n))
    for a, b in _chunks(n, H, K):
        c = codes[a:b]
        u = class_logw(state, c, lp, lpi, cond)
        t = zs.section_logmass(c, cond, ph, lp) + lpi[:, None, :]
        if per_class:
            out[:, a:b] = _minus_log(u, t)
        else:
            out[:, a:b] = _minus_log(logsumexp(u, axis=-1), logsumexp(t, axis=-1))
    full = np.asarray(cond, bool).all() and not per_class
    if full:  # complete records: exactly -inf in S (no cancellation error)
        inside = zs.contains(codes) & (codes >= 0).all(axis=1)
        out[:, inside] = -np.inf
    return out


def record_loglik(state: DPMPMState, codes, out, lp, lpi, ph) -> None:
    """Turn ``out[H, n]`` (unrestricted ``log p(y_i,obs | Θ)``, missing entries ``-1``
    marginalised) into the truncated model's, in place."""
    incomplete = (codes < 0).any(axis=1)
    out[:, state.zeros.contains(codes) & ~incomplete] = -np.inf
    rows = np.flatnonzero(incomplete)
    if rows.size:  # sum over the allowed completions only
        out[:, rows] = allowed_joint(state, codes[rows], np.ones(codes.shape[1], bool), lp,
                                     lpi, ph)
    out -= state.zeros.log_allowed(ph, lpi)[:, None]


def candidate_codes(codes: np.ndarray, syn_cols: np.ndarray, d: np.ndarray) -> np.ndarray:
    """``[n, G, p]`` the one-variable-different candidates in the neighbourhood's order."""
    n, p = codes.shape
    blocks = [codes[:, None, :]]
    for j in syn_cols:
        lv = np.arange(d[j] - 1)[None, :]
        lv = lv + (lv >= codes[:, j, None])  # skip the true level
        blk = np.repeat(codes[:, None, :], d[j] - 1, axis=1)
        blk[:, :, j] = lv
        blocks.append(blk)
    return np.concatenate(blocks, axis=1)


def neighbourhood(state: DPMPMState, codes, syn_cols, out, lpi, ph) -> None:
    """Truncate ``out[H, n, G]`` (joint log-likelihoods of the one-variable-different
    candidates) in place: candidates in ``S`` get ``-inf``, the rest ``− log(1 − P(S | Θ))``."""
    zs = state.zeros
    inside = zs.contains(candidate_codes(codes, syn_cols, state.d))  # [n, G]
    if inside[:, 0].any():
        i = int(np.flatnonzero(inside[:, 0])[0])
        raise SchemaError(
            f"records: row {i} lies in a structural zero of the model (an impossible record).",
            code="STRUCTURAL_ZERO_OBSERVED",
        )
    out -= zs.log_allowed(ph, lpi)[:, None, None]
    if inside.any():
        ii, gg = np.nonzero(inside)
        out[:, ii, gg] = -np.inf


def _posterior_class_logw(state: DPMPMState, ycodes, lp, lpi, ph) -> np.ndarray:
    """``[H, n, K]`` ``log p(k | y_i,obs, y_i ∉ S, Θ)`` (the class of ``posterior_class``)."""
    w = allowed_joint(state, ycodes, np.ones(ycodes.shape[1], bool), lp, lpi, ph,
                      per_class=True)
    return w - logsumexp(w, axis=-1)[..., None]


def _log_allowed_given(state: DPMPMState, codes, lp, ph, us_mask) -> np.ndarray:
    """``[H, n, K]`` ``log(1 − P(y ∈ S | z = k, y_US = x_US, Θ))``: the normaliser of the
    synthesized part given the class and the released unsynthesized values."""
    rel = state.zeros.section_logmass(codes, us_mask, ph, lp)
    c = np.where(codes < 0, -1, codes)
    H = lp.shape[0]
    K = lp.shape[2]
    base = np.zeros((H, codes.shape[0], K))
    for j in np.flatnonzero(us_mask):
        ok = c[:, j] >= 0
        base[:, ok, :] += lp[:, state.offsets[j] + c[ok, j], :]
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.exp(np.minimum(rel - base, 0.0))
        return np.log1p(-np.minimum(r, 1.0))


def dataset_loglik(state: DPMPMState, synthetic, lp, lpi, ph, *, mode: str, rows: np.ndarray,
                   n: int, data: pd.DataFrame | None) -> np.ndarray:
    """``[H, m]`` ``log p(Z_(l) | Θ)`` of the truncated model in synthesis mode ``mode``
    (``rows``, ``n``, ``data``: as in :func:`bayes_risk.models.dpmpm.loglik.dataset_loglik`)."""
    s_mask, us_mask = state.synthesized, state.unsynthesized
    p = len(s_mask)
    H, K = lpi.shape
    out = np.empty((H, len(synthetic)))
    log_allowed = state.zeros.log_allowed(ph, lpi)
    if mode == "posterior_class":
        ycodes = encode(state.schema, data, name="data")[rows]
    for l, z in enumerate(synthetic):
        zc = encode_dataset(state.schema, z, l, n)[rows]
        if np.any(zc[:, s_mask] == UNKNOWN) or np.any(zc[:, s_mask] < 0):
            out[:, l] = -np.inf
            continue
        zc = np.where(zc == UNKNOWN, -1, zc)
        if mode == "marginal":
            rec = allowed_joint(state, zc, s_mask, lp, lpi, ph) - log_allowed[:, None]
        elif mode == "conditional_us":
            rec = (allowed_joint(state, zc, np.ones(p, bool), lp, lpi, ph)
                   - allowed_joint(state, zc, us_mask, lp, lpi, ph))
        else:
            rec = np.empty((H, len(rows)))
            for a, b in _chunks(len(rows), H, K):
                c = zc[a:b]
                post = _posterior_class_logw(state, ycodes[a:b], lp, lpi, ph)
                terms = (post + class_logw(state, c, lp, np.zeros_like(lpi), s_mask)
                         - _log_allowed_given(state, c, lp, ph, us_mask))
                rec[:, a:b] = logsumexp(terms, axis=-1)
            rec[:, state.zeros.contains(zc)] = -np.inf
        out[:, l] = rec.sum(axis=1)
    return out


def own_record_terms(state: DPMPMState, codes_full, zc, lp, lpi, ph):
    """Pieces of the class O own-record term with structural zeros.

    Returns ``extra[H, K]`` (``− log(1 − P(y ∈ S | k, released unsynthesized values))``, added
    to the per-class log-likelihood of the released record) and ``inside[G+1]`` (candidates —
    row 0 the truth — that lie in ``S``: probability zero).
    """
    extra = -_log_allowed_given(state, zc[None, :], lp, ph, state.unsynthesized)[:, 0, :]
    return extra, state.zeros.contains(codes_full)


def fix_synthesis(state: DPMPMState, draw, rng, rows_codes, logw, z, cols, *, keep_class: bool):
    """Redraw the synthesized records that fell in ``S`` until none does (rejection).

    ``cols`` maps a column index to its drawn codes (modified in place); ``keep_class``
    (``posterior_class``): only the values are redrawn, given the record's class.
    """
    zs = state.zeros
    phi = state.phi[draw]
    cur = rows_codes.copy()
    for j, v in cols.items():
        cur[:, j] = v
    bad = np.flatnonzero(zs.contains(cur))
    for _ in range(MAX_REJECTION_ROUNDS):
        if bad.size == 0:
            return
        if not keep_class:
            w = np.exp(logw[bad] - logw[bad].max(axis=1, keepdims=True))
            z[bad] = inverse_cdf(w, rng)
        for j in cols:
            a, dj = state.offsets[j], state.d[j]
            new = inverse_cdf(phi[a : a + dj, :].T[z[bad]], rng)
            cols[j][bad] = new
            cur[bad, j] = new
        bad = bad[zs.contains(cur[bad])]
    raise ValidationError(
        "structural_zeros: synthesis keeps drawing records in the structural zeros (the allowed "
        "cells have almost no probability under a posterior draw).",
        code="NO_ALLOWED_CELL"
    )


def posterior_class_weights(state: DPMPMState, draw, codes, logw) -> np.ndarray:
    """Class log-weights of ``posterior_class`` synthesis given truncation (``[r, K]``)."""
    if (codes >= 0).all():
        return logw  # a complete allowed record: the truncation does not change p(k | y)
    sl = slice(draw, draw + 1)
    w = allowed_joint(state, codes, np.ones(codes.shape[1], bool), state.logphi[sl],
                      state.log_pi[sl], state.phi[sl], per_class=True)
    return w[0]


def convergence_cells(state: DPMPMState, C: int, D: int) -> dict[str, np.ndarray]:
    """The cell probabilities of the convergence report under the truncated model (``[C, D]``
    each): ``P(col_j = first level)`` for the first three columns, and the first two jointly."""
    names = state.schema.names
    p = len(names)
    picks = [[j] for j in range(min(3, p))] + ([[0, 1]] if p >= 2 else [])
    codes = np.full((len(picks), p), -1, dtype=np.int64)
    for r, cols in enumerate(picks):
        codes[r, cols] = 0
    ll = allowed_joint(state, codes, np.ones(p, bool), state.logphi, state.log_pi, state.phi)
    ll -= state.zeros.log_allowed(state.phi, state.log_pi)[:, None]
    out = {}
    for r, cols in enumerate(picks):
        key = ",".join(f"{names[j]}={state.schema.columns[j].levels[0]}" for j in cols)
        out[f"P({key})"] = np.exp(ll[:, r]).reshape(C, D)
    return out
