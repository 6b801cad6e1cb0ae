"""Pooled identification risk with the fallback to the unsynthesized key (SPEC §4.3(5), §4.5).

The fallback set of a target is represented by the set and one probability
(the default); these tests check that every probability, top set and measure is bitwise the
same as when each set is materialised record by record (``run_pooled(fallback_cells=False)``,
the path of targets with missing known values).
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bayes_risk import MatchSpec, PopulationSpec
from bayes_risk.exceptions import DataWarning, ValidationError
from bayes_risk.identification import engine
from bayes_risk.identification.api import identification_risk


def ir(*args, **kw):
    kw.setdefault("progressbar", False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)
        return identification_risk(*args, **kw)


def _cells(monkeypatch, cells: bool) -> None:
    """Fallback sets kept as cells (the default) or materialised record by record."""
    from bayes_risk.identification import evaluate, pooled

    real = pooled.run_pooled
    monkeypatch.setattr(evaluate, "run_pooled", real if cells else
                        lambda *a, **kw: real(*a, **{**kw, "fallback_cells": False}))


def _both(monkeypatch, *args, **kw):
    """The result with fallback sets as cells and materialised."""
    out = []
    for cells in (True, False):
        _cells(monkeypatch, cells)
        out.append(ir(*args, **kw))
    _cells(monkeypatch, True)
    return out


def _bitwise(a: np.ndarray, b: np.ndarray) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype.kind == "f":
        return a.shape == b.shape and np.array_equal(a.view(np.int64), b.view(np.int64))
    return np.array_equal(a, b)


def _assert_identical(cell, mat):
    pc, pm = cell.prob, mat.prob
    assert pc.shape == pm.shape
    assert _bitwise(pc.indptr, pm.indptr)
    assert _bitwise(pc.indices, pm.indices)
    assert _bitwise(pc.data, pm.data)
    assert cell.pooled.nnz == pm.nnz
    assert (mat.pooled.fallback_extra == 0).all()
    assert cell.pooled.explicit.nnz <= pm.nnz
    for name in ("c", "T", "K", "W", "IR", "declared", "p_out", "p_unassigned"):
        assert _bitwise(getattr(cell, name), getattr(mat, name)), name
    pd.testing.assert_frame_equal(cell.records, mat.records)
    assert cell.file == mat.file or all(
        (a == b) or (a != a and b != b) for a, b in
        zip(cell.file.values(), mat.file.values(), strict=True)
    )


def test_toy5_fallback_set_is_one_value(toy5_local):
    """SPEC §4.7 worked example: replicate 2 has no (M, B) record, so target 3 spreads its mass
    over the three males; record 1 (the first male) is matched directly in no replicate."""
    y, z = toy5_local
    res = ir(y, z, known=["sex", "race"], synthesized=["race"])
    pooled = res.pooled
    assert pooled.fallback_extra[2] == 1 and pooled.fallback_value[2] == pytest.approx(1 / 6)
    k, p = pooled.row(2)
    np.testing.assert_array_equal(k, [0, 1, 2])
    np.testing.assert_allclose(p, [1 / 6, 5 / 12, 5 / 12])
    assert pooled.explicit[2, 0] == 0  # not stored: represented by the set
    np.testing.assert_array_equal(res.c, [1, 1, 2, 2, 2])
    np.testing.assert_array_equal(res.T, [1, 0, 1, 1, 1])


@pytest.fixture
def toy5_local():
    y = pd.DataFrame({"sex": ["M", "M", "M", "F", "F"], "race": ["W", "W", "B", "W", "B"]})
    z1 = y.assign(race=["W", "B", "B", "W", "W"])
    z2 = y.assign(race=["W", "W", "W", "B", "B"])
    return y, [z1, z2]


def _coarse_problem(seed: int, n: int, m: int, levels: int = 3):
    """Synthesized categorical column with many levels: most replicates leave a target without
    a match, so the fallback to the (coarse) unsynthesized key is used often."""
    rng = np.random.default_rng(seed)
    y = pd.DataFrame({
        "g": rng.integers(0, levels, n), "a": rng.integers(20, 30, n),
        "s": rng.integers(0, 12, n), "x": rng.lognormal(3, 0.4, n),
    })
    zs = [y.assign(s=rng.integers(0, 12, n), x=y.x * rng.lognormal(0, 0.2, n))
          for _ in range(m)]
    return y, zs


@pytest.mark.parametrize("compiled", [True, False])
@pytest.mark.parametrize("m", [1, 3, 12, 20])
def test_cells_equal_materialised(monkeypatch, compiled, m):
    """Up to 20 replicates: fallback contributions of 8 or more replicates are summed by numpy's
    blocked (pairwise) summation, which the compact form must reproduce bit for bit."""
    if compiled and not engine._HAVE_NUMBA:
        pytest.skip("numba not importable")
    monkeypatch.setattr(engine, "USE_NUMBA", compiled)
    y, zs = _coarse_problem(m, n=400, m=m)
    cell, mat = _both(monkeypatch, y, zs, known=["g", "s", "x"], synthesized=["s", "x"],
                      categorical=["g", "s"],
                      match=MatchSpec(radius={"x": 0.1}))
    assert cell.settings["fallback"] == "unsynthesized"
    assert (cell.pooled.fallback_extra > 0).sum() > 50  # the fallback is exercised
    _assert_identical(cell, mat)


@pytest.mark.parametrize("shape", ["rectangle", "ellipse"])
@pytest.mark.parametrize("window", ["closed", "open"])
def test_cells_with_unsynthesized_radius_column(monkeypatch, shape, window):
    """A radius on a known unsynthesized column: the fallback set is a window, not a cell."""
    y, zs = _coarse_problem(7, n=300, m=6)
    cell, mat = _both(monkeypatch, y, zs, known=["g", "a", "s", "x"],
                      synthesized=["s", "x"], categorical=["g", "s"],
                      match=MatchSpec(radius={"a": 0.1, "x": 0.15}, window=window, shape=shape))
    assert (cell.pooled.fallback_extra > 0).any()
    _assert_identical(cell, mat)


@pytest.mark.parametrize("strategy", ["always", ("threshold", 0.5), "not_if_max"])
def test_cells_unknown_membership_and_targets(monkeypatch, strategy):
    """Per-replicate probabilities min(1/F, 1/n) (membership unknown) and external targets
    (some out of the sample) go through the compact form unchanged."""
    y, zs = _coarse_problem(3, n=250, m=5)
    y = y.assign(pid=np.arange(len(y)) + 100)
    rng = np.random.default_rng(0)
    tg = y.iloc[rng.choice(len(y), 60, replace=False)].copy()
    tg.loc[tg.index[:10], "pid"] = -np.arange(1, 11)  # not in the sample
    F = rng.integers(1, 40, len(tg)).astype(float)
    cell, mat = _both(monkeypatch, y, zs, known=["g", "a", "s"], synthesized=["s"],
                      categorical=["g", "s"],
                      population=PopulationSpec(membership="unknown", counts=F, targets=tg,
                                                target_id="pid"),
                      match=MatchSpec(fallback="unsynthesized", strategy=strategy))
    assert (cell.pooled.fallback_extra > 0).any()
    _assert_identical(cell, mat)


def test_cells_avoid_the_materialised_size(monkeypatch):
    """Coarse unsynthesized key: the materialised matrix would exceed the limit; the compact
    form runs, rows are read from it, and only asking for the full matrix is refused."""
    y, zs = _coarse_problem(11, n=3000, m=3, levels=2)
    small = ir(y, zs, known=["g", "s", "x"], synthesized=["s", "x"],
               categorical=["g", "s"], match=MatchSpec(radius={"x": 0.01}))
    full = small.prob
    assert small.pooled.explicit.nnz < full.nnz / 20  # the sets dominate the full matrix
    monkeypatch.setattr(engine, "MAX_NNZ", small.pooled.explicit.nnz + 10)
    res = ir(y, zs, known=["g", "s", "x"], synthesized=["s", "x"],
             categorical=["g", "s"], match=MatchSpec(radius={"x": 0.01}))
    np.testing.assert_array_equal(res.c, small.c)
    k, p = res.pooled.row(5)
    np.testing.assert_array_equal(k, full.indices[full.indptr[5]:full.indptr[6]])
    assert _bitwise(p, full.data[full.indptr[5]:full.indptr[6]])
    with pytest.raises(ValidationError, match="row by row"):
        res.prob  # noqa: B018
    _cells(monkeypatch, False)
    with pytest.raises(ValidationError, match="per_dataset"):
        ir(y, zs, known=["g", "s", "x"], synthesized=["s", "x"], categorical=["g", "s"],
           match=MatchSpec(radius={"x": 0.01}))


@st.composite
def fallback_problems(draw):
    n = draw(st.integers(2, 40))
    m = draw(st.integers(1, 10))
    seed = draw(st.integers(0, 2**31 - 1))
    rng = np.random.default_rng(seed)
    g_levels = draw(st.integers(1, 3))
    s_levels = draw(st.integers(1, 6))
    y = pd.DataFrame({
        "g": rng.integers(0, g_levels, n), "a": rng.integers(1, 5, n) * 10,
        "s": rng.integers(0, s_levels, n), "x": rng.integers(1, 6, n) * 10.0,
    })
    # the release draws s among the original's levels (a level the original never holds is
    # refused: SYNTHETIC_ONLY_LEVEL)
    zs = [y.assign(s=rng.choice(np.unique(y.s), n), x=y.x + rng.integers(-2, 3, n) * 5.0)
          for _ in range(m)]
    ra = draw(st.sampled_from([None, 0.0, 0.3]))
    rx = draw(st.sampled_from([0.0, 0.1, 0.5]))
    shape = draw(st.sampled_from(["rectangle", "ellipse"]))
    return y, zs, ra, rx, shape


@settings(deadline=None)
@given(fallback_problems())
def test_property_cells_equal_materialised(prob):
    """Bitwise equality on random small problems (duplicated keys, ties, zero radii, fallback
    sets with and without directly matched records)."""
    y, zs, ra, rx, shape = prob
    radius = {"x": rx} if ra is None else {"x": rx, "a": ra}
    kw = dict(categorical=["g", "s"], match=MatchSpec(radius=radius, shape=shape))
    with pytest.MonkeyPatch.context() as mp:
        cell, mat = _both(mp, y, zs, known=["g", "a", "s", "x"], synthesized=["s", "x"],
                          **kw)
    _assert_identical(cell, mat)
    # invariants of the compact form: each row sums to the replicates with a match
    full = cell.prob.toarray()
    np.testing.assert_allclose(full.sum(axis=1) + cell.p_unassigned, 1.0, rtol=1e-12)
    assert np.all(cell.pooled.fallback_extra >= 0)
    has = cell.pooled.fallback_extra > 0
    assert np.all(cell.pooled.fallback_value[has] > 0)


@pytest.mark.parametrize("fallback", ["unsynthesized", "none"])
def test_chunks_without_the_progress_bar_give_the_same_numbers(monkeypatch, fallback):
    """Without a progress bar the targets are not cut at the bar's 100 steps (one chunk for a
    small table, instead of one per target here): every probability and measure is bitwise
    what the chunks of the bar's steps give."""
    from bayes_risk.identification import pooled

    y, zs = _coarse_problem(4, 150, 3)
    kw = dict(known=["g", "a", "s", "x"], synthesized=["s", "x"], categorical=["g", "s"],
              match=MatchSpec(radius={"x": 0.1}, fallback=fallback))
    chunks = []
    real = pooled._pool_chunk

    def counting(ctx, acc, a, z):
        chunks.append(z - a)
        return real(ctx, acc, a, z)

    monkeypatch.setattr(pooled, "_pool_chunk", counting)
    quiet = ir(y, zs, **kw)
    assert chunks == [150]
    chunks.clear()
    shown = ir(y, zs, progressbar=True, **kw)
    assert len(chunks) == 100 and sum(chunks) == 150
    for part in ("indptr", "indices", "data"):
        assert _bitwise(getattr(quiet.prob, part), getattr(shown.prob, part)), part
    for name in ("c", "T", "K", "W", "IR", "declared", "p_out", "p_unassigned"):
        assert _bitwise(getattr(quiet, name), getattr(shown, name)), name
    for name in ("fallback_value", "fallback_extra"):
        a, b = getattr(quiet.pooled, name), getattr(shown.pooled, name)
        assert (a is None and b is None) or _bitwise(a, b), name
    if fallback == "unsynthesized":
        assert (quiet.pooled.fallback_extra > 0).any()  # the fallback cells are exercised
    pd.testing.assert_frame_equal(quiet.records, shown.records)
    np.testing.assert_equal(quiet.file, shown.file)


