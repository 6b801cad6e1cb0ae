"""Two attribute-risk measures of business (establishment) data that Hu (2019, §1) names and
that read the release alone, no model: the relative difference between the true largest value
and the intruder's estimate of it (Kim et al. 2018) and the percentage of closest match
(Domingo-Ferrer et al. 2001; Kim et al. 2015). See :doc:`/methods/attribute` (Business data:
relative difference and closest match).

One definition each: :func:`relative_difference` and :func:`closest_match`; the command line
(``bayes-risk attribute --relative-difference``, ``--closest-match``) and the audit's steps
call them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any

import numpy as np
import pandas as pd

from bayes_risk._constraints import COLUMN_NAMES, check_value
from bayes_risk._specs import cli_option
from bayes_risk.attribute.specs import DEFAULT_DELTA
from bayes_risk.exceptions import NotSupportedError, SchemaError, ValidationError, arg_name

__all__ = ["relative_difference", "closest_match", "business_run", "BusinessRun", "ESTIMATORS",
           "LEVEL"]

#: the intruder's estimators of a largest value: the release's value of the same rank, and the
#: target record's own released value (rows that are the original's records)
ESTIMATORS = ("rank", "own_record")
#: the confidence level of the intervals
LEVEL = 0.95
#: the most differences (records × released rows × keys) held at once
_CHUNK_VALUES = 8_000_000

# ---------------------------------------------------------------------------------- shared
def _release(original: pd.DataFrame, synthetic: Any) -> tuple[list[pd.DataFrame], Any]:
    from bayes_risk.data.normalise import as_synthetic_list
    from bayes_risk.data.validate import require_frame

    require_frame(original, "original")
    return as_synthetic_list(synthetic, original=original, row_order=False)


def _numeric(original: pd.DataFrame, datasets: list[pd.DataFrame], source: Any,
             columns: Sequence[str], argument: str) -> list[str]:
    """``columns`` checked: in the original and every dataset, numeric in both."""
    if isinstance(columns, str):
        columns = [columns]
    cols = list(check_value(columns, COLUMN_NAMES, arg_name(argument)))
    schema = getattr(source, "schema", None)
    for c in cols:
        where = [f"dataset {l}" for l, z in enumerate(datasets, 1) if c not in z.columns]
        if c not in original.columns or where:
            raise SchemaError(f"{arg_name(argument)}: column {c!r} is not in "
                              + ("the original" if c not in original.columns else where[0])
                              + f" (columns: {list(original.columns)}).", code="UNKNOWN_COLUMN")
        declared = schema is not None and c in schema.names and schema[c].is_categorical
        if declared or not all(pd.api.types.is_numeric_dtype(t[c]) and
                               not pd.api.types.is_bool_dtype(t[c]) for t in (original, *datasets)):
            raise SchemaError(f"{arg_name(argument)}: column {c!r} is not numeric; the measure "
                              "compares magnitudes (a categorical column has none).",
                              code="WRONG_DTYPE")
    return cols


def _values(df: pd.DataFrame, c: str, codes: Sequence[float]) -> np.ndarray:
    """The column as floats, its declared missing-value codes and empty cells as ``nan``."""
    x = df[c].to_numpy(dtype=np.float64, na_value=np.nan)
    if len(codes):
        x = np.where(np.isin(x, np.asarray(codes, dtype=np.float64)), np.nan, x)
    return x


def _codes(source: Any, c: str) -> tuple[float, ...]:
    schema = getattr(source, "schema", None)
    return tuple(schema.missing_codes.get(c, ())) if schema is not None else ()


def _row_paired(original: pd.DataFrame, datasets: list[pd.DataFrame], source: Any) -> str:
    """Why row ``i`` of a dataset is not record ``i``'s released version (``""``: it is)."""
    if any(len(z) != len(original) for z in datasets):
        return "the datasets have another number of rows than the original"
    if source is not None:
        from bayes_risk.data.synthetic import generation_from_roles

        gen = source.generation or generation_from_roles(source.schema,
                                                         source.synthesized_records)
        if gen in ("full-same-n", "full-population"):
            return (f"the release is a full synthesis ({gen}): its rows are new records, none "
                    "the released version of an original record")
    return ""


