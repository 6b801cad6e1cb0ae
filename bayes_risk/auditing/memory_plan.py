"""The audit's memory plan (issue 70): the budget (given, or a stated share of the machine's
memory) and what each step will hold within it, stated and checked before the first step runs.
See :doc:`/user_guide/memory`."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from bayes_risk._memory import (
    MIN_WORKING_BYTES,
    available_memory,
    current_limit,
    format_bytes,
    memory_limit,
    resident_memory,
)
from bayes_risk.exceptions import ValidationError, arg_name

__all__ = ["DEFAULT_SHARE", "AuditBudget", "StepMemory", "audit_budget", "step_memory",
           "check_steps"]

#: the share of the memory available when an audit starts that its default budget adds to what
#: the process holds: the other half stays with the rest of the machine (other users' work, the
#: operating system's file cache), so that an audit too large for the machine is planned or
#: refused rather than slowing the machine down or being killed by it
DEFAULT_SHARE = 0.5

#: replicates a batch of the posterior replicates holds (``AUDIT_REPLICATES``' batch size: the
#: jackknife groups batches, so it is not sized from the budget)
_BATCH_NOTE = "batches of {b} replicates, every target at once (the jackknife groups batches)"


@dataclass(frozen=True)
class AuditBudget:
    """The memory the audit's process may hold: ``limit`` bytes (``None``: the platform says
    nothing of its memory), ``source`` ``"given"`` or ``"default"``, and ``derivation``."""

    limit: int | None
    source: str
    derivation: str

    @contextlib.contextmanager
    def applied(self) -> Iterator[None]:
        """The default budget as the run's memory limit (a given one already is)."""
        with memory_limit(self.limit if self.source == "default" else None):
            yield


def audit_budget() -> AuditBudget:
    """The audit's budget: the limit given (``--memory``, :func:`~bayes_risk.memory_limit`), else
    what the process holds now plus :data:`DEFAULT_SHARE` of the memory available now."""
    how = arg_name("memory")  # --memory on the command line
    how = "memory_limit" if how == "memory" else how
    given = current_limit()
    if given is not None:
        return AuditBudget(given, "given", f"given with {how}")
    avail, held = available_memory(), resident_memory()
    if avail is None:
        return AuditBudget(None, "default", "none: the platform does not say how much memory "
                           f"is available (give {how} to set one)")
    limit = held + int(DEFAULT_SHARE * avail)
    return AuditBudget(limit, "default", (
        f"{DEFAULT_SHARE:.0%} of the {format_bytes(avail)} available on the machine when the "
        f"audit started, plus the {format_bytes(held)} the process held then, so that the "
        f"machine stays usable; give {how} to change it"))


@dataclass(frozen=True)
class StepMemory:
    """What a step will hold: ``need`` bytes at its smallest chunk (``None``: not estimated
    before the step), its ``chunking`` and ``estimate`` (what the step says when it starts)."""

    step: str
    need: float | None
    chunking: str
    estimate: str = ""

    def line(self) -> str:
        """``"identification: at least 24.1 MB; ..."`` for the plan printed before the work."""
        need = ("not estimated before the step" if self.need is None
                else f"at least {format_bytes(self.need, up=True)}")
        return f"{self.step.replace('_', ' ')}: {need}; {self.chunking}" + (
            f" ({self.estimate})" if self.estimate else "")


def _index_bytes(n: int, q: int) -> float:
    """Bytes of one replicate's matching index of ``n`` records on ``q`` radius columns
    (``identification.engine.index_bytes``, before any ``Prepared`` exists)."""
    return 8.0 * n * (1 + q + max(q, 1) + q * q + q)


