"""The typed plan of one attribute-risk analysis (:class:`AttributePlan`, built once by
:func:`~bayes_risk.attribute.prepare.prepare`, picklable), the output of one partition of its
records (:class:`PartitionOutput`), and what an estimator reads and writes
(:class:`CandidateGroup`, :class:`Workspace`, the interface :class:`EstimatorStrategy`).
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

    ``orig`` is the confidential data over the model's columns; ``values (n, q)`` the codes or
    values of the guessed columns ``vary``; ``levels_model`` / ``levels_harmonised`` the levels
    of each in the model and after harmonisation (0 for numeric; candidates at codes the model
    never saw have probability 0); ``positions`` the records to evaluate, in the user's order;
    ``released`` the datasets with their missing-value codes as released, which a plug-in
    likelihood reads (``None``: the same as ``datasets``).
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
    """How each record's candidate set is built: what the user passed, the parsed ``spec``
    (``None`` for a callable), ``nb_index`` (the candidates' positions in the model's one-variable
    neighbourhood, ``None`` when that fast path does not apply) and ``nb_all`` (the whole
    neighbourhood in its order)."""

    candidates: Any
    spec: CandidateSpec | None
    nb_index: np.ndarray | None
    nb_all: bool


@dataclass(frozen=True)
class ModelAccess:
    """A model and the likelihood capabilities it offers (checked once, with ``isinstance``):
    ``neighbourhood_loglik`` (``buffer``: into a caller's buffer) and ``candidate_loglik``."""

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

    ``H`` draws used (0 for plug-in models), ``logp_idx`` those passed to the likelihoods
    (``None``: all), ``n_sum`` (compatibility mode: sum over the first ``n_sum`` draws only),
    ``L (H, m) = log p(Z_(l) | Θ_h)``, ``counts (B, H)``: bootstrap counts of the draws.
    """

    H: int
    logp_idx: np.ndarray | None
    n_sum: int | None
    L: np.ndarray | None
    n_boot: int
    counts: np.ndarray | None


@dataclass(frozen=True)
class AugmentedFits:
    """The ``m`` models with draws of ``p(Θ | y, Z_(l))`` (stabilised estimator only)."""

    models: list[ModelAccess] = field(default_factory=list)
    n_draws: list[int] = field(default_factory=list)
    counts: list[np.ndarray] = field(default_factory=list)
    khat_thresholds: list[float] = field(default_factory=list)


@dataclass(frozen=True)
class DiagnosticsSettings:
    """Which diagnostics are computed and when they flag a record."""

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
    #: the intruder's known records (``bayes_risk.attribute.known_records.KnownRecords``;
    #: ``None``: every other record known)
    known: Any = None


@dataclass(frozen=True)
class RecordPartition:
    """The records one call of ``evaluate`` handles (progress of its chunks: in process only)."""

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


# what an estimator reads and writes (the strategies of ``strategies`` implement it)
@dataclass(frozen=True)
class CandidateGroup:
    """Records of one chunk with the same number of candidates ``G``, truth inside support.

    ``vals (R, G, q)`` are the candidates, ``g0`` the truth's index, ``unknown (R, G)`` the
    candidates at a level the model never saw, ``weight`` how many records each stands for
    (identical records are evaluated once; ``None``: one each). ``members``: Wei & Reiter's
    two-record intruder (:mod:`bayes_risk.attribute.pairs`), row ``k`` a pair whose candidates
    are the product of ``members[0]`` row ``k`` (slow index) and ``members[1]`` row ``k``, or
    with ``aligned`` (known sums) candidate ``g`` of both members together.
    """

    pos: np.ndarray
    vals: np.ndarray
    g0: np.ndarray
    unknown: np.ndarray
    weight: np.ndarray | None = None
    members: tuple[CandidateGroup, CandidateGroup] | None = None
    aligned: bool = False

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
    """Per-partition scratch state: output buffers reused for every chunk, and model time."""

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
        """The original rows of ``group`` and whether any value is missing (cached per chunk)."""
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
        """Log-likelihoods, diagnostics and flags (appended) of ``group``'s records into ``out``."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"
