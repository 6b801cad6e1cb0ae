"""Pooled aggregation (Reiter & Mitra 2009): ``π_τ(k) = (1/R) Σ_r p_r(k)`` and the top sets.

Targets are processed in chunks holding about ``chunk_pairs`` (target, record) pairs, so
temporary memory stays bounded; ``π`` is assembled as a ``scipy.sparse`` CSR matrix ``[N_T, n]``
of the directly matched records plus, per target, its fallback set (unsynthesized key and
windows) and the one probability its records share (:class:`PooledProbabilities`). The tuning
switches (``MAX_NNZ``, ``FALLBACK_AS_CELLS``, ``USE_NUMBA``) live in
:mod:`bayes_risk.identification.engine` and are read at call time.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from bayes_risk._numeric import ties
from bayes_risk._terminal import progress
from bayes_risk.identification import engine as _engine
from bayes_risk.identification.index import ReplicateIndex, TargetBounds, target_bounds
from bayes_risk.identification.matching import MatchRule
from bayes_risk.identification.problem import Prepared, drop_groups, target_problem

if TYPE_CHECKING:  # scipy.sparse is imported where the pooled matrix is built
    import scipy.sparse as sp

__all__ = ["PooledOutput", "FallbackSets", "GroupedFallbackSets", "fallback_sets",
           "merge_target_major", "run_pooled", "PooledProbabilities"]


@dataclass
class PooledOutput:
    """Per-target output of :func:`run_pooled`.

    ``prob`` holds the explicit entries of ``π``: every record matched directly (on all known
    columns) in some replicate, with its whole pooled probability (fallback mass included).
    The records of a target's fallback set that are matched directly in no replicate all share
    ``fallback_value`` (``fallback_extra`` of them); they are not stored (methods, Matching rules:
    the fallback probability is uniform over the set). With ``FALLBACK_AS_CELLS = False`` they are
    stored in ``prob`` and ``fallback_extra`` is 0.
    """

    prob: sp.csr_matrix
    p_out: np.ndarray
    p_unassigned: np.ndarray
    p_max: np.ndarray
    c: np.ndarray
    T: np.ndarray
    declared: np.ndarray
    no_match_any: np.ndarray
    fallback_value: np.ndarray
    fallback_extra: np.ndarray



@dataclass
class FallbackSets:
    """The records matching each target on the known unsynthesized columns only (fallback rule).

    Represented by the index of the records' unsynthesized known columns, the targets'
    unsynthesized keys and their windows on the unsynthesized radius columns: the members of a
    set are enumerated on demand, never stored.
    """

    index: ReplicateIndex
    tkey: np.ndarray  # [N_T]
    bounds: TargetBounds  # [N_T, q_us]

    def members(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Sizes ``[len(rows)]`` and members (target-major, ascending within a target)."""
        cnt, lst = self.index.match(self.tkey[rows], self.bounds.rows(rows), True)
        return cnt, lst

    def contains(self, rows: np.ndarray, records: np.ndarray) -> np.ndarray:
        """Whether ``records[i]`` belongs to the set of target ``rows[i]``."""
        return self.index.own(self.tkey[rows], self.bounds.rows(rows), records)

    def sizes(self) -> np.ndarray:
        """Size of every target's set ``[N_T]``."""
        return self.index.match(self.tkey, self.bounds, False)[0]


