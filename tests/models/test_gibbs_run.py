"""Gibbs-only runs without ``pm.sample`` (issue 15): the DPMPM's fast path returns the DataTree
``pm.sample`` returns (same groups, variables, dims, coordinates, attributes and, for the same
seed, the same draws), chains in parallel processes give the draws of sequential chains, and
everything downstream (convergence, save/load, synthesis) works on it."""

from __future__ import annotations

import os
import re
import signal
import threading
import time
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from bayes_risk.exceptions import ValidationError
from bayes_risk.models import Sampling
from bayes_risk.models._bayesian.convergence_report import check_convergence
from bayes_risk.models.dpmpm.coding import encode
from bayes_risk.models.dpmpm.dpmpm import DPMPM

pytestmark = pytest.mark.filterwarnings("ignore::bayes_risk.exceptions.ConvergenceWarning")


def _table(n: int = 300, seed: int = 3) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({
        "a": rng.choice(["x", "y", "z"], n),
        "b": rng.choice(["u", "v"], n),
        "c": rng.choice(["p", "q", "r", "s"], n),
    })
    df.loc[rng.random(n) < 0.1, "c"] = None  # missing values: imputed in the sweep
    return df


def _posterior(model: DPMPM, df: pd.DataFrame, seed: int, via_pymc: bool):
    data, schema = model._prepare_data(df, allow_nan=True)
    codes = encode(schema, data, name="data")
    d = [len(c.levels) for c in schema]
    return model._gibbs_posterior(codes, d, seed, via_pymc=via_pymc)


def _assert_same_tree(a, b, *, pi_rtol: float = 1e-12) -> None:
    assert list(a.children) == list(b.children)
    for g in a.children:
        A, B = a[g].to_dataset(), b[g].to_dataset()
        # PyMC's order of sampler statistics varies between runs: compare as sets there
        if g == "posterior":
            assert list(A.data_vars) == list(B.data_vars)
        else:
            assert set(A.data_vars) == set(B.data_vars)
        assert list(A.coords) == list(B.coords)
        for c in A.coords:
            np.testing.assert_array_equal(A[c].values, B[c].values)
            assert A[c].dtype == B[c].dtype
        for v in A.data_vars:
            assert A[v].dims == B[v].dims, v
            assert A[v].dtype == B[v].dtype, v
            if v == "pi":  # a deterministic: PyTensor's and numpy's logs may differ in the last bit
                np.testing.assert_allclose(A[v].values, B[v].values, rtol=pi_rtol, atol=1e-300)
            else:
                np.testing.assert_array_equal(A[v].values, B[v].values, err_msg=f"{g}/{v}")
        # fit_time and compile_time are the whole fit's (DPMPM.fit), not the sampler's
        whole_fit = {"fit_time", "compile_time"}
        assert set(A.attrs) - whole_fit == set(B.attrs) - whole_fit
        for k in ("inference_library", "inference_library_version", "sample_dims",
                  "tuning_steps", "creation_library"):
            assert A.attrs[k] == B.attrs[k], k


@pytest.mark.parametrize(
    ("K", "tune", "chains"), [(4, 3, 2), (1, 2, 1), (5, 0, 1)]
)
def test_fast_path_tree_is_the_pm_sample_tree(K, tune, chains):
    df = _table()
    model = DPMPM(n_components=K,
                  sampling=Sampling(tune=tune, draws=6, chains=chains, cores=1), progressbar=False)
    slow = _posterior(model, df, 11, via_pymc=True)
    fast = _posterior(model, df, 11, via_pymc=False)
    _assert_same_tree(slow, fast)
    assert ("warmup_sample_stats" in fast.children) == (tune > 0)


def test_parallel_chains_give_the_sequential_draws():
    df = _table(400, seed=5)
    seq = _posterior(DPMPM(n_components=6, sampling=Sampling(tune=5, draws=8, chains=3, cores=1),
                           progressbar=False), df, 2, via_pymc=False)
    par = _posterior(DPMPM(n_components=6, sampling=Sampling(tune=5, draws=8, chains=3, cores=2),
                           progressbar=False), df, 2, via_pymc=False)
    _assert_same_tree(seq, par, pi_rtol=0.0)
    # and the draws of PyMC's own parallel sampler, whose worker processes do not number the
    # chains: with chains that start alike (with overdispersed starts it refuses)
    kw = dict(n_components=6,
              sampling=Sampling(tune=5, draws=8, chains=3, cores=2, starts="spread"),
              progressbar=False)
    par = _posterior(DPMPM(**kw), df, 2, via_pymc=False)
    pm_par = _posterior(DPMPM(**kw), df, 2, via_pymc=True)
    _assert_same_tree(pm_par, par)
    with pytest.raises(ValidationError, match="start alike"):
        _posterior(DPMPM(**{**kw, "sampling": replace(kw["sampling"], starts="overdispersed")}),
                   df, 2, via_pymc=True)


