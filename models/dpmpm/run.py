"""The layout of the DPMPM posterior for its Gibbs run in a plain loop
(``bayes_risk.models._bayesian.gibbs.sample_gibbs``), the DataTree ``pm.sample`` gives."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:  # pragma: no cover
    pass


__all__ = ["gibbs_layout"]


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
