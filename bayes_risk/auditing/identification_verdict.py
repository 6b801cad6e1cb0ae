"""The identification step's verdict lines: the expected and true match rates against their
thresholds, the worst case over the radius search, the datasets and the fit's regimes
(:doc:`/methods/identification`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from bayes_risk.auditing import remedies
from bayes_risk.auditing.outcome import StepOutcome, step_file
from bayes_risk.auditing.plan import AuditPlan, radius_text
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

__all__ = ["identification_lines"]


def identification_lines(plan: AuditPlan, i: StepOutcome) -> list[Verdict | Baseline]:
    """The expected and true match rates: the worst case over the radius search, the larger of
    the pooled and per-dataset figures, each with the radius of each column that gave it."""
    th = plan.thresholds
    iw = line_caveats("identification", i.result.warnings)
    pooled = i.extra["pooled"]
    n = float(pooled.result.file["n_targets"])
    m = plan.m
    src = step_file(i, "summary.json")
    pd_figs = identification_figures(i.extra.get("sweep"), i.result, n, per_dataset=True)
    pool_figs = identification_figures(pooled.sweep, pooled.result, n, per_dataset=False)
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
        codes = _search_caveats(plan, pooled.sweep if use_pooled else i.extra.get("sweep"),
                                edge_p if use_pooled else edge_d)
        lines.append((label, value, detail + by_regime,
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


def identification_figures(sweep: Any, res: Any, n: float, *, per_dataset: bool) -> list[tuple]:
    """``(value, radii, per-dataset values, columns at the grid's edge)`` of the expected match
    rate and of the true match rate: the largest over the search, else at the radius given."""
    if sweep is None or not sweep.argmax:
        f = res.file
        each = getattr(res, "per_dataset", None) or {}
        radius = dict((res.settings.get("match_rule") or {}).get("radius") or {})
        emr_each = np.asarray(each.get("expected_match_risk", []), dtype=float) / n
        tmr_each = np.asarray(each.get("true_match_rate_targets", []), dtype=float)
        return [(float(f["expected_match_risk"]) / n, radius, emr_each, []),
                (float(f["true_match_rate_targets"]), radius, tmr_each, [])]
    out = []
    for value, arg, table in ((sweep.risk_star / n, sweep.argmax, sweep.risk / n),
                              (sweep.tmr_star_value, sweep.tmr_argmax, sweep.true_match_rate)):
        if not arg:
            out.append((float("nan"), {}, np.zeros(0), []))
            continue
        # the smallest radii among ties (the grid is ordered lexicographically)
        best = sorted(arg, key=lambda j: tuple(np.atleast_1d(sweep.radii[j])))[0]
        rad = sweep.radii_at(best)
        top = float(np.max(sweep.radii))
        edge = [c for c, r in rad.items() if r >= top > 0]
        out.append((float(value), rad, np.asarray(table[best], dtype=float)
                    if per_dataset else np.zeros(0), edge))
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


def _search_caveats(plan: AuditPlan, sweep: Any, edge: list[str]) -> tuple[str, ...]:
    """The codes that say the line's figure may not be the worst case over the radii."""
    if not plan.search_columns:
        return ()
    if not plan.sweep:
        return ("RADIUS_NOT_SEARCHED",)
    codes = []
    if sweep is not None and (sweep.settings.get("search") or {}).get("mode") == "coordinate":
        codes.append("RADIUS_COORDINATE_SEARCH")
    if edge:
        codes.append("RADIUS_AT_GRID_EDGE")
    return tuple(codes)


def _identification_worst_case(plan: AuditPlan) -> str:
    """What the identification lines take as the worst case over the intruder's choices."""
    if not plan.search_columns:
        radius = "every known column is categorical, matched exactly (the only choice)"
    elif not plan.sweep:
        radius = (f"radius: {radius_text(plan.radius)} only (the search was turned off: "
                  "RADIUS_NOT_SEARCHED — not the worst case)")
    else:
        radius = (f"radius: the worst case, the largest figure over a grid of "
                  f"{', '.join(f'{r:g}' for r in plan.sweep)} (0 = exact) on each of "
                  f"{', '.join(plan.search_columns)}, synthesized or released unchanged")
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
        return of_heavy, (f"{head}; regime {heavy} holds the posterior mass "
                          f"({mass_words(reg['regimes'][heavy - 1])}): its figure is read, "
                          "the others' beside it (RISK_BY_REGIME)")
    return best, f"{head}; the larger figure is read (RISK_BY_REGIME)"


def _identification_intruder(plan: AuditPlan) -> str:
    return (f"knows the true {', '.join(plan.known)} of every target; holds one or all of the "
            f"{plan.m} datasets and matches each numeric key as closely or as loosely as "
            "serves them best")
