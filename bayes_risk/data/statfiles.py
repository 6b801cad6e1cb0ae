"""SAS, Stata and SPSS files: read with their value labels, missing-value declarations and
variable labels, and written back with them (:doc:`/user_guide/data`, Files from SAS, Stata and
SPSS).

The reader and writer is pyreadstat (ReadStat): the one library that reads all five formats
with the user-defined and special missing values kept apart from the empty cell, and writes
SPSS and Stata files with value labels and missing-value declarations (pandas reads SAS and
Stata only, drops SAS's special missing values and writes no SPSS file). This module reads;
:mod:`bayes_risk.data.statfiles_write` writes; :mod:`bayes_risk.data.statfiles_labels` holds
what both share.
"""

from __future__ import annotations

import codecs
import datetime as dt
import re
import warnings
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

# what the reader shares with the writer, and the writer: modules of their own whose public
# names stay importable from here (__all__)
from bayes_risk.data.statfiles_labels import (
    ATTRS_KEY,
    FORMAT_NAMES,
    LABELS_FILE,
    LETTER_MISSING,
    RELEASE_FORMATS,
    STAT_FORMATS,
    FileLabels,
    LabelsAttrs,
    code_text,
    file_labels,
    load_pyreadstat,
    pyreadstat_errors,
)
from bayes_risk.data.statfiles_write import sas_format_program, write_stat_file
from bayes_risk.exceptions import BayesRiskError, DataWarning, SchemaError, ValidationError

__all__ = ["FileLabels", "STAT_FORMATS", "RELEASE_FORMATS", "LETTER_MISSING", "LABELS_FILE",
           "file_labels", "read_stat_file", "write_stat_file", "sas_format_program"]


#: SAS's own formats (no value labels): the name without its width, as pyreadstat gives it
_SAS_BUILTIN = frozenset({
    "", "$", "$CHAR", "$ASCII", "$UPCASE", "$HEX", "$QUOTE", "$VARYING", "$W", "BEST", "BESTD",
    "F", "W", "D", "E", "COMMA", "COMMAX", "DOLLAR", "DOLLARX", "EURO", "EUROX", "NLNUM",
    "NLMNY", "PERCENT", "PERCENTN", "Z", "ZD", "NEGPAREN", "PVALUE", "ROMAN", "WORDS", "WORDF",
    "HEX", "OCTAL", "BINARY", "SSN", "DATE", "DATETIME", "DATEAMPM", "DAY", "YEAR", "MONTH",
    "MONNAME", "MONYY", "QTR", "TIME", "TIMEAMPM", "TOD", "HHMM", "HOUR", "MMSS", "JULIAN",
    "JULDAY", "WEEKDATE", "WEEKDATX", "WEEKDAY", "WORDDATE", "WORDDATX", "DTDATE", "DTMONYY",
    "DTYEAR", "DTWKDATX", "NLDATE", "NLDATM", "NLTIME", "MDYAMPM", "PD", "PIB", "RB", "IB",
    "FLOAT", "YYMM", "YYMON", "YYQ"})
_SAS_DATE_FAMILIES = ("DDMMYY", "MMDDYY", "YYMMDD", "E8601", "B8601", "IS8601", "YYQ", "DT")


# ---- reading ----------------------------------------------------------------------------------


