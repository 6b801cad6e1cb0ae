"""One result family: every measure of bayes-risk returns a :class:`RiskResult`, with
``summary()``, ``to_dict()``, ``to_dataframe()``, ``plot(kind=..., ax=None)`` and
``structured_warnings`` (:doc:`/user_guide/results`).

The classes are defined here and re-exported where their measures live. Names are imported on
first use (PEP 562), so that a measure loading its own result class does not import every other
family's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bayes_risk._lazy import attach

if TYPE_CHECKING:
    from bayes_risk.results._base import RiskResult
    from bayes_risk.results._format import format_number
    from bayes_risk.results._summary import ResultWarning, Summary
    from bayes_risk.results.attacks import LinkabilityResult, SinglingOutResult
    from bayes_risk.results.attribute import AttributeRiskResult
    from bayes_risk.results.combining import (
        CoefDiffResult,
        CombinedMultivariate,
        CombinedScalar,
        OverlapResult,
    )
    from bayes_risk.results.differencing import DifferencingResult
    from bayes_risk.results.disclosure import (
        DisclosureByTarget,
        DisclosureMeasures,
        ReplicatedUniques,
    )
    from bayes_risk.results.identification import IdentificationResult, RadiusSweepResult
    from bayes_risk.results.knowledge import KnowledgeSweepResult
    from bayes_risk.results.membership import MembershipRiskResult
    from bayes_risk.results.original_risk import OriginalRisk
    from bayes_risk.results.utility import PMSEResult, UtilitySummary
    from bayes_risk.results.visit_orders import VisitOrderComparison

# name -> module that defines it
_CLASSES: dict[str, str] = {
    "RiskResult": "bayes_risk.results._base",
    "Summary": "bayes_risk.results._summary",
    "ResultWarning": "bayes_risk.results._summary",
    "AttributeRiskResult": "bayes_risk.results.attribute",
    "IdentificationResult": "bayes_risk.results.identification",
    "RadiusSweepResult": "bayes_risk.results.identification",
    "MembershipRiskResult": "bayes_risk.results.membership",
    "SinglingOutResult": "bayes_risk.results.attacks",
    "LinkabilityResult": "bayes_risk.results.attacks",
    "KnowledgeSweepResult": "bayes_risk.results.knowledge",
    "PMSEResult": "bayes_risk.results.utility",
    "UtilitySummary": "bayes_risk.results.utility",
    "CombinedScalar": "bayes_risk.results.combining",
    "CombinedMultivariate": "bayes_risk.results.combining",
    "OverlapResult": "bayes_risk.results.combining",
    "CoefDiffResult": "bayes_risk.results.combining",
    "DisclosureMeasures": "bayes_risk.results.disclosure",
    "DisclosureByTarget": "bayes_risk.results.disclosure",
    "ReplicatedUniques": "bayes_risk.results.disclosure",
    "OriginalRisk": "bayes_risk.results.original_risk",
    "DifferencingResult": "bayes_risk.results.differencing",
    "VisitOrderComparison": "bayes_risk.results.visit_orders",
    "format_number": "bayes_risk.results._format",
}

__all__ = [
    "RiskResult",
    "Summary",
    "ResultWarning",
    "AttributeRiskResult",
    "IdentificationResult",
    "RadiusSweepResult",
    "MembershipRiskResult",
    "SinglingOutResult",
    "LinkabilityResult",
    "KnowledgeSweepResult",
    "PMSEResult",
    "UtilitySummary",
    "CombinedScalar",
    "CombinedMultivariate",
    "OverlapResult",
    "CoefDiffResult",
    "DisclosureMeasures",
    "DisclosureByTarget",
    "ReplicatedUniques",
    "OriginalRisk",
    "DifferencingResult",
    "VisitOrderComparison",
    "format_number",
]


__getattr__, __dir__ = attach(__name__, _CLASSES, __all__)
