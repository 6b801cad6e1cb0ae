"""Disclosure audit of a synthetic release: every measure, one report (:doc:`/user_guide/audit`)."""

from bayes_risk.auditing.api import audit
from bayes_risk.auditing.plan import AuditPlan, Setting, Thresholds
from bayes_risk.auditing.result import AuditResult, StepOutcome, Verdict
from bayes_risk.auditing.settings import DEFAULT_SWEEP, AuditSettings

__all__ = ["audit", "AuditSettings", "AuditResult", "AuditPlan", "StepOutcome", "Thresholds",
           "Verdict", "Setting", "DEFAULT_SWEEP"]
