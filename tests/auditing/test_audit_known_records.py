"""The audit's known-records curve (``AuditSettings(known_fractions=...)``, ``--known-fractions``):
the attribute step's risk when the intruder knows only a share of the other records."""

from __future__ import annotations

import json
import warnings

import pytest

import bayes_risk as br
from bayes_risk.cli import main
from bayes_risk.exceptions import ValidationError


@pytest.mark.slow
def test_audit_known_fractions_cli(tmp_path, capsys):
    """A DPMPM release: the curve is in summary.json, known_curve.csv/.png and the report; its
    share 1 is the step's own worst case."""
    orig = tmp_path / "orig.csv"
    br.make_acs_like(100, random_seed=5)[["SEX", "MAR", "MIG"]].astype("int64").to_csv(
        orig, index=False)
    model, syn, out = tmp_path / "model", tmp_path / "syn", tmp_path / "aud"
    assert main(["fit", str(orig), "--method", "dpmpm", "--components", "4", "--tune", "20",
                 "--draws", "60", "--chains", "2", "--cores", "1", "--random-seed", "1",
                 "--quiet", "--out", str(model)]) == 0
    assert main(["synthesize", "--model", str(model), "-m", "2", "--random-seed", "2",
                 "--quiet", "--out", str(syn)]) == 0
    capsys.readouterr()
    assert main(["audit", str(orig), str(syn), "--model", str(model), "--known", "SEX",
                 "--records", "0-9", "--skip", "utility", "identification",
                 "posterior-identification", "disclosure", "membership",
                 "--attribute-estimator", "is", "--known-fractions", "0.9", "1",
                 "--random-seed", "3", "--out", str(out)]) == 0
    summ = json.loads((out / "attribute" / "summary.json").read_text())
    curve = summ["known_curve"]["table"]
    assert curve["known_fraction"] == [0.9, 1.0] and curve["n_known"] == [90, 100]
    assert curve["mean_p_true"][-1] == pytest.approx(summ["all"]["mean_p_true"], rel=1e-12)
    assert (out / "attribute" / "known_curve.csv").is_file()
    html = next(out.glob("*.html")).read_text()
    assert "Intruders who know some of the other records" in html


def test_known_fractions_setting_checked():
    assert br.AuditSettings(known_fractions=[1, 0.5]).known_fractions == (0.5, 1.0)
    with pytest.raises(ValidationError, match="known_fractions"):
        br.AuditSettings(known_fractions=[1.5])
    with pytest.raises(ValidationError, match="known_fractions"):
        br.AuditSettings(known_fractions=[])


def test_known_fractions_with_a_plugin_release_says_why(tmp_path):
    """A CART release (plug-in likelihood): no curve, and the reason in summary.json."""
    orig = tmp_path / "orig.csv"
    br.make_ce_like(120, random_seed=5).to_csv(orig, index=False)
    syn = tmp_path / "syn"
    assert main(["synthesize", str(orig), "--method", "cart", "--synthesize", "Tenure",
                 "Income", "--categorical", "Urban", "Marital", "Tenure", "-m", "2",
                 "--random-seed", "1", "--out", str(syn), "--quiet"]) == 0
    out = tmp_path / "a"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = br.audit(str(orig), str(syn), known=["Age", "Urban"], out=out, random_seed=2,
                       progressbar=False,
                       settings=br.AuditSettings(sweep=None, known_fractions=[0.5, 1],
                                                 attribute_records=range(5),
                                                 skip=["utility", "posterior_identification",
                                                       "disclosure", "identification"]))
    summ = json.loads((out / "attribute" / "summary.json").read_text())
    assert "class P" in summ["known_curve"]["not_computed"]
    assert res.step("attribute").extra["known_curve"] is None
