"""Synthesis of :class:`~bayes_risk.models.PoissonMixture`: one dataset from one posterior draw
(Hu 2019 §3.3.3)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

import bayes_risk.models.poisson.kernels as pk
from bayes_risk.exceptions import ValidationError
from bayes_risk.models._bayesian.design import apply_dtypes
from bayes_risk.models.poisson.loglik import group_totals
from bayes_risk.models.poisson.state import PoissonState


def synthesize_one(state: PoissonState, draw: int, rng: np.random.Generator,
                   data: pd.DataFrame | None, *, dtypes: Mapping[str, Any]) -> pd.DataFrame:
    """One synthetic dataset from flattened posterior draw ``draw`` (the records that are not
    selected, and the columns outside the mixture, are copied from ``data``; ``dtypes``: the
    fitted table's dtypes)."""
    cols = state.columns
    n = state.n_records
    log_pi, lam = state.params(np.array([draw]))
    log_pi, lam = log_pi[0], lam[0]
    K = lam.shape[0]
    if data is not None:
        out = data.copy()
    else:
        out = pd.DataFrame({c: np.zeros(n, dtype=np.int64) for c in state.schema.names})
        unsyn = [c for c in state.schema.names if c not in cols]
        if unsyn:
            raise ValidationError(
                "this model has unsynthesized columns but no confidential data to copy them "
                "from; refit, or build it with from_posterior(..., data=...)."
            )
    rows = state.rows  # every record unless synthesized_records was given
    if state.model_class == "P":
        k = rng.choice(K, size=rows.size, p=np.exp(log_pi) / np.exp(log_pi).sum())
        vals = rng.poisson(lam[k]).astype(np.int64)
    else:
        y = data[cols].to_numpy(dtype=np.float64)
        z = state.memberships_of(draw)
        if z is None or z.shape[0] != n:
            z = pk.sample_memberships(y, log_pi, lam, rng)
        if state.variant == "mp":  # posterior_class
            vals = rng.poisson(lam[z[rows]]).astype(np.int64)
        else:
            vals = np.empty((rows.size, len(cols)), dtype=np.int64)
            for j in range(len(cols)):
                groups, ng = state.groups(y[:, j], z, K)
                totals = group_totals(y[:, j], groups, ng)
                if rows.size:
                    vals[:, j] = pk.redistribute_totals(groups[rows], totals, rng)
    for j, c in enumerate(cols):
        if rows.size == n:
            out[c] = vals[:, j]
        else:  # the records that are not selected keep their values (a missing one: NaN)
            col = out[c].to_numpy(dtype=np.float64 if out[c].isna().any() else np.int64,
                                  copy=True)
            col[rows] = vals[:, j]
            out[c] = col
    out = out[state.schema.names].reset_index(drop=True)
    return apply_dtypes(out, {k: v for k, v in dtypes.items() if k not in cols}, state.schema)

