"""Synthesis models, installed as ``bayes_risk.models``.

Every synthesizer speaks one dialect (:class:`BaseSynthesizer`): settings, including a default
``random_seed``, in ``__init__``; ``fit(data, *, schema=None, synthesized=None, records=None,
random_seed=None)`` returns ``self``; ``synthesize(m, *, random_seed=None)`` returns
:class:`bayes_risk.data.SyntheticData`.
Classes are imported lazily (PyMC is loaded only by the modules that need it);
:func:`get_synthesizer` looks a class up by its command-line name.
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

# CLI name -> (module, class). Modules are imported on first use.
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


def list_synthesizers() -> list[str]:
    """Names of the registered synthesizers (the values :func:`get_synthesizer` accepts).

    Every one follows the estimator dialect of :class:`BaseSynthesizer`.
    """
    return sorted(_REGISTRY)


def get_synthesizer(name: str) -> type:
    """Return the synthesizer class registered under a command-line name.

    Raises
    ------
    ValidationError
        For an unknown name (listing the valid ones).
    """
    from bayes_risk.exceptions import ValidationError

    if name not in _REGISTRY:
        raise ValidationError(
            f"synthesizer method must be one of {sorted(_REGISTRY)}. Got {name!r}."
        )
    mod, cls = _REGISTRY[name]
    return getattr(importlib.import_module(mod), cls)


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'bayes_risk.models' has no attribute {name!r}")
