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
    MIN_WORKING_BYTES,
    available_memory,
    current_limit,
    format_bytes,
    memory_limit,
    resident_memory,
)
from bayes_risk.exceptions import ValidationError, arg_name

__all__ = ["DEFAULT_SHARE", "AuditBudget", "StepMemory", "audit_budget", "step_memory",
           "check_steps", "least_budget", "total_time", "replicate_chunk", "local_shares"]

#: the share of the memory available when an audit starts that its default budget adds to what
#: the process holds: the other half stays with the rest of the machine (other users' work, the
#: operating system's file cache), so that an audit too large for the machine is planned or
#: refused rather than slowing the machine down or being killed by it
DEFAULT_SHARE = 0.5

#: the posterior step's unit and its chunk: a batch (the release's m replicates) is what
#: the jackknife groups and the stopping rule counts, so it is fixed; the replicates drawn and
#: matched at once are sized from the budget (:func:`replicate_chunk`), which moves no number
_BATCH_NOTE = ("batches of {b} replicates (the jackknife's groups and the stopping rule count "
               "whole batches, whatever the budget), drawn and matched {k} at a time, every "
               "target at once ({k} from the budget: half of what is left beside the batch's "
               "{fixed}, a replicate about {per}; the same numbers whatever the chunk)")


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
    #: the posterior step's replicates drawn and matched at once (:func:`replicate_chunk`)
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


