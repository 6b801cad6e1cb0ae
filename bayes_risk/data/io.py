"""Readers and writers of tables (CSV, Parquet, SAS, Stata, SPSS), and the alignment of a
release's table to its original (the reading of a release: ``bayes_risk.data.release_reader``)."""

from __future__ import annotations

import contextlib
import csv
import os
import re
import sys
import warnings
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from bayes_risk.exceptions import DataWarning, SchemaError, ValidationError, arg_name

__all__ = ["read_table", "write_table", "write_csv"]

_CSV = {".csv", ".txt"}
_PARQUET = {".parquet", ".pq"}
_EXPECTED = ".csv, .parquet, .sas7bdat, .xpt, .dta, .sav or .zsav"


#: texts that pandas would read as missing by default; here they are labels unless declared
NA_LIKE = ("NA", "N/A", "n/a", "NaN", "nan", "NULL", "null", "None", "none", "<NA>", "#N/A",
           "-NaN", "-nan", "NA_character_")
_THOUSANDS = re.compile(r"^[+-]?\d{1,3}(,\d{3})+(\.\d*)?$")
_PLAIN_NUMBER = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$")
_LEADING_ZERO = re.compile(r"^[+-]?0\d")


def read_table(path: str | os.PathLike[str], *,
               missing_labels: Mapping[str, Sequence[str]] | None = None,
               strict: bool = True, numeric: Sequence[str] = ()) -> pd.DataFrame:
    """Read a CSV, Parquet, SAS, Stata or SPSS file into a DataFrame, as the file holds it.

    The rules: :doc:`/user_guide/data`, Reading rules, and Files from SAS, Stata and SPSS
    (value labels become the levels of categorical columns, in declared order; the file's
    missing-value declarations and variable labels are kept in ``df.attrs``,
    :func:`~bayes_risk.data.file_labels`).

    Parameters
    ----------
    path : path-like
        A ``.csv`` / ``.txt``, ``.parquet`` / ``.pq``, ``.sas7bdat``, ``.xpt``, ``.dta``,
        ``.sav`` or ``.zsav`` file.
    missing_labels : mapping of str to sequence of str, optional
        ``{column: [label, ...]}``: texts that stand for a missing value in that column.
    strict : bool
        Refuse a label declared for a column read as numbers or absent from the file (default
        ``True``); ``False`` for a synthetic dataset, whose column may hold numbers where the
        original's held the label, and whose missing columns the release's checks name.
    numeric : sequence of str
        Columns of a SAS, Stata or SPSS file read as their codes (numbers) although the file
        gives them value labels (the command line: the columns declared ``--count`` or
        ``--continuous``).

    Raises
    ------
    ValidationError
        A missing, unsupported or unparsable file, ``NOT_COMMA_SEPARATED``,
        ``NOT_A_REGULAR_FILE`` or ``CONFUSABLE_COLUMN_NAMES``.
    SchemaError
        ``DUPLICATE_COLUMN``, ``THOUSANDS_SEPARATOR``, ``UNNAMED_COLUMN``, ``ROW_LENGTH``,
        ``UNKNOWN_COLUMN`` or ``MISSING_LABEL_NOT_TEXT`` (a ``missing_labels`` column);
        ``VALUE_WITHOUT_LABEL``, ``DUPLICATE_VALUE_LABEL`` (a SAS, Stata or SPSS file).
    """
    from bayes_risk._checksums import special_file
    from bayes_risk.data.statfiles import STAT_FORMATS

    p = Path(path)
    what = special_file(p)
    if what is not None:  # refused before it is opened: reading a pipe with no writer waits
        raise ValidationError(f"input file {str(p)!r} is {what}, not a regular file; save the "
                              "table to a file and give that file.", code="NOT_A_REGULAR_FILE")
    if p.is_dir():
        raise ValidationError(f"input file {str(p)!r} is a folder; expected a data file "
                              f"({_EXPECTED}).", code="IS_A_FOLDER")
    if not p.is_file():
        raise ValidationError(f"input file {str(p)!r} does not exist.", code="FILE_NOT_FOUND")
    suffix = p.suffix.lower()
    try:
        if suffix in _CSV:
            df = _read_csv(p)
        elif suffix in _PARQUET:
            df = pd.read_parquet(p)
        elif suffix in STAT_FORMATS:
            from bayes_risk.data.statfiles import read_stat_file

            df = read_stat_file(p, numeric=numeric, missing_labels=missing_labels)
        else:
            raise ValidationError(f"input file {str(p)!r} has extension {suffix!r}; expected "
                                  f"{_EXPECTED}.", code="UNSUPPORTED_FILE_TYPE")
    except (ValueError, OSError, pd.errors.ParserError) as err:
        if isinstance(err, (ValidationError, SchemaError)):
            raise
        raise ValidationError(f"could not read {str(p)!r}: {err}", code="FILE_UNREADABLE") from err
    df.columns = [str(c) for c in df.columns]
    _check_unique_names(p, list(df.columns))
    df = _apply_missing_labels(p, df, missing_labels, strict)
    _warn_na_like(p, df, missing_labels)
    return df


