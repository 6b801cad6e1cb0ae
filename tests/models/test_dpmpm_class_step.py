"""The DPMPM class step on records sorted by pattern (each pattern's class weights computed once
from a table of products of φ over groups of columns, counts of the new classes per pattern,
imputations per record) gives what the record-by-record step gives: the same classes,
imputations and counts, and its log-likelihood to rounding, whatever the visiting order, the
number of work items or the number of threads (and those give the same numbers bit for bit)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numba import njit

import bayes_risk.models.dpmpm.kernels as kern
from bayes_risk.models import Sampling


@njit(fastmath={"reassoc", "contract", "arcp", "nsz"})
def _record_by_record(codes, offsets, logphi, phi, log_pi, u_z, miss_i, miss_j, u_y, y, z):
    """The class step as it was (one record at a time, in data order): the reference."""
    n, p = codes.shape
    K = log_pi.shape[0]
    pi = np.empty(K)
    for k in range(K):
        pi[k] = math.exp(log_pi[k])
    ll = np.empty(n)
    w = np.empty(K)
    for i in range(n):
        for k in range(K):
            w[k] = pi[k]
        for j in range(p):
            c = codes[i, j]
            if c >= 0:
                for k in range(K):
                    w[k] *= phi[offsets[j] + c, k]
        s = 0.0
        for k in range(K):
            s += w[k]
        if s > 1e-280 and s < 1e280:
            ll[i] = math.log(s)
        else:
            for k in range(K):
                w[k] = log_pi[k]
            for j in range(p):
                c = codes[i, j]
                if c >= 0:
                    for k in range(K):
                        w[k] += logphi[offsets[j] + c, k]
            mx = -np.inf
            for k in range(K):
                if w[k] > mx:
                    mx = w[k]
            s = 0.0
            for k in range(K):
                w[k] = math.exp(w[k] - mx)
                s += w[k]
            ll[i] = mx + math.log(s)
        t = u_z[i] * s
        acc = 0.0
        zi = K - 1
        for k in range(K):
            acc += w[k]
            if acc >= t and w[k] > 0.0:
                zi = k
                break
        z[i] = zi
    total = 0.0
    for i in range(n):
        total += ll[i]
    for r in range(miss_i.shape[0]):
        i, j = miss_i[r], miss_j[r]
        base = offsets[j]
        d = (offsets[j + 1] if j + 1 < offsets.shape[0] else phi.shape[0]) - base
        acc = 0.0
        c_new = d - 1
        for c in range(d):
            acc += phi[base + c, z[i]]
            if acc >= u_y[r]:
                c_new = c
                break
        y[i, j] = c_new
    return total


def _problem(seed: int, n: int, d: list[int], K: int, miss: float, tiny: bool):
    rng = np.random.default_rng(seed)
    d = np.asarray(d)
    offsets = np.concatenate([[0], np.cumsum(d)[:-1]]).astype(np.int64)
    # few distinct rows, so that patterns and prefixes repeat
    base = np.column_stack([rng.integers(0, dj, size=max(n // 4, 1)) for dj in d])
    codes = base[rng.integers(0, len(base), size=n)].astype(np.int64)
    codes[rng.random(codes.shape) < miss] = -1
    # C order, as the sweep passes φ: a transposed (Fortran-order) φ made numba compile every
    # class-step kernel a second time for that layout (about 12 s of CPU with an empty cache)
    phi = np.ascontiguousarray(
        np.concatenate([rng.dirichlet(np.full(dj, 0.3), size=K).T for dj in d]))
    if tiny:  # level 0 nearly impossible: records with it in most columns underflow
        phi[offsets] = rng.uniform(1e-70, 1e-60, size=(len(d), K))
        codes[rng.random(codes.shape) < 0.5] = 0
    log_pi = np.log(rng.dirichlet(np.full(K, 0.5)))
    return codes, offsets, phi, log_pi, rng


def _compare(codes, offsets, phi, log_pi, rng, order, nchunks, kernel=kern._class_step):
    n = len(codes)
    L, K = phi.shape
    d = np.diff(np.r_[offsets, L]).astype(np.int64)
    logphi = np.log(phi)
    mi, mj = np.nonzero(codes < 0)
    u_z, u_y = rng.random(n), rng.random(mi.size)
    y0 = np.where(codes < 0, 0, codes)
    y_ref, z_ref = y0.copy(), np.zeros(n, dtype=np.int64)
    ll_ref = _record_by_record(codes, offsets, logphi, phi, log_pi, u_z, mi, mj, u_y, y_ref, z_ref)
    nk_ref, c_ref = kern.counts(y_ref, z_ref, offsets, L, K)
    # the sweep's own order of records (as DPMPMGibbs holds them)
    cv = np.ascontiguousarray(codes[order])
    vi, vj = np.nonzero(cv < 0)
    pos = np.full(codes.shape, -1)
    pos[codes < 0] = np.arange(mi.size)
    args = (cv, *kern.class_step_plan(cv, d, offsets), offsets, d, logphi, phi, log_pi,
            u_z[order], np.searchsorted(vi, np.arange(n + 1)), vj.astype(np.int64),
            u_y[pos[order][vi, vj]])
    y, z = y0[order].copy(), np.zeros(n, dtype=np.int64)
    ll, nk, c = kernel(*args, y, z, nchunks)
    # products over groups of columns round differently from the column-by-column ones
    assert ll == pytest.approx(ll_ref, rel=1e-12, abs=1e-9)
    np.testing.assert_array_equal(z, z_ref[order])
    np.testing.assert_array_equal(y, y_ref[order])
    np.testing.assert_array_equal(nk, nk_ref)
    np.testing.assert_array_equal(c, c_ref)
    # whatever the kernel and the parts: the serial step's numbers, bit for bit
    y1, z1 = y0[order].copy(), np.zeros(n, dtype=np.int64)
    assert kern.class_step_serial(*args, y1, z1, 1)[0] == ll
    return ll


def class_step_in_parts(codes, pat, rows, combos, offsets, d, logphi, phi, log_pi, u_z, miss_ptr,
                        miss_j, u_y, y, z, nparts):
    """The class step as the sweep splits it over its own threads (set-up, parts, finish; the
    parts here one after the other, last first, in unequal sizes)."""
    L, K = phi.shape
    pi, tab, cdf = kern.class_step_setup(phi, log_pi, offsets, combos)
    nblocks = kern.class_step_cuts(pat, 1)[-1]
    ll = np.empty(nblocks)
    nks = np.zeros((nparts, K), dtype=np.int64)
    cs = np.zeros((nparts, L, K))
    cgs = np.zeros((nparts, len(combos), K))
    cuts = np.unique(np.r_[0, np.sort(np.random.default_rng(nparts).integers(
        0, nblocks + 1, nparts - 1)), nblocks])
    for part in reversed(range(len(cuts) - 1)):
        kern._class_step_part(codes, pat, rows, offsets, d, logphi, pi, tab, cdf, log_pi, u_z,
                              miss_ptr, miss_j, u_y, y, z, cuts[part], cuts[part + 1], ll,
                              nks[part], cs[part], cgs[part])
    return kern.class_step_finish(ll, nks, cs, cgs, combos)


KERNELS = {"class_step": kern._class_step, "class_step_serial": kern.class_step_serial,
           "in parts": class_step_in_parts}


@pytest.mark.parametrize("tiny", [False, True])
@pytest.mark.parametrize("nchunks", [1, 3, 16])
@pytest.mark.parametrize("sort", [True, False])
@pytest.mark.parametrize("kernel", list(KERNELS))
def test_class_step_is_the_record_by_record_step(tiny, nchunks, sort, kernel):
    """The threaded kernel, its serial twin (used on small tables and in one-thread chain
    workers) and the step in parts (halves run on two threads of the sweep's own) all draw as
    the record-by-record step."""
    codes, offsets, phi, log_pi, rng = _problem(1, 3000, [3, 4, 9, 2, 6, 5], 40, 0.1, tiny)
    order = kern.sorted_patterns(codes) if sort else np.arange(len(codes), dtype=np.int64)
    ll = _compare(codes, offsets, phi, log_pi, rng, order, nchunks, KERNELS[kernel])
    if tiny:  # 781 of the 3,000 records have p(y_i) < 1e-280 (log-space branch; by hand)
        assert ll < 3000 * math.log(1e-200)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**31), n=st.integers(1, 300),
       d=st.lists(st.integers(1, 5), min_size=1, max_size=5), K=st.integers(1, 12),
       miss=st.sampled_from([0.0, 0.3, 1.0]), nchunks=st.integers(1, 9))
def test_class_step_any_order_any_chunks(seed, n, d, K, miss, nchunks):
    codes, offsets, phi, log_pi, rng = _problem(seed, n, d, K, miss, False)
    order = rng.permutation(n).astype(np.int64) if seed % 2 else kern.sorted_patterns(codes)
    kernel = list(KERNELS.values())[seed % 3]
    _compare(codes, offsets, phi, log_pi, rng, order, nchunks, kernel)


@pytest.mark.filterwarnings("ignore::bayes_risk.exceptions.ConvergenceWarning")
def test_sweeps_with_the_class_step_split_over_two_threads_give_the_same_draws(monkeypatch):
    """A fit whose class step runs in two halves at once (a thread of the sweep's own) gives
    the draws of the serial step bit for bit; the worker thread is joined before a fork."""
    import threading

    import numba

    import bayes_risk.models.dpmpm.step as step
    from bayes_risk.models import DPMPM

    codes, _, _, _, _ = _problem(3, 400, [3, 4, 2, 5], 6, 0.1, False)
    df = pd.DataFrame(codes).astype(float).where(codes >= 0).add_prefix("v")
    monkeypatch.setattr(numba, "get_num_threads", lambda: 2)
    fits = {}
    for name, split_from in (("serial", 10**12), ("split", 0)):
        monkeypatch.setattr(step, "_SPLIT_MIN_WORK", split_from)
        model = DPMPM(n_components=6,
                      sampling=Sampling(tune=30, draws=40, chains=1, cores=1), progressbar=False,
                      random_seed=5)
        fits[name] = model.fit(df, categorical=list(df.columns)).posterior_["posterior"]
    assert any(t.name.startswith("dpmpm-class-step") for t in threading.enumerate())
    for v in fits["serial"].data_vars:
        np.testing.assert_array_equal(fits["split"][v].values, fits["serial"][v].values, v)
    step._stop_helper_thread()  # what os.fork() runs first
    assert not any(t.name.startswith("dpmpm-class-step") for t in threading.enumerate())


def test_sorted_patterns_and_the_class_step_plan():
    codes = np.array([[1, 0, 2], [0, -1, 1], [1, 0, 2], [0, -1, 0], [1, 1, 2]])
    order = kern.sorted_patterns(codes)
    cv = codes[order]
    np.testing.assert_array_equal(cv, [[0, -1, 0], [0, -1, 1], [1, 0, 2], [1, 0, 2], [1, 1, 2]])
    d = np.array([2, 2, 3])
    offsets = np.array([0, 2, 4])
    pat, rows, combos = kern.class_step_plan(cv, d, offsets)
    np.testing.assert_array_equal(pat, [0, 1, 2, 4, 5])  # the third pattern twice
    # one group of the three columns (most levels first): each pattern's own level rows
    np.testing.assert_array_equal(rows, [[0], [1], [2], [3]])
    np.testing.assert_array_equal(combos, [[4, 0, -1, -1], [5, 0, -1, -1], [6, 1, 2, -1],
                                           [6, 1, 3, -1]])


def test_class_step_plan_groups_and_blocks():
    """Columns go four to a group (the most levels with the fewest); each pattern's weights are
    the product of its groups' rows, which together hold every observed level once; the parts'
    block boundaries split the records about evenly."""
    rng = np.random.default_rng(4)
    d = np.array([3, 4, 9, 2, 6, 5, 11, 4, 3, 3])
    offsets = np.r_[0, np.cumsum(d)[:-1]]
    codes = np.column_stack([rng.integers(-1, dj, 5000) for dj in d])
    cv = codes[kern.sorted_patterns(codes)]
    pat, rows, combos = kern.class_step_plan(cv, d, offsets)
    assert rows.shape == (len(pat) - 1, 3)
    for q in range(len(pat) - 1):
        levels = combos[rows[q]].ravel()
        want = (offsets + cv[pat[q]])[cv[pat[q]] >= 0]
        np.testing.assert_array_equal(np.sort(levels[levels >= 0]), np.sort(want))
        assert (cv[pat[q]:pat[q + 1]] == cv[pat[q]]).all()
    cuts = kern.class_step_cuts(pat, 4)
    assert cuts[0] == 0 and cuts[-1] == -(-(len(pat) - 1) // 64)
    sizes = np.diff(pat[np.minimum(cuts * 64, len(pat) - 1)])
    assert sizes.sum() == len(cv) and sizes.min() > 0.2 * len(cv)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**31), d=st.lists(st.integers(1, 14), min_size=1, max_size=6),
       K=st.integers(2, 90), prior=st.sampled_from([1e-3, 0.01, 1.0]))
def test_normalise_levels_is_the_numpy_phi_step(seed, d, K, prior):
    """The φ step's normalisation kernel gives bitwise what the blockwise numpy expression it
    replaced gives, empty classes (tiny or zero Gamma variates) included. K >= 2: with one
    class numpy sums a column's levels pairwise (a contiguous reduction), so the sweep keeps
    the numpy expression there."""
    rng = np.random.default_rng(seed)
    d = np.asarray(d)
    offsets = np.concatenate([[0], np.cumsum(d)[:-1]]).astype(np.int64)
    counts = rng.integers(0, 40, size=(int(d.sum()), K)) * (rng.random(K) < 0.6)
    g = rng.standard_gamma(prior + counts)
    g[:, : K // 4] = 0.0  # sums of zero: left undivided, then floored
    ref = np.empty_like(g)
    for a, dj in zip(offsets, d, strict=True):
        tot = g[a : a + dj].sum(axis=0)
        ref[a : a + dj] = np.maximum(g[a : a + dj] / np.where(tot > 0, tot, 1.0), 1e-300)
    out = kern.normalise_levels(g, offsets, 1e-300)
    assert out.tobytes() == ref.tobytes()
