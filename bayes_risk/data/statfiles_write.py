"""SAS, Stata and SPSS files written with the value labels, missing-value declarations and
variable labels of a table read from one (:doc:`/user_guide/data`, Files from SAS, Stata and
SPSS), and the SAS program that attaches a release's formats. Reading is
:mod:`bayes_risk.data.statfiles`; what both share, :mod:`bayes_risk.data.statfiles_labels`.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from bayes_risk.data.statfiles_labels import (
    FORMAT_NAMES,
    LETTER_OF,
    FileLabels,
    code_text,
    load_pyreadstat,
    pyreadstat_errors,
)
from bayes_risk.exceptions import ValidationError, arg_name

__all__ = ["write_stat_file", "sas_format_program"]


def write_stat_file(df: pd.DataFrame, path: str | Path, file_format: str, *,
                    labels: FileLabels | None = None,
                    missing_codes: Mapping[str, Sequence[float]] | None = None) -> None:
    """Write ``df`` as a ``sav``, ``zsav``, ``dta`` or ``xpt`` file with the value labels,
    variable labels and missing-value declarations of ``labels`` (not atomic: for files
    inside an atomic folder).

    Parameters
    ----------
    df : DataFrame
        A table with the columns (and levels) of the table ``labels`` was read with.
    path : path-like
        The file written.
    file_format : {"sav", "zsav", "dta", "xpt"}
        The format. A transport file holds no value labels: its labelled columns hold the
        codes, with their SAS format named (:func:`sas_format_program` writes the formats).
    labels : FileLabels, optional
        What the original file declared; ``None``: the values only (texts as texts).
    missing_codes : mapping, optional
        The schema's missing-value codes of numeric columns: declared user-missing in an SPSS
        file (at most three a column), special missing values ``.a``-``.z`` in a Stata file
        where they are those values' codes (:data:`LETTER_MISSING`).

    Raises
    ------
    ValidationError
        ``FORMAT_CANNOT_HOLD``: a value, name or declaration the format cannot hold.
    """
    prs = load_pyreadstat()
    lab = labels or FileLabels(file_format=file_format)
    codes = {str(c): tuple(v) for c, v in (missing_codes or {}).items()}
    for c, v in lab.missing_codes.items():
        codes[c] = tuple(dict.fromkeys([*v, *codes.get(c, ())]))
    spss, where = file_format in ("sav", "zsav"), _where(file_format)
    out: dict[str, pd.Series] = {}
    value_labels: dict[str, dict[Any, str]] = {}
    declared: dict[str, list[Any]] = {}
    formats: dict[str, str] = {}
    for c in map(str, df.columns):
        s = df[c]
        text = c in lab.text_columns
        letters: list[str] = []
        if c in lab.dates:
            out[c] = _date_values(s, lab.dates[c])
        elif isinstance(s.dtype, pd.CategoricalDtype) and c in lab.level_codes and (
                file_format != "dta" or not text):  # Stata labels numbers only
            out[c], letters = _level_codes(s, dict(lab.level_codes[c]), c, text, where)
        elif isinstance(s.dtype, pd.CategoricalDtype):
            cats = s.dtype.categories
            if pd.api.types.is_numeric_dtype(cats.dtype) and not pd.api.types.is_bool_dtype(
                    cats.dtype):  # integer codes: numbers (an object column of integers and
                # None is written with garbage in the empty cells by pyreadstat)
                out[c] = pd.to_numeric(s.astype(object), errors="coerce").astype(np.float64)
            else:
                out[c] = pd.Series(s.astype(object).where(s.notna(), None).to_numpy(),
                                   dtype=object)
        elif pd.api.types.is_bool_dtype(s.dtype):
            out[c] = s.astype(np.float64)
        elif pd.api.types.is_numeric_dtype(s.dtype):
            out[c], letters = _numbers(s, codes.get(c, ()))
        else:
            out[c] = pd.Series(s.astype(object).where(s.notna(), None).to_numpy(), dtype=object)
        if letters and file_format != "dta":
            raise ValidationError(
                f"{where}column {c!r} holds special missing values "
                f"({', '.join('.' + x for x in letters)}), which {FORMAT_NAMES[file_format]} file "
                "cannot hold (pyreadstat writes them to Stata files only); write "
                f"{arg_name('file_format', repr('dta'), cli='dta')}, or parquet.",
                code="FORMAT_CANNOT_HOLD")
        if "_" in letters:
            raise ValidationError(f"{where}column {c!r} holds SAS's special missing value ._, "
                                  "which Stata has no counterpart for (.a-.z only); write "
                                  "parquet, or recode ._ in the original.",
                                  code="FORMAT_CANNOT_HOLD")
        if letters:
            declared[c] = letters
        ranges = lab.user_missing.get(c)
        if not spss and ranges and all(isinstance(r, dict) for r in ranges):
            raise ValidationError(
                f"{where}column {c!r} has the SPSS user-missing values {_ranges_text(ranges)}, "
                f"which {FORMAT_NAMES[file_format]} file cannot declare: they would be read back "
                f"as values. Write {arg_name('file_format', repr('sav'), cli='sav')} (or zsav), "
                "or parquet.", code="FORMAT_CANNOT_HOLD")
        sets = lab.value_labels.get(c)
        if sets and file_format in ("sav", "zsav", "dta") and not (file_format == "dta" and text):
            value_labels[c] = {(_stata_code(k) if file_format == "dta" else k): v
                               for k, v in sets}
        if file_format == "xpt" and c in lab.level_codes:
            formats[c] = _sas_format(lab, c)
        if spss:
            ranges = lab.user_missing.get(c)
            if ranges and all(isinstance(r, dict) for r in ranges):
                declared[c] = [dict(r) for r in ranges]
            elif codes.get(c) and not text:
                declared[c] = [float(x) for x in codes[c] if x not in LETTER_OF][:3]
    frame = pd.DataFrame(out, index=pd.RangeIndex(len(df)))
    names = {c: v for c, v in lab.variable_labels.items() if c in frame.columns}
    try:
        if spss:
            prs.write_sav(frame, str(path), column_labels=names or None,
                          compress=file_format == "zsav", file_label=lab.file_label,
                          variable_value_labels=value_labels or None,
                          missing_ranges={c: v for c, v in declared.items() if v} or None,
                          variable_measure={c: m for c, m in lab.measure.items()
                                            if c in frame.columns} or None)
        elif file_format == "dta":
            prs.write_dta(frame, str(path), column_labels=names or None,
                          file_label=lab.file_label, variable_value_labels=value_labels or None,
                          missing_user_values=declared or None)
        elif file_format == "xpt":
            prs.write_xport(frame, str(path), column_labels=names or None,
                            file_label=lab.file_label,
                            variable_format={c: f"{f}." for c, f in formats.items()} or None)
        else:
            raise ValidationError(f"file_format must be one of sav, zsav, dta, xpt. Got "
                                  f"{file_format!r}.", code="UNSUPPORTED_FILE_TYPE")
    except pyreadstat_errors(prs) as err:
        if isinstance(err, ValidationError):
            raise
        raise ValidationError(f"{where}the table cannot be written as {FORMAT_NAMES[file_format]} "
                              f"file: {err}. Write another format (parquet keeps everything).",
                              code="FORMAT_CANNOT_HOLD") from err


def _ranges_text(ranges: Sequence[Mapping[str, Any]]) -> str:
    return ", ".join(code_text(r["lo"]) if r["lo"] == r["hi"] else
                     f"{code_text(r['lo'])} to {code_text(r['hi'])}" for r in ranges)


def _where(file_format: str) -> str:
    return f"{arg_name('file_format', repr(file_format), cli=file_format)}: "


def _stata_code(k: Any) -> Any:
    """Stata labels integers (and the letters of special missing values)."""
    if isinstance(k, str):
        return k
    f = float(k)
    return int(f) if f.is_integer() else f


def _date_values(s: pd.Series, kind: str) -> pd.Series:
    """ISO texts read from dates back as dates, date-times or times."""
    if kind == "time":
        return pd.Series([None if pd.isna(v) else dt.time.fromisoformat(str(v)) for v in s],
                         dtype=object)
    t = pd.to_datetime(s.astype(object).where(s.notna(), None), errors="coerce")
    if kind == "datetime":
        return t
    return pd.Series([None if pd.isna(v) else v.date() for v in t], dtype=object)


def _level_codes(s: pd.Series, codes: dict[Any, Any], c: str, text: bool,
                 where: str) -> tuple[pd.Series, list[str]]:
    """A categorical column of labels as the file's codes, and the letters of the special
    missing values among them."""
    cats = list(s.dtype.categories)
    held = set(pd.unique(s.dropna().astype(object)))
    unknown = [v for v in cats if v not in codes and v in held]
    if unknown:
        raise ValidationError(f"{where}column {c!r} holds the level {unknown[0]!r}, to which the "
                              "original file gives no code; the file could not say what it is. "
                              "Write parquet or csv.", code="FORMAT_CANNOT_HOLD")
    table = np.array([codes.get(v) for v in cats] + [None], dtype=object)
    vals = table[s.cat.codes.to_numpy()]  # -1 (missing) picks the trailing None
    if text:
        return pd.Series(vals, dtype=object), []
    letters = sorted({v for v in vals if isinstance(v, str)})
    if not letters:
        return pd.Series(np.array([np.nan if v is None else float(v) for v in vals],
                                  dtype=np.float64)), []
    return pd.Series([v if v is None or isinstance(v, str) else float(v) for v in vals],
                     dtype=object), letters


def _numbers(s: pd.Series, codes: Sequence[float]) -> tuple[pd.Series, list[str]]:
    """A numeric column, the codes of special missing values as their letters."""
    vals = pd.to_numeric(s, errors="coerce").astype(np.float64)
    special = [x for x in codes if x in LETTER_OF and bool((vals == x).any())]
    if not special:
        return vals, []
    out = pd.Series(vals.to_numpy(dtype=object), dtype=object)
    for x in special:
        out[(vals == x).to_numpy()] = LETTER_OF[x]
    out[vals.isna().to_numpy()] = None
    return out, sorted(LETTER_OF[x] for x in special)


def sas_format_program(labels: FileLabels, columns: Sequence[str]) -> str:
    """The SAS program (``PROC FORMAT``) that defines the value labels of a transport file's
    labelled columns, under the format names the file's columns carry (empty: none).

    Parameters
    ----------
    labels : FileLabels
        What the original file declared.
    columns : sequence of str
        The columns of the file written.

    Returns
    -------
    str
    """
    lines = []
    for c in columns:
        sets = labels.value_labels.get(c)
        if not sets or c not in labels.level_codes:
            continue
        name = _sas_format(labels, c)
        body = "\n".join(f"    {_sas_literal(k, c in labels.text_columns)} = "
                         f"'{str(v).replace(chr(39), chr(39) * 2)}'" for k, v in sets)
        lines.append(f"  value {name}\n{body};")
    if not lines:
        return ""
    return ("* value labels of the release (bayes-risk); run before reading the .xpt files;\n"
            "proc format;\n" + "\n".join(lines) + "\nrun;\n")


def _sas_format(labels: FileLabels, c: str) -> str:
    """The SAS format of a labelled column: the original's, else one named after the column
    (letters, digits and ``_``, not ending in a digit; ``$`` for a text column)."""
    if c in labels.sas_formats:
        return labels.sas_formats[c]
    name = re.sub(r"[^A-Za-z0-9_]", "_", c)[:30]
    name = ("_" + name if not name or name[0].isdigit() else name) + "F"
    return ("$" if c in labels.text_columns else "") + name.upper()


def _sas_literal(k: Any, text: bool) -> str:
    if text:
        return "'" + str(k).replace("'", "''") + "'"
    if isinstance(k, str):
        return f".{k.upper()}"
    return code_text(k)
