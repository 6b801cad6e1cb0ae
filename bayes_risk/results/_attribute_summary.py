"""The words of an attribute result: its headline and its printed summary
(:meth:`~bayes_risk.results.AttributeRiskResult.headline`,
:meth:`~bayes_risk.results.AttributeRiskResult.summary`, which are these functions) and their
Hu–Reiter–Wang table row. ``result`` is an AttributeRiskResult, typed loosely: the module that
defines it imports this one."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd

from bayes_risk._thresholds import EVIDENCE_FACTOR
from bayes_risk.results._attribute_mc import mc_interval, mc_table
from bayes_risk.results._attribute_null import null_reading, null_table
from bayes_risk.results._summary import Summary

__all__ = ["headline", "hrw_table_row", "summary"]


def headline(result: Any) -> str:
    """The unflagged records' shares in a few lines, as ``bayes-risk attribute`` prints
    them: ranked first, mean ``p_true`` and with evidence, each beside what a release that
    said nothing would give; the release's ε and the between-chain check."""
    d = result.to_dict()
    un, null = d["unflagged"], d.get("null") or {}
    nan = float("nan")

    def beside(*keys: str) -> str:
        parts = [f"{k} expected {100 * e['expected']:.3g} % (95 % range "
                 f"{100 * e['low']:.3g}–{100 * e['high']:.3g} %; observed: "
                 f"{null_reading(float(un.get(k, nan)), e)})"
                 for k in keys if (e := null.get(k))]
        return (" (if the release said nothing about the records: " + ", ".join(parts)
                + ")" if parts else "")

    what = "pairs of records" if result.settings.get("scenario") == "two_records" else "records"
    lines = [
        f"attribute risk of {d['n_records']} {what} ({d['n_flagged']} flagged, counted "
        "separately)",
        f"stable estimates (unflagged): share ranked first {100 * un.get('prop_top', nan):.3g}"
        f" % (prop_top in summary.json), mean p_true {100 * un.get('mean_p_true', nan):.3g} %"
        + beside("prop_top", "mean_p_true"),
        # what the release adds, to be read beside the ranking (methods page, issue 63)
        f"share with evidence {100 * un.get('prop_evidence', nan):.3g} % (prop_evidence: "
        f"Bayes factor of the true values >= {un.get('evidence_factor', nan):g}, the release "
        "multiplying the intruder's odds on them that many times)" + beside("prop_evidence"),
    ]
    dp = result.settings.get("differential_privacy")
    if dp:  # the release's ε beside its attribute risk (methods page, Differential privacy)
        from bayes_risk.privacy import beside_attribute

        q = (d["all"].get("bayes_factor_quantiles") or {}).get("100%")
        lines.append(beside_attribute(dp, None if q is None else float(q)))
    ch = d["between_chain_check"]
    lines.append(f"between-chain check: {ch['reason']}; {ch['records_flagged']} record(s) "
                 "flagged CHAINS_DISAGREE" if ch.get("status") == "run"
                 else f"between-chain check not run: {ch['reason']}")
    return "\n".join(lines)


