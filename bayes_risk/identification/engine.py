"""Per-replicate match sets and match probabilities (Drechsler & Reiter 2008 §3–§4.6).

No ``O(N_T · n)`` scan. In every replicate the records are grouped by their exact-match key (a
mixed-radix code of the categorical columns) and, inside each group, sorted by every radius
column. A target's window on a column is then a contiguous slice of its group found by binary
search; the column with the smallest slice is scanned and the other columns (and the ellipse
test) filter its candidates. The compiled path (numba kernels in ``_kernels``, ``cache=True``)
counting-sorts the records by group and searches inside the group; the pure-numpy path (small
problems, where importing numba and loading its caches would cost more than it saves; numba
not importable; or ``USE_NUMBA = False``) searches an integer composite ``group · (L+1) + rank``
with ``numpy.searchsorted`` and filters candidates in chunks. Both are tested against each other
and against a brute-force scan. Work is chunked over targets so memory stays bounded; pooled
probabilities are stored as a ``scipy.sparse`` CSR matrix ``[N_T, n]`` of the directly matched
records plus, per target, its fallback set (unsynthesized key and windows) and the one
probability its records share; replicates run on two threads on the compiled path (the kernels
release the GIL; results do not depend on the number of threads).
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from bayes_risk._numeric import ties
from bayes_risk._progress import progress
from bayes_risk.identification.matching import MatchRule, target_radii, window_bounds

if TYPE_CHECKING:  # scipy.sparse is imported where the pooled matrix is built
    import scipy.sparse as sp

__all__ = [
    "Prepared",
    "TargetBounds",
    "ReplicateIndex",
    "PerDatasetOutput",
    "PooledOutput",
    "run_per_dataset",
    "run_pooled",
    "FallbackSets",
    "fallback_sets",
    "PooledProbabilities",
    "USE_NUMBA",
]

#: compiled (numba) kernels: ``True`` always (when numba is importable), ``False`` never (the
#: pure-numpy twin), ``None`` (default) when the problem is large enough to repay importing numba
#: and loading the cached kernels (≈ 0.4 s of CPU; see :func:`_compiled`)
USE_NUMBA: bool | None = None
#: automatic choice: the compiled path from this many (record + target) x replicate pairs on
COMPILED_MIN_WORK = 300_000
_CHUNK_CANDIDATES = 1 << 22  # candidate pairs examined (or buffered) at once
_CHUNK_TARGETS = 200_000


# ----------------------------------------------------------------------------------------------
# optional numba kernels (bayes_risk.identification._kernels; compiled once, cached on disk)
# ----------------------------------------------------------------------------------------------
_HAVE_NUMBA = importlib.util.find_spec("numba") is not None


def _nb():
    """The compiled kernels (imports numba on first use)."""
    from bayes_risk.identification import _kernels

    return _kernels


def _compiled(prep: Prepared) -> bool:
    """Whether this problem runs on the compiled kernels (same results either way: both paths are
    tested against each other and against a brute-force scan)."""
    if not _HAVE_NUMBA or USE_NUMBA is False:
        return False
    if USE_NUMBA:
        return True
    return (prep.n + prep.n_targets) * max(prep.R, 1) >= COMPILED_MIN_WORK


def _numpy_filter(orders, sv, prim, s, e, lo, hi, ell, centre, scale, strict, want_list):
    """Pure-numpy twin of the numba kernel (chunked candidate expansion).

    ``sv[p, j]`` holds column ``j``'s values in the sort order of column ``p`` (as the compiled
    index), so a target's candidates read consecutive memory; per-target bounds are repeated
    over its candidates rather than gathered.
    """
    n_t = len(s)
    q, n = sv.shape[1], sv.shape[2]
    flat = sv.reshape(-1)
    oflat = orders.reshape(-1)
    cnt = np.maximum(e - s, 0)
    counts = np.zeros(n_t, dtype=np.int64)
    lists: list[np.ndarray] = []
    csum = np.cumsum(cnt)
    start = 0
    while start < n_t:
        base = csum[start - 1] if start > 0 else 0
        stop = int(np.searchsorted(csum, base + _CHUNK_CANDIDATES, side="right"))
        stop = max(stop, start + 1)
        c = cnt[start:stop]
        tot = int(c.sum())
        if tot:
            offs = np.cumsum(c) - c
            # position in the primary column's order, and its offset in sv / orders
            pos = np.arange(tot) + np.repeat(s[start:stop] - offs, c)
            p_rep = np.repeat(prim[start:stop], c)
            at = p_rep * (q * n) + pos
            ok = np.ones(tot, dtype=bool)
            for j in range(q):
                v = flat[at + j * n]
                ok &= v >= np.repeat(lo[start:stop, j], c)
                ok &= v <= np.repeat(hi[start:stop, j], c)
            if ell:
                acc = np.zeros(tot)
                for j in range(q):
                    sc = np.repeat(scale[start:stop, j], c)
                    v = flat[at + j * n]
                    with np.errstate(divide="ignore", invalid="ignore"):
                        d = np.where(sc > 0, (v - np.repeat(centre[start:stop, j], c)) / sc, 0.0)
                    acc += d * d
                ok &= (acc < 1.0) if strict else (acc <= 1.0)
            rep = np.repeat(np.arange(stop - start), c)
            counts[start:stop] = np.bincount(rep[ok], minlength=stop - start)
            if want_list:
                lists.append(oflat[(p_rep * n + pos)[ok]])
        start = stop
    if want_list:
        return counts, (np.concatenate(lists) if lists else np.zeros(0, dtype=np.int64))
    return counts, None


def _filter(orders, sv, prim, s, e, lo, hi, ell, centre, scale, strict, want_list):
    return _numpy_filter(orders, sv, prim, s, e, lo, hi, ell, centre, scale, strict, want_list)


# ----------------------------------------------------------------------------------------------
# data structures
# ----------------------------------------------------------------------------------------------
def mixed_radix(codes: np.ndarray, sizes: Sequence[int]) -> np.ndarray:
    """Combine integer codes ``[N, e]`` into one int64 key per row (``-1`` if any code < 0)."""
    N = codes.shape[0]
    key = np.zeros(N, dtype=np.int64)
    if codes.shape[1] == 0:
        return key
    if float(np.prod([max(int(d), 1) for d in sizes], dtype=np.float64)) > 2.0**62:
        from bayes_risk.exceptions import ValidationError

        raise ValidationError(
            "the exact-match columns have more than 2**62 combinations of levels; match fewer "
            "categorical columns exactly (or give high-cardinality numeric ones a radius)."
        )
    stride = 1
    for j, d in enumerate(sizes):
        key += codes[:, j].astype(np.int64) * stride
        stride *= max(int(d), 1)
    key[(codes < 0).any(axis=1)] = -1
    return key


@dataclass
class Prepared:
    """Encoded records, replicates and targets (built by :mod:`bayes_risk.identification.api`).

    Exact columns are integer codes (``-1`` = a value absent from every released table), radius
    columns float64. Unsynthesized columns of the records come from the original; synthesized
    known columns from each replicate ``r``.
    """

    n: int
    R: int
    rule: MatchRule
    exact_sizes: dict[str, int]
    rec_exact_us: np.ndarray  # [n, e_us]
    rec_radius_us: np.ndarray  # [q_us, n]
    rep_exact_s: list[np.ndarray]  # R x [n, e_s]
    rep_radius_s: list[np.ndarray]  # R x [q_s, n]
    tgt_exact: np.ndarray  # [N_T, e_us + e_s]
    tgt_radius: np.ndarray  # [N_T, q_us + q_s]
    confidential_radius: dict[str, np.ndarray]
    in_sample: np.ndarray  # bool [N_T]
    rec: np.ndarray  # int64 [N_T], -1 out of sample
    _cache: dict = field(default_factory=dict, repr=False)

    @property
    def n_targets(self) -> int:
        return self.tgt_exact.shape[0]


@dataclass
class TargetBounds:
    """Per-target windows for one rule: bounds ``[lo, hi]`` and ellipse centre/scale."""

    lo: np.ndarray
    hi: np.ndarray
    centre: np.ndarray
    scale: np.ndarray
    ellipse: bool
    strict: bool

    def cols(self, idx: np.ndarray | slice) -> TargetBounds:
        return TargetBounds(
            self.lo[:, idx], self.hi[:, idx], self.centre[:, idx], self.scale[:, idx],
            self.ellipse, self.strict,
        )

    def rows(self, idx: np.ndarray | slice) -> TargetBounds:
        return TargetBounds(
            self.lo[idx], self.hi[idx], self.centre[idx], self.scale[idx], self.ellipse,
            self.strict,
        )


def target_bounds(prep: Prepared, rule: MatchRule) -> TargetBounds:
    """Windows of every target on every radius column (methods, Matching rules)."""
    cols = rule.radius_cols
    N = prep.n_targets
    tv = {c: prep.tgt_radius[:, j] for j, c in enumerate(cols)}
    R = target_radii(rule, tv, prep.confidential_radius)
    q = len(cols)
    lo = np.empty((N, q))
    hi = np.empty((N, q))
    centre = np.empty((N, q))
    scale = np.empty((N, q))
    for j, c in enumerate(cols):
        exact_zero = (R[c] == 0) if rule.radius_type == "quantile_sd" else None
        lo[:, j], hi[:, j] = window_bounds(rule, tv[c], R[c], exact_zero=exact_zero)
        centre[:, j] = tv[c]
        scale[:, j] = R[c]
    ell = rule.shape in ("ellipse", "mahalanobis")  # mahalanobis: values already whitened
    return TargetBounds(lo, hi, centre, scale, ell, ell and rule.window == "open")


class ReplicateIndex:
    """Records of one replicate grouped by exact key and sorted by each radius column."""

    def __init__(self, rec_key: np.ndarray, vals: np.ndarray) -> None:
        self.uk, g = np.unique(rec_key, return_inverse=True)
        g = g.astype(np.int64).ravel()
        self.key = rec_key
        self.vals = np.ascontiguousarray(vals, dtype=np.float64)
        q = self.vals.shape[0]
        n = len(rec_key)
        if q == 0:
            order = np.argsort(g, kind="stable")
            self.orders = order[None, :].astype(np.int64)
            gs = g[order]
            self.gstart = np.searchsorted(gs, np.arange(len(self.uk)), side="left")
            self.gend = np.searchsorted(gs, np.arange(len(self.uk)), side="right")
            self.u = []
            self.comp = []
            self.sv = np.zeros((1, 0, n))
            return
        self.orders = np.empty((q, n), dtype=np.int64)
        self.u = []
        self.comp = []
        for j in range(q):
            u = np.unique(self.vals[j])
            rank = np.searchsorted(u, self.vals[j])
            comp = g * (len(u) + 1) + rank
            order = np.argsort(comp, kind="stable")
            self.orders[j] = order
            self.u.append(u)
            self.comp.append(comp[order])
        # sv[p, j]: column j in the order of column p (contiguous candidate scans)
        self.sv = np.ascontiguousarray(self.vals[:, self.orders].transpose(1, 0, 2))

    def group_of(self, tgt_key: np.ndarray) -> np.ndarray:
        """Dense group id of each target key (``-1``: no record has this key)."""
        if len(self.uk) == 0:
            return np.full(len(tgt_key), -1, dtype=np.int64)
        pos = np.searchsorted(self.uk, tgt_key)
        posc = np.minimum(pos, len(self.uk) - 1)
        ok = (tgt_key >= 0) & (self.uk[posc] == tgt_key)
        return np.where(ok, posc, -1).astype(np.int64)

    def ranges(self, tgt_key: np.ndarray, lo: np.ndarray, hi: np.ndarray):
        """Slices ``[s, e)`` of every target in each column's sort order, ``[N, max(q, 1)]``."""
        g = self.group_of(tgt_key)
        bad = g < 0
        gc = np.where(bad, 0, g)
        q = self.vals.shape[0]
        N = len(tgt_key)
        if q == 0:
            if len(self.uk) == 0:
                z = np.zeros((N, 1), dtype=np.int64)
                return z, z.copy()
            s = np.where(bad, 0, self.gstart[gc])[:, None]
            e = np.where(bad, 0, self.gend[gc])[:, None]
            return s.astype(np.int64), e.astype(np.int64)
        s = np.empty((N, q), dtype=np.int64)
        e = np.empty((N, q), dtype=np.int64)
        for j in range(q):
            u = self.u[j]
            L = len(u) + 1
            qlo = np.searchsorted(u, lo[:, j], side="left")
            qhi = np.searchsorted(u, hi[:, j], side="right")
            base = gc * L
            sj = np.searchsorted(self.comp[j], base + qlo, side="left")
            ej = np.searchsorted(self.comp[j], base + qhi, side="left")
            ej = np.maximum(ej, sj)
            sj[bad] = 0
            ej[bad] = 0
            s[:, j] = sj
            e[:, j] = ej
        return s, e

    def match(self, tgt_key: np.ndarray, b: TargetBounds, want_list: bool, torder=None):
        """Match counts ``[N]`` and, if asked, the matched record indices (target-major order).

        ``torder`` (used by the compiled path only) are the targets' (key, bound) orders."""
        s, e = self.ranges(tgt_key, b.lo, b.hi)
        q = self.vals.shape[0]
        if q <= 1 and not b.ellipse:
            s0, e0 = s[:, 0], e[:, 0]
            counts = np.maximum(e0 - s0, 0)
            if not want_list:
                return counts, None
            tot = int(counts.sum())
            rep = np.repeat(np.arange(len(s0)), counts)
            offs = np.cumsum(counts) - counts
            pos = np.arange(tot) - offs[rep] + s0[rep]
            return counts, self.orders[0, pos]
        cnt = np.maximum(e - s, 0)
        prim = np.argmin(cnt, axis=1)
        ar = np.arange(len(prim))
        sp_, ep_ = s[ar, prim], e[ar, prim]
        return _filter(
            self.orders, self.sv, prim, sp_, ep_, b.lo, b.hi, b.ellipse, b.centre, b.scale,
            b.strict, want_list,
        )

    def own(self, tgt_key: np.ndarray, b: TargetBounds, rec: np.ndarray) -> np.ndarray:
        """Whether each target's own record (``rec >= 0``) is in its match set."""
        ok = rec >= 0
        k = np.where(ok, rec, 0)
        m = ok & (tgt_key >= 0) & (self.key[k] == tgt_key)
        q = self.vals.shape[0]
        for j in range(q):
            v = self.vals[j, k]
            m &= (v >= b.lo[:, j]) & (v <= b.hi[:, j])
        if b.ellipse and q:
            acc = np.zeros(len(k))
            for j in range(q):
                sc = b.scale[:, j]
                with np.errstate(divide="ignore", invalid="ignore"):
                    d = np.where(sc > 0, (self.vals[j, k] - b.centre[:, j]) / sc, 0.0)
                acc += d * d
            m &= (acc < 1.0) if b.strict else (acc <= 1.0)
        return m