def _dup_problem(seed: int, n: int, m: int):
    """Coarse columns: many targets share their key and window (the distinct-target path)."""
    rng = np.random.default_rng(seed)
    y = pd.DataFrame({"g": rng.integers(0, 3, n), "s": rng.integers(0, 6, n),
                      "x": rng.integers(1, 6, n).astype(float)})
    zs = [y.assign(s=rng.integers(0, 6, n), x=rng.integers(1, 6, n).astype(float))
          for _ in range(m)]
    return y, zs


def _budget_problem(monkeypatch, compiled, fallback, dups):
    """The tables and arguments of the budget tests, with the engine and fallback set."""
    y, zs = (_dup_problem if dups else _coarse_problem)(11, 240, 4)
    kw = dict(known=["g", "s", "x"], synthesized=["s", "x"], categorical=["g", "s"],
              match=MatchSpec(radius={"x": 0.3},
                              fallback="none" if fallback == "none" else "unsynthesized"))
    monkeypatch.setattr(engine, "USE_NUMBA", compiled)
    _cells(monkeypatch, fallback == "cells")
    return y, zs, kw


@pytest.mark.parametrize("compiled", [True, False])
@pytest.mark.parametrize("fallback", ["cells", "materialised", "none"])
@pytest.mark.parametrize("dups", [True, False])
def test_memory_budget_chunking_gives_the_same_numbers(monkeypatch, compiled, fallback, dups):
    """A tiny memory budget cuts the targets into chunks of a few contributions (each replicate
    stopping early, blocks of one pair), and targets sharing their key and windows are matched
    once or each on its own: every probability and measure is bitwise the default run's."""
    from bayes_risk import _memory
    from bayes_risk.identification import pooled

    y, zs, kw = _budget_problem(monkeypatch, compiled, fallback, dups)
    base = ir(y, zs, **kw)
    seen = []
    real = pooled._pool_chunk

    def counting(ctx, acc, a, z):
        seen.append((ctx.share, ctx.order is not None))
        return real(ctx, acc, a, z)

    monkeypatch.setattr(pooled, "_pool_chunk", counting)
    monkeypatch.setattr(_memory, "working_bytes",
                        lambda cap, reserve=0: 40 * pooled.BYTES_PER_CONTRIBUTION)
    monkeypatch.setattr(pooled, "MIN_BLOCK", 1)
    monkeypatch.setattr(pooled, "FIRST_CHUNK_TARGETS", 7)
    for distinct in (True, False):
        seen.clear()
        # share 1: every chunk matches distinct targets; below 0: none does
        monkeypatch.setattr(pooled, "DISTINCT_SHARE", 1.0 if distinct else -1.0)
        small = ir(y, zs, **kw)
        assert len(seen) > 10 and all(s == 40 for s, _ in seen)
        assert all(d is distinct for _, d in seen)
        for part in ("indptr", "indices", "data"):
            assert _bitwise(getattr(base.prob, part), getattr(small.prob, part)), part
        for name in ("c", "T", "K", "W", "IR", "declared", "p_out", "p_unassigned"):
            assert _bitwise(getattr(base, name), getattr(small, name)), name
        for name in ("fallback_value", "fallback_extra"):
            a, b = getattr(base.pooled, name), getattr(small.pooled, name)
            assert (a is None and b is None) or _bitwise(a, b), name
        pd.testing.assert_frame_equal(base.records, small.records)
        np.testing.assert_equal(base.file, small.file)
    if fallback == "cells":
        assert (base.pooled.fallback_extra > 0).any()  # the fallback cells are exercised


