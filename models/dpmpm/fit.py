"""Fitting of :class:`~bayes_risk.models.dpmpm.dpmpm.DPMPM`: the class-marginalised PyMC model
(the single source of truth for the density) and what follows sampling: the log-likelihood
statistic under NUTS, the truncation check and the
label-invariant convergence quantities.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from bayes_risk.exceptions import (
    CALLER,
    ConvergenceWarning,
    arg_name,
    has_option,
)
from bayes_risk.models._bayesian.records import stacked_values
from bayes_risk.models.dpmpm.coding import encode, refuse_unknown_levels
from bayes_risk.models.dpmpm.state import DPMPMState

if TYPE_CHECKING:  # pragma: no cover
    import xarray as xr

    from bayes_risk.models.dpmpm.zeros import StructuralZeros


def build_model(
    codes: np.ndarray | None, d: Sequence[int], zeros: StructuralZeros | None, *,
    n_components: int, alpha_prior: tuple[float, float], dirichlet_prior: float,
    transforms: bool, observed: bool = True,
):
    """The class-marginalised PyMC model: the density every kernel is tested against.

    ``codes``: the observed records (``observed=True``), ``d`` the levels of each column,
    ``zeros`` the structural zeros, the others the model's settings of those names.
    ``transforms=False`` gives the value variables on the constrained scale (the Gibbs step
    writes draws directly); ``True`` keeps PyMC's default transforms (NUTS).
    """
    import pymc as pm
    import pytensor.tensor as pt

    K = int(n_components)
    a_alpha, b_alpha = (float(x) for x in alpha_prior)
    tr = {} if transforms else {"default_transform": None}
    coords = {"component": np.arange(K)}
    if K > 1:
        coords["stick"] = np.arange(K - 1)
    for j, dj in enumerate(d):
        coords[f"level_{j}"] = np.arange(dj)
    with pm.Model(coords=coords) as model:
        alpha = pm.Gamma("alpha", alpha=a_alpha, beta=b_alpha, **tr)
        if K > 1:
            V = pm.Beta("V", alpha=1.0, beta=alpha, dims="stick", **tr)
            l1 = pt.log1p(-V)
            cum = pt.cumsum(l1)
            head = pt.concatenate([pt.zeros(1), cum[:-1]])
            log_pi = pt.concatenate([pt.log(V) + head, cum[-1:]])
        else:
            log_pi = pt.zeros(1)
        pm.Deterministic("pi", pt.exp(log_pi), dims="component")
        log_phis = []
        for j, dj in enumerate(d):
            phi = pm.Dirichlet(
                f"phi_{j}",
                a=np.full((K, dj), float(dirichlet_prior)),
                dims=("component", f"level_{j}"),
                **tr,
            )
            log_phis.append(pt.log(phi))
        if observed:
            # the last parameter only carries the record length p into the signature
            sig = ",".join(["(k)"] + [f"(k,d{j})" for j in range(len(d))] + ["(p)"]) + "->(p)"
            pm.CustomDist(
                "y",
                log_pi,
                *log_phis,
                np.zeros(len(d)),
                logp=_marginal_logp,
                observed=np.asarray(codes, dtype=np.int64),
                signature=sig,
                dtype="int64",
            )
            if zeros is not None:  # truncated to the allowed cells
                from bayes_risk.models.dpmpm.zeros import pymc_log_allowed

                pm.Potential("structural_zeros", -len(codes) * pymc_log_allowed(
                    zeros, log_pi, log_phis))
    return model


def observed_codes(state: DPMPMState, records: pd.DataFrame) -> np.ndarray:
    """Codes of ``records`` as observed data of :meth:`DPMPM.pymc_model` (``UNKNOWN_LEVEL`` for a
    level the model was not fitted with)."""
    codes = encode(state.schema, records)
    refuse_unknown_levels(state.schema, codes, code="UNKNOWN_LEVEL")
    return codes


def add_loglik_stat(state: DPMPMState, codes: np.ndarray) -> None:
    """Add ``loglik`` (the observed-data log-likelihood of ``codes`` at each draw) to the
    ``sample_stats`` of the state's posterior (NUTS: the Gibbs sweep records its own)."""
    import xarray as xr

    import bayes_risk.models.dpmpm.kernels as kern

    p = codes.shape[1]
    ll = kern.lse_two_sum(
        codes, np.ones(p, bool), codes, np.zeros(p, bool), state.offsets,
        state.logphi, state.log_pi, np.arange(codes.shape[0], dtype=np.int64), state.phi,
    )
    if state.zeros is not None:  # the truncated model's (records in S are refused at fit)
        ll = ll - codes.shape[0] * state.zeros.log_allowed(state.phi, state.log_pi)
    tree = state.tree
    post = tree["posterior"]
    shape = (post.sizes["chain"], post.sizes["draw"])
    da = xr.DataArray(ll.reshape(shape), dims=("chain", "draw"),
                      coords={"chain": post["chain"].values, "draw": post["draw"].values})
    if "sample_stats" in tree.children:
        ds = tree["sample_stats"].to_dataset().assign(loglik=da)
    else:
        ds = xr.Dataset({"loglik": da})
    tree["sample_stats"] = xr.DataTree(ds)