def _read_csv(p: Path) -> pd.DataFrame:
    header = _csv_header(p)
    _check_comma_separated(p, header)
    names = _csv_row(header)
    _check_unique_names(p, names)
    raw = p.read_bytes()  # read once for the checks below (pandas reads the file itself)
    _check_row_lengths(p, len(names), raw)
    # only an empty field is missing: "NA", "None", "null" ... are labels
    df = pd.read_csv(p, keep_default_na=False, na_values=[""])
    df = _drop_index_column(p, df)
    text = [c for c in df.columns if _is_text(df[c])]
    _check_thousands(p, df, text)
    return _keep_leading_zeros(p, df, raw)


def _is_text(s: pd.Series) -> bool:
    return s.dtype == object or pd.api.types.is_string_dtype(s.dtype)


def _check_row_lengths(p: Path, width: int, raw: bytes) -> None:
    """Refuse a row with another number of fields than the header (``ROW_LENGTH``)."""
    if _row_lengths_plain(raw, width):
        return
    # a quoted field, a lone carriage return or a wrong row: the csv module's reading, which
    # also names the line
    with open(p, encoding="utf-8-sig", errors="replace", newline="") as fh, _any_field_size():
        for k, row in enumerate(csv.reader(fh), start=1):
            if len(row) == width or (not row and k > 1):
                continue  # a blank line (at the end of many files) is no record
            raise SchemaError(f"input file {str(p)!r}: line {k} has {len(row)} field(s) but the "
                              f"header has {width}; a truncated or damaged file (a short last "
                              "line, a missing or extra comma, an unquoted comma inside a value). "
                              "Repair the line; every row must have one field per column (an "
                              "empty field for a missing value).", code="ROW_LENGTH")


#: bytes of a file each vectorised pass reads at a time: its temporaries (a few times this)
#: stay small enough for the C library to reuse them from block to block, rather than map and
#: zero pages afresh (measured on six 21 MB files, 10^6 rows each: 0.40 s of CPU against 0.76;
#: blocks of 1 MiB, 0.87 s, their freed memory returned and taken again at every block)
_BLOCK = 1 << 16


def _line_blocks(raw: bytes, start: int) -> Iterator[tuple[int, int]]:
    """``raw[start:]`` in consecutive blocks of about :data:`_BLOCK` bytes, each ending just
    after a newline (the last at the end of the text)."""
    n = len(raw)
    while start < n:
        stop = raw.find(b"\n", min(start + _BLOCK, n) - 1)
        stop = n if stop < 0 else stop + 1
        yield start, stop
        start = stop


def _row_lengths_plain(raw: bytes, width: int) -> bool:
    """Whether every line of a plain file (no quotes, NUL bytes or lone carriage returns) has
    ``width`` fields or none, counted in vectorised passes over blocks of whole lines;
    ``False`` for any other file."""
    # ``in`` is a memchr scan; the counts only run on a file with carriage returns
    if b'"' in raw or b"\x00" in raw or (b"\r" in raw
                                          and raw.count(b"\r") != raw.count(b"\r\n")):
        return False
    bom = 3 if raw.startswith(b"\xef\xbb\xbf") else 0  # the byte-order mark is no text
    k = width - 1
    for a, z in _line_blocks(raw, bom):
        if not _lines_hold(np.frombuffer(raw, dtype=np.uint8, count=z - a, offset=a), k,
                           header=a == bom):
            return False
    return True


