"""SAS, Stata and SPSS files in and out (bayes_risk/data/statfiles.py; issue 71).

Files come from three sources, never from a hand-made imitation: pyreadstat and pandas write
the SPSS and Stata files here (their writers are what agencies' exports go through), and the
``.sas7bdat``, ``.xpt`` and format catalogs come from pyreadstat's public test corpus, written
by SAS itself (``readstat_corpus/README.md``). Each test states the values the file holds, so
the expected levels, codes and missing kinds are read off the writing code.
"""

from __future__ import annotations

import json
import shutil
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pyreadstat
import pytest

import bayes_risk as br
from bayes_risk.data import SyntheticData, file_labels, infer_schema, read_table
from bayes_risk.data.statfiles import LETTER_MISSING, FileLabels
from bayes_risk.exceptions import BayesRiskError, DataWarning, SchemaError, ValidationError

CORPUS = Path(__file__).parent / "readstat_corpus"


def _spss(path: Path) -> Path:
    """An SPSS file as a survey export: labelled codes with user-missing 8/9, a numeric column
    whose missing codes are labelled (-9 "refused") and a range, an ordinal, a text."""
    df = pd.DataFrame({
        "sex": [1.0, 2.0, 1.0, 8.0, 2.0, np.nan, 9.0, 1.0],
        "income": [1200.5, -9.0, 3000.0, 998.0, 25.0, 40.0, np.nan, 7.0],
        "educ": [1.0, 2.0, 3.0, 2.0, 1.0, 3.0, 2.0, 1.0],
        "town": ["Oslo", "Bergen", "", "Oslo", "Tromsø", "Bergen", "Oslo", "Oslo"],
    })
    pyreadstat.write_sav(
        df, str(path),
        column_labels={"sex": "Sex of respondent", "income": "Monthly income (EUR)",
                       "educ": "Highest education", "town": "Town of residence"},
        variable_value_labels={"sex": {1: "Male", 2: "Female", 8: "Don't know", 9: "Refused"},
                               "income": {-9: "Refused"},
                               "educ": {1: "Primary", 2: "Secondary", 3: "Tertiary"}},
        missing_ranges={"sex": [8, 9], "income": [-9, {"lo": 990, "hi": 999}]},
        variable_measure={"sex": "nominal", "educ": "ordinal", "income": "scale"})
    return path


def _stata(path: Path) -> Path:
    """A Stata file with extended missing values: ``.a`` (labelled "refused") in a labelled
    column and ``.a``/``.b`` in a numeric one."""
    df = pd.DataFrame({
        "marital": pd.Series([1.0, 2.0, "a", 1.0, 3.0, 2.0], dtype=object),
        "hours": pd.Series([38.5, "b", 40.0, "a", 12.0, np.nan], dtype=object),
        "age": [34, 51, 29, 62, 45, 38],
    })
    pyreadstat.write_dta(
        df, str(path), column_labels={"marital": "Marital status", "hours": "Hours worked"},
        variable_value_labels={"marital": {1: "Married", 2: "Single", 3: "Widowed",
                                           "a": "Refused"}},
        missing_user_values={"marital": ["a"], "hours": ["a", "b"]})
    return path


# ---- reading ----------------------------------------------------------------------------------


def test_spss_value_labels_become_levels_and_missing_kinds_stay_apart(tmp_path):
    df = read_table(_spss(tmp_path / "survey.sav"))
    # labels in declared order, then one level per missing kind (its label)
    assert list(df["sex"].cat.categories) == ["Male", "Female", "Don't know", "Refused"]
    assert df["sex"].tolist()[:5] == ["Male", "Female", "Male", "Don't know", "Female"]
    assert pd.isna(df["sex"].iloc[5]) and df["sex"].iloc[6] == "Refused"  # sysmis stays empty
    assert df["educ"].dtype.ordered and list(df["educ"].cat.categories) == [
        "Primary", "Secondary", "Tertiary"]
    # a numeric column whose labels are on its missing codes only stays numeric; the codes
    # (-9 discrete, 998 in the range 990-999) are its missing-value codes
    assert df["income"].dtype == np.float64
    assert df["income"].tolist()[:4] == [1200.5, -9.0, 3000.0, 998.0]
    assert df["town"].tolist()[2] is None or pd.isna(df["town"].iloc[2])  # "" is empty
    labels = file_labels(df)
    assert labels.file_format == "sav"
    assert labels.missing_codes == {"income": (-9.0, 998.0)}
    assert labels.missing_levels == {"sex": ("Don't know", "Refused")}
    assert labels.variable_labels["income"] == "Monthly income (EUR)"
    schema = infer_schema(df)
    assert schema["income"].missing_codes == (-9.0, 998.0)
    assert schema["income"].type == "continuous"
    assert schema["educ"].type == "ordinal"
    assert schema["sex"].levels == ("Male", "Female", "Don't know", "Refused")


