"""One result family: every measure of bayes-risk returns a :class:`RiskResult`.

Each result has ``summary()`` (a printable :class:`Summary`: text, Markdown, HTML, shown in a
notebook), ``to_dict()`` (JSON-safe; what the command line writes to ``summary.json``),
``to_dataframe()`` (its main table), ``plot(kind=..., ax=None)`` (drawn on the given or
pyplot's current Axes, which it returns; matplotlib is imported only then) and
``structured_warnings`` (:class:`ResultWarning`: code, message, where).

The classes are defined here and re-exported where their measures live
(``bayes_risk.AttributeRiskResult``, ``bayes_risk.attribute.AttributeRiskResult``, …).
Names are imported on first use (PEP 562), so that a measure's module loading its own result
class does not import every other family's (the identification command, for one, never needs
the attribute, disclosure or utility classes).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bayes_risk._lazy import attach

if TYPE_CHECKING:
    from bayes_risk.results._base import RiskResult
    from bayes_risk.results._summary import ResultWarning, Summary
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
    "DifferencingResult": "bayes_risk.results.differencing",
    "VisitOrderComparison": "bayes_risk.results.visit_orders",
}

__all__ = [
    "RiskResult",
    "Summary",
    "ResultWarning",
    "AttributeRiskResult",
    "IdentificationResult",
    "RadiusSweepResult",
    "MembershipRiskResult",
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
    "DifferencingResult",
    "VisitOrderComparison",
]


__getattr__, __dir__ = attach(__name__, _CLASSES, __all__)
