"""Exception and warning classes of bayes-risk.

Every error a user can provoke with bad input is a :class:`BayesRiskError`; the message names the
column, value or argument and says what was expected. Machine-readable codes (e.g.
``"US_COLUMNS_DIFFER"``) are carried in ``.code``.
"""

from __future__ import annotations

import os

#: ``warnings.warn(..., skip_file_prefixes=CALLER)`` attributes a warning to the first frame
#: outside bayes-risk (the user's line), whatever the call depth inside the package
CALLER: tuple[str, ...] = (os.path.dirname(os.path.abspath(__file__)) + os.sep,)

__all__ = [
    "BayesRiskError",
    "SchemaError",
    "ValidationError",
    "NotFittedError",
    "NotSupportedError",
    "BayesRiskWarning",
    "ImportanceSamplingWarning",
    "ConvergenceWarning",
    "DataWarning",
    "BayesRiskFutureWarning",
    "CALLER",
]


class BayesRiskError(Exception):
    """Base class of all bayes-risk errors.

    Parameters
    ----------
    message : str
        What went wrong, naming the column/value/argument and what was expected.
    code : str, optional
        Machine-readable code, e.g. ``"US_COLUMNS_DIFFER"``.
    """

    def __init__(self, message: str, code: str | None = None) -> None:
        super().__init__(message)
        self.code = code


class SchemaError(BayesRiskError, ValueError):
    """A table does not fit its schema: missing/extra column, NaN, wrong dtype, unknown level."""


class ValidationError(BayesRiskError, ValueError):
    """An argument has an invalid value (wrong option, out of range, inconsistent settings)."""


class NotFittedError(BayesRiskError, ValueError, AttributeError):
    """A model or synthesizer was used before ``fit``."""


class NotSupportedError(BayesRiskError, NotImplementedError):
    """A valid request the package does not support (yet) for this model or scenario; the
    message names the alternative."""


class BayesRiskWarning(UserWarning):
    """Base class of bayes-risk warnings.

    Parameters
    ----------
    message : str
        What deserves attention and what to do about it.
    code : str, optional
        Machine-readable code, e.g. ``"RHAT_HIGH"``; recorded in output files.
    """

    def __init__(self, message: str = "", code: str | None = None) -> None:
        super().__init__(message)
        self.code = code


class ImportanceSamplingWarning(BayesRiskWarning):
    """Importance-sampling estimate is unreliable (low ESS, high Pareto k-hat, dominated sum)."""


class ConvergenceWarning(BayesRiskWarning):
    """MCMC or an iterative fit (IRLS, IPF) did not converge."""


class DataWarning(BayesRiskWarning):
    """Something in the data deserves attention (renormalised prior, empty level, ...)."""


class BayesRiskFutureWarning(BayesRiskWarning, FutureWarning):
    """A call form that still works in this release and will stop working in a later one.

    The message gives the form to use instead. Also a :class:`FutureWarning`, so filters on
    either class apply.
    """
