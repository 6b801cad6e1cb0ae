"""The posterior Monte Carlo identification risk as one unit: its audit step (posterior
replicates of the release, matched as the pooled intruder) and its report section; it has no
verdict line (:doc:`/adding_a_measure`)."""

from __future__ import annotations

from functools import partial
from typing import Any

import numpy as np

from bayes_risk._io import write_json
from bayes_risk._memory import format_bytes
from bayes_risk.auditing.context import (
    StepContext,
    identification_kwargs,
    loaded_model,
    named_run,
    radius_label,
    ran,
    rebuilt_synthesizer,
    shown_known_values,
    step_folder,
    write_table,
)
from bayes_risk.auditing.measures._identification_cost import planned_index_bytes
from bayes_risk.auditing.measures.identification import released_known
from bayes_risk.auditing.outcome import (
    README_SIZES,
    Measure,
    Need,
    StepCost,
    StepFigure,
    StepOutcome,
    Work,
    step_file,
)
from bayes_risk.auditing.plan import radius_text, reads_likelihood, skip_arg
from bayes_risk.auditing.report_blocks import (
    Block,
    Links,
    Section,
    Span,
    rows_block,
    step_section,
)
from bayes_risk.exceptions import ValidationError, arg_name
from bayes_risk.identification.api import identification_risk
from bayes_risk.results._base import plot_figure
from bayes_risk.results._format import format_number
from bayes_risk.results.identification import IdentificationResult

#: posterior replicates in an audit: ``n="auto"`` with a small cap (the batch is the
#: release's m: :func:`audit_batch`)
AUDIT_REPLICATES = dict(n="auto", mcse_tol=0.02, min_replicates=100, max_replicates=200,
                        n_groups=10)


def audit_batch(m: int) -> int:
    """The posterior step's batch of replicates: the release's ``m``, so that each batch pooled
    on its own is a release of ``m`` datasets drawn from the model, comparable with the
    identification step's pooled figure."""
    return max(1, int(m))


def rebuilt_has_posterior(synthetic: Any) -> bool:
    """Whether the release's synthesizer can be rebuilt and has posterior replicates."""
    from bayes_risk.contract import capabilities
    from bayes_risk.models import rebuildable_synthesizer

    cls = rebuildable_synthesizer(synthetic)
    return cls is not None and capabilities(cls).posterior_replicates


def _posterior_model(ctx: StepContext) -> tuple[Any, str | None]:
    """The model the replicates are drawn from, or ``None`` and why there is none."""
    from bayes_risk.contract import capabilities

    if ctx.model is not None:
        model, src = loaded_model(ctx), "the fitted model given"
    elif rebuilt_has_posterior(ctx.synthetic):
        model = rebuilt_synthesizer(ctx)
        src = f"the rebuilt {type(model).__name__}"
    else:
        return None, ("no fitted model with a posterior was given "
                      f"({arg_name('model', '...', cli='DIR')}) and the release was not made "
                      "by a synthesizer with posterior replicates that can be rebuilt from its "
                      "manifest, such as CART (method: "
                      f"{ctx.synthetic.method or 'unknown'})")
    # CART with equal-weight donors declares no posterior predictive
    if not capabilities(model).posterior_replicates:
        why = f"{type(model).__name__} has no posterior predictive"
        if getattr(model, "donor", "bayes_bootstrap") != "bayes_bootstrap":
            why = (f"{src} draws donors with equal weights (donor={model.donor!r}), not from "
                   "a posterior (Bayesian bootstrap)")
        return None, why
    if hasattr(model, "progressbar"):
        model.progressbar = False
    return model, None


def posterior_applies(ctx: StepContext) -> str | None:
    """Why the step is left out: no known column synthesized, or no model to draw replicates
    from (the model is loaded to tell); ``None`` when it runs."""
    if not ctx.plan.known_synthesized:
        return ("no known column is synthesized: posterior replicates of the synthesized "
                "columns would change no match.")
    why = _posterior_model(ctx)[1]
    return None if why is None else (f"{why}; the identification step uses the m released "
                                     "datasets as replicates.")


