"""The worst case over the radii is the supremum over every radius, not a grid's maximum
(issue 85, item 3): the search's figures against an exhaustive search on small tables.

A match count changes only where a radius crosses a record's distance to a target, so the
figures are step functions of the radii: evaluated at every such distance and between each two
consecutive ones (the Cartesian product over the columns), a table gives every value the
figures take. The search must find their largest (``search_status == "exact"``) or state a
bound at least as large (``"bounded"``), and never report more than a radius gives."""

from __future__ import annotations

import contextlib
import io
import json
import warnings

import numpy as np
import pandas as pd
import pytest

from bayes_risk import MatchSpec
from bayes_risk.exceptions import DataWarning
from bayes_risk.identification.radius import radius_search, radius_sweep

TOP = 1.0


def _quiet(fn, *args, **kw):
    kw.setdefault("progressbar", False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)
        return fn(*args, **kw)


def _table(seed: int, n: int = 10, m: int = 2) -> tuple[pd.DataFrame, list[pd.DataFrame]]:
    """Integer values 1..6 (so that distances are few, distinct rationals): a categorical key
    ``g``, an unchanged numeric key ``age`` and a synthesized one ``x`` redrawn at random."""
    rng = np.random.default_rng(seed)
    y = pd.DataFrame({"g": rng.integers(0, 2, n), "age": rng.integers(1, 7, n).astype(float),
                      "x": rng.integers(1, 7, n).astype(float)})
    return y, [y.assign(x=rng.integers(1, 7, n).astype(float)) for _ in range(m)]


def _candidates(targets: np.ndarray, records: np.ndarray) -> list[float]:
    """0, the largest radius, every distance ``|z - t| / |t|`` below it, and the middle of
    each two consecutive ones: a radius of every value the figures take."""
    d = {0.0, TOP} | {abs(z - t) / abs(t) for t in targets for z in records
                      if abs(z - t) / abs(t) <= TOP}
    d = np.array(sorted(d))
    return sorted({*d, *((d[1:] + d[:-1]) / 2)})


def _exhaustive(y, syn, known, aggregation) -> tuple[float, float]:
    """The largest summarised expected match risk and true match rate over every radius."""
    axes = {"x": _candidates(y["x"], np.concatenate([z["x"] for z in syn]))}
    if "age" in known:
        axes["age"] = _candidates(y["age"], y["age"])
    fb = None if aggregation == "pooled" else "none"
    s = _quiet(radius_sweep, y[known], [z[known] for z in syn], known=known, synthesized=["x"],
               radii={c: axes[c] for c in known if c in axes}, max_grid=10**6,
               aggregation=aggregation, categorical=["g"],
               match=MatchSpec(radius=dict.fromkeys(axes, 0.0), fallback=fb))
    return float(s.risk_summary.max()), float(s.tmr_summary.max())


def _search(y, syn, known, aggregation, refine):
    fb = None if aggregation == "pooled" else "none"
    return _quiet(radius_search, y[known], [z[known] for z in syn], known=known,
                  synthesized=["x"], aggregation=aggregation, categorical=["g"],
                  match=MatchSpec(fallback=fb), refine=refine)


def _check(res, emr: float, tmr: float) -> None:
    """The search never reports more than a radius gives, nor a bound below it; exact means
    equal."""
    e, t = res.bounds
    assert res.risk_star <= emr + 1e-9 and emr <= e + 1e-9
    assert res.tmr_star_value <= tmr + 1e-12 and tmr <= t + 1e-12
    if res.search_status == "exact":
        assert res.risk_star == pytest.approx(emr, abs=1e-9)
        assert res.tmr_star_value == pytest.approx(tmr, abs=1e-12)


@pytest.mark.parametrize("aggregation", ["per_dataset", "pooled"])
def test_one_numeric_key_the_supremum_exactly(aggregation):
    """One numeric key: the search finds the largest figures over every radius (exact),
    where the grid's largest falls short on some tables."""
    short = 0
    for seed in range(4):
        y, syn = _table(seed)
        emr, tmr = _exhaustive(y, syn, ["g", "x"], aggregation)
        res = _search(y, syn, ["g", "x"], aggregation, refine=10_000)
        assert res.search_status == "exact", seed
        _check(res, emr, tmr)
        grid = res.risk_summary[:res.grid_points].max()
        short += grid < emr - 1e-9
        # every figure reported is a radius's: the refinement's points are on the lattice
        assert res.grid_points == 9 and len(res.radii) > 9
    assert short  # the grid alone missed the supremum


