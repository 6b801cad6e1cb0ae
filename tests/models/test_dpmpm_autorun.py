"""The DPMPM's self-extending default run (issue 10 item 1; ``max_sweeps``).

A run whose length was not asked for continues, while its convergence checks fail and the bound
allows, in rounds that double the window after the warm-up and the thinning: every chain goes on
from its state, every second kept draw stays, so that the kept draws per chain do not change in
number and are exactly those of one run at the final thinning (same seed). A run length asked
for (``draws``) is run as asked, bit for bit as before. Most tests here give ``draws`` and
``max_sweeps`` together (extension enabled on a short run, where the 100-per-chain ESS check
always fails) to keep them fast; ``check`` is replaced where a test is about when a round runs.
"""

from __future__ import annotations

import os
import re
import signal
import threading
import time
import warnings

import numpy as np
import pandas as pd
import pytest

from bayes_risk.data import make_acs_like
from bayes_risk.exceptions import BayesRiskWarning, ConvergenceWarning, ValidationError
from bayes_risk.models import DPMPM, Sampling
from bayes_risk.models._bayesian.convergence_report import check_convergence
from bayes_risk.models._bayesian.sampling import SAMPLING_FIELDS
from bayes_risk.models.dpmpm.coding import encode

GROUPS = ("posterior", "sample_stats", "warmup_sample_stats")


def _table(n: int = 300, seed: int = 1) -> pd.DataFrame:
    df = make_acs_like(n, random_seed=seed)[["SEX", "MAR", "MIG"]].astype(object)
    df.loc[np.random.default_rng(seed).random(n) < 0.05, "MIG"] = None  # imputed in the sweep
    return df


def _fit(df, seed=3, **kw):
    run = {"tune": 10, "chains": 2, "cores": 1,
           **{k: kw.pop(k) for k in SAMPLING_FIELDS if k in kw}}
    settings = dict(n_components=4, sampling=Sampling(**run), **{"progressbar": False, **kw})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BayesRiskWarning)
        return DPMPM(**settings).fit(df, random_seed=seed)


def _same_draws(a, b) -> None:
    for g in GROUPS:
        A, B = a[g], b[g]
        assert list(A.data_vars) == list(B.data_vars), g
        for v in A.data_vars:
            np.testing.assert_array_equal(A[v].values, B[v].values, err_msg=f"{g}/{v}")


def _posterior(model, df, seed, check):
    data, schema = model._prepare_data(df, allow_nan=True)
    codes = encode(schema, data, name="data")
    return model._gibbs_posterior(codes, [len(c.levels) for c in schema], seed, check=check)


def test_settings_stored_as_given_and_resolved_by_fit():
    def max_sweeps(sampler="gibbs", **run):
        return DPMPM(sampler=sampler, sampling=Sampling(**run))._run_settings()["max_sweeps"]

    assert max_sweeps() == 50_000  # the default run length extends itself
    assert max_sweeps(thin=3) == 50_000
    assert max_sweeps(draws=500) == 0  # a run length asked for is run as asked
    assert max_sweeps(draws=500, max_sweeps=9_000) == 9_000
    assert max_sweeps(sampler="nuts") == 0
    assert DPMPM().sampling is None and DPMPM().resolved_sampling.max_sweeps is None
    m = DPMPM(sampling=Sampling(max_sweeps=0))
    assert m.get_params()["sampling__max_sweeps"] == 0
    assert DPMPM(**DPMPM().get_params(deep=False)).get_params() == DPMPM().get_params()
    # set_params is the constructor: the run length asked for later is run as asked
    assert (DPMPM().set_params(sampling__draws=500)._run_settings()
            == DPMPM(sampling=Sampling(draws=500))._run_settings())
    df = _table(60)
    for bad in (-1, 2.5, True, "many"):
        with pytest.raises(ValidationError, match="max_sweeps"):
            DPMPM(sampling=Sampling(max_sweeps=bad), progressbar=False).fit(df)
    with pytest.raises(ValidationError, match="max_sweeps=100 applies to the Gibbs sampler"):
        DPMPM(sampler="nuts", sampling=Sampling(max_sweeps=100), progressbar=False).fit(df)


@pytest.fixture
def never_stuck(monkeypatch):
    """Rounds until the bound: these tiny fits' R-hat stays high (the early stop of
    ``extension_stuck`` is tested on its own)."""
    import bayes_risk.models._bayesian.convergence as bc  # the rounds' verdict calls it there

    monkeypatch.setattr(bc, "extension_stuck", lambda previous, current: False)