def _t_interval(values: np.ndarray) -> tuple[float, float]:
    """The ``LEVEL`` t interval of the mean of ``values`` (``nan`` with fewer than two)."""
    from scipy import stats

    v = values[np.isfinite(values)]
    if v.size < 2:
        return (math.nan, math.nan)
    half = stats.t.ppf(0.5 + LEVEL / 2, v.size - 1) * v.std(ddof=1) / math.sqrt(v.size)
    return (float(v.mean() - half), float(v.mean() + half))


# ----------------------------------------------------------------- the relative difference
def relative_difference(
    original: pd.DataFrame,
    synthetic: Any,
    *,
    columns: Annotated[Sequence[str], cli_option(
        "--relative-difference", "the relative difference between the largest true value of "
        "each of these numeric columns and the intruder's estimate of it from the release (Kim "
        "et al. 2018; no model needed): relative_difference.csv and summary.json", nargs="+",
        metavar="COL")],
    top: Annotated[int, cli_option(
        "--top", "--relative-difference: the K largest values of each column, each a target "
        "(default 1)", type=int, metavar="K")] = 1,
    delta: float = DEFAULT_DELTA,
) -> Any:
    """The relative difference between each of the ``top`` largest true values of ``columns``
    and the intruder's estimate of it from the release (Kim et al. 2018; Hu 2019, §1).

    The intruder who knows which record holds the ``r``-th largest value estimates it, in each
    released dataset, by the dataset's ``r``-th largest value (estimator ``"rank"``) and, where
    row ``i`` of a dataset is record ``i``'s released version, by the record's own released
    value (``"own_record"``); with ``m`` datasets by their mean (the combining rules' point
    estimate), with the 95 % t interval of that mean. The relative difference of an estimate
    ``ŷ`` of the true value ``y`` is ``|ŷ − y| / |y|``: small is a disclosure (the intruder is
    within ``delta`` of the truth). The smallest over the targets and the estimators is the
    worst case the verdict reads.

    Parameters
    ----------
    original : DataFrame
        The confidential table.
    synthetic : SyntheticData, DataFrame or list of DataFrames
        The release.
    columns : str or sequence of str
        Numeric (magnitude) columns.
    top : int, default 1
        Targets per column: the records of its ``top`` largest values.
    delta : float, default 0.05
        A relative difference at most ``delta`` counts as a disclosure (``within_delta``).

    Returns
    -------
    RelativeDifferenceResult

    Raises
    ------
    SchemaError
        A column missing (``UNKNOWN_COLUMN``) or not numeric (``WRONG_DTYPE``).
    ValidationError
        A bad ``top`` or ``delta``; a true value of 0 (``MEASURE_UNDEFINED``: the relative
        difference divides by it).

    Examples
    --------
    >>> import pandas as pd
    >>> y = pd.DataFrame({"sales": [10.0, 50.0, 200.0]})
    >>> z = [pd.DataFrame({"sales": [12.0, 40.0, 190.0]}),
    ...      pd.DataFrame({"sales": [11.0, 230.0, 60.0]})]
    >>> r = relative_difference(y, z, columns=["sales"])
    >>> r.to_dataframe()[["estimator", "estimate", "relative_difference"]].round(3)
        estimator  estimate  relative_difference
    0        rank     210.0                0.050
    1  own_record     125.0                0.375
    """
    from bayes_risk._constraints import Interval, check_value
    from bayes_risk._specs import argument_checks
    from bayes_risk.results.business import RelativeDifferenceResult

    datasets, source = _release(original, synthetic)
    cols = _numeric(original, datasets, source, columns, "columns")
    top = check_value(top, Interval(int, 1), arg_name("top"))
    # the largest-value scenarios' delta, the same quantity
    delta = check_value(delta, argument_checks(
        "bayes_risk.attribute.largest_value:largest_value_risk")["delta"], arg_name("delta"))
    paired = _row_paired(original, datasets, source)
    estimators = ESTIMATORS if not paired else ESTIMATORS[:1]
    rows = []
    for c in cols:
        codes = _codes(source, c)
        y = _values(original, c, codes)
        observed = np.flatnonzero(~np.isnan(y))
        if observed.size < top:
            raise ValidationError(f"{arg_name('top', top)}: column {c!r} has only "
                                  f"{observed.size} observed value(s).", code="INVALID_ARGUMENT")
        # the targets: the largest values, ties by record order
        order = observed[np.lexsort((observed, -y[observed]))][:top]
        released = [_values(z, c, codes) for z in datasets]
        ranked = [np.sort(v[~np.isnan(v)])[::-1] for v in released]
        for r, rec in enumerate(order, start=1):
            truth = float(y[rec])
            if truth == 0:
                raise ValidationError(
                    f"column {c!r}: the true value of rank {r} (record {int(rec)}) is 0; the "
                    "relative difference divides by it.", code="MEASURE_UNDEFINED")
            for e in estimators:
                est = (np.array([v[r - 1] if v.size >= r else np.nan for v in ranked])
                       if e == "rank" else np.array([v[rec] for v in released]))
                rows.append(_rd_row(c, r, int(rec), truth, e, est, delta))
    return RelativeDifferenceResult(
        table=pd.DataFrame(rows), m=len(datasets), delta=float(delta), top=top,
        columns=cols, own_record_note=paired,
        warnings=["M_EQUALS_ONE"] if len(datasets) == 1 else [])


