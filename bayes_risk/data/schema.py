"""Column schema: type, role and levels of every column (:doc:`/user_guide/data`)."""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Annotated, Any, Literal

import numpy as np
import pandas as pd

from bayes_risk._constraints import InstanceOf, Options, SequenceOf, check_value
from bayes_risk._specs import cli_option
from bayes_risk.exceptions import (
    SchemaError,
    ValidationError,
    arg_name,
    has_option,
    on_command_line,
)

__all__ = [
    "ColumnType", "ColumnRole", "ColumnSpec", "Schema", "infer_schema", "check_column_labels",
    "check_confusable_names", "check_numeric_text", "check_names", "CATEGORICAL_TYPES",
    "NUMERIC_TYPES"
]

ColumnType = Literal["categorical", "ordinal", "count", "continuous"]
ColumnRole = Literal["synthesized", "unsynthesized"]
COLUMN_TYPES: tuple[str, ...] = ("categorical", "ordinal", "count", "continuous")
COLUMN_ROLES: tuple[str, ...] = ("synthesized", "unsynthesized")
CATEGORICAL_TYPES = frozenset({"categorical", "ordinal"})
NUMERIC_TYPES = frozenset({"count", "continuous"})
#: the levels of a categorical column
_LEVELS = SequenceOf(InstanceOf(object, "a level"), "levels", min_len=0, unique=True)


def _level_to_json(v: Any) -> Any:
    if isinstance(v, np.floating):
        return float(v)
    return v.item() if isinstance(v, (np.integer, np.bool_)) else v


def _sort_levels(values: Iterable[Any]) -> tuple[Any, ...]:
    vals = list(dict.fromkeys(values))
    try:
        return tuple(sorted(vals))
    except TypeError:  # mixed types: keep a deterministic order by string form
        return tuple(sorted(vals, key=lambda v: (type(v).__name__, str(v))))


def did_you_mean(name: str, options: Iterable[str]) -> str:
    """A ``" Did you mean 'x'?"`` hint for a misspelt name (empty when nothing is close); a name
    that prints as ``name`` but differs in invisible characters or look-alike letters of another
    script is named with the characters that differ (:func:`~bayes_risk.data.names.name_key`)."""
    from bayes_risk.data.names import name_difference, same_as_typed

    name, opts = str(name), [str(o) for o in options]
    alike = same_as_typed(name, opts)
    if alike:
        why = [d for d in (name_difference(name, alike[0]), name_difference(alike[0], name)) if d]
        if why:
            return f" Did you mean {alike[0]!r}? It prints like {name!r}: {'; '.join(why)}."
        # the names differ in case or white space alone: say which (names are matched exactly)
        other = alike[0]
        differs = ("in case" if name.casefold() == other.casefold() else
                   "in white space" if name.split() == other.split() else
                   "in case and white space")
        return (f" Did you mean {other!r}? Column names are matched exactly, and the two differ "
                f"{differs}.")
    # compared without case: 'agee' is close to 'Age'
    folded = {o.casefold(): o for o in reversed(opts)}
    close = [folded[c] for c in difflib.get_close_matches(name.casefold(), folded, n=1)]
    odd = name_difference("", name) if not name.isascii() else ""
    return (f" Did you mean {close[0]!r}?" if close else "") + (
        f" The name given: {odd}." if odd else "")


def check_names(given: str | Iterable[str], names: Sequence[str], argument: str) -> list[str]:
    """``given`` as a list when each is one of the column ``names`` (a string: one name, never
    its letters); else ``UNKNOWN_COLUMN`` naming the argument, the first other name and a close
    match (the one place this is checked)."""
    out = [given] if isinstance(given, str) else list(given)
    unknown = [n for n in out if n not in names]
    if unknown:
        raise SchemaError(f"{arg_name(argument)}: column {unknown[0]!r} is not in the data "
                          f"(columns: {list(names)})." + did_you_mean(unknown[0], names),
                          code="UNKNOWN_COLUMN")
    return out


