"""Tree synthesizers: sequential CART, random forests and small-cell PMM.

``cart.py``, ``random_forest.py`` and ``pmm.py`` hold one class each, on the template of
``base`` (the fitted table, saving, loading, the fit helpers they share); ``seqtree`` (the
sequential tree), ``cart_fit``, ``cart_leaf`` / ``cart_polya`` (leaf draws), ``cart_synthesis``,
``missing`` (missing-value routing), ``route`` and ``io`` / ``cart_io`` / ``rf_io`` (saving) are
their helpers. The plug-in likelihoods
of the tree synthesizers for attribute risk are in :mod:`bayes_risk.models.trees.plugins`.
"""

from bayes_risk.models.trees.cart import CARTSynthesizer
from bayes_risk.models.trees.pmm import SmallCellPMMSynthesizer
from bayes_risk.models.trees.random_forest import RandomForestSynthesizer

__all__ = ["CARTSynthesizer", "RandomForestSynthesizer", "SmallCellPMMSynthesizer"]