def _rd_row(c: str, r: int, rec: int, truth: float, e: str, est: np.ndarray,
            delta: float) -> dict[str, Any]:
    """One target and estimator: the pooled estimate, its interval and the relative
    differences (pooled, its interval, per dataset)."""
    ok = est[np.isfinite(est)]
    estimate = float(ok.mean()) if ok.size else math.nan
    lo, hi = _t_interval(est)

    def rd(v: float) -> float:
        return abs(v - truth) / abs(truth)

    per = np.array([rd(v) for v in ok])
    if math.isfinite(lo):
        rd_lo = 0.0 if lo <= truth <= hi else min(rd(lo), rd(hi))
        rd_hi = max(rd(lo), rd(hi))
    else:
        rd_lo = rd_hi = math.nan
    value = rd(estimate) if math.isfinite(estimate) else math.nan
    return {"column": c, "rank": r, "record": rec, "true_value": truth, "estimator": e,
            "estimate": estimate, "estimate_lo": lo, "estimate_hi": hi,
            "relative_difference": value, "rd_lo": rd_lo, "rd_hi": rd_hi,
            "rd_dataset_min": float(per.min()) if per.size else math.nan,
            "rd_dataset_max": float(per.max()) if per.size else math.nan,
            "n_datasets": int(ok.size), "within_delta": bool(value <= delta)}