def summary(result: Any, *, thresholds: Sequence[float] = (0.5,)) -> Summary:
    """Printable file-level summary (the figures of :meth:`to_dict`)."""
    d = result.to_dict(thresholds=thresholds)
    st = result.settings
    cand = st.get("candidates")
    header = [
        ("columns guessed", ", ".join(result.columns)),
        ("records evaluated", d["n_records"]),
        ("records flagged", d["n_flagged"]),
        ("estimator", st.get("estimator")),
        ("prior", st.get("prior")),
        ("candidates", cand.get("rule", cand) if isinstance(cand, dict) else cand),
        ("posterior draws H", st.get("H")),
        ("synthetic datasets m", st.get("m")),
    ]
    dp = st.get("differential_privacy")
    if dp:  # the release's ε beside its attribute risk (methods: Differential privacy)
        from bayes_risk.privacy import beside_attribute

        header.append(("differential privacy ε of the release", dp["epsilon"]))
    rows = [hrw_table_row(name, d[key]) for key, name in
            (("all", "all"), ("unflagged", "not flagged"), ("flagged", "flagged"))]
    notes = [
        "p_true: renormalised posterior probability of the record's true values among its "
        "candidates; rank 1 = the intruder's best guess (Hu, Reiter & Wang 2014). Flagged "
        "records have unreliable estimates and are reported separately."
    ]
    if "prop_evidence" in d["all"]:  # not for the low-risk stand-in
        notes.append(
            "Bayes factor: how many times the release multiplies the intruder's odds on the "
            "record's true values (1: the release tells nothing about the record); from "
            f"{EVIDENCE_FACTOR:g} on it counts as evidence (Kass & Raftery 1995).")
    if "null" in d:
        notes.append(
            "If the release said nothing about the records: each figure's expected value "
            "and 95 % range when every record's true values are a draw from the other "
            f"records' frequencies, independent of the release ({d['null']['method']}; "
            "methods page, Attribute disclosure risk: What a release that says nothing "
            "gives). A figure above its range says that the release points to the records' "
            "true values; within it, that it tells no more than the population does.")
    if dp:
        q = (d["all"].get("bayes_factor_quantiles") or {}).get("100%")
        notes.append("Differential privacy: " + beside_attribute(dp, q) + ".")
    if d["flag_counts"]:
        notes.append(
            "Flags: " + ", ".join(f"{k} × {v}" for k, v in d["flag_counts"].items()) + "."
        )
    pm = d["plugin_monte_carlo"]
    if pm.get("records_with_mc_error"):
        notes.append(
            f"Monte Carlo error of the plug-in likelihood: {pm['records_with_mc_error']} "
            f"record(s) have one; {pm['records_mc_error_immaterial']} of them are not "
            "flagged, as their p_true cannot be understated by more than "
            f"{pm['tolerance']:g} nor the truth be ranked first within the "
            f"{100 * pm['level']:g} % simultaneous Monte Carlo bounds of their candidates "
            "(p_true_lower, p_true_upper); the others are MC_ERROR_HIGH.")
    ch = d["between_chain_check"]
    if ch.get("status") == "run":
        notes.append(f"Between-chain check ({ch.get('reason')}): {ch['records_flagged']} "
                     "record(s) whose estimate depends on the chain (CHAINS_DISAGREE).")
    else:
        notes.append(f"Between-chain check: not run ({ch.get('reason')}).")
    tables = {"File-level summary": pd.DataFrame(rows)}
    if "null" in d:
        tables["If the release said nothing about the records"] = null_table(
            d["unflagged"], d["null"])
    mc = d.get("mc_uncertainty")
    if mc is not None:
        tables["Monte Carlo error (draw bootstrap)"] = mc_table(mc)
        notes.append(
            f"Monte Carlo error: MCSE and {mc_interval(mc)[0]} % interval over "
            f"{mc['bootstrap']} bootstrap resamples of the posterior draws (every record the "
            "same resample; each record's p_true replicates corrected for the bias they "
            "show); they cover the Monte Carlo error of the posterior draws only, and an "
            "interval of zero width is marked degenerate. Unflagged records; "
            f"{mc['n_flagged_excluded']} flagged record(s) left out."
        )
    return Summary(
        "Attribute disclosure risk",
        header=header,
        tables=tables,
        notes=notes,
        warnings=result.structured_warnings,
    )


def hrw_table_row(name: str, d: dict[str, Any],
                  evidence_factor: float = EVIDENCE_FACTOR) -> dict[str, Any]:
    """One row of the Hu–Reiter–Wang table from a group's summary (``to_dict()["all"]`` …),
    its probabilities and shares in per cent, as the audit's report and verdict give them (the
    files hold fractions), with the prior's mean mass on the truth and the share of records
    whose Bayes factor is at least ``evidence_factor``."""
    q = d.get("p_true_quantiles", {}) or {}
    r = d.get("rank_min_quantiles", {}) or {}

    def pct(x: Any) -> Any:
        return None if x is None else 100 * float(x)

    return {
        "records": name,
        "n": d.get("n_records"),
        "mean p_true (%)": pct(d.get("mean_p_true")),
        "mean p_true before the release, the prior (%)": pct(d.get("mean_prior_p_true")),
        "median p_true (%)": pct(q.get("50%")),
        "95th percentile of p_true (%)": pct(q.get("95%")),
        "median rank": r.get("50%"),
        "share ranked first (%)": pct(d.get("prop_top")),
        f"share with Bayes factor ≥ {evidence_factor:g} (%)": pct(d.get("prop_evidence")),
    }
