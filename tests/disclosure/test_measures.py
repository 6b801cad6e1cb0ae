"""Empirical disclosure measures (synthpop's disclosure() / replicated.uniques()): hand-computed
examples for every measure, the R text conventions of the compat mode, invariants, bad input."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from bayes_risk import ExclusionSpec, disclosure_measures, replicated_uniques
from bayes_risk.data import SyntheticData, infer_schema
from bayes_risk.disclosure import (
    ATTRIB_MEASURES,
    CAP_MEASURES,
    IDENT_MEASURES,
    key_anonymity,
)
from bayes_risk.disclosure._rcompat import c_sort, r_as_character, r_format
from bayes_risk.exceptions import SchemaError, ValidationError
from bayes_risk.results._summary import SHORT_ROWS

# keys (sex, age), target inc. Original key cells: (1,30) inc {1, 2}; (2,40) inc {3, 3};
# (2,50) inc {4}. Synthetic: (1,30) {1}; (2,40) {3, 3}; (2,50) {4, 5}.
ORIG = pd.DataFrame({"sex": [1, 1, 2, 2, 2], "age": [30, 30, 40, 40, 50], "inc": [1, 2, 3, 3, 4]})
SYN = pd.DataFrame({"sex": [1, 2, 2, 2, 2], "age": [30, 40, 40, 50, 50], "inc": [1, 3, 3, 4, 5]})
KEYS = ["sex", "age"]


def _measures(res, l=0):
    out = {}
    for df in (res.ident, res.attrib, res.allCAPs):
        out.update({c: float(df[c].iloc[l]) for c in df.columns if c != "syn"})
    return out


def _run(orig, syn, keys=KEYS, target="inc", **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return disclosure_measures(orig, syn, keys=keys, target=target, categorical=["sex"], **kw)


def test_hand_computed_every_measure():
    r = _measures(_run(ORIG, [SYN]))
    expected = {
        # (2,50) is the only original unique; it is not unique in the synthetic data
        "UiO": 20.0, "UiS": 20.0, "UiOiS": 20.0, "repU": 0.0,
        # disclosive cells: original (2,40)/3 and (2,50)/4; synthetic (1,30)/1 and (2,40)/3
        "Dorig": 60.0, "Dsyn": 60.0, "iS": 100.0,
        # keys with one synthetic target value: (1,30), (2,40) -> 2 + 2 original records
        "DiS": 80.0,
        # correct: (1,30)/1 (1 record) and (2,40)/3 (2 records); only (2,40) disclosive in orig
        "DiSCO": 60.0, "DiSDiO": 40.0, "max_denom": 2.0, "mean_denom": 1.5,
        # baseCAPd = (1 + 1 + 4 + 1) / 25; CAPd = (2/2 + 4/2 + 1/1) / 5; CAPs = (1 + 2 + 1) / 5
        "baseCAPd": 28.0, "CAPd": 80.0, "CAPs": 80.0,
        # DCAP = (1*1 + 1*0 + 2*1 + 1*0.5) / 5; TCAP = 3 DiSCO / 5 records with keys in syn
        "DCAP": 70.0, "TCAP": 60.0,
    }
    assert r == pytest.approx(expected, rel=1e-12)


def test_exclude_over_denom_lim_by_hand():
    res = _run(ORIG, [SYN], exclude=ExclusionSpec(denom_lim=1, exclude_ov_denom_lim=True))
    r = _measures(res)
    # the (2,40)/3 cells (2 records each) are dropped from every table
    expected = {
        "UiO": 20.0, "UiS": 20.0, "UiOiS": 20.0, "repU": 0.0,
        "Dorig": 20.0, "Dsyn": 20.0, "iS": 60.0, "DiS": 40.0, "DiSCO": 20.0, "DiSDiO": 0.0,
        "max_denom": 1.0, "mean_denom": 1.0,
        "baseCAPd": 28.0,  # from the tables before exclusions, as synthpop
        "CAPd": 40.0, "CAPs": 40.0, "DCAP": 30.0, "TCAP": 100.0 / 3.0,
    }
    assert r == pytest.approx(expected, rel=1e-12)
    d = res.diagnostics.iloc[0]
    assert d["n_over_denom_lim"] == 2 and d["n_excluded_original"] == 2
    assert d["n_excluded_synthetic"] == 2
    # without exclusion the same cell is only counted
    plain = _run(ORIG, [SYN], exclude=ExclusionSpec(denom_lim=1)).diagnostics.iloc[0]
    assert plain["n_over_denom_lim"] == 2 and plain["n_excluded_original"] == 0


def test_exclude_combinations_and_target_levels_by_hand():
    # excluding (age 40, inc 3) removes the (2,40)/3 cells, as exclude_ov_denom_lim did above
    a = _measures(_run(ORIG, [SYN], exclude=ExclusionSpec(exclude_combinations=[("age", 40, 3)])))
    b = _measures(_run(ORIG, [SYN], exclude=ExclusionSpec(denom_lim=1, exclude_ov_denom_lim=True)))
    np.testing.assert_equal(a, b)
    # not_targetlev drops a target level everywhere: inc 3 is exactly those cells here
    c = _measures(_run(ORIG, [SYN], exclude=ExclusionSpec(not_targetlev=[3])))
    np.testing.assert_equal(a, c)
    res = _run(ORIG, [SYN], exclude=ExclusionSpec(not_targetlev=["3"],
                                                  exclude_combinations=[("sex", 1, 2)]))
    assert res.settings["not_targetlev"] == ["3"]
    assert res.settings["exclude_combinations"] == [["sex", "1", "2"]]


def test_replicated_uniques_and_key_baseline_by_hand():
    res = _run(ORIG, [SYN])
    t = res.replicated_uniques.table.iloc[0]
    # on (sex, age, inc): original uniques (1,30,1) (1,30,2) (2,50,4); synthetic uniques
    # (1,30,1) (2,50,4) (2,50,5), of which the first two are (unique) in the original
    assert (t["Original"], t["Synthetic"], t["Synthetic uniques in original"],
            t["Replicated uniques"]) == (3, 3, 2, 2)
    assert t["Replicated uniques %"] == pytest.approx(40.0)
    b = res.key_baseline
    assert b["n_sample_uniques"] == 1 and b["n_key_combinations"] == 3
    assert b["k_anonymity"] == {"2": {"n_violating": 1, "pct_violating": 20.0},
                                "3": {"n_violating": 5, "pct_violating": 100.0},
                                "5": {"n_violating": 5, "pct_violating": 100.0}}
    rep = replicated_uniques(ORIG, SYN, keys=["sex", "age", "inc"])
    pd.testing.assert_frame_equal(rep.table, res.replicated_uniques.table)
    long = rep.to_long()
    assert list(long["measure"]) == ["Original", "Synthetic", "Synthetic uniques in original",
                                     "Replicated uniques"]
    assert list(long["pct"]) == [60.0, 60.0, 40.0, 40.0]


def test_key_anonymity_counts():
    b = key_anonymity(np.array([0, 0, 0, 1, 2, 2]), k_values=(2, 4))
    assert b["n_sample_uniques"] == 1 and b["n_key_combinations"] == 3
    assert b["k_anonymity"]["2"]["n_violating"] == 1
    assert b["k_anonymity"]["4"]["n_violating"] == 6


def test_missing_is_a_level_and_can_be_excluded():
    o = ORIG.astype({"inc": float})
    s = SYN.astype({"inc": float})
    o_na, s_na = o.copy(), s.copy()
    o_na.loc[4, "inc"] = np.nan  # the (2,50) record
    s_na.loc[3, "inc"] = np.nan
    o_99, s_99 = o.copy(), s.copy()
    o_99.loc[4, "inc"] = 99.0
    s_99.loc[3, "inc"] = 99.0
    np.testing.assert_equal(_measures(_run(o_na, [s_na])), _measures(_run(o_99, [s_99])))
    assert "Missing" in _run(o_na, [s_na]).target_levels
    # excluding the missing target drops the (2,50) original record from every table
    r = _measures(_run(o_na, [s_na], exclude=ExclusionSpec(use_target_na=False)))
    assert r["UiO"] == 0.0 and r["Dorig"] == 40.0
    # a missing key is a level too
    k_na = o.astype({"age": float})
    k_na.loc[4, "age"] = np.nan
    ks_na = s.astype({"age": float})
    ks_na.loc[[3, 4], "age"] = np.nan
    r = _measures(_run(k_na, [ks_na]))
    assert r["UiO"] == 20.0
    r = _measures(_run(k_na, [ks_na], exclude=ExclusionSpec(use_keys_na=[True, False])))
    assert r["UiO"] == 0.0 and r["iS"] == 80.0


def test_grouped_target_by_hand():
    o = pd.DataFrame({"g": ["a"] * 4, "y": [1.0, 2.0, 3.0, 4.0]})
    s = pd.DataFrame({"g": ["a"] * 4, "y": [1.5, 1.6, 3.5, 3.9]})
    res = disclosure_measures(o, s, keys=["g"], target="y", ngroups_target=2)
    # pooled quantile breaks: min 1, median 2.75, max 4 -> fewer than 3 groups: equal width
    # breaks 1, 2.5, 4: groups [1,2.5) and [2.5,4]
    assert res.settings["target_breaks"] == [1.0, 2.5, 4.0]
    assert res.target_levels == ["[1,2.5)", "[2.5,4]", "Missing"]
    r = _measures(res)
    assert r["baseCAPd"] == pytest.approx(50.0) and r["DCAP"] == pytest.approx(50.0)
    res3 = disclosure_measures(o, s, keys=["g"], target="y", ngroups_target=4)
    assert len(res3.settings["target_breaks"]) == 5  # quantiles suffice


def test_grouped_keys_equal_pre_binned_keys():
    rng = np.random.default_rng(4)
    o = pd.DataFrame({"c": rng.integers(0, 2, 60), "x": rng.normal(size=60),
                      "y": rng.integers(0, 3, 60)})
    s = pd.DataFrame({"c": rng.integers(0, 2, 50), "x": rng.normal(size=50),
                      "y": rng.integers(0, 3, 50)})
    res = disclosure_measures(o, s, keys=["c", "x"], target="y", categorical=["c", "y"],
                              ngroups_keys=4)
    br = np.asarray(res.settings["key_breaks"]["x"])
    assert len(br) == 5 and res.settings["ngroups_keys"] == {"x": 4}

    def binned(df):
        g = np.clip(np.searchsorted(br, df["x"].to_numpy(), side="right") - 1, 0, len(br) - 2)
        return df.assign(x=g)

    pre = disclosure_measures(binned(o), binned(s), keys=["c", "x"], target="y",
                              categorical=["c", "x", "y"])
    np.testing.assert_equal(_measures(res), _measures(pre))
    per_key = disclosure_measures(o, s, keys=["c", "x"], target="y", categorical=["c", "y"],
                                  ngroups_keys=[0, 4])
    np.testing.assert_equal(_measures(res), _measures(per_key))


def test_compat_misaligned_rows_by_hand():
    # target values: original {2, 10}, synthetic {10} only. synthpop keeps the original's table
    # in numeric order (2, 10) but re-sorts the extended synthetic table as text ("10", "2"),
    # so the synthetic "10" row meets the original "2" row.
    o = pd.DataFrame({"k": [1, 1, 1], "t": [2.0, 10.0, 10.0]})
    s = pd.DataFrame({"k": [1, 1, 1], "t": [10.0, 10.0, 10.0]})
    good = _measures(disclosure_measures(o, s, keys=["k"], target="t"))
    compat = _measures(disclosure_measures(o, s, keys=["k"], target="t", compat="synthpop"))
    assert good["DiSCO"] == pytest.approx(200 / 3) and compat["DiSCO"] == pytest.approx(100 / 3)
    assert good["DCAP"] == pytest.approx(200 / 3) and compat["DCAP"] == pytest.approx(100 / 3)
    for c in ("UiO", "Dorig", "Dsyn", "CAPd", "CAPs", "baseCAPd"):
        assert good[c] == compat[c]
    # same sets of values: no re-sorting, both modes agree
    s2 = pd.DataFrame({"k": [1, 1, 1], "t": [2.0, 10.0, 2.0]})
    np.testing.assert_equal(_measures(disclosure_measures(o, s2, keys=["k"], target="t")),
                            _measures(disclosure_measures(o, s2, keys=["k"], target="t",
                                                          compat="synthpop")))


def test_compat_replicated_uniques_padded_text():
    o = pd.DataFrame({"c": [1, 1], "x": [-5, 7]})
    s = pd.DataFrame({"c": [1, 1], "x": [7, 8]})
    good = replicated_uniques(o, s, categorical=["c"]).table.iloc[0]
    assert good["Replicated uniques"] == 1
    # R pads x to width 2 in the original (" 7") but not in the synthetic data ("7")
    compat = replicated_uniques(o, s, categorical=["c"], compat="synthpop").table.iloc[0]
    assert compat["Replicated uniques"] == 0 and compat["Synthetic uniques in original"] == 0
    # with only numeric keys R pastes as.character(): no padding
    compat = replicated_uniques(o.astype(float), s.astype(float), compat="synthpop").table
    assert compat["Replicated uniques"].iloc[0] == 1


@pytest.mark.parametrize("x, text", [
    (100000, "1e+05"), (123456, "123456"), (-115800, "-115800"), (0, "0"), (0.1, "0.1"),
    (1 / 3, "0.333333333333333"), (1e-20, "1e-20"), (1234567.1, "1234567.1"), (1e15, "1e+15"),
    (2.5e6, "2500000"), (-1e5, "-1e+05"), (10000, "10000"),
])
def test_r_as_character(x, text):
    assert r_as_character(x) == text


def test_r_format():
    assert r_format(np.array([1.0, 10.5])) == [" 1.0", "10.5"]
    assert r_format(np.array([-115800.0, 47000.0])) == ["-115800", "  47000"]
    assert r_format(np.array([100000.0, 200000.0])) == ["1e+05", "2e+05"]
    assert r_format(np.array([1.0, np.nan])) == ["1", None]
    assert r_format(np.array([123456789.0])) == ["123456789"]
    assert c_sort(["2", "10", "-3", "1e+05"]) == ["-3", "10", "1e+05", "2"]


def test_synthetic_equal_to_original():
    r = _measures(_run(ORIG, [ORIG.copy()]))
    assert r["DiSCO"] == r["Dorig"] == r["TCAP"]
    assert r["repU"] == r["UiO"] == r["UiS"]
    assert r["DCAP"] == pytest.approx(r["CAPd"]) and r["CAPs"] == r["CAPd"]


def test_result_object():
    data = SyntheticData([SYN, SYN.iloc[::-1]], method="test",
                         schema=infer_schema(ORIG, categorical=["sex"]))
    res = disclosure_measures(ORIG, data, keys=KEYS, target="inc")
    assert res.m == 2
    assert list(res.ident.columns) == ["syn", *IDENT_MEASURES]
    assert list(res.attrib.columns) == ["syn", *ATTRIB_MEASURES]
    assert list(res.allCAPs.columns) == ["syn", *CAP_MEASURES]
    df = res.to_dataframe()
    assert len(df) == 2 and {"repU", "DiSCO", "TCAP", "Replicated uniques"} <= set(df.columns)
    d = res.to_dict()
    import json

    json.dumps(d, allow_nan=False)
    assert d["ident"]["repU"] == [0.0, 0.0] and d["means"]["DiSCO"] == pytest.approx(60.0)
    assert d["key_baseline"]["n_sample_uniques"] == 1
    text = res.summary().as_text()
    assert "repU" in text and "DiSCO" in text and "sample uniques" in text
    assert str(res) == res.summary().as_text(max_rows=SHORT_ROWS)


def test_tcap_undefined_and_mostly_unique_warnings():
    s = SYN.assign(age=SYN["age"] + 1)  # no original key occurs in the synthetic data
    with pytest.warns(UserWarning, match="TCAP_UNDEFINED"):
        res = disclosure_measures(ORIG, s, keys=KEYS, target="inc", categorical=["sex"])
    assert math.isnan(res.allCAPs["TCAP"].iloc[0]) and "TCAP_UNDEFINED" in res.warnings
    rng = np.random.default_rng(0)
    o = pd.DataFrame({"k": rng.integers(0, 3, 100), "y": rng.normal(size=100)})
    with pytest.warns(UserWarning, match="TARGET_MOSTLY_UNIQUE"):
        disclosure_measures(o, o.copy(), keys=["k"], target="y")


# ---------------------------------------------------------------------------------- errors
@pytest.mark.parametrize("kwargs, match", [
    ({"keys": ["sex", "sex"]}, "each listed once"),
    ({"keys": []}, "non-empty"),
    ({"keys": ["sex", "inc"]}, r"target and keys both name \['inc'\]"),
    ({"keys": ["sex", "agee"]}, "Did you mean 'age'"),
    ({"target": ["inc"]}, "one column name"),
    ({"ngroups_target": 1}, "ngroups_target must be an integer >= 2"),
    ({"denom_lim": 0}, "ExclusionSpec.denom_lim must be an integer >= 1"),
    ({"use_target_na": "no"}, "ExclusionSpec.use_target_na must be True or False"),
    ({"compat": "sdcMicro"}, "compat must be None or 'synthpop'"),
    ({"not_targetlev": [77]}, "not levels of 'inc'"),
    ({"exclude_combinations": [("age", 30)]}, "triples"),
    ({"exclude_combinations": [("inc", 30, 1)]}, "not one of the keys"),
    ({"exclude_combinations": [("age", 31, 1)]}, "not levels of 'age'"),
    ({"use_keys_na": [True]}, "one per key"),
    ({"ngroups_keys": 1}, "ngroups_keys must be an integer >= 2"),
    ({"ngroups_keys": [3]}, "one number or one per key"),
    ({"ngroups_keys": [3, 0], "categorical": ["sex"]}, "column 'sex' is categorical"),
    ({"k_anonymity": [1]}, "k_anonymity"),
])
def test_bad_arguments(kwargs, match):
    args = {"keys": KEYS, "target": "inc", **kwargs}
    fields = {"denom_lim", "exclude_ov_denom_lim", "not_targetlev", "exclude_combinations",
              "use_target_na", "use_keys_na"}
    exclude = {k: args.pop(k) for k in list(args) if k in fields}
    with pytest.raises((ValidationError, SchemaError), match=match):
        disclosure_measures(ORIG, [SYN], keys=args.pop("keys"), target=args.pop("target"),
                            exclude=ExclusionSpec(**exclude), **args)


def test_exclude_argument():
    with pytest.raises(ValidationError, match="exclude must be an ExclusionSpec"):
        disclosure_measures(ORIG, [SYN], keys=KEYS, target="inc", exclude={"denom_lim": 3})
    with pytest.raises(TypeError, match="denom_lim"):  # the options moved to ExclusionSpec
        disclosure_measures(ORIG, [SYN], keys=KEYS, target="inc", denom_lim=3)


def test_bad_data():
    with pytest.raises(SchemaError, match=r"synthetic dataset 2 is missing column\(s\) \['inc'\]"):
        disclosure_measures(ORIG, [SYN, SYN.drop(columns="inc")], keys=KEYS, target="inc")
    with pytest.raises(ValidationError, match="synthetic dataset 1 has no records"):
        disclosure_measures(ORIG, [SYN.iloc[:0]], keys=KEYS, target="inc")
    with pytest.raises(ValidationError, match="only a numeric column can be grouped"):
        disclosure_measures(ORIG, [SYN], keys=["age"], target="sex", categorical=["sex"],
                            ngroups_target=3)
    with pytest.raises(ValidationError, match="single distinct value"):
        disclosure_measures(ORIG.assign(inc=1.0), [SYN.assign(inc=1.0)], keys=KEYS, target="inc",
                            ngroups_target=3)
    with pytest.raises(SchemaError, match="'inc'"):
        disclosure_measures(ORIG, [SYN.assign(inc="x")], keys=KEYS, target="inc")
    with pytest.raises(ValidationError, match="DataFrame"):
        disclosure_measures(ORIG.to_numpy(), [SYN], keys=KEYS, target="inc")


def test_original_without_a_column_of_the_release_schema():
    """A release carrying its schema (a SyntheticData folder) names a target the original lacks:
    an error naming the column, not pandas' KeyError."""
    data = SyntheticData([SYN], method="test", schema=infer_schema(ORIG, categorical=["sex"]))
    with pytest.raises(SchemaError, match=r"original is missing column\(s\) \['inc'\]"):
        disclosure_measures(ORIG.drop(columns="inc"), data, keys=KEYS, target="inc")


