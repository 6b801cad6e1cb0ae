"""Sequential regression synthesis (one GLM per column, conditional on the earlier columns).

:class:`SequentialRegression` (``seqreg.py``) calls the module-level helpers of ``posterior``
(exact, NUTS and Laplace posteriors), ``draws`` and ``loglik``.
"""

from bayes_risk.models.seqreg.seqreg import SequentialRegression, default_family

__all__ = ["SequentialRegression", "default_family"]
