"""The relative difference of the largest values as one unit: its audit step (every
synthesized numeric column, the release alone), its verdict line and its report section, named
by its record ``MEASURE`` (:doc:`/adding_a_measure`; :doc:`/methods/attribute`, Business data)."""

from __future__ import annotations

from functools import partial
from typing import Any

import numpy as np

from bayes_risk._io import write_json
from bayes_risk._thresholds import builtin_thresholds
from bayes_risk.attribute.business import relative_difference
from bayes_risk.auditing import remedies
from bayes_risk.auditing.context import StepContext, ran, skipped, step_folder, write_table
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
from bayes_risk.auditing.report_blocks import Links, Section, step_section, table_block
from bayes_risk.auditing.verdict_base import Baseline, Verdict, caused, pct
from bayes_risk.results._base import plot_figure
from bayes_risk.results.business import RelativeDifferenceResult

#: what the line takes as the worst case over its intruder's choices
_WORST_CASE = ("targets: the record of each synthesized numeric column's largest value, known "
               "to the intruder as the largest; estimators: the release's largest value and, "
               "where rows are records, the record's own released value, the better read; "
               "datasets: all m averaged; the smallest relative difference over the columns")


def relative_difference_step(ctx: StepContext) -> StepOutcome:
    """The relative difference of the largest value of every synthesized numeric column."""
    cols = list(ctx.plan.numeric_synthesized)
    if not cols:
        return skipped("relative_difference", "no synthesized column is numeric: there is no "
                       "largest value to estimate.")
    res = relative_difference(ctx.original, ctx.synthetic, columns=cols,
                              delta=ctx.plan.thresholds.relative_difference)
    summary = res.to_dict()
    if not ctx.plan.given.show_confidential_values:  # the report's rule for its files
        summary = _withheld(summary)
    folder = step_folder(ctx, "relative_difference")
    files: list[str] = []
    if folder is not None:
        write_table(ctx, res.to_dataframe(), folder / "relative_difference.csv")
        write_json(folder / "summary.json", summary)
        files = ["relative_difference.csv", "summary.json"]
    figure = StepFigure(partial(plot_figure, res, "relative_difference"))
    return ran("relative_difference", res, folder, files,
               figures={"relative_difference.png": figure}, summary=summary)


def _withheld(summary: dict[str, Any]) -> dict[str, Any]:
    """``summary`` without the true largest values and the estimates (with the relative
    difference, an estimate gives the true value back)."""
    from bayes_risk.auditing.confidential import WITHHELD

    hide = ("true_value", "estimate", "estimate_lo", "estimate_hi")
    return {**summary,
            "smallest": {k: WITHHELD if k in hide else v
                         for k, v in summary["smallest"].items()},
            "targets": [{k: WITHHELD if k in hide else v for k, v in t.items()}
                        for t in summary["targets"]]}


def _cause(plan: AuditPlan, low: Any) -> tuple[str, list[str]]:
    """Why the smallest relative difference is small, and what would raise it."""
    c = low["column"]
    how = ("the release's largest value" if low["estimator"] == "rank"
           else "the record's own released value")
    cause = (f"{how} of {c}, averaged over the {int(low['n_datasets'])} datasets, comes within "
             f"{pct(low['relative_difference']):.3g} % of the true largest value"
             f"{remedies.donors_clause(plan, [c])}")
    fixes = [*remedies.smoothing_remedy(plan, [c]),
             f"top-code {c} in the release below its largest values (bayes-risk remedy "
             f"--bottom-top {c}=:VALUE), so that the released largest values no longer "
             "estimate the true one"]
    return cause, fixes


