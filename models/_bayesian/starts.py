"""Overdispersed chain starts of the truncated stick-breaking mixtures (Gelman & Rubin 1992):
``"spread"`` (all ``K`` classes), ``"few"`` (``min(K, 3)`` classes, α = 0.5) or ``"prior"``,
cycled over the chains. See :doc:`/methods/models`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from bayes_risk._constraints import Options, SequenceOf, check_value

__all__ = ["START_KINDS", "OVERDISPERSED", "FEW_CLASSES", "check_starts", "chain_starts",
           "initial_state"]

#: the ways a chain can start
START_KINDS: tuple[str, ...] = ("spread", "few", "prior")
#: the default: each chain in turn starts in another regime
OVERDISPERSED = "overdispersed"
#: classes of the start ``"few"``
FEW_CLASSES = 3


def _one(value: Any) -> Any:
    """A sequence of one kind (the command line's ``--starts few``) as that kind."""
    if not isinstance(value, str) and isinstance(value, (list, tuple)) and len(value) == 1:
        return value[0]
    return value


def check_starts(value: Any, name: str = "starts") -> None:
    """Raise :class:`ValidationError` unless ``value`` is ``"overdispersed"``, one of
    :data:`START_KINDS` or a non-empty sequence of them (one per chain, cycled)."""
    # "overdispersed": the chains start in turn from each of START_KINDS
    check_value(_one(value), [Options((OVERDISPERSED, *START_KINDS), listed=True),
                              SequenceOf(Options(START_KINDS, listed=True),
                                         "them (one per chain, cycled)")], name)


def chain_starts(value: Any, cycle: Sequence[str]) -> tuple[str, ...]:
    """The starts of the chains, cycled: ``cycle`` (the model's overdispersed order) for
    ``"overdispersed"``, else the kind or kinds given."""
    value = _one(value)
    if isinstance(value, str):
        return tuple(cycle) if value == OVERDISPERSED else (value,)
    return tuple(str(k) for k in value)


def initial_state(kind: str, n: int, K: int, a_alpha: float, b_alpha: float,
                  rng: np.random.Generator) -> tuple[np.ndarray, float]:
    """Starting classes ``z [n]`` (int64) and α of a chain that starts as ``kind``.

    ``"spread"`` draws α first, then the classes (the order the DPMPM sampler always used, so a
    seed gives the draws it gave before)."""
    if kind == "spread":
        alpha = float(np.clip(rng.gamma(a_alpha, 1.0 / b_alpha), 0.5, 5.0))
        return rng.integers(0, K, size=n).astype(np.int64), alpha
    if kind == "few":
        return rng.integers(0, min(K, FEW_CLASSES), size=n).astype(np.int64), 0.5
    from bayes_risk.models._bayesian.sticks import initial_memberships

    return initial_memberships(n, K, a_alpha, b_alpha, rng)
