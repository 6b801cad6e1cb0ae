"""Synthesis of :class:`~bayes_risk.models.dpmpm.dpmpm.DPMPM`: each record's class, then its
synthesized values, from one posterior draw, decoded back to the data's dtypes."""

from __future__ import annotations

import numpy as np
import pandas as pd

import bayes_risk.models.dpmpm.zeros_loglik as zl
from bayes_risk.models.dpmpm.coding import class_logw, decode_column, encode
from bayes_risk.models.dpmpm.state import DPMPMState


def synthesize_one(
    state: DPMPMState, draw: int, rng: np.random.Generator, data: pd.DataFrame | None, *,
    mode: str, rows: np.ndarray, n: int, dtypes: dict[str, str],
) -> pd.DataFrame:
    """One synthetic dataset of ``n`` records from flattened draw ``draw`` in synthesis mode
    ``mode``: the records ``rows`` get synthesized values, the others (and the unsynthesized
    columns) are those of ``data``; values come back in the data's ``dtypes``."""
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


def _draw_categorical(logw: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One draw per row from unnormalised log-weights (inverse CDF with one uniform per row)."""
    logw = np.asarray(logw, dtype=np.float64)
    mx = logw.max(axis=1, keepdims=True)
    w = np.exp(logw - mx)
    cum = np.cumsum(w, axis=1)
    u = rng.random(logw.shape[0]) * cum[:, -1]
    return np.minimum((cum < u[:, None]).sum(axis=1), logw.shape[1] - 1)
