"""The cost of the stabilised estimator's refits, stated before they run (issue 35, item 3):
the estimate from the sizes, one progress display over the refits, ``refit_draws``, and the
audit's ``attribute_estimator`` / ``refit_draws``."""

from __future__ import annotations

import json
import re
import warnings
from types import SimpleNamespace

import pandas as pd
import pytest

import bayes_risk as br
from bayes_risk.attribute import EstimatorSpec, attribute_risk
from bayes_risk.attribute import cost as cost_module
from bayes_risk.attribute import refits as refits_module
from bayes_risk.attribute.cost import (
    Pilot,
    distinct_records,
    duration_range,
    refit_cost,
    wants_pilot,
)
from bayes_risk.cli import main
from bayes_risk.exceptions import DataWarning, ValidationError
from bayes_risk.models import Sampling

dpmpm = pytest.importorskip("bayes_risk.models.dpmpm.dpmpm")

COLS = ["SEX", "MAR", "MIG"]


class _Tree(dict):
    """A posterior DataTree's two levels of attributes: the root's (the run) and the
    posterior group's (the sampler's times)."""

    def __init__(self, seconds, run_thin=None, gibbs=False, **timing):
        attrs = {} if seconds is None else {"sampling_time": seconds}
        super().__init__(posterior=SimpleNamespace(attrs={**attrs, **timing}))
        self.attrs = {} if run_thin is None else {"thin": run_thin}
        if gibbs:  # a run of sample_gibbs (DPMPM) records its rounds
            self.attrs["gibbs_rounds"] = 1


def _fake(seconds, n=100, tune=100, draws=100, thin=1, run_thin=None, chains=1, max_sweeps=0,
          gibbs=False, **timing):
    return SimpleNamespace(posterior_=_Tree(seconds, run_thin, gibbs, **timing), _n_records=n,
                           tune=tune, draws=draws, thin=thin, chains=chains,
                           max_sweeps=max_sweeps)


def test_old_fit_falls_back_to_an_upper_bound():
    """A model saved before the sweep time was recorded has only its total sampling time:
    m x T_fit x (n + n_syn) / n x (tune + thin x refit draws) / (tune + thin x draws), by hand,
    stated as an upper bound."""
    base = refit_cost(_fake(10.0), 100, 5)
    assert base.seconds == pytest.approx(5 * 10.0 * 2)  # 5 refits on twice the records
    assert base.low is None
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
    assert base.line().startswith(
        "about 5 refits of the model, at most 1.7 min on this machine (an upper bound: the "
        "model records only its total sampling time (saved by an earlier version, or draws "
        "made elsewhere), one-off costs included: 10 s for 100 records")
    assert refit_cost(_fake(10.0), 100, 1).line().startswith("about 1 refit of the model, ")
    # no recorded sampling time (draws made elsewhere): said, not invented
    none = refit_cost(_fake(None), 100, 5)
    assert none.seconds is None and none.low is None
    assert "time not estimated" in none.line() and none.line().startswith("about 5 refits")


