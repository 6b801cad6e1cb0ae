"""The typed plan of an identification-risk run (:class:`IdentificationPlan`): what ``prepare``
builds and the ``evaluate`` and ``assemble`` stages read.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import pandas as pd

from bayes_risk.data.schema import Schema
from bayes_risk.exceptions import CALLER, DataWarning
from bayes_risk.identification.matching import MatchRule
from bayes_risk.identification.problem import Prepared

__all__ = [
    "Aggregation",
    "Membership",
    "Fallback",
    "Compat",
    "Strategy",
    "EncodedData",
    "PopulationCounts",
    "ReplicateSource",
    "RunSettings",
    "IdentificationPlan",
    "record_warning",
]

Aggregation = Literal["pooled", "per_dataset"]
Membership = Literal["known", "unknown"]
Fallback = Literal["none", "unsynthesized"]
Compat = Literal["IdentificationRiskCalculation"]
#: ``"always"``, ``"not_if_max"`` or ``("threshold", γ)``
Strategy = str | tuple[str, float]


@dataclass
class EncodedData:
    """Records, replicates and targets encoded for the matching engine (``prep``), with the
    harmonised schema, the labels of targets and records, the exact columns' encoders and
    how a missing known value matches."""

    prep: Prepared
    schema: Schema
    target_ids: np.ndarray | pd.Index  # an index unmaterialised until the result is made
    record_labels: np.ndarray | pd.Index
    exact_encoders: dict[str, Any] = field(default_factory=dict)
    missing_known: str = "any"


@dataclass
class PopulationCounts:
    """Population counts ``F`` ``[N_T, R]`` and ``inv_f`` (``1/F`` or ``E[1/F | f]``) of the
    targets' keys, their source and estimate (all ``None`` for known membership)."""

    F: np.ndarray | None = None
    inv_f: np.ndarray | None = None
    source: str | None = None
    estimate: str | None = None


@dataclass(frozen=True)
class ReplicateSource:
    """Where the ``R`` replicates of the synthesized known columns come from."""

    R: int
    user: bool  # user replicates (e.g. posterior-predictive draws) or the released datasets

    @property
    def label(self) -> str:
        return "user replicates" if self.user else "released datasets"


@dataclass(frozen=True)
class RunSettings:
    """Options of a run, resolved (defaults filled in, compat mode applied)."""

    known_unsynthesized: list[str]
    known_synthesized: list[str]
    aggregation: Aggregation
    membership: Membership
    fallback: Fallback
    strategy: Strategy
    compat: Compat | None
    external_targets: bool = False
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def legacy_T_when_c0(self) -> bool:
        """IdentificationRiskCalculation reports ``T = 1`` for a target without a match."""
        return self.compat is not None


@dataclass
class IdentificationPlan:
    """Everything the evaluate and assemble stages need (built by ``prepare``)."""

    data: EncodedData
    rule: MatchRule
    counts: PopulationCounts
    replicates: ReplicateSource
    settings: RunSettings
    #: warning codes raised while preparing, with their messages
    warnings: dict[str, str] = field(default_factory=dict)

    @property
    def prep(self) -> Prepared:
        return self.data.prep

    def settings_dict(self, rule: MatchRule | None = None) -> dict[str, Any]:
        """Every setting used, JSON-safe (``IdentificationResult.settings``)."""
        st = self.settings
        d: dict[str, Any] = {
            "known_unsynthesized": st.known_unsynthesized,
            "known_synthesized": st.known_synthesized,
            "match_rule": (rule or self.rule).to_dict(),
            "aggregation": st.aggregation,
            "membership": st.membership,
            "fallback": st.fallback,
            "strategy": st.strategy if isinstance(st.strategy, str) else list(st.strategy),
            "population_counts": self.counts.source,
            "population_estimate": self.counts.estimate,
            "compat": st.compat,
            "legacy_T_when_c0": st.legacy_T_when_c0,
            "n_records": self.prep.n,
            "n_targets": self.prep.n_targets,
            "n_replicates": self.replicates.R,
            "replicates": self.replicates.label,
            "targets": "external table" if st.external_targets else "original records",
        }
        d.update(st.extra)
        return d


def record_warning(codes: dict[str, str], code: str, msg: str, cls: type = DataWarning) -> None:
    """Keep ``code: msg`` among a run's warnings and emit it (attributed to the caller)."""
    codes[code] = msg
    warnings.warn(f"{code}: {msg}", cls, skip_file_prefixes=CALLER)
