"""Identification risk given the selection metadata ``R`` (Hu 2019 §4.1, §4.2.4).

The intruder knows why records were selected for synthesis: which released records were
synthesized, and whether each target was selected (a rule on its known values, such as the
small cells of Hawala 2008, or the selected records themselves). A target known to be
unselected was released unchanged, so it can only be a released unselected record holding its
known values exactly; one known to be selected can only be a synthesized record. This module
states that knowledge as one more known, unsynthesized column of every table — matched exactly
by the engine, whatever the options — so the counts ``c``, the own-record flags ``T`` and the
population counts are the engine's own, restricted. See :doc:`/methods/identification`
(Identification given the selection metadata R).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from bayes_risk._constraints import check_value
from bayes_risk.data.alignment import comparable_values
from bayes_risk.data.normalise import as_synthetic_list
from bayes_risk.data.schema import SCHEMA, ColumnSpec, Schema, infer_schema
from bayes_risk.data.validate import record_mask
from bayes_risk.exceptions import NotSupportedError, SchemaError, ValidationError, arg_name
from bayes_risk.membership.selection import SelectionRule, as_selection

__all__ = ["SELECTION_COLUMN", "KnownSelection", "release_rule", "condition_on_selection",
           "conditioned"]

#: the column that carries what the intruder knows of R (matched exactly, never synthesized)
SELECTION_COLUMN = "selected (R)"


@dataclass(frozen=True)
class KnownSelection:
    """What the intruder knows of the selection: how it was given and what it selects."""

    #: the rule or records, as the settings describe them
    description: str
    #: ``"release"`` (the manifest's rule), ``"rule"`` (a rule given) or ``"records"``
    source: str
    n_selected: int
    n_records: int
    #: targets the intruder knows to be selected (the others: known to be unselected)
    n_targets_selected: int
    n_targets: int


def _keys(table: pd.DataFrame, columns: Sequence[str]) -> np.ndarray:
    """One text key per row of ``table`` on ``columns`` (2 and 2.0 alike, missing alike)."""
    parts = [comparable_values(table[c].reset_index(drop=True)).astype(str) for c in columns]
    if not parts:
        return np.full(len(table), "", dtype=object)
    out = parts[0].astype(object)
    for p in parts[1:]:
        out = out + "\x1f" + p.astype(object)
    return out


def _in_cells(table: pd.DataFrame, *, columns: tuple[str, ...],
              cells: tuple[str, ...]) -> np.ndarray:
    """Whether each record's identifying values form one of the selected ``cells``."""
    return np.isin(_keys(table, columns), np.asarray(cells, dtype=object))


def release_rule(synthetic: Any) -> SelectionRule | None:
    """The selection rule a release's manifest records, else ``None``.

    A small-cell PMM release (Hawala 2008) records its identifying variables, threshold and
    sensitive cells: a record was selected when its identifying values form one of those cells.

    Parameters
    ----------
    synthetic : SyntheticData or other
        The release (anything else records no rule).

    Returns
    -------
    SelectionRule or None
        ``kind="cells"``; its function evaluates the rule on a table of the identifying columns.
    """
    extra = getattr(synthetic, "extra", None) or {}
    cells, ivs = extra.get("sensitive_cells"), extra.get("identifying")
    if cells is None or not ivs:
        return None
    columns = tuple(str(c) for c in ivs)
    table = pd.DataFrame(list(cells), columns=[*columns, "count"]) if cells else \
        pd.DataFrame({c: [] for c in columns})
    keys = tuple(_keys(table, columns)) if len(table) else ()
    desc = (f"small cells of {', '.join(columns)} (count <= {extra.get('threshold')}; "
            f"{len(keys)} cell(s), the release's manifest)")

    def rule(t: pd.DataFrame) -> np.ndarray:
        return _in_cells(t, columns=columns, cells=keys)

    rule.columns = columns  # type: ignore[attr-defined]  # what the intruder must know
    return SelectionRule("cells", desc, rule)


@dataclass
class Conditioned:
    """The inputs of the engine with the selection column, and what the intruder knows."""

    original: pd.DataFrame
    synthetic: list[pd.DataFrame] | None
    known: list[str]
    synthesized: list[str]
    schema: Schema
    population: Any
    knowledge: KnownSelection

    def annotate(self, result: Any) -> Any:
        """``result`` with what the intruder knew of the selection in its settings."""
        result.settings["selection"] = dataclasses.asdict(self.knowledge)
        return result


def _status(rule: SelectionRule, table: pd.DataFrame, known: list[str], what: str) -> np.ndarray:
    """The rule on ``table``'s known columns: what the intruder can evaluate on a target."""
    def not_known(columns: str) -> ValidationError:
        return ValidationError(
            f"the selection ({rule.description}) reads {columns} that the intruder does not "
            f"know (known: {known}): the intruder cannot tell whether a target was selected. "
            "Add them to the known columns, or give the selected records themselves as "
            f"{arg_name('selection', cli='records')}.", code="SELECTION_NOT_KNOWN")

    needs = getattr(rule.function, "columns", None)
    missing = [c for c in needs or () if c not in known]
    if missing:
        raise not_known(f"column(s) {missing}")
    try:
        return rule.evaluate(table[known], what)
    except ValidationError as err:
        if rule.kind == "rule" and err.code == "BAD_SELECTION_RULE":
            try:
                rule.evaluate(table, what)
            except ValidationError:
                raise err from None
            raise not_known("columns") from None
        raise


