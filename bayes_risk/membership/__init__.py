"""Membership disclosure risk. See :doc:`/methods/membership`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from bayes_risk._lazy import attach

if TYPE_CHECKING:
    from bayes_risk.membership.api import MEMBERSHIP_FLAGS, MembershipRiskResult, membership_risk
    from bayes_risk.membership.specs import AttackSpec, RatioSpec

# imported on first use (PEP 562): the attacks screen their holdout with
# ``bayes_risk.membership.holdout`` and need none of the estimator's modules (issue 69)
_NAMES: dict[str, str] = {
    "membership_risk": "bayes_risk.membership.api",
    "MembershipRiskResult": "bayes_risk.membership.api",
    "MEMBERSHIP_FLAGS": "bayes_risk.membership.api",
    "AttackSpec": "bayes_risk.membership.specs",
    "RatioSpec": "bayes_risk.membership.specs",
}

__all__ = ["membership_risk", "AttackSpec", "RatioSpec", "MembershipRiskResult", "MEMBERSHIP_FLAGS"]

__getattr__, __dir__ = attach(__name__, _NAMES, __all__)
