"""The percentage of closest match as one unit: its audit step (the synthesized numeric
columns, the release alone), its verdict line and its report section, named by its record
``MEASURE``
(:doc:`/adding_a_measure`; :doc:`/methods/attribute`, Business data)."""

from __future__ import annotations

from functools import partial
from typing import Any

from bayes_risk._io import write_json
from bayes_risk._thresholds import builtin_thresholds
from bayes_risk.attribute.business import closest_match
from bayes_risk.auditing import remedies
from bayes_risk.auditing.context import (
    StepContext,
    ran,
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
    StepFigure,
    StepOutcome,
    Work,
    step_file,
)
from bayes_risk.auditing.plan import AuditPlan
from bayes_risk.auditing.report_blocks import Links, Section, step_section
from bayes_risk.auditing.verdict_base import Baseline, Verdict, caused, dataset_range, pct
from bayes_risk.results._base import plot_figure
from bayes_risk.results.business import ClosestMatchResult

#: what the line takes as the worst case over its intruder's choices
_WORST_CASE = ("keys: every synthesized numeric column, known at its true value (a column "
               "released unchanged links a record by itself: the identification lines); "
               "datasets: the better of the pooled distance and one dataset at a time")


def closest_match_step(ctx: StepContext) -> StepOutcome:
    """The share of records whose closest released row is their own."""
    p = ctx.plan
    if not p.numeric_synthesized:
        return skipped("closest_match", "no synthesized column is numeric: the distance would "
                       "compare released true values only.")
    if p.fully_synthetic or not rows_aligned(ctx):
        return skipped("closest_match", "the release's rows are not the original's records "
                       "(a full synthesis, or rows in another order): no record has a released "
                       "version of its own to be matched to.")
    res = closest_match(ctx.original, ctx.synthetic, keys=list(p.numeric_synthesized))
    summary = res.to_dict()
    folder = step_folder(ctx, "closest_match")
    files: list[str] = []
    if folder is not None:
        write_table(ctx, res.to_dataframe(), folder / "closest_match.csv")
        write_json(folder / "summary.json", summary)
        files = ["closest_match.csv", "summary.json"]
    figure = StepFigure(partial(plot_figure, res, "datasets"))
    return ran("closest_match", res, folder, files, figures={"closest_match.png": figure},
               summary=summary)


def _cause(plan: AuditPlan, res: Any) -> tuple[str, list[str]]:
    """Why records are closest to their own released row, and what would move them away."""
    t = res.table
    exact = float((t["own_distance"] <= 1e-12).mean()) if len(t) else 0.0
    cause = (f"{pct(res.value):.3g} % of the records are closest to their own released row over "
             f"{', '.join(res.keys)}"
             + (f"; {pct(exact):.3g} % of the records are released with their own values of "
                "every key" if exact else "") + remedies.donors_clause(plan, res.keys))
    fixes = [*remedies.smoothing_remedy(plan, res.keys),
             f"coarsen the released values of {', '.join(res.keys)} (rounding, top and bottom "
             "coding: bayes-risk remedy --bottom-top), so that they no longer point back to "
             "their records"]
    return cause, fixes


def closest_match_lines(plan: AuditPlan, s: StepOutcome) -> list[Verdict | Baseline]:
    """The share of records linked to their own released row."""
    res = s.result
    lo, hi = res.interval
    return [caused(Verdict(
        "closest_match", "closest match: records whose closest released record is their own "
        "(Domingo-Ferrer et al. 2001; Kim et al. 2015)", pct(res.value),
        pct(plan.thresholds.closest_match), "max", step_file(s, "summary.json"),
        f"95 % Wilson interval {pct(lo):.3g}–{pct(hi):.3g} %; {res.strategy} (pooled "
        f"{pct(res.pooled):.3g} %); random guess {pct(res.random_guess):.3g} %; keys "
        f"{', '.join(res.keys)}", warnings=tuple(res.warnings), unit="%",
        spread=dataset_range(100 * res.per_dataset, "%"),
        intruder="knows the true values of the numeric columns of a record and links it to "
                 "the closest released record", count_of=(len(res.table), "records"),
        threshold_name="closest_match", worst_case=_WORST_CASE), *_cause(plan, res))]


@step_section("closest_match", "closest_match", "Closest match")
def closest_match_section(sec: Section, s: Any, result: Any, links: Links) -> None:
    res = s.result
    src = step_file(s, "summary.json")
    lo, hi = res.interval
    sec.p("Distance-based record linkage (Domingo-Ferrer et al. 2001), as Kim et al. (2015) use "
          "it for synthetic business data: each record's true values of the synthesized "
          "numeric columns ",
          f"({', '.join(res.keys)}), standardised by the original's standard deviations, are "
          "compared with every released record; the record is matched when its own released "
          "record is the closest (ties share). Share matched: ", links.pct(res.value, src),
          f" ({res.strategy}; 95 % Wilson interval ", links.pct(lo, src), "–",
          links.pct(hi, src), "); pooled over the datasets ", links.pct(res.pooled, src),
          "; a random guess ", links.pct(res.random_guess, src), ".")
    sec.blocks.append(links.step_figure(s, "closest_match.png",
                                        "Records matched to their own released row, per dataset"))


def _closest_block() -> int:
    """Differences of the closest match's chunks (``attribute.business._CHUNK_VALUES``)."""
    from bayes_risk.attribute.business import _CHUNK_VALUES

    return int(_CHUNK_VALUES)


def closest_match_need(ctx: StepContext, left: float | None) -> Need:
    """The step's least need: the numeric keys of the original and every dataset as doubles,
    one chunk's differences and its two ``[chunk, n]`` distance tables."""
    p = ctx.plan
    keys = max(1, len(ctx.schema.numeric))
    return Need(8.0 * (p.n_records * keys * (p.m + 1) + 3 * _closest_block()),
                f"records in chunks of {_closest_block():,} differences (record x released "
                "row x key)")


def closest_match_work(ctx: StepContext) -> Work:
    """The step's work: records² x datasets x synthesized numeric columns (every record's
    distances to every released one)."""
    p = ctx.plan
    n, m, cols = p.n_records, max(p.m, 1), max(len(p.numeric_synthesized), 1)
    return Work(n * n * m * cols, n * n * m * cols, f"{n:,}² x {m} x {cols}")


#: the step's costs (:mod:`bayes_risk.auditing.memory_plan`): its rate measured on CE-like
#: tables of 1,000, 3,000 and 5,000 records, m = 5, a CART release of two numeric columns: the
#: distances grow with the square of the records (1.5–1.8e-8 s each; trusted for
#: ``README_SIZES``, as the package's other rates)
COST = StepCost(rate=("records² x datasets x keys", 1.4e-8, 2.0e-8), sizes=README_SIZES,
                work=closest_match_work, need=closest_match_need)


MEASURE = Measure("closest_match", "Closest match",
                  thresholds=builtin_thresholds("closest_match"), step=closest_match_step,
                  function=closest_match, result=ClosestMatchResult,
                  verdict=closest_match_lines, sections=(closest_match_section,), cost=COST,
                  cheap=True)
