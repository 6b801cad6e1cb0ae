"""The model contract and the optional capabilities of synthesis models.

The engines depend on this module only, never on a concrete model or on PyMC; models satisfy it
structurally and declare their capabilities once (``info = ModelInfo(...)``). Dependencies run
one way: command line → engines → protocols ← models.

The contract (defined in :mod:`bayes_risk.contract`, re-exported here)
    :class:`RiskModel` — the one required protocol of a model with posterior draws (record and
    dataset log-likelihoods, number of draws, schema, model class, ratio form);
    :class:`ModelInfo` — the frozen record of capability flags every engine, the command line
    and the audit read (:func:`model_info`); :class:`SupportsPersistence` — ``save``/``load``.
Optional likelihoods and members, each declared in :class:`ModelInfo`
    :class:`SupportsAugmentedFit` (estimator ``"stabilised"``), :class:`SupportsNeighbourhoodLoglik`
    and :class:`SupportsNeighbourhoodBuffer` (fast one-variable-different candidates),
    :class:`SupportsCandidateLoglik` (per-record candidate likelihoods),
    :class:`SupportsOwnRecordTerm` (class O models), :class:`SupportsPluginLoglik` (models
    without posterior draws), :class:`SupportsLargestValue` (Wei & Reiter 2016),
    :class:`SupportsPosteriorReplicates` (identification risk, Drechsler & Reiter 2008, eq. 5),
    :class:`SupportsConvergenceSummary`, :class:`SupportsDrawChains`.

Shapes follow the methods page, Notation: ``H`` posterior draws, ``n`` records, ``m``
synthetic datasets, ``G`` candidates. ``runtime_checkable`` checks that the members exist, not
their signatures: the keyword arguments documented here are part of the contract (no method
takes ``**kwargs``), and ``bayes_risk.testing.check_synthesizer`` calls them.
"""

from __future__ import annotations

import typing
from collections.abc import Iterator, Sequence
from typing import Any, Literal, Protocol, runtime_checkable

import numpy as np
import pandas as pd

from bayes_risk.contract import (
    ESTIMATORS,
    LIKELIHOODS,
    ModelInfo,
    RiskModel,
    SupportsPersistence,
    auto_estimator,
    instance_info,
    model_info,
)

__all__ = [
    "ESTIMATORS",
    "LIKELIHOODS",
    "ModelInfo",
    "RiskModel",
    "SupportsPersistence",
    "auto_estimator",
    "instance_info",
    "model_info",
    "SupportsAugmentedFit",
    "SupportsNeighbourhoodLoglik",
    "SupportsNeighbourhoodBuffer",
    "SupportsCandidateLoglik",
    "SupportsOwnRecordTerm",
    "SupportsPluginLoglik",
    "SupportsConvergenceSummary",
    "SupportsDrawChains",
    "SupportsPosteriorReplicates",
    "LargestValuePieces",
    "SupportsLargestValue",
    "missing_members",
]


def missing_members(obj: Any, protocol: type) -> list[str]:
    """Members of ``protocol`` that ``obj`` lacks (sorted), for an error message.

    Parameters
    ----------
    obj : object
    protocol : runtime-checkable Protocol class

    Returns
    -------
    list of str
        Empty when ``isinstance(obj, protocol)``.
    """
    get = getattr(typing, "get_protocol_members", None)  # Python >= 3.13
    members = get(protocol) if get is not None else protocol.__protocol_attrs__
    return sorted(m for m in members if not hasattr(obj, m))


@runtime_checkable
class SupportsAugmentedFit(Protocol):
    """Draws of ``p(Θ | y, Z_(l))`` (the stabilised estimator, methods page)."""

    def fit_augmented(
        self, data: pd.DataFrame, synthetic: pd.DataFrame, *, random_seed: Any = None
    ) -> Any:
        """A new fitted model (a :class:`RiskModel`) whose draws come from
        ``p(Θ | y, Z_(l))``, seeded by ``random_seed``."""
        ...


@runtime_checkable
class SupportsNeighbourhoodLoglik(Protocol):
    """Record likelihoods of the one-variable-different candidates, in one call.

    Candidates (methods, Candidate sets) vary the synthesized columns: index 0 is the truth,
    then column by column in column order, levels ascending, skipping the true level. A model
    may raise ``NotImplementedError`` for a setting it cannot serve; the engine then falls back
    to :class:`SupportsCandidateLoglik` or to the record likelihood.
    """

    def neighbourhood_loglik(
        self, records: pd.DataFrame, *, draw_indices: np.ndarray | None = None
    ) -> np.ndarray:
        """``[H, n, G]`` log-likelihoods of each record's neighbourhood."""
        ...


@runtime_checkable
class SupportsNeighbourhoodBuffer(SupportsNeighbourhoodLoglik, Protocol):
    """:class:`SupportsNeighbourhoodLoglik` writing into a caller's buffer.

    ``neighbourhood_loglik`` of such a model accepts ``out=`` (float64 ``[H, n, G]``, with
    ``G = neighbourhood_size()``): an engine evaluating many chunks reuses one buffer.
    """

    def neighbourhood_size(self) -> int:
        """``G = 1 + Σ_{j∈S}(d_j − 1)`` of the one-variable-different set."""
        ...


