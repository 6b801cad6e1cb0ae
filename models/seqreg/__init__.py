"""Sequential regression synthesis (one GLM per column, conditional on the earlier columns)."""

from bayes_risk.models.seqreg.seqreg import SequentialRegression, default_family

__all__ = ["SequentialRegression", "default_family"]
