"""Attribute disclosure risk (Hu 2019): candidates, priors, estimators, diagnostics, summaries.

Main entry points: :func:`attribute_risk`, :func:`prior_sensitivity` and :class:`ArrayModel`
(posterior draws from any software wrapped in the model protocols of :mod:`bayes_risk.protocols`).
The engine never imports a model: the tree synthesizers' plug-in likelihoods live with their
models (:class:`bayes_risk.models.CARTPlugin`, :class:`bayes_risk.models.RFPlugin`; also
``bayes_risk.CARTPlugin`` and ``bayes_risk.RFPlugin``).
"""

from bayes_risk.attribute.api import AttributeRiskResult, attribute_risk, prior_sensitivity
from bayes_risk.attribute.array_model import ArrayModel
from bayes_risk.attribute.candidates import CandidateSpec, GridSpec, SpatialGridSpec

__all__ = [
    "attribute_risk",
    "prior_sensitivity",
    "AttributeRiskResult",
    "ArrayModel",
    "CandidateSpec",
    "GridSpec",
    "SpatialGridSpec",
]