def test_estimate_from_the_sweep_time_by_hand():
    """From the fit's steady seconds per sweep (0.01 s, 2 chains at once), its whole time and
    the refits' sizes: per refit S = turns x sweeps x t x (n + n_syn) / n, set-up O = fit time
    - the fit's own steady sweeps; the range m x S to m x (S + O). The fit's total sampling
    time (600 s here: one-off costs) plays no part."""
    fake = _fake(600.0, n=100, tune=100, draws=100, chains=4, sweep_time=0.01,
                 chains_at_once=2, fit_time=30.0)
    cost = refit_cost(fake, 100, 5)
    turns = 2  # 4 chains, 2 at a time
    S = turns * 200 * 0.01 * 2  # 200 sweeps per chain, twice the records: 8 s
    O = 30.0 - turns * 200 * 0.01  # 26 s of the fit outside its steady sweeps
    assert cost.low == pytest.approx(5 * S)
    assert cost.seconds == pytest.approx(5 * (S + O))
    # fewer refit draws: 100 + 50 sweeps per chain; the set-up does not shrink
    fewer = refit_cost(fake, 100, 5, refit_draws=50)
    assert fewer.low == pytest.approx(5 * turns * 150 * 0.01 * 2)
    assert fewer.seconds - fewer.low == pytest.approx(5 * O)
    # thinning and a warm-up the sampler did not run (tuning_steps=0: exact draws)
    thinned = refit_cost(_fake(None, tune=100, thin=3, sweep_time=0.01, chains_at_once=1,
                               fit_time=1.0, tuning_steps=0), 300, 2)
    assert thinned.low == pytest.approx(2 * 300 * 0.01 * 4)
    assert thinned.seconds == pytest.approx(thinned.low)  # the fit was all sweeps
    line = cost.line()
    assert line.startswith("about 5 refits of the model, estimated 40 s–2.8 min on this machine "
                           "(each refit 200 sweeps per chain of 200 records, at the fit's 10 ms "
                           "per sweep of 100 records, plus up to 26 s of set-up as in the fit")
    assert "the first refit's time follows" in line
    assert "follows" not in refit_cost(fake, 100, 1).line()  # one refit: no second line
    # no fit_time (a fit that ended elsewhere): the sweeps alone, one duration
    alone = refit_cost(_fake(None, sweep_time=0.01), 100, 5)
    assert alone.low == alone.seconds == pytest.approx(5 * 200 * 0.01 * 2)
    assert "estimated about 20 s on this machine" in alone.line()


def test_compiling_in_the_fit_is_left_out_of_the_set_up():
    """Issue 92: the audit's plan put the ACS demo's refits at 38-45 min from a fit whose four
    minutes of compiling numba kernels (a fresh installation) counted as set-up, repeated in
    every refit; the pilot then said 2.1-3.4 min. The fit records its compiling seconds
    (``compile_time``), which the set-up leaves out and the line names."""
    fake = _fake(None, n=100, sweep_time=0.01, chains_at_once=1,
                 fit_time=240.0 + 5.0 + 200 * 0.01, compile_time=240.0)
    cost = refit_cost(fake, 100, 5)
    assert cost.seconds - cost.low == pytest.approx(5 * 5.0)  # 5 s of set-up, not 245 s
    assert "its 4.0 min of compiling kernels left out: done once" in cost.line()
    # a fit that compiled nothing (a warm cache) says nothing of it
    warm = refit_cost(_fake(None, n=100, sweep_time=0.01, chains_at_once=1,
                            fit_time=7.0, compile_time=0.0), 100, 5)
    assert "compiling" not in warm.line()
    assert warm.seconds == pytest.approx(cost.seconds)


def test_equal_records_share_the_sweep_lower_end_by_distinct_records(small_fit):
    """A model whose sweep shares the work of equal records (DPMPM): the lower end scales the
    sweeps by the ratio of distinct records (here 30 of the fit's, 45 in a refit: 1.5, not the
    records' 2); the upper end keeps the records' ratio. Counted by distinct_records."""
    fake = _fake(None, n=100, sweep_time=0.01, chains_at_once=1, fit_time=2.0 + 200 * 0.01)
    plain = refit_cost(fake, 100, 3)
    shared = refit_cost(fake, 100, 3, distinct=(30, 45))
    assert plain.low == pytest.approx(3 * 200 * 0.01 * 2)
    assert shared.low == pytest.approx(3 * 200 * 0.01 * 1.5)
    assert shared.seconds == pytest.approx(plain.seconds) == pytest.approx(3 * (4.0 + 2.0))
    assert "(30 distinct, 45 in a refit)" in shared.line()
    # never above the records' ratio
    assert refit_cost(fake, 100, 3, distinct=(10, 40)).low == pytest.approx(plain.low)

    df, model, syn = small_fit
    fit = len(df.drop_duplicates())
    both = len(pd.concat([df, syn[0]]).drop_duplicates())
    assert distinct_records(model, df, syn[0]) == (fit, both)
    assert distinct_records(SimpleNamespace(), df, syn[0]) is None  # other models: records


