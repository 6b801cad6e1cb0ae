"""Reproduce synthpop 1.9-2's ``disclosure()`` and ``replicated.uniques()`` on CEdata.

Reference outputs: ../shared/reference/synthpop_disclosure/ (scenario 1's 20 synthetic CE
datasets in ../shared/reference/identification/synthetic/; target Income, keys Age, Urban,
Marital; synthpop's defaults). ``compat="synthpop"`` must match every figure to 1e-10
relative. The default mode pairs each target value with itself; it must agree with synthpop
wherever synthpop's tables are aligned and differ where they are not.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from _shared import shared_path

from bayes_risk import disclosure_measures

pytestmark = pytest.mark.reference

KEYS = ["Age", "Urban", "Marital"]
CAT = ["Urban", "Marital", "Tenure"]
_CACHE: dict[str | None, object] = {}


def _ref(name: str) -> pd.DataFrame:
    base = shared_path("reference", "synthpop_disclosure")
    if name == "repu":
        return pd.read_csv(base / "replicated_uniques_scenario1_keys_Age_Urban_Marital_Income.csv")
    return pd.read_csv(base / f"disclosure_scenario1_target_Income_{name}.csv")


def _result(compat):
    if compat not in _CACHE:
        ce = pd.read_csv(shared_path("data", "CEdata.csv"))
        syn_dir = shared_path("reference", "identification", "synthetic")
        syn = [pd.read_csv(syn_dir / f"scenario1_syn{l}.csv") for l in range(1, 21)]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            _CACHE[compat] = disclosure_measures(ce, syn, keys=KEYS, target="Income",
                                                 categorical=CAT,
                                                 compat=compat)
    return _CACHE[compat]


def _assert_close(mine: pd.Series, ref: pd.Series, label: str):
    a = mine.to_numpy(dtype=np.float64)
    b = ref.to_numpy(dtype=np.float64)
    assert (np.isnan(a) == np.isnan(b)).all(), label
    ok = ~np.isnan(b)
    np.testing.assert_allclose(a[ok], b[ok], rtol=1e-10, atol=0, err_msg=label)


@pytest.mark.parametrize("family", ["ident", "attrib", "allCAPs"])
def test_compat_reproduces_disclosure(family):
    ref = _ref(family)
    res = _result("synthpop")
    mine = getattr(res, family)
    assert list(mine["syn"]) == list(ref["syn"])
    assert [c for c in mine.columns] == list(ref.columns)
    for c in ref.columns[1:]:
        _assert_close(mine[c], ref[c], f"{family}.{c}")


def test_compat_reproduces_replicated_uniques():
    ref = _ref("repu")
    mine = _result("synthpop").replicated_uniques.to_long()
    assert list(mine["syn"]) == list(ref["syn"]) and list(mine["measure"]) == list(ref["measure"])
    assert (mine["number"].to_numpy() == ref["number"].to_numpy()).all()
    assert (mine["from_total"].to_numpy() == ref["from_total"].to_numpy()).all()
    _assert_close(mine["pct"], ref["pct"], "pct")


def test_default_agrees_where_synthpop_is_aligned():
    res = _result(None)
    for c in ("UiO", "UiS", "UiOiS", "repU"):
        _assert_close(res.ident[c], _ref("ident")[c], c)
    for c in ("Dorig", "Dsyn", "iS", "DiS"):
        _assert_close(res.attrib[c], _ref("attrib")[c], c)
    for c in ("baseCAPd", "CAPd", "CAPs"):
        _assert_close(res.allCAPs[c], _ref("allCAPs")[c], c)
    # every synthetic Income is an original value and some original values are missing from
    # each synthetic dataset, so synthpop pairs rows of different Incomes in DCAP for all 20
    ref_dcap = _ref("allCAPs")["DCAP"].to_numpy()
    assert (np.abs(res.allCAPs["DCAP"].to_numpy() / ref_dcap - 1) > 1e-3).all()
    # padded text: datasets whose Income has no -115800 are written narrower than the original
    ref = _ref("repu")
    mine = res.replicated_uniques.to_long()
    same_width = [1, 6, 7, 9, 10, 15, 16, 17, 18, 19, 20]
    sel = ref["syn"].isin(same_width).to_numpy()
    assert (mine["number"].to_numpy()[sel] == ref["number"].to_numpy()[sel]).all()
    rep = res.replicated_uniques.table
    assert (rep.loc[~rep["syn"].isin(same_width), "Replicated uniques"] > 100).all()
