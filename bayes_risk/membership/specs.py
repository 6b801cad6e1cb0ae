"""The grouped arguments of membership risk: :class:`AttackSpec` (``attack=``, the attack game)
and :class:`RatioSpec` (``ratio=``, how the likelihood ratios are estimated), validated when
built."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from bayes_risk._constraints import (
    Flag,
    Interval,
    Options,
    Relation,
    Requires,
    check_fields,
    checked,
)
from bayes_risk._specs import cli_option
from bayes_risk.attribute.specs import REFIT_CACHE, REFIT_CACHE_HELP

__all__ = ["AttackSpec", "RatioSpec"]

def _probability_or_name(text: str) -> float | str:
    """``--prior``'s text as the field's value: a number, else the name (the spec checks it)."""
    try:
        return float(text)
    except ValueError:
        return text


@dataclass(frozen=True)
class AttackSpec:
    """The membership attack game: the prior, the threshold and the figures reported beside.

    Parameters
    ----------
    prior : float or {"balanced", "sampling"}
        Prior membership probability: 0.5, ``n / population_size``, or a number in (0, 1).
    population_size : int, optional
        ``N`` of ``prior="sampling"`` (at least the number of confidential records).
    threshold : float
        Posterior membership probability above which a record counts as identified.
    dcr : bool
        Compute the distance-to-closest-record baseline beside the estimate.
    bootstrap : int
        Bootstrap replicates for the intervals of the advantage (0 disables).

    Examples
    --------
    >>> AttackSpec(prior="sampling", population_size=100_000).threshold
    0.5
    """

    prior: float | Literal["balanced", "sampling"] = field(default="balanced", metadata=cli_option(
        "--prior", "prior membership probability: balanced (0.5, default), sampling (the base "
        "rate n/N, with --population-size N) or a number in (0, 1)", metavar="PRIOR",
        parse=_probability_or_name)
        | checked([Options(("balanced", "sampling")), Interval(float, 0, 1, closed="neither")]))
    population_size: int | None = field(default=None, metadata=cli_option(
        "--population-size", "N of --prior sampling", metavar="N", type=int)
        | checked([Interval(int, 1), None]))
    threshold: float = field(default=0.5, metadata=cli_option(
        "--threshold", "posterior membership probability above which a record counts as "
        "identified as a member (default 0.5)", metavar="P", type=float)
        | checked(Interval(float, 0, 1, closed="neither")))
    dcr: bool = field(default=True, metadata=cli_option(
        "--no-dcr", "skip the distance-to-closest-record baseline", action="store_true",
        parse=lambda flag: not flag)
        | checked(Flag()))
    bootstrap: int = field(default=200, metadata=cli_option(
        "--bootstrap", "bootstrap replicates over records for the intervals (default 200; 0 "
        "disables)", metavar="B", type=int)
        | checked(Interval(int, 0)))

    #: the fields against each other (checked by ``check_fields``)
    RELATIONS: ClassVar[tuple[Relation, ...]] = (
        Requires("prior", "population_size", when=("sampling",), code="OPTION_REQUIRED",
                 why="the base rate n/N"),)

    def __post_init__(self) -> None:
        check_fields(self)


@dataclass(frozen=True)
class RatioSpec:
    """How the membership likelihood ratios are estimated.

    Parameters
    ----------
    augmented : sequence of models, optional
        Draws of ``p(Θ | y, Z_(l))``, one model per dataset (default: ``model.fit_augmented``).
    normaliser_draws : int
        Population records for the normaliser when ``m > 1`` (per cell of the unsynthesized
        columns; CART: enumerated when its support is at most this large).
    unsynthesized_concentration : float
        Concentration ``α > 0`` of the population model of the unsynthesized values.
    khat : bool
        Compute Pareto k̂ of every mean (flags ``KHAT_HIGH``).
    refit_cache : str or path, optional
        As ``refit_cache`` of :class:`~bayes_risk.attribute.EstimatorSpec`.

    Examples
    --------
    >>> RatioSpec(normaliser_draws=1000).khat
    True
    """

    augmented: Sequence[Any] | None = None
    normaliser_draws: int = field(default=400, metadata=cli_option(
        "--normaliser-draws", "population records of the normaliser when m > 1 (default 400)",
        metavar="N", type=int)
        | checked(Interval(int, 20)))
    unsynthesized_concentration: float = field(default=1.0, metadata=cli_option(
        "--unsynthesized-concentration", "partial synthesis: concentration of the "
        "Dirichlet-process population model of the released unsynthesized values, over their "
        "cells (a numeric column's: the multiples of its finest decimal unit; default 1; it "
        "matters only for records whose unsynthesized values no other record shares)",
        metavar="A", type=float)
        | checked(Interval(float, 0, closed="neither")))
    khat: bool = field(default=True, metadata=checked(
        Flag()))
    refit_cache: str | os.PathLike[str] | None = field(default=None, metadata=cli_option(
        "--refit-cache", REFIT_CACHE_HELP, metavar="DIR") | checked(REFIT_CACHE))

    __post_init__ = check_fields  # the fields' table is the whole check
