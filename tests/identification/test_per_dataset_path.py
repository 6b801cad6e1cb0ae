"""The per-dataset run at the command line's sizes (issue 69): one replicate's index alive at a
time while the threads match its chunks of targets, with the counts of the numpy path."""

from __future__ import annotations

import warnings
import weakref

import numpy as np
import pandas as pd
import pytest

from bayes_risk.exceptions import DataWarning
from bayes_risk.identification import engine
from bayes_risk.identification.api import identification_risk
from bayes_risk.identification.specs import MatchSpec

pytest.importorskip("numba")


def _release(n: int = 2000, m: int = 4) -> tuple[pd.DataFrame, list[pd.DataFrame]]:
    rng = np.random.default_rng(69)
    y = pd.DataFrame({"g": rng.integers(0, 6, n), "x": rng.lognormal(8, 1, n).round(),
                      "w": rng.lognormal(5, 1, n).round(1)})
    zs = [y.assign(x=(y.x * rng.lognormal(0, 0.01, n)).round(),
                   w=(y.w * rng.lognormal(0, 0.01, n)).round(1)) for _ in range(m)]
    return y, zs


def _run(y: pd.DataFrame, zs: list[pd.DataFrame]):
    return identification_risk(y, zs, known=["g", "x", "w"], synthesized=["x", "w"],
                               categorical=["g"], aggregation="per_dataset",
                               match=MatchSpec(radius={"x": 0.05, "w": 0.05},
                                               radius_type="percentage"),
                               progressbar=False)


def test_one_replicate_index_alive_at_a_time(monkeypatch):
    """With chunks for both threads, a run holds one replicate's index at a time (an index a
    thread before: two at the peak), and its counts are the numpy path's (fails on the old
    engine: two indexes alive)."""
    y, zs = _release()
    monkeypatch.setattr(engine, "_CHUNK_TARGETS", 100)  # 20 chunks of targets
    monkeypatch.setattr(engine, "engine_threads", lambda compiled: 2 if compiled else 1)
    live: set[int] = set()
    most = [0]
    built = engine.replicate_index

    def counted(prep, rule, r, keep=True):
        idx = built(prep, rule, r, keep)
        live.add(r)
        most[0] = max(most[0], len(live))
        weakref.finalize(idx, live.discard, r)
        return idx

    monkeypatch.setattr(engine, "replicate_index", counted)
    monkeypatch.setattr(engine, "USE_NUMBA", True)
    compiled = _run(y, zs)
    assert most[0] == 1
    monkeypatch.setattr(engine, "USE_NUMBA", False)
    numpy_path = _run(y, zs)
    pd.testing.assert_frame_equal(compiled.records, numpy_path.records)
    assert compiled.records["c"].sum() > len(y)  # windows that hold several records


def test_record_prob_in_place_by_hand():
    """D&R 2008 eq. 6 without population counts: 1/c where c > 0, else 0; the counts left as
    they were (the probabilities are computed in a table of their own)."""
    c = np.array([[0, 1], [2, 4]])
    p, p_out = engine.record_prob(c, None)
    np.testing.assert_array_equal(p, [[0.0, 1.0], [0.5, 0.25]])
    np.testing.assert_array_equal(p_out, np.zeros((2, 2)))
    np.testing.assert_array_equal(c, [[0, 1], [2, 4]])


def test_the_measures_run_without_the_encoded_columns(monkeypatch):
    """A one-run per-dataset call drops the encoded records and targets before the measures
    (at 10^6 targets 0.1 GB of the command's peak; fails on the old engine: every encoded
    column still held), and the result still counts every target."""
    from bayes_risk.identification import api

    y, zs = _release(n=300, m=2)
    seen = {}
    assemble = api.assemble

    def spy(plan, rule, out):
        p = plan.prep
        seen["bytes"] = (p.tgt_exact.nbytes + p.tgt_radius.nbytes + p.rec_exact_us.nbytes
                         + sum(v.nbytes for v in p.confidential_radius.values()))
        seen["n_targets"] = p.n_targets
        return assemble(plan, rule, out)

    monkeypatch.setattr(api, "assemble", spy)
    res = _run(y, zs)
    assert seen == {"bytes": 0, "n_targets": 300}
    assert res.file["n_targets"] == 300 and res.c.dtype == np.int32
    monkeypatch.setattr(api, "assemble", assemble)
    pd.testing.assert_frame_equal(res.records, _run(y, zs).records)