class NumbaIndex:
    """Compiled twin of :class:`ReplicateIndex` (same answers; tested against it)."""

    def __init__(self, rec_key: np.ndarray, vals: np.ndarray, n_cells: int,
                 orders: np.ndarray | None = None) -> None:
        self.key = rec_key
        self.vals = np.ascontiguousarray(vals, dtype=np.float64)
        n = len(rec_key)
        if n_cells <= max(4 * n, 1 << 16):
            self.uk = None
            G = int(n_cells)
            rec_g = rec_key.astype(np.int64)
        else:
            self.uk, rec_g = np.unique(rec_key, return_inverse=True)
            G = len(self.uk)
            rec_g = rec_g.astype(np.int64).ravel()
        if orders is None:
            orders = np.empty((self.vals.shape[0], n), dtype=np.int64)
            for j in range(self.vals.shape[0]):
                orders[j] = np.argsort(self.vals[j])
        self.gstart, self.perms, self.sv = _nb().build(rec_g, G, self.vals, orders)

    def group_of(self, tgt_key: np.ndarray) -> np.ndarray:
        if self.uk is None:
            return tgt_key.astype(np.int64)
        return ReplicateIndex.group_of(self, tgt_key)

    def match(self, tgt_key: np.ndarray, b: TargetBounds, want_list: bool, torder=None):
        tg = self.group_of(tgt_key)
        lo = np.ascontiguousarray(b.lo)
        hi = np.ascontiguousarray(b.hi)
        cen = np.ascontiguousarray(b.centre)
        sc = np.ascontiguousarray(b.scale)
        if torder is not None and self.vals.shape[0] > 0:
            prim, bs, blen = _nb().ranges_sweep(self.gstart, self.sv, tg, lo, hi, torder[0],
                                              torder[1])
        else:
            prim, bs, blen = _nb().ranges(self.gstart, self.sv, tg, lo, hi)
        if not want_list:
            dummy = np.zeros(1, dtype=np.int64)
            counts = _nb().scan(self.perms, self.sv, prim, bs, blen, lo, hi, bool(b.ellipse),
                                cen, sc, bool(b.strict), dummy, dummy, False)
            return counts, None
        # one scan: write into slots sized by the slice lengths, then compact; sub-blocks of
        # targets keep the slot buffer below _CHUNK_CANDIDATES entries
        csum = np.cumsum(blen)
        counts = np.zeros(len(tg), dtype=np.int64)
        pieces = []
        start = 0
        while start < len(tg):
            base = csum[start - 1] if start else 0
            stop = int(np.searchsorted(csum, base + _CHUNK_CANDIDATES, side="right"))
            stop = max(stop, start + 1)
            bl = blen[start:stop]
            offsets = np.cumsum(bl) - bl
            buf = np.empty(int(bl.sum()), dtype=np.int64)
            cnt = _nb().scan(self.perms, self.sv, prim[start:stop], bs[start:stop], bl,
                           lo[start:stop], hi[start:stop], bool(b.ellipse), cen[start:stop],
                           sc[start:stop], bool(b.strict), offsets, buf, True)
            counts[start:stop] = cnt
            pieces.append(_nb().compact(buf, offsets, cnt))
            start = stop
        return counts, (np.concatenate(pieces) if pieces else np.zeros(0, dtype=np.int64))

    def candidates(self, tgt_key: np.ndarray, b: TargetBounds) -> np.ndarray:
        """Length of the scanned slice per target (bounds the matches; sizes chunks)."""
        tg = self.group_of(tgt_key)
        return _nb().ranges(self.gstart, self.sv, tg, np.ascontiguousarray(b.lo),
                          np.ascontiguousarray(b.hi))[2]

    own = ReplicateIndex.own


