"""sdcMicro's risk of the original against sdcMicro 5.8.1's own outputs.

Reference outputs: ``tests/disclosure/sdcmicro_reference/`` (made by ``make_reference.R`` in that
folder with sdcMicro built from its source, R 4.2.2; see its README): ``measure_risk`` with and
without survey weights, ``indivRisk`` (approximate and exact), ``suda2`` and ``ldiversity`` on
sdcMicro's ``francdat``, and on the shared CEdata (keys Age, Urban, Marital) and SD2011 (keys
sex, agegr, placesize, region, edu, marital, some of them missing). ``compat="sdcmicro"``
reproduces every figure; the default differs only where a key or the sensitive column is
missing (it counts a missing value as a value of its own).
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from _shared import shared_path

from bayes_risk.disclosure import original_risk

pytestmark = pytest.mark.reference

REF = Path(__file__).resolve().parent / "sdcmicro_reference"
SUMMARY = json.loads((REF / "summary.json").read_text())
SD_KEYS = ["sex", "agegr", "placesize", "region", "edu", "marital"]
RTOL = 1e-9
#: the DIS score: sdcMicro computes its DIS fraction and Q in single precision
RTOL_DIS = 1e-6


def toy_weights(n: int) -> np.ndarray:
    """The weights make_reference.R gives the shared data (neither file has survey weights)."""
    return 100.0 + 37.0 * (np.arange(n) % 11)


def _run(d, keys, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return original_risk(d, keys=keys, **kw)


def _data(name: str) -> tuple[pd.DataFrame, list[str], list[str]]:
    if name == "CEdata":
        return (pd.read_csv(shared_path("data", "CEdata.csv")), ["Age", "Urban", "Marital"],
                ["Tenure", "Income"])
    sd = pd.read_csv(shared_path("data", "SD2011.csv"))
    if name == "SD2011_complete":
        sd = sd.dropna(subset=SD_KEYS).reset_index(drop=True)
    return sd, SD_KEYS, ["depress"]


def _compare(mine: pd.Series, ref: pd.Series, rtol: float = RTOL) -> None:
    np.testing.assert_allclose(mine.to_numpy(dtype=float), ref.to_numpy(dtype=float),
                               rtol=rtol, atol=1e-300, err_msg=str(ref.name))


def test_francdat():
    """sdcMicro's indivRisk / suda2 / ldiversity examples on francdat (Capobianchi, Polettini
    and Lucarelli's data): every record, and measure_risk's expected re-identifications."""
    ref = pd.read_csv(REF / "francdat_records.csv")
    d = pd.DataFrame({
        "Key1": [1, 1, 1, 3, 4, 4, 6, 1], "Key2": [2, 2, 2, 3, 3, 3, 2, 2],
        "Key3": [5, 1, 1, 1, 1, 1, 1, 5], "Key4": [1, 1, 1, 5, 4, 1, 5, 1],
        "Num3": [4, 22, 8, 91, 13, 14, 1, 5], "w": [18, 45.5, 39, 17, 541, 8, 5, 92]})
    keys = ["Key1", "Key2", "Key3", "Key4"]
    r = original_risk(d, keys=keys, weights="w", sensitive="Num3", compat="sdcmicro")
    ex = original_risk(d, keys=keys, weights="w", suda=False, method="exact")
    _compare(r.records["risk"], ref["risk_approx"])
    _compare(ex.records["risk"], ref["risk_exact"])
    for c in ref.columns:
        if c.startswith("risk_"):
            continue
        _compare(r.records[c], ref[c], RTOL_DIS if c == "dis_suda_score" else RTOL)
    s = SUMMARY["francdat"]
    assert r.global_risk["expected_reidentifications"] == pytest.approx(s["global_risk_ER"],
                                                                        rel=RTOL)
    assert r.global_risk["global_risk_pct"] == pytest.approx(s["global_risk_pct"], rel=RTOL)
    got = r.suda["attribute_contributions"].set_index("variable")["contribution"]
    for k, v in s["suda_attribute_contributions"].items():
        assert got[k] == pytest.approx(v, rel=RTOL, abs=1e-12)


def test_indivrisk_grid():
    """indivRisk on cells of 1 to 8 records: the approximation exactly; the exact risk where
    sdcMicro's closed form is stable (F_k/f_k >= 1.5; nearer 1 it returns -29.7 for
    f_k = 6, F_k = 6.006, and the package's integral stays within [1/(f_k+1), 1/f_k])."""
    from bayes_risk.disclosure.original_risk import _risk_approx, _risk_exact

    g = pd.read_csv(REF / "indivrisk_grid.csv")
    f, F = g["fk"].to_numpy(float), g["Fk"].to_numpy(float)
    z = (F - f) / f
    np.testing.assert_allclose(_risk_approx(f, z), g["risk_approx"], rtol=1e-9)
    e = _risk_exact(f, z)
    stable = F / f >= 1.5
    np.testing.assert_allclose(e[stable], g["risk_exact"][stable], rtol=1e-9)
    assert (g["risk_exact"][~stable] < 0).any()  # sdcMicro's, not ours
    assert np.all((e <= 1 / f + 1e-15) & (e > 0))


