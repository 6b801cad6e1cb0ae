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
from bayes_risk.models.dpmpm.state import DPMPMState
from bayes_risk.models.dpmpm.zeros import _UNKNOWN


def check_categorical(schema: Schema) -> None:
    """``WRONG_DTYPE`` for a column that is not categorical, ``MISSING_VALUES`` for one with
    no observed level."""
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


def encode(schema: Schema, df: pd.DataFrame, *, name: str = "records") -> np.ndarray:
    """Codes ``0..d_j-1`` of the levels of ``schema``; ``-1`` missing; ``-2`` a level the
    model was not fitted with."""
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


def synthesize_one(
    state: DPMPMState, draw: int, rng: np.random.Generator, data: pd.DataFrame | None, *,
    mode: str, rows: np.ndarray, n: int, dtypes: dict[str, str],
) -> pd.DataFrame:
    """One synthetic dataset of ``n`` records from flattened draw ``draw`` in synthesis mode
    ``mode``: the records ``rows`` get synthesized values, the others (and the unsynthesized
    columns) are those of ``data``; values come back in the data's ``dtypes``."""
    from bayes_risk.models.dpmpm.loglik import class_logw

    schema = state.schema
    s_mask, us_mask = state.synthesized, state.unsynthesized
    lp = state.logphi[draw : draw + 1]
    lpi = state.log_pi[draw : draw + 1]
    if mode == "marginal":
        logw = np.broadcast_to(lpi[0], (len(rows), lpi.shape[1]))
    else:
        codes = encode(schema, data.iloc[rows], name="data")
        use = us_mask if mode == "conditional_us" else np.ones(len(s_mask), bool)
        logw = class_logw(state, codes, lp, lpi, use)[0]
    if state.zeros is not None and mode == "posterior_class":
        import bayes_risk.models.dpmpm.zeros_loglik as zl

        logw = zl.posterior_class_weights(state, draw, codes, logw)
    z = _draw_categorical(logw, rng)
    cols = {}
    phi = state.phi[draw]  # [L, K]
    for j in np.flatnonzero(s_mask):
        base, dj = state.offsets[j], state.d[j]
        cum = np.cumsum(phi[base : base + dj, :], axis=0).T[z]  # [n_rows, d_j]
        u = rng.random(len(rows)) * cum[:, -1]
        cj = np.minimum((cum < u[:, None]).sum(axis=1), dj - 1)
        cols[j] = cj
    if state.zeros is not None:  # never an impossible record: rejection
        import bayes_risk.models.dpmpm.zeros_loglik as zl

        before = (np.full((len(rows), len(s_mask)), -1, dtype=np.int64) if data is None
                  else encode(schema, data.iloc[rows], name="data"))
        zl.fix_synthesis(state, draw, rng, before, np.broadcast_to(logw, (len(rows),
                         logw.shape[1])), z, cols, keep_class=mode == "posterior_class")
    cols = {schema.names[j]: v for j, v in cols.items()}
    if data is None:
        return pd.DataFrame(
            {c: decode_column(schema, dtypes, cols[c], j) for j, c in enumerate(schema.names)}
        )
    out = data.copy()
    for j, name in enumerate(schema.names):
        if name not in cols:
            continue
        new = decode_column(schema, dtypes, cols[name], j)
        if len(rows) == n:
            is_cat = isinstance(new.dtype, pd.CategoricalDtype)
            out[name] = new if is_cat else new.to_numpy()
        else:
            col = out[name].astype(object).to_numpy(copy=True)
            col[rows] = new.astype(object).to_numpy()
            dtype = dtypes.get(name, "object")
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
