"""Match indexes: one replicate's records grouped by exact key, sorted by radius column
(:class:`ReplicateIndex`, and :class:`NumbaIndex`, its compiled twin).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from bayes_risk.identification.matching import MatchRule, target_radii, window_bounds
from bayes_risk.identification.problem import without_columns

if TYPE_CHECKING:
    from bayes_risk.identification.problem import Prepared

__all__ = ["mixed_radix", "TargetBounds", "target_bounds", "code_windows", "sorted_key",
           "bound_codes", "value_codes", "distinct_targets",
           "ReplicateIndex", "NumbaIndex", "make_index", "value_orders"]

_CHUNK_CANDIDATES = 1 << 22  # candidate pairs buffered at once by the compiled index
#: candidate pairs examined at once by the numpy filters (arrays near 256 KiB, as fast as larger)
_NUMPY_CHUNK_CANDIDATES = 1 << 15
#: targets from which ``_rect_filter`` is used (it costs more numpy calls on small calls)
_RECT_MIN_TARGETS = 1024


def _nb():
    """The compiled kernels (imports numba on first use)."""
    from bayes_risk.identification import _kernels

    return _kernels


def spans(starts: np.ndarray, lens: np.ndarray) -> np.ndarray:
    """``concatenate([arange(s, s + l) for s, l in zip(starts, lens)])``."""
    offs = np.cumsum(lens) - lens
    return np.arange(int(np.sum(lens)), dtype=np.int64) + np.repeat(starts - offs, lens)


def _blocks(counts: np.ndarray, size: int) -> Iterator[tuple[int, int]]:
    """Consecutive ``(start, stop)`` of the items whose ``counts`` sum to ``size`` at most (at
    least one item)."""
    csum = np.cumsum(counts)
    start = 0
    while start < len(counts):
        base = csum[start - 1] if start > 0 else 0
        stop = max(int(np.searchsorted(csum, base + size, side="right")), start + 1)
        yield start, stop
        start = stop


def _in_ellipse(vals: list, centre: list, scale: list, strict: bool) -> np.ndarray:
    """Whether ``Σ_j ((vals[j] − centre[j]) / scale[j])²`` is below 1 (a zero scale: the
    column adds nothing)."""
    acc = 0.0
    for v, ce, sc in zip(vals, centre, scale, strict=True):
        with np.errstate(divide="ignore", invalid="ignore"):
            d = np.where(sc > 0, (v - ce) / sc, 0.0)
        acc = acc + d * d
    return (acc < 1.0) if strict else (acc <= 1.0)


def _numpy_filter(orders, sv, prim, s, e, lo, hi, ell, centre, scale, strict, want_list):
    """Pure-numpy twin of the numba kernel (chunked candidate expansion); ``sv[p, j]`` is
    column ``j`` in the sort order of column ``p``."""
    q, n = sv.shape[1], sv.shape[2]
    flat = sv.reshape(-1)
    oflat = orders.reshape(-1)
    cnt = np.maximum(e - s, 0)
    counts = np.zeros(len(s), dtype=np.int64)
    lists: list[np.ndarray] = []
    for start, stop in _blocks(cnt, _NUMPY_CHUNK_CANDIDATES):
        c = cnt[start:stop]
        if not c.any():
            continue
        # position in the primary column's order, and its offset in sv / orders
        pos = spans(s[start:stop], c)
        p_rep = np.repeat(prim[start:stop], c)
        at = p_rep * (q * n) + pos
        vals = [flat[at + j * n] for j in range(q)]
        ok = np.ones(pos.size, dtype=bool)
        for j in range(q):
            ok &= vals[j] >= np.repeat(lo[start:stop, j], c)
            ok &= vals[j] <= np.repeat(hi[start:stop, j], c)
        if ell:
            ok &= _in_ellipse(vals, [np.repeat(centre[start:stop, j], c) for j in range(q)],
                              [np.repeat(scale[start:stop, j], c) for j in range(q)], strict)
        rep = np.repeat(np.arange(stop - start), c)
        counts[start:stop] = np.bincount(rep[ok], minlength=stop - start)
        if want_list:
            lists.append(oflat[(p_rep * n + pos)[ok]])
    if want_list:
        return counts, (np.concatenate(lists) if lists else np.zeros(0, dtype=np.int64))
    return counts, None


def _rect_filter(orders, sv, prim, s, e, lo, hi, want_list):
    """:func:`_numpy_filter` for rectangular windows without NaN bounds: only the columns
    other than the scanned one are tested (same counts and lists)."""
    q = sv.shape[1]
    cnt = np.maximum(e - s, 0)
    counts = np.zeros(len(s), dtype=np.int64)
    pieces: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    for p in range(q):
        sel = np.flatnonzero((prim == p) & (cnt > 0))
        others = [j for j in range(q) if j != p]
        for start, stop in _blocks(cnt[sel], _NUMPY_CHUNK_CANDIDATES):
            t = sel[start:stop]
            c = cnt[t]
            pos = spans(s[t], c)
            ok = None
            for j in others:
                v = sv[p, j].take(pos)
                m = v >= np.repeat(lo[t, j], c)
                m &= v <= np.repeat(hi[t, j], c)
                ok = m if ok is None else ok & m
            if ok is None:
                hit = c
            else:  # every slice is non-empty, so reduceat sums exactly each target's slice
                hit = np.add.reduceat(ok.view(np.uint8), np.cumsum(c) - c, dtype=np.int64)
            counts[t] = hit
            if want_list:
                pieces.append((t, hit, orders[p].take(pos if ok is None else pos[ok])))
    if not want_list:
        return counts, None
    # scatter every piece's matches to its targets' slots (target-major order)
    out = np.empty(int(counts.sum()), dtype=np.int64)
    first = np.cumsum(counts) - counts
    for t, hit, recs in pieces:
        out[spans(first[t], hit)] = recs
    return counts, out


_INT64_MAX = np.iinfo(np.int64).max


def _order_keys(x: np.ndarray) -> np.ndarray:
    """int64 keys ordered as numpy orders the float64 values ``x`` (``-0.0 == 0.0``, NaN last):
    integer sorts and searches are faster, with the same results."""
    x = np.asarray(x, dtype=np.float64) + 0.0  # -0.0 + 0.0 is +0.0
    bits = x.view(np.int64)
    keys = np.where(bits < 0, bits ^ _INT64_MAX, bits)  # negative floats: reverse their order
    nan = np.isnan(x)
    if nan.any():
        keys[nan] = _INT64_MAX
    return keys


def _sorted_unique(keys: np.ndarray) -> np.ndarray:
    """``np.unique`` of int64 keys through one sort (``np.unique`` is slower at these sizes)."""
    k = np.sort(keys)
    if len(k) > 1:
        k = k[np.concatenate(([True], k[1:] != k[:-1]))]
    return k


def _stable_order(comp: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``argsort(comp, kind="stable")`` and ``comp`` in that order, for non-negative int64
    ``comp``, through a plain sort of ``comp · n + index`` where it does not overflow."""
    n = len(comp)
    if n and int(comp.max()) < _INT64_MAX // n - 1:
        key = comp * n + np.arange(n)
        key.sort()
        return key % n, key // n
    order = np.argsort(comp, kind="stable")
    return order, comp[order]