def read_stat_file(path: str | Path, *, numeric: Collection[str] = (),
                   missing_labels: Mapping[str, Sequence[str]] | None = None) -> pd.DataFrame:
    """Read a SAS (``.sas7bdat``, ``.xpt``), Stata (``.dta``) or SPSS (``.sav``, ``.zsav``)
    file; the rules: :doc:`/user_guide/data`, Files from SAS, Stata and SPSS.

    Parameters
    ----------
    path : path-like
        The file.
    numeric : collection of str
        Columns read as their codes (numbers) even where the file gives them value labels.
    missing_labels : mapping of str to sequence of str, optional
        ``{column: [label, ...]}``: levels of labelled columns declared missing (empty cells;
        an ordinal column whose missing levels are all declared stays ordinal).

    Returns
    -------
    DataFrame
        Labelled columns as pandas categoricals whose categories are the labels in declared
        order, with :class:`FileLabels` in ``attrs``.

    Raises
    ------
    ValidationError
        ``FILE_UNREADABLE`` (damaged, truncated or not of its format), ``FILE_ENCODING``.
    SchemaError
        ``VALUE_WITHOUT_LABEL``, ``DUPLICATE_VALUE_LABEL``, ``LETTER_MISSING_CODE_TAKEN``.
    """
    p = Path(path)
    fmt = STAT_FORMATS[p.suffix.lower()]
    prs = load_pyreadstat()
    read = {"sav": prs.read_sav, "zsav": prs.read_sav, "dta": prs.read_dta,
            "sas7bdat": prs.read_sas7bdat, "xpt": prs.read_xport}[fmt]
    # pyreadstat's transport reader has no user_missing: .A-.Z are read as empty there
    kw: dict[str, Any] = {} if fmt == "xpt" else {"user_missing": True}
    try:
        raw, meta = read(str(p), **kw)
    except pyreadstat_errors(prs) as err:
        if "encoding" in str(err):  # ReadStat's iconv refused a text (a label, most often)
            raise ValidationError(
                f"input file {str(p)!r} holds text that is not in the encoding it declares "
                f"({getattr(err, 'args', [''])[0]}), or is damaged. Save the file again in its "
                "declared encoding (SPSS: Unicode mode; Stata: unicode translate).",
                code="FILE_ENCODING") from err
        raise ValidationError(
            f"could not read {str(p)!r} as {FORMAT_NAMES[fmt]} file ({err}): it is damaged or "
            f"truncated, or not {FORMAT_NAMES[fmt]} file under another extension. Export it again "
            "from the software that wrote it.", code="FILE_UNREADABLE") from err
    expected = getattr(meta, "number_rows", None)
    if isinstance(expected, int) and expected > 0 and len(raw) != expected:
        raise ValidationError(
            f"could not read {str(p)!r} as {FORMAT_NAMES[fmt]} file: its header declares "
            f"{expected:,} records but {len(raw):,} could be read; it is damaged or truncated. "
            "Export it again from the software that wrote it.", code="FILE_UNREADABLE")
    try:
        return _read_columns(p, fmt, prs, read, raw, meta, kw, numeric, missing_labels)
    except (KeyError, IndexError, TypeError, ValueError, UnicodeError) as err:
        if isinstance(err, BayesRiskError):
            raise
        # a header whose fields contradict each other: not a bare traceback
        raise ValidationError(
            f"could not read {str(p)!r} as {FORMAT_NAMES[fmt]} file ({type(err).__name__}: "
            f"{err}): it is damaged or truncated. Export it again from the software that "
            "wrote it.", code="FILE_UNREADABLE") from err


def _read_columns(p: Path, fmt: str, prs: Any, read: Any, raw: pd.DataFrame, meta: Any,
                  kw: dict[str, Any], numeric: Collection[str],
                  missing_labels: Mapping[str, Sequence[str]] | None) -> pd.DataFrame:
    """The columns of a file read by ``read`` (:func:`read_stat_file`)."""
    _check_encoding(p, read, raw, meta, kw)
    sets, sas_formats = _label_sets(p, fmt, meta, prs)
    types = getattr(meta, "readstat_variable_types", None) or {}
    declared_numeric = set(numeric)
    info: dict[str, dict[str, Any]] = {k: {} for k in (
        "value_labels", "level_codes", "user_missing", "missing_codes", "missing_levels",
        "dates")}
    cols: dict[str, pd.Series] = {}
    for c in raw.columns:
        c = str(c)
        cols[c] = _column(p, c, raw[c], meta, sets.get(c), c in declared_numeric, info,
                          [str(v) for v in (missing_labels or {}).get(c, ())])
    df = pd.DataFrame(cols, index=pd.RangeIndex(len(raw)))
    measure = {str(k): str(v) for k, v in (getattr(meta, "variable_measure", None) or {}).items()
               if v and v != "unknown"}
    df.attrs[ATTRS_KEY] = LabelsAttrs(FileLabels(
        file_format=fmt,
        variable_labels={str(k): str(v) for k, v in (meta.column_names_to_labels or {}).items()
                         if v},
        measure=measure, file_label=str(getattr(meta, "file_label", None) or ""),
        text_columns=tuple(str(c) for c in raw.columns if types.get(c) == "string"),
        sas_formats={c: f for c, f in sas_formats.items() if c in info["level_codes"]},
        **info).to_dict())
    return df


