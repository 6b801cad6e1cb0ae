"""Empirical disclosure measures, the original's own risk and post-processing.

See :doc:`/methods/disclosure`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bayes_risk._lazy import attach

if TYPE_CHECKING:
    from bayes_risk.disclosure.differencing import differencing_check
    from bayes_risk.disclosure.measures import (
        ATTRIB_MEASURES,
        CAP_MEASURES,
        IDENT_MEASURES,
        REPU_MEASURES,
        DisclosureByTarget,
        DisclosureMeasures,
        ReplicatedUniques,
        disclosure_measures,
        key_anonymity,
        replicated_uniques,
    )
    from bayes_risk.disclosure.original_risk import OriginalRisk, original_risk
    from bayes_risk.disclosure.sdc import sdc
    from bayes_risk.disclosure.sdcmicro import sdcmicro
    from bayes_risk.disclosure.specs import ExclusionSpec, SdcMicroSpec

_MEASURES = "bayes_risk.disclosure.measures"
# imported on first use (PEP 562): the command line declares the disclosure options from
# ExclusionSpec (bayes-risk --help imports no numpy)
_NAMES: dict[str, str] = {
    "differencing_check": "bayes_risk.disclosure.differencing",
    "disclosure_measures": _MEASURES, "replicated_uniques": _MEASURES,
    "key_anonymity": _MEASURES, "DisclosureMeasures": _MEASURES,
    "DisclosureByTarget": _MEASURES, "ReplicatedUniques": _MEASURES,
    "IDENT_MEASURES": _MEASURES, "ATTRIB_MEASURES": _MEASURES, "CAP_MEASURES": _MEASURES,
    "REPU_MEASURES": _MEASURES,
    "ExclusionSpec": "bayes_risk.disclosure.specs",
    "original_risk": "bayes_risk.disclosure.original_risk",
    "OriginalRisk": "bayes_risk.disclosure.original_risk",
    "sdc": "bayes_risk.disclosure.sdc",
    "sdcmicro": "bayes_risk.disclosure.sdcmicro",
    "SdcMicroSpec": "bayes_risk.disclosure.specs",
}

__all__ = ["differencing_check", "disclosure_measures", "ExclusionSpec", "replicated_uniques",
           "key_anonymity", "original_risk", "OriginalRisk", "DisclosureMeasures",
           "DisclosureByTarget", "ReplicatedUniques", "IDENT_MEASURES", "ATTRIB_MEASURES",
           "CAP_MEASURES", "REPU_MEASURES", "sdc", "sdcmicro", "SdcMicroSpec"]


__getattr__, __dir__ = attach(__name__, _NAMES, __all__)
