"""Knowledge sweep (issue 33 items 2-3): identification risk over subsets of the known variables,
the frontier, Shapley values and per-level contributions, against separate runs and hand values."""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bayes_risk import LatticeSpec, MatchSpec, PopulationSpec
from bayes_risk.exceptions import DataWarning, ValidationError
from bayes_risk.identification.api import identification_risk
from bayes_risk.identification.knowledge import known_sweep, shapley_values
from bayes_risk.results.knowledge import SWEEP_MEASURES, KnowledgeSweepResult


def ir(y, rel, **kw):
    kw.setdefault("progressbar", False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)
        return identification_risk(y, rel, **kw)


#: the fields of MatchSpec among a test's options
_MATCH_FIELDS = ("radius", "radius_type", "r_min", "quantile_groups", "window", "shape",
                 "missing_known", "strategy", "fallback", "compat")
#: the fields of PopulationSpec among a test's options
_POPULATION_FIELDS = ("targets", "target_id", "original_id")


def _specs(kw):
    """A test's flat options with the matching ones gathered into ``match=MatchSpec(...)``,
    the targets into ``population=PopulationSpec(...)``."""
    kw = dict(kw)
    fields = {k: kw.pop(k) for k in _MATCH_FIELDS if k in kw}
    pop = {k: kw.pop(k) for k in _POPULATION_FIELDS if k in kw}
    if pop:
        kw["population"] = PopulationSpec(**pop)
    return {**kw, "match": MatchSpec(**fields)} if fields else kw


def sweep(y, rel, candidates, **kw):
    kw.setdefault("progressbar", False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)
        return known_sweep(y, rel, candidates=candidates, **kw)


def _release(seed: int, n: int = 40, m: int = 3, missing: bool = False):
    """A small table: a, b categorical (a unsynthesized), x numeric unsynthesized, y numeric
    synthesized, c categorical synthesized; m released datasets."""
    rng = np.random.default_rng(seed)
    y = pd.DataFrame({
        "a": rng.choice(["p", "q", "r"], n),
        "b": rng.choice(["u", "v"], n),
        "x": rng.integers(20, 30, n).astype(float),
        "y": np.round(rng.gamma(2.0, 50.0, n), 1),
        "c": rng.choice(["k", "l", "m"], n),
    })
    if missing:
        y.loc[rng.choice(n, 4, replace=False), "b"] = None
    rel = []
    for _ in range(m):
        z = y.copy()
        z["y"] = np.round(y["y"] * rng.uniform(0.8, 1.2, n), 1)
        z["c"] = np.where(rng.random(n) < 0.5, y["c"], rng.choice(["k", "l", "m"], n))
        rel.append(z)
    return y, rel


CANDS = ["a", "b", "x", "y", "c"]
SYN = {"y", "c"}
RADIUS = {"x": 0.05, "y": 0.1}


def _separate(y, rel, s, **kw):
    us = [c for c in CANDS if c in s and c not in SYN]
    sy = [c for c in CANDS if c in s and c in SYN]
    rad = {c: r for c, r in RADIUS.items() if c in s} or None
    return ir(y, rel, known=[*us, *sy], synthesized=sy, match=MatchSpec(radius=rad),
              categorical=["a", "b", "c"], **kw)


def _same(a, b) -> bool:
    return a == b or (np.isnan(a) and np.isnan(b))


@pytest.mark.parametrize("aggregation", ["pooled", "per_dataset"])
@pytest.mark.parametrize("missing", [False, True])
def test_every_subset_equals_a_separate_run_bit_for_bit(aggregation, missing):
    y, rel = _release(3, missing=missing)
    res = sweep(y, rel, candidates=CANDS, match=MatchSpec(radius=RADIUS), categorical=["a", "b",
                                                                                       "c"],
                aggregation=aggregation)
    assert res.synthesized == ("y", "c")  # found from the release: their values differ
    assert len(res.table) == 2 ** len(CANDS)
    for k in range(1, len(CANDS) + 1):
        for s in itertools.combinations(CANDS, k):
            one = _separate(y, rel, s, aggregation=aggregation)
            row = res.table[res.table["known"] == ", ".join(s)].iloc[0]
            for m in SWEEP_MEASURES:
                assert _same(row[m], one.file[m]), (s, m, row[m], one.file[m])


