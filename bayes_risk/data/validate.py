"""Validation, level harmonisation and integer encoding of original and synthetic tables
(:doc:`/user_guide/data`)."""

from __future__ import annotations

import numbers
import warnings
from collections import Counter
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from bayes_risk._constraints import Interval, check_value
from bayes_risk.data.alignment import unchanged_column_error, warn_release_holds_original
from bayes_risk.data.levels import level_codes, normalise_level
from bayes_risk.data.schema import (
    CATEGORICAL_TYPES,
    FRAME,
    Schema,
    _level_to_json,
    _sort_levels,
    did_you_mean,
)
from bayes_risk.exceptions import (
    CALLER,
    DataWarning,
    SchemaError,
    ValidationError,
    arg_name,
    on_command_line,
)

__all__ = [
    "validate_table", "validate_synthetic", "harmonise_levels", "check_release_levels",
    "check_value_labels", "release_levels", "release_only_levels", "refuse_unknown_levels",
    "encode", "decode", "decode_values", "check_m", "check_no_infinity", "check_real",
    "record_mask", "require_categorical", "require_frame", "require_columns", "require_distinct",
    "require_synthesized"
]


def require_frame(df: Any, name: str) -> pd.DataFrame:
    """``df`` itself when it is a pandas DataFrame; else a ``ValidationError`` naming the
    argument ``name`` and what was given (the one place this is checked)."""
    return check_value(df, FRAME, name)


def require_columns(df: pd.DataFrame, columns: Sequence[Any], name: str) -> None:
    """Nothing when the table ``df`` holds each of ``columns``; else ``MISSING_COLUMN`` naming
    it (``name``), the columns it lacks (with a close match of one) and those expected (the one
    place this is checked).

    Examples
    --------
    >>> require_columns(pd.DataFrame({"Age": [1]}), ["Age"], "original")
    >>> require_columns(pd.DataFrame({"Age": [1]}), ["Sex"], "original")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    bayes_risk.exceptions.SchemaError: original is missing column(s) ['Sex']; expected ...
    """
    names = [str(c) for c in df.columns]
    held = {*df.columns, *names}  # a column named 1 is also given as '1'
    missing = [c for c in columns if c not in held]
    if missing:
        raise SchemaError(f"{name} is missing column(s) {missing}; expected columns "
                          f"{list(columns)}." + (did_you_mean(str(missing[0]), names)
                                                 if len(missing) == 1 else ""),
                          code="MISSING_COLUMN")


def require_distinct(values: Iterable[Any], name: str, *, what: str = "column",
                     hint: str = "", code: str | None = None) -> list[Any]:
    """``values`` as a list when none is listed twice; else a ``ValidationError`` naming the
    argument ``name`` (as the caller writes it), the repeated values and the list (the one
    place this is checked).

    Examples
    --------
    >>> require_distinct(["Age", "Sex"], "known")
    ['Age', 'Sex']
    >>> require_distinct(["Age", "Sex", "Age"], "known")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    bayes_risk.exceptions.ValidationError: known lists column(s) ['Age'] more than once: ...
    """
    out = list(values)
    twice = [v for v, k in Counter(out).items() if k > 1]
    if twice:
        raise ValidationError(f"{arg_name(name)} lists {what}(s) {twice} more than once: {out}."
                              + (f" {hint}" if hint else ""), code=code)
    return out


def require_synthesized(columns: Iterable[Any], synthesized: Sequence[str], what: str = "", *,
                        note: str = "", code: str | None = None) -> None:
    """Nothing when every one of ``columns`` is synthesized (one of ``synthesized``); else a
    ``ValidationError`` naming the argument ``what`` (none when empty), the first other column
    and the synthesized ones (the one place this is checked); ``note`` ends the message.

    Examples
    --------
    >>> require_synthesized(["Age"], ["Age", "Sex"], "smoothing")
    >>> require_synthesized(["Inc"], ["Age"], "smoothing")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    bayes_risk.exceptions.ValidationError: smoothing: column 'Inc' is not synthesized ...
    """
    other = [c for c in columns if c not in synthesized]
    if other:
        raise ValidationError(f"{what + ': ' if what else ''}column {other[0]!r} is not "
                              f"synthesized (synthesized: {list(synthesized)}){note}.", code=code)


