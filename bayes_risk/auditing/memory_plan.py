"""The audit's memory plan (issue 70): the budget (given, or a stated share of the machine's
memory) and what each step will hold within it, stated and checked before the first step runs.
See :doc:`/user_guide/memory`."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from bayes_risk._memory import (
    available_memory,
    current_limit,
    format_bytes,
    memory_limit,
    resident_memory,
)
from bayes_risk.auditing.outcome import StepCost, Work
from bayes_risk.exceptions import ValidationError, arg_name

__all__ = ["DEFAULT_SHARE", "AuditBudget", "StepMemory", "audit_budget", "step_memory",
           "check_steps", "least_budget", "total_time", "local_shares"]

#: the share of the memory available when an audit starts that its default budget adds to what
#: the process holds: the other half stays with the rest of the machine (other users' work, the
#: operating system's file cache), so that an audit too large for the machine is planned or
#: refused rather than slowing the machine down or being killed by it
DEFAULT_SHARE = 0.5

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


#: the least share of a local cluster's worker: a worker process held 0.40 GB before its first
#: task (the README's audit at 10^5 records on 2 workers, benchmarks page), rounded up
_WORKER_FLOOR = 500 * 10**6

#: the driver's share of a run on a local cluster the package started (:func:`local_shares`)
_SHARE: ContextVar[AuditBudget | None] = ContextVar("bayes_risk_local_share", default=None)


@contextlib.contextmanager
def local_shares(n_workers: int) -> Iterator[int | None]:
    """The run's budget (:func:`audit_budget`) split equally among this process (the driver)
    and the ``n_workers`` workers of the local cluster it starts: yields each worker's memory
    limit in bytes (``None``: the platform says nothing of its memory), and within the block
    the driver's share is its limit and the budget an audit states, with how it was split."""
    total = audit_budget()
    if total.limit is None:
        yield None
        return
    share = total.limit // (n_workers + 1)
    if share < _WORKER_FLOOR:
        raise ValidationError(
            f"the run's budget of {format_bytes(total.limit)} ({total.derivation}) split among "
            f"this process and {n_workers} local Dask workers leaves {format_bytes(share)} "
            f"each, below the {format_bytes(_WORKER_FLOOR)} a worker holds before its first "
            f"task; raise the budget to at least "
            f"{format_bytes(_WORKER_FLOOR * (n_workers + 1), up=True)} or start fewer "
            f"workers ({arg_name('n_workers')}).", code="MEMORY_TOO_LARGE")
    budget = AuditBudget(share, total.source, (
        f"the run's {format_bytes(total.limit)} ({total.derivation}) split equally among this "
        f"process and the {n_workers} local Dask worker{'s' * (n_workers != 1)}, "
        f"{format_bytes(share)} each"))
    token = _SHARE.set(budget)
    try:
        with memory_limit(share):
            yield share
    finally:
        _SHARE.reset(token)


def audit_budget() -> AuditBudget:
    """The audit's budget: the driver's share of a local cluster's run (:func:`local_shares`),
    else the limit given (``--memory``, :func:`~bayes_risk.memory_limit`), else what the process
    holds now plus :data:`DEFAULT_SHARE` of the memory available now."""
    shared = _SHARE.get()
    if shared is not None:
        return shared
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
    seconds: tuple[float, float] | None = None
    timing: str = ""
    #: the replicates a step draws at once (the posterior step's, sized from the budget)
    chunk: int | None = None

    def line(self) -> str:
        """``"identification: at least 24.1 MB; ..."`` for the plan printed before the work."""
        need = ("not estimated before the step" if self.need is None
                else f"at least {format_bytes(self.need, up=True)}")
        keeps = (f", then keeps {format_bytes(self.keeps, up=True)} for the steps after it"
                 if self.keeps else "")
        return f"{self.step.replace('_', ' ')}: {need}{keeps}; {self.chunking}" + (
            f" ({self.estimate})" if self.estimate else "") + "; " + self.time_text()

    def time_text(self) -> str:
        """``"expected 20–40 s of CPU time (...)"`` or ``"time not estimated: ..."``."""
        from bayes_risk.attribute.cost import duration_range

        if self.seconds is None:
            return f"time not estimated: {self.timing}" if self.timing else (
                "time not estimated")
        return (f"expected {duration_range(*self.seconds)} of CPU time ({self.timing})")


#: numba's compiler, loaded with the first compiled kernels the process runs: about 70 MB, once
#: for every step (measured on the README's audit of 5,000 records; each step's own kernels:
#: its measure's ``StepCost.kernel_bytes``)
_JIT_BYTES = 70e6
_MACHINE = (
    "2 cores of an AMD EPYC or Intel Xeon as measured; other machines scale with their speed")