@pytest.mark.parametrize("name", ["CEdata", "SD2011", "SD2011_complete"])
def test_shared_data_compat(name):
    """Every per-record figure and summary of sdcMicro, missing keys and missing sensitive
    values included, with compat="sdcmicro"."""
    d, keys, sens = _data(name)
    ref = pd.read_csv(REF / f"{name}_records.csv.gz")
    r = _run(d, keys, sensitive=sens, compat="sdcmicro")
    rw = _run(d, keys, weights=toy_weights(len(d)), suda=False, compat="sdcmicro")
    assert len(ref) == len(d)
    _compare(rw.records["Fk"], ref["Fk_w"])
    _compare(rw.records["risk"], ref["risk_w"])
    for c in ref.columns:
        if c.endswith("_w"):
            continue
        _compare(r.records[c], ref[c], RTOL_DIS if c == "dis_suda_score" else RTOL)
    s = SUMMARY[name]
    for res, key in ((r, "unweighted"), (rw, "weighted")):
        assert res.global_risk["expected_reidentifications"] == pytest.approx(
            s[key]["global_risk_ER"], rel=RTOL)
        assert res.global_risk["global_risk"] == pytest.approx(s[key]["global_risk"], rel=RTOL)
        assert res.global_risk["n_high_risk"] == s[key]["n_high"]  # print.measure_risk's
    assert [r.k_anonymity[k]["n_violating"] for k in ("2", "3", "5")] == s["kanon"]
    got = r.suda["attribute_contributions"].set_index("variable")["contribution"]
    for k, v in s["suda_attribute_contributions"].items():
        assert got[k] == pytest.approx(v, rel=RTOL)
    lev = pd.read_csv(REF / f"{name}_suda_levels.csv", dtype={"attribute": str})
    mine = r.suda["attribute_level_contributions"].astype({"attribute": str})
    both = lev.merge(mine, on=["variable", "attribute"], how="outer", indicator=True)
    assert (both["_merge"] == "both").all()
    np.testing.assert_allclose(both["contribution_y"], both["contribution_x"], rtol=RTOL)


def test_default_differs_only_on_missing_values():
    """Without missing keys the default is sdcMicro's; SD2011's missing keys (19 records) and
    missing depress (89) make it count more records at risk than sdcMicro's wildcards."""
    d, keys, sens = _data("SD2011_complete")
    ref = pd.read_csv(REF / "SD2011_complete_records.csv.gz")
    r = _run(d, keys, sensitive=sens)
    for c in ("fk", "risk", "suda_score"):
        _compare(r.records[c], ref[c])
    full, _, _ = _data("SD2011")
    default = _run(full, keys)
    s = SUMMARY["SD2011"]
    # a missing value never widens a key cell: more records at risk than sdcMicro's count
    assert default.global_risk["expected_reidentifications"] > s["unweighted"]["global_risk_ER"]
    assert default.k_anonymity["2"]["n_violating"] > s["kanon"][0]