def test_fit_uses_the_fast_path_and_everything_downstream_works(tmp_path):
    df = _table(500, seed=8)
    m = DPMPM(n_components=5,
              sampling=Sampling(tune=20, draws=40, chains=2, cores=1), progressbar=False)
    m.fit(df, random_seed=4)
    ref = _posterior(DPMPM(n_components=5, sampling=Sampling(tune=20, draws=40, chains=2, cores=1),
                           progressbar=False), df, 4, via_pymc=True)
    # the fit adds the draws of the diagnosed quantities (made from the draws by the check)
    assert list(m.posterior_.children) == [*ref.children, "label_invariant"]
    fitted = m.posterior_.copy()
    del fitted["label_invariant"]
    # and, when the chains disagree, the bounds of each regime's evidence (DPMPM.fit's own pass)
    post = fitted["posterior"]
    post.attrs = {k: v for k, v in post.attrs.items() if "evidence" not in k}
    _assert_same_tree(ref, fitted)
    rep = check_convergence(m)
    assert {"loglik", "alpha", "k_occupied"} <= set(rep.index)
    assert np.isfinite(rep.loc["alpha", "rhat"])
    summary = m.convergence_summary()
    assert summary["chains"] == 2 and summary["draws"] == 40
    syn = m.synthesize(3, random_seed=9)
    m.save(tmp_path / "model")
    back = DPMPM.load(tmp_path / "model")
    np.testing.assert_array_equal(back._stacked("phi_2"), m._stacked("phi_2"))
    np.testing.assert_allclose(back.record_loglik(df.dropna().head(5)),
                               m.record_loglik(df.dropna().head(5)), rtol=1e-12)
    again = back.synthesize(3, random_seed=9)
    for a, b in zip(syn.datasets, again.datasets, strict=True):
        pd.testing.assert_frame_equal(a, b)


@pytest.mark.parametrize("cores", [1, 2])
def test_progressbar_run_gives_the_same_draws(capsys, cores):
    df = _table(200, seed=1)
    kw = dict(n_components=3, sampling=Sampling(tune=2, draws=12, chains=2, cores=cores))
    quiet = _posterior(DPMPM(**kw, progressbar=False), df, 6, False)
    shown = _posterior(DPMPM(**kw, progressbar=True), df, 6, False)
    np.testing.assert_array_equal(quiet["posterior"]["phi_0"].values,
                                  shown["posterior"]["phi_0"].values)
    assert "Gibbs sweeps" in capsys.readouterr().err


@pytest.mark.skipif(os.name != "posix", reason="forked workers and SIGINT")
def test_ctrl_c_stops_parallel_chains():
    df = _table(2000, seed=2)
    import multiprocessing as mp

    model = DPMPM(n_components=20, sampling=Sampling(tune=100_000, draws=10, chains=2, cores=2),
                  progressbar=False)
    stop = threading.Event()
    sent = []

    def interrupt_once_the_chains_run() -> None:
        # the signal comes once both chain workers exist, whatever the machine's load (a
        # fixed delay could land before they are forked)
        while not stop.wait(0.05):
            if len(mp.active_children()) >= 2:
                sent.append(time.perf_counter())
                os.kill(os.getpid(), signal.SIGINT)
                return

    watcher = threading.Thread(target=interrupt_once_the_chains_run, daemon=True)
    watcher.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            model.fit(df, random_seed=1)
    finally:
        stop.set()
        watcher.join()
    # stopped, not run to the end (100,000 sweeps: minutes): timed from the signal, not from the
    # start, whose forking and compiling a loaded machine stretches; the stop takes well under
    # a second, 60 s is the margin for a loaded machine
    assert sent and time.perf_counter() - sent[0] < 60
    assert getattr(model, "posterior_", None) is None
    assert not mp.active_children()  # the chain workers are gone
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_phi_caches_are_built_on_first_use_and_match_the_posterior():
    df = _table(200, seed=2)
    m = DPMPM(n_components=4,
              sampling=Sampling(tune=5, draws=10, chains=2, cores=1), progressbar=False)
    m.fit(df, random_seed=3)
    m.convergence_summary()
    # fit and report never need them
    assert "phi" not in vars(m.state_) and "logphi" not in vars(m.state_)
    phi = m.state_.phi  # [H, L, K]
    off = m.state_.offsets
    for j in range(len(m.schema_)):
        np.testing.assert_array_equal(
            phi[:, off[j] : off[j] + m.state_.d[j], :],
            np.transpose(m._stacked(f"phi_{j}"), (0, 2, 1)))
    assert phi.flags.c_contiguous and m.state_.phi is phi
    np.testing.assert_array_equal(m.state_.logphi, np.log(phi))


