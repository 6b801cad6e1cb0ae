"""Empirical disclosure measures of synthetic data, reproducing synthpop 1.9-2.

* :func:`disclosure_measures` — identity (``UiO``, ``UiS``, ``UiOiS``, ``repU``), attribute
  (``Dorig``, ``Dsyn``, ``iS``, ``DiS``, ``DiSCO``, ``DiSDiO``, ``max_denom``, ``mean_denom``)
  and correct-attribution-probability measures (``baseCAPd``, ``CAPd``, ``CAPs``, ``DCAP``,
  ``TCAP``) of synthpop's ``disclosure()``, with replicated uniques and the original's sample
  uniques and k-anonymity counts on the keys;
* :func:`replicated_uniques` — synthpop's ``replicated.uniques()``;
* :func:`key_anonymity` — sample uniques and k-anonymity violations (sdcMicro's counts);
* :func:`original_risk` — sdcMicro's risk of the original on its keys: individual and global
  re-identification risk (with survey weights), k-anonymity, SUDA2 scores and l-diversity;
* :func:`differencing_check` — the records and variables an intruder finds by comparing the
  implicates of a partially synthetic release (Hawala 2008).
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

__all__ = [
    "differencing_check",
    "disclosure_measures",
    "ExclusionSpec",
    "replicated_uniques",
    "key_anonymity",
    "original_risk",
    "OriginalRisk",
    "DisclosureMeasures",
    "DisclosureByTarget",
    "ReplicatedUniques",
    "IDENT_MEASURES",
    "ATTRIB_MEASURES",
    "CAP_MEASURES",
    "REPU_MEASURES",
]