@pytest.mark.parametrize("options", [dict(shape="ellipse"), dict(radius_type="absolute"),
                                     dict(strategy="not_if_max"), dict(fallback="none"),
                                     dict(shape="mahalanobis")])
def test_options_pass_through_and_match_separate_runs(options):
    y, rel = _release(5, n=30, m=2)
    cands = ["a", "x", "y", "c"]
    rad = {"x": 0.05, "y": 0.1}
    if options.get("shape") == "mahalanobis":
        rad = 1.0
    rule = {k: v for k, v in options.items()
            if k in ("shape", "radius_type", "strategy", "fallback")}
    other = {k: v for k, v in options.items() if k not in rule}
    res = sweep(y, rel, candidates=cands, match=MatchSpec(radius=rad, **rule), categorical=["a",
                                                                                            "c"],
                **other)
    assert res.settings["shared_encoding"] is (options.get("shape") != "mahalanobis")
    for k in range(1, len(cands) + 1):
        for s in itertools.combinations(cands, k):
            us = [c for c in s if c not in SYN]
            sy = [c for c in s if c in SYN]
            r = rad if not isinstance(rad, dict) else ({c: rad[c] for c in rad if c in s}
                                                        or None)
            if options.get("shape") == "mahalanobis" and not ({"x", "y"} & set(s)):
                continue  # a Mahalanobis rule needs a radius column (the sweep prepares its own)
            one = ir(y, rel, known=[*us, *sy], synthesized=sy,
                     match=MatchSpec(radius=r, **rule), categorical=["a", "c"], **other)
            row = res.table[res.table["known"] == ", ".join(s)].iloc[0]
            for m in SWEEP_MEASURES:
                assert _same(row[m], one.file[m]), (s, m)


def test_unknown_membership_loglinear_counts_match_separate_runs():
    y, rel = _release(11, n=40, m=2)
    cands = ["a", "b", "c"]
    res = sweep(y, rel, candidates=cands, categorical=["a", "b", "c"],
                population=PopulationSpec(membership="unknown", counts="loglinear_original",
                                          sampling_fraction=0.5))
    assert res.settings["shared_encoding"] is False
    for k in range(1, 4):
        for s in itertools.combinations(cands, k):
            one = ir(y, rel, known=list(s), synthesized=[c for c in s if c in SYN],
                     categorical=["a", "b", "c"],
                     population=PopulationSpec(membership="unknown", counts="loglinear_original",
                                               sampling_fraction=0.5))
            row = res.table[res.table["known"] == ", ".join(s)].iloc[0]
            assert _same(row["expected_match_risk"], one.file["expected_match_risk"])


def test_empty_set_is_the_intruder_who_knows_nothing():
    # every record matches every target: c = n, T = 1, IR = 1/n, so the sum over the n targets
    # is 1 (known membership, the targets are the original records)
    y, rel = _release(4, n=25, m=2)
    res = sweep(y, rel, candidates=["a", "c"], categorical=["a", "c"])
    row = res.table[res.table["known"] == "(none)"].iloc[0]
    assert row["n_known"] == 0
    assert row["expected_match_risk"] == pytest.approx(1.0, abs=1e-12)
    assert row["true_match_rate_targets"] == 0.0