def step_memory(ctx: Any, steps: list[str]) -> list[StepMemory]:
    """The memory plan of the ``steps`` that will run (in order), from the plan's sizes.

    The needs are lower bounds from the sizes the steps' own checks use: identification's
    per-dataset tables (64 bytes a target and dataset) and one replicate's matching index
    beside the smallest chunk of targets; a posterior batch's per-replicate counts and flags
    (9 bytes a target and replicate), its replicates and every replicate's file measures; the
    attribute step's outputs with one candidate a record (:func:`_attribute_need`)."""
    from bayes_risk.auditing.steps import AUDIT_REPLICATES
    from bayes_risk.identification.engine import CELL_BYTES
    from bayes_risk.identification.summary import MEASURES

    p = ctx.plan
    n, m = p.n_records, p.m
    q = len(set(p.radius) | set(p.search_columns))
    index = _index_bytes(n, q)
    table = float(next(iter(ctx.synthetic)).memory_usage(deep=True).sum()) if m else 0.0
    # the pooled run's per-target accumulators: 4 doubles, 3 int64, 2 flags
    per_target = 8.0 * 7 + 2
    out: list[StepMemory] = []
    for step in steps:
        if step == "identification":
            need = max(CELL_BYTES * n * m + m * index,  # per dataset: not chunked
                       index + MIN_WORKING_BYTES + per_target * n)  # pooled, indexes in turn
            out.append(StepMemory(step, need, (
                f"the per-dataset tables of {n:,} targets x {m} datasets at once; pooled: "
                "chunks of targets sized from what is left, the datasets' matching indexes "
                "built one at a time when they do not fit together; each radius of the search "
                "as one such run")))
        elif step == "posterior_identification":
            b = int(AUDIT_REPLICATES["batch_size"])
            cap = int(AUDIT_REPLICATES["max_replicates"])
            need = (9.0 * n * b + b * table + index + 16.0 * n
                    + 8.0 * cap * (len(MEASURES) + 2))
            out.append(StepMemory(step, need, _BATCH_NOTE.format(b=b) + ", up to "
                                  f"{cap} replicates; the groups' pair sums wait in TMPDIR"))
        elif step == "attribute":
            out.append(StepMemory(step, _attribute_need(p), (
                "records in chunks sized from what is left beside the outputs every record "
                "keeps, which the step checks again from its candidate sets before its first "
                "record"), "it states its records a chunk and, for refits, their expected time "
                "when it starts"))
        elif step == "membership":
            out.append(StepMemory(step, MIN_WORKING_BYTES, "targets in chunks sized from "
                                  "what is left beside the slots' log-likelihoods"))
        else:
            out.append(StepMemory(step, None, "not chunked"))
    return out


def _attribute_need(p: Any) -> float:
    """The least the attribute step holds: what ``attribute.evaluate.chunk_records`` checks
    before its first record, with one candidate a record (the step counts its candidate sets)
    and one record a chunk: a record's outputs (8 bytes a column guessed, 5 doubles and the
    ``B`` bootstrap replicates, and 2 kB of Python objects), its share of the result's tables
    (1.5 kB) and of the summary's bootstrap tables (16 ``B`` bytes), beside one record's
    working arrays."""
    est = p.given.attribute_estimator
    B = 0 if est.compat is not None else int(est.bootstrap)
    n = p.n_records if p.attribute_records is None else len(p.attribute_records)
    per_record = 8.0 * (len(p.synthesized) + 5 + B) + 2048 + 1500 + 16.0 * B
    return n * per_record + 8.0 * (p.m + 2) * (2 + B)


def check_steps(plans: list[StepMemory], budget: AuditBudget, skip_arg: Any) -> None:
    """``MEMORY_TOO_LARGE`` before any step runs if a step's need at its smallest chunk does not
    fit beside what the process holds now, naming the step, the need and the budget
    (``skip_arg(step)``: how to skip the step, as the caller names it)."""
    if budget.limit is None:
        return
    held = resident_memory()
    for s in plans:
        if s.need is not None and held + s.need > budget.limit:
            raise ValidationError(
                f"the {s.step.replace('_', ' ')} step would need at least "
                f"{format_bytes(s.need, up=True)} of memory beside the "
                f"{format_bytes(held)} the process holds, but the audit's budget is "
                f"{format_bytes(budget.limit)} ({budget.derivation}); raise the budget to at "
                f"least {format_bytes(held + s.need, up=True)}, reduce the records or skip "
                f"the step ({skip_arg(s.step)}). Nothing was computed.", code="MEMORY_TOO_LARGE")