def test_progress_bar_counts_sweeps_and_names_the_warm_up_and_thinning():
    """The bar counts one unit, the sweep: a warm-up step is one, a kept draw ``thin`` (issue
    66: counting draws made the warm-up's pace five times the sampling's, and the time left
    with it)."""
    from bayes_risk.models._bayesian.gibbs import _progress_bar

    prog, bar = _progress_bar(True, 2 * (10 + 4 * 5), 10, 5)
    assert prog.total == 60 and prog.unit == "sweeps"
    assert prog.description == "Gibbs sweeps (10 warm-up, then one draw kept per 5)"
    bar(7)
    assert prog.completed == 7
    prog1, _ = _progress_bar(True, 30)
    assert prog1.description == "Gibbs sweeps (every sweep kept)"
    assert _progress_bar(False, 30, 0, 5)[0] is None


@pytest.mark.parametrize("cores", [1, 2])
def test_a_run_counts_every_sweep_to_its_total(capsys, monkeypatch, cores):
    """Driven by a real run (chains in turn and in workers): the bar ends at its total, the
    sweeps per chain times the chains (warm-up included), written in sweeps."""
    from bayes_risk import _terminal

    monkeypatch.setattr(_terminal, "bar_style", lambda: "plain")
    df = _table(120, seed=4)
    _posterior(DPMPM(n_components=3,
                     sampling=Sampling(tune=4, draws=6, thin=3, chains=2, cores=cores),
                     progressbar=True), df, 2, False)
    err = capsys.readouterr().err
    total = 2 * (4 + 6 * 3)
    assert re.search(rf"^Gibbs sweeps \(4 warm-up, then one draw kept per 3\): "
                     rf"{total}/{total} sweeps in \d+:\d\d:\d\d$", err, re.M), err


def test_output_imports_overlap_the_sweeps_without_changing_the_draws(monkeypatch):
    """In one process the chains run while a background thread imports the output stack
    (``_lazy.Background``): the same draws as without it, whatever its tasks do."""
    import contextlib

    import bayes_risk.models._bayesian.gibbs as gr
    from bayes_risk._lazy import overlap

    df = _table(300, seed=4)
    kw = dict(n_components=5,
              sampling=Sampling(tune=4, draws=6, chains=2, cores=1), progressbar=False)
    threads = []

    def fails() -> None:
        threads.append(threading.current_thread())
        raise RuntimeError("a warm-up task that fails changes nothing")

    with overlap(fails):
        with_overlap = _posterior(DPMPM(**kw), df, 3, via_pymc=False)
    assert len(threads) == 1 and threads[0] is not threading.main_thread()
    assert not threads[0].is_alive()  # joined before the DataTree is built
    monkeypatch.setattr(gr, "Background", lambda *tasks: contextlib.nullcontext())
    without = _posterior(DPMPM(**kw), df, 3, via_pymc=False)
    _assert_same_tree(with_overlap, without, pi_rtol=0.0)


def test_chain_processes_rule():
    """``cores=None``: worker processes only when the sampling is expected to take at least
    FORK_MIN_SECONDS in one process; an integer ``cores`` is what is asked for."""
    import sys

    from bayes_risk.models._bayesian.gibbs import FORK_MIN_SECONDS, chain_processes

    linux = sys.platform.startswith("linux")
    auto = min(4, os.cpu_count() or 1, 3)
    assert chain_processes(None, 3, FORK_MIN_SECONDS / 2) == 1
    assert chain_processes(None, 3, FORK_MIN_SECONDS) == (auto if linux and auto > 1 else 1)
    assert chain_processes(None, 3, None) == (auto if linux and auto > 1 else 1)  # no estimate
    assert chain_processes(2, 3, 0.0) == (2 if linux else 1)  # asked for: always
    assert chain_processes(5, 2, 0.0) == (2 if linux else 1)  # at most one per chain
    assert chain_processes(1, 3, 1e9) == 1
    assert chain_processes(None, 1, 1e9) == 1


