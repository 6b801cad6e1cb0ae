"""Input handling shared by the singling-out and linkability attacks."""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from bayes_risk._rng import seed_to_json
from bayes_risk.data.alignment import warn_release_holds_original
from bayes_risk.data.levels import normalise_level
from bayes_risk.data.missing import missing_mask
from bayes_risk.data.normalise import as_synthetic_list, check_not_empty
from bayes_risk.data.schema import Schema
from bayes_risk.data.validate import (
    check_release_levels,
    check_value_labels,
    encode,
    harmonise_levels,
    refuse_unknown_levels,
    release_levels,
    release_only_levels,
    require_columns,
    require_frame,
    validate_table,
)
from bayes_risk.exceptions import CALLER, DataWarning, ValidationError
from bayes_risk.utility._inputs import base_schema

__all__ = ["AttackInputs", "attack_inputs", "code_table", "group_column", "result_fields",
           "screen_control"]


def group_column(groups: Any, names: Sequence[str]) -> Any:
    """``groups``, ``None`` or one of the columns ``names``; else a ``ValidationError`` naming
    it (the one place the attacks check it)."""
    if groups is not None and groups not in names:
        raise ValidationError(f"groups: {groups!r} is not a column (columns: {list(names)}).")
    return groups


@dataclass
class AttackInputs:
    """The tables of an attack, restricted to its columns and checked against one ``schema``;
    the holdout without the ``n_holdout_dropped`` rows that copy a record of the original."""

    original: pd.DataFrame
    datasets: list[pd.DataFrame]
    holdout: pd.DataFrame | None
    schema: Schema
    n_holdout_dropped: int = 0


def attack_inputs(
    original: Any,
    synthetic: Any,
    holdout: Any,
    *,
    columns: Sequence[str] | None,
    schema: Schema | None,
    categorical: Iterable[str] | None,
    argument: str = "columns",
) -> AttackInputs:
    """Check and align the inputs of an attack (errors and warnings as those of
    :func:`~bayes_risk.attacks.singling_out_risk`); ``argument`` names the attack's columns in
    the errors (linkability's ``aux_columns``)."""
    datasets, source = as_synthetic_list(synthetic, original=original, row_order=False)
    sch = base_schema(original, schema=schema, carried=None if source is None else source.schema,
                      categorical=categorical)
    # the attack's entry refused no column (its table's COLUMN_NAMES)
    cols = list(sch.names) if columns is None else list(columns)
    sch.check_columns(cols, argument)
    if holdout is not None:  # the original and the datasets: checked by as_synthetic_list
        check_not_empty(require_frame(holdout, "holdout"), "holdout", "the attack needs records")
    named = [("original", original), *((f"synthetic dataset {l}", z)
                                       for l, z in enumerate(datasets, start=1))]
    if holdout is not None:
        named.append(("holdout", holdout))
    for name, t in named:
        require_columns(t, cols, name)
    tables = {name: t[cols].reset_index(drop=True) for name, t in named}
    real = pd.concat([tables["original"], *([tables["holdout"]] if holdout is not None else [])],
                     ignore_index=True)
    sub = sch.select(cols)
    # the attacks compare numbers, whatever their kind: a holdout's negative value in a column
    # the original showed as a count is a value like another
    sub = sub.with_types(**{s.name: "continuous" for s in sub if s.type == "count"})
    syn_tables = [tables[n] for n, _ in named[1:1 + len(datasets)]]
    recoded = () if source is None else source.recoded_columns
    # the release against the original alone (a level the holdout holds is no level of it)
    check_release_levels(release_only_levels(tables["original"], syn_tables, sub), recoded,
                         original=tables["original"], warn=False)
    warn_release_holds_original(tables["original"], syn_tables)
    if holdout is not None:
        check_value_labels(original, {"holdout": holdout})
        _check_holdout_coding(tables["original"], tables["holdout"], sub)
    sub = harmonise_levels(real, syn_tables, schema=sub,
                           recoded=[c.name for c in sub if c.is_categorical])
    for name, t in tables.items():
        validate_table(t, sub, name=name, allow_nan=True)
    orig = tables["original"]
    hold = tables.get("holdout")
    dropped = 0
    if hold is not None:
        hold, dropped = screen_control(orig, hold)
    return AttackInputs(orig, [tables[n] for n, _ in named[1:1 + len(datasets)]], hold, sub,
                        dropped)


#: the chance below which a holdout's levels that the original never holds are taken as a
#: coding of its own rather than rare levels of the population (a level no record of the
#: original holds is found in the holdout alone)
HOLDOUT_CODING_ALPHA = 1e-3