def test_shapley_values_by_hand_on_three_variables():
    y, rel = _release(7, n=30, m=2)
    cands = ["a", "x", "c"]
    res = sweep(y, rel, candidates=cands, match=MatchSpec(radius={"x": 0.05}), categorical=["a",
                                                                                            "c"])
    v = {frozenset(): 1.0}
    for k in range(1, 4):
        for s in itertools.combinations(cands, k):
            one = ir(y, rel, known=list(s), synthesized=[c for c in s if c in SYN],
                     match=MatchSpec(radius={"x": 0.05} if "x" in s else None),
                     categorical=["a", "c"])
            v[frozenset(s)] = one.file["expected_match_risk"]
    A, X, C = "a", "x", "c"

    def val(*names):
        return v[frozenset(names)]

    # Shapley (1953) for three players, written out: weights 1/3, 1/6, 1/6, 1/3
    phi_a = (val(A) - val()) / 3 + (val(A, X) - val(X)) / 6 + (val(A, C) - val(C)) / 6 \
        + (val(A, X, C) - val(X, C)) / 3
    phi_x = (val(X) - val()) / 3 + (val(A, X) - val(A)) / 6 + (val(X, C) - val(C)) / 6 \
        + (val(A, X, C) - val(A, C)) / 3
    phi_c = (val(C) - val()) / 3 + (val(A, C) - val(A)) / 6 + (val(X, C) - val(X)) / 6 \
        + (val(A, X, C) - val(A, X)) / 3
    d = res.drivers.set_index("variable")["shapley_expected_match_risk"]
    assert d["a"] == pytest.approx(phi_a, rel=1e-12)
    assert d["x"] == pytest.approx(phi_x, rel=1e-12)
    assert d["c"] == pytest.approx(phi_c, rel=1e-12)
    # efficiency: the values sum to v(full) - v(empty)
    assert d.sum() == pytest.approx(val(A, X, C) - val(), rel=1e-12)
    # the risk without a variable comes from the subset results
    wo = res.drivers.set_index("variable")["expected_match_risk_without"]
    assert wo["x"] == val(A, C)


def test_shapley_values_function_additive_game():
    # an additive game: each player's value is its own weight
    w = {"p": 1.0, "q": 2.5, "r": -0.5}
    v = {frozenset(s): sum(w[c] for c in s) for k in range(4)
         for s in itertools.combinations(w, k)}
    phi = shapley_values(v, list(w))
    assert phi == pytest.approx(w)


@pytest.mark.parametrize("aggregation", ["pooled", "per_dataset"])
def test_level_contributions_sum_to_the_file_risk(aggregation):
    y, rel = _release(9, n=50, m=3)
    res = sweep(y, rel, candidates=CANDS, match=MatchSpec(radius=RADIUS), categorical=["a", "b",
                                                                                       "c"],
                aggregation=aggregation, lattice=LatticeSpec(bands=4))
    full = res.risk(CANDS)
    for _var, part in res.levels.groupby("variable"):
        assert part["expected_match_risk"].sum() == pytest.approx(full, rel=1e-12)
        assert part["n_targets"].sum() == 50
        assert part["share_risk"].sum() == pytest.approx(1.0)
    # x has 10 distinct values (> bands): quantile bands; a keeps its three levels
    assert set(res.levels.loc[res.levels["variable"] == "a", "level"]) == {"p", "q", "r"}
    assert (res.levels["variable"] == "x").sum() <= 4


