"""The DPMPM latent-class model for categorical data (Si and Reiter 2013).

:class:`DPMPM` (``dpmpm.py``) builds its fitted state (``state``: the arrays of the draws) and
passes it to the module-level functions of its sibling modules: ``coding`` (category codes and
synthesis), ``fit`` (the PyMC model and the fitted posterior), ``loglik`` (record and dataset
log-likelihoods), ``kernels`` (numba kernels), ``step`` / ``labels`` / ``splitmerge`` (the Gibbs
step and its label moves), ``run`` (the automatic run), ``zeros`` / ``zeros_loglik``
(structural zeros).
"""

from bayes_risk.models.dpmpm.dpmpm import DPMPM

__all__ = ["DPMPM"]
