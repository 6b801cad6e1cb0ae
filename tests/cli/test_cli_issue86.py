"""Issue 86: what a careless or hostile colleague's files could make the package do quietly.
Value labels swapped between the original and a release or holdout; empty or degenerate radius
grids; the coordinate search said in every command that does it; identifier and sparse columns in
``attacks``; misleading errors. (A PyMC model folder that names a module: tests/cli/
test_pymc_cli.py; checksums deleted from a release: tests/data/test_provenance.py.) Each case
fails on the code before the fix (7c1914f3)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

import bayes_risk as br
from bayes_risk.cli import main

pyreadstat = pytest.importorskip("pyreadstat")

URBAN = {1: "Urban", 2: "Rural"}
SWAPPED = {1: "Rural", 2: "Urban"}


@pytest.fixture(scope="module")
def work(tmp_path_factory) -> Path:
    """A CE-like table (as .csv and as an SPSS file labelling Urban 1 = Urban), a CART release
    of it, the release's first dataset as SPSS files labelled as the original and swapped, and
    a holdout labelled either way."""
    d = tmp_path_factory.mktemp("issue86")
    ce = br.make_ce_like(600, random_seed=1)
    orig, hold = ce.iloc[:300].reset_index(drop=True), ce.iloc[300:].reset_index(drop=True)
    orig.to_csv(d / "ce.csv", index=False)
    pyreadstat.write_sav(orig, str(d / "ce.sav"), variable_value_labels={"Urban": URBAN})
    assert main(["synthesize", str(d / "ce.csv"), "--method", "cart", "--synthesize", "Tenure",
                 "Expenditure", "Income", "--categorical", "Urban", "Marital", "Tenure", "Educ",
                 "-m", "2", "--random-seed", "1", "-q", "--out", str(d / "cesyn")]) == 0
    z = pd.read_parquet(d / "cesyn" / "syn_001.parquet")
    # a household number (the holdout's never in the original) and a postal code of 10,000
    # possible levels, both released as they are
    ids = pd.DataFrame({"hid": [f"H{i:05d}" for i in range(600)],
                        "zip": [f"Z{(i * 7919) % 10000:05d}" for i in range(600)]})
    orig.join(ids.iloc[:300]).to_csv(d / "ceid.csv", index=False)
    hold.join(ids.iloc[300:].reset_index(drop=True)).to_csv(d / "ceid_hold.csv", index=False)
    for i in (1, 2):
        pd.read_parquet(d / "cesyn" / f"syn_00{i}.parquet").join(ids.iloc[:300]).to_csv(
            d / f"ceid_syn{i}.csv", index=False)
    for name, labels, table in (("oksyn", URBAN, z), ("swsyn", SWAPPED, z),
                                ("okhold", URBAN, hold), ("swhold", SWAPPED, hold)):
        pyreadstat.write_sav(table, str(d / f"{name}.sav"),
                             variable_value_labels={"Urban": labels})
    return d


def _run(work: Path, capsys, argv: list[str], out: str) -> tuple[int, str]:
    capsys.readouterr()
    rc = main([*[str(a) for a in argv], "-q", "--out", str(work / out)])
    return rc, capsys.readouterr().err


# ----------------------------------------------------------------- value labels (item 2)
def _label_commands(w: Path, syn: str) -> dict[str, list]:
    o = w / "ce.sav"
    return {
        "disclosure": ["disclosure", o, w / syn, "--keys", "Age", "Urban", "Marital", "--target",
                       "Tenure", "--categorical", "Educ"],
        "utility": ["utility", o, w / syn, "--categorical", "Educ", "Marital", "Tenure"],
        "identification": ["identification", o, w / syn, "--known-unsynthesized", "Age", "Urban",
                           "Marital", "--known-synthesized", "Income"],
        "attacks": ["attacks", o, w / syn, "--n-attacks", "20"],
        "audit": ["audit", o, w / syn, "--known", "Age", "Urban", "Marital"],
    }


@pytest.mark.parametrize("command", ["disclosure", "utility", "identification", "attacks",
                                     "audit"])
def test_swapped_value_labels_are_refused_naming_both_maps(work, capsys, command):
    rc, err = _run(work, capsys, _label_commands(work, "swsyn.sav")[command], f"sw_{command}")
    assert rc == 2 and "error [VALUE_LABELS_DIFFER]" in err, err
    assert "{1: 'Rural', 2: 'Urban'}" in err and "{1: 'Urban', 2: 'Rural'}" in err
    assert "swsyn.sav" in err and "--recoded Urban" in err


def test_the_same_labels_pass_and_a_declared_recoding_warns(work, capsys):
    argv = _label_commands(work, "oksyn.sav")["disclosure"]
    rc, err = _run(work, capsys, argv, "ok_disclosure")
    assert rc == 0 and "VALUE_LABELS_DIFFER" not in err
    argv = _label_commands(work, "swsyn.sav")["disclosure"]
    rc, err = _run(work, capsys, [*argv, "--recoded", "Urban"], "recoded_disclosure")
    assert rc == 0 and "warning [VALUE_LABELS_DIFFER]" in err


def test_a_holdout_with_swapped_labels_is_refused(work, capsys):
    base = ["attacks", work / "ce.sav", work / "oksyn.sav", "--n-attacks", "20", "--holdout"]
    rc, err = _run(work, capsys, [*base, work / "swhold.sav"], "hold_sw")
    assert rc == 2 and "error [VALUE_LABELS_DIFFER]" in err and "holdout" in err
    rc, err = _run(work, capsys, [*base, work / "okhold.sav"], "hold_ok")
    assert rc == 0, err


def test_the_python_api_compares_the_labels_of_tables_read_from_files(work):
    o = br.read_table(work / "ce.sav")
    z = br.read_table(work / "swsyn.sav")
    with pytest.raises(br.exceptions.SchemaError) as err:
        br.disclosure_measures(o, [z], keys=["Age", "Urban", "Marital"], target="Tenure")
    assert err.value.code == "VALUE_LABELS_DIFFER"


# ---------------------------------------------------------- radius grids (item 3)
ID = ["--known-unsynthesized", "Age", "Urban", "Marital", "--known-synthesized", "Income",
      "--categorical", "Urban", "Marital"]


@pytest.mark.parametrize(("grid", "says"), [
    ("", "no radius above 0"),  # an empty shell variable: was exact matching alone, quietly
    ("0", "no radius above 0"),
    ("nan,0.1", "finite numbers >= 0"),  # was blamed on --radius-sweep
    ("-0.1,0.2", "finite numbers >= 0"),  # was "unrecognized arguments"
    ("1e308", "overflows"),  # was a raw numpy overflow warning, and every value matched
])
def test_a_degenerate_radius_search_grid_is_refused_naming_the_option(work, capsys, grid, says):
    rc, err = _run(work, capsys, ["identification", work / "ce.csv", work / "cesyn", *ID,
                                  "--radius-search", grid], "search")
    assert rc == 2 and "error [BAD_OPTION_VALUE]: --radius-search" in err, err
    assert says in err and "--radius-sweep" not in err and "RuntimeWarning" not in err


@pytest.mark.parametrize(("grid", "says"), [("", "no radius above 0"), ("1e308", "overflows")])
def test_a_degenerate_audit_grid_is_refused_before_any_step(work, capsys, grid, says):
    rc, err = _run(work, capsys, ["audit", work / "ce.csv", work / "cesyn", "--known", "Age",
                                  "Income", "--radius-sweep", grid], "audit_grid")
    assert rc == 2 and "error [BAD_OPTION_VALUE]: --radius-sweep" in err and says in err, err
    assert "step" not in err.split("--radius-sweep", 1)[1]


def test_a_radius_whose_window_overflows_is_refused(work, capsys):
    rc, err = _run(work, capsys, ["identification", work / "ce.csv", work / "cesyn", *ID,
                                  "--radius", "Income=1e308"], "radius")
    assert rc == 2 and "error [RADIUS_TOO_LARGE]: --radius Income=1e+308" in err, err
    assert "RuntimeWarning" not in err


def test_the_coordinate_search_is_warned_by_identification_too(work, capsys):
    # 12 radii each (0 and 11 given) of 3 numeric columns: 1,728 points, past max_grid=1,000;
    # Urban, Marital, Educ and Tenure are categories in the release's manifest: no radius
    grid = ",".join(f"{r / 100:g}" for r in range(1, 12))
    rc, err = _run(work, capsys, [
        "identification", work / "ce.csv", work / "cesyn", "--known-unsynthesized", "Age",
        "Urban", "Marital", "Educ", "--known-synthesized", "Income", "Expenditure", "Tenure",
        "--radius-search", grid], "coordinate")
    assert rc == 0 and "warning [RADIUS_COORDINATE_SEARCH]" in err and "3 numeric" in err
    summary = json.loads((work / "coordinate" / "summary.json").read_text())
    assert summary["radius_search"]["columns"] == ["Age", "Expenditure", "Income"]
    assert summary["radius_search"]["settings"]["search"]["mode"] == "coordinate"
    assert "RADIUS_COORDINATE_SEARCH" in summary["warnings"]
    with pytest.warns(br.exceptions.DataWarning, match="RADIUS_COORDINATE_SEARCH"):
        res = br.radius_search(pd.read_csv(work / "ce.csv"), br.read_synthetic(work / "cesyn"),
                               known=["Age", "Urban", "Marital", "Educ", "Income",
                                      "Expenditure", "Tenure"],
                               synthesized=["Income", "Expenditure", "Tenure"], radii=[0.1],
                               max_grid=5, progressbar=False)
    # the manifest's categories are left out
    assert list(res.columns) == ["Age", "Expenditure", "Income"]
    assert "RADIUS_COORDINATE_SEARCH" in res.warnings


# ------------------------------------------- identifiers and sparse columns in attacks (item 5)
@pytest.mark.parametrize("column", ["hid", "zip"])
def test_attacks_run_with_an_identifier_or_a_sparse_column(work, capsys, column):
    rc, err = _run(work, capsys, [
        "attacks", work / "ceid.csv", work / "ceid_syn1.csv", work / "ceid_syn2.csv",
        "--holdout", work / "ceid_hold.csv", "--columns", "Age", "Urban", column,
        "--categorical", column, "--n-attacks", "20", "--random-seed", "1"], f"att_{column}")
    assert rc == 0, err
    assert "warning [SPARSE_COLUMN]" in err and f"'{column}'" in err
    assert "held once" in err and "UNKNOWN_LEVEL" not in err


# --------------------------------------------------- a PyMC model sized before sampling (item 4)
def test_a_pymc_model_is_sized_before_sampling(tmp_path, capsys):
    from bayes_risk._memory import memory_limit
    from bayes_risk.models import PyMCSynthesizer, Sampling

    data = pd.DataFrame({"y": [0.1, -0.4, 1.2, 0.3, -0.8, 0.5] * 5})
    data.to_csv(tmp_path / "y.csv", index=False)
    rc, err = _run(tmp_path, capsys, ["fit", tmp_path / "y.csv", "--method", "pymc",
                                      "--model-function", "_pymc_models:big_free_variable",
                                      "--memory", "2GB", "--random-seed", "1"], "fit")
    assert rc == 2 and "error [MEMORY_TOO_LARGE]" in err, err
    assert "3,000,001 values a draw" in err and "--draws" in err and "NUTS" in err
    assert not (tmp_path / "fit").exists()
    # in Python too, before anything is compiled: 10 draws and 10 warm-up of one chain hold
    # 24 MB a copy of a draw, and NUTS's 42 vectors a chain
    model = PyMCSynthesizer(model_function="_pymc_models:big_free_variable",
                            sampling=Sampling(draws=10, tune=10, chains=1), progressbar=False)
    with memory_limit("1GB"), pytest.raises(br.exceptions.ValidationError) as caught:
        model.fit(data, random_seed=1)
    assert caught.value.code == "MEMORY_TOO_LARGE" and "3,000,001 values" in str(caught.value)


# ------------------------------------------------------------ misleading errors (item 6)
def test_an_unknown_aux_column_is_blamed_on_aux_columns(work, capsys):
    rc, err = _run(work, capsys, ["attacks", work / "ce.csv", work / "cesyn", "--singling-out",
                                  "none", "--inference", "Tenure", "--aux-columns", "Age",
                                  "Nope"], "aux")
    assert rc == 2 and "error [UNKNOWN_COLUMN]: --aux-columns: column 'Nope'" in err, err


def test_regression_yes_for_a_categorical_secret_is_answered_in_options(work, capsys):
    rc, err = _run(work, capsys, ["attacks", work / "ce.csv", work / "cesyn", "--singling-out",
                                  "none", "--inference", "Tenure", "--regression", "yes",
                                  "--categorical", "Tenure"], "regression")
    assert rc == 2 and "--regression yes for the categorical secret 'Tenure'" in err, err
    assert "--regression auto or --regression no" in err and "None" not in err


def _damaged(work: Path, ext: str, change) -> Path:
    import struct

    orig = pd.read_csv(work / "ce.csv")
    raw = bytearray((work / f"ce.{ext}").read_bytes() if ext == "sav" else b"")
    if ext == "dta":
        pyreadstat.write_dta(orig, str(work / "ce.dta"), variable_value_labels={"Urban": URBAN})
        raw = bytearray((work / "ce.dta").read_bytes())
    if change == "value":  # the first record's Urban, 1, becomes 1.0625 (bytes flipped)
        at = raw.find(struct.pack("<dd", float(orig["Age"][0]), float(orig["Urban"][0])))
        assert at > 0
        raw[at + 8:at + 16] = struct.pack("<d", 1.0625)
    else:  # the header's count of records
        raw[80:84] = struct.pack("<i", change)
    out = work / f"damaged_{change}.{ext}"
    out.write_bytes(bytes(raw))
    return out


@pytest.mark.parametrize(("ext", "change", "says"), [
    ("sav", "value", "looks damaged"),  # was VALUE_WITHOUT_LABEL, advising to read it as numbers
    ("dta", "value", "looks damaged"),
    ("sav", 400, "damaged or truncated"),
    ("sav", 0, "damaged where it counts them"),  # was EMPTY_TABLE alone
])
def test_damaged_bytes_of_a_stat_file_are_reported_as_damage(work, capsys, ext, change, says):
    bad = _damaged(work, ext, change)
    rc, err = _run(work, capsys, ["disclosure", bad, work / "oksyn.sav", "--keys", "Age",
                                  "Urban", "--target", "Tenure"], "damaged")
    assert rc == 2 and says in err, err
    assert "VALUE_WITHOUT_LABEL" not in err


def test_a_pymc_container_named_after_no_column_is_named(tmp_path, capsys):
    pd.DataFrame({"area": ["a", "b", "c"] * 10, "y": [1, 2, 3, 4, 5, 6] * 5}).to_csv(
        tmp_path / "d.csv", index=False)
    rc, err = _run(tmp_path, capsys, ["fit", tmp_path / "d.csv", "--method", "pymc",
                                      "--model-function", "_pymc_models:renamed_container",
                                      "--categorical", "area"], "fit")
    assert rc == 2 and "error [MODEL_FUNCTION_INVALID]" in err, err
    assert "'area_code' holds column 'area'" in err and "RECORDS_NOT_INDEPENDENT" not in err


def test_a_zero_width_space_in_a_column_name_is_shown(work, capsys):
    text = (work / "ce.csv").read_text().replace("Age,", "Age\u200b,", 1)
    (work / "ce_zw.csv").write_text(text)
    rc, err = _run(work, capsys, ["disclosure", work / "ce_zw.csv", work / "cesyn", "--keys",
                                  "Age", "Urban", "--target", "Tenure"], "zw")
    assert rc == 2 and "Did you mean 'Age\\u200b'?" in err and "ZERO WIDTH SPACE" in err, err


def test_an_empty_dataframe_and_integer_column_names_are_said_as_such(work):
    o = pd.read_csv(work / "ce.csv")
    z = br.read_synthetic(work / "cesyn").datasets
    with pytest.raises(br.exceptions.ValidationError) as err:
        br.utility_summary(o, [z[0].iloc[:0], z[1]])
    assert err.value.code == "EMPTY_TABLE" and "synthetic dataset 1 has no records" in str(
        err.value)
    with pytest.raises(br.exceptions.ValidationError) as err:
        br.pmse(o.iloc[:0], z)
    assert err.value.code == "EMPTY_TABLE" and "the original has no records" in str(err.value)
    named = [d.set_axis(range(d.shape[1]), axis=1) for d in (o, *z)]
    for call in (lambda: br.utility_summary(named[0], named[1:]), lambda: br.infer_schema(
            named[0])):
        with pytest.raises(br.exceptions.ValidationError) as err:
            call()
        assert err.value.code == "COLUMN_NAMES_NOT_TEXT" and "astype(str)" in str(err.value)


def test_a_predictor_matrix_is_read_by_row_names(work, tmp_path, capsys):
    cols = ["Tenure", "Income"]
    pm = pd.DataFrame([[0, 1], [1, 0]], index=cols, columns=cols)
    pm.to_csv(tmp_path / "pm.csv")
    pm.iloc[::-1].to_csv(tmp_path / "pm_rows_reversed.csv")
    models = {}
    for name in ("pm", "pm_rows_reversed"):
        rc, err = _run(tmp_path, capsys, [
            "fit", work / "ce.csv", "--method", "cart", "--synthesize", *cols,
            "--categorical", "Tenure", "--predictor-matrix", tmp_path / f"{name}.csv",
            "--random-seed", "1"], name)
        assert rc == 0, err
        models[name] = json.loads((tmp_path / name / "model.json").read_text())["model_id"]
    assert models["pm"] == models["pm_rows_reversed"]
