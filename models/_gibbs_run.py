"""Gibbs-only MCMC runs without ``pm.sample``: the step in a loop, draws into preallocated arrays.

A model whose every parameter is updated by one PyMC step method that draws from full
conditionals (the DPMPM's blocked Gibbs sweep) needs nothing of ``pm.sample`` but the loop: no
gradients, no tuning, no initial-point or trace functions. Building the class-marginalised PyMC
model, compiling those functions and converting PyMC's trace objects cost about a second of CPU
and 15–95 MiB on NYexample (issue 15; benchmarks/README.md); this module calls the step
itself and returns the same ArviZ ``DataTree`` as ``BayesianSynthesizer._run_sampler``
(groups ``posterior``, ``warmup_sample_stats``, ``sample_stats``; the same variables, dims,
coordinates and attributes), so everything downstream (convergence, save/load, synthesis) is
unchanged.

Random streams are those of ``pm.sample`` with the step as its only step: chain ``c`` draws from
``default_rng(seeds).spawn(chains)[c]`` (after the one integer ``pm.sample`` takes from it), so
the same seed gives the same draws as the ``pm.sample`` path, sequential or parallel. Chains run
in forked processes when ``cores > 1`` on Linux, each with ``cpu_count // workers`` threads for
the compiled kernels (whose results do not depend on the number of threads); elsewhere they run
in turn (macOS does not allow ``fork`` once its system frameworks are in use).
"""

from __future__ import annotations

import logging
import os
import sys
import time
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from bayes_risk._lazy import Background

if TYPE_CHECKING:  # pragma: no cover
    import xarray as xr

__all__ = ["GibbsLayout", "chain_generators", "sample_gibbs"]


@dataclass(frozen=True)
class GibbsLayout:
    """What a Gibbs-only run records, as the PyMC model would declare it.

    Attributes
    ----------
    shapes : mapping of str to tuple of int
        Event shape of each variable the step writes into its point, in the model's order of
        free variables (the posterior group's order).
    dims : mapping of str to tuple of str
        Event dimension names of every posterior variable (step variables and deterministics).
    coords : mapping of str to array
        Coordinates of those dimensions.
    deterministics : callable, optional
        ``f(draws) -> {name: array}``: the model's deterministic variables from the step
        variables' ``[chain, draw, ...]`` arrays (vectorised), appended after them.
    initial_point : mapping, optional
        Point given to the first step (a step that draws its start from the prior ignores it).
    """

    shapes: Mapping[str, tuple[int, ...]]
    dims: Mapping[str, tuple[str, ...]]
    coords: Mapping[str, np.ndarray]
    deterministics: Callable[[dict[str, np.ndarray]], dict[str, np.ndarray]] | None = None
    initial_point: Mapping[str, Any] = field(default_factory=dict)


def chain_generators(seeds: list[int], chains: int) -> list[np.random.Generator]:
    """The step's generator of each chain, as ``pm.sample(random_seed=seeds)`` makes them.

    ``pm.sample`` spawns one generator per chain from ``default_rng(seeds)``, draws one integer
    from each (its initial-point seed) and hands it to the step when the chain starts.
    """
    rngs = np.random.default_rng(list(seeds)).spawn(int(chains))
    for r in rngs:
        r.integers(2**30)
    return rngs


def _scalar_stats(step: Any) -> dict[str, np.dtype]:
    out = {}
    for name, (dtype, shape) in step.stats_dtypes_shapes.items():
        if shape not in ([], ()):
            raise NotImplementedError(f"sampler statistic {name!r} is not a scalar")
        out[name] = np.dtype(dtype)
    return out


