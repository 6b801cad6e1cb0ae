"""Identification disclosure risk of partially synthetic data (Hu 2019 §4):
:func:`identification_risk`, :func:`radius_sweep` (Hornby & Hu 2021 §4.1),
:func:`radius_search` (the worst case over the intruder's radii) and
:func:`known_sweep` (Hu 2019 §5). See :doc:`/methods/identification`.

The engine runs ``prepare → evaluate(partition of targets) → assemble``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bayes_risk._lazy import attach

if TYPE_CHECKING:
    from bayes_risk._lattice import LatticeSpec
    from bayes_risk.identification.api import (
        IdentificationResult,
        identification_risk,
        radius_sweep,
    )
    from bayes_risk.identification.knowledge import KnowledgeSweepResult, known_sweep
    from bayes_risk.identification.radius import RadiusSweepResult, radius_search
    from bayes_risk.identification.replicates import PosteriorReplicates
    from bayes_risk.identification.specs import MatchSpec, PopulationSpec

# imported on first use (PEP 562): a run without posterior replicates skips their modules
_NAMES: dict[str, str] = {
    "identification_risk": "bayes_risk.identification.api",
    "radius_sweep": "bayes_risk.identification.api",
    "IdentificationResult": "bayes_risk.identification.api",
    "RadiusSweepResult": "bayes_risk.identification.radius",
    "radius_search": "bayes_risk.identification.radius",
    "known_sweep": "bayes_risk.identification.knowledge",
    "KnowledgeSweepResult": "bayes_risk.identification.knowledge",
    "LatticeSpec": "bayes_risk._lattice",
    "PosteriorReplicates": "bayes_risk.identification.replicates",
    "MatchSpec": "bayes_risk.identification.specs",
    "PopulationSpec": "bayes_risk.identification.specs",
}

__all__ = ["identification_risk", "radius_sweep", "radius_search", "known_sweep", "MatchSpec",
           "PopulationSpec", "LatticeSpec",
           "IdentificationResult", "RadiusSweepResult", "KnowledgeSweepResult",
           "PosteriorReplicates"]


__getattr__, __dir__ = attach(__name__, _NAMES, __all__)