def test_greedy_path_and_frontier():
    y, rel = _release(12, n=40, m=2)
    res = sweep(y, rel, candidates=CANDS, match=MatchSpec(radius=RADIUS), categorical=["a", "b",
                                                                                       "c"],
                lattice=LatticeSpec(max_size=2))
    t = res.table
    # exhaustive up to size 2 (1 + 5 + 10 subsets), the full set minus one (5), the full set,
    # and the greedy steps
    assert (t["n_known"] <= 2).sum() == 16
    path = res.greedy_path
    assert list(path["n_known"]) == [2, 3, 4, 5]
    size2 = t[t["n_known"] == 2]
    assert path["expected_match_risk"].iloc[0] == size2["expected_match_risk"].max()
    for k in (3, 4):  # every step takes the largest risk among the one-variable extensions
        prev = set(path["known"].iloc[k - 3].split(", "))
        ext = [", ".join(c for c in CANDS if c in prev | {c2}) for c2 in CANDS if c2 not in prev]
        risks = t.set_index("known").loc[ext, "expected_match_risk"]
        assert path["expected_match_risk"].iloc[k - 2] == risks.max()
    # the frontier: no subset knows as few variables and has as high a risk (one strictly)
    f = t[t["frontier"]]
    for _, r in f.iterrows():
        dom = t[(t["n_known"] > 0) & (t["n_known"] <= r["n_known"])
                & (t["expected_match_risk"] >= r["expected_match_risk"])
                & ((t["n_known"] < r["n_known"])
                   | (t["expected_match_risk"] > r["expected_match_risk"]))]
        assert dom.empty
    assert np.isnan(res.drivers["shapley_expected_match_risk"]).all()
    assert "not computed" in res.shapley_note


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(3, 25))
def test_exact_unsynthesized_risk_never_decreases_when_a_variable_is_added(seed, n):
    # True here, and only here: every known variable is released unchanged and matched exactly,
    # so a target's own record always matches (T = 1) and adding a variable can only shrink its
    # match set (c does not grow): IR = 1/c does not fall. With a synthesized variable the own
    # record can leave the match set (T drops to 0), so no such property holds there (next test).
    rng = np.random.default_rng(seed)
    y = pd.DataFrame({c: rng.choice(["0", "1", "2"], n) for c in ("a", "b", "c")})
    res = sweep(y, [y.copy(), y.copy()], candidates=["a", "b", "c"], categorical=["a", "b", "c"])
    v = {frozenset(k.split(", ")) if k != "(none)" else frozenset(): r
         for k, r in zip(res.table["known"], res.table["expected_match_risk"], strict=True)}
    for s, r in v.items():
        for c in {"a", "b", "c"} - s:
            assert v[s | {c}] >= r - 1e-12


def test_a_synthesized_variable_can_lower_the_risk():
    # the counter-example: the synthesized race never keeps a record's own value, so knowing it
    # sends the intruder to the wrong records (T = 0 everywhere)
    y = pd.DataFrame({"sex": ["M", "M", "F", "F"], "race": ["W", "B", "W", "B"]})
    z = y.assign(race=["B", "W", "B", "W"])
    res = sweep(y, [z], candidates=["sex", "race"])
    assert res.risk(["sex"]) == 2.0
    assert res.risk(["sex", "race"]) == 0.0


def test_result_family_and_outputs():
    y, rel = _release(2, n=30, m=2)
    res = sweep(y, rel, candidates=["a", "x", "c"], match=MatchSpec(radius={"x": 0.05}),
                categorical=["a", "c"])
    assert isinstance(res, KnowledgeSweepResult)
    d = res.to_dict()
    import json

    json.dumps(d, allow_nan=False)
    assert d["headline"].startswith("Withholding")
    assert "Pareto frontier" in res.summary().as_text()
    assert "<table" in res._repr_html_()
    assert res.to_frame().equals(res.table)
    for kind in res.plot_kinds:
        assert res.plot(kind).has_data()


def test_synthesized_from_the_release_schema_and_given():
    y, rel = _release(6, n=20, m=2)
    res = sweep(y, rel, candidates=["a", "c"], categorical=["a", "c"], synthesized=["c"])
    assert res.synthesized == ("c",)
    with pytest.raises(ValidationError,
                       match=r"synthesized names \[.y.\], which candidates does not name"):
        sweep(y, rel, candidates=["a", "c"], synthesized=["y"])


