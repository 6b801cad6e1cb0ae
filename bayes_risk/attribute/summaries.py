"""Record- and file-level summaries of attribute-risk posteriors.

See :doc:`/methods/attribute` (Record-level and File-level summaries).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from bayes_risk._numeric import LOG_TIE_ATOL
from bayes_risk._rng import RandomSeed, as_generator
from bayes_risk.attribute.diagnostics import logsumexp
from bayes_risk.exceptions import ValidationError
from bayes_risk.warning_codes import LOW_RISK_FLAG

__all__ = [
    "posterior",
    "log_posterior",
    "rank_summary",
    "record_summary",
    "wang_reiter",
    "low_risk_posterior",
    "paiva_measures",
    "largest_value",
]


def log_posterior(loglik: np.ndarray, logprior: np.ndarray | None = None) -> np.ndarray:
    """``log post = a − logsumexp(a)``, ``a = loglik + logprior`` (``nan`` rows: all ``-inf``)."""
    a = np.asarray(loglik, dtype=np.float64)
    if logprior is not None:
        a = a + np.asarray(logprior, dtype=np.float64)
    lse = logsumexp(a, axis=-1)[..., None]
    with np.errstate(invalid="ignore"):
        out = a - lse
    return np.where(np.isfinite(lse), out, np.nan)


def posterior(loglik: np.ndarray, logprior: np.ndarray | None = None) -> np.ndarray:
    """Normalised posterior over candidates (Hu 2019 eq. 1).

    Examples
    --------
    >>> posterior(np.array([-1000.0, -1001.0, -1003.0])).round(6)
    array([0.705385, 0.259496, 0.035119])
    """
    return np.exp(log_posterior(loglik, logprior))


def rank_summary(lpost: np.ndarray, g0: np.ndarray) -> dict[str, np.ndarray]:
    """Rank of the truth among candidates, vectorised over records.

    Parameters
    ----------
    lpost : ndarray (R, G)
        Log posteriors (``-inf`` allowed; rows of ``nan`` give ``nan`` summaries).
    g0 : int array (R,)

    Returns
    -------
    dict of arrays (R,)
        ``p_true``, ``rank_min``, ``n_tie``, ``rank_avg``, ``is_top``, ``top_share``.
    """
    lpost = np.asarray(lpost, dtype=np.float64)
    g0 = np.asarray(g0, dtype=np.int64)
    r = lpost.shape[0]
    lt = lpost[np.arange(r), g0][:, None]
    both_ninf = np.isneginf(lpost) & np.isneginf(lt)
    with np.errstate(invalid="ignore"):
        tie = both_ninf | (np.abs(lpost - lt) <= LOG_TIE_ATOL)
        above = (lpost > lt) & ~tie
    bad = np.isnan(lpost).any(axis=1) | np.isnan(lt[:, 0])
    rank_min = 1 + above.sum(axis=1)
    n_tie = tie.sum(axis=1)
    rank_avg = rank_min + (n_tie - 1) / 2.0
    is_top = rank_min == 1
    out = {
        "p_true": np.exp(lt[:, 0]),
        "rank_min": rank_min.astype(np.float64),
        "n_tie": n_tie.astype(np.float64),
        "rank_avg": rank_avg,
        "is_top": is_top.astype(np.float64),
        "top_share": np.where(is_top, 1.0 / np.maximum(n_tie, 1), 0.0),
    }
    for k in out:
        out[k] = np.where(bad, np.nan, out[k])
    return out


def record_summary(
    post: np.ndarray, g0: int, candidates: np.ndarray | None = None, *,
    numeric: Sequence[bool] | None = None,
) -> dict[str, Any]:
    """All record-level summaries of one record's posterior ``post (G,)`` (truth at ``g0``), with
    ``candidates`` also ``marginals``, ``abs_err`` and ``E_dist``.

    Examples
    --------
    >>> s = record_summary(np.array([0.30, 0.30, 0.25, 0.15]), 1)
    >>> s["rank_min"], s["n_tie"], s["rank_avg"], s["top_share"]
    (1, 2, 1.5, 0.5)
    """
    post = np.asarray(post, dtype=np.float64)
    with np.errstate(divide="ignore"):
        lp = np.log(post)
    rs = rank_summary(lp[None, :], np.array([g0]))
    mx = np.nanmax(lp)
    map_set = np.flatnonzero(
        (np.abs(lp - mx) <= LOG_TIE_ATOL) | (np.isneginf(lp) & np.isneginf(mx))
    )
    types = {"p_true": float, "rank_min": int, "n_tie": int, "rank_avg": float, "is_top": bool,
             "top_share": float}
    out: dict[str, Any] = {k: t(rs[k][0]) for k, t in types.items()}
    out.update(map_set=map_set.tolist(), map_value=int(map_set[0]), baseline=1.0 / post.size)
    if candidates is not None:
        c = np.asarray(candidates, dtype=np.float64)
        if c.ndim == 1:
            c = c[:, None]
        q = c.shape[1]
        num = [True] * q if numeric is None else list(numeric)
        truth = c[g0]
        out["marginals"] = [float(post[c[:, j] == truth[j]].sum()) for j in range(q)]
        errs = []
        for j in range(q):
            if not num[j]:
                continue
            vals, inv = np.unique(c[:, j], return_inverse=True)
            marg = np.bincount(inv, weights=post, minlength=vals.size)
            errs.append(float(abs(truth[j] - vals[int(np.argmax(marg))])))
        out["abs_err"] = errs
        if any(num):
            nc = np.asarray(num, dtype=bool)
            d = np.sqrt(np.sum((c[:, nc] - truth[nc][None, :]) ** 2, axis=1))
            out["E_dist"] = float(np.sum(post * d))
    return out


def wang_reiter(
    post: np.ndarray, cand_locations: np.ndarray, true_location: np.ndarray,
    other_locations: np.ndarray, *, n_mc: int | None = None, random_seed: RandomSeed = None,
) -> dict[str, float]:
    """Wang & Reiter (2012) R1 and R2 for one record.

    Parameters
    ----------
    post, cand_locations, true_location : arrays (G,), (G, 2) and (2,)
        Posterior over candidate locations, the candidates and the truth.
    other_locations : array (n_other, 2)
        Actual locations of the **other** records (the target excluded).
    n_mc : int, optional
        R1 as the Monte Carlo mean over ``n_mc`` posterior draws (seeded by ``random_seed``).
    random_seed : int, Generator or None

    Returns
    -------
    dict
        ``R1`` and ``R2``.

    Examples
    --------
    >>> wang_reiter(np.ones(3) / 3, np.array([[3, 4], [0, 5], [6, 8]]), np.zeros(2),
    ...             np.array([[1, 1], [6, 0], [7, 0], [5, 5]]))["R2"]
    2
    """
    post = np.asarray(post, dtype=np.float64)
    cl = np.asarray(cand_locations, dtype=np.float64)
    t = np.asarray(true_location, dtype=np.float64)
    d = np.hypot(cl[:, 0] - t[0], cl[:, 1] - t[1])
    if n_mc is None:
        r1 = float(np.sum(post * d))
    else:
        rng = as_generator(random_seed)
        idx = rng.choice(post.size, size=int(n_mc), p=post / post.sum())
        r1 = float(np.mean(d[idx]))
    o = np.asarray(other_locations, dtype=np.float64).reshape(-1, 2)
    dist_o = np.hypot(o[:, 0] - t[0], o[:, 1] - t[1])
    return {"R1": r1, "R2": int(np.sum(dist_o <= r1 + 1e-12 * max(1.0, r1)))}


def wang_reiter_file(r1: np.ndarray, r2: np.ndarray) -> dict[str, dict[str, float]]:
    """File-level W&R layout: min, first quartile and median of R1 and R2 (Wang & Reiter 2012)."""
    out = {}
    for name, v in (("R1", r1), ("R2", r2)):
        v = np.asarray(v, dtype=np.float64)
        out[name] = {"min": float(np.min(v)), "q1": float(np.quantile(v, 0.25)),
                     "median": float(np.median(v))}
    return out


def low_risk_posterior(
    synthetic_values: np.ndarray, truth: np.ndarray
) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Wang & Reiter's (2012) low-risk stand-in: the record's ``m`` synthetic values as draws.

    Parameters
    ----------
    synthetic_values : array (m, q)
        The record's synthetic values (one row per released dataset).
    truth : array (q,)

    Returns
    -------
    (candidates [G, q], post [G], flags)
        The truth, then the distinct synthetic values, each with its share of the datasets.

    Examples
    --------
    >>> cand, post, _ = low_risk_posterior(np.array([[3, 4], [0, 5], [3, 4]]), np.array([0, 5]))
    >>> cand.tolist(), post.round(3).tolist()
    ([[0, 5], [3, 4]], [0.333, 0.667])
    """
    z = np.asarray(synthetic_values)
    z = z.reshape(z.shape[0], -1)
    t = np.asarray(truth).reshape(1, -1)
    if z.shape[0] == 0 or z.shape[1] != t.shape[1]:
        raise ValidationError(
            f"synthetic_values must be (m >= 1, q = {t.shape[1]}) values of the record; got "
            f"shape {np.shape(synthetic_values)}."
        )
    vals, counts = np.unique(z, axis=0, return_counts=True)
    hit = np.all(vals == t, axis=1)
    cand = np.vstack([t, vals[~hit]]).astype(z.dtype)
    post = np.concatenate([[counts[hit].sum()], counts[~hit]]) / z.shape[0]
    return cand, post.astype(np.float64), [LOW_RISK_FLAG]


