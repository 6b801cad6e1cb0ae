"""The unit of every rate, share, probability and count of people that the package's
``summary.json`` files hold, by key: one name and one unit per quantity in every file (issue 66:
``attribute/summary.json`` held ``prop_top`` as a fraction while the audit's verdict gave it in
per cent, and neither file said which). :func:`~bayes_risk._io.write_json` writes the units of
the keys a ``summary.json`` holds beside them, under ``"units"``.

A quantity keeps the unit of the paper that defines it, the same in every file: the
identification rates of Reiter & Mitra (2009), the attribute-risk shares of Hu, Reiter & Wang
(2014), the membership shares and anonymeter's risks are fractions (0.04 = 4 %); synthpop's
disclosure measures (Raab, Nowok & Dibben 2024) and sdcMicro's shares (keys ending ``_pct``)
are per cent. The audit's verdict lines show every rate in per cent, each with its ``unit``
field; the thresholds (``--threshold NAME=VALUE``) are in the unit of the key they name.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

__all__ = ["UNITS", "IN_CONTEXT", "unit_of", "units_of"]

FRACTION_TARGETS = "fraction of the targets (0.04 = 4 %)"
FRACTION_UNIQUE = "fraction of the targets' unique matches"
FRACTION_RECORDS = "fraction of the records (0.04 = 4 %)"
FRACTION_MEMBERS = "fraction of the members"
PROBABILITY = "probability (0 to 1)"
PERCENT_RECORDS = "per cent of the records (4 = 4 %)"
TARGETS = "targets (a count, or a sum of probabilities over targets)"

_SYNTHPOP = ("UiO", "UiS", "UiOiS", "repU", "Dorig", "Dsyn", "iS", "DiS", "DiSCO", "DiSDiO",
             "baseCAPd", "CAPd", "CAPs", "DCAP", "TCAP", "Original %", "Synthetic %",
             "Synthetic uniques in original %", "Replicated uniques %")

#: key → unit; a key holds one quantity, in one unit, in every file
UNITS: dict[str, str] = {
    # identification (Reiter & Mitra 2009; Hornby & Hu 2021)
    "expected_match_risk": TARGETS,
    "true_match_risk": TARGETS,
    "n_unique": TARGETS,
    "risk_star": TARGETS,
    "risk_summary": TARGETS,
    "expected_match_risk_without": TARGETS,
    "expected_match_risk_removed": TARGETS,
    "shapley_expected_match_risk": TARGETS,
    "expected_match_rate": FRACTION_TARGETS,
    "true_match_rate_targets": FRACTION_TARGETS,
    "true_match_rate": FRACTION_TARGETS,  # the audit's threshold of true_match_rate_targets
    "true_match_rate_targets_without": FRACTION_TARGETS,
    "true_match_rate_targets_removed": FRACTION_TARGETS,
    "shapley_true_match_rate_targets": FRACTION_TARGETS,
    "share_targets": FRACTION_TARGETS,
    "true_match_rate_unique": FRACTION_UNIQUE,
    "false_match_rate": FRACTION_UNIQUE,
    "share_risk": "fraction of the expected match risk",
    "share_true_matches": "fraction of the true matches",
    "expected_match_risk_removed_share": "fraction of the expected match risk",
    "true_match_rate_targets_removed_share": "fraction of the true match rate",
    "risk_ratio": "ratio (share of the risk over share of the targets)",
    "tmr_star_value": FRACTION_TARGETS,
    # the radius search's bounds between the grid's points (issue 85)
    "risk_bound": TARGETS,
    "expected_match_risk_bound": TARGETS,
    "tmr_bound": FRACTION_TARGETS,
    "true_match_rate_bound": FRACTION_TARGETS,
    # attribute risk (Hu, Reiter & Wang 2014)
    "prop_top": FRACTION_RECORDS,
    "prop_top_shared": FRACTION_RECORDS,
    "prop_evidence": FRACTION_RECORDS,
    "share_degenerate_triples": "fraction of the (record, candidate, draw) triples",
    "mean_p_true": PROBABILITY,
    "mean_prior_p_true": PROBABILITY,
    "null_mean_p_true": PROBABILITY,  # the knowledge sweep's and curve's nulls (expected)
    "null_prop_top": FRACTION_RECORDS,
    "null_mean_p_true_unflagged": PROBABILITY,
    "p_true_quantiles": PROBABILITY,
    "p_true_q25": PROBABILITY,
    "p_true_q50": PROBABILITY,
    "p_true_q75": PROBABILITY,
    "random_guess_baseline": PROBABILITY,
    "pct_true_is_map": PERCENT_RECORDS,
    "pct_true_is_map_unique": PERCENT_RECORDS,
    # synthpop's disclosure measures and sdcMicro's shares of the original (per cent)
    **dict.fromkeys(_SYNTHPOP, PERCENT_RECORDS),
    "pct_violating": PERCENT_RECORDS,
    "pct_sample_uniques": PERCENT_RECORDS,
    "pct_records_l1": PERCENT_RECORDS,
    "global_risk_pct": PERCENT_RECORDS,
    "global_risk": FRACTION_RECORDS,
    # the business-data measures (Kim et al. 2018; Domingo-Ferrer et al. 2001)
    **dict.fromkeys(("relative_difference", "rd_lo", "rd_hi", "rd_dataset_min",
                     "rd_dataset_max"), "fraction of the true value (0.05 = 5 %)"),
    "share_within_delta": FRACTION_TARGETS,
    "closest_match": FRACTION_RECORDS,
    "max_risk": PROBABILITY,
    # membership risk
    "membership_probability": PROBABILITY,
    "share_members_above": FRACTION_MEMBERS,
    "share_members_above_interval": FRACTION_MEMBERS,
    "membership_share": FRACTION_MEMBERS,
    "share_members_unique": FRACTION_MEMBERS,
    "share_members_revealed": FRACTION_MEMBERS,
    "share_non_members_matching": "fraction of the holdout records",
    "share_closer_to_training": "fraction of the synthetic rows",
    "share_ties": "fraction of the targets",
    "auc": "AUC (0.5 = guessing)",
    "dcr_auc": "AUC (0.5 = guessing)",
    "auc_advantage": "AUC − 0.5",
    "auc_advantage_interval": "AUC − 0.5",
    "dcr_auc_advantage": "AUC − 0.5",
    "dcr_auc_advantage_interval": "AUC − 0.5",
    "membership_advantage": "AUC − 0.5",
    # anonymeter's attacks (Giomi et al. 2023): fractions of the attacks
    "risk": "fraction (anonymeter's risk, 0 to 1)",
    "singling_out_risk": "fraction (anonymeter's risk, 0 to 1)",
    "linkability_risk": "fraction (anonymeter's risk, 0 to 1)",
    "inference_risk": "fraction (anonymeter's risk, 0 to 1)",
    "main_rate": "fraction of the attacks",
    "control_rate": "fraction of the attacks",
    "baseline_rate": "fraction of the attacks",
    "baseline_error": "fraction of the attacks",
    "share_tied_main": "fraction of the attacks",
    "share_tied_control": "fraction of the attacks",
    # utility
    "s_pmse": "ratio (pMSE over its null expectation)",
    "overlap": "fraction of the intervals' length (interval overlap)",
    "overlap_per_dataset": "fraction of the intervals' length (interval overlap)",
    "signed_overlap": "interval overlap, negative for the gap between intervals apart",
}


#: keys whose quantity depends on the object holding them: ``{holder: {key: unit}}``, written
#: as ``"holder.key"`` (a radius search's ``risk`` is the expected match risk, in targets)
IN_CONTEXT: dict[str, dict[str, str]] = {"radius_sweep": {"risk": TARGETS},
                                         "radius_search": {"risk": TARGETS}}


def _keys(obj: Any, holder: str = "") -> Iterator[str]:
    if isinstance(obj, Mapping):
        inside = IN_CONTEXT.get(holder, {})
        for k, v in obj.items():
            yield f"{holder}.{k}" if str(k) in inside else str(k)
            yield from _keys(v, str(k))
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            yield from _keys(v, holder)


def unit_of(key: str) -> str | None:
    """The unit of ``key`` (``"holder.key"`` for one of :data:`IN_CONTEXT`), or ``None``."""
    holder, dot, name = key.rpartition(".")
    if dot and holder in IN_CONTEXT and name in IN_CONTEXT[holder]:
        return IN_CONTEXT[holder][name]
    return UNITS.get(key)


def units_of(obj: Any) -> dict[str, str]:
    """The unit of each key of :data:`UNITS` (and :data:`IN_CONTEXT`) that ``obj`` holds, at any
    depth, by key (sorted).

    Parameters
    ----------
    obj : mapping
        A JSON document (a ``summary.json``).

    Returns
    -------
    dict of str to str
    """
    out = {k: unit_of(k) for k in set(_keys(obj))}
    return {k: u for k, u in sorted(out.items()) if u is not None}