def test_errors_name_the_argument():
    y, rel = _release(1, n=10, m=1)
    with pytest.raises(ValidationError, match="candidates must be a sequence of 1 to 20 candidate"):
        sweep(y, rel, candidates=[])
    with pytest.raises(ValidationError, match="more than once"):
        sweep(y, rel, candidates=["a", "a"])
    with pytest.raises(ValidationError, match="max_size"):
        sweep(y, rel, candidates=["a", "b"], lattice=LatticeSpec(max_size=3))
    with pytest.raises(ValidationError, match="unknown argument"):
        sweep(y, rel, candidates=["a"], radious=0.1)
    with pytest.raises(ValidationError, match="max_subsets"):
        sweep(y, rel, candidates=["a", "b", "c"], lattice=LatticeSpec(max_subsets=3))
    with pytest.raises(ValidationError, match="population counts given by the user"):
        sweep(y, rel, candidates=["a"], population=PopulationSpec(membership="unknown",
                                                                  counts={("p",): 5}))


def test_pooled_empty_set_and_unknown_membership_have_no_shapley_without_it():
    y, rel = _release(13, n=30, m=2)
    res = sweep(y, rel, candidates=["a", "c"], categorical=["a", "c"], aggregation="pooled")
    # the intruder who knows nothing: the same figure pooled as per dataset (c = n, T = 1)
    assert res.risk([]) == pytest.approx(1.0, abs=1e-12)
    un = sweep(y, rel, candidates=["a", "c"], categorical=["a", "c"],
               population=PopulationSpec(membership="unknown", counts="loglinear_original",
                                         sampling_fraction=0.5))
    assert "(none)" not in set(un.table["known"])
    assert np.isnan(un.drivers["shapley_expected_match_risk"]).all()
    assert "knows nothing" in un.shapley_note


def test_synthesized_found_from_plain_tables_whatever_the_dtype():
    # x released unchanged but read back as another dtype (a CSV round trip) is unsynthesized
    y, rel = _release(8, n=20, m=2)
    y = y.assign(x=y["x"].astype(np.int64))
    res = sweep(y, rel, candidates=["x", "y", "a"], match=MatchSpec(radius={"y": 0.1}),
                categorical=["a"])
    assert res.synthesized == ("y",)
    with pytest.raises(ValidationError, match="original must be a pandas DataFrame"):
        sweep(y.to_numpy(), rel, candidates=["x"])


# ----------------------------------------------------------------------------------------------
# match masks: the per-dataset sweep matches every subset at once (issue 33, the sweep's speed)
# ----------------------------------------------------------------------------------------------
def _compare_with_separate_runs(y, rel, cands, syn, radius, categorical, **kw):
    res = sweep(y, rel, candidates=cands, categorical=categorical, aggregation="per_dataset",
                synthesized=sorted(syn & set(cands)), **_specs(dict(kw, radius=radius)))
    for k in range(1, len(cands) + 1):
        for s in itertools.combinations(cands, k):
            rad = {c: r for c, r in radius.items() if c in s} or None
            own_kw = dict(kw)
            if "r_min" in kw:  # a separate run takes the floors of its own radius columns
                own_kw["r_min"] = {c: v for c, v in kw["r_min"].items() if c in s} or None
            if rad is None:  # matched exactly on every column: no radius option applies
                own_kw.pop("radius_type", None)
            one = ir(y, rel, known=list(s), synthesized=[c for c in s if c in syn],
                     categorical=categorical, aggregation="per_dataset",
                     **_specs(dict(own_kw, radius=rad)))
            row = res.table[res.table["known"] == ", ".join(s)].iloc[0]
            for m in SWEEP_MEASURES:
                assert _same(row[m], one.file[m]), (s, m, row[m], one.file[m])
    return res


@pytest.mark.parametrize("options", [
    dict(window="open"), dict(r_min={"y": 5.0}), dict(missing_known="level"),
    dict(strategy=("threshold", 0.4)), dict(radius_type="quantile_sd"),
])
def test_masks_equal_separate_runs_under_the_rule_options(options):
    y, rel = _release(21, n=45, m=3, missing=True)
    radius = {"x": 1.0, "y": 1.0} if options.get("radius_type") == "quantile_sd" else RADIUS
    res = _compare_with_separate_runs(y, rel, CANDS, SYN, radius, ["a", "b", "c"], **options)
    assert res.settings["match_masks"] is True


