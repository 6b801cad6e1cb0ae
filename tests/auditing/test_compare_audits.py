"""Two audits side by side (:func:`bayes_risk.auditing.compare.compare_audits`), by hand."""

from __future__ import annotations

import json

import pytest

from bayes_risk.auditing.compare import compare_audits, load_audit
from bayes_risk.exceptions import ValidationError


def _line(step, measure, value, status, threshold=1.0, unit="%"):
    return {"step": step, "measure": measure, "value": value, "threshold": threshold,
            "status": status, "unit": unit, "direction": "max"}


def _audit(lines, n=100):
    return {"command": "audit", "n_records": n, "verdicts": lines, "status": "review",
            "headline": "h."}


def test_lines_side_by_side():
    before = _audit([_line("disclosure", "repU", 3.0, "exceeds"),
                     _line("attribute", "share ranked first", 2.0, "exceeds"),
                     _line("identification", "expected match rate", 0.5, "within")])
    after = _audit([_line("identification", "expected match rate", 0.7, "within", 2.0),
                    _line("disclosure", "repU", 0.4, "within")])
    df = compare_audits(before, after)
    assert df[["step", "measure"]].values.tolist() == [
        ["identification", "expected match rate"], ["disclosure", "repU"],
        ["attribute", "share ranked first"]]
    assert df["before"].tolist() == [0.5, 3.0, 2.0]
    assert df["after"].tolist()[:2] == [0.7, 0.4] and df["after"].isna().tolist()[2]
    assert df["status_after"].tolist() == ["within", "within", "not assessed"]
    assert df["change"].tolist()[:2] == pytest.approx([0.2, -2.6])
    assert df["threshold_before"].tolist()[0] == 1.0 and df["threshold_after"].tolist()[0] == 2.0


def test_other_original_and_not_an_audit(tmp_path):
    with pytest.raises(ValidationError) as err:
        compare_audits(_audit([], n=100), _audit([], n=101))
    assert err.value.code == "ORIGINAL_DIFFERS"
    a = {**_audit([]), "inputs": {"original": "a.csv"}, "input_sha256": {"a.csv": "1" * 64}}
    b = {**_audit([]), "inputs": {"original": "b.csv"}, "input_sha256": {"b.csv": "2" * 64}}
    with pytest.raises(ValidationError) as err:
        compare_audits(a, b)
    assert err.value.code == "ORIGINAL_DIFFERS"
    (tmp_path / "summary.json").write_text(json.dumps({"command": "utility"}))
    with pytest.raises(ValidationError) as err:
        load_audit(tmp_path)
    assert err.value.code == "NOT_AN_AUDIT"
    with pytest.raises(ValidationError) as err:
        load_audit(tmp_path / "nope")
    assert err.value.code == "NOT_AN_AUDIT"
    (tmp_path / "summary.json").write_text(json.dumps(_audit([_line("u", "m", 1.0, "within")])))
    assert load_audit(tmp_path)["folder"] == str(tmp_path)
