"""The pure-numpy match index (``ReplicateIndex``) against brute force, and its integer helpers
against the numpy functions they replace (same results, faster at command-line sizes)."""

from __future__ import annotations

import contextlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from bayes_risk.identification import index
from bayes_risk.identification.index import ReplicateIndex, TargetBounds

# values with ties, signed zeros, infinities and NaN (numpy sorts NaN last)
_EDGE_VALUES = [0.0, -0.0, 1.0, -1.0, 2.5, np.inf, -np.inf, np.nan, 1e-300, -1e300]
floats = st.one_of(st.sampled_from(_EDGE_VALUES), st.floats(-1e6, 1e6, allow_nan=False))


@settings(deadline=None, max_examples=200)
@given(hnp.arrays(np.float64, st.integers(0, 40), elements=floats),
       hnp.arrays(np.float64, st.integers(0, 10), elements=floats))
def test_order_keys_sort_and_search_as_floats(x, needles):
    """Integer keys order values as numpy orders the floats: same stable sort, same distinct
    values, same binary-search positions (-0.0 equals 0.0; every NaN equal and last)."""
    k = index._order_keys(x)
    assert k.dtype == np.int64
    np.testing.assert_array_equal(np.argsort(k, kind="stable"), np.argsort(x, kind="stable"))
    u = np.unique(x)
    uk = index._sorted_unique(k)
    assert len(uk) == len(u)
    nk = index._order_keys(needles)
    for side in ("left", "right"):
        np.testing.assert_array_equal(np.searchsorted(uk, nk, side=side),
                                      np.searchsorted(u, needles, side=side))
    np.testing.assert_array_equal(np.searchsorted(uk, k), np.searchsorted(u, x))


@settings(deadline=None, max_examples=100)
@given(hnp.arrays(np.int64, st.integers(0, 60), elements=st.integers(0, 50)))
def test_stable_order_is_stable_argsort(comp):
    order, sorted_comp = index._stable_order(comp)
    np.testing.assert_array_equal(order, np.argsort(comp, kind="stable"))
    np.testing.assert_array_equal(sorted_comp, np.sort(comp))


def test_stable_order_falls_back_before_overflow():
    comp = np.array([2**62, 5, 2**62, 0], dtype=np.int64)
    order, sorted_comp = index._stable_order(comp)
    np.testing.assert_array_equal(order, [3, 1, 0, 2])
    np.testing.assert_array_equal(sorted_comp, comp[[3, 1, 0, 2]])


@pytest.mark.parametrize("keys", [
    np.array([3, -1, 3, 0, 7, 0], dtype=np.int64),  # few keys: counted
    np.array([10**9, -1, 5, 10**9], dtype=np.int64),  # sparse keys: sorted
    np.zeros(0, dtype=np.int64),
])
def test_groups_equal_unique_inverse(keys):
    uk, g = index._groups(keys)
    want_uk, want_g = np.unique(keys, return_inverse=True)
    np.testing.assert_array_equal(uk, want_uk)
    np.testing.assert_array_equal(g, want_g.ravel())
    assert g.dtype == np.int64


@st.composite
def index_problems(draw):
    n = draw(st.integers(1, 30))
    q = draw(st.integers(1, 3))
    n_t = draw(st.integers(1, 12))
    key = draw(hnp.arrays(np.int64, n, elements=st.integers(-1, 2)))
    vals = draw(hnp.arrays(np.float64, (q, n), elements=st.sampled_from(
        [0.0, -0.0, 1.0, 2.0, 3.0, np.inf, -np.inf, np.nan])))
    tkey = draw(hnp.arrays(np.int64, n_t, elements=st.integers(-1, 3)))
    centre = draw(hnp.arrays(np.float64, (n_t, q), elements=st.sampled_from(
        [0.0, 1.0, 2.0, 3.0, np.inf])))
    half = draw(hnp.arrays(np.float64, (n_t, q), elements=st.sampled_from([0.0, 0.5, 1.0, 2.0])))
    lo, hi = centre - half, centre + half
    lo[np.isinf(centre)] = hi[np.isinf(centre)] = np.inf  # a missing target value
    chunk = draw(st.sampled_from([1, 3, 1 << 22]))
    rect_min = draw(st.sampled_from([1, 1 << 20]))
    return key, vals, tkey, lo, hi, centre, half, chunk, rect_min


