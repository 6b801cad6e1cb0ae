"""Shared input handling of the utility measures: schema, roles and imputed columns."""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from bayes_risk._constraints import check_value
from bayes_risk._utility_specs import IMPUTED
from bayes_risk.data.levels import normalise_level
from bayes_risk.data.schema import CATEGORICAL_TYPES, SCHEMA, Schema, infer_schema
from bayes_risk.data.validate import harmonise_levels, require_frame, validate_synthetic
from bayes_risk.exceptions import CALLER, DataWarning, arg_name

__all__ = [
    "base_schema", "resolve_schema", "differing_share",
    "ImputedChoice", "resolve_imputed", "observed_cells", "warn_observed_cells"]


def base_schema(
    original: Any,
    *,
    schema: Schema | None,
    carried: Schema | None,
    categorical: Iterable[str] | None,
) -> Schema:
    """``schema``, else the one a ``SyntheticData`` carries, else inferred; ``categorical``
    columns made categorical in any case."""
    require_frame(original, "original")
    cat = list(categorical or [])
    if schema is None:
        schema = carried
    if check_value(schema, [SCHEMA, None], "schema") is None:
        return infer_schema(original, categorical=cat or None)
    schema.check_columns(cat, "categorical")
    change = {c: "categorical" for c in cat if schema[c].type not in CATEGORICAL_TYPES}
    if change:
        schema = schema.with_types(**change)
        fresh = infer_schema(original[list(change)], categorical=list(change))
        schema = schema.with_levels({c: fresh[c].levels for c in change})
    return schema


def resolve_schema(
    original: pd.DataFrame,
    datasets: Sequence[pd.DataFrame],
    *,
    schema: Schema | None,
    carried: Schema | None,
    categorical: Iterable[str] | None,
    synthesized: Iterable[str] | None,
    same_rows: bool,
    recoded: Sequence[str] = (),
) -> Schema:
    """The measure's schema (:func:`base_schema`, ``synthesized`` roles), harmonised and checked
    (``recoded``: the columns the release recodes, :func:`~bayes_risk.data.harmonise_levels`)."""
    schema = base_schema(original, schema=schema, carried=carried, categorical=categorical)
    if synthesized is not None:
        schema = schema.with_roles(list(synthesized))
    schema = harmonise_levels(original, datasets, schema=schema, recoded=recoded)
    # missing values are allowed: the measures treat them as synthpop does
    validate_synthetic(original, datasets, schema=schema, same_rows=same_rows,
                       check_unsynthesized=same_rows and bool(schema.synthesized),
                       allow_nan=True)
    return schema


def differing_share(original: pd.DataFrame, datasets: Sequence[pd.DataFrame],
                    schema: Schema) -> dict[str, list[float]]:
    """``{column: [share of records differing from the original, per dataset]}`` of the
    columns that differ somewhere (every column, shares 1, if row counts differ)."""
    if any(len(z) != len(original) for z in datasets):
        return {c: [1.0] * len(datasets) for c in schema.names}
    out: dict[str, list[float]] = {}
    for c in schema.names:
        a = original[c].to_numpy()
        shares = []
        for z in datasets:
            b = z[c].to_numpy()
            if schema[c].type in CATEGORICAL_TYPES and not (_exact_float(a) and _exact_float(b)):
                diff = np.fromiter(
                    (normalise_level(x) != normalise_level(y) and not (pd.isna(x) and pd.isna(y))
                     for x, y in zip(a, b, strict=False)), dtype=bool, count=len(a))
            else:  # numbers, or levels that float64 holds exactly (2 and 2.0 are one level)
                af = np.asarray(a, dtype=np.float64)
                bf = np.asarray(b, dtype=np.float64)
                diff = (af != bf) & ~(np.isnan(af) & np.isnan(bf))
            shares.append(float(diff.mean()) if len(diff) else 0.0)
        if max(shares) > 0:
            out[c] = shares
    return out


def _exact_float(a: np.ndarray) -> bool:
    if a.dtype.kind == "f":
        return True
    return a.dtype.kind in "iu" and (a.size == 0 or -(2**53) <= int(a.min()) <= int(a.max())
                                     <= 2**53)


# releases from synthesizers that impute missing values (methods, Utility of an imputing release)
#: how imputed columns are compared, by whether the synthetic rows are the original's rows
OBSERVED_CELLS = {
    True: "synthetic values masked at the original's missing cells (rows aligned)",
    False: "original's observed cells against all synthetic values; pMSE on the original's "
           "records observed in every imputed column"}


@dataclass(frozen=True)
class ImputedChoice:
    """The imputed columns with a missing value in the original, their ``source`` (manifest,
    inferred, user or none) and whether the rows are ``aligned``."""

    columns: list[str]
    source: str
    aligned: bool

    def to_settings(self) -> dict[str, Any]:
        """The ``imputed_*`` entries of a result's settings."""
        return {
            "imputed_columns": list(self.columns),
            "imputed_columns_source": self.source,
            "imputed_comparison": OBSERVED_CELLS[self.aligned] if self.columns else None}