def test_stata_extended_missing_values(tmp_path):
    df = read_table(_stata(tmp_path / "survey.dta"))
    assert list(df["marital"].cat.categories) == ["Married", "Single", "Widowed", "Refused"]
    assert df["marital"].tolist() == ["Married", "Single", "Refused", "Married", "Widowed",
                                      "Single"]
    a, b = LETTER_MISSING["a"], LETTER_MISSING["b"]
    assert (a, b) == (-1_000_000_001.0, -1_000_000_002.0)
    assert df["hours"].tolist()[:5] == [38.5, b, 40.0, a, 12.0] and pd.isna(df["hours"].iloc[5])
    assert df["age"].dtype == np.int64  # whole numbers, none missing: as a CSV file reads them
    schema = infer_schema(df)
    assert schema["hours"].missing_codes == (b, a)
    # the kinds stay apart: empty (1), .b (2), .a (3)
    from bayes_risk.data.missing import missing_kinds

    assert missing_kinds(df["hours"], schema["hours"].missing_codes).tolist() == [0, 2, 0, 3, 0,
                                                                                   1]


def test_pandas_stata_file_keeps_the_category_order(tmp_path):
    df = pd.DataFrame({"tenure": pd.Categorical(["Owner", "Renter", None, "Owner"],
                                                categories=["Renter", "Owner", "Other"]),
                       "rooms": [3.0, 2.0, 5.0, 4.5]})
    df.to_stata(tmp_path / "p.dta", write_index=False, variable_labels={"rooms": "Rooms"})
    back = read_table(tmp_path / "p.dta")
    # pandas writes the codes 0, 1, 2 with the categories as their labels
    assert list(back["tenure"].cat.categories) == ["Renter", "Owner", "Other"]
    assert back["tenure"].tolist()[:2] == ["Owner", "Renter"] and pd.isna(back["tenure"][2])
    assert file_labels(back).variable_labels == {"rooms": "Rooms"}
    # the unused declared level is a level of the schema, as for a pandas categorical
    assert infer_schema(back)["tenure"].levels == ("Renter", "Owner", "Other")


def test_sas_special_missing_values_from_the_corpus():
    # SAS wrote: var1=.A (format A: .A = "missing"), var2=.B, var3=.C, var4=.X, var5=.Y,
    # var6=.Z, var7=._, var8=., var9=1 (readstat_corpus/README.md)
    df = read_table(CORPUS / "missing_test.sas7bdat")
    expect = {f"var{k}": LETTER_MISSING[x] for k, x in zip(range(1, 8), "abcxyz_", strict=True)}
    for c, code in expect.items():
        assert df[c].tolist() == [code], c
    assert pd.isna(df["var8"][0]) and df["var9"].tolist() == [1]
    labels = file_labels(df)
    assert labels.user_missing["var7"] == ["_"] and labels.user_missing["var1"] == ["A"]
    assert labels.value_labels["var1"] == [("A", "missing")]  # from the catalog beside it
    assert infer_schema(df)["var4"].missing_codes == (LETTER_MISSING["x"],)
    # Stata's file of the same record (.a-.z; Stata has no ._): the same codes
    dta = read_table(CORPUS / "missing_test.dta")
    assert [dta[f"var{k}"][0] for k in range(1, 7)] == [expect[f"var{k}"] for k in range(1, 7)]


def test_sas_format_catalog_gives_text_columns_their_levels(tmp_path):
    df = read_table(CORPUS / "test_data_linux.sas7bdat")
    assert list(df["SEXA"].cat.categories) == ["Male", "Female"]  # $A: '1' Male, '2' Female
    assert list(df["SEXB"].cat.categories) == ["Female", "Male"]  # $B: '2' Female, '1' Male
    assert df["SEXA"].tolist() == ["Male", "Female", "Male"] == df["SEXB"].tolist()
    assert file_labels(df).sas_formats == {"SEXA": "$A", "SEXB": "$B"}
    # without its catalog the codes are read as they are, with a warning naming the formats
    shutil.copy(CORPUS / "test_data_linux.sas7bdat", tmp_path / "alone.sas7bdat")
    with pytest.warns(DataWarning, match=r"SEXA \(\$A\).*VALUE_LABELS_NOT_FOUND.*types \(e\.g\. "
                      r"categorical=\[\.\.\.\] in infer_schema\)\.$"):
        alone = read_table(tmp_path / "alone.sas7bdat")
    assert alone["SEXA"].tolist() == ["1", "2", "1"]


