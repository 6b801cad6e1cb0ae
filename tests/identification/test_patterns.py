"""The pooled file measures counted by match pattern (``identification.patterns``, issue 70):
bitwise the pair path's engine output (``pooled.run_pooled``) on random small problems, a
hand-worked example and the audit's shape."""

from __future__ import annotations

import dataclasses
import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bayes_risk import MatchSpec
from bayes_risk.identification import engine, evaluate, patterns
from bayes_risk.identification.evaluate import partitions
from bayes_risk.identification.pooled import run_pooled
from bayes_risk.identification.prepare import known_columns, prepare
from bayes_risk.identification.problem import target_problem
from bayes_risk.identification.radius import SWEEP_DEFAULTS, radius_search, sweep_options

pytestmark = pytest.mark.skipif(not engine._HAVE_NUMBA, reason="counting runs compiled")

FIELDS = ("p_out", "p_unassigned", "p_max", "c", "T", "declared", "no_match_any",
          "fallback_value", "fallback_extra")


def _bitwise(a, b) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype.kind == "f":
        return a.shape == b.shape and np.array_equal(a.view(np.int64), b.view(np.int64))
    return a.shape == b.shape and np.array_equal(a, b)


def _problems(y, zs, known, synthesized, match, categorical=None, size=None):
    """The (prep, rule, partition) the radius search's engine evaluates (file measures only),
    the targets in partitions of ``size`` (``None``: one)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        options = sweep_options(dict(categorical=categorical, match=match), SWEEP_DEFAULTS, "t")
        known_us, known_s = known_columns(y, zs, known, synthesized, None)
        options["key_order"] = list(known)
        plan = prepare(y, zs, known_us, known_s, aggregation="pooled", **options)
        parts, _ = partitions(plan, plan.rule, size, keep_prob=False)
    out = []
    for part in parts:
        prep, rule = target_problem(plan.prep, part.rule, part.drop, part.tgt_exact,
                                    part.tgt_radius, part.in_sample, part.rec)
        prep.runs = 10**6  # the compiled path, as a radius search's grid
        out.append((prep, rule, part))
    return out


def _compare(problems, counted_expected: bool | None = None) -> list:
    outs = []
    for prep, rule, part in problems:
        applies = patterns.counts_patterns(prep, rule, part)
        if counted_expected is not None:
            assert applies == counted_expected
        if not applies:
            continue
        got = patterns.run_counted(prep, rule, part)
        want = run_pooled(prep, rule, part, fallback_cells=not part.drop)  # as evaluate
        for f in FIELDS:
            assert _bitwise(getattr(got, f), getattr(want, f)), f
        outs.append(got)
    return outs


@pytest.fixture
def always_count(monkeypatch):
    """Counting wherever its shape applies, whatever the pairs would cost."""
    monkeypatch.setattr(patterns, "PAIRS_PER_PATTERN", -1.0)
    monkeypatch.setattr(engine, "USE_NUMBA", True)


@st.composite
def _problem(draw):
    n = draw(st.integers(1, 14))
    m = draw(st.integers(1, 4))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    # few distinct values: ties of windows, of values and of pooled probabilities
    y = pd.DataFrame({"g": rng.integers(0, 2, n), "s": rng.integers(0, 3, n),
                      "a": rng.integers(1, 5, n).astype(float),
                      "x": rng.integers(1, 7, n).astype(float),
                      "u": rng.integers(1, 4, n).astype(float)})
    synth_s = draw(st.booleans())
    zs = [y.assign(x=rng.integers(1, 7, n).astype(float),
                   s=rng.choice(y.s.to_numpy(), n) if synth_s else y.s) for _ in range(m)]
    shape = draw(st.sampled_from(["a+x", "x", "a", "a+u+x"]))
    radius = {c: draw(st.sampled_from([0.0, 0.2, 0.5, 1.0])) for c in shape.split("+")}
    known = ["g", "s", *radius]
    fallback = draw(st.sampled_from([None, "none", "unsynthesized"]))
    window = draw(st.sampled_from(["closed", "open"]))
    return y, zs, known, ["s", "x"] if synth_s else ["x"], radius, fallback, window, shape


@settings(max_examples=40, deadline=None)
@given(_problem())
def test_counted_equals_pairs(problem):
    """Random small problems (ties, empty windows, nested and non-nested windows, a
    synthesized categorical key, one or two radius columns): the counted output is the pair
    path's, bit for bit; two unsynthesized radius columns keep the pairs."""
    y, zs, known, synthesized, radius, fallback, window, shape = problem
    # (hypothesis runs examples inside one test: no fixture per example)
    old = (patterns.PAIRS_PER_PATTERN, engine.USE_NUMBA)
    patterns.PAIRS_PER_PATTERN, engine.USE_NUMBA = -1.0, True
    try:
        probs = _problems(y, zs, known, [c for c in synthesized if c in known],
                          MatchSpec(radius=radius, fallback=fallback, window=window),
                          categorical=["g", "s"])
        _compare(probs, counted_expected=shape != "a+u+x")
    finally:
        patterns.PAIRS_PER_PATTERN, engine.USE_NUMBA = old


