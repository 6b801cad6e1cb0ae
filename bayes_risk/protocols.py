"""What synthesis models offer to the risk engines: one runtime-checkable protocol per capability.

The engines depend on these protocols only, never on a concrete model or on PyMC; models satisfy
them structurally (no registration, no base class). An engine checks ``isinstance(model, P)``
once, when it prepares an analysis, and raises an error naming the members a model lacks
(:func:`missing_members`). Dependencies run one way: command line → engines → protocols ← models.

Shapes follow the methods page, Notation: ``H`` posterior draws, ``n`` records, ``m`` synthetic
datasets, ``G`` candidates.

Attribute risk (Hu 2019)
    :class:`SupportsRecordLoglik` (posterior draws and the record likelihood: the minimum),
    :class:`SupportsDatasetLoglik` (published importance-sampling estimator),
    :class:`SupportsAugmentedFit` (stabilised estimator), :class:`SupportsNeighbourhoodLoglik`
    and :class:`SupportsNeighbourhoodBuffer` (fast one-variable-different candidates),
    :class:`SupportsCandidateLoglik` (per-record candidate likelihoods),
    :class:`SupportsOwnRecordTerm` (class O models), :class:`SupportsPluginLoglik` (models
    without posterior draws), :class:`SupportsLargestValue` (Wei & Reiter 2016).
Identification risk (Drechsler & Reiter 2008, eq. 5)
    :class:`SupportsPosteriorReplicates` (posterior-predictive replicates of the synthesized
    columns, for posterior Monte Carlo identification risk).
Either engine
    :class:`SupportsConvergenceSummary` (MCMC diagnostics reported with a result),
    :class:`SupportsDrawChains` (which MCMC chain each posterior draw comes from),
    :class:`SupportsMissingValues` (record likelihoods that marginalise missing values).

``runtime_checkable`` checks that the members exist, not their signatures: the keyword
arguments documented here are part of the contract.
"""

from __future__ import annotations

import typing
from collections.abc import Iterator, Sequence
from typing import Any, Literal, Protocol, runtime_checkable

import numpy as np
import pandas as pd

__all__ = [
    "SupportsRecordLoglik",
    "SupportsDatasetLoglik",
    "SupportsAugmentedFit",
    "SupportsNeighbourhoodLoglik",
    "SupportsNeighbourhoodBuffer",
    "SupportsCandidateLoglik",
    "SupportsOwnRecordTerm",
    "SupportsPluginLoglik",
    "SupportsResultWarnings",
    "SupportsPartialSynthesis",
    "SupportsMissingValues",
    "SupportsHeldMissingValues",
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
class SupportsRecordLoglik(Protocol):
    """A Bayesian synthesis model with posterior draws and a per-draw record likelihood.

    The minimum the attribute-risk engine needs from a model with posterior draws.

    Attributes
    ----------
    model_class : {"P", "O"}
        Class P: given Θ, a synthetic dataset does not depend on the confidential synthesized
        values; class O: it does (own-record dependence, methods, Two classes of synthesis model).
    ratio_form : {"joint", "conditional"}
        Whether importance ratios use ``p(y_i | Θ)`` or ``p(y_i^s | y_i^us, Θ)`` (Hu 2019 §3.2.5).
    schema_ : Schema
        Column types, levels and roles the model was fitted with.
    n_draws : int
        Number of posterior draws ``H``.
    """

    model_class: Literal["P", "O"]
    ratio_form: Literal["joint", "conditional"]
    schema_: Any

    @property
    def n_draws(self) -> int: ...

    def record_loglik(
        self, records: pd.DataFrame, *, draws: np.ndarray | None = None
    ) -> np.ndarray:
        """``[H, n_records]`` array of ``log p(y_i | Θ_h)`` (joint or conditional form)."""
        ...


@runtime_checkable
class SupportsDatasetLoglik(Protocol):
    """Likelihood of whole synthetic datasets (the published estimator, Hu 2019 §3.2.5)."""

    def dataset_loglik(
        self, datasets: Sequence[pd.DataFrame], *, draws: np.ndarray | None = None
    ) -> np.ndarray:
        """``[H, m]`` array of ``log p(Z_(l) | Θ_h)``."""
        ...


@runtime_checkable
class SupportsAugmentedFit(Protocol):
    """Draws of ``p(Θ | y, Z_(l))`` (the stabilised estimator, methods page)."""

    def fit_augmented(self, data: pd.DataFrame, synthetic: pd.DataFrame, **kwargs: Any) -> Any:
        """A new fitted model (with :class:`SupportsRecordLoglik`) whose draws come from
        ``p(Θ | y, Z_(l))``; called with ``random_seed=`` by the engine."""
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
        self, records: pd.DataFrame, *, draws: np.ndarray | None = None
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
        self, record: pd.Series, candidates: pd.DataFrame, *, draws: np.ndarray | None = None
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
        datasets: Sequence[pd.DataFrame],
        *,
        draws: np.ndarray | None = None,
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
        datasets: Sequence[pd.DataFrame],
        *,
        return_se: bool = False,
    ) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
        """``[m, G]`` log-likelihood of each dataset under each candidate (up to a constant
        common to the candidates); with ``return_se=True`` also the ``[m, G]`` Monte Carlo
        standard errors of each candidate's difference from the truth (``0`` where exact)."""
        ...


@runtime_checkable
class SupportsResultWarnings(Protocol):
    """Method labels that hold for every estimate of a model (e.g. an approximation used).

    Attributes
    ----------
    result_warnings : tuple of str
        Codes added to a result's warnings.
    """

    result_warnings: tuple[str, ...]


@runtime_checkable
class SupportsPartialSynthesis(Protocol):
    """A model that synthesized only some records (the others are released unchanged).

    Attributes
    ----------
    synthesized_records_ : bool ndarray (n,) or None
        Which records were synthesized (``None``: all of them).
    """

    synthesized_records_: np.ndarray | None


@runtime_checkable
class SupportsMissingValues(Protocol):
    """A model whose ``record_loglik`` marginalises a record's missing values (a missing entry
    is left out of the record's likelihood), so that attribute risk can integrate them out.

    Attributes
    ----------
    marginalises_missing : bool
        ``True``: declared by the model class (DPMPM).
    """

    marginalises_missing: bool


@runtime_checkable
class SupportsHeldMissingValues(Protocol):
    """A plug-in likelihood that holds a record's missing values at their missingness kind:
    the intruder knows which of the record's values are missing (and how), and guesses the
    observed ones (the tree synthesizers, which release missing values as they synthesize them).

    Attributes
    ----------
    holds_missing : bool
        ``True``: declared by the plug-in class (``CARTPlugin``, ``RFPlugin``).
    """

    holds_missing: bool


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
        self, column: str, datasets: Sequence[pd.DataFrame], **kwargs: Any
    ) -> LargestValuePieces:
        """The :class:`LargestValuePieces` of the record holding the largest value of
        ``column``."""
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
