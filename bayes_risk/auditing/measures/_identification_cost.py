"""What the identification step costs (:mod:`~bayes_risk.auditing.memory_plan`): its least
need in memory, its work, and its record ``COST``; the size of one matching index, which the
posterior identification step plans with too."""

from __future__ import annotations

from bayes_risk._memory import MIN_WORKING_BYTES, format_bytes
from bayes_risk.auditing.context import StepContext
from bayes_risk.auditing.outcome import README_SIZES, Need, StepCost, Work
from bayes_risk.auditing.plan import AuditPlan


def planned_index_bytes(plan: AuditPlan) -> float:
    """Bytes of one dataset's or replicate's matching index on the plan's radius and searched
    columns (``identification.engine.index_bytes``, before any ``Prepared`` exists)."""
    n, q = plan.n_records, len(set(plan.radius) | set(plan.search_columns))
    return 8.0 * n * (1 + q + max(q, 1) + q * q + q)


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


def identification_need(ctx: StepContext, left: float | None) -> Need:
    """The step's least need: its per-dataset tables (64 bytes a target and dataset) with the
    datasets' matching indexes, or the pooled run's smallest chunk of targets beside one
    index, the larger."""
    from bayes_risk.identification.engine import CELL_BYTES

    n, m = ctx.plan.n_records, ctx.plan.m
    index = planned_index_bytes(ctx.plan)
    # the pooled run's per-target accumulators: 4 doubles, 3 int64, 2 flags
    per_target = 8.0 * 7 + 2
    need = max(CELL_BYTES * n * m + m * index,  # per dataset: not chunked
               index + MIN_WORKING_BYTES + per_target * n)  # pooled, indexes in turn
    return Need(need, (
        f"the per-dataset tables of {n:,} targets x {m} datasets at once; pooled: "
        "chunks of targets sized from what is left, the datasets' matching indexes "
        "built one at a time when they do not fit together"
        + _pattern_note(n, m) + "; each radius of the search as one such run"))


def identification_work(ctx: StepContext) -> Work:
    """The step's work: records x datasets x the radii it matches at, the search's grid and
    from none (the grid is exact) to every refinement point between them allowed, each a grid
    point's work."""
    p = ctx.plan
    n, m = p.n_records, max(p.m, 1)
    grid = len(p.sweep) ** len(p.search_columns) if p.search_columns and p.sweep else 1
    more = p.given.radius_refine if p.search_columns and p.sweep else 0
    return Work(n * m * grid, n * m * (grid + more),
                f"{n:,} x {m} x {grid}" + (f"–{grid + more}" if more else ""))


#: the step's costs (:mod:`bayes_risk.auditing.memory_plan`). Its rate in CPU seconds a unit,
#: measured again after the pooled search's faster counts (Intel Xeon, load 17–25: 4.7 µs a
#: unit at 5,000 records, 6.7–7.3 at 20,000, 7.7 at 50,000 and 8.6 at 100,000; the earlier
#: 5.8–10.5 overstated the step; the sizes: ``README_SIZES``). What its results keep beside its
#: kernels, measured on the README's audit (``make_ce_like(n, random_seed=1)``, CART release of
#: 3 columns, m = 5) at 5,000 and 20,000 records, the larger of the two sizes' rates, rounded
#: up: its results without pooled match probabilities and what its radius search leaves held,
#: 1.8 kB a record at 5,000, 3.3 kB at 10,000 and 3.6 kB at 20,000, where 2 kB was planned from
#: 5,000 alone. Its 10 kernels' first run loads 75 MB (the README's audit of 5,000 records);
#: compiling them (numba caches them on disk, so only the first audit after an installation
#: compiles them) took 23.1 s at 5,000 records then, 9.5 s once cached
COST = StepCost(rate=("records x datasets x grid points", 4.7e-6, 8.7e-6), sizes=README_SIZES,
                work=identification_work, need=identification_need, kept_per_record=4_000.0,
                kernels=("bayes_risk.identification._kernels",
                         "bayes_risk.identification._pair_kernels"),
                kernel_bytes=75e6, compile_seconds=14.0)
