"""The cost of the stabilised estimator's refits, stated before they run.

The stabilised estimator refits the synthesis model once per synthetic dataset, to the
confidential records and ``Z_(l)`` together (methods page 'Attribute disclosure risk', The
stabilised estimator). A sampler's sweep costs about the same per record whatever the data, so
the refits' time is estimated from the model's own recorded sampling time (the ``sampling_time``
attribute PyMC and the package's Gibbs sampler store with the posterior draws), scaled by the
records and by the sweeps of a refit (``thin``: the thinning the fit's run ended with):

    seconds ≈ m × T_fit × (n + n_syn) / n × (tune + thin × refit draws) / (tune + thin × draws)

The measurement is the fit's, i.e. of the machine (and its load) where the model was fitted;
a run that extended itself (``max_sweeps``) may extend again, or not, in a refit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

__all__ = ["RefitCost", "refit_cost", "duration"]


@dataclass(frozen=True)
class RefitCost:
    """Estimated cost of the ``m`` refits of the stabilised estimator.

    Attributes
    ----------
    n_refits : int
        Number of refits (one per synthetic dataset).
    seconds : float or None
        Estimated wall time of all refits; ``None`` when the model records no sampling time
        (draws made elsewhere, ``from_posterior``; a model saved by an earlier version).
    records : int
        Records of each refit (the confidential records and one synthetic dataset).
    draws : int or None
        Kept draws per chain of each refit.
    basis : str
        What the estimate rests on, in words.
    """

    n_refits: int
    seconds: float | None
    records: int
    draws: int | None
    basis: str

    def line(self) -> str:
        """The one line printed before the refits start."""
        refits = "refit" if self.n_refits == 1 else "refits"
        if self.seconds is None:
            return (f"about {self.n_refits} {refits} of the model ({self.records:,} records each); "
                    f"time not estimated: {self.basis}")
        return (f"about {self.n_refits} {refits} of the model, estimated "
                f"{duration(self.seconds)} on this machine ({self.basis})")


def duration(seconds: float) -> str:
    """``seconds`` as the refit lines write it: ``"40 s"``, ``"1.7 min"``, ``"72 min"``."""
    if seconds < 60:
        return f"{max(seconds, 1.0):.0f} s"
    return f"{seconds / 60:.1f} min" if seconds < 600 else f"{seconds / 60:.0f} min"


def _sampling_time(model: Any) -> float | None:
    """The recorded wall time of the model's sampler (seconds), or ``None``."""
    post = getattr(model, "posterior_", None)
    if post is None:
        return None
    try:
        t = post["posterior"].attrs.get("sampling_time")
    except (KeyError, TypeError, AttributeError):
        return None
    try:
        t = float(t)
    except (TypeError, ValueError):
        return None
    return t if math.isfinite(t) and t > 0 else None


def refit_cost(model: Any, n_synthetic: int, m: int, *, refit_draws: int | None = None,
               ) -> RefitCost:
    """Estimate the time of the stabilised estimator's ``m`` refits from the sizes.

    Parameters
    ----------
    model : fitted Bayesian synthesizer
        The model whose ``fit_augmented`` will run.
    n_synthetic : int
        Records of the synthetic dataset appended in each refit (under partial synthesis of
        selected records, the selected ones).
    m : int
        Number of synthetic datasets (= refits).
    refit_draws : int, optional
        Kept draws per chain of each refit (default: the model's ``draws``).

    Returns
    -------
    RefitCost
        ``seconds`` is
        ``m × T_fit × (n + n_syn) / n × (tune + thin × refit draws) / (tune + thin × draws)``
        with ``T_fit`` the model's recorded sampling time and ``n`` its records; ``None`` when
        no sampling time is recorded.
    """
    n = getattr(model, "_n_records", None)
    n = int(n) if n else 0
    records = n + int(n_synthetic)
    draws = getattr(model, "draws", None)
    tune = int(getattr(model, "tune", 0) or 0)
    thin = int(getattr(model, "thin", 1) or 1)
    post = getattr(model, "posterior_", None)
    try:  # a run that extended itself (max_sweeps) ended at a larger thinning; its refits
        # start there (DPMPM.fit_augmented), and the recorded time covers every round
        thin = max(thin, int(post.attrs.get("thin", thin)))
    except (AttributeError, TypeError, ValueError):
        pass
    new_draws = int(refit_draws) if refit_draws is not None else draws
    t = _sampling_time(model)
    if t is None or not n or draws is None:
        return RefitCost(m, None, records, new_draws,
                         "the model records no sampling time (draws made elsewhere, or a "
                         "model saved by an earlier version)")
    base_sweeps, new_sweeps = tune + thin * int(draws), tune + thin * int(new_draws)
    seconds = m * t * (records / n) * (new_sweeps / base_sweeps)
    basis = (f"from the model's own fit: {t:.0f} s for {n:,} records and "
             f"{base_sweeps:,} sweeps per chain; each refit has {records:,} records"
             + (f" and {new_sweeps:,} sweeps" if refit_draws is not None else ""))
    return RefitCost(m, seconds, records, new_draws, basis)
