"""Options of ``bayes-risk fit`` and ``bayes-risk synthesize`` declared by the tree synthesizers
and PMM (:class:`bayes_risk.models.CARTSynthesizer`,
:class:`~bayes_risk.models.RandomForestSynthesizer`,
:class:`~bayes_risk.models.SmallCellPMMSynthesizer`): one declaration for both commands."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from bayes_risk._specs import cli_fields, cli_option, parse_one_or_pairs
from bayes_risk._tree_spec import CART_TREES, FOREST_TREES, TreeOptions

__all__ = ["CART", "PMM", "RF", "TREES", "tree_options"]

#: options CART and random forests declare alike
_DONOR = cli_option("--donor", "donor draw inside a leaf (cart: default bayes-bootstrap, "
                    "uniform = synthpop; rf numeric columns: default uniform, the forest's "
                    "distribution)", choices=("bayes_bootstrap", "uniform"))
_SMOOTHING = cli_option("--smoothing", "numeric columns: draw from a per-leaf truncated "
                        "Gaussian kernel density of the leaf's donors instead of a donor's "
                        "value (rf: needs --min-samples-leaf 2 or more)", action="store_true")
_N_JOBS = cli_option("--n-jobs", "worker threads (results do not depend on it)", type=int,
                     metavar="N")


def _predictor_matrix(path: str) -> Any:
    """``--predictor-matrix``: a CSV file, the first column naming the rows."""
    import pandas as pd

    from bayes_risk.exceptions import ValidationError

    try:
        return pd.read_csv(path, index_col=0)
    except (OSError, ValueError) as e:
        raise ValidationError(f"--predictor-matrix: cannot read {path!r} as a CSV table ({e}).",
                              code="BAD_OPTION_VALUE") from e


def _tree_fields(takes: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """The options of the tree options ``takes`` (:class:`~bayes_risk.models.TreeOptions`
    fields), as the fields declare them."""
    return {f.name: {"cli": opt} for f, opt in cli_fields(TreeOptions) if f.name in takes}


#: how the trees grow (:class:`~bayes_risk.models.TreeOptions`), then how values are drawn
CART: dict[str, dict[str, Any]] = {
    **_tree_fields(CART_TREES),
    "smoothing": _SMOOTHING,
    "bandwidth": cli_option("--bandwidth", "kernel bandwidth of --smoothing (default: "
                            "Silverman's rule per leaf)", type=float, metavar="H"),
    "donor": _DONOR,
    "unroutable": cli_option("--unroutable", "records meeting an unevaluable split (default "
                             "climb; random-descent = synthpop)",
                             choices=("climb", "random_descent")),
    # the two make the setting `spec` together (registry.model_settings)
    "method_per_column": cli_option(
        "--method-per-column", "a synthpop-style specification with --synthesize as its visit "
        "sequence: one METHOD for every column (synthpop's defaults: the first visited column "
        "is drawn by 'sample', each later one by CART on the columns visited before it only), "
        "or COL=METHOD pairs; METHOD is cart, rf, ctree, sample, norm, normrank, pmm "
        "(numeric), logreg, polyreg or polr (categorical) (COL=: keep the column, a predictor "
        "of later ones)", nargs="+", metavar="METHOD|COL=METHOD", parse=functools.partial(
            parse_one_or_pairs, option="--method-per-column", what="METHOD", empty=True)),
    "predictor_matrix": cli_option(
        "--predictor-matrix", "synthpop's predictor matrix as a CSV table (first column: the "
        "column predicted; 1: predictor), with a synthpop-style specification",
        metavar="FILE.csv", parse=lambda path: _predictor_matrix(path)),
    "n_jobs": _N_JOBS,
}

RF: dict[str, dict[str, Any]] = {
    **_tree_fields(FOREST_TREES),
    "probabilities": cli_option("--probabilities", "synthesis probabilities from leaf votes or "
                                "leaf counts + Dirichlet prior",
                                choices=("vote", "leaf_dirichlet")),
    "alpha": cli_option("--alpha", "Dirichlet prior count per class (leaf-dirichlet; default 1)",
                        type=float, metavar="A"),
    "visit_sequence": cli_option(
        "--visit-sequence", "order in which the forests visit the --synthesize columns "
        "(default: by decreasing number of replaced records)", nargs="+", metavar="COL"),
    "group_by": cli_option(
        "--group-by", "separate forests per level of a categorical column: one name for every "
        "synthesized column, or COL=GROUP pairs", nargs="+", metavar="COL|COL=GROUP",
        parse=functools.partial(parse_one_or_pairs, option="--group-by", what="GROUP")),
    "donor": _DONOR,
    "smoothing": _SMOOTHING,
    "n_jobs": _N_JOBS,
}

PMM: dict[str, dict[str, Any]] = {
    "identifying": cli_option("--identifying", "identifying variables defining the cells "
                              "(required with --method pmm)", nargs="+", metavar="COL"),
    "threshold": cli_option("--threshold", "cells with count <= N are sensitive (default 5)",
                            type=int, metavar="N"),
    "tie": cli_option("--tie", "tie-breaking between equally close donors",
                      choices=("random", "first")),
}

#: the models whose options ``synthesize`` takes (the others are fitted by MCMC: ``fit``)
TREES: tuple[tuple[str, dict[str, dict[str, Any]]], ...] = (("cart", CART), ("rf", RF),
                                                             ("pmm", PMM))


#: the options that fix what is synthesized in which order: not of 'orders', which compares
#: the visit orders it is given
_ORDERING = ("--visit-sequence", "--method-per-column", "--predictor-matrix")


def tree_options(*, orders: bool = False) -> dict[str, dict[str, Any]]:
    """The options of the models of :data:`TREES` as ``synthesize`` takes them (models declaring
    the same flag sharing one option); ``orders``: those of the sequential models (CART and random
    forests) that ``orders`` takes."""
    from bayes_risk.registry import merge_options

    if not orders:
        return merge_options(TREES)
    return {setting: meta for setting, meta in merge_options(TREES[:2]).items()
            if meta["cli"].flag not in _ORDERING}