def _codes(table: pd.DataFrame, status: np.ndarray, known_s: list[str], missing_known: str,
           what: str) -> np.ndarray:
    """The selection column: ``selected``, or ``unselected`` with the record's synthesized known
    values (an unselected record is released unchanged: the intruder matches them exactly,
    whatever radius the synthesized records need)."""
    out = np.full(len(table), "selected", dtype=object)
    un = ~status
    if not known_s:
        out[un] = "unselected"
        return out
    if missing_known == "any":
        miss = table[known_s].reset_index(drop=True).isna().to_numpy().any(axis=1) & un
        if miss.any():
            row = int(np.flatnonzero(miss)[0])
            raise NotSupportedError(
                f"{what} row {row} is unselected and misses a value of a synthesized known "
                f"column ({known_s}): with missing_known='any' the intruder does not know it, "
                "and the exact match an unselected record allows is not defined then. Use "
                "missing_known='level' (a missing value is a value the intruder knows).",
                code="SELECTION_MISSING_KNOWN")
    out[un] = "unselected " + _keys(table.iloc[np.flatnonzero(un)], known_s)
    return out


#: the forms of ``selection=`` an identification error names (before "an expression ...")
_FORMS = "'release' (the rule the release's manifest records), the selected records, "


def condition_on_selection(
    original: pd.DataFrame,
    synthetic: Any,
    selection: Any,
    *,
    known_us: list[str],
    known_s: list[str],
    schema: Schema,
    match: Any,
    population: Any,
    released_flags: np.ndarray | None = None,
) -> Conditioned:
    """The engine's inputs given that the intruder knows the selection ``R``.

    Parameters
    ----------
    original : DataFrame
        The confidential data.
    synthetic : SyntheticData, list of DataFrame or None
        The release (``None`` with replicates).
    selection : "release", str, callable or boolean mask / positions
        As ``selection`` of :class:`~bayes_risk.identification.PopulationSpec`.
    known_us, known_s : list of str
        The known columns released unchanged and synthesized.
    schema : Schema
        The original's column types.
    match : MatchSpec
        The matching options (``missing_known``).
    population : PopulationSpec
        The targets and membership.
    released_flags : bool array, optional
        The records the model behind posterior replicates synthesized, when no release says.

    Returns
    -------
    Conditioned

    Raises
    ------
    ValidationError
        ``SELECTION_NOT_RECORDED``, ``SELECTION_NOT_KNOWN``, ``SELECTION_MISMATCH``,
        ``BAD_SELECTION_RULE``.
    NotSupportedError
        ``SELECTION_MISSING_KNOWN``; counts given as a table.
    """
    known = [*known_us, *known_s]
    if SELECTION_COLUMN in original.columns:
        raise SchemaError(f"the original has a column {SELECTION_COLUMN!r}, the name the "
                          "selection's column takes: rename it.", code="INVALID_ARGUMENT")
    datasets, source = as_synthetic_list(synthetic, allow_none=True, original=original)
    n = len(original)
    targets = getattr(population, "targets", None)
    if getattr(population, "counts", None) is not None:
        raise NotSupportedError(
            "population counts given as a table are keyed by the known values, not by whether "
            "a target was selected, and a log-linear model of the keys with the selection "
            "column is not derived; with a selection give survey weights (or the counts "
            "without the selection).", code="SELECTION_NOT_SUPPORTED")
    if isinstance(selection, str) and selection.strip() == "records":
        selection = getattr(source, "synthesized_records", None)
        if selection is None:
            raise ValidationError(
                f"{arg_name('selection', "'records'", cli='records')}: the release's manifest "
                "lists no synthesized records (a partially synthetic release of selected records "
                "lists them). Give the rule as an expression on the known columns, or 'release'.",
                code="SELECTION_NOT_RECORDED")
    if isinstance(selection, str) and selection.strip() == "release":
        rule = release_rule(source)
        if rule is None:
            raise ValidationError(
                "selection='release': the release's manifest records no selection rule (a "
                "small-cell PMM release records its sensitive cells). Give the rule as an "
                "expression on the known columns, or the selected records.",
                code="SELECTION_NOT_RECORDED")
        kind = "release"
    elif isinstance(selection, (str, SelectionRule)) or callable(selection):
        rule, kind = as_selection(selection, forms=_FORMS), "rule"
        if rule.kind == "independent":
            raise ValidationError(
                f"{arg_name('selection')} 'independent' says the records were chosen without "
                "looking at their values: the intruder then learns a target's status only from "
                "the selected records themselves; give them as "
                f"{arg_name('selection', cli='records')} (a mask or positions of the original's "
                "records).",
                code="BAD_SELECTION_RULE")
    else:
        rule, kind = None, "records"
    if rule is not None:
        status = _status(rule, original, known, "the original")
        description = rule.description
    else:
        if targets is not None:
            raise ValidationError(
                "a selection given as records applies to the original's records as targets; "
                "with external targets give the rule (an expression on the known columns).",
                code="BAD_OPTION_VALUE")
        status = record_mask(selection, n, argument="selection", code="BAD_OPTION_VALUE")
        description = f"{int(status.sum())} record(s) given"
    flags = getattr(source, "synthesized_records", None)
    flags = released_flags if flags is None else flags
    flags = status if flags is None else np.asarray(flags, dtype=bool)
    if flags.shape != (n,):
        raise SchemaError(f"the release flags {flags.size} synthesized record(s) slots for an "
                          f"original of {n} rows.", code="ROWS_MISALIGNED")
    wrong = np.flatnonzero(flags != status)
    if wrong.size:
        raise ValidationError(
            f"the selection ({description}) does not reproduce the records the release "
            f"synthesized: {wrong.size} record(s) differ (first: "
            f"{', '.join(str(int(r)) for r in wrong[:5])}). Give the selection that made the "
            "release.", code="SELECTION_MISMATCH")
    for j, z in enumerate(datasets, start=1):
        un = np.flatnonzero(~flags)
        for c in known:
            if c not in z.columns or c not in original.columns:
                continue  # the engine names the missing column
            a = comparable_values(original[c].iloc[un].reset_index(drop=True))
            b = comparable_values(z[c].iloc[un].reset_index(drop=True))
            same = (a == b) | (pd.isna(a) & pd.isna(b))
            if not same.all():
                row = int(un[np.flatnonzero(~same)[0]])
                raise ValidationError(
                    f"dataset {j} changes known column {c!r} of record {row}, which the "
                    f"selection ({description}) leaves unselected: a record not selected is "
                    "released unchanged. Give the selection that made the release.",
                    code="SELECTION_MISMATCH")
    mk = getattr(match, "missing_known", "any") if match is not None else "any"
    original = original.assign(**{SELECTION_COLUMN: _codes(original, status, known_s, mk,
                                                           "original")})
    # a released record's status is the release's flag; its code its released values
    datasets = [z.assign(**{SELECTION_COLUMN: _codes(z, flags, known_s, "level", f"dataset {j}")})
                for j, z in enumerate(datasets, start=1)]
    n_t, n_t_sel = n, int(status.sum())
    if targets is not None:
        t_status = _status(rule, targets, known, "the targets")
        population = dataclasses.replace(population, targets=targets.assign(
            **{SELECTION_COLUMN: _codes(targets, t_status, known_s, mk, "targets")}))
        n_t, n_t_sel = len(targets), int(t_status.sum())
    levels = tuple(sorted(set(original[SELECTION_COLUMN]).union(
        *(set(z[SELECTION_COLUMN]) for z in datasets))))
    schema = Schema((*schema.columns, ColumnSpec(SELECTION_COLUMN, "categorical", levels=levels,
                                                 known=True)))
    knowledge = KnownSelection(description=description, source=kind,
                               n_selected=int(flags.sum()), n_records=n,
                               n_targets_selected=n_t_sel, n_targets=n_t)
    return Conditioned(original=original, synthetic=datasets if synthetic is not None else None,
                       known=[*known_us, SELECTION_COLUMN, *known_s], synthesized=list(known_s),
                       schema=schema, population=population, knowledge=knowledge)


