"""Stage 2 of identification risk: the matching engine over partitions of the targets.

Every per-target quantity depends on the target and the record pool only, so the targets are
split into partitions that run independently — in process (one partition: the engine chunks
internally) or on a Dask cluster (:mod:`bayes_risk.executors`) — and their outputs are
concatenated in order; the result equals one run over all targets. The record pool (the encoded
known columns of the original and of every replicate) is the executor's shared object: a Dask
cluster receives it once per call (once for a whole radius sweep, through
``executors.shared_once``), and each worker keeps the replicate indexes it builds on it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from bayes_risk.exceptions import ValidationError
from bayes_risk.executors import Executor, InProcessExecutor
from bayes_risk.identification import engine as _engine
from bayes_risk.identification.matching import MatchRule
from bayes_risk.identification.plan import IdentificationPlan, Strategy

__all__ = ["TargetPartition", "EngineOutput", "record_pool", "partitions", "drop_groups",
           "target_problem", "evaluate", "concat_outputs", "run_engine", "DASK_PARTITION_SIZE"]

EngineOutput = _engine.PerDatasetOutput | _engine.PooledOutput
#: targets per task on a cluster when the executor does not say
DASK_PARTITION_SIZE = 100_000


@dataclass
class TargetPartition:
    """One partition of the targets and what the engine needs to evaluate it."""

    tgt_exact: np.ndarray
    tgt_radius: np.ndarray
    in_sample: np.ndarray
    rec: np.ndarray
    inv_f: np.ndarray | None
    rule: MatchRule
    aggregation: str
    strategy: Strategy
    fallback: str
    progressbar: bool = False
    #: known columns the partition's targets are not matched on (their missing values,
    #: ``missing_known="any"``); every target of a partition has the same ones
    drop: tuple[str, ...] = ()


def record_pool(plan: IdentificationPlan, *, shipped: bool) -> _engine.Prepared:
    """The shared object of the evaluate stage.

    In process (``shipped=False``) the plan's ``Prepared`` itself (its index cache is reused
    by every partition and every radius of a sweep). Shipped to a cluster: the same without
    the targets and with an empty cache (each worker fills its own).
    """
    prep = plan.prep
    if not shipped:
        return prep
    return dataclasses.replace(
        prep, tgt_exact=prep.tgt_exact[:0], tgt_radius=prep.tgt_radius[:0],
        in_sample=prep.in_sample[:0], rec=prep.rec[:0], tgt_drop=None, _cache={},
    )


def partitions(plan: IdentificationPlan, rule: MatchRule, size: int | None, *,
               progressbar: bool = False) -> tuple[list[TargetPartition], np.ndarray | None]:
    """The targets in consecutive partitions of ``size`` (``None``: one partition).

    Targets with missing known values (``Prepared.tgt_drop``) are grouped by the columns they
    miss, one group after the other; the second value is then the targets' order (``None``: the
    targets' own order).
    """
    prep, st = plan.prep, plan.settings
    N = prep.n_targets
    size = max(N, 1) if size is None else size
    common = dict(rule=rule, aggregation=st.aggregation, strategy=st.strategy,
                  fallback=st.fallback, progressbar=progressbar)
    if prep.tgt_drop is None:
        return [
            TargetPartition(
                tgt_exact=prep.tgt_exact[a:z], tgt_radius=prep.tgt_radius[a:z],
                in_sample=prep.in_sample[a:z], rec=prep.rec[a:z], inv_f=plan.counts.rows(a, z),
                **common,
            )
            for a in range(0, max(N, 1), size)
            for z in (min(N, a + size),)
        ], None
    if plan.counts.rows(0, N) is not None:  # refused in prepare; kept as a guard
        raise ValidationError("missing known values need membership='known'.")
    groups = drop_groups(prep, rule)
    parts = []
    for rows, drop in groups:
        for a in range(0, rows.size, size):
            idx = rows[a:a + size]
            parts.append(TargetPartition(
                tgt_exact=prep.tgt_exact[idx], tgt_radius=prep.tgt_radius[idx],
                in_sample=prep.in_sample[idx], rec=prep.rec[idx], inv_f=None, drop=drop,
                **common,
            ))
    return parts, np.concatenate([rows for rows, _ in groups])


def drop_groups(prep: _engine.Prepared, rule: MatchRule
                ) -> list[tuple[np.ndarray, tuple[str, ...]]]:
    """The targets grouped by the known columns they are not matched on (``Prepared.tgt_drop``,
    ``missing_known="any"``): ``[(rows, dropped columns)]``, groups in the order of their
    patterns, rows ascending; one group of every target when no column is dropped."""
    N = prep.n_targets
    if prep.tgt_drop is None:
        return [(np.arange(N, dtype=np.int64), ())]
    cols = rule.exact_cols + rule.radius_cols
    patterns, pid = np.unique(prep.tgt_drop, axis=0, return_inverse=True)
    order = np.argsort(pid.ravel(), kind="stable")
    bounds = np.searchsorted(pid.ravel()[order], np.arange(len(patterns) + 1))
    return [(order[bounds[p]:bounds[p + 1]],
             tuple(c for c, d in zip(cols, pattern, strict=True) if d))
            for p, pattern in enumerate(patterns)]


def target_problem(pool: _engine.Prepared, rule: MatchRule, drop: Sequence[str],
                   tgt_exact: np.ndarray, tgt_radius: np.ndarray, in_sample: np.ndarray,
                   rec: np.ndarray) -> tuple[_engine.Prepared, MatchRule]:
    """The record pool with the given targets, and the rule they are matched with: without the
    columns ``drop`` they miss (the pool restricted to the others, cached on the pool)."""
    if drop:  # matched on the known columns where the targets' values are not missing
        sub = _without(rule, drop)
        cols = list(rule.exact_cols)
        tgt_exact = tgt_exact[:, [cols.index(c) for c in sub.exact_cols]]
        cols = list(rule.radius_cols)
        tgt_radius = tgt_radius[:, [cols.index(c) for c in sub.radius_cols]]
        pool, rule = _restricted(pool, rule, sub), sub
    # the pool's cache (replicate indexes) is shared by every group of targets
    prep = dataclasses.replace(
        pool, tgt_exact=tgt_exact, tgt_radius=tgt_radius, in_sample=in_sample, rec=rec,
        tgt_drop=None, _cache=pool._cache,
    )
    return prep, rule


def _without(rule: MatchRule, drop: Sequence[str]) -> MatchRule:
    """``rule`` without the columns in ``drop``."""
    keep = lambda cols: tuple(c for c in cols if c not in drop)  # noqa: E731
    return dataclasses.replace(
        rule, exact_us=keep(rule.exact_us), exact_s=keep(rule.exact_s),
        radius_us=keep(rule.radius_us), radius_s=keep(rule.radius_s),
        r_min={c: v for c, v in rule.r_min.items() if c not in drop},
    )


def _restricted(pool: _engine.Prepared, rule: MatchRule, sub: MatchRule
                ) -> _engine.Prepared:
    """The record pool on the columns of ``sub`` (cached on the pool: every partition of a
    pattern reuses it)."""
    key = ("columns", sub.exact_us, sub.exact_s, sub.radius_us, sub.radius_s)
    arrays = pool._cache.get(key)
    if arrays is None:
        def pos(cols, keep):
            return [cols.index(c) for c in keep]

        e_us, e_s = pos(rule.exact_us, sub.exact_us), pos(rule.exact_s, sub.exact_s)
        r_us, r_s = pos(rule.radius_us, sub.radius_us), pos(rule.radius_s, sub.radius_s)
        arrays = dict(
            rec_exact_us=pool.rec_exact_us[:, e_us],
            rep_exact_s=[a[:, e_s] for a in pool.rep_exact_s],
            rec_radius_us=pool.rec_radius_us[r_us],
            rep_radius_s=[a[r_s] for a in pool.rep_radius_s],
        )
        pool._cache[key] = arrays
    return dataclasses.replace(pool, **arrays, _cache=pool._cache)


def evaluate(pool: _engine.Prepared, part: TargetPartition) -> EngineOutput:
    """Engine output of one partition of the targets (runs in process or on a worker)."""
    prep, rule = target_problem(pool, part.rule, part.drop, part.tgt_exact, part.tgt_radius,
                                part.in_sample, part.rec)
    if part.aggregation == "per_dataset":
        return _engine.run_per_dataset(prep, rule, inv_f=part.inv_f, strategy=part.strategy,
                                       fallback=part.fallback, progressbar=part.progressbar)
    return _engine.run_pooled(prep, rule, inv_f=part.inv_f, strategy=part.strategy,
                              fallback=part.fallback, progressbar=part.progressbar,
                              fallback_cells=False if part.drop else None)


def concat_outputs(outs: Sequence[EngineOutput], n: int) -> EngineOutput:
    """One engine output from the outputs of consecutive partitions of the targets.

    The pooled CSR matrix is rebuilt exactly as ``engine.run_pooled`` builds it.
    """
    if len(outs) == 1:
        return outs[0]
    if isinstance(outs[0], _engine.PerDatasetOutput):
        return _engine.PerDatasetOutput(**{
            f.name: np.concatenate([getattr(o, f.name) for o in outs], axis=0)
            for f in dataclasses.fields(_engine.PerDatasetOutput)
        })
    fields = {
        f.name: np.concatenate([getattr(o, f.name) for o in outs], axis=0)
        for f in dataclasses.fields(_engine.PooledOutput) if f.name != "prob"
    }
    import scipy.sparse as sp

    N = sum(o.prob.shape[0] for o in outs)
    indptr = np.zeros(N + 1, dtype=np.int64)
    np.cumsum(np.concatenate([np.diff(o.prob.indptr) for o in outs]), out=indptr[1:])
    if indptr[-1] < 2**31 - 1:
        indptr = indptr.astype(np.int32)
    prob = sp.csr_matrix(
        (np.concatenate([o.prob.data for o in outs]),
         np.concatenate([o.prob.indices for o in outs]), indptr),
        shape=(N, n),
    )
    return _engine.PooledOutput(prob=prob, **fields)


def run_engine(plan: IdentificationPlan, rule: MatchRule, executor: Executor, pool: Any, *,
               progressbar: bool) -> EngineOutput:
    """Per-target engine output of every target: partitions through ``executor``.

    ``pool`` is the shared object (:func:`record_pool`, possibly already shipped).
    """
    in_process = isinstance(executor, InProcessExecutor)
    size = executor.partition_size
    if size is None and not in_process:
        size = DASK_PARTITION_SIZE
    parts, order = partitions(plan, rule, size, progressbar=progressbar and in_process)
    outs = executor.map(evaluate, pool, parts, progressbar=progressbar,
                        description="identification (partitions)")
    out = concat_outputs(outs, plan.prep.n)
    return out if order is None else _rows(out, np.argsort(order))


def _rows(out: EngineOutput, idx: np.ndarray) -> EngineOutput:
    """The engine output of the targets ``idx`` (in that order)."""
    cls = type(out)
    return cls(**{f.name: getattr(out, f.name)[idx] for f in dataclasses.fields(cls)})
