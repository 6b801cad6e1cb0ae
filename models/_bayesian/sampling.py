"""Running the samplers of the Bayesian synthesizers: ``pm.sample`` and the plain Gibbs loop.

Both take one integer seed per chain drawn from the fit's seed, stop every chain on Ctrl-C (or a
handled SIGTERM) instead of returning a truncated posterior, and refuse a partial one.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from bayes_risk._rng import RandomSeed, as_generator
from bayes_risk._sampling_spec import SAMPLING_FIELDS, Sampling
from bayes_risk.exceptions import ValidationError, keyboard_interrupts, redeliver_interrupt
from bayes_risk.models._bayesian.timing import DrawClock, record_sweep_time

if TYPE_CHECKING:  # pragma: no cover
    import xarray as xr

__all__ = ["Sampling", "SAMPLING_FIELDS", "InterruptGuard", "chain_seeds", "check_complete",
           "model_seeds", "run_gibbs", "run_pymc"]


def moved_keywords(owner: str, given: Mapping[str, Any]) -> None:
    """A ``ValidationError`` (``MOVED_ARGUMENT``) for sampler settings given to a model's
    constructor as keywords: they are grouped in ``sampling=Sampling(...)``."""
    moved = [k for k in SAMPLING_FIELDS if k in given]
    if moved:
        spelled = ", ".join(f"{k}={given[k]!r}" for k in moved)
        raise ValidationError(
            f"{owner}({', '.join(f'{k}=...' for k in moved)}): the sampler settings are "
            f"grouped in one argument: write {owner}(sampling=Sampling({spelled})) "
            "(from bayes_risk.models import Sampling).", code="MOVED_ARGUMENT")


def check_complete(dt: Any, chains: int, draws: int) -> None:
    """PyMC returns the draws made so far when interrupted: a partial posterior is refused."""
    post = dt["posterior"] if "posterior" in dt.children else None
    got = (int(post.sizes.get("chain", 0)), int(post.sizes.get("draw", 0))) if post else (0, 0)
    if got != (chains, draws):
        raise KeyboardInterrupt(
            f"sampling interrupted: {got[0]} chain(s) x {got[1]} draws of the requested "
            f"{chains} x {draws}"
        )


class InterruptGuard:
    """Make Ctrl-C (and a handled SIGTERM) stop every chain of ``pm.sample``, not only one (PyMC's
    sequential sampler catches it per chain): the caller raises ``KeyboardInterrupt`` after."""

    def __init__(self) -> None:
        self.interrupted = False
        self._previous: dict[int, Any] = {}
        self._unraisablehook: Any = None

    def _quiet_unraisable(self, unraisable: Any) -> None:
        if self.interrupted and isinstance(unraisable.exc_value, KeyboardInterrupt):
            redeliver_interrupt()  # recorded: the chains stop at their next draw
            return
        self._unraisablehook(unraisable)

    def __enter__(self) -> InterruptGuard:
        import signal
        import sys
        import threading

        if threading.current_thread() is not threading.main_thread():
            return self
        self._unraisablehook = sys.unraisablehook
        sys.unraisablehook = self._quiet_unraisable
        for sig in (signal.SIGINT, signal.SIGTERM):
            previous = signal.getsignal(sig)
            # an ignored SIGINT (a background job of a script) stays ignored, as the shell meant
            if previous is signal.SIG_IGN or (sig != signal.SIGINT and not callable(previous)):
                continue

            def handler(signum: int, frame: Any, previous: Any = previous) -> None:
                self.interrupted = True
                if callable(previous):
                    previous(signum, frame)
                else:
                    raise KeyboardInterrupt

            self._previous[sig] = previous
            signal.signal(sig, handler)
        return self

    def __exit__(self, *exc: Any) -> None:
        import signal
        import sys

        for sig, previous in self._previous.items():
            signal.signal(sig, previous)
        if self._unraisablehook is not None:
            sys.unraisablehook = self._unraisablehook
            self._unraisablehook = None

    def callback(self, user: Any = None) -> Any:
        """A ``pm.sample`` draw callback that stops sampling once interrupted."""

        def cb(*args: Any, **kwargs: Any) -> None:
            if self.interrupted:
                raise KeyboardInterrupt
            if user is not None:
                user(*args, **kwargs)

        return cb


def chain_seeds(random_seed: RandomSeed, chains: int) -> list[int]:
    """One integer seed per chain drawn from ``random_seed``."""
    rng = as_generator(random_seed)
    return [int(s) for s in rng.integers(0, 2**31 - 1, size=chains)]


def _own_bar(kwargs: dict[str, Any]) -> Any:
    """The package's bar for ``pm.sample``, fed by the draw callback, in place of PyMC's: it
    shows where PyMC's cannot (a log file, a notebook without ipywidgets, where PyMC's shows
    nothing and warns "install ipywidgets" at every refresh), and like every bar of the package
    it shows compiling the model's functions as a phase of its own and leaves that time out of
    its time left (issue 92: PyMC's bar sat at "1/100 draws" for a minute while PyTensor
    compiled). Divergences and the step size are in the fit's convergence checks."""
    from bayes_risk._terminal import ProgressBar

    if not kwargs.get("progressbar"):
        return ProgressBar(enabled=False)
    chains = int(kwargs["chains"])
    bar = ProgressBar(chains * (int(kwargs["draws"]) + int(kwargs["tune"])),
                      "pm.sample (warm-up included)", unit="draws")
    user = kwargs.get("callback")

    def count(*args: Any, **kw: Any) -> None:
        bar.update(advance=1)
        if user is not None:
            user(*args, **kw)

    kwargs["progressbar"] = False
    kwargs["callback"] = count
    return bar