@pytest.mark.parametrize("name", ["sample.sas7bdat", "sample.xpt"])
def test_sas_files_of_the_corpus_read_as_their_csv(name):
    df = read_table(CORPUS / name)
    df.columns = [c.lower() for c in df.columns]  # the transport file's names are upper case
    csv = pd.read_csv(CORPUS / "sample.csv", encoding="utf-8-sig")
    assert df["mychar"].tolist() == csv["mychar"].tolist()
    np.testing.assert_allclose(df["mynum"], csv["mynum"], rtol=0, atol=1e-12)
    assert df["mylabl"].tolist() == csv["mylabl"].tolist() and df["mylabl"].dtype == np.int64
    # dates and times as ISO text, empty where the file holds none
    assert df["mydate"].tolist()[:4] == csv["mydate"].tolist()[:4] and pd.isna(df["mydate"][4])
    assert df["dtime"][0] == "2018-05-06 10:10:10" and df["mytime"][1] == "23:10:10"
    assert file_labels(df).dates["mydate" if name.endswith("bdat") else "MYDATE"] == "date"


def test_spss_user_missing_from_the_corpus():
    # sample_missing.sav: mynum user-missing 2000 to 3000 and -1; mylabl -1 "undetermined";
    # myord -1 "missing", -2, -3 (SPSS measure ordinal)
    with pytest.warns(DataWarning, match="MISSING_LEVELS_UNORDERED"):
        df = read_table(CORPUS / "sample_missing.sav")
    assert df["mynum"].tolist()[-2:] == [-1.0, 2500.0]
    assert infer_schema(df)["mynum"].missing_codes == (-1.0, 2500.0)
    assert list(df["mylabl"].cat.categories) == ["Male", "Female", "undetermined"]
    # -2 is declared but not held: no level; -3 has no label: its code is its level
    assert list(df["myord"].cat.categories) == ["low", "medium", "high", "missing", "-3"]
    assert not df["myord"].dtype.ordered
    # declared missing, the levels become empty cells and the order is kept
    kept = read_table(CORPUS / "sample_missing.sav", missing_labels={"myord": ["missing", "-3"]})
    assert list(kept["myord"].cat.categories) == ["low", "medium", "high"]
    assert kept["myord"].isna().sum() == 2


# ---- files that cannot be read as they are -----------------------------------------------------


def test_a_value_without_a_label_is_refused_unless_the_column_is_numeric(tmp_path):
    df = pd.DataFrame({"region": [1.0, 2.0, 3.0, 7.0, 7.0]})
    pyreadstat.write_sav(df, str(tmp_path / "r.sav"),
                         variable_value_labels={"region": {1: "North", 2: "South", 3: "East"}})
    with pytest.raises(SchemaError, match=r"'region'.* 7 \(2 record") as err:
        read_table(tmp_path / "r.sav")
    assert err.value.code == "VALUE_WITHOUT_LABEL"
    assert read_table(tmp_path / "r.sav", numeric=["region"])["region"].tolist() == [1, 2, 3, 7, 7]


def test_one_label_for_two_codes_is_refused(tmp_path):
    pyreadstat.write_sav(pd.DataFrame({"job": [1.0, 2.0, 3.0]}), str(tmp_path / "j.sav"),
                         variable_value_labels={"job": {1: "Clerk", 2: "Other", 3: "Other"}})
    with pytest.raises(SchemaError, match=r"'Other' to the codes 2, 3") as err:
        read_table(tmp_path / "j.sav")
    assert err.value.code == "DUPLICATE_VALUE_LABEL"


@pytest.mark.parametrize("cut", [0.5, 0.9])
def test_a_truncated_file_is_refused(tmp_path, cut):
    raw = _spss(tmp_path / "s.sav").read_bytes()
    (tmp_path / "t.sav").write_bytes(raw[: int(len(raw) * cut)])
    with pytest.raises(ValidationError, match="damaged or truncated") as err:
        read_table(tmp_path / "t.sav")
    assert err.value.code == "FILE_UNREADABLE"


