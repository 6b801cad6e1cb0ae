"""Synthesis models, installed as ``bayes_risk.models``.

Every synthesizer speaks one dialect (:class:`BaseSynthesizer`): settings, including a default
``random_seed``, in ``__init__``; ``fit(data, *, schema=None, synthesized=None, records=None,
random_seed=None)`` returns ``self``; ``synthesize(m, *, random_seed=None)`` returns
:class:`bayes_risk.data.SyntheticData`.
Classes are imported lazily (PyMC is loaded only by the modules that need it);
:func:`get_synthesizer` looks a class up by its command-line name, among the entry points of
the group ``bayes_risk.synthesizers`` (:mod:`bayes_risk.registry`; the built-in models are
registered in the package's ``pyproject.toml``, a model of another distribution in its own).
"""

from __future__ import annotations

import importlib
from typing import Any

from bayes_risk.models.base import (
    BaseSynthesizer,
    check_is_fitted,
    load_model,
    rebuild_synthesizer,
)
from bayes_risk.registry import get_synthesizer, list_synthesizers

# the built-in synthesizers (module, class), exported lazily; their command-line names are the
# entry points of pyproject.toml (tests/test_model_contract.py checks that the two agree)
_REGISTRY: dict[str, tuple[str, str]] = {
    "cart": ("bayes_risk.models.cart", "CARTSynthesizer"),
    "rf": ("bayes_risk.models.random_forest", "RandomForestSynthesizer"),
    "pmm": ("bayes_risk.models.pmm", "SmallCellPMMSynthesizer"),
    "dpmpm": ("bayes_risk.models.dpmpm", "DPMPM"),
    "poisson-mixture": ("bayes_risk.models.poisson_mixture", "PoissonMixture"),
    "regression": ("bayes_risk.models.seqreg", "SequentialRegression"),
}

# plug-in likelihoods of the tree synthesizers for attribute risk (not synthesizers themselves)
_PLUGINS: dict[str, str] = {
    "CARTPlugin": "bayes_risk.models.plugin_cart",
    "RFPlugin": "bayes_risk.models.plugin_rf",
    "plugin_likelihood": "bayes_risk.models.plugin_rf",
}

_LAZY = {**{cls: mod for mod, cls in _REGISTRY.values()}, **_PLUGINS}

__all__ = [
    "BaseSynthesizer",
    "check_is_fitted",
    "get_synthesizer",
    "list_synthesizers",
    "load_model",
    "rebuild_synthesizer",
    *_LAZY,
]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'bayes_risk.models' has no attribute {name!r}")