@settings(deadline=None, max_examples=200)
@given(index_problems())
def test_replicate_index_matches_brute_force(prob):
    """Counts and match lists (target-major) equal a brute-force scan, whatever the chunking;
    record values may be NaN or infinite (bounds are never NaN: a missing target value has the
    window [inf, inf])."""
    key, vals, tkey, lo, hi, centre, half, chunk, rect_min = prob
    q = vals.shape[0]
    b = TargetBounds(lo, hi, centre, half, False, False)
    idx = ReplicateIndex(key, vals)
    saved = index._NUMPY_CHUNK_CANDIDATES, index._RECT_MIN_TARGETS
    index._NUMPY_CHUNK_CANDIDATES = chunk
    index._RECT_MIN_TARGETS = rect_min  # 1: the rectangle filter; large: the general one
    try:
        counts, recs = idx.match(tkey, b, True)
        counts_only, _ = idx.match(tkey, b, False)
        if q > 1:  # the rectangle filter lists exactly what the general filter lists
            s, e = idx.ranges(tkey, lo, hi)
            prim = np.argmin(np.maximum(e - s, 0), axis=1)
            ar = np.arange(len(prim))
            args = (idx.orders, idx.sv, prim, s[ar, prim], e[ar, prim], lo, hi)
            got = index._rect_filter(*args, True)
            want = index._numpy_filter(*args, False, b.centre, b.scale, False, True)
            np.testing.assert_array_equal(got[0], want[0])
            np.testing.assert_array_equal(got[1], want[1])
    finally:
        index._NUMPY_CHUNK_CANDIDATES, index._RECT_MIN_TARGETS = saved
    np.testing.assert_array_equal(counts, counts_only)
    start = 0
    for i in range(len(tkey)):
        ok = (key == tkey[i]) & (tkey[i] >= 0)
        for j in range(q):
            ok &= (vals[j] >= lo[i, j]) & (vals[j] <= hi[i, j])
        assert counts[i] == ok.sum()
        got = recs[start:start + counts[i]]
        start += counts[i]
        assert sorted(got.tolist()) == np.flatnonzero(ok).tolist()
    assert start == len(recs)



@st.composite
def count_problems(draw):
    """Keys with absent and sparse values, two or three radius columns with ties, signed zeros,
    infinities and NaN, windows empty, degenerate (radius 0) or wide."""
    n = draw(st.integers(1, 40))
    q = draw(st.integers(1, 3))
    n_t = draw(st.integers(1, 15))
    sparse = draw(st.booleans())  # key codes far apart: the index's unique-key lookup
    scale = 10**9 if sparse else 1
    key = draw(hnp.arrays(np.int64, n, elements=st.integers(0, 3))) * scale
    vals = draw(hnp.arrays(np.float64, (q, n), elements=st.sampled_from(
        [0.0, -0.0, 1.0, 2.0, 3.0, np.inf, -np.inf, np.nan])))
    # a code absent from the records (4) only where the index looks keys up (codes below
    # the number of cells index its groups directly)
    tkey = draw(hnp.arrays(np.int64, n_t, elements=st.integers(-1, 4 if sparse else 3))) * scale
    centre = draw(hnp.arrays(np.float64, (n_t, q), elements=st.sampled_from(
        [0.0, 1.0, 2.0, 3.0, np.inf])))
    half = draw(hnp.arrays(np.float64, (n_t, q), elements=st.sampled_from(
        [0.0, 0.5, 1.0, 2.0, 10.0, -1.0])))  # -1: a window whose top is below its bottom
    lo, hi = centre - half, centre + half
    lo[np.isinf(centre)] = hi[np.isinf(centre)] = np.inf  # a missing target value
    return key, vals, tkey, lo, hi, centre, np.abs(half), 4 * scale


