"""Pooled aggregation (Reiter & Mitra 2009): ``π_τ(k) = (1/R) Σ_r p_r(k)`` and the top sets,
in chunks of targets, ``π`` kept compact (the output's classes in
``bayes_risk.identification.pooled_probabilities``, the fallback sets in
``bayes_risk.identification.fallback``). See :doc:`/methods/identification`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from bayes_risk._numeric import ties
from bayes_risk._terminal import progress
from bayes_risk.identification import engine as _engine
from bayes_risk.identification.fallback import (
    FallbackSets,
    GroupedFallbackSets,
    fallback_sets,
    merge_target_major,
)
from bayes_risk.identification.index import TargetBounds, distinct_targets, spans, target_bounds
from bayes_risk.identification.matching import MatchRule
from bayes_risk.identification.pooled_probabilities import (
    PooledOutput,
    PooledProbabilities,
    csr,
    join_blocks,
    row_pointers,
)
from bayes_risk.identification.problem import Prepared, TargetPartition, target_problem

if TYPE_CHECKING:  # scipy.sparse is imported where the pooled matrix is built
    import scipy.sparse as sp


# the output's classes and the fallback sets are defined in pooled_probabilities.py and
# fallback.py, imported from here too
__all__ = ["PooledOutput", "FallbackSets", "GroupedFallbackSets", "fallback_sets",
           "merge_target_major", "run_pooled", "PooledProbabilities"]


def _segment_sums(keys: np.ndarray, data: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sum ``data`` over runs of equal sorted ``keys`` (the one summation of pooled
    probabilities: bitwise the same wherever it occurs)."""
    if not keys.size:
        return keys, data
    first = np.empty(keys.size, dtype=bool)
    first[0] = True
    np.not_equal(keys[1:], keys[:-1], out=first[1:])
    starts = np.flatnonzero(first)
    return keys[starts], np.add.reduceat(data, starts)


#: temporary bytes per (target, record, replicate) contribution of a chunk
BYTES_PER_CONTRIBUTION = 64
#: temporary memory of one chunk at most (or a quarter of the run's memory budget left)
CHUNK_BYTES = 256 * 2**20
#: targets of one chunk at most, and of the first (the next are sized from its contributions)
MAX_CHUNK_TARGETS = 200_000
FIRST_CHUNK_TARGETS = 4096
#: contributions decoded at once at least
MIN_BLOCK = 1 << 12
#: match targets with the same key, windows and counts once when the distinct targets are at
#: most this share of them
DISTINCT_SHARE = 0.9