def _check_encoding(p: Path, read: Any, raw: pd.DataFrame, meta: Any,
                    kw: dict[str, Any]) -> None:
    """Refuse a file whose text values are not in the encoding it declares (``FILE_ENCODING``):
    ReadStat drops the bytes of a value it cannot convert without a word (``Zoë`` read as
    ``Zo``; a label it refuses, read_stat_file's error). The texts are read again byte for byte
    (Latin-1) and decoded here, strictly."""
    enc = getattr(meta, "file_encoding", None)
    types = getattr(meta, "readstat_variable_types", None) or {}
    strings = [c for c in raw.columns if types.get(c) == "string"]
    try:
        codec = codecs.lookup(enc) if enc else None
    except LookupError:
        codec = None
    if codec is None or codec.name in ("latin-1", "iso8859-1") or not strings:
        return
    try:
        raw2, _ = read(str(p), encoding="LATIN1", usecols=strings, **kw)
    except pyreadstat_errors(load_pyreadstat()):  # read as declared a moment ago: not expected
        return

    def bad(ours: str, as_bytes: str) -> bool:
        try:
            return as_bytes.encode("latin-1").decode(codec.name) != ours
        except (UnicodeError, UnicodeEncodeError):
            return True

    for c in strings:
        av, bv = raw[c].astype(object).to_numpy(), raw2[c].astype(object).to_numpy()
        checked: dict[tuple[Any, Any], bool] = {}  # one decoding per distinct text
        for i in np.flatnonzero(pd.notna(bv) & (av != bv)):
            key = (av[i], bv[i])
            if key not in checked:
                checked[key] = isinstance(bv[i], str) and bad(str(av[i]), bv[i])
            if checked[key]:
                b = raw2[c]
                raise ValidationError(
                    f"input file {str(p)!r} declares the encoding {enc} but column {c!r} holds "
                    f"text in another one (record {int(i)}, bytes {b.iloc[i]!r}); read as "
                    f"{enc}, characters would be dropped without a word. Save the file again in "
                    f"{enc} (SPSS: Unicode mode; Stata: unicode translate) or with the encoding "
                    "its texts are in.", code="FILE_ENCODING")


def _label_sets(p: Path, fmt: str, meta: Any, prs: Any
                ) -> tuple[dict[str, dict[Any, str]], dict[str, str]]:
    """``{column: {code: label}}``: the value labels of each column, from the file (SPSS,
    Stata) or from the SAS format catalog beside it (``NAME.sas7bcat`` or
    ``formats.sas7bcat``), and the SAS format names that gave them; warning
    ``VALUE_LABELS_NOT_FOUND`` for a column whose labels are named but not found."""
    sets = {str(c): dict(v) for c, v in (meta.variable_value_labels or {}).items()}
    names: dict[str, str] = {}
    if fmt in ("sas7bdat", "xpt"):
        formats = {str(c): f for c, f in (meta.original_variable_types or {}).items() if f}
        catalog = next((f for f in (p.with_suffix(".sas7bcat"), p.parent / "formats.sas7bcat")
                        if f.is_file()), None)
        found: dict[str, dict[Any, str]] = {}
        if catalog is not None:
            try:
                _, cat = prs.read_sas7bcat(str(catalog))
                found = {str(k).upper(): dict(v) for k, v in (cat.value_labels or {}).items()}
            except pyreadstat_errors(prs) as err:
                raise ValidationError(f"could not read the SAS format catalog {str(catalog)!r} "
                                      f"beside {str(p)!r} ({err}); export it again, or remove it "
                                      "to read the codes as they are.",
                                      code="FILE_UNREADABLE") from err
        lost = []
        for c, f in formats.items():
            name = re.sub(r"\d*(\.\d*)?$", "", str(f)).upper()
            if name in found:
                sets[c], names[c] = found[name], name
            elif name not in _SAS_BUILTIN and not name.startswith(_SAS_DATE_FAMILIES):
                lost.append(f"{c} ({f})")
        if lost:
            where = (f"the catalog {str(catalog)!r} lacks them" if catalog is not None else
                     f"no catalog {p.with_suffix('.sas7bcat').name} or formats.sas7bcat lies "
                     "beside it")
            warnings.warn(DataWarning(
                f"input file {str(p)!r}: column(s) {', '.join(lost)} have SAS formats whose "
                f"value labels were not found ({where}); their codes are read as numbers "
                "(VALUE_LABELS_NOT_FOUND). Put the format catalog beside the file, or declare "
                "the columns' types (e.g. "
                + ("--categorical" if _on_cli() else "categorical=[...] in infer_schema")
                + ")."), stacklevel=4)
    else:
        named = {str(c): s for c, s in (getattr(meta, "variable_to_label", None) or {}).items()}
        lost = [f"{c} ({s})" for c, s in named.items() if s and c not in sets]
        if lost:
            warnings.warn(DataWarning(
                f"input file {str(p)!r}: column(s) {', '.join(lost)} name value-label sets the "
                "file does not hold; their codes are read as numbers (VALUE_LABELS_NOT_FOUND). "
                "Define the labels in the file, or declare the columns' types."), stacklevel=4)
    return sets, names