def require_categorical(schema: Schema, model: str) -> None:
    """Nothing when every column of ``schema`` is categorical with a level; else a
    ``SchemaError`` naming the first other column: ``WRONG_DTYPE`` (not categorical) or
    ``MISSING_VALUES`` (no level), the refusal of ``model``, a model of categorical columns
    only (``ModelInfo.categorical_only``)."""
    bad = [c for c in schema if not c.is_categorical]
    if bad:
        c = bad[0]
        raise SchemaError(
            f"{model} models categorical columns only; column {c.name!r} is {c.type}. Declare "
            "integer-coded factors as categorical ("
            + ("--categorical COL ..." if on_command_line()
               else "categorical=[...] in infer_schema")
            + "), or leave the column out.", code="WRONG_DTYPE")
    for c in schema:
        if not c.levels:
            raise SchemaError(f"column {c.name!r} has no level (all values missing); {model} "
                              "cannot model it.", code="MISSING_VALUES")


def validate_table(df: pd.DataFrame, schema: Schema, *, name: str = "original",
                   allow_nan: bool | Iterable[str] = False, check_levels: bool = True,
                   extra_columns: bool = False, missing_hint: str = "") -> None:
    """Check that a table fits ``schema``.

    Parameters
    ----------
    df : DataFrame
        Table to check.
    schema : Schema
        Expected columns, types and levels.
    name : str
        How the table is called in error messages (``"original"``, ``"synthetic dataset 3"``).
    allow_nan : bool or iterable of str
        Columns in which missing values are allowed (``True``: all).
    check_levels : bool
        Whether categorical values must be among the schema's levels.
    extra_columns : bool
        Whether columns outside the schema are tolerated.
    missing_hint : str
        Sentence added to the ``MISSING_VALUES`` error.

    Raises
    ------
    SchemaError
        Naming the column and value at fault and what was expected.
    """
    require_columns(require_frame(df, name), schema.names, name)
    cols = [str(c) for c in df.columns]
    extra = [c for c in cols if c not in schema.names]
    if extra and not extra_columns:
        raise SchemaError(f"{name} has unexpected column(s) {extra}; expected columns "
                          f"{schema.names}.", code="EXTRA_COLUMN")
    nan_ok = set(schema.names) if allow_nan is True else set(allow_nan or ())
    for spec in schema:
        s = df[spec.name]
        n_na = int(s.isna().sum())
        if n_na and spec.name not in nan_ok:
            first = int(np.flatnonzero(s.isna().to_numpy())[0])
            raise SchemaError(
                f"{name}: column {spec.name!r} has {n_na} missing value(s) (first at row {first}); "
                "missing values are not allowed here."
                + (f" {missing_hint}" if missing_hint else ""),
                code="MISSING_VALUES",
            )
        if spec.type in CATEGORICAL_TYPES:
            if check_levels and spec.levels is not None:
                allowed = {normalise_level(v) for v in spec.levels}
                vals = pd.unique(s.dropna())
                bad = [v for v in vals if normalise_level(v) not in allowed]
                if bad:
                    raise SchemaError(f"{name}: column {spec.name!r} has value "
                                      f"{_level_to_json(bad[0])!r} that is not among its levels "
                                      f"{list(spec.levels)}.", code="UNKNOWN_LEVEL")
        else:
            if not pd.api.types.is_numeric_dtype(s.dtype) or pd.api.types.is_bool_dtype(s.dtype):
                from bayes_risk.data.schema import _describe_cells, _not_numbers

                bad, _ = _not_numbers(s)
                what = (
                    f"holds text ({_describe_cells(s, bad)}; records numbered from 0)"
                    if len(bad)
                    else f"has dtype {s.dtype} (numbers stored as text)"
                )
                raise SchemaError(f"{name}: column {spec.name!r} is {spec.type} but {what}; "
                                  "expected numbers.", code="WRONG_DTYPE")
            if spec.type == "count":
                v = s.dropna().to_numpy(dtype=np.float64)
                if spec.missing_codes:  # declared missing-value codes (e.g. -8) are not counts
                    v = v[~np.isin(v, np.asarray(spec.missing_codes))]
                bad_mask = (v < 0) | (v % 1 != 0)
                if bad_mask.any():
                    raise SchemaError(f"{name}: column {spec.name!r} is a count but holds "
                                      f"{v[bad_mask][0].item()!r}; expected integers >= 0.",
                                      code="WRONG_DTYPE")
            else:
                check_no_infinity(s.to_numpy(dtype=np.float64, na_value=np.nan), name,
                                  spec.name)


