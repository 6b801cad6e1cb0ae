"""The parts of the attribute verdict lines
(:mod:`~bayes_risk.auditing.measures.attribute`): one line's share with its Monte Carlo
interval, its flagged records and the fit's regimes, the words that read a figure against a
release that says nothing about the records, the evidence line's opening and the release's
privacy beside it, the worst case the lines name and the warning codes that question them
(``CAVEATS``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from bayes_risk.auditing.outcome import StepOutcome, step_file
from bayes_risk.auditing.plan import AuditPlan
from bayes_risk.auditing.verdict_base import (
    Verdict,
    counted_at_risk,
    line_caveats,
    mass_words,
    pct,
)
from bayes_risk.results._attribute_mc import mc_interval
from bayes_risk.results._attribute_null import null_reading
from bayes_risk.results.attribute import EVIDENCE_FACTOR

#: the warning codes that question each of the step's verdict lines (Measure.caveats); a
#: line names those its measure raised
CAVEATS: dict[str, tuple[str, ...]] = {
    "attribute": ("RHAT_HIGH", "LOW_ESS", "TRUNCATION_TOO_SMALL", "H_TOO_SMALL",
                  "APPROXIMATE_NONPARAMETRIC", "REGIMES_DISAGREE", "RISK_BY_REGIME",
                  "MODEL_DIFFERS"),
}


def attribute_line(plan: AuditPlan, a: StepOutcome, key: str, measure: str,
                   threshold: float, counted: str, intruder: str, worst_case: str) -> Verdict:
    """One attribute line: the share ``key`` of the unflagged records (or the largest regime's),
    its Monte Carlo interval and the flagged records left out, counted at worst."""
    s = a.extra["summary"]
    un = s.get("unflagged") or {}
    nf = int(s.get("n_flagged") or 0)
    n = int(s.get("n_records") or 0)
    # the draw bootstrap's Monte Carlo interval of the pooled figure
    mc = s.get("mc_uncertainty") or {}
    level, intervals = mc_interval(mc)
    share = intervals.get(key)
    if share is not None and np.all(np.isfinite(np.asarray(share, dtype=float))):
        interval = (f"{level} % Monte Carlo interval {pct(share[0]):.3g}–{pct(share[1]):.3g} % "
                    f"(draw bootstrap, {mc['bootstrap']} replicates); ")
        if share[0] == share[1]:  # not an interval: the replicates do not move the share
            interval = (f"no {level} % Monte Carlo interval of any width: at least {level} % "
                        f"of the {mc['bootstrap']} draw-bootstrap replicates give "
                        f"{pct(share[0]):.3g} % (a degenerate interval: the Monte Carlo error "
                        f"changes the share in fewer than {100 - level} % of them); ")
    elif (a.result.settings or {}).get("estimator") == "plugin":
        # the plug-in has no posterior draws (MC_ERROR_HIGH flags records instead)
        interval = ("no posterior draws to bootstrap (plug-in likelihood of the release's "
                    "synthesizer; a smoothed column's Monte Carlo error is checked per record, "
                    "MC_ERROR_HIGH, which more replicates, --plugin-replicates, lower); ")
    else:
        interval = "no Monte Carlo interval (no draw bootstrap kept); "
    value, by_regime = pct(un.get(key, np.nan)), _regime_detail(s.get("regimes"), key)
    big = (s.get("regimes") or {}).get(f"largest_{key}")
    heavy = (s.get("regimes") or {}).get(f"mass_{key}")
    if heavy is not None:  # the regime that holds the posterior mass is read
        value = pct(heavy[key])
    elif big is not None and not pct(big[key]) <= value:  # the larger figure is read
        value = pct(big[key])
    n_u = int(un.get("n_records") or n - nf)
    left_out = ""
    # the worst case for the flagged records: each counted unless its bounds (Monte Carlo or
    # k̂) rule the line out for it
    at_risk = (s.get("flagged_at_worst") or {}).get(key, nf) if nf else None
    if nf:
        bound = counted_at_risk(value, n_u, nf, at_risk)
        which = ("every one" if at_risk == nf else
                 f"{at_risk} of them, those whose Monte Carlo or k̂ bounds do not rule it out "
                 f"(the other {nf - at_risk} not)")
        left_out = (f"; {nf} of {n} record(s) flagged and left out (unassessed: treat them as "
                    f"at risk; with {which} {counted}, the share would be {bound:.3g} %, "
                    f"{'still within' if bound <= pct(threshold) else 'past'} the threshold)")
    return Verdict("attribute", measure, value, pct(threshold), "max",
                   step_file(a, "summary.json"),
                   f"{interval}records with stable estimates{left_out}{by_regime}",
                   line_caveats(CAVEATS["attribute"], a.result.warnings), unit="%",
                   spread=f"pooled: the intruder reads all {plan.m} datasets at once, no spread",
                   intruder=intruder, flagged=nf, flagged_at_risk=at_risk,
                   count_of=(n_u, "records"),
                   threshold_name=key, worst_case=worst_case)


#: an infinite Bayes factor in words: what it means, not "∞" (p_true = 1 because the model's
#: likelihood, a plug-in's included, gives every other candidate probability 0)
INFINITE_FACTOR = ("unbounded (p_true 100 %: the model's likelihood leaves no other candidate "
                   "possible)")


def evidence_opening(un: dict[str, Any], k: float) -> str:
    """The evidence line's first words: p_true after the release against before it, and the
    spread of the Bayes factors."""
    q = un.get("bayes_factor_quantiles") or {}
    why = ("where Kass & Raftery's scale of evidence begins" if k == EVIDENCE_FACTOR
           else "given for this audit")

    def factor(name: str) -> str:
        # summary.json writes an infinite factor (p_true = 1) as "inf"
        x = float(q.get(name, np.nan))
        return INFINITE_FACTOR if x == np.inf else f"{x:.3g}"

    return (f"mean p_true {pct(un.get('mean_p_true', np.nan)):.3g} % after the release "
            f"against {pct(un.get('mean_prior_p_true', np.nan)):.3g} % before it (the "
            f"intruder's prior); Bayes factor of the true values: median {factor('50%')}, "
            f"95th percentile {factor('95%')}, largest {factor('100%')} "
            f"(1: the release tells nothing about the record; counted from {k:g}, {why})")


def privacy_words(s: dict[str, Any]) -> str:
    """The release's ε beside its Bayes factors (empty for a release without one)."""
    dp = (s.get("settings") or {}).get("differential_privacy")
    if not dp:
        return ""
    from bayes_risk.privacy import beside_attribute

    q = ((s.get("all") or {}).get("bayes_factor_quantiles") or {}).get("100%")
    return f"; {beside_attribute(dp, None if q is None else float(q))}"


def against_null(un: dict[str, Any], null: dict[str, Any], key: str, name: str = "") -> str:
    """The figure ``key`` of the stable estimates (named ``name`` when it is not the line's
    own) read against what a release that says nothing about the records gives
    (:meth:`~bayes_risk.attribute.AttributeRiskResult.null`; empty without one)."""
    entry = null.get(key)
    if not entry:
        return ""
    obs = float(un.get(key, np.nan))
    reading = null_reading(obs, entry)
    if not reading:
        return ""
    span = (f"expected {pct(entry['expected']):.3g} %, 95 % range {pct(entry['low']):.3g}–"
            f"{pct(entry['high']):.3g} %")
    return "; " + (f"{name}: " if name else "") + {
        "above": f"above what a release that says nothing about the records gives ({span}): "
                 "the release points to the true values of some records",
        "within": f"within what a release that says nothing about the records gives ({span}): "
                  "by this figure the release tells no more of a record than the other records "
                  "do",
        "below": f"below what a release that says nothing about the records gives ({span}): "
                 "the release puts other candidates ahead of the truth more often than chance "
                 "— no disclosure by this figure; read the share with evidence beside it",
    }[reading]


#: what the attribute line takes as the worst case over its intruder's choices
ATTRIBUTE_WORST_CASE = (
    "other records: every one known (the worst case of Reiter, Wang & Zhang 2014 and Hu "
    "2019); the model: the synthesizer's own; datasets: all m read at once; candidates: one "
    "variable different from the record's true values, a ±10 % grid of 11 values for a "
    "numeric column (the papers' candidate set, not searched); prior: uniform over the "
    "candidates (an intruder with a prior favouring the truth does better: prior_sensitivity); "
    "of the regimes of a model's fit, the larger figure; records whose estimate cannot be "
    "trusted are flagged and counted apart, never averaged in")


def _regime_detail(reg: Any, key: str = "prop_top") -> str:
    """An attribute line's words on the regimes of the model's fit (``REGIMES_DISAGREE``):
    the share ``key`` of each regime."""
    if not reg:
        return ""
    names = [f"regime {i} (chain{'s' if len(r['chains']) > 1 else ''} "
             f"{', '.join(str(c + 1) for c in r['chains'])})"
             for i, r in enumerate(reg["regimes"], 1)]
    if reg.get("status") != "computed":
        return (f"; the model's chains sit in {len(names)} regimes (REGIMES_DISAGREE) and the "
                f"share could not be computed per regime ({reg.get('reason')}): the figure "
                "pools regimes that disagree — refit before relying on it")
    parts = [f"{n} {pct(r['summary'].get(key, np.nan)):.3g} %"
             for n, r in zip(names, reg["regimes"], strict=True)]
    heavy = reg.get(f"mass_{key}")
    if heavy is not None:
        return (f"; the model's chains sit in {len(names)} regimes (REGIMES_DISAGREE): "
                f"{', '.join(parts)} over the {reg['n_records']} records assessed within each "
                f"regime; regime {heavy['regime']} holds the mass "
                f"({mass_words(reg['regimes'][heavy['regime'] - 1])}): its figure is read, the "
                "others' beside it (RISK_BY_REGIME)")
    big = reg.get(f"largest_{key}") or {}
    return (f"; the model's chains sit in {len(names)} regimes (REGIMES_DISAGREE): "
            f"{', '.join(parts)} over the {reg['n_records']} records assessed within each "
            f"regime; the larger of these and the pooled figure is read (RISK_BY_REGIME"
            + (f", regime {big['regime']}" if big else "") + ")")