def test_estimate_from_a_pilot_by_hand():
    """Injected pilot timings (no clock): per refit turns x sweeps x t to turns x S+ x t + O,
    S+ the sweeps of one more extension round of a self-extending run (at most max_sweeps);
    the fit's own times and the records' ratio play no part."""
    pilot = Pilot(sweep_time=0.01, setup=3.0, sweeps=80)
    fake = _fake(600.0, n=100, tune=100, draws=100, chains=4, sweep_time=0.5,
                 chains_at_once=2, fit_time=900.0)
    cost = refit_cost(fake, 100, 5, pilot=pilot)
    turns = 2  # 4 chains, 2 at a time, as in the fit
    assert cost.low == pytest.approx(5 * turns * 200 * 0.01)  # 20 s
    assert cost.seconds == pytest.approx(5 * (turns * 200 * 0.01 + 3.0))  # 35 s
    assert cost.records == 200 and cost.n_refits == 5
    assert cost.line() == (
        "about 5 refits of the model, estimated 20–35 s on this machine (timed by a pilot "
        "refit just now: 10 ms per sweep of 200 records; each refit 200 sweeps per chain, plus "
        "up to 3 s of set-up; the first refit's time follows)")
    # refit draws and thinning: 100 + 5 x 40 sweeps per chain
    thinned = refit_cost(_fake(None, tune=100, draws=100, thin=5, sweep_time=0.5), 100, 2,
                         refit_draws=40, pilot=pilot)
    assert thinned.low == pytest.approx(2 * 300 * 0.01)
    # a self-extending run (DPMPM's default, thin 5 -> 20 after its rounds): a refit starts at
    # thin 20, 1000 + 20 x 500 sweeps, and may run one more round: 1000 + 2 x 10000
    ext = _fake(None, tune=1000, draws=500, thin=5, run_thin=20, chains=2, max_sweeps=50_000,
                sweep_time=0.5, chains_at_once=2)
    c = refit_cost(ext, 100, 3, pilot=pilot)
    assert c.low == pytest.approx(3 * 11_000 * 0.01)
    assert c.seconds == pytest.approx(3 * (21_000 * 0.01 + 3.0))
    assert "each refit 11,000 sweeps per chain, 21,000 if it extends its run once more " \
        "(max_sweeps)" in c.line()
    # the bound caps the next round
    capped = refit_cost(_fake(None, tune=1000, draws=500, thin=5, run_thin=20, chains=2,
                              max_sweeps=15_000, sweep_time=0.5, chains_at_once=2),
                        100, 3, pilot=pilot)
    assert capped.seconds == pytest.approx(3 * (15_000 * 0.01 + 3.0))
    assert "follows" not in refit_cost(fake, 100, 1, pilot=pilot).line()


def test_a_pilot_only_for_long_gibbs_refits(monkeypatch):
    """A pilot when the lower end of the estimate from the fit reaches PILOT_MIN_SECONDS and
    the fit was a Gibbs run (a pm.sample model's pilot would compile its model, as long as a
    refit)."""
    long = _fake(None, n=100, sweep_time=0.1, gibbs=True)  # 5 x 200 x 0.1 x 2 = 200 s
    assert wants_pilot(long, refit_cost(long, 100, 5))
    short = _fake(None, n=100, sweep_time=0.001, gibbs=True)  # 2 s
    assert not wants_pilot(short, refit_cost(short, 100, 5))
    # the lower end decides: 10 s of sweeps and up to 100 s of the fit's set-up
    setup = _fake(None, n=100, sweep_time=0.005, fit_time=100.0, gibbs=True)
    assert refit_cost(setup, 100, 5).seconds > 30 and not wants_pilot(
        setup, refit_cost(setup, 100, 5))
    nuts = _fake(None, n=100, sweep_time=0.1)
    assert not wants_pilot(nuts, refit_cost(nuts, 100, 5))
    monkeypatch.setattr(cost_module, "PILOT_MIN_SECONDS", 1.0)
    assert wants_pilot(short, refit_cost(short, 100, 5))


