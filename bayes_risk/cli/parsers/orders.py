"""``bayes-risk orders``: its arguments and its run (the runner's row)."""

from __future__ import annotations

import argparse
from typing import Any

from bayes_risk._constraints import Requires, check_relations
from bayes_risk.cli._common import add_input_arguments, add_run_arguments, add_type_arguments
from bayes_risk.cli._runner import Run
from bayes_risk.cli.parsers import add_argument_options
from bayes_risk.cli.parsers.fit import add_model_options
from bayes_risk.fit_options.trees import tree_options

__all__ = ["add_parser", "RUN"]


#: --membership unknown with its sampling fraction
RELATIONS = (Requires("membership", "sampling_fraction", when=("unknown",),
                      code="OPTION_REQUIRED"),)


def _check(args: argparse.Namespace) -> None:
    """The options against each other (:data:`RELATIONS`)."""
    check_relations(vars(args), RELATIONS)


def _orders(args: argparse.Namespace, read: dict[str, Any]) -> list[list[str]]:
    """The visit orders of --order, each a column of ORIGINAL."""
    orders = [[c.strip() for c in o.split(",") if c.strip()] for o in args.order]
    for o in orders:
        read["schema"].check_columns(o, "--order")
    return orders


def _synthesizer(args: argparse.Namespace, read: dict[str, Any]) -> Any:
    """``--method``'s registered synthesizer with the settings given, checked by what the class
    declares (``ModelInfo.visit_order``) and takes, never by its name."""
    from bayes_risk.cli.fit import model_settings
    from bayes_risk.contract import capabilities
    from bayes_risk.exceptions import ValidationError
    from bayes_risk.models import get_synthesizer

    cls = get_synthesizer(args.method)
    if not capabilities(cls).visit_order:
        raise ValidationError(f"--method {args.method}: {cls.__name__} does not synthesize its "
                              "columns in a visit order (its ModelInfo does not declare "
                              "visit_order), so there are no orders to compare; use a sequential "
                              "synthesizer such as cart or rf.", code="OPTION_CONFLICT")
    return cls(**model_settings(args, cls, tree_options(orders=True)))


def _identification(args: argparse.Namespace, read: dict[str, Any]) -> dict[str, Any]:
    """The identification risk's match (--radius) and population (--membership unknown)."""
    from bayes_risk._specs import parse_key_value
    from bayes_risk.identification.specs import MatchSpec, PopulationSpec

    ident: dict[str, Any] = {}
    if args.radius:
        ident["match"] = MatchSpec(radius=parse_key_value(args.radius, "--radius", float),
                                   radius_type=args.radius_type)
    if args.membership == "unknown":
        ident["population"] = PopulationSpec(membership="unknown", counts="loglinear_synthetic",
                                              sampling_fraction=args.sampling_fraction)
    return ident


def _known(args: argparse.Namespace, read: dict[str, Any]) -> list[str]:
    """The intruder's columns: --known-unsynthesized, then --known-synthesized (default: every
    column of the orders)."""
    synthesized = list(dict.fromkeys(c for o in read["orders"] for c in o))
    return [*args.known_unsynthesized,
            *(args.known_synthesized if args.known_synthesized is not None else synthesized)]


#: compare_visit_orders of ORIGINAL: one synthesizer of --method, every --order
RUN = Run("bayes_risk.visit_orders:compare_visit_orders", check=_check, inputs=("original",),
          reads=("types", ("orders", _orders), ("synthesizer", _synthesizer),
                 ("identification", _identification), ("known", _known), "random_seed",
                 "progressbar"),
          tables={"orders.csv": lambda res: res.table},
          text=lambda res, args: res.summary().as_text().strip())


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
    add_argument_options(p, RUN.function)  # compare_visit_orders' -m
    add_model_options(p, tree_options(orders=True), "cart, rf")
    add_run_arguments(p, RUN, "orders.csv, summary.json", seed=1)
    return p
