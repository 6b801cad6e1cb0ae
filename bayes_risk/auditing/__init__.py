"""Disclosure audit of a synthetic release: every measure, one report (:doc:`/user_guide/audit`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from bayes_risk._lazy import attach

if TYPE_CHECKING:
    from bayes_risk.auditing.api import audit
    from bayes_risk.auditing.plan import AuditPlan, Setting
    from bayes_risk.auditing.result import AuditResult, StepOutcome, Verdict
    from bayes_risk.auditing.settings import DEFAULT_SWEEP, AuditSettings
    from bayes_risk.auditing.thresholds import Thresholds

# imported on first use (PEP 562): the command line declares the audit's options from
# AuditSettings (bayes-risk --help imports no numpy)
_NAMES: dict[str, str] = {
    "audit": "bayes_risk.auditing.api",
    "AuditPlan": "bayes_risk.auditing.plan",
    "Setting": "bayes_risk.auditing.plan",
    "Thresholds": "bayes_risk.auditing.thresholds",
    "AuditResult": "bayes_risk.auditing.result",
    "StepOutcome": "bayes_risk.auditing.result",
    "Verdict": "bayes_risk.auditing.result",
    "AuditSettings": "bayes_risk.auditing.settings",
    "DEFAULT_SWEEP": "bayes_risk.auditing.settings",
}

__all__ = ["audit", "AuditSettings", "AuditResult", "AuditPlan", "StepOutcome", "Thresholds",
           "Verdict", "Setting", "DEFAULT_SWEEP"]


__getattr__, __dir__ = attach(__name__, _NAMES, __all__)
