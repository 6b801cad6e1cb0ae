"""Stage 2 of identification risk: the matching engine over partitions of the targets (in
process or on Dask; concatenated, they equal one run).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np

from bayes_risk.executors import Executor, InProcessExecutor
from bayes_risk.identification import engine as _engine
from bayes_risk.identification.matching import MatchRule
from bayes_risk.identification.patterns import counts_patterns, run_counted
from bayes_risk.identification.plan import IdentificationPlan
from bayes_risk.identification.pooled import run_pooled
from bayes_risk.identification.pooled_probabilities import PooledOutput, csr, row_pointers
from bayes_risk.identification.problem import (
    Prepared,
    TargetPartition,
    drop_groups,
    target_problem,
)

__all__ = ["EngineOutput", "record_pool", "partitions", "evaluate",
           "concat_outputs", "run_engine", "run_engines", "DASK_PARTITION_SIZE",
           "default_partition_size"]

EngineOutput = _engine.PerDatasetOutput | PooledOutput
#: the most targets a task holds on a cluster when the executor does not say (a task's
#: per-dataset tables and pooled chunks are sized by it)
DASK_PARTITION_SIZE = 100_000


def default_partition_size(n_targets: int, executor: Executor) -> int:
    """Targets a task when the executor does not say: the targets spread evenly over the
    cluster's worker threads (``executor.slots()``, 1 when it has none), so that every worker
    matches a share of each run, at most :data:`DASK_PARTITION_SIZE`."""
    slots = getattr(executor, "slots", None)
    width = max(1, int(slots())) if callable(slots) else 1
    return max(1, min(DASK_PARTITION_SIZE, -(-int(n_targets) // width)))


def record_pool(plan: IdentificationPlan, *, shipped: bool) -> Prepared:
    """The shared object of the evaluate stage: the plan's ``Prepared`` (shipped: without the
    targets and with an empty cache)."""
    prep = plan.prep
    if not shipped:
        return prep
    return dataclasses.replace(
        prep, tgt_exact=prep.tgt_exact[:0], tgt_radius=prep.tgt_radius[:0],
        in_sample=prep.in_sample[:0], rec=prep.rec[:0], tgt_drop=None, _cache={},
    )


def partitions(plan: IdentificationPlan, rule: MatchRule, size: int | None, *,
               progressbar: bool = False, keep_prob: bool = True
               ) -> tuple[list[TargetPartition], np.ndarray | None]:
    """The targets in consecutive partitions of ``size`` (``None``: one partition), grouped by
    the known columns they miss if any and, when there is more than one partition, ordered by
    their exact-matched values; the second value is then the targets' order (``None``: as
    given). Each target's figures do not depend on its partition: the order only keeps the
    targets of one key group and nearby radius values together, so that a partition's counts
    read its own stretch of its own groups' records
    (:func:`._pattern_kernels._pattern_counts`) rather than every partition all of them."""
    prep, st = plan.prep, plan.settings
    N = prep.n_targets
    size = max(N, 1) if size is None else size
    common = dict(rule=rule, aggregation=st.aggregation, strategy=st.strategy,
                  fallback=st.fallback, progressbar=progressbar, keep_prob=keep_prob)
    ordered = N > size and prep.tgt_exact.shape[1] + prep.tgt_radius.shape[1] > 0
    if ordered or prep.tgt_drop is not None:
        # the order depends on the targets and the rule's columns, not its radii: sorted once
        # for every grid point of a radius search
        groups = prep.cached(("partition_order", ordered, rule.exact_cols, rule.radius_cols),
                             lambda: _target_groups(prep, rule, ordered))
    else:  # every target in one group, sliced: no array of their rows (7.6 MiB at 10^6)
        groups = [(range(N), ())]
    inv_f = plan.counts.inv_f
    parts = []
    for rows, drop in groups:
        for a in range(0, max(len(rows), 1), size):
            # the targets as given: slices (views, no copy)
            idx = rows[a:a + size] if ordered or prep.tgt_drop is not None else slice(a, a + size)
            parts.append(TargetPartition(
                tgt_exact=prep.tgt_exact[idx], tgt_radius=prep.tgt_radius[idx],
                in_sample=prep.in_sample[idx], rec=prep.rec[idx],
                inv_f=None if inv_f is None else inv_f[idx], drop=drop, **common,
            ))
    if not ordered and prep.tgt_drop is None:
        return parts, None
    return parts, np.concatenate([r for r, _ in groups])


def _target_groups(prep: Prepared, rule: MatchRule, ordered: bool
                   ) -> list[tuple[np.ndarray, tuple[str, ...]]]:
    """:func:`drop_groups`, each group's targets ordered by their values when ``ordered``."""
    groups = drop_groups(prep, rule)
    if not ordered:
        return groups
    # lexsort's last key is the first: the unsynthesized exact columns lead, then the radius
    # columns (unsynthesized first), so that a partition's windows cover a stretch of its key
    # groups' records
    return [(rows[np.lexsort(np.concatenate([prep.tgt_radius[rows].T[::-1],
                                             prep.tgt_exact[rows].T[::-1]]))], drop)
            for rows, drop in groups]


