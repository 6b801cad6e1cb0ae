"""Attribute disclosure risk (Hu 2019): candidates, priors, estimators, diagnostics, summaries.

Main entry points: :func:`attribute_risk`, :func:`with_prior` and :func:`prior_sensitivity`.
The engine never imports a model: posterior draws from any software are wrapped as a model by
:class:`bayes_risk.models.ArrayModel` (also ``bayes_risk.ArrayModel``), and the tree
synthesizers' plug-in likelihoods live with their models (:class:`bayes_risk.models.CARTPlugin`,
:class:`bayes_risk.models.RFPlugin`; also ``bayes_risk.CARTPlugin`` and ``bayes_risk.RFPlugin``).
"""

from bayes_risk.attribute.api import (
    AttributeRiskResult,
    attribute_risk,
    prior_sensitivity,
    with_prior,
)
from bayes_risk.attribute.candidates import CandidateSpec, GridSpec, SpatialGridSpec

__all__ = [
    "attribute_risk",
    "with_prior",
    "prior_sensitivity",
    "AttributeRiskResult",
    "CandidateSpec",
    "GridSpec",
    "SpatialGridSpec",
]