def _make_index(rec_key: np.ndarray, vals: np.ndarray, n_cells: int, compiled: bool,
                orders: np.ndarray | None = None):
    if compiled:
        return NumbaIndex(rec_key, vals, n_cells, orders)
    return ReplicateIndex(rec_key, vals)


# ----------------------------------------------------------------------------------------------
# keys and indexes
# ----------------------------------------------------------------------------------------------
def _sizes(prep: Prepared, cols: Sequence[str]) -> list[int]:
    return [prep.exact_sizes[c] for c in cols]


def target_orders(tkey: np.ndarray, b: TargetBounds, compiled: bool):
    """Targets sorted by (key, lower bound) and (key, upper bound) for every radius column;
    computed once and reused by every replicate (compiled path)."""
    if not compiled or b.lo.shape[1] == 0:
        return None
    q = b.lo.shape[1]
    olo = np.empty((q, len(tkey)), dtype=np.int64)
    ohi = np.empty((q, len(tkey)), dtype=np.int64)
    for j in range(q):
        olo[j] = np.lexsort((b.lo[:, j], tkey))
        ohi[j] = np.lexsort((b.hi[:, j], tkey))
    return olo, ohi


def _n_cells(prep: Prepared, cols: Sequence[str]) -> int:
    if not cols:
        return 1
    return int(np.prod([max(prep.exact_sizes[c], 1) for c in cols], dtype=np.float64))


