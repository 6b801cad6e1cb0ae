"""Row alignment of a release with the original: record i of every dataset is record i.

See :doc:`/user_guide/data`, Row alignment and the original's fingerprint.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from bayes_risk.exceptions import CALLER, DataWarning, SchemaError

__all__ = ["check_rows_aligned", "comparable_values", "equal_values", "row_association",
           "same_multiset", "unchanged_column_error", "unconfirmed_columns", "warn_unconfirmed",
           "warn_release_holds_original"]

_MISSING = "\x00NA"
#: a column with at least this many distinct values holding exactly the original's values in
#: another order is taken as evidence of shuffled rows on its own
_MANY_LEVELS = 5
#: a synthesized column whose row-by-row association with the original has a one-sided
#: permutation p-value above this is reported as unconfirmed (``ORIGINAL_UNCONFIRMED``): a wrong
#: original column (no association) is then reported 999 times in 1,000
ASSOCIATION_P = 0.001
#: fewer records than this give the association test too little power to say anything
ASSOCIATION_MIN_ROWS = 50
#: a table with more records than this has each column's association tested first on this
#: many evenly spaced rows; a column they confirm with a one-sided p-value below
#: :data:`SUBSET_P` is not tested on all of them (a column with no association passes that
#: once in 10^6: the warning's rate stays 999 in 1,000 under the null to the 6th digit, and
#: the subset detects any association above 0.015, a synthesizer's is tens of times that)
SUBSET_ROWS = 100_000
SUBSET_P = 1e-6
#: a numeric column with more distinct values than this is compared by ranks, one with fewer
#: (an integer-coded factor, a count with few values) by agreement of its values
_RANK_LEVELS = 20
#: above this many cells (records × levels) the level shares are summed pairwise, not held
_DENSE_CELLS = 20_000_000


def comparable_values(col: pd.Series) -> np.ndarray:
    """A column's values in a form that compares across files: float64 when every value is a
    number (so ``2`` equals ``2.0`` after a CSV round trip), else text, missing values as one
    marker."""
    s = col.astype(object) if isinstance(col.dtype, pd.CategoricalDtype) else col
    if not pd.api.types.is_bool_dtype(s.dtype):
        num = pd.to_numeric(s, errors="coerce")
        if (num.notna() | s.isna()).all():
            return num.to_numpy(dtype=np.float64)
    return np.where(s.isna().to_numpy(), _MISSING, s.astype(str).to_numpy(dtype=object))


def _values_like(col: pd.Series, original: pd.Series, original_values: np.ndarray) -> np.ndarray:
    """``comparable_values(col)``, the original's when ``col`` equals its column (the usual
    unchanged column: not parsed again per dataset)."""
    if col.dtype == original.dtype and len(col) == len(original) and \
            col.reset_index(drop=True).equals(original.reset_index(drop=True)):
        return original_values
    return comparable_values(col)


def equal_values(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Element-wise equality of two :func:`comparable_values` arrays (missing equals missing;
    numbers against text compared as text)."""
    if a.dtype.kind == "f" and b.dtype.kind == "f":
        return (a == b) | (np.isnan(a) & np.isnan(b))
    if a.dtype.kind == "f" or b.dtype.kind == "f":  # numbers against text: compare as text
        a, b = _as_text(a), _as_text(b)
    return np.asarray(a == b, dtype=bool)


def _as_text(a: np.ndarray) -> np.ndarray:
    if a.dtype.kind != "f":
        return a
    return np.array([_MISSING if np.isnan(v) else (str(int(v)) if v == int(v) else repr(v))
                     for v in a], dtype=object)


