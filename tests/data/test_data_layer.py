"""Schema inference, validation, harmonisation and encoding (SPEC §0.2.6, §1.1–§1.2)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from bayes_risk.data import (
    Schema,
    decode,
    encode,
    harmonise_levels,
    infer_schema,
    make_ce_like,
    validate_synthetic,
    validate_table,
)
from bayes_risk.exceptions import DataWarning, SchemaError, ValidationError


@pytest.fixture
def ce():
    return make_ce_like(300, random_seed=5)


def test_infer_types_and_overrides(ce):
    s = infer_schema(ce, categorical=["Urban", "Marital", "Tenure"], synthesized=["Income"])
    assert s["Urban"].type == "categorical" and s["Urban"].levels == (1, 2)
    assert s["Tenure"].levels == tuple(sorted(ce.Tenure.unique()))
    assert s["Age"].type == "count"  # non-negative integers
    assert s["Income"].type == "continuous"
    assert s.synthesized == ["Income"]
    assert s.unsynthesized == ["Age", "Urban", "Tenure", "Educ", "Expenditure", "Marital"]
    assert s.categorical == ["Urban", "Tenure", "Marital"]


def test_infer_pandas_categorical_and_strings():
    df = pd.DataFrame(
        {
            "sex": ["M", "F", "F"],
            "edu": pd.Categorical(
                ["lo", "hi", "mid"], categories=["lo", "mid", "hi"], ordered=True
            ),
            "neg": [-1, 2, 3],
            "flag": [True, False, True],
        }
    )
    s = infer_schema(df)
    assert s["sex"].type == "categorical" and s["sex"].levels == ("F", "M")
    assert s["edu"].type == "ordinal" and s["edu"].levels == ("lo", "mid", "hi")
    assert s["neg"].type == "continuous"
    assert s["flag"].type == "categorical"


def test_schema_round_trip_json(ce):
    import json

    s = infer_schema(ce, categorical=["Urban"], synthesized=["Income"], known=["Age", "Urban"])
    s2 = Schema.from_dict(json.loads(json.dumps(s.to_dict())))
    assert s2 == s
    assert s2.known == ["Age", "Urban"]


def test_schema_overridden_takes_the_named_columns(ce):
    """A manifest's schema with some columns re-inferred: another type takes the inferred column
    with the manifest's role; the same categorical type keeps the manifest's levels; codes
    change only where given; the changes are described."""
    manifest = infer_schema(ce, categorical=["Urban", "Tenure"], synthesized=["Income", "Educ"])
    manifest = manifest.with_levels({"Tenure": tuple(reversed(manifest["Tenure"].levels))})
    inferred = infer_schema(ce, categorical=["Urban", "Tenure", "Educ"],
                            missing_codes={"Income": [-8]})
    out, changed = manifest.overridden(inferred, ["Educ", "Tenure", "Age"], ["Income"])
    assert out["Educ"].type == "categorical" and out.synthesized == ["Educ", "Income"]
    assert out["Tenure"] == manifest["Tenure"]  # the release's order of its levels
    assert out["Age"] == manifest["Age"] and out["Urban"] == manifest["Urban"]
    assert out["Income"].missing_codes == (-8.0,)
    assert changed == ["Educ (count -> categorical)", "Income (missing-value codes [] -> [-8.0])"]
    assert manifest.overridden(inferred) == (manifest, [])


def test_unknown_column_errors_name_it(ce):
    with pytest.raises(SchemaError, match=r"'Urbn'.*Did you mean 'Urban'"):
        infer_schema(ce, categorical=["Urbn"])
    s = infer_schema(ce)
    with pytest.raises(SchemaError, match="'Incme'"):
        s.with_roles(["Incme"])
    with pytest.raises(SchemaError, match="declared both"):
        infer_schema(ce, categorical=["Age"], continuous=["Age"])


def test_a_column_name_given_alone_is_one_name_not_its_letters():
    # fit_model(..., synthesized="ab") used to read the columns 'a' and 'b'
    df = pd.DataFrame({"a": [1, 2, 3], "b": [4, 5, 6], "ab": [0.5, 1.5, 2.5]})
    assert infer_schema(df, synthesized="ab").synthesized == ["ab"]
    with pytest.raises(SchemaError, match="synthesized: column 'Income' is not in the data"):
        infer_schema(df, synthesized="Income")


def test_count_override_rejects_negative():
    df = pd.DataFrame({"x": [1.0, -2.0]})
    with pytest.raises(SchemaError, match=r"'x'.*count.*-2"):
        infer_schema(df, count=["x"])


def test_validate_table_errors(ce):
    s = infer_schema(ce, categorical=["Urban", "Marital", "Tenure"])
    validate_table(ce, s)
    with pytest.raises(SchemaError, match=r"missing column\(s\) \['Income'\]"):
        validate_table(ce.drop(columns="Income"), s)
    with pytest.raises(SchemaError, match=r"unexpected column\(s\) \['extra'\]"):
        validate_table(ce.assign(extra=1), s)
    bad = ce.copy()
    bad.loc[7, "Income"] = np.nan
    with pytest.raises(
        SchemaError, match=r"'Income' has 1 missing value\(s\) \(first at row 7\)"
    ) as e:
        validate_table(bad, s)
    assert e.value.code == "MISSING_VALUES"
    validate_table(bad, s, allow_nan=["Income"])
    bad = ce.copy()
    bad["Urban"] = bad["Urban"].replace({2: 9})
    with pytest.raises(
        SchemaError, match=r"'Urban' has value 9 that is not among its levels \[1, 2\]"
    ):
        validate_table(bad, s)
    bad = ce.copy()
    bad["Expenditure"] = bad["Expenditure"].astype(str)
    with pytest.raises(SchemaError, match=r"'Expenditure' is continuous but has dtype"):
        validate_table(bad, s)


def test_validate_synthetic(ce):
    s = infer_schema(ce, categorical=["Urban", "Marital", "Tenure"], synthesized=["Income"])
    z = ce.copy()
    z["Income"] = z["Income"] * 1.1
    validate_synthetic(ce, [z, z], schema=s)
    with pytest.raises(ValidationError, match=r"m\) must be an integer >= 1"):
        validate_synthetic(ce, [], schema=s)
    z2 = z.copy()
    z2.loc[3, "Age"] += 1
    with pytest.raises(
        SchemaError, match=r"synthetic dataset 2: unsynthesized column 'Age' differs"
    ) as e:
        validate_synthetic(ce, [z, z2], schema=s)
    assert e.value.code == "US_COLUMNS_DIFFER"
    with pytest.raises(
        SchemaError, match=r"synthetic dataset 1 has 299 rows but the original has 300"
    ):
        validate_synthetic(ce, [z.iloc[:-1]], schema=s)


def test_harmonise_levels_appends_synthetic_only_levels():
    y = pd.DataFrame({"r": ["W", "B", "W"]})
    z1 = pd.DataFrame({"r": ["W", "A", "W"]})
    s = infer_schema(y)
    assert s["r"].levels == ("B", "W")
    # a level the original never holds is refused, unless the release recodes the column
    with pytest.raises(SchemaError, match="synthetic dataset 1: column 'r' holds 'A'") as err:
        harmonise_levels(y, [z1], schema=s)
    assert err.value.code == "SYNTHETIC_ONLY_LEVEL"
    assert "release.declare_recoded(['r'])" in str(err.value)
    with pytest.warns(DataWarning, match="SYNTHETIC_ONLY_LEVEL.*'r': 'A'"):
        h = harmonise_levels(y, [z1], schema=s, recoded=["r"])
    assert h["r"].levels == ("B", "W", "A")  # existing codes unchanged, new level appended
    np.testing.assert_array_equal(encode(z1, h, ["r"])[:, 0], [1, 2, 1])
    with pytest.raises(SchemaError, match="'A' that is not among its levels"):
        encode(z1, s, ["r"])


def test_levels_match_across_csv_round_trip(tmp_path):
    # CSV turns integer codes into floats when a column has NaN; 2.0 must equal level 2
    y = pd.DataFrame({"u": [1, 2, 2]})
    s = infer_schema(y, categorical=["u"])
    z = pd.DataFrame({"u": [1.0, 2.0, 1.0]})
    validate_table(z, s)
    np.testing.assert_array_equal(encode(z, s, ["u"])[:, 0], [0, 1, 0])


@given(
    st.lists(st.sampled_from(["a", "b", "c", "d"]), min_size=1, max_size=30),
)
def test_encode_decode_round_trip(values):
    df = pd.DataFrame({"x": values})
    s = infer_schema(df)
    codes = encode(df, s, ["x"])
    assert codes.min() >= 0 and codes.max() < s["x"].n_levels
    back = decode(codes, s, ["x"])
    assert back["x"].tolist() == values


def test_unsynthesized_comparison_types():
    from bayes_risk.data.validate import _equal_levels

    a = pd.Series([1, 2, 2])
    np.testing.assert_array_equal(_equal_levels(a, pd.Series([1.0, 2.0, 1.0])), [True, True, False])
    s = pd.Series(["x", "y", None])
    np.testing.assert_array_equal(
        _equal_levels(s, pd.Series(["x", "z", None])), [True, False, True]
    )
    c = pd.Series(pd.Categorical(["a", "b"]))
    np.testing.assert_array_equal(_equal_levels(c, pd.Series(["a", "a"])), [True, False])


@pytest.mark.parametrize("sep, name", [(";", "semicolons"), ("\t", "tabs")])
def test_read_table_refuses_a_csv_not_separated_by_commas(tmp_path, sep, name):
    """A file written with another separator would be read as one column named after the whole
    header line; it is refused, naming the file and the separator."""
    from bayes_risk.data import read_table
    from bayes_risk.exceptions import ValidationError

    f = tmp_path / "t.csv"
    pd.DataFrame({"MAR": ["a", "b"], "SEX": ["M", "F"]}).to_csv(f, sep=sep, index=False)
    with pytest.raises(ValidationError, match=f"'{f}' is separated by {name}") as err:
        read_table(f)
    assert err.value.code == "NOT_COMMA_SEPARATED"
    one = tmp_path / "one.csv"  # a single column is still a comma-separated file
    one.write_text("x\n1\n2\n")
    assert read_table(one)["x"].tolist() == [1, 2]


def test_read_table_refuses_duplicated_column_names(tmp_path):
    """pandas would rename the second 'Age' to 'Age.1', a new variable nobody asked for."""
    from bayes_risk.data import read_table
    from bayes_risk.exceptions import SchemaError

    f = tmp_path / "dup.csv"
    f.write_text("Age,Urban,Age\n63,1,2\n81,2,1\n")
    with pytest.raises(SchemaError, match=r"dup.csv' has column name\(s\) \['Age'\] more than"
                       ) as err:
        read_table(f)
    assert err.value.code == "DUPLICATE_COLUMN"
    # quoted names are compared as names: "a,b" is one column, distinct from a and b
    ok = tmp_path / "ok.csv"
    ok.write_text('"a,b",a,b\n1,2,3\n')
    assert list(read_table(ok).columns) == ["a,b", "a", "b"]


def test_infer_schema_categorical_only():
    """A model of categorical columns only (issue 65, out of the command line): every column not
    typed otherwise is categorical; one of values that are not whole numbers is refused, the
    message naming the argument that declares it."""
    df = pd.DataFrame({"a": [1, 2, 1], "b": [1.0, 2.0, 3.0], "c": [3, 4, 5]})
    schema = infer_schema(df, count=["c"], categorical_only=True)
    assert [s.type for s in schema] == ["categorical", "categorical", "count"]
    with pytest.raises(ValidationError, match=r"categorical=\['x'\]") as err:
        infer_schema(df.assign(x=[0.5, 1.0, 2.0]), categorical_only=True)
    assert err.value.code == "WRONG_DTYPE"
    assert [s.type for s in infer_schema(df)] == ["count", "continuous", "count"]
