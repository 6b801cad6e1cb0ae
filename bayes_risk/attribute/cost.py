"""The cost of the stabilised estimator's refits, stated before they run.

See :doc:`/user_guide/attribute` (Cost of the refits).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from bayes_risk.contract import run_setting

__all__ = ["PILOT_DRAWS", "PILOT_MIN_SECONDS", "PILOT_TUNE", "Pilot", "RefitCost",
           "distinct_records", "duration", "duration_range", "refit_bytes", "refit_cost",
           "refit_sweeps", "wants_pilot"]

#: a pilot refit (one chain in this process) runs this many warm-up sweeps and kept draws
PILOT_TUNE, PILOT_DRAWS = 30, 10
#: the refits are timed by a pilot when the lower end of the estimate from the fit's times
#: reaches this many seconds (a pilot costs a few seconds, which shorter refits do not repay)
PILOT_MIN_SECONDS = 30.0


@dataclass(frozen=True)
class Pilot:
    """What a pilot refit measured: ``sweep_time``, ``setup`` and ``sweeps`` (wall seconds)."""

    sweep_time: float
    setup: float
    sweeps: int


@dataclass(frozen=True)
class RefitCost:
    """Estimated cost of the ``m`` refits: ``n_refits``, ``seconds`` (upper end, or ``None``),
    ``records`` and ``draws`` of a refit, ``basis`` (in words) and ``low`` (lower end, or ``None``).
    """

    n_refits: int
    seconds: float | None
    records: int
    draws: int | None
    basis: str
    low: float | None = None

    def line(self) -> str:
        """The one line printed before the refits start."""
        refits = "refit" if self.n_refits == 1 else "refits"
        head = f"about {self.n_refits} {refits} of the model"
        if self.seconds is None:
            return (f"{head} ({self.records:,} records each); time not estimated: "
                    f"{self.basis}")
        if self.low is None:
            return f"{head}, at most {duration(self.seconds)} on this machine ({self.basis})"
        return (f"{head}, estimated {duration_range(self.low, self.seconds)} on this machine "
                f"({self.basis})")


def duration(seconds: float) -> str:
    """``seconds`` as the refit lines write it: ``"40 s"``, ``"1.7 min"``, ``"72 min"``."""
    if seconds < 60:
        return f"{max(seconds, 1.0):.0f} s"
    return f"{seconds / 60:.1f} min" if seconds < 600 else f"{seconds / 60:.0f} min"


def duration_range(low: float, high: float) -> str:
    """A range of durations: ``"2.1–3.4 min"``, ``"40 s–1.2 min"``, ``"about 5 s"``."""
    lo, hi = duration(low), duration(high)
    if lo == hi:
        return f"about {lo}"
    (lo_value, lo_unit), hi_unit = lo.split(" "), hi.split(" ")[1]
    return f"{lo_value}–{hi}" if lo_unit == hi_unit else f"{lo}–{hi}"


def _attr(attrs: Any, name: str) -> float | None:
    """A positive finite number among ``attrs``, or ``None``."""
    try:
        value = float(attrs.get(name))
    except (AttributeError, TypeError, ValueError):
        return None
    return value if math.isfinite(value) and value > 0 else None


def _posterior_attrs(model: Any) -> Any:
    post = getattr(model, "posterior_", None)
    try:
        return post["posterior"].attrs
    except (KeyError, TypeError, AttributeError):
        return {}


def distinct_records(model: Any, data: Any, synthetic: Any) -> tuple[int, int] | None:
    """Distinct records of the fit's data and of a refit's, or ``None``."""
    if not getattr(model, "sweep_shares_equal_records", False):
        return None
    import pandas as pd

    try:
        names = list(model.schema_.names)
        rows = model._synthesized_part(synthetic)[names]
        fit = int(len(data[names].drop_duplicates()))
        refit = int(len(pd.concat([data[names], rows], ignore_index=True).drop_duplicates()))
    except (AttributeError, KeyError, TypeError, ValueError):
        return None
    return (fit, refit) if fit else None


def refit_sweeps(model: Any, refit_draws: int | None = None) -> dict[str, int | None]:
    """The sweeps per chain of the fit and of a refit, from the model's settings and run."""
    # the model's run, settings left at None resolved (DPMPM's default run)
    run = model._run_settings() if hasattr(model, "_run_settings") else {}
    draws = run.get("draws", run_setting(model, "draws"))
    attrs = _posterior_attrs(model)
    tune = run_setting(model, "tune", 0)
    if "tuning_steps" in attrs:  # what the sampler ran (the exact draws have no warm-up)
        tune = attrs["tuning_steps"]
    tune = int(tune or 0)
    thin = int(run.get("thin", run_setting(model, "thin", 1)) or 1)
    post = getattr(model, "posterior_", None)
    try:  # a run that extended itself (max_sweeps) ended at a larger thinning; its refits
        # start there (DPMPM.fit_augmented), and the recorded time covers every round
        thin = max(thin, int(post.attrs.get("thin", thin)))
    except (AttributeError, TypeError, ValueError):
        pass
    new_draws = int(refit_draws) if refit_draws is not None else draws
    return {"tune": tune, "thin": thin, "draws": draws, "refit_draws": new_draws,
            "fit_sweeps": None if draws is None else tune + thin * int(draws),
            "refit_sweeps": None if new_draws is None else tune + thin * int(new_draws),
            "max_sweeps": int(run.get("max_sweeps", run_setting(model, "max_sweeps", 0)) or 0)}