#: ``Prepared._cache`` flag: the preparation serves one run only (``identification_risk``), so
#: indices used once (per-dataset aggregation) are not kept (a radius sweep keeps them)
SINGLE_RUN = "single_run"


def _replicate_index(prep: Prepared, rule: MatchRule, r: int, keep: bool = True
                     ) -> ReplicateIndex:
    compiled = _compiled(prep)
    key = ("rep", r, rule.exact_cols, rule.radius_cols, compiled)
    idx = prep._cache.get(key)
    if idx is None:
        codes = np.concatenate([prep.rec_exact_us, prep.rep_exact_s[r]], axis=1)
        rk = mixed_radix(codes, _sizes(prep, rule.exact_cols))
        vals = np.concatenate([prep.rec_radius_us, prep.rep_radius_s[r]], axis=0)
        orders = None
        if compiled:
            # the sort order of an unsynthesized column is the same in every replicate
            okey = ("us_order", rule.radius_us)
            us_ord = prep._cache.get(okey)
            if us_ord is None:
                us_ord = np.empty((len(rule.radius_us), prep.n), dtype=np.int64)
                for j in range(len(rule.radius_us)):
                    us_ord[j] = np.argsort(prep.rec_radius_us[j])
                prep._cache[okey] = us_ord
            orders = np.empty((vals.shape[0], prep.n), dtype=np.int64)
            orders[: len(rule.radius_us)] = us_ord
            for j in range(len(rule.radius_us), vals.shape[0]):
                orders[j] = np.argsort(vals[j])
        idx = _make_index(rk, vals, _n_cells(prep, rule.exact_cols), compiled, orders)
        if keep:
            prep._cache[key] = idx
    return idx


