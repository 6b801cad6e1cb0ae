"""The membership risk as one unit: its audit step (with a holdout and the model), its verdict
line and its report section, named by its record ``MEASURE`` (:doc:`/adding_a_measure`)."""

from __future__ import annotations

from functools import partial
from typing import Any

import numpy as np

from bayes_risk._io import write_json
from bayes_risk._memory import MIN_WORKING_BYTES
from bayes_risk._thresholds import builtin_thresholds
from bayes_risk.auditing import remedies
from bayes_risk.auditing.context import (
    StepContext,
    loaded_model,
    ran,
    skipped,
    step_folder,
    write_table,
)
from bayes_risk.auditing.outcome import Measure, Need, StepCost, StepFigure, StepOutcome, step_file
from bayes_risk.auditing.plan import AuditPlan, reads_likelihood
from bayes_risk.auditing.report_blocks import (
    Links,
    Section,
    step_section,
    table_block,
)
from bayes_risk.auditing.verdict_base import (
    Baseline,
    Verdict,
    caused,
    line_caveats,
    pct,
)
from bayes_risk.exceptions import arg_name
from bayes_risk.membership.api import membership_risk
from bayes_risk.results._base import plot_figure
from bayes_risk.results.membership import MembershipRiskResult


def membership_applies(ctx: StepContext) -> str | None:
    """Why the step is left out: no holdout, the non-members, or no fitted model, the
    likelihood (``None``: it runs)."""
    if ctx.holdout is None:
        return (f"no holdout was given ({arg_name('holdout', '...', cli='FILE')}: records of "
                "the population that were not in the original), so members cannot be compared "
                "with non-members.")
    if ctx.model is None:
        return (f"no fitted model was given ({arg_name('model', '...', cli='DIR')}): "
                "membership risk needs its likelihood (the posterior draws of a Bayesian model, "
                "or a CART synthesizer's plug-in).")
    return None


def membership_preflight(ctx: StepContext) -> None:
    """Load and check the fitted model, and check the step's inputs against it, before the
    first step (a model the measure does not cover: the step says why it skips)."""
    from bayes_risk.exceptions import NotSupportedError
    from bayes_risk.membership.api import check_inputs

    model = loaded_model(ctx)
    try:
        check_inputs(model, ctx.original, ctx.synthetic, ctx.holdout,
                     ctx.plan.membership_selection)
    except NotSupportedError:
        pass


def membership_step(ctx: StepContext) -> StepOutcome:
    """Membership risk against the holdout (:func:`bayes_risk.membership_risk`; run with one
    and a fitted model: :func:`membership_applies`)."""
    from bayes_risk.exceptions import NotSupportedError
    from bayes_risk.membership.api import check_model
    from bayes_risk.membership.specs import AttackSpec, RatioSpec

    model = loaded_model(ctx)
    try:
        check_model(model, selection=ctx.plan.membership_selection)
    except NotSupportedError as err:
        return skipped("membership", f"{err} [{err.code}]")
    run = ctx.run
    shared = run.refits if run.refits is not None and run.refits_model is model else None
    res = membership_risk(model, ctx.original, ctx.synthetic, holdout=ctx.holdout,
                          population=0,
                          attack=AttackSpec(threshold=ctx.plan.thresholds.membership_probability),
                          selection=ctx.plan.membership_selection,
                          ratio=RatioSpec(augmented=shared,
                                          refit_cache=ctx.plan.given.attribute_estimator
                                          .refit_cache),
                          progressbar=ctx.progressbar,
                          random_seed=ctx.plan.random_seed,
                          allow_other_model=ctx.plan.given.allow_other_model)
    summary = res.to_dict()
    summary["refits"] = ("the attribute step's (one per dataset, shared)" if shared is not None
                         else "its own (one per dataset)")
    folder = step_folder(ctx, "membership")
    files: list[str] = []
    if folder is not None:
        write_table(ctx, res.records, folder / "records.csv", index=True)
        write_json(folder / "summary.json", summary)
        files = ["records.csv", "summary.json"]
    figures = {name: StepFigure(partial(plot_figure, res, kind))
               for kind, name in (("p_member", "p_member_hist.png"), ("roc", "roc.png"))}
    return ran("membership", res, folder, files, figures=figures, summary=summary)


