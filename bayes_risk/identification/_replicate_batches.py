"""One batch of posterior replicates drawn, matched and reduced (:func:`run_batch`; the same in
process or on a Dask worker). See :doc:`/user_guide/posterior_replicates`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from bayes_risk.data.missing import mask_missing_codes
from bayes_risk.exceptions import SchemaError
from bayes_risk.identification import engine
from bayes_risk.identification.encoding import (
    check_missing_radius,
    radius_table,
    stack_columns,
)
from bayes_risk.identification.fallback import fallback_sets, merge_target_major
from bayes_risk.identification.index import target_bounds
from bayes_risk.identification.plan import IdentificationPlan, ReplicateSource
from bayes_risk.identification.population import per_replicate_counts
from bayes_risk.identification.prepare import prepare
from bayes_risk.identification.problem import Prepared, drop_groups, target_problem
from bayes_risk.identification.summary import file_measures, record_measures
from bayes_risk.identification.uncertainty import use_pair_kernels

__all__ = ["MatchContext", "Batch", "BatchSums", "BatchJob", "Recoder", "draw_chunk", "run_batch",
           "prefetched_batches"]


@dataclass
class MatchContext:
    """What matching a batch needs besides its plan: the strategy, the fallback sets and the
    targets' queries. Targets with the same query match the same records in every replicate,
    so a batch matches and sums each query once: the pairs it lists are ``(query, record)``,
    at most one per record and replicate when matching is exact, where listing them per target
    grows as the square of a shared key's size (an atom such as ``Income = 0``)."""

    strategy: Any
    contains: Callable | None  # (target rows, records) -> in the target's fallback set
    u_size: np.ndarray  # [Q] size of each query's fallback set
    query: np.ndarray  # [N] each target's query
    rep: np.ndarray  # [Q] the first target of each query (ascending)

    @classmethod
    def of(cls, plan: IdentificationPlan) -> MatchContext:
        prep = plan.prep
        query, rep = target_queries(prep, plan.counts.inv_f)
        contains, u_size = None, np.zeros(rep.size, dtype=np.int64)
        if plan.settings.fallback == "unsynthesized":
            fs = fallback_sets(prep, plan.rule)
            contains = fs.contains
            u_size = fs.sizes()[rep]
        return cls(strategy=plan.settings.strategy, contains=contains, u_size=u_size,
                   query=query, rep=rep)

    @property
    def n_queries(self) -> int:
        return int(self.rep.size)

    def query_contains(self, queries: np.ndarray, records: np.ndarray) -> np.ndarray:
        """Whether ``records[i]`` is in the fallback set of query ``queries[i]``."""
        return self.contains(self.rep[queries], records)