def _date_kind(s: pd.Series) -> str | None:
    if pd.api.types.is_datetime64_any_dtype(s.dtype):
        return "datetime"
    if s.dtype != object:
        return None
    first = next((v for v in s if v is not None and v == v), None)
    if isinstance(first, dt.datetime):
        return "datetime"
    if isinstance(first, dt.date):
        return "date"
    if isinstance(first, dt.time):
        return "time"
    return None


def _like_csv(values: np.ndarray) -> pd.Series:
    """Numbers as a CSV file of them is read: integers when every value is whole and none is
    missing (so that a table gives the same schema from either file)."""
    s = pd.Series(values, dtype=np.float64)
    if len(s) and not s.isna().any() and bool((s % 1 == 0).all()) and s.abs().max() < 2**53:
        return s.astype(np.int64)
    return s


def _column(p: Path, c: str, s: pd.Series, meta: Any, labels: dict[Any, str] | None,
            as_numbers: bool, info: dict[str, dict[str, Any]],
            declared_missing: Sequence[str] = ()) -> pd.Series:
    """One column of the file as the table holds it (``info`` gathers its declarations)."""
    kind = _date_kind(s)
    if kind is not None:
        info["dates"][c] = kind
        text = s.astype(str) if kind != "time" else s.map(lambda v: v.isoformat()
                                                          if isinstance(v, dt.time) else v)
        return pd.Series(np.where(s.isna(), None, text), dtype=object).astype("str")
    types = getattr(meta, "readstat_variable_types", None) or {}
    is_text = types.get(c) == "string"
    ranges = (getattr(meta, "missing_ranges", None) or {}).get(c) or []
    if is_text:
        # as in a CSV file, only an empty field is missing (the formats have no missing text)
        vals = s.astype(object).where(s.notna() & (s.astype(str) != ""), None)
        user = pd.Series(False, index=s.index)
        for r in ranges:
            user |= vals.isin([r["lo"]]) if r["lo"] == r["hi"] else pd.Series(False,
                                                                                 index=s.index)
        letters = pd.Series(None, index=s.index, dtype=object)
    else:
        if pd.api.types.is_numeric_dtype(s.dtype):  # no special missing value among them
            letters = pd.Series(None, index=s.index, dtype=object)
            vals = s.astype(np.float64)
        else:  # numbers and the letters of special missing values
            obj = s.astype(object)
            is_letter = obj.map(lambda v: isinstance(v, str)).astype(bool)
            letters = obj.where(is_letter, None)
            vals = pd.to_numeric(obj.where(~is_letter, None), errors="coerce").astype(np.float64)
        user = pd.Series(False, index=s.index)
        for r in ranges:
            user |= (vals >= float(r["lo"])) & (vals <= float(r["hi"]))
    if ranges:
        info["user_missing"][c] = [dict(r) for r in ranges]
    met_letters = sorted({str(v) for v in letters.dropna()})
    if met_letters and c not in info["user_missing"]:
        info["user_missing"][c] = met_letters
    if labels:
        info["value_labels"][c] = [(k, str(v)) for k, v in labels.items()]
    present = vals.notna() & ~user
    valid_keys = {k for k in (labels or {}) if not _is_missing_key(k, ranges, is_text)}
    if labels and valid_keys and not as_numbers:
        return _labelled(p, c, vals, letters, user, present, labels, ranges, is_text, meta, info,
                         declared_missing)
    if is_text:
        return vals.astype("str").where(vals.notna(), None) if vals.notna().any() else \
            pd.Series(vals, dtype=object)
    # a numeric column: user-missing values stay (they are the codes); letters become codes
    taken = [code for code in LETTER_MISSING.values() if (vals[present] == code).any()]
    if met_letters and taken:
        raise SchemaError(f"input file {str(p)!r}: column {c!r} holds the value {taken[0]:.0f}, "
                          "which bayes-risk uses for a special missing value (.a-.z); it "
                          "cannot keep both apart. Recode the value in the file.",
                          code="LETTER_MISSING_CODE_TAKEN")
    out = vals.to_numpy(copy=True)
    for letter in met_letters:
        out[(letters == letter).to_numpy()] = LETTER_MISSING[letter.lower()]
    codes = sorted({float(v) for v in vals[user].unique()}
                   | {float(r["lo"]) for r in ranges if r["lo"] == r["hi"]}
                   | {LETTER_MISSING[x.lower()] for x in met_letters})
    if codes:
        info["missing_codes"][c] = tuple(codes)
    return _like_csv(out)