def _check_holdout_coding(orig: pd.DataFrame, hold: pd.DataFrame, schema: Schema) -> None:
    """Refuse a holdout coded otherwise than the original (``UNKNOWN_LEVEL``).

    A holdout drawn from the original's population may hold levels that no record of the
    original holds. Two chances say how many such records to expect, and the holdout is refused
    only when both make its ``k`` records improbable (below :data:`HOLDOUT_CODING_ALPHA` over
    the categorical columns): that the records of rare levels all fell in the holdout when split
    at random between the tables (``C(n_h, k) / C(n + n_h, k)``), and that ``k`` of ``n_h`` new
    records hold a level the original lacks when each does with the original's share of
    levels held once (Good-Turing's estimate of the unseen levels' mass, ``f_1 / n``). The
    second keeps identifiers and sparse high-cardinality columns (a household number, a postal
    code of 10,000 levels), whose holdout records hold new levels as a rule: they are not taken
    as coded otherwise, and a warning (``SPARSE_COLUMN``) says what they are. Otherwise the
    holdout is coded otherwise (labels against codes, a renamed level): its records would fail
    or pass the control attack for that reason alone."""
    import math

    from scipy.stats import binom

    cat = [c for c in schema if c.is_categorical]
    n, n_h = len(orig), len(hold)
    refused: dict[str, Any] = {}
    sparse: list[str] = []
    for spec in cat:
        allowed = release_levels(spec, orig)
        if allowed is None:
            continue
        col = hold[spec.name].dropna()
        k = int(sum(normalise_level(v) not in allowed for v in col))
        if k == 0:
            continue
        counts = orig[spec.name].dropna().map(normalise_level).value_counts()
        unseen = float((counts == 1).sum()) / max(n, 1)  # Good-Turing: f_1 / n
        log_split = sum(math.log((n_h - j) / (n + n_h - j)) for j in range(k))
        log_new = float(binom.logsf(k - 1, len(col), unseen)) if unseen > 0 else -math.inf
        limit = math.log(HOLDOUT_CODING_ALPHA / len(cat))
        if max(log_split, log_new) >= limit:
            if log_split < limit:
                sparse.append(f"{spec.name!r} ({len(counts):,} levels among the original's "
                              f"{n:,} records, {int((counts == 1).sum()):,} of them held once; "
                              f"{k:,} of the holdout's {len(col):,} records hold a new one)")
            continue
        refused[spec.name] = (allowed, k, math.exp(log_split))
    if sparse:
        warnings.warn(DataWarning(
            f"holdout: column(s) {'; '.join(sparse)} are identifiers or sparse columns: many of "
            "their levels are held by one record, so records the synthesis did not use hold "
            "levels the original never holds as a rule, and these are not taken as a holdout "
            "coded otherwise. As attack columns, such a column singles out or links a record by "
            "its level alone: leave it out of the attack's columns unless the release carries "
            "it (SPARSE_COLUMN).", code="SPARSE_COLUMN"), skip_file_prefixes=CALLER)
    if refused:
        c, (allowed, k, p) = next(iter(refused.items()))
        refuse_unknown_levels(
            hold, {c: allowed}, "holdout", absent_from="the original",
            consequence=f"{k:,} of its {n_h:,} records hold levels of {c!r} that none of the "
            f"original's {n:,} holds, which a holdout drawn from the original's population "
            f"gives with probability {p:.1g}: it is coded otherwise than the original, and its "
            "records would fail or pass the control attack for that reason alone",
            remedy="Code the holdout as the original, or drop such rows.")


def screen_control(orig: pd.DataFrame, hold: pd.DataFrame) -> tuple[pd.DataFrame, int]:
    """The holdout without the rows that copy a record of the original beyond chance (they
    would understate the risk)."""
    from bayes_risk.membership.holdout import overlapping_rows

    copies = overlapping_rows(
        orig, hold, "the control attack needs records of the population that were not used for "
        "the synthesis; a member in it succeeds as in the main attack and understates the risk",
        "left out of the control attack")
    if copies is None:
        return hold, 0
    return hold[~copies].reset_index(drop=True), int(copies.sum())


def code_table(df: pd.DataFrame, schema: Schema) -> np.ndarray:
    """``df`` as a float array ``[n, p]`` in the order of ``schema``: level codes of the
    categorical columns, values of the numeric ones, ``nan`` for a missing cell."""
    out = np.empty((len(df), len(schema)), dtype=np.float64)
    for j, spec in enumerate(schema):
        if spec.is_categorical:
            codes = encode(df, schema, [spec.name])[:, 0].astype(np.float64)
            codes[codes < 0] = np.nan
            out[:, j] = codes
        else:
            v = pd.to_numeric(df[spec.name], errors="coerce").to_numpy(np.float64, copy=True)
            v[missing_mask(df[spec.name], spec.missing_codes)] = np.nan
            out[:, j] = v
    return out


def result_fields(inp: AttackInputs, flagged: dict[str, list[str]], why: dict[str, str],
                  settings: dict[str, Any], *, level: float, random_seed: Any,
                  groups: str | None, grouped: list[dict[str, Any]]) -> dict[str, Any]:
    """The fields every attack's result shares: ``settings`` (the attack's own, then the sizes,
    level, seed and groups of all three), ``warnings`` and ``by_group``.

    Raises one coded ``DataWarning`` per condition of ``flagged`` (its meaning ``why[code]``,
    then where it holds) and ``NO_HOLDOUT`` without a holdout; the codes list the holdout's
    overlap with the original first (warned when the inputs were checked).
    """
    codes = ["HOLDOUT_OVERLAPS_ORIGINAL"] if inp.n_holdout_dropped else []
    for code, where in flagged.items():
        warnings.warn(DataWarning(f"{why[code]} ({'; '.join(where)}) ({code}).", code=code),
                      skip_file_prefixes=CALLER)
        codes.append(code)
    if inp.holdout is None:
        warnings.warn(DataWarning(
            "no holdout was given: the risk is the main attack's success rate, not its excess "
            "over the same attack on records the synthesis did not use, so it also counts what "
            "any release that generalises well reveals about the population (NO_HOLDOUT).",
            code="NO_HOLDOUT"), skip_file_prefixes=CALLER)
        codes.append("NO_HOLDOUT")
    return {
        "settings": {
            **settings, "confidence_level": level, "m": len(inp.datasets),
            "n_original": len(inp.original),
            "n_holdout": None if inp.holdout is None else len(inp.holdout),
            "n_holdout_dropped": inp.n_holdout_dropped,
            "random_seed": seed_to_json(random_seed), "groups": groups},
        "warnings": codes,
        "by_group": None if groups is None else pd.DataFrame(grouped)}
