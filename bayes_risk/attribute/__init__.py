"""Attribute disclosure risk (Hu 2019): candidates, priors, estimators, diagnostics, summaries.

See :doc:`/methods/attribute`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bayes_risk._lazy import attach

if TYPE_CHECKING:
    from bayes_risk.attribute.api import (
        AttributeRiskResult,
        attribute_risk,
        plot_prior_sensitivity,
        prior_sensitivity,
        with_prior,
    )
    from bayes_risk.attribute.candidates import CandidateSpec, GridSpec, SpatialGridSpec
    from bayes_risk.attribute.knowledge import attribute_known_sweep
    from bayes_risk.attribute.known_curve import KnownFractionResult, known_fraction_curve
    from bayes_risk.attribute.specs import EstimatorSpec, ScenarioSpec

# imported on first use (PEP 562): the command line's parser reads the specs' fields without
# the estimators' modules (pandas, numpy)
_NAMES: dict[str, str] = {
    "attribute_risk": "bayes_risk.attribute.api",
    "AttributeRiskResult": "bayes_risk.attribute.api",
    "with_prior": "bayes_risk.attribute.api",
    "prior_sensitivity": "bayes_risk.attribute.api",
    "plot_prior_sensitivity": "bayes_risk.attribute.api",
    "CandidateSpec": "bayes_risk.attribute.candidates",
    "GridSpec": "bayes_risk.attribute.candidates",
    "SpatialGridSpec": "bayes_risk.attribute.candidates",
    "attribute_known_sweep": "bayes_risk.attribute.knowledge",
    "known_fraction_curve": "bayes_risk.attribute.known_curve",
    "KnownFractionResult": "bayes_risk.attribute.known_curve",
    "EstimatorSpec": "bayes_risk.attribute.specs",
    "ScenarioSpec": "bayes_risk.attribute.specs",
}

__all__ = [
    "attribute_risk",
    "attribute_known_sweep",
    "known_fraction_curve",
    "KnownFractionResult",
    "with_prior",
    "prior_sensitivity",
    "plot_prior_sensitivity",
    "AttributeRiskResult",
    "CandidateSpec",
    "EstimatorSpec",
    "ScenarioSpec",
    "GridSpec",
    "SpatialGridSpec",
]

__getattr__, __dir__ = attach(__name__, _NAMES, __all__)
