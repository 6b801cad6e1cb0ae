"""The identification risk as one unit: its audit step (per dataset, pooled, the radius search
and the knowledge sweep), its verdict lines (the expected and true match rates against their
thresholds, the worst case over the radius search, the datasets and the fit's regimes) and its
report section, named by ``MEASURE`` (:doc:`/methods/identification`,
:doc:`/adding_a_measure`)."""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any

import numpy as np

from bayes_risk._io import write_json
from bayes_risk._memory import MIN_WORKING_BYTES, format_bytes
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
from bayes_risk.auditing.outcome import (
    README_SIZES,
    Contributions,
    Measure,
    Need,
    StepCost,
    StepOutcome,
    Work,
    step_file,
)
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
    mass_words,
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
    d = res.to_dict()
    if regimes is not None:
        d["regimes"] = regimes
    d["settings"]["records_output"] = "per-target"
    if sweep is not None:
        d["radius_search"] = sweep.to_dict()
        d["at_maximising_radius"] = {"radius": per.radius_star,
                                     "summary": at_star.to_dict()["summary"]}
    d["pooled"] = _pooled_dict(pooled)
    if given is not None:
        d["given_selection"] = given
    if ksweep is not None:
        d["known_sweep"] = ksweep.to_dict()
    folder = step_folder(ctx, "identification")
    files: list[str] = []
    if folder is not None:
        # the records at the radii the verdict reads (the worst case), else at the one given;
        # the report draws the knowledge sweep's figures itself
        tables, figures = per.files()
        if pooled.search is not None:
            tables["radius_search_pooled.csv"] = pooled.search.to_frame()
        figures = {k: v for k, v in figures.items() if k == "radius_search.png"}
        for name in ("records.csv", "summary.json", "radius_search.csv", "radius_search.png",
                     "radius_search_pooled.csv"):
            if name == "summary.json":
                write_json(folder / name, d)
            elif name in tables:
                write_table(ctx, tables[name], folder / name, fast=name in LARGE_TABLES)
            elif name in figures:
                plot_figure(*figures[name]).savefig(folder / name, dpi=120)
            else:
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
    return ran("identification", res, folder, files, sweep=sweep, at_r_star=at_star,
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
    return {"rule": rule.description, "selection": c.knowledge.to_dict(), **figures}


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
    convention = _convention_text(plan, i.result, pooled.result, n)
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
        value, by_regime = _identification_by_regime(vp if use_pooled else vd, each,
                                                     i.extra.get("regimes"))
        why = outside_range(vp if use_pooled else vd, each * 100,
                       f"the intruder holding all {m} datasets pools them" if use_pooled
                       else "the value is the worst case over the radius search")
        searches = {f"pooled over the m = {m} datasets": (pooled.search, edge_p),
                    "one dataset at a time": (i.extra.get("sweep"), edge_d)}
        words, codes = _search_caveats(plan, searches, k, n, max(vp, vd))
        post = getattr(i.extra.get("run"), "posterior_figures", None)
        value, post_words, read = _posterior_reading(post, k, value, m)
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
    who = _identification_intruder(plan)
    cause = remedies.identification_cause(plan, i)
    if i.extra.get("regimes"):  # the model's chains in different regimes: say so on the line
        iw = (*iw, "REGIMES_DISAGREE") + (
            ("RISK_BY_REGIME",) if i.extra["regimes"].get("status") == "computed" else ())
    return [caused(Verdict("identification", lab, v, t, "max", src, d, (*iw, *codes),
                            unit="%", spread=sp, intruder=who, count_of=(int(n), "targets"),
                            threshold_name=tn, worst_case=_identification_worst_case(plan)),
                   *cause)
            for (lab, v, d, sp, codes, tn), t in zip(lines, thr, strict=True)
            ] + _given_selection_line(plan, i, src, iw, n, cause)


def _given_selection_line(plan: AuditPlan, i: StepOutcome, src: str | None,
                          iw: tuple[str, ...], n: float, cause: tuple) -> list[Verdict]:
    """The expected match rate of the intruder who knows why records were selected for
    synthesis (Hu 2019 §4.2.4), when the release's manifest records its rule."""
    g = i.extra.get("given_selection")
    if not g or "not_computed" in g:
        return []
    per, pooled = g["per_dataset"], g["pooled"]
    use_pooled = not per["expected_match_rate"] > pooled["expected_match_rate"]
    both = [(f"pooled over the m = {plan.m} datasets", pooled), ("mean per dataset", per)]
    text = "; ".join(f"{w} {pct(f['expected_match_rate']):.3g} %"
                     + (f" ({radius_text(f['radius'])})" if f["radius"] else "")
                     for w, f in (both if use_pooled else both[::-1]))
    sel = g["selection"]
    detail = (f"the larger: {text}; the release's manifest records its selection rule "
              f"({g['rule']}): {sel['n_selected']:,} of {sel['n_records']:,} records were "
              "synthesized, so a target the rule leaves unselected is matched exactly among "
              "the records released unchanged, a selected one only among the synthesized")
    value = pct((pooled if use_pooled else per)["expected_match_rate"])
    spread = (f"pooled over the {plan.m} datasets, no spread" if use_pooled
              else "mean per dataset")
    return [caused(Verdict(
        "identification", "expected match rate given the selection (R)", value,
        pct(plan.thresholds.expected_match_rate), "max", src, detail, iw, unit="%",
        spread=spread,
        intruder=f"{_identification_intruder(plan)}; knows which records were selected for "
        "synthesis (the release's manifest, Hu 2019 §4.2.4)", count_of=(int(n), "targets"),
        threshold_name="expected_match_rate",
        worst_case=f"{_identification_worst_case(plan)}; selection: known for every target "
        "(the synthesized records of the manifest)"), *cause)]


def worst_case_point(sweep: Any, arg: Sequence[int]) -> int:
    """The grid point of the search's maximisers ``arg`` whose radii the lines and figures
    report: the smallest radii among ties (the grid is ordered lexicographically)."""
    return sorted(arg, key=lambda j: tuple(np.atleast_1d(sweep.radii[j])))[0]


def identification_figures(sweep: Any, res: Any, n: float, *, per_dataset: bool) -> list[tuple]:
    """``(value, radii, per-dataset values, columns at the search's edge)`` of the expected
    match rate and of the true match rate: the largest over the search, else at the radius
    given."""
    if sweep is None or not sweep.argmax:
        f = res.file
        each = getattr(res, "per_dataset", None) or {}
        radius = dict((res.settings.get("match_rule") or {}).get("radius") or {})
        emr_each = np.asarray(each.get("expected_match_risk", []), dtype=float) / n
        tmr_each = np.asarray(each.get("true_match_rate_targets", []), dtype=float)
        return [(float(f["expected_match_risk"]) / n, radius, emr_each, []),
                (float(f["true_match_rate_targets"]), radius, tmr_each, [])]
    out = []
    for value, arg, table, fig in (
            (sweep.risk_star / n, sweep.argmax, sweep.risk / n, "expected_match_risk"),
            (sweep.tmr_star_value, sweep.tmr_argmax, sweep.true_match_rate, "true_match_rate")):
        if not arg:
            out.append((float("nan"), {}, np.zeros(0), []))
            continue
        best = worst_case_point(sweep, arg)
        out.append((float(value), sweep.radii_at(best), np.asarray(table[best], dtype=float)
                    if per_dataset else np.zeros(0), sweep.at_edge(fig)))
    return out


def _convention_text(plan: AuditPlan, res: Any, pooled: Any, n: float) -> tuple[str, str]:
    """``"; beside: at Hornby & Hu's convention (...) pooled x %, per dataset y %"`` of both
    lines (empty when the search did not run: the line is that figure)."""
    if not (plan.sweep and plan.search_columns):
        return "", ""
    what = ("Hornby & Hu's convention, " if plan.radius_source == "default" else "the radius "
            "given, ") + radius_text(plan.radius)
    return tuple(
        f"; beside it, at {what}: pooled {pct(pooled.file[key] / d):.3g} %, mean per dataset "
        f"{pct(res.file[key] / d):.3g} % (not the worst case)"
        for key, d in (("expected_match_risk", n), ("true_match_rate_targets", 1.0)))


def _posterior_reading(post: dict[str, Any] | None, k: int, value: float, m: int
                       ) -> tuple[float, str, str]:
    """A line's value with the posterior replicates' figures for its intruder (``k``: 0 the
    expected match rate, 1 the true match rate), the words that compare them, and the spread
    when the line reads them (else ``""``). The replicates pooled ``m`` at a time are releases
    of ``m`` datasets drawn from the model, at the pooled intruder's radii; one at a time,
    single datasets: the same intruder as the released datasets', so the line reads the
    largest of all (the worst case for the intruder it names). Pooled over all ``R`` they are a
    release of ``R`` datasets, another intruder: named, not read."""
    if not post:
        return value, "", ""
    pm, se = pct(post["pooled_m"][k]), pct(post["pooled_m_mc_se"][k])
    one, big = pct(post["one"][k]), pct(post["pooled_R"][k])
    words = (f"; posterior replicates of the model at the pooled intruder's radii "
             f"({radius_text(post['radius'])}): pooled {m} at a time {pm:.3g} % (mean over "
             f"{post['releases']} releases of {m} datasets drawn from the model, ± {se:.2g} "
             f"% standard error), one at a time {one:.3g} % (mean over the R = {post['R']} "
             f"replicates); pooled over all R = {post['R']}, {big:.3g} %, is a release of "
             f"{post['R']} datasets, which no line reads (more datasets released, more risk)")
    best = max(pm, one)
    if not best > value:
        return value, words + "; the released datasets' figure is the larger", ""
    which = (f"posterior replicates pooled {m} at a time" if pm >= one
             else "posterior replicates one at a time")
    return best, words + (f"; the line reads the {which}: a release of {m} datasets from this "
                          "model identifies more, on average, than the one released"), (
        f"{which}, mean over {post['releases'] if pm >= one else post['R']} draws of the model")


def _search_caveats(plan: AuditPlan, searches: dict[str, tuple[Any, list[str]]], k: int,
                    n: float, value: float) -> tuple[str, tuple[str, ...]]:
    """What a line's figure covers over the radii (``k``: 0 the expected match rate, 1 the
    true match rate), as words for its detail and the codes that qualify it: the line reads
    the larger of the two intruders' figures, so either search's edge or bound counts. The
    bound is the largest of the searches' bounds: the worst case over every radius lies
    between the figure and it."""
    if not plan.search_columns:
        return "", ()
    if not plan.sweep:
        return "", ("RADIUS_NOT_SEARCHED",)
    codes: list[str] = []
    parts, bounds, exact = [], [], True
    for who, (sw, edge) in searches.items():
        if sw is None:
            continue
        status = sw.search_status
        exact &= status == "exact"
        b = sw.bounds[k] / (n if k == 0 else 1.0)
        bounds.append(b)
        if status != "exact":
            code = {"bounded": "RADIUS_SEARCH_BOUNDED", "grid": "RADIUS_GRID_ONLY",
                    "coordinate": "RADIUS_COORDINATE_SEARCH"}[status]
            more = len(sw.radii) - sw.grid_points
            reason = (sw.search.get("refinement") or {}).get("reason")
            parts.append(f"{who}: {sw.grid_points} grid points"
                         + (f" and {more} between them" if more else "")
                         + (f", not bounded between them ({reason})" if status == "grid"
                            else "") + f" ({code})")
            codes.append(code)
        if edge:
            parts.append(f"{who}, the largest figure is at the largest radius searched "
                         f"({max(sw.search['values']):g}) of {', '.join(edge)}: matching "
                         "more loosely may give more (RADIUS_AT_GRID_EDGE)")
            codes.append("RADIUS_AT_GRID_EDGE")
    top = max(float(v) for v in plan.sweep)
    if exact:
        head = (f"; exact over every radius from 0 to {top:g} of "
                f"{', '.join(plan.search_columns)} (the grid's points and, between them, "
                "every radius whose bound could exceed the figure)")
    elif all(np.isfinite(bounds)):
        head = (f"; not pinned down between the grid's points: the worst case over every "
                f"radius from 0 to {top:g} lies between {value:.3g} % and "
                f"{pct(max(bounds)):.3g} %")
    else:
        head = ("; the largest over the points evaluated, not bounded between them "
                "(a radius between two of them may give more)")
    codes = list(dict.fromkeys(c for c in ("RADIUS_COORDINATE_SEARCH", "RADIUS_GRID_ONLY",
                                            "RADIUS_SEARCH_BOUNDED", "RADIUS_AT_GRID_EDGE")
                               if c in codes))
    return head + "".join(f"; {p}" for p in parts), tuple(codes)


def _identification_worst_case(plan: AuditPlan) -> str:
    """What the identification lines take as the worst case over the intruder's choices."""
    if not plan.search_columns:
        radius = "every known column is categorical, matched exactly (the only choice)"
    elif not plan.sweep:
        radius = (f"radius: {radius_text(plan.radius)} only (the search was turned off: "
                  "RADIUS_NOT_SEARCHED — not the worst case)")
    else:
        radius = (f"radius: the worst case over every radius from 0 to "
                  f"{max(plan.sweep):g} of each of {', '.join(plan.search_columns)}, "
                  "synthesized or released unchanged: a grid of "
                  f"{', '.join(f'{r:g}' for r in plan.sweep)} (0 = exact) on each, then, "
                  "between its points, every box of radii whose bound could exceed the "
                  f"largest figure, up to {plan.given.radius_refine} points (exact when no "
                  "bound is left above it; else the line states the bound, "
                  "RADIUS_SEARCH_BOUNDED)")
    return (f"{radius}; datasets: one at a time or all {plan.m} pooled, the larger; keys: all "
            "known columns together (subsets are searched only with the knowledge sweep, "
            "known_sweep=True / --known-sweep); targets: every record of the original")


def _identification_by_regime(value: float, each: np.ndarray, reg: Any) -> tuple[float, str]:
    """An identification line's value and words under the fit's regimes (``RISK_BY_REGIME``)."""
    if not reg:
        return value, ""
    if reg.get("status") != "computed":
        return value, (f"; the model's chains sit in {len(reg['regimes'])} regimes "
                       f"(REGIMES_DISAGREE) and the figure could not be split by regime "
                       f"({reg.get('reason')})")
    lab = np.asarray([r if r is not None else 0 for r in reg["dataset_regime"]])
    each = np.asarray(each, dtype=float) * 100
    heavy = next((i for i, r in enumerate(reg["regimes"], 1) if r.get("holds_mass")), None)
    parts, best, of_heavy = [], value, None
    for r in range(1, len(reg["regimes"]) + 1):
        sel = (lab == r) & np.isfinite(each) if each.size == lab.size else np.zeros(0, bool)
        if not sel.any():
            parts.append(f"regime {r}: no dataset")
            continue
        mean = float(each[sel].mean())
        parts.append(f"regime {r}: {mean:.3g} % (mean over its {int(sel.sum())} dataset(s))")
        if not mean <= best:
            best = mean
        if r == heavy:
            of_heavy = mean
    head = (f"; the model's chains sit in {len(reg['regimes'])} regimes (REGIMES_DISAGREE), "
            f"per dataset by the regime of its draw: {'; '.join(parts)}")
    if of_heavy is not None:  # the regime that holds the mass, with datasets of its own
        return of_heavy, (f"{head}; regime {heavy} holds the mass "
                          f"({mass_words(reg['regimes'][heavy - 1])}): its figure is read, "
                          "the others' beside it (RISK_BY_REGIME)")
    return best, f"{head}; the larger figure is read (RISK_BY_REGIME)"


def _identification_intruder(plan: AuditPlan) -> str:
    return (f"knows the true {', '.join(plan.known)} of every target; holds one or all of the "
            f"{plan.m} datasets and matches each numeric key as closely or as loosely as "
            "serves them best")


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
        sec.blocks.append(links.figure(
            lambda: plot_figure(sw, "profile",
                                rate_threshold=plan.thresholds.expected_match_rate * 100,
                                n_targets=n), "radius_search.png",
            "Expected match risk by the radius of each searched column, the others held at "
            "the worst case (the band: the range over the datasets; the ring: the maximum; "
            "the dashed line: the verdict's threshold)"))
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


#: what one target contributes to an identification line, by the line's figure (a rise's
#: explanation compares them target by target: :mod:`bayes_risk.auditing.rises`)
_CONTRIBUTION = ("expected match", "correct unique match")

#: the sentence of targets whose contribution rose and fell, by what they contribute
_MOVED = {
    "expected match": "{up:,} of {n:,} targets have a larger expected match (1/c when the true "
                      "record is among their c matches) after the remedy, {down:,} a smaller",
    "correct unique match": "{up:,} of {n:,} targets became correct unique matches after the "
                            "remedy, {down:,} ceased to be",
    "correct unique match per dataset": "{up:,} of {n:,} targets are correct unique matches in "
                                        "more datasets after the remedy, {down:,} in fewer",
}


def identification_contributions(ctx: StepContext, outcome: StepOutcome | None,
                                 value: float) -> Contributions | None:
    """The step's per-target contributions to the line whose value is ``value`` (per cent):
    the step's own run again at the radii that gave the line (pooled or one dataset at a time,
    whichever it reads), each target's correct unique match or expected match; ``None`` for
    another line, or when no run gives the value (``Measure.contributions``)."""
    if outcome is None or outcome.status != "ran":
        return None
    pooled = outcome.extra.get("pooled")
    if pooled is None:
        return None
    n = float(pooled.result.file["n_targets"])
    p = ctx.plan
    for agg, sweep, res in (("pooled", pooled.search, pooled.result),
                            ("per_dataset", outcome.extra.get("sweep"), outcome.result)):
        figs = identification_figures(sweep, res, n, per_dataset=agg == "per_dataset")
        for (fig, radius, _, _), what in zip(figs, _CONTRIBUTION, strict=True):
            if not math.isclose(fig * 100, value, rel_tol=1e-9, abs_tol=1e-9):
                continue
            kw = identification_kwargs(ctx)
            match = kw["match"].replace(radius=dict(radius) or None)
            if agg == "pooled":  # as the step's pooled run
                match = match.replace(fallback=None)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                r = identification_risk(ctx.original, ctx.synthetic, known=list(p.known),
                                        synthesized=list(p.known_synthesized),
                                        **{**kw, "match": match, "aggregation": agg,
                                           "progressbar": False})
            if agg == "pooled":
                vec = r.records["IR" if what == _CONTRIBUTION[0] else "K"].to_numpy(float)
            else:
                vec = (np.asarray(r.record_IR, dtype=float) if what == _CONTRIBUTION[0]
                       else np.asarray(r.K, dtype=float).mean(axis=1))
            if math.isclose(float(np.nanmean(vec)) * 100, value, rel_tol=1e-9, abs_tol=1e-9):
                moved = _MOVED[what + (" per dataset" if agg == "per_dataset"
                                       and what == _CONTRIBUTION[1] else "")]
                return Contributions(vec, moved, radius_text(dict(radius)),
                                     "the radii that give the line")
    return None


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


def planned_index_bytes(plan: AuditPlan) -> float:
    """Bytes of one dataset's or replicate's matching index on the plan's radius and searched
    columns (``identification.engine.index_bytes``, before any ``Prepared`` exists)."""
    n, q = plan.n_records, len(set(plan.radius) | set(plan.search_columns))
    return 8.0 * n * (1 + q + max(q, 1) + q * q + q)


def _pattern_note(n: int, m: int) -> str:
    """The match-pattern tables' size (``patterns.counts_patterns``: used only within half of
    what is left, else the pairs are listed: not a least need)."""
    from bayes_risk.identification.patterns import MAX_PATTERN_DATASETS, PATTERN_TABLES

    if m > MAX_PATTERN_DATASETS:
        return ""
    size = PATTERN_TABLES * 8.0 * n * (1 << m)
    return (f"; the pooled measures by match pattern when their tables ({PATTERN_TABLES} of "
            f"{n:,} targets x 2^{m} patterns, {format_bytes(size, up=True)}) fit in half of "
            "what is left, else by listing the matches")


def identification_need(ctx: StepContext, left: float | None) -> Need:
    """The step's least need: its per-dataset tables (64 bytes a target and dataset) with the
    datasets' matching indexes, or the pooled run's smallest chunk of targets beside one
    index, the larger."""
    from bayes_risk.identification.engine import CELL_BYTES

    n, m = ctx.plan.n_records, ctx.plan.m
    index = planned_index_bytes(ctx.plan)
    # the pooled run's per-target accumulators: 4 doubles, 3 int64, 2 flags
    per_target = 8.0 * 7 + 2
    need = max(CELL_BYTES * n * m + m * index,  # per dataset: not chunked
               index + MIN_WORKING_BYTES + per_target * n)  # pooled, indexes in turn
    return Need(need, (
        f"the per-dataset tables of {n:,} targets x {m} datasets at once; pooled: "
        "chunks of targets sized from what is left, the datasets' matching indexes "
        "built one at a time when they do not fit together"
        + _pattern_note(n, m) + "; each radius of the search as one such run"))


def identification_work(ctx: StepContext) -> Work:
    """The step's work: records x datasets x the radii it matches at, the search's grid and
    from none (the grid is exact) to every refinement point between them allowed, each a grid
    point's work."""
    p = ctx.plan
    n, m = p.n_records, max(p.m, 1)
    grid = len(p.sweep) ** len(p.search_columns) if p.search_columns and p.sweep else 1
    more = p.given.radius_refine if p.search_columns and p.sweep else 0
    return Work(n * m * grid, n * m * (grid + more),
                f"{n:,} x {m} x {grid}" + (f"–{grid + more}" if more else ""))


#: the step's costs (:mod:`bayes_risk.auditing.memory_plan`). Its rate in CPU seconds a unit,
#: measured again after the pooled search's faster counts (Intel Xeon, load 17–25: 4.7 µs a
#: unit at 5,000 records, 6.7–7.3 at 20,000, 7.7 at 50,000 and 8.6 at 100,000; the earlier
#: 5.8–10.5 overstated the step; the sizes: ``README_SIZES``). What its results keep beside its
#: kernels, measured on the README's audit (``make_ce_like(n, random_seed=1)``, CART release of
#: 3 columns, m = 5) at 5,000 and 20,000 records, the larger of the two sizes' rates, rounded
#: up: its results without pooled match probabilities and what its radius search leaves held,
#: 1.8 kB a record at 5,000, 3.3 kB at 10,000 and 3.6 kB at 20,000, where 2 kB was planned from
#: 5,000 alone. Its 10 kernels' first run loads 75 MB (the README's audit of 5,000 records);
#: compiling them (numba caches them on disk, so only the first audit after an installation
#: compiles them) took 23.1 s at 5,000 records then, 9.5 s once cached
COST = StepCost(rate=("records x datasets x grid points", 4.7e-6, 8.7e-6), sizes=README_SIZES,
                work=identification_work, need=identification_need, kept_per_record=4_000.0,
                kernels=("bayes_risk.identification._kernels",
                         "bayes_risk.identification._pair_kernels"),
                kernel_bytes=75e6, compile_seconds=14.0)


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