#: what the membership lines take as the worst case over their intruder's choices
_MEMBERSHIP_WORST_CASE = (
    "other records: every one known; the model and all m datasets; the Bayesian likelihood "
    "ratio, the optimal test for this intruder (a distance-to-closest-record attack is "
    "reported beside it); non-members: the holdout given")


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
    caveats = line_caveats(CAVEATS["membership"], res.warnings)
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


@step_section("membership", "membership", "Membership risk")
def membership_section(sec: Section, s: Any, result: Any, links: Links) -> None:
    f, st = s.result.file, s.result.settings
    src = step_file(s, "summary.json")
    sec.p("Worst-case intruder (knows every record but one) holding a record of the original "
          "(member) or of the holdout (non-member): the posterior probability that it was in "
          "the confidential data, with prior ", links.num(st.get("prior"), src),
          " (methods page 'Membership disclosure risk'); beside it the distance to the closest "
          "released record (SDMetrics, anonymeter).")
    sec.blocks.append(table_block(s.result.summary().tables["attack"], links, src,
                                  "The attack's advantage over the base rate (unflagged targets; "
                                  "95 % bootstrap intervals over records)"))
    us = f.get("unsynthesized")
    if us:
        sec.p(f"Partially synthetic release: the unsynthesized values ({', '.join(us['columns'])}"
              ") of every record are released as they are, so a record is a member only if its "
              "own are those of the record it is compared with, and their rarity in the "
              "population weighs in (methods page, 'Partially synthetic releases'). Members "
              "alone in their cell of these columns: ",
              links.num(us.get("share_members_unique"), src),
              "; holdout records with the values of the record they are compared with: ",
              links.num(us.get("share_non_members_matching"), src), ".")
    sec.p("Flagged targets (left out of the figures above): ", links.num(f.get("n_flagged"), src),
          ".")
    sec.blocks.append(links.step_figure(s, "roc.png", "ROC of the Bayesian score and of the "
                                        "distance baseline"))


def membership_settings(plan: AuditPlan) -> None:
    """The settings table's row of the membership step: the selection rule, when given."""
    if plan.membership_selection is not None:
        plan.add(MEASURE.name, "selection", plan.membership_selection.description, "given",
                 "how the records of a release that synthesizes selected records were "
                 "selected; members left unsynthesized are released whole (P(member) = 1)")


def membership_need(ctx: StepContext, left: float | None) -> Need:
    """The step's least need: one chunk of targets beside the slots' log-likelihoods."""
    return Need(MIN_WORKING_BYTES, "targets in chunks sized from what is left beside the "
                "slots' log-likelihoods")


#: the step's costs (:mod:`bayes_risk.auditing.memory_plan`): its memory; its time is not
#: measured
COST = StepCost(need=membership_need)


#: the warning codes that question each of the step's verdict lines (Measure.caveats); a
#: line names those its measure raised
CAVEATS: dict[str, tuple[str, ...]] = {
    "membership": ("MEMBERSHIP_FLAGGED", "H_TOO_SMALL", "RHAT_HIGH", "LOW_ESS",
                   "APPROXIMATE_POSTERIOR", "MODEL_DIFFERS", "MEMBERSHIP_MISSING_VALUES"),
}


MEASURE = Measure("membership", "Membership risk",
                  thresholds=builtin_thresholds("membership"), step=membership_step,
                  function=membership_risk, result=MembershipRiskResult,
                  verdict=membership_lines, sections=(membership_section,),
                  settings=membership_settings, cost=COST, caveats=CAVEATS,
                  resolve=reads_likelihood, applies=membership_applies,
                  preflight=membership_preflight)
