"""Arguments of ``bayes-risk attacks`` (run: :mod:`bayes_risk.cli.attacks`)."""

from __future__ import annotations

import argparse
from typing import Any

from bayes_risk.cli._common import add_input_arguments, add_run_arguments, add_type_arguments

__all__ = ["add_parser"]

_EPILOG = """\
examples:
  bayes-risk attacks ce_train.csv syn --holdout ce_holdout.csv --categorical Urban Marital \\
      Tenure --random-seed 1 --out attacks
  bayes-risk attacks ce_train.csv syn --holdout ce_holdout.csv --categorical Urban Marital \\
      Tenure --singling-out none --linkability Age,Urban,Marital Income,Expenditure \\
      --n-neighbors 5 --random-seed 1 --out linkability
  bayes-risk attacks ce_train.csv syn --holdout ce_holdout.csv --categorical Urban Marital \
      Tenure --singling-out none --inference Income Tenure --random-seed 1 --out inference

outputs (in --out, written atomically):
  singling_out.csv          one row per synthetic dataset and mode: predicates written, the
                            main, control and baseline successes and rates (Wilson), the risk
                            and its interval
  singling_out_queries.csv  every predicate, and whether it singles out a record of ORIGINAL
                            and of --holdout
  linkability.csv           one row per synthetic dataset and k = 1..--n-neighbors: records
                            linked by the three attacks, rates, risk and interval
  linkability_records.csv   per dataset and attacked record: role, row, the smallest k that
                            links it, whether equally distant rows were drawn
  inference.csv             one row per synthetic dataset and secret: secrets guessed right by
                            the three attacks, rates, risk and interval
  inference_records.csv     per dataset, secret and attacked record: role, row, whether the
                            guess was right, whether equally distant rows were drawn
  summary.json              all of the above with the settings and warning codes
  singling_out.png, linkability.png, inference.png   the risk with its interval
"""


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``bayes-risk attacks``."""
    p = subparsers.add_parser("attacks", usage="%(prog)s ORIGINAL SYN [SYN ...] [--holdout FILE] "
                              "[options] --out DIR",
                              help="singling-out, linkability and inference risk (anonymeter's "
                              "attacks, against a holdout)",
                              description="Run anonymeter's singling-out, linkability and "
                              "inference attacks "
                              "(Giomi et al. 2023) on each synthetic dataset: the attack on the "
                              "records of ORIGINAL (used for the synthesis), the same attack on "
                              "--holdout (records of the population it did not use: the control) "
                              "and a baseline of random guesses. The risk is the main attack's "
                              "success beyond the control's, (r_main - r_control) / (1 - "
                              "r_control), with its Wilson-score interval, clipped to [0, 1] as "
                              "anonymeter does (docs: methods page 'Singling out, "
                              "linkability and inference'). Without --holdout the risk is the "
                              "main attack's success rate (warning NO_HOLDOUT).", epilog=_EPILOG,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    add_input_arguments(p, " the release was made from", recoded=True)
    p.add_argument("--holdout", default=None, metavar="FILE",
                   help="records of the same population that the synthesis did not use "
                   "(anonymeter's control set; a file of any format ORIGINAL takes), ideally as "
                   "many as ORIGINAL")
    g = p.add_argument_group("singling out")
    g.add_argument("--singling-out", nargs="+", default=["univariate", "multivariate"],
                   choices=["univariate", "multivariate", "none"], metavar="MODE",
                   help="modes to run: univariate (one column per predicate), multivariate "
                   "(--n-cols columns), or none (default: both)")
    g.add_argument("--n-cols", type=int, default=3, metavar="N",
                   help="columns of a multivariate predicate (default 3)")
    g.add_argument("--columns", nargs="+", default=None, metavar="COL",
                   help="columns the predicates may use (default: every column)")
    g.add_argument("--max-attempts", type=int, default=10_000_000, metavar="N",
                   help="multivariate candidates tried at most per dataset (default "
                   "10000000, anonymeter's)")
    g = p.add_argument_group("linkability")
    g.add_argument("--linkability", nargs=2, default=None, metavar=("COLS_A", "COLS_B"),
                   help="the columns of the intruder's two tables, each a comma-separated list, "
                   "e.g. Age,Urban,Marital Income,Expenditure (without it linkability is not run)")
    g.add_argument("--n-neighbors", type=int, default=1, metavar="K",
                   help="nearest synthetic rows that may link the two parts of a record "
                   "(default 1); the risk is given for every k up to K")
    g = p.add_argument_group("inference")
    g.add_argument("--inference", nargs="+", default=None, metavar="SECRET",
                   help="columns whose value the intruder guesses, each attacked on its own "
                   "(without it inference is not run)")
    g.add_argument("--aux-columns", nargs="+", default=None, metavar="COL",
                   help="the columns the inference intruder knows of a target (default: every "
                   "column but the secret)")
    g.add_argument("--regression", default="auto", choices=["auto", "yes", "no"],
                   help="whether a guess is right within --tolerance (yes) or only when equal "
                   "(no); auto (default): within it for a numeric secret, equal for a "
                   "categorical one (anonymeter 1.1.0's own default is no)")
    g.add_argument("--tolerance", type=float, default=0.05, metavar="T",
                   help="largest relative difference |guess - value| / |guess| of a right "
                   "numeric guess (default 0.05, anonymeter's)")
    p.add_argument("--n-attacks", type=int, default=500, metavar="N",
                   help="predicates per dataset and mode, and records attacked in each of "
                   "ORIGINAL and --holdout (default 500, anonymeter's; linkability and "
                   "inference use at most the records of each table)")
    p.add_argument("--confidence-level", type=float, default=0.95, metavar="P",
                   help="level of the intervals (default 0.95)")
    add_type_arguments(p)
    add_run_arguments(p, "bayes_risk.cli.attacks",
                      "singling_out.csv, linkability.csv, summary.json and plots",
                      check="SYN")
    return p
