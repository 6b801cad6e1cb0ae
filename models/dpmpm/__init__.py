"""The DPMPM latent-class model for categorical data (Si and Reiter 2013): :class:`DPMPM` and the
modules of its fitted state, likelihoods, numba kernels, Gibbs step and structural zeros.
"""

from bayes_risk.models.dpmpm.dpmpm import DPMPM

__all__ = ["DPMPM"]
