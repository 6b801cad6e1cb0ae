"""Pooled file measures by counting match patterns, without listing (target, record) pairs.

With all ``m`` datasets pooled (Reiter & Mitra 2009), record ``j``'s probability for target
``t`` is ``π(j) = (1/m) Σ_l I(j ∈ M_l(t)) / c_l(t)``: it depends on ``j`` only through its
match pattern ``S_j = {l : j ∈ M_l(t)}``. The top value, the size of the top set and whether
the target's own record is in it follow from the number of records with each pattern,
``N_t(=S)``, which inclusion–exclusion gives from ``N_t(⊇S)``, the records matching in every
dataset of ``S``: an orthogonal range count (keys equal in every dataset of ``S``, the
unsynthesized radius column inside the window, the smallest of the synthesized column's
values over ``S`` above the window's lower bound and the largest below its upper bound),
an offline three-dimensional dominance count (:func:`._pattern_kernels.dominance_counts`).
See :doc:`/methods/identification`, "Counting match patterns".
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from bayes_risk._numeric import TIE_ATOL, TIE_RTOL, ties
from bayes_risk.identification import engine as _engine
from bayes_risk.identification.index import (
    TargetBounds,
    _order_keys,
    _sorted_unique,
    mixed_radix,
    target_bounds,
)
from bayes_risk.identification.matching import MatchRule
from bayes_risk.identification.pooled_probabilities import PooledOutput
from bayes_risk.identification.problem import Prepared, TargetPartition

__all__ = ["MAX_PATTERN_DATASETS", "counts_patterns", "run_counted", "superset_counts"]

#: datasets pooled by counting at most (``2^m - 1`` patterns, each a count over the records
#: and targets)
MAX_PATTERN_DATASETS = 6
#: candidate pairs per pattern and (record + target) above which counting is the cheaper
#: (measured on CE-like tables of 1,000 and 5,000 records, m = 5: the pair path's CPU equals
#: the count's near 12)
PAIRS_PER_PATTERN = 12.0
#: ``[N_T, 2^m]`` tables :func:`run_counted` holds at once at most
PATTERN_TABLES = 8


def counts_patterns(prep: Prepared, rule: MatchRule, part: TargetPartition) -> bool:
    """Whether the pooled measures of ``part`` are counted by match pattern: the file
    measures only (no pooled probabilities kept), no population counts, every record's row
    released in every dataset (no row removed after synthesis), at most
    :data:`MAX_PATTERN_DATASETS` datasets, rectangular windows over at most one unsynthesized
    and one synthesized radius column, on the compiled kernels, and more candidate pairs
    (the first dataset's, times ``m``) than :data:`PAIRS_PER_PATTERN` per pattern and
    (record + target), and its tables (``PATTERN_TABLES`` of ``[N_T, 2^m]``) within half the
    memory left."""
    from bayes_risk._memory import room

    if not (part.aggregation == "pooled" and not part.keep_prob and part.inv_f is None
            and prep.released is None and 1 <= prep.R <= MAX_PATTERN_DATASETS
            and len(rule.radius_us) <= 1 and len(rule.radius_s) <= 1
            and rule.shape not in ("ellipse", "mahalanobis")
            and _engine.use_compiled(prep)):
        return False
    left = room()
    if left is not None and PATTERN_TABLES * 8.0 * prep.n_targets * (1 << prep.R) > left / 2:
        return False
    b = target_bounds(prep, rule)
    tkey = _engine.target_keys(prep, rule)[0]
    pairs = float(_engine.replicate_index(prep, rule, 0).candidates(tkey, b).sum()) * prep.R
    return pairs > PAIRS_PER_PATTERN * ((1 << prep.R) - 1) * (prep.n + prep.n_targets)


def _record_keys(prep: Prepared, rule: MatchRule) -> np.ndarray:
    """Every record's exact key in every dataset ``[m, n]`` (``-1``: a missing code)."""
    sizes = [prep.exact_sizes[c] for c in rule.exact_cols]
    return prep.cached(("pattern_keys", rule.exact_us, rule.exact_s), lambda: np.stack([
        mixed_radix(np.concatenate([prep.rec_exact_us, prep.rep_exact_s[r]], axis=1), sizes)
        for r in range(prep.R)]) if prep.R else np.zeros((0, prep.n), dtype=np.int64))


class _Ranks(NamedTuple):
    """The radius values as ranks, for every pattern and radius: ``ua`` the unsynthesized
    column's distinct values (order keys), ``ar [n]`` each record's rank in them (``-1``:
    missing); ``uy`` the synthesized column's over every dataset, ``yr [m, n]`` (``uy.size``:
    missing). ``None`` where the column is absent."""

    ua: np.ndarray | None
    ar: np.ndarray | None
    uy: np.ndarray | None
    yr: np.ndarray | None


class _PatternRecords(NamedTuple):
    """One pattern's records that can match, prepared once for every radius (the arguments
    of :func:`._pattern_kernels._pattern_counts`): ``uk`` the exact keys they hold, ``gstart``
    each key group's first record, the groups sorted by (``arank``, ``mxr``); ``slot`` the
    index of the record's unsynthesized value among the group's; ``mxr`` the rank of its largest
    synthesized value over the pattern's datasets, ``mnz`` its smallest one's place in its
    group's slice of ``mns``, those ranks sorted in each group."""

    uk: np.ndarray
    gstart: np.ndarray
    arank: np.ndarray
    slot: np.ndarray
    mxr: np.ndarray
    mnz: np.ndarray
    mns: np.ndarray


def _value_ranks(a: np.ndarray | None, y: np.ndarray | None) -> _Ranks:
    """:class:`_Ranks` of the radius columns ``a [n]`` and ``y [m, n]``."""
    ua = ar = uy = yr = None
    if a is not None:
        ak = _order_keys(a)
        nan = np.isnan(a)
        ua = _sorted_unique(ak[~nan])
        ar = np.where(nan, -1, np.searchsorted(ua, ak)).astype(np.int32)
    if y is not None:
        yk = _order_keys(y.ravel())
        uy = _sorted_unique(yk[~np.isnan(y.ravel())])
        yr = np.searchsorted(uy, yk).astype(np.int32).reshape(y.shape)  # NaN: after them all
    return _Ranks(ua, ar, uy, yr)


def _pattern_records(S: int, keys: np.ndarray, ranks: _Ranks) -> _PatternRecords:
    """The :class:`_PatternRecords` of the bit set ``S`` (``keys [m, n]``): the records
    whose key is the same in every dataset of ``S`` and whose radius values are not missing."""
    ls = [r for r in range(keys.shape[0]) if S >> r & 1]
    K = keys[ls[0]].copy()
    for r in ls[1:]:  # a key that differs between the datasets of S matches no target in all
        K[keys[r] != K] = -1
    ok = K >= 0
    if ranks.ar is not None:
        ok &= ranks.ar >= 0
    if ranks.yr is not None:  # a missing value matches no window: nor its smallest or largest
        mx, mn = ranks.yr[ls].max(axis=0), ranks.yr[ls].min(axis=0)
        ok &= mx < ranks.uy.size
    pts = np.flatnonzero(ok)
    zero = np.zeros(pts.size, dtype=np.int32)
    uk = _sorted_unique(K[pts])
    gp = np.searchsorted(uk, K[pts])
    av = ranks.ar[pts] if ranks.ar is not None else zero
    mx, mn = (mx[pts], mn[pts]) if ranks.yr is not None else (zero, zero)
    order = np.lexsort((mx, av, gp))
    gp, av, mx, mn = gp[order], av[order], mx[order], mn[order]
    gstart = np.searchsorted(gp, np.arange(uk.size + 1))
    new = np.ones(pts.size, dtype=bool)
    new[1:] = (gp[1:] != gp[:-1]) | (av[1:] != av[:-1])
    distinct = np.cumsum(new) - 1
    slot = (distinct - distinct[gstart[gp]]).astype(np.int32) if pts.size else zero
    # the smallest values ranked inside each key group: the count's Fenwick tree then spans
    # one group, not every record
    zo = np.lexsort((mn, gp))
    mnz = np.empty(pts.size, dtype=np.int32)
    mnz[zo] = np.arange(pts.size, dtype=np.int32) - gstart[gp[zo]]
    return _PatternRecords(uk, gstart.astype(np.int64), av, slot, mx, mnz, mn[zo])


def _windows(ranks: _Ranks, b: TargetBounds) -> tuple[np.ndarray, ...]:
    """The targets' windows ``b`` as ranks: ``qlo <= arank < qhi`` on the unsynthesized
    column, largest rank ``< yhi`` and smallest ``>= ylo`` on the synthesized one, and the
    targets in the order of ``yhi``, ``qlo``, ``qhi`` and ``ylo``, for every pattern."""
    N = b.lo.shape[0]
    if ranks.ua is None:
        qlo, qhi = np.zeros(N, dtype=np.int64), np.ones(N, dtype=np.int64)
    else:
        qlo = np.searchsorted(ranks.ua, _order_keys(b.lo[:, 0]), side="left")
        qhi = np.searchsorted(ranks.ua, _order_keys(b.hi[:, 0]), side="right")
    if ranks.uy is None:
        yhi = ylo = np.zeros(N, dtype=np.int64)
    else:
        j = 0 if ranks.ua is None else 1
        yhi = np.searchsorted(ranks.uy, _order_keys(b.hi[:, j]), side="right")
        ylo = np.searchsorted(ranks.uy, _order_keys(b.lo[:, j]), side="left")
    order = [np.argsort(v, kind="stable") for v in (yhi, qlo, qhi, ylo)]
    return qlo, qhi, yhi, ylo, *order


def _counts(rec: _PatternRecords, tkey: np.ndarray, windows: tuple[np.ndarray, ...],
            has_y: bool) -> np.ndarray:
    """``N_t(⊇S)`` of every target (exact key ``tkey``) from its pattern's records and the
    targets' :func:`_windows`."""
    from bayes_risk.identification import _pattern_kernels

    if not rec.uk.size:
        return np.zeros(tkey.size, dtype=np.int64)
    pos = np.minimum(np.searchsorted(rec.uk, tkey), rec.uk.size - 1)
    tg = np.where((tkey >= 0) & (rec.uk[pos] == tkey), pos, -1).astype(np.int32)
    return _pattern_kernels._pattern_counts(rec.gstart, rec.arank, rec.slot, rec.mxr, rec.mnz,
                                           rec.mns, tg, *windows, has_y)


def superset_counts(S: int, keys: np.ndarray, a: np.ndarray | None, y: np.ndarray | None,
                    tkey: np.ndarray, b: TargetBounds) -> np.ndarray:
    """``N_t(⊇S)`` of every target: the records matching it in every dataset of the bit set
    ``S`` (``keys [m, n]``; ``a [n]`` the unsynthesized radius column, ``y [m, n]`` the
    synthesized one, ``None`` when absent; ``b`` the windows, columns ``a`` then ``y``): an
    offline dominance count (:func:`._pattern_kernels._pattern_counts`)."""
    ranks = _value_ranks(a, y)
    return _counts(_pattern_records(S, keys, ranks), tkey, _windows(ranks, b), y is not None)


def _with_fallback(prep: Prepared, rule: MatchRule, exact: np.ndarray, c_rep: np.ndarray):
    """The pattern counts and match-set sizes with the fallback to the unsynthesized key: in
    a dataset where a target matches nothing, its set is the records matching on the
    unsynthesized known columns, ``F``, which holds every direct match; so a record of ``F``
    has pattern ``S ∪ Z`` (``Z`` the empty datasets), and ``|F|`` less the matched records have
    pattern ``Z``. Returns the counts, the sizes, the sets and ``Z`` as bits."""
    from bayes_risk.identification.fallback import fallback_sets

    N, F = exact.shape
    R = c_rep.shape[1]
    fsets = fallback_sets(prep, rule)
    size = fsets.sizes()
    zero = ((c_rep == 0) << np.arange(R)).sum(axis=1)
    matched = exact.sum(axis=1)
    cols = np.arange(F)[None, :] | zero[:, None]
    moved = np.bincount((np.arange(N)[:, None] * F + cols).ravel(), weights=exact.ravel(),
                        minlength=N * F)
    out = np.rint(moved).astype(np.int64).reshape(N, F)
    fb = np.flatnonzero(zero > 0)
    out[fb, zero[fb]] += size[fb] - matched[fb]
    c_rep = np.where(c_rep == 0, size[:, None], c_rep)
    return out, c_rep, fsets, zero


def run_counted(prep: Prepared, rule: MatchRule, part: TargetPartition) -> PooledOutput | None:
    """The pooled engine output of :func:`~bayes_risk.identification.pooled.run_pooled`
    (without ``prob``), bitwise, from the match-pattern counts; ``None`` when a window has a
    NaN bound (the pair path then)."""
    from bayes_risk._memory import room

    R, N = prep.R, prep.n_targets
    b = target_bounds(prep, rule)
    if np.isnan(b.lo).any() or np.isnan(b.hi).any():
        return None
    tkey = _engine.target_keys(prep, rule)[0]
    keys = _record_keys(prep, rule)
    a = prep.rec_radius_us[0] if rule.radius_us else None
    y = np.stack([prep.rep_radius_s[r][0] for r in range(R)]) if rule.radius_s else None
    F = 1 << R
    # what no radius changes (the values' ranks, each pattern's records sorted) is prepared
    # once for a radius search's grid, where it fits (about 20 bytes a record and pattern)
    cols = ("pattern", rule.exact_us, rule.exact_s, rule.radius_us, rule.radius_s)
    ranks = prep.cached((*cols, "ranks"), lambda: _value_ranks(a, y))
    windows = _windows(ranks, b)
    left = room()
    keep = prep.runs > 1 and (left is None or (F - 1) * 20.0 * prep.n < left / 4)
    sup = np.zeros((N, F), dtype=np.int64)
    for S in range(1, F):
        rec = (prep.cached((*cols, S), lambda S=S: _pattern_records(S, keys, ranks)) if keep
               else _pattern_records(S, keys, ranks))
        sup[:, S] = _counts(rec, tkey, windows, y is not None)
    # N(=S) by inclusion–exclusion over the supersets of S
    exact = sup.copy()
    masks = np.arange(F)
    for i in range(R):
        low = masks[(masks & (1 << i)) == 0]
        exact[:, low] -= exact[:, low | (1 << i)]
    exact[:, 0] = 0
    c_rep = sup[:, [1 << r for r in range(R)]]
    fsets = None
    if part.fallback == "unsynthesized":
        exact, c_rep, fsets, zero = _with_fallback(prep, rule, exact, c_rep)
    # the replicate values p_r / R of run_pooled, summed as its pairs are (ascending r)
    V = [_engine.record_prob(c_rep[:, r], None)[0] / R for r in range(R)]
    w = np.zeros((N, F))
    for S in range(1, F):
        ls = [r for r in range(R) if S >> r & 1]
        vals = np.stack([V[r] for r in ls], axis=1).ravel()
        w[:, S] = np.add.reduceat(vals, np.arange(N) * len(ls)) if N else 0.0
    held = np.where(exact[:, 1:] > 0, w[:, 1:], 0.0)
    p_max = held.max(axis=1) if N else np.zeros(0)
    # the tie rule of engine.pooled_top, value by value
    gap = p_max[:, None] - held
    tied = (gap <= (TIE_RTOL * p_max + TIE_ATOL)[:, None]) & (held > 0)
    c_top = (tied * exact[:, 1:]).sum(axis=1)
    p_out = np.zeros(N)
    declared = _engine.declare(p_max, p_out, part.strategy)
    c = np.where(declared, c_top, 0)
    p_un = np.zeros(N)
    for r in range(R):
        p_un += (c_rep[:, r] == 0) / R
    ever = (c_rep > 0).any(axis=1)
    # T: the pattern of the target's own record
    rows = np.flatnonzero((prep.rec >= 0) & declared & prep.in_sample)
    k = prep.rec[rows]
    own = np.zeros(rows.size, dtype=np.int64)
    for r in range(R):
        m = (tkey[rows] >= 0) & (keys[r, k] == tkey[rows])
        j = 0
        for v in ([a] if a is not None else []) + ([y[r]] if y is not None else []):
            m &= (v[k] >= b.lo[rows, j]) & (v[k] <= b.hi[rows, j])
            j += 1
        own |= m.astype(np.int64) << r
    if fsets is not None:  # the fallback's datasets join the pattern of a record of its set
        inset = np.zeros(rows.size, dtype=bool)
        inset[own > 0] = True
        chk = np.flatnonzero((own == 0) & (zero[rows] > 0))
        if chk.size:
            inset[chk] = fsets.contains(rows[chk], k[chk])
        own = np.where(inset, own | zero[rows], 0)
    val = w[rows, own]
    T = np.zeros(N, dtype=bool)
    T[rows] = (val > 0) & ties(val, p_max[rows])
    # the fallback records matched directly in no dataset, as run_pooled's cells report them
    fb_extra = np.zeros(N, dtype=np.int64)
    fb_value = np.zeros(N)
    if fsets is not None and not part.drop:
        cell = np.flatnonzero(zero > 0)
        fb_extra[cell] = exact[cell, zero[cell]]
        on = cell[fb_extra[cell] > 0]
        fb_value[on] = w[on, zero[on]]
    return PooledOutput(prob=None, p_out=p_out, p_unassigned=p_un, p_max=p_max, c=c, T=T,
                        declared=declared, no_match_any=~ever, fallback_value=fb_value,
                        fallback_extra=fb_extra)
