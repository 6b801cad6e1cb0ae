"""The fitted state of a :class:`~bayes_risk.models.SequentialRegression`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from bayes_risk.data.schema import Schema
from bayes_risk.models._bayesian.records import stacked_values
from bayes_risk.models.seqreg.draws import draw_name

if TYPE_CHECKING:  # pragma: no cover
    import xarray as xr

__all__ = ["SeqRegState"]

#: the parameters of each family's regression, as the posterior names them
_PARAMS = {"normal": ("beta", "sigma"), "categorical": ("probs",)}


@dataclass(frozen=True, eq=False)
class SeqRegState:
    """The chain of regressions of a fitted model and its posterior ``tree``."""

    schema: Schema
    order: tuple[str, ...]
    families: Mapping[str, str]
    designs: Mapping[str, Any]
    tree: xr.DataTree
    # all draws [H, ...] of a posterior variable, read off the DataTree once: the likelihoods
    # and the synthesis ask for a column's draws hundreds of times (the membership
    # normaliser), and each reading costs more than the gather of the draws wanted
    _draws: dict[str, np.ndarray] = field(default_factory=dict, repr=False)

    def draws(self, name: str) -> np.ndarray:
        """All draws ``[H, ...]`` of posterior variable ``name`` (read once)."""
        if name not in self._draws:
            self._draws[name] = stacked_values(self.tree["posterior"], name)
        return self._draws[name]

    def params(self, column: str, idx: np.ndarray) -> dict[str, np.ndarray]:
        """The draws ``idx`` of the parameters of ``column``'s regression (``beta``, and
        ``sigma`` for a normal one; ``probs`` for a categorical column without predictors)."""
        names = _PARAMS.get(self.families[column], ("beta",))
        return {nm: self.draws(draw_name(column, nm))[idx] for nm in names}
