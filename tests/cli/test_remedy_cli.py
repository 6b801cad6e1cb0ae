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
    aud = tmp_path / "aud"
    assert main(["audit", "ce.csv", str(out), "--known", "Age", "Urban", "Marital",
                 "--categorical", *CE_CAT, "--random-seed", "1", "-q", "--out", str(aud)]) == 0
    summary = json.loads((aud / "summary.json").read_text())
    steps = {s["name"]: s for s in summary["steps"]}
    for name in ("attribute", "posterior_identification"):
        assert steps[name]["status"] == "skipped"
        assert "post-processed" in steps[name]["reason"]
    assert steps["identification"]["status"] == "ran"
    assert steps["disclosure"]["status"] == "ran"
    assert "post-processed" in (aud / "report.md").read_text()


@pytest.mark.parametrize("extra, code, text", [
    (["--bottom-top", "Income=5"], "BAD_OPTION_VALUE", "COL=BOTTOM:TOP"),
    (["--bottom-top", "Income=a:5"], "BAD_OPTION_VALUE", "'a' is not a number"),
    (["--bottom-top", "Income=9:5"], "INVALID_ARGUMENT", "above top"),
    (["--exclude", "Income=1"], "OPTION_CONFLICT", "--exclude"),
    (["--bottom-top", "Income=:5", "--exclude", "Expenditure=1"], "INVALID_ARGUMENT",
     "recode_exclude"),
    ([], "OPTION_REQUIRED", "nothing to do"),
    (["--smooth", "Urban"], "REMEDY_NOT_APPLICABLE", "unsynthesized"),
    (["--keys", "Age", "--smooth", "Income"], "OPTION_CONFLICT", "--keys"),
    (["--remove", "replicated-uniques"], "REMEDY_NOT_APPLICABLE", "partially synthetic"),
    (["--smooth", "Nope"], "MISSING_COLUMN", "'Nope'"),
])
def test_bad_options_write_nothing(work, tmp_path, monkeypatch, capsys, extra, code, text):
    monkeypatch.chdir(work)
    out = tmp_path / "o"
    assert main(["remedy", "ce.csv", "rel", *extra, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"[{code}]" in err and text in err, err
    assert not out.exists()