def test_masks_with_missing_radius_values_and_external_targets():
    # missing values in a radius column (a released one too) and targets outside the original
    y, rel = _release(22, n=50, m=2)
    y.loc[[3, 7], "x"] = np.nan
    for z in rel:
        z.loc[[3, 7], "x"] = np.nan
        z.loc[[10], "y"] = np.nan
    res = _compare_with_separate_runs(y, rel, CANDS, SYN, RADIUS, ["a", "b", "c"])
    assert res.settings["match_masks"] is True
    tg = pd.concat([y.iloc[:20], y.iloc[:5].assign(x=y["x"].iloc[:5] + 0.5)],
                   ignore_index=True).assign(tid=range(25))
    _compare_with_separate_runs(y, rel, ["a", "x", "y"], SYN, RADIUS, ["a", "b", "c"],
                                targets=tg, target_id="tid")


def test_masks_span_several_words_and_chunks(monkeypatch):
    # more than 64 records (several words per mask) and a budget that splits the targets
    from bayes_risk.identification import masks

    y, rel = _release(23, n=150, m=2)
    full = sweep(y, rel, candidates=CANDS, match=MatchSpec(radius=RADIUS),
                 categorical=["a", "b", "c"],
                 aggregation="per_dataset")
    monkeypatch.setattr(masks, "BUDGET_BYTES", 3 * 8 * 5 * 7)  # a few targets at a time
    chunked = sweep(y, rel, candidates=CANDS, match=MatchSpec(radius=RADIUS),
                    categorical=["a", "b", "c"],
                    aggregation="per_dataset")
    pd.testing.assert_frame_equal(full.table, chunked.table)
    _compare_with_separate_runs(y, rel, ["b", "x", "y", "c"], SYN, RADIUS, ["a", "b", "c"])


def _prepared(y, rel):
    """The sweep's one preparation of every candidate (as ``known_sweep`` makes it)."""
    from bayes_risk.identification.knowledge import _OPTIONS
    from bayes_risk.identification.prepare import prepare
    from bayes_risk.identification.specs import spec_options

    o = dict(_OPTIONS, categorical=["a", "b", "c"], aggregation="per_dataset")
    o.update(spec_options(MatchSpec(radius=RADIUS), None))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)
        return prepare(y, rel, ["a", "b", "x"], ["y", "c"], **o)


@pytest.mark.parametrize("seed", [0, 1])
def test_compiled_and_numpy_masks_agree(seed, monkeypatch):
    from bayes_risk.identification import engine, masks

    y, rel = _release(30 + seed, n=130, m=3, missing=True)
    prep_plan = _prepared(y, rel)
    subsets = [s for k in range(1, 6) for s in itertools.combinations(
        ["a", "b", "x", "y", "c"], k)]
    out = {}
    for flag in (True, False):
        monkeypatch.setattr(engine, "USE_NUMBA", flag)
        out[flag] = masks.subset_matches(prep_plan.prep, prep_plan.rule, subsets)
    # the compiled kernel on chunks of targets (its outputs are slices of the arrays)
    monkeypatch.setattr(engine, "USE_NUMBA", True)
    monkeypatch.setattr(masks, "BUDGET_BYTES", 8 * 3 * 5 * 11)
    out["chunked"] = masks.subset_matches(prep_plan.prep, prep_plan.rule, subsets)
    for (c1, o1), (c2, o2), (c3, o3) in zip(out[True], out[False], out["chunked"],
                                            strict=True):
        np.testing.assert_array_equal(c1, c2)
        np.testing.assert_array_equal(o1, o2)
        np.testing.assert_array_equal(c3, c2)
        np.testing.assert_array_equal(o3, o2)


