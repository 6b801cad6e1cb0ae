"""SAS, Stata and SPSS files through the command line (issue 71): a Stata original with value
labels gives the same release and the same audit figures as the same table in CSV with its
levels declared by hand, and ``synthesize``, ``fit`` + ``synthesize --model`` and ``remedy``
write the release in the original's format with its labels (``--format``)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pyreadstat
import pytest

from bayes_risk.data import SyntheticData, make_ce_like

LABELS = {
    "Urban": {1: "Urban", 2: "Rural"},
    "Tenure": {1: "Owner with mortgage", 2: "Owner without mortgage", 4: "Renter",
               5: "Other"},
    "Marital": {1: "Married", 2: "Widowed", 3: "Divorced", 4: "Separated", 5: "Never married"},
}
NAMES = {"Age": "Age of reference person", "Income": "Household income (USD)",
         "Tenure": "Housing tenure", "Marital": "Marital status"}


@pytest.fixture(scope="module")
def work(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("statfiles")
    ce = make_ce_like(600, random_seed=1).astype({"Income": np.int64})  # whole dollars
    # the same table twice: Stata with value labels (as pyreadstat exports it) and CSV codes
    pyreadstat.write_dta(ce, str(root / "ce.dta"), column_labels=NAMES,
                         variable_value_labels=LABELS)
    ce.to_csv(root / "ce.csv", index=False)
    return root


def _synthesize(cli, work: Path, src: str, out: str, *extra: str) -> None:
    r = cli(["synthesize", src, "--method", "cart", "--synthesize", "Tenure", "Income", "-m",
             "2", "--random-seed", "1", "-q", "--out", out, *extra], work)
    assert r.returncode == 0, r.stderr


def test_synthesize_writes_a_stata_release_equal_to_the_csv_one(cli, work):
    _synthesize(cli, work, "ce.dta", "rel_dta", "--format", "dta")
    _synthesize(cli, work, "ce.csv", "rel_csv", "--categorical", "Urban", "Tenure", "Marital")
    man = json.loads((work / "rel_dta" / "manifest.json").read_text())
    assert man["file_format"] == "dta" and man["files"] == ["syn_001.dta", "syn_002.dta"]
    raw, meta = pyreadstat.read_dta(str(work / "rel_dta" / "syn_001.dta"))
    assert meta.variable_value_labels["Tenure"] == LABELS["Tenure"]
    assert meta.column_names_to_labels["Income"] == NAMES["Income"]
    dta, csv = SyntheticData.load(work / "rel_dta"), SyntheticData.load(work / "rel_csv")
    assert dta.schema["Tenure"].levels == ("Owner with mortgage", "Owner without mortgage",
                                           "Renter", "Other")
    assert csv.schema["Tenure"].levels == (1, 2, 4, 5)
    for a, b in zip(dta, csv, strict=True):
        # the same draws: the labels are the codes' names, in the codes' order
        assert a["Income"].tolist() == b["Income"].tolist()
        assert raw is not None and a["Tenure"].cat.codes.tolist() == pd.Categorical(
            b["Tenure"], categories=[1, 2, 4, 5]).codes.tolist()


@pytest.mark.slow
def test_audit_of_the_stata_original_gives_the_csv_figures(cli, work):
    # 600 records, CART, m = 2: about 25 s of CPU for the two audits
    for name in ("rel_dta", "rel_csv"):
        if not (work / name).exists():
            test_synthesize_writes_a_stata_release_equal_to_the_csv_one(cli, work)
    common = ["--known", "Age", "Urban", "Marital", "Tenure", "--random-seed", "3", "-q",
              "--skip", "membership", "attacks"]
    r = cli(["audit", "ce.dta", "rel_dta", *common, "--out", "audit_dta"], work)
    assert r.returncode == 0, r.stderr
    r = cli(["audit", "ce.csv", "rel_csv", "--categorical", "Urban", "Tenure", "Marital",
             *common, "--out", "audit_csv"], work)
    assert r.returncode == 0, r.stderr
    a = json.loads((work / "audit_dta" / "summary.json").read_text())
    b = json.loads((work / "audit_csv" / "summary.json").read_text())
    va = {(v["step"], v["measure"]): v["value"] for v in a["verdicts"]}
    vb = {(v["step"], v["measure"]): v["value"] for v in b["verdicts"]}
    assert len(va) >= 5 and va == vb
    assert {v["step"] for v in a["verdicts"]} >= {"utility", "identification", "attribute",
                                                   "disclosure"}
    assert a["warnings"] == b["warnings"]
    assert a["variable_labels"]["Income"] == NAMES["Income"] and "variable_labels" not in b
    html = (work / "audit_dta" / "report.html").read_text()
    assert "Income (Household income (USD))" in html and 'id="variables"' in html


def test_fit_keeps_the_labels_for_synthesize_model(cli, work):
    r = cli(["fit", "ce.dta", "--method", "cart", "--synthesize", "Income", "--random-seed",
             "2", "-q", "--out", "cart_fit"], work)
    assert r.returncode == 0, r.stderr
    assert json.loads((work / "cart_fit" / "file_labels.json").read_text())["file_format"] == "dta"
    r = cli(["synthesize", "--model", "cart_fit", "-m", "1", "--random-seed", "4", "--format",
             "sav", "-q", "--out", "rel_sav"], work)
    assert r.returncode == 0, r.stderr
    raw, meta = pyreadstat.read_sav(str(work / "rel_sav" / "syn_001.sav"))
    assert meta.variable_value_labels["Marital"] == {float(k): v
                                                     for k, v in LABELS["Marital"].items()}
    assert raw["Marital"].isin([1.0, 2.0, 3.0, 4.0, 5.0]).all()


def test_remedy_writes_the_format_asked(cli, work):
    if not (work / "rel_dta").exists():
        _synthesize(cli, work, "ce.dta", "rel_dta", "--format", "dta")
    r = cli(["remedy", "ce.dta", "rel_dta", "--bottom-top", "Income=:60000", "--format", "dta",
             "-q", "--out", "coded"], work)
    assert r.returncode == 0, r.stderr
    raw, meta = pyreadstat.read_dta(str(work / "coded" / "syn_002.dta"))
    assert raw["Income"].max() <= 60000
    assert meta.variable_value_labels["Urban"] == LABELS["Urban"]
    assert json.loads((work / "coded" / "manifest.json").read_text())["file_format"] == "dta"


def test_unlabelled_codes_are_refused_unless_declared_numeric(cli, work):
    df = pd.DataFrame({"rooms": [1.0, 2.0, 3.0, 9.0] * 5, "x": np.arange(20.0)})
    pyreadstat.write_sav(df, str(work / "bad.sav"),
                         variable_value_labels={"rooms": {1: "one", 2: "two", 3: "three"}})
    fit = ["fit", "bad.sav", "--method", "cart", "--synthesize", "x", "-q"]
    r = cli([*fit, "--out", "fit1"], work)
    assert r.returncode != 0 and "[VALUE_WITHOUT_LABEL]" in r.stderr
    assert "value(s) 9 (5 record(s)) have none" in r.stderr
    assert "--count rooms or --continuous rooms" in r.stderr
    r = cli([*fit, "--count", "rooms", "--out", "fit2"], work)
    assert r.returncode == 0, r.stderr


def test_a_format_the_release_cannot_take_is_refused_before_writing(cli, work):
    df = pd.DataFrame({"hours": pd.Series([38.5, "a", 40.0, 12.0] * 10, dtype=object),
                       "age": np.arange(40) % 7 + 20})
    pyreadstat.write_dta(df, str(work / "h.dta"), missing_user_values={"hours": ["a"]})
    r = cli(["synthesize", "h.dta", "--method", "cart", "--synthesize", "hours", "-m", "1",
             "--random-seed", "1", "--format", "sav", "-q", "--out", "rel_h"], work)
    assert r.returncode != 0 and "[FORMAT_CANNOT_HOLD]" in r.stderr
    assert not (work / "rel_h").exists()
