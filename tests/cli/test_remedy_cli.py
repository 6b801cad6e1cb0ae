"""``bayes-risk remedy``: the post-processed release written with its manifest, audited again
with the model-based steps withheld; bad options refused before anything is written."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pandas as pd
import pytest

from bayes_risk.cli import main
from bayes_risk.data import SyntheticData, make_ce_like

CE_CAT = ["Urban", "Marital", "Tenure"]


@pytest.fixture(scope="module")
def work(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("remedy")
    make_ce_like(300, random_seed=5).to_csv(root / "ce.csv", index=False)
    cwd = os.getcwd()
    os.chdir(root)
    try:
        assert main(["synthesize", "ce.csv", "--method", "cart", "--synthesize", "Income",
                     "Expenditure", "--categorical", *CE_CAT, "-m", "2", "--random-seed", "1",
                     "-q", "--out", "rel"]) == 0
    finally:
        os.chdir(cwd)
    return root


def test_remedy_then_audit(work, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(work)
    top = round(float(pd.read_csv("ce.csv")["Income"].quantile(0.8)))
    out = tmp_path / "coded"
    assert main(["remedy", "ce.csv", "rel", "--bottom-top", f"Income=:{top}",
                 "--smooth", "Expenditure", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "top-coded" in text and "smoothed: Expenditure" in text
    before, after = SyntheticData.load("rel"), SyntheticData.load(out)
    for z0, z1 in zip(before, after, strict=True):
        assert (z1["Income"] <= top).all()
        assert ((z0["Income"] <= top) == (z1["Income"] == z0["Income"])).all()
        assert not z1["Expenditure"].equals(z0["Expenditure"])
        pd.testing.assert_frame_equal(z1.drop(columns=["Income", "Expenditure"]),
                                      z0.drop(columns=["Income", "Expenditure"]))
    ops = [s["operation"] for s in after.extra["post_processing"]]
    assert ops == ["bottom_top_coding", "smoothing"]
    assert after.model_id == before.model_id and after.schema == before.schema
    aud0, aud = tmp_path / "aud0", tmp_path / "aud"
    common = ["--known", "Age", "Urban", "Marital", "--categorical", *CE_CAT, "--random-seed",
              "1", "-q"]
    assert main(["audit", "ce.csv", "rel", *common, "--skip", "attribute",
                 "posterior-identification", "--out", str(aud0)]) == 0
    assert main(["audit", "ce.csv", str(out), *common, "--before", str(aud0),
                 "--out", str(aud)]) == 0
    summary = json.loads((aud / "summary.json").read_text())
    steps = {s["name"]: s for s in summary["steps"]}
    for name in ("attribute", "posterior_identification"):
        assert steps[name]["status"] == "skipped"
        assert "post-processed" in steps[name]["reason"]
    assert steps["identification"]["status"] == "ran"
    assert steps["disclosure"]["status"] == "ran"
    report = (aud / "report.md").read_text()
    assert "post-processed" in report and "### Before and after" in report
    assert "Before and after" in (aud / "report.html").read_text()
    # the verdict lines of both audits, matched by step and measure
    before = {(v["step"], v["measure"]): v["value"] for v in json.loads(
        (aud0 / "summary.json").read_text())["verdicts"]}
    pairs = summary["before_after"]["lines"]
    assert {(r["step"], r["measure"]) for r in pairs} >= set(before)
    for r in pairs:
        if (r["step"], r["measure"]) in before:
            assert r["before"] == before[(r["step"], r["measure"])]
    # an audit of another original is refused before anything runs
    other = tmp_path / "other.csv"
    make_ce_like(300, random_seed=6).to_csv(other, index=False)
    assert main(["audit", str(other), str(out), *common, "--before", str(aud0),
                 "--out", str(tmp_path / "aud2")]) == 2
    err = capsys.readouterr().err
    assert "[ORIGINAL_DIFFERS]" in err and "--before" in err, err
    assert not (tmp_path / "aud2").exists()


@pytest.mark.parametrize("extra, code, text", [
    (["--bottom-top", "Income=5"], "BAD_OPTION_VALUE", "COL=BOTTOM:TOP"),
    (["--bottom-top", "Income=a:5"], "BAD_OPTION_VALUE", "'a' is not a number"),
    (["--bottom-top", "Income=9:5"], "BAD_OPTION_VALUE", "--bottom-top Income: bottom 9"),
    (["--exclude", "Income=1"], "OPTION_CONFLICT", "--exclude"),
    (["--bottom-top", "Income=:5", "--exclude", "Expenditure=1"], "BAD_OPTION_VALUE",
     "--exclude names column(s) ['Expenditure'] that --bottom-top does not code"),
    ([], "OPTION_REQUIRED", "nothing to do"),
    (["--smooth", "Urban"], "REMEDY_NOT_APPLICABLE", "unsynthesized"),
    (["--keys", "Age", "--smooth", "Income"], "OPTION_CONFLICT", "--keys"),
    (["--remove", "replicated-uniques"], "REMEDY_NOT_APPLICABLE",
     "--remove replicated-uniques applies to fully synthetic releases"),
    (["--smooth", "Nope"], "MISSING_COLUMN", "'Nope'"),
])
def test_bad_options_write_nothing(work, tmp_path, monkeypatch, capsys, extra, code, text):
    monkeypatch.chdir(work)
    out = tmp_path / "o"
    assert main(["remedy", "ce.csv", "rel", *extra, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"[{code}]" in err and text in err, err
    # worded for the command line: the options, never the Python arguments
    assert not any(w in err for w in ("bottom_top_coding", "recode_exclude", "remove=")), err
    assert not out.exists()