@runtime_checkable
class SupportsCandidateLoglik(Protocol):
    """Per-record candidate likelihoods (models whose record likelihood has per-record state)."""

    def candidate_loglik(
        self, record: pd.Series, candidates: pd.DataFrame, *, draw_indices: np.ndarray | None = None
    ) -> np.ndarray:
        """``[H, G]`` log-likelihoods of ``record`` with its varying columns set to each
        candidate (decoded values)."""
        ...


@runtime_checkable
class SupportsOwnRecordTerm(Protocol):
    """The own-record term of a class O model (methods, Two classes of synthesis model)."""

    def own_record_delta(
        self,
        record: pd.Series,
        candidates: pd.DataFrame,
        synthetic: Sequence[pd.DataFrame],
        *,
        draw_indices: np.ndarray | None = None,
    ) -> np.ndarray:
        """``[H, m, G]`` array of ``ℓ_{hli}(y*_g) − ℓ_{hli}(y_i)``."""
        ...


@runtime_checkable
class SupportsPluginLoglik(Protocol):
    """A model without posterior draws that gives the likelihood of the release directly.

    The tree synthesizers' plug-in likelihoods (methods, Tree synthesizers: plug-in
    likelihoods) are of this kind.

    Attributes
    ----------
    model_class : {"P", "O"}
    schema_ : Schema
    """

    model_class: Literal["P", "O"]
    schema_: Any

    def plugin_loglik(
        self,
        record: int,
        candidates: pd.DataFrame,
        synthetic: Sequence[pd.DataFrame],
        *,
        return_se: bool = False,
    ) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
        """``[m, G]`` log-likelihood of each dataset under each candidate (up to a constant
        common to the candidates); with ``return_se=True`` also the ``[m, G]`` Monte Carlo
        standard errors of each candidate's difference from the truth (``0`` where exact)."""
        ...


@runtime_checkable
class SupportsConvergenceSummary(Protocol):
    """A model fitted by MCMC whose convergence is reported with every result that uses it."""

    def convergence_summary(self) -> dict[str, Any]:
        """R-hat and ESS of the diagnosed quantities and structured ``warnings`` (each a dict
        with ``code``, ``quantities`` and ``message``)."""
        ...


@runtime_checkable
class SupportsDrawChains(Protocol):
    """Posterior draws from several MCMC chains: the attribute-risk engine then compares each
    record's estimate between chains (record flag ``CHAINS_DISAGREE``)."""

    def draw_chains(self) -> np.ndarray:
        """``[H]`` int array: the chain of each flattened posterior draw (chains labelled
        ``0..C-1``; draws of one chain in sampling order)."""
        ...


@runtime_checkable
class LargestValuePieces(Protocol):
    """Per-candidate likelihood pieces of the Wei & Reiter (2016) largest-value scenario.

    Attributes
    ----------
    candidates : ndarray (G,)
        Candidate values of the largest value; the truth at ``g0``.
    g0 : int
    model_class : {"P", "O"}
    logp_rec : ndarray (H, G)
        Record log-likelihoods of the target with its value set to each candidate.
    L : ndarray (H, m)
        ``log p(Z_(l) | Θ_h)``.
    loglik_candidates : ndarray (H, m, G) or None
        Class O: ``log p(Z_(l) | Θ_h, y*_g, y_{-i})``.

    Pieces of a weaker intruder may also carry ``constraint_loglik`` (H, C, G): the log-probability
    under draw ``h`` of each piece of what the intruder knows given the candidate (optional; see
    ``bayes_risk.attribute.largest_value.constraint_term``).
    """

    candidates: np.ndarray
    g0: int
    model_class: str
    logp_rec: np.ndarray
    L: np.ndarray | None
    loglik_candidates: np.ndarray | None


@runtime_checkable
class SupportsLargestValue(Protocol):
    """A count model that gives the pieces of the Wei & Reiter (2016) scenario."""

    def largest_value_loglik(
        self,
        column: str,
        synthetic: Sequence[pd.DataFrame],
        *,
        scenario: str = "worst_case",
        total_known: bool = False,
        candidates: np.ndarray | None = None,
        upper: float | None = None,
        step: float = 1.0,
        draw_indices: Any = None,
        memberships: Any = None,
        data: pd.DataFrame | None = None,
    ) -> LargestValuePieces:
        """The :class:`LargestValuePieces` of the record holding the largest value of
        ``column`` (``scenario``: ``"worst_case"``, ``"second_largest"`` or
        ``"two_largest_sum"``; the candidate grid from ``candidates`` or ``upper``/``step``;
        ``data``: the confidential table when the model did not keep it)."""
        ...


@runtime_checkable
class SupportsPosteriorReplicates(Protocol):
    """What a synthesis model provides for posterior Monte Carlo identification risk.

    Replicates of the synthesized (known) columns drawn from the model's posterior predictive
    given the unsynthesized columns (Drechsler & Reiter 2008, eq. 5), generated in chunks so
    that memory does not grow with their number. Replicate ``r`` must depend only on
    ``random_seed`` and ``r`` (not on ``chunk_size`` or ``start``).
    """

    def posterior_replicates(
        self,
        n: int | None,
        *,
        columns: Sequence[str] | None = None,
        chunk_size: int = 50,
        random_seed: Any = None,
        start: int = 0,
    ) -> Iterator[list[pd.DataFrame]]:
        """Yield lists of tables ``[n_records, len(columns)]`` (``n=None``: until stopped)."""
        ...