def _groups(key: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(key, return_inverse=True)`` for int64 keys >= -1 (by counting when few)."""
    n = len(key)
    if n and int(key.min()) >= -1 and int(key.max()) < 4 * n:
        present = np.bincount(key + 1) > 0
        lookup = np.cumsum(present) - 1
        return np.flatnonzero(present) - 1, lookup[key + 1]
    uk, g = np.unique(key, return_inverse=True)
    return uk, g.astype(np.int64).ravel()


def mixed_radix(codes: np.ndarray, sizes: Sequence[int], narrow: bool = False) -> np.ndarray:
    """Combine integer codes ``[N, e]`` into one int64 key per row (``-1`` if any code < 0);
    ``narrow``: int32 when every key fits (the same keys in half the memory)."""
    N = codes.shape[0]
    cells = float(np.prod([max(int(d), 1) for d in sizes], dtype=np.float64))
    kt = np.int32 if narrow and cells < 2.0**31 else np.int64
    key = np.zeros(N, dtype=kt)
    if codes.shape[1] == 0:
        return key
    if cells > 2.0**62:
        from bayes_risk.exceptions import ValidationError

        raise ValidationError(
            "the exact-match columns have more than 2**62 combinations of levels; match fewer "
            "categorical columns exactly (or give high-cardinality numeric ones a radius).",
            code="PROBLEM_TOO_LARGE"
        )
    stride = 1
    bad = codes[:, 0] < 0
    for j, d in enumerate(sizes):
        key += codes[:, j].astype(kt) * kt(stride)
        stride *= max(int(d), 1)
        bad |= codes[:, j] < 0  # a column at a time: any(axis=1) walks each row's e codes (8x)
    key[bad] = -1
    return key


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
        return self.rows((slice(None), idx))

    def rows(self, idx: np.ndarray | slice | tuple) -> TargetBounds:
        return TargetBounds(self.lo[idx], self.hi[idx], self.centre[idx], self.scale[idx],
                            self.ellipse, self.strict)


def _column_windows(prep: Prepared, rule: MatchRule, with_radius: bool = True
                    ) -> Iterator[tuple[np.ndarray, ...]]:
    """The targets' closed windows on each radius column in turn: ``(lo, hi, value, radius,
    missing)``, a missing value's window ``[inf, inf]`` (its value 0 in ``value``); the radius
    ``None`` unless ``with_radius``. A column's arrays are the caller's alone once it drops them."""
    cols = rule.radius_cols
    tv = {c: prep.tgt_radius[:, j] for j, c in enumerate(cols)}
    # a missing target value (+inf) matches missing values only: the window [inf, inf]
    miss = {c: np.isinf(v) for c, v in tv.items()}
    if any(m.any() for m in miss.values()):
        tv = {c: np.where(miss[c], 0.0, v) for c, v in tv.items()}
    # one column's radii at a time where they are its own (legacy_hh_euclid's combine every
    # column's): at 10^6 targets 8 MB fewer while a column is coded (:func:`code_windows`)
    alone = rule.shape != "legacy_hh_euclid"
    radii = None if alone else target_radii(rule, tv, prep.confidential_radius)
    for c in cols:
        R = (target_radii(without_columns(rule, [o for o in cols if o != c]), tv,
                          prep.confidential_radius) if alone else radii)[c]
        exact_zero = (R == 0) if rule.radius_type == "quantile_sd" else None
        lo, hi = window_bounds(rule, tv[c], R, exact_zero=exact_zero)
        if miss[c].any():
            lo, hi = np.where(miss[c], np.inf, lo), np.where(miss[c], np.inf, hi)
        window = lo, hi, tv[c], R if with_radius else None, miss[c]
        del lo, hi, R  # at 10^6 targets 23 MiB fewer while the next column's are made
        yield window
        del window


def target_bounds(prep: Prepared, rule: MatchRule) -> TargetBounds:
    """Windows of every target on every radius column (their codes when the radius columns are
    coded for ``rule``, :func:`code_windows`)."""
    q = len(rule.radius_cols)
    if prep.coded is not None:
        if prep.coded != rule:
            raise RuntimeError("the radius columns are coded for another rule")
        zero = np.broadcast_to(np.float64(0.0), (prep.n_targets, q))  # a rectangle's: unread
        return TargetBounds(prep.tgt_radius[:, :q], prep.tgt_radius[:, q:], zero, zero,
                            False, False)
    N = prep.n_targets
    lo, hi, centre, scale = (np.empty((N, q)) for _ in range(4))
    for j, (lo_j, hi_j, tv, R, miss) in enumerate(_column_windows(prep, rule)):
        lo[:, j], hi[:, j] = lo_j, hi_j
        centre[:, j] = np.where(miss, np.inf, tv)
        scale[:, j] = R
    ell = rule.shape in ("ellipse", "mahalanobis")  # mahalanobis: values already whitened
    return TargetBounds(lo, hi, centre, scale, ell, ell and rule.window == "open")


def code_windows(prep: Prepared, rule: MatchRule) -> None:
    """Hold the radius columns of ``prep`` as int32 codes that keep every comparison of a value
    with a target's window under ``rule``, in place of their float64 values (at 10^6 records
    and 5 datasets 38 MiB fewer, and half the matching index's sorted values and the targets'
    windows): a window bound ``b`` is ``2·rank + 1`` among the targets' distinct bounds of its
    column, a value ``v`` is ``2·#{bounds below v} + [v is a bound]``, so that ``v >= lo`` and
    ``v <= hi`` hold of the codes exactly when they hold of the values; ``tgt_radius`` becomes
    the windows' codes ``[lo | hi]``. For one rule's run of a rectangle (the ellipse reads
    distances) whose targets are matched on every radius column (none missing) and whose
    bounds are numbers; otherwise nothing changes."""
    q, N = len(rule.radius_cols), prep.n_targets
    if (not q or rule.shape != "rectangle" or prep.tgt_drop is not None or prep.coded
            is not None or 2 * (2 * N + 1) >= 2**31 or not (prep.n and N)):
        return
    if rule.radius_type != "quantile_sd":  # the only radius that reads the original's values:
        prep.confidential_radius = {}  # otherwise 15 MiB fewer here at 10^6 records
    codes = np.empty((2 * q, N), dtype=np.int32)  # a column's pages touched as it is coded
    bounds = []
    # one column's windows at a time (at 10^6 targets 32 MB fewer at this step's peak)
    for j, window in enumerate(_column_windows(prep, rule, with_radius=False)):
        lo, hi = window[:2]
        del window  # its values, a view of the targets' (15 MiB at 10^6 targets)
        if np.isnan(lo).any() or np.isnan(hi).any():
            return
        bounds.append(bound_codes(lo, hi, codes[j], codes[q + j]))
        del lo, hi
    prep.tgt_radius = codes.T  # the targets' values freed before the records' are coded
    prep.coded = rule
    prep.confidential_radius = {}  # read by the windows alone
    u = len(rule.radius_us)
    # each coding's sort of the values is a sort of their codes (the coding keeps their order):
    # handed to the matching index (:func:`.engine.replicate_index`), which sorts them no more
    prep.rec_radius_us, prep._cache[("us_order", rule.radius_us)] = value_codes(
        prep.rec_radius_us, bounds[:u])
    reps = prep.rep_radius_s
    for r in range(len(reps)):  # one dataset's float64 values freed at a time
        reps[r], prep._cache[sorted_key(rule, r)] = value_codes(reps[r], bounds[u:])


def sorted_key(rule: MatchRule, r: int) -> tuple:
    """The cache key of replicate ``r``'s synthesized radius columns' sort order, made while
    they were coded for ``rule`` (:func:`code_windows`) and taken by its index."""
    return ("s_order", r, rule.radius_s)


def bound_codes(lo: np.ndarray, hi: np.ndarray, clo: np.ndarray, chi: np.ndarray
                ) -> np.ndarray:
    """The codes ``2·rank + 1`` of one column's window bounds ``lo`` and ``hi`` (float64, no
    NaN) among their distinct values, into ``clo`` and ``chi`` (int32); those values, sorted."""
    distinct = np.empty(2 * len(lo))  # its pages are touched only as far as it is written
    k = _nb().bound_codes(lo, value_orders(lo[None])[0], hi, value_orders(hi[None])[0], clo,
                          chi, distinct)
    distinct.resize(k, refcheck=False)  # in place: no view of it exists (a copy: 15 MiB more)
    return distinct


def value_codes(vals: np.ndarray, bounds: Sequence[np.ndarray]
                ) -> tuple[np.ndarray, np.ndarray]:
    """The codes ``2·#{bounds below v} + [v is a bound]`` of the values ``vals [q, n]``
    (float64, no NaN) against each column's distinct bounds (:func:`bound_codes`), int32, and
    the values' sort order (:func:`value_orders`), which is also the codes'."""
    out = np.empty(vals.shape, dtype=np.int32)
    orders = value_orders(vals)
    for j, o in enumerate(orders):
        _nb().value_codes(vals[j], o, bounds[j], out[j])
    return out, orders


def distinct_targets(tkey: np.ndarray, bounds: TargetBounds, inv_f: np.ndarray | None,
                     share: float) -> tuple[np.ndarray, np.ndarray] | None:
    """The first target of each distinct target (same key, windows and counts) and every
    target's distinct target, or ``None`` when that saves too little (more than ``share`` of
    the targets are distinct).

    Parameters
    ----------
    tkey : ndarray
        The targets' exact keys ``[N_T]``.
    bounds : TargetBounds
        Their windows on the radius columns.
    inv_f : ndarray or None
        Their counts' weights ``[N_T, R]`` (``None``: none).
    share : float
        The largest share of distinct targets worth grouping (the pooled engine's
        ``DISTINCT_SHARE``).

    Returns
    -------
    tuple of ndarray, or None
        ``(first, group)``: the first target of each distinct target, in the order of those
        targets, and each target's distinct target.
    """
    N = len(tkey)
    if N < 2:
        return None
    parts = [tkey[:, None]]
    for arr in (bounds.lo, bounds.hi, bounds.centre, bounds.scale):
        # the bit patterns: equal patterns are equal windows (-0.0 and 0.0 merely stay apart)
        parts.append(np.ascontiguousarray(arr, dtype=np.float64).view(np.int64))
    if inv_f is not None:
        parts.append(np.ascontiguousarray(inv_f, dtype=np.float64).view(np.int64))
    M = np.ascontiguousarray(np.concatenate(parts, axis=1))
    # a 64-bit hash of every row (a collision is checked below)
    h = np.zeros(N, dtype=np.uint64)
    with np.errstate(over="ignore"):
        for j in range(M.shape[1]):
            h ^= M[:, j].view(np.uint64)
            h *= np.uint64(0x9E3779B97F4A7C15)
            h ^= h >> np.uint64(29)
    if np.unique(h).size > share * N:
        return None
    _, first, inv = np.unique(h, return_index=True, return_inverse=True)
    inv = inv.ravel()
    if not (M == M[first[inv]]).all():  # a collision of two rows' hashes: group the rows
        _, first, inv = np.unique(M, axis=0, return_index=True, return_inverse=True)
        inv = inv.ravel()
    # distinct targets in the order of their first target
    o = np.argsort(first, kind="stable")
    rank = np.empty_like(o)
    rank[o] = np.arange(o.size)
    return first[o].astype(np.int64), rank[inv].astype(np.int64)


class ReplicateIndex:
    """Records of one replicate grouped by exact key and sorted by each radius column."""

    def __init__(self, rec_key: np.ndarray, vals: np.ndarray) -> None:
        self.uk, g = _groups(rec_key)
        self.key = rec_key
        self.vals = np.ascontiguousarray(vals, dtype=np.float64)
        q = self.vals.shape[0]
        n = len(rec_key)
        if q == 0:
            order, gs = _stable_order(g)
            self.orders = order[None, :]
            self.gstart = np.searchsorted(gs, np.arange(len(self.uk)), side="left")
            self.gend = np.searchsorted(gs, np.arange(len(self.uk)), side="right")
            self.u = []
            self.comp = []
            self.sv = np.zeros((1, 0, n))
            return
        self.orders = np.empty((q, n), dtype=np.int64)
        # u[j]: column j's distinct order keys; comp[j]: group · (len(u[j]) + 1) + rank
        self.u = []
        self.comp = []
        for j in range(q):
            vk = _order_keys(self.vals[j])
            u = _sorted_unique(vk)
            rank = np.searchsorted(u, vk)
            self.orders[j], comp = _stable_order(g * (len(u) + 1) + rank)
            self.u.append(u)
            self.comp.append(comp)
        # sv[p, j]: column j in the order of column p (contiguous candidate scans)
        self.sv = np.ascontiguousarray(np.take(self.vals, self.orders, axis=1).transpose(1, 0, 2))

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
        klo, khi = _order_keys(lo), _order_keys(hi)
        for j in range(q):
            u = self.u[j]
            L = len(u) + 1
            qlo = np.searchsorted(u, klo[:, j], side="left")
            qhi = np.searchsorted(u, khi[:, j], side="right")
            base = gc * L
            sj = np.searchsorted(self.comp[j], base + qlo, side="left")
            ej = np.searchsorted(self.comp[j], base + qhi, side="left")
            ej = np.maximum(ej, sj)
            sj[bad] = 0
            ej[bad] = 0
            s[:, j] = sj
            e[:, j] = ej
        return s, e

    def match(self, tgt_key: np.ndarray, b: TargetBounds, want_list: bool, torder=None,
              limit: int | None = None):
        """Match counts ``[N]`` and, if asked, the matched records (target-major); ``limit``:
        only the first targets within ``limit`` candidates (at least one), their number third."""
        s, e = self.ranges(tgt_key, b.lo, b.hi)
        done = len(tgt_key)
        if limit is not None and want_list and done:
            csum = np.cumsum(np.maximum(e - s, 0).min(axis=1))
            done = max(1, int(np.searchsorted(csum, limit, side="right")))
            if done < len(tgt_key):
                s, e, tgt_key, b = s[:done], e[:done], tgt_key[:done], b.rows(slice(0, done))
        counts, lst = self._listed(s, e, b, want_list)
        return (counts, lst) if limit is None or not want_list else (counts, lst, done)

    def _listed(self, s: np.ndarray, e: np.ndarray, b: TargetBounds, want_list: bool):
        q = self.vals.shape[0]
        if q <= 1 and not b.ellipse:
            s0, e0 = s[:, 0], e[:, 0]
            counts = np.maximum(e0 - s0, 0)
            if not want_list:
                return counts, None
            return counts, self.orders[0, spans(s0, counts)]
        cnt = np.maximum(e - s, 0)
        prim = np.argmin(cnt, axis=1)
        ar = np.arange(len(prim))
        sp_, ep_ = s[ar, prim], e[ar, prim]
        if (len(prim) >= _RECT_MIN_TARGETS and not b.ellipse
                and not (np.isnan(b.lo).any() or np.isnan(b.hi).any())):
            return _rect_filter(self.orders, self.sv, prim, sp_, ep_, b.lo, b.hi, want_list)
        return _numpy_filter(
            self.orders, self.sv, prim, sp_, ep_, b.lo, b.hi, b.ellipse, b.centre, b.scale,
            b.strict, want_list,
        )

    def candidates(self, tgt_key: np.ndarray, b: TargetBounds) -> np.ndarray:
        """Length of the scanned slice per target (bounds the matches; sizes chunks)."""
        s, e = self.ranges(tgt_key, b.lo, b.hi)
        return np.maximum(e - s, 0).min(axis=1)

    def own(self, tgt_key: np.ndarray, b: TargetBounds, rec: np.ndarray) -> np.ndarray:
        """Whether each target's own record (``rec >= 0``) is in its match set."""
        return own_flags(self.key, self.vals, tgt_key, b, rec)


