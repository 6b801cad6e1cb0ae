"""Fingerprints of the original: which table a model was fitted to and a release was made from.

See :doc:`/user_guide/data`, Row alignment and the original's fingerprint.
"""

from __future__ import annotations

import hashlib
import warnings
from typing import Any

import numpy as np
import pandas as pd

from bayes_risk.data.schema import Schema
from bayes_risk.exceptions import CALLER, DataWarning, SchemaError, arg_name, on_command_line

__all__ = [
    "table_fingerprint", "rows_fingerprint", "column_fingerprints", "fingerprint_problem",
    "check_original", "check_model_original", "fingerprint_record"
]

#: how the user overrides the check, per entry point (in the error message)
def override_hint() -> str:
    """How the user accepts another original, as the caller writes it."""
    return (arg_name("allow_different_original") if on_command_line()
            else "release.allow_different_original()")


def table_fingerprint(data: pd.DataFrame, schema: Schema) -> str:
    """SHA-256 of a table encoded by ``schema`` (categories as level codes, numbers as float64).

    Parameters
    ----------
    data : DataFrame
        The table (at least the schema's columns).
    schema : Schema
        Column types and levels; its column order is the order hashed.

    Returns
    -------
    str
        64 hexadecimal digits.

    Raises
    ------
    SchemaError
        If a categorical value is not among the schema's levels.
    """
    h = hashlib.sha256()
    h.update(f"{len(data)}|{'|'.join(schema.names)}".encode())
    for _, col in _encoded_columns(data, schema):
        h.update(np.ascontiguousarray(col).tobytes())
    return h.hexdigest()


def _encoded_columns(data: pd.DataFrame, schema: Schema):  # noqa: ANN202
    """``(name, values)`` per schema column: level codes, or float64 with one NaN and no -0."""
    from bayes_risk.data.validate import encode

    for spec in schema:
        if spec.is_categorical:
            col = encode(data, schema, [spec.name])[:, 0]
        else:
            col = pd.to_numeric(data[spec.name], errors="coerce").to_numpy(dtype=np.float64)
            col = np.where(np.isnan(col), np.nan, col + 0.0)
        yield spec.name, col


def rows_fingerprint(data: pd.DataFrame, schema: Schema) -> str:
    """SHA-256 of a table's encoded records in sorted order (the same in any row order)."""
    cols = [np.where(np.isnan(c), np.inf, c) if c.dtype.kind == "f" else c
            for _, c in _encoded_columns(data, schema)]
    order = np.lexsort(cols[::-1]) if cols else np.arange(len(data))
    h = hashlib.sha256()
    h.update(f"rows|{len(data)}|{'|'.join(schema.names)}".encode())
    for c in cols:
        h.update(np.ascontiguousarray(np.asarray(c)[order]).tobytes())
    return h.hexdigest()


def column_fingerprints(data: pd.DataFrame, schema: Schema) -> dict[str, list[str]]:
    """Per column, a short hash of its values in row order and one of its sorted values."""
    out = {}
    for name, col in _encoded_columns(data, schema):
        arr = np.ascontiguousarray(col)
        out[name] = [hashlib.sha256(arr.tobytes()).hexdigest()[:16],
                     hashlib.sha256(np.sort(arr).tobytes()).hexdigest()[:16]]
    return out


def fingerprint_problem(data: pd.DataFrame, stored: str | None, schema: Schema,
                        n_records: int | None,
                        columns: dict[str, list[str]] | None = None) -> str | None:
    """How ``data`` differs from the table whose fingerprint is ``stored`` (``None``: it does
    not, or nothing was stored); ``n_records``: the table's size (``None``: not known, the
    fingerprint, which hashes the size too, tells)."""
    if stored is None:
        return None
    if not isinstance(data, pd.DataFrame):
        return f"it is a {type(data).__name__}, not a DataFrame"
    missing = [c for c in schema.names if c not in data.columns]
    if missing:
        return f"it lacks column(s) {missing}"
    if n_records is not None and len(data) != n_records:
        return f"it has {len(data)} records, the table it was made from {n_records}"
    table = data[schema.names].reset_index(drop=True)
    try:
        fp = table_fingerprint(table, schema)
    except (ValueError, TypeError) as err:  # SchemaError: a level the model never saw
        return " ".join(str(err).split()).rstrip(".")
    if fp == stored:
        return None
    if not columns:
        return "same size, but other values or another row order"
    now = column_fingerprints(table, schema)
    moved = [c for c in schema.names if c in columns and now[c][0] != columns[c][0]
             and now[c][1] == columns[c][1]]
    other = [c for c in schema.names if c in columns and now[c][1] != columns[c][1]]
    parts = []
    if moved:
        parts.append(f"column(s) {moved} hold the same values in another row order")
    if other:
        parts.append(f"column(s) {other} hold other values")
    return "; ".join(parts) or "same size, but other values or another row order"