@dataclass(frozen=True)
class ColumnSpec:
    """Type, role and levels of one column.

    Parameters
    ----------
    name : str
        Column name.
    type : {"categorical", "ordinal", "count", "continuous"}
        Measurement type.
    role : {"synthesized", "unsynthesized"}
        Whether the synthesizer replaces the column's values.
    levels : tuple, optional
        Ordered levels for categorical/ordinal columns (the code of a value is its position).
    known : bool
        Whether the intruder knows the column (identification risk).
    missing_codes : tuple of float
        Values of a count or continuous column that stand for a missing value.
    keep_unused_levels : bool
        Keep the levels no record holds when a model is fitted (default: dropped,
        ``UNUSED_LEVEL``).
    """

    name: str
    type: ColumnType
    role: ColumnRole = "unsynthesized"
    levels: tuple[Any, ...] | None = None
    known: bool = False
    missing_codes: tuple[float, ...] = ()
    keep_unused_levels: bool = False

    def __post_init__(self) -> None:
        # the constraints named by the column, as a schema's errors name it
        check_value(self.type, Options(COLUMN_TYPES), f"type of column {self.name!r}")
        check_value(self.role, Options(COLUMN_ROLES), f"role of column {self.name!r}")
        if self.type in CATEGORICAL_TYPES and self.levels is not None:
            object.__setattr__(self, "levels", tuple(check_value(
                self.levels, _LEVELS, f"levels of column {self.name!r}")))
        if self.type in NUMERIC_TYPES and self.levels is not None:
            raise ValidationError(f"column {self.name!r} is {self.type}; only categorical/ordinal "
                                  "columns have levels.")
        object.__setattr__(self, "missing_codes", tuple(float(v) for v in self.missing_codes))
        if self.missing_codes and self.type not in NUMERIC_TYPES:
            raise SchemaError(f"column {self.name!r} is {self.type} but has missing-value codes "
                              f"{list(self.missing_codes)}; codes are declared for count and "
                              "continuous columns (in a categorical column an empty cell is the "
                              "missing value and any other value is a level).",
                              code="MISSING_CODES_TYPE")

    @property
    def is_categorical(self) -> bool:
        """True for categorical and ordinal columns (compared by exact equality of codes)."""
        return self.type in CATEGORICAL_TYPES

    @property
    def n_levels(self) -> int:
        """Number of levels ``d_j`` (categorical/ordinal only)."""
        if self.levels is None:
            raise ValidationError(f"column {self.name!r} has no levels (type {self.type}).")
        return len(self.levels)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready description."""
        out = {
            "name": self.name,
            "type": self.type,
            "role": self.role,
            "levels": None if self.levels is None else [_level_to_json(v) for v in self.levels],
            "known": self.known,
        }
        if self.missing_codes:
            out["missing_codes"] = list(self.missing_codes)
        if self.keep_unused_levels:
            out["keep_unused_levels"] = True
        return out

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> ColumnSpec:
        """Inverse of :meth:`to_dict`."""
        levels = d.get("levels")
        return cls(name=d["name"], type=d["type"], role=d.get("role", "unsynthesized"),
                   levels=None if levels is None else tuple(levels),
                   known=bool(d.get("known", False)),
                   missing_codes=tuple(d.get("missing_codes") or ()),
                   keep_unused_levels=bool(d.get("keep_unused_levels", False)))


@dataclass(frozen=True)
class Schema:
    """Ordered column specifications of a table.

    Build one with :func:`infer_schema` and adjust it with
    :meth:`with_roles`, :meth:`with_types` and :meth:`with_levels`.
    """

    columns: tuple[ColumnSpec, ...] = field(default_factory=tuple)

    def __post_init__(self) -> None:
        names = [c.name for c in self.columns]
        dup = {n for n in names if names.count(n) > 1}
        if dup:
            # an argument error (the columns given); INVALID_ARGUMENT also keeps a hand-edited
            # model.json with a name twice a damaged model folder (models/trees/io.py)
            raise ValidationError(f"schema has duplicate column names: {sorted(dup)}.",
                                  code="INVALID_ARGUMENT")
        object.__setattr__(self, "columns", tuple(self.columns))

    @property
    def names(self) -> list[str]:
        """Column names in order."""
        return [c.name for c in self.columns]

    def __len__(self) -> int:
        return len(self.columns)

    def __iter__(self):  # noqa: D105
        return iter(self.columns)

    def __contains__(self, name: object) -> bool:
        return name in self.names

    def __getitem__(self, name: str) -> ColumnSpec:
        for c in self.columns:
            if c.name == name:
                return c
        raise SchemaError(f"column {name!r} is not in the schema (columns: {self.names})." +
                          did_you_mean(name, self.names), code="UNKNOWN_COLUMN")

    def check_columns(self, names: Iterable[str], argument: str = "columns") -> list[str]:
        """Check that every name is a column (``SchemaError`` naming a close match); return
        them as a list."""
        return check_names(names, self.names, argument)

    @property
    def synthesized(self) -> list[str]:
        """Names of synthesized columns (``S``)."""
        return [c.name for c in self.columns if c.role == "synthesized"]

    @property
    def unsynthesized(self) -> list[str]:
        """Names of unsynthesized columns (``US``)."""
        return [c.name for c in self.columns if c.role == "unsynthesized"]

    @property
    def categorical(self) -> list[str]:
        """Names of categorical and ordinal columns."""
        return [c.name for c in self.columns if c.is_categorical]

    @property
    def numeric(self) -> list[str]:
        """Names of count and continuous columns."""
        return [c.name for c in self.columns if not c.is_categorical]

    @property
    def known(self) -> list[str]:
        """Names of columns known to the intruder."""
        return [c.name for c in self.columns if c.known]

    @property
    def missing_codes(self) -> dict[str, tuple[float, ...]]:
        """``{column: codes}`` of the columns with missing-value codes."""
        return {c.name: c.missing_codes for c in self.columns if c.missing_codes}

    def with_missing_codes(self, codes: Mapping[str, Any]) -> Schema:
        """Return a copy with the missing-value codes (``{column: codes}``) of some columns set."""
        from bayes_risk.data.missing import check_missing_codes

        new = check_missing_codes(codes, self.names)
        return Schema(tuple(
            replace(c, missing_codes=new[c.name]) if c.name in new else c for c in self.columns
        ))

    def with_roles(self, synthesized: Iterable[str] | None = None, *,
                   known: Iterable[str] | None = None) -> Schema:
        """Return a copy whose synthesized (and optionally known) columns are exactly these."""
        cols = list(self.columns)
        if synthesized is not None:
            syn = set(self.check_columns(synthesized, "synthesized"))
            cols = [
                replace(c, role="synthesized" if c.name in syn else "unsynthesized") for c in cols
            ]
        if known is not None:
            kn = set(self.check_columns(known, "known"))
            cols = [replace(c, known=c.name in kn) for c in cols]
        return Schema(tuple(cols))

    def with_types(self, **types: str) -> Schema:
        """Return a copy with some column types changed (levels are dropped for numeric types)."""
        self.check_columns(types, "types")
        cols = []
        for c in self.columns:
            if c.name in types:
                t = types[c.name]
                lv = c.levels if t in CATEGORICAL_TYPES else None
                mc = c.missing_codes if t in NUMERIC_TYPES else ()
                cols.append(replace(c, type=t, levels=lv, missing_codes=mc))  # type: ignore[arg-type]
            else:
                cols.append(c)
        return Schema(tuple(cols))

    def with_levels(self, levels: Mapping[str, Sequence[Any]]) -> Schema:
        """Return a copy with the levels of some categorical columns replaced."""
        self.check_columns(levels, "levels")
        cols = [
            replace(c, levels=tuple(levels[c.name])) if c.name in levels else c
            for c in self.columns
        ]
        return Schema(tuple(cols))

    def keeping_levels(self) -> Schema:
        """A copy whose categorical columns keep every level when a model is fitted
        (``ColumnSpec.keep_unused_levels``)."""
        return Schema(tuple(replace(c, keep_unused_levels=True) if c.is_categorical else c
                            for c in self.columns))

    def overridden(self, inferred: Schema, types: Iterable[str] = (),
                   codes: Iterable[str] = ()) -> tuple[Schema, list[str]]:
        """This schema (a release manifest's) with the columns ``types`` and ``codes`` taken
        from ``inferred``: a column of unchanged type keeps its levels (their order is the
        release's) and takes the inferred missing-value codes if among ``codes``; one of another
        type is the inferred column with this schema's role.

        Parameters
        ----------
        inferred : Schema
            The table's schema inferred with the given types and missing-value codes.
        types, codes : iterable of str
            The columns whose type, and whose missing-value codes, were given.

        Returns
        -------
        (Schema, list of str)
            The schema; each column whose type or codes changed (``"Age (count -> continuous)"``).
        """
        given, coded = set(types), set(codes)
        cols, changed = [], []
        for c in self.columns:
            if c.name not in given and c.name not in coded:
                cols.append(c)
                continue
            new = inferred[c.name]
            if new.type == c.type and c.is_categorical:
                new = c
            elif new.type == c.type:
                new = replace(c, missing_codes=new.missing_codes if c.name in coded
                              else c.missing_codes)
            else:
                new = replace(new, role=c.role, known=c.known)
            if (new.type, new.missing_codes) != (c.type, c.missing_codes):
                what = (f"{c.type} -> {new.type}" if new.type != c.type else
                        f"missing-value codes {list(c.missing_codes)} -> "
                        f"{list(new.missing_codes)}")
                changed.append(f"{c.name} ({what})")
            cols.append(new)
        return Schema(tuple(cols)), changed

    def select(self, names: Iterable[str]) -> Schema:
        """Sub-schema with the named columns, in the given order."""
        return Schema(tuple(self[n] for n in self.check_columns(names)))

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready description (round-trips through :meth:`from_dict`)."""
        return {"columns": [c.to_dict() for c in self.columns]}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Schema:
        """Inverse of :meth:`to_dict`."""
        return cls(tuple(ColumnSpec.from_dict(c) for c in d["columns"]))


#: the constraint of a ``schema=`` argument (``check_value(schema, [SCHEMA, None], "schema")``
#: where ``None`` infers one)
SCHEMA = InstanceOf(Schema, "a bayes_risk Schema")
#: the constraint of a table argument
FRAME = InstanceOf(pd.DataFrame, "a pandas DataFrame")


def _infer_type(s: pd.Series) -> str:
    if isinstance(s.dtype, pd.CategoricalDtype):
        return "ordinal" if s.dtype.ordered else "categorical"
    if pd.api.types.is_bool_dtype(s.dtype):
        return "categorical"
    if pd.api.types.is_integer_dtype(s.dtype):
        vals = s.dropna()
        return "count" if (len(vals) == 0 or vals.min() >= 0) else "continuous"
    if pd.api.types.is_float_dtype(s.dtype):
        return "continuous"
    return "categorical"


def _not_numbers(s: pd.Series) -> tuple[np.ndarray, int]:
    """Positions of the non-missing cells of ``s`` that do not parse as numbers, and how many
    cells do."""
    vals = s.dropna()
    parsed = pd.to_numeric(vals.astype(str).str.strip(), errors="coerce")
    bad = np.flatnonzero(s.notna().to_numpy())[parsed.isna().to_numpy()]
    return bad, int(parsed.notna().sum())


def _describe_cells(s: pd.Series, rows: np.ndarray, limit: int = 5) -> str:
    shown = ", ".join(f"record {int(r)}: {str(s.iloc[int(r)])!r}" for r in rows[:limit])
    more = f" and {len(rows) - limit} more" if len(rows) > limit else ""
    return f"{shown}{more}"


def check_numeric_text(c: str, s: pd.Series, declared: str | None) -> None:
    """Refuse a text column of numbers but for a few stray cells (not inferred a factor), and
    any text in a column ``declared`` continuous or count (``NOT_A_NUMBER``)."""
    if pd.api.types.is_numeric_dtype(s.dtype) or isinstance(s.dtype, pd.CategoricalDtype):
        return
    if pd.api.types.is_bool_dtype(s.dtype):
        return
    bad, n_num = _not_numbers(s)
    if declared in ("continuous", "count"):
        if len(bad):
            raise SchemaError(f"column {c!r} was declared {declared} but {len(bad)} value(s) are "
                              f"not numbers ({_describe_cells(s, bad)}; records are numbered from "
                              "0); fix them or leave them empty (missing).", code="NOT_A_NUMBER")
        return
    if declared is not None or not len(bad):
        return
    if n_num >= 0.5 * (n_num + len(bad)) and len(bad) <= max(1, 0.05 * (n_num + len(bad))):
        raise SchemaError(f"column {c!r} holds numbers except {len(bad)} value(s) "
                          f"({_describe_cells(s, bad)}; records are numbered from 0): fix the "
                          "value(s) (or leave them empty for missing), or declare the column's "
                          f"type, e.g. {arg_name('categorical', [c], cli=c)} if it really holds "
                          "labels.", code="STRAY_TEXT_IN_NUMERIC")


def _levels_of(s: pd.Series) -> tuple[Any, ...]:
    if isinstance(s.dtype, pd.CategoricalDtype):
        return tuple(_level_to_json(v) for v in s.dtype.categories)
    values = [_level_to_json(v) for v in pd.unique(s.dropna())]
    # a CSV column of integer codes with missing values is read as float: its levels are the
    # integers written in the file (1, not 1.0, in model.json and in the synthetic data)
    if values and all(isinstance(v, float) and v.is_integer() for v in values):
        values = [int(v) for v in values]
    return _sort_levels(values)


def check_column_labels(df: Any, name: str = "the original") -> None:
    """Refuse a table whose column labels cannot name variables: a ``MultiIndex``
    (``MULTIINDEX_COLUMNS``) or a name used twice (``DUPLICATE_COLUMN``)."""
    if not isinstance(df, pd.DataFrame):
        return  # the callers' own type checks say what was expected
    if isinstance(df.columns, pd.MultiIndex):
        raise ValidationError(f"{name} has {df.columns.nlevels}-level column labels (a "
                              f"MultiIndex, e.g. {df.columns[0]!r}); give one name per column "
                              "(flatten them, e.g. df.columns = ['_'.join(map(str, c)) for c in "
                              "df.columns]).", code="MULTIINDEX_COLUMNS")
    odd = [c for c in df.columns if not isinstance(c, str)]
    if odd:  # 1 and '1' would be two names, and an option's text could name neither
        raise ValidationError(
            f"{name} has column names that are not text ({', '.join(map(repr, odd[:5]))}"
            f"{' ...' if len(odd) > 5 else ''}, {type(odd[0]).__name__}); options and reports "
            "name columns by text. Name them, e.g. df.columns = df.columns.astype(str), or "
            "read the table with its header.", code="COLUMN_NAMES_NOT_TEXT")
    dup = df.columns[df.columns.duplicated()].unique().tolist()
    if dup:
        raise ValidationError(f"{name} has more than one column named "
                              f"{', '.join(map(repr, dup))}; every column needs a name of its own "
                              "(rename or drop the copies).", code="DUPLICATE_COLUMN")
    check_confusable_names([str(c) for c in df.columns], name)


def check_confusable_names(names: Sequence[str], where: str) -> None:
    """Refuse names a reader cannot tell apart: names that differ only in case or white space
    (``'Income'``, ``'income '``), in invisible characters or in look-alike letters of another
    script (``'Age'`` and a Cyrillic ``'Аge'``; :func:`~bayes_risk.data.names.name_key`): an
    option could name one while the user meant the other (``CONFUSABLE_COLUMN_NAMES``)."""
    from bayes_risk.data.names import name_difference, name_key

    groups: dict[str, list[str]] = {}
    for n in names:
        groups.setdefault(name_key(n), []).append(n)
    clash = [g for g in groups.values() if len(g) > 1]
    if clash:
        shown = "; ".join(" and ".join(map(repr, g)) for g in clash)
        odd = [d for g in clash for n in g[1:] for d in (name_difference(g[0], n),
                                                         name_difference(n, g[0])) if d]
        raise ValidationError(f"{where} has columns whose names print alike ({shown}"
                              + (f"; {'; '.join(odd)}" if odd else "")
                              + "): they differ only in case, white space, invisible characters "
                              "or look-alike letters, so options, reports and summaries could "
                              "not tell them apart, and one would be treated as the other. "
                              "Rename one of each (or drop the copy).",
                              code="CONFUSABLE_COLUMN_NAMES")


def infer_schema(
    df: pd.DataFrame, *,
    categorical: Annotated[Iterable[str] | None, cli_option(
        "--categorical", "columns to treat as unordered categorical (e.g. integer-coded "
        "factors)", nargs="+", metavar="COL")] = None,
    ordinal: Annotated[Iterable[str] | None, cli_option(
        "--ordinal", "columns to treat as ordered categorical", nargs="+", metavar="COL")] = None,
    count: Annotated[Iterable[str] | None, cli_option(
        "--count", "columns to treat as non-negative integer counts", nargs="+",
        metavar="COL")] = None,
    continuous: Annotated[Iterable[str] | None, cli_option(
        "--continuous", "columns to treat as continuous", nargs="+", metavar="COL")] = None,
    synthesized: Iterable[str] | None = None,
    known: Iterable[str] | None = None,
    levels: Mapping[str, Sequence[Any]] | None = None,
    missing_codes: Mapping[str, Any] | None = None,
    keep_unused_levels: Annotated[bool | Iterable[str], cli_option(
        "--keep-unused-levels", "keep the levels of these categorical columns (all, without "
        "COL) that no record holds, the unused categories of a Parquet file's categorical "
        "column; by default the model drops them with warning UNUSED_LEVEL, since a model with a "
        "prior over every level (DPMPM) would release them", nargs="*", metavar="COL",
        parse=lambda cols: list(cols) or True)] = False,
    categorical_only: bool = False,
) -> Schema:
    """Infer a :class:`Schema` from a DataFrame, with explicit overrides.

    Integer-coded factors (e.g. ``Urban`` coded 1/2) must be named in ``categorical``
    (inference rules: :doc:`/user_guide/data`).

    Parameters
    ----------
    df : DataFrame
        The confidential table.
    categorical, ordinal, count, continuous : iterable of str, optional
        Columns forced to that type.
    synthesized : iterable of str, optional
        Columns the synthesizer replaces (default: none).
    known : iterable of str, optional
        Columns the intruder knows.
    levels : mapping, optional
        Explicit level order for categorical/ordinal columns.
    missing_codes : mapping, optional
        ``{column: code or [codes]}``: values of numeric columns that stand for a missing value
        (synthpop's ``cont.na``). A table read from a SAS, Stata or SPSS file brings its own
        (user-defined and special missing values, :func:`~bayes_risk.data.file_labels`), to
        which these are added; they apply to the columns whose type is numeric.
    keep_unused_levels : bool or iterable of str
        Categorical columns (``True``: all) whose unused levels a fitted model keeps.
    categorical_only : bool, default False
        For a model of categorical columns only (``ModelInfo.categorical_only``, DPMPM): every
        column not forced to a type is categorical (``WRONG_DTYPE`` if its values are not whole
        numbers).

    Returns
    -------
    Schema

    Raises
    ------
    SchemaError
        If a named column is not in ``df`` or is forced to two types.
    ValidationError
        If ``df`` has a column ``MultiIndex`` or two columns of the same name.
    """
    check_value(df, FRAME, "df")
    check_column_labels(df, "the table")
    names = [str(c) for c in df.columns]
    from bayes_risk.data.missing import check_missing_codes, code_mask

    codes = check_missing_codes(missing_codes, names)
    # a SAS, Stata or SPSS file's own missing-value codes (data.statfiles), with those given
    file_codes = _file_missing_codes(df, names)
    all_codes = {**file_codes, **{c: tuple(dict.fromkeys([*file_codes.get(c, ()), *v]))
                                  for c, v in codes.items()}}
    keep = _keep_unused(keep_unused_levels, names)
    forced: dict[str, str] = {}
    for typ, cols in (
        ("categorical", categorical),
        ("ordinal", ordinal),
        ("count", count),
        ("continuous", continuous),
    ):
        for c in check_names(cols or (), names, typ):
            if c in forced and forced[c] != typ:
                raise SchemaError(f"column {c!r} is declared both {forced[c]} and {typ}.",
                                  code="OPTION_CONFLICT")
            forced[c] = typ
    for c in (c for c in names if categorical_only and c not in forced):
        if pd.api.types.is_float_dtype(df[c]) and not (df[c].dropna() % 1 == 0).all():
            leave = " (--columns)" if on_command_line() and has_option("columns") else ""
            raise ValidationError(f"column {c!r} has values that are not whole numbers, and the "
                                  "model takes categorical columns only (ModelInfo.categorical_"
                                  f"only; DPMPM: Si & Reiter 2013). Leave it out of the table"
                                  f"{leave}, or declare it {arg_name('categorical', [c], cli=c)}"
                                  " to treat each value as a category.", code="WRONG_DTYPE")
        forced[c] = "categorical"
    specs = []
    for c in names:
        s = df[c]
        if c in all_codes and pd.api.types.is_numeric_dtype(s.dtype):
            hit = code_mask(s, all_codes[c])
            if hit.any():  # infer the type from the values that are not codes
                s = s.astype("Int64" if pd.api.types.is_integer_dtype(s.dtype) else np.float64)
                s = s.mask(pd.Series(hit, index=s.index))
        check_numeric_text(c, s, forced.get(c))
        typ = forced.get(c) or _infer_type(s)
        lv: tuple[Any, ...] | None = None
        if typ in CATEGORICAL_TYPES:
            lv = tuple(levels[c]) if levels and c in levels else _levels_of(s)
        elif typ == "count":
            vals = pd.to_numeric(s, errors="coerce").dropna()
            if not pd.api.types.is_numeric_dtype(s.dtype):
                raise SchemaError(f"column {c!r} was declared count but has non-numeric dtype "
                                  f"{s.dtype}.", code="WRONG_DTYPE")
            if len(vals) and ((vals < 0).any() or (np.asarray(vals) % 1 != 0).any()):
                raise SchemaError(f"column {c!r} was declared count but holds negative or "
                                  "non-integer values (e.g. "
                                  f"{vals[(vals < 0) | (vals % 1 != 0)].iloc[0].item()!r}); "
                                  "expected integers >= 0.", code="WRONG_DTYPE")
        elif typ == "continuous" and not pd.api.types.is_numeric_dtype(s.dtype):
            raise SchemaError(f"column {c!r} was declared continuous but has non-numeric dtype "
                              f"{s.dtype}.", code="WRONG_DTYPE")
        if c in codes and typ not in NUMERIC_TYPES:
            raise SchemaError(f"{arg_name('missing_codes')}: column {c!r} is {typ}; codes are "
                              "declared for count and continuous columns (declare its type, e.g. "
                              f"{arg_name('continuous', [c], cli=c)}, or leave the cells empty).",
                              code="MISSING_CODES_TYPE")
        specs.append(ColumnSpec(name=c, type=typ, levels=lv,  # type: ignore[arg-type]
                                # a file's codes of a column declared categorical are levels
                                missing_codes=all_codes.get(c, ()) if typ in NUMERIC_TYPES
                                else (),
                                keep_unused_levels=lv is not None and c in keep))
    schema = Schema(tuple(specs))
    if synthesized is not None or known is not None:
        schema = schema.with_roles(synthesized, known=known)
    return schema


def _file_missing_codes(df: pd.DataFrame, names: Sequence[str]) -> dict[str, tuple[float, ...]]:
    """The missing-value codes a SAS, Stata or SPSS file declared for the numeric columns of
    ``df`` (read by :func:`~bayes_risk.data.read_table`; none for any other table)."""
    from bayes_risk.data.statfiles import file_labels

    labels = file_labels(df)
    if labels is None:
        return {}
    return {c: v for c, v in labels.missing_codes.items()
            if c in names and pd.api.types.is_numeric_dtype(df[c].dtype)}


def _keep_unused(keep: bool | Iterable[str], names: Sequence[str]) -> set[str]:
    """The columns of ``keep_unused_levels`` (``True``: every column), checked."""
    if isinstance(keep, (bool, np.bool_)):
        return set(names) if keep else set()
    return set(check_names([keep] if isinstance(keep, str) else keep, names,
                           "keep_unused_levels"))
