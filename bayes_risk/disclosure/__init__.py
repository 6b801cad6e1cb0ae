"""Empirical disclosure measures, the original's own risk and post-processing.

See :doc:`/methods/disclosure`.
"""

from bayes_risk.disclosure.differencing import differencing_check
from bayes_risk.disclosure.measures import (
    ATTRIB_MEASURES,
    CAP_MEASURES,
    IDENT_MEASURES,
    REPU_MEASURES,
    DisclosureByTarget,
    DisclosureMeasures,
    ExclusionSpec,
    ReplicatedUniques,
    disclosure_measures,
    key_anonymity,
    replicated_uniques,
)
from bayes_risk.disclosure.original_risk import OriginalRisk, original_risk
from bayes_risk.disclosure.sdc import sdc

__all__ = ["differencing_check", "disclosure_measures", "ExclusionSpec", "replicated_uniques",
           "key_anonymity", "original_risk", "OriginalRisk", "DisclosureMeasures",
           "DisclosureByTarget", "ReplicatedUniques", "IDENT_MEASURES", "ATTRIB_MEASURES",
           "CAP_MEASURES", "REPU_MEASURES", "sdc"]