def check_no_infinity(values: np.ndarray, what: str, column: str) -> None:
    """Refuse ``inf`` / ``-inf`` in a numeric column (``INFINITE_VALUE``, naming the table,
    column, first record and count)."""
    bad = np.isinf(np.asarray(values, dtype=np.float64))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise SchemaError(f"{what}: column {column!r} holds an infinite value ({int(bad.sum())} "
                          f"record(s); first record {i}: {float(values[i])!r}); expected finite "
                          "numbers (an empty cell for a missing value).", code="INFINITE_VALUE")


def check_m(m: Any, argument: str = "m") -> int:
    """Validate a number of synthetic datasets (an integer >= 1)."""
    return check_value(m, Interval(int, 1), arg_name(argument))


def check_real(x: Any, argument: str, *, minimum: float | None = None) -> float:
    """A finite real number (numpy scalars included; not ``bool`` nor text), at least
    ``minimum`` if given, as a Python ``float``."""
    return check_value(x, Interval(float, minimum), arg_name(argument))


def record_mask(records: Any, n: int, *, argument: str = "records",
                code: str | None = None) -> np.ndarray:
    """A selection of records, given as a boolean mask or as integer positions, as a mask.

    Parameters
    ----------
    records : array-like of bool or of int, or a pandas Series of them
        A boolean mask with one flag per record, or 0-based positions in ``0..n-1``.
    n : int
        Number of records.
    argument : str
        The argument's name in error messages (``"records"``, ``"records['AGE']"``).
    code : str, optional
        The error code (default: ``ValidationError``'s).

    Returns
    -------
    ndarray of bool, shape (n,)
        A new array (never the caller's).

    Raises
    ------
    ValidationError
        A mask of another length, non-integer positions, or a position outside ``0..n-1``.
    """
    arr = np.asarray(records.to_numpy() if isinstance(records, pd.Series) else records)
    argument = arg_name(argument)
    if arr.dtype == bool:
        if arr.shape != (n,):
            raise ValidationError(f"{argument} as a boolean mask needs one flag per record ({n}). "
                                  f"Got shape {arr.shape}.", code=code)
        return arr.copy()
    # an empty list reads as float64: no position, not a non-integer one
    if arr.ndim > 1 or (arr.size and not np.issubdtype(arr.dtype, np.integer)):
        raise ValidationError(f"{argument} must be a boolean mask or integer record indices "
                              f"(positions 0..{n - 1}). Got {records!r}.", code=code)
    idx = arr.astype(np.int64).ravel()
    out_of_range = idx[(idx < 0) | (idx >= n)]
    if out_of_range.size:
        raise ValidationError(
            f"{argument}: index {int(out_of_range[0])} is outside 0..{n - 1}; indices must lie "
            f"in 0..{n - 1} (the data has {n} records).", code=code)
    mask = np.zeros(n, dtype=bool)
    mask[idx] = True
    return mask


def check_probability(x: Any, argument: str) -> float:
    """A real number strictly in (0, 1) (not ``bool``), as a Python ``float``."""
    return check_value(x, Interval(float, 0, 1, closed="neither"), arg_name(argument))


