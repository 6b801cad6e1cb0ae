"""Accumulation of pooled sums over replicates: the merges equal the direct sums bit for bit.

The posterior run accumulates (target, record) sums by merging sorted arrays; the reference is
the plain definition (sort everything, sum each key's values with ``np.add.reduceat`` in the
order they were added). Bitwise equality keeps the released-dataset, chunking and Dask
equalities of ``test_replicates.py`` independent of how the merge is organised.
"""

from types import SimpleNamespace

import numpy as np
import pytest

from bayes_risk.identification._replicate_batches import _merge_pairs
from bayes_risk.identification.uncertainty import PooledSums


def _direct_sums(keys, vals):
    order = np.argsort(keys, kind="stable")
    k = keys[order]
    starts = np.flatnonzero(np.concatenate([[True], k[1:] != k[:-1]]))
    return k[starts], np.add.reduceat(vals[order], starts)


def _bits(x):
    return np.asarray(x, dtype=np.float64).view(np.int64)


@pytest.fixture(params=[False, True], ids=["numpy", "compiled"])
def kernels(request, monkeypatch):
    """Both paths of the merges: numpy, and the compiled kernels (whatever the size)."""
    from bayes_risk.identification import engine

    monkeypatch.setattr(engine, "USE_NUMBA", request.param)
    return request.param


@pytest.mark.parametrize("seed", range(4))
def test_merge_pairs_equals_summing_everything_again(seed, kernels):
    rng = np.random.default_rng(seed)
    for _ in range(40):
        span = int(rng.integers(1, 2000))
        ak, av = np.zeros(0, dtype=np.int64), np.zeros(0)
        bk, bv = ak, av
        for _flush in range(int(rng.integers(1, 6))):
            m = int(rng.integers(0, 4000))  # keys repeat up to thousands of times (pairwise sums)
            k = rng.integers(0, span, m)
            v = rng.random(m) * rng.choice([1e-3, 1.0, 1e3], m)
            ak, av = _direct_sums(np.concatenate([ak, k]), np.concatenate([av, v])) \
                if (ak.size or m) else (ak, av)
            bk, bv = _merge_pairs(bk, bv, k, v)
            np.testing.assert_array_equal(ak, bk)
            np.testing.assert_array_equal(_bits(av), _bits(bv))


def _reference_add(acc, batch, n):
    """The sums of ``acc`` (keys, vals, in_u, fb) and ``batch`` by their definition."""
    keys, vals, in_u, fb = acc
    allk = np.union1d(keys, batch.keys)
    old, new = np.isin(allk, keys), np.isin(allk, batch.keys)
    u = np.zeros(allk.size, dtype=bool)
    u[old], u[new] = in_u, batch.in_u
    out = np.zeros(allk.size)
    out[old] += vals
    out[new] += batch.vals
    rows = allk // n
    out += np.where(~new & u, batch.fb[rows], 0.0)  # fallback mass of the unstored side
    out += np.where(~old & u, fb[rows], 0.0)
    return allk, out, u, fb + batch.fb


