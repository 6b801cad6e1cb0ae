"""Running the DPMPM's blocked Gibbs sampler (``DPMPM.fit`` with ``sampler="gibbs"``).

The sweep (``DPMPMGibbs``) updates every parameter, so the
fit runs it in a plain loop (``bayes_risk.models._bayesian.gibbs.sample_gibbs``) instead of
``pm.sample``: neither PyMC nor the class-marginalised PyMC model is loaded and nothing is
compiled. The posterior DataTree is the one ``pm.sample`` gives (``via_pymc=True`` still runs
that path with the sweep as a PyMC step; the tests compare the two).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from bayes_risk._rng import RandomSeed

if TYPE_CHECKING:  # pragma: no cover
    import xarray as xr


__all__ = ["gibbs_posterior", "gibbs_layout"]


def gibbs_layout(n_components: int, d: Sequence[int]) -> Any:
    """Variables, dims and coordinates of the DPMPM posterior, as ``DPMPM._build_model``
    declares them: ``alpha``, ``V`` (``stick``, when K > 1), ``phi_j`` (``component``,
    ``level_j``), then the deterministic ``pi`` (``component``) from the sticks."""
    from bayes_risk.models._bayesian.gibbs import GibbsLayout
    from bayes_risk.models._bayesian.sticks import stick_breaking_log

    K = int(n_components)
    shapes: dict[str, tuple[int, ...]] = {"alpha": ()}
    dims: dict[str, tuple[str, ...]] = {"alpha": ()}
    coords: dict[str, np.ndarray] = {"component": np.arange(K)}
    if K > 1:
        shapes["V"], dims["V"] = (K - 1,), ("stick",)
        coords["stick"] = np.arange(K - 1)
    for j, dj in enumerate(d):
        shapes[f"phi_{j}"] = (K, int(dj))
        dims[f"phi_{j}"] = ("component", f"level_{j}")
        coords[f"level_{j}"] = np.arange(int(dj))
    dims["pi"] = ("component",)

    def pi(draws: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        if K == 1:
            return {"pi": np.ones(draws["alpha"].shape + (1,))}
        return {"pi": np.exp(stick_breaking_log(draws["V"]))}

    return GibbsLayout(shapes=shapes, dims=dims, coords=coords, deterministics=pi)


def gibbs_posterior(
    model: Any,
    codes: np.ndarray,
    d: Sequence[int],
    random_seed: RandomSeed,
    *,
    via_pymc: bool = False,
    check: Callable[[xr.DataTree], str] | None = None,
) -> xr.DataTree:
    """Posterior draws of the DPMPM by blocked Gibbs (``model``'s MCMC settings).

    ``via_pymc=True`` builds the PyMC model and runs the same step through ``pm.sample``
    (same seed, same draws; slower and larger; never extended). ``check(tree) -> str``: the
    convergence checks of the kept draws (``sample_gibbs``), with ``model.max_sweeps`` the bound
    of a self-extending run (``DPMPM``, ``max_sweeps``).
    """
    from bayes_risk.models.dpmpm.step import DPMPMGibbs, pymc_step

    settings = dict(
        codes=codes,
        d=np.asarray(d, dtype=np.int64),
        n_components=int(model.n_components),
        alpha_prior=tuple(float(x) for x in model.alpha_prior),
        dirichlet_prior=float(model.dirichlet_prior),
        zeros=model._zeros,
        thin=int(model._run_settings()["thin"]),
    )
    settings["alpha_warmup_bound"], settings["alpha_warmup_sweeps"] = model._alpha_warmup()
    if via_pymc:
        pm_model = model._build_model(codes, d, transforms=False)
        step = pymc_step([pm_model.rvs_to_values[v] for v in pm_model.free_RVs],
                         model=pm_model, **settings)
        return model._run_sampler(pm_model, step=[step], random_seed=random_seed)
    layout = gibbs_layout(model.n_components, d)
    # the step updates every variable and reads none of a model's graph: no PyMC model (nor
    # PyMC) is needed
    step = DPMPMGibbs(list(layout.shapes), **settings)
    return model._run_gibbs(step, layout, random_seed=random_seed,
                            max_sweeps=(int(model._run_settings()["max_sweeps"])
                                        if check is not None else 0),
                            check=check)
