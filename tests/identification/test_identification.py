"""Identification risk (SPEC §4): worked examples, properties, errors, numba/numpy twins."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bayes_risk import MatchSpec, PopulationSpec
from bayes_risk.exceptions import DataWarning, SchemaError, ValidationError
from bayes_risk.identification import engine, index
from bayes_risk.identification.api import identification_risk
from bayes_risk.identification.loglinear import (
    expected_inverse,
    fit_all_two_way,
    population_estimate,
)
from bayes_risk.identification.matching import (
    MatchRule,
    quantile_sd_radius,
    target_radii,
    window_bounds,
)
from bayes_risk.identification.radius import radius_sweep
from bayes_risk.identification.summary import file_measures

TOL = dict(rtol=1e-6, atol=1e-9)


def ir(*args, **kw):
    kw.setdefault("progressbar", False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)
        return identification_risk(*args, **kw)


# ----------------------------------------------------------------------------------------------
# fixture toy5 (SPEC §1.7, §4.7)
# ----------------------------------------------------------------------------------------------
@pytest.fixture
def toy5():
    y = pd.DataFrame({"sex": ["M", "M", "M", "F", "F"], "race": ["W", "W", "B", "W", "B"]})
    z1 = y.assign(race=["W", "B", "B", "W", "W"])
    z2 = y.assign(race=["W", "W", "W", "B", "B"])
    return y, [z1, z2]


F_TOY = {("M", "W"): 4, ("M", "B"): 2, ("F", "W"): 3, ("F", "B"): 1}


def test_toy5_pooled_fallback_unsynthesized(toy5):
    y, z = toy5
    res = ir(y, z, known=["sex", "race"], synthesized=["race"])
    assert res.settings["fallback"] == "unsynthesized"  # SPEC §4.3(5) default
    expected = np.array([
        [2 / 3, 1 / 6, 1 / 6, 0, 0],
        [2 / 3, 1 / 6, 1 / 6, 0, 0],
        [1 / 6, 5 / 12, 5 / 12, 0, 0],
        [0, 0, 0, 0.5, 0.5],
        [0, 0, 0, 0.5, 0.5],
    ])
    np.testing.assert_allclose(res.prob.toarray(), expected, **TOL)
    np.testing.assert_array_equal(res.c, [1, 1, 2, 2, 2])
    np.testing.assert_array_equal(res.T, [1, 0, 1, 1, 1])
    np.testing.assert_array_equal(res.K, [1, 0, 0, 0, 0])
    np.testing.assert_array_equal(res.W, [0, 1, 0, 0, 0])
    s = res.file
    assert s["expected_match_risk"] == pytest.approx(2.5)
    assert s["true_match_risk"] == 1
    assert s["n_unique"] == 2
    assert s["true_match_rate_targets"] == pytest.approx(0.2)
    assert s["true_match_rate_unique"] == pytest.approx(0.5)
    assert s["false_match_rate"] == pytest.approx(0.5)
    assert s["expected_match_rate"] == pytest.approx(0.5)
    np.testing.assert_allclose(res.p_unassigned, 0.0)


def test_toy5_pooled_fallback_none(toy5):
    y, z = toy5
    res = ir(y, z, known=["sex", "race"], synthesized=["race"], match=MatchSpec(fallback="none"))
    p = res.prob.toarray()
    np.testing.assert_allclose(p[2], [0, 0.25, 0.25, 0, 0], **TOL)
    np.testing.assert_allclose(p[3], [0, 0, 0, 0.25, 0.25], **TOL)
    np.testing.assert_allclose(p[4], [0, 0, 0, 0.25, 0.25], **TOL)
    np.testing.assert_array_equal(res.c, [1, 1, 2, 2, 2])
    np.testing.assert_array_equal(res.T, [1, 0, 1, 1, 1])
    np.testing.assert_allclose(res.p_unassigned, [0, 0, 0.5, 0.5, 0.5], **TOL)


def test_toy5_per_dataset(toy5):
    y, z = toy5
    with pytest.warns(DataWarning, match="ZERO_UNIQUE"):
        res = identification_risk(y, z, known=["sex", "race"], synthesized=["race"],
                                  aggregation="per_dataset",
                                  progressbar=False)
    np.testing.assert_allclose(res.IR[:, 0], [1, 0, 0.5, 0.5, 0], **TOL)
    np.testing.assert_allclose(res.IR[:, 1], [1 / 3, 1 / 3, 0, 0, 0.5], **TOL)
    np.testing.assert_array_equal(res.c[:, 0], [1, 1, 2, 2, 0])
    np.testing.assert_array_equal(res.c[:, 1], [3, 3, 0, 0, 2])
    pdx = res.per_dataset
    np.testing.assert_allclose(pdx["expected_match_risk"], [2.0, 1.166667], rtol=1e-6)
    np.testing.assert_array_equal(pdx["n_unique"], [2, 0])
    np.testing.assert_allclose(pdx["true_match_rate_targets"], [0.2, 0.0], **TOL)
    assert pdx["false_match_rate"][0] == pytest.approx(0.5)
    assert np.isnan(pdx["false_match_rate"][1])
    assert res.file["expected_match_risk"] == pytest.approx(1.583333, rel=1e-6)
    assert "ZERO_UNIQUE" in res.warnings
    np.testing.assert_allclose(res.record_IR, res.IR.mean(axis=1))
    assert list(res.records.columns[:7]) == ["target", "dataset", "c", "T", "K", "W", "IR"]
    assert len(res.records) == 10


@pytest.mark.parametrize(
    "strategy, risk, unique, declared",
    [
        ("always", 2.5, 2, [1, 1, 1, 1, 1]),
        (("threshold", 0.5), 0.0, 0, [0, 0, 0, 0, 0]),
        (("threshold", 0.6), 2.0, 2, [1, 1, 1, 0, 1]),
        ("not_if_max", 0.0, 0, [0, 0, 0, 0, 0]),
    ],
)
def test_toy5_unknown_true_counts(toy5, strategy, risk, unique, declared):
    y, z = toy5
    res = ir(y, z, known=["sex", "race"], synthesized=["race"],
             population=PopulationSpec(membership="unknown", counts=F_TOY),
             match=MatchSpec(strategy=strategy))
    assert res.settings["fallback"] == "none"
    p = res.prob.toarray()
    np.testing.assert_allclose(p[0], [0.25, 0.125, 0.125, 0, 0], **TOL)
    np.testing.assert_allclose(p[1], [0.25, 0.125, 0.125, 0, 0], **TOL)
    np.testing.assert_allclose(p[2], [0, 0.25, 0.25, 0, 0], **TOL)
    np.testing.assert_allclose(p[3], [0, 0, 0, 1 / 6, 1 / 6], **TOL)
    np.testing.assert_allclose(p[4], [0, 0, 0, 0.25, 0.25], **TOL)
    np.testing.assert_allclose(res.p_out, [0.5, 0.5, 0.5, 2 / 3, 0.5], **TOL)
    s = res.file
    assert s["expected_match_risk"] == pytest.approx(risk)
    assert s["n_unique"] == unique
    np.testing.assert_array_equal(res.declared, np.array(declared, dtype=bool))
    if strategy == "always":
        assert s["true_match_risk"] == 1
        assert s["false_match_rate"] == pytest.approx(0.5)
    if unique == 0:
        assert np.isnan(s["false_match_rate"]) and "ZERO_UNIQUE" in res.warnings


def test_toy5_out_of_sample_target(toy5):
    y, z = toy5
    tg = y.assign(id=[0, 1, 2, 3, 4])
    tg = pd.concat([tg, pd.DataFrame({"sex": ["M"], "race": ["W"], "id": [99]})],
                   ignore_index=True)
    res = ir(y, z, known=["sex", "race"], synthesized=["race"],
             population=PopulationSpec(membership="unknown", counts=F_TOY, targets=tg,
                                       target_id="id"))
    p = res.prob.toarray()
    np.testing.assert_allclose(p[5], p[0], **TOL)
    assert res.p_out[5] == pytest.approx(0.5)
    rec = res.records.set_index("target")
    assert not rec.loc[99, "in_sample"]
    assert rec.loc[99, "c"] == 1 and rec.loc[99, "T"] == 0 and rec.loc[99, "W"] == 1
    assert rec.loc[0, "K"] == 1 and rec.loc[0, "record"] == 0
    assert rec.loc[99, "record"] is None


def test_population_counts_forms_agree(toy5):
    y, z = toy5
    table = pd.DataFrame([(a, b, f) for (a, b), f in F_TOY.items()], columns=["sex", "race", "F"])
    per_target = [F_TOY[(a, b)] for a, b in zip(y.sex, y.race, strict=False)]
    r1 = ir(y, z, known=["sex", "race"], synthesized=["race"],
            population=PopulationSpec(membership="unknown", counts=F_TOY))
    r2 = ir(y, z, known=["sex", "race"], synthesized=["race"],
            population=PopulationSpec(membership="unknown", counts=table))
    r3 = ir(y, z, known=["sex", "race"], synthesized=["race"],
            population=PopulationSpec(membership="unknown", counts=per_target))
    for r in (r2, r3):
        np.testing.assert_allclose(r.prob.toarray(), r1.prob.toarray())
        np.testing.assert_allclose(r.p_out, r1.p_out)


def test_min_rule_when_matches_exceed_F(toy5):
    # SPEC §4.10: n_{t,r} > F -> each match gets 1/n, p(n+1) = 0 (target 5 in Z_(2))
    y, z = toy5
    res = ir(y, [z[1]], known=["sex", "race"], synthesized=["race"],
             population=PopulationSpec(membership="unknown", counts=F_TOY))
    np.testing.assert_allclose(res.prob.toarray()[4], [0, 0, 0, 0.5, 0.5], **TOL)
    assert res.p_out[4] == pytest.approx(0.0)


# ----------------------------------------------------------------------------------------------
# fixture radius (SPEC §4.3)
# ----------------------------------------------------------------------------------------------
def _c(t, x, **kw):
    """Match count of one target value t against one synthetic value x."""
    y = pd.DataFrame({"v": np.atleast_1d(np.asarray(t, dtype=float))})
    z = pd.DataFrame({"v": np.atleast_1d(np.asarray(x, dtype=float))})
    kw.setdefault("aggregation", "per_dataset")
    rule = {k: kw.pop(k) for k in ("radius", "window", "r_min", "compat") if k in kw}
    return ir(y, [z], known=["v"], synthesized=["v"], match=MatchSpec(**rule), **kw)


def test_radius_percentage_closed_open():
    assert _c(50_000, 55_000, radius=0.1).c[0, 0] == 1
    assert _c(50_000, 55_000, radius=0.1, window="open").c[0, 0] == 0
    assert _c(50_000, 45_000, radius=0.1).c[0, 0] == 1
    assert _c(50_000, 55_000.01, radius=0.1).c[0, 0] == 0


def test_radius_negative_target_and_legacy_signed():
    assert _c(-2_000, -2_200, radius=0.1).c[0, 0] == 1
    assert _c(-2_000, -1_800, radius=0.1).c[0, 0] == 1
    assert _c(-2_000, -2_201, radius=0.1).c[0, 0] == 0
    rule = MatchRule(radius_s=("v",), radius={"v": 0.1}, legacy_signed=True)
    R = target_radii(rule, {"v": np.array([-2000.0])})["v"]
    assert R[0] == pytest.approx(-200.0)
    lo, hi = window_bounds(rule, np.array([-2000.0]), R)
    assert lo[0] > hi[0]  # empty window: nothing matches, not even the target itself
    res = _c(-2_000, -2_000, radius=0.1, compat="IdentificationRiskCalculation")
    assert res.c[0, 0] == 0 and res.T[0, 0] == 1 and res.IR[0, 0] == 0  # legacy T when c = 0


def test_radius_zero_target_and_floor():
    assert _c([0.0], [0.0], radius=0.1).c[0, 0] == 1
    assert _c([0.0], [1e-9], radius=0.1).c[0, 0] == 0
    assert _c([0.0], [0.0], radius=0.1, window="open").c[0, 0] == 0
    assert _c([0.0], [100.0], radius=0.1, r_min=100).c[0, 0] == 1
    assert _c([0.0], [-100.0], radius=0.1, r_min=100).c[0, 0] == 1
    assert _c([0.0], [100.5], radius=0.1, r_min=100).c[0, 0] == 0


def _two(x, shape, **kw):
    y = pd.DataFrame({"a": [100.0], "b": [200.0]})
    z = pd.DataFrame({"a": [float(x[0])], "b": [float(x[1])]})
    return ir(y, [z], known=["a", "b"], synthesized=["a", "b"],
              match=MatchSpec(radius={"a": 10, "b": 20}, radius_type="absolute", shape=shape),
              aggregation="per_dataset", **kw).c[0, 0]


def test_radius_rectangle_ellipse_legacy_euclid():
    assert _two((108, 215), "rectangle") == 1
    assert _two((108, 215), "ellipse") == 0  # 0.8^2 + 0.75^2 = 1.2025
    assert _two((105, 210), "rectangle") == 1
    assert _two((105, 210), "ellipse") == 1  # 0.5
    assert _two((108, 215), "legacy_hh_euclid") == 1  # R_syn = sqrt(500) = 22.3607
    rule = MatchRule(radius_s=("a", "b"), radius={"a": 10, "b": 20}, radius_type="absolute",
                     shape="legacy_hh_euclid")
    R = target_radii(rule, {"a": np.array([100.0]), "b": np.array([200.0])})
    assert R["a"][0] == pytest.approx(np.sqrt(500)) and R["b"][0] == pytest.approx(22.3607, 1e-5)
    assert _two((123, 200), "legacy_hh_euclid") == 0


def test_radius_quantile_sd():
    x = np.array([1, 2, 3, 4, 10, 20, 30, 40.0])
    sd = quantile_sd_radius(x, np.array([3.0, 20.0]), q=2)
    np.testing.assert_allclose(sd, [1.290994, 12.909944], rtol=1e-6)
    rule = MatchRule(radius_s=("v",), radius={"v": 1.0}, radius_type="quantile_sd",
                     quantile_groups=2)
    R = target_radii(rule, {"v": np.array([3.0, 20.0])}, {"v": x})["v"]
    lo, hi = window_bounds(rule, np.array([3.0, 20.0]), R)
    np.testing.assert_allclose(lo, [1.709006, 7.090056], rtol=1e-6)
    np.testing.assert_allclose(hi, [4.290994, 32.909944], rtol=1e-6)
    # end to end: the target 3's own synthetic value 4.2 is inside, 4.3 is not
    y = pd.DataFrame({"v": x})
    z = pd.DataFrame({"v": np.where(x == 3, 4.2, x + 1000)})
    res = ir(y, [z], known=["v"], synthesized=["v"], match=MatchSpec(radius_type="quantile_sd",
                                                                     quantile_groups=2),
             aggregation="per_dataset")
    assert res.c[2, 0] == 1 and res.T[2, 0] == 1


def test_count_column_exact_unless_given_radius():
    y = pd.DataFrame({"age": [30, 31, 50], "inc": [100.0, 100.0, 300.0]})
    z = y.assign(inc=[100.0, 101.0, 300.0])
    r1 = ir(y, [z], known=["age", "inc"], synthesized=["inc"], match=MatchSpec(radius=0.1),
            aggregation="per_dataset")
    assert r1.settings["match_rule"]["exact_unsynthesized"] == ["age"]
    np.testing.assert_array_equal(r1.c[:, 0], [1, 1, 1])
    r2 = ir(y, [z], known=["age", "inc"], synthesized=["inc"],
            match=MatchSpec(radius={"age": 0.1, "inc": 0.1}),
            aggregation="per_dataset")
    np.testing.assert_array_equal(r2.c[:, 0], [2, 2, 1])


# ----------------------------------------------------------------------------------------------
# fixture maxrad (SPEC §4.8)
# ----------------------------------------------------------------------------------------------
MAXRAD = {
    0.05: ([2, 0, 0, 1], [1, 0, 0, 1], 1.5),
    0.10: ([2, 2, 0, 1], [1, 1, 0, 1], 2.0),
    0.20: ([2, 2, 1, 1], [1, 1, 1, 1], 3.0),
    0.30: ([2, 2, 1, 1], [1, 1, 1, 1], 3.0),
    1.00: ([2, 2, 4, 4], [1, 1, 1, 1], 1.5),
}


@pytest.fixture
def maxrad():
    return (pd.DataFrame({"x": [100.0, 110.0, 200.0, 400.0]}),
            [pd.DataFrame({"x": [104.0, 100.0, 230.0, 390.0]})])


@pytest.mark.parametrize("r", sorted(MAXRAD))
def test_maxrad_table(maxrad, r):
    y, z = maxrad
    res = ir(y, z, known=["x"], synthesized=["x"], match=MatchSpec(radius=r),
             aggregation="per_dataset")
    c, T, risk = MAXRAD[r]
    np.testing.assert_array_equal(res.c[:, 0], c)
    np.testing.assert_array_equal(res.T[:, 0], T)
    assert res.file["expected_match_risk"] == pytest.approx(risk)


def test_maxrad_sweep(maxrad):
    y, z = maxrad
    res = radius_sweep(y, z, known=["x"], synthesized=["x"], radii=sorted(MAXRAD),
                       progressbar=False)
    np.testing.assert_allclose(res.risk[:, 0], [MAXRAD[r][2] for r in sorted(MAXRAD)])
    assert res.r_star == pytest.approx(0.2)
    assert res.risk_star == pytest.approx(3.0)
    assert res.argmax == (2, 3)
    df = res.to_frame()
    assert list(df.columns) == ["radius", "dataset", "expected_match_risk",
                                "true_match_rate_targets"]
    ax = res.plot()
    assert ax.get_ylabel().startswith("expected match risk")
    # percentage radii are fractions: the axis says so (0.1 is ±10 %, not 0.1 %)
    assert res.settings["radius_type"] == "percentage"
    assert ax.get_xlabel() == "radius, fraction of the value (0.1 = ±10 %)"


def test_sweep_cartesian_grid_and_cap():
    rng = np.random.default_rng(3)
    y = pd.DataFrame({"a": rng.uniform(10, 20, 40), "b": rng.uniform(10, 20, 40)})
    zs = [y + rng.normal(0, 0.5, y.shape) for _ in range(2)]
    res = radius_sweep(y, zs, known=["a", "b"], synthesized=["a", "b"],
                       radii={"a": [0.01, 0.05], "b": [0.02, 0.1, 0.2]},
                       progressbar=False)
    assert res.radii.shape == (6, 2) and res.risk.shape == (6, 2)
    direct = ir(y, zs, known=["a", "b"], synthesized=["a", "b"],
                match=MatchSpec(radius={"a": 0.05, "b": 0.1}), aggregation="per_dataset")
    i = [k for k in range(6) if tuple(res.radii[k]) == (0.05, 0.1)][0]
    np.testing.assert_allclose(res.risk[i], direct.per_dataset["expected_match_risk"])
    with pytest.raises(ValidationError, match="max_grid"):
        radius_sweep(y, zs, known=["a", "b"], synthesized=["a", "b"],
                     radii={"a": [0.1, 0.2], "b": [0.1, 0.2]}, max_grid=3,
                     progressbar=False)


# ----------------------------------------------------------------------------------------------
# fixture ipf3 (SPEC §4.9)
# ----------------------------------------------------------------------------------------------
IPF3 = np.array([[[10, 5], [3, 1]], [[4, 6], [2, 0]]], dtype=float)


def test_ipf3_fit():
    fit = fit_all_two_way(IPF3)
    assert fit.converged
    expected = np.array([[[9.517738, 5.482262], [3.482262, 0.517738]],
                         [[4.482262, 5.517738], [1.517738, 0.482262]]])
    np.testing.assert_allclose(fit.mu, expected, rtol=1e-6)
    for ax in range(3):
        np.testing.assert_allclose(fit.mu.sum(axis=ax), IPF3.sum(axis=ax), rtol=1e-9)
    np.testing.assert_allclose(fit.mu.sum(axis=2), [[15, 4], [10, 2]], rtol=1e-9)


def test_ipf3_population_estimates():
    mu = fit_all_two_way(IPF3).mu
    f = IPF3
    F = population_estimate(f, mu, 0.2)
    assert F[1, 1, 1] == pytest.approx(1.929048, rel=1e-6)
    assert F[0, 0, 0] == pytest.approx(48.070952, rel=1e-6)
    Fs = population_estimate(f, mu, 0.2, "scaled")
    assert Fs[0, 0, 0] == pytest.approx(47.588690, rel=1e-6)
    assert Fs[1, 1, 1] == pytest.approx(2.411310, rel=1e-6)
    np.testing.assert_allclose(expected_inverse(np.array([1, 2]), np.array([2.0, 2.0])),
                               [0.432332, 0.283834], rtol=1e-5)
    assert expected_inverse(np.array([1]), np.array([2.0]))[0] == pytest.approx(
        (1 - np.exp(-2)) / 2, rel=1e-12)


def test_ipf_saturated_and_not_converged():
    f = np.array([[3.0, 1.0], [0.0, 2.0]])
    np.testing.assert_array_equal(fit_all_two_way(f).mu, f)
    from bayes_risk.exceptions import ConvergenceWarning

    with pytest.warns(ConvergenceWarning, match="IPF_NOT_CONVERGED"):
        fit = fit_all_two_way(np.arange(1.0, 28.0).reshape(3, 3, 3) ** 2, max_cycles=1)
    assert not fit.converged


def _ipf_data():
    rows = []
    for (a, b, c), k in np.ndenumerate(IPF3):
        rows += [(a, b, c)] * int(k)
    y = pd.DataFrame(rows, columns=["A", "B", "C"])
    return y


def test_loglinear_original_counts_end_to_end():
    y = _ipf_data()
    z = [y.copy()]
    res = ir(y, z, known=["A", "B", "C"], synthesized=["C"],
             categorical=["A", "B", "C"], population=PopulationSpec(membership="unknown",
                                                                    counts="loglinear_original",
                                                                    sampling_fraction=0.2))
    mu = fit_all_two_way(IPF3).mu
    Fhat = np.maximum(population_estimate(IPF3, mu, 0.2), 1.0)
    expect = Fhat[y.A, y.B, y.C]
    np.testing.assert_allclose(res.population_counts[:, 0], expect, rtol=1e-9)
    # with z = y, n_t = f_t and p = min(1/F, 1/f) = 1/F
    i = 0
    row = res.prob.getrow(i).toarray().ravel()
    assert row[i] == pytest.approx(1 / expect[i])
    assert res.p_out[i] == pytest.approx(1 - IPF3[0, 0, 0] / expect[i])
    r_inv = ir(y, z, known=["A", "B", "C"], synthesized=["C"],
               categorical=["A", "B", "C"], population=PopulationSpec(membership="unknown",
                                                                      counts="loglinear_original",
                                                                      estimate="expected_inverse",
                                                                      sampling_fraction=0.2))
    nu = 0.8 * mu[0, 0, 0] / 0.2
    assert r_inv.prob[0, 0] == pytest.approx(expected_inverse(np.array([10]), np.array([nu]))[0])


def test_loglinear_synthetic_and_F_below_one():
    y = _ipf_data()
    rng = np.random.default_rng(0)
    z = [y.assign(C=rng.integers(0, 2, len(y))) for _ in range(3)]
    with pytest.warns(DataWarning, match="F_BELOW_ONE"):
        res = identification_risk(y, z, known=["A", "B", "C"], synthesized=["C"],
                                  categorical=["A", "B", "C"],
                                  population=PopulationSpec(membership="unknown",
                                                            counts="loglinear_synthetic",
                                                            population_size=len(y)),
                                  progressbar=False)  # a = 1: F = f, 0 cells -> 1
    assert "F_BELOW_ONE" in res.warnings
    assert res.population_counts.shape == (len(y), 3)
    assert (res.population_counts >= 1).all()
    # a = 1: the intruder's count equals the synthetic cell count
    key = (y.A * 4 + y.B * 2 + z[0].C).to_numpy()
    counts = np.bincount(key, minlength=8)
    tkey = (y.A * 4 + y.B * 2 + y.C).to_numpy()
    np.testing.assert_allclose(res.population_counts[:, 0], np.maximum(counts[tkey], 1))


# ----------------------------------------------------------------------------------------------
# errors
# ----------------------------------------------------------------------------------------------
def test_error_unknown_column(toy5):
    y, z = toy5
    with pytest.raises(SchemaError, match="'rase'.*Did you mean 'race'"):
        ir(y, z, known=["sex", "rase"], synthesized=["rase"])


def test_error_radius_for_categorical(toy5):
    y, z = toy5
    with pytest.raises(ValidationError, match="categorical column 'race'"):
        ir(y, z, known=["sex", "race"], synthesized=["race"], match=MatchSpec(radius={"race": 0.1}))


def test_error_percentage_radius_without_continuous(toy5):
    y, z = toy5
    with pytest.raises(ValidationError, match="no known column is continuous"):
        ir(y, z, known=["sex", "race"], synthesized=["race"], match=MatchSpec(radius=0.1))


def test_error_continuous_without_radius():
    y = pd.DataFrame({"v": [1.0, 2.0]})
    with pytest.raises(ValidationError, match="need a radius"):
        ir(y, [y], known=["v"], synthesized=["v"])


def test_error_targets_lacking_known_columns(toy5):
    y, z = toy5
    tg = pd.DataFrame({"sex": ["M"], "id": [0]})
    with pytest.raises(SchemaError, match=r"targets lack known column\(s\) \['race'\]"):
        ir(y, z, known=["sex", "race"], synthesized=["race"],
           population=PopulationSpec(targets=tg, target_id="id"))


def test_error_user_counts_below_one(toy5):
    y, z = toy5
    bad = dict(F_TOY)
    bad[("F", "B")] = 0.5
    with pytest.raises(ValidationError, match="< 1"):
        ir(y, z, known=["sex", "race"], synthesized=["race"],
           population=PopulationSpec(membership="unknown", counts=bad))
    with pytest.raises(ValidationError, match="no count for target"):
        ir(y, z, known=["sex", "race"], synthesized=["race"],
           population=PopulationSpec(membership="unknown", counts={("M", "W"): 4}))
    with pytest.raises(ValidationError, match="needs population counts"):
        ir(y, z, known=["sex", "race"], synthesized=["race"],
           population=PopulationSpec(membership="unknown"))



def test_error_user_counts_keyed_by_text_for_numeric_codes():
    # integer-coded factors keyed by their text ('1' for 1, as read from a CSV of strings): a
    # ValidationError naming the column, not pandas' merge error
    y = pd.DataFrame({"urban": [1, 1, 2, 2, 1], "tenure": [1, 2, 1, 2, 2]})
    z = [y.assign(tenure=[2, 2, 1, 1, 2])]
    counts = y.groupby(["urban", "tenure"]).size().mul(10).rename("F").reset_index()
    kw = dict(categorical=["urban", "tenure"])
    ref = ir(y, z, known=["urban", "tenure"], synthesized=["tenure"],
             population=PopulationSpec(membership="unknown", counts=counts), **kw)
    for text in (counts.astype({"urban": str}),
                 {(str(a), str(b)): f for a, b, f in counts.itertuples(index=False)}):
        with pytest.raises(ValidationError, match=r"column 'urban' are text \(e.g. '1'\) but the "
                                                  r"targets' are numbers \(e.g. 1\)"):
            ir(y, z, known=["urban", "tenure"], synthesized=["tenure"],
               population=PopulationSpec(membership="unknown", counts=text), **kw)
    # 2.0 and 2 are one key value
    same = ir(y, z, known=["urban", "tenure"], synthesized=["tenure"],
              population=PopulationSpec(membership="unknown",
                                        counts=counts.astype({"urban": float})), **kw)
    np.testing.assert_allclose(same.p_out, ref.p_out)

def test_nan_in_known_columns(toy5):
    # missing known values are handled (tests/identification/test_identification_missing.py);
    # an unsynthesized column must still be released unchanged, missing values included
    y, z = toy5
    y2 = y.copy()
    y2.loc[2, "sex"] = None
    with pytest.raises(SchemaError, match="US_COLUMNS_DIFFER|differs from the original"):
        ir(y2, z, known=["sex", "race"], synthesized=["race"])
    z2 = [z[0].copy(), z[1]]
    z2[0].loc[1, "race"] = np.nan
    res = ir(y, z2, known=["sex", "race"], synthesized=["race"],
             aggregation="per_dataset")
    assert (res.records["c"] >= 0).all()


def test_error_us_columns_differ_and_compat_conflicts(toy5):
    y, z = toy5
    z2 = [z[0].assign(sex=["F", "M", "M", "F", "F"]), z[1]]
    with pytest.raises(SchemaError, match="US_COLUMNS_DIFFER|differs from the original"):
        ir(y, z2, known=["sex", "race"], synthesized=["race"])
    with pytest.raises(ValidationError, match="window='open'"):
        ir(y, z, known=["sex", "race"], synthesized=["race"],
           match=MatchSpec(window="closed", compat="IdentificationRiskCalculation"))
    with pytest.raises(ValidationError, match="aggregation='per_dataset'"):
        ir(y, z, known=["sex", "race"], synthesized=["race"], aggregation="pooled",
           match=MatchSpec(compat="IdentificationRiskCalculation"))
    with pytest.raises(ValidationError, match="strategy"):
        ir(y, z, known=["sex", "race"], synthesized=["race"],
           match=MatchSpec(strategy=("threshold", 1.5)))


def test_absent_category_no_match_then_fallback(toy5):
    y, z = toy5
    tg = pd.DataFrame({"sex": ["M"], "race": ["A"], "id": [7]})
    res = ir(y, z, known=["sex", "race"], synthesized=["race"],
             population=PopulationSpec(targets=tg, target_id="id"))
    np.testing.assert_allclose(res.prob.toarray()[0], [1 / 3, 1 / 3, 1 / 3, 0, 0])
    res2 = ir(y, z, known=["sex", "race"], synthesized=["race"],
              population=PopulationSpec(targets=tg, target_id="id"),
              match=MatchSpec(fallback="none"))
    assert res2.c[0] == 0 and "NO_MATCH" in res2.warnings


# ----------------------------------------------------------------------------------------------
# numba kernel vs pure numpy path
# ----------------------------------------------------------------------------------------------
def _random_problem(seed, n=300, m=3):
    rng = np.random.default_rng(seed)
    y = pd.DataFrame({
        "g": rng.integers(0, 3, n), "h": rng.integers(0, 2, n),
        "a": rng.integers(20, 60, n), "x": rng.lognormal(3, 0.5, n),
        "w": rng.normal(0, 5, n),
    })
    zs = [y.assign(h=rng.integers(0, 2, n), x=y.x * rng.lognormal(0, 0.1, n),
                   w=y.w + rng.normal(0, 1, n)) for _ in range(m)]
    return y, zs


@pytest.mark.parametrize("shape", ["rectangle", "ellipse"])
@pytest.mark.parametrize("window", ["closed", "open"])
def test_numba_and_numpy_paths_agree(monkeypatch, shape, window):
    if not engine._HAVE_NUMBA:
        pytest.skip("numba not importable")
    y, zs = _random_problem(1)
    kw = dict(categorical=["g", "h"], match=MatchSpec(radius={"a": 0.1, "x": 0.1, "w": 0.3},
                                                      window=window, shape=shape))
    outs = []
    for use in (True, False):
        monkeypatch.setattr(engine, "USE_NUMBA", use)
        monkeypatch.setattr(index, "_CHUNK_CANDIDATES", 997)  # exercise chunking: compiled
        monkeypatch.setattr(index, "_NUMPY_CHUNK_CANDIDATES", 997)  # and numpy
        pooled = ir(y, zs, known=["g", "a", "h", "x", "w"], synthesized=["h", "x", "w"], **kw)
        per = ir(y, zs, known=["g", "a", "h", "x", "w"], synthesized=["h", "x", "w"],
                 aggregation="per_dataset", **kw)
        outs.append((pooled, per))
    (p1, d1), (p2, d2) = outs
    assert (p1.prob != p2.prob).nnz == 0
    np.testing.assert_array_equal(p1.c, p2.c)
    np.testing.assert_array_equal(d1.c, d2.c)
    np.testing.assert_array_equal(d1.T, d2.T)
    assert d1.c.sum() > 0


def test_matches_brute_force():
    """Every match set equals an O(n^2) brute-force scan."""
    y, zs = _random_problem(2, n=120, m=2)
    res = ir(y, zs, known=["g", "a", "h", "x", "w"], synthesized=["h", "x", "w"],
             categorical=["g", "h"],
             match=MatchSpec(radius={"a": 0.1, "x": 0.1, "w": 0.3}), aggregation="per_dataset")
    for l, z in enumerate(zs):
        for i in range(len(y)):
            t = y.iloc[i]
            ok = ((z.g == t.g) & (z.h == t.h) & ((z.a - t.a).abs() <= 0.1 * abs(t.a))
                  & (z.x >= t.x - 0.1 * t.x) & (z.x <= t.x + 0.1 * t.x)
                  & (z.w >= t.w - 0.3 * abs(t.w)) & (z.w <= t.w + 0.3 * abs(t.w)))
            assert res.c[i, l] == ok.sum()
            assert res.T[i, l] == (ok.iloc[i] and ok.sum() > 0)


# ----------------------------------------------------------------------------------------------
# properties
# ----------------------------------------------------------------------------------------------
@st.composite
def problems(draw):
    n = draw(st.integers(2, 25))
    m = draw(st.integers(1, 3))
    seed = draw(st.integers(0, 2**31 - 1))
    rng = np.random.default_rng(seed)
    y = pd.DataFrame({"g": rng.integers(0, 2, n), "x": rng.integers(1, 6, n) * 10.0})
    zs = [y.assign(x=y.x + rng.integers(-2, 3, n) * 5.0) for _ in range(m)]
    r = draw(st.sampled_from([0.0, 0.1, 0.3, 0.6]))
    return y, zs, r


@settings(deadline=None)
@given(problems())
def test_property_ir_bounds_and_unique_identity(prob):
    y, zs, r = prob
    for agg in ("pooled", "per_dataset"):
        res = ir(y, zs, known=["g", "x"], synthesized=["x"], categorical=["g"],
                 match=MatchSpec(radius=r), aggregation=agg)
        assert np.all((res.IR >= 0) & (res.IR <= 1))
        assert np.array_equal(res.K + res.W, (res.c == 1).astype(int))
        fm = file_measures(res.c, res.T)
        s = res.file
        U = s["n_unique"]
        if agg == "pooled" and U > 0:
            assert s["true_match_rate_unique"] + s["false_match_rate"] == pytest.approx(1.0)
        assert np.all(np.asarray(fm["n_unique"]) == (res.c == 1).sum(axis=0))


@settings(deadline=None)
@given(problems(), st.integers(0, 2**31 - 1))
def test_property_shuffle_invariance(prob, seed):
    y, zs, r = prob
    perm = np.random.default_rng(seed).permutation(len(y))
    idx = pd.Index([f"id{i}" for i in range(len(y))])
    y1 = y.set_axis(idx)
    z1 = [z.set_axis(idx) for z in zs]
    y2 = y1.iloc[perm]
    z2 = [z.iloc[perm] for z in z1]
    for agg in ("pooled", "per_dataset"):
        a = ir(y1, z1, known=["g", "x"], synthesized=["x"], categorical=["g"],
               match=MatchSpec(radius=r), aggregation=agg).records
        b = ir(y2, z2, known=["g", "x"], synthesized=["x"], categorical=["g"],
               match=MatchSpec(radius=r), aggregation=agg).records
        keys = ["target"] + (["dataset"] if agg == "per_dataset" else [])
        a = a.sort_values(keys).reset_index(drop=True)
        b = b.sort_values(keys).reset_index(drop=True)
        pd.testing.assert_frame_equal(a, b)


@settings(deadline=None)
@given(problems())
def test_property_pooled_equals_per_dataset_for_m1(prob):
    y, zs, r = prob
    z = zs[:1]
    a = ir(y, z, known=["g", "x"], synthesized=["x"], categorical=["g"],
           match=MatchSpec(radius=r, fallback="none"),
           aggregation="pooled")
    b = ir(y, z, known=["g", "x"], synthesized=["x"], categorical=["g"], match=MatchSpec(radius=r),
           aggregation="per_dataset")
    np.testing.assert_array_equal(a.c, b.c[:, 0])
    np.testing.assert_array_equal(a.T, b.T[:, 0])
    np.testing.assert_allclose(a.IR, b.IR[:, 0])
    for k in ("expected_match_risk", "n_unique", "true_match_rate_targets"):
        assert a.file[k] == pytest.approx(b.file[k])


@settings(deadline=None)
@given(problems())
def test_property_T_non_decreasing_in_radius_closed(prob):
    y, zs, _ = prob
    prev = None
    for r in (0.0, 0.05, 0.1, 0.2, 0.5, 1.0):
        res = ir(y, zs, known=["g", "x"], synthesized=["x"], categorical=["g"],
                 match=MatchSpec(radius=r), aggregation="per_dataset")
        if prev is not None:
            assert np.all(res.T >= prev)
        prev = res.T


def test_result_serialises(toy5):
    import json

    y, z = toy5
    res = ir(y, z, known=["sex", "race"], synthesized=["race"],
             aggregation="per_dataset")
    d = res.to_dict(records=True)
    json.dumps(d, allow_nan=False)
    assert d["summary"]["per_dataset"]["false_match_rate"][1] is None


# ----------------------------------------------------------------------------------------------
# inputs: replicates, SyntheticData, memory guard, expected inverse for f = 0
# ----------------------------------------------------------------------------------------------
def test_user_replicates_equal_released_datasets():
    y, zs = _random_problem(4, n=80, m=2)
    kw = dict(categorical=["g", "h"], match=MatchSpec(radius={"a": 0.1, "x": 0.1, "w": 0.3}))
    a = ir(y, zs, known=["g", "a", "h", "x", "w"], synthesized=["h", "x", "w"], **kw)
    reps = [z[["h", "x", "w"]].to_numpy() for z in zs]
    b = ir(y, None, known=["g", "a", "h", "x", "w"], synthesized=["h", "x", "w"],
           replicates=reps, **kw)
    assert (a.prob != b.prob).nnz == 0
    assert b.settings["replicates"] == "user replicates"
    with pytest.raises(ValidationError, match="shape"):
        ir(y, None, known=["g", "a", "h", "x", "w"], synthesized=["h", "x", "w"],
           replicates=[reps[0][:, :2]], **kw)


def test_synthetic_data_container(toy5):
    from bayes_risk.data.synthetic import SyntheticData

    y, z = toy5
    a = ir(y, z, known=["sex", "race"], synthesized=["race"])
    b = ir(y, SyntheticData(z, method="test"), known=["sex", "race"],
           synthesized=["race"])
    np.testing.assert_array_equal(a.prob.toarray(), b.prob.toarray())


def test_pooled_memory_guard(monkeypatch, toy5):
    y, z = toy5
    monkeypatch.setattr(engine, "MAX_NNZ", 3)
    with pytest.raises(ValidationError, match="per_dataset"):
        ir(y, z, known=["sex", "race"], synthesized=["race"])


def test_expected_inverse_empty_cell():
    nu = 1.5
    x = np.arange(1, 200)
    from scipy import stats

    want = np.sum(stats.poisson.pmf(x, nu) / x) / (1 - np.exp(-nu))
    assert expected_inverse(np.array([0]), np.array([nu]))[0] == pytest.approx(want, rel=1e-12)
    assert expected_inverse(np.array([0]), np.array([0.0]))[0] == 1.0


def test_large_key_space_path_matches_brute_force():
    """More exact-key cells than 4n: groups are found through a sorted table of the keys."""
    rng = np.random.default_rng(9)
    n = 150
    y = pd.DataFrame({"a": rng.integers(0, 60, n), "b": rng.integers(0, 60, n),
                      "c": rng.integers(0, 30, n), "x": rng.uniform(1, 2, n)})
    y.loc[:40, ["a", "b", "c"]] = y.loc[0, ["a", "b", "c"]].to_numpy()  # a populated cell
    z = y.assign(x=y.x + rng.normal(0, 0.05, n))
    res = ir(y, [z], known=["a", "b", "c", "x"], synthesized=["x"],
             categorical=["a", "b", "c"], match=MatchSpec(radius=0.05),
             aggregation="per_dataset")
    for i in range(n):
        t = y.iloc[i]
        ok = ((z.a == t.a) & (z.b == t.b) & (z.c == t.c) & (z.x >= t.x - 0.05 * t.x)
              & (z.x <= t.x + 0.05 * t.x))
        assert res.c[i, 0] == ok.sum()
    assert res.c[:41, 0].max() > 1


def test_default_fallback_without_known_unsynthesized(toy5):
    y, z = toy5
    res = ir(y, z, known=["sex", "race"], synthesized=["sex", "race"])
    assert res.settings["fallback"] == "none"
    explicit = ir(y, z, known=["sex", "race"], synthesized=["sex", "race"],
                  match=MatchSpec(fallback="unsynthesized"))
    assert explicit.settings["fallback"] == "unsynthesized"
    # with no unsynthesized key the fallback set is the whole file
    empty_rep = (explicit.prob.toarray() > 0).sum(axis=1)
    assert empty_rep.max() == len(y)


def test_toy5_per_dataset_with_fallback(toy5):
    y, z = toy5
    res = ir(y, z, known=["sex", "race"], synthesized=["race"],
             aggregation="per_dataset",
             match=MatchSpec(fallback="unsynthesized"))
    np.testing.assert_allclose(res.IR[:, 0], [1, 0, 0.5, 0.5, 0.5], **TOL)
    np.testing.assert_allclose(res.IR[:, 1], [1 / 3, 1 / 3, 1 / 3, 0.5, 0.5], **TOL)
    np.testing.assert_array_equal(res.c[:, 1], [3, 3, 3, 2, 2])


# ----------------------------------------------------------------------------------------------
# staged engine: partitions through an executor, compat name
# ----------------------------------------------------------------------------------------------
class _SmallPartitions:
    """An in-process executor that asks for tiny partitions (and records what it was given)."""

    def __init__(self, size):
        self.partition_size = size
        self.calls = []

    def map(self, fn, shared, parts, *, progressbar=True, description=""):
        self.calls.append((shared, len(parts)))
        return [fn(shared, p) for p in parts]


@pytest.mark.parametrize("extra", [
    {}, {"aggregation": "per_dataset"},
    {"match": MatchSpec(radius={"a": 0.1, "x": 0.1}, fallback="none")},
    {"population": PopulationSpec(membership="unknown", counts="loglinear_synthetic",
                                  sampling_fraction=0.5),
                                  "match": MatchSpec(strategy="not_if_max")},
], ids=["pooled-fallback", "per-dataset", "pooled", "unknown-loglinear"])
def test_partitioned_executor_gives_identical_results(extra):
    """Every per-target quantity depends on the target and the record pool only: any
    partition of the targets gives the result of one run, bit for bit."""
    y, zs = _random_problem(4, n=120)
    kw = dict(categorical=["g", "h"], match=MatchSpec(radius={"a": 0.1, "x": 0.1}))
    kw.update(extra)
    kus, ks = (["g"], ["h"]) if "population" in extra else (["g", "a"], ["h", "x"])
    ref = ir(y, zs, known=[*kus, *ks], synthesized=ks, **kw)
    ex = _SmallPartitions(7)
    res = ir(y, zs, known=[*kus, *ks], synthesized=ks, executor=ex, **kw)
    assert ex.calls and ex.calls[0][1] == -(-len(y) // 7)
    assert ex.calls[0][0].n_targets == 0  # the record pool is shipped without the targets
    pd.testing.assert_frame_equal(res.target_table(), ref.target_table())
    assert res.settings == ref.settings and res.warnings == ref.warnings
    np.testing.assert_equal(res.file, ref.file)
    if ref.prob is not None:
        assert (res.prob != ref.prob).nnz == 0
        np.testing.assert_array_equal(res.pooled.fallback_value, ref.pooled.fallback_value)


@pytest.mark.filterwarnings("ignore:ORIGINAL_UNCONFIRMED")  # h is drawn at random
def test_radius_sweep_shares_the_pool_once():
    y, zs = _random_problem(5, n=80)
    kw = dict(categorical=["g", "h"], progressbar=False)
    ref = radius_sweep(y, zs, known=["g", "a", "h", "x"], synthesized=["h", "x"],
                       radii=[0.05, 0.1, 0.2], **kw)
    ex = _SmallPartitions(11)
    res = radius_sweep(y, zs, known=["g", "a", "h", "x"], synthesized=["h", "x"],
                       radii=[0.05, 0.1, 0.2], executor=ex, **kw)
    np.testing.assert_array_equal(res.risk, ref.risk)
    # the three radii's partitions (8 of 11 targets each) in one map (GRID_POINTS_PER_MAP)
    assert [parts for _, parts in ex.calls] == [3 * -(-len(y) // 11)]
    assert len({id(shared) for shared, _ in ex.calls}) == 1


def test_compat_named_after_the_r_package(toy5):
    y, z = toy5
    res = ir(y, z, known=["sex", "race"], synthesized=["race"],
             match=MatchSpec(compat="IdentificationRiskCalculation"))
    assert res.settings["compat"] == "IdentificationRiskCalculation"
    for former in ("hornby-hu", "hornby"):  # no pre-release spelling is accepted
        with pytest.raises(ValidationError, match="IdentificationRiskCalculation"):
            ir(y, z, known=["sex", "race"], synthesized=["race"], match=MatchSpec(compat=former))


def test_bad_executor(toy5):
    y, z = toy5
    with pytest.raises(ValidationError, match="executor must be"):
        ir(y, z, known=["sex", "race"], synthesized=["race"], executor="dask")


def test_per_dataset_engine_matches_targets_in_key_order(monkeypatch):
    # issue 69: the per-dataset engine hands the index its targets chunk by chunk in key order
    # (the scan then walks the key groups in memory order: 4x fewer cache misses at 10^6
    # records); each count and own-record flag still lands on its target's row, as the numpy
    # engine's (the targets below are not in key order, and span several chunks)
    rng = np.random.default_rng(5)
    n = 60
    y = pd.DataFrame({"g": rng.integers(0, 4, n), "h": rng.integers(0, 3, n),
                      "x": rng.uniform(10, 20, n)})
    zs = [y.assign(x=y["x"] + rng.normal(0, 0.4, n)) for _ in range(3)]
    kw = dict(known=["g", "h", "x"], synthesized=["x"], categorical=["g", "h"],
              match=MatchSpec(radius={"x": 0.03}), aggregation="per_dataset",
              progressbar=False)
    seen = []
    real = index.NumbaIndex.match

    def spy(self, tgt_key, *args, **kwargs):
        seen.append(np.array(tgt_key))
        return real(self, tgt_key, *args, **kwargs)

    monkeypatch.setattr(engine, "_CHUNK_TARGETS", 7)
    monkeypatch.setattr(index.NumbaIndex, "match", spy)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)  # NO_MATCH: a few targets match nothing
        monkeypatch.setattr(engine, "USE_NUMBA", True)
        compiled = identification_risk(y, zs, **kw)
        monkeypatch.setattr(engine, "USE_NUMBA", False)
        plain = identification_risk(y, zs, **kw)
    assert len(seen) == 3 * 9 and sum(len(k) for k in seen) == 3 * n
    assert all(np.all(np.diff(k) >= 0) for k in seen)
    pd.testing.assert_frame_equal(compiled.records, plain.records)
    assert compiled.records["c"].gt(1).any() and compiled.records["T"].any()