def posterior_identification_step(ctx: StepContext) -> StepOutcome:
    """Identification risk over posterior-predictive replicates (Drechsler & Reiter 2008); the
    audit runs it when :func:`posterior_applies` finds a model to draw them from."""
    from bayes_risk.identification.replicates import PosteriorReplicates

    p = ctx.plan
    name = "posterior_identification"
    model = _posterior_model(ctx)[0]
    # the chunk the memory plan stated (the numbers do not depend on it)
    batch = audit_batch(p.m)
    chunk = min(ctx.run.replicate_chunk or batch, batch)
    pr = PosteriorReplicates(model, random_seed=p.random_seed, chunk_size=chunk,
                             batch_size=batch, allow_other_model=p.given.allow_other_model,
                             **AUDIT_REPLICATES)
    # the pooled intruder's worst case over the released datasets: its radii and fallback
    # (searching again over the replicates would cost the grid times the replicates)
    radius = ctx.run.worst_radius or p.radius
    try:
        with named_run(f"posterior replicates pooled, {radius_label(radius)}"):
            res = identification_risk(ctx.original, ctx.synthetic, known=list(p.known),
                                      synthesized=list(p.known_synthesized), schema=ctx.schema,
                                      match=identification_kwargs(ctx)["match"].replace(
                                          radius=radius or None, fallback=None),
                                      replicates=pr, progressbar=ctx.progressbar,
                                      executor=ctx.executor)
    except ValidationError as err:
        if err.code != "MEMORY_TOO_LARGE":
            raise
        # the replicates' pairs grow with the radius the identification step found, which
        # no plan made before the audit knows: this step fails, the others run, the audit is
        # marked incomplete
        return StepOutcome(name=name, status="failed", reason=(
            f"[{err.code}] {' '.join(str(err).split())} At {radius_label(radius)}, the "
            "identification step's worst case, the posterior replicates list every "
            f"(query, record) pair they match (a query: the targets with the same known "
            f"values); to audit without this step give "
            f"{skip_arg([name])}."))
    folder = step_folder(ctx, name)
    ctx.run.posterior_figures = comparable_figures(
        res, p.m, None if folder is None else f"{folder.name}/summary.json")
    files: list[str] = []
    if folder is not None:
        write_table(ctx, res.target_table(), folder / "records.csv", fast=True)
        write_json(folder / "summary.json", res.to_dict())
        files = ["records.csv", "summary.json"]
    figure = StepFigure(partial(plot_figure, res, "running_estimate"))
    return ran(name, res, folder, files, figures={"running_estimate.png": figure},
               qi=shown_known_values(ctx))


def comparable_figures(res: Any, m: int, source: str | None) -> dict[str, Any] | None:
    """The posterior replicates' figures for the intruder the identification lines name (one
    who holds the ``m`` datasets of a release, or one of them), as fractions of the targets:
    the replicates pooled ``m`` at a time (each batch a release of ``m`` datasets drawn from
    the model; mean over the batches and its standard error) and one at a time (mean over the
    replicates); beside them, pooled over all ``R`` (a release of ``R`` datasets). ``None``
    when no complete batch of ``m`` was drawn."""
    f = res.file
    n = float(f.get("n_targets") or np.nan)
    G = int(f.get("n_batches_pooled") or 0)
    if not G or int(f.get("batch_pooled_size") or 0) != m:
        return None

    def both(d: dict[str, Any]) -> tuple[float, float]:
        return (float(d["expected_match_risk"]) / n, float(d["true_match_rate_targets"]))

    return {"m": int(m), "R": int(f["n_replicates"]), "releases": G,
            "pooled_m": both(f["batch_pooled_mean"]),
            "pooled_m_mc_se": both(f["batch_pooled_mean_mc_se"]),
            "one": both(f["replicate_mean"]), "one_mc_se": both(f["replicate_mean_mc_se"]),
            "pooled_R": both(f),
            "radius": dict(res.settings["match_rule"]["radius"]), "source": source}


