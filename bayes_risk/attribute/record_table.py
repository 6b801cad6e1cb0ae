"""Record-level columns of an attribute-risk result that depend on the prior."""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from bayes_risk._numeric import LOG_TIE_ATOL, threaded_map
from bayes_risk.attribute.chains import STACK_RECORDS, transposed_dev
from bayes_risk.attribute.diagnostics import logsumexp
from bayes_risk.attribute.specs import KHAT_TOLERANCE
from bayes_risk.attribute.summaries import log_posterior, rank_summary
from bayes_risk.warning_codes import RECORD_FLAGS

__all__ = [
    "MC_LEVEL",
    "material_flag",
    "KHAT_TOLERANCE",
    "groups_by_size",
    "ungroup",
    "point_summaries",
    "khat_material",
    "RecordStack",
    "record_stacks",
    "prior_columns",
    "POINT_COLUMNS",
    "flag_strings",
    "order_flags",
    "set_point_columns",
    "bootstrap_summaries",
    "boot_block_records",
    "debiased_p_true",
]

#: ``MC_ERROR_HIGH`` (plug-in likelihoods estimated by Monte Carlo): the simultaneous coverage of
#: the candidates' Monte Carlo bounds that the material rule reads (Bonferroni over the candidates)
MC_LEVEL = 0.95

#: the record columns of the bounds of ``p_true`` (:func:`khat_material`): its range, whether
#: the range is material, and whether the truth could be ranked first within it
BOUND_COLUMNS = ("p_true_lower", "p_true_upper", "khat_material", "is_top_upper")


def material_flag(estimator: str, khat_rule: str | None) -> str | None:
    """The record flag an estimator's bounds of ``p_true`` raise under the material rule
    (:func:`khat_material`): the smoothed plug-in's Monte Carlo bounds always, the stabilised
    estimator's k̂ bounds under ``khat_rule="material"`` (``None``: not by this rule)."""
    if estimator == "plugin":
        return "MC_ERROR_HIGH"
    return "KHAT_HIGH" if estimator == "stabilised" and khat_rule == "material" else None


#: the record columns of the posterior and rank summaries of the truth (Hu 2019 eq. 1)
POINT_COLUMNS = ("p_true", "rank_min", "n_tie", "rank_avg", "is_top", "top_share")

#: doubles of each temporary array of a block of :func:`bootstrap_summaries` at most
BOOT_BLOCK_VALUES = 1 << 18


def groups_by_size(sizes: np.ndarray) -> list[np.ndarray]:
    return [np.flatnonzero(sizes == g) for g in np.unique(sizes)]


def ungroup(mats: list[np.ndarray], groups: list[np.ndarray], n: int) -> list[np.ndarray]:
    out: list[np.ndarray] = [np.empty(0)] * n
    for idx, mat in zip(groups, mats, strict=False):
        for k, i in enumerate(idx):
            out[i] = mat[k]
    return out


def point_summaries(
    loglik: list[np.ndarray], logprior: list[np.ndarray], g0: np.ndarray
) -> tuple[list[np.ndarray], dict[str, np.ndarray]]:
    """Log posteriors and the summaries of the truth (``POINT_COLUMNS``)."""
    return _one_prior(loglik, [{}] * len(loglik), logprior, g0, POINT_COLUMNS, log_post=True)