@dataclass
class GroupedFallbackSets:
    """Fallback sets of targets matched on different known columns (their missing values,
    ``missing_known="any"``): each group's sets use the known unsynthesized columns the group is
    matched on. The same methods as :class:`FallbackSets`, on the targets' own numbering."""

    groups: list[tuple[np.ndarray, FallbackSets]]  # the targets of each group, its sets
    group: np.ndarray = field(init=False)  # [N_T] group of every target
    local: np.ndarray = field(init=False)  # [N_T] its position in the group

    def __post_init__(self) -> None:
        N = sum(rows.size for rows, _ in self.groups)
        self.group = np.empty(N, dtype=np.int64)
        self.local = np.empty(N, dtype=np.int64)
        for g, (rows, _) in enumerate(self.groups):
            self.group[rows] = g
            self.local[rows] = np.arange(rows.size)

    def members(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Sizes ``[len(rows)]`` and members (target-major, ascending within a target)."""
        rows = np.asarray(rows, dtype=np.int64)
        per = []
        for g, (_, fs) in enumerate(self.groups):
            sel = np.flatnonzero(self.group[rows] == g)
            if sel.size:
                per.append((sel, *fs.members(self.local[rows[sel]])))
        return merge_target_major(rows.size, per)

    def contains(self, rows: np.ndarray, records: np.ndarray) -> np.ndarray:
        """Whether ``records[i]`` belongs to the set of target ``rows[i]``."""
        out = np.zeros(len(rows), dtype=bool)
        grp = self.group[rows]
        for g, (_, fs) in enumerate(self.groups):
            m = grp == g
            if m.any():
                out[m] = fs.contains(self.local[rows[m]], records[m])
        return out

    def sizes(self) -> np.ndarray:
        """Size of every target's set ``[N_T]``."""
        out = np.zeros(self.group.size, dtype=np.int64)
        for rows, fs in self.groups:
            out[rows] = fs.sizes()
        return out


def merge_target_major(N: int, parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]]
                       ) -> tuple[np.ndarray, np.ndarray]:
    """One target-major list from the lists of groups of targets.

    ``parts``: ``(positions, counts, records)`` of each group — the places ``0..N-1`` of its
    targets in the merged order, their counts and their records (target-major in the group's
    order). Returns the counts ``[N]`` and the records, target-major in the merged order.
    """
    cnt = np.zeros(N, dtype=np.int64)
    for pos, c, _ in parts:
        cnt[pos] = c
    start = np.cumsum(cnt) - cnt
    out = np.empty(int(cnt.sum()), dtype=np.int64)
    for pos, c, recs in parts:  # each group's records at its targets' places
        within = np.arange(recs.size) - np.repeat(np.cumsum(c) - c, c)
        out[np.repeat(start[pos], c) + within] = recs
    return cnt, out


def fallback_sets(prep: Prepared, rule: MatchRule) -> FallbackSets | GroupedFallbackSets:
    """:class:`FallbackSets` of every target of ``prep`` (:class:`GroupedFallbackSets` when
    some targets are not matched on some known columns, ``Prepared.tgt_drop``)."""
    if prep.tgt_drop is not None:
        groups = []
        for rows, drop in drop_groups(prep, rule):
            gp, gr = target_problem(prep, rule, drop, prep.tgt_exact[rows],
                                    prep.tgt_radius[rows], prep.in_sample[rows], prep.rec[rows])
            groups.append((rows, fallback_sets(gp, gr)))
        return GroupedFallbackSets(groups)
    q_us = len(rule.radius_us)
    return FallbackSets(
        index=_engine.us_index(prep, rule),
        tkey=_engine.target_keys(prep, rule)[1],
        bounds=target_bounds(prep, rule).cols(slice(0, q_us)),
    )


