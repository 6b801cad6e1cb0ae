"""``bayes-risk membership``: membership disclosure risk of a synthetic release."""

from __future__ import annotations

import argparse

from bayes_risk.cli._common import inputs_summary

__all__ = ["run"]


def run(args: argparse.Namespace) -> int:
    """Handler of ``bayes-risk membership``."""
    from bayes_risk._specs import argument_values, spec_values
    from bayes_risk.cli._common import (
        parse_records,
        read_holdout,
        read_inputs,
        read_model,
        write_run,
    )
    from bayes_risk.membership.api import membership_risk
    from bayes_risk.membership.specs import MEMBERSHIP_ARGUMENTS, AttackSpec, RatioSpec

    original, synthetic = read_inputs(args)
    holdout = read_holdout(args)
    model = read_model(args, original)
    result = membership_risk(
        model,
        original,
        synthetic,
        holdout=holdout,
        records=parse_records(args.records, len(original)),
        attack=AttackSpec(**spec_values(AttackSpec, vars(args))),
        ratio=RatioSpec(**spec_values(RatioSpec, vars(args))),
        progressbar=not args.quiet,
        random_seed=args.random_seed,
        allow_other_model=args.allow_other_model,
        **argument_values(MEMBERSHIP_ARGUMENTS, vars(args)),
    )
    summary = result.to_dict()
    summary["inputs"] = {
        "model": str(args.model),
        **inputs_summary(args, holdout=None if args.holdout is None else str(args.holdout),
                         records=args.records),
    }
    write_run(args, result.headline().splitlines(), summary,
              tables={"records.csv": result.records.to_csv},
              figures={"p_member_hist.png": (result, "p_member"), "roc.png": (result, "roc"),
                       "dcr.png": (result, "dcr")})
    return 0