def paiva_measures(
    posts: Sequence[np.ndarray], g0: Sequence[int], cand_locations: Sequence[np.ndarray],
    unique: Sequence[bool],
) -> dict[str, Any]:
    """Paiva et al. (2014) measures for areal locations (provisional).

    Parameters
    ----------
    posts, g0 : sequences of arrays (G_r,) and of int
    cand_locations : sequence of arrays (G_r, 2)
        Candidate centroids of each record.
    unique : sequence of bool
        Whether the record's pattern is unique in ``y``.

    Returns
    -------
    dict
        ``pct_true_is_map`` (and ``_shared``, ``_unique``), ``dist_map`` and its mean and median.
    """
    is_top, share, dist = [], [], []
    for p, t, cl in zip(posts, g0, cand_locations, strict=False):
        s = record_summary(np.asarray(p), int(t))
        is_top.append(s["is_top"])
        share.append(s["top_share"])
        cl = np.asarray(cl, dtype=np.float64)
        ms = np.asarray(s["map_set"])
        dist.append(float(np.mean(np.hypot(cl[ms, 0] - cl[t, 0], cl[ms, 1] - cl[t, 1]))))
    is_top_a = np.asarray(is_top, dtype=np.float64)
    u = np.asarray(unique, dtype=bool)
    return {
        "pct_true_is_map": 100.0 * float(np.mean(is_top_a)),
        "pct_true_is_map_shared": 100.0 * float(np.mean(share)),
        "pct_true_is_map_unique": 100.0 * float(np.mean(is_top_a[u])) if u.any() else float("nan"),
        "dist_map": dist,
        "dist_map_mean": float(np.mean(dist)),
        "dist_map_median": float(np.median(dist)),
    }


def largest_value(
    post: np.ndarray, candidates: np.ndarray, truth: float, *, delta: float = 0.05,
    interval: tuple[float, float] | None = None,
) -> dict[str, float]:
    """Wei & Reiter (2016) largest-value summary: ``P_interval``, ``mode``, ``relative_error``.

    Examples
    --------
    >>> out = largest_value(np.array([.1, .2, .4, .2, .1]), np.arange(100, 105), 102, delta=0.01)
    >>> out["P_interval"]
    0.8
    """
    post = np.asarray(post, dtype=np.float64)
    c = np.asarray(candidates, dtype=np.float64)
    if truth == 0:
        raise ValidationError(
            "largest_value: the true largest value is 0; relative error undefined.",
            code="MEASURE_UNDEFINED"
        )
    lo, hi = interval if interval is not None else (truth * (1 - delta), truth * (1 + delta))
    lo, hi = min(lo, hi), max(lo, hi)
    mask = (c >= lo) & (c <= hi)
    mode = float(c[int(np.argmax(post))])
    return {
        "P_interval": float(np.round(post[mask].sum(), 15)),
        "interval_lo": float(lo),
        "interval_hi": float(hi),
        "mode": mode,
        "relative_error": abs(mode - truth) / abs(truth),
    }
