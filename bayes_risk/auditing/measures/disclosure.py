"""Synthpop's empirical disclosure measures as one unit: the audit step (one run per target,
sdcMicro's risk of the original and differencing), its verdict lines and baselines and its
report section, named by ``MEASURE`` (:doc:`/methods/disclosure`, :doc:`/adding_a_measure`)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any

import numpy as np

from bayes_risk._io import file_slug, write_json
from bayes_risk._thresholds import builtin_thresholds
from bayes_risk.auditing import remedies
from bayes_risk.auditing.context import (
    StepContext,
    release_independent,
    rows_aligned,
    skipped,
    step_folder,
    write_table,
)
from bayes_risk.auditing.outcome import (
    README_SIZES,
    Measure,
    Need,
    StepCost,
    StepOutcome,
    step_file,
)
from bayes_risk.auditing.plan import AuditPlan
from bayes_risk.auditing.report_blocks import (
    Block,
    Links,
    Section,
    Span,
    step_section,
    table_block,
)
from bayes_risk.auditing.verdict_base import (
    Baseline,
    Verdict,
    caused,
    dataset_range,
    line_caveats,
)
from bayes_risk.disclosure.measures import disclosure_measures
from bayes_risk.exceptions import arg_name
from bayes_risk.results._base import plot_figure
from bayes_risk.results._format import format_number
from bayes_risk.results.disclosure import DisclosureByTarget


def target_folder(targets: Any, t: str) -> str:
    """The folder of target ``t``'s files in ``disclosure/``: ``""`` or a bounded ``SLUG/``."""

    return f"{file_slug(t)}/" if len(targets) > 1 else ""


def disclosure_step(ctx: StepContext) -> StepOutcome:
    """synthpop's identity / attribute / CAP measures and replicated uniques, per target."""
    p = ctx.plan
    diff = _differencing(ctx)
    if not p.disclosure_targets:
        return skipped("disclosure", "no target: every synthesized column is known to the "
                       f"intruder; give {arg_name('targets', '[...]', cli='COL')}.",
                       differencing=diff)
    results = {}
    files: list[str] = []
    for t in p.disclosure_targets:
        keys = p.disclosure_keys[t]
        if not keys:
            continue
        if p.release_independent_keys(t):
            both = t not in p.synthesized
            release_independent(
                f"{'repU and DiSCO' if both else 'repU (replicated uniques)'} of target {t}",
                f"the keys {', '.join(keys)}{' and the target' if both else ''} are released "
                "unchanged (none is synthesized), so "
                + ("every measure equals the original's." if both else
                   "repU equals UiO, the original's sample uniques on the keys, in every "
                   "dataset."))
        res = disclosure_measures(ctx.original, ctx.synthetic, keys=keys, target=t,
                                  schema=ctx.schema,
                                  ngroups_target=p.ngroups_target[t])
        results[t] = res
        if ctx.root is not None:
            sub = f"disclosure/{target_folder(p.disclosure_targets, t)}".rstrip("/")
            folder = step_folder(ctx, sub)
            write_json(folder / "summary.json", res.to_dict())
            write_table(ctx, res.ident, folder / "ident.csv")
            write_table(ctx, res.attrib, folder / "attrib.csv")
            write_table(ctx, res.allCAPs, folder / "allCAPs.csv")
            write_table(ctx, res.replicated_uniques.table, folder / "replicated_uniques.csv")
            files += [f"{sub}/{f}" for f in ("summary.json", "ident.csv", "attrib.csv",
                                            "allCAPs.csv", "replicated_uniques.csv")]
    if not results:
        return skipped("disclosure", "the only known column is the target: no key is left.",
                       differencing=diff)
    if diff is not None and ctx.root is not None:
        write_json(step_folder(ctx, "disclosure") / "differencing.json", diff.to_dict())
        files.append("disclosure/differencing.json")
    baseline = _original_baseline(ctx, results, files)
    return StepOutcome(name="disclosure", status="ran", result=DisclosureByTarget(results),
                       folder="disclosure" if ctx.root is not None else None,
                       files=[f.removeprefix("disclosure/") for f in files],
                       extra={"differencing": diff, "original_risk": baseline,
                              "unconfirmed": _unconfirmed_disclosure_columns(ctx, results)})


