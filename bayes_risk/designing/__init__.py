"""Design of a release: the most useful release of a stated space that passes every verdict
line of the audit (:func:`design`). See :doc:`/user_guide/design`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from bayes_risk._lazy import attach

if TYPE_CHECKING:
    from bayes_risk._search_spec import SearchSpec
    from bayes_risk.designing.result import DesignResult
    from bayes_risk.designing.search import design
    from bayes_risk.designing.space import REMEDIES, DesignSpace, Remedy, register_remedy

_SPACE = "bayes_risk.designing.space"
# imported on first use (PEP 562): the command line declares the space's options from
# DesignSpace (bayes-risk --help imports no numpy)
_NAMES: dict[str, str] = {
    "design": "bayes_risk.designing.search", "DesignResult": "bayes_risk.designing.result",
    "SearchSpec": "bayes_risk._search_spec", "DesignSpace": _SPACE, "Remedy": _SPACE,
    "REMEDIES": _SPACE, "register_remedy": _SPACE,
}

__all__ = ["design", "DesignResult", "DesignSpace", "SearchSpec", "Remedy", "REMEDIES",
           "register_remedy"]


__getattr__, __dir__ = attach(__name__, _NAMES, __all__)