def test_masks_brute_force_counts():
    # every subset's counts and own flags against a scan of every target and record
    from bayes_risk.identification import masks

    y, rel = _release(40, n=70, m=2, missing=True)
    plan = _prepared(y, rel)
    subsets = [s for k in range(1, 6) for s in itertools.combinations(
        ["a", "b", "x", "y", "c"], k)]
    got = masks.subset_matches(plan.prep, plan.rule, subsets)
    n = len(y)
    for s, (cnt, own) in zip(subsets, got, strict=True):
        for r, z in enumerate(rel):
            for t in range(n):
                hit = np.ones(n, dtype=bool)
                for c in s:
                    if pd.isna(y[c].iloc[t]):  # missing_known="any": not matched on it
                        continue
                    rec = (y if c not in SYN else z)[c]
                    if c in RADIUS:
                        tv = float(y[c].iloc[t])
                        R = RADIUS[c] * abs(tv)
                        v = rec.to_numpy(dtype=float)
                        hit &= (v >= tv - R) & (v <= tv + R)
                    else:
                        hit &= (rec == y[c].iloc[t]).to_numpy()
                assert cnt[t, r] == hit.sum(), (s, r, t)
                assert own[t, r] == hit[t], (s, r, t)


def test_without_masks_the_engine_runs_per_subset(monkeypatch):
    # above MAX_RECORDS (or for a rule that combines columns) each subset runs the engine: the
    # same figures
    from bayes_risk.identification import masks

    y, rel = _release(24, n=40, m=2, missing=True)
    monkeypatch.setattr(masks, "MAX_RECORDS", 10)
    res = _compare_with_separate_runs(y, rel, CANDS, SYN, RADIUS, ["a", "b", "c"])
    assert res.settings["match_masks"] is False
    ell = sweep(y, rel, candidates=["a", "x", "y"], categorical=["a", "b", "c"],
                aggregation="per_dataset", match=MatchSpec(radius=RADIUS, shape="ellipse"))
    assert ell.settings["match_masks"] is False


def test_masks_with_user_replicates():
    # replicates given as arrays of the synthesized candidates (R = 3, not the m = 2 datasets)
    y, rel = _release(25, n=35, m=2)
    rng = np.random.default_rng(0)
    reps = [pd.DataFrame({"y": np.round(y["y"] * rng.uniform(0.9, 1.1, len(y)), 1),
                          "c": rng.choice(["k", "l", "m"], len(y))}) for _ in range(3)]
    res = sweep(y, rel, candidates=["a", "x", "y", "c"], match=MatchSpec(radius=RADIUS),
                categorical=["a", "b", "c"], aggregation="per_dataset", synthesized=["y", "c"],
                replicates=reps)
    assert res.settings["match_masks"] is True
    for k in range(1, 5):
        for s in itertools.combinations(["a", "x", "y", "c"], k):
            sy = [c for c in s if c in SYN]
            if not sy:  # a separate run takes replicates of synthesized columns only
                continue
            one = ir(y, rel, known=list(s), synthesized=sy,
                     match=MatchSpec(radius={c: r for c, r in RADIUS.items() if c in s} or None),
                     categorical=["a", "b", "c"], aggregation="per_dataset",
                     replicates=[r[sy] for r in reps])
            row = res.table[res.table["known"] == ", ".join(s)].iloc[0]
            for m in SWEEP_MEASURES:
                assert _same(row[m], one.file[m]), (s, m, row[m], one.file[m])


def test_identification_run_refuses_arguments_that_do_not_go_together():
    """The run's relations (formerly the command line's own checks), before any work."""
    from bayes_risk.identification.run import identification_run

    d = pd.DataFrame({"a": [1, 2]})
    for kw, code, text in [
        (dict(records="per-dataset"), "OPTION_CONFLICT",
         "records='per-dataset' needs aggregation='per_dataset' (pooled probabilities give one "
         "row per target). Got aggregation='pooled'."),
        (dict(refine=3), "OPTION_REQUIRED", "refine needs search"),
        (dict(max_size=1), "OPTION_REQUIRED", "max_size needs known_sweep"),
    ]:
        with pytest.raises(ValidationError) as err:
            identification_run([d, [d]], known=["a"], **kw)
        assert err.value.code == code and text in str(err.value)