def khat_material(
    loglik: Sequence[np.ndarray], diagnostics: Sequence[dict[str, np.ndarray]],
    logprior: Sequence[np.ndarray], g0: np.ndarray, tolerance: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Bounds ``p_lower, p_upper`` of ``p_true`` allowed by the k̂ bounds
    (:func:`~bayes_risk.attribute.estimator.stabilised_bounds`), and whether they are material.
    """
    out = _one_prior(loglik, diagnostics, logprior, g0, BOUND_COLUMNS, tolerance=tolerance)[1]
    return (out["p_true_lower"], out["p_true_upper"], out["khat_material"].astype(bool),
            out["is_top_upper"])


def _one_prior(
    loglik: Sequence[np.ndarray], diagnostics: Sequence[dict[str, np.ndarray]],
    logprior: Sequence[np.ndarray], g0: np.ndarray, names: Sequence[str], **kw: Any,
) -> tuple[list[np.ndarray], dict[str, np.ndarray]]:
    """Columns ``names`` of :func:`prior_columns` under one prior (and the log posteriors)."""
    n = len(loglik)
    sizes = np.array([np.size(a) for a in loglik], dtype=np.int64)
    log_post: list[np.ndarray] = [np.empty(0)] * n
    out = {k: np.full(n, np.nan) for k in names}
    blocks = [grp[a : a + STACK_RECORDS] for grp in groups_by_size(sizes)
              for a in range(0, grp.size, STACK_RECORDS)]
    for st in record_stacks(loglik, diagnostics, np.asarray(g0, dtype=np.int64), blocks,
                            chains=False):
        lp = np.stack([np.asarray(logprior[i], dtype=np.float64) for i in st.idx])[None]
        post, cols = prior_columns(st, lp, **kw)
        for k in names:
            out[k][st.idx] = cols[k][0]
        for j, i in enumerate(st.idx if kw.get("log_post") else ()):
            log_post[i] = post[0, j]
    return log_post, out


@dataclass
class RecordStack:
    """The kept per-candidate quantities of the records with ``G`` candidates, stacked once."""

    idx: np.ndarray
    g0: np.ndarray
    loglik: np.ndarray
    bound_rows: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    khat_high: np.ndarray | None
    chains: list[tuple[np.ndarray, np.ndarray, np.ndarray]]


def record_stacks(
    loglik: Sequence[np.ndarray], diagnostics: Sequence[dict[str, np.ndarray]], g0: np.ndarray,
    groups: Sequence[np.ndarray], *, chains: bool = True,
) -> list[RecordStack]:
    """One :class:`RecordStack` per group of records with the same ``G``."""
    out = []
    for idx in groups:
        idx = np.asarray(idx, dtype=np.int64)
        g = int(np.size(loglik[idx[0]])) if idx.size else 0
        ll = (np.stack([np.asarray(loglik[i], dtype=np.float64) for i in idx]) if idx.size
              else np.empty((0, g)))
        rows = np.array([k for k, i in enumerate(idx) if "loglik_lo" in diagnostics[i]],
                        dtype=np.int64)
        lo = np.stack([np.asarray(diagnostics[idx[k]]["loglik_lo"], dtype=np.float64)
                       for k in rows]) if rows.size else np.empty((0, g))
        hi = np.stack([np.asarray(diagnostics[idx[k]]["loglik_hi"], dtype=np.float64)
                       for k in rows]) if rows.size else np.empty((0, g))
        kh = None
        if rows.size and all("khat_high" in diagnostics[idx[k]] for k in rows):
            kh = np.array([bool(np.any(diagnostics[idx[k]]["khat_high"])) for k in rows])
        ch: dict[tuple[int, ...], list[int]] = {}
        if chains:
            for k, i in enumerate(idx):
                if "chain_loglik" in diagnostics[i]:
                    ch.setdefault(tuple(np.shape(diagnostics[i]["chain_dev"])), []).append(k)
        blocks = []
        for ks in ch.values():
            r = np.asarray(ks, dtype=np.int64)
            blocks.append((
                r,
                np.stack([np.asarray(diagnostics[idx[k]]["chain_loglik"], dtype=np.float64)
                          for k in r]),
                transposed_dev(np.stack([diagnostics[idx[k]]["chain_dev"] for k in r])),
            ))
        out.append(RecordStack(idx=idx, g0=np.asarray(g0, dtype=np.int64)[idx], loglik=ll,
                               bound_rows=rows, lo=lo, hi=hi, khat_high=kh, chains=blocks))
    return out


def prior_columns(
    st: RecordStack, lp: np.ndarray, *, tolerance: float = KHAT_TOLERANCE,
    log_post: bool = False, alone: bool = False,
) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Every record column of ``st`` that depends on the prior, under each prior of ``lp``,
    and (``log_post``) the log posteriors.
    """
    P, n, g = lp.shape
    names = (*POINT_COLUMNS, "p_true_lower", "p_true_upper", "is_top_upper") + (
        ("prior_p_true", "prior_top_share") if alone else ())
    cols = {k: np.full((P, n), np.nan) for k in names}
    cols["khat_material"] = np.zeros((P, n), dtype=bool)
    if g == 0 or n == 0:  # (an empty candidate set: records the engine skipped)
        return np.empty((P, n, g)), cols
    from bayes_risk.attribute._kernels import prior_point_columns

    post = np.empty((P, n, g) if log_post else (0, 0, 0))
    res = prior_point_columns(st.loglik, np.ascontiguousarray(lp, dtype=np.float64), st.g0,
                              alone, post)
    cols.update(zip((*POINT_COLUMNS, "prior_p_true", "prior_top_share"), res, strict=False))
    b, lo, hi, kh = st.bound_rows, st.lo, st.hi, st.khat_high
    if kh is not None:  # only the rows with a high k̂ have an interval
        b, lo, hi, kh = b[kh], lo[kh], hi[kh], kh[kh]
    if b.size:
        lo_, up_, mat, top_ = _khat_bounds(st.loglik[b], lo, hi, kh, lp[:, b], st.g0[b],
                                           tolerance)
        cols["p_true_lower"][:, b] = lo_
        cols["p_true_upper"][:, b] = up_
        cols["khat_material"][:, b] = mat
        cols["is_top_upper"][:, b] = top_
    return post, cols


_exp = np.frompyfunc(math.exp, 1, 1)  # the scalar exp of a run (numpy's may differ by an ulp)


def _khat_bounds(
    ll: np.ndarray, lo: np.ndarray, hi: np.ndarray, khat_high: np.ndarray | None,
    lp: np.ndarray, g0: np.ndarray, tolerance: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`khat_material` of ``nb`` records under ``P`` priors, each ``(P, nb)``, and
    whether the truth could be ranked first within the bounds (1.0, 0.0; NaN: no bounds)."""
    P, nb, g = lp.shape
    r = np.arange(nb)
    a = ll + lp
    at = a[:, r, g0]  # [P, nb]
    with np.errstate(invalid="ignore"):
        a_up = lo + lp  # others low: truth high
        a_lo = hi + lp
    a_up[:, r, g0] = at
    a_lo[:, r, g0] = at
    if khat_high is not None:
        untrusted = np.broadcast_to(khat_high, (P, nb))
    else:  # intervals given without the candidates they concern: any that is not a point
        untrusted = ~(np.all(a_up == a, axis=-1) & np.all(a_lo == a, axis=-1))
    # every mean trusted: no range, never material
    sel = untrusted & np.isfinite(at)
    p_lo = np.full((P, nb), np.nan)
    p_up = np.full((P, nb), np.nan)
    material = np.zeros((P, nb), dtype=bool)
    top_up = np.full((P, nb), np.nan)
    if not sel.any():
        return p_lo, p_up, material, top_up
    a, a_up, a_lo, at = a[sel], a_up[sel], a_lo[sel], at[sel]
    p = _exp(at - logsumexp(a, axis=-1)).astype(np.float64)
    up = _exp(at - logsumexp(a_up, axis=-1)).astype(np.float64)
    lse_lo = logsumexp(a_lo, axis=-1)
    with np.errstate(invalid="ignore"):
        low = np.where(lse_lo == math.inf, 0.0,
                       _exp(np.where(lse_lo == math.inf, 0.0, at - lse_lo)).astype(np.float64))
    tt = g0[np.nonzero(sel)[1]]
    k = np.arange(tt.size)
    a[k, tt] = -np.inf  # the others
    a_up[k, tt] = -np.inf
    top = ~np.any(a > (at + LOG_TIE_ATOL)[:, None], axis=-1)
    could_top = ~np.any(a_up > (at + LOG_TIE_ATOL)[:, None], axis=-1)
    p_lo[sel], p_up[sel] = low, up
    material[sel] = (up > p + tolerance) | (could_top & ~top)
    top_up[sel] = could_top
    return p_lo, p_up, material, top_up


def flag_strings(base: Sequence[str], flags: dict[str, np.ndarray]) -> np.ndarray:
    """``flag_codes`` ``base (n,)`` with each code of ``flags`` set where its mask is true."""
    codes = list(flags)
    inv, uniq = pd.factorize(pd.Series(list(base), dtype=object))
    kept = [[c for c in str(u).split(";") if c and c not in codes] for u in uniq]
    shape = np.broadcast_shapes(*(np.shape(m) for m in flags.values())) if flags else (len(inv),)
    key = np.broadcast_to(inv, shape).astype(np.int64)
    for j, c in enumerate(codes):
        key = key + (np.asarray(flags[c], dtype=np.int64) << j) * len(uniq)
    ukeys, kinv = np.unique(key, return_inverse=True)
    strings = np.array(
        [";".join(order_flags(kept[k % len(uniq)]
                              + [c for j, c in enumerate(codes) if (k // len(uniq)) >> j & 1]))
         for k in ukeys.tolist()], dtype=object)
    return strings[kinv.reshape(shape)]


def order_flags(flags: Sequence[str]) -> list[str]:
    """Flags in :data:`RECORD_FLAGS` order (others last, as given)."""
    known = [f for f in RECORD_FLAGS if f in flags]
    return known + [f for f in flags if f not in RECORD_FLAGS]


def set_point_columns(df: pd.DataFrame, rec: dict[str, np.ndarray]) -> None:
    for k, v in rec.items():
        df[k] = v
    # is_top is boolean; a skipped record (nan) makes it a nullable boolean
    top = df["is_top"]
    df["is_top"] = top.astype("boolean") if top.isna().any() else top.astype(bool)


def boot_block_records(B: int, G: int) -> int:
    """Records of a block of :func:`bootstrap_summaries`: 256, fewer when B x G is large (each
    of its temporary arrays at most :data:`BOOT_BLOCK_VALUES` doubles)."""
    return int(max(1, min(256, BOOT_BLOCK_VALUES // max(1, B * G))))


def _log_odds(p: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.log(p) - np.log1p(-p)


def debiased_p_true(p_boot: np.ndarray, p_hat: np.ndarray) -> np.ndarray:
    """Draw-bootstrap replicates ``[r, B]`` of ``p_true`` corrected for the bias they show.

    The estimate's log odds are a nonlinear function of Monte Carlo means (a log-sum-exp over the
    candidates), so the estimate is biased, and its replicates, drawn around it, carry the same
    bias once more: their percentile interval sits twice the bias away from the exact value.
    Each record's replicates are moved on the log-odds scale by twice the bias the bootstrap
    shows, ``2 (mean_b logit p*_b − logit p̂)`` (Efron & Tibshirani 1993, ch. 10; the mean over
    the replicates with finite log odds), which centres them on the bias-corrected estimate;
    their percentile interval then covers the exact value at its level (methods page, Draw
    bootstrap). A record whose estimate is 0 or 1, or with no replicate strictly between, is left
    as it is (no finite log odds to move).
    """
    p_boot = np.asarray(p_boot, dtype=np.float64)
    t = _log_odds(p_boot)
    fin = np.isfinite(t)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(fin, t, 0.0).sum(axis=-1) / fin.sum(axis=-1)
        shift = 2.0 * (mean - _log_odds(np.asarray(p_hat, dtype=np.float64)))
    shift = np.where(np.isfinite(shift), shift, 0.0)[..., None]
    with np.errstate(over="ignore", invalid="ignore"):
        moved = 1.0 / (1.0 + np.exp(shift - t))  # expit(t − shift); t = ±inf stays 1 / 0
    return np.where(shift == 0.0, p_boot, moved)


def bootstrap_summaries(
    boot: list[np.ndarray] | None, logprior: list[np.ndarray], g0: np.ndarray, n: int,
    p_true: np.ndarray,
) -> dict[str, np.ndarray]:
    """``boot_rank_q05/q50/q95`` (the truth's rank over the draw-bootstrap replicates) and
    ``boot_p_true_q05/q50/q95`` (its probability over the replicates corrected by
    :func:`debiased_p_true`) of each record; ``p_true`` the records' estimates."""
    out = {f"boot_{m}_{q}": np.full(n, np.nan)
           for m in ("rank", "p_true") for q in ("q05", "q50", "q95")}
    if boot is None:
        return out
    p_true = np.asarray(p_true, dtype=np.float64)
    sizes = np.array([b.shape[1] for b in boot], dtype=np.int64)
    # blocks of records bound the [R, B, G] temporaries; they write disjoint records, so they
    # run on the shared threads with the same values
    blocks = []
    for grp in groups_by_size(sizes):
        step = boot_block_records(boot[grp[0]].shape[0], sizes[grp[0]])
        blocks += [grp[a : a + step] for a in range(0, grp.size, step)]

    def block(idx: np.ndarray) -> None:
        bl = np.stack([boot[i] for i in idx])  # [R, B, G]
        r, b, g = bl.shape
        lp = np.stack([logprior[i] for i in idx])[:, None, :]
        post = log_posterior(bl + lp).reshape(r * b, g)
        rs = rank_summary(post, np.repeat(g0[idx], b))
        rank = rs["rank_min"].reshape(r, b)
        pt = debiased_p_true(rs["p_true"].reshape(r, b), p_true[idx])
        qfun = np.nanquantile if (np.isnan(rank).any() or np.isnan(pt).any()) else np.quantile
        with np.errstate(all="ignore"):
            for q, name in ((0.05, "q05"), (0.5, "q50"), (0.95, "q95")):
                out[f"boot_rank_{name}"][idx] = qfun(rank, q, axis=1)
                out[f"boot_p_true_{name}"][idx] = qfun(pt, q, axis=1)

    with warnings.catch_warnings():
        # (warnings filters are process-wide; numpy's error state is set per thread above)
        warnings.simplefilter("ignore", RuntimeWarning)
        threaded_map(block, blocks)
    return out

