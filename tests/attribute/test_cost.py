"""The cost of the stabilised estimator's refits, stated before they run (issue 35, item 3):
the estimate from the sizes, one progress display over the refits, ``refit_draws``, and the
audit's ``attribute_estimator`` / ``refit_draws``."""

from __future__ import annotations

import json
import re
import warnings
from types import SimpleNamespace

import pytest

import bayes_risk as br
from bayes_risk.attribute import attribute_risk
from bayes_risk.attribute.cost import refit_cost
from bayes_risk.cli import main
from bayes_risk.exceptions import ValidationError

dpmpm = pytest.importorskip("bayes_risk.models.dpmpm.dpmpm")

COLS = ["SEX", "MAR", "MIG"]


class _Tree(dict):
    """A posterior DataTree's two levels of attributes: the root's (the run) and the
    posterior group's (the sampler's time)."""

    def __init__(self, seconds, run_thin=None):
        super().__init__(posterior=SimpleNamespace(
            attrs={} if seconds is None else {"sampling_time": seconds}))
        self.attrs = {} if run_thin is None else {"thin": run_thin}


def _fake(seconds, n=100, tune=100, draws=100, thin=1, run_thin=None):
    return SimpleNamespace(posterior_=_Tree(seconds, run_thin), _n_records=n, tune=tune,
                           draws=draws, thin=thin)


def test_refit_cost_scales_with_the_sizes():
    """m x T_fit x (n + n_syn) / n x (tune + thin x refit draws) / (tune + thin x draws), by
    hand."""
    base = refit_cost(_fake(10.0), 100, 5)
    assert base.seconds == pytest.approx(5 * 10.0 * 2)  # 5 refits on twice the records
    assert base.n_refits == 5 and base.records == 200
    assert refit_cost(_fake(10.0), 300, 5).seconds == pytest.approx(5 * 10.0 * 4)
    assert refit_cost(_fake(10.0), 100, 10).seconds == pytest.approx(2 * base.seconds)
    # refit draws: (100 + 300) / (100 + 100) sweeps
    assert refit_cost(_fake(10.0), 100, 5, refit_draws=300).seconds == pytest.approx(
        2 * base.seconds)
    # thinning: 100 + 5 x 50 = 350 sweeps of a refit against 100 + 5 x 100 = 600
    assert refit_cost(_fake(10.0, thin=5), 100, 5, refit_draws=50).seconds == pytest.approx(
        base.seconds * 350 / 600)
    # a run that extended itself to thin 4: 100 + 4 x 100 sweeps took the 10 s; its refits
    # start at thin 4 (100 + 4 x 50 sweeps with refit_draws=50)
    assert refit_cost(_fake(10.0, run_thin=4), 100, 5, refit_draws=50).seconds == \
        pytest.approx(base.seconds * 300 / 500)
    assert base.line().startswith("about 5 refits of the model, estimated 1.7 min on this "
                                  "machine (from the model's own fit: 10 s for 100 records")
    assert refit_cost(_fake(10.0), 100, 1).line().startswith("about 1 refit of the model, ")
    # no recorded sampling time (draws made elsewhere): said, not invented
    none = refit_cost(_fake(None), 100, 5)
    assert none.seconds is None
    assert "time not estimated" in none.line() and none.line().startswith("about 5 refits")


