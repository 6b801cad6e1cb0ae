"""The records and draws of a Bayesian synthesizer: the fitted table, record selections, draw
indices and the posterior as ``[H, ...]`` arrays.

Module-level helpers of :class:`~bayes_risk.models._bayesian.base.BayesianSynthesizer`: the
confidential table checked against the schema (``fit``), the ``records=`` selection of partial
synthesis, the synthesized rows of a release, a ``draw_indices=`` argument and a posterior
variable flattened chain by chain.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from bayes_risk.data.levels import drop_unused_levels
from bayes_risk.data.schema import Schema, infer_schema
from bayes_risk.data.validate import record_mask, validate_table
from bayes_risk.exceptions import SchemaError, ValidationError
from bayes_risk.models.base import synthesized_columns
from bayes_risk.models.trees.missing import refusal_hint


def check_synthesized_records(records: Any, n: int) -> np.ndarray | None:
    """The work of :meth:`BayesianSynthesizer._check_synthesized_records`: ``None`` (every
    record) or the mask of :func:`~bayes_risk.data.validate.record_mask`."""
    return None if records is None else record_mask(records, n)


def synthesized_part(z: pd.DataFrame, rows: np.ndarray, n: int, name: str = "synthetic"
                     ) -> pd.DataFrame:
    """The rows ``rows`` (the synthesized records) of a released dataset ``z`` of a model that
    synthesizes selected records of a table of ``n``
    (:meth:`BayesianSynthesizer._synthesized_part`)."""
    if not isinstance(z, pd.DataFrame):
        raise ValidationError(f"{name} must be a pandas DataFrame. Got {type(z).__name__}.")
    if len(z) != n:
        raise SchemaError(
            f"{name} has {len(z)} rows; the model synthesizes selected records of a table of "
            f"{n} rows, so a released dataset must have {n}.",
            code="ROW_COUNT_MISMATCH",
        )
    return z.iloc[rows].reset_index(drop=True)


def check_draw_indices(H: int, draw_indices: Any = None) -> np.ndarray:
    """A ``draw_indices=`` argument of a model with ``H`` draws as flattened draw indices
    (:meth:`BayesianSynthesizer._draw_indices`)."""
    if draw_indices is None:
        return np.arange(H, dtype=np.int64)
    arr = np.asarray(draw_indices)
    if arr.dtype == bool:
        if arr.shape != (H,):
            raise ValidationError(
                f"draw_indices given as a boolean mask must have length H = {H}. "
                f"Got shape {arr.shape}."
            )
        return np.flatnonzero(arr).astype(np.int64)
    if arr.ndim == 0:
        arr = arr.reshape(1)
    if arr.ndim != 1 or not np.issubdtype(arr.dtype, np.integer):
        raise ValidationError(
            f"draw_indices must be None, integer draw indices in 0..{H - 1} or a boolean mask. "
            f"Got {draw_indices!r}."
        )
    if arr.size and (arr.min() < 0 or arr.max() >= H):
        bad = arr[(arr < 0) | (arr >= H)][0]
        raise ValidationError(
            f"draw_indices: index {int(bad)} is outside 0..{H - 1} (the model has H = {H} "
            "draws)."
        )
    return arr.astype(np.int64)


def stacked_values(post: Any, name: str, draw_indices: np.ndarray | None = None) -> np.ndarray:
    """Variable ``name`` of the ``posterior`` group ``post`` as an ``[H, ...]`` array
    (chain-major), optionally restricted to the flattened indices ``draw_indices``."""
    if name not in post.data_vars:
        raise ValidationError(f"posterior has no variable {name!r}.", code="POSTERIOR_INVALID")
    da = post[name]
    dims = ["chain", "draw", *[d for d in da.dims if d not in ("chain", "draw")]]
    vals = np.asarray(da.transpose(*dims).values)
    vals = vals.reshape(-1, *vals.shape[2:])
    return vals if draw_indices is None else vals[draw_indices]


def prepare_data(model, data: pd.DataFrame, schema: Schema | None, synthesized: Any,
                 categorical: Any, allow_nan: bool, fitting: bool = True
                 ) -> tuple[pd.DataFrame, Schema]:
    """The work of :meth:`BayesianSynthesizer._prepare_data`; ``fitting``: the levels no
    record holds are dropped (``UNUSED_LEVEL``; not for the records of a posterior given)."""
    if not isinstance(data, pd.DataFrame):
        raise ValidationError(f"data must be a pandas DataFrame. Got {type(data).__name__}.")
    if len(data) == 0:
        raise ValidationError("data has no records.", code="EMPTY_TABLE")
    data = data.copy()
    data.columns = [str(c) for c in data.columns]
    if schema is None:
        schema = infer_schema(data, categorical=categorical)
    elif not isinstance(schema, Schema):
        raise ValidationError(f"schema must be a Schema. Got {type(schema).__name__}.")
    missing = [c for c in schema.names if c not in data.columns]
    if missing:
        raise SchemaError(
            f"data is missing column(s) {missing} named in the schema.", code="MISSING_COLUMN"
        )
    extra = [c for c in data.columns if c not in schema.names]
    if extra:
        raise SchemaError(
            f"data has column(s) {extra} that are not in the schema; select the columns to "
            "model first.",
            code="EXTRA_COLUMN",
        )
    data = data[schema.names]
    synthesized = synthesized_columns(synthesized, schema)
    if synthesized is not None:
        schema = schema.with_roles(synthesized)
    if not schema.synthesized:
        schema = schema.with_roles(schema.names)
    validate_table(data, schema, name="data", allow_nan=allow_nan,
                   missing_hint="" if allow_nan else refusal_hint(type(model).__name__))
    if fitting:
        schema = drop_unused_levels(data, schema)
    return data.reset_index(drop=True), schema
