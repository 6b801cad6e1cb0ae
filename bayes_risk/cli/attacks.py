"""``bayes-risk attacks``: anonymeter's singling-out, linkability and inference risk of a
release."""

from __future__ import annotations

import argparse

from bayes_risk.cli._common import inputs_summary, parse_columns

__all__ = ["run"]


def run(args: argparse.Namespace) -> int:
    """Handler of ``bayes-risk attacks``."""
    import inspect

    from bayes_risk._attack_specs import (
        ATTACK_ARGUMENTS,
        INFERENCE_ARGUMENTS,
        LINKABILITY_ARGUMENTS,
        SINGLING_OUT_ARGUMENTS,
    )
    from bayes_risk._specs import argument_values
    from bayes_risk.attacks import inference_risk, linkability_risk, singling_out_risk
    from bayes_risk.cli._common import read_holdout, read_inputs, release_schema, write_run
    from bayes_risk.cli._run import command_line_options
    from bayes_risk.exceptions import ValidationError

    given = vars(args)
    chosen = args.singling_out or []  # not given: both modes (the function's default)
    modes = [m for m in dict.fromkeys(chosen) if m != "none"]
    if "none" in chosen and modes:
        raise ValidationError("--singling-out none cannot be given with a mode.",
                              code="OPTION_CONFLICT")
    if "none" in chosen and args.linkability is None and args.inference is None:
        raise ValidationError("nothing to run: --singling-out none needs --linkability "
                              "COLS_A COLS_B or --inference SECRET.", code="OPTION_REQUIRED")
    if args.aux_columns is not None and args.inference is None:
        raise ValidationError("--aux-columns is the inference intruder's knowledge: it needs "
                              "--inference SECRET.", code="OPTION_REQUIRED")
    aux = (None if args.linkability is None else
           tuple(parse_columns(t, "--linkability") for t in args.linkability))
    original, synthetic = read_inputs(args)
    holdout = read_holdout(args)
    schema = release_schema(original, synthetic, args)
    common = dict(holdout=holdout, schema=schema, random_seed=args.random_seed,
                  **argument_values(ATTACK_ARGUMENTS, given))
    so = lk = inf = None
    # inference first: the cheapest attack, so that a bad secret stops the run at once
    if args.inference is not None:
        inf = inference_risk(original, synthetic, **argument_values(INFERENCE_ARGUMENTS, given),
                             **common)
    if "none" not in chosen:
        so = singling_out_risk(original, synthetic, **{
            **argument_values(SINGLING_OUT_ARGUMENTS, given), **({"mode": modes} if modes
                                                                 else {})}, **common)
    if aux is not None:
        sizes = [len(original)] + ([] if holdout is None else [len(holdout)])
        n = common.pop("n_attacks", inspect.signature(linkability_risk).parameters[
            "n_attacks"].default)
        n = n if n < 1 else min(n, *sizes)
        # linkability's aux_columns are --linkability here (--aux-columns is inference's)
        with command_line_options({"aux_columns": "--linkability"}):
            lk = linkability_risk(original, synthetic, **{
                **argument_values(LINKABILITY_ARGUMENTS, given), "aux_columns": aux},
                n_attacks=n, **common)
    done = [r for r in (so, lk, inf) if r is not None]
    summary = {"measure": "attacks", **{k: None if r is None else r.to_dict() for k, r in (
                   ("singling_out", so), ("linkability", lk), ("inference", inf))},
               "warnings": list(dict.fromkeys(w for r in done for w in r.warnings)),
               "inputs": inputs_summary(args, holdout=None if args.holdout is None
                                        else str(args.holdout))}
    tables, figures = {}, {}
    for name, r in (("singling_out", so), ("linkability", lk), ("inference", inf)):
        if r is not None:  # its table, its rows (singling out: the predicates), its figure
            tables[f"{name}.csv"] = r.table
            tables[f"{name}_{'queries' if r is so else 'records'}.csv"] = (
                r.queries if r is so else r.records)
            figures[f"{name}.png"] = (r, "risk")
            if getattr(r, "by_group", None) is not None:
                tables[f"{name}_groups.csv"] = r.by_group
    m = len(done[0].table["dataset"].unique())
    against = ("no holdout (the risk is the main attack's success rate)" if holdout is None
               else f"a holdout of {len(holdout):,} records")
    lines = [f"anonymeter's attacks on {m} synthetic dataset(s) against {against}; risk "
             "[interval], the largest over the datasets"]
    lines += [r.headline_text() for r in done]
    write_run(args, lines, summary, tables=tables, figures=figures)
    return 0
