"""The fitted state of a :class:`~bayes_risk.models.dpmpm.dpmpm.DPMPM`, built whenever its
posterior is set."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np

from bayes_risk.data.schema import Schema
from bayes_risk.models._bayesian.posterior import PosteriorVariable
from bayes_risk.models._bayesian.records import stacked_values

if TYPE_CHECKING:  # pragma: no cover
    import xarray as xr

    from bayes_risk.models.dpmpm.zeros import StructuralZeros

__all__ = ["DPMPMState", "POSTERIOR_VARIABLES", "build_state"]

#: the variables of a DPMPM posterior (``DPMPM.posterior_variables``), in the order of the draws
POSTERIOR_VARIABLES = (
    PosteriorVariable("alpha", (), "positive", fill=float("nan")),  # nan: not drawn
    PosteriorVariable("V", ("stick",), "unit_interval", required=False),
    PosteriorVariable("phi_{j}", ("component", "level_{j}"), "simplex"),
    PosteriorVariable("pi", ("component",), "simplex", sticks="V"),
)


@dataclass(frozen=True, eq=False)
class DPMPMState:
    """Arrays of a fitted DPMPM, read by the family's module-level functions: ``d`` (levels of each
    column), ``offsets`` (first row of each column in the stacked ``φ [H, L, K]``, ``L = Σ_j d_j``),
    ``log_pi [H, K]``, ``zeros`` (the structural zeros of the schema, or ``None``) and the posterior
    ``tree`` (``phi`` stacked from it on first use).
    """

    schema: Schema
    d: np.ndarray
    offsets: np.ndarray
    log_pi: np.ndarray
    zeros: StructuralZeros | None
    tree: xr.DataTree

    @property
    def n_components(self) -> int:
        """The truncation level ``K``."""
        return int(self.log_pi.shape[1])

    # the [H, L, K] arrays of φ and log φ (32 MB on NYexample) are built on first use: a fit
    # that is saved, as `bayes-risk fit` does, never reads them
    @cached_property
    def phi(self) -> np.ndarray:
        """φ of every draw, stacked over the columns' levels: ``[H, L, K]`` (C order)."""
        post = self.tree["posterior"]
        out = np.empty((self.log_pi.shape[0], int(self.d.sum()), self.n_components))
        for j, off in enumerate(self.offsets):  # [H, K, d_j] -> rows off..off+d_j
            out[:, off : off + self.d[j], :] = np.transpose(
                stacked_values(post, f"phi_{j}"), (0, 2, 1))
        return out

    @cached_property
    def logphi(self) -> np.ndarray:
        """``log φ`` (``[H, L, K]``), built on first use."""
        with np.errstate(divide="ignore"):
            return np.log(self.phi)

    @cached_property
    def synthesized(self) -> np.ndarray:
        """``[p]`` bool: the synthesized columns (``S``)."""
        syn = set(self.schema.synthesized)
        return np.array([c in syn for c in self.schema.names], dtype=bool)

    @property
    def unsynthesized(self) -> np.ndarray:
        """``[p]`` bool: the unsynthesized columns (``US``)."""
        return ~self.synthesized

    def draws(self, idx: np.ndarray | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(log φ, log π, φ)`` of the flattened draws ``idx`` (``None``: all draws, the stored
        arrays themselves, read only, no copy)."""
        if idx is None:
            return self.logphi, self.log_pi, self.phi
        return self.logphi[idx], self.log_pi[idx], self.phi[idx]


def build_state(tree: xr.DataTree, schema: Schema, zeros: Any) -> DPMPMState:
    """The state of the posterior ``tree`` (validated) fitted with ``schema``."""
    d = np.array([len(c.levels) for c in schema], dtype=np.int64)
    pi = stacked_values(tree["posterior"], "pi")
    with np.errstate(divide="ignore"):
        log_pi = np.ascontiguousarray(np.log(pi))
    return DPMPMState(
        schema=schema, d=d, offsets=np.concatenate([[0], np.cumsum(d)[:-1]]).astype(np.int64),
        log_pi=log_pi, zeros=zeros, tree=tree,
    )