def check_original(original: pd.DataFrame, source: Any, *, what: str = "the release",
                   row_order: bool = True) -> None:
    """Refuse an original that is not the table ``source`` was made from.

    Parameters
    ----------
    original : DataFrame
        The table given as the original.
    source : SyntheticData or None
        The release (its ``original_fingerprint``); not checked without a fingerprint.
    what : str
        How the release is named in the message.
    row_order : bool, default True
        Whether record i of the original is paired with row i of each dataset.

    Raises
    ------
    SchemaError
        ``ORIGINAL_DIFFERS`` (a ``DataWarning`` after ``allow_different_original()``);
        ``NOT_A_NUMBER``: a value of a number column of the release is text.
    """
    record = getattr(source, "original_fingerprint", None)
    schema = getattr(source, "schema", None)
    if not record or schema is None or not isinstance(original, pd.DataFrame):
        return  # nothing recorded, or an original the caller's own checks refuse
    if any(c not in original.columns for c in schema.names):
        # the fingerprint covers every column: a table lacking one cannot be compared. The
        # caller refuses a missing column it needs (MISSING_COLUMN, which names it); the rows
        # of the shared columns are still checked for alignment (data.alignment)
        return
    from bayes_risk.data.schema import check_numeric_text

    for spec in schema:  # text in a number column is refused as such, naming its records
        if not spec.is_categorical:
            check_numeric_text(spec.name, original[spec.name], spec.type)
    if isinstance(record, str):
        record = {"table": record}
    n = record.get("n_records")
    if n is None and not _rows_removed(source):  # recorded before the size was: the release's
        n = len(source.datasets[0]) if getattr(source, "datasets", None) else len(original)
    problem = fingerprint_problem(original, record.get("table"), schema, n,
                                  record.get("columns"))
    if problem is None:
        return
    if not row_order and record.get("rows") and len(original) == (n or len(original)):
        try:
            same = rows_fingerprint(original[schema.names].reset_index(drop=True),
                                    schema) == record["rows"]
        except (ValueError, TypeError):
            same = False
        if same:
            return  # the same records in another order: nothing this measure depends on
    if getattr(source, "original_check", "error") == "warn":
        warnings.warn(f"the original is not the table {what} was made from ({problem}) "
                      "(ORIGINAL_DIFFERS); the risks are those of this table against that "
                      "release, as asked.", DataWarning, skip_file_prefixes=CALLER)
        return
    raise SchemaError(f"the original is not the table {what} was made from ({problem}; compared "
                      "by the fingerprint recorded in its manifest). A shuffled, re-sorted or "
                      "other table gives other, usually lower, risks. Give the original the "
                      f"release was made from, or {override_hint()} to go on anyway.",
                      code="ORIGINAL_DIFFERS")


def check_model_original(model: Any, original: pd.DataFrame, *,
                         allow_different_original: bool = False,
                         source: str | None = None) -> None:
    """Refuse an original that is not the table a fitted model was fitted to.

    Parameters
    ----------
    model : fitted synthesizer
        A model with ``check_fingerprint(data)`` (a model without one is not checked).
    original : DataFrame
        The table given as the original.
    allow_different_original : bool, default False
        Warn (``DataWarning`` ``ORIGINAL_DIFFERS``) instead of raising: the risks are then
        those of this table under that model.
    source : str, optional
        Where the model was read from (a folder), named in the message.

    Raises
    ------
    ValidationError
        ``ORIGINAL_DIFFERS``, saying what differs.
    """
    from bayes_risk.exceptions import ValidationError

    check = getattr(model, "check_fingerprint", None)
    problem = None if check is None else check(original)
    if problem is None:
        return
    # "original ..." first: on the command line it reads "ORIGINAL ..."
    what = (f"{arg_name('original')} is not the table the model"
            + (f" in {str(source)!r}" if source is not None else "") + f" was fitted to "
            f"({problem})")
    if not allow_different_original:
        raise ValidationError(f"{what}; give the original it was fitted to, or "
                              f"{arg_name('allow_different_original')} to go on anyway.",
                              code="ORIGINAL_DIFFERS")
    warnings.warn(f"{what} (ORIGINAL_DIFFERS); the risks are those of this table under that "
                  "model.", DataWarning, skip_file_prefixes=CALLER)


def _rows_removed(source: Any) -> bool:
    """Whether a release's datasets lost rows after synthesis (``sdc``'s removal of uniques):
    their size is then not the original's."""
    done = (getattr(source, "extra", None) or {}).get("post_processing") or []
    return any(str(step.get("operation", "")).startswith("remove_") for step in done
               if isinstance(step, dict))


def fingerprint_record(data: pd.DataFrame, schema: Schema) -> dict[str, Any]:
    """What a release manifest stores of its original (hashes and its number of records,
    never a value)."""
    table = data[schema.names].reset_index(drop=True)
    return {"n_records": len(table), "table": table_fingerprint(table, schema),
            "rows": rows_fingerprint(table, schema),
            "columns": column_fingerprints(table, schema)}