def check_truncation(posterior: xr.DataTree, n_components: int) -> list[str]:
    """``["TRUNCATION_TOO_SMALL"]`` (and its warning) when a **kept** draw of ``posterior``
    occupies ``K − 1`` or more of the ``n_components`` classes, else ``[]``.

    Warm-up draws are not read: they include the starting state, which says nothing about
    whether the truncation is large enough for the posterior.
    """
    K = int(n_components)
    if K < 3:
        return []
    kmax = 0
    if "sample_stats" in posterior.children and (
        "k_occupied" in posterior["sample_stats"].data_vars
    ):
        vals = np.asarray(posterior["sample_stats"]["k_occupied"].values)
        if vals.size:
            kmax = int(vals.max())
    if kmax >= K - 1:
        warnings.warn(
            ConvergenceWarning(
                f"DPMPM: kept posterior draws occupy up to {kmax} of the K = {K} classes "
                "(TRUNCATION_TOO_SMALL): the truncation may cut off posterior mass; "
                + _more_components() + ".",
                code="TRUNCATION_TOO_SMALL",
            ),
            skip_file_prefixes=CALLER,
        )
        return ["TRUNCATION_TOO_SMALL"]
    return []


def _more_components() -> str:
    """The remedy of ``TRUNCATION_TOO_SMALL`` as the caller can apply it: the setting in
    Python, ``--components`` of ``fit`` (a refit in another sub-command refits the model it
    was given: fit that one again)."""
    if has_option("n_components"):
        return f"increase {arg_name('n_components')}"
    return "fit the model again with more classes (bayes-risk fit --components)"


def convergence_quantities(state: DPMPMState) -> dict[str, np.ndarray]:
    """The label-invariant quantities of the convergence checks, each ``[chain, draw]``:
    log-likelihood, α, occupied classes and a few cell probabilities."""
    tree = state.tree
    post = tree["posterior"]
    C, D = post.sizes["chain"], post.sizes["draw"]
    out: dict[str, np.ndarray] = {}
    stats = tree["sample_stats"] if "sample_stats" in tree.children else None
    if stats is not None and "loglik" in stats.data_vars:
        out["loglik"] = np.asarray(stats["loglik"].values, dtype=float)
    alpha = np.asarray(post["alpha"].values, dtype=float)
    if np.all(np.isfinite(alpha)) and state.n_components > 1:
        out["alpha"] = alpha
    if stats is not None and "k_occupied" in stats.data_vars:
        out["k_occupied"] = np.asarray(stats["k_occupied"].values, dtype=float)
    pi = np.exp(state.log_pi)  # [H, K]
    schema = state.schema
    names = schema.names
    # φ_kj of each column's first level, [H, K], read from the posterior (not state.phi)
    first = [np.ascontiguousarray(stacked_values(post, f"phi_{j}")[:, :, 0])
             for j in range(min(3, len(names)))]
    for j in range(min(3, len(names))):
        cell = np.einsum("hk,hk->h", pi, first[j])
        out[f"P({names[j]}={schema.columns[j].levels[0]})"] = cell.reshape(C, D)
    if len(names) >= 2:
        cell = np.einsum("hk,hk,hk->h", pi, first[0], first[1])
        lv0, lv1 = schema.columns[0].levels[0], schema.columns[1].levels[0]
        out[f"P({names[0]}={lv0},{names[1]}={lv1})"] = cell.reshape(C, D)
    if state.zeros is not None:  # the truncated model's cells (the mass on S is not identified)
        import bayes_risk.models.dpmpm.zeros_loglik as zl

        out.update(zl.convergence_cells(state, C, D))
    return out


def _marginal_logp(value, log_pi, *params):
    """PyMC log-density of each record, classes and missing entries (code -1) marginalised."""
    import pytensor.tensor as pt

    # PyMC prepends length-1 batch dimensions to the parameters: drop them
    log_pi = log_pi[(0,) * (log_pi.ndim - 1)]
    log_phis = [lp[(0,) * (lp.ndim - 2)] for lp in params[:-1]]
    terms = log_pi[None, :]
    for j, lphi in enumerate(log_phis):
        col = value[:, j]  # noqa: B023
        obs = pt.ge(col, 0)
        lp = lphi[:, pt.maximum(col, 0)].T  # [n, K]
        terms = terms + pt.switch(obs[:, None], lp, 0.0)
    return pt.logsumexp(terms, axis=1)
