"""Attribute disclosure risk (Hu 2019): candidates, priors, estimators, diagnostics, summaries.

See :doc:`/methods/attribute`.
"""

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
