"""The verdict lines of an audit: each headline measure against its threshold, with cause and
remedies (:doc:`/adding_a_measure`). The line and its shared wording are in
:mod:`~bayes_risk.auditing.verdict_base`; the lines of identification and of the attacks in
:mod:`~bayes_risk.auditing.identification_verdict` and :mod:`~bayes_risk.auditing.attacks_verdict`
(their public names stay importable from here)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from bayes_risk.auditing import remedies
from bayes_risk.auditing.attacks_verdict import attacks_lines
from bayes_risk.auditing.disclosure_step import target_folder
from bayes_risk.auditing.identification_verdict import identification_lines
from bayes_risk.auditing.outcome import StepOutcome, step_file
from bayes_risk.auditing.plan import AuditPlan
from bayes_risk.auditing.verdict_base import (
    CAVEATS,
    Baseline,
    Verdict,
    caused,
    dataset_range,
    line_caveats,
    mass_words,
    outside_range,
    pct,
)
from bayes_risk.measures import load, measures
from bayes_risk.results.attribute import EVIDENCE_FACTOR

__all__ = [
    "ATTRIBUTE_MEASURE",
    "EVIDENCE_MEASURE",
    "Baseline",
    "CAVEATS",
    "Verdict",
    "attacks_lines",
    "attribute_lines",
    "disclosure_lines",
    "identification_lines",
    "membership_lines",
    "utility_lines",
    "verdict_lines",
    "verdict_steps",
]


def verdict_steps() -> tuple[str, ...]:
    """The steps with verdict lines: the registered measures with a verdict builder."""
    return tuple(m.name for m in measures() if m.verdict is not None)


def verdict_lines(plan: AuditPlan, steps: Sequence[StepOutcome]) -> list[Verdict | Baseline]:
    """The verdict lines and baselines of the steps that ran, in the order of the steps.

    Parameters
    ----------
    plan : AuditPlan
        The audit's settings and thresholds.
    steps : sequence of StepOutcome
        One outcome per step (``AuditResult.steps``); each step with verdict lines
        (:func:`verdict_steps`) must be among them.

    Returns
    -------
    list of Verdict and Baseline
    """
    by_name: dict[str, StepOutcome] = {}
    for s in steps:
        by_name.setdefault(s.name, s)
    out: list[Verdict | Baseline] = []
    for m in measures():
        if m.verdict is not None and by_name[m.name].status == "ran":
            out += load(m.verdict)(plan, by_name[m.name])
    return out


_NO_INTRUDER = "none (utility: how closely the release reproduces the original)"

#: the attribute line's measure, ``prop_top`` of the attribute step
ATTRIBUTE_MEASURE = "share ranked first: records whose true values are the intruder's best guess"
#: the evidence line's measure, ``prop_evidence`` of the attribute step (``factor``: the
#: threshold ``evidence_factor``)
EVIDENCE_MEASURE = ("share with evidence: records whose true values the release makes at least "
                    "{factor:g} times likelier in odds (Bayes factor)")


def utility_lines(plan: AuditPlan, u: StepOutcome) -> list[Verdict | Baseline]:
    """Mean S_pMSE and the mean confidence-interval overlap."""
    th, r = plan.thresholds, u.result
    v = Verdict("utility", "mean S_pMSE (pMSE / null expectation)",
                float(r.pmse.mean_ratio), th.s_pmse, "max", step_file(u, "summary.json"),
                f"{r.pmse.null} null", line_caveats("s_pmse", r.pmse.warnings),
                spread=dataset_range(r.pmse.ratio), intruder=_NO_INTRUDER, threshold_name="s_pmse")
    ov = float(r.mean_overlap)
    w = Verdict("utility", "mean confidence-interval overlap",
                ov, th.overlap, "min", step_file(u, "overlap.csv"),
                warnings=line_caveats("overlap", r.warnings),
                spread=dataset_range(r.overlap_per_dataset) + "; " + outside_range(
                    ov, r.overlap_per_dataset,
                    f"the value is not their mean but the overlap of the interval combined "
                    f"over the {plan.m} datasets, centred on the mean of their estimates "
                    "(closer to the original's than one dataset's)",
                    f"the value combines the intervals of the {plan.m} datasets"),
                intruder=_NO_INTRUDER, threshold_name="overlap")
    return [caused(v, *remedies.utility_cause(u)), caused(w, *remedies.overlap_cause(u))]


def attribute_lines(plan: AuditPlan, a: StepOutcome) -> list[Verdict | Baseline]:
    """The share of records whose true values are the intruder's most probable candidate, and
    the share whose true values the release gives evidence for (Bayes factor ≥
    ``evidence_factor``), read together (:doc:`/methods/attribute`)."""
    s = a.extra["summary"]
    un = s.get("unflagged") or {}
    th = plan.thresholds
    # the intruder is the same on both lines
    intruder = ("worst case: knows every other record's true values and the synthesis model, "
                "and guesses this record's synthesized values")
    top = _attribute_line(plan, a, "prop_top", ATTRIBUTE_MEASURE,
                          th.prop_top, "counted as ranked first", intruder,
                          _ATTRIBUTE_WORST_CASE)
    guess = float(s.get("random_guess_baseline", np.nan))
    top = replace(top, detail=f"{top.detail}{_below_guess(un, guess, th.evidence_factor)}")
    k = th.evidence_factor
    ev = _attribute_line(plan, a, "prop_evidence", EVIDENCE_MEASURE.format(factor=k),
                         th.prop_evidence, "counted as given evidence", intruder,
                         f"{_ATTRIBUTE_WORST_CASE}; the evidence factor: {k:g}"
                         + (", the smallest factor Kass & Raftery's scale reads as evidence "
                            "(a larger one counts fewer records)" if k == EVIDENCE_FACTOR
                            else ", given for this audit"))
    ev = replace(ev, detail=f"{_before_after(un, k)}; {ev.detail}")
    cause = remedies.attribute_cause(plan, a)
    return [caused(top, *cause), caused(ev, *cause)]


def _attribute_line(plan: AuditPlan, a: StepOutcome, key: str, measure: str,
                    threshold: float, counted: str, intruder: str, worst_case: str) -> Verdict:
    """One attribute line: the share ``key`` of the unflagged records (or the largest regime's),
    its Monte Carlo interval and the flagged records left out, counted at worst."""
    s = a.extra["summary"]
    un = s.get("unflagged") or {}
    nf = int(s.get("n_flagged") or 0)
    n = int(s.get("n_records") or 0)
    left_out = ""
    if nf:
        # the worst case for the flagged records: every one of them counted
        hit = float(un.get(key, np.nan)) * int(un.get("n_records") or n - nf)
        bound = pct((hit + nf) / n) if n else np.nan
        thr = pct(threshold)
        left_out = (f"; {nf} of {n} record(s) flagged and left out (unassessed: treat them as "
                    f"at risk; {counted}, the share would be {bound:.3g} %, "
                    f"{'still within' if bound <= thr else 'past'} the threshold)")
    # the draw bootstrap's Monte Carlo interval of the pooled figure
    mc = s.get("mc_uncertainty") or {}
    name = next((k for k in mc if k.startswith("mc_interval_")), None)
    share = mc[name].get(key) if name else None
    if share is not None and np.all(np.isfinite(np.asarray(share, dtype=float))):
        interval = (f"{name.rsplit('_', 1)[1]} % Monte Carlo interval {pct(share[0]):.3g}–"
                    f"{pct(share[1]):.3g} % (draw bootstrap, {mc['bootstrap']} replicates); ")
    elif (a.result.settings or {}).get("estimator") == "plugin":
        # the plug-in has no posterior draws (MC_ERROR_HIGH flags records instead)
        interval = ("no posterior draws to bootstrap (plug-in likelihood of the release's "
                    "synthesizer; a smoothed column's Monte Carlo error is checked per record, "
                    "MC_ERROR_HIGH); ")
    else:
        interval = "no Monte Carlo interval (no draw bootstrap kept); "
    value, by_regime = pct(un.get(key, np.nan)), _regime_detail(s.get("regimes"), key)
    big = (s.get("regimes") or {}).get(f"largest_{key}")
    heavy = (s.get("regimes") or {}).get(f"mass_{key}")
    if heavy is not None:  # the regime that holds the posterior mass is read
        value = pct(heavy[key])
    elif big is not None and not pct(big[key]) <= value:  # the larger figure is read
        value = pct(big[key])
    extra = ("random guess "
             f"{pct(s.get('random_guess_baseline', np.nan)):.3g} %; " if key == "prop_top"
             else "")
    return Verdict("attribute", measure, value, pct(threshold), "max",
                   step_file(a, "summary.json"),
                   f"{interval}{extra}records with stable estimates{left_out}{by_regime}",
                   line_caveats("attribute", a.result.warnings), unit="%",
                   spread=f"pooled: the intruder reads all {plan.m} datasets at once, no spread",
                   intruder=intruder, flagged=nf,
                   count_of=(int(un.get("n_records") or n - nf), "records"),
                   threshold_name=key, worst_case=worst_case)


def _before_after(un: dict[str, Any], k: float) -> str:
    """The evidence line's first words: p_true after the release against before it, and the
    spread of the Bayes factors."""
    q = un.get("bayes_factor_quantiles") or {}
    why = ("where Kass & Raftery's scale of evidence begins" if k == EVIDENCE_FACTOR
           else "given for this audit")

    def factor(name: str) -> str:
        # summary.json writes an infinite factor (p_true = 1) as "inf"
        x = float(q.get(name, np.nan))
        return "∞ (p_true 100 %)" if x == np.inf else f"{x:.3g}"

    return (f"mean p_true {pct(un.get('mean_p_true', np.nan)):.3g} % after the release "
            f"against {pct(un.get('mean_prior_p_true', np.nan)):.3g} % before it (the "
            f"intruder's prior); Bayes factor of the true values: median {factor('50%')}, "
            f"95th percentile {factor('95%')}, largest {factor('100%')} "
            f"(1: the release tells nothing about the record; counted from {k:g}, {why})")


def _below_guess(un: dict[str, Any], guess: float, k: float) -> str:
    """Why a share ranked first below the random guess is not protection (empty otherwise)."""
    top = float(un.get("prop_top", np.nan))
    if not (np.isfinite(top) and np.isfinite(guess) and top < guess):
        return ""
    q = un.get("bayes_factor_quantiles") or {}
    lo, hi = float(q.get("5%", np.nan)), float(q.get("95%", np.nan))
    read = (f"Read the line 'share with evidence' beside it (Bayes factor ≥ {k:g}; methods "
            "page, Attribute disclosure risk: A share ranked first below the random guess)")
    if not hi >= k:  # (no factor known: the flat case's words, which claim no figure)
        flat = (f" (the Bayes factors of the true values run from {lo:.3g} to {hi:.3g} for 90 % "
                "of the records)" if np.isfinite(hi) else "")
        return ("; below the random guess, and that is not protection: the release says "
                "little about each record, so the intruder's posterior over its candidates is "
                f"nearly flat{flat} and the noise of the released values puts some other "
                f"candidate first in almost every record — Bayes' rule, not a safe release. {read}")
    # the release moves the intruder towards the truth, and further towards other candidates
    return (f"; below the random guess, yet the release gives evidence for the true values of "
            f"at least 5 % of the records (Bayes factor {hi:.3g} at the 95th percentile): "
            "other candidates gain still more, so the ranking hides what the release tells. "
            f"{read}")


#: what the attribute line takes as the worst case over its intruder's choices
_ATTRIBUTE_WORST_CASE = (
    "other records: every one known (the worst case of Reiter, Wang & Zhang 2014 and Hu "
    "2019); the model: the synthesizer's own; datasets: all m read at once; candidates: one "
    "variable different from the record's true values, a ±10 % grid of 11 values for a "
    "numeric column (the papers' candidate set, not searched); prior: uniform over the "
    "candidates (an intruder with a prior favouring the truth does better: prior_sensitivity); "
    "of the regimes of a model's fit, the larger figure; records whose estimate cannot be "
    "trusted are flagged and counted apart, never averaged in")

#: what the membership lines take as the worst case over their intruder's choices
_MEMBERSHIP_WORST_CASE = (
    "other records: every one known; the model and all m datasets; the Bayesian likelihood "
    "ratio, the optimal test for this intruder (a distance-to-closest-record attack is "
    "reported beside it); non-members: the holdout given")


def _disclosure_worst_case(plan: AuditPlan, target: str, name: str) -> str:
    """What a repU or DiSCO line takes as the worst case over its intruder's choices."""
    keys = ", ".join(plan.disclosure_keys.get(target, ()))
    ng = plan.ngroups_target.get(target)
    grouped = ("" if name == "repU" or ng is None else
               f"; the numeric target in {ng} quantile groups (synthpop's default; fewer, "
               "wider groups make a correct guess easier and are not searched)")
    return (f"keys: every known column but the target together ({keys}; subsets not "
            f"searched); datasets: the mean over the m datasets (synthpop's disclosure(); each "
            f"dataset's figure in the spread){grouped}")


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
                f"regime; regime {heavy['regime']} holds the posterior mass "
                f"({mass_words(reg['regimes'][heavy['regime'] - 1])}): its figure is read, the "
                "others' beside it (RISK_BY_REGIME)")
    big = reg.get(f"largest_{key}") or {}
    return (f"; the model's chains sit in {len(names)} regimes (REGIMES_DISAGREE): "
            f"{', '.join(parts)} over the {reg['n_records']} records assessed within each "
            f"regime; the larger of these and the pooled figure is read (RISK_BY_REGIME"
            + (f", regime {big['regime']}" if big else "") + ")")