def _us_index(prep: Prepared, rule: MatchRule) -> ReplicateIndex:
    compiled = _compiled(prep)
    key = ("us", rule.exact_us, rule.radius_us, compiled)
    idx = prep._cache.get(key)
    if idx is None:
        rk = mixed_radix(prep.rec_exact_us, _sizes(prep, rule.exact_us))
        idx = _make_index(rk, prep.rec_radius_us, _n_cells(prep, rule.exact_us), compiled)
        prep._cache[key] = idx
    return idx


def _target_keys(prep: Prepared, rule: MatchRule) -> tuple[np.ndarray, np.ndarray]:
    e_us = len(rule.exact_us)
    full = mixed_radix(prep.tgt_exact, _sizes(prep, rule.exact_cols))
    us = mixed_radix(prep.tgt_exact[:, :e_us], _sizes(prep, rule.exact_us))
    return full, us


# ----------------------------------------------------------------------------------------------
# probabilities and strategies
# ----------------------------------------------------------------------------------------------
def _record_prob(n_match: np.ndarray, inv_f: np.ndarray | None):
    """Per-record probability and Pr(J = n+1) of one replicate (D&R 2008 eqs. 6–7)."""
    n = n_match.astype(np.float64)
    with np.errstate(divide="ignore"):
        unif = np.where(n > 0, 1.0 / np.maximum(n, 1.0), 0.0)
    if inv_f is None:
        return unif, np.zeros_like(n)
    p = np.where(n > 0, np.minimum(inv_f, unif), 0.0)
    p_out = np.where(n > 0, np.maximum(0.0, 1.0 - n * p), 1.0)
    p_out = np.where(inv_f >= unif, np.where(n > 0, 0.0, 1.0), p_out)
    return p, p_out


def declare(p_max: np.ndarray, p_out: np.ndarray, strategy) -> np.ndarray:
    """Declared-match rule of Drechsler & Reiter 2008 §4.3 (ties within the tolerance)."""
    has = p_max > 0
    if strategy == "always":
        return has
    if strategy == "not_if_max":
        return has & ~((p_out > p_max) & ~ties(p_out, p_max))
    kind, gamma = strategy
    return has & (p_out < gamma) & ~ties(p_out, gamma)