def _original_baseline(ctx: StepContext, results: dict[str, Any], files: list[str]
                       ) -> dict[tuple[str, ...], Any]:
    """sdcMicro's risk of the original on each set of keys, a baseline."""
    from bayes_risk.disclosure.original_risk import MAX_SUBSETS, original_risk

    by_keys: dict[tuple[str, ...], list[str]] = {}
    for t, res in results.items():
        by_keys.setdefault(tuple(res.keys), []).append(t)
    out: dict[tuple[str, ...], Any] = {}
    for i, (keys, targets) in enumerate(by_keys.items(), start=1):
        # SUDA2 on many keys: MSUs up to the size that keeps to MAX_SUBSETS subsets
        size, total = 0, 0
        while size < len(keys) and total + math.comb(len(keys), size + 1) <= MAX_SUBSETS:
            size += 1
            total += math.comb(len(keys), size)
        r = original_risk(ctx.original, keys=list(keys), weights=ctx.weights,
                          sensitive=targets, max_size=size)
        weights = ctx.plan.given.weights
        if weights is not None:  # the column's name, not "given (one per record)"
            r.settings["weights"] = weights
        out[keys] = r
        if ctx.root is not None:
            sub = "disclosure/original_risk" + (f"_{i}" if len(by_keys) > 1 else "")
            folder = step_folder(ctx, sub)
            write_json(folder / "summary.json", r.to_dict())
            write_table(ctx, r.records.reset_index(drop=True).rename_axis("record"),
                        folder / "records.csv", index=True)
            files += [f"{sub}/summary.json", f"{sub}/records.csv"]
    return out


def _unconfirmed_disclosure_columns(ctx: StepContext, results: dict[str, Any]) -> list[str]:
    """Synthesized keys and targets of row-aligned files unrelated to the original's."""
    syn = ctx.synthetic
    if getattr(syn, "schema", None) is not None and syn.schema.synthesized:
        return []  # a manifest: the original's fingerprint was checked
    if not rows_aligned(ctx):
        return []
    from bayes_risk.data.alignment import warn_unconfirmed

    used = dict.fromkeys(c for t, res in results.items() for c in (*res.keys, t)
                         if c in ctx.plan.synthesized)
    return warn_unconfirmed(ctx.original, list(syn), list(used),
                            measures="repU and DiSCO computed on it")


def _differencing(ctx: StepContext) -> Any:
    """What comparing the implicates reveals (Hawala 2008); ``None``: not comparable."""
    import warnings

    from bayes_risk.disclosure import differencing_check
    from bayes_risk.exceptions import CALLER, DataWarning

    syn = ctx.synthetic
    if (getattr(syn, "synthesized_records", None) is None or len(list(syn)) < 2
            or not rows_aligned(ctx)):
        return None
    res = differencing_check(ctx.original, syn)
    if res.warnings:
        warnings.warn(DataWarning(
            f"SELECTION_REVEALED: comparing the {res.m} released datasets reveals "
            f"{res.n_revealed:,} of the {int(res.selected.sum()):,} records selected for "
            f"synthesis (of {res.n_records:,}) and the synthesized columns "
            f"({', '.join(res.revealed_columns)}): their values differ between datasets while "
            "every other record's are the same, so an intruder learns which records the "
            "agency judged at risk (Hawala 2008). Release one dataset, or synthesize every "
            "record.", code="SELECTION_REVEALED"), skip_file_prefixes=CALLER)
    return res


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


def disclosure_lines(plan: AuditPlan, d: StepOutcome) -> list[Verdict | Baseline]:
    """repU (per set of keys) and DiSCO (per target), or their baselines."""
    th = plan.thresholds
    out: list[Verdict | Baseline] = []
    seen_keys: set[tuple[str, ...]] = set()
    unconfirmed = set(d.extra.get("unconfirmed") or ())
    suppressed = set(plan.suppressed_columns)

    def doubt(cols: Any) -> tuple[str, ...]:
        # a synthesized column of plain files not confirmed as the release's original's; a
        # column whose suppressed values count as a level of their own
        return ((("ORIGINAL_UNCONFIRMED",) if unconfirmed.intersection(cols) else ())
                + (("SUPPRESSED_AS_MISSING",) if suppressed.intersection(cols) else ()))

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
                  line_caveats(CAVEATS["DiSCO"], res.warnings) + doubt((*res.keys, t)),
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