def harmonise_levels(original: pd.DataFrame, synthetic: Sequence[pd.DataFrame], *,
                     schema: Schema, recoded: Collection[str] = ()) -> Schema:
    """Return ``schema`` with each categorical column's levels extended to the union over tables.

    Existing levels keep their order (and codes); levels seen only in synthetic datasets are
    appended in sorted order. A level of a synthetic dataset that the original never holds is an
    error (``check_release_levels``) unless its column is in ``recoded``.

    Raises
    ------
    SchemaError
        ``SYNTHETIC_ONLY_LEVEL``: a synthetic dataset holds a level the original never holds in a
        column not in ``recoded``; ``LEVEL_TYPES_DIFFER``.
    """
    new_levels: dict[str, tuple[Any, ...]] = {}
    for spec in schema:
        if spec.type not in CATEGORICAL_TYPES:
            continue
        base = list(spec.levels or ())
        seen = {normalise_level(v) for v in base}
        extra = []
        for df in [original, *synthetic]:
            if spec.name not in df.columns:
                continue
            for v in pd.unique(df[spec.name].dropna()):
                nv = normalise_level(v)
                if nv not in seen:
                    seen.add(nv)
                    extra.append(nv)
        _refuse_labels_of_two_types(spec.name, list(seen))
        if extra or spec.levels is None:
            new_levels[spec.name] = tuple(base) + _sort_levels(extra)
    check_release_levels(release_only_levels(original, synthetic, schema), recoded,
                         original=original)
    warn_release_holds_original(original, synthetic)
    return schema.with_levels(new_levels) if new_levels else schema


def release_only_levels(original: pd.DataFrame, synthetic: Sequence[pd.DataFrame],
                        schema: Schema) -> dict[str, list[tuple[int, Any]]]:
    """The levels of the synthetic datasets that the original never holds
    (:func:`release_levels`), per categorical column of ``schema``: ``(dataset, level)`` pairs,
    datasets numbered from 1, each level once with the first dataset that holds it."""
    out: dict[str, list[tuple[int, Any]]] = {}
    for spec in schema:
        if spec.type not in CATEGORICAL_TYPES:
            continue
        allowed = release_levels(spec, original)
        if allowed is None:
            continue
        for l, df in enumerate(synthetic, start=1):
            if spec.name not in df.columns:
                continue
            for v in pd.unique(df[spec.name].dropna()):
                nv = normalise_level(v)
                if nv not in allowed:
                    allowed.add(nv)
                    out.setdefault(spec.name, []).append((l, nv))
    return out


def release_levels(spec: Any, original: pd.DataFrame) -> set[Any] | None:
    """The levels a release may hold in the categorical column ``spec``: those the original
    holds, and the schema's declared levels when they describe the original (every level it
    holds among them: a codebook's level no record holds). ``None`` when the original lacks the
    column (the callers' column checks report it)."""
    if spec.name not in original.columns:
        return None
    held = {normalise_level(v) for v in pd.unique(original[spec.name].dropna())}
    declared = {normalise_level(v) for v in spec.levels or ()}
    return held | declared if held <= declared else held


def check_release_levels(syn_only: Mapping[str, Sequence[tuple[int, Any]]],
                         recoded: Collection[str] = (), *,
                         original: pd.DataFrame | None = None, warn: bool = True) -> None:
    """Refuse levels of a release that the original never holds, unless the release recodes
    their column.

    The one check of every measure that compares an original with a release (the utility, the
    disclosure measures, identification, the attacks, the audit, ``sdc``): such a level is a
    level of its own, so no released record matches an original one on that column, and a
    release coded otherwise than its original (codes against labels) would show every risk as
    zero.

    Parameters
    ----------
    syn_only : mapping
        Column -> ``(dataset, level)`` pairs (datasets numbered from 1).
    recoded : collection of str
        Columns the release recodes on purpose (:meth:`SyntheticData.declare_recoded`,
        ``--recoded``): their levels are kept as levels of their own, with the warning.
    original : DataFrame, optional
        The original (its levels are named in the error).
    warn : bool, default True
        Warn for the columns in ``recoded`` (``False``: a check made before the measures that
        warn themselves).

    Raises
    ------
    SchemaError
        ``SYNTHETIC_ONLY_LEVEL``, naming the column, the levels and the dataset.

    Warns
    -----
    DataWarning
        ``SYNTHETIC_ONLY_LEVEL`` for the columns in ``recoded``.
    """
    refused = {c: lv for c, lv in syn_only.items() if c not in set(recoded)}
    if refused:
        c, lv = next(iter(refused.items()))
        levels = _sort_levels(v for _, v in lv)
        shown = ", ".join(f"{_level_to_json(v)!r}" for v in levels[:5]) + (
            f" and {len(levels) - 5} more" if len(levels) > 5 else "")
        held = ""
        if original is not None and c in original.columns:
            own = _sort_levels({normalise_level(v) for v in pd.unique(original[c].dropna())})
            held = (f" (the original's levels: {', '.join(map(repr, own[:8]))}"
                    + (" ..." if len(own) > 8 else "") + ")")
        more = (f"; also column(s) {list(refused)[1:]}" if len(refused) > 1 else "")
        raise SchemaError(
            f"synthetic dataset {lv[0][0]}: column {c!r} holds {shown}, level(s) the original "
            f"never holds{held}{more} (SYNTHETIC_ONLY_LEVEL). Each would be a level of its own "
            "that no original record has, so no released record could match one on this column "
            "and every risk that compares them would be understated (a release coded otherwise "
            "than its original, codes against labels, shows them as 0). Code the release as the "
            "original, or, if the release recodes the column on purpose, say so with "
            f"{recoded_hint([c, *list(refused)[1:]])}.", code="SYNTHETIC_ONLY_LEVEL")
    _warn_synthetic_only_levels(syn_only)


