"""The layout of the DPMPM posterior for its Gibbs run in a plain loop
(``bayes_risk.models._bayesian.gibbs.sample_gibbs``), the DataTree ``pm.sample`` gives."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["gibbs_layout"]


def gibbs_layout(n_components: int, d: Sequence[int]) -> Any:
    """The DPMPM's posterior variables (``alpha``, ``V`` when K > 1, ``phi_j``) as the
    Gibbs run records them, then the weights ``pi`` made from the sticks."""
    from bayes_risk.models._bayesian.gibbs import GibbsLayout
    from bayes_risk.models._bayesian.posterior import PosteriorDims, concrete, stick_weights
    from bayes_risk.models.dpmpm.state import POSTERIOR_VARIABLES

    K = int(n_components)
    sizes = {"component": K, "stick": K - 1, **{f"level_{j}": int(n) for j, n in enumerate(d)}}
    every = [v for v, _ in concrete(PosteriorDims(columns={str(j): "" for j in range(len(d))}),
                                    POSTERIOR_VARIABLES) if K > 1 or v.name != "V"]
    drawn = [v for v in every if v.sticks is None]
    made = [v for v in every if v.sticks is not None]

    def weights(draws: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        return {v.name: stick_weights(draws.get(v.sticks), K, draws["alpha"].shape) for v in made}

    return GibbsLayout(shapes={v.name: tuple(sizes[x] for x in v.dims) for v in drawn},
                       dims={v.name: v.dims for v in every},
                       coords={x: np.arange(sizes[x]) for v in every for x in v.dims},
                       deterministics=weights)
