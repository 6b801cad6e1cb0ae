"""Reproduce IdentificationRiskCalculation (R, commit 9a7c72e) exactly in compat mode.

Reference outputs: ../shared/reference/identification/ (manifest.json describes every call).
c, T, K, F (= W) are compared element by element; the Risk CSVs hold 15 significant digits, so
IR is compared exactly against T/c of the reference and, as text, to the CSV's 15 digits; the
summary CSVs (17 digits) are compared exactly.
"""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest
from _shared import shared_path

from bayes_risk import MatchSpec
from bayes_risk.identification.api import identification_risk

pytestmark = pytest.mark.reference

RUNS = ["scenario1_r0p025", "scenario1_r0p1", "scenario3_r0p1", "scenario3_r0p1_euclid"]
_CACHE: dict[str, list[pd.DataFrame]] = {}


def _manifest():
    return json.loads(shared_path("reference", "identification", "manifest.json").read_text())


def _synthetic(files):
    key = files[0]
    if key not in _CACHE:
        base = shared_path("reference", "identification")
        _CACHE[key] = [pd.read_csv(base / f) for f in files]
    return _CACHE[key]


@pytest.mark.parametrize("run_id", RUNS)
def test_reference_run_exact(run_id):
    man = _manifest()
    run = next(r for r in man["runs"] if r["id"] == run_id)
    ce = pd.read_csv(shared_path("data", "CEdata.csv"))
    syn = _synthetic(run["synthetic_files"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = identification_risk(
            ce, syn, known=[*[c for c in run["known"] if c not in run["syn"]], *run["syn"]],
            synthesized=run["syn"],
            categorical=["Urban", "Marital", "Tenure"],
            match=MatchSpec(
                radius=run["r"],
                radius_type="percentage" if run["percentage"] else "absolute",
                shape="legacy_hh_euclid" if run["euclideanDist"] else "rectangle",
                compat="IdentificationRiskCalculation"), progressbar=False,
        )
    base = shared_path("reference", "identification", run["output_dir"])

    def ref(name):
        df = pd.read_csv(base / f"{run_id}_{name}.csv")
        assert (df["record"].to_numpy() == np.arange(1, len(df) + 1)).all()
        return df.iloc[:, 1:].to_numpy()

    np.testing.assert_array_equal(res.c, ref("c"))
    np.testing.assert_array_equal(res.T, ref("T"))
    np.testing.assert_array_equal(res.K, ref("K"))
    np.testing.assert_array_equal(res.W, ref("F"))
    c_ref, T_ref = ref("c"), ref("T")
    with np.errstate(divide="ignore", invalid="ignore"):
        ir_ref = np.where(c_ref != 0, T_ref / c_ref, 0.0)
    np.testing.assert_array_equal(res.IR, ir_ref)
    risk_csv = ref("Risk")
    as15 = np.vectorize(lambda v: float(f"{v:.15g}"))(res.IR)
    np.testing.assert_array_equal(as15, risk_csv)

    s = pd.read_csv(base / f"{run_id}_summary.csv")
    pdx = res.per_dataset
    np.testing.assert_array_equal(pdx["expected_match_risk"], s["exp_risk"].to_numpy())
    np.testing.assert_array_equal(pdx["true_match_rate_targets"], s["true_rate"].to_numpy())
    np.testing.assert_array_equal(pdx["false_match_rate"], s["false_rate"].to_numpy())
    np.testing.assert_array_equal(pdx["n_unique"], s["s_unique_matches"].to_numpy())
    np.testing.assert_array_equal(pdx["true_match_risk"], s["K_true_unique"].to_numpy())
    np.testing.assert_array_equal(pdx["n_unique"] - pdx["true_match_risk"],
                                  s["F_false_unique"].to_numpy())
    summ = res.file
    assert summ["expected_match_risk"] == pytest.approx(run["exp_risk_mean"], rel=1e-12)
    assert summ["true_match_rate_targets"] == pytest.approx(run["true_rate_mean"], rel=1e-12)
    assert summ["false_match_rate"] == pytest.approx(run["false_rate_mean"], rel=1e-12)


def test_reference_radius_vector_column_order():
    """The package assigns the radius vector in data-frame column order (Age, Expenditure,
    Income), whatever the order of the known/syn arguments (SPEC §4.3(4))."""
    man = _manifest()
    run = next(r for r in man["runs"] if r["id"] == "scenario3_r0p1")
    ce = pd.read_csv(shared_path("data", "CEdata.csv"))
    syn = _synthetic(run["synthetic_files"])[:2]
    kw = dict(categorical=["Urban", "Marital", "Tenure"], progressbar=False)
    compat = "IdentificationRiskCalculation"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = identification_risk(ce, syn, known=["Age", "Urban", "Marital", "Income", "Expenditure"],
                                synthesized=["Income", "Expenditure"],
                                match=MatchSpec(radius=[0.1, 0.2, 0.3], compat=compat), **kw)
        b = identification_risk(ce, syn, known=["Age", "Urban", "Marital", "Expenditure", "Income"],
                                synthesized=["Expenditure", "Income"],
                                match=MatchSpec(radius={"Age": 0.1, "Expenditure": 0.2,
                                                        "Income": 0.3}, compat=compat), **kw)
    np.testing.assert_array_equal(a.c, b.c)
    assert a.settings["match_rule"]["radius"] == {"Age": 0.1, "Expenditure": 0.2, "Income": 0.3}


def test_default_mode_differs_from_package_as_documented():
    """Closed windows and |t| radius let the 449 records with Income <= 0 match."""
    man = _manifest()
    run = next(r for r in man["runs"] if r["id"] == "scenario1_r0p1")
    ce = pd.read_csv(shared_path("data", "CEdata.csv"))
    syn = _synthetic(run["synthetic_files"])[:1]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        compat = identification_risk(ce, syn, known=["Age", "Urban", "Marital", "Income"],
                                     synthesized=["Income"],
                                     categorical=["Urban", "Marital", "Tenure"],
                                     match=MatchSpec(radius=0.1,
                                                     compat="IdentificationRiskCalculation"),
                                                     progressbar=False)
        default = identification_risk(ce, syn, known=["Age", "Urban", "Marital", "Income"],
                                      synthesized=["Income"],
                                      categorical=["Urban", "Marital", "Tenure"],
                                      match=MatchSpec(radius={"Age": 0.1, "Income": 0.1}),
                                      aggregation="per_dataset", progressbar=False)
    nonpos = (ce["Income"] <= 0).to_numpy()
    assert nonpos.sum() == 449
    assert (compat.c[nonpos, 0] == 0).all()
    zero_inc = (ce["Income"] == 0).to_numpy()
    assert (default.c[zero_inc & (syn[0]["Income"] == 0).to_numpy(), 0] > 0).all()
    assert "LEGACY_NONPOSITIVE_NO_MATCH" in compat.warnings


def test_paper_sweep_definition_varies_age_too():
    """Hornby & Hu (2021) Fig. 6 sweeps one common radius over every continuous matching
    variable, the known Age included (the reference run at 2.5 % is ``r = c(0.025, 0.025)`` on
    Age and Income). On scenario 1's synthpop releases that sweep reproduces the package's
    per-dataset summaries at its two grid points and the paper's maximising radius, 2.5 %;
    holding Age at 10 % instead gives a curve that rises to the largest radius."""
    from bayes_risk import radius_sweep

    man = _manifest()
    run = next(r for r in man["runs"] if r["id"] == "scenario1_r0p025")
    assert run["r_applies_to"] == ["Age", "Income"] and run["r"] == [0.025, 0.025]
    ce = pd.read_csv(shared_path("data", "CEdata.csv"))
    syn = _synthetic(run["synthetic_files"])
    grid = (0.01, 0.025, 0.05, 0.1, 0.2, 0.3)
    kw = dict(categorical=["Urban", "Marital", "Tenure"],
              match=MatchSpec(radius={"Age": 0.1, "Income": 0.1}, radius_type="percentage",
                              compat="IdentificationRiskCalculation"),
              aggregation="per_dataset", progressbar=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        paper = radius_sweep(ce, syn, known=["Age", "Urban", "Marital", "Income"],
                             synthesized=["Income"], radii=grid,
                             columns=["Age", "Income"], **kw)
        fixed = radius_sweep(ce, syn, known=["Age", "Urban", "Marital", "Income"],
                             synthesized=["Income"], radii=grid,
                             columns=["Income"], **kw)
    for r, rid in ((0.025, "scenario1_r0p025"), (0.1, "scenario1_r0p1")):
        summ = pd.read_csv(shared_path("reference", "identification", rid,
                                       f"{rid}_summary.csv"))
        i = grid.index(r)
        assert np.array_equal(paper.risk[i], summ["exp_risk"].to_numpy())
    assert paper.r_star == 0.025 and paper.fixed_radii == {}
    assert fixed.r_star == 0.3 and fixed.fixed_radii == {"Age": 0.1}
    assert np.all(np.diff(fixed.risk_summary) > 0)
    assert "mean over the 20 datasets" in paper.definition
    text = str(fixed.summary())
    assert "radii held fixed:" in text and "Age=0.1" in text