def test_expected_sweep_seconds_grows_with_the_table():
    from bayes_risk.models.dpmpm.step import (
        _SWEEP_SECONDS_BASE,
        _SWEEP_SECONDS_PER_CELL,
        DPMPMGibbs,
    )

    codes = np.zeros((200, 3), dtype=np.int64)
    kw = dict(d=[2, 2, 2], n_components=5, alpha_prior=(0.25, 0.25), dirichlet_prior=1.0)
    step = DPMPMGibbs(["alpha"], codes=codes, **kw)
    assert step.expected_sweep_seconds() == pytest.approx(
        _SWEEP_SECONDS_BASE + _SWEEP_SECONDS_PER_CELL * 200 * 3 * 5, rel=1e-12)
    big = DPMPMGibbs(["alpha"], codes=np.zeros((20_000, 3), dtype=np.int64), **kw)
    assert big.expected_sweep_seconds() > step.expected_sweep_seconds()


@pytest.mark.skipif(not os.sys.platform.startswith("linux"), reason="forked chain workers")
@pytest.mark.parametrize(("K", "tune", "draws", "chains", "n"),
                         [(4, 5, 8, 2, 200), (6, 0, 7, 3, 300), (1, 3, 5, 2, 120),
                          (5, 10, 6, 4, 250)])
def test_small_fit_runs_in_process_with_the_draws_of_forked_chains(caplog, K, tune, draws,
                                                                   chains, n):
    """``cores=None`` on a small fit: the chains run in turn in this process (no worker
    start-up), bit for bit the draws and statistics of the same fit forced into worker
    processes (``cores=2``)."""
    import logging

    df = _table(n, seed=K + tune)
    kw = dict(n_components=K,
              sampling=Sampling(tune=tune, draws=draws, chains=chains), progressbar=False)
    with caplog.at_level(logging.INFO, logger="pymc"):
        auto = DPMPM(**kw).fit(df, random_seed=K)  # cores=None (the default)
    assert f"Sequential sampling ({chains} chains in 1 job)" in caplog.text
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="pymc"):
        forked = DPMPM(**{**kw, "sampling": replace(kw["sampling"], cores=2)}).fit(
            df, random_seed=K)
    assert f"Multiprocess sampling ({chains} chains in 2 jobs)" in caplog.text
    assert auto.posterior_["posterior"].attrs["chains_at_once"] == 1
    assert forked.posterior_["posterior"].attrs["chains_at_once"] == 2
    assert list(auto.posterior_.children) == list(forked.posterior_.children)
    for g in auto.posterior_.children:
        A, B = auto.posterior_[g], forked.posterior_[g]
        assert list(A.data_vars) == list(B.data_vars), g
        for v in A.data_vars:
            assert np.array_equal(A[v].values, B[v].values), f"{g}/{v}"


def test_interrupt_raised_in_a_compile_callback_is_not_printed(monkeypatch):
    """Ctrl-C while numba compiles or loads a kernel in this process (a small fit's chains run
    here) raises KeyboardInterrupt inside a ctypes callback, which Python cannot raise and
    printed as "Exception ignored ... Traceback". Once the guard has recorded the signal it is
    not passed on (the run stops at its next draw) but delivered again, for what runs after the
    chains; any other such error still is passed on."""
    import sys
    import types

    from bayes_risk.models._bayesian import sampling
    from bayes_risk.models._bayesian.sampling import InterruptGuard

    redelivered = []
    monkeypatch.setattr(sampling, "redeliver_interrupt", lambda: redelivered.append(1))
    seen = []
    monkeypatch.setattr(sys, "unraisablehook", lambda u: seen.append(type(u.exc_value)))
    hook = sys.unraisablehook

    def unraisable(err):
        return types.SimpleNamespace(exc_type=type(err), exc_value=err, exc_traceback=None,
                                     err_msg="Exception ignored on calling ctypes callback",
                                     object=None)

    with InterruptGuard() as guard:
        guard.interrupted = True
        sys.unraisablehook(unraisable(KeyboardInterrupt()))
        assert seen == [] and redelivered == [1]
        sys.unraisablehook(unraisable(ValueError("other")))
        assert seen == [ValueError]
    assert sys.unraisablehook is hook
    with InterruptGuard():  # no signal recorded: passed on as before
        sys.unraisablehook(unraisable(KeyboardInterrupt()))
    assert seen == [ValueError, KeyboardInterrupt] and redelivered == [1]
    assert sys.unraisablehook is hook


