"""What the attribute figures would be if the release said nothing about the records: the
file-level null of a result's records (:meth:`~bayes_risk.results.AttributeRiskResult.null`),
the figures read against it, their reading and their table (:doc:`/methods/attribute`, What a
release that says nothing gives)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["file_null", "null_reading", "null_table", "NULL_FIGURES"]


def _count_range(p: np.ndarray) -> tuple[float, float]:
    """The 95 % range of a sum of independent Bernoulli(p) variables (a count)."""
    mu = float(p.sum())
    if mu < 5:  # Poisson of the same mean (Le Cam: within sum p^2 in total variation)
        from scipy import stats  # here: listing the measures imports this module

        return float(stats.poisson.ppf(0.025, mu)), float(stats.poisson.ppf(0.975, mu))
    sd = math.sqrt(float((p * (1 - p)).sum()))
    return max(0.0, math.floor(mu - 1.96 * sd)), math.ceil(mu + 1.96 * sd)


def file_null(nulls: dict[str, np.ndarray], keep: np.ndarray | None = None) -> dict[str, Any]:
    """The file-level null of the records ``keep`` (default all) from their own
    (:meth:`~bayes_risk.results.AttributeRiskResult.record_null`): for ``prop_top`` and
    ``prop_evidence`` the expected share and its 95 % range, for ``mean_rank`` and
    ``mean_p_true`` the expected mean and its 95 % range. Records are independent under the
    null: a count (ranked first, with evidence) is a sum of Bernoulli variables, its range from
    the Poisson distribution of the same mean when that mean is below 5 (Le Cam's bound), else
    the normal approximation; a mean has the range of the Pearson type III distribution with the
    three moments of a mean of independent terms (their central moments add; a record's null
    p_true is often near 0 with a rare large value, and the normal range of so skewed a mean
    reaches below 0 and stops short of its upper tail), within the figure's bounds (p_true in
    [0, 1], a rank at least 1).

    Examples
    --------
    >>> nulls = {"null_p_top": np.full(1000, 1e-4), "null_p_evidence": np.zeros(1000),
    ...          "null_rank_mean": np.full(1000, 18.0), "null_rank_var": np.full(1000, 10.0),
    ...          "null_rank_m3": np.zeros(1000), "null_p_true_mean": np.full(1000, 0.03),
    ...          "null_p_true_var": np.zeros(1000), "null_p_true_m3": np.zeros(1000)}
    >>> f = file_null(nulls)
    >>> round(f["prop_top"]["expected"], 12), f["prop_top"]["high"]
    (0.0001, 0.001)
    """
    pick = (slice(None) if keep is None else np.asarray(keep, dtype=bool))
    vals = {k: np.asarray(v, dtype=np.float64)[pick] for k, v in nulls.items()}
    ok = np.isfinite(vals["null_p_top"])
    n = int(ok.sum())
    if n == 0:
        return {}
    out: dict[str, Any] = {"n_records": n}
    for key, col in (("prop_top", "null_p_top"), ("prop_evidence", "null_p_evidence")):
        p = vals[col][ok]
        lo, hi = _count_range(p)
        out[key] = {"expected": float(p.mean()), "low": lo / n, "high": hi / n}
    from scipy import stats  # here: listing the measures imports this module

    for key, col, bounds in (("mean_rank", "null_rank", (1.0, np.inf)),
                             ("mean_p_true", "null_p_true", (0.0, 1.0))):
        m = float(vals[f"{col}_mean"][ok].mean())
        var = float(vals[f"{col}_var"][ok].sum())
        sd = math.sqrt(var) / n
        skew = float(vals[f"{col}_m3"][ok].sum()) / var ** 1.5 if var > 0 else 0.0
        lo, hi = (stats.pearson3.ppf([0.025, 0.975], skew, loc=m, scale=sd) if sd > 0
                  else (m, m))
        out[key] = {"expected": m, "low": float(np.clip(lo, *bounds)),
                    "high": float(np.clip(hi, *bounds))}
    return out


#: the figures read against the null: key of the summary, key of the null, label, in per cent
NULL_FIGURES = (("prop_top", "prop_top", "share ranked first (%)", True),
                ("mean_rank", "mean_rank", "mean rank of the true values", False),
                ("prop_evidence", "prop_evidence", "share with evidence (%)", True),
                ("mean_p_true", "mean_p_true", "mean p_true (%)", True))


def null_reading(observed: float, entry: Mapping[str, float], *, larger_worse: bool = True
                 ) -> str:
    """``"above"``, ``"within"`` or ``"below"`` the null's 95 % range (``""``: not a number);
    for the mean rank (``larger_worse=False``: a smaller rank is the disclosure) ``"above"``
    means a rank better for the intruder than the null's."""
    lo, hi = float(entry.get("low", np.nan)), float(entry.get("high", np.nan))
    if not (np.isfinite(observed) and np.isfinite(lo) and np.isfinite(hi)):
        return ""
    if observed > hi:
        return "above" if larger_worse else "below"
    if observed < lo:
        return "below" if larger_worse else "above"
    return "within"


def null_table(group: Mapping[str, Any], null: Mapping[str, Any]) -> pd.DataFrame:
    """Each figure of ``group`` (a summary's ``unflagged``) beside its null: observed,
    expected, the 95 % range and the reading (:func:`null_reading`)."""
    rows = []
    for key, nkey, label, percent in NULL_FIGURES:
        entry = null.get(nkey)
        if not entry:
            continue
        k = 100.0 if percent else 1.0
        obs = float(group.get(key, np.nan))
        rows.append({"figure": label, "observed": k * obs, "expected": k * entry["expected"],
                     "95 % range": f"{k * entry['low']:.4g}–{k * entry['high']:.4g}",
                     "reading": null_reading(obs, entry, larger_worse=key != "mean_rank")})
    return pd.DataFrame(rows)