@pytest.mark.parametrize("shape", ["rectangle", "ellipse"])
def test_a_rectangles_windows_keep_no_centres(monkeypatch, shape):
    """The per-dataset run's windows of a rectangle hold its bounds only (centres and scales,
    which no rectangle's count reads, are a zero view: 32 MB fewer at 10^6 targets); an
    ellipse keeps them. The counts are the numpy path's either way."""
    y, zs = _release(n=500, m=2)
    made = []
    window = engine._window_bounds

    def spy(b, order):
        out = window(b, order)
        made.append(out)
        return out

    monkeypatch.setattr(engine, "_window_bounds", spy)
    monkeypatch.setattr(engine, "USE_NUMBA", True)

    def run():
        return identification_risk(
            y, zs, known=["g", "x", "w"], synthesized=["x", "w"], categorical=["g"],
            aggregation="per_dataset", progressbar=False,
            match=MatchSpec(radius={"x": 0.05, "w": 0.05}, radius_type="percentage",
                            shape=shape))

    compiled = run()
    (b,) = made
    assert (b.centre.strides == (0, 0)) == (shape == "rectangle")
    assert b.lo.shape == (500, 2) and b.centre.shape == (500, 2)
    monkeypatch.setattr(engine, "USE_NUMBA", False)
    pd.testing.assert_frame_equal(compiled.records, run().records)


def test_keys_codes_and_record_numbers_are_held_narrow(monkeypatch):
    """The exact codes, the keys and the index's record numbers are held in the narrowest
    integer type that holds them (issue 88: the same counts in less memory), and the counts
    are the numpy path's on int64 (fails if any of them is widened back to int64)."""
    from bayes_risk.identification.encoding import code_dtype
    from bayes_risk.identification.index import mixed_radix

    assert code_dtype([7, 127]) is np.int8 and code_dtype([128]) is np.int16
    assert code_dtype([40_000]) is np.int32 and code_dtype([2**31]) is np.int64
    codes = np.array([[0, 1], [2, 3], [-1, 0]], dtype=np.int8)
    assert mixed_radix(codes, [3, 4], narrow=True).tolist() == [3, 11, -1]
    assert mixed_radix(codes, [3, 4], narrow=True).dtype == np.int32
    assert mixed_radix(codes, [2**20, 2**12], narrow=True).dtype == np.int64
    y, zs = _release()
    seen = {}
    built = engine.replicate_index

    def spy(prep, rule, r, keep=True):
        idx = built(prep, rule, r, keep)
        seen.update(codes=prep.tgt_exact.dtype, key=idx.key.dtype, perms=idx.perms.dtype)
        return idx

    monkeypatch.setattr(engine, "replicate_index", spy)
    monkeypatch.setattr(engine, "USE_NUMBA", True)
    compiled = _run(y, zs)
    assert seen == {"codes": np.int8, "key": np.int32, "perms": np.int32}
    monkeypatch.setattr(engine, "replicate_index", built)
    monkeypatch.setattr(engine, "USE_NUMBA", False)
    pd.testing.assert_frame_equal(compiled.records, _run(y, zs).records)


def test_the_per_dataset_tables_are_held_narrow_with_the_same_values():
    """Issue 88: ``c`` int32, the 0/1 tables bool and ``p_out`` (membership known) a read-only
    zero view: at 10^6 targets x 5 datasets 80 MB where int64 and float64 held 240 MB. The
    values are the definitions' (K: a unique true match, W: a unique false one), and the record
    table keeps its int64 columns."""
    rng = np.random.default_rng(88)
    y = pd.DataFrame({"g": rng.integers(0, 3, 400), "x": rng.lognormal(8, 1, 400).round(),
                      "w": rng.lognormal(5, 1, 400).round(1)})
    zs = [y.assign(x=(y.x * rng.lognormal(0, 0.03, 400)).round()) for _ in range(3)]
    res = _run(y, zs)
    assert res.c.dtype == np.int32
    assert {res.T.dtype, res.K.dtype, res.W.dtype, res.declared.dtype} == {np.dtype(bool)}
    assert res.p_out.shape == res.c.shape and res.p_out.strides == (0, 0)
    assert not res.p_out.flags.writeable and not res.p_out.any()
    np.testing.assert_array_equal(res.K, (res.c == 1) & res.T)
    np.testing.assert_array_equal(res.W, (res.c == 1) & ~res.T)
    np.testing.assert_array_equal(res.IR, np.where(res.c > 0, res.T / np.maximum(res.c, 1), 0))
    assert res.T.any() and res.W.any()  # both kinds of unique match occur
    recs = res.records
    assert all(recs[k].dtype == np.int64 for k in ("c", "T", "K", "W"))
    np.testing.assert_array_equal(recs["K"], res.K.ravel().astype(np.int64))