# ------------------------------------------------------------------------ closest match
def closest_match(
    original: pd.DataFrame,
    synthetic: Any,
    *,
    keys: Annotated[Sequence[str] | None, cli_option(
        "--closest-match", "the percentage of records whose closest released record, in "
        "standardised Euclidean distance over these numeric columns (default: the synthesized "
        "numeric columns), is their own (Domingo-Ferrer et al. 2001; Kim et al. 2015; no model "
        "needed): closest_match.csv and summary.json", nargs="*", metavar="COL")] = None,
) -> Any:
    """The percentage of records whose closest released record is their own
    (distance-based record linkage, Domingo-Ferrer et al. 2001; Kim et al. 2015; Hu 2019, §1).

    Every column of ``keys`` is standardised by the original's standard deviation; the
    distance between record ``i`` and released row ``j`` is Euclidean over them. Record ``i``
    scores ``1 / |C_i|`` when its own released row is among the rows ``C_i`` at the smallest
    distance (ties share), else 0. Per dataset and pooled: the intruder holding the ``m``
    datasets of a partially synthetic release, whose rows are the same records in every dataset,
    uses the distance over all of them (``√(Σ_l d_l²)``). The share of records is reported with
    its 95 % Wilson interval (the records as a sample of the agency's population); the verdict
    reads the larger of the pooled share and the mean per dataset (the intruder's better use of
    the datasets).

    Parameters
    ----------
    original : DataFrame
        The confidential table.
    synthetic : SyntheticData, DataFrame or list of DataFrames
        A release whose row ``i`` is record ``i``'s released version (a partial synthesis).
    keys : sequence of str, optional
        Numeric columns the intruder knows and matches on (default: the numeric columns the
        release synthesizes, by its manifest's roles, else those whose released values differ
        from the original's: a column released unchanged links every record to its own row by
        itself, which the identification measures assess).

    Returns
    -------
    ClosestMatchResult

    Raises
    ------
    NotSupportedError
        A release whose rows are not the original's records (a full synthesis, another number
        of rows: ``MEASURE_UNDEFINED``).
    SchemaError
        A key missing (``UNKNOWN_COLUMN``) or not numeric (``WRONG_DTYPE``).
    ValidationError
        No key that varies among the records (``MEASURE_UNDEFINED``).

    Examples
    --------
    >>> import pandas as pd
    >>> y = pd.DataFrame({"x": [0.0, 1.0, 2.0, 3.0]})
    >>> z = pd.DataFrame({"x": [0.1, 2.0, 1.9, 3.5]})
    >>> r = closest_match(y, [z])
    >>> r.pooled, r.per_dataset.tolist()   # records 0 and 3 find their own row; 1 and 2 do not
    (0.5, [0.5])
    """
    from bayes_risk.results.business import ClosestMatchResult

    datasets, source = _release(original, synthetic)
    why = _row_paired(original, datasets, source)
    if why:
        raise NotSupportedError(f"closest match needs a release whose row i is record i's "
                                f"released version: {why}.", code="MEASURE_UNDEFINED")
    if keys is None:
        keys = _synthesized_numeric(original, datasets, source)
        if not keys:
            raise SchemaError("closest match: the release synthesizes no numeric column (none "
                              "declared synthesized in its manifest, none that differs from the "
                              f"original); give {arg_name('keys')}.", code="WRONG_DTYPE")
    cols = _numeric(original, datasets, source, keys, "keys")
    y = np.column_stack([_values(original, c, _codes(source, c)) for c in cols])
    complete = ~np.isnan(y).any(axis=1)
    sd = np.array([np.std(y[complete, j], ddof=1) if complete.sum() > 1 else 0.0
                   for j in range(len(cols))])
    varies = sd > 0
    if not varies.any():
        raise ValidationError(f"closest match: no key of {cols} varies among the complete "
                              "records, so no distance separates them.",
                              code="MEASURE_UNDEFINED")
    kept = [c for c, v in zip(cols, varies, strict=True) if v]
    yz = y[:, varies] / sd[varies]
    zs = [np.column_stack([_values(z, c, _codes(source, c)) for c in kept]) / sd[varies]
          for z in datasets]
    per, pooled, table = _closest(yz, zs, np.flatnonzero(complete))
    return ClosestMatchResult(
        table=table, per_dataset=per, pooled=pooled, keys=kept,
        constant_keys=[c for c, v in zip(cols, varies, strict=True) if not v],
        n_records=len(original), n_excluded=int((~complete).sum()), m=len(datasets))


def _synthesized_numeric(original: pd.DataFrame, datasets: list[pd.DataFrame], source: Any
                         ) -> list[str]:
    """The numeric columns the release synthesizes: its manifest's roles, else (plain files)
    those whose released values differ from the original's in some dataset."""
    shared = [c for c in original.columns if all(c in z.columns for z in datasets)
              and _is_numeric(original, source, c)]
    schema = getattr(source, "schema", None)
    if schema is not None and schema.synthesized:
        return [c for c in shared if c in schema.synthesized]
    return [c for c in shared if any(
        not np.array_equal(_values(original, c, ()), _values(z, c, ()), equal_nan=True)
        for z in datasets)]


def _is_numeric(original: pd.DataFrame, source: Any, c: str) -> bool:
    schema = getattr(source, "schema", None)
    if schema is not None and c in schema.names:
        return not schema[c].is_categorical
    s = original[c]
    return pd.api.types.is_numeric_dtype(s) and not pd.api.types.is_bool_dtype(s)