@pytest.fixture(scope="module")
def small_fit():
    df = br.make_acs_like(60, random_seed=3)[COLS].astype("category")
    model = dpmpm.DPMPM(n_components=2, tune=10, draws=40, chains=2, cores=1, max_sweeps=0,
                        progressbar=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(df, random_seed=11)
        syn = model.synthesize(3, random_seed=12)
    return df, model, syn


def test_estimate_printed_and_one_bar_counts_the_refits(small_fit, capfd):
    """Before the refits: one line with the number of refits and the estimate; during them one
    bar "refit k of m" (the refits' own sampler lines and bars silenced) and, after the first,
    its measured time; afterwards the model's settings are restored and each refit kept
    refit_draws draws per chain."""
    df, model, syn = small_fit
    capfd.readouterr()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = attribute_risk(df, syn, model=model, records=[0, 1], random_seed=5, bootstrap=0,
                             refit_draws=25)
    err = capfd.readouterr().err
    assert "about 3 refits of the model, estimated" in err
    assert "on this machine (from the model's own fit:" in err
    assert "refit 3 of 3" in err
    # the first refit measures this machine at the refits' size
    assert re.search(r"refit 1 of 3 took \d+ s: the other 2, about \d+ s", err)
    assert err.index("about 3 refits") < err.index("refit 3 of 3")
    assert "Multiprocess sampling" not in err and "Sequential sampling" not in err
    assert "Gibbs draws" not in err  # the refits' own bars
    assert model.progressbar is True and model.draws == 40
    assert res.to_dict()["settings"]["H_augmented"] == [50, 50, 50]  # 2 chains x 25


def test_progressbar_false_prints_nothing(small_fit, capfd):
    df, model, syn = small_fit
    capfd.readouterr()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        attribute_risk(df, syn, model=model, records=[0], random_seed=5, bootstrap=0,
                       progressbar=False)
    err = capfd.readouterr().err
    assert "refit" not in err and "Gibbs draws" not in err and "Multiprocess" not in err


@pytest.mark.parametrize("kw, match", [
    (dict(refit_draws=0), "refit_draws must be an integer >= 1"),
    (dict(refit_draws=2.5), "refit_draws must be an integer >= 1"),
    (dict(refit_draws=10, estimator="is"), "refit_draws sets the kept draws"),
])
def test_refit_draws_checked(small_fit, kw, match):
    df, model, syn = small_fit
    with warnings.catch_warnings(), pytest.raises(ValidationError, match=match):
        warnings.simplefilter("ignore")
        attribute_risk(df, syn, model=model, records=[0], random_seed=5, bootstrap=0,
                       progressbar=False, **kw)


def test_audit_chooses_estimator_and_refit_draws(tmp_path, capsys, monkeypatch):
    """--attribute-estimator / --refit-draws reach attribute_risk, are recorded in the audit's
    settings and the step's summary.json, and the estimate is printed at the step's start."""
    import bayes_risk.attribute.api as api

    seen = {}
    real = api.attribute_risk

    def spy(*a, **kw):
        seen.update(kw)
        return real(*a, **kw)

    monkeypatch.setattr(api, "attribute_risk", spy)
    orig = tmp_path / "orig.csv"
    br.make_acs_like(60, random_seed=5)[COLS].astype("int64").to_csv(orig, index=False)
    model, syn, out = tmp_path / "model", tmp_path / "syn", tmp_path / "aud"
    assert main(["fit", str(orig), "--method", "dpmpm", "--components", "2", "--tune", "10",
                 "--draws", "40", "--chains", "2", "--cores", "1", "--random-seed", "1",
                 "--quiet", "--out", str(model)]) == 0
    assert main(["synthesize", "--model", str(model), "-m", "2", "--random-seed", "2",
                 "--quiet", "--out", str(syn)]) == 0
    capsys.readouterr()
    assert main(["audit", str(orig), str(syn), "--model", str(model), "--known", "SEX", "MAR",
                 "--records", "0-2", "--skip", "utility", "identification",
                 "posterior-identification", "disclosure", "--attribute-estimator",
                 "stabilised", "--refit-draws", "15", "--random-seed", "3",
                 "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert seen["estimator"] == "stabilised" and seen["refit_draws"] == 15
    assert "about 2 refits of the model, estimated" in err and "refit 2 of 2" in err
    step = json.loads((out / "attribute" / "summary.json").read_text())
    assert step["settings"]["H_augmented"] == [30, 30]
    top = json.loads((out / "summary.json").read_text())
    settings = {(s["step"], s["setting"]): s for s in top["settings"]}
    assert settings[("attribute", "estimator")]["value"] == "stabilised"
    assert settings[("attribute", "estimator")]["source"] == "given"
    assert settings[("attribute", "refit draws")]["value"] == "15"
    assert settings[("attribute", "refit draws")]["source"] == "given"


def test_audit_refuses_bad_attribute_options(tmp_path):
    df = br.make_acs_like(30, random_seed=5)[COLS].astype("int64")
    with pytest.raises(ValidationError, match="attribute_estimator must be"):
        br.audit(df, [df, df], known=["SEX"], synthesized=["MAR"], attribute_estimator="fast",
                 progressbar=False)
    with pytest.raises(ValidationError, match="refit_draws must be an integer"):
        br.audit(df, [df, df], known=["SEX"], synthesized=["MAR"], refit_draws=-1,
                 progressbar=False)


def test_help_states_the_cost(capsys):
    for cmd in ("attribute", "audit"):
        with pytest.raises(SystemExit):
            main([cmd, "--help"])
        text = " ".join(capsys.readouterr().out.split())
        assert "refits the model once per synthetic dataset" in text
        assert "--refit-draws" in text


def test_sequential_regression_records_its_sampling_time():
    """A SequentialRegression fit records its sampling time as PyMC does, so the cost of its
    refits is estimated (it was "not estimated" before)."""
    import numpy as np
    import pandas as pd

    from bayes_risk.models.seqreg.seqreg import SequentialRegression

    rng = np.random.default_rng(0)
    df = pd.DataFrame({"x": rng.normal(size=50)})
    df["y"] = df["x"] + rng.normal(size=50)
    model = SequentialRegression(draws=50, progressbar=False).fit(df, random_seed=1)
    t = model.posterior_["posterior"].attrs["sampling_time"]
    assert t > 0
    cost = refit_cost(model, 50, 2)
    assert cost.seconds == pytest.approx(2 * 2 * t)  # 2 refits on twice the records


def test_attribute_command_prints_the_estimate_and_refit_draws(tmp_path, capsys):
    """`bayes-risk attribute` prints the estimate and the refit bar; --refit-draws sets the
    refits' draws (summary.json: H_augmented); -q silences both."""
    orig = tmp_path / "orig.csv"
    br.make_acs_like(60, random_seed=5)[COLS].astype("int64").to_csv(orig, index=False)
    model, syn = tmp_path / "model", tmp_path / "syn"
    assert main(["fit", str(orig), "--method", "dpmpm", "--components", "2", "--tune", "10",
                 "--draws", "40", "--chains", "2", "--cores", "1", "--random-seed", "1",
                 "--quiet", "--out", str(model)]) == 0
    assert main(["synthesize", "--model", str(model), "-m", "2", "--random-seed", "2",
                 "--quiet", "--out", str(syn)]) == 0
    capsys.readouterr()
    assert main(["attribute", str(orig), str(syn), "--model", str(model), "--records", "0-2",
                 "--refit-draws", "20", "--random-seed", "3", "--out", str(tmp_path / "a")]) == 0
    err = capsys.readouterr().err
    assert "about 2 refits of the model, estimated" in err and "refit 2 of 2" in err
    assert "Multiprocess sampling" not in err and "Sequential sampling" not in err
    summary = json.loads((tmp_path / "a" / "summary.json").read_text())
    assert summary["settings"]["H_augmented"] == [40, 40]
    assert main(["attribute", str(orig), str(syn), "--model", str(model), "--records", "0-2",
                 "--random-seed", "3", "--quiet", "--out", str(tmp_path / "b")]) == 0
    err = capsys.readouterr().err
    assert "refits of the model" not in err and "refit 2 of 2" not in err
