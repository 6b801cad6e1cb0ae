"""Missing values: declared codes in the schema, and the pMSE's synthpop treatment of NA.

Worked checks: the pMSE of tables with missing values equals the pMSE of the same tables with
the missingness written out explicitly the way synthpop's ``utility.gen`` does it (a categorical
NA as an extra level after the others; a numeric column's NA set to 0 beside a 0/1 indicator,
one indicator per declared code) — the same propensity model, so the same fitted probabilities.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import bayes_risk as br
from bayes_risk.data.missing import (
    check_missing_codes,
    mask_missing_codes,
    missing_kinds,
    parse_missing_codes,
)
from bayes_risk.exceptions import SchemaError, ValidationError


def _tables(seed: int = 3, n: int = 300):
    rng = np.random.default_rng(seed)
    a = rng.choice(["x", "y", "z"], n).astype(object)
    a[rng.random(n) < 0.15] = None
    v = rng.normal(50, 10, n)
    v[rng.random(n) < 0.1] = np.nan
    v[rng.random(n) < 0.1] = -8.0
    orig = pd.DataFrame({"a": a, "v": v, "g": rng.integers(0, 2, n)})
    syn = orig.copy()
    syn["a"] = syn["a"].sample(frac=1, random_state=1).to_numpy()
    syn["v"] = syn["v"].sample(frac=1, random_state=2).to_numpy()
    return orig, syn


def _other(syn: pd.DataFrame) -> pd.DataFrame:
    """A second synthetic dataset (a release never holds one dataset twice)."""
    return syn.assign(v=syn["v"].sample(frac=1, random_state=5).to_numpy())


def test_codes_declared_in_schema_round_trip():
    orig, _ = _tables()
    s = br.infer_schema(orig, categorical=["g"], missing_codes={"v": -8})
    assert s["v"].missing_codes == (-8.0,)
    assert s.missing_codes == {"v": (-8.0,)}
    again = br.Schema.from_dict(s.to_dict())
    assert again == s
    # a count column with a code: the type is inferred without the codes
    df = pd.DataFrame({"nociga": [10, 0, -8, 20, -8]})
    assert br.infer_schema(df)["nociga"].type == "continuous"
    s2 = br.infer_schema(df, missing_codes={"nociga": [-8]})
    assert s2["nociga"].type == "count"
    br.data.validate_table(df, s2, allow_nan=True)  # -8 is a code, not a negative count


def test_codes_errors_name_the_column():
    orig, _ = _tables()
    with pytest.raises(SchemaError, match="'nope'"):
        br.infer_schema(orig, missing_codes={"nope": [-8]})
    with pytest.raises(SchemaError, match="'a'.*count and continuous"):
        br.infer_schema(orig, missing_codes={"a": [-8]})
    with pytest.raises(ValidationError, match="'v'"):
        check_missing_codes({"v": ["abc"]}, ["v"])
    with pytest.raises(ValidationError, match="COLUMN=VALUE"):
        parse_missing_codes(["v:-8"])
    assert parse_missing_codes(["v=-8", "v=-9", "w=99"]) == {"v": [-8.0, -9.0], "w": [99.0]}


def test_missing_kinds_and_masking():
    s = pd.Series([1.0, np.nan, -8.0, -9.0, 2.0])
    assert missing_kinds(s, (-8.0, -9.0)).tolist() == [0, 1, 2, 3, 0]
    df = mask_missing_codes(pd.DataFrame({"v": s}), {"v": (-8.0,)})
    assert df["v"].isna().tolist() == [False, True, True, False, False]


@pytest.mark.parametrize("max_order", [0, 1])
def test_pmse_categorical_na_is_a_level(max_order):
    orig, syn = _tables()
    orig, syn = orig[["a", "g"]], syn[["a", "g"]]
    got = br.pmse(orig, [syn], categorical=["g"], propensity=br.PropensitySpec(max_order=max_order))
    # NA written out as a level after the observed ones (synthpop's addNA)
    o2, s2 = orig.fillna("~NA"), syn.fillna("~NA")
    want = br.pmse(o2, [s2], categorical=["g"], propensity=br.PropensitySpec(max_order=max_order))
    assert got.pmse[0] == pytest.approx(
        want.pmse[0], rel=1e-9)
    assert got.k[0] == want.k[0]


@pytest.mark.parametrize("max_order", [0, 1])
def test_pmse_numeric_na_and_codes_get_indicators(max_order):
    orig, syn = _tables()
    schema = br.infer_schema(orig, categorical=["g"], missing_codes={"v": [-8]})
    got = br.pmse(orig, [syn], schema=schema, propensity=br.PropensitySpec(max_order=max_order))

    def explicit(df):  # synthpop: value set to 0, one 0/1 indicator per kind of missing value
        out = df.copy()
        out["v_NA"] = df["v"].isna().astype(float)
        out["v_cna"] = (df["v"] == -8).astype(float)
        out["v"] = df["v"].where(df["v"].notna() & (df["v"] != -8), 0.0)
        return out

    want = br.pmse(explicit(orig), [explicit(syn)], categorical=["g"],
                   propensity=br.PropensitySpec(max_order=max_order))
    assert got.pmse[0] == pytest.approx(
        want.pmse[0], rel=1e-8)
    assert got.k[0] == want.k[0]
    # without the declared code, -8 is a value: a different model
    plain = br.pmse(orig, [syn], categorical=["g"],
                    propensity=br.PropensitySpec(max_order=max_order))
    assert plain.k[0] < got.k[0]


def test_utility_summary_accepts_missing_values():
    orig, syn = _tables()
    out = br.utility_summary(orig, [syn, _other(syn)], categorical=["g"],
                             random_seed=1, progressbar=False,
                             propensity=br.PropensitySpec(max_order=0))
    assert np.isfinite(out.pmse.mean_pmse)
    names = list(out.overlap["estimand"])
    assert "P(a missing)" in names and "P(v missing)" in names
    row = out.overlap.set_index("estimand").loc["mean(v)"]
    assert row["estimate_orig"] == pytest.approx(orig["v"].mean())  # observed values


def test_disclosure_grouped_target_keeps_codes_as_groups():
    from bayes_risk.disclosure._encode import encode_var

    orig = pd.DataFrame({"k": ["a", "b", "a", "b", "a", "b"],
                         "t": [1.0, 2.0, 3.0, 4.0, -8.0, np.nan]})
    syn = orig.assign(t=[4.0, 3.0, 2.0, 1.0, np.nan, -8.0])
    s = br.infer_schema(orig, missing_codes={"t": [-8]})
    var = encode_var("t", orig, [syn], s, ngroups=2)
    # -8 is a group of its own (left out of the breaks 1..4) and NA is "Missing"
    assert var.labels[-2:] == ["-8", "Missing"]
    assert var.breaks.min() == 1.0
    assert var.orig.tolist()[-2:] == [var.na_code - 1, var.na_code]
    # undeclared, -8 is a value: it sits in the lowest interval
    plain = encode_var("t", orig, [syn], br.infer_schema(orig), ngroups=2)
    assert plain.breaks.min() == -8.0
    m = br.disclosure_measures(orig, [syn], keys=["k"], target="t", schema=s, ngroups_target=2)
    assert m is not None


def test_pmse_design_wider_than_the_stacked_tables():
    """More design columns than rows (many NA levels and interactions on a small file): the
    rank-revealing step keeps at most N columns instead of failing."""
    rng = np.random.default_rng(0)
    n = 12
    o = pd.DataFrame({c: rng.choice(["a", "b", "c", None], n) for c in "pqrst"})
    z = pd.DataFrame({c: rng.choice(["a", "b", "c", None], n) for c in "pqrst"})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = br.pmse(o, br.SyntheticData([z]).declare_recoded(list("pqrst")),
                    propensity=br.PropensitySpec(max_order=1))
    assert r.k[0] <= 2 * n and np.isfinite(r.pmse[0])


@pytest.mark.parametrize("values", [
    np.array([1.5, np.nan, -0.0, np.inf]),
    np.array([3, 1, 2], dtype=np.int64),
    np.array([True, False]),
    pd.Series([1.0, None, 2.0]),
    pd.Series([1, None, 3], dtype="Int64"),
    pd.Series(["a", None, "b"]),
    pd.Series([1, 2], dtype=np.uint8),
])
def test_missing_mask_equals_isna_plus_codes(values):
    """The numpy fast path of ``missing_mask`` agrees with ``pd.isna`` (and codes add to it)."""
    from bayes_risk.data.missing import missing_mask

    want = np.asarray(pd.isna(values), dtype=bool)
    got = missing_mask(values)
    assert got.dtype == bool
    np.testing.assert_array_equal(got, want)
    if isinstance(values.dtype, np.dtype) and values.dtype.kind in "biuf":
        coded = missing_mask(values, [2.0])
        np.testing.assert_array_equal(coded, want | (np.asarray(values, dtype=float) == 2.0))


def test_integer_codes_read_as_float_keep_integer_levels(tmp_path):
    """A CSV column of integer codes with empty fields is read as float; its levels are the
    integers of the file (model.json and reports show 1, not 1.0), and values still encode."""
    from bayes_risk.data import encode, infer_schema, read_table

    p = tmp_path / "t.csv"
    p.write_text('"A","B","C"\n"1","x",0.5\n,"y",1.5\n"3","x",\n"1",,2.0\n')
    df = read_table(p)
    assert df["A"].dtype == np.float64
    schema = infer_schema(df, categorical=["A", "B", "C"])
    assert schema["A"].levels == (1, 3)
    assert all(type(v) is int for v in schema["A"].levels)
    assert schema["C"].levels == (0.5, 1.5, 2.0)  # not all whole: kept as written
    codes = encode(df, schema, ["A"])
    assert codes[:, 0].tolist() == [0, -1, 1, 0]


def test_pmse_and_summary_settings_state_the_missing_value_policy():
    orig, syn = _tables()
    schema = br.infer_schema(orig, categorical=["g"], missing_codes={"v": [-8]})
    r = br.pmse(orig, [syn], schema=schema, propensity=br.PropensitySpec(max_order=0))
    assert "utility.gen" in r.settings["missing_values"]
    assert r.settings["missing_kinds"] == {"a": ["NA"], "v": ["NA", "-8"]}
    out = br.utility_summary(orig, [syn, _other(syn)], schema=schema,
                             random_seed=1, progressbar=False,
                             propensity=br.PropensitySpec(max_order=0))
    assert out.settings["pmse_missing_kinds"] == {"a": ["NA"], "v": ["NA", "-8"]}
    assert "observed values" in out.settings["overlap_missing_values"]
    # complete data: the policy is stated, no kind met
    full = br.pmse(orig.dropna().query("v != -8"), [syn.dropna().query("v != -8")],
                   categorical=["g"],
                   propensity=br.PropensitySpec(max_order=0))
    assert full.settings["missing_kinds"] == {}


def test_overlap_means_over_observed_values_and_codes_are_missing():
    orig, syn = _tables()
    schema = br.infer_schema(orig, categorical=["g"], missing_codes={"v": [-8]})
    out = br.utility_summary(orig, [syn, _other(syn)], schema=schema,
                             random_seed=1, progressbar=False,
                             propensity=br.PropensitySpec(max_order=0))
    tab = out.overlap.set_index("estimand")
    v = orig["v"]
    obs = v[v.notna() & (v != -8)]
    assert tab.loc["mean(v)", "estimate_orig"] == pytest.approx(obs.mean())
    assert tab.loc["P(v missing)", "estimate_orig"] == pytest.approx(
        float((v.isna() | (v == -8)).mean()))
    # level proportions are over all records; the missing level is P(a missing)
    assert tab.loc["P(a = x)", "estimate_orig"] == pytest.approx(float((orig["a"] == "x").mean()))
    assert tab.loc["P(a missing)", "estimate_orig"] == pytest.approx(
        float(orig["a"].isna().mean()))


def test_formula_fits_leave_declared_codes_out_as_empty_cells():
    """A declared code is a missing value in the formula fits too (the records are left out,
    as with empty cells), not the number -8."""
    orig, syn = _tables()
    schema = br.infer_schema(orig, categorical=["g"], missing_codes={"v": [-8]})
    kw = dict(propensity=br.PropensitySpec(max_order=0),
              overlap=br.OverlapSpec(estimands=["v ~ C(g)"]), random_seed=1, progressbar=False)
    got = br.utility_summary(orig, [syn, _other(syn)], schema=schema, **kw)
    as_na = [d.assign(v=d["v"].where(d["v"] != -8)) for d in (orig, syn, _other(syn))]
    want = br.utility_summary(as_na[0], as_na[1:], categorical=["g"], **kw)
    for c in ("estimate_orig", "estimate_syn"):
        pd.testing.assert_series_equal(got.comparison[c], want.comparison[c])
    assert "drop" in got.settings["overlap_missing_values"]


def test_disclosure_settings_and_codes_are_values_not_missing():
    """synthpop's disclosure(): an empty cell is the level "Missing" (``use_target_na=False``
    leaves its records out); a declared code is a value, so it is never left out."""
    orig = pd.DataFrame({"k": ["a", "a", "b", "b", "c"], "t": [1.0, -8.0, 2.0, np.nan, -8.0]})
    syn = orig.assign(t=[1.0, -8.0, np.nan, 2.0, -8.0])
    s = br.infer_schema(orig, missing_codes={"t": [-8]})
    r = br.disclosure_measures(orig, [syn], keys=["k"], target="t", schema=s,
                               exclude=br.ExclusionSpec(use_target_na=False))
    assert "'Missing'" in r.settings["missing_values"]
    assert r.settings["missing_codes"] == {"t": [-8.0]}
    assert r.settings["n_missing_original"] == {"t": 1}
    # only the empty cell (record 3) is left out: -8 stays a level of its own
    assert int(r.diagnostics["n_excluded_original"].iloc[0]) == 1
    assert "-8" in r.target_levels and "Missing" in r.target_levels
