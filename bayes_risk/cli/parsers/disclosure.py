"""Arguments of ``bayes-risk disclosure`` (run: :mod:`bayes_risk.cli.disclosure`)."""

from __future__ import annotations

import argparse
from typing import Any

from bayes_risk.cli._common import (
    NO_SEED,
    add_input_arguments,
    add_run_arguments,
    add_type_arguments,
)
from bayes_risk.cli.parsers import add_argument_options, add_spec_options
from bayes_risk.disclosure.specs import DISCLOSURE_ARGUMENTS, ExclusionSpec

__all__ = ["add_parser"]


_EPILOG = """\
examples:
  bayes-risk disclosure CEdata.csv syn/scenario1_syn*.csv --keys Age Urban Marital \\
      --target Income --categorical Urban Marital Tenure --out disc
  bayes-risk disclosure CEdata.csv syn_cart/ --keys Age Urban Marital --target Income \\
      --categorical Urban Marital Tenure --ngroups-target 10 --out disc_grouped

outputs (in --out, written atomically; one row per synthetic dataset, synthpop's names):
  ident.csv               syn, UiO, UiS, UiOiS, repU (percentages)
  attrib.csv              syn, Dorig, Dsyn, iS, DiS, DiSCO, DiSDiO (percentages),
                          max_denom, mean_denom (records per DiSCO key-target cell)
  allCAPs.csv             syn, baseCAPd, CAPd, CAPs, DCAP, TCAP (percentages)
  replicated_uniques.csv  syn and synthpop's replicated.uniques() on the keys and the target:
                          Original, Synthetic, Synthetic uniques in original, Replicated
                          uniques (numbers and percentages)
  summary.json            all of the above, their means over datasets, the original's sample
                          uniques and k-anonymity counts on the keys, per-dataset diagnostics
                          (records over --denom-lim, exclusions), settings and warning codes
"""


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register the ``disclosure`` sub-command."""
    p = subparsers.add_parser("disclosure",
                              help="empirical disclosure measures of synthpop (repU, DiSCO, TCAP, "
                              "...)",
                              description="Compute the identity disclosure measures (UiO, UiS, "
                              "UiOiS, repU), attribute disclosure measures (Dorig, Dsyn, iS, DiS, "
                              "DiSCO, DiSDiO) and correct attribution probabilities (baseCAPd, "
                              "CAPd, CAPs, DCAP, TCAP) of synthpop's disclosure() (Raab, Nowok & "
                              "Dibben, 'Practical privacy metrics for synthetic data'), and "
                              "replicated uniques, for a set of keys (quasi-identifiers) and one "
                              "target, with the original's sample uniques and k-anonymity counts "
                              "on the keys.", epilog=_EPILOG,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    add_input_arguments(p, recoded=True)
    add_type_arguments(p)
    # disclosure_measures' arguments and what its ExclusionSpec leaves out, declared by the library
    add_argument_options(p, DISCLOSURE_ARGUMENTS)
    add_spec_options(p, ExclusionSpec)
    p.add_argument("--differencing", action="store_true",
                   help="also compare the implicates of a partially synthetic release: the "
                   "records whose values differ between them are revealed as the ones selected "
                   "for synthesis (Hawala 2008); writes differencing.json and differencing.csv. "
                   "Alone (without --keys/--target) it runs only this check")
    p.add_argument("--selected", default=None, metavar="FILE",
                   help="with --differencing: the records selected for synthesis, one 0-based "
                   "record number per line (default: the records the release changed)")
    add_run_arguments(p, "bayes_risk.cli.disclosure", "summary.json and one CSV per measure family",
                      seed=NO_SEED, check="the release SYN")
    return p