def _lines_hold(buf: np.ndarray, k: int, header: bool) -> bool:
    """Whether every line of ``buf`` (whole lines; the file's first when ``header``) has ``k``
    commas or is empty (the header may not be)."""
    ends = np.flatnonzero(buf == ord("\n"))
    if len(buf) and buf[-1] != ord("\n"):  # a last line without its newline is a line
        ends = np.append(ends, len(buf))
    starts = np.concatenate(([0], ends[:-1] + 1))[: ends.size]
    # the line's text without a "\r" before its newline; an empty line has no field (and no
    # comma), and may not be the header
    length = ends - starts - (buf[np.maximum(ends - 1, 0)] == ord("\r")) * (ends > starts)
    if header and length.size and length[0] == 0:
        return False
    full = ends[length > 0]
    commas = np.flatnonzero(buf == ord(","))
    if commas.size != k * full.size:
        return False
    if k == 0:
        return True
    # with k commas a line in all, every line holds k when its (k·(i+1))-th comma (counted
    # from 1) comes before its end and the next one after it: the positions of one comma in
    # k, not a running count the size of the block (4x faster at 10^6 lines)
    return bool((commas[k - 1::k] < full).all() and (commas[k::k] > full[:-1]).all())


@contextlib.contextmanager
def _any_field_size() -> Iterator[None]:
    """Lift the ``csv`` module's 128 KiB field limit inside the block (pandas has none)."""
    old = csv.field_size_limit()
    csv.field_size_limit(min(sys.maxsize, 2**31 - 1))  # a C long on every platform
    try:
        yield
    finally:
        csv.field_size_limit(old)


def _csv_row(line: str) -> list[str]:
    """The fields of one CSV line (a header), however long."""
    with _any_field_size():
        return next(csv.reader([line]), [])


def _drop_index_column(p: Path, df: pd.DataFrame) -> pd.DataFrame:
    """Drop a saved row index (unnamed first column of distinct integers); refuse any other
    unnamed column (``UNNAMED_COLUMN``)."""
    unnamed = [j for j, c in enumerate(df.columns) if str(c) == "" or
               re.fullmatch(r"Unnamed: \d+", str(c))]
    if unnamed and unnamed[0] == 0 and len(df):
        col = df.iloc[:, 0]
        ints = pd.api.types.is_integer_dtype(col.dtype) and col.is_unique
        if ints:
            vals = col.to_numpy()
            if not (np.array_equal(vals, np.arange(1, len(df) + 1))
                    or np.array_equal(vals, np.arange(len(df)))):
                order = ("in increasing order" if bool(np.all(np.diff(vals) > 0))
                         else "NOT in increasing order: the rows were reordered before saving")
                warnings.warn(f"input file {str(p)!r}: the unnamed first column holds distinct "
                              f"integers ({vals[0]}, {vals[1] if len(vals) > 1 else ''}...) "
                              f"{order}; it is read as a row index saved with the table and "
                              "dropped, not as a variable (INDEX_COLUMN). Save the table without "
                              "its index (to_csv(index=False)).", DataWarning, stacklevel=3)
            df = df.iloc[:, 1:]
            unnamed = [j - 1 for j in unnamed[1:]]
    if unnamed:
        raise SchemaError(f"input file {str(p)!r}: column {unnamed[0] + 1} has no name in the "
                          "header; every variable needs a name (name it, or drop the column; a "
                          "saved row index must be the first column and hold distinct integers).",
                          code="UNNAMED_COLUMN")
    return df


def _check_thousands(p: Path, df: pd.DataFrame, text: list[str]) -> None:
    """Refuse a text column whose values are numbers written with thousands separators."""
    for c in text:
        vals = df[c].dropna().astype(str).str.strip()
        vals = vals[vals != ""]
        if not len(vals):
            continue
        sep = vals.str.match(_THOUSANDS)
        if sep.any() and (sep | vals.str.match(_PLAIN_NUMBER)).all():
            i = int(np.flatnonzero(sep.to_numpy())[0])
            raise SchemaError(f"input file {str(p)!r}: column {c!r} holds numbers written with "
                              f"thousands separators ({vals.iloc[i]!r}, {int(sep.sum())} "
                              "value(s)); read as text they would make a categorical column of "
                              "every distinct amount. Write the numbers without separators (e.g. "
                              "pandas.read_csv(path, thousands=',').to_csv(new_path, "
                              "index=False)).", code="THOUSANDS_SEPARATOR")


