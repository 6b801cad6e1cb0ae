"""The fitted state of a :class:`~bayes_risk.models.PoissonMixture`, built whenever its posterior
is set."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

import bayes_risk.models.poisson.kernels as pk
from bayes_risk.data.schema import Schema
from bayes_risk.data.validate import require_columns, require_frame, validate_table
from bayes_risk.models._bayesian.records import stacked_values
from bayes_risk.models.poisson.fit import LATENT_GROUP

if TYPE_CHECKING:  # pragma: no cover
    import xarray as xr

__all__ = ["PoissonState"]


@dataclass(frozen=True, eq=False)
class PoissonState:
    """The posterior and settings of a fitted Poisson mixture, read by the family's functions:
    ``columns`` (the modelled count columns), ``variant``, ``q`` (TCMM tail quantile),
    ``model_class``, ``tree`` (the posterior; group ``latent`` holds the recorded memberships),
    ``synthesized_records`` (``None``: all) and ``n_records``.
    """

    schema: Schema
    columns: list[str]
    variant: str
    q: float
    model_class: str
    tree: xr.DataTree
    synthesized_records: np.ndarray | None
    n_records: int
    # the memberships that generated each released dataset, per (data, dataset) content: the
    # attribute engine asks once per record (loglik.generating_memberships)
    generating_cache: dict[tuple[str, str], np.ndarray] = field(default_factory=dict,
                                                                repr=False)

    @property
    def n_components(self) -> int:
        """The truncation level ``K`` of the posterior."""
        return int(self.tree["posterior"]["lam"].shape[2])

    @property
    def has_memberships(self) -> bool:
        """Whether the Gibbs sampler recorded the memberships of every draw."""
        return LATENT_GROUP in self.tree.children

    @property
    def rows(self) -> np.ndarray:
        """Positions of the records whose counts are replaced (all by default)."""
        if self.synthesized_records is None:
            return np.arange(self.n_records, dtype=np.int64)
        return np.flatnonzero(self.synthesized_records).astype(np.int64)

    def params(self, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``log π`` [H', K] and ``λ`` [H', K, p] of the flattened draws ``idx``."""
        post = self.tree["posterior"]
        w = stacked_values(post, "w", idx)
        lam = stacked_values(post, "lam", idx)
        with np.errstate(divide="ignore"):
            return np.log(w), lam

    def memberships_of(self, h: int) -> np.ndarray | None:
        """The memberships recorded with flattened draw ``h`` (``None`` without them)."""
        if not self.has_memberships:
            return None
        z = np.asarray(self.tree[LATENT_GROUP]["z"].values)
        return z.reshape(-1, z.shape[-1])[h].astype(np.int64)

    def counts(self, df: pd.DataFrame, name: str = "records", *, strict: bool = True
               ) -> np.ndarray:
        """The modelled count columns as floats; ``strict=False`` lets negative or non-integer
        values through (they have Poisson probability 0; candidates may hold them). Variant
        ``"mp"`` takes missing counts (NaN; its likelihoods sum them out)."""
        cols = self.columns
        require_columns(require_frame(df, name), cols, name)
        schema = self.schema.select(cols)
        if not strict:
            schema = schema.with_types(**{c: "continuous" for c in cols})
        validate_table(df[cols], schema, name=name, allow_nan=self.variant == "mp",
                       missing_hint="" if self.variant == "mp" else (
                           f"Variant {self.variant!r} takes complete counts only."))
        return df[cols].to_numpy(dtype=np.float64)

    def groups(self, ycol: np.ndarray, z: np.ndarray, K: int) -> tuple[np.ndarray, int]:
        """Redistribution groups of one column: components (MM) or components + tail (TCMM);
        under partial synthesis only the selected records (others ``-1``)."""
        ng = K + 1 if self.variant == "tcmm" else K
        sel = self.synthesized_records
        if sel is None:
            if self.variant == "tcmm":
                return pk.tcmm_groups(ycol, z, K, float(self.q))[0], ng
            return np.asarray(z, dtype=np.int64), ng
        g = np.full(np.shape(ycol)[0], -1, dtype=np.int64)
        if sel.any():
            if self.variant == "tcmm":
                g[sel] = pk.tcmm_groups(np.asarray(ycol)[sel], np.asarray(z)[sel], K,
                                        float(self.q))[0]
            else:
                g[sel] = np.asarray(z, dtype=np.int64)[sel]
        return g, ng

