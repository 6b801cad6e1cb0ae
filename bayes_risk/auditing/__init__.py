"""Disclosure audit of a synthetic release: every measure, one report.

:func:`audit` runs utility, identification risk (with a radius sweep), attribute risk (where a
model or a CART / random-forest release allows it) and synthpop's empirical disclosure measures
on one release, and returns an :class:`AuditResult` whose ``to_html(path)`` and
``to_markdown(path)`` write the report. ``bayes-risk audit`` is the command line.
"""

from bayes_risk.auditing.api import audit
from bayes_risk.auditing.plan import DEFAULT_SWEEP, AuditPlan, Setting, Thresholds
from bayes_risk.auditing.result import AuditResult, StepOutcome, Verdict
from bayes_risk.auditing.settings import AuditSettings

__all__ = ["audit", "AuditSettings", "AuditResult", "AuditPlan", "StepOutcome", "Thresholds",
           "Verdict", "Setting", "DEFAULT_SWEEP"]
