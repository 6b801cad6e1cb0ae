"""Attribute disclosure risk (SPEC §2): candidates, priors, estimators, diagnostics, summaries.

Main entry points: :func:`attribute_risk`, :func:`prior_sensitivity` and :class:`ArrayModel`
(posterior draws from any software wrapped in the model protocol).
"""

from bayes_risk.attribute.api import AttributeRiskResult, attribute_risk, prior_sensitivity
from bayes_risk.attribute.candidates import CandidateSpec, GridSpec, SpatialGridSpec
from bayes_risk.attribute.estimator import ArrayModel
from bayes_risk.attribute.plugin import CARTPlugin

__all__ = [
    "attribute_risk",
    "prior_sensitivity",
    "AttributeRiskResult",
    "ArrayModel",
    "CARTPlugin",
    "CandidateSpec",
    "GridSpec",
    "SpatialGridSpec",
]
