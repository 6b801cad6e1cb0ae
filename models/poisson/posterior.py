"""Posterior of :class:`~bayes_risk.models.PoissonMixture`: convergence quantities."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from bayes_risk.models.poisson.state import PoissonState


def convergence_quantities(state: PoissonState) -> dict[str, np.ndarray]:
    """Label-invariant scalars per ``[chain, draw]``: the posterior predictive mean and variance
    of each column (and ``alpha``, the log-likelihood and the occupied components when recorded)."""
    post = state.tree["posterior"]
    w = np.asarray(post["w"].transpose("chain", "draw", "component").values)
    lam = np.asarray(post["lam"].transpose("chain", "draw", "component", "column").values)
    out: dict[str, np.ndarray] = {}
    if "alpha" in post.data_vars:
        out["alpha"] = np.asarray(post["alpha"].values)
    # label-invariant: posterior predictive mean and variance of each column
    mean = np.einsum("cdk,cdkj->cdj", w, lam)
    second = np.einsum("cdk,cdkj->cdj", w, lam + lam**2)
    for j, c in enumerate(state.columns):
        out[f"mean[{c}]"] = mean[..., j]
        out[f"var[{c}]"] = second[..., j] - mean[..., j] ** 2
    if "sample_stats" in state.tree.children:
        ss = state.tree["sample_stats"]
        for name in ("loglik", "n_occupied"):
            if name in ss.data_vars:
                out[name] = np.asarray(ss[name].values, dtype=np.float64)
    return out
