"""Arguments of ``bayes-risk utility`` (run: :mod:`bayes_risk.cli.utility`)."""

from __future__ import annotations

import argparse

from bayes_risk.cli._common import add_input_arguments, add_run_arguments, add_type_arguments

__all__ = ["add_parser"]


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
"""


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
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
    p.add_argument("--pmse", choices=["logit", "cart"], default="logit",
                   help="propensity model (default logit: synthpop's utility.gen design)")
    p.add_argument("--max-order", type=int, default=1, metavar="N",
                   help="logit: interactions of up to N + 1 columns: 0 = main effects, 1 = plus "
                   "all two-way interactions (default 1, as synthpop's maxorder), 2 = plus "
                   "three-way ...")
    p.add_argument("--null", choices=["auto", "theory", "perm", "pairs"], default="auto",
                   help="pMSE null: chi-square theory (logit), label permutations, or pairs of "
                   "synthetic datasets (default auto: theory for logit, perm/pairs for cart)")
    p.add_argument("--n-perm", type=int, default=100, metavar="B",
                   help="permutations for --null perm (default 100)")
    p.add_argument("--formula", nargs="+", default=None, metavar="FORMULA",
                   help='statsmodels formulas whose coefficients are compared, e.g. '
                   '"Income ~ Age + C(Marital)" (default estimands: means and proportions '
                   "of the synthesized columns)")
    p.add_argument("--family", choices=["ols", "logit", "poisson"], default="ols",
                   help="model family of the formulas (default ols)")
    p.add_argument("--synthesized", nargs="+", default=None, metavar="COL",
                   help="synthesized columns (default: the roles recorded in a SyntheticData "
                   "folder, otherwise the columns that differ from the original in some dataset)")
    p.add_argument("--combining-rules", dest="combining_rules",
                   choices=["auto", "partial", "full-same-n", "full-population"], default="auto",
                   help="combining rules of the synthetic intervals: partial (Reiter 2003), "
                   "full-same-n (full synthesis of the same units; Raab, Nowok & Dibben 2016), "
                   "full-population (samples from synthetic populations; Raghunathan, Reiter & "
                   "Rubin 2003). Default auto: the generation recorded in the release's manifest, "
                   "else inferred from the synthesized columns")
    p.add_argument("--imputed", nargs="+", default=None, metavar="COL",
                   help="columns whose missing values the synthesizer imputed (DPMPM does): "
                   "compared on the original's observed cells, proportions among the observed "
                   "records and the pMSE with synthetic values masked where the original is "
                   "missing; 'none' compares missing values as a level. Default: the "
                   "imputed_columns recorded in the release's manifest, else the columns with "
                   "empty cells in the original and none in any synthetic dataset (with a warning)")
    p.add_argument("--alpha", type=float, default=0.05, metavar="A",
                   help="1 - confidence level of the intervals (default 0.05)")
    add_run_arguments(p, "bayes_risk.cli.utility", "summary.json, overlap.csv and comparison.csv",
                      check="the release SYN")
    return p
