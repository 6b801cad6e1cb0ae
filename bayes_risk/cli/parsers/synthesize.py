"""Arguments of ``bayes-risk synthesize`` (run: :mod:`bayes_risk.cli.synthesize`)."""

from __future__ import annotations

import argparse

from bayes_risk.cli._common import (
    add_format_argument,
    add_model_function_argument,
    add_out_argument,
    add_quiet_argument,
    add_seed_argument,
    add_type_arguments,
)
from bayes_risk.cli.parsers import Handler, add_argument_options
from bayes_risk.cli.parsers.fit import add_model_options
from bayes_risk.fit_options.trees import TREES, tree_options

__all__ = ["add_parser"]

#: the library's fit of a synthesizer to ORIGINAL, whose parameters declare their options
_FIT = "bayes_risk.models.fitting:fit_synthesizer"

_EPILOG = """\
examples:
  bayes-risk synthesize CEdata.csv --method cart --synthesize Tenure Expenditure Income \\
      --categorical Urban Marital Tenure -m 20 --random-seed 1 --out syn_cart
  bayes-risk synthesize CEdata.csv --method cart --synthesize Tenure Expenditure Income \\
      --categorical Urban Marital Tenure --method-per-column cart --donor uniform \\
      --unroutable random-descent --out syn_synthpop   # synthpop's syn(visit.sequence = ...)
  bayes-risk synthesize acs.csv --method rf --synthesize SEX RACE --categorical SEX RACE \\
      --probabilities leaf-dirichlet --alpha 1 --out syn_rf
  bayes-risk synthesize CEdata.csv --method rf --synthesize Tenure Income \\
      --categorical Urban Marital Tenure --oob-only --min-samples-leaf 5 --out syn_rf_numeric
  bayes-risk synthesize survey.csv --method pmm --identifying AGE EDU PRO \\
      --ordinal AGE EDU PRO --threshold 5 --out syn_pmm
  bayes-risk synthesize --model dpmpm_fit -m 5 --random-seed 2 --out syn_dpmpm
  bayes-risk synthesize survey.dta --method cart --synthesize income --format dta --out syn_dta
  bayes-risk synthesize census.csv --method cart --synthesize MARST RACESING \
      --categorical SEX AGE MARST RACESING --populations 5 --sample-fraction 0.2 --out syn_sws
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
    add_model_function_argument(p)
    # no argparse choices for --method: any registered synthesizer is accepted
    # (bayes_risk.registry), and an unknown name gets the registry's error listing them
    add_argument_options(p, _FIT, fields=("method", "synthesized"))
    add_type_arguments(p, fits=True)
    add_argument_options(p, _FIT, fields=("m",))
    add_seed_argument(p)
    add_argument_options(p, _FIT, fields=("records",))
    # the model-specific options (not given: the model's default), declared once for 'fit' and
    # 'synthesize' by the models; each reaches the model whose __init__ takes its setting
    add_model_options(p, tree_options(), ", ".join(name for name, _ in TREES))
    g = p.add_argument_group(
        "sampling with synthesis (Drechsler & Reiter 2010)",
        "ORIGINAL is a census: it is synthesized --populations times (a partial synthesis) and "
        "one simple random sample of --sample-fraction of its units is released from each "
        "synthetic population, the same units in every dataset; with --model DIR, ORIGINAL is "
        "the census the model was fitted to. The manifest records the design and the units "
        "drawn (it is the agency's). Measure it with the census as the original: identification "
        "takes every census unit as a target whose membership the intruder does not know, the "
        "utility applies the sampling-with-synthesis combining rules")
    add_argument_options(g, "bayes_risk.models.populations:sampling_with_synthesis")
    p.add_argument("--csv", action="store_true", help="also write CSV copies of the datasets")
    add_format_argument(p)
    add_quiet_argument(p)
    add_out_argument(p, "SyntheticData folder: syn_001.parquet (or .sav, .dta, ... by --format) "
                     "... and manifest.json")
    p.set_defaults(handler=Handler("bayes_risk.cli.synthesize"))
    return p