def refit_bytes(model: Any, m: int, n_synthetic: int, refit_draws: int | None = None) -> float:
    """Bytes the ``m`` refits hold once fitted (they are kept for the estimator): each refit's
    posterior at the bytes a draw of the model's own posterior takes, for its draws, and its
    data, the fit's records and the ``n_synthetic`` appended (0 for a model without a
    posterior DataTree, whose refits are measured by their own checks)."""
    post = getattr(model, "posterior_", None)
    try:
        group = post["posterior"]
        per_draw = float(group.nbytes) / max(int(group.sizes["chain"]) * int(
            group.sizes["draw"]), 1)
        chains = int(group.sizes["chain"])
    except (KeyError, TypeError, AttributeError, ValueError):
        return 0.0
    draws = refit_sweeps(model, refit_draws)["refit_draws"] or int(group.sizes["draw"])
    n = int(getattr(model, "_n_records", 0) or 0) + int(n_synthetic)
    # the draws and each draw's convergence quantities (the fit's check counts twice the draws)
    return m * (2.0 * per_draw * int(draws) * chains + 16.0 * n)


def wants_pilot(model: Any, cost: RefitCost) -> bool:
    """Whether the refits are timed by a pilot (long estimate, Gibbs-sampled model)."""
    post = getattr(model, "posterior_", None)
    try:
        gibbs = "gibbs_rounds" in post.attrs
    except AttributeError:
        gibbs = False
    low = cost.seconds if cost.low is None else cost.low
    return gibbs and low is not None and low >= PILOT_MIN_SECONDS


def _pilot_cost(model: Any, m: int, records: int, sw: dict[str, Any], pilot: Pilot) -> RefitCost:
    """The estimate from a pilot refit's times (with one more round of a self-extending run)."""
    attrs = _posterior_attrs(model)
    chains = int(run_setting(model, "chains", 1) or 1)
    turns = math.ceil(chains / int(_attr(attrs, "chains_at_once") or 1))
    sweeps = int(sw["refit_sweeps"])
    more = sweeps
    if sw["max_sweeps"]:  # one more extension round: twice the window after the warm-up
        more = max(sweeps, min(sw["tune"] + 2 * (sweeps - sw["tune"]), sw["max_sweeps"]))
    low = turns * sweeps * pilot.sweep_time
    high = turns * more * pilot.sweep_time + pilot.setup
    basis = (f"timed by a pilot refit just now: {pilot.sweep_time * 1e3:.3g} ms per sweep of "
             f"{records:,} records; each refit {sweeps:,} sweeps per chain"
             + (f", {more:,} if it extends its run once more (max_sweeps)" if more > sweeps
                else "")
             + f", plus up to {duration(pilot.setup)} of set-up"
             + ("; the first refit's time follows" if m > 1 else ""))
    return RefitCost(m, m * high, records, sw["refit_draws"], basis, low=m * low)