#: what a step's results hold after it, in bytes a record of the original: measured on the
#: README's audit (``make_ce_like(n, random_seed=1)``, CART release of 3 columns, m = 5) at 5,000
#: and 20,000 records, each the larger of the two sizes' rates, rounded up (identification,
#: beside its kernels: its results without pooled match probabilities and what its radius
#: search leaves held, 1.8 kB a record at 5,000, 3.3 kB at 10,000 and 3.6 kB at 20,000, where
#: 2 kB was planned from 5,000 alone; attribute risk's are :func:`_attribute_kept`). The steps
#: are checked again beside what the process holds before each starts (``api._audit_steps``)
_KEPT_PER_RECORD = {"identification": 4_000.0, "posterior_identification": 1_200.0,
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


#: CPU seconds (user + system, every thread) per unit of each step's work measure, the lowest
#: and highest over the README's audit (``make_ce_like(n, random_seed=1)``, CART release of
#: Tenure, Expenditure and Income, m = 5, 2 known numeric columns searched over 81 grid
#: points) at 5,000, 20,000, 50,000 and 100,000 records on 2 shared cores (2026): the
#: identification rates measured again after the pooled search's faster counts (Intel Xeon,
#: load 17–25: 4.7 µs a unit at 5,000 records, 6.7–7.3 at 20,000, 7.7 at 50,000 and 8.6 at
#: 100,000; the earlier 5.8–10.5 overstated the step), the others on an AMD EPYC; the
#: posterior replicates' rate is per replicate drawn (between ``min_replicates`` and
#: ``max_replicates``: the stopping rule decides), the attribute rate holds for CART's plug-in
#: likelihood
_RATES: dict[str, tuple[str, float, float]] = {
    "utility": ("records x datasets", 8.0e-6, 24.0e-6),
    "identification": ("records x datasets x grid points", 4.7e-6, 8.7e-6),
    "posterior_identification": ("records x replicates", 2.9e-6, 5.8e-6),
    "attribute": ("records x columns guessed", 3.4e-4, 5.1e-4),
    "disclosure": ("records x datasets", 5.4e-6, 12.0e-6),
    # anonymeter's attacks, with a holdout of half the original's size: 500 attacked records'
    # distances to every released record, for each attack (2,000 and 4,000 records, m = 2
    # and 5: 1.1–1.4 ms; 10,000 records, m = 2: 2.1 ms, so the rate grows with n)
    "attacks": ("records x datasets", 1.1e-3, 2.1e-3),
    # the business-data measures (CE-like tables of 1,000, 3,000 and 5,000 records, m = 5, a
    # CART release of two numeric columns): the closest match's distances grow with the square
    # of the records (1.5–1.8e-8 s each), the relative difference sorts each dataset's columns
    "relative_difference": ("records x datasets x columns", 1.4e-7, 5.0e-7),
    "closest_match": ("records² x datasets x keys", 1.4e-8, 2.0e-8),
}
#: CART's plug-in likelihood with smoothed columns: each smoothed value's kernel density is a
#: Monte Carlo sum over every candidate and dataset (CE-like tables, smoothed CART releases:
#: 400 records, m = 2 and 5, 2–3 columns guessed, 2 smoothed: 0.83–1.05 ms a unit; 1,000
#: records, m = 5, the README's release smoothed: 0.89 ms; 2,000 records, m = 3: 0.98 ms;
#: benchmarks/README.md, attribute.SmoothedCARTPlugin)
_SMOOTHED_RATE = ("records x columns guessed x smoothed columns x datasets", 0.75e-3, 1.3e-3)
#: the largest original each step's rates were measured at and the largest they are trusted
#: for: twice it (identification grows faster than its work measure there: 6.7–7.3 µs a unit
#: at 20,000 records, 8.6 µs at 100,000), the attacks' only up to it (their rate grows with n)
_TIMED = {"attacks": (10_000, 10_000)}
_TIMED_DEFAULT = (100_000, 200_000)
#: compiling a step's kernels while they have not run in the process, named beside the expected
#: time and left out of it, as every estimate leaves compiling out (numba caches them on disk, so
#: only the first audit after an installation compiles them: 23.1 s of identification at 5,000
#: records then, 9.5 s once cached)
_COMPILE_SECONDS = {"identification": 14.0}
_MACHINE = (
    "2 cores of an AMD EPYC or Intel Xeon as measured; other machines scale with their speed")


def _step_time(ctx: Any, step: str) -> tuple[tuple[float, float] | None, str]:
    """The expected CPU time of ``step`` (lowest, highest) and how it was computed, or
    ``(None, why not)``: the step's work measure times the rates measured (:data:`_RATES`),
    the attribute step's refits from :func:`bayes_risk.attribute.cost.refit_cost` (the
    estimator the step itself states before its refits)."""
    from bayes_risk.auditing.measures.posterior_identification import AUDIT_REPLICATES

    p = ctx.plan
    n, m = p.n_records, max(p.m, 1)
    if step == "attribute" and p.attribute_source == "model":
        return None, _refit_time(ctx)
    if step not in _RATES:
        return None, "not measured on this machine class"
    if step == "attribute" and p.attribute_source != "cart plug-in":
        return None, f"measured for CART's plug-in likelihood only, not {p.attribute_source}"
    measured, trusted = _TIMED.get(step, _TIMED_DEFAULT)
    if n > trusted:
        return None, (f"{n:,} records, more than the {trusted:,} its rates are trusted for "
                      f"(measured up to {measured:,})")
    what, lo, hi = _RATES[step]
    if step == "identification":
        grid = len(p.sweep) ** len(p.search_columns) if p.search_columns and p.sweep else 1
        # the refinement between the grid's points: none (the grid is exact) to every point
        # allowed, each a grid point's work
        more = p.given.radius_refine if p.search_columns and p.sweep else 0
        low, high = n * m * grid, n * m * (grid + more)
        count = f"{n:,} x {m} x {grid}" + (f"–{grid + more}" if more else "")
    elif step == "posterior_identification":
        r0, r1 = int(AUDIT_REPLICATES["min_replicates"]), int(AUDIT_REPLICATES["max_replicates"])
        low, high, count = n * r0, n * r1, f"{n:,} x {r0}–{r1}"
    elif step == "attribute":
        k, g, sm = _attribute_sizes(p)[0], max(len(p.synthesized), 1), len(p.smoothed_columns)
        low = high = k * g * (sm * m if sm else 1)
        count = f"{k:,} x {g}" + (f" x {sm} x {m}" if sm else "")
        if sm:
            what, lo, hi = _SMOOTHED_RATE
    elif step in ("relative_difference", "closest_match"):
        cols = max(len(p.numeric_synthesized), 1)
        rows = n * n if step == "closest_match" else n
        low = high = rows * m * cols
        count = f"{n:,}{'²' if step == 'closest_match' else ''} x {m} x {cols}"
    else:
        low = high = n * m
        count = f"{n:,} x {m}"
    compile_ = _COMPILE_SECONDS.get(step, 0.0)
    if compile_ and _kernels_loaded(_KERNEL_BYTES[step][1]):
        compile_ = 0.0
    return (lo * low, hi * high), (
        f"{what} {count} at " + (f"{lo * 1e3:.3g}–{hi * 1e3:.3g} ms" if hi >= 1e-3 else
                                 f"{lo * 1e6:.3g}–{hi * 1e6:.3g} µs") + " each"
        + (f"; compiling its kernels the first time, up to {compile_:.0f} s more, is not "
           "included" if compile_ else "") + f", {_MACHINE}")


def _refit_time(ctx: Any) -> str:
    """What the attribute step with a fitted model will say of its time: its refits' estimate
    (:func:`~bayes_risk.attribute.cost.refit_cost`, refined by a pilot refit when long, as the
    step starts) when the estimator refits; the records' evaluation, whose cost depends on the
    model's draws, is not estimated."""
    import numpy as np

    from bayes_risk.attribute.cost import distinct_records, refit_cost
    from bayes_risk.contract import auto_estimator
    from bayes_risk.exceptions import NotSupportedError

    model = ctx.model
    est = ctx.plan.given.attribute_estimator
    rest = "the records' evaluation depends on the model's draws and is timed as it runs"
    if model is None or isinstance(model, (str, bytes)) or hasattr(model, "__fspath__"):
        return f"the model is loaded when the step starts; {rest}"
    try:
        kind = est.kind if est.kind != "auto" else auto_estimator(model, augmented_given=False)
    except (AttributeError, TypeError, ValueError, NotSupportedError):
        return rest  # no refitting estimator (a plug-in model): the step decides its path
    if kind != "stabilised" or est.augmented is not None:
        return rest
    # each refit appends a dataset's synthesized records, as the step's own statement counts
    sel = getattr(model, "synthesized_records_", None)
    n_syn = int(np.count_nonzero(sel)) if sel is not None else ctx.plan.n_records
    first = next(iter(ctx.synthetic), None)
    distinct = None if first is None else distinct_records(model, ctx.original, first)
    cost = refit_cost(model, n_syn, ctx.plan.m, refit_draws=est.refit_draws, distinct=distinct)
    return f"its refits: {cost.line()}; {rest}"


def _index_bytes(n: int, q: int) -> float:
    """Bytes of one replicate's matching index of ``n`` records on ``q`` radius columns
    (``identification.engine.index_bytes``, before any ``Prepared`` exists)."""
    return 8.0 * n * (1 + q + max(q, 1) + q * q + q)


def replicate_chunk(left: float | None, fixed: float, per: float, batch: int) -> int:
    """Replicates of a batch the posterior step draws and matches at once: as many as half of
    what is ``left`` beside the batch's ``fixed`` need holds at ``per`` bytes a replicate (the
    other half for the pair sums the batch gathers, which depend on the matches), from 1 to
    ``batch`` (the whole batch when ``left`` is ``None``: no budget). The chunk changes the
    memory, not the numbers (``PosteriorReplicates.chunk_size``)."""
    if left is None:
        return batch
    return int(min(batch, max(1, (left - fixed) // (2 * max(per, 1.0)))))


def step_memory(ctx: Any, steps: list[str], room: float | None = None) -> list[StepMemory]:
    """The memory plan of the ``steps`` that will run (in order), from the plan's sizes
    (``room``: what the budget leaves beside the process, which sizes the posterior step's
    chunk of replicates; ``None``: no budget).

    The needs are lower bounds from the sizes the steps' own checks use: identification's
    per-dataset tables (64 bytes a target and dataset) and one replicate's matching index
    beside the smallest chunk of targets; a posterior batch's per-replicate counts and flags
    (9 bytes a target and replicate), one replicate and every replicate's file measures; the
    attribute step's outputs with one candidate a record (:func:`_attribute_need`); pMSE's
    stacked table; the disclosure measures' key codes and counts. A step that runs compiled
    kernels for the first time in the process also needs what loading them adds, and every
    step says what it keeps for the steps after it (:func:`check_steps` adds it up)."""
    from bayes_risk.auditing.measures.posterior_identification import (
        AUDIT_REPLICATES,
        audit_batch,
    )
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
            b = audit_batch(m)
            cap = int(AUDIT_REPLICATES["max_replicates"])
            # the batch's per-replicate counts and flags, one matching index, the per-target
            # sums and every replicate's file measures; each replicate drawn as large as a
            # released dataset at most
            fixed = 9.0 * n * b + index + 16.0 * n + 8.0 * cap * (len(MEASURES) + 2)
            left = None if room is None else room - sum(s.keeps for s in out)
            k = replicate_chunk(left, fixed, table, b)
            note = _BATCH_NOTE.format(b=b, k=k, fixed=format_bytes(fixed, up=True),
                                      per=format_bytes(table, up=True))
            out.append(StepMemory(step, fixed + table, note + ", up to "
                                  f"{cap} replicates; the groups' pair sums wait in TMPDIR",
                                  keeps=kept(step), chunk=k))
        elif step == "attribute":
            outputs = _attribute_need(p)
            out.append(StepMemory(step, outputs + kernels.get(step, 0.0), (
                "records in chunks sized from what is left beside the outputs every record "
                "keeps, which the step checks again from its candidate sets before its first "
                "record"), "it states its records a chunk and, for refits, their expected time "
                "when it starts", keeps=_attribute_kept(p) + kernels.get(step, 0.0)))
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
        elif step == "attacks":
            out.append(StepMemory(step, _attacks_need(ctx), "the attacked records' distances "
                                  "to a dataset's records in blocks of "
                                  f"{_distance_block():,} cells"))
        elif step == "relative_difference":
            # each synthesized numeric column of the original and every dataset as doubles
            cols = max(1, len(p.numeric_synthesized))
            out.append(StepMemory(step, 8.0 * n * (m + 1) * cols, "the synthesized numeric "
                                  "columns of the original and every dataset, not chunked"))
        elif step == "closest_match":
            out.append(StepMemory(step, _closest_need(ctx), "records in chunks of "
                                  f"{_closest_block():,} differences (record x released row "
                                  "x key)"))
        else:
            out.append(StepMemory(step, None, "not chunked"))
    import dataclasses

    return [dataclasses.replace(sm, seconds=t, timing=why)
            for sm in out for t, why in [_step_time(ctx, sm.step)]]


def _closest_block() -> int:
    """Differences of the closest match's chunks (``attribute.business._CHUNK_VALUES``)."""
    from bayes_risk.attribute.business import _CHUNK_VALUES

    return int(_CHUNK_VALUES)


def _closest_need(ctx: Any) -> float:
    """The closest match's least need: the numeric keys of the original and every dataset as
    doubles, one chunk's differences and its two ``[chunk, n]`` distance tables."""
    p = ctx.plan
    keys = max(1, len(ctx.schema.numeric))
    return 8.0 * (p.n_records * keys * (p.m + 1) + 3 * _closest_block())


def _distance_block() -> int:
    """Cells of the attacks' distance blocks (``attacks.linkability.nearest_rows``)."""
    from bayes_risk.attacks.linkability import _BLOCK_CELLS

    return int(_BLOCK_CELLS)


def _attacks_need(ctx: Any) -> float:
    """The least the attacks step holds: every table coded as doubles (the original, the
    holdout and each dataset, ``attacks._inputs.code_table``), the singling-out predicates
    (:func:`~bayes_risk.attacks.singling_out.predicate_bytes`, the audit's settings), and a
    distance block with one temporary of its size and a dataset's row order drawn for a tied
    target (``nearest_rows``)."""
    from bayes_risk.attacks.singling_out import MODES, predicate_bytes
    from bayes_risk.auditing.plan import ATTACK_OPTIONS

    p = len(ctx.schema)
    rows = [len(d) for d in ctx.synthetic]
    cells = p * (ctx.plan.n_records + len(ctx.holdout) + sum(rows))
    n_att = int(ATTACK_OPTIONS["n_attacks"])
    k = min(int(ATTACK_OPTIONS["n_cols"]), p)
    preds = predicate_bytes(n_att, k, MODES, len(rows), p, max(rows, default=0))
    return 8.0 * cells + preds + 2 * 8.0 * _distance_block() + 8.0 * max(rows, default=0)


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


def _attribute_sizes(p: Any) -> tuple[int, int]:
    """The attribute step's records and bootstrap replicates: none with a ``compat`` estimator,
    and none with the plug-in the step rebuilds from the release's manifest (a plug-in
    likelihood has no posterior draws to bootstrap, ``attribute.prepare``)."""
    est = p.given.attribute_estimator
    plugin = p.attribute_source in ("cart plug-in", "rf plug-in")
    B = 0 if est.compat is not None or plugin else int(est.bootstrap)
    return (p.n_records if p.attribute_records is None else len(p.attribute_records)), B


def _attribute_need(p: Any) -> float:
    """The least the attribute step holds: what ``attribute.evaluate.chunk_records`` checks
    before its first record, with one candidate a record (the step counts its candidate sets)
    and one record a chunk: a record's outputs (8 bytes a column guessed, 5 doubles and the
    ``B`` bootstrap replicates, and 2 kB of Python objects), its share of the result's tables
    (1.5 kB) and of the summary's bootstrap tables (16 ``B`` bytes), beside one record's
    working arrays."""
    n, B = _attribute_sizes(p)
    per_record = 8.0 * (len(p.synthesized) + 5 + B) + 2048 + 1500 + 16.0 * B
    return n * per_record + 8.0 * (p.m + 2) * (2 + B)


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


def _attribute_kept(p: Any) -> float:
    """What the attribute step leaves held after it: 4 kB a record, measured on the README's
    audit (CART's plug-in, no bootstrap: 3.6 kB a record at 20,000 records and 3.9 kB at 5,000,
    of which the result's own tables are 0.6 kB), and a record's bootstrap tables (16 bytes
    each of the ``B`` replicates) when the step bootstraps the draws."""
    n, B = _attribute_sizes(p)
    return n * (16.0 * B + 4000.0)


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
