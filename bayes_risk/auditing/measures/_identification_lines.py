"""The parts of the identification verdict lines
(:mod:`~bayes_risk.auditing.measures.identification`): the figures a line reads (the worst
case over the radius search, one dataset at a time or all pooled), its words on the search, the
fit's regimes, the posterior replicates and the radius convention beside it, the intruder and
worst case it names, the line of the intruder who knows the selection rule, and each target's
contribution to a line."""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from bayes_risk.auditing.context import StepContext, identification_kwargs
from bayes_risk.auditing.outcome import Contributions, StepOutcome
from bayes_risk.auditing.plan import AuditPlan, radius_text
from bayes_risk.auditing.verdict_base import Verdict, caused, mass_words, pct
from bayes_risk.identification.api import identification_risk


def given_selection_line(plan: AuditPlan, i: StepOutcome, src: str | None,
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
        intruder=f"{identification_intruder(plan)}; knows which records were selected for "
        "synthesis (the release's manifest, Hu 2019 §4.2.4)", count_of=(int(n), "targets"),
        threshold_name="expected_match_rate",
        worst_case=f"{identification_worst_case(plan)}; selection: known for every target "
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


def convention_text(plan: AuditPlan, res: Any, pooled: Any, n: float) -> tuple[str, str]:
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


def posterior_reading(post: dict[str, Any] | None, k: int, value: float, m: int
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


def search_caveats(plan: AuditPlan, searches: dict[str, tuple[Any, list[str]]], k: int,
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


def identification_worst_case(plan: AuditPlan) -> str:
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


def identification_by_regime(value: float, each: np.ndarray, reg: Any) -> tuple[float, str]:
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


def identification_intruder(plan: AuditPlan) -> str:
    """The intruder the identification lines name."""
    return (f"knows the true {', '.join(plan.known)} of every target; holds one or all of the "
            f"{plan.m} datasets and matches each numeric key as closely or as loosely as "
            "serves them best")


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