def _reference_tree(results, layout, *, tune, sampling_time):
    """The run's DataTree as ``arviz_base.dict_to_dataset`` builds it (the construction before
    ``gibbs._dataset``)."""
    import importlib.metadata

    import xarray as xr
    from arviz_base import dict_to_dataset

    post = {k: np.stack([r[0][k] for r in results]) for k in layout.shapes}
    if layout.deterministics is not None:
        post.update(layout.deterministics(post))
    stats = {k: np.stack([r[1][k] for r in results]) for k in results[0][1]}
    attrs = {"inference_library": "pymc",
             "inference_library_version": importlib.metadata.version("pymc"),
             "sampling_time": sampling_time, "tuning_steps": tune}

    def dataset(data, dims):
        return dict_to_dataset(data, attrs=attrs, coords=dict(layout.coords),
                               dims={k: list(v) for k, v in dims.items()},
                               sample_dims=["chain", "draw"])

    groups = {"posterior": dataset(post, layout.dims)}
    if tune:
        groups["warmup_sample_stats"] = dataset({k: v[:, :tune] for k, v in stats.items()}, {})
    groups["sample_stats"] = dataset({k: v[:, tune:] for k, v in stats.items()}, {})
    return xr.DataTree.from_dict(groups)


def _assert_identical_trees(fast, ref):
    assert list(fast.children) == list(ref.children)
    for g in ref.children:
        a, b = fast[g].to_dataset(), ref[g].to_dataset()
        # created_at is the time of the call (the reference was built first)
        assert a.attrs.pop("created_at") >= b.attrs.pop("created_at")
        assert a.identical(b), g
        assert list(a.data_vars) == list(b.data_vars) and list(a.coords) == list(b.coords)
        assert list(a.dims) == list(b.dims) and list(a.attrs) == list(b.attrs)
        for c in a.coords:
            assert a[c].dtype == b[c].dtype
    assert fast.attrs == ref.attrs


@pytest.mark.parametrize(("K", "d", "tune", "chains"),
                         [(4, [3, 2, 4], 5, 2), (1, [2, 2], 3, 1), (6, [5], 0, 3)])
def test_posterior_tree_is_the_dict_to_dataset_tree(K, d, tune, chains):
    """The run's DataTree, built in one ``xarray.Dataset`` call per group, is identical to the
    one ``arviz_base.dict_to_dataset`` builds (groups, variables, dims, coordinates, attributes
    and their order)."""
    from bayes_risk.models._bayesian.gibbs import _to_datatree
    from bayes_risk.models.dpmpm.run import gibbs_layout

    layout = gibbs_layout(K, d)
    draws = 7

    def results():
        rng2 = np.random.default_rng(K)
        return [({k: rng2.random((draws, *s)) for k, s in layout.shapes.items()},
                 {"loglik": rng2.random(tune + draws),
                  "k_occupied": rng2.integers(0, K + 1, tune + draws)})
                for _ in range(chains)]

    ref = _reference_tree(results(), layout, tune=tune, sampling_time=1.5)
    fast = _to_datatree(results(), layout, tune=tune, sampling_time=1.5)
    _assert_identical_trees(fast, ref)


def test_dataset_falls_back_to_dict_to_dataset_for_unnamed_dims():
    """A variable with more axes than named dims gets dict_to_dataset's own names
    (``x_dim_0``) and coordinates."""
    from arviz_base import dict_to_dataset

    from bayes_risk.models._bayesian.gibbs import _dataset

    data = {"a": np.ones((2, 3, 4)), "x": np.zeros((2, 3, 5))}
    dims = {"a": ("component",)}
    coords = {"component": np.arange(4)}
    fast = _dataset(data, dims, coords, {"tuning_steps": 0})
    ref = dict_to_dataset(data, attrs={"tuning_steps": 0}, coords=coords,
                          dims={"a": ["component"]}, sample_dims=["chain", "draw"])
    fast.attrs.pop("created_at"), ref.attrs.pop("created_at")
    assert "x_dim_0" in fast.dims and fast.identical(ref)
