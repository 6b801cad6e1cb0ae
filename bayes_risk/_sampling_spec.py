"""The sampler settings of the Bayesian synthesizers: :class:`Sampling` (public as
``bayes_risk.models.Sampling``).

Imports only the standard library at module level: ``bayes-risk fit`` declares its MCMC options
from the fields (``bayes-risk --help`` imports no numpy).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field

from bayes_risk._constraints import Interval, check_fields, checked
from bayes_risk._specs import GroupedSettings, cli_option

__all__ = ["Sampling", "SAMPLING_FIELDS", "MCMC"]

#: the argument group of ``bayes-risk fit --help`` that lists the sampler's options
MCMC = "MCMC"


#: the integer fields' ranges (``None``: the model's default)
_AT_LEAST_0 = [Interval(int, 0), None]
_AT_LEAST_1 = [Interval(int, 1), None]


@dataclass(frozen=True, repr=False)
class Sampling(GroupedSettings):
    """How a Bayesian synthesizer runs its sampler, apart from the model (PyMC's ``pm.sample``
    names): give it as ``sampling=Sampling(draws=2000, chains=4)``.

    A field left at ``None`` takes the model's default (each model's ``sampling_defaults``);
    a field the model's sampler does not take (``thin`` for ``SequentialRegression``) is refused
    when the model checks its settings. The values are checked here, once.

    Parameters
    ----------
    draws : int, optional
        Kept iterations per chain (>= 1); the model has ``H = chains × draws`` posterior draws.
    tune : int, optional
        Warm-up (tuning) iterations per chain, discarded (>= 0).
    chains : int, optional
        Number of MCMC chains (>= 1).
    cores : int, optional
        Chains run in parallel processes (>= 1; ``1`` runs them in turn in this process).
    thin : int, optional
        Gibbs sweeps per kept draw (>= 1; DPMPM).
    max_sweeps : int, optional
        Most sweeps per chain of a run that extends itself (as many sweeps again at twice the
        thinning) until its checks pass (>= 0, 0: the run has the length asked for; DPMPM).
    starts : str or sequence of str, optional
        How the chains start: a kind of start of each chain, cycled over the chains,
        ``"spread"`` (every class occupied), ``"few"`` (3 classes) or ``"prior"`` (a prior
        draw), or ``"overdispersed"``: the three in the model's order (DPMPM, PoissonMixture;
        :ref:`dpmpm-starts`).
    temperatures : int, optional
        Replicas of each chain's tempered ladder (>= 1, 1: no tempering; DPMPM's Gibbs sampler).

    Examples
    --------
    >>> from bayes_risk.models import Sampling
    >>> Sampling(draws=500, chains=2)
    Sampling(draws=500, chains=2)
    """

    draws: int | None = field(default=None, metadata=cli_option(
        "--draws", "kept iterations per chain (model default; dpmpm 500, each the last of 5 "
        "sweeps, see --thin; others 1000)", type=int, group=MCMC) | checked(
        _AT_LEAST_1))
    tune: int | None = field(default=None, metadata=cli_option(
        "--tune", "burn-in iterations per chain (model default; dpmpm 1000, others 500)",
        type=int, group=MCMC) | checked(_AT_LEAST_0))
    chains: int | None = field(default=None, metadata=cli_option(
        "--chains", "number of chains (model default; dpmpm 2, others 1)", type=int,
        group=MCMC) | checked(_AT_LEAST_1))
    cores: int | None = field(default=None, metadata=cli_option(
        "--cores", "processes running chains in parallel (model default; dpmpm: one per chain "
        "up to the CPUs when the run is long enough to gain from them, else in turn; others 1)",
        type=int, group=MCMC) | checked(_AT_LEAST_1))
    thin: int | None = field(default=None, metadata=cli_option(
        "--thin", "Gibbs sampler: sweeps per kept draw after the warm-up (dpmpm; default 5 when "
        "--draws is not given, else 1)", metavar="T", type=int, group=MCMC) | checked(
        _AT_LEAST_1, label="thin (Gibbs sweeps per kept draw)"))
    max_sweeps: int | None = field(default=None, metadata=cli_option(
        "--max-sweeps", "Gibbs sampler: most sweeps per chain (warm-up included) of a run that "
        "extends itself, doubling its window and thinning, until its convergence checks pass or "
        "its chains stay apart (dpmpm; default 50000 when --draws is not given, else 0; 0: "
        "none)", metavar="N", type=int, group=MCMC) | checked(
        _AT_LEAST_0, label="max_sweeps (most sweeps per chain of a self-extending run; 0: none)"))
    starts: str | Sequence[str] | None = field(default=None, metadata=cli_option(
        "--starts", "Gibbs sampler: how each chain starts, cycled over the chains: spread "
        "(every class occupied), few (3 classes) or prior (a prior draw); default overdispersed "
        "(dpmpm: spread, few, prior; poisson-mixture: prior, spread, few), so that the chains "
        "come from both ends of the number of classes", metavar="KIND", nargs="+",
        choices=("overdispersed", "spread", "few", "prior"), group=MCMC))
    temperatures: int | None = field(default=None, metadata=cli_option(
        "--temperatures", "Gibbs sampler: replicas of each chain's parallel-tempering ladder "
        "(dpmpm; default 1: none); T >= 2 also estimates each chain's marginal likelihood "
        "(which regime carries the posterior mass) at about T times the sweeps", metavar="T",
        type=int, group=MCMC) | checked(_AT_LEAST_1, label="temperatures (replicas of each "
        "chain's tempered ladder; 1: no tempering)"))

    def __post_init__(self) -> None:
        from bayes_risk.models._bayesian.starts import check_starts

        check_fields(self, prefix="")
        if self.starts is not None:
            check_starts(self.starts)
            if not isinstance(self.starts, str):  # a list (JSON) as the tuple it is hashed as
                object.__setattr__(self, "starts", tuple(self.starts))


#: the fields of :class:`Sampling` (the sampler settings a model's ``sampling`` groups)
SAMPLING_FIELDS: tuple[str, ...] = tuple(f.name for f in dataclasses.fields(Sampling))
