"""One result family: every measure returns a :class:`RiskResult` (:doc:`/user_guide/results`).
Names are imported on first use (PEP 562)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from bayes_risk._lazy import attach

if TYPE_CHECKING:
    from bayes_risk.results._base import RiskResult
    from bayes_risk.results._format import format_number
    from bayes_risk.results._summary import ResultWarning, Summary
    from bayes_risk.results.attacks import InferenceResult, LinkabilityResult, SinglingOutResult
    from bayes_risk.results.attribute import AttributeRiskResult
    from bayes_risk.results.business import ClosestMatchResult, RelativeDifferenceResult
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

# module of bayes_risk.results -> the names it defines (written out: grep finds the module)
_MODULES: dict[str, tuple[str, ...]] = {
    "bayes_risk.results._base": ("RiskResult",),
    "bayes_risk.results._summary": ("Summary", "ResultWarning"),
    "bayes_risk.results._format": ("format_number",),
    "bayes_risk.results.attacks": ("SinglingOutResult", "LinkabilityResult", "InferenceResult"),
    "bayes_risk.results.attribute": ("AttributeRiskResult",),
    "bayes_risk.results.business": ("RelativeDifferenceResult", "ClosestMatchResult"),
    "bayes_risk.results.combining": ("CombinedScalar", "CombinedMultivariate", "OverlapResult",
                                     "CoefDiffResult"),
    "bayes_risk.results.differencing": ("DifferencingResult",),
    "bayes_risk.results.disclosure": ("DisclosureMeasures", "DisclosureByTarget",
                                      "ReplicatedUniques"),
    "bayes_risk.results.identification": ("IdentificationResult", "RadiusSweepResult"),
    "bayes_risk.results.knowledge": ("KnowledgeSweepResult",),
    "bayes_risk.results.membership": ("MembershipRiskResult",),
    "bayes_risk.results.original_risk": ("OriginalRisk",),
    "bayes_risk.results.utility": ("PMSEResult", "UtilitySummary"),
    "bayes_risk.results.visit_orders": ("VisitOrderComparison",),
}
_CLASSES = {name: m for m, names in _MODULES.items() for name in names}

__all__ = [
    "RiskResult",
    "Summary",
    "ResultWarning",
    "AttributeRiskResult",
    "RelativeDifferenceResult",
    "ClosestMatchResult",
    "IdentificationResult",
    "RadiusSweepResult",
    "MembershipRiskResult",
    "SinglingOutResult",
    "LinkabilityResult",
    "InferenceResult",
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
