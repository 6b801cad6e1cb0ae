"""Arguments of ``bayes-risk synthesize`` (run: :mod:`bayes_risk.cli.synthesize`)."""

from __future__ import annotations

import argparse

from bayes_risk._tree_spec import TREE_FIELDS
from bayes_risk.cli._common import (
    RECORDS_HELP,
    add_format_argument,
    add_out_argument,
    add_quiet_argument,
    add_seed_argument,
    add_type_arguments,
)
from bayes_risk.cli.options.trees import CART_TREES_OPTIONS, FOREST_TREES_OPTIONS
from bayes_risk.cli.parsers import Handler

__all__ = ["add_parser", "MODEL_SETTINGS", "SYNTHESIS_OPTIONS"]

#: the model-specific options, by ``argparse`` destination: each given one is passed to the
#: model as the ``__init__`` setting of the same name, and refused for a model without that
#: setting (cli.synthesize); the groups below say which built-in model takes which
MODEL_SETTINGS: tuple[str, ...] = (
    *TREE_FIELDS,
    "smoothing", "bandwidth", "donor", "unroutable", "method_per_column", "predictor_matrix",
    "probabilities", "alpha", "visit_sequence", "group_by",
    "identifying", "threshold", "tie",
    "n_jobs",
)

#: the options that together make a model's ``spec`` setting (a synthpop-style specification,
#: :class:`~bayes_risk.models.SynthesisSpec`), with ``--synthesize`` as its visit sequence
SYNTHESIS_OPTIONS: tuple[str, ...] = ("method_per_column", "predictor_matrix")