def relative_difference_lines(plan: AuditPlan, s: StepOutcome) -> list[Verdict | Baseline]:
    """The smallest relative difference: below the threshold, the intruder estimates a largest
    value within that share of it."""
    res = s.result
    low = res.smallest
    t = res.table
    interval = (f"95 % interval {pct(low['rd_lo']):.3g}–{pct(low['rd_hi']):.3g} %"
                if np.isfinite(low["rd_lo"]) else "no interval (one dataset)")
    by = "; ".join(f"{c} {pct(g['relative_difference'].min()):.3g} %"
                   for c, g in t.groupby("column", sort=False))
    return [caused(Verdict(
        "relative_difference", "relative difference of the largest value: the intruder's "
        "estimate against the truth (Kim et al. 2018)", pct(low["relative_difference"]),
        pct(plan.thresholds.relative_difference), "min", step_file(s, "summary.json"),
        f"smallest at {low['column']} (record {int(low['record'])}, estimator "
        f"{low['estimator']}): {interval}; by column: {by}",
        unit="%", spread=f"per dataset {pct(low['rd_dataset_min']):.3g}–"
        f"{pct(low['rd_dataset_max']):.3g} % (min–max over {int(low['n_datasets'])}); the "
        f"intruder averages all {plan.m}",
        intruder="knows which record holds each column's largest value and estimates it from "
                 "the release", count_of=None, threshold_name="relative_difference",
        worst_case=_WORST_CASE), *_cause(plan, low))]


@step_section("relative_difference", "relative_difference",
              "Relative difference of the largest values")
def relative_difference_section(sec: Section, s: Any, result: Any, links: Links) -> None:
    res = s.result
    src = step_file(s, "relative_difference.csv")
    sec.p("The intruder who knows which record holds a column's largest value estimates it from "
          "the release: by the release's largest value ('rank') and, where the release's rows "
          "are the original's records, by the record's own released value ('own_record'); with "
          f"{res.m} datasets by their mean, with its 95 % t interval. The relative difference "
          "|estimate − truth| / |truth| is small when the estimate discloses the value (Kim et "
          "al. 2018; Hu 2019, §1). The true values and the estimates are withheld from the "
          "files (with the relative difference, an estimate gives the true value back).")
    cols = ["column", "record", "estimator", "relative_difference", "rd_lo", "rd_hi",
            "rd_dataset_min", "rd_dataset_max", "within_delta"]
    sec.blocks.append(table_block(res.table[cols], links, src,
                                  "Relative difference of each largest value and estimator",
                                  percent=("relative_difference", "rd_lo", "rd_hi",
                                           "rd_dataset_min", "rd_dataset_max")))
    sec.blocks.append(links.step_figure(s, "relative_difference.png",
                                        "Relative differences with their 95 % intervals"))


def relative_difference_need(ctx: StepContext, left: float | None) -> Need:
    """The step's least need: each synthesized numeric column of the original and every
    dataset as doubles."""
    p = ctx.plan
    cols = max(1, len(p.numeric_synthesized))
    return Need(8.0 * p.n_records * (p.m + 1) * cols, "the synthesized numeric columns of the "
                "original and every dataset, not chunked")


def relative_difference_work(ctx: StepContext) -> Work:
    """The step's work: records x datasets x synthesized numeric columns (it sorts each
    dataset's columns)."""
    p = ctx.plan
    n, m, cols = p.n_records, max(p.m, 1), max(len(p.numeric_synthesized), 1)
    return Work(n * m * cols, n * m * cols, f"{n:,} x {m} x {cols}")


#: the step's costs (:mod:`bayes_risk.auditing.memory_plan`): its rate measured with the
#: closest match's on CE-like tables of 1,000, 3,000 and 5,000 records, m = 5, a CART release
#: of two numeric columns (trusted for ``README_SIZES``, as the package's other rates)
COST = StepCost(rate=("records x datasets x columns", 1.4e-7, 5.0e-7), sizes=README_SIZES,
                work=relative_difference_work, need=relative_difference_need)


MEASURE = Measure("relative_difference", "Relative difference of the largest values",
                  thresholds=builtin_thresholds("relative_difference"),
                  step=relative_difference_step, function=relative_difference,
                  result=RelativeDifferenceResult, verdict=relative_difference_lines,
                  sections=(relative_difference_section,), cost=COST, cheap=True,
                  remedies=("bottom_top",))
