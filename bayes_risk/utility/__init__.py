"""Utility measures of synthetic data (methods, Utility measures).

* :func:`combine_scalar` — combining rules of the release's generation scheme (partial: Reiter
  2003; full synthesis of the same units: Raab, Nowok & Dibben 2016; samples from synthetic
  populations: Raghunathan, Reiter & Rubin 2003); :func:`combine_multivariate` — the Wald test
  of several estimands under the same scheme (Reiter 2003; Raab, Nowok & Dibben 2016; Reiter
  2005);
* :func:`pmse` — propensity-score mean squared error with its null (theory, permutation, pairs);
* :func:`ci_overlap`, :func:`std_coef_diff` — interval overlap and standardised differences;
* :func:`compare_estimates` — a statsmodels formula on the original vs. combined synthetic fits;
* :func:`utility_summary` — everything ``bayes-risk utility`` writes.
"""

from bayes_risk.utility.combining import (
    CombinedMultivariate,
    CombinedScalar,
    combine_multivariate,
    combine_scalar,
)
from bayes_risk.utility.compare import compare_estimates
from bayes_risk.utility.overlap import CoefDiffResult, OverlapResult, ci_overlap, std_coef_diff
from bayes_risk.utility.pmse import PMSEResult, PropensitySpec, pmse, pmse_null_moments
from bayes_risk.utility.summary import OverlapSpec, UtilitySummary, utility_summary

__all__ = [
    "combine_scalar",
    "combine_multivariate",
    "CombinedScalar",
    "CombinedMultivariate",
    "pmse",
    "PropensitySpec",
    "pmse_null_moments",
    "PMSEResult",
    "ci_overlap",
    "std_coef_diff",
    "OverlapResult",
    "CoefDiffResult",
    "compare_estimates",
    "utility_summary",
    "OverlapSpec",
    "UtilitySummary",
]
