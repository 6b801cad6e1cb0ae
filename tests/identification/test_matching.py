"""Mahalanobis-distance matching of continuous known columns (Hu 2019 §4.2.2).

A released record matches a target when ``(x − t)ᵀ S⁻¹ (x − t) ≤ r²`` (closed window; ``< r²``
open), ``S`` the covariance of the original's values of the radius columns.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from bayes_risk import MatchSpec, identification_risk, radius_sweep
from bayes_risk.exceptions import ValidationError
from bayes_risk.identification.matching import mahalanobis_whitening

# Worked example. The original's (x1, x2) are L·z + 10 with z the centred 2² design plus the
# centre, whose sample covariance (divisor 4) is I, and L = [[2, 0], [1, 1]]: S = L Lᵀ =
# [[4, 2], [2, 2]], S⁻¹ = [[0.5, −0.5], [−0.5, 1]].
ORIG = pd.DataFrame({"x1": [8.0, 12.0, 8.0, 12.0, 10.0], "x2": [8.0, 10.0, 10.0, 12.0, 10.0]})
# The release, seen from target 4 (t = (10, 10)):
#   record 0: Δ = (2, 1)      d² = 0.5·4 − 2·0.5·2 + 1 = 1        → d = 1
#   record 1: Δ = (2, −1)     d² = 2 + 2 + 1 = 5                    → d = √5 ≈ 2.236
#   records 2, 3 far away;    record 4: Δ = (0.5, 0.5), d² = 0.125 → d ≈ 0.354
# Records 0 and 1 are equally far from t in Euclidean distance (√5); only the Mahalanobis
# distance tells that record 0 lies along the correlation of x1 and x2.
SYN = pd.DataFrame({"x1": [12.0, 12.0, 40.0, -20.0, 10.5], "x2": [11.0, 9.0, 40.0, -20.0, 10.5]})


def _run(radius, shape="mahalanobis", window=None, fallback=None, **kw):
    return identification_risk(ORIG, [SYN], known=["x1", "x2"], synthesized=["x1", "x2"],
                               match=MatchSpec(radius=radius, shape=shape, window=window,
                                               fallback=fallback),
                               progressbar=False, **kw)


def test_whitening_worked_example():
    cov, w = mahalanobis_whitening(ORIG.to_numpy(), ["x1", "x2"])
    np.testing.assert_allclose(cov, [[4.0, 2.0], [2.0, 2.0]], rtol=1e-12)
    np.testing.assert_allclose(w.T @ w, [[0.5, -0.5], [-0.5, 1.0]], rtol=1e-12, atol=1e-15)
    assert w[0, 1] == 0.0  # lower triangular: first coordinate uses the first column only
    d = (SYN.to_numpy() - [10.0, 10.0]) @ w.T
    np.testing.assert_allclose((d**2).sum(axis=1)[[0, 1, 4]], [1.0, 5.0, 0.125], rtol=1e-12)


@pytest.mark.filterwarnings("ignore::bayes_risk.exceptions.DataWarning")
@pytest.mark.parametrize(
    "radius, window, c4, ir4",
    [
        (0.3, "closed", 0, 0.0),    # nothing within 0.3 (own record at 0.354)
        (0.5, "closed", 1, 1.0),    # own record only
        (1.0, "closed", 2, 0.5),    # record 0 on the boundary d = 1 is inside a closed window
        (1.0, "open", 1, 1.0),      # ... and outside an open one
        (2.3, "closed", 3, 1 / 3),  # record 1 (d = 2.236) joins
    ],
)
def test_worked_matches_of_target_4(radius, window, c4, ir4):
    rec = _run(radius, window=window, fallback="none").records.set_index("target")
    assert rec.loc[4, "c"] == c4
    assert rec.loc[4, "IR"] == pytest.approx(ir4, rel=1e-12)


@pytest.mark.filterwarnings("ignore::bayes_risk.exceptions.DataWarning")
def test_differs_from_ellipse_with_the_same_scale():
    # an axis-aligned ellipse with the same marginal scales (R_j = r·sd_j) treats records 0 and 1
    # alike: (2/2)² + (1/√2)² = 1.5 for both, so with r = 1.3 (1.69) it takes both
    sd = np.sqrt([4.0, 2.0])
    ell = identification_risk(ORIG, [SYN], known=["x1", "x2"], synthesized=["x1", "x2"],
                              match=MatchSpec(radius={"x1": 1.3 * sd[0],
                              "x2": 1.3 * sd[1]}, radius_type="absolute", shape="ellipse",
                              fallback="none"), progressbar=False).records.set_index("target")
    mah = _run(1.3, fallback="none").records.set_index("target")
    assert ell.loc[4, "c"] == 3 and mah.loc[4, "c"] == 2


@pytest.mark.filterwarnings("ignore::bayes_risk.exceptions.DataWarning")
def test_settings_report_the_covariance():
    res = _run(1.0)
    rule = res.settings["match_rule"]
    assert rule["shape"] == "mahalanobis" and rule["radius_type"] == "absolute"
    np.testing.assert_allclose(res.settings["mahalanobis_covariance"], [[4.0, 2.0], [2.0, 2.0]],
                               rtol=1e-12)
    json.dumps(res.to_dict())  # JSON-ready


def _brute(orig, syn, cols_us, cols_s, cat, r):
    """Matches of every target (original record) by the Mahalanobis distance, computed directly
    with S⁻¹ (no whitening)."""
    cols = cols_us + cols_s
    x0 = orig[cols].to_numpy(float)
    S_inv = np.linalg.inv(np.cov(x0, rowvar=False, ddof=1))
    xs = np.column_stack([orig[cols_us].to_numpy(float), syn[cols_s].to_numpy(float)])
    D = x0[:, None, :] - xs[None, :, :]
    d2 = np.einsum("ijk,kl,ijl->ij", D, S_inv, D)
    M = d2 <= r * r * (1 + 1e-12)
    if cat:
        k = orig[cat].astype(str).agg("|".join, axis=1).to_numpy()
        M &= k[:, None] == k[None, :]
    return M


def _data(seed, n=40, rho=0.8):
    rng = np.random.default_rng(seed)
    z = rng.multivariate_normal([0, 0, 0], [[1, rho, 0.3], [rho, 1, 0.2], [0.3, 0.2, 1]], n)
    orig = pd.DataFrame({"age": 40 + 10 * z[:, 0], "inc": 5e4 + 2e4 * z[:, 1],
                         "exp": 1e4 + 3e3 * z[:, 2], "g": rng.integers(0, 2, n)})
    syn = orig.assign(inc=orig["inc"] + rng.normal(0, 8e3, n),
                      exp=orig["exp"] + rng.normal(0, 1e3, n))
    return orig, syn


@pytest.mark.filterwarnings("ignore::bayes_risk.exceptions.DataWarning")
@pytest.mark.parametrize("seed", [0, 1])
def test_against_brute_force_with_unsynthesized_columns(seed):
    # an unsynthesized continuous column and two synthesized ones, plus a categorical key
    orig, syn = _data(seed)
    for r in (0.5, 1.0, 2.0):
        res = identification_risk(orig, [syn], known=["age", "g", "inc", "exp"],
                                  synthesized=["inc", "exp"], categorical=["g"],
                                  match=MatchSpec(radius=r, shape="mahalanobis", fallback="none"),
                                  progressbar=False)
        M = _brute(orig, syn, ["age"], ["inc", "exp"], ["g"], r)
        np.testing.assert_array_equal(res.records["c"].to_numpy(), M.sum(axis=1))
        np.testing.assert_array_equal(res.records["T"].to_numpy().astype(bool), np.diag(M))


@pytest.mark.filterwarnings("ignore::bayes_risk.exceptions.DataWarning")
def test_fallback_uses_the_marginal_distance_of_the_unsynthesized_columns():
    orig, syn = _data(3)
    syn = syn.assign(inc=syn["inc"] + 1e6)  # nobody matches on the synthesized columns
    res = identification_risk(orig, [syn], known=["age", "inc", "exp"],
                              synthesized=["inc", "exp"],
                              match=MatchSpec(radius=0.3, shape="mahalanobis",
                                              fallback="unsynthesized"), progressbar=False)
    a = orig["age"].to_numpy()
    M = np.abs(a[:, None] - a[None, :]) / a.std(ddof=1) <= 0.3 * (1 + 1e-12)
    np.testing.assert_array_equal(res.records["c"].to_numpy(), M.sum(axis=1))


@given(seed=st.integers(0, 2**16), r1=st.floats(0.0, 3.0), r2=st.floats(0.0, 3.0),
       scale=st.floats(1e-3, 1e3))
@pytest.mark.filterwarnings("ignore::bayes_risk.exceptions.DataWarning")
def test_properties_monotone_row_order_and_units(seed, r1, r2, scale):
    orig, syn = _data(seed, n=25)
    lo, hi = sorted((r1, r2))

    def run(o, s, r):
        return identification_risk(o, [s], known=["age", "inc", "exp"],
                                   synthesized=["inc", "exp"],
                                   match=MatchSpec(radius=r, shape="mahalanobis",
                                                   fallback="none"), progressbar=False)

    a, b = run(orig, syn, lo), run(orig, syn, hi)
    # nested windows: every target matches at least as many records with the larger radius
    assert (b.records["c"].to_numpy() >= a.records["c"].to_numpy()).all()
    # the order of the rows does not matter (same records, same covariance)
    perm = np.random.default_rng(seed).permutation(len(orig))
    p = run(orig.iloc[perm].reset_index(drop=True), syn.iloc[perm].reset_index(drop=True), hi)
    np.testing.assert_array_equal(p.records["c"].to_numpy(), b.records["c"].to_numpy()[perm])
    assert p.file["expected_match_risk"] == pytest.approx(
        b.file["expected_match_risk"], rel=1e-12)
    # the distance has no units: rescaling a column changes nothing (away from the boundary)
    o2, s2 = orig.assign(inc=orig["inc"] * scale), syn.assign(inc=syn["inc"] * scale)
    M = _brute(orig, syn, ["age"], ["inc", "exp"], [], hi)
    M2 = _brute(o2, s2, ["age"], ["inc", "exp"], [], hi)
    if np.array_equal(M, M2):
        np.testing.assert_array_equal(run(o2, s2, hi).records["c"].to_numpy(), M.sum(axis=1))


@pytest.mark.filterwarnings("ignore::bayes_risk.exceptions.DataWarning")
def test_radius_sweep_common_grid():
    orig, syn = _data(4)
    sw = radius_sweep(orig, [syn], known=["age", "inc", "exp"], synthesized=["inc", "exp"],
                      radii=[0.25, 0.5, 1.0, 2.0],
                      match=MatchSpec(shape="mahalanobis", fallback="none"),
                      aggregation="per_dataset",
                      progressbar=False)
    for b, r in enumerate(sw.radii):
        M = _brute(orig, syn, ["age"], ["inc", "exp"], [], r)
        want = np.sum(np.where(np.diag(M), 1.0 / np.maximum(M.sum(axis=1), 1), 0.0))
        assert sw.risk[b, 0] == pytest.approx(want, rel=1e-12)
    with pytest.raises(ValidationError, match="one radius"):
        radius_sweep(orig, [syn], known=["age", "inc", "exp"], synthesized=["inc", "exp"],
                     radii=[0.5, 1.0], columns=["inc"],
                     match=MatchSpec(shape="mahalanobis"), progressbar=False)


def test_errors():
    orig, syn = _data(5)
    base = dict(progressbar=False)
    with pytest.raises(ValidationError, match="one radius"):
        identification_risk(orig, [syn], known=["age", "inc"], synthesized=["inc"],
                            match=MatchSpec(radius={"age": 1, "inc": 2}, shape="mahalanobis"),
                            **base)
    with pytest.raises(ValidationError, match="quantile_sd"):
        identification_risk(orig, [syn], known=["age", "inc"], synthesized=["inc"],
                            match=MatchSpec(radius=1, radius_type="quantile_sd",
                                            shape="mahalanobis"),
                            **base)
    with pytest.raises(ValidationError, match=r"\['k'\] are constant"):
        identification_risk(orig.assign(k=1.0), [syn.assign(k=1.0)], known=["age", "k"],
                            synthesized=["k"], match=MatchSpec(radius=1, shape="mahalanobis"),
                            **base)
    with pytest.raises(ValidationError, match="singular"):
        identification_risk(orig.assign(k=2 * orig["age"]), [syn.assign(k=2 * syn["age"])],
                            known=["age", "k", "inc"], synthesized=["inc"],
                            match=MatchSpec(radius=1, shape="mahalanobis"), **base)
    with pytest.raises(ValidationError, match="r_min"):
        identification_risk(orig, [syn], known=["age", "inc"], synthesized=["inc"],
                            match=MatchSpec(radius=1, r_min=1, shape="mahalanobis"), **base)
    with pytest.raises(ValidationError, match="compat"):
        identification_risk(orig, [syn], known=["age", "inc"], synthesized=["inc"],
                            match=MatchSpec(radius=[0.1, 0.1], shape="mahalanobis",
                                            compat="IdentificationRiskCalculation"),
                                            progressbar=False)
    with pytest.raises(ValidationError, match="more original records"):
        identification_risk(orig.iloc[:2], [syn.iloc[:2]], known=["age", "inc", "exp"],
                            synthesized=["inc", "exp"],
                            match=MatchSpec(radius=1, shape="mahalanobis"),
                            **base)


@pytest.mark.filterwarnings("ignore::bayes_risk.exceptions.DataWarning")
def test_cli_mahalanobis(tmp_path, monkeypatch):
    from bayes_risk.cli import main

    monkeypatch.chdir(tmp_path)  # outside the repository: the installed package is used
    orig, syn = _data(6)
    orig.to_csv("orig.csv", index=False)
    syn.to_csv("syn1.csv", index=False)
    rc = main(["identification", "orig.csv", "syn1.csv", "--known-unsynthesized", "age", "g",
               "--known-synthesized", "inc", "exp", "--categorical", "g", "--radius", "1.5",
               "--shape", "mahalanobis", "--fallback", "none", "--quiet", "--out", "out"])
    assert rc == 0
    summ = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summ["settings"]["match_rule"]["shape"] == "mahalanobis"
    cov = np.cov(orig[["age", "inc", "exp"]].to_numpy(), rowvar=False)
    np.testing.assert_allclose(summ["settings"]["mahalanobis_covariance"], cov, rtol=1e-10)
    M = _brute(orig, syn, ["age"], ["inc", "exp"], ["g"], 1.5)
    want = np.sum(np.where(np.diag(M), 1.0 / np.maximum(M.sum(axis=1), 1), 0.0))
    assert summ["summary"]["expected_match_risk"] == pytest.approx(want, rel=1e-12)