def _has_leading_zero_field(raw: bytes) -> bool:
    """Whether a field of the CSV text starts with ``0`` and a digit (after an opening quote
    and a sign, if any), in vectorised passes over blocks of :data:`_BLOCK` bytes."""
    n = len(raw)
    for s in range(0, n - 1, _BLOCK):  # the "0" of a field at positions s .. e - 1
        e = min(s + _BLOCK, n - 1)
        lo = max(s - 3, 0)  # the three bytes before the block: a sign, a quote, a separator
        b = np.frombuffer(raw, dtype=np.uint8, count=e + 1 - lo, offset=lo)
        off = s - lo
        cur = b[off:off + e - s]
        lead = (cur == ord("0")) & (b[off + 1:off + 1 + e - s] - ord("0") < 10)  # uint8: wraps
        # a field's "0" follows a comma, a newline, a sign or a quote (all below "0", unlike a
        # digit or "."), or starts the text: only those few go on (numbers hold many "0"s)
        if off:
            prev = b[off - 1:off - 1 + e - s]
            lead &= (prev < ord("0")) & (prev != ord("."))
        else:
            lead[1:] &= (cur[:-1] < ord("0")) & (cur[:-1] != ord("."))
        i = np.flatnonzero(lead) + off
        j = i - 1  # back over a sign, then an opening quote, to the field's start
        j -= (j >= 0) & np.isin(b[np.maximum(j, 0)], (ord("+"), ord("-")))
        j -= (j >= 0) & (b[np.maximum(j, 0)] == ord('"'))
        start = b[np.maximum(j, 0)]
        # j < 0 only in the first block (later blocks start three bytes back): the text's start
        if np.any((j < 0) | (start == ord(",")) | (start == ord("\n"))):
            return True
    return False


def _keep_leading_zeros(p: Path, df: pd.DataFrame, raw: bytes) -> pd.DataFrame:
    """Integer columns whose text has leading zeros (``015``) are re-read as text labels."""
    ints = [c for c in df.columns if pd.api.types.is_integer_dtype(df[c].dtype)
            or (pd.api.types.is_float_dtype(df[c].dtype))]
    # one pass over the bytes first: most files have no field starting with 0 and a digit
    if not ints or not _has_leading_zero_field(raw):
        return df
    raw = pd.read_csv(p, usecols=lambda c: c in set(ints), dtype=str, keep_default_na=False,
                      na_values=[""])
    raw.columns = [str(c) for c in raw.columns]
    out = df
    for c in ints:
        if c not in raw.columns:
            continue
        txt = raw[c].dropna().str.strip()
        lead = txt.str.match(_LEADING_ZERO) & ~txt.str.match(r"^[+-]?0\d*\.")
        if not lead.any():
            continue
        if out is df:
            out = df.copy()
        out[c] = raw[c].reindex(df.index).to_numpy(dtype=object)
        warnings.warn(f"input file {str(p)!r}: column {c!r} has values with leading zeros "
                      f"({txt[lead].iloc[0]!r}, {int(lead.sum())} value(s)); it is read as text "
                      "labels, as written, so that codes such as 015 are released as 015, not 15 "
                      "(LEADING_ZEROS). If it holds amounts, write them without the zeros.",
                      DataWarning, stacklevel=4)
    return out


def _apply_missing_labels(p: Path, df: pd.DataFrame, labels: Mapping[str, Sequence[str]] | None,
                          strict: bool = True) -> pd.DataFrame:
    """Declared missing labels become missing values (a column left with numbers becomes
    numeric); ``strict``: a label of a numeric or absent column is refused."""
    if not labels:
        return df
    out = df.copy()
    for c, labs in labels.items():
        if c not in out.columns and not strict:
            continue
        if c not in out.columns:
            raise SchemaError(f"{arg_name('missing_labels', f'{{{c!r}: [...]}}', cli=f'{c}=...')}: "
                              f"column {c!r} is not in {str(p)!r} (columns: {list(out.columns)}).",
                              code="UNKNOWN_COLUMN")
        s = out[c]
        if strict and not _is_text(s) and not isinstance(s.dtype, pd.CategoricalDtype):
            lab = str(labs[0])
            raise SchemaError(
                f"{arg_name('missing_labels', f'{{{c!r}: [{lab!r}]}}', cli=f'{c}={lab}')}: "
                f"column {c!r} of {str(p)!r} holds numbers only ({s.dtype}), so the text "
                f"{lab!r} never occurs in it and nothing would be declared missing. A "
                "missing-value code of a numeric column is a number (e.g. "
                f"{arg_name('missing_codes', f'{{{c!r}: [-8]}}', cli=f'{c}=-8')}); or the "
                "label belongs to another column.",
                code="MISSING_LABEL_NOT_TEXT",
            )
        hit = s.astype(str).isin([str(v) for v in labs]) & s.notna()
        if not hit.any():
            continue
        s = s.mask(hit)
        if isinstance(s.dtype, pd.CategoricalDtype):  # a labelled column (data.statfiles)
            out[c] = s.cat.remove_categories([v for v in s.cat.categories
                                              if str(v) in {str(x) for x in labs}])
            continue
        num = pd.to_numeric(s, errors="coerce")
        if _is_text(s) and (num.notna() | s.isna()).all():
            # numbers kept as text only because of the label: numbers again
            whole = not num.isna().any() and bool((num % 1 == 0).all())
            s = num.astype(np.int64) if whole else num
        out[c] = s
    return out


