"""Membership disclosure risk: the intruder's posterior probability that a record was in the
confidential data, with the distance-to-closest-record baseline beside it.

:func:`membership_risk` is the analysis; ``estimator`` (ratios from posterior draws),
``partial`` (unsynthesized values), ``trees`` (CART releases), ``selection`` (selected records),
``dcr`` and ``summaries`` its parts. See :doc:`/methods/membership`.
"""

from __future__ import annotations

from bayes_risk.membership.api import MEMBERSHIP_FLAGS, MembershipRiskResult, membership_risk
from bayes_risk.membership.specs import AttackSpec, RatioSpec

__all__ = ["membership_risk", "AttackSpec", "RatioSpec", "MembershipRiskResult", "MEMBERSHIP_FLAGS"]
