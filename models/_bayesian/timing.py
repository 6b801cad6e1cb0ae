"""What a fit records of its own cost (posterior attributes ``sweep_time``, ``chains_at_once``,
``fit_time``), for ``bayes_risk.attribute.cost``'s estimate of the refits."""

from __future__ import annotations

import math
import time
from typing import Any

from bayes_risk import _compiling

__all__ = ["DrawClock", "fit_clock", "record_fit_time", "record_sweep_time"]

SWEEP_TIME, CHAINS_AT_ONCE, FIT_TIME = "sweep_time", "chains_at_once", "fit_time"
#: seconds of the fit spent compiling kernels (numba, PyTensor): a one-off cost, which the
#: refits' estimate leaves out of the fit's set-up
COMPILE_TIME = "compile_time"


def _posterior_attrs(dt: Any) -> dict[str, Any] | None:
    try:
        return dt["posterior"].attrs
    except (KeyError, TypeError):
        return None


def record_sweep_time(dt: Any, seconds_per_sweep: float | None, chains_at_once: int) -> None:
    """Store the steady seconds per sweep of one chain and the chains sampled at once."""
    attrs = _posterior_attrs(dt)
    if attrs is None or seconds_per_sweep is None or not math.isfinite(seconds_per_sweep) \
            or seconds_per_sweep <= 0:
        return
    attrs[SWEEP_TIME] = float(seconds_per_sweep)
    attrs[CHAINS_AT_ONCE] = int(max(1, chains_at_once))


def fit_clock() -> tuple[float, float]:
    """The start of a fit for :func:`record_fit_time`: the clock, and the seconds this process
    has spent compiling so far."""
    return time.perf_counter(), _compiling.seconds()


def record_fit_time(model: Any, started: tuple[float, float]) -> None:
    """Store the wall seconds since ``started`` (:func:`fit_clock`) as the fit's time, and the
    seconds of it spent compiling kernels."""
    attrs = _posterior_attrs(getattr(model, "posterior_", None))
    if attrs is not None:
        attrs[FIT_TIME] = float(time.perf_counter() - started[0])
        attrs[COMPILE_TIME] = float(max(0.0, _compiling.seconds() - started[1]))


class DrawClock:
    """A ``pm.sample`` draw callback that times each chain's draws after its first (which pays
    the one-off costs)."""

    def __init__(self, user: Any = None, clock: Any = time.perf_counter) -> None:
        self.user = user
        self.clock = clock
        self.first: dict[int, float] = {}
        self.last: dict[int, tuple[float, int]] = {}

    def __call__(self, *args: Any, **kwargs: Any) -> None:
        draw = kwargs.get("draw", args[1] if len(args) > 1 else None)
        chain = int(getattr(draw, "chain", 0))
        now = self.clock()
        if chain not in self.first:
            self.first[chain] = now
            self.last[chain] = (now, 0)
        else:
            self.last[chain] = (now, self.last[chain][1] + 1)
        if self.user is not None:
            self.user(*args, **kwargs)

    def seconds_per_draw(self) -> float | None:
        """Steady seconds per draw of one chain (``None`` before two draws of a chain)."""
        seconds = sum(t - self.first[c] for c, (t, _) in self.last.items())
        draws = sum(n for _, n in self.last.values())
        return seconds / draws if draws else None
