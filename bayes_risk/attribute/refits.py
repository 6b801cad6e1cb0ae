"""The refits ``p(Θ | y, Z_(l))``, one per synthetic dataset, that the stabilised estimator of
attribute risk and the membership ratio both need: the cost stated before the work, one
progress bar over the refits, and the first refit's measured time. Most of either measure's
time goes here, so both call this one loop."""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import pandas as pd

from bayes_risk._terminal import progress, say
from bayes_risk.attribute.cost import distinct_records, duration, refit_cost

__all__ = ["fit_refits"]


def fit_refits(model: Any, original: pd.DataFrame, datasets: Sequence[pd.DataFrame],
               seeds: Sequence[Any], *, refit_draws: int | None = None,
               progressbar: bool = False) -> list[Any]:
    """``model.fit_augmented(original, Z_(l), random_seed=seeds[l])`` for every dataset.

    With ``progressbar``, the estimated cost is printed first (:func:`refit_cost`), one bar
    runs over the refits (the refits' own sampler output is silenced) and the first refit's
    measured time is printed with the rest's estimate. ``refit_draws`` sets the kept draws per
    chain of the refits (the model's own setting is restored afterwards).
    """
    m = len(datasets)
    if progressbar:  # the cost, stated before the work
        sel = getattr(model, "synthesized_records_", None)
        n_syn = int(np.count_nonzero(sel)) if sel is not None else len(datasets[0])
        # where the progress bars go; printed also when the estimate is unknown
        distinct = distinct_records(model, original, datasets[0])
        say(refit_cost(model, n_syn, m, refit_draws=refit_draws, distinct=distinct).line())
    models = []
    with _refit_settings(model, refit_draws):
        for li in progress(range(m), description="refits of the model", enabled=progressbar,
                           label=lambda k, total: f"refit {k} of {total}"):
            t0 = time.perf_counter()
            models.append(model.fit_augmented(original, datasets[li], random_seed=seeds[li]))
            if progressbar and li == 0 and m > 1:
                # the first refit measures this machine at the refits' size: the estimate
                # from the fit's time also counts its one-off costs (compiling, processes)
                took = time.perf_counter() - t0
                say(f"refit 1 of {m} took {duration(took)}: the other {m - 1}, about "
                    f"{duration(took * (m - 1))}")
    return models


@contextlib.contextmanager
def _refit_settings(model: Any, refit_draws: int | None) -> Iterator[None]:
    """The refits run without their own progress bars and PyMC's per-fit log lines (one bar
    over the refits replaces them) and with ``refit_draws`` kept draws per chain; the model's
    settings are restored afterwards."""
    saved = {k: getattr(model, k) for k in ("progressbar", "draws") if hasattr(model, k)}
    # a filter, not the level: the Gibbs sampler resets the "pymc" logger's level per fit
    pymc_log = logging.getLogger("pymc")
    quiet = _BelowWarning()
    try:
        if "progressbar" in saved:
            model.progressbar = False
        if refit_draws is not None:
            model.draws = int(refit_draws)
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