def disclosure_lines(plan: AuditPlan, d: StepOutcome) -> list[Verdict | Baseline]:
    """repU (per set of keys) and DiSCO (per target), or their baselines."""
    th = plan.thresholds
    out: list[Verdict | Baseline] = []
    seen_keys: set[tuple[str, ...]] = set()
    unconfirmed = set(d.extra.get("unconfirmed") or ())

    def doubt(cols: Any) -> tuple[str, ...]:
        # a synthesized column of plain files not confirmed as the release's original's
        return ("ORIGINAL_UNCONFIRMED",) if unconfirmed.intersection(cols) else ()

    for t, res in d.result.items():
        sub = target_folder(d.result, t)
        keys = ", ".join(res.keys)
        fixed_keys = plan.release_independent_keys(t)
        who = f"knows the keys {keys} of every record"
        # (threshold, measure, file, baseline or not, why a baseline, caveats, intruder, cause)
        specs = [("DiSCO", f"DiSCO (%), target {t}", "attrib.csv",
                  fixed_keys and t not in plan.synthesized,
                  f"neither the keys ({keys}) nor the target are synthesized: the release "
                  "shows the original's values",
                  line_caveats("DiSCO", res.warnings) + doubt((*res.keys, t)),
                  f"{who} and reads the target {t} off the release",
                  lambda res=res, t=t: remedies.disco_cause(plan, res, t))]
        # repU depends on the keys alone: one line per set of keys, not per target
        if tuple(res.keys) not in seen_keys:
            specs.insert(0, ("repU", f"repU (%), keys {keys}", "ident.csv", fixed_keys,
                             f"the keys ({keys}) are not synthesized: repU equals UiO, the "
                             "original's sample uniques on the keys, in every dataset",
                             doubt(res.keys), who, lambda res=res: remedies.repu_cause(plan, res)))
        seen_keys.add(tuple(res.keys))
        for name, measure, file, fixed, why, warns, intruder, cause in specs:
            src, value = step_file(d, sub + file), float(res.means()[name])
            if fixed:
                out.append(Baseline("disclosure", measure, value, getattr(th, name), src, why,
                                    unit="%"))
                continue
            table = res.ident if name == "repU" else res.attrib
            v = Verdict("disclosure", measure, value, getattr(th, name), "max", src, unit="%",
                        warnings=warns, spread=dataset_range(table[name], "%"), intruder=intruder,
                        count_of=(plan.n_records, "records"), threshold_name=name,
                        worst_case=_disclosure_worst_case(plan, t, name))
            out.append(caused(v, *cause()))
    base = d.extra.get("original_risk") or {}
    for i, r in enumerate(base.values(), start=1):
        sub = "original_risk" + (f"_{i}" if len(base) > 1 else "")
        out += _original_lines(r, step_file(d, f"{sub}/summary.json"))
    return out


