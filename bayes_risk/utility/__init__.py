"""Utility measures of synthetic data (:doc:`/methods/utility`): combining rules
(:func:`combine_scalar`, :func:`combine_multivariate`), :func:`pmse`, :func:`ci_overlap`,
:func:`std_coef_diff`, :func:`compare_estimates`, :func:`table_utility` and
:func:`compare_marginals` (synthpop's ``utility.tables`` and ``compare()``),
:func:`quality_report` (SDMetrics' quality report) and
:func:`utility_summary` (what ``bayes-risk utility`` writes).
"""

# Imported here, not on first use: the module ``pmse`` shares its name with the function, and
# a lazy name would be replaced by the module as soon as anything imports
# ``bayes_risk.utility.pmse``. The measures that only read their inputs through
# ``bayes_risk.utility._inputs`` (disclosure, original risk, attacks) still pay no SciPy: its
# special functions are imported where they are used (issue 69: start-up).
from bayes_risk.utility.combining import (
    CombinedMultivariate,
    CombinedScalar,
    combine_multivariate,
    combine_scalar,
)
from bayes_risk.utility.compare import compare_estimates
from bayes_risk.utility.overlap import CoefDiffResult, OverlapResult, ci_overlap, std_coef_diff
from bayes_risk.utility.pmse import PMSEResult, PropensitySpec, pmse, pmse_null_moments
from bayes_risk.utility.quality import QualityReport, quality_report
from bayes_risk.utility.summary import OverlapSpec, UtilitySummary, utility_summary
from bayes_risk.utility.tables import TableUtility, compare_marginals, table_utility

__all__ = ["combine_scalar", "combine_multivariate", "CombinedScalar", "CombinedMultivariate",
           "pmse", "PropensitySpec", "pmse_null_moments", "PMSEResult", "ci_overlap",
           "std_coef_diff", "OverlapResult", "CoefDiffResult", "compare_estimates",
           "utility_summary", "OverlapSpec", "UtilitySummary", "table_utility",
           "compare_marginals", "TableUtility", "quality_report", "QualityReport"]