def _warn_na_like(p: Path, df: pd.DataFrame, labels: Mapping[str, Sequence[str]] | None) -> None:
    """Say where a text that pandas reads as missing is kept as a label (``NA_LIKE_LABEL``)."""
    for c in df.columns:
        s = df[c]
        if not _is_text(s):
            continue
        hits = s[s.isin(NA_LIKE)]
        if not len(hits):
            continue
        lab = str(hits.iloc[0])
        warnings.warn(f"input file {str(p)!r}: column {c!r} has the label {lab!r} in {len(hits)} "
                      "row(s); it is read as a label of its own, not as a missing value (only an "
                      "empty field is missing) (NA_LIKE_LABEL). If it means missing, declare it: "
                      f"{arg_name('missing_labels', f'{{{c!r}: [{lab!r}]}}', cli=f'{c}={lab}')}.",
                      DataWarning, stacklevel=3)


def _csv_header(p: Path) -> str:
    """The first line of a CSV file (without its byte-order mark and line ending)."""
    with open(p, encoding="utf-8-sig", errors="replace", newline="") as fh:
        return fh.readline().rstrip("\r\n")


def _check_unique_names(p: Path, names: list[str]) -> None:
    """Refuse a table in which two columns have the same name (``DUPLICATE_COLUMN``), or
    names that print alike (``CONFUSABLE_COLUMN_NAMES``: case, white space, invisible
    characters, look-alike letters)."""
    counts = pd.Series(names, dtype=object).value_counts(sort=False)
    dup = [str(n) for n, k in counts.items() if k > 1]
    if dup:
        raise SchemaError(f"input file {str(p)!r} has column name(s) {dup} more than once; "
                          "expected one column per name (rename or drop the repeated column).",
                          code="DUPLICATE_COLUMN")
    from bayes_risk.data.schema import check_confusable_names

    check_confusable_names(names, f"input file {str(p)!r}")


def _check_comma_separated(p: Path, header: str) -> None:
    """Refuse a CSV file whose header holds semicolons or tabs but no comma (one column)."""
    if "," in header:
        return
    for sep, name in ((";", "semicolons"), ("\t", "tabs")):
        if sep in header:
            raise ValidationError(
                f"input file {str(p)!r} is separated by {name} (header {header[:60]!r}); "
                "expected a comma-separated file, as R's write.csv writes it. Convert it, e.g. "
                f"pandas.read_csv(path, sep={sep!r}).to_csv(new_path, index=False)"
                + (" (with decimal=',' if numbers use a decimal comma)" if sep == ";" else "")
                + ".",
                code="NOT_COMMA_SEPARATED",
            )


def write_table(df: pd.DataFrame, path: str | os.PathLike[str]) -> None:
    """Write a DataFrame as CSV, Parquet, SPSS (``.sav``, ``.zsav``), Stata (``.dta``) or SAS
    transport (``.xpt``) by extension, atomically; a table read from a SAS, Stata or SPSS file
    is written with its value labels, variable labels and missing-value declarations
    (:func:`~bayes_risk.data.file_labels`)."""
    from bayes_risk._io import atomic_file
    from bayes_risk.data.statfiles import RELEASE_FORMATS, file_labels
    from bayes_risk.data.statfiles_write import write_stat_file

    p = Path(path)
    suffix = p.suffix.lower()
    stat = {v: k for k, v in RELEASE_FORMATS.items() if k not in ("csv", "parquet")}
    if suffix in _CSV:
        with atomic_file(p) as fh:
            df.to_csv(fh, index=False)
    elif suffix in _PARQUET:
        with atomic_file(p, "wb") as fh:
            df.to_parquet(fh, index=False)
    elif suffix in stat:
        with atomic_file(p, "wb") as fh:  # pyreadstat writes the temporary file by its name
            write_stat_file(df, fh.name, stat[suffix], labels=file_labels(df))
    else:
        raise ValidationError(f"output file {str(p)!r}: expected a .csv, .parquet, .sav, .zsav, "
                              ".dta or .xpt extension.", code="UNSUPPORTED_FILE_TYPE")


