"""bayes-risk: Bayesian disclosure-risk estimation for synthetic microdata.

The public API, imported lazily: ``import bayes_risk`` stays light and never imports PyMC.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from pathlib import Path
from typing import Any

from bayes_risk._version import __version__


class _SourceTreeModels:
    """Resolve ``bayes_risk.models`` to the checkout's ``models/`` folder when run from the
    source tree, as an install maps it (a bare finder: ``importlib.abc`` slows start-up)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def find_spec(self, fullname, path=None, target=None):  # noqa: D102 - importlib protocol
        if fullname != "bayes_risk.models":
            return None
        return importlib.util.spec_from_file_location(
            fullname, self.folder / "__init__.py", submodule_search_locations=[str(self.folder)])


def _install_source_tree_finder() -> None:
    here = Path(__file__).resolve().parent
    models = here.parent / "models"
    if (here / "models").is_dir() or not (models / "__init__.py").is_file():
        return  # installed layout, or not a checkout
    if not any(isinstance(f, _SourceTreeModels) for f in sys.meta_path):
        sys.meta_path.insert(0, _SourceTreeModels(models))


_install_source_tree_finder()

# name -> module that defines it
_API: dict[str, str] = {
    # data
    "Schema": "bayes_risk.data.schema",
    "ColumnSpec": "bayes_risk.data.schema",
    "infer_schema": "bayes_risk.data.schema",
    "SyntheticData": "bayes_risk.data.synthetic",
    "harmonise_levels": "bayes_risk.data.validate",
    "validate_synthetic": "bayes_risk.data.validate",
    "read_table": "bayes_risk.data.io",
    "read_synthetic": "bayes_risk.data.synthetic",
    "file_labels": "bayes_risk.data.statfiles",
    "make_ce_like": "bayes_risk.data.demo",
    "make_acs_like": "bayes_risk.data.demo",
    # utility
    "combine_scalar": "bayes_risk.utility.combining",
    "combine_multivariate": "bayes_risk.utility.combining",
    "pmse": "bayes_risk.utility.pmse",
    "PropensitySpec": "bayes_risk._utility_specs",
    "ci_overlap": "bayes_risk.utility.overlap",
    "compare_estimates": "bayes_risk.utility.compare",
    "utility_summary": "bayes_risk.utility.summary",
    "table_utility": "bayes_risk.utility.tables",
    "compare_marginals": "bayes_risk.utility.tables",
    "quality_report": "bayes_risk.utility.quality",
    "OverlapSpec": "bayes_risk._utility_specs",
    "compare_visit_orders": "bayes_risk.visit_orders",
    # utility against risk (Hornby & Hu 2021, Figs 8-10)
    "utility_risk_points": "bayes_risk.tradeoff",
    "repeated_syntheses": "bayes_risk.tradeoff",
    "plot_utility_risk": "bayes_risk.tradeoff",
    # identification risk
    "identification_risk": "bayes_risk.identification.api",
    "radius_sweep": "bayes_risk.identification.api",
    "radius_search": "bayes_risk.identification.radius",
    "known_sweep": "bayes_risk.identification.knowledge",
    "LatticeSpec": "bayes_risk._lattice",
    "PosteriorReplicates": "bayes_risk.identification.replicates",
    "MatchSpec": "bayes_risk.identification.specs",
    "PopulationSpec": "bayes_risk.identification.specs",
    # attribute risk
    "attribute_risk": "bayes_risk.attribute.api",
    "EstimatorSpec": "bayes_risk.attribute.specs",
    "ScenarioSpec": "bayes_risk.attribute.specs",
    "attribute_known_sweep": "bayes_risk.attribute.knowledge",
    "known_fraction_curve": "bayes_risk.attribute.known_curve",
    "with_prior": "bayes_risk.attribute.api",
    "prior_sensitivity": "bayes_risk.attribute.api",
    "plot_prior_sensitivity": "bayes_risk.attribute.api",
    "file_summary": "bayes_risk.attribute.file_summary",
    # differential privacy of a release, beside its attribute risk
    "release_privacy": "bayes_risk.privacy",
    "dirichlet_epsilon": "bayes_risk.privacy",
    "ArrayModel": "bayes_risk.models.external",
    "CARTPlugin": "bayes_risk.models.trees.plugins.plugin_cart",
    "RFPlugin": "bayes_risk.models.trees.plugins.plugin_rf",
    # membership risk
    "membership_risk": "bayes_risk.membership.api",
    "AttackSpec": "bayes_risk.membership.specs",
    "RatioSpec": "bayes_risk.membership.specs",
    # singling-out, linkability and inference attacks (anonymeter)
    "singling_out_risk": "bayes_risk.attacks.singling_out",
    "linkability_risk": "bayes_risk.attacks.linkability",
    "inference_risk": "bayes_risk.attacks.inference",
    "PredicateSpec": "bayes_risk._attack_specs",
    "GuessSpec": "bayes_risk._attack_specs",
    # empirical disclosure measures (synthpop)
    "disclosure_measures": "bayes_risk.disclosure.measures",
    "ExclusionSpec": "bayes_risk.disclosure.specs",
    "replicated_uniques": "bayes_risk.disclosure.measures",
    "differencing_check": "bayes_risk.disclosure.differencing",
    # sdcMicro's risk of the original on its keys (the release-independent baseline)
    "original_risk": "bayes_risk.disclosure.original_risk",
    # synthpop's post-processing of a release (a remedy, audited again)
    "sdc": "bayes_risk.disclosure.sdc",
    # sdcMicro's remedies of a release (PRAM, local suppression, MDAV, noise; audited again)
    "sdcmicro": "bayes_risk.disclosure.sdcmicro",
    "SdcMicroSpec": "bayes_risk.disclosure.specs",
    # results
    "RiskResult": "bayes_risk.results",
    "Summary": "bayes_risk.results",
    "ResultWarning": "bayes_risk.results",
    "AttributeRiskResult": "bayes_risk.results",
    "IdentificationResult": "bayes_risk.results",
    "RadiusSweepResult": "bayes_risk.results",
    "MembershipRiskResult": "bayes_risk.results",
    "SinglingOutResult": "bayes_risk.results",
    "LinkabilityResult": "bayes_risk.results",
    "InferenceResult": "bayes_risk.results",
    "KnowledgeSweepResult": "bayes_risk.results",
    "PMSEResult": "bayes_risk.results",
    "UtilitySummary": "bayes_risk.results",
    "DisclosureMeasures": "bayes_risk.results",
    "OriginalRisk": "bayes_risk.results",
    "DifferencingResult": "bayes_risk.results",
    "VisitOrderComparison": "bayes_risk.results",
    # the memory a run may use (``--memory`` on the command line)
    "memory_limit": "bayes_risk._memory",
    # audit: every measure on one release, one report
    "audit": "bayes_risk.auditing",
    "compare_audits": "bayes_risk.auditing.compare",
    "AuditResult": "bayes_risk.auditing.result",
    "AuditSettings": "bayes_risk.auditing.settings",
    # design: the most useful release of a space that passes every verdict line
    "design": "bayes_risk.designing",
    "DesignSpace": "bayes_risk.designing",
    "SearchSpec": "bayes_risk.designing",
    "DesignResult": "bayes_risk.designing",
    "Thresholds": "bayes_risk.auditing.thresholds",
    # the model contract (docs: Adding a model)
    "Capabilities": "bayes_risk.contract",
    "ModelInfo": "bayes_risk.contract",
    "RiskModel": "bayes_risk.contract",
    "SupportsPersistence": "bayes_risk.contract",
    "available_if": "bayes_risk.contract",
    "capabilities": "bayes_risk.contract",
    # exceptions
    "BayesRiskError": "bayes_risk.exceptions",
    "SchemaError": "bayes_risk.exceptions",
    "ValidationError": "bayes_risk.exceptions",
    "NotFittedError": "bayes_risk.exceptions",
    "BayesRiskWarning": "bayes_risk.exceptions",
    "ImportanceSamplingWarning": "bayes_risk.exceptions",
    "ConvergenceWarning": "bayes_risk.exceptions"}

__all__ = ["__version__", *_API]


def __getattr__(name: str) -> Any:
    if name in _API:
        return getattr(importlib.import_module(_API[name]), name)
    raise AttributeError(f"module 'bayes_risk' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)