def resolve_imputed(imputed: Any, source: Any, original: pd.DataFrame,
                    datasets: Sequence[pd.DataFrame], schema: Schema) -> ImputedChoice:
    """Which columns the synthesizer imputed: given, recorded in the manifest, or inferred
    (``"auto"``: empty cells in the original, none in any synthetic dataset)."""
    if isinstance(imputed, ImputedChoice):
        return imputed
    aligned = all(len(z) == len(original) for z in datasets)
    has_missing = {c for c in schema.names if bool(original[c].isna().any())}
    if isinstance(imputed, str) and imputed == "auto":
        recorded = getattr(source, "imputed_columns", None)
        if recorded is not None:
            cols = [c for c in recorded if c in has_missing]
            return ImputedChoice(cols, "manifest" if cols else "none", aligned)
        cols = [c for c in schema.names if c in has_missing
                and not any(bool(z[c].isna().any()) for z in datasets)]
        if cols:
            warnings.warn(DataWarning(
                f"column(s) {', '.join(map(repr, cols))} have empty cells in the original but "
                "none in any synthetic dataset, so the synthesizer is taken to have imputed "
                "them (IMPUTED_INFERRED): they are compared on the original's observed cells "
                "(user guide, Utility of an imputing release). State the imputed columns with "
                f"{arg_name('imputed', '[...]', cli='COL ...')} (or "
                f"{arg_name('imputed', '[]', cli='none')} to compare missing values as a "
                "level).", code="IMPUTED_INFERRED"), skip_file_prefixes=CALLER)
        return ImputedChoice(cols, "inferred" if cols else "none", aligned)
    given = list(check_value(imputed, IMPUTED, "imputed"))
    schema.check_columns(given, "imputed")
    cols = [c for c in schema.names if c in given and c in has_missing]
    return ImputedChoice(cols, "user" if given else "none", aligned)


def warn_observed_cells(choice: ImputedChoice) -> list[str]:
    """Warn ``MISSING_AT_RANDOM_ASSUMED`` for imputed columns; returns the warning codes."""
    if not choice.columns:
        return []
    codes = ["IMPUTED_INFERRED"] if choice.source == "inferred" else []
    warnings.warn(DataWarning(
        f"column(s) {', '.join(map(repr, choice.columns))} were imputed by the synthesizer and "
        "are compared on the cells observed in the original "
        f"({OBSERVED_CELLS[choice.aligned]}) (MISSING_AT_RANDOM_ASSUMED): the synthetic values "
        "describe every record, the observed cells only the respondents, so the comparison is "
        "like with like when the values are missing completely at random (or, with aligned "
        "rows, at random given the columns released unchanged); otherwise a difference may "
        "come from the missingness rather than the synthesizer (methods, Utility of an "
        "imputing release).", code="MISSING_AT_RANDOM_ASSUMED"), skip_file_prefixes=CALLER)
    return [*codes, "MISSING_AT_RANDOM_ASSUMED"]


def observed_cells(original: pd.DataFrame, datasets: Sequence[pd.DataFrame],
                   choice: ImputedChoice, *, for_pmse: bool
                   ) -> tuple[pd.DataFrame, list[pd.DataFrame]]:
    """The tables on which imputed columns are compared like with like (methods, Utility of
    an imputing release)."""
    if not choice.columns:
        return original, list(datasets)
    if choice.aligned:
        out = []
        for z in datasets:
            z = z.copy()
            for c in choice.columns:
                z[c] = z[c].mask(original[c].isna().to_numpy())
            out.append(z)
        return original, out
    if for_pmse:  # a missing level the original alone has would tell it apart
        keep = original[choice.columns].notna().all(axis=1).to_numpy()
        original = original.loc[keep].reset_index(drop=True)
    return original, list(datasets)


def release_and_columns(original: pd.DataFrame, synthetic: Any, *, schema: Any,
                        categorical: Any, columns: Any) -> tuple[list[pd.DataFrame], Any,
                                                                 list[str]]:
    """The datasets of a release, the schema (the release's own when it carries one) and the
    columns to compare (default every column of the schema; unknown ones refused): what the
    per-table utility, ``compare()`` and the quality report read first."""
    from bayes_risk.data.normalise import as_synthetic_list

    datasets, source = as_synthetic_list(synthetic, original=original)
    schema = resolve_schema(original, datasets, schema=schema,
                            carried=None if source is None else source.schema,
                            categorical=categorical, synthesized=None, same_rows=False)
    cols = list(schema.names) if columns is None else list(columns)
    schema.check_columns(cols, "columns")
    return datasets, schema, cols
