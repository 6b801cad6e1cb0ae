"""The worst case over the intruder's radii (:func:`radius_search`) and the shared default of a
known column the release carries unchanged (matched exactly): brute force over the grid, the
dominance of exact matching for an unchanged column, the coordinate search, and bad input."""

from __future__ import annotations

import dataclasses
import itertools
import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bayes_risk import MatchSpec
from bayes_risk.exceptions import DataWarning, ValidationError
from bayes_risk.identification.api import identification_risk
from bayes_risk.identification.radius import SEARCH_RADII, radius_search


def _quiet(fn, *args, **kw):
    kw.setdefault("progressbar", False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)
        return fn(*args, **kw)


def _table(n: int, seed: int, m: int = 2):
    """An original with an unchanged numeric key (age), a categorical one (sex) and a
    synthesized continuous one (inc), and ``m`` releases that redraw ``inc`` near the truth."""
    rng = np.random.default_rng(seed)
    y = pd.DataFrame({"age": rng.integers(20, 30, n), "sex": rng.choice(["F", "M"], n),
                      "inc": np.round(rng.lognormal(10, 0.5, n), -2)})
    syn = [y.assign(inc=np.round(y["inc"] * rng.lognormal(0, 0.15, n), -2)) for _ in range(m)]
    return y, syn


KNOWN = ["age", "sex", "inc"]