def reading_together(result: Any) -> list[str]:
    """Sentences reconciling DiSCO with the attribute line when they seem to disagree (the
    report's "Reading the lines together")."""
    v = result.verdicts
    att = next((x for x in v if x.step == "attribute"), None)
    disco = [x for x in v if x.threshold_name == "DiSCO"]
    if att is None or not disco or all(d.exceeds == att.exceeds for d in disco):
        return []
    d_step = result.step("disclosure")
    sm = result.step("attribute").extra.get("summary") or {}
    null = (sm.get("null") or {}).get("prop_top") or {}
    expected = format_number(100 * float(null.get("expected", np.nan)), 3, plain=True)
    parts = []
    for x in disco:
        t = x.measure.rsplit("target ", 1)[-1]
        res = d_step.result[t] if t in d_step.result else None
        diodi = (f", of which {format_number(float(res.means()['DiSDiO']), 3, plain=True)} % "
                 "can be read off the original too (DiSDiO)" if res is not None else "")
        parts.append(f"{t} {format_number(x.value, 3, plain=True)} %{diodi}")
    keys = ", ".join(next(iter(d_step.result.values())).keys)
    att_txt = (f"the attribute line ({format_number(att.value, 3, plain=True)} % of records "
               f"have their true values ranked first, against {expected} % expected of a "
               "release that says nothing about the records)")
    if any(d.exceeds for d in disco) and not att.exceeds:
        return [
            f"DiSCO exceeds its threshold while {att_txt} is within: they measure different "
            "things. DiSCO (" + "; ".join(parts) + ") counts the records whose key "
            f"combination ({keys}) shows a single value of the target in the release and that "
            "value is their own: an intruder who knows only the keys reads it off, whether "
            "the release learned it from this record or from the others who share its keys "
            "— a risk to groups of records whose keys predict the target. The attribute line "
            "asks whether the release makes a record's own true values more probable than "
            "their alternatives for an intruder who already knows everything else (the "
            "synthesis model and every other record): it finds nothing the release tells "
            "about single records beyond what the others explain. Both hold: the release "
            "discloses through key combinations with a single target value, which coarser "
            "keys address (DiSCO's remedies), not through what it learned from each record."]
    return [
        f"The attribute line exceeds its threshold while DiSCO is within ({'; '.join(parts)}): "
        "they measure different things. The attribute intruder knows the synthesis model and "
        "every other record and weighs each candidate value of the synthesized columns, "
        f"{att_txt}; DiSCO's intruder knows only the keys ({keys}) and reads a value off the "
        "key combinations that show a single one. A release can tell about single records "
        "(released original values, as a CART synthesizer's donors) without any key "
        "combination showing a single value."]


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


