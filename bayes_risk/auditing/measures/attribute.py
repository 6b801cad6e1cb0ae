"""The attribute risk as one unit: its audit step (every record's posterior, of a fitted model
or of a CART / random-forest release's plug-in likelihood), its verdict lines and its report
section, named by its record ``MEASURE`` (:doc:`/adding_a_measure`). The parts its lines read
are in :mod:`~bayes_risk.auditing.measures._attribute_lines`, its costs in
:mod:`~bayes_risk.auditing.measures._attribute_cost`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from functools import partial
from typing import Any

import numpy as np
import pandas as pd

from bayes_risk._io import write_json
from bayes_risk._thresholds import builtin_thresholds
from bayes_risk.attribute.api import attribute_risk, check_plugin_replicates
from bayes_risk.attribute.run import ATTRIBUTE_FIGURES, attribute_run
from bayes_risk.auditing import remedies
from bayes_risk.auditing.context import (
    StepContext,
    loaded_model,
    membership_reuses,
    ran,
    rebuilt_synthesizer,
    rows_aligned,
    shown_known_values,
    step_folder,
    write_known_sweep,
    write_table,
)
from bayes_risk.auditing.measures._attribute_cost import COST
from bayes_risk.auditing.measures._attribute_lines import (
    ATTRIBUTE_WORST_CASE,
    CAVEATS,
    INFINITE_FACTOR,
    against_null,
    attribute_line,
    evidence_opening,
    privacy_words,
)
from bayes_risk.auditing.outcome import Measure, StepFigure, StepOutcome, step_file
from bayes_risk.auditing.plan import AuditPlan, post_processed, post_processing, skip_arg
from bayes_risk.auditing.report_blocks import (
    TOP_N,
    Block,
    Links,
    Section,
    Span,
    at_risk,
    known_sweep_blocks,
    rows_block,
    step_section,
    table_block,
)
from bayes_risk.auditing.verdict_base import Baseline, Verdict, caused
from bayes_risk.exceptions import arg_name
from bayes_risk.results._attribute_mc import mc_interval
from bayes_risk.results._attribute_null import null_table
from bayes_risk.results._base import plot_figure
from bayes_risk.results._format import format_number
from bayes_risk.results.attribute import EVIDENCE_FACTOR, AttributeRiskResult
from bayes_risk.warning_codes import message


def _attribute_model(ctx: StepContext) -> Any:
    """The plug-in (with the settings' replicates) or fitted model of the attribute step."""
    from bayes_risk.models import plugin_likelihood

    synth = loaded_model(ctx) if ctx.model is not None else rebuilt_synthesizer(ctx)
    return plugin_likelihood(synth, ctx.original, random_seed=ctx.plan.random_seed,
                             n_bootstrap=ctx.plan.given.attribute_estimator.plugin_replicates)


def _candidates(ctx: StepContext, columns: list[str]) -> Any:
    """One-variable-different candidates; ±10 % grids whose zero fallback is stated."""
    from bayes_risk.attribute import CandidateSpec
    from bayes_risk.attribute.candidates import with_zero_fallback

    return with_zero_fallback(CandidateSpec(), ctx.original,
                              [c for c in columns if c in ctx.schema.numeric])


def attribute_applies(ctx: StepContext) -> str | None:
    """Why the step is left out: no source of the intruder's likelihood, neither a fitted
    model nor a synthesizer rebuilt from the release's manifest (``None``: it runs)."""
    p = ctx.plan
    if p.attribute_source is not None:
        return None
    from bayes_risk.privacy import beside_attribute, release_privacy

    dp = release_privacy(ctx.synthetic)
    return (f"no fitted model was given ({arg_name('model', '...', cli='DIR')}) and the release "
            "was not made by a synthesizer with a plug-in likelihood that can be rebuilt from "
            f"its manifest (CART, random forests; method: {p.method or 'unknown'}), so the "
            "intruder's posterior over the synthesized values cannot be computed"
            + ("" if dp is None else f"; {beside_attribute(dp)}, with no attribute risk beside "
               "it (give the fitted model)") + ".")


def attribute_step(ctx: StepContext) -> StepOutcome:
    """Attribute risk of every (or the chosen) record under the worst-case intruder (run with
    a likelihood's source: :func:`attribute_applies`)."""
    p = ctx.plan
    from bayes_risk.auditing.causes import attribute_drivers

    model = _attribute_model(ctx)
    spec = _candidates(ctx, p.synthesized)
    opts: dict[str, Any] = dict(candidates=spec, prior="uniform", random_seed=p.random_seed,
                                estimator=p.given.attribute_estimator,
                                allow_other_model=p.given.allow_other_model)
    # the sweep leaves at least one synthesized column to guess
    ks_cols = [c for c in p.known if c in p.synthesized] if p.given.known_sweep else []
    if len(ks_cols) == len(p.synthesized):
        ks_cols = []
    curve_note = _known_curve_note(p, model)
    curve_on = p.given.known_fractions is not None and curve_note is None
    # one seed and one set of refits for the step, its sweeps and the membership step
    shared = bool(ks_cols) or curve_on or membership_reuses(ctx, model)
    parts = attribute_run(ctx.original, ctx.synthetic, model=model, records=p.attribute_records,
                          known_sweep=ks_cols or None,
                          known_curve=p.given.known_fractions if curve_on else None,
                          share_refits=shared, progressbar=ctx.progressbar,
                          executor=ctx.executor, **opts)
    if shared and parts.estimator.augmented:
        ctx.run.refits, ctx.run.refits_model = parts.estimator.augmented, model
    res, aks, curve = parts.result, parts.known_sweep, parts.known_curve
    recs = res.records.index
    drivers = attribute_drivers(ctx.original, list(ctx.synthetic), p.synthesized,
                                np.asarray(recs, dtype=int), spec,
                                [c for c in p.synthesized if c in ctx.schema.numeric],
                                aligned=rows_aligned(ctx))
    # the share with a Bayes factor of the truth at the board's factor (the verdict line's)
    summary = parts.to_dict(evidence_factor=p.thresholds.evidence_factor)
    summary["inputs"] = {"model": p.attribute_source}
    if curve is None and curve_note is not None:
        summary["known_curve"] = {"not_computed": curve_note}
    # the rank figure shows the threshold of the share ranked first, the verdict's line
    marked = {"rank": {"prop_top_threshold": p.thresholds.prop_top * 100}}
    figures = {name: StepFigure(partial(plot_figure, res, kind, **marked.get(kind, {})))
               for kind, name, _ in ATTRIBUTE_FIGURES}
    folder = step_folder(ctx, "attribute")
    files: list[str] = []
    if folder is not None:
        # column "record"; with the Bayes factors of the true values
        write_table(ctx, res.to_dataframe(), folder / "records.csv", index=True)
        write_json(folder / "summary.json", summary)
        files = ["records.csv", "summary.json", *figures]
        if aks is not None:
            files += write_known_sweep(ctx, aks, folder)
        if curve is not None:
            write_table(ctx, curve.table, folder / "known_curve.csv", fast=True)
            files.append("known_curve.csv")
    # mcmc_warnings: the fits' failed checks, also of a model fitted earlier
    return ran("attribute", res, folder, files, figures=figures, summary=summary,
               qi=shown_known_values(ctx), drivers=drivers,
               known_sweep=aks, known_curve=curve, known_curve_note=curve_note,
               mcmc_warnings=list((res.mcmc or {}).get("warnings", [])))


#: the attribute line's measure, ``prop_top`` of the attribute step
ATTRIBUTE_MEASURE = "share ranked first: records whose true values are the intruder's best guess"


#: the evidence line's measure, ``prop_evidence`` of the attribute step (``factor``: the
#: threshold ``evidence_factor``)
EVIDENCE_MEASURE = ("share with evidence: records whose true values the release makes at least "
                    "{factor:g} times likelier in odds (Bayes factor)")


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
    top = attribute_line(plan, a, "prop_top", ATTRIBUTE_MEASURE,
                         th.prop_top, "counted as ranked first", intruder,
                         ATTRIBUTE_WORST_CASE)
    null = s.get("null") or {}
    top = replace(top, detail=f"{top.detail}{against_null(un, null, 'prop_top')}")
    k = th.evidence_factor
    ev = attribute_line(plan, a, "prop_evidence", EVIDENCE_MEASURE.format(factor=k),
                        th.prop_evidence, "counted as given evidence", intruder,
                        f"{ATTRIBUTE_WORST_CASE}; the evidence factor: {k:g}"
                        + (", the smallest factor Kass & Raftery's scale reads as evidence "
                           "(a larger one counts fewer records)" if k == EVIDENCE_FACTOR
                           else ", given for this audit"))
    ev = replace(ev, detail=f"{evidence_opening(un, k)}; {ev.detail}"
                            f"{against_null(un, null, 'prop_evidence')}"
                            f"{against_null(un, null, 'mean_p_true', 'mean p_true')}"
                            f"{privacy_words(s)}")
    cause = remedies.attribute_cause(plan, a)
    return [caused(top, *cause), caused(ev, *cause)]


#: the diagnostic columns of the attribute step's records.csv, in plain words
DIAGNOSTICS = {
    "khat_max": ("Pareto k̂ (khat_max)",
                 "how heavy the tail of the record's importance weights is, the largest over "
                 "its candidate values. Below the threshold the reweighted posterior draws "
                 "give a reliable estimate; above it a few draws carry most of the weight and "
                 "the estimate may be off. Under the default rule ('material') the record is "
                 "flagged KHAT_HIGH only when the tail could raise its p_true by more than the "
                 "tolerance (p_true_upper) or make the truth the best guess; otherwise it "
                 "stays with the stable estimates, whose p_true may then overstate the risk "
                 "(p_true_lower)."),
    "ess_q_min": ("effective sample size (ess_q_min)",
                  "how many equally weighted posterior draws the record's reweighted estimate "
                  "is worth, the smallest over its candidate values: a small number means a "
                  "noisy estimate."),
    "mc_se_max": ("Monte Carlo error (mc_se_max)",
                  "the noise left in the record's estimate by using finitely many posterior "
                  "draws or bootstrap replicates (standard error of the log probability "
                  "ratio, the largest over its candidate values)."),
    "ess_omega_min": ("effective sample size of the published estimator's weights "
                      "(ess_omega_min)",
                      "as the effective sample size above, for the weights ω of the published "
                      "estimator (Hu 2019), computed beside the stabilised estimator, which "
                      "does not use them."),
    "max_omega_max": ("largest single weight of the published estimator (max_omega_max)",
                      "the share of the published estimator's sum held by its heaviest "
                      "posterior draw (a diagnostic of that estimator only)."),
    "max_weight_share": ("largest single-draw share (max_weight_share)",
                         "the largest share one posterior draw carries in a sum the record's "
                         "own estimate uses: above 0.9 one draw decides it and the record is "
                         "flagged DOMINATED_SUM, whatever k̂ says."),
    "n_dropped": ("draws dropped (n_dropped)",
                  "posterior draws left out because the release had zero probability under "
                  "them (numerically degenerate)."),
    "boot_rank_q05": ("bootstrap rank (boot_rank_q05)",
                      "the rank of the truth that 5 % of bootstrap resamples of the posterior "
                      "draws reach or better: a rank that moves between resamples is not a "
                      "stable finding."),
    "chain_z": ("between-chain difference (chain_z)",
                "how far apart two MCMC chains put the record's p_true, in Monte Carlo "
                "standard errors (p_true_chain_min and p_true_chain_max: each chain's own "
                "estimate); a large value flags the record CHAINS_DISAGREE."),
    "flag_codes": ("flags (flag_codes)",
                   "why a record's estimate is unreliable (the codes are explained below); "
                   "flagged records are counted on their own, never averaged in."),
}


def _computed(col: pd.Series) -> bool:
    """Whether a diagnostic column holds a value for some record (the plug-ins' are empty)."""
    if not pd.api.types.is_numeric_dtype(col):
        return True
    return bool(np.isfinite(col.to_numpy(dtype=float, na_value=np.nan)).any())


@step_section("attribute", "attribute", "Attribute risk")
def attribute_section(sec: Section, s: Any, result: Any, links: Links) -> None:
    sm, recs = s.extra["summary"], s.result.records
    src = step_file(s, "summary.json")
    st = sm.get("settings", {})
    sec.p(f"Worst-case intruder (knows every record but the target's synthesized values "
          f"{', '.join(st.get('columns', []))}); posterior: {result.plan.attribute_source}; "
          f"estimator: {st.get('estimator')}. p_true is the probability the intruder gives "
          "the record's true values among its candidates, in per cent; rank 1 is the "
          "intruder's best guess, and the share ranked first (prop_top in summary.json) the "
          "share of records whose true values are that guess. Each figure is read against what "
          "a release that says nothing about the records gives (the table below).")
    if st.get("differential_privacy"):
        sec.p("Differential privacy beside the attribute risk: "
              + privacy_words(sm).removeprefix("; ") + ". ε bounds what any intruder can learn of "
              "any record; the figures below are what this intruder learns of these records "
              "(methods page, Differential privacy beside attribute risk).")
    k = result.plan.thresholds.evidence_factor
    rows = []
    for key, lab in (("all", "all"), ("unflagged", "stable estimates"),
                     ("flagged", "flagged (unstable)")):
        d = sm.get(key) or {}
        q = d.get("p_true_quantiles") or {}
        rows.append([Span(lab), links.num(d.get("n_records"), src),
                     links.pct(d.get("mean_prior_p_true"), src),
                     links.pct(d.get("mean_p_true"), src), links.pct(q.get("50%"), src),
                     links.pct(q.get("95%"), src), links.pct(d.get("prop_top"), src),
                     links.pct(d.get("prop_evidence"), src)])
    sec.blocks.append(rows_block(
        ["records", "n", "mean p_true before the release: the intruder's prior (%)",
         "mean p_true (%)", "median p_true (%)", "95th percentile of p_true over the records "
         "(%)", "share ranked first (%)", f"share with evidence: Bayes factor ≥ {k:g} (%)"],
        rows, links, src, "The probability of the truth over the records (summary.json holds "
        "fractions: 0.04 = 4 %)"))
    _reading_attribute(sec, sm, recs, k, links, src)
    mc = sm.get("mc_uncertainty")
    if mc:
        sec.blocks.append(_mc_block(mc, links, src))
    for kind, name, cap in ATTRIBUTE_FIGURES:
        if kind == "khat" and not ("khat_max" in recs and _computed(recs["khat_max"])):
            # an empty frame says nothing a sentence cannot: no figure, and why
            sec.p(f"No Pareto k̂ figure: the '{st.get('estimator')}' estimator reweights no "
                  "posterior draws, so there are no importance weights whose tail k̂ could "
                  "measure (its Monte Carlo error is checked record by record instead).")
            continue
        sec.blocks.append(links.step_figure(s, name, cap))
    ks = s.extra.get("known_sweep")
    if ks is not None:
        known_sweep_blocks(
            sec, ks, s, links, what="The same measures for every subset of the synthesized "
            "known columns the intruder may also know of the target's own values "
            f"({len(ks.table)} subsets; the empty set is the worst case above)",
            fig="Mean p_true against the number of the record's own values known",
            unit="records", last="truth_first")
    _known_curve_blocks(sec, s, links)
    table = s.result.to_dataframe()  # records.csv: with the Bayes factors
    stable = table[table["flag_codes"].fillna("").astype(str) == ""]
    top = stable.sort_values("p_true", ascending=False, kind="stable").head(TOP_N).reset_index()
    cols = [c for c in ("record", "p_true", "rank_min", "G", "baseline", "bayes_factor")
            if c in top]
    sec.blocks.append(table_block(
        at_risk(top[cols], s.extra.get("qi"), "record").rename(
            columns={"rank_min": "rank of the truth", "G": "candidates G",
                     "baseline": "uniform prior, 1/G", "bayes_factor": "Bayes factor"}),
        links, step_file(s, "records.csv"),
        f"Records most at risk among stable estimates (top {TOP_N} by p_true; every record in "
        "records.csv, as fractions; Bayes factor: how many times the release multiplies the "
        "intruder's odds on the record's true values)", percent=("p_true", "uniform prior, 1/G")))
    counts = sm.get("flag_counts") or {}
    sec.p("Flagged records: ", links.num(sm.get("n_flagged", 0), src),
          (" (" + ", ".join(f"{k} × {v}" for k, v in counts.items()) + ")") if counts else "",
          ". What the diagnostic columns of records.csv mean:")
    sec.blocks.append(Block("dl", terms=[DIAGNOSTICS[k] for k in DIAGNOSTICS
                                         if k in recs.columns and _computed(recs[k])]))
    kh = sm.get("pareto_khat") or {}
    if kh.get("records_with_high_khat"):
        sec.p("Pareto k-hat above the threshold (",
              format_number(st.get("khat_threshold"), 2), "): ",
              links.num(kh["records_with_high_khat"], src), " record(s), under the posterior "
              "given the original or an augmented one (n_khat_high > 0; the figure shows the "
              "former, khat_max). Under the ",
              f"'{kh.get('rule')}' rule (tolerance {format_number(kh.get('tolerance'))}), ",
              links.num(kh.get("records_high_khat_immaterial"), src), " of them are not "
              "flagged: the tail cannot raise their p_true by more than the tolerance. For ",
              links.num(kh.get("records_p_true_may_overstate"), src), " unflagged record(s) "
              "the reported p_true may overstate the risk (p_true_lower < p_true): an upper "
              "bound, safe for accepting a release, not for claiming the risk is that high "
              "(user guide, attribute risk).")
    pm = sm.get("plugin_monte_carlo") or {}
    if pm.get("records_with_mc_error"):
        sec.p("Monte Carlo error of the plug-in likelihood (Bayesian-bootstrap replicates of "
              "smoothed leaves): ", links.num(pm["records_with_mc_error"], src), " record(s); ",
              links.num(pm.get("records_mc_error_immaterial"), src), " of them are not flagged: "
              "within the ", format_number(100 * pm["level"]), " % simultaneous Monte Carlo "
              "bounds of their candidates, their p_true cannot be understated by more than ",
              format_number(pm.get("tolerance")), " nor the truth be ranked first "
              "(p_true_lower, p_true_upper in records.csv; methods, attribute risk).")
    if counts:
        sec.p("The flags:")
        sec.blocks.append(Block("dl", terms=[(k, message(k)) for k in counts]))
    ch = sm.get("between_chain_check") or {}
    if ch:
        sec.p("Between-chain check of the record estimates: "
              + (f"{ch.get('reason')}; {ch.get('records_flagged')} record(s) flagged "
                 "CHAINS_DISAGREE." if ch.get("status") == "run"
                 else f"not run ({ch.get('reason')})."))


def _reading_attribute(sec: Section, sm: dict[str, Any], recs: pd.DataFrame, k: float,
                       links: Links, src: str | None) -> None:
    """How to read the share ranked first beside the evidence, for a release board, and every
    figure against what a release that says nothing about the records gives."""
    un = sm.get("unflagged") or {}
    q = un.get("bayes_factor_quantiles") or {}

    def factor(name: str) -> Span:
        # summary.json writes an infinite factor (p_true = 1) as "inf"
        x = q.get(name)
        if x is not None and float(x) == np.inf:
            return Span(INFINITE_FACTOR, links.href(src), num=True)
        return links.num(x, src)

    sec.p("How to read these figures. The share ranked first counts the records whose true "
          "values would be the intruder's single best guess. The share with evidence counts "
          f"the records whose true values the release makes at least {k:g} times likelier, in "
          "odds, than the intruder believed before seeing it (a Bayes factor of at least "
          f"{k:g}; 1 means the release tells nothing about the record). Here, over the stable "
          "estimates, the mean p_true is ", links.pct(un.get("mean_p_true"), src),
          " after the release against ", links.pct(un.get("mean_prior_p_true"), src),
          " before it, and the Bayes factor of the true values is ",
          factor("50%"), " at the median and ", factor("95%"),
          " at the 95th percentile.")
    null = sm.get("null")
    if not null:
        return
    table = null_table(un, null)
    sec.p("If the release said nothing about the records, each record's true values would be a "
          "draw from the other records' frequencies, independent of what the intruder "
          "concludes from the release: the table gives each figure's expected value and 95 % "
          "range under that null (", null.get("method", ""), "; methods page, Attribute "
          "disclosure risk: What a release that says nothing gives). Above the range, the "
          "release points to the records' true values; within it, it tells no more of a record "
          "than the other records do; below it, the release puts other candidates ahead of the "
          "truth more often than chance, which is no disclosure by that figure. With "
          "candidates that differ from the truth in one variable at a time, the truth comes "
          "first only if it wins in every guessed column at once, so the share ranked first "
          "of a release that says nothing is far below 1/G; its mean p_true can be below the "
          "prior's too, since such a release still favours some candidates (the frequent "
          "levels) and a truth drawn from the population often falls on the others.")
    block = table_block(table, links, src,
                        caption="the figures of the stable estimates against the null")
    block.fold = False  # the table the verdict lines read: shown, not folded
    sec.blocks.append(block)


def _known_curve_note(p: Any, model: Any) -> str | None:
    """Why the known-records curve asked for cannot be computed (``None``: it can)."""
    if p.given.known_fractions is None:
        return None
    from bayes_risk.contract import capabilities

    if capabilities(model).has("plugin") or getattr(model, "model_class", "O") != "P":
        return (f"the curve over the share of records known needs a class P model with "
                f"posterior draws; {type(model).__name__} is not one (the unknown records' "
                "values enter the release given the parameters)")
    return None


def _known_curve_blocks(sec: Section, s: Any, links: Links) -> None:
    """The attribute risk by the share of other records the intruder knows (when asked for)."""
    curve, note = s.extra.get("known_curve"), s.extra.get("known_curve_note")
    if curve is None and note is None:
        return
    head = Span("Intruders who know some of the other records. ", strong=True)
    if curve is None:
        sec.p(head, f"Not computed: {note}.")
        return
    sec.p(head, "The figures above assume the intruder knows every other record (Hu 2019, "
          "§3.4, calls this unrealistic). The same measures when the intruder knows only a "
          "random share of them; a record whose reweighted estimate cannot be trusted is "
          "counted in n_flagged, not averaged in (mean_p_true_unflagged). Not read by the "
          "verdict.")
    sec.blocks.append(links.figure(lambda: plot_figure(curve, "curve"), "known_curve.png",
                                   "Mean p_true against the share of other records known"))
    sec.blocks.append(table_block(curve.table, links, step_file(s, "known_curve.csv"),
                                  "Attribute risk by the share of other records known"))


def _mc_block(mc: dict[str, Any], links: Links, src: str | None) -> Block:
    """The draw bootstrap's Monte Carlo error of the attribute figures, rates in per cent."""
    level, intervals = mc_interval(mc)
    names = {"mean_p_true": "mean p_true", "prop_top": "share ranked first",
             "p_true_q25": "p_true, 25th percentile over the records",
             "p_true_q50": "p_true, median over the records",
             "p_true_q75": "p_true, 75th percentile over the records",
             "rank_q50": "rank of the truth, median", "rank_q75": "rank of the truth, 75th "
             "percentile", "prop_evidence": "share with evidence, Bayes factor ≥ "
             f"{mc.get('evidence_factor', EVIDENCE_FACTOR):g}"}
    rows = []
    for f, v in mc["value"].items():
        cell = links.num if f.startswith("rank") else links.pct
        lo, hi = intervals[f]
        rows.append([Span(names.get(f, f) + ("" if f.startswith("rank") else " (%)")),
                     cell(v, src), cell(mc["mc_se"][f], src),
                     [cell(lo, src), Span(f" in at least {level} % of the replicates "
                                          "(degenerate)")] if lo == hi else
                     [cell(lo, src), Span(" – "), cell(hi, src)]])
    return rows_block(["figure", "value", "MCSE", f"{level} % Monte Carlo interval"], rows,
                      links, src,
                      f"Monte Carlo error of the stable estimates' figures (draw bootstrap, "
                      f"{mc['bootstrap']} resamples of the posterior draws; "
                      f"{mc['n_flagged_excluded']} flagged record(s) left out)", fold=True)


def attribute_settings(plan: AuditPlan) -> None:
    """The settings table's rows of the attribute step: the intruder's posterior, the
    scenario, the candidates and prior, the estimator, the records."""
    a = partial(plan.add, MEASURE.name)
    est = plan.given.attribute_estimator
    a("intruder posterior", plan.attribute_source or "none",
      "given" if plan.attribute_source == "model" else "release manifest")
    a("scenario", "worst case", "default",
      "the intruder knows every record but the target's synthesized values")
    a("candidates", "one variable different; numeric: ±10 % grid of 11 points", "default",
      "a true value of 0 uses an additive grid of ±10 % of the column's median |value|")
    a("prior", "uniform", "default")
    a("estimator", est.kind, "default" if est.kind == "auto" else "given",
      "auto: stabilised for class P models (m refits of the model), importance sampling for "
      "class O")
    a("refit draws", "the model's draws" if est.refit_draws is None else est.refit_draws,
      "default" if est.refit_draws is None else "given",
      "kept draws per chain of each refit of the stabilised estimator")
    a("records",
      "all" if plan.attribute_records is None else f"{len(plan.attribute_records)} given",
      "default" if plan.attribute_records is None else "given")


#: post-processing that is a function of the release alone (its own values, bounds given)
_RELEASE_ONLY = ("bottom_top_coding", "smoothing")


def bounded_by_before(done: Sequence[Any], known: Sequence[str]) -> str | None:
    """Why the attribute lines of the release before the remedy bound this release's from
    above, or ``None`` when they do not: each post-processing step is a function of the release
    before it and of what the attribute step's worst-case intruder knows (every other record,
    the target's known columns), so by the data-processing inequality an intruder who sees the
    remedied release learns no more, on average, than one who sees the release before it. A
    removal of uniques qualifies when its keys are known columns (which rows it removes is then
    known to that intruder); one on a column the intruder does not know can reveal the target's
    value by which rows are missing, and other remedies are not claimed."""
    ops = []
    for d in done:
        op = str(d.get("operation"))
        if op in _RELEASE_ONLY:
            ops.append(op.replace("_", " ") + " (a function of the release alone)")
        elif op.startswith("remove_") and set(d.get("keys") or ()) <= set(known) \
                and d.get("keys"):
            ops.append(f"{op.replace('_', ' ')} on the known columns {', '.join(d['keys'])} "
                       "(which rows go is a function of the release and of what the intruder "
                       "knows: the other records and the target's known values)")
        else:
            return None
    return ("data-processing inequality: " + "; ".join(ops) + "; an intruder who sees the "
            "remedied release learns no more, on average, than one who sees the release "
            "before the remedy")


def attribute_resolve(plan: AuditPlan, original: pd.DataFrame, release: Any,
                      schema: Any) -> str | None:
    """Why the step is withheld: a post-processed release, which no model's likelihood
    describes (``None``: it is not), saying whether the lines of the release before the remedy
    bound this one's (recorded in ``plan.bounded_before``). ``plugin_replicates`` is refused
    here when the step will not run (``OPTION_UNUSED``; :func:`attribute_preflight` refuses it
    where the step's likelihood draws no replicate): never ignored, and before any step."""
    why = post_processed(release)
    unused = (f"the attribute step is skipped as asked ({skip_arg([MEASURE.name])})"
              if MEASURE.name in plan.skip else
              f"the attribute step is withheld: {why}" if why is not None else
              "the attribute step does not run: no fitted model was given and the release's "
              "synthesizer has no plug-in likelihood" if plan.attribute_source is None else None)
    if unused is not None:
        check_plugin_replicates(None, plan.given.attribute_estimator.plugin_replicates, unused)
    if why is None:
        return None
    bound = bounded_by_before(post_processing(release), plan.known)
    if bound:
        plan.bounded_before[MEASURE.name] = bound
    return why + (
        " (its lines there bound this release's from above: with that audit given as "
        f"{arg_name('before')}, they are carried as upper bounds)." if bound else
        "; its lines there are no bound on this release's (a remedy that depends on what "
        "the intruder does not know can reveal it).")


def attribute_preflight(ctx: StepContext) -> None:
    """Load and check the likelihood's source before the first step: the fitted model given,
    else the synthesizer rebuilt from the release's manifest; with ``plugin_replicates``, the
    likelihood built and checked to draw them, as ``attribute_risk`` checks it (a random
    forest's, an unsmoothed CART's or a Bayesian model's draws none: ``OPTION_UNUSED``)."""
    if ctx.model is not None:
        loaded_model(ctx)
    else:
        rebuilt_synthesizer(ctx)
    replicates = ctx.plan.given.attribute_estimator.plugin_replicates
    if replicates is not None:
        check_plugin_replicates(_attribute_model(ctx), replicates)


#: what of the step runs on the audit's executor (``audit(executor=...)``)
EXECUTOR = ("the records' posteriors, also of the knowledge sweep; refits of a fitted model and "
            "the known-records curve in process")


MEASURE = Measure("attribute", "Attribute risk",
                  thresholds=builtin_thresholds("attribute"), step=attribute_step,
                  function=attribute_risk,
                  result=AttributeRiskResult, verdict=attribute_lines,
                  sections=(attribute_section,),
                  settings=attribute_settings, cost=COST, caveats=CAVEATS,
                  resolve=attribute_resolve, applies=attribute_applies,
                  preflight=attribute_preflight, executor=EXECUTOR)