@settings(deadline=None, max_examples=300)
@given(count_problems(), st.sampled_from([0.0, 6.0, np.inf]), st.booleans(), st.booleans())
def test_compiled_counts_equal_brute_force(prob, per_count, ellipse, orders):
    """The compiled index's match counts, by the offline range count (``SCAN_PER_COUNT=0``), by
    a scan (``inf``) or as chosen, with or without the targets' sort orders, equal a brute-force
    count of the records of the target's key inside its window (and inside its ellipse)."""
    key, vals, tkey, lo, hi, centre, scale, cells = prob
    q = vals.shape[0]
    b = TargetBounds(lo, hi, centre, scale, ellipse, False)
    idx = index.NumbaIndex(key, vals, cells)
    torder = None
    if orders:
        from bayes_risk.identification.engine import target_orders

        torder = target_orders(tkey, b, True)
    with _scan_per_count(per_count):
        counts, lst = idx.match(tkey, b, False, torder)
    assert lst is None
    want = []
    for i in range(len(tkey)):
        ok = (key == tkey[i]) & (tkey[i] >= 0)
        for j in range(q):
            ok &= (vals[j] >= lo[i, j]) & (vals[j] <= hi[i, j])
        if ellipse:
            ok &= index._in_ellipse(list(vals), list(centre[i]), list(scale[i]), False)
        want.append(int(ok.sum()))
    np.testing.assert_array_equal(counts, want)


@contextlib.contextmanager
def _scan_per_count(value: float):
    """``index.SCAN_PER_COUNT`` set inside the block (0: always the range count; inf: a scan)."""
    saved = index.SCAN_PER_COUNT
    index.SCAN_PER_COUNT = value
    try:
        yield
    finally:
        index.SCAN_PER_COUNT = saved


def test_range_count_of_wide_windows_by_hand():
    """Two key groups, two radius columns: the counts of a hand-checked example, by the range
    count (``SCAN_PER_COUNT=0``) and by a scan."""
    key = np.array([0, 0, 0, 0, 1, 1], dtype=np.int64)
    vals = np.array([[1.0, 2.0, 3.0, 4.0, 2.0, 2.0],
                     [10.0, 20.0, 30.0, 40.0, 20.0, 25.0]])
    tkey = np.array([0, 0, 1, 1, 2], dtype=np.int64)
    lo = np.array([[1.5, 15.0], [0.0, 0.0], [2.0, 20.0], [2.0, 21.0], [0.0, 0.0]])
    hi = np.array([[3.0, 40.0], [9.0, 25.0], [2.0, 20.0], [2.0, 30.0], [9.0, 99.0]])
    b = TargetBounds(lo, hi, (lo + hi) / 2, (hi - lo) / 2, False, False)
    idx = index.NumbaIndex(key, vals, 3)
    for dropped in (False, True):
        if dropped:  # the counts and lists read the values' sorted copies alone
            idx.drop_values()
            assert idx.vals.shape == (2, 0)
        for per_count in (0.0, np.inf):
            with _scan_per_count(per_count):
                counts, _ = idx.match(tkey, b, False)
            # target 0: records 1, 2 (x in [1.5, 3], y in [15, 40]); target 1: records 0, 1;
            # target 2: record 4 only (radius 0); target 3: record 5; target 4: no key group
            np.testing.assert_array_equal(counts, [2, 2, 1, 1, 0])
        _, listed = idx.match(tkey, b, True)
        assert [sorted(listed[:2]), sorted(listed[2:4]), *listed[4:]] == [[1, 2], [0, 1], 4, 5]


