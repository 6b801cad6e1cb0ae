"""A measure of one's own, added to bayes-risk by this one module and its registry entry
(:data:`MEASURE`): the share of the original's records that a synthetic dataset holds unchanged.

It joins the audit (a step, a settings row, a threshold, a verdict line, a report section, the
summary) when
:data:`MEASURE` is registered, by the entry point in ``pyproject.toml`` or by
``bayes_risk.measures.register``; :func:`main` is the distribution's own command,
``exact-copies``. The docs page "Adding a measure" shows this module;
``tests/auditing/test_measure_registry.py`` runs it.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from bayes_risk.auditing.context import StepContext, step_folder
from bayes_risk.auditing.outcome import StepOutcome
from bayes_risk.auditing.plan import AuditPlan
from bayes_risk.auditing.render import Section, step_section
from bayes_risk.auditing.verdicts import Verdict
from bayes_risk.measures import Measure, Threshold

#: the largest share of copied records (per cent) the verdict line accepts, set by
#: ``thresholds={"copied_share": ...}`` or ``--threshold copied_share=...``
COPIED_SHARE = Threshold(
    "copied_share", 5.0, "max", 0.0, 100.0, "in per cent of the records, from 0 to 100",
    "a convention of this example, not a finding: a board sets its own",
    "Largest acceptable share of the original's records copied exactly, in per cent.")


# ---- the measure: a function and its result -------------------------------------------------
@dataclass(frozen=True)
class ExactCopies:
    """The share of the original's records found unchanged in each synthetic dataset."""

    per_dataset: tuple[float, ...]

    @property
    def share(self) -> float:
        """The mean share over the datasets."""
        return float(np.mean(self.per_dataset))

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready summary."""
        return {"share": self.share, "per_dataset": list(self.per_dataset)}


def exact_copies(original: pd.DataFrame, synthetic: list[pd.DataFrame]) -> ExactCopies:
    """For each synthetic dataset, the share of the original's records it holds as a row
    (every column equal)."""
    cols = list(original.columns)
    shares = []
    for z in synthetic:
        rows = set(map(tuple, z[cols].astype(str).to_numpy()))
        held = [tuple(r) in rows for r in original[cols].astype(str).to_numpy()]
        shares.append(float(np.mean(held)))
    return ExactCopies(tuple(shares))


# ---- what the audit reads: a step, a settings row, a verdict line, a report section ---------
def exact_copies_step(ctx: StepContext) -> StepOutcome:
    """The audit step: the measure on the release, written to ``exact_copies/summary.json``."""
    res = exact_copies(ctx.original, list(ctx.synthetic))
    folder = step_folder(ctx, "exact_copies")  # None when the audit writes nothing
    files = []
    if folder is not None:
        (folder / "summary.json").write_text(json.dumps(res.to_dict()))
        files = ["summary.json"]
    return StepOutcome(name="exact_copies", status="ran", result=res,
                       folder="exact_copies" if folder is not None else None, files=files)


def exact_copies_settings(plan: AuditPlan) -> None:
    """The measure's row of the audit's settings table (the report's, ``summary.json``'s):
    what counts as a copy (its threshold is listed with the others, from its record)."""
    plan.add(MEASURE.name, "a copy", "every column equal", "default",
             "values compared as text, so 1 and 1.0 differ")


def exact_copies_lines(plan: AuditPlan, outcome: StepOutcome) -> list[Verdict]:
    """The verdict line: the mean share against the audit's ``copied_share`` (called when the
    step ran)."""
    src = f"{outcome.folder}/summary.json" if outcome.folder else None
    return [Verdict("exact_copies", "records copied exactly", 100 * outcome.result.share,
                    plan.thresholds.copied_share, COPIED_SHARE.side, src, unit="%",
                    threshold_name=COPIED_SHARE.name)]


@step_section("exact_copies", "exact-copies", "Exact copies of original records")
def exact_copies_section(sec: Section, s: StepOutcome, result: Any, links: Any) -> None:
    """The report's section (shown when the step ran), its number linked to its file."""
    sec.p("Records of the original found unchanged in a synthetic dataset: ",
          links.pct(s.result.share, f"{s.folder}/summary.json" if s.folder else None),
          " on average over the datasets.")


# ---- a command of its own (optional) --------------------------------------------------------
def main(argv: list[str] | None = None) -> int:
    """``exact-copies ORIGINAL SYN ...``: the measure, printed (the console script that
    ``pyproject.toml`` declares; the sub-commands of ``bayes-risk`` are the package's own)."""
    p = argparse.ArgumentParser(prog="exact-copies",
                                description="share of original records copied exactly")
    p.add_argument("original", metavar="ORIGINAL", help="confidential table (.csv)")
    p.add_argument("synthetic", nargs="+", metavar="SYN", help="synthetic datasets (.csv)")
    args = p.parse_args(argv)
    res = exact_copies(pd.read_csv(args.original), [pd.read_csv(s) for s in args.synthetic])
    print(f"records copied exactly: {100 * res.share:.1f} %")
    return 0


# ---- the registry entry ----------------------------------------------------------------------
#: everything the audit, its verdict, its report and its summary need, named as objects
MEASURE = Measure(
    name="exact_copies",
    title="Exact copies",
    step=exact_copies_step,
    function=exact_copies,
    result=ExactCopies,
    verdict=exact_copies_lines,
    sections=(exact_copies_section,),
    thresholds=(COPIED_SHARE,),
    settings=exact_copies_settings,
)

