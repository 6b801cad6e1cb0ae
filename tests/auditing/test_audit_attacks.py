"""The audit's attacks step (anonymeter's singling out, linkability and inference): runs with a
holdout,
skipped with the reason otherwise; its verdict lines, thresholds, causes and report section."""

from __future__ import annotations

import dataclasses
import json
import warnings

import pytest

import bayes_risk as br
from bayes_risk.exceptions import ValidationError

OTHERS = ["utility", "identification", "posterior_identification", "attribute", "membership",
          "disclosure"]
KNOWN = ["Age", "Urban", "Marital"]


@pytest.fixture(scope="module")
def release():
    from bayes_risk.data import make_ce_like
    from bayes_risk.models import CARTSynthesizer

    df = make_ce_like(n=600, random_seed=11)
    train, hold = df.iloc[:300].reset_index(drop=True), df.iloc[300:].reset_index(drop=True)
    schema = br.infer_schema(train, categorical=["Urban", "Marital", "Tenure"])
    syn = CARTSynthesizer().fit(train, schema=schema, synthesized=["Tenure", "Income"],
                                random_seed=1).synthesize(2, random_seed=2)
    return train, hold, syn


def _audit(release, linkability_columns=None, thresholds=None, **kw):
    train, hold, syn = release
    settings = br.AuditSettings(skip=OTHERS, linkability_columns=linkability_columns,
                                thresholds=thresholds)
    opts = {"known": KNOWN, "settings": settings, "random_seed": 1, "progressbar": False,
            "holdout": hold, **kw}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return br.audit(train, syn, **opts)


def test_attacks_step_verdict_lines_and_report(release, tmp_path):
    res = _audit(release, out=tmp_path / "a")
    step = res.step("attacks")
    assert step.status == "ran", step.reason
    so, lk = step.result["singling_out"], step.result["linkability"]
    # the default tables: the known columns and the others
    assert lk.settings["aux_columns"] == [KNOWN, ["Tenure", "Educ", "Expenditure", "Income"]]
    assert so.table["dataset"].tolist() == [1, 1, 2, 2]
    lines = [v for v in res.verdicts if v.step == "attacks"]
    inf = step.result["inference"]
    assert [v.measure for v in lines] == [
        "univariate singling-out risk", "multivariate singling-out risk",
        "linkability risk (Age, Urban, Marital with Tenure, Educ, Expenditure, Income)",
        f"inference risk ({inf.headline().sort_values('risk').iloc[-1]['secret']})"]
    # inference: each synthesized column guessed from every other column, the line reads the
    # secret and dataset most at risk
    assert inf.settings["secrets"] == ["Tenure", "Income"]
    assert inf.settings["aux_columns"]["Income"] == ["Age", "Urban", "Tenure", "Educ",
                                                    "Expenditure", "Marital"]
    assert lines[3].value == pytest.approx(inf.table["risk"].max())
    assert lines[3].threshold_name == "inference_risk" and lines[3].threshold == 0.05
    assert "guessed right from the nearest synthetic row" in lines[3].detail
    if lines[3].exceeds:
        assert "guessed right" in lines[3].cause and lines[3].remedies
    for v, mode in zip(lines[:2], ("univariate", "multivariate"), strict=True):
        rows = so.table[so.table["mode"] == mode]
        assert v.value == pytest.approx(rows["risk"].max())  # the worse dataset
        assert v.threshold == 0.05 and v.threshold_name == "singling_out_risk"
        assert "interval" in v.detail and "min–max over 2" in v.spread
    assert lines[2].threshold_name == "linkability_risk"
    # CART releases donors' values: a value one synthetic row holds singles out its donor
    uni = lines[0]
    assert uni.exceeds and "single out a record of the original" in uni.cause
    assert any("Income" in r for r in uni.remedies)
    files = {p.name for p in (tmp_path / "a" / "attacks").iterdir()}
    assert {"summary.json", "singling_out.csv", "singling_out_queries.csv", "singling_out.png",
            "linkability.csv", "linkability_records.csv", "linkability.png", "inference.csv",
            "inference_records.csv", "inference.png"} <= files
    summary = json.loads((tmp_path / "a" / "summary.json").read_text())
    assert "singling_out_risk" in summary["thresholds"]
    assert "inference_risk" in summary["thresholds"]
    html = res.to_html(tmp_path / "report.html").read_text(encoding="utf-8")
    assert 'id="attacks"' in html and "Giomi et al. 2023" in html
    assert "leaves its acceptable level to the data controller" in html  # threshold source
    assert html.count("leaves its acceptable level") == 1  # one footnote for the three
    for caption in ("Singling-out risk per dataset", "Linkability risk per dataset",
                    "Inference risk per dataset"):
        assert f"<figcaption>{caption}" in html  # both figures in the report


def test_attacks_step_skipped_without_holdout_and_thresholds_given(release):
    res = _audit(release, holdout=None)
    a = res.step("attacks")
    assert a.status == "skipped" and "no holdout" in a.reason
    assert not [v for v in res.verdicts if v.step == "attacks"]
    # the largest thresholds a line can still cross (1, which no risk exceeds, is refused)
    res = _audit(release, thresholds={"singling_out_risk": 0.99, "linkability_risk": 0.99,
                                      "inference_risk": 0.99},
                 linkability_columns=(["Age"], ["Income"]))
    lines = [v for v in res.verdicts if v.step == "attacks"]
    assert all(v.threshold == 0.99 and v.exceeds == (v.value > 0.99) for v in lines)
    assert lines[2].measure == "linkability risk (Age with Income)"
    assert res.plan.settings_frame().query("step == 'attacks'")["source"].tolist()[1] == "given"


def test_linkability_columns_are_checked_before_any_step(release):
    with pytest.raises(ValidationError, match="linkability_columns"):
        _audit(release, linkability_columns=["Age"])
    with pytest.raises(Exception, match="Nope"):
        _audit(release, linkability_columns=(["Age"], ["Nope"]))
    # every column known: no second table, linkability is not run (and said why)
    train = release[0]
    res = _audit(release, known=list(train.columns))
    a = res.step("attacks")
    assert a.result["linkability"] is None and "every column is known" in \
        a.extra["linkability_not_run"]
    assert len([v for v in res.verdicts if v.step == "attacks"]) == 3  # and inference


def test_a_holdout_that_is_the_original_is_refused_before_any_step(release, tmp_path,
                                                                     monkeypatch):
    """The attacks' control checked first (the measure's preflight), not after the steps
    before it ran: every other step would have run for nothing."""
    from bayes_risk.auditing.measures import utility
    from bayes_risk.auditing.outcome import StepOutcome

    train, _, syn = release
    ran = []
    monkeypatch.setattr(utility, "MEASURE", dataclasses.replace(
        utility.MEASURE, step=lambda ctx: ran.append("utility") or StepOutcome(
            name="utility", status="skipped", reason="stands in for the utility step")))
    with pytest.raises(ValidationError, match="needed by the attacks step") as err:
        br.audit(train, syn, known=KNOWN, holdout=train.copy(), random_seed=1,
                 progressbar=False, out=tmp_path / "out",
                 settings=br.AuditSettings(skip=OTHERS[1:]))
    assert err.value.code == "HOLDOUT_OVERLAPS_ORIGINAL"
    assert ran == [] and not (tmp_path / "out").exists()
    # a holdout that shares a few records with the original is screened by the step itself
    res = _audit(release, holdout=release[1])
    assert res.step("attacks").status == "ran"
