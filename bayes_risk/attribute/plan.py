"""The typed plan of one attribute-risk analysis, and the output of one partition of its records.

:func:`~bayes_risk.attribute.prepare.prepare` builds an :class:`AttributePlan` once (validation,
harmonised data, model capabilities, the ``m`` augmented fits, ``L = dataset_loglik``, the
bootstrap counts); :func:`~bayes_risk.attribute.evaluate.evaluate` reads it for any partition of
the records and returns a :class:`PartitionOutput`; :func:`~bayes_risk.attribute.assemble.
assemble` turns the merged outputs into the result. Plans are picklable: an executor ships one
to each worker once.

Also what an estimator reads and writes (:class:`CandidateGroup`, :class:`Workspace`) and its
interface (:class:`EstimatorStrategy`, implemented in :mod:`~bayes_risk.attribute.strategies`):
the plan holds its estimator, so the interface lives here, below the strategies.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from bayes_risk.attribute.candidates import CandidateSet, CandidateSpec
from bayes_risk.attribute.priors import Prior

__all__ = [
    "AnalysisData",
    "CandidateRule",
    "ModelAccess",
    "DrawPlan",
    "AugmentedFits",
    "DiagnosticsSettings",
    "AttributePlan",
    "RecordPartition",
    "PartitionOutput",
    "CandidateGroup",
    "Workspace",
    "EstimatorStrategy",
    "merge_outputs",
]


@dataclass(frozen=True)
class AnalysisData:
    """The harmonised data and who knows what.

    Attributes
    ----------
    orig : DataFrame
        The confidential data over the model's columns (0-based index).
    datasets : list of DataFrame
        The released datasets ``Z_(1..m)``.
    schema : Schema
        The model's schema with levels harmonised over original and release.
    vary : list of str
        The synthesized columns the intruder guesses.
    is_cat : bool ndarray (q,)
    values : ndarray (n, q)
        Codes (categorical) or values (numeric) of the varying columns.
    levels_model, levels_harmonised : dict of str to int
        Number of levels of each varying column in the model and after harmonisation (0 for
        numeric columns); candidates at codes the model never saw have probability 0.
    scenario : {"worst_case", "partially_known", "empty"}
    known : list of str
    positions : int ndarray
        The records to evaluate (row positions, in the order the user gave).
    released : list of DataFrame, optional
        The released datasets with their declared missing-value codes as released (``datasets``
        has them masked as missing): what a plug-in likelihood reads, since its synthesizer
        releases each code as a missingness kind of its own. ``None``: the same as
        ``datasets``.
    """

    orig: pd.DataFrame
    datasets: list[pd.DataFrame]
    schema: Any
    vary: list[str]
    is_cat: np.ndarray
    values: np.ndarray
    levels_model: dict[str, int]
    levels_harmonised: dict[str, int]
    scenario: str
    known: list[str]
    positions: np.ndarray
    released: list[pd.DataFrame] | None = None

    @property
    def m(self) -> int:
        """Number of released datasets."""
        return len(self.datasets)

    @property
    def model_datasets(self) -> list[pd.DataFrame]:
        """The datasets a plug-in likelihood reads (``released``, else ``datasets``)."""
        return self.datasets if self.released is None else self.released


@dataclass(frozen=True)
class CandidateRule:
    """How each record's candidate set is built.

    Attributes
    ----------
    candidates : str, CandidateSpec or callable
        What the user passed.
    spec : CandidateSpec or None
        The parsed rule (``None`` for a callable).
    nb_index : int ndarray or None
        Positions of the candidates inside the model's one-variable neighbourhood (fast path),
        ``None`` when the fast path does not apply.
    nb_all : bool
        The candidates are the whole neighbourhood in its order (no selection needed).
    """

    candidates: Any
    spec: CandidateSpec | None
    nb_index: np.ndarray | None
    nb_all: bool


@dataclass(frozen=True)
class ModelAccess:
    """A model and the likelihood capabilities it offers (checked once, with ``isinstance``).

    Attributes
    ----------
    model : object
    neighbourhood : bool
        Has ``neighbourhood_loglik`` (:class:`~bayes_risk.contract.SupportsNeighbourhoodLoglik`).
    buffer : bool
        ... and writes into a caller's buffer (``SupportsNeighbourhoodBuffer``).
    candidate : bool
        Has ``candidate_loglik`` (``SupportsCandidateLoglik``).
    """

    model: Any
    neighbourhood: bool
    buffer: bool
    candidate: bool

    @property
    def n_draws(self) -> int:
        """Number of posterior draws of the model."""
        return int(self.model.n_draws)


@dataclass(frozen=True)
class DrawPlan:
    """Posterior draws of the model and what is computed from them once.

    Attributes
    ----------
    H : int
        Draws used (0 for plug-in models).
    logp_idx : int ndarray or None
        Draws passed to the model's likelihoods (``None``: all).
    n_sum : int or None
        AttributeRiskCalculation compatibility: sum over the first ``n_sum`` draws only.
    L : ndarray (H, m) or None
        ``log p(Z_(l) | Θ_h)`` (published estimator, or its diagnostics).
    n_boot : int
        Draw-bootstrap replicates (0: none).
    counts : ndarray (B, H) or None
        Bootstrap counts of the draws of ``p(Θ | y)``.
    """

    H: int
    logp_idx: np.ndarray | None
    n_sum: int | None
    L: np.ndarray | None
    n_boot: int
    counts: np.ndarray | None


@dataclass(frozen=True)
class AugmentedFits:
    """The ``m`` models with draws of ``p(Θ | y, Z_(l))`` (stabilised estimator only).

    Attributes
    ----------
    models : list of ModelAccess
    n_draws : list of int
    counts : list of ndarray (B, H_l)
        Bootstrap counts of each fit's draws.
    khat_thresholds : list of float
    """

    models: list[ModelAccess] = field(default_factory=list)
    n_draws: list[int] = field(default_factory=list)
    counts: list[np.ndarray] = field(default_factory=list)
    khat_thresholds: list[float] = field(default_factory=list)


@dataclass(frozen=True)
class DiagnosticsSettings:
    """Which diagnostics are computed and when they flag a record.

    Attributes
    ----------
    khat : {"all", "base", "none"}
    psis : bool
    khat_rule : {"material", "any"}
    khat_tolerance : float
    khat_threshold : float
        Pareto k̂ threshold for ``H`` draws.
    low_ess_threshold : float
    """

    khat: str
    psis: bool
    khat_rule: str
    khat_tolerance: float
    khat_threshold: float
    low_ess_threshold: float


@dataclass(frozen=True)
class AttributePlan:
    """Everything of one analysis that does not depend on which records are evaluated."""

    model: ModelAccess
    data: AnalysisData
    rule: CandidateRule
    draws: DrawPlan
    augmented: AugmentedFits
    diagnostics: DiagnosticsSettings
    estimator: EstimatorStrategy
    prior: Prior
    compat: str | None
    chunk_size: int
    random_seed_json: Any
    warn_codes: list[str]
    #: the between-chain check (``bayes_risk.attribute.chains.ChainPlan``; ``None``: not run)
    chains: Any = None


@dataclass(frozen=True)
class RecordPartition:
    """The records one call of ``evaluate`` handles.

    Attributes
    ----------
    positions : int ndarray
    progressbar : bool
        Show the progress of this partition's chunks (in process only).
    """

    positions: np.ndarray
    progressbar: bool = False


@dataclass
class PartitionOutput:
    """Per-record outputs of one partition (dicts keyed by row position)."""

    candidates: dict[int, CandidateSet] = field(default_factory=dict)
    loglik: dict[int, np.ndarray] = field(default_factory=dict)
    log_mean_r: dict[int, np.ndarray] = field(default_factory=dict)
    diag: dict[int, dict[str, np.ndarray]] = field(default_factory=dict)
    boot: dict[int, np.ndarray] = field(default_factory=dict)
    flags: dict[int, list[str]] = field(default_factory=dict)
    n_dropped: dict[int, int] = field(default_factory=dict)
    any_unknown: bool = False
    deg_count: int = 0
    deg_total: int = 0
    warn_codes: list[str] = field(default_factory=list)
    timing: dict[str, float] = field(default_factory=dict)

    def skip(self, i: int, g: int) -> None:
        """Record ``i`` (``g`` candidates) is not estimated: nan likelihoods, no diagnostics."""
        self.loglik[i] = np.full(g, np.nan)
        self.log_mean_r[i] = np.full(g, np.nan)
        self.diag[i] = {}
        self.n_dropped[i] = 0

    def add_warnings(self, codes: Sequence[str]) -> None:
        """Add result warning codes (each once, in order)."""
        self.warn_codes += [c for c in codes if c not in self.warn_codes]


def merge_outputs(parts: Sequence[PartitionOutput]) -> PartitionOutput:
    """One output from outputs of disjoint record sets (counts and times add)."""
    out = PartitionOutput()
    for p in parts:
        for name in ("candidates", "loglik", "log_mean_r", "diag", "boot", "flags", "n_dropped"):
            getattr(out, name).update(getattr(p, name))
        out.any_unknown = out.any_unknown or p.any_unknown
        out.deg_count += p.deg_count
        out.deg_total += p.deg_total
        out.add_warnings(p.warn_codes)
        for k, v in p.timing.items():
            out.timing[k] = out.timing.get(k, 0.0) + v
    return out


# ------------------------------------------------------------------------------------------
# what an estimator reads and writes (the strategies of ``strategies`` implement it)
# ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class CandidateGroup:
    """Records of one chunk with the same number of candidates ``G``, truth inside support.

    Attributes
    ----------
    pos : int ndarray (R,)
        Row positions.
    vals : ndarray (R, G, q)
        Candidate codes / values.
    g0 : int ndarray (R,)
        Index of the truth.
    unknown : bool ndarray (R, G)
        Candidates at a level the model was never fitted with (probability 0).
    weight : int ndarray (R,), optional
        How many records of the partition each record stands for (identical records are
        evaluated once; counts over records use it). ``None``: one each.
    members : tuple of two CandidateGroup, optional
        Wei & Reiter's two-record intruder (``scenario="two_records"``,
        :mod:`bayes_risk.attribute.pairs`): row ``k`` is a pair of records, ``pos`` numbers the
        pairs, and the pair's candidates are the product of the candidates of
        ``members[0]`` row ``k`` (slow index) and ``members[1]`` row ``k`` (fast index);
        the likelihoods come from the members (:func:`~bayes_risk.attribute.likelihoods.
        model_logp`). ``None``: one record per row.
    """

    pos: np.ndarray
    vals: np.ndarray
    g0: np.ndarray
    unknown: np.ndarray
    weight: np.ndarray | None = None
    members: tuple[CandidateGroup, CandidateGroup] | None = None

    @property
    def size(self) -> int:
        """Number of records ``R``."""
        return int(self.pos.size)

    @property
    def n_candidates(self) -> int:
        """``G``."""
        return int(self.vals.shape[1])


@dataclass
class Workspace:
    """Per-partition scratch state: reused output buffers and the time spent in the model.

    Large ``[H, R, G]`` arrays are allocated once per posterior and reused for every chunk
    (not re-allocated and page-faulted each time).
    """

    buffers: dict[Any, np.ndarray] = field(default_factory=dict)
    timing: dict[str, float] = field(default_factory=lambda: {"model_likelihood_s": 0.0})
    _records: tuple[Any, ...] | None = field(default=None, repr=False)

    def buffer(self, key: Any, shape: tuple[int, int, int]) -> np.ndarray:
        """An uninitialised float64 array of ``shape``, the same one for the same key."""
        b = self.buffers.get(key)
        if b is None or b.shape != shape:
            b = self.buffers[key] = np.empty(shape)
        return b

    def records(self, data: AnalysisData, group: CandidateGroup) -> tuple[pd.DataFrame, bool]:
        """The original rows of ``group`` and whether any value is missing: formed once per
        chunk and shared by the ``m + 1`` models that evaluate it."""
        last = self._records
        if last is None or last[0] is not group or last[1] is not data:
            rows = data.orig.iloc[group.pos]
            last = self._records = (group, data, rows, bool(rows.isna().to_numpy().any()))
        return last[2], last[3]


class EstimatorStrategy(ABC):
    """How the likelihood of the release under each candidate is estimated."""

    #: the name reported in ``settings["estimator"]``
    name: ClassVar[str]

    @abstractmethod
    def estimate(
        self, plan: AttributePlan, group: CandidateGroup, ws: Workspace, out: PartitionOutput
    ) -> None:
        """Log-likelihoods, diagnostics and flags of the records of ``group`` into ``out``.

        ``out.flags[i]`` already exists for every record (flags are appended).
        """

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"
