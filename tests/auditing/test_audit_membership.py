"""The audit's membership step: runs with a holdout and a fitted DPMPM, skipped with the reason
otherwise; its section in the report."""

from __future__ import annotations

import warnings

import pytest

OTHERS = ["utility", "identification", "posterior_identification", "attribute", "disclosure"]


@pytest.fixture(scope="module")
def release():
    from bayes_risk.data import make_acs_like
    from bayes_risk.models import DPMPM

    df = make_acs_like(160, random_seed=3)[["SEX", "MAR", "MIG"]]
    train, hold = df.iloc[:120].reset_index(drop=True), df.iloc[120:].reset_index(drop=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = DPMPM(n_components=4, tune=100, draws=150, chains=2, cores=1,
                      progressbar=False).fit(train, random_seed=1)
        syn = model.synthesize(1, random_seed=2)
    return model, train, hold, syn


def test_membership_step_runs_with_holdout(release, tmp_path):
    import bayes_risk as br

    model, train, hold, syn = release
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = br.audit(train, syn, known=["SEX", "MAR"], model=model, holdout=hold, skip=OTHERS,
                       random_seed=1, progressbar=False, out=tmp_path / "a")
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
        res = br.audit(train, syn, known=["SEX", "MAR"], model=model, skip=OTHERS,
                       random_seed=1, progressbar=False)
    m = {s.name: s for s in res.steps}["membership"]
    assert m.status == "skipped" and "no holdout" in m.reason
