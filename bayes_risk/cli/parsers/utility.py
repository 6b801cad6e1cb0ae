"""``bayes-risk utility``: its arguments and its run (the runner's row)."""

from __future__ import annotations

import argparse
from typing import Any

from bayes_risk._utility_specs import OverlapSpec, PropensitySpec
from bayes_risk.cli._common import add_input_arguments, add_run_arguments, add_type_arguments
from bayes_risk.cli._runner import Run
from bayes_risk.cli.parsers import add_argument_options, add_spec_options

__all__ = ["add_parser", "RUN"]

#: utility_summary of ORIGINAL and SYN (synthesized: default the release's)
RUN = Run("bayes_risk.utility.summary:utility_summary",
          specs={"propensity": PropensitySpec, "overlap": OverlapSpec},
          reads=("schema", "fresh_seed", "progressbar"),
          tables={"overlap.csv": lambda r: r.overlap,
                  "tables.csv": lambda r: None if r.tables is None else r.tables.tables,
                  "marginals.csv": lambda r: r.marginals,
                  "quality.csv": lambda r: None if r.quality is None else r.quality.shapes,
                  "quality_pairs.csv": lambda r: (None if r.quality is None
                                                   else r.quality.pair_trends),
                  "comparison.csv": lambda r: r.comparison})


_EPILOG = """\
examples:
  bayes-risk utility CEdata.csv syn/scenario1_syn*.csv --categorical Urban Marital Tenure \\
      --max-order 1 --out util_logit
  bayes-risk utility CEdata.csv syn_cart/ --categorical Urban Marital Tenure --pmse cart \\
      --random-seed 1 --out util_cart
  bayes-risk utility CEdata.csv syn_cart/ --categorical Urban Marital Tenure \\
      --formula "Income ~ Age + C(Marital)" "Expenditure ~ Income" --out util_reg

outputs (in --out, written atomically):
  summary.json     pMSE, S_pMSE (ratio to its null expectation), standardised pMSE and k per
                   synthetic dataset and averaged; interval-overlap figures per estimand and
                   per dataset; the synthesized columns (inferred when not given) and settings,
                   among them the combining rules used and why (combining_rules,
                   combining_rules_reason)
  overlap.csv      one row per estimand: original and combined synthetic intervals, overlap
  comparison.csv   (with --formula) the coefficient comparison table
  tables.csv       one row per table of 1 to --table-order columns: synthpop's utility.tables
                   statistics (pMSE, S_pMSE, VW, FT, S_FT, JSD, S_JSD, U, df), means over the
                   datasets
  marginals.csv    synthpop's compare(): % of records per level or histogram bin, original
                   and the datasets pooled
  quality.csv      SDMetrics' column shapes (KSComplement, TVComplement) per column and
                   dataset; quality_pairs.csv its column pair trends (CorrelationSimilarity,
                   ContingencySimilarity); the score in summary.json ("quality")
(the heat map of the pairs' S_pMSE and the panel of the marginals: the audit's report, or
UtilitySummary.plot("tables") and .plot("compare"))
"""


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register the ``utility`` sub-command."""
    p = subparsers.add_parser("utility", help="utility of synthetic datasets: pMSE, S_pMSE and "
                              "confidence-interval overlap",
                              description="Measure the utility of m synthetic datasets against "
                              "the original: the propensity-score mean squared error (pMSE) with "
                              "a logistic (synthpop-compatible) or CART propensity model, its "
                              "ratio to the null expectation (S_pMSE) and standardised form, and "
                              "the overlap of original and combined synthetic confidence "
                              "intervals (combining rules chosen by how the release was made) for "
                              "means and proportions or for the coefficients of user formulas.",
                              epilog=_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_input_arguments(p, recoded=True)
    add_type_arguments(p)
    # utility_summary's arguments and specs, declared by the library
    add_spec_options(p, PropensitySpec)
    add_argument_options(p, "bayes_risk.utility.summary:utility_summary")
    add_spec_options(p, OverlapSpec)
    add_run_arguments(p, RUN,
                      "summary.json, overlap.csv, tables.csv, marginals.csv, quality.csv, "
                      "quality_pairs.csv and comparison.csv",
                      check="the release SYN")
    return p
