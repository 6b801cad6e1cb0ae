"""The Poisson mixture for counts (Hu, Reiter and Wang 2014 style Poisson mixtures).

:class:`PoissonMixture` (``poisson_mixture.py``) calls the module-level helpers of ``fit``,
``posterior`` (checks of a given posterior, convergence quantities), ``synthesis``, ``loglik``,
``largest`` (largest-value likelihood), ``weak`` (weak-intruder likelihood) and ``kernels``
(numba kernels).
"""

from bayes_risk.models.poisson.largest import LargestValueLikelihood
from bayes_risk.models.poisson.poisson_mixture import PoissonMixture

__all__ = ["LargestValueLikelihood", "PoissonMixture"]