def _run_chain(
    step: Any,
    layout: GibbsLayout,
    rng: np.random.Generator,
    tune: int,
    draws: int,
    tick: Callable[[], None],
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """One chain: ``tune + draws`` steps; kept draws of the step variables, all statistics."""
    step.setup_chain(rng, tune, draws)
    step.tune = bool(tune)
    post = {name: np.empty((draws, *shape)) for name, shape in layout.shapes.items()}
    stats = {name: np.empty(tune + draws, dtype) for name, dtype in _scalar_stats(step).items()}
    point = dict(layout.initial_point)
    for i in range(tune + draws):
        if i == tune:
            step.stop_tuning()
        point, step_stats = step.step(point)
        (st,) = step_stats
        for name, arr in stats.items():
            arr[i] = st[name]
        if i >= tune:
            for name, arr in post.items():
                arr[i - tune] = point[name]
        tick()
    return post, stats


# State of a parallel run, inherited by the forked workers (never pickled).
_FORKED: dict[str, Any] = {}


def _worker_chain(c: int) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    s = _FORKED
    done = s["done"][c]

    def tick() -> None:
        done.value += 1

    return _run_chain(s["step"], s["layout"], s["rngs"][c], s["tune"], s["draws"], tick)


def _worker_init(threads: int) -> None:
    # the parent keeps Ctrl-C; workers are terminated by it (SIGTERM), quietly: a handler the
    # parent installed (the command line turns SIGTERM into an interrupt) is not inherited
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    if "numba" in sys.modules:
        import numba

        numba.set_num_threads(max(1, min(threads, numba.config.NUMBA_NUM_THREADS)))


def _run_parallel(
    step: Any, layout: GibbsLayout, rngs: list[np.random.Generator], tune: int, draws: int,
    workers: int, bar: Callable[[int], None], stop: Callable[[], bool],
) -> list[tuple[dict[str, np.ndarray], dict[str, np.ndarray]]]:
    import multiprocessing as mp

    ctx = mp.get_context("fork")
    done = [ctx.Value("q", 0, lock=False) for _ in rngs]
    _FORKED.update(step=step, layout=layout, rngs=rngs, tune=tune, draws=draws, done=done)
    threads = max(1, (os.cpu_count() or 1) // workers)
    with warnings.catch_warnings():
        # Python warns of fork() in a threaded process; as for PyMC's own parallel chains (which
        # fork on Linux), the workers only run the step, and numba's workqueue threading layer
        # (bayes_risk.models._dpmpm_kernels) starts its threads afresh in a forked child
        warnings.filterwarnings("ignore", message=".*use of fork.*", category=DeprecationWarning)
        pool = ctx.Pool(workers, initializer=_worker_init, initargs=(threads,))
    try:
        res = pool.map_async(_worker_chain, range(len(rngs)), chunksize=1)
        while not res.ready():
            res.wait(0.1)
            bar(sum(int(v.value) for v in done))
            if stop():
                raise KeyboardInterrupt
        out = res.get()
        pool.close()
        return out
    except BaseException:
        pool.terminate()
        raise
    finally:
        pool.join()
        _FORKED.clear()


def _pymc_logger() -> logging.Logger:
    """PyMC's logger, set up as importing PyMC sets it up (PyMC itself is not imported)."""
    log = logging.getLogger("pymc")
    if not logging.root.handlers and "pymc" not in sys.modules:
        log.setLevel(logging.INFO)
        if not log.handlers:
            log.addHandler(logging.StreamHandler())
    return log


def _progress_bar(enabled: bool, total: int, thin: int = 1) -> tuple[Any, Callable[[int], None]]:
    if not enabled:
        return None, lambda n: None
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    prog = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                    TimeElapsedColumn(), console=Console(stderr=True))
    # the bar counts draws (one per warm-up sweep, one per ``thin`` sweeps after the warm-up)
    label = "Gibbs draws" if thin == 1 else f"Gibbs draws (every {thin}th sweep kept)"
    task = prog.add_task(label, total=total)
    return prog, lambda n: prog.update(task, completed=n)


def sample_gibbs(
    step: Any,
    layout: GibbsLayout,
    *,
    seeds: list[int],
    tune: int,
    draws: int,
    chains: int,
    cores: int | None,
    progressbar: bool = False,
    stop: Callable[[], bool] = lambda: False,
) -> xr.DataTree:
    """Run a Gibbs-only step for ``chains`` chains and return the ``pm.sample``-shaped DataTree.

    Parameters
    ----------
    step : object
        A step method with the interface of PyMC's ``BlockedStep`` (``setup_chain(rng, tune,
        draws)``, ``stop_tuning()``, ``step(point) -> (point, [stats])`` with scalar statistics
        ``stats_dtypes_shapes``), which need not be one (PyMC is not imported); used as is in
        one process, copied into each worker process.
    layout : GibbsLayout
        Variables, dims and coordinates of the posterior.
    seeds : list of int
        One integer seed per chain (as given to ``pm.sample``).
    tune, draws, chains : int
        Warm-up sweeps (statistics kept in ``warmup_sample_stats``), kept sweeps, chains.
    cores : int or None
        Worker processes for the chains (``None``: ``min(4, cpu_count)``, as PyMC); ``1``
        runs the chains one after the other in this process.
    progressbar : bool
        Show a progress bar of the draws on stderr (warm-up draws and kept draws; a step with a
        ``thin`` attribute makes ``thin`` sweeps per kept draw, and the bar says so).
    stop : callable
        Polled between sweeps; ``True`` stops the run with ``KeyboardInterrupt``.
    """
    tune, draws, chains = int(tune), int(draws), int(chains)
    if cores is None:
        cores = min(4, os.cpu_count() or 1)
    rngs = chain_generators(seeds, chains)
    prog, bar = _progress_bar(progressbar, chains * (tune + draws), int(getattr(step, "thin", 1)))
    t0 = time.time()
    try:
        if prog is not None:
            prog.start()
        workers = min(int(cores), chains)
        # fork only where it is safe and PyMC forks too (Linux); elsewhere chains run in turn
        parallel = workers > 1 and sys.platform.startswith("linux")
        # the lines pm.sample logs, so that users (and scripts watching stderr) see the same
        _log = _pymc_logger()
        _log.info(f"Multiprocess sampling ({chains} chains in {workers} jobs)" if parallel
                  else f"Sequential sampling ({chains} chains in 1 job)")
        _log.info(f"{type(step).__name__}: [{', '.join(layout.shapes)}]")
        if parallel:
            results = _run_parallel(step, layout, rngs, tune, draws, workers, bar, stop)
        else:
            results = []
            n_done = [0]

            def tick() -> None:
                n_done[0] += 1
                if stop():
                    raise KeyboardInterrupt
                if n_done[0] % 10 == 0:
                    bar(n_done[0])

            # the sweeps' kernels release the GIL: the DataTree's imports run meanwhile on the
            # other core (bayes_risk._lazy.Background; not with forked workers: a fork while a
            # thread imports could leave a child waiting on an import lock)
            with Background(_warm_up_output):
                for rng in rngs:
                    results.append(_run_chain(step, layout, rng, tune, draws, tick))
        bar(chains * (tune + draws))
    finally:
        if prog is not None:
            prog.stop()
    return _to_datatree(results, layout, tune=tune, sampling_time=time.time() - t0)


def _warm_up_output() -> None:
    """What the first ``_to_datatree`` of a process pays for, on a one-value tree: importing
    xarray and arviz_base, and what xarray imports when it first wraps an array (``dask.array``
    when dask is installed); and the convergence record's ``scipy.special``."""
    import scipy.special  # noqa: F401 - models._bayesian_convergence (normal scores)
    import xarray as xr
    from arviz_base import dict_to_dataset

    xr.DataTree.from_dict({"posterior": dict_to_dataset({"x": np.zeros((1, 1))})})


def _to_datatree(
    results: list[tuple[dict[str, np.ndarray], dict[str, np.ndarray]]],
    layout: GibbsLayout,
    *,
    tune: int,
    sampling_time: float,
) -> xr.DataTree:
    """The groups ``pm.sample(discard_tuned_samples=False)`` returns, without the warm-up
    draws of the parameters (which ``BayesianSynthesizer._run_sampler`` deletes)."""
    import importlib.metadata

    import xarray as xr
    from arviz_base import dict_to_dataset


    post = {}
    for name in layout.shapes:
        if len(results) == 1:  # one chain: its arrays as they are, no copy
            post[name] = results[0][0].pop(name)[np.newaxis]
        else:
            post[name] = np.stack([r[0].pop(name) for r in results])  # frees the chains' copies
    if layout.deterministics is not None:
        post.update(layout.deterministics(post))
    # in the step's order (PyMC's own order of statistics varies from run to run)
    stats = {name: np.stack([r[1][name] for r in results]) for name in results[0][1]}
    attrs = {
        "inference_library": "pymc",
        "inference_library_version": importlib.metadata.version("pymc"),
        "sampling_time": sampling_time,
        "tuning_steps": tune,
    }
    sample_dims = ["chain", "draw"]

    def dataset(data: dict[str, np.ndarray], dims: Mapping[str, tuple[str, ...]]) -> Any:
        return dict_to_dataset(data, attrs=attrs, coords=dict(layout.coords),
                               dims={k: list(v) for k, v in dims.items()},
                               sample_dims=sample_dims)

    groups = {"posterior": dataset(post, layout.dims)}
    if tune:
        groups["warmup_sample_stats"] = dataset({k: v[:, :tune] for k, v in stats.items()},
                                                {})
    groups["sample_stats"] = dataset({k: v[:, tune:] for k, v in stats.items()}, {})
    return xr.DataTree.from_dict(groups)