def _costs() -> dict[str, StepCost]:
    """The registered measures' costs (``Measure.cost``), by their steps' names."""
    from bayes_risk.measures import measures

    return {m.name: m.cost for m in measures() if m.cost is not None}


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
    costs = _costs()
    out: dict[str, float] = {}
    jit = all(not _kernels_loaded(c.kernels) for c in costs.values() if c.kernels)
    for step in steps:
        cost = costs.get(step)
        if cost is None or not cost.kernels or _kernels_loaded(cost.kernels):
            continue
        out[step] = cost.kernel_bytes + (_JIT_BYTES if jit else 0.0)
        jit = False
    return out


def _records_by_datasets(ctx: Any) -> Work:
    """The work of a step whose measure counts none of its own: records x datasets."""
    n, m = ctx.plan.n_records, max(ctx.plan.m, 1)
    return Work(n * m, n * m, f"{n:,} x {m}")


def _step_time(ctx: Any, step: str) -> tuple[tuple[float, float] | None, str]:
    """The expected CPU time of ``step`` (lowest, highest) and how it was computed, or
    ``(None, why not)``: the step's work (``StepCost.work``) at the rate its measure declares,
    within the sizes the rate is trusted for."""
    cost = _costs().get(step)
    if cost is None or cost.rate is None:
        return None, "not measured on this machine class"
    work = _records_by_datasets(ctx) if cost.work is None else cost.work(ctx)
    if isinstance(work, str):
        return None, work
    n = ctx.plan.n_records
    if cost.sizes is not None and n > cost.sizes[1]:
        measured, trusted = cost.sizes
        return None, (f"{n:,} records, more than the {trusted:,} its rates are trusted for "
                      f"(measured up to {measured:,})")
    what, lo, hi = work.rate or cost.rate
    compile_ = (cost.compile_seconds
                if cost.compile_seconds and not _kernels_loaded(cost.kernels) else 0.0)
    return (lo * work.low, hi * work.high), (
        f"{what} {work.count} at " + (f"{lo * 1e3:.3g}–{hi * 1e3:.3g} ms" if hi >= 1e-3 else
                                      f"{lo * 1e6:.3g}–{hi * 1e6:.3g} µs") + " each"
        + (f"; compiling its kernels the first time, up to {compile_:.0f} s more, is not "
           "included" if compile_ else "") + f", {_MACHINE}")


def step_memory(ctx: Any, steps: list[str], room: float | None = None) -> list[StepMemory]:
    """The memory plan of the ``steps`` that will run (in order), from the plan's sizes
    (``room``: what the budget leaves beside the process, which sizes a step's chunks;
    ``None``: no budget).

    Each step's need is the lower bound its measure declares (``StepCost.need``, from the sizes
    the step's own checks use), with what loading its compiled kernels adds when it runs them
    first in the process; it keeps for the steps after it its results' bytes a record
    (``StepCost.kept_per_record``), what its need says it keeps beyond them and its kernels
    (:func:`check_steps` adds it up, and checks the steps left again beside what the process
    holds before each starts, ``api._audit_steps``). A step whose measure declares no need is
    "not estimated before the step"."""
    costs = _costs()
    kernels = _kernel_bytes(steps)
    n = ctx.plan.n_records
    out: list[StepMemory] = []
    for step in steps:
        cost = costs.get(step, StepCost())
        seconds, timing = _step_time(ctx, step)
        loaded = kernels.get(step, 0.0)
        keeps = cost.kept_per_record * n + loaded
        if cost.need is None:
            out.append(StepMemory(step, None, "not chunked", keeps=keeps, seconds=seconds,
                                  timing=timing))
            continue
        left = None if room is None else room - sum(s.keeps for s in out)
        need = cost.need(ctx, left)
        out.append(StepMemory(step, need.least + loaded, need.chunking, need.estimate,
                              keeps=need.keeps + keeps, seconds=seconds, timing=timing,
                              chunk=need.chunk))
    return out


def total_time(plans: list[StepMemory]) -> str:
    """The steps' expected CPU time in all, naming the steps not estimated (``""``: none is)."""
    from bayes_risk.attribute.cost import duration_range

    timed = [s.seconds for s in plans if s.seconds is not None]
    left = [s.step.replace("_", " ") for s in plans if s.seconds is None]
    if not timed:
        return ""
    low, high = sum(t[0] for t in timed), sum(t[1] for t in timed)
    return (f"expected {duration_range(low, high)} of CPU time"
            + (f" for the steps estimated, and more for the {_and(left)} step"
               + ("s" if len(left) > 1 else "") + " (not estimated)" if left else "")
            + "; on a loaded machine the wall time is longer")


def _and(names: list[str]) -> str:
    """``"a"``, ``"a and b"``, ``"a, b and c"``."""
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


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
