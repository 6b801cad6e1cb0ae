"""Synthesis models, installed as ``bayes_risk.models`` (classes imported lazily); see
:doc:`/user_guide/synthesizers`.
"""

from __future__ import annotations

import importlib
from typing import Any

from bayes_risk.models.base import (
    BaseSynthesizer,
    check_is_fitted,
    load_model,
    rebuild_synthesizer,
    rebuildable_synthesizer,
)
from bayes_risk.registry import get_synthesizer, list_synthesizers

# the classes exported lazily, by the sub-package exporting them
_LAZY = {
    "CARTSynthesizer": "bayes_risk.models.trees",
    "RandomForestSynthesizer": "bayes_risk.models.trees",
    "SmallCellPMMSynthesizer": "bayes_risk.models.trees",
    "SynthesisSpec": "bayes_risk.models.trees",
    "DPMPM": "bayes_risk.models.dpmpm",
    "PoissonMixture": "bayes_risk.models.poisson",
    "SequentialRegression": "bayes_risk.models.seqreg",
    "PyMCSynthesizer": "bayes_risk.models.pymc_model",
    "DPMultinomial": "bayes_risk.models.dp_multinomial",
    # sampling with synthesis: a sample of the census from synthetic populations
    "sampling_with_synthesis": "bayes_risk.models.populations",
    # plug-in likelihoods of the tree synthesizers for attribute risk (not synthesizers)
    "CARTPlugin": "bayes_risk.models.trees.plugins",
    "RFPlugin": "bayes_risk.models.trees.plugins",
    "plugin_likelihood": "bayes_risk.models.trees.plugins",
    "release_likelihood": "bayes_risk.models.trees.plugins",
    "ArrayModel": "bayes_risk.models.external",
    # the sampler settings of the Bayesian synthesizers (their ``sampling=``)
    "Sampling": "bayes_risk.models._bayesian.sampling",
    # how the tree synthesizers grow their trees (their ``trees=``)
    "TreeOptions": "bayes_risk._tree_spec",
}

__all__ = [
    "BaseSynthesizer",
    "check_is_fitted",
    "get_synthesizer",
    "list_synthesizers",
    "load_model",
    "rebuild_synthesizer",
    "rebuildable_synthesizer",
    *_LAZY,
]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'bayes_risk.models' has no attribute {name!r}")