def start_density_error(pm_model: Any, err: Exception) -> ValidationError:
    """PyMC's "Initial evaluation of model at starting point failed" as a coded error that
    names the records whose likelihood is zero (or not a number) at the starting point: values
    outside the support of the model (a log-normal of a zero or negative income, say).

    The log density of each observed element is evaluated at the model's initial point; the
    first axis of an observed variable is the records'."""
    bad: list[str] = []
    try:
        obs = list(pm_model.observed_RVs)
        parts = pm_model.logp(vars=obs, sum=False)
        fn = pm_model.compile_fn(parts, inputs=pm_model.value_vars, on_unused_input="ignore",
                                 point_fn=True)
        for rv, lp in zip(obs, fn(pm_model.initial_point()), strict=True):
            lp = np.asarray(lp, dtype=float)
            rows = np.flatnonzero(~np.isfinite(lp.reshape(lp.shape[0], -1)).all(axis=1)
                                  if lp.ndim else ~np.isfinite(lp.reshape(1)))
            if rows.size:
                shown = ", ".join(map(str, rows[:10])) + (
                    f" and {rows.size - 10:,} more" if rows.size > 10 else "")
                bad.append(f"{rv.name!r}: record(s) {shown} (0-based rows of the data)")
    except Exception:  # noqa: BLE001 - the diagnosis is a courtesy; PyMC's message stays below
        bad = []
    first = " ".join(str(err).split())[:300]
    if bad:
        return ValidationError(
            "the model gives zero density (or not a number) at its starting point to "
            + "; ".join(bad) + ": their values lie outside the support of its likelihood (a "
            "log-normal of a zero or negative value, say). Leave those records out, transform "
            f"the column, or change the model. PyMC said: {first}", code="ZERO_DENSITY_AT_START")
    return ValidationError(
        "the model's log density at its starting point is not finite, though every observed "
        "record's is: check the priors and the initial values (model.debug() in PyMC shows "
        f"which term). PyMC said: {first}", code="ZERO_DENSITY_AT_START")


def model_seeds(model: Any, random_seed: RandomSeed) -> list[int]:
    """Check the MCMC settings of ``model``; one integer seed per chain drawn from
    ``random_seed``."""
    model.check_mcmc_settings()
    return chain_seeds(random_seed, int(model.resolved_sampling.chains))


def run_pymc(model: Any, pm_model: Any, *, step: Any = None, random_seed: RandomSeed = None,
             **sample_kwargs: Any) -> xr.DataTree:
    """``pm.sample`` on ``pm_model`` with the settings of the synthesizer ``model``, the
    warm-up draws dropped."""
    import pymc as pm

    seeds = model_seeds(model, random_seed)
    run = model.resolved_sampling
    draws = int(model._run_settings()["draws"])
    kwargs: dict[str, Any] = dict(
        draws=draws,
        tune=int(run.tune),
        chains=int(run.chains),
        cores=run.cores,
        random_seed=seeds,
        progressbar=bool(model.progressbar),
        quiet=not bool(model.progressbar),
        compute_convergence_checks=False,
        discard_tuned_samples=False,
        model=pm_model,
    )
    if step is not None:
        kwargs["step"] = step
    kwargs.update(sample_kwargs)
    bar = _own_bar(kwargs)
    with warnings.catch_warnings(), InterruptGuard() as guard, bar:
        # PyMC's own short-chain message; convergence is reported by convergence_summary().
        warnings.filterwarnings("ignore", message=".*samples per chain.*")
        # the steady time per draw, without the chains' one-off start
        # (bayes_risk.attribute.cost)
        clock = DrawClock(kwargs.get("callback"))
        kwargs["callback"] = guard.callback(clock)
        try:
            with keyboard_interrupts(lambda: guard.interrupted):  # in a compiled step
                dt = pm.sample(**kwargs)
        except KeyError as err:
            # PyMC interrupted during tuning fails while assembling the empty trace
            raise KeyboardInterrupt(f"sampling interrupted during tuning ({err})") from err
        except pm.exceptions.SamplingError as err:
            raise start_density_error(pm_model, err) from err
    if guard.interrupted:
        raise KeyboardInterrupt("sampling interrupted")
    check_complete(dt, int(run.chains), draws)
    cores, chains = kwargs["cores"], int(kwargs["chains"])
    cores = min(4, os.cpu_count() or 1) if cores is None else int(cores)
    record_sweep_time(dt, clock.seconds_per_draw(), min(cores, chains) if cores > 1 else 1)
    if "warmup_posterior" in dt.children:
        del dt["warmup_posterior"]
    if "observed_data" in dt.children:
        del dt["observed_data"]
    return dt


def run_gibbs(model: Any, step: Any, layout: Any, *, random_seed: RandomSeed = None,
              **extension: Any) -> xr.DataTree:
    """:func:`run_pymc` for one Gibbs step run in a plain loop (``_bayesian.gibbs``)."""
    from bayes_risk.models._bayesian.gibbs import sample_gibbs

    seeds = model_seeds(model, random_seed)
    run = model.resolved_sampling
    draws = int(model._run_settings()["draws"])
    # Ctrl-C inside a compiled kernel surfaces as SystemError (keyboard_interrupts)
    with InterruptGuard() as guard, keyboard_interrupts(lambda: guard.interrupted):
        dt = sample_gibbs(step, layout, seeds=seeds, tune=run.tune, draws=draws,
                          chains=run.chains, cores=run.cores,
                          progressbar=bool(model.progressbar), stop=lambda: guard.interrupted,
                          **extension)
    check_complete(dt, int(run.chains), draws)
    return dt