def own_flags(rec_key: np.ndarray, vals: np.ndarray | Sequence[np.ndarray], tgt_key: np.ndarray,
              b: TargetBounds, rec: np.ndarray) -> np.ndarray:
    """Whether each target's own record (``rec >= 0``) is in its match set among records of
    keys ``rec_key`` and radius values ``vals`` (one array a column)."""
    ok = rec >= 0
    k = np.where(ok, rec, 0)
    m = ok & (tgt_key >= 0) & (rec_key[k] == tgt_key)
    v = [col[k] for col in vals]
    for j, x in enumerate(v):
        m &= (x >= b.lo[:, j]) & (x <= b.hi[:, j])
    if b.ellipse and v:
        m &= _in_ellipse(v, list(b.centre.T), list(b.scale.T), b.strict)
    return m


#: radius columns a window is counted over without a scan (an offline range count)
COUNTED_COLUMNS = 2
#: candidates a scan takes in the time of one step of the range count (measured, 10⁵ records:
#: 4 ns a candidate scanned, 24 ns a Fenwick-tree step of ``log2 n``)
SCAN_PER_COUNT = 6.0


def counted(b: TargetBounds) -> bool:
    """Whether the targets' match counts come from counting alone (:meth:`NumbaIndex.count`):
    rectangles over at most :data:`COUNTED_COLUMNS` radius columns with no NaN bound. An
    ellipse (its quadratic form) and three or more radius columns scan each target's smallest
    slice, which bounds their work."""
    return (not b.ellipse and b.lo.shape[1] <= COUNTED_COLUMNS
            and not (np.isnan(b.lo).any() or np.isnan(b.hi).any()))


