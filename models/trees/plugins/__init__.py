"""Plug-in likelihoods of the tree synthesizers for attribute risk (not synthesizers).

:class:`CARTPlugin` (``plugin_cart.py``) and :class:`RFPlugin` / :func:`plugin_likelihood`
(``plugin_rf.py``); the node likelihood terms they share are in ``_plugin_terms``.
"""

from bayes_risk.models.trees.plugins.plugin_cart import CARTPlugin
from bayes_risk.models.trees.plugins.plugin_rf import RFPlugin, plugin_likelihood

__all__ = ["CARTPlugin", "RFPlugin", "plugin_likelihood"]