def test_a_text_file_under_a_stata_name_is_refused(tmp_path):
    (tmp_path / "x.dta").write_text("a,b\n1,2\n")
    with pytest.raises(ValidationError, match="not a Stata file") as err:
        read_table(tmp_path / "x.dta")
    assert err.value.code == "FILE_UNREADABLE"


def test_text_in_another_encoding_than_declared_is_refused(tmp_path):
    # ReadStat drops bytes it cannot convert without a word ("Tromsø" would be read "Troms")
    raw = bytearray(_spss(tmp_path / "s.sav").read_bytes())
    at = raw.find("Tromsø".encode())
    raw[at + 5:at + 7] = "ø ".encode("latin-1")  # Latin-1 byte in a file declared UTF-8
    (tmp_path / "e.sav").write_bytes(bytes(raw))
    with pytest.raises(ValidationError, match=r"encoding UTF-8 but column 'town'.*record 4") as e:
        read_table(tmp_path / "e.sav")
    assert e.value.code == "FILE_ENCODING"


def test_a_value_equal_to_a_special_missing_code_is_refused(tmp_path):
    df = pd.DataFrame({"x": pd.Series([LETTER_MISSING["a"], "b", 3.0], dtype=object)})
    pyreadstat.write_dta(df, str(tmp_path / "c.dta"), missing_user_values={"x": ["b"]})
    with pytest.raises(SchemaError) as err:
        read_table(tmp_path / "c.dta")
    assert err.value.code == "LETTER_MISSING_CODE_TAKEN"


# ---- writing ----------------------------------------------------------------------------------


def _release(df: pd.DataFrame, m: int = 2) -> SyntheticData:
    return SyntheticData([df.copy() for _ in range(m)], schema=infer_schema(df))


@pytest.mark.parametrize("fmt", ["sav", "zsav", "csv", "parquet"])
def test_spss_release_round_trip(tmp_path, fmt):
    df = read_table(_spss(tmp_path / "survey.sav"))
    folder = _release(df).save(tmp_path / "rel", file_format=fmt, labels=file_labels(df))
    man = json.loads((folder / "manifest.json").read_text())
    assert man["file_format"] == fmt
    assert man["files"] == [f"syn_001.{fmt}", f"syn_002.{fmt}"]
    back = SyntheticData.load(folder)
    for z in back:
        pd.testing.assert_frame_equal(z, df, check_exact=True)
    assert back.schema.to_dict() == infer_schema(df).to_dict()
    if fmt in ("sav", "zsav"):  # the file itself says what the original said
        _, meta = pyreadstat.read_sav(str(folder / f"syn_001.{fmt}"), user_missing=True)
        assert meta.variable_value_labels["sex"] == {1.0: "Male", 2.0: "Female",
                                                     8.0: "Don't know", 9.0: "Refused"}
        assert meta.missing_ranges["sex"] == [{"lo": 8.0, "hi": 8.0}, {"lo": 9.0, "hi": 9.0}]
        assert meta.missing_ranges["income"] == [{"lo": 990.0, "hi": 999.0},  # SPSS's order
                                                 {"lo": -9.0, "hi": -9.0}]
        assert meta.column_names_to_labels["sex"] == "Sex of respondent"
        assert meta.variable_measure["educ"] == "ordinal"


def test_stata_release_round_trip(tmp_path):
    df = read_table(_stata(tmp_path / "survey.dta"))
    folder = _release(df).save(tmp_path / "rel", file_format="dta", labels=file_labels(df))
    back = SyntheticData.load(folder)
    pd.testing.assert_frame_equal(back[1], df, check_exact=True)
    raw, meta = pyreadstat.read_dta(str(folder / "syn_001.dta"), user_missing=True)
    assert raw["hours"].tolist()[:5] == [38.5, "b", 40.0, "a", 12.0]
    assert raw["marital"].tolist() == [1, 2, "a", 1, 3, 2]
    assert meta.variable_value_labels["marital"] == {1: "Married", 2: "Single", 3: "Widowed",
                                                     "a": "Refused"}
    assert sorted(meta.missing_user_values["hours"]) == ["a", "b"]
    assert meta.column_names_to_labels["marital"] == "Marital status"


