"""Plug-in likelihoods of the tree synthesizers for attribute risk (not synthesizers)."""

from bayes_risk.models.trees.plugins.plugin_cart import CARTPlugin
from bayes_risk.models.trees.plugins.plugin_rf import (
    RFPlugin,
    plugin_likelihood,
    release_likelihood,
)

__all__ = ["CARTPlugin", "RFPlugin", "plugin_likelihood", "release_likelihood"]
