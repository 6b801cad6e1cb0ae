"""Shared input handling of the utility measures: schema and roles.

Synthetic inputs are normalised by :func:`bayes_risk.data.normalise.as_synthetic_list`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from bayes_risk.data.levels import normalise_level
from bayes_risk.data.schema import CATEGORICAL_TYPES, Schema, infer_schema
from bayes_risk.data.validate import harmonise_levels, validate_synthetic
from bayes_risk.exceptions import ValidationError

__all__ = [
    "base_schema", "resolve_schema", "infer_synthesized", "differing_share",
    "check_choice",
]


def base_schema(
    original: Any,
    *,
    schema: Schema | None,
    carried: Schema | None,
    categorical: Iterable[str] | None,
) -> Schema:
    """The schema a measure starts from: ``schema``, else the one a ``SyntheticData`` carries,
    else inferred from ``original``; ``categorical`` columns are made categorical in any case
    (with the original's levels)."""
    if not isinstance(original, pd.DataFrame):
        raise ValidationError(
            f"original must be a pandas DataFrame. Got {type(original).__name__}."
        )
    cat = list(categorical or [])
    if schema is None:
        schema = carried
    if schema is None:
        return infer_schema(original, categorical=cat or None)
    if not isinstance(schema, Schema):
        raise ValidationError(f"schema must be a bayes_risk Schema. Got {type(schema).__name__}.")
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
) -> Schema:
    """Build (or take) the schema, apply overrides, harmonise levels and validate the tables.

    ``categorical`` columns are forced to be categorical even when a schema is given; the
    ``synthesized`` columns, when given, define the roles.
    """
    schema = base_schema(original, schema=schema, carried=carried, categorical=categorical)
    if synthesized is not None:
        syn = list(synthesized)
        schema = schema.with_roles(syn)
    schema = harmonise_levels(original, datasets, schema)
    # missing values are allowed: the measures treat them as synthpop does (user guide,
    # Missing values)
    validate_synthetic(original, datasets, schema, same_rows=same_rows,
                       check_unsynthesized=same_rows and bool(schema.synthesized),
                       allow_nan=True)
    return schema


def infer_synthesized(original: pd.DataFrame, datasets: Sequence[pd.DataFrame],
                      schema: Schema) -> list[str]:
    """Columns whose values differ from the original's in at least one synthetic dataset.

    Only meaningful when every dataset has the original's rows in the same order; otherwise
    every column is reported as synthesized.
    """
    return list(differing_share(original, datasets, schema))


def differing_share(original: pd.DataFrame, datasets: Sequence[pd.DataFrame],
                    schema: Schema) -> dict[str, list[float]]:
    """``{column: [share of records differing from the original, per dataset]}`` for the
    columns that differ in some dataset (every column, shares 1, if row counts differ)."""
    if any(len(z) != len(original) for z in datasets):
        return {c: [1.0] * len(datasets) for c in schema.names}
    out: dict[str, list[float]] = {}
    for c in schema.names:
        a = original[c].to_numpy()
        shares = []
        for z in datasets:
            b = z[c].to_numpy()
            if schema[c].type in CATEGORICAL_TYPES:
                diff = np.fromiter(
                    (normalise_level(x) != normalise_level(y) and not (pd.isna(x) and pd.isna(y))
                     for x, y in zip(a, b, strict=False)), dtype=bool, count=len(a))
            else:
                af = np.asarray(a, dtype=np.float64)
                bf = np.asarray(b, dtype=np.float64)
                diff = (af != bf) & ~(np.isnan(af) & np.isnan(bf))
            shares.append(float(diff.mean()) if len(diff) else 0.0)
        if max(shares) > 0:
            out[c] = shares
    return out


def check_choice(value: Any, name: str, options: Sequence[str]) -> str:
    """Validate a string option."""
    if value not in options:
        raise ValidationError(f"{name} must be one of {list(options)}. Got {value!r}.")
    return str(value)
