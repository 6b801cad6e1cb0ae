"""The intruder who knows some of the other records: ``ScenarioSpec("known_records")``.

See :doc:`/methods/attribute` (Intruders who know some of the other records).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from bayes_risk.attribute.priors import Empirical, ModelPredictive, Prior
from bayes_risk.attribute.specs import ScenarioSpec, scenario_arg
from bayes_risk.data.validate import record_mask
from bayes_risk.exceptions import NotSupportedError, ValidationError

__all__ = ["KnownRecords", "known_mask", "known_records_plan", "check_known_records",
           "check_known_prior"]

#: records whose log-likelihoods are summed per call of ``record_loglik`` (memory ``H × this``)
_BLOCK = 2048


def known_mask(spec: ScenarioSpec, n: int) -> np.ndarray:
    """``[n]`` bool: the records the intruder of ``spec`` knows (nested as the fraction grows)."""
    if spec.known_fraction is not None:
        order = np.random.default_rng(0 if spec.seed is None else spec.seed).permutation(n)
        mask = np.zeros(n, dtype=bool)
        mask[order[: int(round(spec.known_fraction * n))]] = True
        return mask
    return record_mask(spec.known_records, n, argument="ScenarioSpec.known_records")


@dataclass(frozen=True)
class KnownRecords:
    """The known ``mask [n]`` and per model ``totals[k] [H_k]`` over the unknown records."""

    mask: np.ndarray
    totals: list[np.ndarray] = field(default_factory=list)
    #: how the mask was chosen (``settings`` of the result)
    description: dict[str, Any] = field(default_factory=dict)

    @property
    def everything(self) -> bool:
        """Whether every record is known (the worst case: no shift)."""
        return bool(self.mask.all())

    def shift(self, model: Any, orig: pd.DataFrame, k: int, pos: np.ndarray,
              draw_indices: np.ndarray | None) -> np.ndarray:
        """``D [R, H]`` subtracted from the log ratios of records ``pos`` under model ``k``."""
        own = _record_loglik(model, orig, pos, draw_indices)  # [H, R]
        unknown = ~self.mask[pos]
        return self.totals[k][None, :] - np.where(unknown[None, :], own, 0.0).T


def _record_loglik(model: Any, orig: pd.DataFrame, pos: np.ndarray,
                   draw_indices: np.ndarray | None) -> np.ndarray:
    """``[H, R]`` log p(y_i | Θ_h) of the rows ``pos`` (the model's record likelihood)."""
    return np.asarray(model.record_loglik(orig.iloc[np.asarray(pos)], draw_indices=draw_indices),
                      dtype=np.float64)


def check_known_records(model: Any, is_plugin: bool, compat: str | None) -> None:
    """What the scenario needs of the model: class P with posterior draws, no compat mode."""
    if is_plugin or getattr(model, "model_class", "O") != "P":
        raise NotSupportedError(
            f"{scenario_arg('known_records')} needs a class P model with posterior draws; "
            f"{type(model).__name__} is {'a plug-in' if is_plugin else 'class O'} (the "
            "unknown records' values enter the release given Θ, so they cannot be integrated "
            "out by reweighting the draws; methods page 'Attribute disclosure risk').",
            code="MODEL_UNSUITED",
        )
    if compat is not None:
        raise ValidationError(
            "compat='AttributeRiskCalculation' reproduces the R package, which has no "
            "known-records scenario; leave compat at None.", code="INVALID_ARGUMENT")


def known_records_plan(plan: Any, mask: np.ndarray, spec: ScenarioSpec) -> KnownRecords:
    """The :class:`KnownRecords` of ``mask`` for a prepared plan."""
    desc = {"n_known": int(mask.sum()), "known_fraction": spec.known_fraction,
            "known_seed": (0 if spec.seed is None else spec.seed)
            if spec.known_fraction is not None else None,
            "known_records": None if spec.known_fraction is not None
            else np.flatnonzero(mask).tolist()}
    if mask.all():
        return KnownRecords(mask, description=desc)
    unknown = np.flatnonzero(~mask)
    models = [(plan.model.model, plan.draws.logp_idx)]
    models += [(a.model, None) for a in plan.augmented.models]
    totals = []
    for mdl, idx in models:
        tot = 0.0
        for a in range(0, unknown.size, _BLOCK):
            tot = tot + _record_loglik(mdl, plan.data.orig, unknown[a : a + _BLOCK],
                                       idx).sum(axis=1)
        totals.append(np.asarray(tot, dtype=np.float64))
    return KnownRecords(mask, totals, desc)


def check_known_prior(prior: Prior) -> None:
    """Refuse a prior that reads every other record (the intruder knows only some)."""
    if isinstance(prior, (Empirical, ModelPredictive)):
        raise NotSupportedError(
            f"prior {prior.label()!r} reads every other record's values, and this intruder "
            "knows only some of them; use 'uniform', 'truth-weighted:K' or user weights.",
            code="OPTION_CONFLICT")
