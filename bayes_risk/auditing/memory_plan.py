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
           "check_steps", "least_budget"]

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
    before the step), its ``chunking`` and ``estimate`` (what the step says when it starts),
    and ``keeps``: what it leaves held for the steps after it (its results, and the compiled
    kernels it loads the first time they run)."""

    step: str
    need: float | None
    chunking: str
    estimate: str = ""
    keeps: float = 0.0

    def line(self) -> str:
        """``"identification: at least 24.1 MB; ..."`` for the plan printed before the work."""
        need = ("not estimated before the step" if self.need is None
                else f"at least {format_bytes(self.need, up=True)}")
        keeps = (f", then keeps {format_bytes(self.keeps, up=True)} for the steps after it"
                 if self.keeps else "")
        return f"{self.step.replace('_', ' ')}: {need}{keeps}; {self.chunking}" + (
            f" ({self.estimate})" if self.estimate else "")


#: what a step's results hold after it, in bytes a record of the original: measured on the
#: README's audit (``make_ce_like(n, random_seed=1)``, CART release of 3 columns, m = 5) at 5,000
#: and 20,000 records, each the larger of the two sizes' rates, rounded up (identification: its
#: results without pooled match probabilities, 0.8 kB a record at 5,000, measured at that size
#: only; attribute risk's outputs are :func:`_attribute_need`). The steps are checked again
#: beside what the process holds before each starts (``api._audit_steps``)
_KEPT_PER_RECORD = {"identification": 2_000.0, "posterior_identification": 1_200.0,
                    "disclosure": 500.0, "utility": 100.0}

#: the compiled kernels' first run in the process: numba's compiler (about 70 MB, once for every
#: step) and each step's kernels as its first run loads them (measured on the README's audit of
#: 5,000 records: identification's 10 kernels 75 MB, attribute risk's 12 MB)
_JIT_BYTES = 70e6
_KERNEL_BYTES = {"identification": (75e6, ("bayes_risk.identification._kernels",
                                           "bayes_risk.identification._pair_kernels")),
                 "attribute": (12e6, ("bayes_risk.attribute._kernels",))}


def _kernels_loaded(modules: tuple[str, ...]) -> bool | None:
    """Whether any compiled kernel of ``modules`` has run in this process (``None``: numba is
    not imported yet, so none has)."""
    import importlib
    import sys

    if "numba" not in sys.modules:
        return None
    from numba.core.registry import CPUDispatcher

    return any(isinstance(v, CPUDispatcher) and v.overloads
               for name in modules for v in vars(importlib.import_module(name)).values())


def _kernel_bytes(steps: list[str]) -> dict[str, float]:
    """What loading its compiled kernels adds when each of ``steps`` (in order) first runs
    them: nothing for kernels already run in the process; numba's compiler with the first."""
    out: dict[str, float] = {}
    jit = all(not _kernels_loaded(mods) for _, mods in _KERNEL_BYTES.values())
    for step in steps:
        size, mods = _KERNEL_BYTES.get(step, (0.0, ()))
        if not mods or _kernels_loaded(mods):
            continue
        out[step] = size + (_JIT_BYTES if jit else 0.0)
        jit = False
    return out


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
    attribute step's outputs with one candidate a record (:func:`_attribute_need`); pMSE's
    stacked table; the disclosure measures' key codes and counts. A step that runs compiled
    kernels for the first time in the process also needs what loading them adds, and every
    step says what it keeps for the steps after it (:func:`check_steps` adds it up)."""
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
    kernels = _kernel_bytes(steps)

    def kept(step: str) -> float:
        return _KEPT_PER_RECORD.get(step, 0.0) * n + kernels.get(step, 0.0)

    out: list[StepMemory] = []
    for step in steps:
        if step == "identification":
            need = max(CELL_BYTES * n * m + m * index,  # per dataset: not chunked
                       index + MIN_WORKING_BYTES + per_target * n)  # pooled, indexes in turn
            out.append(StepMemory(step, need + kernels.get(step, 0.0), (
                f"the per-dataset tables of {n:,} targets x {m} datasets at once; pooled: "
                "chunks of targets sized from what is left, the datasets' matching indexes "
                "built one at a time when they do not fit together"
                + _pattern_note(n, m) + "; each radius of the search as one such run"),
                keeps=kept(step)))
        elif step == "posterior_identification":
            b = int(AUDIT_REPLICATES["batch_size"])
            cap = int(AUDIT_REPLICATES["max_replicates"])
            need = (9.0 * n * b + b * table + index + 16.0 * n
                    + 8.0 * cap * (len(MEASURES) + 2))
            out.append(StepMemory(step, need, _BATCH_NOTE.format(b=b) + ", up to "
                                  f"{cap} replicates; the groups' pair sums wait in TMPDIR",
                                  keeps=kept(step)))
        elif step == "attribute":
            outputs = _attribute_need(p)
            out.append(StepMemory(step, outputs + kernels.get(step, 0.0), (
                "records in chunks sized from what is left beside the outputs every record "
                "keeps, which the step checks again from its candidate sets before its first "
                "record"), "it states its records a chunk and, for refits, their expected time "
                "when it starts", keeps=outputs + kernels.get(step, 0.0)))
        elif step == "membership":
            out.append(StepMemory(step, MIN_WORKING_BYTES, "targets in chunks sized from "
                                  "what is left beside the slots' log-likelihoods"))
        elif step == "utility":
            # pMSE's propensity model stacks the original and one dataset
            out.append(StepMemory(step, 2.0 * table, "the original stacked with one dataset "
                                  "at a time (pMSE), not chunked", keeps=kept(step)))
        elif step == "disclosure":
            # each target's key codes and their counts in the original and every dataset
            out.append(StepMemory(step, 16.0 * n * (m + 1), "the keys' codes and counts of "
                                  "the original and every dataset, not chunked",
                                  keeps=kept(step)))
        else:
            out.append(StepMemory(step, None, "not chunked"))
    return out


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


def least_budget(plans: list[StepMemory], held: float) -> tuple[float, StepMemory | None]:
    """The least budget the steps fit in, and the step that sets it: each step's need beside
    ``held`` (what the process holds before the first step) and what the steps before it
    keep."""
    before, most, at = 0.0, float(held), None
    for s in plans:
        if s.need is not None and held + before + s.need > most:
            most, at = held + before + s.need, s
        before += s.keeps
    return most, at


def check_steps(plans: list[StepMemory], budget: AuditBudget, skip_arg: Any,
                done: str = "") -> None:
    """``MEMORY_TOO_LARGE`` before the first of ``plans`` runs if a step's need at its smallest
    chunk does not fit beside what the process holds now and what the steps before it keep,
    naming the step, the need and the budget (``skip_arg(step)``: how to skip the step, as the
    caller names it; ``done``: the steps that ran before, when the audit has started)."""
    if budget.limit is None:
        return
    held = resident_memory()
    before = 0.0
    for s in plans:
        if s.need is not None and held + before + s.need > budget.limit:
            kept = (f" and the {format_bytes(before, up=True)} the steps before it keep"
                    if before else "")
            raise ValidationError(
                f"the {s.step.replace('_', ' ')} step would need at least "
                f"{format_bytes(s.need, up=True)} of memory beside the "
                f"{format_bytes(held)} the process holds{kept}, but the audit's budget is "
                f"{format_bytes(budget.limit)} ({budget.derivation}); raise the budget to at "
                f"least {format_bytes(least_budget(plans, held)[0], up=True)}, reduce the "
                f"records or skip the step ({skip_arg(s.step)}). "
                + (f"It was checked again after the steps before it ({done}), beside what "
                   "they hold; no output was written." if done else "Nothing was computed."),
                code="MEMORY_TOO_LARGE")
        before += s.keeps