def same_multiset(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether ``b`` holds exactly ``a``'s values, in some order."""
    if a.dtype.kind == "f" and b.dtype.kind == "f":
        return bool(np.array_equal(np.sort(a), np.sort(b), equal_nan=True))
    a, b = _as_text(a), _as_text(b)
    return bool(pd.Series(a).value_counts().sort_index()
                 .equals(pd.Series(b).value_counts().sort_index()))


def check_rows_aligned(original: pd.DataFrame, datasets: Sequence[pd.DataFrame], source: Any = None,
                       *, synthesized: Iterable[str] = (),
                       record: dict[str, str] | None = None) -> list[str]:
    """Check that the released datasets keep the original's records in the original's order.

    Parameters
    ----------
    original : DataFrame
        The confidential table.
    datasets : sequence of DataFrame
        The released datasets (same number of rows as ``original``).
    source : SyntheticData, optional
        The release they came from: its unsynthesized columns must equal the original's row by
        row. Without one (plain files), every shared column not in ``synthesized`` is checked.
    synthesized : iterable of str
        Columns declared synthesized, for plain files (checked by :func:`row_association`).
    record : dict, optional
        Where to keep the codes and messages of the warnings raised (a result's warnings).

    Returns
    -------
    list of str
        The columns found equal row by row in every dataset.

    Raises
    ------
    SchemaError
        ``US_COLUMNS_DIFFER`` (an unsynthesized column differs) or ``ROWS_MISALIGNED`` (a
        column holds the original's values in another row order).

    Warns
    -----
    DataWarning
        ``ROWS_NOT_VERIFIED``, ``ORIGINAL_UNCONFIRMED`` (plain files).
    """
    if not datasets or any(len(z) != len(original) for z in datasets):
        return []  # the row counts are refused by the callers' own checks
    shared = [c for c in original.columns if all(c in z.columns for z in datasets)]
    schema = getattr(source, "schema", None)
    declared = schema is not None
    skip = set(synthesized)
    cols = ([c for c in schema.unsynthesized if c in shared] if declared
            else [c for c in shared if c not in skip])
    orig = {c: comparable_values(original[c]) for c in cols}
    varies = {c: len(pd.unique(orig[c])) > 1 for c in cols}
    equal = set(cols)
    for l, z in enumerate(datasets, start=1):
        eqs = {c: equal_values(orig[c], _values_like(z[c], original[c], orig[c])) for c in cols}
        differ = [c for c in cols if not eqs[c].all()]
        equal -= set(differ)
        if declared and differ:
            c = differ[0]
            code = ("ROWS_MISALIGNED" if same_multiset(orig[c], comparable_values(z[c]))
                    else "US_COLUMNS_DIFFER")
            _refuse(c, l, eqs[c], code)
        # plain files: a differing column may be an undeclared synthesized one. The files are
        # misaligned when nothing that varies is equal row by row and the columns show the
        # original's values in another order: one with many distinct values (which no
        # synthesizer reproduces exactly by chance), or at least half of the differing ones
        # (a fully synthetic column of few levels may match the original's counts by chance)
        aligned = any(varies[c] and eqs[c].all() for c in cols)
        if not aligned:
            varied = [c for c in differ if varies[c]]
            permuted = [c for c in varied
                        if same_multiset(orig[c], comparable_values(z[c]))]
            many = [c for c in permuted if len(pd.unique(orig[c])) >= _MANY_LEVELS]
            if many or (len(permuted) >= 2 and 2 * len(permuted) >= len(varied)):
                c = (many or permuted)[0]
                _refuse(c, l, eqs[c], "ROWS_MISALIGNED")
    equal = [c for c in cols if c in equal]
    if declared:
        return equal
    if cols and not equal:
        _warn(record, "ROWS_NOT_VERIFIED", "no column of the synthetic data equals the original's "
              f"row by row ({cols} all differ), so the row order of the files cannot be checked: "
              "the measures assume that row i of every dataset is record i of the original. Give "
              "a release written by 'bayes-risk synthesize' (its manifest records the original's "
              "fingerprint) to have it checked.")
    # plain files: nothing records the original the synthesized columns were made from, so
    # they are checked by their association with it, row by row
    warn_unconfirmed(original, datasets, [c for c in dict.fromkeys(skip) if c in shared],
                     record=record)
    return equal


#: a release of another size than its original that holds at least this share of the
#: original's records unchanged in every column, beyond what chance explains (below), is most
#: likely the original itself, or a file that contains it, given in the release's place
ORIGINAL_COPY_SHARE = 0.5


def chance_share(counts: np.ndarray, size: int) -> tuple[float, float]:
    """Mean and standard deviation of the share of the original's records that a dataset of
    ``size`` rows holds unchanged by chance, when its rows are drawn from the cells of the
    *other* records: a record whose combination of values the original holds ``f`` times is
    reproduced with probability ``1 - (1 - (f - 1)/n)**size``. A combination that the other
    records do not hold (a sample unique) is not reproduced by chance; in coarse data, where
    every combination is common, most records are. The standard deviation treats the
    combinations as independent (it overstates it slightly: a release's cells compete for its
    rows).

    ``counts`` is the original's count of each distinct combination.
    """
    f = np.asarray(counts, dtype=float)
    n = f.sum()
    if n == 0:
        return 0.0, 0.0
    p = -np.expm1(size * np.log1p(-(f - 1) / n)) if n > 1 else np.zeros_like(f)
    mean = float((f * p).sum() / n)
    sd = float(np.sqrt((f ** 2 * p * (1 - p)).sum()) / n)
    return mean, sd


def warn_release_holds_original(original: pd.DataFrame, datasets: Sequence[pd.DataFrame], *,
                                record: dict[str, str] | None = None) -> float:
    """Warn ``RELEASE_HOLDS_ORIGINAL`` when a dataset of another size than the original holds
    at least :data:`ORIGINAL_COPY_SHARE` of the original's records unchanged in every column,
    and more than chance explains: at least a quarter of them, and four standard deviations,
    beyond the share that rows drawn from the other records' combinations would hold
    (:func:`chance_share`). The files then look like the original given twice (or a file that
    contains it), not a synthetic release of it (issue 92: a 5,571-row table given as the
    release of a 1,000-row original ran as a fully synthetic release). In coarse data, where
    every combination is common, a release holds most records by chance, and a copy cannot be
    told from a release by its rows: nothing is said.

    The one rule of every measure that compares an original with a release (the utility, the
    disclosure measures, identification, the attacks, the audit). A release of the original's
    size is partially synthetic, where records kept unchanged are expected, and is not checked.

    Returns
    -------
    float
        The largest share of the original's records held unchanged by a dataset (0 when the
        sizes agree).
    """
    cols = [c for c in original.columns if all(c in z.columns for z in datasets)]
    if not cols or not datasets or all(len(z) == len(original) for z in datasets):
        return 0.0

    def keys(df: pd.DataFrame) -> np.ndarray:
        values = pd.DataFrame({c: comparable_values(df[c]) for c in cols})
        return pd.util.hash_pandas_object(values.astype(str), index=False).to_numpy()

    mine = keys(original)
    counts = np.unique(mine, return_counts=True)[1]
    worst = 0.0
    for l, z in enumerate(datasets, start=1):
        if len(z) == len(original):
            continue
        share = float(np.isin(mine, keys(z)).mean())
        mean, sd = chance_share(counts, len(z))
        worst = max(worst, share)
        if share >= ORIGINAL_COPY_SHARE and share - mean >= max(0.25, 4 * sd):
            _warn(record, "RELEASE_HOLDS_ORIGINAL",
                  f"synthetic dataset {l} ({len(z):,} rows) holds {share:.0%} of the original's "
                  f"{len(original):,} records unchanged in every column, where rows drawn from "
                  f"the other records' combinations would hold about {mean:.0%}: it looks like "
                  "the original itself, or a file that contains it, rather than a synthetic "
                  "release of it. Check that the files are given in the order ORIGINAL, then "
                  "RELEASE; if this is the release, it discloses those records as they are.")
            break
    return worst


def warn_unconfirmed(original: pd.DataFrame, datasets: Sequence[pd.DataFrame],
                     columns: Iterable[str], *, record: dict[str, str] | None = None,
                     measures: str = "a risk measured against it") -> list[str]:
    """Warn ``ORIGINAL_UNCONFIRMED`` for the synthesized ``columns`` of plain files that show
    no row-by-row association with the original's; return the columns reported."""
    weak = unconfirmed_columns(original, datasets, columns)
    if weak:
        what = "; ".join(f"{c!r}: association {r:.3g}, one-sided p = {p:.2g}"
                         for c, (r, p) in weak.items())
        _warn(record, "ORIGINAL_UNCONFIRMED", f"the synthesized column(s) {list(weak)} of the "
              f"synthetic data show no row-by-row association with the original's ({what}). A "
              "synthesizer that uses a record's other values makes its synthetic values follow "
              "its true ones; these do not, so the original's column may not be the one the "
              "release was made from (edited, from another wave, or its values in another row "
              f"order than the other columns), and {measures} would be understated. Check the "
              "original, or give a release written by 'bayes-risk synthesize' (its manifest "
              "records the original's fingerprint). A synthesizer that draws the column without "
              "regard to the record's other values, or a fully synthetic release, also shows no "
              "association.")
    return list(weak)


def _warn(record: dict[str, str] | None, code: str, msg: str) -> None:
    if record is not None:
        record[code] = msg
    warnings.warn(DataWarning(f"{code}: {msg}", code=code), skip_file_prefixes=CALLER)


def row_association(original: pd.Series, released: Sequence[pd.Series]) -> tuple[float, float]:
    """How strongly a synthesized column of the release follows the original's, row by row.

    See :doc:`/user_guide/data`, Row alignment and the original's fingerprint.

    Parameters
    ----------
    original : Series
        The original's column.
    released : sequence of Series
        The column in each synthetic dataset (same length).

    Returns
    -------
    (float, float)
        The association and its standardised value ``z`` under random pairing; ``nan`` when
        the column is constant in the original or in the release.
    """
    n = len(original)
    o = comparable_values(original)
    zs = [comparable_values(z) for z in released]
    if n < 3 or not zs:
        return np.nan, np.nan
    numeric = o.dtype.kind == "f" and all(z.dtype.kind == "f" for z in zs)
    if numeric and _n_distinct(o) > _RANK_LEVELS:
        a = _centred_ranks(o)
        b = np.mean([_centred_ranks(z) for z in zs], axis=0)
        saa, sbb = _dot(a, a), _dot(b, b)
        if saa == 0.0 or sbb == 0.0:
            return np.nan, np.nan
        s = _dot(a, b)
        return s / np.sqrt(saa * sbb), s / np.sqrt(saa * sbb / (n - 1))
    if not numeric:
        o, zs = _as_text(o), [_as_text(z) for z in zs]
    codes, _ = pd.factorize(np.concatenate([o, *zs]), use_na_sentinel=False)
    k = int(codes.max()) + 1
    oc, sc = codes[:n], codes[n:].reshape(len(zs), n)
    m = len(zs)
    # P[i, k]: the share of the datasets giving record i the value k; c: the original's counts
    p = np.zeros((n, k)) if n * k <= _DENSE_CELLS else None
    c = np.bincount(oc, minlength=k).astype(np.float64)
    pbar = np.bincount(sc.ravel(), minlength=k) / (m * n)
    agree = float(np.mean(sc == oc))
    if p is not None:
        for row in sc:
            p[np.arange(n), row] += 1.0 / m
        psq = (p * p).sum(axis=0)
        pc = np.einsum("ik,k->i", p, c)
    else:  # many levels on a long table: the same sums from the datasets' pairs
        psq = np.zeros(k)
        pc = np.zeros(n)
        for row in sc:
            pc += c[row] / m
            for row2 in sc:
                psq += np.bincount(row, weights=(row == row2).astype(np.float64),
                                   minlength=k) / (m * m)
    # S = sum_i sum_k (1[o_i = k] - c_k/n)(P_ik - pbar_k); its variance under a random
    # pairing of rows is tr(A'A B'B)/(n - 1) with A'A = diag(c) - cc'/n, B'B = P'P - n pbar pbar'
    s = n * (agree - _dot(c, pbar) / n)
    var = (_dot(c, psq) - n * _dot(c, pbar**2)
           - (_dot(pc, pc) - n * _dot(pbar, c) ** 2) / n) / (n - 1)
    if not var > 1e-12 * n:
        return np.nan, np.nan
    return s / n, s / np.sqrt(var)


def _dot(a: np.ndarray, b: np.ndarray) -> float:
    """``a @ b`` of two float64 vectors by numpy's own loop, not BLAS: a BLAS product this
    long wakes OpenBLAS's threads, which then spin about 0.1 s of CPU each before they sleep
    (the check's own sums took 0.02 s at 10^5 rows; a sum that no thread count changes)."""
    return float(np.einsum("i,i->", a, b))


def _average_ranks(x: np.ndarray) -> np.ndarray:
    """Average ranks (1-based; ties share their mean rank) of float64 ``x``, a missing value
    left missing: pandas' ``rank(method="average")`` (SciPy's ``rankdata``) bit for bit, from
    one sort (3x faster than pandas at 10^6 values; the identification path imports no SciPy).
    """
    ok = ~np.isnan(x)
    whole = bool(ok.all())  # no missing value: no copies in and out of the non-missing ones
    v = x if whole else x[ok]
    order = np.argsort(v)  # the order inside a tie does not change its ranks
    s = v[order]
    new = np.empty(len(s), dtype=bool)
    new[:1] = True
    np.not_equal(s[1:], s[:-1], out=new[1:])
    r = np.empty(len(s))
    if new.all():  # no tie: the ranks 1 … n in sort order
        r[order] = np.arange(1.0, len(s) + 1.0)
    else:
        first = np.flatnonzero(new)
        ties = np.diff(np.append(first, len(s)))
        # a tie block from 0-based position f of k values: ranks f+1 … f+k, mean f + (k+1)/2
        r[order] = np.repeat(first + (ties + 1) / 2.0, ties)
    if whole:
        return r
    out = np.full(len(x), np.nan)
    out[ok] = r
    return out


def _n_distinct(x: np.ndarray) -> int:
    """``len(np.unique(x[~np.isnan(x)]))`` of float64 ``x``, by a plain sort (faster)."""
    s = np.sort(x[~np.isnan(x)])
    return int(len(s) > 0) + int(np.count_nonzero(s[1:] != s[:-1]))


def _centred_ranks(x: np.ndarray) -> np.ndarray:
    r = _average_ranks(x)
    miss = np.isnan(r)
    if not miss.any():  # the mean of every rank (np.nanmean's value, bit for bit), in place
        if len(r):
            r -= r.mean()
        return r
    r = r - np.nanmean(r) if not miss.all() else np.zeros(len(x))
    return np.where(np.isnan(r), 0.0, r)


def _upper_tail(z: float) -> float:
    """One-sided p-value of a standard normal ``z``."""
    return 0.5 * math.erfc(z / math.sqrt(2.0))


def unconfirmed_columns(original: pd.DataFrame, datasets: Sequence[pd.DataFrame],
                        columns: Iterable[str]) -> dict[str, tuple[float, float]]:
    """The synthesized columns whose row-by-row association with the original is not
    significant, with the association and its one-sided p-value (none on small tables)."""
    out: dict[str, tuple[float, float]] = {}
    n = len(original)
    if n < ASSOCIATION_MIN_ROWS:
        return out
    # a long table is tested first on evenly spaced rows (a fixed subset: under a random
    # pairing its statistic has the same null distribution), and only a column they do not
    # confirm at SUBSET_P on all of them: the twelve rank sorts of two columns and five
    # datasets at 10^6 records took 2.1 s of CPU, on 10^5 rows 0.2 s
    step = -(-n // SUBSET_ROWS)
    for c in columns:
        if step > 1:
            r, z = row_association(original[c].iloc[::step], [d[c].iloc[::step]
                                                              for d in datasets])
            if np.isfinite(z) and _upper_tail(z) < SUBSET_P:
                continue
        r, z = row_association(original[c], [d[c] for d in datasets])
        if np.isfinite(z) and _upper_tail(z) > ASSOCIATION_P:
            out[c] = (r, _upper_tail(z))
    return out


def _refuse(c: str, l: int, eq: np.ndarray, code: str) -> None:
    i = int(np.flatnonzero(~eq)[0])
    k = int((~eq).sum())
    if code == "ROWS_MISALIGNED":
        raise SchemaError(f"synthetic dataset {l}: column {c!r} holds the original's values in "
                          f"another row order ({k} of {len(eq)} rows differ; first at row {i}): "
                          "the original or the release has been shuffled or re-sorted, or it is "
                          "another table. Every measure compares record i of the original with "
                          "row i of each dataset; give both files in the order of the release (a "
                          "column the synthesizer permuted, as in data swapping, is declared "
                          "synthesized).", code=code)
    raise SchemaError(f"synthetic dataset {l}: column {c!r}, unsynthesized in the release's "
                      f"manifest, differs from the original ({k} of {len(eq)} rows; first at row "
                      f"{i}): the original is not the table the release was made from, or its "
                      "rows are in another order. Give the original the release was made from.",
                      code=code)


def unchanged_column_error(label: str, column: str, original: pd.Series, released: pd.Series,
                           differ: np.ndarray, *, what: str = "unsynthesized column",
                           hint: str = "declare the column as synthesized") -> SchemaError:
    """``ROWS_MISALIGNED`` for an unchanged column holding the original's values in another row
    order, else ``US_COLUMNS_DIFFER``."""
    i = int(np.flatnonzero(differ)[0])
    k = int(differ.sum())
    if same_multiset(comparable_values(original), comparable_values(released)):
        return SchemaError(f"{label}: {what} {column!r} holds the original's values in another "
                           f"row order ({k} rows differ; first at row {i}): the original or the "
                           "synthetic file has been shuffled or re-sorted. Every dataset must "
                           "keep the original's records in the original's order.",
                           code="ROWS_MISALIGNED")
    return SchemaError(f"{label}: {what} {column!r} differs from the original ({k} rows; first at "
                       f"row {i}: {original.iloc[i]!r} vs {released.iloc[i]!r}). Unsynthesized "
                       f"columns are released unchanged; {hint} if the synthesizer replaced it.",
                       code="US_COLUMNS_DIFFER")