@pytest.mark.parametrize("seed", range(4))
def test_pooled_sums_add_equals_the_definition(seed, kernels):
    rng = np.random.default_rng(seed)
    for _ in range(40):
        N, n = int(rng.integers(1, 30)), int(rng.integers(1, 50))
        in_fallback = rng.random(N * n) < 0.3
        sums = PooledSums(N, n)
        ref = (np.zeros(0, dtype=np.int64), np.zeros(0), np.zeros(0, dtype=bool), np.zeros(N))
        for _batch in range(int(rng.integers(1, 6))):
            k = np.unique(rng.integers(0, N * n, int(rng.integers(0, N * n // 2 + 1))))
            batch = SimpleNamespace(
                keys=k, vals=rng.random(k.size) * 3, in_u=in_fallback[k],
                fb=rng.random(N) * (rng.random(N) < 0.5), p_out=rng.random(N),
                p_un=np.zeros(N), ever=rng.random(N) < 0.5, R=2)
            sums.add(batch)
            ref = _reference_add(ref, batch, n)
            np.testing.assert_array_equal(sums.keys, ref[0])
            np.testing.assert_array_equal(_bits(sums.vals), _bits(ref[1]))
            np.testing.assert_array_equal(sums.in_u, ref[2])
            np.testing.assert_array_equal(sums.fb, ref[3])
            # the sums at any sorted pairs: stored value, else the fallback mass, else 0
            q = np.unique(rng.integers(0, N * n, int(rng.integers(0, N * n + 1))))
            exp = np.where(in_fallback[q], ref[3][q // n], 0.0)
            hit = np.isin(q, ref[0])
            exp[hit] = ref[1][np.searchsorted(ref[0], q[hit])]
            np.testing.assert_array_equal(_bits(sums.on(q, in_fallback[q])), _bits(exp))


def test_compiled_pairwise_sum_is_reduceats_order():
    """The compiled flush sums a key's contributions as ``np.add.reduceat`` does (the first
    value plus numpy's pairwise sum of the others: 8 accumulators up to 128 values, halves
    above), bit for bit, at every length around the block and unroll boundaries and at any
    offset. (A whole-array ``np.add.reduce`` adds in another order: not the reference.)"""
    from bayes_risk.identification._pair_kernels import _pairwise

    rng = np.random.default_rng(7)
    for n in [*range(1, 140), 255, 256, 257, 263, 511, 1000, 1031, 4099]:
        for off in range(3):
            v = rng.random(n + off + 2) * rng.choice([1e-8, 1.0, 1e8], n + off + 2)
            ref = np.add.reduceat(v, [off, off + n])[0]
            np.testing.assert_array_equal(_bits(v[off] + _pairwise(v, off + 1, n - 1)),
                                          _bits(ref))
            # a stored key: its pending values reduced after a leading 0.0
            w = np.concatenate([[0.0], v[off:off + n]])
            np.testing.assert_array_equal(_bits(0.0 + _pairwise(v, off, n)),
                                          _bits(np.add.reduceat(w, [0])[0]))


def test_compiled_flush_equals_the_numpy_flush(monkeypatch):
    """``_merge_pairs``' compiled walk and its numpy path give the same keys and sums, bit for
    bit, on keys that repeat up to hundreds of times within a flush."""
    from bayes_risk.identification import engine

    def run(seed, compiled):
        monkeypatch.setattr(engine, "USE_NUMBA", compiled)
        r = np.random.default_rng(seed)
        ak, av = np.zeros(0, dtype=np.int64), np.zeros(0)
        for _flush in range(4):
            m = int(r.integers(0, 3000))
            k = r.integers(0, int(r.integers(1, 500)), m)
            ak, av = _merge_pairs(ak, av, k, r.random(m) * 10.0 ** r.integers(-6, 6, m))
        return ak, av

    for seed in range(30):
        (ka, va), (kb, vb) = run(seed, True), run(seed, False)
        np.testing.assert_array_equal(ka, kb)
        np.testing.assert_array_equal(_bits(va), _bits(vb))


@pytest.mark.parametrize("seed", range(3))
def test_compiled_candidate_selection_equals_numpy(seed, monkeypatch):
    """Each target's first largest pair and the candidate masks (``row_argmax``,
    ``candidate_pairs`` with ``R``, ``group_candidates``) are the same on the compiled walks and
    the numpy code, ties and targets without pairs included."""
    from bayes_risk.identification import engine
    from bayes_risk.identification import uncertainty as unc

    rng = np.random.default_rng(seed)
    N, n = 300, 97
    keys = np.unique(rng.integers(0, N * n, 6000))
    sums = np.round(rng.random(keys.size) * 8) / 4  # many ties
    in_u = rng.random(keys.size) < 0.3
    groups = []
    for _ in range(3):
        g = PooledSums(N, n)
        sub = np.sort(rng.choice(keys.size, keys.size // 2, replace=False))
        g.add(SimpleNamespace(keys=keys[sub], vals=sums[sub] * rng.random(sub.size),
                              in_u=in_u[sub], fb=np.zeros(N), p_out=np.zeros(N),
                              p_un=np.zeros(N), ever=np.zeros(N, dtype=bool), R=5))
        groups.append(g)
    bound = rng.random(N) * (rng.random(N) < 0.8)
    out = []
    for compiled in (True, False):
        monkeypatch.setattr(engine, "USE_NUMBA", compiled)
        gk, gb = unc.group_candidates(keys, sums, in_u, groups, 20, n=n, N=N)
        out.append((unc.row_argmax(keys, sums, n=n),
                    unc.candidate_pairs(keys, sums, bound, n=n, R=7),
                    unc.candidate_pairs(keys, sums / 7, bound, n=n), gk, *gb))
    for a, b in zip(*out, strict=True):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(out[0][1], out[0][2])  # sums and R, or the averages
    assert 0 < out[0][1].sum() < keys.size and 0 < out[0][3].sum() < keys.size
    star = out[0][0]  # the first of each target's largest values
    rows = keys // n
    assert np.array_equal(np.unique(rows[star]), np.unique(rows))
    for s in star[:50]:
        mine = rows == rows[s]
        assert sums[s] == sums[mine].max() and np.flatnonzero(mine & (sums == sums[s]))[0] == s
