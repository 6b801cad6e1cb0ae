"""Level coding and synthesis of :class:`~bayes_risk.models.dpmpm.dpmpm.DPMPM`.

Records are coded ``0..d_j-1`` per column (``-1`` missing, ``-2`` a level the model was not
fitted with); synthesis draws each record's class and then its synthesized values from one
posterior draw, and decodes them back to the data's dtypes.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from bayes_risk.data.levels import normalise_level
from bayes_risk.data.schema import Schema
from bayes_risk.exceptions import SchemaError, ValidationError, on_command_line
from bayes_risk.models.dpmpm.zeros import _UNKNOWN


def check_categorical(model, schema: Schema) -> None:
    bad = [c for c in schema if not c.is_categorical]
    if bad:
        c = bad[0]
        raise SchemaError(
            f"DPMPM models categorical columns only; column {c.name!r} is {c.type}. Declare "
            "integer-coded factors as categorical ("
            + ("--categorical COL ..." if on_command_line() else "fit(..., categorical=[...])")
            + "), or leave the column out.",
            code="WRONG_DTYPE",
        )
    for c in schema:
        if not c.levels:
            raise SchemaError(
                f"column {c.name!r} has no observed level (all values missing); DPMPM cannot "
                "model it.",
                code="MISSING_VALUES",
            )


def encode(
    model, df: pd.DataFrame, schema: Schema | None = None, *, name: str = "records"
) -> np.ndarray:
    """Codes ``0..d_j-1``; ``-1`` missing; ``-2`` a level the model was not fitted with."""
    schema = schema or model.schema_
    if not isinstance(df, pd.DataFrame):
        raise ValidationError(f"{name} must be a pandas DataFrame. Got {type(df).__name__}.")
    missing = [c for c in schema.names if c not in df.columns]
    if missing:
        raise SchemaError(
            f"{name} is missing column(s) {missing}; expected columns {schema.names}.",
            code="MISSING_COLUMN",
        )
    out = np.empty((len(df), len(schema)), dtype=np.int64)
    for j, spec in enumerate(schema):
        lookup = {normalise_level(v): k for k, v in enumerate(spec.levels or ())}
        col = df[spec.name]
        if isinstance(col.dtype, pd.CategoricalDtype):
            # map the dtype's categories once, not the values (the risk engines encode
            # every chunk of records once per model: factorising was most of the time)
            arr = col.array  # the Categorical itself (the accessors build new objects)
            cats = np.array(
                [lookup.get(normalise_level(u), _UNKNOWN) for u in arr.categories],
                dtype=np.int64,
            )
            raw = arr.codes
            out[:, j] = np.where(raw >= 0, cats[np.maximum(raw, 0)] if cats.size else -1, -1)
            continue
        codes, uniques = pd.factorize(col, use_na_sentinel=True)
        mapped = np.array(
            [lookup.get(normalise_level(u), _UNKNOWN) for u in uniques], dtype=np.int64
        )
        col = np.full(len(df), -1, dtype=np.int64)
        ok = codes >= 0
        col[ok] = mapped[codes[ok]]
        out[:, j] = col
    return out


def decode_column(model, codes: np.ndarray, j: int) -> pd.Series:
    spec = model.schema_.columns[j]
    levels = np.empty(len(spec.levels), dtype=object)
    levels[:] = list(spec.levels)
    vals = levels[codes]
    dtype = model.dtypes_.get(spec.name, "object")
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


def synthesize_one(
    model, draw: int, rng: np.random.Generator, data: pd.DataFrame | None
) -> pd.DataFrame:
    schema = model.schema_
    n = model.n_records
    rows = (
        np.arange(n)
        if model.synthesized_records_ is None
        else np.flatnonzero(model.synthesized_records_)
    )
    s_mask, us_mask = model._masks()
    lp = model._logphi[draw : draw + 1]
    lpi = model._log_pi[draw : draw + 1]
    mode = model.synthesis_mode_
    if mode == "marginal":
        logw = np.broadcast_to(lpi[0], (len(rows), lpi.shape[1]))
    else:
        codes = model._encode(data.iloc[rows], name="data")
        use = us_mask if mode == "conditional_us" else np.ones(len(s_mask), bool)
        logw = model._class_logw(codes, lp, lpi, use)[0]
    if model._zeros is not None and mode == "posterior_class":
        import bayes_risk.models.dpmpm.zeros_loglik as zl

        logw = zl.posterior_class_weights(model, draw, codes, logw)
    z = _draw_categorical(logw, rng)
    cols = {}
    phi = model._phi[draw]  # [L, K]
    for j in np.flatnonzero(s_mask):
        base, dj = model._offsets[j], model._d[j]
        cum = np.cumsum(phi[base : base + dj, :], axis=0).T[z]  # [n_rows, d_j]
        u = rng.random(len(rows)) * cum[:, -1]
        cj = np.minimum((cum < u[:, None]).sum(axis=1), dj - 1)
        cols[j] = cj
    if model._zeros is not None:  # never an impossible record: rejection
        import bayes_risk.models.dpmpm.zeros_loglik as zl

        before = (np.full((len(rows), len(s_mask)), -1, dtype=np.int64) if data is None
                  else model._encode(data.iloc[rows], name="data"))
        zl.fix_synthesis(model, draw, rng, before, np.broadcast_to(logw, (len(rows),
                         logw.shape[1])), z, cols, keep_class=mode == "posterior_class")
    cols = {schema.names[j]: v for j, v in cols.items()}
    if data is None:
        return pd.DataFrame(
            {c: model._decode_column(cols[c], j) for j, c in enumerate(schema.names)}
        )
    out = data.copy()
    for j, name in enumerate(schema.names):
        if name not in cols:
            continue
        new = model._decode_column(cols[name], j)
        if len(rows) == n:
            is_cat = isinstance(new.dtype, pd.CategoricalDtype)
            out[name] = new if is_cat else new.to_numpy()
        else:
            col = out[name].astype(object).to_numpy(copy=True)
            col[rows] = new.astype(object).to_numpy()
            dtype = model.dtypes_.get(name, "object")
            s = pd.Series(col)
            try:
                if dtype.startswith("category"):
                    s = pd.Series(pd.Categorical(col, categories=list(schema[name].levels),
                                                 ordered=dtype == "category-ordered"))
                else:
                    s = s.astype(dtype)
            except (TypeError, ValueError):
                pass
            out[name] = s
    return out.reset_index(drop=True)


# ---------------------------------------------------------------------- helpers
def _draw_categorical(logw: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One draw per row from unnormalised log-weights (inverse CDF with one uniform per row)."""
    logw = np.asarray(logw, dtype=np.float64)
    mx = logw.max(axis=1, keepdims=True)
    w = np.exp(logw - mx)
    cum = np.cumsum(w, axis=1)
    u = rng.random(logw.shape[0]) * cum[:, -1]
    return np.minimum((cum < u[:, None]).sum(axis=1), logw.shape[1] - 1)


def _dtypes_of(df: pd.DataFrame) -> dict[str, str]:
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