def test_extended_run_is_the_run_at_its_final_thinning(never_stuck):
    """Three rounds (thin 1 → 4, window 40 → 160 sweeps): 40 kept draws per chain, the warm-up
    untouched, and the draws, statistics and warm-up statistics of the explicit run at thin 4,
    bit for bit."""
    df = _table()
    ext = _fit(df, draws=40, max_sweeps=10 + 40 * 4)  # room for thin 4, not for 8
    run = ext.convergence_summary()
    assert (run["rounds"], run["thin"], run["sweeps_per_chain"]) == (3, 4, 170)
    assert run["max_sweeps_per_chain"] == 170 and run["draws"] == 40 and run["tune"] == 10
    assert run["stopped"] == "max_sweeps"
    assert ext.posterior_["posterior"].sizes["draw"] == 40 and ext.n_draws == 80
    assert ext.posterior_["warmup_sample_stats"].sizes["draw"] == 10
    assert ext.sampling.thin is None  # the setting; the thinning used is in the record
    explicit = _fit(df, draws=40, thin=4)
    assert explicit._run_settings()["max_sweeps"] == 0
    assert explicit.convergence_summary()["rounds"] == 1
    _same_draws(ext.posterior_, explicit.posterior_)
    assert check_convergence(ext).attrs["mcmc_run"] == {
        "tune": 10, "thin": 4, "draws": 40, "rounds": 3, "sweeps_per_chain": 170,
        "max_sweeps": 170, "stopped": "max_sweeps"}


def test_odd_number_of_draws_keeps_the_multiples_of_the_new_thinning(never_stuck):
    df = _table(200, seed=2)
    ext = _fit(df, draws=41, thin=3, max_sweeps=10 + 41 * 12)
    assert ext.convergence_summary()["thin"] == 12
    _same_draws(ext.posterior_, _fit(df, draws=41, thin=12).posterior_)


def test_a_round_runs_when_and_only_when_the_check_fails():
    df = _table(200, seed=4)
    model = DPMPM(n_components=4,
                  sampling=Sampling(tune=6, draws=20, chains=2, cores=1, max_sweeps=10_000),
                  progressbar=False)
    seen = []

    def passes_second_time(tree):
        seen.append(tree["posterior"].sizes["draw"])
        return "passed" if len(seen) == 2 else "failed"

    dt = _posterior(model, df, 5, passes_second_time)
    assert seen == [20, 20] and dt.attrs["gibbs_rounds"] == 2 and dt.attrs["thin"] == 2
    assert dt.attrs["gibbs_stop"] == "passed"
    dt = _posterior(model, df, 5, lambda tree: "passed")
    assert dt.attrs["gibbs_rounds"] == 1 and dt.attrs["thin"] == 1
    # stuck: failed, and a longer run is not expected to help
    verdicts = iter(["failed", "failed", "stuck"])
    dt = _posterior(model, df, 5, lambda tree: next(verdicts))
    assert dt.attrs["gibbs_rounds"] == 3 and dt.attrs["gibbs_stop"] == "stuck"
    # the bound: 6 + 20 * 2**k <= 500 for k <= 4
    model.set_params(sampling__max_sweeps=500)
    dt = _posterior(model, df, 5, lambda tree: "failed")
    assert dt.attrs["gibbs_rounds"] == 5 and dt.attrs["thin"] == 16
    assert dt.attrs["gibbs_stop"] == "max_sweeps"
    assert 6 + 20 * 16 <= 500 < 6 + 20 * 32
    # a bound below the first run's length: the first run, whole, and no round
    model.set_params(sampling__max_sweeps=10)
    dt = _posterior(model, df, 5, lambda tree: "failed")
    assert dt.attrs["gibbs_rounds"] == 1 and dt["posterior"].sizes["draw"] == 20
    # no bound, or no check: never
    model.set_params(sampling__max_sweeps=0)
    dt = _posterior(model, df, 5, lambda tree: "failed")
    assert dt.attrs["gibbs_rounds"] == 1 and dt.attrs["gibbs_stop"] == ""