def check_value_labels(original: pd.DataFrame, tables: Mapping[str, pd.DataFrame],
                       recoded: Collection[str] = ()) -> None:
    """Refuse a table whose value labels (a SAS, Stata or SPSS file's code -> label maps,
    :func:`~bayes_risk.data.file_labels`) contradict the original's on a column they share: a
    code labelled otherwise, or a label given another code.

    The same rule as :func:`check_release_levels`: a release (or holdout) whose labels are
    swapped (1 = Rural where the original's 1 = Urban) is read as other categories than its
    codes mean, and an intruder who works in codes, as Stata and SPSS users do, sees the
    original's; every risk comparing the two would be wrong. Tables that carry no labels (a CSV
    or Parquet file, a DataFrame made in Python) are not compared here: their levels are.

    Parameters
    ----------
    original : DataFrame
        The original (its labels, when it was read from such a file).
    tables : mapping of name -> DataFrame
        The release's datasets (``"synthetic dataset 1"``, ...) or the holdout.
    recoded : collection of str
        Columns the release recodes on purpose (``--recoded``): their labels may differ, with
        the warning.

    Raises
    ------
    SchemaError
        ``VALUE_LABELS_DIFFER``, naming the table, the column and both maps.

    Warns
    -----
    DataWarning
        ``VALUE_LABELS_DIFFER`` for the columns in ``recoded``.
    """
    from bayes_risk.data.statfiles_labels import file_labels

    own = file_labels(original)
    if own is None or not own.value_labels:
        return
    for name, table in tables.items():
        theirs = file_labels(table)
        if theirs is None or table is original:
            continue
        for c, pairs in own.value_labels.items():
            other = theirs.value_labels.get(c)
            if other is None or c not in table.columns or c not in original.columns:
                continue
            a, b = _label_map(pairs), _label_map(other)
            by_label_a = {v: k for k, v in a.items()}
            clash = any(a[k] != b[k] for k in a.keys() & b.keys()) or any(
                by_label_a[v] != k for k, v in b.items() if v in by_label_a)
            if not clash:
                continue
            text = (f"{name}: column {c!r} has the value labels {_shown_map(b)}, the original "
                    f"{_shown_map(a)} (VALUE_LABELS_DIFFER): the same codes name other "
                    "categories, so the two tables would be compared on what their labels say "
                    "while an intruder who reads the codes sees the original's categories")
            if c in set(recoded):
                warnings.warn(DataWarning(f"{text}. The release recodes {c!r}, as stated; its "
                                          "levels are its labels.", code="VALUE_LABELS_DIFFER"),
                              skip_file_prefixes=CALLER)
                continue
            raise SchemaError(f"{text}. Label the codes as the original does, or, if the "
                              f"release recodes the column on purpose, say so with "
                              f"{recoded_hint([c])}.", code="VALUE_LABELS_DIFFER")


def _label_map(pairs: Iterable[tuple[Any, Any]]) -> dict[Any, str]:
    """``{code: label}``, numeric codes as floats (a file's 1 and 1.0 are one code)."""
    out = {}
    for k, v in pairs:
        is_num = isinstance(k, numbers.Real) and not isinstance(k, bool)
        out[float(k) if is_num else k] = str(v)
    return out