def test_transport_release_keeps_codes_and_writes_the_formats(tmp_path):
    df = read_table(CORPUS / "test_data_linux.sas7bdat")
    folder = _release(df).save(tmp_path / "rel", file_format="xpt", labels=file_labels(df))
    raw, meta = pyreadstat.read_xport(str(folder / "syn_001.xpt"))
    assert raw["SEXA"].tolist() == ["1", "2", "1"]  # the codes, with their formats named
    assert meta.original_variable_types["SEXA"].startswith("$A")
    program = (folder / "formats.sas").read_text()
    assert "value $A\n    '1' = 'Male'\n    '2' = 'Female';" in program
    back = SyntheticData.load(folder)
    pd.testing.assert_frame_equal(back[0], df, check_exact=True)


@pytest.mark.parametrize("source, fmt", [("stata", "sav"), ("stata", "xpt"), ("spss", "dta")])
def test_a_format_that_cannot_hold_the_missing_kinds_is_refused(tmp_path, source, fmt):
    make = _stata if source == "stata" else _spss
    df = read_table(make(tmp_path / f"in.{'dta' if source == 'stata' else 'sav'}"))
    with pytest.raises(ValidationError) as err:
        _release(df).save(tmp_path / "rel", file_format=fmt, labels=file_labels(df))
    assert err.value.code == "FORMAT_CANNOT_HOLD"
    # the format that can, as a Python caller writes it (the command line: --format)
    assert f"file_format={'dta' if source == 'stata' else 'sav'!r}" in str(err.value)
    assert "--format" not in str(err.value)
    assert not (tmp_path / "rel").exists()  # nothing half-written


def test_file_labels_survive_json_and_parquet(tmp_path):
    df = read_table(_stata(tmp_path / "s.dta"))
    labels = file_labels(df)
    assert FileLabels.from_dict(json.loads(json.dumps(labels.to_dict()))) == labels
    df.to_parquet(tmp_path / "s.parquet")  # pandas stores attrs as JSON
    assert file_labels(pd.read_parquet(tmp_path / "s.parquet")) == labels
    assert file_labels(df[["hours"]].copy()) == labels  # kept through pandas operations
    with pytest.raises(ValidationError) as err:
        FileLabels.from_dict({"value_labels": {}})
    assert err.value.code == "FILE_LABELS_INVALID"


def test_write_table_writes_the_labels_back(tmp_path):
    df = read_table(_spss(tmp_path / "s.sav"))
    br.data.write_table(df, tmp_path / "copy.sav")
    again = read_table(tmp_path / "copy.sav")
    pd.testing.assert_frame_equal(again, df)
    assert file_labels(again).variable_labels == file_labels(df).variable_labels


def test_unsupported_extension_names_the_formats(tmp_path):
    (tmp_path / "x.por").write_text("")
    with pytest.raises(BayesRiskError, match=r"\.sas7bdat, \.xpt, \.dta, \.sav or \.zsav"):
        read_table(tmp_path / "x.por")


def test_read_synthetic_reads_a_labelled_column_declared_numeric_as_codes(tmp_path):
    df = pd.DataFrame({"age": [0.0, 35.0, 99.0, 40.0]})
    for name in ("o.sav", "s.sav"):
        pyreadstat.write_sav(df, str(tmp_path / name),
                             variable_value_labels={"age": {0: "under 1", 99: "99 or older"}})
    original = read_table(tmp_path / "o.sav", numeric=["age"])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        syn = br.read_synthetic([tmp_path / "s.sav"], like=original)
    assert syn[0]["age"].tolist() == [0, 35, 99, 40]


def test_a_label_in_another_encoding_than_declared_is_refused(tmp_path):
    pyreadstat.write_sav(pd.DataFrame({"lang": [1.0, 2.0]}), str(tmp_path / "l.sav"),
                         variable_value_labels={"lang": {1: "Bokmål", 2: "Nynorsk"}})
    raw = bytearray((tmp_path / "l.sav").read_bytes())
    at = raw.find("Bokmål".encode())
    raw[at + 4:at + 6] = "å ".encode("latin-1")
    (tmp_path / "bad.sav").write_bytes(bytes(raw))
    # ReadStat refuses a label it cannot convert (a value it would shorten: test above)
    with pytest.raises(ValidationError, match="not in the encoding it declares") as err:
        read_table(tmp_path / "bad.sav")
    assert err.value.code == "FILE_ENCODING"
    assert read_table(tmp_path / "l.sav")["lang"].tolist() == ["Bokmål", "Nynorsk"]