def target_queries(prep: Prepared, inv_f: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """Each target's query ``[N]`` and the first target of each query ``[Q]``, numbered in
    the order of their first targets (``arange(N)`` twice when no two targets share one).

    Two targets share a query when every known value is the same (exact codes, radius values
    bit for bit, the columns dropped for missing values) and so are their inverse population
    counts: their windows, fallback sets and match probabilities are then the same in every
    replicate (they differ only in which record is their own)."""
    N = prep.n_targets
    parts = [np.asarray(prep.tgt_exact, dtype=np.int64).reshape(N, -1),
             np.ascontiguousarray(prep.tgt_radius, dtype=np.float64).reshape(N, -1)
             .view(np.int64)]
    if prep.tgt_drop is not None:
        parts.append(np.asarray(prep.tgt_drop, dtype=np.int64).reshape(N, -1))
    if inv_f is not None:
        parts.append(np.ascontiguousarray(inv_f, dtype=np.float64).reshape(N, -1)
                     .view(np.int64))
    key = np.concatenate(parts, axis=1)
    if N == 0 or key.shape[1] == 0:
        return np.zeros(N, dtype=np.int64), np.arange(min(N, 1), dtype=np.int64)
    _, first, inverse = np.unique(key, axis=0, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    rank = np.empty(first.size, dtype=np.int64)
    rank[order] = np.arange(first.size)
    return rank[inverse.ravel()], first[order].astype(np.int64)


_PENDING = 4_000_000  # (target, record) contributions (counted per target) buffered before a sum
#: bytes a (query, record) pair of a replicate holds while it is listed and summed: its
#: query, record, key and value, and the sort of a flush
PAIR_BYTES = 48.0
#: bytes a pair adds to its batch's sums (key and value, twice while a flush merges them):
#: the pairs of different replicates are mostly different pairs, so the sums grow with each
SUM_BYTES = 32.0


class Batch:
    """One batch matched replicate by replicate, all queries at once: the pooled sums of the
    ``(query, record)`` pairs (:class:`MatchContext`) and per-target, per-replicate ``c``,
    ``T`` (``plans``: the plans of the batch's ``R`` replicates in consecutive chunks, drawn as
    they are matched; ``threaded``: sums in a thread while matching, in order). The flushes of
    the pair sums fall where the pending pairs, counted per target, exceed :data:`_PENDING`,
    never at a chunk's end, so the sums are the same bit for bit however the batch is chunked
    and whether targets share queries or not."""

    def __init__(self, ctx: MatchContext, plans: Iterable[IdentificationPlan], R: int,
                 threaded: bool = False) -> None:
        use_fb = ctx.contains is not None
        query, rep, Q = ctx.query, ctx.rep, ctx.n_queries
        mult = np.bincount(query, minlength=Q)  # targets a query
        keys, vals, pend, r = [], [], 0, 0
        acc = _Flushes(threaded)
        for plan in plans:
            prep, rule = plan.prep, plan.rule
            N, n = prep.n_targets, prep.n
            if r == 0:
                if use_fb:  # every target's own record in its fallback set
                    u_own = ctx.contains(np.arange(N), prep.rec)
                self.fb = np.zeros(Q)
                self.p_out = np.zeros(Q)
                self.p_un = np.zeros(Q)
                self.ever = np.zeros(Q, dtype=bool)
                self.c = np.zeros((N, R), dtype=np.int64)
                self.T = np.zeros((N, R), dtype=bool)
            inv_f_all = plan.counts.inv_f
            groups = [_Group.of(prep, rule, rows, drop, ctx)
                      for rows, drop in drop_groups(prep, rule)]
            for j in range(prep.R):  # replicate j of the chunk, r of the batch
                if len(groups) == 1:
                    cnt, lst, own = groups[0].match(j, R - r)
                else:  # targets matched on different columns: each group with its own rule
                    own = np.zeros(N, dtype=bool)
                    parts = []
                    for g in groups:
                        c, lg, own[g.rows] = g.match(j, R - r)
                        parts.append((g.qid, c, lg))
                    cnt, lst = merge_target_major(Q, parts)
                tr = np.repeat(np.arange(Q, dtype=np.int64), cnt)
                # counted per target, as each target's pairs were listed before queries
                pend += int(np.dot(cnt, mult))
                if use_fb:
                    emp = cnt == 0
                    cnt = np.where(emp, ctx.u_size, cnt)
                    own = np.where(emp[query], u_own, own)
                inv = None if inv_f_all is None else inv_f_all[rep, j]
                p, po = engine.record_prob(cnt, inv)
                if use_fb:
                    self.fb += np.where(emp, p, 0.0)
                keys.append(tr * n + lst)
                vals.append(p[tr])
                self.p_out += po
                if inv is None:
                    self.p_un += cnt == 0
                self.ever |= cnt > 0
                dec = engine.declare(p, po, ctx.strategy)
                self.c[:, r] = np.where(dec, cnt, 0)[query]
                self.T[:, r] = dec[query] & own & prep.in_sample
                r += 1
                if pend > _PENDING or r == R:
                    acc.flush(keys, vals)
                    keys, vals, pend = [], [], 0
            del groups, plan, prep  # the chunk's replicates go before the next is matched
        if r != R:
            raise ValueError(f"a batch of {R} replicates was given {r}")  # a caller's bug
        acc_k, acc_v = acc.result()
        self.keys, self.R = acc_k, R
        self.in_u = np.zeros(acc_k.size, dtype=bool)
        if use_fb and acc_k.size:
            rows = acc_k // n
            self.in_u = ctx.query_contains(rows, acc_k - rows * n)
            acc_v = acc_v + np.where(self.in_u, self.fb[rows], 0.0)
        self.vals = acc_v


@dataclass
class _Group:
    """Targets matched on the same known columns: their problem, and the windows and keys of
    the targets (for their own records) and of their queries (for the matches)."""

    rows: np.ndarray
    qid: np.ndarray  # the group's queries
    prep: Prepared
    rule: Any
    bounds: Any
    tkey: np.ndarray
    q_bounds: Any
    q_key: np.ndarray
    q_ord: Any

    @classmethod
    def of(cls, prep: Prepared, rule: Any, rows: np.ndarray, drop: tuple[str, ...],
           ctx: MatchContext) -> _Group:
        if prep.tgt_drop is not None:
            prep, rule = target_problem(prep, rule, drop, prep.tgt_exact[rows],
                                        prep.tgt_radius[rows], prep.in_sample[rows],
                                        prep.rec[rows])
        b = target_bounds(prep, rule)
        tkey = engine.target_keys(prep, rule)[0]
        # the group's targets that are the first of their query (a query is in one group)
        first = np.flatnonzero(ctx.rep[ctx.query[rows]] == rows)
        qb, qk = (b, tkey) if first.size == rows.size else (b.rows(first), tkey[first])
        qord = engine.target_orders(qk, qb, engine.use_compiled(prep)) if prep.R else None
        return cls(rows, ctx.query[rows[first]], prep, rule, b, tkey, qb, qk, qord)

    def match(self, r: int, left: int = 1) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Counts and matched records (query-major) of the group's queries and its targets'
        own-record flags in replicate ``r``, ``left`` replicates of its batch still to sum with
        it: ``MEMORY_TOO_LARGE`` before the pairs are listed when they and the batch's sums,
        at as many pairs a replicate, would not fit."""
        from bayes_risk._memory import check_memory, room

        idx = engine.replicate_index(self.prep, self.rule, r, keep=False)
        free = room()
        per_pair = PAIR_BYTES + SUM_BYTES * left
        # the slices scanned bound the pairs: counted exactly only when that bound is too many
        if free is not None and per_pair * float(
                idx.candidates(self.q_key, self.q_bounds).sum()) > free:
            pairs = float(idx.match(self.q_key, self.q_bounds, False, self.q_ord)[0].sum())
            check_memory(per_pair * pairs, "the number of records or the radius (match=)",
                         what=f"the (query, record) pairs of posterior replicates, "
                         f"{pairs:,.0f} in one, listed and summed over {left} of its batch")
        cnt, lst = idx.match(self.q_key, self.q_bounds, True, self.q_ord)
        return cnt, lst, idx.own(self.tkey, self.bounds, self.prep.rec)


class _Flushes:
    """The sorted pair sums of a batch, flush after flush, optionally one at a time in a
    thread."""

    def __init__(self, threaded: bool) -> None:
        self.k, self.v = np.zeros(0, dtype=np.int64), np.zeros(0)
        self.pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="bayes-risk-flush") \
            if threaded else None
        self.running = None

    def _merge(self, keys: list[np.ndarray], vals: list[np.ndarray]) -> None:
        self.k, self.v = _merge_pairs(self.k, self.v, np.concatenate(keys), np.concatenate(vals))

    def flush(self, keys: list[np.ndarray], vals: list[np.ndarray]) -> None:
        if self.pool is None:
            self._merge(keys, vals)
            return
        if self.running is not None:
            self.running.result()
        self.running = self.pool.submit(self._merge, keys, vals)

    def result(self) -> tuple[np.ndarray, np.ndarray]:
        if self.pool is not None:
            try:
                if self.running is not None:
                    self.running.result()
            finally:
                self.pool.shutdown()
        return self.k, self.v


def _merge_pairs(acc_k: np.ndarray, acc_v: np.ndarray, keys: np.ndarray, vals: np.ndarray
                 ) -> tuple[np.ndarray, np.ndarray]:
    """Add ``keys``/``vals`` to the sorted unique sums ``acc_k``/``acc_v`` (a linear merge;
    bitwise ``np.add.reduceat`` of ``[acc_v, pending values]``)."""
    if not keys.size:
        return acc_k, acc_v
    order = np.argsort(keys, kind="stable")
    if use_pair_kernels(acc_k.size + keys.size):
        from bayes_risk.identification import _pair_kernels

        return _pair_kernels.flush_sums(acc_k, acc_v, keys[order], vals[order])
    k = keys[order]
    starts = np.flatnonzero(np.concatenate([[True], k[1:] != k[:-1]]))
    k = k[starts]
    pos = np.searchsorted(acc_k, k)
    stored = pos < acc_k.size
    stored[stored] = acc_k[pos[stored]] == k[stored]
    v = np.insert(vals[order], starts[stored], 0.0)
    sums = np.add.reduceat(v, starts + np.cumsum(stored) - stored)
    del v, order
    # acc_v is this function's own output (or the empty start): updated in place
    acc_v[pos[stored]] += sums[stored]
    new = ~stored
    if not new.any():
        return acc_k, acc_v
    at = pos[new] + np.arange(int(new.sum()))  # places of the new pairs in the merged arrays
    out_k = np.empty(acc_k.size + at.size, dtype=acc_k.dtype)
    out_v = np.empty(out_k.size)
    old = np.ones(out_k.size, dtype=bool)
    old[at] = False
    out_k[at], out_v[at] = k[new], sums[new]
    out_k[old], out_v[old] = acc_k, acc_v
    return out_k, out_v


class Recoder:
    """Encodes a batch with the first batch's encoders (a new level: ``-1``, matches nothing);
    :meth:`make` gives ``None`` when preparing depends on the replicates."""

    def __init__(self, plan: IdentificationPlan) -> None:
        self.plan = plan

    @classmethod
    def make(cls, plan: IdentificationPlan) -> Recoder | None:
        if per_replicate_counts(plan.counts.source) or plan.rule.shape == "mahalanobis":
            return None
        e_us = len(plan.rule.exact_us)
        if (plan.prep.tgt_exact[:, e_us:] < 0).any():
            # an external target's synthesized value unknown to the first batch: only a
            # batch's own encoding gives it a code that matches
            return None
        return cls(plan)

    def __call__(self, batch: list[pd.DataFrame]) -> IdentificationPlan:
        p0, rule = self.plan, self.plan.rule
        R, n = len(batch), p0.prep.n
        for r, z in enumerate(batch, start=1):
            if len(z) != n:
                raise SchemaError(f"posterior replicate {r} of a batch has {len(z)} rows; "
                                  f"expected {n}.", code="ROW_COUNT_MISMATCH")
        codes = p0.data.schema.missing_codes
        cols = list(rule.exact_s) + list(rule.radius_s)
        want = pd.Index(cols)
        # pandas' label lookup (slow) only when the replicates hold other columns
        batch = [mask_missing_codes(z if z.columns.equals(want) else z[cols], codes)
                 for z in batch]
        encs = p0.data.exact_encoders
        what = "posterior replicates"
        rep_exact = [stack_columns([encs[c](z[c], what) for c in rule.exact_s], n)
                     for z in batch]
        rep_radius = [radius_table(z, rule.radius_s, n, what) for z in batch]
        check_missing_radius(rule, {c: any(np.isinf(v[j]).any() for v in rep_radius)
                                    for j, c in enumerate(rule.radius_s)},
                             p0.data.missing_known)
        prep = dataclasses.replace(p0.prep, R=R, rep_exact_s=rep_exact, rep_radius_s=rep_radius,
                                   _cache={})
        counts = p0.counts
        if counts.inv_f is not None:  # fixed over replicates (user or agency's counts)
            counts = dataclasses.replace(counts, F=np.repeat(counts.F[:, :1], R, axis=1),
                                         inv_f=np.repeat(counts.inv_f[:, :1], R, axis=1))
        return dataclasses.replace(p0, data=dataclasses.replace(p0.data, prep=prep),
                                   counts=counts, replicates=ReplicateSource(R=R, user=True))


@dataclass
class BatchSums:
    """A matched batch reduced to what the run accumulates: the pooled sums (as
    ``PooledSums.add`` takes them), per-replicate file measures ``per`` and the per-target sums
    of ``IR`` and ``IR²``."""

    keys: np.ndarray
    vals: np.ndarray
    in_u: np.ndarray
    fb: np.ndarray
    p_out: np.ndarray
    p_un: np.ndarray
    ever: np.ndarray
    R: int
    per: dict[str, np.ndarray]
    ir_sum: np.ndarray
    ir_sq: np.ndarray

    @classmethod
    def of(cls, batch: Batch) -> BatchSums:
        rm = record_measures(batch.c, batch.T)
        per = {k: np.asarray(v, dtype=np.float64)
               for k, v in file_measures(batch.c, batch.T, rm).items()}
        return cls(keys=batch.keys, vals=batch.vals, in_u=batch.in_u, fb=batch.fb,
                   p_out=batch.p_out, p_un=batch.p_un, ever=batch.ever, R=batch.R, per=per,
                   ir_sum=rm["IR"].sum(axis=1), ir_sq=(rm["IR"] ** 2).sum(axis=1))


@dataclass
class BatchJob:
    """Everything needed to draw and match any batch of a run (sent to each worker once);
    replicate ``r`` comes from ``models[r % len(models)]``. A batch (``batch_size``
    replicates) is the run's statistical unit: the jackknife groups whole batches and the
    stopping rule counts them. ``chunk`` replicates of it are drawn and matched at once (0: the
    whole batch), which bounds the memory and changes no number."""

    models: list
    columns: list[str]
    seq: np.random.SeedSequence
    chunk_size: int
    batch_size: int
    n_total: int
    ctx: MatchContext | None = None
    recode: Recoder | None = None
    inputs: tuple | None = None
    chunk: int = 0

    def size(self, b: int) -> int:
        """Replicates in batch ``b`` (the last batch may be shorter)."""
        return min(self.batch_size, self.n_total - b * self.batch_size)

    def spans(self, b: int) -> list[tuple[int, int]]:
        """The first replicate and size of each chunk of batch ``b``, in order."""
        r0, size = b * self.batch_size, self.size(b)
        step = self.chunk or size
        return [(r, min(step, r0 + size - r)) for r in range(r0, r0 + size, step)]

    def draw(self, r0: int, size: int) -> list[pd.DataFrame]:
        """Replicates ``r0 … r0 + size − 1`` (each fixed by the seed and its index alone)."""
        if len(self.models) == 1:
            return [z for chunk in self.models[0].posterior_replicates(
                size, columns=self.columns, chunk_size=min(self.chunk_size, size),
                random_seed=self.seq, start=r0) for z in chunk]
        return [next(iter(self.models[r % len(self.models)].posterior_replicates(
                    1, columns=self.columns, chunk_size=1, random_seed=self.seq, start=r)))[0]
                for r in range(r0, r0 + size)]

    def replicates(self, b: int) -> list[pd.DataFrame]:
        """The replicates of batch ``b`` (``b·B`` onwards; the last batch may be shorter)."""
        return self.draw(b * self.batch_size, self.size(b))

    def plan(self, batch: list[pd.DataFrame]) -> IdentificationPlan:
        """The identification plan of a batch of replicates."""
        if self.recode is not None:
            return self.recode(batch)
        original, synthetic, kus, options = self.inputs
        return prepare(original, synthetic, kus, self.columns, replicates=batch, **options)


def draw_chunk(job: BatchJob, b: int, i: int) -> IdentificationPlan:
    """Draw chunk ``i`` of batch ``b`` and encode it (a plan :class:`Batch` matches)."""
    return job.plan(job.draw(*job.spans(b)[i]))


def run_batch(job: BatchJob, b: int, first: IdentificationPlan | None = None) -> BatchSums:
    """Draw, match and reduce batch ``b``, chunk by chunk (the task an executor runs;
    ``first``: the plan of its first chunk, already drawn)."""
    plans = (first if i == 0 and first is not None else draw_chunk(job, b, i)
             for i in range(len(job.spans(b))))
    return BatchSums.of(Batch(job.ctx, plans, job.size(b)))


def prefetched_batches(job: BatchJob, first: IdentificationPlan, n_batches: int
                       ) -> Iterator[BatchSums]:
    """Batches ``0 … n_batches − 1`` matched in order, the next chunk drawn in a thread while
    one is matched (one chunk ahead; ``first``: the plan of batch 0's first chunk). The same
    numbers as :func:`run_batch`."""
    todo = [(b, i) for b in range(n_batches) for i in range(len(job.spans(b)))][1:]
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="bayes-risk-replicates") as pool:
        k = 0
        nxt = pool.submit(draw_chunk, job, *todo[0]) if todo else None

        def plans(b: int) -> Iterator[IdentificationPlan]:
            nonlocal k, nxt
            for i in range(len(job.spans(b))):
                if b == 0 and i == 0:
                    yield first
                    continue
                plan = nxt.result()
                k += 1
                nxt = pool.submit(draw_chunk, job, *todo[k]) if k < len(todo) else None
                yield plan

        try:
            for b in range(n_batches):
                yield BatchSums.of(Batch(job.ctx, plans(b), job.size(b), threaded=True))
                first = None
        finally:  # the caller stopped (tolerance reached) or failed: drop the chunk ahead
            if nxt is not None:
                nxt.cancel()