def _shown_map(m: Mapping[Any, str], most: int = 6) -> str:
    """``{1: 'Urban', 2: 'Rural'}`` (whole codes without their ``.0``)."""
    items = [f"{int(k) if isinstance(k, float) and k.is_integer() else k!r}: {v!r}"
             for k, v in list(m.items())[:most]]
    return "{" + ", ".join(items) + (", ..." if len(m) > most else "") + "}"


def refuse_unknown_levels(df: pd.DataFrame, levels: Mapping[str, Iterable[Any]], argument: str,
                          *, absent_from: str, consequence: str, remedy: str) -> None:
    """Refuse a value of a categorical column that is not among ``levels[column]``
    (``UNKNOWN_LEVEL``), naming the row, the column, the value and ``absent_from`` (where the
    levels come from), then ``consequence`` and ``remedy``."""
    for c, allowed_levels in levels.items():
        if c not in df.columns:
            continue
        allowed = {normalise_level(v) for v in allowed_levels}
        col = df[c]
        bad = [v for v in pd.unique(col.dropna()) if normalise_level(v) not in allowed]
        if bad:
            first = normalise_level(bad[0])
            row = int(np.flatnonzero([normalise_level(v) == first for v in col])[0])
            raise SchemaError(
                f"{argument} row {row}: column {c!r} holds {_level_to_json(bad[0])!r}, a level "
                f"absent from {absent_from}"
                + (f" ({len(bad)} such levels)" if len(bad) > 1 else "")
                + f"; {consequence} (UNKNOWN_LEVEL). {remedy}", code="UNKNOWN_LEVEL")


def recoded_hint(columns: Sequence[str]) -> str:
    """How the caller declares that the release recodes ``columns``."""
    if on_command_line():
        return arg_name("recoded", " ".join(map(str, columns)))
    return f"release.declare_recoded({list(columns)!r})"


def _refuse_labels_of_two_types(column: str, levels: list[Any]) -> None:
    """Refuse a column holding the same label as a number and as text (``1`` and ``"1"``):
    they would be two levels, every record of one table "synthetic-only"."""
    numbers = {str(v): v for v in levels
               if isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool)}
    clash = [v for v in levels if isinstance(v, str) and v.strip() in numbers]
    if clash:
        v = clash[0]
        raise SchemaError(f"column {column!r} holds the label {v!r} as text in one table and "
                          f"{numbers[v.strip()]!r} as a number in another ({len(clash)} such "
                          "label(s)); they would be counted as different levels. Give the column "
                          "the same type in every table (e.g. df[col] = df[col].astype(int) or "
                          ".astype(str)); files read with bayes_risk.read_synthetic(..., "
                          "like=original) are reconciled.", code="LEVEL_TYPES_DIFFER")


def _warn_synthetic_only_levels(syn_only: Mapping[str, Sequence[tuple[int, Any]]]) -> None:
    """Warn ``SYNTHETIC_ONLY_LEVEL``; ``syn_only`` maps a column to ``(dataset, level)`` pairs."""
    if not syn_only:
        return
    desc = "; ".join(
        f"{c!r}: " + ", ".join(f"{_level_to_json(v)!r} (dataset {l})" for l, v in lv[:5])
        for c, lv in syn_only.items()
    )
    warnings.warn(f"level(s) present only in the synthetic data (SYNTHETIC_ONLY_LEVEL): {desc}. "
                  "The release recodes these columns, as stated: the levels are kept as levels of "
                  "their own, which no original record matches; models fitted to the original "
                  "give them probability 0 and the utility measures count them.", DataWarning,
                  skip_file_prefixes=CALLER)


def validate_synthetic(original: pd.DataFrame, synthetic: Sequence[pd.DataFrame], *, schema: Schema,
                       check_unsynthesized: bool = True, same_rows: bool = True,
                       allow_nan: bool | Iterable[str] = False) -> None:
    """Check m synthetic tables against the original and the schema (methods, Notation).

    Raises
    ------
    ValidationError
        If ``m < 1``.
    SchemaError
        For missing/extra columns, NaN, wrong dtype, unknown levels, ``ROW_COUNT_MISMATCH`` or
        ``US_COLUMNS_DIFFER``.
    """
    if isinstance(synthetic, pd.DataFrame):
        synthetic = [synthetic]
    check_m(len(synthetic), "number of synthetic datasets (m)")
    validate_table(original, schema, name="original", allow_nan=allow_nan)
    n = len(original)
    for l, z in enumerate(synthetic, start=1):
        label = f"synthetic dataset {l}"
        validate_table(z, schema, name=label, allow_nan=allow_nan, check_levels=True)
        if same_rows and len(z) != n:
            raise SchemaError(f"{label} has {len(z)} rows but the original has {n}; partially "
                              "synthetic datasets must keep the original's records in the same "
                              "order.", code="ROW_COUNT_MISMATCH")
        if check_unsynthesized and same_rows:
            for c in schema.unsynthesized:
                eq = _equal_levels(original[c], z[c])
                if not eq.all():
                    raise unchanged_column_error(label, c, original[c], z[c], ~eq)


