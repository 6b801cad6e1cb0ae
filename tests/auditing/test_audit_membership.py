"""The audit's membership step: runs with a holdout and a fitted DPMPM, skipped with the reason
otherwise; its section in the report."""

from __future__ import annotations

import warnings

import pandas as pd
import pytest

from bayes_risk.models import Sampling

OTHERS = ["utility", "identification", "posterior_identification", "attribute", "disclosure"]


@pytest.fixture(scope="module")
def release():
    from bayes_risk.data import make_acs_like
    from bayes_risk.models import DPMPM

    df = make_acs_like(160, random_seed=3)[["SEX", "MAR", "MIG"]]
    train, hold = df.iloc[:120].reset_index(drop=True), df.iloc[120:].reset_index(drop=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = DPMPM(n_components=4, sampling=Sampling(tune=100, draws=150, chains=2, cores=1),
                      progressbar=False).fit(train, random_seed=1)
        syn = model.synthesize(1, random_seed=2)
    return model, train, hold, syn


def test_membership_step_runs_with_holdout(release, tmp_path):
    import bayes_risk as br

    model, train, hold, syn = release
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = br.audit(train, syn, known=["SEX", "MAR"], model=model, holdout=hold, random_seed=1,
                       progressbar=False, out=tmp_path / "a",
                       settings=br.AuditSettings(skip=OTHERS))
    st = {s.name: s for s in res.steps}
    m = st["membership"]
    assert m.status == "ran", m.reason
    assert set(m.files) == {"records.csv", "summary.json", "p_member_hist.png", "roc.png"}
    assert (tmp_path / "a" / "membership" / "records.csv").is_file()
    assert m.result.file["n_members"] == 120 and m.result.file["n_non_members"] == 40
    html = res.to_html(tmp_path / "report.html").read_text(encoding="utf-8")
    assert 'id="membership"' in html and "AUC − 0.5" in html


def test_membership_step_skipped_with_reason(release):
    import bayes_risk as br

    model, train, hold, syn = release
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = br.audit(train, syn, known=["SEX", "MAR"], model=model, random_seed=1,
                       progressbar=False, settings=br.AuditSettings(skip=OTHERS))
    m = {s.name: s for s in res.steps}["membership"]
    assert m.status == "skipped" and "no holdout" in m.reason


def test_membership_verdict_lines(release, tmp_path):
    """Two verdict lines — the attack's advantage (AUC − 0.5 with its bootstrap interval) and
    the share of members above the board's probability — against thresholds the user sets,
    with a cause and remedies once on the wrong side; in the HTML report and summary.json."""
    import json

    import bayes_risk as br
    from bayes_risk.auditing import Thresholds

    model, train, hold, syn = release
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = br.audit(train, syn, known=["SEX", "MAR"], model=model, holdout=hold, random_seed=1,
                       progressbar=False, out=tmp_path / "a",
                       settings=br.AuditSettings(
                           skip=OTHERS, thresholds={"membership_probability": 0.6}))
    f = res.step("membership").result.file
    assert res.step("membership").result.settings["threshold"] == 0.6
    lines = [v for v in res.verdicts if v.step == "membership"]
    assert [v.measure for v in lines] == [
        "membership attack's advantage over the base rate (AUC − 0.5)",
        "share of members with P(member) > 0.6"]
    adv, share = lines
    assert adv.value == pytest.approx(f["auc_advantage"]) and adv.threshold == 0.05
    assert share.value == pytest.approx(100 * f["share_members_above"])
    assert share.unit == "%" and share.threshold == pytest.approx(1.0)
    lo, hi = f["auc_advantage_interval"]
    assert f"95 % bootstrap interval {lo:.3g}–{hi:.3g}" in adv.detail
    assert adv.source == "membership/summary.json" and "no spread" in adv.spread
    assert "asks whether it was in the confidential data" in adv.intruder
    # a threshold of 0 puts both lines on the wrong side: cause and remedies from this run
    strict = Thresholds.parse(["membership_advantage=0", "membership_share=0",
                               "membership_probability=0.6"])
    res.plan.thresholds = strict
    lines = [v for v in res.verdicts if v.step == "membership"]
    for v in lines:
        if v.exceeds:
            assert f"{f['mean_p_member_members']:.3g}" in v.cause
            assert any("fewer synthetic datasets" in r for r in v.remedies)
    assert lines[0].exceeds == (f["auc_advantage"] > 0)
    html = res.to_html(tmp_path / "report.html").read_text(encoding="utf-8")
    assert "membership attack&#39;s advantage over the base rate" in html
    summary = json.loads(json.dumps(res.to_dict()))
    assert {"membership attack's advantage over the base rate (AUC − 0.5)",
            "share of members with P(member) > 0.6"} <= {v["measure"]
                                                          for v in summary["verdicts"]}
    with pytest.raises(Exception, match="membership_probability"):
        Thresholds.parse(["membership_probability=1"])


def test_skipped_membership_is_not_assessed(release):
    """Without a holdout the membership step has no line, and the verdict says so."""
    import bayes_risk as br

    model, train, hold, syn = release
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = br.audit(train, syn, known=["SEX", "MAR"], model=model, random_seed=1,
                       progressbar=False, settings=br.AuditSettings(skip=OTHERS))
    assert not [v for v in res.verdicts if v.step == "membership"]
    assert "membership risk (skipped)" in res.verdict_text


def test_membership_line_of_a_partially_synthetic_release(tmp_path):
    """A sequential regression that leaves a categorical column unsynthesized: the step runs,
    and the cause names the released unsynthesized values."""
    import numpy as np
    import pandas as pd

    import bayes_risk as br
    from bayes_risk.auditing import Thresholds
    from bayes_risk.models import SequentialRegression

    rng = np.random.default_rng(5)
    a = rng.integers(0, 3, 90)
    df = pd.DataFrame({"A": pd.Categorical(a.astype(str), categories=["0", "1", "2"]),
                       "Y": 1.0 + a + rng.normal(0, 1, 90)})
    train, hold = df.iloc[:60].reset_index(drop=True), df.iloc[60:].reset_index(drop=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = SequentialRegression(sampling=Sampling(draws=400), progressbar=False).fit(
            train, synthesized=["Y"], random_seed=1)
        syn = model.synthesize(2, random_seed=2)
        res = br.audit(train, syn, known=["A"], model=model, holdout=hold, random_seed=1,
                       progressbar=False, out=tmp_path / "p",
                       settings=br.AuditSettings(skip=OTHERS))
    st = res.step("membership")
    assert st.status == "ran", st.reason
    us = st.result.file["unsynthesized"]
    assert us["columns"] == ["A"] and us["share_members_unique"] == 0.0
    res.plan.thresholds = Thresholds.parse(["membership_advantage=0", "membership_share=0"])
    adv = [v for v in res.verdicts if v.step == "membership"][0]
    assert adv.exceeds and "unsynthesized values (A)" in adv.cause
    assert f"median of {us['median_factor_members']:.3g}" in adv.cause
    assert 1 < us["median_factor_members"] < 60  # about n / n_r with three cells of 60 records
    assert any("synthesize or coarsen the unsynthesized columns (A)" in r for r in adv.remedies)
    html = res.to_html(tmp_path / "report.html").read_text(encoding="utf-8")
    assert "Partially synthetic release" in html


def test_membership_step_reaches_a_numeric_unsynthesized_column(tmp_path):
    """A numeric unsynthesized column (whole numbers 0 to 5, one record alone with 9): the step
    runs instead of being skipped, and the summary gives the column's resolution and cells."""
    import numpy as np
    import pandas as pd

    import bayes_risk as br
    from bayes_risk.models import SequentialRegression

    rng = np.random.default_rng(6)
    x = rng.integers(0, 6, 90).astype(float)
    x[3] = 9.0
    df = pd.DataFrame({"X": x, "Y": 1.0 + 0.3 * x + rng.normal(0, 1, 90)})
    train, hold = df.iloc[:60].reset_index(drop=True), df.iloc[60:].reset_index(drop=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = SequentialRegression(sampling=Sampling(draws=400), progressbar=False).fit(
            train, synthesized=["Y"], random_seed=1)
        syn = model.synthesize(1, random_seed=2)
        res = br.audit(train, syn, known=["X"], model=model, holdout=hold, random_seed=1,
                       progressbar=False, settings=br.AuditSettings(skip=OTHERS))
    st = res.step("membership")
    assert st.status == "ran", st.reason
    us = st.result.file["unsynthesized"]
    assert us["columns"] == ["X"] and us["resolution"] == {"X": 1.0} and us["n_cells"] == 10
    assert us["share_members_unique"] == pytest.approx(1 / 60)
    # the record alone with 9: its value alone multiplies its ratio by (n − 1 + α) C / α = 600
    rec = st.result.records
    assert rec.loc[3, "log_p_unsynthesized"] == pytest.approx(np.log((1 / 10) / 60))


def test_membership_reuses_the_attribute_steps_refits(release, monkeypatch):
    """With a holdout, the attribute and membership steps share one refit per dataset (the
    same ``fit_augmented(original, Z_(l))``): half the refits, and the attribute step's numbers
    are those of an audit without a holdout, whose attribute step refits by itself."""
    import pandas as pd

    import bayes_risk as br
    from bayes_risk.models import DPMPM

    model, train, hold, syn = release
    calls = []
    fit_augmented = DPMPM.fit_augmented

    def counted(self, *args, **kwargs):
        calls.append(1)
        return fit_augmented(self, *args, **kwargs)

    monkeypatch.setattr(DPMPM, "fit_augmented", counted)
    skip = ["utility", "identification", "posterior_identification", "disclosure"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        both = br.audit(train, syn, known=["SEX", "MAR"], model=model, holdout=hold, random_seed=1,
                        progressbar=False, settings=br.AuditSettings(skip=skip))
        n_both = len(calls)
        alone = br.audit(train, syn, known=["SEX", "MAR"], model=model, random_seed=1,
                         progressbar=False, settings=br.AuditSettings(skip=skip))
    st = {s.name: s for s in both.steps}
    assert st["membership"].status == "ran" and st["attribute"].status == "ran"
    assert n_both == len(syn.datasets)  # was 2 m: m for each step
    assert "shared" in st["membership"].extra["summary"]["refits"]
    pd.testing.assert_frame_equal(st["attribute"].result.records,
                                  {s.name: s for s in alone.steps}["attribute"].result.records)


def test_membership_step_of_a_release_of_selected_records(tmp_path):
    """A release that synthesized the records at risk only: without membership_selection the
    step is skipped with the reason; with the rule it runs, the rule is in the settings of
    summary.json, and the members left unsynthesized have P(member) = 1 (RELEASED_WHOLE)."""
    import json

    import numpy as np
    import pandas as pd

    import bayes_risk as br
    from bayes_risk.models import SequentialRegression

    rng = np.random.default_rng(8)
    x = rng.integers(0, 6, 70).astype(float)
    df = pd.DataFrame({"X": x, "Y": 1.0 + 0.3 * x + rng.normal(0, 1, 70)})
    train, hold = df.iloc[:50].reset_index(drop=True), df.iloc[50:].reset_index(drop=True)
    rule = "Y > 2.5 or X >= 5"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = SequentialRegression(sampling=Sampling(draws=300), progressbar=False).fit(
            train, synthesized=["Y"], records=np.flatnonzero(train.eval(rule)),
            random_seed=1)
        syn = model.synthesize(1, random_seed=2)
        skipped = br.audit(train, syn, known=["X"], model=model, holdout=hold, random_seed=1,
                           progressbar=False, settings=br.AuditSettings(skip=OTHERS))
        res = br.audit(train, syn, known=["X"], model=model, holdout=hold, random_seed=1,
                       progressbar=False, out=tmp_path / "s",
                       settings=br.AuditSettings(membership_selection=rule, skip=OTHERS))
    st = skipped.step("membership")
    assert st.status == "skipped" and "MEMBERSHIP_PARTIAL_SYNTHESIS" in st.reason
    st = res.step("membership")
    assert st.status == "ran", st.reason
    rec = st.result.records
    whole = rec["role"].eq("member") & ~rec["slot_selected"]
    assert whole.any() and (rec.loc[whole, "p_member"] == 1).all()
    assert (rec.loc[whole, "flag_codes"] == "RELEASED_WHOLE").all()
    summary = json.loads((tmp_path / "s" / "summary.json").read_text())
    setting = [s for s in summary["settings"] if s["setting"] == "selection"]
    assert setting and setting[0]["step"] == "membership" and setting[0]["value"] == rule
    step = json.loads((tmp_path / "s" / "membership" / "summary.json").read_text())
    assert step["settings"]["selection"] == rule
    from bayes_risk.auditing import Thresholds

    res.plan.thresholds = Thresholds.parse(["membership_share=0"])
    share = [v for v in res.verdicts if v.step == "membership" and v.exceeds][0]
    assert "member(s) are in the release as they are" in share.cause
    assert any(r.startswith("synthesize every record") for r in share.remedies)


def test_attribute_line_carries_its_monte_carlo_interval(release, tmp_path):
    """The attribute verdict line is pooled over the datasets (no spread), so it carries the
    Monte Carlo interval of the share ranked first (draw bootstrap of the posterior draws, the
    90 % interval summary.json keeps), which contains the value; a CART release's plug-in line
    says why it has none."""
    import json

    import bayes_risk as br
    from bayes_risk.data import make_ce_like
    from bayes_risk.models import CARTSynthesizer

    model, train, hold, syn = release
    skip = ["utility", "identification", "posterior_identification", "membership",
            "disclosure"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = br.audit(train, syn, known=["SEX", "MAR"], model=model, random_seed=1,
                       progressbar=False, out=tmp_path / "a", settings=br.AuditSettings(skip=skip))
    line = next(v for v in res.verdicts if v.step == "attribute")
    saved = json.loads((tmp_path / "a" / "attribute" / "summary.json").read_text())
    lo, hi = saved["mc_uncertainty"]["mc_interval_90"]["prop_top"]
    # the line is in per cent: value / 100 can be one ulp below a bound it equals
    share = line.value / 100
    assert 0 <= lo <= share * (1 + 1e-12) and share <= hi * (1 + 1e-12) and hi <= 1
    assert "REGIMES_DISAGREE" not in line.detail
    assert f"90 % Monte Carlo interval {100 * lo:.3g}–{100 * hi:.3g} %" in line.detail
    html = res.to_html(tmp_path / "report.html").read_text(encoding="utf-8")
    assert "Monte Carlo interval" in html

    ce = make_ce_like(300, random_seed=2)[["Age", "Urban", "Income"]]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cart = CARTSynthesizer().fit(ce, synthesized=["Income"], random_seed=1)
        res = br.audit(ce, cart.synthesize(2, random_seed=2), known=["Age", "Urban"], model=cart,
                       random_seed=1, progressbar=False,
                       settings=br.AuditSettings(attribute_records=list(range(40)), skip=skip))
    line = next(v for v in res.verdicts if v.step == "attribute")
    assert "no posterior draws to bootstrap" in line.detail


def test_audit_fills_the_refit_cache_that_membership_risk_reads(release, tmp_path, monkeypatch):
    """The audit's attribute step refits once for itself and the membership step and stores the
    refits (``EstimatorSpec.refit_cache``); ``membership_risk`` on the same model, release and
    seed then refits nothing and gives the audit's membership numbers bit for bit."""
    import bayes_risk as br
    from bayes_risk.models import DPMPM

    made: list[int] = []
    fit_augmented = DPMPM.fit_augmented

    def counted(self, *args, **kwargs):
        made.append(1)
        return fit_augmented(self, *args, **kwargs)

    monkeypatch.setattr(DPMPM, "fit_augmented", counted)
    model, train, hold, syn = release
    cache = tmp_path / "refits"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = br.audit(train, syn, known=["SEX", "MAR"], model=model, holdout=hold,
                       random_seed=4, progressbar=False,
                       settings=br.AuditSettings(
                           skip=[s for s in OTHERS if s != "attribute"],
                           attribute_estimator=br.EstimatorSpec(refit_cache=cache)))
        assert res.step("attribute").status == "ran" and len(made) == syn.m
        assert len(list(cache.iterdir())) == syn.m
        alone = br.membership_risk(model, train, syn, holdout=hold, population=0,
                                   attack=br.AttackSpec(threshold=0.9), random_seed=4,
                                   progressbar=False, ratio=br.RatioSpec(refit_cache=cache))
    assert len(made) == syn.m
    pd.testing.assert_frame_equal(res.step("membership").result.records, alone.records,
                                  check_exact=True)
