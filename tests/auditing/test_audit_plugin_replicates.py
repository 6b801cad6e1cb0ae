"""``EstimatorSpec.plugin_replicates`` (``audit --plugin-replicates``) in the audit: it reaches a
smoothed CART release's plug-in, and an audit that would not use it (the attribute step
skipped, an unsmoothed CART's or a random forest's exact likelihood) refuses it
(``OPTION_UNUSED``) before any step, nothing written; the same check as ``attribute_risk``."""

from __future__ import annotations

import pytest

import bayes_risk as br
from bayes_risk.auditing import api as audit_api
from bayes_risk.cli import main

pytestmark = pytest.mark.filterwarnings("ignore::bayes_risk.exceptions.BayesRiskWarning")

CATS = ["Urban", "Marital", "Tenure"]
KNOWN = ["Age", "Urban", "Marital"]
#: every step but the attribute step
OTHERS = ["utility", "identification", "posterior_identification", "disclosure", "membership",
          "attacks", "relative_difference", "closest_match"]


@pytest.fixture(scope="module")
def releases(tmp_path_factory):
    """A CE-like table and three releases (m = 2), saved: CART smoothing Income (of Tenure and
    Income), CART without smoothing (the same), a random forest (of Tenure: its plug-in covers
    categorical columns)."""
    from bayes_risk.models.trees.cart import CARTSynthesizer
    from bayes_risk.models.trees.random_forest import RandomForestSynthesizer

    d = tmp_path_factory.mktemp("releases")
    ce = br.make_ce_like(150, random_seed=5)
    ce.to_csv(d / "ce.csv", index=False)
    sch = br.infer_schema(ce, categorical=CATS)
    for name, synth, cols in (("smoothed", CARTSynthesizer(smoothing=["Income"]), ["Income"]),
                              ("cart", CARTSynthesizer(), ["Income"]),
                              ("rf", RandomForestSynthesizer(n_trees=5), [])):
        synth.fit(ce, schema=sch, synthesized=["Tenure", *cols], random_seed=1)
        synth.synthesize(2, random_seed=2).save(d / name)
    return d


def _no_step(*args, **kwargs):
    raise AssertionError("a step ran before the option was refused")


def test_the_replicates_reach_a_smoothed_cart_release_and_are_recorded(releases):
    res = br.audit(str(releases / "ce.csv"), str(releases / "smoothed"), known=KNOWN,
                   random_seed=2, progressbar=False, settings=br.AuditSettings(
                       sweep=None, attribute_records=range(5), skip=OTHERS,
                       attribute_estimator=br.EstimatorSpec(plugin_replicates=50)))
    assert res.step("attribute").extra["summary"]["settings"]["plugin_replicates"] == 50


#: the release, the steps skipped (the utility step runs, or would), why the option is unused
CASES = {
    "skipped": ("smoothed", ["attribute", *OTHERS[1:]], r"the attribute step is skipped as "
                r"asked"),
    "unsmoothed CART": ("cart", OTHERS[1:], r"the likelihood of CARTPlugin has none \(exact"),
    "random forest": ("rf", OTHERS[1:], r"the likelihood of RFPlugin has none \(exact"),
}


@pytest.mark.parametrize(("release", "skip", "why"), CASES.values(), ids=CASES)
def test_an_audit_that_would_not_use_them_refuses_them_before_any_step(
        releases, tmp_path, monkeypatch, release, skip, why):
    monkeypatch.setattr(audit_api, "_run_step", _no_step)
    with pytest.raises(br.ValidationError, match=r"plugin_replicates=50 sets .*" + why) as info:
        br.audit(str(releases / "ce.csv"), str(releases / release), known=KNOWN,
                 out=tmp_path / "a", random_seed=2, progressbar=False,
                 settings=br.AuditSettings(skip=skip, attribute_records=range(5),
                                           attribute_estimator=br.EstimatorSpec(
                                               plugin_replicates=50)))
    assert info.value.code == "OPTION_UNUSED"
    assert "needed by" not in str(info.value)  # skipping the step is no cure
    assert not (tmp_path / "a").exists()


@pytest.mark.parametrize(("release", "skip", "why"), CASES.values(), ids=CASES)
def test_cli_refuses_them_naming_the_option(releases, tmp_path, capsys, monkeypatch,
                                            release, skip, why):
    monkeypatch.setattr(audit_api, "_run_step", _no_step)
    rc = main(["audit", str(releases / "ce.csv"), str(releases / release), "--known", *KNOWN,
               "--records", "0-4", "--skip", *skip, "--plugin-replicates", "50",
               "-q", "--out", str(tmp_path / "a")])
    err = capsys.readouterr().err
    assert rc == 2 and "[OPTION_UNUSED]" in err and "--plugin-replicates 50 sets" in err, err
    assert "Traceback" not in err and not (tmp_path / "a").exists()