def _equal_levels(a: pd.Series, b: pd.Series) -> np.ndarray:
    """Element-wise equality of two columns: as numbers where both are (2 equals 2.0, NaN
    NaN), else by value and ``normalise_level``."""
    av = a.to_numpy(dtype=object) if isinstance(a.dtype, pd.CategoricalDtype) else a.to_numpy()
    bv = b.to_numpy(dtype=object) if isinstance(b.dtype, pd.CategoricalDtype) else b.to_numpy()
    try:
        af = np.asarray(av, dtype=np.float64)
        bf = np.asarray(bv, dtype=np.float64)
        return (af == bf) | (np.isnan(af) & np.isnan(bf))
    except (TypeError, ValueError):
        pass
    eq = np.asarray(
        pd.Series(av, dtype=object).to_numpy() == pd.Series(bv, dtype=object).to_numpy()
    )
    for i in np.flatnonzero(~eq):  # only the rare mismatches get the slow normalised comparison
        eq[i] = normalise_level(av[i]) == normalise_level(bv[i]) or (
            pd.isna(av[i]) and pd.isna(bv[i])
        )
    return eq


def encode(df: pd.DataFrame, schema: Schema, columns: Iterable[str] | None = None) -> np.ndarray:
    """Map categorical columns to integer codes ``0..d_j-1`` (``-1`` for a missing value).

    Parameters
    ----------
    df : DataFrame
    schema : Schema
        Supplies each column's levels.
    columns : iterable of str, optional
        Categorical columns to encode (default: all categorical columns of the schema).

    Returns
    -------
    ndarray of int64, shape (n, len(columns))

    Raises
    ------
    SchemaError
        If a value is not among the column's levels (harmonise first).
    """
    cols = list(columns) if columns is not None else schema.categorical
    out = np.empty((len(df), len(cols)), dtype=np.int64)
    for j, c in enumerate(cols):
        spec = schema[c]
        if spec.levels is None:
            raise SchemaError(f"column {c!r} is {spec.type}; only categorical columns are encoded.",
                              code="WRONG_DTYPE")
        out[:, j] = level_codes(df[c], spec.levels, unknown="raise", column=c)
    return out


def decode(codes: np.ndarray, schema: Schema, columns: Iterable[str]) -> pd.DataFrame:
    """Inverse of :func:`encode`: integer codes back to level values (``-1`` → missing)."""
    cols = list(columns)
    codes = np.asarray(codes)
    data = {}
    for j, c in enumerate(cols):
        lv = np.asarray(list(schema[c].levels or ()), dtype=object)
        col = codes[:, j]
        vals = np.where(col >= 0, lv[np.clip(col, 0, max(len(lv) - 1, 0))], None)
        data[c] = pd.Series(vals, dtype=object)
        if all(isinstance(v, (int, np.integer)) for v in lv) and (col >= 0).all():
            data[c] = pd.Series(vals.astype(np.int64))  # integer levels stay integers
    return pd.DataFrame(data)


def decode_values(values: np.ndarray, columns: Sequence[str], schema: Schema) -> pd.DataFrame:
    """Codes/values ``[G, q]`` → DataFrame with level values for categorical columns."""
    data = {}
    for j, c in enumerate(columns):
        spec = schema[c]
        if spec.is_categorical:
            lv = np.asarray(list(spec.levels), dtype=object)
            k = values[:, j].astype(np.int64)
            data[c] = np.where(k >= 0, lv[np.maximum(k, 0)], None)  # code -1: missing
        else:
            data[c] = values[:, j].astype(np.float64)
    return pd.DataFrame(data)