def test_a_run_stops_extending_when_a_round_leaves_the_chains_apart():
    """R-hat − 1 roughly halves per doubling when the chains agree but have few effective
    draws; chains in different states stay apart. The largest R-hat of each round on two
    shared data sets (default fits): the rule goes on with the first two, stops the third after
    its third round."""
    from bayes_risk.models._bayesian.convergence import extension_stuck

    mixing = [1.258, 1.090, 1.029, 1.007]  # ss16pusa_sample_zeros_miss + MCZ, seed 1: passes
    slow = [1.457, 1.352, 1.084, 1.043]  # ss16pusa_sample_zeros + MCZ, seed 4: improves slowly
    apart = [2.084, 1.954, 1.955, 1.929]  # NYexample, seed 1: k_occupied
    for trajectory in (mixing, slow):
        assert not any(extension_stuck(a, b)
                       for a, b in zip(trajectory, trajectory[1:], strict=False))
    assert not extension_stuck(apart[0], apart[1])  # 0.954 / 1.084 = 0.88: one more round
    assert extension_stuck(apart[1], apart[2])
    assert not extension_stuck(None, 2.0)  # the first round: nothing to compare with
    assert not extension_stuck(1.02, 1.03)  # R-hat near 1: noise, more draws help
    assert not extension_stuck(1.5, float("nan"))


def test_explicit_run_length_is_run_as_asked():
    """``draws`` given: no round even though the checks fail (20 draws: LOW_ESS), and the draws
    of PyMC's own sampler with the same step (which never extends)."""
    df = _table(200, seed=5)
    m = _fit(df, draws=20, tune=5)
    assert m.convergence_summary()["rounds"] == 1
    assert "LOW_ESS" in {w["code"] for w in m.mcmc_warnings()}
    data, schema = m._prepare_data(df, allow_nan=True)
    codes = encode(schema, data, name="data")
    seed = 3
    pm_tree = m._gibbs_posterior(codes, [len(c.levels) for c in schema], seed, via_pymc=True)
    for g in ("sample_stats", "warmup_sample_stats"):
        for v in ("loglik", "k_occupied"):
            np.testing.assert_array_equal(pm_tree[g][v].values, m.posterior_[g][v].values)
    np.testing.assert_array_equal(pm_tree["posterior"]["phi_1"].values,
                                  m.posterior_["posterior"]["phi_1"].values)


@pytest.mark.skipif(not os.sys.platform.startswith("linux"), reason="forked chain workers")
def test_parallel_chains_extend_to_the_sequential_draws(never_stuck):
    """Workers stay alive between rounds; 3 chains in 2 workers and in turn: the same draws."""
    df = _table(250, seed=6)
    kw = dict(draws=30, chains=3, max_sweeps=10 + 30 * 4)
    seq = _fit(df, cores=1, **kw)
    par = _fit(df, cores=2, **kw)
    assert seq.convergence_summary()["rounds"] == par.convergence_summary()["rounds"] == 3
    _same_draws(seq.posterior_, par.posterior_)


def test_record_survives_save_and_load_and_the_warning_names_the_bound(tmp_path, never_stuck):
    df = _table(200, seed=7)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        m = DPMPM(n_components=4,
                  sampling=Sampling(tune=10, draws=20, chains=2, cores=1, max_sweeps=90),
                  progressbar=False).fit(df, random_seed=1)
    low = [str(w.message) for w in caught if getattr(w.message, "code", "") == "LOW_ESS"]
    assert len(low) == 1 and "extended itself to 90 sweeps per chain (one kept per 4, 3 " \
        "rounds), the longest that max_sweeps=90 allows: raise max_sweeps" in low[0]
    m.save(tmp_path / "m")
    back = DPMPM.load(tmp_path / "m")
    assert back.sampling.max_sweeps == 90
    for key in ("rounds", "thin", "sweeps_per_chain", "max_sweeps_per_chain"):
        assert back.convergence_summary()[key] == m.convergence_summary()[key]
    import json

    conv = json.loads((tmp_path / "m" / "convergence.json").read_text())
    assert (conv["rounds"], conv["thin"], conv["sweeps_per_chain"]) == (3, 4, 90)


def test_augmented_fit_starts_at_the_final_thinning(never_stuck):
    df = _table(150, seed=8)
    m = _fit(df, draws=20, max_sweeps=10 + 20 * 4)
    assert m.convergence_summary()["thin"] == 4
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BayesRiskWarning)
        aug = m.fit_augmented(df, df.sample(40, random_state=1), random_seed=2)
    assert aug.resolved_sampling.thin == 4
    assert aug.resolved_sampling.max_sweeps == m.resolved_sampling.max_sweeps
    assert aug.n_draws == m.n_draws  # H of the main posterior
    assert aug.convergence_summary()["thin"] == 4  # and no room to extend further


def test_progress_bar_grows_with_a_round():
    from bayes_risk.models._bayesian.gibbs import _grow_bar, _progress_bar

    prog, bar = _progress_bar(True, 30, 10, 5)
    bar(30)
    _grow_bar(prog, 50, 10, 10, 2)
    assert prog.total == 50 and prog.completed == 30
    assert prog.description == "Gibbs sweeps, extension 1 (one draw kept per 10)"
    _grow_bar(None, 50, 10, 10, 2)  # no bar: nothing to do


