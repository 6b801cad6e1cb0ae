"""Utility measures of synthetic data (:doc:`/methods/utility`): combining rules
(:func:`combine_scalar`, :func:`combine_multivariate`), :func:`pmse`, :func:`ci_overlap`,
:func:`std_coef_diff`, :func:`compare_estimates` and :func:`utility_summary` (what
``bayes-risk utility`` writes).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bayes_risk._lazy import attach

if TYPE_CHECKING:
    from bayes_risk.utility.combining import (
        CombinedMultivariate,
        CombinedScalar,
        combine_multivariate,
        combine_scalar,
    )
    from bayes_risk.utility.compare import compare_estimates
    from bayes_risk.utility.overlap import (
        CoefDiffResult,
        OverlapResult,
        ci_overlap,
        std_coef_diff,
    )
    from bayes_risk.utility.pmse import PMSEResult, PropensitySpec, pmse, pmse_null_moments
    from bayes_risk.utility.summary import OverlapSpec, UtilitySummary, utility_summary

# imported on first use (PEP 562): the other measures read their inputs through
# ``bayes_risk.utility._inputs`` and would otherwise pay for SciPy's special functions (the
# combining rules' t quantiles), which they never use (issue 69: start-up)
_NAMES: dict[str, str] = {
    "combine_scalar": "bayes_risk.utility.combining",
    "combine_multivariate": "bayes_risk.utility.combining",
    "CombinedScalar": "bayes_risk.utility.combining",
    "CombinedMultivariate": "bayes_risk.utility.combining",
    "compare_estimates": "bayes_risk.utility.compare",
    "ci_overlap": "bayes_risk.utility.overlap",
    "std_coef_diff": "bayes_risk.utility.overlap",
    "OverlapResult": "bayes_risk.utility.overlap",
    "CoefDiffResult": "bayes_risk.utility.overlap",
    "pmse": "bayes_risk.utility.pmse",
    "PropensitySpec": "bayes_risk.utility.pmse",
    "pmse_null_moments": "bayes_risk.utility.pmse",
    "PMSEResult": "bayes_risk.utility.pmse",
    "utility_summary": "bayes_risk.utility.summary",
    "OverlapSpec": "bayes_risk.utility.summary",
    "UtilitySummary": "bayes_risk.utility.summary",
}

__all__ = ["combine_scalar", "combine_multivariate", "CombinedScalar", "CombinedMultivariate",
           "pmse", "PropensitySpec", "pmse_null_moments", "PMSEResult", "ci_overlap",
           "std_coef_diff", "OverlapResult", "CoefDiffResult", "compare_estimates",
           "utility_summary", "OverlapSpec", "UtilitySummary"]

__getattr__, __dir__ = attach(__name__, _NAMES, __all__)