def _original_lines(r: Any, src: str | None) -> list[Baseline]:
    """sdcMicro's measures of the original (:func:`~bayes_risk.original_risk`), as baselines."""
    keys = ", ".join(r.keys)
    g, n = r.global_risk, r.key_cells["n_records"]
    alone = "computed on the original alone (sdcMicro), the same for every release"
    how = (f"Benedetti–Franconi risk with the survey weights {r.settings['weights']}"
           if r.weighted else "no survey weights: the sample-based risk 1/f_k, an upper bound")
    out = [Baseline("disclosure", f"global re-identification risk (%), keys {keys}",
                    float(g["global_risk_pct"]), None, src,
                    f"{alone}: {g['expected_reidentifications']:,.4g} expected "
                    f"re-identifications among {n:,} records ({how})", unit="%")]
    ka = r.k_anonymity
    if "3" in ka:
        others = "; ".join(f"{k}-anonymity: {d['n_violating']:,}" for k, d in ka.items())
        out.append(Baseline("disclosure", f"records violating 3-anonymity (%), keys {keys}",
                            float(ka["3"]["pct_violating"]), None, src,
                            f"{alone}: records in key cells of fewer than 3 records "
                            f"(records violating {others})", unit="%"))
    if r.suda is not None and "min_msu_size" in r.records:
        m = r.records["min_msu_size"].to_numpy()
        few = int(np.sum((m >= 1) & (m <= 2)))
        out.append(Baseline("disclosure",
                            f"records singled out by one or two key values (%), keys {keys}",
                            100.0 * few / n, None, src,
                            f"{alone}: SUDA2's minimal sample uniques of at most 2 keys "
                            f"({few:,} records; {r.suda['n_records_with_msu']:,} have one of "
                            f"any size)", unit="%"))
    for col, d in r.l_diversity.items():
        out.append(Baseline("disclosure",
                            f"records whose key cell has one value of {col} (%), keys {keys}",
                            float(d["pct_records_l1"]), None, src,
                            f"{alone}: distinct l-diversity 1, the value of {col} follows from "
                            f"the keys ({d['n_records_l1']:,} records; values compared "
                            "ungrouped)", unit="%"))
    return out


