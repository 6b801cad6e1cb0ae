"""The verdict lines of an audit: each registered measure's lines (its ``verdict`` builder,
in its own module, e.g. :mod:`bayes_risk.auditing.measures.attribute`), in the order of the steps
(:doc:`/adding_a_measure`). The line and its shared wording are in
:mod:`~bayes_risk.auditing.verdict_base` (its classes stay importable from here)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from bayes_risk.auditing.outcome import StepOutcome
from bayes_risk.auditing.plan import AuditPlan
from bayes_risk.auditing.thresholds import threshold_records
from bayes_risk.auditing.verdict_base import Baseline, Verdict
from bayes_risk.exceptions import ValidationError
from bayes_risk.measures import measures

__all__ = ["Baseline", "CAVEATS",  # noqa: F822 - CAVEATS: __getattr__ below
           "Verdict", "verdict_lines", "verdict_steps", "text_lines"]


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
    sides = {k: t.side for k, t in threshold_records().items()}
    for m in measures():
        if m.verdict is not None and by_name[m.name].status == "ran":
            lines = m.verdict(plan, by_name[m.name])
            for v in lines:
                _check_threshold(m.name, v, sides)
            out += lines
    return out


def _check_threshold(measure: str, v: Verdict | Baseline, sides: dict[str, str]) -> None:
    """Refuse a line naming a threshold that no measure declares, or read on the other side
    of it (a line that could never exceed would pass the verdict silently)."""
    name = getattr(v, "threshold_name", "")
    if not name:
        return
    if name not in sides:
        raise ValidationError(f"measure {measure!r}: its line {v.measure!r} names the "
                              f"threshold {name!r}, which no registered measure declares "
                              "(Measure.thresholds).", code="MEASURE_BROKEN")
    if v.direction != sides[name]:
        raise ValidationError(f"measure {measure!r}: its line {v.measure!r} reads the "
                              f"threshold {name!r} as {v.direction!r}; the threshold is "
                              f"declared {sides[name]!r}.", code="MEASURE_BROKEN")


def text_lines(result: Any) -> list[str]:
    """An audit's verdict in lines of words (``bayes-risk audit`` prints them): the verdict,
    each line (:meth:`Verdict.text_lines`), the failed convergence checks, the baselines and
    the steps that did not run, of the ``AuditResult`` ``result``."""
    lines = [f"audit of {result.plan.n_records:,} records, m = {result.plan.m}: "
             + result.verdict_text, *(ln for v in result.verdicts for ln in v.text_lines())]
    checks = result.convergence_checks
    if checks:
        from bayes_risk.models._bayesian.convergence import checks_headline

        # the verdict lines name LOW_ESS / RHAT_HIGH; this names the fit, quantity and value
        steps = ", ".join(dict.fromkeys(c["step"] for c in checks))
        lines.append(f"convergence FAILED ({steps} step): "
                     + checks_headline(checks, where="summary.json"))
    if result.baselines:
        lines += ["baseline of the original (cannot depend on the release; not a verdict) "
                  "[RELEASE_INDEPENDENT]:", *(f"  {b.text_line()}" for b in result.baselines)]
    return lines + [f"{s.title}: {s.status} — {s.reason}" for s in result.steps
                    if s.status != "ran"]
