"""Design of a release: the most useful release of a stated space that passes every verdict
line of the audit (:func:`design`). See :doc:`/user_guide/design`."""

from bayes_risk._search_spec import SearchSpec
from bayes_risk.designing.result import DesignResult
from bayes_risk.designing.search import design
from bayes_risk.designing.space import REMEDIES, DesignSpace, Remedy, register_remedy

__all__ = ["design", "DesignResult", "DesignSpace", "SearchSpec", "Remedy", "REMEDIES",
           "register_remedy"]
