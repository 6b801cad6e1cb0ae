"""Record-level columns of an attribute-risk result, computed from kept log-likelihoods.

Shared by the assemble stage of :func:`bayes_risk.attribute.attribute_risk` and by the result's
``with_prior`` / :func:`bayes_risk.attribute.prior_sensitivity`: a new prior only renormalises
the kept log-likelihoods, so every column that depends on the prior is computed here, once.

* ``point_summaries`` — posterior and rank summaries of the truth, records grouped by ``G``.
* ``khat_material`` — the range of ``p_true`` allowed by high-k̂ means (stabilised estimator).
* ``bootstrap_summaries`` — quantiles of the truth's rank and probability over draw bootstraps.
* ``order_flags`` / ``set_point_columns`` — record flags in canonical order; typed columns.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence

import numpy as np
import pandas as pd

from bayes_risk._numeric import LOG_TIE_ATOL, threaded_map
from bayes_risk.attribute.diagnostics import logsumexp
from bayes_risk.attribute.summaries import log_posterior, rank_summary
from bayes_risk.warning_codes import RECORD_FLAGS

__all__ = [
    "MC_SE_THRESHOLD",
    "MC_SE_WINDOW",
    "KHAT_TOLERANCE",
    "groups_by_size",
    "ungroup",
    "point_summaries",
    "khat_material",
    "order_flags",
    "set_point_columns",
    "bootstrap_summaries",
]

#: ``MC_ERROR_HIGH`` (plug-in likelihoods estimated by Monte Carlo, e.g. kernel-smoothed CART):
#: a candidate whose log-likelihood is within ``MC_SE_WINDOW`` of the record's largest has a
#: standard error of its difference from the truth above ``MC_SE_THRESHOLD`` (posterior odds
#: uncertain by more than about ±10 %); candidates further down carry no weight either way
MC_SE_THRESHOLD = 0.1
MC_SE_WINDOW = 10.0

#: ``KHAT_HIGH`` under ``khat_rule="material"`` (stabilised estimator): by how much, on the
#: probability scale, the truth's probability may at most be understated (one percentage point)
KHAT_TOLERANCE = 0.01


def groups_by_size(sizes: np.ndarray) -> list[np.ndarray]:
    return [np.flatnonzero(sizes == g) for g in np.unique(sizes)]


def ungroup(mats: list[np.ndarray], groups: list[np.ndarray], n: int) -> list[np.ndarray]:
    out: list[np.ndarray] = [np.empty(0)] * n
    for idx, mat in zip(groups, mats, strict=False):
        for k, i in enumerate(idx):
            out[i] = mat[k]
    return out


def point_summaries(
    loglik: list[np.ndarray],
    logprior: list[np.ndarray],
    g0: np.ndarray,
    groups: tuple[list[np.ndarray], list[np.ndarray], list[np.ndarray]] | None = None,
) -> tuple[list[np.ndarray], dict[str, np.ndarray]]:
    n = len(loglik)
    log_post: list[np.ndarray] = [np.empty(0)] * n
    keys = ("p_true", "rank_min", "n_tie", "rank_avg", "is_top", "top_share")
    out = {k: np.full(n, np.nan) for k in keys}
    if groups is None:
        sizes = np.array([a.size for a in loglik], dtype=np.int64)
        idxs = groups_by_size(sizes)
        lls = [np.stack([loglik[i] for i in idx]) for idx in idxs]
        lps = [np.stack([logprior[i] for i in idx]) for idx in idxs]
    else:
        idxs, lls, lps = groups
    for idx, ll, lp in zip(idxs, lls, lps, strict=False):
        post = log_posterior(ll, lp)
        rs = rank_summary(post, g0[idx])
        for k in keys:
            out[k][idx] = rs[k]
        for j, i in enumerate(idx):
            log_post[i] = post[j]
    return log_post, out


def khat_material(
    loglik: Sequence[np.ndarray],
    diagnostics: Sequence[dict[str, np.ndarray]],
    logprior: Sequence[np.ndarray],
    g0: np.ndarray,
    tolerance: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Bounds of ``p_true`` allowed by the Pareto diagnostics, and whether they are material.

    A candidate whose stabilised log-likelihood rests on a mean with a high k̂ gets the
    interval ``[loglik_lo, loglik_hi]`` of :func:`~bayes_risk.attribute.estimator.
    stabilised_bounds`. Setting every such candidate at its lower end gives the largest
    probability the truth could have (``p_true_upper``); at its upper end, the smallest
    (``p_true_lower``, often 0: a mean with a heavy tail has no finite upper bound).

    A record none of whose candidates rests on a mean with a high k̂ has no such range: its
    bounds are ``nan``, not ``p_true`` twice (an interval of width 0 would claim no Monte Carlo
    error; that error is the draw bootstrap's, ``boot_p_true_q05`` / ``boot_p_true_q95``).

    The record is flagged ``KHAT_HIGH`` when its risk could be **understated** materially:
    ``p_true_upper > p_true + tolerance``, or the truth is not the most probable candidate
    but could be. The other direction (``p_true_lower < p_true``) means the reported
    ``p_true`` may overstate the risk: it is then an upper bound, still safe for a release
    decision, and reported in ``p_true_lower``.

    Returns
    -------
    p_lower, p_upper : ndarray (R,)
        ``nan`` where the record has no bounds (no candidate with a high k̂, other estimators,
        skipped records).
    material : bool ndarray (R,)
    """
    n = len(loglik)
    p_lo = np.full(n, np.nan)
    p_up = np.full(n, np.nan)
    material = np.zeros(n, dtype=bool)
    for k in range(n):
        d = diagnostics[k]
        if "loglik_lo" not in d:
            continue
        ll = np.asarray(loglik[k], dtype=np.float64)
        lp = np.asarray(logprior[k], dtype=np.float64)
        t = int(g0[k])
        a = ll + lp
        if not np.isfinite(a[t]):
            continue
        with np.errstate(invalid="ignore"):
            a_up = np.asarray(d["loglik_lo"], dtype=np.float64) + lp  # others low: truth high
            a_lo = np.asarray(d["loglik_hi"], dtype=np.float64) + lp
        a_up[t] = a_lo[t] = a[t]
        if "khat_high" in d:
            untrusted = bool(np.any(d["khat_high"]))
        else:  # intervals given without the candidates they concern: any that is not a point
            untrusted = not (np.array_equal(a_up, a) and np.array_equal(a_lo, a))
        if not untrusted:
            continue  # every mean trusted: no range, never material
        p = math.exp(a[t] - float(logsumexp(a)))
        p_up[k] = math.exp(a[t] - float(logsumexp(a_up)))
        lse_lo = float(logsumexp(a_lo))
        p_lo[k] = 0.0 if lse_lo == math.inf else math.exp(a[t] - lse_lo)
        others = np.delete(a, t)
        others_up = np.delete(a_up, t)
        top = not np.any(others > a[t] + LOG_TIE_ATOL)
        could_top = not np.any(others_up > a[t] + LOG_TIE_ATOL)
        material[k] = bool(p_up[k] > p + tolerance) or (could_top and not top)
    return p_lo, p_up, material


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