def test_partitions_keep_a_key_group_together(always_count):
    """Partitioned targets are ordered by their exact-matched values, then by their radius
    values (each partition then counts its own stretch of its own key groups' records,
    :func:`._kernels._pattern_counts` leaving the others out), the order returned maps them
    back, and each partition's counted output is the pair path's, bit for bit."""
    rng = np.random.default_rng(7)
    n = 60
    y = pd.DataFrame({"g": rng.integers(0, 4, n), "a": rng.integers(1, 9, n).astype(float),
                      "x": rng.integers(1, 9, n).astype(float)})
    zs = [y.assign(x=rng.integers(1, 9, n).astype(float)) for _ in range(3)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        known_us, known_s = known_columns(y, zs, ["g", "a", "x"], ["x"], None)
        options = sweep_options(dict(categorical=["g"], match=MatchSpec(
            radius={"a": 0.2, "x": 0.3})), SWEEP_DEFAULTS, "t")
        plan = prepare(y, zs, known_us, known_s, aggregation="pooled", **options)
    parts, order = partitions(plan, plan.rule, 8, keep_prob=False)
    assert len(parts) == 8 and sorted(order.tolist()) == list(range(n))
    keys = np.concatenate([p.tgt_exact[:, 0] for p in parts])
    np.testing.assert_array_equal(keys, plan.prep.tgt_exact[order, 0])
    assert np.all(np.diff(keys) >= 0)
    a = np.concatenate([p.tgt_radius[:, 0] for p in parts])
    assert np.all((np.diff(keys) > 0) | (np.diff(a) >= 0))  # within a key: by a
    # one partition, in the targets' order: no order to undo
    assert partitions(plan, plan.rule, None, keep_prob=False)[1] is None
    # the order is sorted once for the rule's columns: another grid point reads it again
    calls = []
    real = evaluate._target_groups
    evaluate._target_groups = lambda *a: calls.append(a) or real(*a)
    try:
        again = partitions(plan, dataclasses.replace(plan.rule, radius={"a": 0.5, "x": 0.1}), 8,
                           keep_prob=False)[1]
    finally:
        evaluate._target_groups = real
    assert not calls and np.array_equal(again, order)
    outs = _compare(_problems(y, zs, ["g", "a", "x"], ["x"],
                              MatchSpec(radius={"a": 0.2, "x": 0.3}), categorical=["g"],
                              size=8), counted_expected=True)
    assert len(outs) == 8


def test_hand_worked(always_count):
    """m = 2, radius 10 % on x (synthesized). Target 1 (x = 100, window [90, 110]) matches
    records {1, 3} in dataset 1 and {2} in dataset 2: π = (1/2)(1/2) for records 1 and 3,
    (1/2)(1/1) for record 2, so p* = 1/2, one record on top and not its own (T = 0, c = 1).
    Target 2 (x = 110, [99, 121]) matches {1, 2} in both: π = 1/2 for each, c = 2, T = 1.
    Target 3 (x = 200) matches nothing. Patterns of target 1: N(={1}) = 2, N(={2}) = 1."""
    y = pd.DataFrame({"x": [100.0, 110.0, 200.0]})
    z1 = pd.DataFrame({"x": [100.0, 112.0, 95.0]})
    z2 = pd.DataFrame({"x": [120.0, 110.0, 300.0]})
    probs = _problems(y, [z1, z2], ["x"], ["x"], MatchSpec(radius={"x": 0.1}, fallback="none"))
    (prep, rule, part), = probs
    b = patterns.target_bounds(prep, rule)
    keys = patterns._record_keys(prep, rule)
    ys = np.stack([prep.rep_radius_s[r][0] for r in range(2)])
    tkey = engine.target_keys(prep, rule)[0]
    sup = {S: patterns.superset_counts(S, keys, None, ys, tkey, b) for S in (1, 2, 3)}
    np.testing.assert_array_equal(sup[1], [2, 2, 0])
    np.testing.assert_array_equal(sup[2], [1, 2, 0])
    np.testing.assert_array_equal(sup[3], [0, 2, 0])
    out, = _compare(probs, counted_expected=True)
    np.testing.assert_array_equal(out.c, [1, 2, 0])
    np.testing.assert_array_equal(out.T, [False, True, False])
    np.testing.assert_array_equal(out.p_max, [0.5, 0.5, 0.0])
    np.testing.assert_array_equal(out.p_unassigned, [0.0, 0.0, 1.0])


def _ce_release(n: int, m: int, seed: int):
    from bayes_risk.data import make_ce_like

    ce = make_ce_like(n, random_seed=seed)
    rng = np.random.default_rng(seed)
    zs = [ce.assign(Income=np.round(ce.Income * rng.lognormal(0, 0.3, n), -2))
          for _ in range(m)]
    return ce, zs


def test_audit_shape_radius_search(monkeypatch):
    """The audit's pooled search (exact Urban, Marital; radius on Age, unsynthesized, and
    Income, synthesized; m = 5; the automatic fallback): every grid point counted equals the
    pair path's risk and true match rate, bit for bit."""
    ce, zs = _ce_release(300, 5, 4)
    kw = dict(known=["Age", "Urban", "Marital", "Income"], synthesized=["Income"],
              categorical=["Urban", "Marital", "Tenure"], radii=[0.05, 0.3, 1.0],
              aggregation="pooled", progressbar=False)
    monkeypatch.setattr(engine, "USE_NUMBA", True)
    calls = []
    real = patterns.run_counted
    monkeypatch.setattr(evaluate, "run_counted", lambda *a: calls.append(1) or real(*a))
    monkeypatch.setattr(patterns, "PAIRS_PER_PATTERN", -1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = radius_search(ce, zs, **kw)
        # every point counted: the grid's 16, then the refinement's between them
        assert got.grid_points == 16 and len(calls) == len(got.radii) > 16
        monkeypatch.setattr(evaluate, "counts_patterns", lambda *a: False)
        want = radius_search(ce, zs, **kw)
    assert got.settings["fallback"] == "unsynthesized"
    assert _bitwise(got.risk, want.risk) and _bitwise(got.true_match_rate, want.true_match_rate)
    assert got.risk.max() > 0


def test_rule_keeps_pairs_when_cheaper(monkeypatch):
    """Narrow windows (few candidate pairs) keep the pair path; the probabilities kept
    (``keep_prob``) and population counts always do."""
    import dataclasses

    monkeypatch.setattr(engine, "USE_NUMBA", True)
    ce, zs = _ce_release(3000, 5, 5)
    common = dict(known=["Age", "Urban", "Marital", "Income"], synthesized=["Income"],
                  categorical=["Urban", "Marital", "Tenure"])
    narrow = _problems(ce, zs, match=MatchSpec(radius={"Age": 0.0, "Income": 0.0}), **common)
    wide = _problems(ce, zs, match=MatchSpec(radius={"Age": 1.0, "Income": 1.0}), **common)
    (pn, rn, qn), = narrow
    (pw, rw, qw), = wide
    assert not patterns.counts_patterns(pn, rn, qn)
    assert patterns.counts_patterns(pw, rw, qw)
    assert not patterns.counts_patterns(pw, rw, dataclasses.replace(qw, keep_prob=True))
    _compare(wide, counted_expected=True)


@pytest.mark.parametrize("fallback", [None, "none"])
def test_missing_known_values(always_count, fallback):
    """Targets missing a known value are matched on the columns they hold (a group of their
    own, its fallback sets materialised): counted as the pair path."""
    rng = np.random.default_rng(3)
    n = 40
    y = pd.DataFrame({"g": rng.integers(0, 2, n), "a": rng.integers(1, 5, n).astype(float),
                      "x": rng.integers(1, 7, n).astype(float)})
    y.loc[rng.random(n) < 0.2, "a"] = np.nan
    zs = [y.assign(x=rng.integers(1, 7, n).astype(float)) for _ in range(3)]
    probs = _problems(y, zs, ["g", "a", "x"], ["x"],
                      MatchSpec(radius={"a": 0.5, "x": 0.3}, fallback=fallback),
                      categorical=["g"])
    assert [p[2].drop for p in probs] == [(), ("a",)]
    assert len(_compare(probs, counted_expected=True)) == 2


def test_search_prepares_patterns_once(monkeypatch):
    """A radius search prepares each pattern's records once for its whole grid (what no
    radius changes), not once a grid point: m = 3, 9 grid points (and the refinement's) counted,
    7 patterns."""
    ce, zs = _ce_release(200, 3, 6)
    monkeypatch.setattr(engine, "USE_NUMBA", True)
    monkeypatch.setattr(patterns, "PAIRS_PER_PATTERN", -1.0)
    made, counted = [], []
    real, real_run = patterns._pattern_records, patterns.run_counted
    monkeypatch.setattr(patterns, "_pattern_records", lambda *a: made.append(a[0]) or real(*a))
    monkeypatch.setattr(evaluate, "run_counted", lambda *a: counted.append(1) or real_run(*a))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = radius_search(ce, zs, known=["Age", "Urban", "Marital", "Income"],
                            synthesized=["Income"], categorical=["Urban", "Marital", "Tenure"],
                            radii=[0.05, 0.3], aggregation="pooled", progressbar=False)
    # the grid's 9 points and the refinement's, each counted once
    assert res.grid_points == 9 and len(counted) == len(res.radii)
    assert sorted(made) == list(range(1, 8))


def _brute_superset(S, keys, a, y, tkey, lo, hi):
    """``N_t(⊇S)`` by its definition, every (target, record) pair tested."""
    ls = [r for r in range(keys.shape[0]) if S >> r & 1]
    with np.errstate(invalid="ignore"):
        ok = (tkey[:, None] >= 0) & (lo[:, :1] <= a[None, :]) & (a[None, :] <= hi[:, :1])
        for r in ls:
            ok &= (keys[r][None, :] == tkey[:, None]) & (lo[:, 1:] <= y[r][None, :]) \
                & (y[r][None, :] <= hi[:, 1:])
    return ok.sum(axis=1)


def test_superset_counts_many_groups_and_slots():
    """Groups of 100+ records over 60 unsynthesized values (the count's tree walked back
    point by point at its lower levels and zeroed whole at its upper ones, the smallest
    values ranked inside each group), targets in no particular order, keys held by no record
    or missing, missing values, empty windows: ``superset_counts`` equals the count of the
    pairs by definition for every pattern of m = 3 datasets."""
    rng = np.random.default_rng(70)
    n, N, m = 600, 500, 3
    keys = np.repeat(rng.integers(0, 4, n)[None, :], m, axis=0)
    keys[rng.integers(0, m, 40), rng.integers(0, n, 40)] = 5  # keys differing across datasets
    a = rng.integers(0, 60, n).astype(float)
    a[rng.random(n) < 0.03] = np.nan
    y = np.round(rng.normal(50, 15, (m, n)))  # ties between records and datasets
    y[rng.random((m, n)) < 0.03] = np.nan
    tkey = rng.integers(-1, 7, N)  # -1: missing; 6: held by no record
    ca, cy = rng.integers(0, 60, N), rng.normal(50, 15, N)
    wa, wy = rng.choice([0.0, 3.0, 20.0, 80.0], N), rng.choice([0.0, 2.0, 10.0, 60.0], N)
    lo = np.stack([ca - wa, cy - wy], axis=1)
    hi = np.stack([ca + wa, cy + wy], axis=1)
    hi[:20, 1] = lo[:20, 1] - 1.0  # empty windows, on either column
    hi[20:40, 0] = lo[20:40, 0] - 1.0
    b = patterns.TargetBounds(lo, hi, None, None, False, False)
    for S in range(1, 1 << m):
        want = _brute_superset(S, keys, a, y, tkey, lo, hi)
        got = patterns.superset_counts(S, keys, a, y, tkey, b)
        np.testing.assert_array_equal(got, want, err_msg=f"pattern {S}")
    assert want.max() > 16  # windows wide enough for the count's upper levels
