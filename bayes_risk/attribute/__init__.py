"""Attribute disclosure risk (Hu 2019): candidates, priors, estimators, diagnostics, summaries.

Main entry points: :func:`attribute_risk`, :func:`prior_sensitivity` and :class:`ArrayModel`
(posterior draws from any software wrapped in the model protocol); :class:`CARTPlugin` and
:class:`RFPlugin` give the tree synthesizers plug-in likelihoods (methods, Tree synthesizers:
plug-in likelihoods).
"""

from bayes_risk.attribute.api import AttributeRiskResult, attribute_risk, prior_sensitivity
from bayes_risk.attribute.candidates import CandidateSpec, GridSpec, SpatialGridSpec
from bayes_risk.attribute.estimator import ArrayModel
from bayes_risk.attribute.plugin import CARTPlugin
from bayes_risk.attribute.plugin_rf import RFPlugin

__all__ = [
    "attribute_risk",
    "prior_sensitivity",
    "AttributeRiskResult",
    "ArrayModel",
    "CARTPlugin",
    "RFPlugin",
    "CandidateSpec",
    "GridSpec",
    "SpatialGridSpec",
]
