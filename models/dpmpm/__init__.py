"""The DPMPM latent-class model for categorical data (Si and Reiter 2013): :class:`DPMPM`."""

from bayes_risk.models.dpmpm.dpmpm import DPMPM

__all__ = ["DPMPM"]