def conditioned(original: pd.DataFrame, synthetic: Any, selection: Any, *, known: Sequence[str],
                synthesized: Sequence[str] | None = None, categorical: Sequence[str] | None = None,
                schema: Schema | None = None, match: Any = None, population: Any = None,
                replicates: Any = None) -> Conditioned:
    """The inputs of any identification entry point (:func:`~bayes_risk.identification_risk`,
    :func:`~bayes_risk.radius_search`, ...) for the intruder who knows the selection ``R``.

    Parameters
    ----------
    original, synthetic, known, synthesized, categorical, schema, match, population, replicates
        As in :func:`~bayes_risk.identification_risk`.
    selection : "release", str, callable, boolean mask or sequence of int
        As in :func:`~bayes_risk.identification_risk`.

    Returns
    -------
    Conditioned
        Give its ``original``, ``synthetic``, ``known``, ``synthesized``, ``schema`` and
        ``population`` to the entry point (``categorical`` is in the schema).
    """
    from bayes_risk.identification.prepare import known_columns
    from bayes_risk.identification.specs import spec_options

    specs = spec_options(match, population)
    known_us, known_s = known_columns(original, synthetic, known, synthesized, replicates)
    if check_value(schema, [SCHEMA, None], "schema") is None:
        schema = infer_schema(original, categorical=[categorical] if isinstance(categorical, str)
                              else categorical)
    return condition_on_selection(
        original, synthetic, selection, known_us=known_us, known_s=known_s, schema=schema,
        match=specs["match"], population=specs["population"],
        released_flags=getattr(getattr(replicates, "model", None), "synthesized_records_", None))