@pytest.mark.parametrize("aggregation", ["per_dataset", "pooled"])
def test_every_grid_point_equals_a_separate_run_and_the_maximum_is_read(aggregation):
    """Brute force: each grid point's expected match risk and true match rate equal a separate
    identification_risk at those radii; the search reads the largest of each, at its own
    radii (0, exact, in every column's grid)."""
    y, syn = _table(60, 1)
    radii = [0.05, 0.2]
    res = _quiet(radius_search, y, syn, known=KNOWN, synthesized=["inc"], radii=radii,
                 aggregation=aggregation)
    assert res.columns == ("age", "inc")
    values = (0.0, 0.05, 0.2)
    search = res.settings["search"]
    assert {k: search[k] for k in ("mode", "values", "grid_points", "full_grid_points",
                                   "max_grid")} == {
        "mode": "grid", "values": list(values), "grid_points": 9, "full_grid_points": 9,
        "max_grid": 1000}
    # the grid's points first, then the refinement's (between them: issue 85)
    assert search["points"] == len(res.radii) == 9 + search["refinement"]["points"]
    np.testing.assert_array_equal(res.radii[:9], list(itertools.product(values, values)))
    rows = [*range(9), *range(9, len(res.radii), max(1, (len(res.radii) - 9) // 6))]
    for b in rows:
        ra, ri = res.radii[b]
        one = _quiet(identification_risk, y, syn, known=KNOWN, synthesized=["inc"],
                     match=MatchSpec(radius={"age": ra, "inc": ri}), aggregation=aggregation)
        per = one.per_dataset if one.per_dataset is not None else {
            k: [v] for k, v in one.file.items()}
        np.testing.assert_allclose(res.risk[b], per["expected_match_risk"], rtol=1e-12)
        np.testing.assert_allclose(res.true_match_rate[b], per["true_match_rate_targets"],
                                   rtol=1e-12)
    assert res.risk_star == pytest.approx(res.risk.mean(axis=1).max())
    assert res.tmr_star_value == pytest.approx(res.true_match_rate.mean(axis=1).max())
    # ties go to the smallest radii (lexicographically)
    b = min(res.argmax, key=lambda i: tuple(res.radii[i]))
    np.testing.assert_array_equal(res.r_star, res.radii[b])
    t = min(res.tmr_argmax, key=lambda i: tuple(res.radii[i]))
    assert res.radii_at(t) == dict(zip(res.columns, res.tmr_star, strict=True))
    assert set(res.to_frame().columns) >= {"radius_age", "radius_inc", "dataset",
                                           "expected_match_risk", "true_match_rate_targets"}


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(8, 40))
def test_exact_matching_of_an_unchanged_column_is_the_worst_case_per_dataset(seed, n):
    """For a column the release carries unchanged, the true record is in the window whatever
    its radius, and a wider window only adds other records: one dataset at a time, the expected
    match risk and the true match rate never rise with that column's radius. (Pooled over the
    datasets, with the fallback, they can: hence the search covers unchanged columns too rather
    than fixing them at exact.)"""
    y, syn = _table(n, seed)
    res = _quiet(radius_search, y, syn, known=KNOWN, synthesized=["inc"],
                 radii=[0.01, 0.05, 0.2, 1.0])
    grid = res.radii[:res.grid_points]
    age = grid[:, 0]
    for ri in np.unique(grid[:, 1]):
        at = grid[:, 1] == ri
        order = np.argsort(age[at])
        assert np.all(np.diff(res.risk_summary[:res.grid_points][at][order]) <= 1e-9), ri
        assert np.all(np.diff(res.tmr_summary[:res.grid_points][at][order]) <= 1e-12), ri
    # exact matching of age is among the worst cases: at the largest figure's other radii
    # (the search reports the first maximiser it evaluates, which may lie elsewhere on the
    # plateau)
    star = dict(zip(res.columns, res.r_star, strict=True))
    at0 = _quiet(identification_risk, y, syn, known=KNOWN, synthesized=["inc"],
                 aggregation="per_dataset", match=MatchSpec(radius={**star, "age": 0.0}))
    assert at0.file["expected_match_risk"] >= res.risk_star - 1e-9


def test_pooled_risk_can_rise_with_an_unchanged_columns_radius():
    """A case found by the property test above: pooled over the datasets (fallback to the
    unsynthesized columns when nothing matches), widening the unchanged column's window raised
    the expected match risk (5.714 to 5.743 targets), so exact matching is not the pooled
    worst case by construction; the search evaluates the grid rather than assuming it."""
    y, syn = _table(40, 264)
    res = _quiet(radius_search, y, syn, known=KNOWN, synthesized=["inc"],
                 radii=[0.01, 0.05, 0.2, 1.0], aggregation="pooled")
    grid, summ = res.radii[:res.grid_points], res.risk_summary[:res.grid_points]
    at = grid[:, 1] == 0.05
    emr = summ[at][np.argsort(grid[at, 0])]
    assert emr[-1] > emr[-2] + 0.01


def test_coordinate_search_beyond_max_grid():
    """A grid larger than max_grid is searched column by column from the best common radius;
    the search says so, evaluates each point once, and reaches the grid's maximum here."""
    y, syn = _table(50, 3)
    y["inc2"] = y["inc"] * 2
    syn = [z.assign(inc2=z["inc"] * 2.1) for z in syn]
    known = [*KNOWN, "inc2"]
    full = _quiet(radius_search, y, syn, known=known, synthesized=["inc", "inc2"],
                  radii=[0.05, 0.2])
    coord = _quiet(radius_search, y, syn, known=known, synthesized=["inc", "inc2"],
                   radii=[0.05, 0.2], max_grid=10)
    assert full.settings["search"]["mode"] == "grid" and full.grid_points == 27
    s = coord.settings["search"]
    assert s["mode"] == "coordinate" and s["full_grid_points"] == 27 and s["points"] < 27
    assert len({tuple(r) for r in coord.radii}) == len(coord.radii)
    grid_max = float(full.risk_summary[:27].max())
    assert coord.risk_star <= grid_max + 1e-12
    assert coord.risk_star == pytest.approx(grid_max)
    # a coordinate search is not bounded between its points; the grid is (issue 85)
    assert coord.search_status == "coordinate" and "RADIUS_COORDINATE_SEARCH" in coord.warnings
    assert full.search_status in ("exact", "bounded") and full.risk_star >= grid_max


def test_unchanged_continuous_column_matched_exactly_by_default():
    """The default shared by identification_risk and the audit: a known continuous column the
    release carries unchanged is matched exactly unless a radius is given (it was refused); a
    synthesized one still needs a radius, and the error names the search."""
    y, syn = _table(40, 4)
    y["w"] = np.linspace(1.0, 2.0, len(y))
    syn = [z.assign(w=y["w"]) for z in syn]
    known = ["w", "sex", "inc"]
    default = _quiet(identification_risk, y, syn, known=known, synthesized=["inc"],
                     match=MatchSpec(radius={"inc": 0.1}))
    exact = _quiet(identification_risk, y, syn, known=known, synthesized=["inc"],
                   match=MatchSpec(radius={"w": 0.0, "inc": 0.1}))
    assert default.file["expected_match_risk"] == pytest.approx(exact.file["expected_match_risk"])
    assert default.settings["match_rule"]["exact_unsynthesized"] == ["w", "sex"] or \
        "w" not in default.settings["match_rule"]["radius"]
    with pytest.raises(ValidationError, match=r"synthesized continuous column\(s\) \['inc'\].*"
                       r"radius_search"):
        _quiet(identification_risk, y, syn, known=known, synthesized=["inc"])


@pytest.mark.parametrize("kwargs, match", [
    (dict(match=MatchSpec(radius=0.1)), "sets every radius itself"),
    (dict(radii=[0.1, -1]), "finite numbers >= 0"),
    (dict(radii="0.1"), "finite numbers >= 0"),
    (dict(match=MatchSpec(radius_type="quantile_sd")), "'percentage' or 'absolute'"),
])
def test_bad_input_is_refused(kwargs, match):
    y, syn = _table(20, 5)
    with pytest.raises(ValidationError, match=match):
        _quiet(radius_search, y, syn, known=KNOWN, synthesized=["inc"], **kwargs)
    with pytest.raises(ValidationError, match="no numeric known column"):
        _quiet(radius_search, y, syn, known=["sex"], synthesized=[])


def test_default_radii():
    assert SEARCH_RADII[0] == 0.0 and 0.1 in SEARCH_RADII and SEARCH_RADII[-1] == 1.0


@pytest.mark.parametrize("aggregation", ["per_dataset", "pooled"])
def test_a_grid_too_small_for_the_kernels_one_rule_at_a_time_runs_them_with_the_same_numbers(
        monkeypatch, aggregation):
    """1,000 records and 2 datasets are below the compiled kernels' threshold for one rule
    ((n + N) · m = 4,000 < 300,000), but the 81 grid points together are above it (324,000):
    the search builds compiled indexes, and its risks equal the pure-numpy search's exactly."""
    from bayes_risk.identification import engine

    y, syn = _table(1000, 7)
    kw = dict(known=KNOWN, categorical=["sex"], radii=[0.01, 0.025, 0.05, 0.1, 0.2, 0.3, 0.5, 1.0],
              aggregation=aggregation)
    made = []
    real = engine.make_index

    def spy(*args, **kwargs):
        made.append(args[3])  # ``compiled``
        return real(*args, **kwargs)

    monkeypatch.setattr(engine, "make_index", spy)
    got = _quiet(radius_search, y, syn, **kw)
    assert made and all(made)
    monkeypatch.setattr(engine, "USE_NUMBA", False)
    made.clear()
    want = _quiet(radius_search, y, syn, **kw)
    assert made and not any(made)
    assert got.grid_points == 81 and got.radii.shape == want.radii.shape
    np.testing.assert_array_equal(got.risk, want.risk)
    np.testing.assert_array_equal(got.true_match_rate, want.true_match_rate)
    np.testing.assert_array_equal(got.r_star, want.r_star)


def test_identification_run_reads_the_search_as_the_command_line_and_the_audit_do():
    """``identification_run``: without ``worst_case`` the search runs first and sets the run's
    radius when the match spec gives none (the command line); with it, the run at the given
    radius and the figures at the maximising radii beside it (the audit); every part equals
    its separate run, and each part's table is among the files."""
    from bayes_risk.identification.run import identification_run

    y, syn = _table(80, 3)
    kw = dict(known=KNOWN, synthesized=["inc"], categorical=["sex"], progressbar=False)
    radii = [0.05, 0.2]
    search = _quiet(radius_search, y, syn, radii=radii, **kw)
    r_star = dict(zip(search.columns, map(float, search.r_star), strict=True))
    at_star = _quiet(identification_risk, y, syn, match=MatchSpec(radius=r_star), **kw)
    given = MatchSpec(radius={"age": 0.0, "inc": 0.1})
    at_given = _quiet(identification_risk, y, syn, match=given, **kw)

    cli = _quiet(identification_run, [y, syn], search=radii, match=MatchSpec(), **kw)
    assert cli.radius_star == r_star and cli.at_r_star is None
    assert cli.result.file["expected_match_risk"] == at_star.file["expected_match_risk"]
    audit = _quiet(identification_run, [y, syn], search=radii, worst_case=True, match=given,
                   sweep=[0.1], known_sweep=["sex", "inc"], **kw)
    assert audit.result.file["expected_match_risk"] == at_given.file["expected_match_risk"]
    assert audit.headline is audit.at_r_star
    assert audit.at_r_star.file["expected_match_risk"] == at_star.file["expected_match_risk"]
    assert audit.search.risk_star == search.risk_star
    # the knowledge sweep's full set is the run at the given radius
    full = audit.known_sweep.table.set_index("known").loc["sex, inc", "expected_match_risk"]
    assert full == _quiet(identification_risk, y, syn, match=MatchSpec(radius={"inc": 0.1}),
                          **{**kw, "known": ["sex", "inc"]}).file["expected_match_risk"]
    tables, figures = audit.files()
    assert set(tables) == {"records.csv", "radius_sweep.csv", "radius_search.csv",
                           "known_sweep.csv", "known_sweep_drivers.csv", "known_sweep_levels.csv"}
    assert set(figures) == {"radius_sweep.png", "radius_search.png", "known_sweep.png",
                            "known_sweep_drivers.png"}
    assert len(tables["records.csv"]) == len(y)
    assert "records.csv" not in dataclasses.replace(audit, records="none").files()[0]
