"""Fitting of :class:`~bayes_risk.models.PoissonMixture`: the PyMC model (the MP density) and the
blocked Gibbs step, which records the memberships of every kept draw (group ``latent``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import numpy as np

import bayes_risk.models.poisson.kernels as pk
from bayes_risk._rng import RandomSeed, as_generator
from bayes_risk.models._bayesian.records import stacked_values
from bayes_risk.models._bayesian.sticks import (
    label_switch_moves,
    sample_alpha,
    sample_sticks,
    stick_breaking_log_parts,
)

if TYPE_CHECKING:  # pragma: no cover
    import xarray as xr


LATENT_GROUP = "latent"  # posterior group holding the Gibbs sampler's memberships z


def _pt_log_stick(v):
    """PyTensor version of :func:`~bayes_risk.models._bayesian.sticks.stick_breaking_log`."""
    import pytensor.tensor as pt

    log_v = pt.concatenate([pt.log(v), pt.zeros((1,))])
    cum = pt.concatenate([pt.zeros((1,)), pt.cumsum(pt.log1p(-v))])
    return log_v + cum


def _mp_logp(value, log_pi, lam):
    """Class-marginalised record log-density of the MP model (one value per record)."""
    import pymc as pm

    terms = pm.logp(pm.Poisson.dist(mu=lam), value[..., None, :]).sum(axis=-1) + log_pi
    return pm.math.logsumexp(terms, axis=-1, keepdims=False)


def _mp_logp_missing(value, log_pi, lam):
    """:func:`_mp_logp` of records whose missing counts are coded ``-1``: their Poisson factors
    are left out (summed over every count)."""
    import pymc as pm
    import pytensor.tensor as pt

    v = value[..., None, :]
    cell = pm.logp(pm.Poisson.dist(mu=lam), pt.maximum(v, 0))
    terms = pt.switch(pt.ge(v, 0), cell, 0.0).sum(axis=-1) + log_pi
    return pm.math.logsumexp(terms, axis=-1, keepdims=False)


@lru_cache(maxsize=1)
def _gibbs_step_class() -> type:
    """The blocked Gibbs ``BlockedStep`` (defined on first use so that PyMC loads lazily)."""
    from pymc.step_methods.compound import BlockedStep, Competence

    from bayes_risk.models._bayesian.generator import ChainGenerator
    from bayes_risk.models._bayesian.starts import initial_state

    # ChainGenerator: the label moves' generator handle, read once per chain
    class PoissonMixtureGibbs(ChainGenerator, BlockedStep):
        """One blocked Gibbs sweep of the MP model (Hu 2019 §3.3.3; stick breaking, α step).

        ``λ | z``, ``V | z``, ``α | V``, then ``z | π, λ`` (so the recorded memberships are a
        draw given the recorded ``Θ``), stored on the step (``z_trace``).
        """

        name = "poisson_mixture_gibbs"
        stats_dtypes_shapes = {
            "n_occupied": (np.int64, []),
            "loglik": (np.float64, []),
        }

        def __init__(self, vars, *, y, K, a_lam, b_lam, a_alpha, b_alpha, names,
                     starts=("prior",), model=None, blocked=True, rng=None):
            self.vars = list(vars)
            self.y = np.ascontiguousarray(y, dtype=np.float64)
            # with missing counts (NaN) the rate of λ_kj counts the members observed in column
            # j: their missing counts are summed out, not imputed (methods, Poisson mixtures)
            miss = np.isnan(self.y)
            self.observed = (~miss).astype(np.float64) if miss.any() else None
            self.K = int(K)
            self.a_lam = float(a_lam)
            self.b_lam = np.asarray(b_lam, dtype=np.float64)
            self.a_alpha = float(a_alpha)
            self.b_alpha = float(b_alpha)
            self.names = dict(names)
            self.starts = tuple(starts)  # cycled over the chains (PoissonMixture.starts)
            self.rng = np.random.default_rng(rng)
            self.stats_dtypes = [{"n_occupied": np.int64, "loglik": np.float64}]
            self.z_trace: list[list[np.ndarray]] = []
            self._z: np.ndarray | None = None
            self._sticks = None
            self._tune = 0
            self._it = 0

        @staticmethod
        def competence(var, has_grad):
            return Competence.INCOMPATIBLE

        def setup_chain(self, rng, tune, draws):
            super().setup_chain(rng, tune, draws)
            self._z = None
            self._sticks = None
            self._tune = int(tune)
            self._it = 0
            self.z_trace.append([])

        def step(self, point):
            rng = self.rng
            y, K = self.y, self.K
            n = y.shape[0]
            if self._z is None:  # chain c (pm.sample starts them in turn here) starts as
                # starts[c] says (models._bayesian.starts; "prior": a few occupied classes)
                c = len(self.z_trace) - 1
                self._z, alpha = initial_state(self.starts[c % len(self.starts)], n, K,
                                               self.a_alpha, self.b_alpha, rng)
            else:
                alpha = float(np.exp(point[self.names["alpha"]])) if "alpha" in self.names else 1.0
                if K > 1 and self._sticks is not None:  # label moves (see _bayesian.sticks.py)
                    nk0 = np.bincount(self._z, minlength=K)
                    self._z = label_switch_moves(nk0, *self._sticks,
                                                     self._generator())[self._z]
            n_k, s_kj = pk.component_stats(y, self._z, K)
            n_obs = n_k if self.observed is None else pk.component_stats(
                self.observed, self._z, K)[1]
            shape, rate = pk.lambda_params(n_obs, s_kj, self.a_lam, self.b_lam)
            lam = rng.gamma(shape, 1.0 / rate)
            lam = np.maximum(lam, 1e-300)
            new = dict(point)
            if K > 1:
                # log-space sticks, never clipped (stick breaking)
                log_v, log_1mv = sample_sticks(n_k, alpha, rng)
                alpha = sample_alpha(log_1mv, self.a_alpha, self.b_alpha, rng)
                log_pi = stick_breaking_log_parts(log_v, log_1mv)
                self._sticks = (log_v, log_1mv)
                new[self.names["v"]] = np.asarray(log_v - log_1mv)  # logit V
                new[self.names["alpha"]] = np.asarray(np.log(alpha))
            else:
                log_pi = np.zeros(1)
            new[self.names["lam"]] = np.log(lam)
            self._z, loglik = pk.sample_memberships(y, log_pi, lam, rng, return_loglik=True)
            if self._it >= self._tune:
                self.z_trace[-1].append(self._z.astype(np.int32))
            self._it += 1
            n_occ = int(np.count_nonzero(np.bincount(self._z, minlength=K)))
            return new, [{"n_occupied": n_occ, "loglik": loglik}]

    return PoissonMixtureGibbs


def build_pymc_model(
    y: np.ndarray, columns: Sequence[str], b: np.ndarray, *, n_components: int,
    a_lambda: float, a_alpha: float, b_alpha: float,
):
    """The work of :meth:`PoissonMixture.build_pymc_model` (documented there), with the prior
    rates ``b`` of ``λ`` resolved."""
    import pymc as pm
    import pytensor.tensor as pt

    y = np.asarray(y)
    K = int(n_components)
    coords = {
        "component": np.arange(K),
        "stick": np.arange(max(K - 1, 0)),
        "column": list(columns),
        "record": np.arange(y.shape[0]),
    }
    with pm.Model(coords=coords) as model:
        if K > 1:
            alpha = pm.Gamma("alpha", alpha=float(a_alpha), beta=float(b_alpha))
            v = pm.Beta("v", alpha=1.0, beta=alpha, dims="stick")
            log_pi = _pt_log_stick(v)
        else:
            log_pi = pt.zeros((1,))
        pm.Deterministic("w", pt.exp(log_pi), dims="component")
        lam = pm.Gamma(
            "lam", alpha=float(a_lambda), beta=np.asarray(b, dtype=np.float64)[None, :],
            dims=("component", "column"),
        )
        miss = np.isnan(np.asarray(y, dtype=np.float64))
        pm.CustomDist(
            "y", log_pi, lam, logp=_mp_logp_missing if miss.any() else _mp_logp,
            signature="(k),(k,p)->(p)",
            observed=np.where(miss, -1, y).astype(np.int64), dims=("record", "column"),
        )
    return model


def pymc_record_logp(model: Any, tree: xr.DataTree, n: int, idx: np.ndarray) -> np.ndarray:
    """The work of :meth:`PoissonMixture.pymc_record_logp`."""
    post = tree["posterior"]
    obs = model["y"]
    fn = model.compile_fn(
        model.logp(vars=[obs], sum=False)[0], inputs=model.value_vars, point_fn=True,
        on_unused_input="ignore",
    )
    names = {rv.name: model.rvs_to_values[rv].name for rv in model.free_RVs}
    lam = stacked_values(post, "lam", idx)
    v = stacked_values(post, "v", idx) if "v" in names else None
    alpha = stacked_values(post, "alpha", idx) if "alpha" in names else None
    out = np.empty((idx.size, n))
    for r in range(idx.size):
        pt_ = {names["lam"]: np.log(lam[r])}
        if v is not None:
            pt_[names["v"]] = np.log(v[r]) - np.log1p(-v[r])
            pt_[names["alpha"]] = np.asarray(np.log(alpha[r]))
        out[r] = fn(pt_)
    return out


def sample_gibbs(
    model: Any, y: np.ndarray, seed: RandomSeed, *, run_sampler: Callable[..., xr.DataTree],
    n_components: int, a_lambda: float, b_lambda: np.ndarray, a_alpha: float, b_alpha: float,
    starts: tuple[str, ...], chains: int,
) -> xr.DataTree:
    """Draws by the blocked Gibbs step through ``run_sampler``, memberships in group ``latent``."""
    import xarray as xr

    names = {rv.name: model.rvs_to_values[rv].name for rv in model.free_RVs}
    step_cls = _gibbs_step_class()
    step = step_cls(
        [model.rvs_to_values[rv] for rv in model.free_RVs], y=y, K=int(n_components),
        a_lam=float(a_lambda), b_lam=b_lambda, a_alpha=float(a_alpha),
        b_alpha=float(b_alpha), names=names, starts=starts, model=model,
        rng=as_generator(seed).integers(0, 2**63 - 1),
    )
    # the memberships live on the step object: chains must run in this process
    dt = run_sampler(model, step=step, random_seed=seed, cores=1)
    from bayes_risk.models._bayesian.regimes import record_starts

    record_starts(dt, starts, int(chains))
    z = np.stack([np.stack(c) for c in step.z_trace])  # [chain, draw, record]
    dt[LATENT_GROUP] = xr.DataTree(
        xr.Dataset(
            {"z": (("chain", "draw", "record"), z)},
            coords={"chain": dt["posterior"]["chain"].values,
                    "draw": dt["posterior"]["draw"].values},
        )
    )
    return dt