def _one_index_bytes(n: int, q: int) -> int:
    """Bytes ``run_pooled`` counts for one replicate's index of ``n`` records and ``q`` radius
    columns (key, values, orders and the values in each column's order)."""
    return n * 8 * (1 + q + max(q, 1) + q * q + q)


@pytest.mark.parametrize("compiled", [True, False])
@pytest.mark.parametrize("fallback", ["cells", "materialised", "none"])
@pytest.mark.parametrize("dups", [True, False])
def test_indexes_in_turn_give_the_same_numbers(monkeypatch, compiled, fallback, dups):
    """A budget that holds one replicate's index but not all four lists the matches one index
    at a time, in passes of a few targets (each index built again per pass): every probability
    and measure is bitwise the unbudgeted run's, which holds every index."""
    import bayes_risk as br
    from bayes_risk import _memory
    from bayes_risk.identification import pooled

    y, zs, kw = _budget_problem(monkeypatch, compiled, fallback, dups)
    passes = []
    real = pooled._InTurn._list
    monkeypatch.setattr(pooled._InTurn, "_list", lambda self, a: passes.append(a) or real(self, a))
    base = ir(y, zs, **kw)
    assert not passes  # no budget: every index at once
    one = _one_index_bytes(len(y), 1)
    limit = 10**9
    # room for 3.5 of the 4 indexes (the process's own memory pinned: the test decides it),
    # then for the whole matrix of pooled probabilities
    room = {"left": 7 * one // 2}
    monkeypatch.setattr(_memory, "resident_memory", lambda: limit - room["left"])
    csr = pooled._csr
    monkeypatch.setattr(pooled, "_csr", lambda *a: room.update(left=10**8) or csr(*a))
    monkeypatch.setattr(_memory, "MIN_WORKING_BYTES", 64)
    with br.memory_limit(limit):
        small = ir(y, zs, **kw)
    assert len(passes) > 1 and passes == sorted(set(passes))
    for part in ("indptr", "indices", "data"):
        assert _bitwise(getattr(base.prob, part), getattr(small.prob, part)), part
    for name in ("c", "T", "K", "W", "IR", "declared", "p_out", "p_unassigned"):
        assert _bitwise(getattr(base, name), getattr(small, name)), name
    for name in ("fallback_value", "fallback_extra"):
        assert _bitwise(getattr(base.pooled, name), getattr(small.pooled, name)), name
    pd.testing.assert_frame_equal(base.records, small.records)
    np.testing.assert_equal(base.file, small.file)
    # below one index: refused beforehand, with the least limit that would pass the check
    monkeypatch.setattr(_memory, "resident_memory", lambda: limit - one // 2)
    with br.memory_limit(limit), pytest.raises(ValidationError) as err:
        ir(y, zs, **kw)
    assert err.value.code == "MEMORY_TOO_LARGE"
    assert "matching indexes of the 1 replicate(s)" in str(err.value)
    assert f"raise the limit to at least {_memory.format_bytes(limit + one - one // 2, up=True)}" \
        in str(err.value)


def test_pooled_measures_without_pooled_probabilities_the_same_measures():
    """``aggregation="pooled_measures"`` keeps no ``π`` and leaves every measure as it is."""
    y, zs = _coarse_problem(3, 300, 3)
    kw = dict(known=["g", "s", "x"], synthesized=["s", "x"], categorical=["g", "s"],
              match=MatchSpec(radius={"x": 0.3}))
    base = ir(y, zs, **kw)
    lean = ir(y, zs, aggregation="pooled_measures", **kw)
    assert lean.pooled is None and lean.prob is None and base.pooled is not None
    assert lean.settings["aggregation"] == "pooled"
    pd.testing.assert_frame_equal(base.records, lean.records)
    np.testing.assert_equal(base.file, lean.file)