@pytest.mark.parametrize("low, high, text", [
    (40, 72, "40 s–1.2 min"), (126, 204, "2.1–3.4 min"), (5.2, 5.4, "about 5 s"),
    (3, 9, "3–9 s"), (700, 1300, "12–22 min"),
])
def test_duration_range(low, high, text):
    assert duration_range(low, high) == text


class _FakeStep:
    """A Gibbs step on a fake clock: its first step costs 100 s (a simulated compilation),
    each later sweep 0.01 s; a kept draw is ``thin`` sweeps."""

    stats_dtypes_shapes = {"s": (float, [])}

    def __init__(self, clock, thin=1):
        self.clock, self.thin, self.calls = clock, thin, 0

    def setup_chain(self, rng, tune, draws):
        self.calls, self.left = 0, tune

    def stop_tuning(self):
        self.tune = False

    def step(self, point):
        sweeps = 1 if self.left > 0 else self.thin
        self.left -= 1
        self.clock.now += 100.0 if self.calls == 0 else 0.01 * sweeps
        self.calls += 1
        return {"x": float(self.calls)}, [{"s": 0.0}]


@pytest.mark.parametrize("thin", [1, 3])
def test_gibbs_sweep_time_leaves_out_the_first_sweep(monkeypatch, thin):
    """The recorded seconds per sweep are those after each chain's first step: a simulated
    100 s compilation in the first step is not in them (it is in sampling_time)."""
    from bayes_risk.models._bayesian import gibbs

    clock = SimpleNamespace(now=0.0)
    monkeypatch.setattr(gibbs, "_clock", lambda: clock.now)
    layout = gibbs.GibbsLayout(shapes={"x": ()}, dims={"x": ()}, coords={})
    dt = gibbs.sample_gibbs(_FakeStep(clock, thin), layout, seeds=[1, 2], tune=4, draws=6,
                            chains=2, cores=1)
    attrs = dt["posterior"].attrs
    assert attrs["sweep_time"] == pytest.approx(0.01)
    assert attrs["chains_at_once"] == 1


def test_pymc_draw_clock_leaves_out_the_first_draw():
    """pm.sample's path: the callback times each chain's draws after its first (which includes
    compiling the chain's functions); the user's callback still runs."""
    from bayes_risk.models._bayesian.timing import DrawClock

    times = iter([100.0, 100.5, 101.0, 250.0, 250.25, 250.5, 250.75])
    seen = []
    clock = DrawClock(lambda **kw: seen.append(kw["draw"].chain), clock=lambda: next(times))
    for chain, k in [(0, 3), (1, 4)]:
        for _ in range(k):
            clock(trace=None, draw=SimpleNamespace(chain=chain))
    # chain 0: 1 s over 2 draws; chain 1: 0.75 s over 3 draws
    assert clock.seconds_per_draw() == pytest.approx(1.75 / 5)
    assert seen == [0, 0, 0, 1, 1, 1, 1]
    assert DrawClock().seconds_per_draw() is None