# ---------------------------------------------------------------------------- properties
_tables = st.integers(1, 25).flatmap(lambda n: st.tuples(
    st.lists(st.integers(0, 2), min_size=n, max_size=n),
    st.lists(st.integers(0, 3), min_size=n, max_size=n),
    st.lists(st.sampled_from([1.0, 2.0, 10.0, 100000.0, np.nan]), min_size=n, max_size=n),
)).map(lambda t: pd.DataFrame({"a": t[0], "b": t[1], "y": t[2]}))


@given(o=_tables, s=_tables, seed=st.integers(0, 2**16), compat=st.sampled_from([None,
                                                                                 "synthpop"]))
def test_ranges_orderings_and_row_order_invariance(o, s, seed, compat):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # a level of s that o lacks is a level of its own, as stated
        r = disclosure_measures(o, SyntheticData([s]).declare_recoded(["a"]), keys=["a", "b"],
                                target="y", categorical=["a"], compat=compat)
        rng = np.random.default_rng(seed)
        r2 = disclosure_measures(o.iloc[rng.permutation(len(o))], SyntheticData(
            [s.iloc[rng.permutation(len(s))]]).declare_recoded(["a"]), keys=["a", "b"],
            target="y", categorical=["a"], compat=compat)
    m = _measures(r)
    for c in (*IDENT_MEASURES, *CAP_MEASURES, *[a for a in ATTRIB_MEASURES if "denom" not in a]):
        assert math.isnan(m[c]) if c == "TCAP" and math.isnan(m[c]) else 0.0 <= m[c] <= 100.0
    assert m["repU"] <= m["UiOiS"] <= m["UiO"]
    assert m["DiSDiO"] <= m["DiSCO"] <= m["DiS"] <= m["iS"]
    assert m["Dorig"] <= m["CAPd"] + 1e-9 and m["Dsyn"] <= m["CAPs"] + 1e-9
    assert m["max_denom"] >= 0 and (math.isnan(m["mean_denom"]) or m["mean_denom"] >= 1)
    m2 = _measures(r2)
    assert m2.keys() == m.keys()
    for c in m:
        assert (math.isnan(m[c]) and math.isnan(m2[c])) or m2[c] == pytest.approx(m[c], rel=1e-12)
    t = r.replicated_uniques.table.iloc[0]
    assert t["Replicated uniques"] <= t["Synthetic uniques in original"] <= t["Synthetic"]
    assert t["Replicated uniques"] <= t["Original"]
    pd.testing.assert_frame_equal(r.replicated_uniques.table, r2.replicated_uniques.table)


def test_released_values_are_read_at_the_originals_precision():
    """Whole-dollar incomes released moved by cents (as a smoothing spline of dense values
    moves them) are the original's values to an intruder who rounds them: repU and DiSCO equal
    those of the unmoved release; synthpop's exact digits (compat) see none of them."""
    rng = np.random.default_rng(3)
    n = 200
    orig = pd.DataFrame({"sex": rng.integers(1, 3, n), "inc": rng.integers(10_000, 90_000, n)
                         .astype(float), "ten": rng.integers(1, 4, n)})
    syn = orig.sample(frac=1.0, random_state=1).reset_index(drop=True)
    moved = syn.assign(inc=syn["inc"] + rng.uniform(-0.4, 0.4, n))
    kw = dict(keys=["sex", "inc"], target="ten", categorical=["sex", "ten"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exact = _measures(disclosure_measures(orig, [syn], **kw))
        read = _measures(disclosure_measures(orig, [moved], **kw))
        compat = _measures(disclosure_measures(orig, [moved], compat="synthpop", **kw))
    assert exact["repU"] > 50 and read["repU"] == exact["repU"]
    assert read["DiSCO"] == exact["DiSCO"] > 0
    assert compat["repU"] == 0.0
