"""SDMetrics' quality report (its single-table ``QualityReport``, SDMetrics 0.32), computed by
the package: column shapes, column pair trends and one score (:doc:`/methods/utility`,
Quality report).

* **Column shapes**: a numeric column's ``KSComplement`` (1 minus the two-sample
  Kolmogorov–Smirnov statistic of the observed values, rounded to 14 decimals), a categorical
  one's ``TVComplement`` (1 minus half the total variation distance of the level frequencies of
  the observed values).
* **Column pair trends**: two numeric columns, ``CorrelationSimilarity``
  (``1 − |r_real − r_syn| / 2``, Pearson's r on the records where both are observed); any other
  pair, ``ContingencySimilarity`` (1 minus half the total variation distance of the two-way
  proportions, an empty cell a category of its own), a numeric column cut into the 10 equal
  bins of ``numpy.histogram_bin_edges`` of its own values — the original's and each synthetic
  dataset's separately, as SDMetrics does. A pair counts only when the original shows a trend:
  ``|r_real|`` above ``correlation_threshold`` (0.5) or Cramér's V above
  ``association_threshold`` (0.3); 0 counts every pair.
* **Score**: the mean of the two properties' means (a property with no score left out).

SDMetrics compares one synthetic table with the original: with ``m`` datasets each is one
report and the release's figures are their means. SDMetrics subsamples tables of over 50,000
rows for the contingency tables; the package does not.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any

import numpy as np
import pandas as pd

from bayes_risk._constraints import Interval, check_params
from bayes_risk._io import to_jsonable
from bayes_risk.data.schema import Schema

__all__ = ["QualityReport", "quality_report"]


def _ks_statistic(a: np.ndarray, b: np.ndarray) -> float:
    """The two-sample Kolmogorov–Smirnov statistic ``max |F_a − F_b|`` (scipy's ``ks_2samp``
    statistic, without importing scipy.stats: the command's start-up)."""
    a, b = np.sort(a), np.sort(b)
    x = np.concatenate([a, b])
    fa = np.searchsorted(a, x, side="right") / a.size
    fb = np.searchsorted(b, x, side="right") / b.size
    return float(np.max(np.abs(fa - fb)))


def ks_complement(real: pd.Series, synthetic: pd.Series) -> float:
    """SDMetrics' ``KSComplement``: 1 − the two-sample KS statistic of the observed values."""
    r = pd.to_numeric(real.dropna()).astype(float).round(14).to_numpy()
    s = pd.to_numeric(synthetic.dropna()).astype(float).round(14).to_numpy()
    if not r.size or not s.size:
        return math.nan
    return 1 - _ks_statistic(r, s)


def tv_complement(real: pd.Series, synthetic: pd.Series) -> float:
    """SDMetrics' ``TVComplement``: 1 − half the total variation distance of the frequencies of
    the observed values (its regularisation: a value only the synthetic data hold counts 1e-6
    in the original)."""
    r, s = Counter(real.dropna()), Counter(synthetic.dropna())
    if not r or not s:
        return math.nan
    for v in s:
        if v not in r:
            r[v] += 1e-6
    nr, ns = sum(r.values()), sum(s.values())
    return float(1 - 0.5 * sum(abs(s[v] / ns - r[v] / nr) for v in r))


def _discretized(x: pd.Series) -> pd.Series:
    """A numeric column in the 10 equal bins of its own observed range (``np.digitize``; an
    empty cell is bin 11)."""
    v = x.to_numpy(dtype=np.float64, na_value=np.nan)
    edges = np.histogram_bin_edges(v[~np.isnan(v)])
    return pd.Series(np.digitize(v, bins=edges), index=x.index)


def _contingency(real: pd.DataFrame, synthetic: pd.DataFrame, threshold: float
                 ) -> tuple[float, float]:
    """SDMetrics' ``ContingencySimilarity`` and the original's Cramér's V (NaN when not
    needed): the score is NaN when V is at most ``threshold`` (> 0)."""
    cols = list(real.columns)
    cr = real.groupby(cols, dropna=False).size()
    v = math.nan
    if threshold > 0:
        two = cr.unstack(fill_value=0).to_numpy(dtype=np.float64)
        if two.sum() == 0 or min(two.shape) < 2:
            return math.nan, v
        # Cramér's V of the original's table (scipy's association(method="cramer"): the
        # chi-square without continuity correction)
        expected = two.sum(axis=1, keepdims=True) * two.sum(axis=0, keepdims=True) / two.sum()
        chi2 = float(np.sum((two - expected) ** 2 / expected))
        v = math.sqrt(chi2 / (two.sum() * (min(two.shape) - 1)))
        if v <= threshold:
            return math.nan, v
    pr = cr / len(real)
    ps = synthetic.groupby(cols, dropna=False).size() / len(synthetic)
    idx = pr.index.union(ps.index, sort=False).drop_duplicates()
    diff = (pr.reindex(idx, fill_value=0) - ps.reindex(idx, fill_value=0)).abs().fillna(0)
    return float(1 - (diff / 2).sum()), v


def _correlation(real: pd.DataFrame, synthetic: pd.DataFrame, threshold: float
                 ) -> tuple[float, float, float]:
    """SDMetrics' ``CorrelationSimilarity`` (Pearson) with the two correlations; NaN when a
    column is constant or ``|r_real| <= threshold``."""
    if (real.nunique() == 1).any() or (synthetic.nunique() == 1).any():
        return math.nan, math.nan, math.nan
    r, s = real.dropna().astype(float), synthetic.dropna().astype(float)

    def pearson(t: pd.DataFrame) -> float:
        if len(t) < 2:
            return math.nan
        x, y = (t.iloc[:, k].to_numpy() for k in (0, 1))
        x, y = x - x.mean(), y - y.mean()
        return float(np.clip(np.dot(x, y) / np.sqrt(np.dot(x, x) * np.dot(y, y)), -1, 1))

    rr = pearson(r)
    if abs(rr) <= threshold:
        return math.nan, rr, math.nan
    rs = pearson(s)
    if math.isnan(rr) or math.isnan(rs):
        return math.nan, rr, rs
    return 1 - abs(rr - rs) / 2, rr, rs


@dataclass(frozen=True, repr=False)
class QualityReport:
    """Result of :func:`quality_report`.

    Attributes
    ----------
    score : float
        The overall score, mean over the synthetic datasets.
    column_shapes, column_pair_trends : float
        The properties' scores, means over the datasets.
    shapes : DataFrame
        One row per column and dataset: ``column``, ``dataset``, ``metric``, ``score``.
    pair_trends : DataFrame
        One row per pair and dataset: ``column_1``, ``column_2``, ``dataset``, ``metric``,
        ``score``, ``real_correlation``, ``synthetic_correlation``, ``real_association``,
        ``meets_threshold``.
    per_dataset : DataFrame
        ``dataset``, ``column_shapes``, ``column_pair_trends``, ``score``.
    settings : dict
    """

    score: float
    column_shapes: float
    column_pair_trends: float
    shapes: pd.DataFrame
    pair_trends: pd.DataFrame
    per_dataset: pd.DataFrame
    settings: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: the scores per property and column, means over the datasets."""
        col = self.shapes.groupby("column", sort=False)["score"].mean()
        pairs = (self.pair_trends.groupby(["column_1", "column_2"], sort=False)
                 .agg(metric=("metric", "first"), score=("score", "mean")).reset_index())
        return to_jsonable({
            "score": self.score, "column_shapes": self.column_shapes,
            "column_pair_trends": self.column_pair_trends,
            "per_dataset": self.per_dataset.to_dict(orient="records"),
            "columns": {c: v for c, v in col.items()},
            "pairs": pairs.to_dict(orient="records"), "settings": self.settings})


def quality_report(original: pd.DataFrame, synthetic: Any, *, schema: Schema | None = None,
                   columns: Any = None, correlation_threshold: float = 0.5,
                   association_threshold: float = 0.3, categorical: Any = None
                   ) -> QualityReport:
    """SDMetrics' quality report of a release (module docstring; checked against SDMetrics
    0.32's own report on CEdata in the test suite).

    Parameters
    ----------
    original : DataFrame
    synthetic : DataFrame, list of DataFrame or SyntheticData
    schema : Schema, optional
        Categorical columns are SDMetrics' ``categorical``, the others ``numerical``.
    columns : sequence of str, optional
        The columns (default all).
    correlation_threshold, association_threshold : float, default 0.5 and 0.3
        SDMetrics' ``real_correlation_threshold`` and ``real_association_threshold``: a pair
        counts when the original's |r| (two numeric columns) or Cramér's V exceeds it.
    categorical : iterable of str, optional
        Integer-coded columns to treat as categorical.

    Returns
    -------
    QualityReport

    Examples
    --------
    >>> from bayes_risk.data import make_ce_like
    >>> d = make_ce_like(n=300, random_seed=1)
    >>> quality_report(d, [d], categorical=["Urban", "Marital", "Tenure"]).score
    1.0
    """
    from bayes_risk.utility._inputs import release_and_columns

    check_params(dict(correlation_threshold=correlation_threshold,
                      association_threshold=association_threshold),
                 dict.fromkeys(("correlation_threshold", "association_threshold"),
                               Interval(float, 0, 1)))
    datasets, schema, cols = release_and_columns(original, synthetic, schema=schema,
                                                 categorical=categorical, columns=columns)
    numeric = {c: not schema[c].is_categorical for c in cols}
    shapes, pairs, per = [], [], []
    real_bins = {c: _discretized(original[c]) for c in cols if numeric[c]}
    for j, z in enumerate(datasets, start=1):
        for c in cols:
            f = ks_complement if numeric[c] else tv_complement
            shapes.append({"column": c, "dataset": j,
                           "metric": "KSComplement" if numeric[c] else "TVComplement",
                           "score": f(original[c], z[c])})
        syn_bins = {c: _discretized(z[c]) for c in cols if numeric[c]}
        for a, b in combinations(cols, 2):
            row = {"column_1": a, "column_2": b, "dataset": j, "real_correlation": math.nan,
                   "synthetic_correlation": math.nan, "real_association": math.nan}
            if numeric[a] and numeric[b]:
                score, rr, rs = _correlation(original[[a, b]], z[[a, b]], correlation_threshold)
                row |= {"metric": "CorrelationSimilarity", "score": score,
                        "real_correlation": rr, "synthetic_correlation": rs,
                        "meets_threshold": correlation_threshold <= 0
                        or (not math.isnan(rr) and abs(rr) > correlation_threshold)}
            else:
                ra = real_bins[a] if numeric[a] else original[a]
                rb = real_bins[b] if numeric[b] else original[b]
                sa = syn_bins[a] if numeric[a] else z[a]
                sb = syn_bins[b] if numeric[b] else z[b]
                score, v = _contingency(pd.DataFrame({a: ra, b: rb}),
                                        pd.DataFrame({a: sa, b: sb}), association_threshold)
                row |= {"metric": "ContingencySimilarity", "score": score,
                        "real_association": v,
                        "meets_threshold": association_threshold <= 0
                        or (not math.isnan(v) and v > association_threshold)}
            pairs.append(row)
        sh = pd.DataFrame([r for r in shapes if r["dataset"] == j])
        pt = pd.DataFrame([r for r in pairs if r["dataset"] == j])
        s_shapes = float(sh["score"].mean()) if len(sh) else math.nan
        met = pt[pt["meets_threshold"]] if len(pt) else pt
        s_pairs = float(met["score"].mean()) if len(met) else math.nan
        parts = [x for x in (s_shapes, s_pairs) if not math.isnan(x)]
        per.append({"dataset": j, "column_shapes": s_shapes, "column_pair_trends": s_pairs,
                    "score": float(np.mean(parts)) if parts else math.nan})
    per_df = pd.DataFrame(per)
    with np.errstate(all="ignore"):
        means = {k: float(per_df[k].mean()) for k in ("score", "column_shapes",
                                                         "column_pair_trends")}
    pair_cols = ["column_1", "column_2", "dataset", "metric", "score", "real_correlation",
                 "synthetic_correlation", "real_association", "meets_threshold"]
    return QualityReport(
        means["score"], means["column_shapes"], means["column_pair_trends"],
        pd.DataFrame(shapes, columns=["column", "dataset", "metric", "score"]),
        pd.DataFrame(pairs, columns=pair_cols), per_df,
        {"correlation_threshold": float(correlation_threshold),
         "association_threshold": float(association_threshold), "columns": cols,
         "definitions": "SDMetrics 0.32 single-table QualityReport"})
