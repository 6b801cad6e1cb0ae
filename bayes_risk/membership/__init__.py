"""Membership disclosure risk: the intruder's posterior probability that a record was in the
confidential data (methods, Membership disclosure risk), with the distance-to-closest-record
baseline beside it.

* :func:`membership_risk` — the analysis (:mod:`bayes_risk.membership.api`);
* :mod:`bayes_risk.membership.estimator` — the likelihood ratio from posterior draws;
* :mod:`bayes_risk.membership.partial` — partially synthetic releases: the released
  unsynthesized values and their population model;
* :mod:`bayes_risk.membership.trees` — CART releases: the ratio under the plug-in likelihood;
* :mod:`bayes_risk.membership.selection` — releases that synthesize selected records: the
  stated selection rule;
* :mod:`bayes_risk.membership.dcr` — the distance baseline (SDMetrics, anonymeter);
* :mod:`bayes_risk.membership.summaries` — file-level summaries and their bootstrap.
"""

from __future__ import annotations

from bayes_risk.membership.api import MEMBERSHIP_FLAGS, MembershipRiskResult, membership_risk
from bayes_risk.membership.specs import AttackSpec, RatioSpec

__all__ = ["membership_risk", "AttackSpec", "RatioSpec", "MembershipRiskResult",
           "MEMBERSHIP_FLAGS"]