@step_section(
    "posterior_identification", "posterior-identification",
    "Posterior Monte Carlo identification risk",
)
def posterior_identification_section(sec: Section, s: Any, result: Any, links: Links) -> None:
    r = s.result
    pr = r.settings.get("posterior_replicates") or {}
    src = step_file(s, "summary.json")
    R = int(r.file["n_replicates"])
    m = result.plan.m
    sec.p("The synthesized known columns are replaced by R = ", links.num(R, src),
          f" draws from the posterior predictive of {pr.get('model', 'the synthesis model')} "
          "(agency's view; Drechsler & Reiter 2008, eq. 5) instead of the m = "
          f"{m} released datasets, matched as the identification step's pooled intruder at "
          f"its worst case over the radii ({radius_text(r.settings['match_rule']['radius'])}"
          "; with its fallback to the unsynthesized known columns where nothing matches); a "
          "search over the radii is not repeated on the replicates, for its cost. Three figures "
          "per measure, for two intruders:")
    G = int(r.file.get("n_batches_pooled") or 0)
    b = int(r.file.get("batch_pooled_size") or 0)
    sec.blocks.append(Block("ul", items=[
        [Span(f"pooled {b} at a time", strong=True),
         Span(f": the replicates in batches of {b}, each batch pooled on its own as a release "
              f"of {b} datasets drawn from the model would be (Reiter & Mitra 2009), the mean "
              f"over the {G} batches with its standard error"
              + (": the intruder of the identification lines, holding the m datasets of a "
                 "release, at the same radii" if b == m else "") + ".")],
        [Span("one at a time", strong=True),
         Span(": each replicate evaluated alone, as a released dataset would be, the mean over "
              "the replicates: the intruder holding one dataset. It does not depend on R (its "
              "Monte Carlo error does).")],
        [Span(f"pooled over all R = {R}", strong=True),
         Span(": the match probabilities averaged over every replicate, then the targets tied "
              f"at the top declared: a release of {R} datasets, another intruder. The figure "
              "grows with R (with few replicates many records tie at the top; with many, more "
              "targets get a unique best record) before it settles; MCSE is its Monte Carlo "
              "standard error at this R, which does not show the growth (user guide, posterior "
              "replicates).")],
    ]))
    unc = r.uncertainty()
    ident = result.step("identification")
    # the identification step's pooled intruder, at the same radii and fallback
    per_ds = ident.extra["pooled"].headline.file if ident.status == "ran" else {}
    # one unit in the table, per cent, the verdict's (issue 66: rows of targets and rows of
    # per cent); a count of targets over the targets (summary.json: fractions and counts)
    n_i = int(r.file.get("n_targets") or 0)
    n_t = float(n_i or np.nan)
    labels = [("expected match rate (% of targets)", "expected_match_risk", n_t),
              ("true match rate (% of targets)", "true_match_rate_targets", 1.0),
              ("unique matches (% of targets)", "n_unique", n_t),
              ("false match rate (% of the unique matches)", "false_match_rate", 1.0)]
    rows = []
    isrc = step_file(ident, "summary.json")
    bp, bse = r.file.get("batch_pooled_mean") or {}, r.file.get("batch_pooled_mean_mc_se") or {}
    for lab, k, over in labels:
        u = unc.get(k) or {}
        q = u.get("replicate_quantiles") or {}

        def cell(v: Any, rel: str | None, over: float = over) -> Span:
            return links.pct(None if v is None else float(v) / over, rel)

        rows.append([Span(lab), cell(per_ds.get(k), isrc), cell(bp.get(k), src),
                     cell(bse.get(k), src),
                     cell(u.get("replicate_mean"), src), cell(u.get("replicate_mean_mc_se"), src),
                     cell(q.get("0.025"), src), cell(q.get("0.975"), src),
                     cell(u.get("value"), src), cell(u.get("mc_se"), src)])
    sec.blocks.append(rows_block(
        ["measure", f"identification step: pooled over the m = {m} datasets released",
         f"replicates pooled {b} at a time (mean over {G})", "its standard error",
         f"one at a time (mean over R = {R})", "its MCSE", "replicate 2.5%", "replicate 97.5%",
         f"pooled over all R = {R} (grows with R)", "pooled MCSE"], rows, links, src,
        "File-level measures: the pooled figure of the released datasets, the replicates "
        f"pooled {b} at a time and one at a time, and pooled over all of them"))
    post = comparable_figures(r, m, src)
    lines = {v.measure: v for v in result.verdicts if v.step == "identification"}
    emr = next((v for k, v in lines.items() if k.startswith("expected match rate")), None)
    if post is not None and emr is not None:
        big = 100 * post["pooled_R"][0]
        sec.p(Span("Which figure bounds the risk. ", strong=True),
              f"The verdict's identification lines read the largest of the released datasets' "
              f"figures and the replicates' pooled {m} at a time and one at a time — the same "
              f"intruder, holding the m = {m} datasets of a release or one of them: expected "
              f"match rate {emr.value:.3g} %. Pooled over all R = {R} replicates the expected "
              f"match rate is {big:.3g} %: what an intruder would identify if {R} datasets "
              f"from this model were released. It is not a risk of this release of {m}: it is "
              "the figure to read before releasing more datasets from the model, since the "
              "pooled figure grows with their number (the running estimate below).")
    trace = r.file.get("mc_trace") or {}
    est = list(trace.get("expected_match_risk") or [])
    rs = list(trace.get("n_replicates") or [])
    if len(est) >= 2 and est[-1] > est[0]:
        sec.p("The pooled expected match rate rose from ", *links.count(est[0], n_i, src),
              f" at R = {int(rs[0])} to ", *links.count(est[-1], n_i, src),
              f" at R = {int(rs[-1])}: "
              "it depends on R, as the pooled definition does; report it with R, and the "
              "mean over single replicates beside it.")
    if pr.get("n") == "auto" and not pr.get("stopped_by_tolerance", True):
        e = unc.get("expected_match_risk") or {}
        sec.blocks.append(Block("warning", spans=[
            Span("MCSE_NOT_REACHED", strong=True),
            Span(f": after R = {R} replicates (the audit's cap) the Monte Carlo standard "
                 "error of the pooled expected match rate, "),
            *links.count(e.get("mc_se"), n_i, src),
            Span(f", is still above the tolerance asked "
                 f"({format_number(100 * float(pr.get('mcse_tol', np.nan)), 3, plain=True)} % "
                 "of the estimate): the pooled figure "),
            *links.count(e.get("value"), n_i, src),
            Span(" is known to about ± "),
            *links.count(2 * float(e.get("mc_se", np.nan)), n_i, src),
            Span(" (2 MCSE), and the figure below shows it still moving. Read it as a "
                 "range, not a finding; bayes-risk identification with --model, which draws up "
                 "to --max-replicates (2,000 by default), narrows it.")]))
    sec.blocks.append(links.step_figure(s, "running_estimate.png",
                                        "Running pooled expected match risk with ±2 MCSE (a "
                                        "curve still rising means the pooled figure still "
                                        "depends on R)"))