# ----------------------------------------------------------------------------------------------
# per-dataset aggregation (Hornby & Hu)
# ----------------------------------------------------------------------------------------------
@dataclass
class PerDatasetOutput:
    c: np.ndarray
    T: np.ndarray
    declared: np.ndarray
    p_match: np.ndarray
    p_out: np.ndarray
    n_match: np.ndarray
    no_match_any: np.ndarray


N_THREADS = max(1, min(2, os.cpu_count() or 1))


def _parallel(fn, items, *, progressbar: bool, description: str, threads: bool) -> list:
    """Run ``fn`` over items; with the compiled kernels (``threads``: they release the GIL) on
    threads.

    Results never depend on the number of threads (no randomness, each item writes its own
    slice)."""
    items = list(items)
    if N_THREADS > 1 and threads and len(items) > 1:
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(N_THREADS) as ex:
            futs = [ex.submit(fn, it) for it in items]
            out = []
            for f in progress(futs, total=len(futs), description=description,
                              enabled=progressbar):
                out.append(f.result())
            return out
    return [fn(it) for it in progress(items, total=len(items), description=description,
                                      enabled=progressbar)]


def _chunks(N: int, size: int):
    return [(a, min(a + size, N)) for a in range(0, N, size)] or [(0, 0)]


def run_per_dataset(
    prep: Prepared,
    rule: MatchRule,
    *,
    inv_f: np.ndarray | None,
    strategy,
    fallback: str,
    progressbar: bool = False,
) -> PerDatasetOutput:
    """Counts and own-record flags within each replicate (per-dataset variant).

    ``inv_f``: ``None`` (known membership) or ``1/F`` (or ``E[1/F]``) as ``[N_T, R]``.
    """
    N, R = prep.n_targets, prep.R
    b = target_bounds(prep, rule)
    tkey, tkey_us = _target_keys(prep, rule)
    q_us = len(rule.radius_us)
    n_match = np.zeros((N, R), dtype=np.int64)
    own = np.zeros((N, R), dtype=bool)
    us_counts = us_own = None

    chunks = _chunks(N, _CHUNK_TARGETS)
    compiled = _compiled(prep)
    tords = {(a, z): target_orders(tkey[a:z], b.rows(slice(a, z)), compiled) for a, z in chunks}

    def one(r: int) -> None:
        idx = _replicate_index(prep, rule, r, keep=not prep._cache.get(SINGLE_RUN))
        for a, z in chunks:
            bb = b.rows(slice(a, z))
            cnt, _ = idx.match(tkey[a:z], bb, False, tords[(a, z)])
            n_match[a:z, r] = cnt
            own[a:z, r] = idx.own(tkey[a:z], bb, prep.rec[a:z])

    _parallel(one, range(R), progressbar=progressbar, description="identification",
              threads=compiled)
    no_match_any = np.zeros(N, dtype=bool)
    if fallback == "unsynthesized":
        empty = n_match == 0
        if empty.any():
            rows = np.flatnonzero(empty.any(axis=1))
            uidx = _us_index(prep, rule)
            bu = b.rows(rows).cols(slice(0, q_us))
            us_counts, _ = uidx.match(tkey_us[rows], bu, False)
            us_own = uidx.own(tkey_us[rows], bu, prep.rec[rows])
            sub = empty[rows]
            nm = n_match[rows]
            ow = own[rows]
            nm[sub] = np.broadcast_to(us_counts[:, None], sub.shape)[sub]
            ow[sub] = np.broadcast_to(us_own[:, None], sub.shape)[sub]
            n_match[rows] = nm
            own[rows] = ow
    no_match_any = (n_match == 0).all(axis=1)
    p, p_out = _record_prob(n_match, inv_f)
    dec = declare(p, p_out, strategy)
    c = np.where(dec, n_match, 0)
    T = dec & own & prep.in_sample[:, None]
    return PerDatasetOutput(c=c, T=T, declared=dec, p_match=p, p_out=p_out, n_match=n_match,
                            no_match_any=no_match_any)


# ----------------------------------------------------------------------------------------------
# pooled aggregation (Reiter & Mitra)
# ----------------------------------------------------------------------------------------------
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


MAX_NNZ = 100_000_000  # ~1.2 GB of pooled probabilities (12 bytes each); beyond it: an error
#: ``True``: a target's fallback set is represented by the set (its unsynthesized key and
#: windows) and one probability; ``False``: materialised record by record (the reference the
#: compact form is tested against; memory grows with the sum of the fallback-set sizes)
FALLBACK_AS_CELLS = True


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


