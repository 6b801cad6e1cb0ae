"""The identification risk as one unit: its audit step (per dataset, pooled, the radius search
and the knowledge sweep), its verdict lines (the expected and true match rates against their
thresholds, the worst case over the radius search, the datasets and the fit's regimes) and its
report section, named by ``MEASURE`` (:doc:`/methods/identification`,
:doc:`/adding_a_measure`). The figures and words its lines read are in
:mod:`~bayes_risk.auditing.measures._identification_lines`, its costs in
:mod:`~bayes_risk.auditing.measures._identification_cost`."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any

import numpy as np

from bayes_risk._io import write_json
from bayes_risk._thresholds import builtin_thresholds
from bayes_risk.auditing import remedies
from bayes_risk.auditing.context import (
    StepContext,
    identification_kwargs,
    loaded_model,
    named_run,
    radius_label,
    ran,
    release_independent,
    rows_aligned,
    shown_known_values,
    step_folder,
    write_known_sweep,
    write_table,
)
from bayes_risk.auditing.measures._identification_cost import COST
from bayes_risk.auditing.measures._identification_lines import (
    convention_text,
    given_selection_line,
    identification_by_regime,
    identification_contributions,
    identification_figures,
    identification_intruder,
    identification_worst_case,
    posterior_reading,
    search_caveats,
)
from bayes_risk.auditing.outcome import Measure, StepFigure, StepOutcome, step_file
from bayes_risk.auditing.plan import AuditPlan, post_processing, radius_text
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
from bayes_risk.auditing.settings import DEFAULT_SWEEP
from bayes_risk.auditing.verdict_base import (
    Baseline,
    Verdict,
    caused,
    dataset_range,
    line_caveats,
    outside_range,
    pct,
)
from bayes_risk.exceptions import arg_name
from bayes_risk.identification.api import identification_risk
from bayes_risk.identification.run import (
    LARGE_TABLES,
    IdentificationRun,
    identification_run,
    run_known_sweep,
)
from bayes_risk.results._base import plot_figure
from bayes_risk.results.identification import IdentificationResult


def identification_step(ctx: StepContext) -> StepOutcome:
    """Identification risk at the given radius and, over the sweep, the maximising radius."""
    from bayes_risk.auditing.causes import identification_drivers

    p = ctx.plan
    kw = identification_kwargs(ctx)
    if p.identification_release_independent:
        release_independent(
            "identification risk", f"the intruder matches on {', '.join(p.known)} only, "
            "which the release carries unchanged (no known column is synthesized), so every "
            "synthetic dataset gives the same figures.")
    known = dict(known=list(p.known), synthesized=list(p.known_synthesized))
    # the worst case over the radii beside the figures at the plan's radius (the verdict reads it)
    search = (dict(search=list(p.sweep), refine=p.given.radius_refine, worst_case=True)
              if p.sweep and p.search_columns else {})
    # each run's warnings name the run: the step runs the measure up to six times
    per = identification_run([ctx.original, ctx.synthetic], **known, **search,
                             label=partial(_named, p, "one dataset at a time"), **kw)
    res, sweep, at_star = per.result, per.search, per.at_r_star
    # the measures only: the verdict and the report read the file measures, and the pooled
    # probabilities π of every (target, record) pair grow as n² (more than 10^8 entries at
    # 10^5 CE-like records); without π the run is counted by match pattern where it can be
    pooled = identification_run(
        [ctx.original, ctx.synthetic], **known, **search,
        label=partial(_named, p, f"all {p.m} datasets pooled"),
        **{**kw, "aggregation": "pooled_measures", "match": kw["match"].replace(fallback=None),
           "progressbar": False})
    ctx.run.worst_radius = pooled.radius_star
    # after the pooled runs (the order of the step's warnings), at the plan's radius
    ksweep = (run_known_sweep(ctx.original, ctx.synthetic, candidates=list(p.known), **known,
                              **kw) if p.given.known_sweep else None)
    given = _given_selection(ctx, kw)
    regimes = dataset_regimes(ctx)
    d = per.to_dict()  # with the radius search
    if regimes is not None:
        d["regimes"] = regimes
    if sweep is not None:
        d["at_maximising_radius"] = {"radius": per.radius_star,
                                     "summary": at_star.to_dict()["summary"]}
    d["pooled"] = _pooled_dict(pooled)
    if given is not None:
        d["given_selection"] = given
    if ksweep is not None:
        d["known_sweep"] = ksweep.to_dict()
    # the radius search with the threshold of the expected match rate, the verdict's line (the
    # report draws the knowledge sweep's figures itself)
    figures = {} if sweep is None else {"radius_search.png": StepFigure(partial(
        plot_figure, sweep, "profile", rate_threshold=p.thresholds.expected_match_rate * 100,
        n_targets=int(res.file["n_targets"])), dpi=120)}
    folder = step_folder(ctx, "identification")
    files: list[str] = []
    if folder is not None:
        # the records at the radii the verdict reads (the worst case), else at the one given
        tables, _ = per.files()
        if pooled.search is not None:
            tables["radius_search_pooled.csv"] = pooled.search.to_frame()
        for name in ("records.csv", "summary.json", "radius_search.csv", "radius_search.png",
                     "radius_search_pooled.csv"):
            if name == "summary.json":
                write_json(folder / name, d)
            elif name in tables:
                write_table(ctx, tables[name], folder / name, fast=name in LARGE_TABLES)
            elif name not in figures:
                continue
            files.append(name)
        if ksweep is not None:
            files += write_known_sweep(ctx, ksweep, folder)
    note = None
    if not p.search_columns:
        note = ("no radius to search: every known column is categorical and matched exactly, "
                "the intruder's only choice")
    elif not p.sweep:
        note = (f"radius search not run ({arg_name('sweep', 'None', cli='none')}): the figures "
                f"are at {radius_text(p.radius)}, not the worst case over the radii "
                "(RADIUS_NOT_SEARCHED)")
    return ran("identification", res, folder, files, figures=figures, sweep=sweep,
               at_r_star=at_star,
               note=note, qi=shown_known_values(ctx), pooled=pooled, known_sweep=ksweep,
               # the run's shared state: the posterior step, after this one, leaves there the
               # figures of the same intruder that the verdict lines read with this step's
               run=ctx.run,
               regimes=regimes,
               given_selection=given,
               drivers=identification_drivers(ctx.original, list(ctx.synthetic), p.known,
                                              p.known_synthesized, aligned=rows_aligned(ctx)))


def _given_selection(ctx: StepContext, kw: dict[str, Any]) -> dict[str, Any] | None:
    """The expected match rate of the intruder who knows why records were selected for
    synthesis (Hu 2019 §4.2.4), when the release's manifest records its rule: that intruder
    knows the synthesized records, so every target's status (the worst case). The larger of
    one dataset at a time and all pooled, each the worst case over the radius search (as the
    step's other lines). ``None``: no rule recorded; ``{"not_computed": why}``: refused."""
    from bayes_risk.exceptions import BayesRiskError
    from bayes_risk.identification.radius import radius_search
    from bayes_risk.identification.selection import conditioned, release_rule

    syn, p = ctx.synthetic, ctx.plan
    rule, flags = release_rule(syn), getattr(syn, "synthesized_records", None)
    if rule is None or flags is None:
        return None
    figures = {}
    try:
        c = conditioned(ctx.original, syn, flags, known=list(p.known),
                        synthesized=list(p.known_synthesized), schema=ctx.schema,
                        match=kw["match"])
        for agg in ("per_dataset", "pooled"):
            match = kw["match"] if agg == "per_dataset" else kw["match"].replace(fallback=None)
            ckw = dict(known=c.known, synthesized=c.synthesized, schema=c.schema,
                       aggregation=agg, progressbar=False, executor=kw["executor"])
            with named_run(f"given the selection R, {agg.replace('_', ' ')}"):
                if p.sweep and p.search_columns:
                    s = radius_search(c.original, c.synthetic, radii=list(p.sweep),
                                      refine=p.given.radius_refine,
                                      match=match.replace(radius=None), **ckw)
                    risk, rad = s.risk_star, dict(zip(s.columns, (float(r) for r in np.atleast_1d(
                        s.r_star)), strict=True))
                else:
                    res = identification_risk(c.original, c.synthetic, match=match, **ckw)
                    risk, rad = res.file["expected_match_risk"], dict(p.radius)
            figures[agg] = {"expected_match_rate": float(risk) / len(ctx.original),
                            "radius": rad}
    except BayesRiskError as err:  # e.g. SELECTION_MISSING_KNOWN: said on the report
        return {"rule": rule.description, "not_computed": f"[{err.code}] {err}"}
    return {"rule": rule.description, "selection": dataclasses.asdict(c.knowledge), **figures}


def dataset_regimes(ctx: StepContext) -> dict[str, Any] | None:
    """Which regime of the model's fit each released dataset was drawn from (``None``: agree)."""
    if ctx.model is None:
        return None
    model = loaded_model(ctx)
    summary = getattr(model, "convergence_summary", None)
    reg = summary().get("regimes") if callable(summary) else None
    if not reg or reg.get("agree", True):
        return None
    out: dict[str, Any] = {"regimes": reg["regimes"]}
    draws = getattr(ctx.synthetic, "draw_index", None)
    if draws is None:
        return {**out, "status": "not computed", "dataset_regime": None,
                "reason": "the release does not record the posterior draw of each dataset "
                          "(draw_index of its manifest)"}
    D = int(model.posterior_["posterior"].sizes["draw"])
    of_chain = {c: i + 1 for i, r in enumerate(reg["regimes"]) for c in r["chains"]}
    return {**out, "status": "computed",
            "dataset_regime": [of_chain.get(int(h) // D) for h in draws]}


def _named(plan: AuditPlan, how: str, part: str, radius: Any) -> Any:
    """The context of one of the step's runs (``identification_run``'s ``label``): its
    warnings name the run."""
    if part == "search":
        return named_run(f"radius search of {', '.join(plan.search_columns)}, {how}")
    if part == "worst case":
        return named_run(f"{how}, maximising {radius_label(radius)}")
    return named_run(f"{how}, {radius_label(plan.radius)}")


def _pooled_dict(pooled: IdentificationRun) -> dict[str, Any]:
    """The pooled intruder's figures in ``summary.json`` (``pooled``)."""
    out: dict[str, Any] = {"summary": pooled.result.to_dict()["summary"],
                           "settings": pooled.result.settings}
    if pooled.search is not None:
        out["radius_search"] = pooled.search.to_dict()
        out["at_maximising_radius"] = {"radius": pooled.radius_star,
                                       "summary": pooled.at_r_star.to_dict()["summary"]}
    return out


def identification_lines(plan: AuditPlan, i: StepOutcome) -> list[Verdict | Baseline]:
    """The expected and true match rates: the worst case over the radius search, the larger of
    the pooled and per-dataset figures, each with the radius of each column that gave it."""
    th = plan.thresholds
    iw = line_caveats(CAVEATS["identification"], i.result.warnings) + (
        ("SUPPRESSED_AS_MISSING",) if set(plan.suppressed_columns) & set(plan.known) else ())
    pooled = i.extra["pooled"]
    n = float(pooled.result.file["n_targets"])
    m = plan.m
    src = step_file(i, "summary.json")
    pd_figs = identification_figures(i.extra.get("sweep"), i.result, n, per_dataset=True)
    pool_figs = identification_figures(pooled.search, pooled.result, n, per_dataset=False)
    convention = convention_text(plan, i.result, pooled.result, n)
    searched = bool(plan.sweep and plan.search_columns)
    at = ", worst case over the radii" if searched else ""
    lines = []
    for k, (label, tn) in enumerate((
            (f"expected match rate{at}", "expected_match_rate"),
            (f"true match rate (correct unique matches){at}", "true_match_rate"))):
        (vp, rp, _, edge_p), (vd, rd, each, edge_d) = pool_figs[k], pd_figs[k]
        use_pooled = not vd > vp  # NaN in the per-dataset figure: the pooled one
        vp, vd = pct(vp), pct(vd)
        r_pool = f" ({radius_text(rp)})" if rp else ""
        r_per = f" ({radius_text(rd)})" if rd else ""
        detail = (f"{'larger' if use_pooled else 'smaller'}: pooled over the m = {m} "
                  f"datasets {vp:.3g} %{r_pool}; {'smaller' if use_pooled else 'larger'}: "
                  f"mean per dataset {vd:.3g} %{r_per}{convention[k]}")
        rng = dataset_range(each * 100, "%")
        spread = (f"pooled over the {m} datasets, no spread; {rng}" if use_pooled
                  else rng)
        value, by_regime = identification_by_regime(vp if use_pooled else vd, each,
                                                    i.extra.get("regimes"))
        why = outside_range(vp if use_pooled else vd, each * 100,
                       f"the intruder holding all {m} datasets pools them" if use_pooled
                       else "the value is the worst case over the radius search")
        searches = {f"pooled over the m = {m} datasets": (pooled.search, edge_p),
                    "one dataset at a time": (i.extra.get("sweep"), edge_d)}
        words, codes = search_caveats(plan, searches, k, n, max(vp, vd))
        post = getattr(i.extra.get("run"), "posterior_figures", None)
        value, post_words, read = posterior_reading(post, k, value, m)
        if read:  # a release of m datasets from the model identifies more than this one
            spread = read
            why = ""
        lines.append((label, value, detail + words + by_regime + post_words,
                      f"{spread}; {why}" if why else spread, codes, tn))
    thr = (pct(th.expected_match_rate), pct(th.true_match_rate))
    if plan.identification_release_independent:
        why = (f"the intruder knows only unsynthesized columns "
               f"({', '.join(plan.known)}), which the release carries unchanged")
        return [Baseline("identification", lab, v, t, src, f"{why}; {d}", unit="%")
                for (lab, v, d, *_), t in zip(lines, thr, strict=True)]
    who = identification_intruder(plan)
    cause = remedies.identification_cause(plan, i)
    if i.extra.get("regimes"):  # the model's chains in different regimes: say so on the line
        iw = (*iw, "REGIMES_DISAGREE") + (
            ("RISK_BY_REGIME",) if i.extra["regimes"].get("status") == "computed" else ())
    return [caused(Verdict("identification", lab, v, t, "max", src, d, (*iw, *codes),
                            unit="%", spread=sp, intruder=who, count_of=(int(n), "targets"),
                            threshold_name=tn, worst_case=identification_worst_case(plan)),
                   *cause)
            for (lab, v, d, sp, codes, tn), t in zip(lines, thr, strict=True)
            ] + given_selection_line(plan, i, src, iw, n, cause)


@step_section("identification", "identification", "Identification risk")
def identification_section(sec: Section, s: Any, result: Any, links: Links) -> None:
    r, plan = s.result, result.plan
    sm = r.file
    n = int(sm["n_targets"])
    src = step_file(s, "summary.json")
    sec.p(f"An intruder who knows {', '.join(plan.known)} for every target looks for it among "
          "the released records (Reiter & Mitra 2009; Hornby & Hu 2021). Every measure below is "
          f"a per cent of the {n:,} targets, as on the verdict's lines, followed by the count "
          "it is; a target that matches no record "
          "in a dataset has no match there (no fallback).")
    if plan.identification_release_independent:
        sec.p(Span("Baseline of the original, not a risk of the release "
                   "(RELEASE_INDEPENDENT). ", strong=True),
              "No known column is synthesized: the intruder matches on columns the release "
              "carries unchanged, so every synthetic dataset gives the same figures, whatever "
              "was synthesized. To assess the release, give a synthesized column the intruder "
              "may know (the intruder of Hornby & Hu 2021 also knows the true values of the "
              "synthesized keys).")
    pooled = s.extra.get("pooled")
    sw, star = s.extra.get("sweep"), s.extra.get("at_r_star")
    verdict_reads = ("" if pooled is None else
                     " The verdict reads the larger of this and the pooled intruder's (below).")
    rad = (dict(zip(sw.columns, (float(x) for x in sw.r_star), strict=True))
           if sw is not None else plan.radius)
    where = ("at the worst case over the radii" if sw is not None else "at the radius given")
    sec.blocks.append(rows_block(
        ["measure", "value"], _id_rows((star or r).file, n, src, links), links, src,
        f"One dataset at a time, {where} ({radius_text(rad)}): the mean over the m = "
        f"{plan.m} datasets of the measures of an intruder who holds one." + verdict_reads))
    if sw is not None:
        ssrc = step_file(s, "radius_search.csv")
        sec.blocks.append(links.step_figure(
            s, "radius_search.png", "Expected match risk by the radius of each searched column, "
            "the others held at the worst case (the band: the range over the datasets; the "
            "ring: the maximum; the dashed line: the verdict's threshold)"))
        sec.p(*_search_sentence(sw, plan, n, ssrc, links))
        given = ("Hornby & Hu's convention" if plan.radius_source == "default"
                 else "the radius given")
        sec.p(f"At {given} ({radius_text(plan.radius)}), reported beside the "
              "worst case and never instead of it: expected match rate ",
              *links.count(r.file["expected_match_risk"], n, src), ", true match rate ",
              *links.count(r.file["true_match_risk"], n, src),
              " (mean over the datasets; summary.json: summary).")
    if pooled is not None:
        f = pooled.headline.file
        psw = pooled.search
        where = (f" at its own worst case over the radii "
                 f"({radius_text(dict(zip(psw.columns, map(float, psw.r_star), strict=True)))})"
                 if psw is not None else "")
        tmr = ("" if psw is None or not psw.tmr_argmax else
               f"; its largest true match rate over the radii is "
               f"{100 * psw.tmr_star_value:.3g} % "
               f"({radius_text(psw.radii_at(psw.tmr_argmax[0]))})")
        sec.p(Span("An intruder who holds all the datasets. ", strong=True),
              f"Pooling the match probabilities over the m = {plan.m} datasets (Reiter & Mitra "
              "2009; Drechsler & Reiter 2008; the defaults of bayes-risk identification) gives",
              where, ": expected match rate ", *links.count(f["expected_match_risk"], n, src),
              ", true match rate ", *links.count(f["true_match_risk"], n, src),
              ", false match rate ", links.pct(f["false_match_rate"], src), " of the unique "
              f"matches (summary.json: pooled){tmr}. Each verdict line reads the larger of this "
              "intruder's figure and the per-dataset mean: an intruder with every dataset is "
              "usually the stronger, and the mean over single datasets alone would understate "
              "the risk.")
    if s.extra.get("note"):
        sec.p(s.extra["note"] + ".")
    ks = s.extra.get("known_sweep")
    if ks is not None:
        known_sweep_blocks(
            sec, ks, s, links, what="The same measures for every subset of the known columns "
            f"({len(ks.table)} subsets; the empty set is the intruder who knows nothing)",
            fig="Expected match risk against the number of known columns", unit="targets",
            last="true_matches")
    tt = r.target_table().sort_values("IR", ascending=False, kind="stable").head(TOP_N)
    sec.blocks.append(table_block(at_risk(tt, s.extra.get("qi"), "target"), links,
                                  step_file(s, "records.csv"),
                                  f"Targets most at risk (top {TOP_N} by IR; every target in "
                                  "records.csv)"))
    sec.p("The columns of the targets table:")
    sec.blocks.append(Block("dl", terms=[(k, v) for k, v in TARGET_COLUMNS.items()
                                         if k in tt.columns]))


#: the columns of the identification step's per-target table, in plain words
TARGET_COLUMNS = {
    "IR": "the target's identification risk: the probability that the intruder's declared "
          "match is the target (1/c when its own record is among the c records declared, else "
          "0), mean over the datasets; summed over the targets it is the expected match risk.",
    "c_mean": "records declared as the target's match (those tied at the top), mean over the "
              "datasets.",
    "T_datasets": "datasets in which the target's own record is among the declared matches.",
    "K_datasets": "datasets in which the declared match is one record, the target's own (a "
                  "true match).",
    "W_datasets": "datasets in which the declared match is one record, another one (a false "
                  "match).",
    "declared_datasets": "datasets in which the intruder declares a match for the target.",
}


#: the identification measures that count targets, in plain words
_ID_COUNTS = {"expected_match_risk": "expected match rate: targets expected to be identified "
                                     "(the expected match risk, sum of IR)",
              "true_match_risk": "true match rate: targets matched to one record, their own",
              "n_unique": "unique matches: targets matched to one record"}


def _id_rows(f: dict[str, Any], n: int, src: str | None, links: Links) -> list[list[Any]]:
    """The identification measures, each as its per cent of the ``n`` targets and its count."""
    return [*([Span(text), links.count(f[k], n, src)] for k, text in _ID_COUNTS.items()),
            [Span("false match rate: unique matches that are another record"),
             [links.pct(f["false_match_rate"], src), Span(" of the unique matches")]]]


def _search_sentence(sw: Any, plan: Any, n: int, src: str | None, links: Links) -> list[Any]:
    """What the radius search covered, and where each measure is largest."""
    search = sw.settings.get("search") or {}
    how = (f"every point of the grid ({sw.grid_points} points) and, between them, every box "
           "of radii whose bound (the fewest matches at its lower corner, the own record "
           "matched at most as at its upper one) could exceed the largest figure found — "
           f"{sw.search_text(rate='{:.3g} %')}"
           if search.get("mode") == "grid" else
           f"a coordinate search of {search.get('points')} points (the full grid of "
           f"{search.get('full_grid_points')} exceeds max_grid; RADIUS_COORDINATE_SEARCH)")
    tmr = ("" if not sw.tmr_argmax else
           f"; the true match rate is largest, {100 * sw.tmr_star_value:.3g} % of the targets, "
           f"at {radius_text(sw.radii_at(sw.tmr_argmax[0]))}")
    return [f"The intruder chooses how closely to match each numeric key. The search covers "
            f"{', '.join(sw.columns)} — synthesized or released unchanged — each over the radii "
            f"{', '.join(f'{r:g}' for r in search.get('values', []))} (0: exact matching), "
            f"{how}. Per dataset, the expected match rate is largest at "
            f"{radius_text(dict(zip(sw.columns, map(float, sw.r_star), strict=True)))} (mean ",
            *links.count(sw.risk_star, n, src), f"){tmr}. The verdict reads these "
            "maxima, the worst case for the intruder it names; a value the release carries "
            "unchanged is usually best matched exactly, since a wider window only adds other "
            "records."]


def identification_not_assessed(plan: AuditPlan, outcome: StepOutcome) -> list[str]:
    """The identification risk of the release when the intruder knows no synthesized column:
    the step's figures are then a baseline of the original (``Measure.not_assessed``)."""
    if not plan.identification_release_independent:
        return []
    return ["identification risk of the release (the intruder knows no synthesized column; "
            "its figures are a baseline of the original)"]


def identification_settings(plan: AuditPlan) -> None:
    """The settings table's rows of the identification step: the known columns, the radius
    and its type, the aggregation over the datasets, the radius search."""
    a = partial(plan.add, MEASURE.name)
    s = plan.given
    a("known columns", ", ".join(plan.known), "given")
    a("radius beside the worst case", radius_text(plan.radius), plan.radius_source,
      "Hornby & Hu's (2021) convention: 0.1 (±10 %) on every numeric (count or continuous) "
      "known column; reported beside the worst case, never instead of it"
      if plan.radius_source == "default"
      else "reported beside the worst case, never instead of it")
    a("radius type", s.match.radius_type, "default"
      if s.match.radius_type == "percentage" else "given")
    a("aggregation", "per dataset and pooled", "default",
      "Hornby & Hu (2021): every dataset evaluated separately, measures averaged; Reiter & "
      "Mitra (2009): the intruder holding all m datasets; the verdict reads the larger")
    if not plan.search_columns:
        a("radius search", "not run", "default",
          "no numeric known column: categorical columns are matched exactly, the only choice")
    elif not plan.sweep:
        a("radius search", "not run", "given",
          "the verdict reads the radius above, not the worst case (RADIUS_NOT_SEARCHED)")
    else:
        a("radius search",
          f"{', '.join(f'{r:g}' for r in plan.sweep)} on each of "
          f"{', '.join(plan.search_columns)}",
          "default" if plan.sweep == tuple(sorted({0.0, *DEFAULT_SWEEP})) else "given",
          "the worst case for the intruder: every numeric known column, synthesized or "
          "released unchanged, with 0 (exact matching) in every grid; the largest expected "
          "match rate and the largest true match rate over the grid are read, each with the "
          "radius of each column that gave it")


#: the warning codes that question each of the step's verdict lines (Measure.caveats); a
#: line names those its measure raised
CAVEATS: dict[str, tuple[str, ...]] = {
    "identification": ("IPF_NOT_CONVERGED", "F_BELOW_ONE", "ORIGINAL_UNCONFIRMED",
                       "ROWS_NOT_VERIFIED", "RADIUS_NOT_SEARCHED", "RADIUS_COORDINATE_SEARCH",
                       "RADIUS_GRID_ONLY", "RADIUS_SEARCH_BOUNDED", "RADIUS_AT_GRID_EDGE"),
}


def identification_resolve(plan: AuditPlan, original: Any, release: Any,
                           schema: Any) -> str | None:
    """Why the step is withheld: no released row is paired with an original record
    (``None``: row i of a dataset is record i's, or the datasets hold every record)."""
    from bayes_risk.data.synthetic import released_records

    n = plan.n_records
    sizes = sorted({len(z) for z in release if len(z) != n})
    if not sizes or released_records(release, n) is not None:
        return None
    # identification's true match is record i's own released row i: rows removed after a
    # full synthesis (or another number of rows) pair no row with a record
    return (f"the release's datasets hold {', '.join(f'{k:,}' for k in sizes)} records, the "
            f"original {n:,}"
            + (" (records were removed after synthesis)" if post_processing(release) else "")
            + ", so no released row is paired with an original record, which identification "
            "risk's true match needs (Hornby & Hu 2021); the disclosure measures (repU, DiSCO) "
            "and the attacks measure this release's identity disclosure without that pairing.")


#: what of the step runs on the audit's executor (``audit(executor=...)``)
EXECUTOR = ("the matching of every run (one dataset at a time, pooled, the radius searches, the "
            "knowledge sweep); the drivers of the risk in process")


def released_known(line: Mapping[str, Any], known: Sequence[str],
                   synthesized: Sequence[str]) -> list[str]:
    """The record's ``covers``: a known column the intruder matches on, released unchanged
    (synthesizing one is the identification lines' remedy)."""
    return [c for c in known if c not in synthesized]


MEASURE = Measure("identification", "Identification risk",
                  thresholds=builtin_thresholds("identification"), step=identification_step,
                  cheap=True, covers=released_known,
                  function=identification_risk, result=IdentificationResult,
                  verdict=identification_lines, sections=(identification_section,),
                  settings=identification_settings, cost=COST, caveats=CAVEATS,
                  not_assessed=identification_not_assessed,
                  contributions=identification_contributions, resolve=identification_resolve,
                  executor=EXECUTOR)
