"""Identification risk of a release whose rows were removed after a full synthesis (issue 85):
every original record stays a target, its true match exists only in the datasets that keep its
row, and the false matches are counted over the rows released. Checked against brute force
(exact and radius matching, per dataset and pooled, both engines) and, with nothing removed,
bit for bit against the release as synthesized."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from bayes_risk.data import Schema, SyntheticData
from bayes_risk.data.synthetic import REMOVED_ROWS, released_records
from bayes_risk.disclosure import sdc
from bayes_risk.exceptions import ValidationError
from bayes_risk.identification import engine
from bayes_risk.identification.api import identification_risk
from bayes_risk.identification.specs import MatchSpec

pytestmark = pytest.mark.filterwarnings("ignore:NO_MATCH", "ignore:.*ROWS_NOT_VERIFIED")

KNOWN = ["a", "b", "x"]
RADIUS = 0.5  # absolute, closed window: x on a grid of 0.25, so ties sit on the window's edge


def _tables(n: int = 40, m: int = 3, seed: int = 85):
    """An original and ``m`` datasets that redraw some of its values (true matches happen)."""
    rng = np.random.default_rng(seed)
    y = pd.DataFrame({"a": rng.integers(0, 3, n), "b": rng.integers(0, 2, n),
                      "x": rng.integers(0, 12, n) * 0.25})
    zs = []
    for _ in range(m):
        z = y.copy()
        redraw = rng.random(n) < 0.3
        z.loc[redraw, "a"] = rng.integers(0, 3, int(redraw.sum()))
        z["x"] = z["x"] + rng.integers(-3, 4, n) * 0.25
        zs.append(z)
    return y, zs


def _schema(y: pd.DataFrame) -> Schema:
    from bayes_risk.data import infer_schema

    return infer_schema(y, categorical=["a", "b"]).with_roles(list(y.columns))


def _release(y, zs, removed):
    """The release after removing rows ``removed[l]`` of each dataset, as ``sdc`` records it."""
    kept = [z.drop(index=r).reset_index(drop=True) for z, r in zip(zs, removed, strict=True)]
    step = {"operation": "remove_replicated_uniques", "keys": KNOWN, "compat": None,
            "n_removed": [len(r) for r in removed], REMOVED_ROWS: [sorted(r) for r in removed]}
    return SyntheticData(kept, method="external", schema=_schema(y),
                         extra={"post_processing": [step]})


def _match_sets(y, zs, removed, radius):
    """``M[l][i]``: the records whose released row of dataset ``l`` matches target ``i``."""
    out = []
    for z, gone in zip(zs, removed, strict=True):
        rows = [j for j in range(len(y)) if j not in set(gone)]
        sets = []
        for i in range(len(y)):
            t = y.iloc[i]
            sets.append({j for j in rows if z.a[j] == t.a and z.b[j] == t.b
                         and (radius is None or abs(z.x[j] - t.x) <= radius)
                         and (radius is not None or z.x[j] == t.x)})
        out.append(sets)
    return out


def _brute(y, zs, removed, radius, aggregation):
    """``(c, T)`` per target: per dataset ``[n, m]``; pooled ``[n]`` (the top set of
    ``π(j) = (1/m) Σ_l I(j ∈ M_l) / c_l``)."""
    M = _match_sets(y, zs, removed, radius)
    n, m = len(y), len(zs)
    if aggregation == "per_dataset":
        c = np.array([[len(M[l][i]) for l in range(m)] for i in range(n)])
        T = np.array([[i in M[l][i] for l in range(m)] for i in range(n)])
        return c, T
    c, T = np.zeros(n, int), np.zeros(n, bool)
    for i in range(n):
        pi = np.zeros(n)
        for l in range(m):
            for j in M[l][i]:
                pi[j] += 1.0 / len(M[l][i]) / m
        if pi.max() > 0:
            top = np.flatnonzero(np.isclose(pi, pi.max(), rtol=1e-12, atol=0))
            c[i], T[i] = len(top), i in top
    return c, T


@pytest.fixture(params=[False, True], ids=["numpy", "compiled"])
def compiled(request, monkeypatch):
    if request.param:
        pytest.importorskip("numba")
    monkeypatch.setattr(engine, "USE_NUMBA", request.param)
    return request.param


@pytest.mark.parametrize("radius", [None, RADIUS], ids=["exact", "radius"])
@pytest.mark.parametrize("aggregation", ["per_dataset", "pooled"])
def test_counts_equal_brute_force(compiled, radius, aggregation):
    """Every record is a target; a removed row is neither a true match nor a false one."""
    y, zs = _tables()
    rng = np.random.default_rng(1)
    removed = [sorted(rng.choice(len(y), size=k, replace=False).tolist()) for k in (0, 7, 15)]
    # and, in the second dataset, rows that copy their record's known values (true matches)
    same = np.flatnonzero((zs[1][KNOWN] == y[KNOWN]).all(axis=1).to_numpy())[:4]
    removed[1] = sorted(set(removed[1]) | set(same.tolist()))
    rel = _release(y, zs, removed)
    # radius 0: x matched exactly
    match = MatchSpec(radius={"x": radius or 0.0}, radius_type="absolute")
    res = identification_risk(y, rel, known=KNOWN, categorical=["a", "b"], match=match,
                              aggregation=aggregation, progressbar=False)
    c, T = _brute(y, zs, removed, radius, aggregation)
    assert res.file["n_targets"] == len(y)  # every record a target
    if aggregation == "per_dataset":
        rec = res.records.sort_values(["target", "dataset"])
        got_c = rec["c"].to_numpy().reshape(len(y), len(zs))
        got_T = rec["T"].to_numpy().astype(bool).reshape(len(y), len(zs))
    else:
        got_c, got_T = res.records["c"].to_numpy(), res.records["T"].to_numpy().astype(bool)
    np.testing.assert_array_equal(got_c, c)
    np.testing.assert_array_equal(got_T, T)
    assert T.any() and (c > T).any()  # true matches and false ones both occur
    # the removal moved the counts: removed rows were matches, true and false
    c0, T0 = _brute(y, zs, [[] for _ in zs], radius, aggregation)
    assert (T0 & ~T).any() and (c0 != c).any()


@pytest.mark.parametrize("aggregation", ["per_dataset", "pooled"])
def test_nothing_removed_is_bit_identical(compiled, aggregation):
    """A removal that removed no row gives the release's figures bit for bit."""
    y, zs = _tables(seed=7)
    rel = _release(y, zs, [[], [], []])
    plain = SyntheticData(zs, method="external", schema=_schema(y))
    match = MatchSpec(radius={"x": RADIUS}, radius_type="absolute")
    kw = dict(known=KNOWN, categorical=["a", "b"], match=match, aggregation=aggregation,
              progressbar=False)
    a, b = identification_risk(y, rel, **kw), identification_risk(y, plain, **kw)
    pd.testing.assert_frame_equal(a.records, b.records)
    assert a.file == b.file


