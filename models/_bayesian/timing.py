"""What a fit records of its own cost (posterior attributes ``sweep_time``, ``chains_at_once``,
``fit_time``), for ``bayes_risk.attribute.cost``'s estimate of the refits."""

from __future__ import annotations

import math
import time
from typing import Any

__all__ = ["DrawClock", "record_fit_time", "record_sweep_time"]

SWEEP_TIME, CHAINS_AT_ONCE, FIT_TIME = "sweep_time", "chains_at_once", "fit_time"


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


def record_fit_time(model: Any, started: float) -> None:
    """Store the wall seconds since ``started`` (``time.perf_counter()``) as the fit's time."""
    attrs = _posterior_attrs(getattr(model, "posterior_", None))
    if attrs is not None:
        attrs[FIT_TIME] = float(time.perf_counter() - started)


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