def _closest(y: np.ndarray, zs: list[np.ndarray], rows: np.ndarray
             ) -> tuple[np.ndarray, float, pd.DataFrame]:
    """Scores of the records ``rows`` (complete in the keys) per dataset and pooled, in chunks
    of records: ``[chunk, n]`` squared distances at a time (differences, not the expansion
    ``|y|² + |z|² − 2y·z``, so that equal values tie exactly), summed over the datasets."""
    n, m = zs[0].shape[0], len(zs)
    per = np.zeros((m, rows.size))
    score = np.zeros(rows.size)
    tied = np.zeros(rows.size, dtype=np.int64)
    own_d = np.zeros(rows.size)
    best_d = np.zeros(rows.size)
    # a released row with an empty key is at no finite distance (never the closest)
    bad = [np.isnan(z).any(axis=1) for z in zs]
    # the released keys as contiguous columns: the squared distances are summed key by key into
    # [chunk, n] arrays (a [chunk, n, keys] array summed over its short last axis took three
    # times as long); numpy summed fewer than eight keys in this order too, so the figures are
    # the same (with eight or more, the same to rounding)
    zz = [np.ascontiguousarray(np.nan_to_num(z).T) for z in zs]
    chunk = max(1, _CHUNK_VALUES // max(1, n * y.shape[1]))
    for s in range(0, rows.size, chunk):
        idx = rows[s:s + chunk]
        total = np.zeros((idx.size, n))
        term = np.empty((idx.size, n))
        for l, z in enumerate(zz):
            d2 = np.zeros((idx.size, n))
            for j in range(y.shape[1]):
                np.subtract.outer(y[idx, j], z[j], out=term)
                term *= term
                d2 += term
            d2[:, bad[l]] = np.inf
            total += d2
            per[l, s:s + idx.size] = _scores(d2, idx)[0]
        sc, k, own, best = _scores(total, idx)
        score[s:s + idx.size], tied[s:s + idx.size] = sc, k
        own_d[s:s + idx.size], best_d[s:s + idx.size] = np.sqrt(own), np.sqrt(best)
    table = pd.DataFrame({"record": rows, "score_pooled": score, "n_tied": tied,
                          "own_distance": own_d, "closest_distance": best_d,
                          **{f"score_{l + 1}": per[l] for l in range(m)}})
    return per.mean(axis=1), float(score.mean()) if rows.size else math.nan, table


def _scores(d2: np.ndarray, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray,
                                                       np.ndarray]:
    """Each record's score (1/|C| when its own row is among the closest C), |C|, its own row's
    squared distance and the smallest; rows within a relative 1e-12 of the smallest tie."""
    best = d2.min(axis=1)
    tol = best * 1e-12 + 1e-300
    closest = d2 <= (best + tol)[:, None]
    k = np.count_nonzero(closest, axis=1)
    own = d2[np.arange(idx.size), idx]
    hit = closest[np.arange(idx.size), idx] & np.isfinite(own)
    return np.where(hit, 1.0 / np.maximum(k, 1), 0.0), k, own, best


@dataclass(frozen=True)
class BusinessRun:
    """The measures of :func:`business_run` (``None``: not run).

    Attributes
    ----------
    relative_difference : RelativeDifferenceResult or None
    closest_match : ClosestMatchResult or None
    """

    relative_difference: Any = None
    closest_match: Any = None

    def _parts(self) -> list[tuple[str, Any]]:
        return [(k, r) for k, r in (("relative_difference", self.relative_difference),
                                    ("closest_match", self.closest_match)) if r is not None]

    def to_dict(self) -> dict[str, Any]:
        """Each measure's ``to_dict()``, by its name."""
        return {k: r.to_dict() for k, r in self._parts()}

    def headline(self) -> str:
        """Each measure's ``headline()``."""
        return "\n".join(r.headline() for _, r in self._parts())

    def files(self) -> tuple[dict[str, pd.DataFrame], dict[str, tuple[Any, str]]]:
        """Each measure's table (``NAME.csv``) and figure (``NAME.png``)."""
        kinds = {"relative_difference": "relative_difference", "closest_match": "datasets"}
        return ({f"{k}.csv": r.to_dataframe() for k, r in self._parts()},
                {f"{k}.png": (r, kinds[k]) for k, r in self._parts()})


def business_run(original: pd.DataFrame, synthetic: Any, *,
                 relative: Mapping[str, Any] | None = None,
                 closest: Mapping[str, Any] | None = None,
                 delta: float | None = None) -> BusinessRun:
    """The business-data measures asked for, which read the release alone (no model).

    Parameters
    ----------
    original, synthetic
        As the measures take them.
    relative : mapping, optional
        Arguments of :func:`relative_difference`; run when it holds ``columns``.
    closest : mapping, optional
        Arguments of :func:`closest_match`; run when it holds ``keys`` (an empty list: the
        default columns).
    delta : float, optional
        The relative difference's ``delta`` (default its own).

    Returns
    -------
    BusinessRun
    """
    relative, closest = dict(relative or {}), dict(closest or {})
    rd = cm = None
    if "columns" in relative:
        rd = relative_difference(original, synthetic, **relative,
                                 **({} if delta is None else {"delta": delta}))
    if "keys" in closest:
        cm = closest_match(original, synthetic, keys=closest["keys"] or None)
    return BusinessRun(rd, cm)