#: the step's unit and its chunk: a batch (the release's m replicates) is what the jackknife
#: groups and the stopping rule counts, so it is fixed; the replicates drawn and matched at once
#: are sized from the budget (:func:`replicate_chunk`), which moves no number
_BATCH_NOTE = ("batches of {b} replicates (the jackknife's groups and the stopping rule count "
               "whole batches, whatever the budget), drawn and matched {k} at a time, every "
               "target at once ({k} from the budget: half of what is left beside the batch's "
               "{fixed}, a replicate about {per}; the same numbers whatever the chunk)")


def replicate_chunk(left: float | None, fixed: float, per: float, batch: int) -> int:
    """Replicates of a batch the step draws and matches at once: as many as half of what is
    ``left`` beside the batch's ``fixed`` need holds at ``per`` bytes a replicate (the other
    half for the pair sums the batch gathers, which depend on the matches), from 1 to ``batch``
    (the whole batch when ``left`` is ``None``: no budget). The chunk changes the memory, not
    the numbers (``PosteriorReplicates.chunk_size``)."""
    if left is None:
        return batch
    return int(min(batch, max(1, (left - fixed) // (2 * max(per, 1.0)))))


def posterior_need(ctx: StepContext, left: float | None) -> Need:
    """The step's least need: a batch's per-replicate counts and flags (9 bytes a target and
    replicate), one matching index, the per-target sums and every replicate's file measures,
    beside one replicate drawn (as large as a released dataset at most); its chunk of
    replicates from what is ``left``."""
    from bayes_risk.identification.summary import MEASURES

    n, m = ctx.plan.n_records, ctx.plan.m
    table = float(next(iter(ctx.synthetic)).memory_usage(deep=True).sum()) if m else 0.0
    b = audit_batch(m)
    cap = int(AUDIT_REPLICATES["max_replicates"])
    fixed = (9.0 * n * b + planned_index_bytes(ctx.plan) + 16.0 * n
             + 8.0 * cap * (len(MEASURES) + 2))
    k = replicate_chunk(left, fixed, table, b)
    note = _BATCH_NOTE.format(b=b, k=k, fixed=format_bytes(fixed, up=True),
                              per=format_bytes(table, up=True))
    return Need(fixed + table, note + f", up to {cap} replicates; the groups' pair sums wait "
                "in TMPDIR", chunk=k)


def posterior_work(ctx: StepContext) -> Work:
    """The step's work: records x replicates drawn, between ``min_replicates`` and
    ``max_replicates`` (the stopping rule decides)."""
    n = ctx.plan.n_records
    r0, r1 = int(AUDIT_REPLICATES["min_replicates"]), int(AUDIT_REPLICATES["max_replicates"])
    return Work(n * r0, n * r1, f"{n:,} x {r0}–{r1}")


#: the step's costs (:mod:`bayes_risk.auditing.memory_plan`): its rate per replicate drawn
#: measured on the README's audit (``README_SIZES``) on an AMD EPYC; what its results keep,
#: 1.2 kB a record, measured on the README's audit (``make_ce_like(n, random_seed=1)``, CART
#: release of 3 columns, m = 5) at 5,000 and 20,000 records, the larger of the two sizes'
#: rates, rounded up
COST = StepCost(rate=("records x replicates", 2.9e-6, 5.8e-6), sizes=README_SIZES,
                work=posterior_work, need=posterior_need, kept_per_record=1_200.0)


#: what of the step runs on the audit's executor (``audit(executor=...)``)
EXECUTOR = "the batches of posterior replicates, each drawn and matched in one task"


MEASURE = Measure("posterior_identification", "Posterior Monte Carlo identification risk",
                  step=posterior_identification_step, function=identification_risk,
                  result=IdentificationResult, sections=(posterior_identification_section,),
                  cost=COST, resolve=reads_likelihood, applies=posterior_applies,
                  covers=released_known,
                  executor=EXECUTOR)