def _is_missing_key(k: Any, ranges: list[dict[str, Any]], is_text: bool) -> bool:
    """Whether a labelled code is a missing-value declaration (a letter, a user-missing one)."""
    if not is_text and isinstance(k, str):
        return True
    for r in ranges:
        if is_text:
            if r["lo"] == r["hi"] and k == r["lo"]:
                return True
        elif float(r["lo"]) <= float(k) <= float(r["hi"]):
            return True
    return False


def _labelled(p: Path, c: str, vals: pd.Series, letters: pd.Series, user: pd.Series,
              present: pd.Series, labels: dict[Any, str], ranges: list[dict[str, Any]],
              is_text: bool, meta: Any, info: dict[str, dict[str, Any]],
              declared_missing: Sequence[str] = ()) -> pd.Series:
    """A labelled column as a categorical of its labels: the valid codes' labels in declared
    order, then one level per missing kind (its label, else its code as text)."""
    def key(v: Any) -> Any:
        return v if is_text or isinstance(v, str) else float(v)

    lab = {key(k): str(v) for k, v in labels.items()}
    valid = [k for k in lab if not _is_missing_key(k, ranges, is_text)]
    seen = pd.unique(vals[present].to_numpy())
    unlabelled = [v for v in seen if key(v) not in lab]
    if unlabelled:
        shown = ", ".join(code_text(v) for v in unlabelled[:5])
        more = f" and {len(unlabelled) - 5} more" if len(unlabelled) > 5 else ""
        n = int(vals[present].isin(unlabelled).sum())
        whole = [k for k in lab if not isinstance(k, str)]
        odd = [v for v in unlabelled if not isinstance(v, str) and np.isfinite(float(v))
               and not float(v).is_integer()]
        if odd and whole and all(float(k).is_integer() for k in whole):
            # a code every label gives as a whole number, held as 1.0625: changed bytes
            raise ValidationError(
                f"input file {str(p)!r} looks damaged: column {c!r} labels whole-number codes "
                f"only, but {n} record(s) hold {code_text(odd[0])}, which no software writes "
                "for a labelled code; bytes of the file were changed or lost. Export it again "
                "from the software that wrote it (reading the column as numbers would keep "
                "the damaged values).", code="FILE_UNREADABLE")
        raise SchemaError(
            f"input file {str(p)!r}: column {c!r} has value labels, but the value(s) {shown}"
            f"{more} ({n} record(s)) have none; a label set that does not cover the column's "
            "values cannot say its levels. Label every value in the file, or read the column "
            f"as numbers by declaring its type ({_declare(c)}).", code="VALUE_WITHOUT_LABEL")
    missing_keys = [k for k in lab if k not in valid]
    met = ([key(v) for v in pd.unique(vals[user].to_numpy())]
           + [str(v) for v in pd.unique(letters.dropna().to_numpy())])
    missing_keys += [k for k in met if k not in lab and k not in missing_keys]
    def text(k: Any) -> str:  # an unlabelled code's level: a text code as it is
        return str(k) if is_text else code_text(k)

    levels = [lab[k] for k in valid] + [lab.get(k, text(k)) for k in missing_keys]
    dup = pd.Series(levels)[pd.Series(levels).duplicated()].tolist()
    if dup:
        codes = [text(k) for k in [*valid, *missing_keys] if lab.get(k, text(k)) == dup[0]]
        raise SchemaError(
            f"input file {str(p)!r}: column {c!r} gives the label {dup[0]!r} to the codes "
            f"{', '.join(codes)}; as levels they would be merged into one. Give each code its "
            f"own label in the file, or read the column as numbers ({_declare(c)}).",
            code="DUPLICATE_VALUE_LABEL")
    keys = [*valid, *missing_keys]
    pos = np.full(len(vals), -1, dtype=np.int64)
    if is_text:
        pos = pd.Index(keys, dtype=object).get_indexer(vals.astype(object))
    else:
        nums = [k for k in keys if not isinstance(k, str)]
        idx = pd.Index(np.asarray(nums, dtype=np.float64))
        hit = idx.get_indexer(vals.to_numpy())
        where_num = np.array([keys.index(k) for k in nums] or [0], dtype=np.int64)
        ok = hit >= 0
        pos[ok] = where_num[hit[ok]]
        for letter in pd.unique(letters.dropna().to_numpy()):
            pos[(letters == letter).to_numpy()] = keys.index(str(letter))
    pos[vals.isna().to_numpy() & letters.isna().to_numpy()] = -1
    ordinal = (getattr(meta, "variable_measure", None) or {}).get(c) == "ordinal"
    info["level_codes"][c] = [(lv, k) for lv, k in zip(levels, keys, strict=True)]
    kept_missing = [lv for lv in levels[len(valid):] if lv not in declared_missing]
    if missing_keys:
        info["missing_levels"][c] = tuple(levels[len(valid):])
        if ordinal and kept_missing:  # a kind of missing value has no place in the order
            ordinal = False
            shown = ", ".join(repr(v) for v in kept_missing)
            warnings.warn(DataWarning(
                f"input file {str(p)!r}: column {c!r} is ordinal in the file but holds the "
                f"missing-value level(s) {shown}, which have no place in its order; it is read "
                "as categorical, unordered (MISSING_LEVELS_UNORDERED). To keep it ordinal, "
                "declare those levels missing (they become empty cells) and the column "
                f"ordinal: {_missing_label_hint(c, kept_missing[0])}."), stacklevel=5)
    out = pd.Series(pd.Categorical.from_codes(pos, categories=levels, ordered=ordinal))
    gone = [lv for lv in levels if lv in declared_missing]
    return out.cat.remove_categories(gone) if gone else out


def _missing_label_hint(c: str, level: str) -> str:
    from bayes_risk.exceptions import arg_name

    return (f"{arg_name('missing_labels', f'{{{c!r}: [{level!r}]}}', cli=f'{c}={level}')} "
            f"with {arg_name('ordinal', [c], cli=c)}")


def _declare(c: str) -> str:
    from bayes_risk.exceptions import arg_name, has_option

    if not _on_cli():
        return f"read_table(..., numeric=[{c!r}])"
    if has_option("count"):
        return f"{arg_name('count', [c], cli=c)} or {arg_name('continuous', [c], cli=c)}"
    return f"--count {c} or --continuous {c} of the commands that take column types"


def _on_cli() -> bool:
    from bayes_risk.exceptions import on_command_line

    return on_command_line()
