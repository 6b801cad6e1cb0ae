"""The main job: `bayes-risk demo` end to end, and the report writer."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from bayes_risk.cli import main
from bayes_risk.report import Report, format_number, markdown_table


def test_markdown_helpers():
    assert format_number(0.000123456) == "1.235e-04"
    assert format_number(12345) == "12,345"
    assert format_number(float("nan")) == "nan"
    t = markdown_table(pd.DataFrame({"a": [1, 2], "b": [0.5, None]}))
    assert t.splitlines()[0] == "| a | b |" and "| 2 | nan |" in t
    r = Report("T")
    r.heading("H")
    r.bullets(["x"])
    assert r.text() == "# T\n\n## H\n\n- x\n"


@pytest.mark.slow
def test_demo_end_to_end(tmp_path, capsys):
    out = tmp_path / "demo"
    status = main([
        "demo", "--out", str(out), "-m", "2", "--n-ce", "600", "--n-acs", "300",
        "--components", "8", "--tune", "60", "--draws", "120", "--quiet",
    ])
    assert status == 0
    report = (out / "report.md").read_text()
    printed = capsys.readouterr().out
    assert report.strip() in printed  # the report is printed at the end
    # every stage wrote its contract files, and the report presents them
    for f in [
        "ce/synthetic/manifest.json", "ce/utility/summary.json", "ce/identification/records.csv",
        "ce/identification/summary.json", "ce/identification/radius_sweep.csv",
        "ce/identification/radius_sweep.png", "acs/model/model.json", "acs/model/posterior.nc",
        "acs/synthetic/manifest.json", "acs/attribute/records.csv", "acs/attribute/summary.json",
        "acs/identification/summary.json", "acs/utility/summary.json",
    ]:
        assert (out / f).is_file(), f
    u = json.loads((out / "ce/utility/summary.json").read_text())
    assert f"{u['s_pmse']['mean']:.3g}"[:3] in report
    a = json.loads((out / "acs/attribute/summary.json").read_text())
    assert a["n_records"] == 300
    assert f"{a['n_flagged']} of 300 attribute-risk estimates are flagged" in report or (
        a["n_flagged"] == 0
    )
    for section in ("Part 1", "Part 2", "Identification risk", "Attribute risk", "Summary"):
        assert section in report
    # every warning of every step reaches the report and the demo's own summary.json; with 120
    # draws the DPMPM's convergence checks fail, so there is at least that one
    top = json.loads((out / "summary.json").read_text())
    a_codes = {w["code"] for w in a["run_warnings"]}
    assert {"LOW_ESS"} <= a_codes
    assert a_codes <= set(top["warnings"])
    assert "Warnings of every step" in report
    for w in top["step_warnings"]:
        assert f"`{w['step']}` — `{w['code']}`" in report


def test_demo_rejects_bad_m(tmp_path, capsys):
    assert main(["demo", "--out", str(tmp_path / "d"), "-m", "0", "--quiet"]) == 2
    assert "-m must be an integer >= 1" in capsys.readouterr().err