#: the columns of synthpop's disclosure tables, in plain words
SYNTHPOP_TERMS = {
    "UiO": "unique in the original: records whose key combination occurs once in the original.",
    "UiS": "unique in the synthetic data: synthetic records whose key combination occurs once "
           "in that dataset.",
    "UiOiS": "unique in the original and found in the synthetic data: records unique in the "
             "original whose key combination occurs in the synthetic dataset.",
    "repU": "replicated uniques: records unique in the original whose key combination is also "
            "unique in the synthetic dataset — one an intruder could single out.",
    "Dorig": "disclosive in the original: records whose key combination has a single value of "
             "the target in the original.",
    "Dsyn": "disclosive in the synthetic data: synthetic records whose key combination has a "
            "single value of the target in that dataset.",
    "iS": "in synthetic: records whose key combination occurs in the synthetic dataset.",
    "DiS": "disclosive in synthetic: records whose key combination has a single value of the "
           "target in the synthetic dataset.",
    "DiSCO": "disclosive in synthetic, correct in original: records whose key combination has "
             "a single target value in the synthetic dataset, and that value is their own — "
             "an intruder who knows the keys reads the right value off the release.",
    "DiSDiO": "DiSCO records whose key combination also has a single target value in the "
              "original: their value could be read off the original just as well.",
    "max_denom, mean_denom": "the largest and the mean number of original records in the "
                             "key–target cells behind DiSCO (counts, not percentages): a large "
                             "cell is disclosure one would expect from the relation between "
                             "keys and target alone.",
    "baseCAPd": "baseline: the probability of guessing a record's target right from the "
                "target's overall distribution alone, without the keys.",
    "CAPd": "correct attribution probability in the original: the probability of guessing a "
            "record's target right from the original's distribution of the target within its "
            "key combination.",
    "CAPs": "the same from the synthetic dataset's own distribution within each key "
            "combination.",
    "DCAP": "the probability that an intruder who guesses an original record's target in "
            "proportion to the synthetic dataset's distribution within its key combination "
            "finds its own value.",
    "TCAP": "among the records whose key combination occurs in the synthetic dataset, the "
            "share whose value the release shows as the single one for their keys (DiSCO "
            "over iS).",
}


SYNTHPOP_SOURCE = ("Source: synthpop's disclosure() and replicated.uniques() help pages; Raab, "
                   "Nowok & Dibben, 'Practical privacy metrics for synthetic data'; formulas "
                   "on the methods page, Empirical disclosure measures.")


@step_section("disclosure", "disclosure", "Empirical disclosure measures (synthpop)")
def disclosure_section(sec: Section, s: Any, result: Any, links: Links) -> None:
    sec.p("The measures of synthpop's disclosure() and replicated.uniques() (Raab, Nowok & "
          "Dibben, 'Practical privacy metrics for synthetic data'), in per cent of the "
          "records, one row per synthetic dataset; with the original's sample uniques and "
          "k-anonymity on the keys. The keys are the columns the intruder knows, the target "
          "the one they want to learn. What the columns mean (synthpop's names):")
    sec.blocks.append(Block("dl", terms=list(SYNTHPOP_TERMS.items()), caption=SYNTHPOP_SOURCE))
    for t, res in s.result.items():
        sub = target_folder(s.result, t)
        sec.p(f"Target {t}, keys {', '.join(res.keys)}.")
        for df, f, cap in ((res.ident, "ident.csv", "identity measures, % of records"),
                           (res.attrib, "attrib.csv", "attribute measures, % of records "
                            "(max_denom, mean_denom: counts)"),
                           (res.allCAPs, "allCAPs.csv", "correct attribution probabilities, "
                            "%")):
            sec.blocks.append(table_block(df, links, step_file(s, sub + f), f"{cap} ({t})"))
        kb = res.key_baseline
        ksrc = step_file(s, sub + "summary.json")
        sec.p("Original data: ", links.num(kb["n_sample_uniques"], ksrc),
              " sample uniques on the keys (", links.num(kb["pct_sample_uniques"], ksrc),
              " %) in ", links.num(kb["n_key_combinations"], ksrc), " key combinations; "
              "records violating k-anonymity: ",
              *[x for i, (k, d) in enumerate(kb["k_anonymity"].items())
                for x in (Span(("; " if i else "") + f"k = {k}: "),
                          links.num(d["n_violating"], ksrc))], ".")
    base = s.extra.get("original_risk") or {}
    for i, (keys, r) in enumerate(base.items(), start=1):
        sfx = f"_{i}" if len(base) > 1 else ""
        osrc = step_file(s, f"original_risk{sfx}/summary.json")
        g = r.global_risk
        sec.p(f"sdcMicro's risk of the original on the keys {', '.join(keys)} (Templ, Kowarik "
              "& Meindl 2015; a baseline, the same for every release): ",
              links.num(g["expected_reidentifications"], osrc),
              " expected re-identifications (global risk ", links.num(g["global_risk_pct"], osrc,
                                                                     unit=" %"),
              "; " + ("Benedetti–Franconi individual risk with the survey weights "
                      f"{r.settings['weights']}" if r.weighted else
                      "no survey weights: each record's risk is 1/f_k, an upper bound") + ")",
              *([", ", links.num(r.suda["n_records_with_msu"], osrc),
                 " records with a SUDA2 minimal sample unique"] if r.suda else []),
              *[x for c, d in r.l_diversity.items()
                for x in (f"; key cells with one value of {c} hold ",
                          links.num(d["n_records_l1"], osrc), " records (l-diversity 1)")],
              ". Per-record risk, SUDA2 scores and l-diversity: records.csv beside it "
              "(methods page, Risk of the original).")
        sec.blocks.append(links.figure(
            lambda r=r: plot_figure(r, "risk"), f"original_risk{sfx}.png",
            f"The original's records by sdcMicro's individual re-identification risk on the keys "
            f"{', '.join(keys)} (logarithmic axis; dashed: the global risk, their mean): a "
            "baseline, the same for every release."))


