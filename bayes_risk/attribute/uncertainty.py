"""Monte Carlo intervals of file-level summaries from the draw bootstrap.

The figures of ``p_true`` are recomputed from each record's bias-corrected replicates
(:func:`~bayes_risk.attribute.record_table.debiased_p_true`), those of the rank from the
replicates as drawn. See :doc:`/user_guide/attribute` and :doc:`/methods/attribute` (Draw
bootstrap), where their coverage of the exact figures is stated.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from bayes_risk._memory import check_memory
from bayes_risk.attribute.locations import check_location_columns, location_xy, record_posteriors
from bayes_risk.attribute.record_table import (
    BOOT_BLOCK_VALUES,
    boot_block_records,
    debiased_p_true,
)
from bayes_risk.attribute.summaries import log_posterior, rank_summary
from bayes_risk.data.validate import check_probability
from bayes_risk.exceptions import ValidationError, arg_name
from bayes_risk.results._attribute_mc import mc_interval_key
from bayes_risk.results.attribute import EVIDENCE_FACTOR, bayes_factor, check_evidence_factor

__all__ = ["file_uncertainty", "wang_reiter_uncertainty", "FILE_FIGURES", "WANG_REITER_FIGURES"]

#: file-level figures over the unflagged records
FILE_FIGURES = ("mean_p_true", "prop_top", "p_true_q25", "p_true_q50", "p_true_q75",
                "rank_q50", "rank_q75", "prop_evidence")
#: Wang & Reiter (2012) file-level figures: min, first quartile and median of R1 and R2
WANG_REITER_FIGURES = ("R1_min", "R1_q1", "R1_median", "R2_min", "R2_q1", "R2_median")


def _figures(p_true: np.ndarray, rank_min: np.ndarray, evident: np.ndarray) -> np.ndarray:
    """``FILE_FIGURES`` along the last axis (records); ``nan`` records are left out.
    ``evident``: 1 where the truth's Bayes factor reaches the evidence factor, else 0."""
    if p_true.shape[-1] == 0:
        return np.full((*p_true.shape[:-1], len(FILE_FIGURES)), np.nan)
    with np.errstate(invalid="ignore"):
        top = np.where(np.isnan(rank_min), np.nan, rank_min == 1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-nan slices (no record left)
        q = np.nanquantile(p_true, [0.25, 0.5, 0.75], axis=-1)
        rq = np.nanquantile(rank_min, [0.5, 0.75], axis=-1)
        mean, share = np.nanmean(p_true, axis=-1), np.nanmean(top, axis=-1)
        return np.stack([mean, share, q[0], q[1], q[2], rq[0], rq[1],
                         np.nanmean(evident, axis=-1)], axis=-1)


def _evident(p_true: np.ndarray, prior_p_true: np.ndarray, factor: float) -> np.ndarray:
    """1.0 where the Bayes factor of the truth is at least ``factor``, 0.0 below, ``nan`` where
    ``p_true`` is ``nan``."""
    return np.where(np.isnan(p_true), np.nan, bayes_factor(p_true, prior_p_true) >= factor)


def _by_replicates(figures: Any, *tables: np.ndarray) -> np.ndarray:
    """``figures(*tables)`` of tables ``[B, n]``, a block of replicates at a time: their
    quantiles over the records copy the table, so a block bounds the copies (the same
    numbers)."""
    step = max(1, BOOT_BLOCK_VALUES // max(1, tables[0].shape[1]))
    return np.concatenate([figures(*(t[i : i + step] for t in tables))
                           for i in range(0, tables[0].shape[0], step)])


def _check(result: Any, level: Any, tables: int = 2) -> list[np.ndarray]:
    """The result's kept draw bootstrap (clear errors for a bad ``level`` or none kept);
    ``tables`` tables ``[B, n]`` of the replicates' per-record figures are checked against the
    memory limit."""
    check_probability(level, "level")
    boot = getattr(result, "_boot_loglik", None)
    if not boot:
        raise ValidationError(
            "the result has no draw bootstrap (attribute_risk was run with bootstrap=0, with a "
            "tree plug-in or in compat mode); rerun attribute_risk with bootstrap > 0 (e.g. 200).",
            code="RESULT_UNSUITED"
        )
    check_memory(8.0 * tables * boot[0].shape[0] * len(boot), arg_name("bootstrap"),
                 what="the bootstrap replicates of the file's figures")
    return boot


def _flagged(result: Any) -> np.ndarray:
    return result.records["flag_codes"].fillna("").astype(str).to_numpy() != ""


def _boot_posteriors(result: Any, keep: np.ndarray) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Positions in ``keep`` and log posteriors ``[r, B, G]``, per candidate-set size."""
    boot = result._boot_loglik
    sizes = np.array([boot[i].shape[1] for i in keep], dtype=np.int64)
    for G in np.unique(sizes):
        pos = np.flatnonzero(sizes == G)
        step = boot_block_records(boot[keep[pos[0]]].shape[0], int(G))
        for a in range(0, pos.size, step):
            blk = pos[a : a + step]
            idx = keep[blk]
            ll = np.stack([boot[i] for i in idx])  # [r, B, G]
            lp = np.stack([result.logprior[i] for i in idx])[:, None, :]
            yield blk, log_posterior(ll + lp)


def _intervals(point: np.ndarray, figs: np.ndarray, names: Sequence[str], level: float,
               base: dict[str, Any]) -> dict[str, Any]:
    """``value``, ``mc_se`` and ``mc_interval_<level>`` of figures ``[B, F]``."""
    alpha = (1 - level) / 2
    with np.errstate(invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a figure nan in every replicate
        lo, hi = np.nanquantile(figs, [alpha, 1 - alpha], axis=0)
        se = np.nanstd(figs, axis=0, ddof=1)
    return {
        **base,
        "value": dict(zip(names, map(float, point), strict=True)),
        "mc_se": dict(zip(names, map(float, se), strict=True)),
        mc_interval_key(level): {f: [float(a), float(b)]
                                 for f, a, b in zip(names, lo, hi, strict=True)},
    }


def file_uncertainty(
    result: Any, *, level: float = 0.9, evidence_factor: float = EVIDENCE_FACTOR,
) -> dict[str, Any]:
    """Monte Carlo standard errors and intervals of file-level attribute-risk figures.

    Parameters
    ----------
    result : AttributeRiskResult
        Computed with ``bootstrap > 0``.
    level : float
        Level of the intervals (default 0.9): percentile intervals of the figures over the
        replicates, those of ``p_true`` corrected for their bias (module docstring).
    evidence_factor : float
        Bayes factor of the truth from which a record counts in ``prop_evidence`` (as
        ``prop_evidence`` of ``result.to_dict``).

    Returns
    -------
    dict
        ``n_records``, ``n_flagged_excluded``, ``bootstrap``, ``value`` (each of
        ``FILE_FIGURES`` on the unflagged records), ``mc_se`` and ``mc_interval_<level>``.

    Raises
    ------
    ValidationError
        If the result kept no draw bootstrap, or ``level`` is not in (0, 1).
    """
    evidence_factor = check_evidence_factor(evidence_factor)
    boot = _check(result, level)
    flagged = _flagged(result)
    base = {"n_records": int(len(result.records)), "n_flagged_excluded": int(flagged.sum()),
            "bootstrap": int(boot[0].shape[0]), "evidence_factor": float(evidence_factor)}
    return _file_intervals(result, np.flatnonzero(~flagged), level, evidence_factor, base)


def _file_intervals(result: Any, keep: np.ndarray, level: float, evidence_factor: float,
                    base: dict[str, Any]) -> dict[str, Any]:
    """:func:`file_uncertainty` of the records at positions ``keep``."""
    # p_true and the rank, [B, n] each; whether the Bayes factor reaches the evidence factor is
    # made a block of replicates at a time (its temporaries are [B, n] too)
    recs = result.records
    B = result._boot_loglik[0].shape[0]
    g0 = np.array([c.g0 for c in result.candidates], dtype=np.int64)
    p_b = np.full((B, keep.size), np.nan)
    r_b = np.full((B, keep.size), np.nan)
    for blk, post in _boot_posteriors(result, keep):
        r, _, G = post.shape
        rs = rank_summary(post.reshape(-1, G), np.repeat(g0[keep[blk]], B))
        p_b[:, blk] = rs["p_true"].reshape(r, B).T
        r_b[:, blk] = rs["rank_min"].reshape(r, B).T
    prior = result.prior_p_true()[keep]
    p0 = recs["p_true"].to_numpy(dtype=float)[keep]
    # corrected in place, a block of records at a time (each record's own correction): the
    # whole table corrected at once held five more [B, n] tables at its peak
    step = max(1, BOOT_BLOCK_VALUES // max(1, B))
    for a in range(0, keep.size, step):
        p_b[:, a:a + step] = debiased_p_true(p_b[:, a:a + step].T, p0[a:a + step]).T
    point = _figures(p0, recs["rank_min"].to_numpy(dtype=float)[keep],
                     _evident(p0, prior, evidence_factor))

    def figures(p: np.ndarray, r: np.ndarray) -> np.ndarray:
        return _figures(p, r, _evident(p, prior[None, :], evidence_factor))

    return _intervals(point, _by_replicates(figures, p_b, r_b), FILE_FIGURES, level, base)


def wang_reiter_uncertainty(
    result: Any, *, original: Any, location_columns: Sequence[str],
    locations: Mapping[Any, Sequence[float]] | None = None, level: float = 0.9,
) -> dict[str, Any]:
    """Monte Carlo standard errors and intervals of Wang & Reiter's (2012) file-level R1 / R2.

    Parameters
    ----------
    result : AttributeRiskResult
        Computed with ``bootstrap > 0``.
    original : DataFrame
        The confidential data (the other records' true locations, for R2).
    location_columns, locations
        As in ``file_summary(kind="wang_reiter")``.
    level : float
        Coverage of the percentile intervals (default 0.9).

    Returns
    -------
    dict
        As :func:`file_uncertainty`, over ``WANG_REITER_FIGURES``.

    Raises
    ------
    ValidationError
        No draw bootstrap kept, a bad ``level``, or bad location columns.
    """
    boot = _check(result, level)
    cols = check_location_columns(result, location_columns, locations)
    flagged = _flagged(result)
    keep = np.flatnonzero(~flagged)
    B = boot[0].shape[0]
    all_xy = location_xy(original, cols, locations)
    dist: dict[int, np.ndarray] = {}  # candidates' distances from the truth
    others: dict[int, np.ndarray] = {}  # other records' distances from the truth, sorted
    r1 = np.full(keep.size, np.nan)
    kept = set(keep.tolist())
    for k, rec, cand, post, g0 in record_posteriors(result):
        if k not in kept:
            continue
        cxy = location_xy(cand, cols, locations)
        t = cxy[g0]
        dist[k] = np.hypot(cxy[:, 0] - t[0], cxy[:, 1] - t[1])
        o = np.delete(all_xy, rec, axis=0)
        others[k] = np.sort(np.hypot(o[:, 0] - t[0], o[:, 1] - t[1]))
        r1[np.searchsorted(keep, k)] = float(np.sum(post * dist[k]))
    r1_b = np.full((B, keep.size), np.nan)
    for blk, post in _boot_posteriors(result, keep):
        d = np.stack([dist[int(i)] for i in keep[blk]])  # [r, G]
        r1_b[:, blk] = np.einsum("rbg,rg->br", np.exp(post), d)
    r2, r2_b = np.zeros(keep.size), np.zeros((B, keep.size))
    for j, k in enumerate(keep):
        # the tolerance of wang_reiter (a distance equal to R1 counts)
        r2[j] = np.searchsorted(others[k], r1[j] + 1e-12 * max(1.0, r1[j]), side="right")
        thr = r1_b[:, j] + 1e-12 * np.maximum(1.0, r1_b[:, j])
        r2_b[:, j] = np.searchsorted(others[k], thr, side="right")
    base = {"n_records": int(len(result.records)), "n_flagged_excluded": int(flagged.sum()),
            "bootstrap": int(B)}
    return _intervals(_wr_figures(r1, r2), _by_replicates(_wr_figures, r1_b, r2_b),
                      WANG_REITER_FIGURES, level,
                      base)


def _wr_figures(r1: np.ndarray, r2: np.ndarray) -> np.ndarray:
    """``WANG_REITER_FIGURES`` along the last axis (records)."""
    if r1.shape[-1] == 0:
        return np.full((*r1.shape[:-1], len(WANG_REITER_FIGURES)), np.nan)
    out = []
    for v in (r1, r2):
        q = np.quantile(v, [0.25, 0.5], axis=-1)
        out += [np.min(v, axis=-1), q[0], q[1]]
    return np.stack(out, axis=-1)