def evaluate(pool: Prepared, part: TargetPartition) -> EngineOutput:
    """Engine output of one partition of the targets (runs in process or on a worker)."""
    prep, rule = target_problem(pool, part.rule, part.drop, part.tgt_exact, part.tgt_radius,
                                part.in_sample, part.rec)
    if part.aggregation == "per_dataset":
        return _engine.run_per_dataset(prep, rule, part)
    if counts_patterns(prep, rule, part):  # the file measures by match pattern, no pairs
        out = run_counted(prep, rule, part)
        if out is not None:
            return out
    return run_pooled(prep, rule, part, fallback_cells=not part.drop)


def concat_outputs(outs: Sequence[EngineOutput], n: int) -> EngineOutput:
    """One engine output from the outputs of consecutive partitions of the targets (the pooled
    CSR matrix rebuilt as ``pooled.run_pooled`` builds it)."""
    if len(outs) == 1:
        return outs[0]
    cls = type(outs[0])
    fields = {f.name: np.concatenate([getattr(o, f.name) for o in outs], axis=0)
              for f in dataclasses.fields(cls) if f.name not in ("prob", "rows")}
    if cls is _engine.PerDatasetOutput:
        return cls(**fields)
    if outs[0].prob is None:
        return PooledOutput(prob=None, **fields)
    indptr = row_pointers(np.concatenate([np.diff(o.prob.indptr) for o in outs]))
    prob = csr(np.concatenate([o.prob.data for o in outs]),
               np.concatenate([o.prob.indices for o in outs]), indptr, (len(indptr) - 1, n))
    return PooledOutput(prob=prob, **fields)


def run_engine(plan: IdentificationPlan, rule: MatchRule, executor: Executor, pool: Any, *,
               progressbar: bool, keep_prob: bool = True) -> EngineOutput:
    """Per-target engine output of every target, partitions through ``executor`` (``pool``:
    :func:`record_pool`; ``keep_prob=False``: the measures only)."""
    return run_engines([(plan, rule)], executor, pool, progressbar=progressbar,
                       keep_prob=keep_prob)[0]


def run_engines(jobs: Sequence[tuple[IdentificationPlan, MatchRule]], executor: Executor,
                pool: Any, *, progressbar: bool = False, keep_prob: bool = True
                ) -> list[EngineOutput]:
    """:func:`run_engine` of each ``(plan, rule)`` of ``jobs`` (plans of one record pool: a
    radius search's grid points, with their settings), their partitions in one
    ``executor.map``: on a cluster, the workers go on to the next job's tasks rather than wait
    at each job's last one, and a round of a search is one round trip. The same outputs as one
    job at a time."""
    in_process = isinstance(executor, InProcessExecutor)
    size = executor.partition_size
    if size is None and not in_process:
        size = default_partition_size(jobs[0][0].prep.n_targets, executor)
    runs = [partitions(plan, rule, size, progressbar=progressbar and in_process,
                       keep_prob=keep_prob) for plan, rule in jobs]
    outs = executor.map(evaluate, pool, [p for parts, _ in runs for p in parts],
                        progressbar=progressbar, description="identification (partitions)")
    result, k = [], 0
    for (plan, _), (parts, order) in zip(jobs, runs, strict=True):
        out = concat_outputs(outs[k:k + len(parts)], plan.prep.n)
        k += len(parts)
        result.append(out if order is None else _rows(out, np.argsort(order)))
    return result


def _rows(out: EngineOutput, idx: np.ndarray) -> EngineOutput:
    """The engine output of the targets ``idx`` (in that order)."""
    cls = type(out)
    return cls(**{f.name: None if getattr(out, f.name) is None else getattr(out, f.name)[idx]
                  for f in dataclasses.fields(cls)})