def disclosure_settings(plan: AuditPlan) -> None:
    """The settings table's rows of the disclosure step: the targets, their keys and groups,
    synthpop's ``denom_lim``, the survey weights."""
    a = partial(plan.add, MEASURE.name)
    s = plan.given
    a("targets", ", ".join(plan.disclosure_targets) or "none", plan.targets_source,
      "default: the synthesized columns the intruder does not know")
    a("keys", "the known columns other than the target", "default")
    ngroups = s.ngroups_target
    a("numeric target groups", ngroups if ngroups is not None else "none",
      "default" if ngroups == 10 else "given", "quantile groups of the pooled values")
    a("denom_lim", 5, "default", "synthpop's default")
    a("survey weights", s.weights or "none", "given" if s.weights else "default",
      "sdcMicro's individual risk of the original: Benedetti–Franconi with the weights, 1/f_k "
      "without")


def disclosure_need(ctx: StepContext, left: float | None) -> Need:
    """The step's least need: each target's key codes and their counts in the original and
    every dataset."""
    n, m = ctx.plan.n_records, ctx.plan.m
    return Need(16.0 * n * (m + 1), "the keys' codes and counts of the original and every "
                "dataset, not chunked")


#: the step's costs (:mod:`bayes_risk.auditing.memory_plan`): its rate measured on the
#: README's audit (``README_SIZES``) on an AMD EPYC; what its results keep, 500 bytes a record,
#: measured on the README's audit (``make_ce_like(n, random_seed=1)``, CART release of 3
#: columns, m = 5) at 5,000 and 20,000 records, the larger of the two sizes' rates, rounded up
COST = StepCost(rate=("records x datasets", 5.4e-6, 12.0e-6), sizes=README_SIZES,
                need=disclosure_need, kept_per_record=500.0)


#: the warning codes that question each of the step's verdict lines (Measure.caveats); a
#: line names those its measure raised
CAVEATS: dict[str, tuple[str, ...]] = {
    "DiSCO": ("TARGET_MOSTLY_UNIQUE",),
}



def disclosure_covers(line: Mapping[str, Any], known: Sequence[str],
                      synthesized: Sequence[str]) -> list[str]:
    """The record's ``covers``: a key released unchanged, or the line's target if it is
    released unchanged (repU and DiSCO fall when either is synthesized)."""
    measure = str(line.get("measure", ""))
    target = (measure.split("target ", 1)[1].split(",")[0].strip() if "target " in measure
              else None)
    keys = [c for c in known if c not in synthesized and c != target]
    return keys + ([target] if target and target not in synthesized else [])


MEASURE = Measure("disclosure", "Empirical disclosure measures (synthpop)",
                  thresholds=builtin_thresholds("disclosure"), cheap=True,
                  covers=disclosure_covers,
                  step=disclosure_step, function=disclosure_measures,
                  result=DisclosureByTarget, verdict=disclosure_lines,
                  sections=(disclosure_section,),
                  settings=disclosure_settings, cost=COST, caveats=CAVEATS,
                  intruders_by_line=True, together=reading_together)
