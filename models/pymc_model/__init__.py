"""Any PyMC model as a synthesizer: :class:`PyMCSynthesizer`."""

from bayes_risk.models.pymc_model.pymc_model import PyMCSynthesizer

__all__ = ["PyMCSynthesizer"]