class NumbaIndex:
    """Compiled twin of :class:`ReplicateIndex` (same answers; tested against it)."""

    def __init__(self, rec_key: np.ndarray, vals: np.ndarray, n_cells: int,
                 orders: np.ndarray | None = None) -> None:
        self.key = rec_key
        # int32 codes kept as they are (:func:`code_windows`), other values as float64
        self.vals = np.ascontiguousarray(vals, dtype=None if vals.dtype == np.int32 else
                                         np.float64)
        n = len(rec_key)
        if n_cells <= max(4 * n, 1 << 16):
            self.uk = None
            G = int(n_cells)
            rec_g = rec_key  # int32 or int64: the kernels take either
        else:
            self.uk, rec_g = np.unique(rec_key, return_inverse=True)
            G = len(self.uk)
            rec_g = rec_g.astype(np.int64).ravel()
        if orders is None:
            orders = value_orders(self.vals)
        # record numbers int32 while they fit: at 10^6 records 8 MB fewer an index
        perms = np.empty((max(self.vals.shape[0], 1), n),
                         dtype=np.int32 if n < 2**31 else np.int64)
        self.gstart, self.sv = _nb().build(rec_g, G, self.vals, orders, perms)
        self.perms = perms
        self._rank1: np.ndarray | None = None  # second radius column's ranks (count_rect2)

    def drop_values(self) -> None:
        """Free the records' values, which only :meth:`own` reads (the counts and lists read
        their sorted copies): for an index no own-record flag is asked of."""
        self.vals = np.empty((len(self.vals), 0), self.vals.dtype)

    def group_of(self, tgt_key: np.ndarray) -> np.ndarray:
        if self.uk is None:
            return tgt_key.astype(np.int64)
        return ReplicateIndex.group_of(self, tgt_key)

    def match(self, tgt_key: np.ndarray, b: TargetBounds, want_list: bool, torder=None,
              limit: int | None = None):
        """As :meth:`ReplicateIndex.match` (``limit`` bounds the matches: the list holds at most
        twice ``limit`` records, or one target's)."""
        tg = self.group_of(tgt_key)
        lo = np.ascontiguousarray(b.lo)
        hi = np.ascontiguousarray(b.hi)
        cen, sc = _ellipse_arrays(b)
        if torder is not None and self.vals.shape[0] > 0:
            prim, bs, blen = _nb().ranges_sweep(self.gstart, self.sv, tg, lo, hi, torder[0],
                                              torder[1])
        else:
            prim, bs, blen = _nb().ranges(self.gstart, self.sv, tg, lo, hi)
        if not want_list:
            return self.count(tg, b, lo, hi, torder, prim, bs, blen), None
        # scan into slots sized by the slice lengths, then compact, in sub-blocks of targets
        step = _CHUNK_CANDIDATES if limit is None else max(1, min(_CHUNK_CANDIDATES, limit))
        counts = np.zeros(len(tg), dtype=np.int64)
        pieces = []
        done = total = 0
        for start, stop in _blocks(blen, step):
            bl = blen[start:stop]
            offsets = np.cumsum(bl) - bl
            buf = np.empty(int(bl.sum()), dtype=np.int64)
            cnt = _nb()._scan(self.perms, self.sv, prim[start:stop], bs[start:stop], bl,
                           lo[start:stop], hi[start:stop], bool(b.ellipse), cen[start:stop],
                           sc[start:stop], bool(b.strict), offsets, buf, True)
            counts[start:stop] = cnt
            pieces.append(_nb().compact(buf, offsets, cnt))
            total += int(cnt.sum())
            done = stop
            if limit is not None and total >= limit:
                break
        lst = np.concatenate(pieces) if pieces else np.zeros(0, dtype=np.int64)
        return (counts, lst) if limit is None else (counts[:done], lst, done)

    def count(self, tg: np.ndarray, b: TargetBounds, lo: np.ndarray, hi: np.ndarray,
              torder, prim: np.ndarray, bs: np.ndarray, blen: np.ndarray) -> np.ndarray:
        """Match counts of the targets of key groups ``tg`` (``prim, bs, blen``: their smallest
        slices, :func:`_kernels.ranges`): by counting where :func:`counted` says so, else by a
        scan of each target's smallest slice, which bounds the work."""
        q = self.vals.shape[0]
        if counted(b) and q <= 1:  # the window's slice on its radius column (or key group)
            return blen
        n, N = len(self.key), len(tg)
        if counted(b) and float(blen.sum()) > SCAN_PER_COUNT * (n + 2 * N) * np.log2(n + 2):
            # wide windows: an offline range count, O((n + N) log n) whatever they hold
            if self._rank1 is None:
                self._rank1 = _nb().ranks(self.perms, n)
            if torder is None:
                olo, ohi = np.lexsort((lo[:, 0], tg)), np.lexsort((hi[:, 0], tg))
            else:
                olo, ohi = torder[0][0], torder[1][0]
            return _nb().count_rect2(self.gstart, self.perms, self.sv, self._rank1, tg, lo, hi,
                                     olo, ohi)
        dummy = np.zeros(1, dtype=np.int64)
        cen, sc = _ellipse_arrays(b)
        return _nb()._scan(self.perms, self.sv, prim, bs, blen, lo, hi, bool(b.ellipse), cen,
                          sc, bool(b.strict), dummy, dummy, False)

    def candidates(self, tgt_key: np.ndarray, b: TargetBounds) -> np.ndarray:
        """Length of the scanned slice per target (bounds the matches; sizes chunks)."""
        tg = self.group_of(tgt_key)
        return _nb().ranges(self.gstart, self.sv, tg, np.ascontiguousarray(b.lo),
                          np.ascontiguousarray(b.hi))[2]

    own = ReplicateIndex.own