@pytest.mark.parametrize("aggregation", ["per_dataset", "pooled"])
def test_two_numeric_keys_exact_or_a_bound_that_holds(aggregation):
    """Two numeric keys (one released unchanged): with room enough the search is exact; with
    a few points only it states a bound, which every radius respects."""
    for seed in range(3):
        y, syn = _table(seed)
        known = ["g", "age", "x"]
        emr, tmr = _exhaustive(y, syn, known, aggregation)
        # seed 0 pooled takes about 1,000 points to be exact: its bounds are checked short
        for refine in (0, 3, 30, 100 if seed == 0 else 10_000):
            res = _search(y, syn, known, aggregation, refine)
            _check(res, emr, tmr)
            if refine == 0:  # no point between the grid's, but its cells bounded
                assert len(res.radii) == res.grid_points == 81
            if res.search_status == "bounded":
                assert "RADIUS_SEARCH_BOUNDED" in res.warnings
                assert max(res.bounds[0] - res.risk_star, res.bounds[1]
                           - res.tmr_star_value) > 0
        assert res.search_status == "exact" or seed == 0, (seed, res.search)


def test_a_maximum_at_the_edge_is_flagged_in_every_form(tmp_path):
    """Released values twice the truth: a target's own record enters its window at ±100 %
    exactly, the largest radius searched, and nothing is identified below it. The largest
    figures lie at the search's edge, and the result, its summary.json and the command's
    printed lines say so (RADIUS_AT_GRID_EDGE); a release that keeps the values does not."""
    from bayes_risk.cli import main

    y, syn = _table(5, n=12)
    z = [s.assign(x=y["x"] * 2.0) for s in syn]
    edge = _search(y, z, ["g", "x"], "per_dataset", refine=200)
    assert edge.search_status == "exact" and edge.risk_star > 0
    assert edge.risk_summary[:edge.grid_points][:-1].max() == 0.0
    assert edge.at_edge() == ["x"] and edge.at_edge("true_match_rate") == ["x"]
    assert "RADIUS_AT_GRID_EDGE" in edge.warnings
    assert "largest radius searched for x" in edge.warning_details["RADIUS_AT_GRID_EDGE"]
    d = edge.to_dict()
    assert d["at_edge"] == {"expected_match_risk": ["x"], "true_match_rate": ["x"]}
    assert d["search_status"] == "exact" and d["risk_bound"] == pytest.approx(edge.risk_star)
    kept = _search(y, [s.assign(x=y["x"]) for s in syn], ["g", "x"], "per_dataset", 200)
    assert kept.at_edge() == [] and "RADIUS_AT_GRID_EDGE" not in kept.warnings
    # the command: summary.json and the printed line
    y.to_csv(tmp_path / "y.csv", index=False)
    for i, s in enumerate(z):
        s.to_csv(tmp_path / f"s{i}.csv", index=False)
    out = tmp_path / "out"
    buf = io.StringIO()
    with warnings.catch_warnings(), contextlib.redirect_stdout(buf):
        warnings.simplefilter("ignore")
        assert main(["identification", str(tmp_path / "y.csv"), str(tmp_path / "s0.csv"),
                     str(tmp_path / "s1.csv"), "--known-unsynthesized", "g",
                     "--known-synthesized", "x", "--categorical", "g", "--aggregation",
                     "per-dataset", "--radius-search", "--out", str(out)]) == 0
    s = json.loads((out / "summary.json").read_text())["radius_search"]
    assert s["at_edge"]["expected_match_risk"] == ["x"] and "RADIUS_AT_GRID_EDGE" in s["warnings"]
    assert "RADIUS_AT_GRID_EDGE: the largest expected match risk lies at the largest radius " \
        "searched of x" in buf.getvalue()
    assert "exact: the largest over every radius from 0 to 1" in buf.getvalue()


def test_the_grid_only_where_the_counts_are_not_monotone():
    """A fallback one dataset at a time replaces an empty match set by a larger one, so a
    count can fall as the radius grows: no bound between the grid's points is claimed."""
    y, syn = _table(1)
    res = _quiet(radius_search, y, syn, known=["g", "age", "x"], synthesized=["x"],
                 categorical=["g"], aggregation="per_dataset",
                 match=MatchSpec(fallback="unsynthesized"))
    assert res.search_status == "grid" and len(res.radii) == res.grid_points
    assert "fallback" in res.search["refinement"]["reason"]
    assert np.isnan(res.bounds[0]) and "RADIUS_GRID_ONLY" in res.warnings
    assert "not bounded between them" in res.search_text()
