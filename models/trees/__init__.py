"""Tree synthesizers: sequential CART, random forests and small-cell PMM."""

from bayes_risk.models.trees.cart import CARTSynthesizer
from bayes_risk.models.trees.pmm import SmallCellPMMSynthesizer
from bayes_risk.models.trees.random_forest import RandomForestSynthesizer
from bayes_risk.models.trees.spec import SynthesisSpec

__all__ = ["CARTSynthesizer", "RandomForestSynthesizer", "SmallCellPMMSynthesizer",
           "SynthesisSpec"]
