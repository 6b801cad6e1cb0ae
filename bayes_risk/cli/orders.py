"""``bayes-risk orders``: utility and identification risk of several synthesis visit orders."""

from __future__ import annotations

import argparse
from typing import Any

from bayes_risk._specs import parse_key_value

__all__ = ["run"]


def run(args: argparse.Namespace) -> int:
    """Run ``bayes-risk orders``; returns the exit status."""
    from bayes_risk.cli._common import (
        missing_labels,
        numeric_columns,
        read_records_table,
        schema_from_args,
        write_run,
    )
    from bayes_risk.exceptions import ValidationError
    from bayes_risk.visit_orders import compare_visit_orders

    df = read_records_table(args.original, "ORIGINAL", missing_labels(args),
                            numeric_columns(args))
    schema = schema_from_args(df, args)
    orders = [[c.strip() for c in o.split(",") if c.strip()] for o in args.order]
    for o in orders:
        schema.check_columns(o, "--order")
    model = _synthesizer(args)
    from bayes_risk.identification.specs import MatchSpec, PopulationSpec

    ident: dict[str, Any] = {}
    if args.radius:
        ident["match"] = MatchSpec(radius=parse_key_value(args.radius, "--radius", float),
                                   radius_type=args.radius_type)
    if args.membership == "unknown":
        if args.sampling_fraction is None:
            raise ValidationError("--membership unknown needs --sampling-fraction A.",
                                  code="OPTION_REQUIRED")
        ident["population"] = PopulationSpec(membership="unknown", counts="loglinear_synthetic",
                                              sampling_fraction=args.sampling_fraction)
    synthesized = list(dict.fromkeys(c for o in orders for c in o))
    known = [*args.known_unsynthesized,
             *(args.known_synthesized if args.known_synthesized is not None else synthesized)]
    res = compare_visit_orders(df, synthesizer=model, orders=orders, known=known, schema=schema,
                               m=args.m, identification=ident, random_seed=args.random_seed,
                               progressbar=not args.quiet)
    out = res.to_dict()
    out["settings"]["random_seed"] = args.random_seed
    write_run(args, res.summary().as_text().strip().splitlines(), out,
              tables={"orders.csv": res.table})
    return 0


def _synthesizer(args: Any) -> Any:
    """``--method``'s registered synthesizer with the settings given, checked by what the class
    declares (``ModelInfo.visit_order``) and takes, never by its name."""
    from bayes_risk.cli.fit import model_settings
    from bayes_risk.cli.options.trees import tree_options
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