def test_a_rectangles_kernels_get_no_copy_of_its_zero_centres():
    """The compiled kernels get a rectangle's centres and scales as one zero row (they never
    read them), not a copy the size of the windows; an ellipse's as they are."""
    from bayes_risk.identification.index import TargetBounds, _ellipse_arrays

    lo = np.zeros((1000, 2))
    zero = np.broadcast_to(np.float64(0.0), lo.shape)
    cen, sc = _ellipse_arrays(TargetBounds(lo, lo + 1, zero, zero, False, False))
    assert cen.shape == sc.shape == (1, 2)
    centre, scale = np.arange(2000.0).reshape(1000, 2), np.ones((1000, 2))
    cen, sc = _ellipse_arrays(TargetBounds(lo, lo + 1, centre, scale, True, False))
    np.testing.assert_array_equal(cen, centre)
    np.testing.assert_array_equal(sc, scale)


@pytest.mark.parametrize("window", ["closed", "open"])
def test_coded_radius_columns_give_the_float_columns_results(monkeypatch, window):
    """A one-run per-dataset call holds its radius columns as int32 codes (issue 88: half the
    memory of float64 values), the matching index's sorted values too, and gives the records
    of the float64 columns: with ties, values equal to window bounds, a missing value (its
    window [inf, inf]), an unsynthesized radius column and the unsynthesized fallback."""
    from bayes_risk.identification import api

    y, zs = _release(n=600, m=3)
    y["u"] = np.random.default_rng(88).integers(0, 50, len(y)).astype(float)
    y.loc[:20, "x"] = np.nan
    y.loc[21:40, "x"] = 1000.0  # ties; 1000 +- 5% = 950 and 1050, values of other records
    y.loc[41:60, "x"] = 950.0
    zs = [z.assign(u=y.u, x=np.where(np.arange(len(y)) % 7 == 0, 1050.0, z.x)) for z in zs]
    monkeypatch.setattr(engine, "USE_NUMBA", True)
    held = []
    built = engine.make_index
    monkeypatch.setattr(engine, "make_index", lambda *a, **k: held.append(built(*a, **k))
                        or held[-1])

    def run():
        with warnings.catch_warnings():  # the missing values' targets match no record
            warnings.simplefilter("ignore", DataWarning)
            return identification_risk(
                y, zs, known=["g", "u", "x", "w"], synthesized=["x", "w"], categorical=["g"],
                aggregation="per_dataset", progressbar=False,
                match=MatchSpec(radius={"u": 0.1, "x": 0.05, "w": 0.05},
                                radius_type="percentage", window=window,
                                fallback="unsynthesized", missing_known="level"))

    coded = run()
    assert held and all(i.vals.dtype == np.int32 and i.sv.dtype == np.int32 for i in held)
    monkeypatch.setattr(api, "code_windows", lambda prep, rule: None)
    held.clear()
    floats = run()
    assert held and all(i.vals.dtype == np.float64 for i in held)
    pd.testing.assert_frame_equal(coded.records, floats.records)
    assert (coded.records["c"] > 1).any()


@pytest.mark.parametrize(("strategy", "declares"), [
    ("always", True), ("not_if_max", True), (("threshold", 0.4), True),
    (("threshold", 1e-300), False)])  # γ ties p_out = 0: nothing declared
def test_known_membership_declares_what_the_probability_table_declared(strategy, declares):
    """With membership known the per-dataset output declares without a table of
    probabilities; the declarations, ``c``, ``T`` and ``p_out`` are those of the probabilities
    and the declaration rule (D&R 2008 eqs. 6–7, §4.3) applied to them."""
    rng = np.random.default_rng(3)
    n_match = rng.integers(0, 4, (500, 3)).astype(np.int32)
    own = rng.random((500, 3)) < 0.5
    in_sample = rng.random(500) < 0.8
    p, p_out = engine.record_prob(n_match, None)
    dec = engine.declare(p, p_out, strategy)
    assert (0 < dec.sum() < dec.size) if declares else not dec.any()
    out = engine.per_dataset_output(n_match.copy(), own, in_sample, inv_f=None,
                                    strategy=strategy)
    np.testing.assert_array_equal(out.declared, dec)
    np.testing.assert_array_equal(out.c, np.where(dec, n_match, 0))
    np.testing.assert_array_equal(out.T, dec & own & in_sample[:, None])
    np.testing.assert_array_equal(out.p_out, 0.0)
    np.testing.assert_array_equal(out.no_match_any, (n_match == 0).all(axis=1))