def membership_lines(plan: AuditPlan, mem: StepOutcome) -> list[Verdict | Baseline]:
    """The attack's advantage (AUC − 0.5) and the share of exposed members (stable estimates)."""
    th = plan.thresholds
    res = mem.result
    f, st = res.file, res.settings
    src = step_file(mem, "summary.json")
    m = plan.m
    nf = int(f.get("n_flagged") or 0)
    left_out = (f"; {nf} of {f['n_targets']} target(s) flagged and left out (unassessed: "
                "treat flagged members as exposed)" if nf else "")

    def iv(key: str, scale: float = 1.0, unit: str = "") -> str:
        x = f.get(key)
        if not x or not np.all(np.isfinite(x)):
            return "no bootstrap interval"
        return f"95 % bootstrap interval {x[0] * scale:.3g}–{x[1] * scale:.3g}{unit}"

    rec = res.records
    ok = (rec["flag_codes"] == "").to_numpy()
    non = ok & (rec["role"] == "non-member").to_numpy()
    pthr = float(st["threshold"])
    share_non = (float(np.mean(rec["p_member"].to_numpy()[non] > pthr)) if non.any()
                 else float("nan"))
    dcr = (f"; the distance-to-closest-record attack: AUC − 0.5 = "
           f"{f['dcr_auc_advantage']:.3g}" if "dcr_auc_advantage" in f else "")
    who = ("worst case: knows every other record's true values, the synthesis model and "
           f"the release ({m} dataset{'s' if m > 1 else ''}), holds a record and asks "
           "whether it was in the confidential data (prior membership probability "
           f"{st['prior']:.3g})")
    spread = ("one dataset, no spread" if m == 1 else
              f"pooled: the intruder reads all {m} datasets at once, no spread")
    caveats = line_caveats("membership", res.warnings)
    cause = remedies.membership_cause(plan, mem)
    adv = Verdict("membership", "membership attack's advantage over the base rate "
                  "(AUC − 0.5)", float(f["auc_advantage"]), th.membership_advantage,
                  "max", src,
                  f"{iv('auc_advantage_interval')}; {f['n_members']:,} members against "
                  f"{f['n_non_members']:,} holdout records; TPR − FPR at P(member) > "
                  f"{pthr:g}: {f['tpr_fpr']:.3g}{dcr}{left_out}",
                  caveats, spread=spread, intruder=who, flagged=nf,
                  threshold_name="membership_advantage", worst_case=_MEMBERSHIP_WORST_CASE)
    share = Verdict("membership", f"share of members with P(member) > {pthr:g}",
                    pct(f["share_members_above"]), pct(th.membership_share), "max", src,
                    f"{iv('share_members_above_interval', 100, ' %')}; holdout records "
                    f"above it: {pct(share_non):.3g} %{left_out}",
                    caveats, unit="%", spread=spread, intruder=who, flagged=nf,
                    threshold_name="membership_share", worst_case=_MEMBERSHIP_WORST_CASE)
    return [caused(adv, *cause), caused(share, *cause)]

