"""``bayes-risk orders``: its arguments and its run (the runner's row)."""

from __future__ import annotations

import argparse
from typing import Any

from bayes_risk._constraints import Requires, check_relations
from bayes_risk.cli._common import add_input_arguments, add_run_arguments, add_type_arguments
from bayes_risk.cli._runner import Run
from bayes_risk.cli.parsers import add_argument_options, add_spec_options
from bayes_risk.cli.parsers.fit import add_model_options
from bayes_risk.cli.parsers.identification import IDENTIFICATION_RISK
from bayes_risk.fit_options.trees import tree_options
from bayes_risk.identification.specs import MatchSpec, PopulationSpec

__all__ = ["add_parser", "RUN"]


#: --membership unknown with its sampling fraction
RELATIONS = (Requires("membership", "sampling_fraction", when=("unknown",),
                      code="OPTION_REQUIRED"),)


def _check(args: argparse.Namespace) -> None:
    """The options against each other (:data:`RELATIONS`)."""
    check_relations(vars(args), RELATIONS)


def _synthesizer(args: argparse.Namespace, read: dict[str, Any]) -> Any:
    """``--method``'s registered synthesizer with the settings given, checked by what the class
    declares (``ModelInfo.visit_order``) and takes, never by its name."""
    from bayes_risk._specs import argument_values
    from bayes_risk.contract import capabilities
    from bayes_risk.exceptions import ValidationError
    from bayes_risk.models import get_synthesizer
    from bayes_risk.registry import model_settings

    cls = get_synthesizer(args.method, argument="method")
    if not capabilities(cls).visit_order:
        raise ValidationError(f"--method {args.method}: {cls.__name__} does not synthesize its "
                              "columns in a visit order (its ModelInfo does not declare "
                              "visit_order), so there are no orders to compare; use a sequential "
                              "synthesizer such as cart or rf.", code="OPTION_CONFLICT")
    options = tree_options(orders=True)
    return cls(**model_settings(cls, args.method, options, argument_values(options, vars(args))))


def _identification(args: argparse.Namespace, read: dict[str, Any]) -> dict[str, Any]:
    """The identification risk's match (--radius) and population (--membership unknown: the
    counts of the log-linear model refitted on each synthetic dataset)."""
    from bayes_risk._specs import spec_values
    from bayes_risk.identification.specs import MatchSpec, PopulationSpec

    match, population = spec_values(MatchSpec, vars(args)), spec_values(PopulationSpec, vars(args))
    ident: dict[str, Any] = {"match": MatchSpec(**match)} if match else {}
    if population.get("membership") == "unknown":
        ident["population"] = PopulationSpec(**population, counts="loglinear_synthetic")
    return ident


def _known(args: argparse.Namespace, read: dict[str, Any]) -> list[str]:
    """The intruder's columns: --known-unsynthesized, then --known-synthesized (default: every
    column of the orders)."""
    synthesized = list(dict.fromkeys(c for o in read["orders"] for c in o))
    return [*(args.known_unsynthesized or ()),
            *(args.known_synthesized if args.known_synthesized is not None else synthesized)]


#: compare_visit_orders of ORIGINAL: one synthesizer of --method, every --order
RUN = Run("bayes_risk.visit_orders:compare_visit_orders", check=_check, inputs=("original",),
          reads=("types", ("synthesizer", _synthesizer),
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
                              "given columns (default: every synthesized one; Caiola & Reiter "
                              "2010 recommend comparing orders this way).", epilog=_EPILOG,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    add_input_arguments(p, synthetic=None)
    # --method: no argparse choices, any registered synthesizer whose ModelInfo declares
    # visit_order; the intruder's options are identification's (without a known column: the
    # synthesized ones)
    add_argument_options(p, RUN.function, fields=("synthesizer", "orders"))
    add_argument_options(p, IDENTIFICATION_RISK, fields=("known", "synthesized"))
    add_spec_options(p, MatchSpec, fields=("radius", "radius_type", "quantile_groups"))
    add_spec_options(p, PopulationSpec, fields=("membership", "sampling_fraction"))
    add_type_arguments(p, fits=True)
    add_argument_options(p, RUN.function, fields=("m",))
    add_model_options(p, tree_options(orders=True), "cart, rf")
    add_run_arguments(p, RUN, "orders.csv, summary.json", seed=1)
    return p
