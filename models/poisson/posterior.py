"""Posterior of :class:`~bayes_risk.models.PoissonMixture`: checks and convergence quantities."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from bayes_risk.exceptions import ValidationError
from bayes_risk.models._bayesian.sticks import stick_breaking_log
from bayes_risk.models.poisson.fit import LATENT_GROUP

if TYPE_CHECKING:
    import xarray as xr

    from bayes_risk.models.poisson.state import PoissonState


def validate_posterior(posterior: xr.DataTree, cols: list[str], n_components: int) -> None:
    """Check a posterior given to ``from_posterior`` (or read from a folder) against the count
    columns ``cols`` and the truncation level; put ``lam``, ``w`` and ``v`` in their dimensions
    (``w`` from ``v`` when absent)."""
    import xarray as xr

    post = posterior["posterior"]
    if "lam" not in post.data_vars:
        raise ValidationError(
            "a PoissonMixture posterior needs variable 'lam' [chain, draw, K, p].",
            code="POSTERIOR_INVALID"
        )
    lam = post["lam"]
    if lam.ndim != 4 or lam.shape[3] != len(cols):
        raise ValidationError(
            f"posterior 'lam' must have shape (chain, draw, K, p) with p = {len(cols)} "
            f"count columns {cols}. Got shape {tuple(lam.shape)}.",
            code="POSTERIOR_INVALID"
        )
    K = int(lam.shape[2])
    if K != int(n_components):
        raise ValidationError(
            f"posterior 'lam' has K = {K} components but n_components = {n_components}; "
            "pass n_components to match.",
            code="POSTERIOR_INVALID"
        )
    if np.any(~np.isfinite(lam.values)) or np.any(lam.values < 0):
        raise ValidationError("posterior 'lam' must hold finite non-negative rates.",
                              code="POSTERIOR_INVALID")
    lam_dims = ("chain", "draw", "component", "column")
    ds = post.to_dataset() if hasattr(post, "to_dataset") else post.ds
    ds = ds.copy()
    if tuple(lam.dims) != lam_dims:
        ds["lam"] = (lam_dims, lam.values)
    if "w" not in ds.data_vars:
        if K == 1:
            w = np.ones(lam.shape[:2] + (1,))
        elif "v" in ds.data_vars:
            v = np.asarray(ds["v"].values, dtype=np.float64)
            if v.shape[-1] != K - 1 or np.any((v <= 0) | (v >= 1)):
                raise ValidationError(
                    f"posterior 'v' must have K - 1 = {K - 1} stick proportions in (0, 1).",
                    code="POSTERIOR_INVALID"
                )
            w = np.exp(stick_breaking_log(v))
        else:
            raise ValidationError(
                "a PoissonMixture posterior needs 'w' (mixture weights) or 'v'.",
                code="POSTERIOR_INVALID"
            )
        ds["w"] = (("chain", "draw", "component"), w)
    w = np.asarray(ds["w"].values, dtype=np.float64)
    if w.shape[-1] != K or np.any(w < 0) or not np.allclose(w.sum(-1), 1.0, atol=1e-6):
        raise ValidationError(
            f"posterior 'w' must hold K = {K} non-negative weights summing to 1 per draw.",
            code="POSTERIOR_INVALID"
        )
    if tuple(ds["w"].dims) != ("chain", "draw", "component"):
        ds["w"] = (("chain", "draw", "component"), w)
    if "v" in ds.data_vars and tuple(ds["v"].dims) != ("chain", "draw", "stick"):
        ds["v"] = (("chain", "draw", "stick"), np.asarray(ds["v"].values))
    ds = ds.assign_coords(column=list(cols))
    posterior["posterior"] = xr.DataTree(ds)
    if LATENT_GROUP in posterior.children:
        z = posterior[LATENT_GROUP]["z"]
        if z.shape[:2] != lam.shape[:2] or np.any(z.values < 0) or np.any(z.values >= K):
            raise ValidationError(
                "latent 'z' must be [chain, draw, record] with values in 0..K-1.",
                code="POSTERIOR_INVALID"
            )


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
