"""Options of ``bayes-risk fit`` and ``bayes-risk synthesize`` declared by the tree synthesizers
and PMM (:class:`bayes_risk.models.CARTSynthesizer`,
:class:`~bayes_risk.models.RandomForestSynthesizer`,
:class:`~bayes_risk.models.SmallCellPMMSynthesizer`): one declaration for both commands."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bayes_risk._specs import cli_fields
from bayes_risk._tree_spec import CART_TREES, FOREST_TREES, TreeOptions
from bayes_risk.registry import ModelOption

__all__ = ["CART", "PMM", "RF", "TREES", "tree_options"]


def underscore(value: str) -> str:
    """An option's value as the setting spells it (``bayes-bootstrap`` → ``bayes_bootstrap``)."""
    return value.replace("-", "_")


def _choices(*values: str) -> dict[str, object]:
    # shown and taken with '-' (as synthpop's words), passed as the setting spells them
    return {"type": underscore, "choices": list(values),
            "metavar": "{" + ",".join(v.replace("_", "-") for v in values) + "}"}


#: options CART and random forests declare alike
_DONOR = ModelOption("--donor", "donor",
                     "donor draw inside a leaf (cart: default bayes-bootstrap, uniform = "
                     "synthpop; rf numeric columns: default uniform, the forest's distribution)",
                     _choices("bayes_bootstrap", "uniform"))
_SMOOTHING = ModelOption("--smoothing", "smoothing",
                         "numeric columns: draw from a per-leaf truncated Gaussian kernel "
                         "density of the leaf's donors instead of a donor's value (rf: needs "
                         "--min-samples-leaf 2 or more)", {"action": "store_true"})
_N_JOBS = ModelOption("--n-jobs", "n_jobs", "worker threads (results do not depend on it)",
                      {"type": int, "metavar": "N"})

def _tree_options(takes: Mapping[str, Any]) -> tuple[ModelOption, ...]:
    """The options of the tree options ``takes`` (:class:`~bayes_risk.models.TreeOptions`
    fields), as the fields declare them."""
    return tuple(ModelOption(opt.flag, f.name, opt.help, opt.argparse_keywords())
                 for f, opt in cli_fields(TreeOptions) if f.name in takes)


#: how the trees grow (:class:`~bayes_risk.models.TreeOptions`), then how values are drawn
CART: tuple[ModelOption, ...] = (
    *_tree_options(CART_TREES),
    _SMOOTHING,
    ModelOption("--bandwidth", "bandwidth",
                "kernel bandwidth of --smoothing (default: Silverman's rule per leaf)",
                {"type": float, "metavar": "H"}),
    _DONOR,
    ModelOption("--unroutable", "unroutable",
                "records meeting an unevaluable split (default climb; random-descent = synthpop)",
                _choices("climb", "random_descent")),
    # the two make the setting `spec` together (registry.model_settings)
    ModelOption("--method-per-column", "method_per_column",
                "a synthpop-style specification with --synthesize as its visit sequence: one "
                "METHOD for every column (synthpop's defaults: the first visited column is drawn "
                "by 'sample', each later one by CART on the columns visited before it only), or "
                "COL=METHOD pairs; METHOD is cart, rf, ctree, sample, norm, normrank, pmm "
                "(numeric), logreg, polyreg or polr (categorical) (COL=: keep the column, a "
                "predictor of later ones)", {"nargs": "+", "metavar": "METHOD|COL=METHOD"}),
    ModelOption("--predictor-matrix", "predictor_matrix",
                "synthpop's predictor matrix as a CSV table (first column: the column "
                "predicted; 1: predictor), with a synthpop-style specification",
                {"metavar": "FILE.csv"}),
    _N_JOBS,
)

RF: tuple[ModelOption, ...] = (
    *_tree_options(FOREST_TREES),
    ModelOption("--probabilities", "probabilities",
                "synthesis probabilities from leaf votes or leaf counts + Dirichlet prior",
                _choices("vote", "leaf_dirichlet")),
    ModelOption("--alpha", "alpha", "Dirichlet prior count per class (leaf-dirichlet; default 1)",
                {"type": float, "metavar": "A"}),
    ModelOption("--visit-sequence", "visit_sequence",
                "order in which the forests visit the --synthesize columns (default: by "
                "decreasing number of replaced records)", {"nargs": "+", "metavar": "COL"}),
    ModelOption("--group-by", "group_by",
                "separate forests per level of a categorical column: one name for every "
                "synthesized column, or COL=GROUP pairs",
                {"nargs": "+", "metavar": "COL|COL=GROUP"}),
    _DONOR,
    _SMOOTHING,
    _N_JOBS,
)

PMM: tuple[ModelOption, ...] = (
    ModelOption("--identifying", "identifying",
                "identifying variables defining the cells (required with --method pmm)",
                {"nargs": "+", "metavar": "COL"}),
    ModelOption("--threshold", "threshold", "cells with count <= N are sensitive (default 5)",
                {"type": int, "metavar": "N"}),
    ModelOption("--tie", "tie", "tie-breaking between equally close donors",
                {"choices": ["random", "first"]}),
)

#: the models whose options ``synthesize`` takes (the others are fitted by MCMC: ``fit``)
TREES: tuple[tuple[str, tuple[ModelOption, ...]], ...] = (("cart", CART), ("rf", RF),
                                                          ("pmm", PMM))


#: the options that fix what is synthesized in which order: not of 'orders', which compares
#: the visit orders it is given
_ORDERING = ("--visit-sequence", "--method-per-column", "--predictor-matrix")


def tree_options(*, orders: bool = False) -> tuple[ModelOption, ...]:
    """The options of the models of :data:`TREES` as ``synthesize`` takes them (models declaring
    the same flag sharing one option); ``orders``: those of the sequential models (CART and random
    forests) that ``orders`` takes."""
    from bayes_risk.registry import merge_options

    if not orders:
        return merge_options(TREES)
    return tuple(o for o in merge_options(TREES[:2]) if o.flag not in _ORDERING)
