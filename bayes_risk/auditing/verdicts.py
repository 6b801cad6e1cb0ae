"""The verdict lines of an audit: each registered measure's lines (its ``verdict`` builder,
in its own module, e.g. :mod:`bayes_risk.auditing.measures.attribute`), in the order of the steps
(:doc:`/adding_a_measure`). The line and its shared wording are in
:mod:`~bayes_risk.auditing.verdict_base` (its classes stay importable from here)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from bayes_risk.auditing.outcome import StepOutcome
from bayes_risk.auditing.plan import AuditPlan
from bayes_risk.auditing.verdict_base import Baseline, Verdict
from bayes_risk.measures import measures

__all__ = ["Baseline", "CAVEATS",  # noqa: F822 - CAVEATS: __getattr__ below
           "Verdict", "verdict_lines", "verdict_steps"]


def __getattr__(name: str) -> Any:
    """``CAVEATS``: the warning codes that question each kind of verdict line, read from the
    registered measures' records (``Measure.caveats``) when asked for."""
    if name == "CAVEATS":
        return {kind: codes for m in measures() for kind, codes in m.caveats.items()}
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def verdict_steps() -> tuple[str, ...]:
    """The steps with verdict lines: the registered measures with a verdict builder."""
    return tuple(m.name for m in measures() if m.verdict is not None)


def verdict_lines(plan: AuditPlan, steps: Sequence[StepOutcome]) -> list[Verdict | Baseline]:
    """The verdict lines and baselines of the steps that ran, in the order of the steps.

    Parameters
    ----------
    plan : AuditPlan
        The audit's settings and thresholds.
    steps : sequence of StepOutcome
        One outcome per step (``AuditResult.steps``); each step with verdict lines
        (:func:`verdict_steps`) must be among them.

    Returns
    -------
    list of Verdict and Baseline
    """
    by_name: dict[str, StepOutcome] = {}
    for s in steps:
        by_name.setdefault(s.name, s)
    out: list[Verdict | Baseline] = []
    for m in measures():
        if m.verdict is not None and by_name[m.name].status == "ran":
            out += m.verdict(plan, by_name[m.name])
    return out
