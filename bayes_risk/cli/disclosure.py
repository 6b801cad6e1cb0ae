"""``bayes-risk disclosure``: synthpop's empirical disclosure measures of synthetic datasets."""

from __future__ import annotations

import argparse
from pathlib import Path

from bayes_risk.cli._common import inputs_summary

__all__ = ["run"]


def run(args: argparse.Namespace) -> int:
    """Compute the measures and write the output folder."""
    from bayes_risk._io import write_json
    from bayes_risk._specs import spec_values
    from bayes_risk.cli._common import (
        parse_records,
        print_summary,
        read_inputs,
        release_schema,
    )
    from bayes_risk.cli._run import output_dir
    from bayes_risk.disclosure import ExclusionSpec, differencing_check, disclosure_measures
    from bayes_risk.exceptions import ValidationError

    out = Path(args.out)
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
        with output_dir(args) as tmp:
            _write_differencing(tmp, diff, args)
        print_summary(diff.summary().as_text().strip().splitlines(), out)
        return 0
    schema = release_schema(original, syn, args)
    res = disclosure_measures(
        original,
        syn,
        keys=args.keys,
        target=args.target,
        schema=schema,
        ngroups_target=args.ngroups_target,
        ngroups_keys=(args.ngroups_keys[0] if args.ngroups_keys and len(args.ngroups_keys) == 1
                      else args.ngroups_keys),
        exclude=ExclusionSpec(**spec_values(ExclusionSpec, vars(args))),
        k_anonymity=args.k_anonymity,
        compat=args.compat,
    )
    d = res.to_dict()
    d["inputs"] = inputs_summary(args)
    with output_dir(args) as tmp:
        write_json(tmp / "summary.json", d)
        res.ident.to_csv(tmp / "ident.csv", index=False)
        res.attrib.to_csv(tmp / "attrib.csv", index=False)
        res.allCAPs.to_csv(tmp / "allCAPs.csv", index=False)
        res.replicated_uniques.table.to_csv(tmp / "replicated_uniques.csv", index=False)
        if diff is not None:
            _write_differencing(tmp, diff, args)
    summary = res.summary()
    header = dict(summary.header)
    head = (f"Disclosure measures for {header['original records']} original records and "
            f"{header['synthetic datasets m']} synthetic dataset(s)")
    # the rendered summary without its title lines (said in the head line); tables stay aligned
    body = summary.as_text().strip().splitlines()[2:]
    if diff is not None:
        body += ["", *diff.summary().as_text().strip().splitlines()]
    print_summary([head, *body], out)
    return 0


def _write_differencing(tmp: Path, diff, args: argparse.Namespace) -> None:
    from bayes_risk._io import write_json

    d = diff.to_dict()
    d["inputs"] = inputs_summary(args, selected=args.selected)
    write_json(tmp / "differencing.json", d)
    diff.to_dataframe().to_csv(tmp / "differencing.csv", index=False)