def fallback_sets(prep: Prepared, rule: MatchRule) -> FallbackSets:
    """:class:`FallbackSets` of every target of ``prep``."""
    q_us = len(rule.radius_us)
    return FallbackSets(
        index=_us_index(prep, rule),
        tkey=_target_keys(prep, rule)[1],
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


def run_pooled(
    prep: Prepared,
    rule: MatchRule,
    *,
    inv_f: np.ndarray | None,
    strategy,
    fallback: str,
    progressbar: bool = False,
    chunk_pairs: int = 4_000_000,
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
    every measure are bitwise identical.
    """
    from bayes_risk.exceptions import ValidationError

    N, R, n = prep.n_targets, prep.R, prep.n
    b = target_bounds(prep, rule)
    tkey, tkey_us = _target_keys(prep, rule)
    q_us = len(rule.radius_us)
    use_fb = fallback == "unsynthesized"
    cells = use_fb and FALLBACK_AS_CELLS
    idx_dtype = np.int32 if n < 2**31 - 1 else np.int64
    p_out = np.zeros(N)
    p_un = np.zeros(N)
    p_max = np.zeros(N)
    c = np.zeros(N, dtype=np.int64)
    T = np.zeros(N, dtype=bool)
    ever = np.zeros(N, dtype=bool)
    fb_value = np.zeros(N)
    fb_extra = np.zeros(N, dtype=np.int64)
    row_nnz = np.zeros(N, dtype=np.int64)
    ind_blocks: list[np.ndarray] = []
    dat_blocks: list[np.ndarray] = []
    total = 0
    # build every replicate's index once (in parallel) before the chunk loop
    compiled = _compiled(prep)
    _parallel(lambda r: _replicate_index(prep, rule, r), range(R), progressbar=progressbar,
              description="indexing replicates", threads=compiled)
    fsets = fallback_sets(prep, rule) if cells else None
    a = 0
    csize = 4096
    steps = min(100, N)
    bounds = np.linspace(0, N, steps + 1).round().astype(np.int64)
    for step in progress(range(steps), total=steps, description="identification",
                         enabled=progressbar):
        stop_at = int(bounds[step + 1])
        while a < stop_at:
            z = min(stop_at, a + csize)
            m = z - a
            bb = b.rows(slice(a, z))
            # merge sweep (O(n) per column) for large chunks, binary searches for small ones:
            # the same slices either way
            sweep = R > 1 and m * max(np.log2(max(n, 2)), 1.0) >= n
            tord = target_orders(tkey[a:z], bb, compiled) if sweep else None
            # fallback-set sizes of the chunk's targets (the same in every replicate)
            ucnt_all = None
            if cells:
                ucnt_all, _ = fsets.index.match(tkey_us[a:z], bb.cols(slice(0, q_us)), False)

            def one(r: int, a=a, z=z, m=m, bb=bb, tord=tord, ucnt_all=ucnt_all):
                idx = _replicate_index(prep, rule, r)
                cnt, lst = idx.match(tkey[a:z], bb, True, tord)
                fb = None
                tr = np.repeat(np.arange(m), cnt)
                kk = lst
                if use_fb and (cnt == 0).any():
                    emp = np.flatnonzero(cnt == 0)
                    cnt = cnt.copy()
                    if cells:
                        fb = emp[ucnt_all[emp] > 0]
                        cnt[emp] = ucnt_all[emp]
                    else:
                        uidx = _us_index(prep, rule)
                        ucnt, ulst = uidx.match(tkey_us[a:z][emp],
                                                bb.rows(emp).cols(slice(0, q_us)), True)
                        tr = np.concatenate([tr, np.repeat(emp, ucnt)])
                        kk = np.concatenate([lst, ulst])
                        cnt[emp] = ucnt
                invf = None if inv_f is None else inv_f[a:z, r]
                p, po = _record_prob(cnt, invf)
                fbv = None if fb is None else p[fb] / R
                return cnt, tr, kk, p[tr] / R, po, fb, fbv

            outs = _parallel(one, range(R), progressbar=False, description="", threads=compiled)
            for cnt, _, _, _, po, _, _ in outs:
                ever[a:z] |= cnt > 0
                p_out[a:z] += po / R
                if inv_f is None:
                    p_un[a:z] += (cnt == 0) / R
            # every (target, record, replicate) contribution, keyed by (target, record)
            rows = np.concatenate([o[1] for o in outs])
            cols = np.concatenate([o[2] for o in outs])
            data = np.concatenate([o[3] for o in outs])
            reps = np.repeat(np.arange(R), [len(o[1]) for o in outs])
            key = rows.astype(np.int64) * n + cols
            v_fb = np.zeros(m)
            n_extra = np.zeros(m, dtype=np.int64)
            if cells and any(o[5] is not None and o[5].size for o in outs):
                # fallback contributions (target, replicate, value), in replicate order
                f_t = np.concatenate([o[5] for o in outs if o[5] is not None])
                f_v = np.concatenate([o[6] for o in outs if o[5] is not None])
                f_r = np.repeat(np.arange(R), [0 if o[5] is None else len(o[5]) for o in outs])
                o_f = np.argsort(f_t, kind="stable")
                f_t, f_v, f_r = f_t[o_f], f_v[o_f], f_r[o_f]
                # the value of the records matched only through the fallback
                ft_u, fv_u = _segment_sums(f_t, f_v)
                v_fb[ft_u] = fv_u
                # directly matched records of a target with fallback replicates: add the
                # fallback contributions of the records inside its set
                has_fb = np.zeros(m, dtype=bool)
                has_fb[ft_u] = True
                pair = np.unique(key[has_fb[rows]])  # direct matches of those targets
                p_row = pair // n
                p_col = pair - p_row * n
                inside = fsets.contains(p_row + a, p_col)
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
            # CSR of the chunk: sort by (row, col, replicate) and sum over replicates in
            # replicate order
            if (m * n + 1) * R < 2**62:
                order = np.argsort(key * R + reps)  # unique sort keys
            else:  # pragma: no cover - beyond 2**62 (target, record, replicate) triples
                order = np.lexsort((reps, key))
            key, data = _segment_sums(key[order], data[order])
            del order, reps
            r_of = key // n if key.size else np.zeros(0, dtype=np.int64)
            k_of = (key - r_of * n).astype(idx_dtype)
            nnz_row = np.bincount(r_of, minlength=m)
            total += key.size
            if total > MAX_NNZ:
                raise ValidationError(
                    f"the pooled match probabilities would hold more than {MAX_NNZ:,} non-zero "
                    "entries (targets match very many records"
                    + (", often through the fallback to the unsynthesized key" if
                       use_fb and not cells else "")
                    + "). Use aggregation='per_dataset', fallback='none', a smaller radius or more "
                    "known columns."
                )
            # top set with the package's tie tolerance
            pm = np.zeros(m)
            has = nnz_row > 0
            rec = prep.rec[a:z]
            if key.size:
                indptr = np.concatenate([[0], np.cumsum(nnz_row)])
                pm[has] = np.maximum.reduceat(data, indptr[:-1][has])
            cell = n_extra > 0
            pm = np.where(cell, np.maximum(pm, v_fb), pm)
            if key.size:
                tied = ties(data, pm[r_of]) & (data > 0)
                c_blk = np.bincount(r_of[tied], minlength=m)
                own_tied = tied & (k_of.astype(np.int64) == rec[r_of])
                T_blk = np.bincount(r_of[own_tied], minlength=m) > 0
                own_stored = np.bincount(r_of[k_of.astype(np.int64) == rec[r_of]],
                                         minlength=m) > 0
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
                    T_blk[chk] |= fsets.contains(chk + a, rec[chk])
                fb_value[a:z] = np.where(cell, v_fb, 0.0)
                fb_extra[a:z] = n_extra
            p_max[a:z] = pm
            dec = declare(pm, p_out[a:z], strategy)
            c[a:z] = np.where(dec, c_blk, 0)
            T[a:z] = dec & T_blk & prep.in_sample[a:z]
            row_nnz[a:z] = nnz_row
            ind_blocks.append(k_of)
            dat_blocks.append(data)
            per_target = max(key.size / max(m, 1), 1.0)  # stored pairs only
            a = z
            csize = int(min(max(chunk_pairs / per_target, 256), 200_000))
    import scipy.sparse as sp

    indptr = np.zeros(N + 1, dtype=np.int64)
    np.cumsum(row_nnz, out=indptr[1:])
    indices = np.concatenate(ind_blocks) if ind_blocks else np.zeros(0, dtype=idx_dtype)
    ind_blocks.clear()
    data = np.concatenate(dat_blocks) if dat_blocks else np.zeros(0)
    dat_blocks.clear()
    if indptr[-1] < 2**31 - 1:
        indptr = indptr.astype(np.int32)
    prob = sp.csr_matrix((data, indices, indptr), shape=(N, n))
    declared = declare(p_max, p_out, strategy)
    return PooledOutput(prob=prob, p_out=p_out, p_unassigned=p_un, p_max=p_max, c=c, T=T,
                        declared=declared, no_match_any=~ever, fallback_value=fb_value,
                        fallback_extra=fb_extra)


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
    fallback_sets: FallbackSets | None

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

        limit = MAX_NNZ if max_nnz is None else max_nnz
        N, n = self.shape
        if self.fallback_sets is None or not (self.fallback_extra > 0).any():
            return self.explicit
        if self.nnz > limit:
            raise ValidationError(
                f"the pooled match probabilities hold {self.nnz:,} non-zero entries (more than "
                f"{limit:,}), most of them from the fallback sets; read them row by row "
                "(result.pooled.row(i)) or use fallback='none'."
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