def refit_cost(model: Any, n_synthetic: int, m: int, *, refit_draws: int | None = None,
               distinct: tuple[int, int] | None = None,
               pilot: Pilot | None = None) -> RefitCost:
    """Estimate the time of the stabilised estimator's ``m`` refits from the sizes.

    Parameters
    ----------
    model : fitted Bayesian synthesizer
        The model whose ``fit_augmented`` will run.
    n_synthetic, m : int
        Synthesized records appended in each refit; number of refits.
    refit_draws : int, optional
        As ``refit_draws`` of :class:`~bayes_risk.attribute.EstimatorSpec`.
    distinct : (int, int), optional
        Distinct records of the fit's data and of a refit's: the lower end scales by their ratio.
    pilot : Pilot, optional
        What a pilot refit measured just now: its times replace the fit's.

    Returns
    -------
    RefitCost
        ``seconds = None`` when the model records no time.
    """
    n = getattr(model, "_n_records", None)
    n = int(n) if n else 0
    records = n + int(n_synthetic)
    sw = refit_sweeps(model, refit_draws)
    new_draws = sw["refit_draws"]
    if not n or sw["draws"] is None:
        return RefitCost(m, None, records, new_draws, "the model records no sampling time")
    if pilot is not None:
        return _pilot_cost(model, m, records, sw, pilot)
    attrs = _posterior_attrs(model)
    ratio = records / n
    base_sweeps, new_sweeps = int(sw["fit_sweeps"]), int(sw["refit_sweeps"])
    extends = " (more if a refit extends its run, max_sweeps)" if sw["max_sweeps"] else ""
    sweep = _attr(attrs, "sweep_time")
    if sweep is not None:
        chains = int(run_setting(model, "chains", 1) or 1)
        at_once = int(_attr(attrs, "chains_at_once") or 1)
        turns = math.ceil(chains / at_once)
        per_refit = turns * new_sweeps * sweep * ratio
        shared = ""
        low = per_refit
        if distinct is not None and distinct[0] > 0:
            # equal records share the sweep's work: it may grow only as the distinct ones
            low = per_refit * min(1.0, distinct[1] / distinct[0] / ratio)
            shared = f" ({distinct[0]:,} distinct, {distinct[1]:,} in a refit)"
        fit_time = _attr(attrs, "fit_time")
        # compiling kernels is a one-off cost of the first fit in a fresh installation: the
        # refits load the compiled kernels, so it is left out of the set-up
        compiled = _attr(attrs, "compile_time") or 0.0
        setup = (max(0.0, fit_time - compiled - turns * base_sweeps * sweep) if fit_time
                 else 0.0)
        basis = (f"each refit {new_sweeps:,} sweeps per chain of {records:,} records, at the "
                 f"fit's {sweep * 1e3:.3g} ms per sweep of {n:,} records{shared}{extends}, plus "
                 f"up to {duration(setup)} of set-up as in the fit"
                 + (f" (its {duration(compiled)} of compiling kernels left out: done once)"
                    if compiled >= 1.0 else "")
                 + ("; the first refit's time follows" if m > 1 else ""))
        return RefitCost(m, m * (per_refit + setup), records, new_draws, basis, low=m * low)
    t = _attr(attrs, "sampling_time")
    if t is None:
        return RefitCost(m, None, records, new_draws,
                         "the model records no sampling time (draws made elsewhere)")
    basis = (f"an upper bound: the model records only its total sampling time (saved by an "
             f"earlier version, or draws made elsewhere), one-off costs included: {t:.0f} s for "
             f"{n:,} records and "
             f"{base_sweeps:,} sweeps per chain; each refit has {records:,} records"
             + (f" and {new_sweeps:,} sweeps" if refit_draws is not None else "") + extends)
    return RefitCost(m, m * t * ratio * (new_sweeps / base_sweeps), records, new_draws, basis)
