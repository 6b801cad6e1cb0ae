"""``bayes-risk disclosure``: synthpop's empirical disclosure measures of synthetic datasets."""

from __future__ import annotations

import argparse

from bayes_risk.cli._common import inputs_summary

__all__ = ["run"]


def run(args: argparse.Namespace) -> int:
    """Compute the measures and write the output folder."""
    from bayes_risk._specs import argument_values, spec_values
    from bayes_risk.cli._common import parse_records, read_inputs, release_schema, write_run
    from bayes_risk.disclosure import ExclusionSpec, differencing_check, disclosure_measures
    from bayes_risk.disclosure.specs import DISCLOSURE_ARGUMENTS
    from bayes_risk.exceptions import ValidationError

    if (args.keys is None) != (args.target is None) or (args.keys is None
                                                        and not args.differencing):
        raise ValidationError("disclosure needs --keys and --target (synthpop's measures), "
                              "--differencing, or both.", code="OPTION_REQUIRED")
    if args.selected is not None and not args.differencing:
        raise ValidationError("--selected is read by --differencing only.",
                              code="OPTION_CONFLICT")
    original, syn = read_inputs(args)
    diff = (differencing_check(original, syn, records=parse_records(args.selected, len(original),
                                                                  "--selected"))
            if args.differencing else None)
    if args.keys is None:
        write_run(args, diff.summary().as_text().strip().splitlines(),
                  tables=_differencing(diff, args))
        return 0
    schema = release_schema(original, syn, args)
    res = disclosure_measures(original, syn, schema=schema,
                              exclude=ExclusionSpec(**spec_values(ExclusionSpec, vars(args))),
                              **argument_values(DISCLOSURE_ARGUMENTS, vars(args)))
    d = res.to_dict()
    d["inputs"] = inputs_summary(args)
    lines = res.summary().as_text().strip().splitlines()
    if diff is not None:
        lines += ["", *diff.summary().as_text().strip().splitlines()]
    write_run(args, lines, d, tables={
        "ident.csv": res.ident, "attrib.csv": res.attrib, "allCAPs.csv": res.allCAPs,
        "replicated_uniques.csv": res.replicated_uniques.table,
        **({} if diff is None else _differencing(diff, args))})
    return 0


def _differencing(diff, args: argparse.Namespace) -> dict:
    """The differencing check's files (:func:`~bayes_risk.cli._common.write_run`'s tables)."""
    from bayes_risk._io import write_json

    d = diff.to_dict()
    d["inputs"] = inputs_summary(args, selected=args.selected)
    return {"differencing.json": lambda path: write_json(path, d),
            "differencing.csv": diff.to_dataframe()}