def test_released_records_compose_and_refuse_damage():
    """Two removals compose (the second's positions are of the first's rows); a record that
    does not fit the datasets is refused."""
    y, zs = _tables(n=10, m=2)
    first = _release(y, zs, [[1, 4], []])
    step = {"operation": "remove_uniques_in_original", REMOVED_ROWS: [[0, 7], [9]]}
    both = SyntheticData([first[0].drop(index=[0, 7]).reset_index(drop=True),
                          first[1].drop(index=[9]).reset_index(drop=True)],
                         extra={"post_processing": [*first.extra["post_processing"], step]})
    kept = released_records(both, 10)
    assert kept[0].tolist() == [2, 3, 5, 6, 7, 8]
    assert kept[1].tolist() == list(range(9))
    step[REMOVED_ROWS] = [[0, 7], [10]]
    with pytest.raises(ValidationError) as err:
        released_records(both, 10)
    assert err.value.code == "MANIFEST_INVALID"
    # a removal that recorded no rows (another size to begin with): no pairing
    assert released_records(SyntheticData(zs, extra={"post_processing": [
        {"operation": "remove_replicated_uniques", "n_removed": [0, 0]}]}), 10) is None


def test_sdc_records_the_rows_it_removes():
    """``sdc`` records the positions of the rows removed from a release of the original's
    size, and identification then runs on it; a release of another size records none."""
    y, zs = _tables(n=60, m=2, seed=3)
    full = SyntheticData(zs, method="external", schema=_schema(y))
    out = sdc(y, full, remove="replicated_uniques", keys=["a", "b", "x"])
    step = out.extra["post_processing"][0]
    assert [len(r) for r in step[REMOVED_ROWS]] == step["n_removed"] and sum(step["n_removed"])
    for z, gone, left in zip(zs, step[REMOVED_ROWS], out, strict=True):
        pd.testing.assert_frame_equal(z.drop(index=gone).reset_index(drop=True), left)
    res = identification_risk(y, out, known=KNOWN, categorical=["a", "b"], progressbar=False,
                              match=MatchSpec(radius={"x": RADIUS}, radius_type="absolute"))
    assert np.isfinite(res.file["expected_match_risk"])
    other = sdc(y, SyntheticData([z.iloc[:50] for z in zs], method="external",
                                 schema=_schema(y)), remove="replicated_uniques")
    assert REMOVED_ROWS not in other.extra["post_processing"][0]


@pytest.mark.filterwarnings("ignore:ZERO_UNIQUE")
def test_knowledge_sweep_matches_the_remaining_rows_through_masks():
    """The per-dataset knowledge sweep of a release with rows removed matches its subsets
    through masks holding each dataset's released rows: every subset's figures equal a separate
    run's bit for bit (a removed row neither a true nor a false match there either)."""
    from bayes_risk.identification.knowledge import known_sweep
    from bayes_risk.results.knowledge import SWEEP_MEASURES

    y, zs = _tables(n=50, seed=4)
    rng = np.random.default_rng(4)
    removed = [sorted(rng.choice(len(y), size=k, replace=False).tolist()) for k in (6, 0, 14)]
    rel = _release(y, zs, removed)
    kw = dict(categorical=["a", "b"], aggregation="per_dataset", progressbar=False)
    res = known_sweep(y, rel, candidates=KNOWN, **kw,
                      match=MatchSpec(radius={"x": RADIUS}, radius_type="absolute"))
    assert res.settings["match_masks"] is True
    for s in [("a",), ("b",), ("x",), ("a", "b"), ("a", "x"), ("b", "x"), ("a", "b", "x")]:
        match = MatchSpec(radius={"x": RADIUS}, radius_type="absolute") if "x" in s else None
        one = identification_risk(y, rel, known=list(s), match=match, **kw)
        row = res.table.set_index("known").loc[", ".join(s)]
        for m in SWEEP_MEASURES:
            assert row[m] == one.file[m] or (np.isnan(row[m]) and np.isnan(one.file[m])), (s, m)