def test_count_scan_with_a_nan_bound_by_hand():
    """The count scan tests only the columns besides the one it scans, so a NaN bound on that
    column must still match nothing (``v >= NaN`` is false): two key-less targets, one with a
    NaN lower bound on the first column."""
    key = np.zeros(4, dtype=np.int64)
    vals = np.array([[1.0, 2.0, 3.0, 4.0], [10.0, 20.0, 30.0, 40.0]])
    lo = np.array([[np.nan, 0.0], [1.5, 0.0]])
    hi = np.array([[3.0, 99.0], [3.0, 99.0]])
    b = TargetBounds(lo, hi, (lo + hi) / 2, (hi - lo) / 2, False, False)
    idx = index.NumbaIndex(key, vals, 1)
    with _scan_per_count(np.inf):
        counts, _ = idx.match(np.zeros(2, dtype=np.int64), b, False)
    np.testing.assert_array_equal(counts, [0, 2])


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_value_orders_sort_as_argsort(dtype):
    """The compiled radix sort of the indexes (issue 88): the values in its order are
    ``np.sort``'s, NaN last, -0.0 and 0.0 together, the infinities at their ends; a digit every
    value shares is skipped and the order is a permutation."""
    pytest.importorskip("numba")
    from bayes_risk.identification import _kernels
    from bayes_risk.identification.index import value_orders

    rng = np.random.default_rng(88)
    hand = np.array([np.nan, -0.0, 0.0, -np.inf, np.inf, 3.0, -2.5, np.nan, 1e-300, -1e-300,
                     2.0**60, -(2.0**60), 3.0])
    for x in (hand, rng.normal(size=5000) * 1e3, rng.integers(0, 4, 3000).astype(float),
              np.full(9, 7.5), np.zeros(0)):
        out = np.empty(len(x), dtype=dtype)
        _kernels.value_order(np.ascontiguousarray(x).view(np.uint64), out)
        np.testing.assert_array_equal(x[out], np.sort(x))
        np.testing.assert_array_equal(np.sort(out), np.arange(len(x)))
    np.testing.assert_array_equal(hand[value_orders(hand[None, :])[0]][:3], [-np.inf, -(2.0**60),
                                                                          -2.5])


# window bounds and values drawn from a few numbers (ties, values equal to bounds), signed zeros
# and the infinities (a missing value is +inf, its window [inf, inf]); no NaN: a NaN bound
# leaves the column uncoded and a value is never NaN (radius_table)
_CODED = st.one_of(st.sampled_from([0.0, -0.0, 1.0, -1.0, 2.5, np.inf, -np.inf, 1e-300]),
                   st.integers(-3, 3).map(float), st.floats(-1e6, 1e6, allow_nan=False))


@settings(deadline=None, max_examples=200)
@given(st.integers(1, 30).flatmap(lambda n: st.tuples(
    hnp.arrays(np.float64, n, elements=_CODED), hnp.arrays(np.float64, n, elements=_CODED))),
    hnp.arrays(np.float64, st.integers(0, 40), elements=_CODED))
def test_codes_keep_every_comparison_of_values_and_bounds(bounds, vals):
    """The int32 codes of the coded radius columns (issue 88): every comparison of a value with
    a window bound (>=, <=, >, <, ==) is the same of their codes as of the float64 numbers, and
    the values' sort order handed with them sorts the codes."""
    pytest.importorskip("numba")
    from bayes_risk.identification.index import bound_codes, value_codes

    lo, hi = bounds
    vals = np.concatenate([vals, lo, hi])  # values equal to bounds, besides the drawn ones
    clo = np.empty(len(lo), dtype=np.int32)
    chi = np.empty(len(hi), dtype=np.int32)
    distinct = bound_codes(lo, hi, clo, chi)
    np.testing.assert_array_equal(distinct, np.unique(np.concatenate([lo, hi])))
    codes, order = value_codes(vals[None, :], [distinct])
    cv = codes[0]
    assert cv.dtype == np.int32
    # the values' sort, which the index takes for the codes' (it sorts them no more)
    assert (np.diff(cv[order[0]]) >= 0).all()
    for b, cb in ((lo, clo), (hi, chi)):
        for op in (np.greater_equal, np.less_equal, np.greater, np.less, np.equal):
            np.testing.assert_array_equal(op(cv[:, None], cb[None, :]),
                                          op(vals[:, None], b[None, :]))
