"""Arguments of ``bayes-risk orders`` (run: :mod:`bayes_risk.cli.orders`)."""

from __future__ import annotations

import argparse

from bayes_risk.cli._common import add_input_arguments, add_run_arguments, add_type_arguments
from bayes_risk.cli.options.trees import tree_options
from bayes_risk.cli.parsers.fit import add_model_options

__all__ = ["add_parser"]


_EPILOG = """\
example (Caiola & Reiter 2010: marital status, race, sex in two orders):
  bayes-risk orders acs.csv --method rf --order MAR,RACE,SEX --order SEX,RACE,MAR \\
      --categorical SEX RACE MAR AGE --known-unsynthesized AGE -m 5 --random-seed 1 --out orders
"""


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Register the ``orders`` sub-command."""
    p = subparsers.add_parser("orders", help="compare synthesis visit orders by utility (pMSE) "
                              "and identification risk",
                              description="Synthesize the same confidential table once per visit "
                              "order (same seeds for every order, so differences come from the "
                              "order) and tabulate the mean pMSE and pMSE ratio over the m "
                              "datasets and the identification risk of an intruder who knows the "
                              "given columns (Caiola & Reiter 2010 recommend comparing orders "
                              "this way).", epilog=_EPILOG,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    add_input_arguments(p, synthetic=None)
    # no argparse choices: any registered synthesizer whose ModelInfo declares visit_order
    p.add_argument("--method", required=True, metavar="NAME",
                   help="synthesizer: cart, rf, or a synthesizer registered in the entry-point "
                        "group bayes_risk.synthesizers whose ModelInfo declares visit_order "
                        "(docs: 'Adding a model')")
    p.add_argument("--order", action="append", required=True, metavar="COL,COL,...",
                   help="one visit order (comma-separated columns); repeat for every order")
    p.add_argument("--known-unsynthesized", nargs="+", default=[], metavar="COL",
                   help="columns the intruder knows that are released unchanged")
    p.add_argument("--known-synthesized", nargs="+", default=None, metavar="COL",
                   help="synthesized columns the intruder knows (default: all)")
    p.add_argument("--radius", action="append", default=[], metavar="COL=R",
                   help="radius of a known continuous column (repeat per column)")
    p.add_argument("--radius-type", choices=["percentage", "absolute"], default="percentage")
    p.add_argument("--membership", choices=["known", "unknown"], default="known",
                   help="whether the intruder knows who is in the file (unknown needs "
                        "--sampling-fraction; population counts from the log-linear model "
                        "refitted on each synthetic dataset)")
    p.add_argument("--sampling-fraction", type=float, default=None, metavar="A")
    add_type_arguments(p, fits=True)
    p.add_argument("-m", type=int, default=5, metavar="M", help="datasets per order (default 5)")
    add_model_options(p, tree_options(orders=True), "cart, rf")
    add_run_arguments(p, "bayes_risk.cli.orders", "orders.csv, summary.json", seed=1)
    return p