@dataclass
class _Chunks:
    """What every chunk of :func:`run_pooled` reads (the distinct targets and whom they stand
    for)."""

    prep: Prepared  # the distinct targets (every target when they are all distinct)
    rule: MatchRule
    inv_f: np.ndarray | None
    strategy: Any
    bounds: TargetBounds
    tkey: np.ndarray
    use_fb: bool
    cells: bool
    compiled: bool
    fsets: FallbackSets | None  # with the fallback
    rec: np.ndarray  # every target's own record and membership
    in_sample: np.ndarray
    #: targets of distinct targets ``a:z``: ``order[start[a]:start[z]]`` (``None``: all distinct)
    order: np.ndarray | None = None
    start: np.ndarray | None = None
    group: np.ndarray | None = None
    weight: np.ndarray | None = None  # targets per distinct target
    #: contributions a chunk holds at most, and that a block decodes at once (:meth:`fit`)
    share: int = 1 << 22
    block: int = 1 << 20
    #: the replicates' matches listed one index at a time (``None``: every index is held)
    in_turn: _InTurn | None = None
    #: bytes the kept pooled probabilities will take, set aside when the chunks are sized
    keep: float = 0.0

    def fit(self, work: int) -> None:
        """Size the chunks and blocks to ``work`` bytes of temporaries (per pass in turn)."""
        self.share = max(1, work // BYTES_PER_CONTRIBUTION)
        self.block = max(MIN_BLOCK, work // (4 * BYTES_PER_CONTRIBUTION))

    def members(self, a: int, z: int) -> tuple[np.ndarray, np.ndarray]:
        """The targets of distinct targets ``a:z`` and their distinct target's place."""
        if self.order is None:
            rows = np.arange(a, z, dtype=np.int64)
            return rows, rows - a
        rows = self.order[self.start[a]:self.start[z]]
        return rows, self.group[rows] - a


class _Pooled:
    """Outputs of :func:`run_pooled` filled chunk by chunk (``T`` per target, the rest per
    distinct target)."""

    def __init__(self, N: int, N_all: int, keep: bool = True) -> None:
        self.N, self.N_all, self.keep, self.total = N, N_all, keep, 0
        self.p_out, self.p_un, self.p_max, self.fb_value = (np.zeros(N) for _ in range(4))
        self.c, self.fb_extra, self.row_nnz = (np.zeros(N, dtype=np.int64) for _ in range(3))
        self.T = np.zeros(N_all, dtype=bool)
        self.ever = np.zeros(N, dtype=bool)
        self.ind_blocks: list[np.ndarray] = []
        self.dat_blocks: list[np.ndarray] = []


def run_pooled(prep: Prepared, rule: MatchRule, part: TargetPartition, *,
               fallback_cells: bool = True) -> PooledOutput:
    """Pooled probabilities ``π_τ(k) = (1/R) Σ_r p_r(k)`` and the declared top sets of the
    targets of ``prep`` with the options of ``part``, in chunks of :data:`CHUNK_BYTES`
    (``fallback_cells=False`` stores the fallback sets: the same numbers)."""
    from bayes_risk._memory import check_memory, room, working_bytes

    N_all, R, n = prep.n_targets, prep.R, prep.n
    inv_f, strategy, progressbar = part.inv_f, part.strategy, part.progressbar
    use_fb = part.fallback == "unsynthesized"
    cells = use_fb and fallback_cells
    tkey = _engine.target_keys(prep, rule)[0]
    bounds = target_bounds(prep, rule)
    compiled = _engine.use_compiled(prep)
    if compiled:  # numba and the kernels loaded first: what is left is read after them
        from bayes_risk.identification import _kernels  # noqa: F401
    work = working_bytes(CHUNK_BYTES)  # read here: worker threads do not see the limit
    # every replicate's index at once if they fit, else one at a time (the same matches)
    left = room()
    in_turn = R > 1 and left is not None and _engine.index_bytes(prep, rule) > left
    check_memory(_engine.index_bytes(prep, rule, in_turn), "the number of synthetic datasets or of "
                 "records", what=f"the matching indexes of the {1 if in_turn else R} "
                 f"replicate(s) of {n:,} records")
    if not in_turn:  # built once (in parallel) before the chunk loop
        _engine.parallel(lambda r: _engine.replicate_index(prep, rule, r), range(R),
                         progressbar=progressbar, description="indexing replicates",
                         threads=compiled, unit="replicates")
    groups = distinct_targets(tkey, bounds, inv_f, DISTINCT_SHARE)
    ctx_prep, ctx_inv_f = prep, inv_f
    order = start = group = weight = None
    if groups is not None:
        first, group = groups
        ctx_prep, _ = target_problem(prep, rule, (), prep.tgt_exact[first],
                                     prep.tgt_radius[first], prep.in_sample[first],
                                     prep.rec[first])
        ctx_inv_f = None if inv_f is None else inv_f[first]
        tkey, bounds = tkey[first], bounds.rows(first)
        order = np.argsort(group, kind="stable")
        weight = np.bincount(group, minlength=first.size)
        start = row_pointers(weight)
    N = ctx_prep.n_targets
    ctx = _Chunks(prep=ctx_prep, rule=rule, inv_f=ctx_inv_f, strategy=strategy, bounds=bounds,
                  tkey=tkey, use_fb=use_fb, cells=cells, compiled=compiled,
                  fsets=fallback_sets(ctx_prep, rule) if use_fb else None, rec=prep.rec,
                  in_sample=prep.in_sample, order=order, start=start, group=group,
                  weight=weight)
    ctx.fit(work)
    if in_turn:
        ctx.in_turn = _InTurn(ctx, _engine.index_bytes(prep, rule, True))
    if part.keep_prob:  # without π the chunks bound the memory: the number of its entries does not
        # π kept, set aside before the chunks are sized from what is left: 12 bytes an entry
        # (an int32 record, a float64 probability) in the blocks and as much again while they
        # are joined (measured: 12 left a peak 30 MB above the limit at 7.4 million entries,
        # 24 kept it within); the count is one replicate's matches, a lower bound
        ctx.keep = 24.0 * _early_size_check(ctx)
        check_memory(ctx.keep, _SMALLER_PROBLEM, what="the pooled match probabilities")
        ctx.fit(working_bytes(CHUNK_BYTES, reserve=ctx.keep))
    acc = _Pooled(N, N_all, keep=part.keep_prob)
    # 100 steps only when the bar is shown: a small table cut into 100 chunks pays their cost
    steps = min(100 if progressbar else 1, N)
    ends = np.linspace(0, N, steps + 1).round().astype(np.int64)
    # (target, record, replicate) keys stay below 2**62
    cap = int(min(MAX_CHUNK_TARGETS, max(1, (2**62 // max(R, 1) - 1) // max(n, 1))))
    a = 0
    size = min(FIRST_CHUNK_TARGETS, cap)
    for step in progress(range(steps), total=N, description="identification", unit="targets",
                         size=lambda s: int(ends[s + 1] - ends[s]), enabled=progressbar):
        stop_at = int(ends[step + 1])
        while a < stop_at:
            z = min(stop_at, a + size)
            done, held = _pool_chunk(ctx, acc, a, z)
            # the next chunk fills the share at this chunk's rate (a full chunk ends early)
            per = held / max(done - a, 1)
            size = int(min(cap, max(1, ctx.share / max(per, 1.0))))
            a = done
    declared = _engine.declare(acc.p_max, acc.p_out, strategy)
    prob = _csr(ctx, acc, N_all, n) if part.keep_prob else None
    g = slice(None) if group is None else group  # every target's distinct target
    return PooledOutput(prob=prob, p_out=acc.p_out[g], p_unassigned=acc.p_un[g],
                        p_max=acc.p_max[g], c=acc.c[g], T=acc.T, declared=declared[g],
                        no_match_any=~acc.ever[g], fallback_value=acc.fb_value[g],
                        fallback_extra=acc.fb_extra[g])


class _InTurn:
    """A pass of distinct targets' matches in every replicate, one replicate's index built,
    read and dropped at a time (the indexes do not fit together)."""

    def __init__(self, ctx: _Chunks, index_bytes: float) -> None:
        self.ctx, self.index_bytes = ctx, index_bytes
        self.a = self.z = 0
        self.parts: list[tuple[np.ndarray, np.ndarray]] = []  # row pointers, records

    def _list(self, a: int) -> None:
        """List the matches of the targets from ``a`` on within a third of what is left beside
        one index, then size the chunks from what the lists leave."""
        from bayes_risk._memory import MIN_WORKING_BYTES, room, working_bytes

        ctx = self.ctx
        R, n = ctx.prep.R, ctx.prep.n
        self.parts = []  # the last pass's lists are freed first
        left = room()
        budget = MIN_WORKING_BYTES if left is None else max(
            MIN_WORKING_BYTES, (left - self.index_bytes) // 3)
        # records as int32 where they fit; a replicate's listing holds ≈ 24 bytes per match
        rec_dtype = np.int32 if n < 2**31 - 1 else np.int64
        limit = max(1, int(budget // (R * rec_dtype().itemsize + 24)))
        z = ctx.prep.n_targets
        parts: list[tuple[np.ndarray, np.ndarray]] = []
        for r in range(R):
            idx = _engine.replicate_index(ctx.prep, ctx.rule, r, keep=False)
            cnt, lst, done = idx.match(ctx.tkey[a:z], ctx.bounds.rows(slice(a, z)), True,
                                       limit=limit)
            del idx
            z = a + done
            # the earlier replicates' lists cut to the targets this one reached
            parts = [(p[:done + 1], rec[:p[done]].copy()) for p, rec in parts]
            parts.append((row_pointers(cnt[:done]), lst.astype(rec_dtype)))
            del cnt, lst
        self.parts, self.a, self.z = parts, a, z
        ctx.fit(working_bytes(CHUNK_BYTES, reserve=ctx.keep))

    def take(self, a: int, z: int, limit: int) -> list[tuple[np.ndarray, np.ndarray, int]]:
        """As the indexes' ``match(..., limit=limit)`` of the targets ``a:z`` in every
        replicate: counts, records and the number of targets matched."""
        if not self.a <= a < self.z:
            self._list(a)
            limit = max(1, self.ctx.share // self.ctx.prep.R)
        i, j = a - self.a, min(z, self.z) - self.a
        out = []
        for ptr, rec in self.parts:
            c = np.diff(ptr[i:j + 1])
            done = max(1, int(np.searchsorted(np.cumsum(c), limit, side="right")))
            out.append((c[:done], rec[ptr[i]:ptr[i + done]].astype(np.int64), done))
        return out


def _early_size_check(ctx: _Chunks) -> int:
    """Refuse at once, as the chunk loop would later, more than ``MAX_NNZ`` pooled entries when
    the index counts one replicate's matches without listing them; return that count (a lower
    bound of the entries; 0 when it cannot be counted)."""
    if len(ctx.rule.radius_cols) > 1 or ctx.bounds.ellipse or not ctx.prep.R \
            or not ctx.prep.n_targets:
        return 0
    cnt = _engine.replicate_index(ctx.prep, ctx.rule, 0, keep=ctx.in_turn is None).candidates(
        ctx.tkey, ctx.bounds)
    w = 1 if ctx.weight is None else ctx.weight
    total = int(np.sum(cnt * w, dtype=np.float64))
    _check_size(ctx, total)
    return total


def _replicate_keys(ctx: _Chunks, r: int, a: int, cnt: np.ndarray, lst: np.ndarray, ucnt_all,
                    fb_lists) -> tuple:
    """Replicate ``r``'s matches of targets ``a:a + len(cnt)``: counts after the fallback, keys
    ``(t · n + k) · R + r``, values ``p_r(t) / R``, ``Pr(J = n+1)`` and the fallback-cell
    targets."""
    R, n = ctx.prep.R, ctx.prep.n
    m = len(cnt)
    fb = None
    keys = np.repeat(np.arange(m, dtype=np.int64), cnt)
    if ctx.use_fb and (cnt == 0).any():
        emp = np.flatnonzero(cnt == 0)
        cnt = cnt.copy()
        if ctx.cells:
            fb = emp[ucnt_all[emp] > 0]
            cnt[emp] = ucnt_all[emp]
        else:
            ucnt, ustart, ulst = fb_lists
            keys = np.concatenate([keys, np.repeat(emp, ucnt[emp])])
            lst = np.concatenate([lst, ulst[spans(ustart[emp], ucnt[emp])]])
            cnt[emp] = ucnt[emp]
    keys *= n
    keys += lst
    del lst
    keys *= R
    keys += r
    invf = None if ctx.inv_f is None else ctx.inv_f[a:a + m, r]
    p, po = _engine.record_prob(cnt, invf)
    return cnt, keys, p / R, po, fb


def _check_size(ctx: _Chunks, total: int) -> None:
    from bayes_risk.exceptions import ValidationError

    if total > _engine.MAX_NNZ:
        raise ValidationError(
            f"the pooled match probabilities would hold more than {_engine.MAX_NNZ:,} non-zero "
            "entries (targets match very many records"
            + (", often through the fallback to the unsynthesized key" if
               ctx.use_fb and not ctx.cells else "")
            + "). Use aggregation='per_dataset', fallback='none', a smaller radius or more "
            "known columns.",
            code="PROBLEM_TOO_LARGE"
        )


def _pool_chunk(ctx: _Chunks, acc: _Pooled, a: int, z: int) -> tuple[int, int]:
    """Pool the distinct targets ``a:e`` (the largest ``e <= z`` within the chunk's share);
    returns ``e`` and the contributions the chunk held."""
    R, n = ctx.prep.R, ctx.prep.n
    # the chunk ends where the first replicate reached its part of the share
    limit = max(1, ctx.share // max(R, 1))
    if ctx.in_turn is not None:
        listed = ctx.in_turn.take(a, z, limit)
    else:
        bb = ctx.bounds.rows(slice(a, z))
        # merge sweep for large chunks, binary searches for small ones (the same slices)
        sweep = R > 1 and (z - a) * max(np.log2(max(n, 2)), 1.0) >= n
        tord = _engine.target_orders(ctx.tkey[a:z], bb, ctx.compiled) if sweep else None
        listed = _engine.parallel(
            lambda r: _engine.replicate_index(ctx.prep, ctx.rule, r).match(
                ctx.tkey[a:z], bb, True, tord, limit=limit),
            range(R), progressbar=False, description="", threads=ctx.compiled,
        )
    e = a + min((d for _, _, d in listed), default=z - a)
    fb_lists = None
    if ctx.use_fb and not ctx.cells:  # the fallback sets of the targets without a match count
        e, fb_lists = _materialised_fallback(ctx, a, e, [c for c, _, _ in listed], limit * R)
    m = e - a
    # fallback-set sizes of the chunk's targets (the same in every replicate)
    ucnt_all = ctx.fsets.sizes(slice(a, e)) if ctx.cells else None
    parts = []
    for cnt, lst, _ in listed:
        cnt = cnt[:m]
        parts.append((cnt, lst[:int(cnt.sum())]))
    listed.clear()
    outs = []
    for r in range(R):
        cnt, lst = parts[r]
        parts[r] = None  # the list is freed once turned into keys
        outs.append(_replicate_keys(ctx, r, a, cnt, lst, ucnt_all, fb_lists))
        del cnt, lst
    for cnt, _, _, po, _ in outs:
        acc.ever[a:e] |= cnt > 0
        acc.p_out[a:e] += po / R
        if ctx.inv_f is None:
            acc.p_un[a:e] += (cnt == 0) / R
    # the value of a contribution is its target's in its replicate: V[r, t]
    V = np.stack([o[2] for o in outs]) if outs else np.zeros((0, m))
    fb = [o[4] for o in outs]
    keys = np.concatenate([o[1] for o in outs]) if outs else np.zeros(0, dtype=np.int64)
    outs.clear()
    held = keys.size
    _sort_keys(keys)
    fcells = _FallbackCells(ctx, a, m, fb, V, ucnt_all)
    pk, data = _pooled_sums(ctx, keys, V, m, fcells)
    del keys
    v_fb, n_extra = fcells.v_fb, fcells.extra()
    idx_dtype = np.int32 if n < 2**31 - 1 else np.int64
    r_of = pk // n if pk.size else np.zeros(0, dtype=np.int64)
    nnz_row = np.bincount(r_of, minlength=m)
    w = ctx.weight[a:e] if ctx.weight is not None else 1
    acc.total += int(np.sum(nnz_row * w))
    if acc.keep:
        _check_size(ctx, acc.total)
    _top_sets(ctx, acc, a, e, pk, data, r_of, nnz_row, v_fb, n_extra)
    if acc.keep:
        from bayes_risk._memory import check_memory

        check_memory(12.0 * pk.size, _SMALLER_PROBLEM, what="the pooled match probabilities")
        acc.row_nnz[a:e] = nnz_row
        acc.ind_blocks.append((pk - r_of * n).astype(idx_dtype))
        acc.dat_blocks.append(data)
    return e, held


def _materialised_fallback(ctx: _Chunks, a: int, e: int, counts: list[np.ndarray], limit: int
                           ) -> tuple[int, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """The end of the chunk within ``limit`` contributions and ``(sizes, starts, records)`` of
    the fallback sets of its targets without a match in some replicate."""
    m = e - a
    ucnt = ctx.fsets.sizes(slice(a, e))
    held = np.zeros(m, dtype=np.int64)
    empty = np.zeros(m, dtype=bool)
    for cnt in counts:
        c = cnt[:m]
        held += np.where(c == 0, ucnt, c)
        empty |= c == 0
    stop = max(1, int(np.searchsorted(np.cumsum(held), limit, side="right")))
    m = min(m, stop)
    need = np.flatnonzero((ucnt[:m] > 0) & empty[:m])
    sizes = np.zeros(m, dtype=np.int64)
    _, ulst = ctx.fsets.members(a + need)
    sizes[need] = ucnt[need]
    starts = np.cumsum(sizes) - sizes
    return a + m, (sizes, starts, ulst)


def _sort_keys(keys: np.ndarray) -> None:
    """Sort the (unique) contribution keys in place (faster than a stable merge)."""
    keys.sort()


class _FallbackCells:
    """Fallback contributions of a chunk's targets in compact form (fallback cells): ``v_fb``
    the value of each target's records matched only through the fallback."""

    def __init__(self, ctx: _Chunks, a: int, m: int, fb: list, V: np.ndarray, ucnt_all) -> None:
        self.ctx, self.a, self.m = ctx, a, m
        self.v_fb = np.zeros(m)
        self.ucnt_all = ucnt_all
        self.on = bool(ctx.cells and any(f is not None and f.size for f in fb))
        if not self.on:
            return
        R = ctx.prep.R
        # fallback contributions (target, replicate), in replicate order
        f_t = np.concatenate([f for f in fb if f is not None])
        f_r = np.repeat(np.arange(R), [0 if f is None else len(f) for f in fb])
        o_f = np.argsort(f_t, kind="stable")
        self.f_t, self.f_r = f_t[o_f], f_r[o_f]
        f_v = V[self.f_r, self.f_t]
        ft_u, fv_u = _segment_sums(self.f_t, f_v)
        self.v_fb[ft_u] = fv_u
        self.ft_u = ft_u
        self.has = np.zeros(m, dtype=bool)
        self.has[ft_u] = True
        self.inside = np.zeros(m, dtype=np.int64)

    def extension(self, pair: np.ndarray) -> np.ndarray:
        """Sorted keys of the fallback contributions of the matched pairs in their fallback
        set."""
        ctx, n, R = self.ctx, self.ctx.prep.n, self.ctx.prep.R
        row = pair // n
        cand = pair[self.has[row]]
        if not cand.size:
            return np.zeros(0, dtype=np.int64)
        p_row = cand // n
        inside = ctx.fsets.contains(p_row + self.a, cand - p_row * n)
        ins = cand[inside]
        ins_row = p_row[inside]
        self.inside += np.bincount(ins_row, minlength=self.m)
        # each inside pair takes its target's fallback contributions
        f_start = np.searchsorted(self.f_t, ins_row, side="left")
        f_len = np.searchsorted(self.f_t, ins_row, side="right") - f_start
        tot = int(f_len.sum())
        if not tot:
            return np.zeros(0, dtype=np.int64)
        out = np.repeat(ins, f_len)
        out *= R
        out += self.f_r[spans(f_start, f_len)]
        return out

    def extra(self) -> np.ndarray:
        n_extra = np.zeros(self.m, dtype=np.int64)
        if self.on:
            n_extra[self.ft_u] = self.ucnt_all[self.ft_u] - self.inside[self.ft_u]
        return n_extra


def _pooled_sums(ctx: _Chunks, keys: np.ndarray, V: np.ndarray, m: int,
                 fcells: _FallbackCells) -> tuple[np.ndarray, np.ndarray]:
    """The (target · n + record) pairs of the sorted keys and their pooled probabilities,
    decoded in blocks of whole pairs."""
    R = ctx.prep.R
    # a block's fallback contributions: at most R - 1 per directly matched pair
    size = max(MIN_BLOCK, ctx.block // R) if fcells.on else ctx.block
    pks, sums = [], []
    i = 0
    while i < keys.size:
        j = min(keys.size, i + size)
        if j < keys.size:  # end at the first key of a pair
            j = int(np.searchsorted(keys, (keys[j] // R) * R, side="left"))
            if j <= i:
                j = int(np.searchsorted(keys, (keys[i] // R + 1) * R, side="left"))
        blk = keys[i:j]
        if fcells.on:
            pair = blk // R
            first = np.empty(pair.size, dtype=bool)
            first[0] = True
            np.not_equal(pair[1:], pair[:-1], out=first[1:])
            ext = fcells.extension(pair[first])
            del pair, first
            if ext.size:
                blk = np.concatenate([blk, ext])
                _sort_keys(blk)
        if ctx.compiled:
            from bayes_risk.identification import _pair_kernels

            pk, s = _pair_kernels.contribution_sums(blk, V, R, ctx.prep.n)
        else:
            pk, s = _decoded_sums(blk, V, R, ctx.prep.n, m)
        del blk
        pks.append(pk)
        sums.append(s)
        i = j
    if not pks:
        return np.zeros(0, dtype=np.int64), np.zeros(0)
    if len(pks) == 1:
        return pks[0], sums[0]
    return np.concatenate(pks), np.concatenate(sums)


def _decoded_sums(blk: np.ndarray, V: np.ndarray, R: int, n: int, m: int
                  ) -> tuple[np.ndarray, np.ndarray]:
    """Numpy twin of ``_pair_kernels.contribution_sums``."""
    pair = blk // R
    rep = blk - pair * R
    rep *= m
    rep += pair // n  # the target's column of V
    val = V.ravel()[rep]
    del rep
    return _segment_sums(pair, val)


def _top_sets(ctx: _Chunks, acc: _Pooled, a: int, z: int, pk, data, r_of, nnz_row, v_fb,
              n_extra) -> None:
    """Top set, ``c``, ``T`` and the declared match of the distinct targets ``a:z``."""
    pm, _, c_blk, _ = _engine.pooled_top(r_of, data, nnz_row, v_fb, n_extra)
    cell = n_extra > 0
    acc.fb_value[a:z] = np.where(cell, v_fb, 0.0)
    acc.fb_extra[a:z] = n_extra
    acc.p_max[a:z] = pm
    dec = _engine.declare(pm, acc.p_out[a:z], ctx.strategy)
    acc.c[a:z] = np.where(dec, c_blk, 0)
    # T: the own record in the distinct target's row, else in its fallback set
    rows, loc = ctx.members(a, z)
    rec = ctx.rec[rows]
    ok = (rec >= 0) & dec[loc] & ctx.in_sample[rows]
    rows, loc, rec = rows[ok], loc[ok], rec[ok]
    want = loc * ctx.prep.n + rec
    pos = np.searchsorted(pk, want)
    found = pos < pk.size
    found[found] = pk[pos[found]] == want[found]
    val = np.zeros(rec.size)
    val[found] = data[pos[found]]
    chk = np.flatnonzero(~found & cell[loc])
    if chk.size:
        inset = ctx.fsets.contains(loc[chk] + a, rec[chk])
        val[chk[inset]] = v_fb[loc[chk[inset]]]
    acc.T[rows] = (val > 0) & ties(val, pm[loc])


def _csr(ctx: _Chunks, acc: _Pooled, N_all: int, n: int) -> sp.csr_matrix:
    """``π`` of every target as CSR (each row its distinct target's)."""
    from bayes_risk._memory import check_memory

    idx_dtype = np.int32 if n < 2**31 - 1 else np.int64
    total = int(acc.row_nnz.sum())
    indices = join_blocks(acc.ind_blocks, total, idx_dtype)
    data = join_blocks(acc.dat_blocks, total, np.float64)
    if ctx.group is None:
        indptr = row_pointers(acc.row_nnz)
    else:
        g_ptr = row_pointers(acc.row_nnz)
        lens = acc.row_nnz[ctx.group]
        indptr = row_pointers(lens)
        check_memory(12.0 * indptr[-1], _SMALLER_PROBLEM,
                     what="the pooled match probabilities")
        out_ind = np.empty(int(indptr[-1]), dtype=idx_dtype)
        out_dat = np.empty(int(indptr[-1]))
        s = 0
        while s < N_all:  # targets in blocks of about ctx.block entries
            e = int(np.searchsorted(indptr, indptr[s] + ctx.block, side="right")) - 1
            e = min(max(e, s + 1), N_all)
            src = spans(g_ptr[ctx.group[s:e]], lens[s:e])
            out_ind[indptr[s]:indptr[e]] = indices[src]
            out_dat[indptr[s]:indptr[e]] = data[src]
            s = e
        indices, data = out_ind, out_dat
    return csr(data, indices, indptr, (N_all, n))


_SMALLER_PROBLEM = ("the matches per target (a smaller radius, more known columns, "
                    "fallback='none' / --fallback none) or use aggregation='per_dataset' "
                    "(--aggregation per-dataset)")
