"""The Poisson mixtures for counts (:class:`PoissonMixture`)."""

from bayes_risk.models.poisson.largest import LargestValueLikelihood
from bayes_risk.models.poisson.poisson_mixture import PoissonMixture

__all__ = ["LargestValueLikelihood", "PoissonMixture"]