def _segment_sums(keys: np.ndarray, data: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sum ``data`` over runs of equal ``keys`` (``keys`` sorted): the one summation used for
    pooled probabilities, so that a value summed here is bitwise the same wherever it occurs."""
    if not keys.size:
        return keys, data
    first = np.empty(keys.size, dtype=bool)
    first[0] = True
    np.not_equal(keys[1:], keys[:-1], out=first[1:])
    starts = np.flatnonzero(first)
    return keys[starts], np.add.reduceat(data, starts)



@dataclass
class _Chunks:
    """What every chunk of :func:`run_pooled` reads: targets' windows and keys, the rule."""

    prep: Prepared
    rule: MatchRule
    inv_f: np.ndarray | None
    strategy: Any
    bounds: TargetBounds
    tkey: np.ndarray
    tkey_us: np.ndarray
    use_fb: bool
    cells: bool
    compiled: bool
    fsets: FallbackSets | None

    @property
    def q_us(self) -> int:
        return len(self.rule.radius_us)


@dataclass
class _Pooled:
    """Per-target outputs of :func:`run_pooled`, filled chunk by chunk."""

    N: int
    p_out: np.ndarray = field(init=False)
    p_un: np.ndarray = field(init=False)
    p_max: np.ndarray = field(init=False)
    c: np.ndarray = field(init=False)
    T: np.ndarray = field(init=False)
    ever: np.ndarray = field(init=False)
    fb_value: np.ndarray = field(init=False)
    fb_extra: np.ndarray = field(init=False)
    row_nnz: np.ndarray = field(init=False)
    ind_blocks: list[np.ndarray] = field(default_factory=list)
    dat_blocks: list[np.ndarray] = field(default_factory=list)
    total: int = 0

    def __post_init__(self) -> None:
        N = self.N
        self.p_out, self.p_un, self.p_max = np.zeros(N), np.zeros(N), np.zeros(N)
        self.c = np.zeros(N, dtype=np.int64)
        self.T = np.zeros(N, dtype=bool)
        self.ever = np.zeros(N, dtype=bool)
        self.fb_value = np.zeros(N)
        self.fb_extra = np.zeros(N, dtype=np.int64)
        self.row_nnz = np.zeros(N, dtype=np.int64)


def run_pooled(
    prep: Prepared,
    rule: MatchRule,
    *,
    inv_f: np.ndarray | None,
    strategy,
    fallback: str,
    progressbar: bool = False,
    chunk_pairs: int = 4_000_000,
    fallback_cells: bool | None = None,
) -> PooledOutput:
    """Pooled probabilities ``π_τ(k) = (1/R) Σ_r p_r(k)`` and the declared top sets.

    Targets are processed in chunks holding about ``chunk_pairs`` (target, record) pairs, so
    temporary memory stays bounded; ``π`` is assembled as CSR with int32 column indices.

    Fallback (``fallback="unsynthesized"``): in a replicate where nothing matches, target ``τ``
    spreads its mass uniformly over its fallback set ``U_τ``, which is the same in every
    replicate. So every record of ``U_τ`` that is matched directly in no replicate has the same
    ``π``: the sum, in replicate order, of the fallback contributions. That value and the number
    of such records are kept per target (:class:`PooledOutput`); only directly matched records
    are stored. Every stored value is the same sum in the same order as when ``U_τ`` is
    materialised record by record (``FALLBACK_AS_CELLS = False``), so ``π``, the top sets and
    every measure are bitwise identical. ``fallback_cells=False`` materialises them whatever
    the switch (targets matched on part of the known columns: their fallback set is not the
    plan's).
    """
    N, R, n = prep.n_targets, prep.R, prep.n
    use_fb = fallback == "unsynthesized"
    cells = use_fb and _engine.FALLBACK_AS_CELLS and fallback_cells is not False
    tkey, tkey_us = _engine.target_keys(prep, rule)
    compiled = _engine.use_compiled(prep)
    # build every replicate's index once (in parallel) before the chunk loop
    _engine.parallel(lambda r: _engine.replicate_index(prep, rule, r), range(R),
                     progressbar=progressbar, description="indexing replicates",
                     threads=compiled)
    ctx = _Chunks(prep=prep, rule=rule, inv_f=inv_f, strategy=strategy,
                  bounds=target_bounds(prep, rule), tkey=tkey, tkey_us=tkey_us, use_fb=use_fb,
                  cells=cells, compiled=compiled,
                  fsets=fallback_sets(prep, rule) if cells else None)
    acc = _Pooled(N)
    a = 0
    csize = 4096
    # chunks end at the progress bar's 100 steps only when it is shown: a target's numbers do
    # not depend on its chunk, and a small table cut into 100 chunks pays their fixed cost
    # (most of a 40-target run)
    steps = min(100 if progressbar else 1, N)
    bounds = np.linspace(0, N, steps + 1).round().astype(np.int64)
    for step in progress(range(steps), total=steps, description="identification",
                         enabled=progressbar):
        stop_at = int(bounds[step + 1])
        while a < stop_at:
            z = min(stop_at, a + csize)
            per_target = _pool_chunk(ctx, acc, a, z)
            a = z
            csize = int(min(max(chunk_pairs / per_target, 256), 200_000))
    import scipy.sparse as sp

    idx_dtype = np.int32 if n < 2**31 - 1 else np.int64
    indptr = np.zeros(N + 1, dtype=np.int64)
    np.cumsum(acc.row_nnz, out=indptr[1:])
    indices = np.concatenate(acc.ind_blocks) if acc.ind_blocks else np.zeros(0, dtype=idx_dtype)
    acc.ind_blocks.clear()
    data = np.concatenate(acc.dat_blocks) if acc.dat_blocks else np.zeros(0)
    acc.dat_blocks.clear()
    if indptr[-1] < 2**31 - 1:
        indptr = indptr.astype(np.int32)
    prob = sp.csr_matrix((data, indices, indptr), shape=(N, n))
    declared = _engine.declare(acc.p_max, acc.p_out, strategy)
    return PooledOutput(prob=prob, p_out=acc.p_out, p_unassigned=acc.p_un, p_max=acc.p_max,
                        c=acc.c, T=acc.T, declared=declared, no_match_any=~acc.ever,
                        fallback_value=acc.fb_value, fallback_extra=acc.fb_extra)


def _replicate_contributions(ctx: _Chunks, r: int, a: int, z: int, bb: TargetBounds, tord,
                             ucnt_all):
    """Matches of the targets ``a:z`` in replicate ``r``: counts, (target, record, value)
    contributions, ``Pr(J = n+1)`` and, with fallback cells, the targets spreading their mass
    over their fallback set and its per-record value."""
    prep, rule, R = ctx.prep, ctx.rule, ctx.prep.R
    idx = _engine.replicate_index(prep, rule, r)
    cnt, lst = idx.match(ctx.tkey[a:z], bb, True, tord)
    fb = None
    tr = np.repeat(np.arange(z - a), cnt)
    kk = lst
    if ctx.use_fb and (cnt == 0).any():
        emp = np.flatnonzero(cnt == 0)
        cnt = cnt.copy()
        if ctx.cells:
            fb = emp[ucnt_all[emp] > 0]
            cnt[emp] = ucnt_all[emp]
        else:
            uidx = _engine.us_index(prep, rule)
            ucnt, ulst = uidx.match(ctx.tkey_us[a:z][emp],
                                    bb.rows(emp).cols(slice(0, ctx.q_us)), True)
            tr = np.concatenate([tr, np.repeat(emp, ucnt)])
            kk = np.concatenate([lst, ulst])
            cnt[emp] = ucnt
    invf = None if ctx.inv_f is None else ctx.inv_f[a:z, r]
    p, po = _engine.record_prob(cnt, invf)
    fbv = None if fb is None else p[fb] / R
    return cnt, tr, kk, p[tr] / R, po, fb, fbv


def _fallback_cells(ctx: _Chunks, a: int, m: int, outs, rows, key, data, reps, ucnt_all):
    """Fallback contributions of the chunk's targets in compact form.

    Returns the value of the records matched only through the fallback (``v_fb``), how many
    such records each target has (``n_extra``), and ``key``/``data``/``reps`` extended by the
    fallback contributions of directly matched records inside a target's fallback set."""
    n = ctx.prep.n
    R = ctx.prep.R
    v_fb = np.zeros(m)
    n_extra = np.zeros(m, dtype=np.int64)
    if not (ctx.cells and any(o[5] is not None and o[5].size for o in outs)):
        return v_fb, n_extra, key, data, reps
    # fallback contributions (target, replicate, value), in replicate order
    f_t = np.concatenate([o[5] for o in outs if o[5] is not None])
    f_v = np.concatenate([o[6] for o in outs if o[5] is not None])
    f_r = np.repeat(np.arange(R), [0 if o[5] is None else len(o[5]) for o in outs])
    o_f = np.argsort(f_t, kind="stable")
    f_t, f_v, f_r = f_t[o_f], f_v[o_f], f_r[o_f]
    # the value of the records matched only through the fallback
    ft_u, fv_u = _segment_sums(f_t, f_v)
    v_fb[ft_u] = fv_u
    # directly matched records of a target with fallback replicates: add the fallback
    # contributions of the records inside its set
    has_fb = np.zeros(m, dtype=bool)
    has_fb[ft_u] = True
    pair = np.unique(key[has_fb[rows]])  # direct matches of those targets
    p_row = pair // n
    p_col = pair - p_row * n
    inside = ctx.fsets.contains(p_row + a, p_col)
    ins_row = p_row[inside]
    n_extra[ft_u] = ucnt_all[ft_u] - np.bincount(ins_row, minlength=m)[ft_u]
    # each inside pair takes its target's fallback contributions
    f_start = np.searchsorted(f_t, ins_row, side="left")
    f_len = np.searchsorted(f_t, ins_row, side="right") - f_start
    tot = int(f_len.sum())
    if tot:
        rep_pair = np.repeat(np.arange(ins_row.size), f_len)
        off = np.arange(tot) - np.repeat(np.cumsum(f_len) - f_len, f_len)
        src = f_start[rep_pair] + off
        key = np.concatenate([key, pair[inside][rep_pair]])
        data = np.concatenate([data, f_v[src]])
        reps = np.concatenate([reps, f_r[src]])
    return v_fb, n_extra, key, data, reps


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


def _pool_chunk(ctx: _Chunks, acc: _Pooled, a: int, z: int) -> float:
    """Pooled probabilities, top sets and declared matches of the targets ``a:z``.

    Returns the stored pairs per target (sizes the next chunk)."""
    R, n = ctx.prep.R, ctx.prep.n
    m = z - a
    bb = ctx.bounds.rows(slice(a, z))
    # merge sweep (O(n) per column) for large chunks, binary searches for small ones: the same
    # slices either way
    sweep = R > 1 and m * max(np.log2(max(n, 2)), 1.0) >= n
    tord = _engine.target_orders(ctx.tkey[a:z], bb, ctx.compiled) if sweep else None
    # fallback-set sizes of the chunk's targets (the same in every replicate)
    ucnt_all = None
    if ctx.cells:
        ucnt_all, _ = ctx.fsets.index.match(ctx.tkey_us[a:z], bb.cols(slice(0, ctx.q_us)), False)
    outs = _engine.parallel(
        lambda r: _replicate_contributions(ctx, r, a, z, bb, tord, ucnt_all), range(R),
        progressbar=False, description="", threads=ctx.compiled,
    )
    for cnt, _, _, _, po, _, _ in outs:
        acc.ever[a:z] |= cnt > 0
        acc.p_out[a:z] += po / R
        if ctx.inv_f is None:
            acc.p_un[a:z] += (cnt == 0) / R
    # every (target, record, replicate) contribution, keyed by (target, record)
    rows = np.concatenate([o[1] for o in outs])
    cols = np.concatenate([o[2] for o in outs])
    data = np.concatenate([o[3] for o in outs])
    reps = np.repeat(np.arange(R), [len(o[1]) for o in outs])
    key = rows.astype(np.int64) * n + cols
    v_fb, n_extra, key, data, reps = _fallback_cells(ctx, a, m, outs, rows, key, data, reps,
                                                     ucnt_all)
    # CSR of the chunk: sort by (row, col, replicate) and sum over replicates in replicate order
    if (m * n + 1) * R < 2**62:
        # unique sort keys, so every sort gives the same permutation; the stable one (timsort)
        # is the fast one here: the keys come as R runs (one per replicate) already in
        # (target, record) order, which it merges instead of sorting from scratch
        order = np.argsort(key * R + reps, kind="stable")
    else:  # pragma: no cover - beyond 2**62 (target, record, replicate) triples
        order = np.lexsort((reps, key))
    key, data = _segment_sums(key[order], data[order])
    del order, reps
    idx_dtype = np.int32 if n < 2**31 - 1 else np.int64
    r_of = key // n if key.size else np.zeros(0, dtype=np.int64)
    k_of = (key - r_of * n).astype(idx_dtype)
    nnz_row = np.bincount(r_of, minlength=m)
    acc.total += key.size
    _check_size(ctx, acc.total)
    _top_sets(ctx, acc, a, z, data, r_of, k_of, nnz_row, v_fb, n_extra)
    acc.row_nnz[a:z] = nnz_row
    acc.ind_blocks.append(k_of)
    acc.dat_blocks.append(data)
    return max(key.size / max(m, 1), 1.0)  # stored pairs only


def _top_sets(ctx: _Chunks, acc: _Pooled, a: int, z: int, data, r_of, k_of, nnz_row, v_fb,
              n_extra) -> None:
    """Top set (with the package's tie tolerance), ``c``, ``T`` and the declared match of the
    targets ``a:z`` from their pooled probabilities."""
    prep = ctx.prep
    m = z - a
    pm = np.zeros(m)
    has = nnz_row > 0
    rec = prep.rec[a:z]
    if data.size:
        indptr = np.concatenate([[0], np.cumsum(nnz_row)])
        pm[has] = np.maximum.reduceat(data, indptr[:-1][has])
    cell = n_extra > 0
    pm = np.where(cell, np.maximum(pm, v_fb), pm)
    if data.size:
        tied = ties(data, pm[r_of]) & (data > 0)
        c_blk = np.bincount(r_of[tied], minlength=m)
        own_tied = tied & (k_of.astype(np.int64) == rec[r_of])
        T_blk = np.bincount(r_of[own_tied], minlength=m) > 0
        own_stored = np.bincount(r_of[k_of.astype(np.int64) == rec[r_of]], minlength=m) > 0
    else:
        c_blk = np.zeros(m, dtype=np.int64)
        T_blk = np.zeros(m, dtype=bool)
        own_stored = np.zeros(m, dtype=bool)
    if cell.any():
        cell_tied = cell & ties(v_fb, pm) & (v_fb > 0)
        c_blk = c_blk + np.where(cell_tied, n_extra, 0)
        # own record among the fallback-only records of a tied set
        chk = np.flatnonzero(cell_tied & ~own_stored & (rec >= 0))
        if chk.size:
            T_blk[chk] |= ctx.fsets.contains(chk + a, rec[chk])
        acc.fb_value[a:z] = np.where(cell, v_fb, 0.0)
        acc.fb_extra[a:z] = n_extra
    acc.p_max[a:z] = pm
    dec = _engine.declare(pm, acc.p_out[a:z], ctx.strategy)
    acc.c[a:z] = np.where(dec, c_blk, 0)
    acc.T[a:z] = dec & T_blk & prep.in_sample[a:z]


@dataclass(frozen=True)
class PooledProbabilities:
    """Pooled match probabilities ``π_τ(k)`` [N_T, n] in compact form.

    ``explicit`` holds every record matched directly in some replicate; each target's fallback
    set (methods, Matching rules) contributes ``fallback_value[τ]`` to each of its
    ``fallback_extra[τ]`` other records, which are enumerated from ``fallback_sets`` only when asked
    for (:meth:`row`, :meth:`tocsr`).
    """

    explicit: sp.csr_matrix
    fallback_value: np.ndarray
    fallback_extra: np.ndarray
    fallback_sets: FallbackSets | GroupedFallbackSets | None

    @property
    def shape(self) -> tuple[int, int]:
        return self.explicit.shape

    @property
    def nnz(self) -> int:
        """Number of records with ``π_τ(k) > 0`` over all targets."""
        return int(self.explicit.nnz + self.fallback_extra.sum())

    def _rows(self, rows: np.ndarray):
        """(indptr, indices, data) of the full rows ``rows`` (ascending columns)."""
        ex = self.explicit
        ip = ex.indptr.astype(np.int64)
        e_len = ip[rows + 1] - ip[rows]
        e_tr = np.repeat(np.arange(rows.size), e_len)
        e_pos = np.arange(int(e_len.sum())) - np.repeat(np.cumsum(e_len) - e_len, e_len) \
            + np.repeat(ip[rows], e_len)
        e_col = ex.indices[e_pos].astype(np.int64)
        e_dat = ex.data[e_pos]
        has = self.fallback_extra[rows] > 0
        if self.fallback_sets is None or not has.any():
            t, col, dat = e_tr, e_col, e_dat
        else:
            sub = np.flatnonzero(has)
            cnt, mem = self.fallback_sets.members(rows[sub])
            f_tr = np.repeat(sub, cnt)
            # members matched directly are already explicit (with their own value)
            n = self.shape[1]
            f_key = f_tr * n + mem
            e_key = e_tr * n + e_col
            keep = ~np.isin(f_key, e_key)
            f_tr, mem = f_tr[keep], mem[keep]
            t = np.concatenate([e_tr, f_tr])
            col = np.concatenate([e_col, mem])
            dat = np.concatenate([e_dat, self.fallback_value[rows][f_tr]])
            o = np.lexsort((col, t))
            t, col, dat = t[o], col[o], dat[o]
        indptr = np.zeros(rows.size + 1, dtype=np.int64)
        np.cumsum(np.bincount(t, minlength=rows.size), out=indptr[1:])
        return indptr, col, dat

    def row(self, i: int) -> tuple[np.ndarray, np.ndarray]:
        """Records ``k`` with ``π_i(k) > 0`` (ascending) and their probabilities."""
        _, col, dat = self._rows(np.array([int(i)], dtype=np.int64))
        return col, dat

    def tocsr(self, max_nnz: int | None = None) -> sp.csr_matrix:
        """The full matrix as ``scipy.sparse.csr_matrix`` (every fallback set enumerated).

        Raises
        ------
        ValidationError
            If it would hold more than ``max_nnz`` (default ``MAX_NNZ``) non-zero entries.
        """
        import scipy.sparse as sp

        from bayes_risk.exceptions import ValidationError

        limit = _engine.MAX_NNZ if max_nnz is None else max_nnz
        N, n = self.shape
        if self.fallback_sets is None or not (self.fallback_extra > 0).any():
            return self.explicit
        if self.nnz > limit:
            raise ValidationError(
                f"the pooled match probabilities hold {self.nnz:,} non-zero entries (more than "
                f"{limit:,}), most of them from the fallback sets; read them row by row "
                "(result.pooled.row(i)) or use fallback='none'.",
                code="PROBLEM_TOO_LARGE"
            )
        indptrs, cols, dats = [], [], []
        step = 65_536
        for a in range(0, N, step):
            ip, col, dat = self._rows(np.arange(a, min(N, a + step), dtype=np.int64))
            indptrs.append(np.diff(ip))
            cols.append(col)
            dats.append(dat)
        indptr = np.zeros(N + 1, dtype=np.int64)
        np.cumsum(np.concatenate(indptrs) if indptrs else np.zeros(0, np.int64), out=indptr[1:])
        idx_dtype = self.explicit.indices.dtype
        return sp.csr_matrix(
            (np.concatenate(dats), np.concatenate(cols).astype(idx_dtype),
             indptr.astype(np.int32) if indptr[-1] < 2**31 - 1 else indptr),
            shape=(N, n),
        )
