"""The refits ``p(Θ | y, Z_(l))``, one per synthetic dataset, that the stabilised estimator and
the membership ratio both need: the cost stated before the work, one progress bar, and the first
refit's measured time."""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import pandas as pd

from bayes_risk._terminal import progress, say
from bayes_risk.attribute.cost import (
    PILOT_DRAWS,
    PILOT_TUNE,
    Pilot,
    distinct_records,
    duration,
    refit_cost,
    refit_sweeps,
    wants_pilot,
)

__all__ = ["fit_refits", "pilot_refit"]


def fit_refits(model: Any, original: pd.DataFrame, datasets: Sequence[pd.DataFrame],
               seeds: Sequence[Any], *, refit_draws: int | None = None,
               progressbar: bool = False) -> list[Any]:
    """``model.fit_augmented(original, Z_(l), random_seed=seeds[l])`` for every dataset.

    With ``progressbar``, the estimated cost is printed first, one bar runs over the refits and
    the first refit's time is printed. ``refit_draws`` sets the refits' kept draws per chain.
    """
    m = len(datasets)
    if progressbar:  # the cost, stated before the work
        sel = getattr(model, "synthesized_records_", None)
        n_syn = int(np.count_nonzero(sel)) if sel is not None else len(datasets[0])
        distinct = distinct_records(model, original, datasets[0])
        cost = refit_cost(model, n_syn, m, refit_draws=refit_draws, distinct=distinct)
        if wants_pilot(model, cost):  # minutes of refits: time the refit itself first
            pilot = pilot_refit(model, original, datasets[0], refit_draws=refit_draws)
            if pilot is not None:
                cost = refit_cost(model, n_syn, m, refit_draws=refit_draws, pilot=pilot)
        say(cost.line())
    models = []
    with _refit_settings(model, refit_draws):
        for li in progress(range(m), description="refits of the model", enabled=progressbar,
                           label=lambda k, total: f"refit {k} of {total}"):
            t0 = time.perf_counter()
            models.append(model.fit_augmented(original, datasets[li], random_seed=seeds[li]))
            if progressbar and li == 0 and m > 1:
                took = time.perf_counter() - t0
                say(f"refit 1 of {m} took {duration(took)}: the other {m - 1}, about "
                    f"{duration(took * (m - 1))}")
    return models


def pilot_refit(model: Any, original: pd.DataFrame, synthetic: pd.DataFrame, *,
                refit_draws: int | None = None) -> Pilot | None:
    """Time the refit itself before the refits run (``bayes_risk.attribute.cost``).

    ``model.fit_augmented(original, synthetic)`` with the refits' chains run as the fit ran
    them, ``PILOT_TUNE`` warm-up sweeps and ``PILOT_DRAWS`` kept draws, after a tiny run that
    loads what the process has not loaded yet; its own seed, output silenced, the model's
    settings restored.

    Returns
    -------
    Pilot or None
        ``None`` when the pilot recorded no sweep time.
    """
    import warnings

    from bayes_risk.attribute.cost import _posterior_attrs

    thin = int(refit_sweeps(model, refit_draws)["thin"])
    run = model._run_settings() if hasattr(model, "_run_settings") else {}
    chains = int(getattr(model, "chains", 1) or 1)
    at_once = int(_posterior_attrs(model).get("chains_at_once", 1) or 1)
    extension = {"thin": thin, "max_sweeps": 0} if "thin" in run else {}
    out = None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a pilot's few draws fail every convergence check
        for tune, draws, chains_, cores in ((2, 1, 1, 1),
                                            (PILOT_TUNE, PILOT_DRAWS, chains, at_once)):
            with _refit_settings(model, None, tune=tune, draws=draws, chains=chains_,
                                 cores=cores, **extension):
                started = time.perf_counter()
                new = model.fit_augmented(original, synthetic, random_seed=0)
                wall = time.perf_counter() - started
            sweeps = tune + thin * draws if extension else tune + draws
            t = _posterior_attrs(new).get("sweep_time")
            out = None if t is None else Pilot(
                sweep_time=float(t), setup=max(0.0, wall - (sweeps - 1) * float(t)),
                sweeps=sweeps)
    return out


@contextlib.contextmanager
def _refit_settings(model: Any, refit_draws: int | None, **overrides: Any) -> Iterator[None]:
    """The refits run without their own progress bars and PyMC's log lines, with ``refit_draws``
    kept draws per chain and ``overrides``; the model's settings are restored afterwards."""
    run = model._run_settings() if hasattr(model, "_run_settings") else {}
    saved = {k: getattr(model, k) for k in ("progressbar", "draws", *run, *overrides)
             if hasattr(model, k)}
    # a filter, not the level: the Gibbs sampler resets the "pymc" logger's level per fit
    pymc_log = logging.getLogger("pymc")
    quiet = _BelowWarning()
    try:
        if "progressbar" in saved:
            model.progressbar = False
        if refit_draws is not None:
            # the run of the model's settings (those left at None resolved: a DPMPM's default
            # run stays thinned and self-extending) with fewer kept draws
            for k, v in {**run, "draws": int(refit_draws)}.items():
                setattr(model, k, v)
        for k, v in overrides.items():
            setattr(model, k, v)
        pymc_log.addFilter(quiet)
        yield
    finally:
        for k, v in saved.items():
            setattr(model, k, v)
        pymc_log.removeFilter(quiet)


class _BelowWarning(logging.Filter):
    """Drops the sampler's per-fit INFO lines ("Multiprocess sampling ...")."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno >= logging.WARNING
