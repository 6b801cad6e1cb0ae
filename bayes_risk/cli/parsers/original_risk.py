"""Arguments of ``bayes-risk original-risk`` (run: :mod:`bayes_risk.cli.original_risk`)."""

from __future__ import annotations

import argparse
from typing import Any

from bayes_risk.cli._common import NO_SEED, add_input_arguments, add_run_arguments

__all__ = ["add_parser"]


_EPILOG = """\
examples:
  bayes-risk original-risk CEdata.csv --keys Age Urban Marital --sensitive Tenure \\
      --out ce_baseline
  bayes-risk original-risk survey.csv --keys sex agegr region --weights w --out baseline

outputs (in --out, written atomically):
  records.csv            one row per record (record = 0-based row number), sdcMicro's names:
                         fk, Fk, risk; suda_score, dis_suda_score, min_msu_size,
                         <key>_contribution; <col>_Distinct_Ldiversity, <col>_Entropy_Ldiversity,
                         <col>_Recursive_Ldiversity per --sensitive column
  suda_contributions.csv each key's share (%) of the total SUDA2 score, and of each level
  summary.json           global risk (expected re-identifications), k-anonymity counts, SUDA2
                         summary (MSUs by size, the DIS-score table), l-diversity summaries,
                         settings and warning codes

every figure is computed on ORIGINAL alone: it is the same for every synthetic release (the
audit lists it as a baseline of the original, RELEASE_INDEPENDENT).
"""


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register the ``original-risk`` sub-command."""
    p = subparsers.add_parser("original-risk",
                              help="sdcMicro's re-identification risk of the original on its keys "
                              "(a baseline)",
                              description="Compute sdcMicro's risk measures of the confidential "
                              "table on a set of keys (quasi-identifiers), the baseline a release "
                              "is compared with: the individual re-identification risk of every "
                              "record (with survey weights the Benedetti-Franconi negative "
                              "binomial risk, F_k the sum of the weights of the key cell; "
                              "without, the sample-based 1/f_k) and the global risk (expected "
                              "re-identifications), the records violating k-anonymity, SUDA2 "
                              "scores (minimal sample uniques, DIS score, the keys' "
                              "contributions; Elliot et al. 2002) and l-diversity of sensitive "
                              "columns (Machanavajjhala et al. 2007), as sdcMicro's measure_risk, "
                              "suda2 and ldiversity.", epilog=_EPILOG,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    add_input_arguments(p, synthetic=None)
    p.add_argument("--keys", nargs="+", required=True, metavar="COL",
                   help="key columns (quasi-identifiers), combined into one key; values are "
                   "compared as they are (an empty cell is a value of its own unless --compat "
                   "sdcmicro)")
    p.add_argument("--weights", default=None, metavar="COL",
                   help="survey weights of the records (a column of ORIGINAL): the "
                   "Benedetti-Franconi risk; default: none, every record's risk is 1/f_k")
    p.add_argument("--sensitive", nargs="+", default=None, metavar="COL",
                   help="sensitive columns whose l-diversity in the key cells is computed")
    g = p.add_argument_group("conventions (sdcMicro's arguments)")
    g.add_argument("--method", choices=["approx", "exact"], default="approx",
                   help="with --weights: sdcMicro's approximation of the risk of key cells of 3 "
                   "or more records (default; it overstates the exact risk by at most about "
                   "4 %%) or the exact expectation")
    g.add_argument("--no-suda", action="store_true",
                   help="skip SUDA2 (it examines every subset of the keys)")
    g.add_argument("--max-size", type=int, default=None, metavar="K",
                   help="largest minimal sample unique searched by SUDA2 (default: every size)")
    g.add_argument("--dis-fraction", type=float, default=0.01, metavar="F",
                   help="sampling fraction of the DIS score (sdcMicro's DisFraction, default 0.01)")
    g.add_argument("--recursive-c", type=float, default=2.0, metavar="C",
                   help="constant c of recursive (c, l) l-diversity (default 2)")
    g.add_argument("--k-anonymity", nargs="+", type=int, default=[2, 3, 5], metavar="K",
                   help="k of the k-anonymity counts (default 2 3 5)")
    g.add_argument("--compat", choices=["sdcmicro"], default=None,
                   help="reproduce sdcMicro 5.8.1 exactly, including its missing values: an "
                   "empty key cell matches every value in f_k and F_k (lowering the risk), is "
                   "never part of a minimal sample unique, and each empty sensitive cell is a "
                   "distinct value")
    add_run_arguments(p, "bayes_risk.cli.original_risk",
                      "records.csv, suda_contributions.csv and summary.json",
                      seed=NO_SEED)
    return p