def test_an_extension_is_announced_as_one_and_the_bar_counts_its_sweeps(capsys, monkeypatch,
                                                                       never_stuck):
    """The run extending itself says so as a step of the run ("Extending the run"), never as
    a failure; the bar's total grows by the round's sweeps and it ends there: the sweeps per
    chain of the final thinning (issue 66)."""
    from bayes_risk import _terminal

    monkeypatch.setattr(_terminal, "bar_style", lambda: "plain")
    df = _table(150, seed=5)
    m = _fit(df, draws=15, max_sweeps=10 + 15 * 4, progressbar=True)
    conv = m.convergence_summary()
    assert conv["rounds"] == 3 and conv["thin"] == 4
    err = capsys.readouterr().err
    assert "failed" not in err.lower(), err
    ext = [ln for ln in err.splitlines() if ln.startswith("Extending the run")]
    assert len(ext) == 2 and "after 25 sweeps per chain" in ext[0] \
        and "continues to 40 sweeps, one draw kept per 2" in ext[0], ext
    total = 2 * conv["sweeps_per_chain"]
    assert re.search(rf"^Gibbs sweeps, extension 2 \(one draw kept per 4\): {total}/{total} "
                     r"sweeps in ", err, re.M), err
    # without its bar (a refit inside attribute risk) the run extends itself silently
    _fit(df, draws=15, max_sweeps=10 + 15 * 4)
    assert "Extending" not in capsys.readouterr().err


@pytest.mark.skipif(os.name != "posix", reason="SIGINT")
@pytest.mark.parametrize("cores", [1, 2])
def test_ctrl_c_stops_an_extension_round(cores):
    df = _table(2000, seed=2)
    model = DPMPM(n_components=10,
                  sampling=Sampling(tune=5, draws=10, chains=2, cores=cores, max_sweeps=10**9),
                  progressbar=False)
    rounds = []
    # the signal comes half a second into the extension rounds (which go on until it comes):
    # a timer started with the fit could fire in its first round on a loaded machine
    sent = []

    def interrupt() -> None:
        sent.append(time.perf_counter())
        os.kill(os.getpid(), signal.SIGINT)

    timer = threading.Timer(0.5, interrupt)

    def fails(tree):
        rounds.append(1)
        if len(rounds) == 1:
            timer.start()
        return "failed"

    try:
        # in one process the signal may arrive inside a numba kernel (which Python reports as
        # SystemError): the fit still raises KeyboardInterrupt
        with pytest.raises(KeyboardInterrupt):
            _posterior(model, df, 1, fails)
    finally:
        timer.cancel()
    assert rounds  # interrupted in a later round
    # the rounds never end by themselves (max_sweeps=10**9): the stop is timed from the signal
    # (well under a second; 60 s is the margin for a loaded machine), not from the start
    assert sent and time.perf_counter() - sent[0] < 60
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    if cores > 1:
        import multiprocessing as mp

        assert not mp.active_children()  # the chain workers are gone


@pytest.mark.slow
def test_readme_example_fits_without_convergence_warnings():
    """A first fit with the defaults (1,000 ACS-like persons, four variables, two seeds; the
    README's former five-line example): the run extends itself until every check passes
    (before: RHAT_HIGH and LOW_ESS on k_occupied at 2,500 sweeps)."""
    import bayes_risk as br

    acs = br.make_acs_like(1000, random_seed=1)[["SEX", "AGE", "RACE", "MAR"]]
    for seed in (1, 2):
        with warnings.catch_warnings():
            warnings.simplefilter("error", ConvergenceWarning)
            m = DPMPM(progressbar=False).fit(acs, random_seed=seed)
        s = m.convergence_summary()
        assert s["passed"] and s["draws"] == 500 and s["rounds"] > 1
        assert s["sweeps_per_chain"] == 1000 + 500 * s["thin"] <= 50_000


def test_a_fit_whose_rounds_leave_the_chains_apart_says_so(monkeypatch):
    """40 draws of a small fit: R-hat stays above 1.1 through the second round and falls by less
    than a quarter (the rule with its shrink factor at 0.75), so the run stops there (not at its
    bound) and its warning says why."""
    import bayes_risk.models._bayesian.convergence as bc

    monkeypatch.setattr(bc, "STUCK_SHRINK", 0.75)
    m = _fit(_table(), draws=40, max_sweeps=10 + 40 * 4)
    run = m.convergence_summary()
    assert (run["rounds"], run["thin"], run["stopped"]) == (2, 2, "stuck")
    assert max(check_convergence(m)["rhat"]) > 1.1
    msg = " ".join(w["message"] for w in m.mcmc_warnings())
    assert "stopped extending itself at 90 sweeps per chain (one kept per 2, 2 rounds)" in msg


