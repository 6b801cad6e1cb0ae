"""Membership disclosure risk. See :doc:`/methods/membership`."""

from __future__ import annotations

from bayes_risk.membership.api import MEMBERSHIP_FLAGS, MembershipRiskResult, membership_risk
from bayes_risk.membership.specs import AttackSpec, RatioSpec

__all__ = ["membership_risk", "AttackSpec", "RatioSpec", "MembershipRiskResult", "MEMBERSHIP_FLAGS"]