def write_csv(df: pd.DataFrame, path: str | os.PathLike[str]) -> None:
    """Write ``df`` as CSV without its index (not atomic: for files inside an atomic folder),
    with pyarrow (about 5x faster than pandas); pandas for tables pyarrow cannot convert."""
    import pyarrow as pa
    import pyarrow.csv as pacsv

    try:
        table = pa.Table.from_pandas(df, preserve_index=False)
        # rows converted 8,192 at a time, not pyarrow's 1,024 (the same text; at 10^6 rows 15 %
        # less CPU, and a batch of a few hundred kB)
        pacsv.write_csv(table, path, write_options=pacsv.WriteOptions(quoting_style="needed",
                                                                      batch_size=8192))
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
        df.to_csv(path, index=False)


def align_text_numbers(table: pd.DataFrame, like: pd.DataFrame) -> pd.DataFrame:
    """Read numbers stored as text back as numbers where ``like`` has a numeric column (cells
    that do not parse stay, so the checks that follow report them)."""
    out = table
    for c in table.columns:
        if c not in like.columns:
            continue
        s, ref = table[c], like[c]
        if isinstance(s.dtype, pd.CategoricalDtype):  # Parquet categories "1".."5"
            s = s.astype(object)
        numeric = pd.api.types.is_numeric_dtype(ref.dtype)
        if not _is_text(s) or not numeric or pd.api.types.is_bool_dtype(ref.dtype):
            continue
        num = pd.to_numeric(s, errors="coerce")
        ok = num.notna() & s.notna()
        if not ok.any():
            continue
        vals = num[ok]
        if pd.api.types.is_integer_dtype(ref.dtype) and (vals % 1 == 0).all():
            vals = vals.astype(np.int64)
        col = s.astype(object).copy()
        col[ok] = vals.astype(object)
        if out is table:
            out = table.copy()
        out[c] = col if not ok.all() else vals.reindex(s.index)
    return out


def _same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether two numeric or boolean arrays hold the same dtype and bit patterns."""
    if a.dtype != b.dtype or a.shape != b.shape or a.dtype.kind not in "biuf":
        return False
    if a.dtype.kind == "f":
        a, b = a.view(f"i{a.dtype.itemsize}"), b.view(f"i{b.dtype.itemsize}")
    return bool(np.array_equal(a, b))


def share_unchanged_columns(table: pd.DataFrame, like: pd.DataFrame) -> pd.DataFrame:
    """``table`` with every numeric column that is bit for bit ``like``'s taken from ``like``
    (memory shared under copy-on-write; values, dtypes, order and index unchanged)."""
    if len(table) != len(like) or not table.index.equals(like.index):
        return table
    shared = [c for c in table.columns if c in like.columns
              and table[c].dtype == like[c].dtype
              and _same_bits(table[c].to_numpy(), like[c].to_numpy())]
    if not shared or table.columns.has_duplicates or like.columns.has_duplicates:
        return table
    # another column is copied only where the array holding it holds more (a pandas block of a
    # shared column too, which a view would keep whole); else taken as it is (at 10^6 rows the
    # copies of five datasets' two synthesized columns took 0.13 s of CPU)
    whole = _whole_arrays(table, [c for c in table.columns if c not in shared])
    return pd.DataFrame({c: like[c] if c in shared else table[c] if c in whole
                         else table[c].copy() for c in table.columns}, copy=False)


def _whole_arrays(table: pd.DataFrame, columns: list[str]) -> set[str]:
    """The ``columns`` whose memory, with the others of them in the same array, is all of that
    array (the array that owns a column's values, found through their ``base``)."""
    groups: dict[int, tuple[np.ndarray, list[str], int]] = {}
    for c in columns:
        a = table[c].to_numpy()
        nbytes = a.nbytes
        while isinstance(a.base, np.ndarray):
            a = a.base
        owner, cols, held = groups.get(id(a), (a, [], 0))
        groups[id(a)] = (owner, [*cols, c], held + nbytes)
    return {c for owner, cols, held in groups.values() if held == owner.nbytes for c in cols}
