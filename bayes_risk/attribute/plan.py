"""The typed plan of one attribute-risk analysis and what its estimators read and write."""

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
    """The harmonised data (``orig``, ``values`` of columns ``vary``, levels) and the positions."""

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
    """How each record's candidate set is built (``spec``, neighbourhood fast path)."""

    candidates: Any
    spec: CandidateSpec | None
    nb_index: np.ndarray | None
    nb_all: bool


@dataclass(frozen=True)
class ModelAccess:
    """A model and the likelihood capabilities it offers (checked once)."""

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
    """Posterior draws of the model and what is computed from them once (``L``, ``counts``)."""

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
    """Records of one chunk with ``G`` candidates: ``vals (R, G, q)``, truth ``g0``, ``unknown``,
    ``weight``; ``members`` / ``aligned`` for two-record pairs.
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