def _ellipse_arrays(b: TargetBounds) -> tuple[np.ndarray, np.ndarray]:
    """The windows' centres and scales for the kernels: an ellipse's, or for a rectangle (which
    no kernel reads them for) one zero row, not a copy of their zero view (two arrays of the
    windows' size fewer a call: 6.4 MB for a chunk of 200,000 targets and two radius columns)."""
    if b.ellipse:
        return np.ascontiguousarray(b.centre), np.ascontiguousarray(b.scale)
    zero = np.zeros((1, b.lo.shape[1]))
    return zero, zero


def value_orders(vals: np.ndarray) -> np.ndarray:
    """``np.argsort(vals, axis=1)`` of ``vals [q, n]`` (float64, or int32 codes, which float64
    holds exactly) by the compiled radix sort (:func:`._kernels.value_order`; ties in another
    order, which no index reads), int32 while ``n`` fits (half the memory)."""
    q, n = vals.shape
    out = np.empty((q, n), dtype=np.int32 if n < 2**31 else np.int64)
    for j in range(q):  # one row as float64 at a time
        row = np.ascontiguousarray(vals[j], dtype=np.float64)
        _nb().value_order(row.view(np.uint64), out[j])
    return out


def make_index(rec_key: np.ndarray, vals: np.ndarray, n_cells: int, compiled: bool,
                orders: np.ndarray | None = None):
    if compiled:
        return NumbaIndex(rec_key, vals, n_cells, orders)
    return ReplicateIndex(rec_key, vals)
