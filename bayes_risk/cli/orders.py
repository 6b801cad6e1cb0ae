"""``bayes-risk orders``: utility and identification risk of several synthesis visit orders.

::

    bayes-risk orders ORIGINAL.csv --method rf|cart --order MAR,RACE,SEX --order SEX,RACE,MAR \\
        --known-unsynthesized AGE [--categorical ...] [-m 5] [--random-seed 1] --out DIR

Writes ``DIR/orders.csv`` (one row per order) and ``DIR/summary.json`` (the table and every
setting), atomically.
"""

from __future__ import annotations

import argparse

from bayes_risk.cli._common import (
    add_out_argument,
    add_quiet_argument,
    add_seed_argument,
    add_type_arguments,
    parse_key_value,
)

__all__ = ["add_parser", "run"]

_EPILOG = """\
example (Caiola & Reiter 2010: marital status, race, sex in two orders):
  bayes-risk orders acs.csv --method rf --order MAR,RACE,SEX --order SEX,RACE,MAR \\
      --categorical SEX RACE MAR AGE --known-unsynthesized AGE -m 5 --random-seed 1 --out orders
"""


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Register the ``orders`` sub-command."""
    p = subparsers.add_parser(
        "orders",
        help="compare synthesis visit orders by utility (pMSE) and identification risk",
        description=(
            "Synthesize the same confidential table once per visit order (same seeds for every "
            "order, so differences come from the order) and tabulate the mean pMSE and pMSE "
            "ratio over the m datasets and the identification risk of an intruder who knows "
            "the given columns (Caiola & Reiter 2010 recommend comparing orders this way)."
        ),
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("original", metavar="ORIGINAL", help="confidential table (.csv or .parquet)")
    p.add_argument("--method", choices=["cart", "rf"], required=True, help="synthesizer")
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
    add_type_arguments(p)
    p.add_argument("-m", type=int, default=5, metavar="M", help="datasets per order (default 5)")
    g = p.add_argument_group("synthesizer settings")
    g.add_argument("--n-trees", type=int, default=500, metavar="N", help="rf: trees per forest")
    g.add_argument("--group-by", nargs="+", default=None, metavar="COL|COL=GROUP",
                   help="rf: separate forests per level of a categorical column")
    g.add_argument("--min-group-size", type=int, default=10, metavar="N")
    g.add_argument("--min-leaf", type=int, default=5, metavar="N", help="cart: minimum leaf size")
    add_seed_argument(p, default=1)
    add_quiet_argument(p)
    add_out_argument(p, "orders.csv, summary.json")
    p.set_defaults(handler=run)
    return p


def run(args: argparse.Namespace) -> int:
    """Run ``bayes-risk orders``; returns the exit status."""
    import json

    from bayes_risk._io import to_jsonable
    from bayes_risk.cli._common import read_records_table, schema_from_args
    from bayes_risk.cli._run import output_dir
    from bayes_risk.cli.synthesize import _group_by
    from bayes_risk.data import check_m
    from bayes_risk.exceptions import ValidationError
    from bayes_risk.models import CARTSynthesizer, RandomForestSynthesizer
    from bayes_risk.visit_orders import compare_visit_orders

    df = read_records_table(args.original, "ORIGINAL")
    schema = schema_from_args(df, args)
    orders = [[c.strip() for c in o.split(",") if c.strip()] for o in args.order]
    for o in orders:
        schema.check_columns(o, "--order")
    m = check_m(args.m, "-m")
    if args.method == "rf":
        model = RandomForestSynthesizer(n_trees=args.n_trees, group_by=_group_by(args.group_by),
                                        min_group_size=args.min_group_size)
    else:
        if args.group_by:
            raise ValidationError("--group-by applies to --method rf only.")
        model = CARTSynthesizer(min_leaf=args.min_leaf)
    ident = {"membership": args.membership}
    if args.radius:
        ident["radius"] = parse_key_value(args.radius, "--radius", float)
        ident["radius_type"] = args.radius_type
    if args.membership == "unknown":
        if args.sampling_fraction is None:
            raise ValidationError("--membership unknown needs --sampling-fraction A.")
        ident["population_counts"] = "loglinear_synthetic"
        ident["sampling_fraction"] = args.sampling_fraction
    res = compare_visit_orders(
        model, df, orders, known_unsynthesized=args.known_unsynthesized,
        known_synthesized=args.known_synthesized, schema=schema, m=m, identification=ident,
        random_seed=args.random_seed, progressbar=not args.quiet,
    )
    out = res.to_dict()
    out["settings"]["random_seed"] = args.random_seed
    with output_dir(args) as tmp:
        res.table.to_csv(tmp / "orders.csv", index=False)
        with open(tmp / "summary.json", "w") as fh:
            json.dump(to_jsonable(out), fh, indent=2, allow_nan=False)
            fh.write("\n")
    if not args.quiet:
        print(res.table.to_string(index=False))
        print(f"-> {args.out}")
    return 0