@pytest.fixture(scope="module")
def small_fit():
    df = br.make_acs_like(60, random_seed=3)[COLS].astype("category")
    model = dpmpm.DPMPM(n_components=2,
                        sampling=Sampling(tune=10, draws=40, chains=2, cores=1, max_sweeps=0),
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
        res = attribute_risk(df, syn, model=model, records=[0, 1], random_seed=5,
                             estimator=EstimatorSpec(bootstrap=0, refit_draws=25))
    err = capfd.readouterr().err
    assert "about 3 refits of the model, estimated" in err
    assert re.search(r"on this machine \(each refit \d+ sweeps per chain of 120 records, at "
                     r"the fit's [\d.]+ ms per sweep of 60 records", err)
    assert "refit 3 of 3" in err
    # the first refit measures this machine at the refits' size
    assert re.search(r"refit 1 of 3 took \d+ s: the other 2, about \d+ s", err)
    assert err.index("about 3 refits") < err.index("refit 3 of 3")
    assert "Multiprocess sampling" not in err and "Sequential sampling" not in err
    assert "Gibbs draws" not in err  # the refits' own bars
    assert model.progressbar is True and model.resolved_sampling.draws == 40
    assert res.to_dict()["settings"]["H_augmented"] == [50, 50, 50]  # 2 chains x 25


def test_long_refits_are_timed_by_a_pilot_first(small_fit, capfd, monkeypatch):
    """Refits estimated at PILOT_MIN_SECONDS or more (here: the threshold set to 0) are timed
    by a pilot refit before they start; the line states the pilot's figures (injected here:
    the arithmetic, not the clock), and the pilot leaves the model and the refits as they
    were."""
    df, model, syn = small_fit
    monkeypatch.setattr(cost_module, "PILOT_MIN_SECONDS", 0.0)
    seen = []

    def fake_pilot(model_, original, synthetic, refit_draws=None):
        seen.append((len(original), len(synthetic), refit_draws))
        return Pilot(sweep_time=0.002, setup=0.5, sweeps=80)

    monkeypatch.setattr(refits_module, "pilot_refit", fake_pilot)
    capfd.readouterr()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        attribute_risk(df, syn, model=model, records=[0, 1], random_seed=5,
                       estimator=EstimatorSpec(bootstrap=0, refit_draws=25))
    err = capfd.readouterr().err
    assert seen == [(60, 60, 25)]
    # 2 chains in turn (cores=1) of 10 + 25 sweeps at 2 ms: 0.14 s a refit, 0.42 s for 3;
    # with 0.5 s of set-up each 1.92 s (durations below 1 s are written "1 s")
    assert "about 3 refits of the model, estimated 1–2 s on this machine (timed by a pilot " \
        "refit just now: 2 ms per sweep of 120 records; each refit 35 sweeps per chain, plus " \
        "up to 1 s of set-up; the first refit's time follows)" in err


def test_pilot_refit_measures_and_restores(small_fit):
    """The real pilot: one fit_augmented per call as the refits run it (the fit's chains, at
    the refits' thinning, no extension), its steady sweep time and set-up; the model's
    settings are restored and its fit untouched."""
    df, model, syn = small_fit
    before, post = model.get_params(), model.posterior_
    pilot = refits_module.pilot_refit(model, df, syn[0], refit_draws=25)
    assert pilot.sweep_time > 0 and pilot.setup >= 0
    assert pilot.sweeps == cost_module.PILOT_TUNE + cost_module.PILOT_DRAWS  # thin 1
    assert model.get_params() == before and model.posterior_ is post


def test_progressbar_false_prints_nothing(small_fit, capfd):
    df, model, syn = small_fit
    capfd.readouterr()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        attribute_risk(df, syn, model=model, records=[0], random_seed=5,
                       progressbar=False,
                       estimator=EstimatorSpec(bootstrap=0))
    err = capfd.readouterr().err
    assert "refit" not in err and "Gibbs draws" not in err and "Multiprocess" not in err


@pytest.mark.parametrize("kw, match", [
    (dict(refit_draws=0), "EstimatorSpec.refit_draws must be an integer >= 1"),
    (dict(refit_draws=2.5), "EstimatorSpec.refit_draws must be an integer >= 1"),
    (dict(refit_draws=10, kind="is"), "refit_draws sets the kept draws"),
])
def test_refit_draws_checked(small_fit, kw, match):
    df, model, syn = small_fit
    with warnings.catch_warnings(), pytest.raises(ValidationError, match=match):
        warnings.simplefilter("ignore")
        attribute_risk(df, syn, model=model, records=[0], random_seed=5,
                       progressbar=False, estimator=EstimatorSpec(bootstrap=0, **kw))


def test_audit_chooses_estimator_and_refit_draws(tmp_path, capsys, monkeypatch):
    """--attribute-estimator / --refit-draws reach attribute_risk, are recorded in the audit's
    settings and the step's summary.json, and the estimate is printed at the step's start."""
    import bayes_risk.attribute.run as step  # the step's run calls its own import

    seen = {}
    real = step.attribute_risk

    def spy(*a, **kw):
        seen.update(kw)
        return real(*a, **kw)

    monkeypatch.setattr(step, "attribute_risk", spy)
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
    assert seen["estimator"].kind == "stabilised" and seen["estimator"].refit_draws == 15
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
        br.audit(df, [df, df], known=["SEX"], synthesized=["MAR"], progressbar=False,
                 settings=br.AuditSettings(attribute_estimator="fast"))
    with pytest.raises(ValidationError, match="EstimatorSpec.refit_draws must be an integer"):
        br.audit(df, [df, df], known=["SEX"], synthesized=["MAR"], progressbar=False,
                 settings=br.AuditSettings(attribute_estimator=br.EstimatorSpec(refit_draws=-1)))


def test_help_states_the_cost(capsys):
    for cmd in ("attribute", "audit"):
        with pytest.raises(SystemExit):
            main([cmd, "--help"])
        text = " ".join(capsys.readouterr().out.split())
        assert "refits the model once per synthetic dataset" in text
        assert "--refit-draws" in text


def test_sequential_regression_records_its_draw_time():
    """A SequentialRegression fit records the time of its draws per chain and draw (exact draws:
    no warm-up), so the cost of its refits is estimated from the draws, not from the imports
    and the DataTree."""
    import numpy as np
    import pandas as pd

    from bayes_risk.models.seqreg.seqreg import SequentialRegression

    rng = np.random.default_rng(0)
    df = pd.DataFrame({"x": rng.normal(size=50)})
    df["y"] = df["x"] + rng.normal(size=50)
    model = SequentialRegression(
                                 sampling=Sampling(draws=50, chains=2), progressbar=False).fit(df,
                                 random_seed=1)
    attrs = model.posterior_["posterior"].attrs
    assert attrs["sampling_time"] > 0 and attrs["sweep_time"] > 0
    assert attrs["tuning_steps"] == 0 and attrs["chains_at_once"] == 1
    assert attrs["fit_time"] >= attrs["sampling_time"]
    cost = refit_cost(model, 50, 2)
    # 2 refits x 2 chains in turn x 50 draws x t x twice the records
    assert cost.low == pytest.approx(2 * 2 * 50 * attrs["sweep_time"] * 2)
    assert cost.seconds >= cost.low


def test_sequential_regression_nuts_column_counts_its_steady_sampling(monkeypatch):
    """A GLM column drawn by NUTS adds its chains' steady sampling (PyMC's draw clock), not the
    building and compiling of its model: here a sampler that takes 0.5 s (a simulated
    compilation) but records 1 ms per draw."""
    import time

    import numpy as np
    import pandas as pd
    import xarray as xr

    import bayes_risk.models.seqreg.seqreg as seqreg_module
    from bayes_risk.models.seqreg.seqreg import SequentialRegression

    rng = np.random.default_rng(0)
    df = pd.DataFrame({"x": rng.normal(size=60)})
    df["u"] = pd.Categorical((df["x"] + rng.normal(size=60) > 0).astype(int))

    def fake_sampler(self, model, random_seed=None):
        time.sleep(0.5)
        beta = rng.normal(size=(2, 20, 2))
        post = xr.Dataset({"beta": (("chain", "draw", "coef"), beta)},
                          attrs={"sweep_time": 1e-3, "chains_at_once": 2})
        return xr.DataTree.from_dict({"posterior": post})

    monkeypatch.setattr(seqreg_module, "run_pymc", fake_sampler)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # random "draws": their R-hat is not the point
        model = SequentialRegression(
                                     sampling=Sampling(tune=10, draws=20, chains=2),
                                     progressbar=False).fit(
            df, synthesized=["u"], random_seed=1)
    attrs = model.posterior_["posterior"].attrs
    # 1 turn (2 chains at once) x (10 + 20) draws x 1 ms, over 2 chains x 30 "sweeps"
    assert attrs["sweep_time"] == pytest.approx(30e-3 / 60)
    assert attrs["tuning_steps"] == 10
    assert attrs["fit_time"] > 0.5


def test_poisson_mixture_records_its_sweep_time():
    """The Poisson mixture runs pm.sample with its Gibbs step: the draw callback's steady time
    per draw is recorded, chains in turn (cores=1), with the fit's whole time."""
    import numpy as np
    import pandas as pd

    from bayes_risk.models import PoissonMixture

    rng = np.random.default_rng(0)
    counts = pd.DataFrame({"a": rng.poisson(3, 40), "b": rng.poisson(8, 40)})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = PoissonMixture(n_components=2, sampling=Sampling(tune=5, draws=10, chains=2),
                               progressbar=False).fit(counts, random_seed=1)
    attrs = model.posterior_["posterior"].attrs
    assert attrs["sweep_time"] > 0 and attrs["chains_at_once"] == 1
    assert attrs["fit_time"] > attrs["sampling_time"]
    cost = refit_cost(model, 40, 3)
    assert cost.low == pytest.approx(3 * 2 * 15 * attrs["sweep_time"] * 2)


def test_recorded_times_survive_save_and_load_and_an_old_save_falls_back(small_fit, tmp_path):
    """The new attributes are saved with the posterior (NetCDF) and give the same estimate
    after loading; a model saved without them (by an earlier version: the attributes removed
    from its file) still loads, and its estimate is the upper bound from sampling_time."""
    import xarray as xr

    from bayes_risk.models.base import load_model

    df, model, syn = small_fit
    attrs = model.posterior_["posterior"].attrs
    assert {"sweep_time", "chains_at_once", "fit_time", "sampling_time"} <= set(attrs)
    assert attrs["chains_at_once"] == 1  # cores=1
    model.save(tmp_path / "m")
    back = load_model(tmp_path / "m")
    for key in ("sweep_time", "chains_at_once", "fit_time"):
        assert back.posterior_["posterior"].attrs[key] == pytest.approx(attrs[key])
    assert refit_cost(back, 60, 3).line() == refit_cost(model, 60, 3).line()
    # the same model as an earlier version saved it
    post = tmp_path / "m" / "posterior.nc"
    with xr.open_datatree(post, engine="h5netcdf") as tree:
        tree = tree.load()
    for key in ("sweep_time", "chains_at_once", "fit_time"):
        del tree["posterior"].attrs[key]
    tree.to_netcdf(post, engine="h5netcdf")
    meta_file = tmp_path / "m" / "model.json"
    meta = json.loads(meta_file.read_text())
    del meta["sha256"]  # nor did an earlier version record the checksums of the files
    meta["format_version"] = 1  # (a folder of version 2 without them is damaged)
    meta_file.write_text(json.dumps(meta))
    with pytest.warns(DataWarning, match="MODEL_UNVERIFIED"):
        old = load_model(tmp_path / "m")
    cost = refit_cost(old, 60, 3)
    assert cost.low is None and cost.seconds == pytest.approx(
        3 * attrs["sampling_time"] * 2)  # twice the records, the same sweeps
    assert "at most" in cost.line() and "an upper bound" in cost.line()


def test_a_model_saved_by_an_earlier_version_gets_an_upper_bound():
    """A DPMPM saved by an earlier version (tests/models/saved_before_packages) has no sweep
    time: it loads, and its refits' estimate is today's upper bound from sampling_time."""
    from pathlib import Path

    from bayes_risk.models import load_model

    saved = Path(__file__).parents[1] / "models" / "saved_before_packages" / "dpmpm"
    with pytest.warns(DataWarning, match="MODEL_UNVERIFIED"):
        model = load_model(saved)
    attrs = model.posterior_["posterior"].attrs
    assert "sweep_time" not in attrs and attrs["sampling_time"] > 0
    cost = refit_cost(model, model._n_records, 2)
    run = model.resolved_sampling
    sweeps = run.tune + run.thin * run.draws
    assert cost.low is None
    assert cost.seconds == pytest.approx(2 * float(attrs["sampling_time"]) * 2 * sweeps / sweeps)
    assert cost.line().startswith("about 2 refits of the model, at most ")
    assert "an upper bound: the model records only its total sampling time (saved by an " \
        "earlier version" in cost.line()


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