_EPILOG = """\
examples:
  bayes-risk synthesize CEdata.csv --method cart --synthesize Tenure Expenditure Income \\
      --categorical Urban Marital Tenure -m 20 --random-seed 1 --out syn_cart
  bayes-risk synthesize CEdata.csv --method cart --synthesize Tenure Expenditure Income \
      --categorical Urban Marital Tenure --method-per-column cart --donor uniform \
      --unroutable random-descent --out syn_synthpop   # synthpop's syn(visit.sequence = ...)
  bayes-risk synthesize acs.csv --method rf --synthesize SEX RACE --categorical SEX RACE \\
      --probabilities leaf-dirichlet --alpha 1 --out syn_rf
  bayes-risk synthesize CEdata.csv --method rf --synthesize Tenure Income \
      --categorical Urban Marital Tenure --oob-only --min-samples-leaf 5 --out syn_rf_numeric
  bayes-risk synthesize survey.csv --method pmm --identifying AGE EDU PRO \\
      --ordinal AGE EDU PRO --threshold 5 --out syn_pmm
  bayes-risk synthesize --model dpmpm_fit -m 5 --random-seed 2 --out syn_dpmpm
  bayes-risk synthesize survey.dta --method cart --synthesize income --format dta --out syn_dta
"""


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Register the ``synthesize`` sub-command."""
    p = subparsers.add_parser("synthesize",
                              help="create m synthetic datasets (CART, random forest, PMM, or a "
                              "saved Bayesian model)",
                              description="Create m partially synthetic datasets from a "
                              "confidential table with a non-parametric synthesizer (sequential "
                              "CART with Bayesian bootstrap, random forests, small-cell "
                              "predictive mean matching) or any synthesizer registered in the "
                              "entry-point group bayes_risk.synthesizers, or "
                              "from a model saved by 'bayes-risk fit' (--model DIR). The model "
                              "options below reach the model whose settings have their names. "
                              "Writes one Parquet file per dataset (or --format: CSV, SPSS, "
                              "Stata or SAS transport, with the original file's value labels) "
                              "and a manifest.json (provenance) to --out, atomically.",
                              epilog=_EPILOG,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("original", nargs="?", metavar="ORIGINAL",
                   help="confidential table (.csv, .parquet, .sas7bdat, .xpt, .dta, .sav or "
                   ".zsav); omit with --model")
    p.add_argument("--model", metavar="DIR",
                   help="folder of a fitted model saved by 'bayes-risk fit' (instead of ORIGINAL)")
    # no argparse choices: any registered synthesizer is accepted (bayes_risk.registry), and an
    # unknown name gets the registry's error listing the registered ones
    p.add_argument("--method", default=None, metavar="NAME",
                   help="synthesizer (required with ORIGINAL): cart, rf, pmm (Hawala's small-cell "
                        "PMM of sensitive cells; synthpop's per-column 'pmm' is a "
                        "--method-per-column method), or a model "
                        "registered in the entry-point group bayes_risk.synthesizers (docs: "
                        "'Adding a model'); Bayesian models are fitted with 'bayes-risk fit' "
                        "and synthesized with --model")
    p.add_argument("--synthesize", nargs="+", metavar="COL", default=None,
                   help="columns to synthesize, in visit order (pmm: default all --identifying)")
    add_type_arguments(p, fits=True)
    p.add_argument("-m", type=int, default=None, metavar="M",
                   help="number of synthetic datasets (default: the method's, 20 for cart/rf, "
                   "1 for pmm, 5 for others and with --model)")
    add_seed_argument(p)
    p.add_argument("--records", metavar="RANGE|FILE", default=None,
                   help="partial synthesis of selected records: only they get synthetic "
                   "values, the other records keep all original values (pmm: the recipients; "
                   f"default the records of sensitive cells); {RECORDS_HELP}")
    # the model-specific options: "not given" (None) means the model's default; a given option
    # reaches the model whose __init__ takes the setting of its name (cli.synthesize), and is
    # refused for any other
    g = p.add_argument_group("trees (--method cart, rf)",
                             "How the trees are grown (bayes_risk.models.TreeOptions).")
    for model, options in (("cart", CART_TREES_OPTIONS), ("rf", FOREST_TREES_OPTIONS)):
        for o in options:  # as 'fit' declares them
            g.add_argument(o.flag, default=None, help=f"{model}: {o.help}", **o.kwargs)
    g = p.add_argument_group("CART (--method cart)")
    g.add_argument("--smoothing", action="store_true", default=None,
                   help="per-leaf truncated Gaussian kernel smoothing of numeric columns "
                   "(cart; rf too, with --min-samples-leaf 2 or more)")
    g.add_argument("--bandwidth", type=float, default=None, metavar="H",
                   help="kernel bandwidth (default: Silverman's rule per leaf)")
    g.add_argument("--donor", choices=["bayes-bootstrap", "uniform"], default=None,
                   help="donor draw inside a leaf (cart: default bayes-bootstrap, uniform = "
                   "synthpop; rf numeric columns: default uniform, the forest's distribution)")
    g.add_argument("--unroutable", choices=["climb", "random-descent"], default=None,
                   help="records meeting an unevaluable split (default climb; random-descent = "
                   "synthpop)")
    g.add_argument("--method-per-column", nargs="+", default=None, metavar="METHOD|COL=METHOD",
                   help="a synthpop-style specification with --synthesize as its visit sequence: "
                        "one METHOD for every column (synthpop's defaults: the first visited "
                        "column is drawn by 'sample', each later one by CART on the columns "
                        "visited before it only), or COL=METHOD pairs; METHOD is cart, rf, ctree, "
                        "sample, "
                        "norm, normrank, pmm (numeric), logreg, polyreg or polr (categorical) "
                        "(COL=: keep the column, a predictor of later ones)")
    g.add_argument("--predictor-matrix", default=None, metavar="FILE.csv",
                   help="synthpop's predictor matrix as a CSV table (first column: the column "
                        "predicted; 1: predictor), with a synthpop-style specification")
    g = p.add_argument_group("random forest (--method rf)")
    g.add_argument("--probabilities", choices=["vote", "leaf-dirichlet"], default=None,
                   help="synthesis probabilities from leaf votes or leaf counts + Dirichlet prior")
    g.add_argument("--alpha", type=float, default=None, metavar="A",
                   help="Dirichlet prior count per class (leaf-dirichlet; default 1)")
    g.add_argument("--visit-sequence", nargs="+", default=None, metavar="COL",
                   help="order in which the forests visit the --synthesize columns (default: "
                        "by decreasing number of replaced records)")
    g.add_argument("--group-by", nargs="+", default=None, metavar="COL|COL=GROUP",
                   help="separate forests per level of a categorical column: one name for every "
                        "synthesized column, or COL=GROUP pairs")
    g = p.add_argument_group("small-cell PMM (--method pmm)")
    g.add_argument("--identifying", nargs="+", metavar="COL", default=None,
                   help="identifying variables defining the cells")
    g.add_argument("--threshold", type=int, default=None, metavar="N",
                   help="cells with count <= N are sensitive (default 5)")
    g.add_argument("--tie", choices=["random", "first"], default=None,
                   help="tie-breaking between equally close donors")
    p.add_argument("--n-jobs", type=int, default=None, metavar="N",
                   help="worker threads (results do not depend on it)")
    p.add_argument("--csv", action="store_true", help="also write CSV copies of the datasets")
    add_format_argument(p)
    add_quiet_argument(p)
    add_out_argument(p, "SyntheticData folder: syn_001.parquet (or .sav, .dta, ... by --format) "
                     "... and manifest.json")
    p.set_defaults(handler=Handler("bayes_risk.cli.synthesize"))
    return p
