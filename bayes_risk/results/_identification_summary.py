"""The words of the identification results: the headline and the printed summary of an
:class:`~bayes_risk.results.IdentificationResult` and of a
:class:`~bayes_risk.results.RadiusSweepResult` (these functions are their methods), and the
file-level measures they list. ``result`` is the result, typed loosely: the module that defines
the classes imports this one."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from bayes_risk.data.coding import coding_text
from bayes_risk.exceptions import arg_name
from bayes_risk.results._summary import Summary

__all__ = ["headline", "summary", "sweep_headline", "sweep_summary", "ID_MEASURES"]

#: file-level identification measures and their labels, in display order
ID_MEASURES = (
    ("expected_match_risk", "expected match risk (sum of IR)"),
    ("expected_match_rate", "expected match rate"),
    ("true_match_risk", "true match risk (correct unique matches)"),
    ("n_unique", "unique matches"),
    ("true_match_rate_targets", "true match rate (over targets)"),
    ("true_match_rate_unique", "true match rate (over unique matches)"),
    ("false_match_rate", "false match rate"),
)

#: each file-level measure in a printed summary: its label with its unit, and its factor from
#: the files (which hold the rates as fractions: bayes_risk._units)
_SUMMARY_UNITS = {
    "expected_match_risk": ("expected match risk (targets, sum of IR)", 1.0),
    "expected_match_rate": ("expected match rate (% of targets)", 100.0),
    "true_match_risk": ("true match risk (targets, correct unique matches)", 1.0),
    "n_unique": ("unique matches (targets)", 1.0),
    "true_match_rate_targets": ("true match rate (% of targets)", 100.0),
    "true_match_rate_unique": ("true match rate (% of unique matches)", 100.0),
    "false_match_rate": ("false match rate (% of unique matches)", 100.0),
}


def summary(result: Any) -> Summary:
    """Printable summary: the file-level measures, the knowledge and the match rule."""
    st = result.settings
    rule = st.get("match_rule") or {}
    radius = rule.get("radius") or {}
    header = [
        ("targets", result.file.get("n_targets", len(result.target_ids))),
        ("aggregation", st.get("aggregation")),
        ("membership", st.get("membership", "known")),
        ("known unsynthesized", ", ".join(st.get("known_unsynthesized", [])) or "none"),
        ("known synthesized", ", ".join(st.get("known_synthesized", [])) or "none"),
        ("match rule", (f"{rule.get('radius_type')} radius "
                        + ", ".join(f"{k} = {v:g}" for k, v in radius.items()))
         if radius else "exact matching"),
    ]
    if st.get("known_coded_as_released"):
        header.append(("known coded as released", coding_text(st["known_coded_as_released"])))
    rows = []
    unc = result.has_uncertainty
    for key, _ in ID_MEASURES:
        if key not in result.file:
            continue
        # each row's unit in its name: the rates in per cent, as the audit gives them
        label, scale = _SUMMARY_UNITS[key]

        def sc(x: Any, scale: float = scale) -> Any:
            return None if x is None else scale * float(x)

        row: dict[str, Any] = {"measure": label, "value": sc(result.file[key])}
        if result.per_dataset is not None and key in result.per_dataset:
            v = np.asarray(result.per_dataset[key], dtype=float)
            fin = np.isfinite(v).any()
            row["min over datasets"] = sc(np.nanmin(v)) if fin else None
            row["max over datasets"] = sc(np.nanmax(v)) if fin else None
        if unc:
            q = result.file["replicate_quantiles"].get(key, {})
            row["MCSE"] = sc(result.file["mc_se"].get(key))
            row["replicate 2.5%"] = sc(q.get("0.025"))
            row["replicate median"] = sc(q.get("0.5"))
            row["replicate 97.5%"] = sc(q.get("0.975"))
        rows.append(row)
    notes = [
        "IR: the probability that the intruder's declared match is the target's own "
        "record, summed over targets for the expected match risk (Reiter & Mitra 2009; "
        "Hu 2019 §4)."
    ]
    if unc:
        pr = st.get("posterior_replicates") or {}
        header.append(("replicates", st.get("replicates")))
        header.append(("posterior replicates R", result.file["n_replicates"]))
        notes.append(
            "MCSE: Monte Carlo standard error of the pooled value ("
            + (pr.get("mc_method") or "jackknife") + "); replicate 2.5% / median / 97.5%: "
            "the spread of the measure computed on one replicate at a time (it does not "
            "shrink with R)."
        )
    return Summary(
        "Identification disclosure risk",
        header=header,
        tables={"File-level measures": pd.DataFrame(rows)},
        notes=notes,
        warnings=result.structured_warnings,
    )


def headline(result: Any) -> str:
    """The file-level figures in a few lines, as ``bayes-risk identification`` prints them:
    the expected, true and false match rates, the posterior replicates' Monte Carlo error,
    and what the intruder knew of a sampling design or a selection of records."""
    s, st = result.file, result.settings
    n, agg, m = int(s["n_targets"]), st["aggregation"], st["n_replicates"]
    what = ("synthetic dataset(s)" if st["replicates"] == "released datasets"
            else st["replicates"])
    lines = [f"identification risk ({agg.replace('_', '-')}) of {m} {what}: "
             f"expected match rate {100 * s['expected_match_rate']:.3g} % = "
             f"{s['expected_match_risk']:.4g} of {n:,} targets (the expected match risk)",
             f"true match rate {100 * s['true_match_rate_targets']:.3g} % of the targets, "
             f"false match rate {100 * s['false_match_rate']:.3g} % of the unique matches "
             "(summary.json: fractions)"]
    if st.get("known_coded_as_released"):
        lines.append("the known values coded at the release's published bounds before matching "
                     f"(as the intruder who reads its manifest does): "
                     f"{coding_text(st['known_coded_as_released'])}")
    sampling = st.get("sampling")
    if sampling:  # the probability that a target is in the released sample
        lines.append(f"sampling with synthesis: {sampling['sample_size']:,} of the census's "
                     f"{sampling['population_size']:,} units released (a target is in the "
                     f"release with probability {sampling['sample_fraction']:.4g}); "
                     f"membership {sampling['membership']}, counts: {sampling['counts']}")
    if agg == "per_dataset" and m > 1:  # the smaller figure: the audit reads the larger
        pooled = arg_name("aggregation", "'pooled'", cli="pooled")
        lines.append(f"per dataset: the intruder holding one dataset; one holding all {m} "
                     f"pools them ({pooled}, the default), which can give a higher risk")
    if result.has_uncertainty:
        lines.append(f"{m} posterior replicates; Monte Carlo standard error of the expected "
                     f"match risk {s['mc_se']['expected_match_risk']:.3g} targets")
    sel = st.get("selection")
    if sel is not None:
        lines.append(f"given the selection R ({sel['description']}): {sel['n_selected']:,} "
                     f"of {sel['n_records']:,} records synthesized; "
                     f"{sel['n_targets_selected']:,} of {sel['n_targets']:,} targets known "
                     "to be selected, the others known to be released unchanged")
    return "\n".join(lines)


def sweep_headline(result: Any) -> str:
    """The maximising radius in a line (a sweep), or a search's worst case with the
    columns whose maximum lies at the largest radius searched (``RADIUS_AT_GRID_EDGE``)."""
    if not result.search:
        fixed = ", ".join(f"{c}={r:g}" for c, r in result.fixed_radii.items())
        return (f"radius sweep: risk-maximising radius r* = {result.r_star} (varying "
                f"{', '.join(result.columns)}{'; fixed ' + fixed if fixed else ''}; "
                f"{result.definition})")

    def at(r: Any) -> str:
        return ", ".join(f"{c} exact" if x == 0 else f"{c}={x:g}"
                         for c, x in zip(result.columns, np.atleast_1d(r), strict=True))

    n = int(result.settings["n_targets"])
    lines = [f"radius search (worst case over the radii of {', '.join(result.columns)}, "
             f"{result.search['points']} points): expected match risk {result.risk_star:.4g} of "
             f"{n:,} targets ({100 * result.risk_star / n:.3g} %) at {at(result.r_star)}; true "
             f"match rate {100 * result.tmr_star_value:.3g} % at {at(result.tmr_star)}; "
             f"{result.search_text()}"]
    for fig, words in (("expected_match_risk", "expected match risk"),
                       ("true_match_rate", "true match rate")):
        if edge := result.at_edge(fig):
            lines.append(f"RADIUS_AT_GRID_EDGE: the largest {words} lies at the largest "
                         f"radius searched of {', '.join(edge)}: matching more loosely may "
                         "give more (widen the radii searched)")
    return "\n".join(lines)


def sweep_summary(result: Any) -> Summary:
    """Printable summary: the risk curve and the maximising radius."""
    # the grid's points, and the refinement's where a maximum lies
    rows = [i for i in range(len(result.risk_summary))
            if i < result.grid_points or i in result.argmax or i in result.tmr_argmax]
    tab = pd.DataFrame({
        "radius": [result.labels()[i] for i in rows],
        f"{result.statistic} expected match risk": result.risk_summary[rows],
        "maximum": [i in result.argmax for i in rows],
    })
    r_star = result.r_star if result.common else ", ".join(
        f"{c}={r:g}" for c, r in zip(result.columns, np.atleast_1d(result.r_star), strict=False))
    fixed = result.fixed_radii
    return Summary(
        "Identification risk by radius",
        header=[
            ("radii varied", ", ".join(result.columns)
             + (" (one common radius)" if result.common and len(result.columns) > 1 else "")),
            ("radii held fixed", ", ".join(f"{c}={r:g}" for c, r in fixed.items())
             or "none"),
            ("radius type", result.settings.get("radius_type", "")),
            ("risk per grid point", result.definition),
            ("grid points", result.grid_points),
            *([("search", result.search_text())] if result.search else []),
            ("synthetic datasets", result.risk.shape[1]),
            ("maximising radius r*", r_star),
            ("risk at r*", result.risk_star),
        ],
        tables={"Risk curve": tab},
        notes=["The maximising radius is the conservative value to report (Hornby & Hu "
               "2021 §4.1); ties at the maximum are all marked, r* is the smallest."],
        warnings=result.structured_warnings,
    )