@pytest.mark.slow
def test_forked_chains_survive_a_lock_left_held_by_a_killed_worker():
    """numba guards its thread launch with a semaphore shared by every process forked from the
    fitting one. A chain worker terminated while holding it (an interrupted fit) left every later
    parallel fit of that process waiting for ever (seen as a hung test suite). Here the parent
    holds it, as the killed worker would: the workers take locks of their own and the fit
    ends."""
    import subprocess
    import sys
    import textwrap

    script = textwrap.dedent("""
        import bayes_risk as br
        from bayes_risk.models import DPMPM, Sampling
        from numba.np.ufunc import parallel

        if not parallel._backend_init_process_lock:
            parallel._set_init_process_lock()
        parallel._backend_init_process_lock.acquire()  # never released, as by a killed worker
        acs = br.make_acs_like(200, random_seed=1)[["SEX", "RACE", "MAR"]]
        DPMPM(n_components=3, progressbar=False,
              sampling=Sampling(tune=5, draws=5, chains=2, cores=2, max_sweeps=0),
              ).fit(acs, random_seed=1)
        print("fitted")
    """)
    env = {**os.environ, "NUMBA_THREADING_LAYER": "workqueue"}
    # a session of its own: on a timeout the forked chain workers are killed with the fit,
    # not left running after the test
    # -P: the installed package, not the checkout the suite runs in (whose numba cache a
    # fresh clone has yet to fill: 20 s more of compiling)
    proc = subprocess.Popen([sys.executable, "-P", "-c", script], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, start_new_session=True)
    try:
        # a bound against the hang this test guards against (a fit of about 20 s of CPU
        # took 70 s of wall time with the two cores shared by many processes)
        out, err = proc.communicate(timeout=600)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        pytest.fail("the forked chain workers waited for ever on numba's launch lock")
    assert proc.returncode == 0 and "fitted" in out, err[-2000:]


def _children(pid: int) -> list[int]:
    """Processes whose parent is ``pid`` (from /proc)."""
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    # "pid (comm) state ppid ...": comm may hold spaces, so split after ")"
                    if int(f.read().rsplit(")", 1)[1].split()[1]) == pid:
                        out.append(int(entry))
            except (OSError, IndexError, ValueError):
                pass  # ended while read
    return out


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")  # not a zombie
    except OSError:
        return False


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs /proc (Linux)")
def test_forked_chain_workers_end_when_the_fit_is_killed():
    """A fit killed with SIGKILL (the out-of-memory killer, a batch system's time limit) runs no
    clean-up; its forked chain workers used to go on sampling, each on a core, until their
    round ended. They now end with their parent."""
    import subprocess
    import sys
    import textwrap

    script = textwrap.dedent("""
        import bayes_risk as br
        from bayes_risk.models import DPMPM, Sampling

        acs = br.make_acs_like(2000, random_seed=1)
        print("fitting", flush=True)
        DPMPM(n_components=20, progressbar=False,
              sampling=Sampling(tune=100000, draws=100000, chains=2, cores=2, max_sweeps=0),
              ).fit(acs, random_seed=1)
    """)
    # -P: the installed package (as above)
    proc = subprocess.Popen([sys.executable, "-P", "-c", script], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    workers: list[int] = []
    try:
        assert proc.stdout.readline().strip() == "fitting", proc.stderr.read()[-2000:]
        deadline = time.monotonic() + 300  # the workers start once the sampler is compiled
        while len(workers) < 2 and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.2)
            workers = _children(proc.pid)
        assert len(workers) >= 2, f"no chain workers appeared: {proc.poll()}"
        proc.kill()  # SIGKILL: no handler, no finally, no atexit in the parent
        proc.wait()
        deadline = time.monotonic() + 30
        while any(_alive(w) for w in workers) and time.monotonic() < deadline:
            time.sleep(0.1)
        left = [w for w in workers if _alive(w)]
        assert not left, f"chain workers {left} outlived the killed fit"
    finally:
        os.killpg(proc.pid, signal.SIGKILL) if proc.poll() is None else None
        for w in workers:
            try:
                os.kill(w, signal.SIGKILL)
            except OSError:
                pass
