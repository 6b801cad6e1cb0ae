"""Level coding of :class:`~bayes_risk.models.dpmpm.dpmpm.DPMPM`.

Records are coded ``0..d_j-1`` per column (``-1`` missing, ``-2`` a level the model was not
fitted with); :func:`decode_column` turns codes back into the data's dtypes and
:func:`class_logw` gives the records' class log-weights from their codes.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from bayes_risk.data.levels import normalise_level
from bayes_risk.data.schema import Schema
from bayes_risk.data.validate import require_columns, require_frame
from bayes_risk.exceptions import SchemaError
from bayes_risk.models.dpmpm.state import DPMPMState
from bayes_risk.models.dpmpm.zeros import UNKNOWN


def encode(schema: Schema, df: pd.DataFrame, *, name: str = "records") -> np.ndarray:
    """Codes ``0..d_j-1`` of the levels of ``schema``; ``-1`` missing; ``-2`` a level the
    model was not fitted with."""
    require_columns(require_frame(df, name), schema.names, name)
    out = np.empty((len(df), len(schema)), dtype=np.int64)
    for j, spec in enumerate(schema):
        lookup = {normalise_level(v): k for k, v in enumerate(spec.levels or ())}
        col = df[spec.name]
        if isinstance(col.dtype, pd.CategoricalDtype):
            # map the dtype's categories once, not the values (the risk engines encode
            # every chunk of records once per model: factorising was most of the time)
            arr = col.array  # the Categorical itself (the accessors build new objects)
            cats = np.array(
                [lookup.get(normalise_level(u), UNKNOWN) for u in arr.categories],
                dtype=np.int64,
            )
            raw = arr.codes
            out[:, j] = np.where(raw >= 0, cats[np.maximum(raw, 0)] if cats.size else -1, -1)
            continue
        codes, uniques = pd.factorize(col, use_na_sentinel=True)
        mapped = np.array(
            [lookup.get(normalise_level(u), UNKNOWN) for u in uniques], dtype=np.int64
        )
        col = np.full(len(df), -1, dtype=np.int64)
        ok = codes >= 0
        col[ok] = mapped[codes[ok]]
        out[:, j] = col
    return out


def refuse_unknown_levels(schema: Schema, codes: np.ndarray, *, code: str) -> None:
    """Raise ``SchemaError`` (``code``) naming the first record of ``codes`` (from
    :func:`encode` of ``records``) with a level the model was not fitted with."""
    if np.any(codes == UNKNOWN):
        i, j = np.argwhere(codes == UNKNOWN)[0]
        raise SchemaError(f"records: row {i} has a level of column {schema.names[j]!r} the "
                          "model was not fitted with.", code=code)


def encode_dataset(schema: Schema, z: pd.DataFrame, l: int, n: int) -> np.ndarray:
    """Codes of released dataset ``l`` (0-based), which must have the model's ``n`` rows."""
    if len(z) != n:
        raise SchemaError(
            f"synthetic dataset {l + 1} has {len(z)} rows; the model synthesizes {n}.",
            code="ROW_COUNT_MISMATCH",
        )
    return encode(schema, z, name=f"synthetic dataset {l + 1}")


def decode_column(schema: Schema, dtypes: dict[str, str], codes: np.ndarray, j: int
                  ) -> pd.Series:
    """Codes of column ``j`` back to its levels, in the data's dtype (``dtypes``)."""
    spec = schema.columns[j]
    levels = np.empty(len(spec.levels), dtype=object)
    levels[:] = list(spec.levels)
    vals = levels[codes]
    dtype = dtypes.get(spec.name, "object")
    if dtype.startswith("category"):
        return pd.Series(
            pd.Categorical(
                vals, categories=list(spec.levels), ordered=dtype == "category-ordered"
            )
        )
    try:
        return pd.Series(vals).astype(dtype)
    except (TypeError, ValueError):
        return pd.Series(vals)


def class_logw(state: DPMPMState, codes, lp, lpi, use) -> np.ndarray:
    """``[H, n, K]`` of ``log π_k + Σ_{j∈use, observed} log φ_kj[y_ij]``."""
    H, K = lpi.shape
    out = np.broadcast_to(lpi[:, None, :], (H, codes.shape[0], K)).copy()
    for j in np.flatnonzero(use):
        c = codes[:, j]
        ok = c >= 0
        out[:, ok, :] += lp[:, state.offsets[j] + c[ok], :]
        bad = c == UNKNOWN
        out[:, bad, :] = -np.inf
    return out


def dtypes_of(df: pd.DataFrame) -> dict[str, str]:
    """Each column's dtype as text (a saved model restores its levels' types from it)."""
    out = {}
    for c in df.columns:
        dt = df[c].dtype
        if isinstance(dt, pd.CategoricalDtype):
            out[c] = "category-ordered" if dt.ordered else "category"
        elif pd.api.types.is_bool_dtype(dt):
            out[c] = "bool"
        elif pd.api.types.is_integer_dtype(dt):
            out[c] = "int64"
        elif pd.api.types.is_float_dtype(dt):
            out[c] = "float64"
        elif pd.api.types.is_string_dtype(dt) and not pd.api.types.is_object_dtype(dt):
            out[c] = "str"
        else:
            out[c] = "object"
    return out