def bootstrap_summaries(
    boot: list[np.ndarray] | None, logprior: list[np.ndarray], g0: np.ndarray, n: int
) -> dict[str, np.ndarray]:
    keys = (
        "boot_rank_q05",
        "boot_rank_q50",
        "boot_rank_q95",
        "boot_p_true_q05",
        "boot_p_true_q50",
        "boot_p_true_q95",
    )
    out = {k: np.full(n, np.nan) for k in keys}
    if boot is None:
        return out
    sizes = np.array([b.shape[1] for b in boot], dtype=np.int64)
    # blocks of records bound the [R, B, G] temporaries (B = 200, G = 35: 56 kB per record);
    # blocks are independent and write disjoint records, so they run on the shared threads
    # (numpy releases the GIL in its loops) with the same values
    blocks = [
        grp[a : a + 256] for grp in groups_by_size(sizes) for a in range(0, grp.size, 256)
    ]

    def block(idx: np.ndarray) -> None:
        bl = np.stack([boot[i] for i in idx])  # [R, B, G]
        r, b, g = bl.shape
        lp = np.stack([logprior[i] for i in idx])[:, None, :]
        post = log_posterior(bl + lp).reshape(r * b, g)
        rs = rank_summary(post, np.repeat(g0[idx], b))
        rank = rs["rank_min"].reshape(r, b)
        pt = rs["p_true"].reshape(r, b)
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

