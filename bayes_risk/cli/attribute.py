"""``bayes-risk attribute``: attribute disclosure risk of every (or selected) record."""

from __future__ import annotations

import argparse
import functools
from typing import Any

from bayes_risk.attribute.specs import CLOSEST_MATCH_ARGUMENTS, RELATIVE_DIFFERENCE_ARGUMENTS
from bayes_risk.cli._common import (
    check_max_size,
    dask_client,
    dask_kwargs,
    inputs_summary,
    parse_records,
    read_inputs,
    write_run,
)
from bayes_risk.cli._runner import Run

__all__ = ["run", "parse_records", "parse_pairs"]


def _model(args: argparse.Namespace, original: Any, synthetic: Any,
           replicates: int | None) -> Any:
    """The saved model's likelihood, or the plug-in of the tree synthesizer that made the
    release (:func:`bayes_risk.models.release_likelihood`) with ``replicates``."""
    from bayes_risk.cli._common import read_model
    from bayes_risk.models import release_likelihood

    model = None if args.model is None else read_model(args, original)
    return release_likelihood(original, synthetic, model, random_seed=args.random_seed,
                              n_bootstrap=replicates)


def _scenario(args: argparse.Namespace, n: int) -> Any:
    """``--scenario`` (implied by the options that go with it) as the API's ``ScenarioSpec``, or
    the name of a largest-value scenario; checked before any fit (the spec checks which options
    go with which scenario)."""
    from bayes_risk._constraints import Interval, check_value
    from bayes_risk._specs import cli_fields, spec_values
    from bayes_risk.attribute.specs import ScenarioSpec
    from bayes_risk.cli.parsers.attribute import LARGEST_VALUE_CHOICES
    from bayes_risk.exceptions import ValidationError

    values = spec_values(ScenarioSpec, vars(args))
    by_records = args.known_records is not None or args.known_fraction is not None
    given = args.scenario or ("partially-known" if args.known else
                              "two-records" if args.pairs else
                              "known-records" if by_records else "worst-case")
    if args.known_curve:
        if given != "worst-case":
            raise ValidationError(
                "--known-curve sets the known records at each share itself (share 1 is the worst "
                "case): drop --scenario, --known-records and --known-fraction.",
                code="OPTION_CONFLICT")
        for share in args.known_curve:  # checked before the run the curve follows
            check_value(share, Interval(float, 0, 1), "--known-curve", code="BAD_OPTION_VALUE")
        if "seed" in values:  # the curve's seed (the spec's applies to known-records only)
            check_value(values.pop("seed"), Interval(int, 0), "ScenarioSpec.seed")
    largest = given in LARGEST_VALUE_CHOICES
    flags = {f.name: opt.flag for f, opt in cli_fields(ScenarioSpec)}
    scenario_options = [flags[k] for k in values] + [o for o, v in (
        ("--pairs", args.pairs), ("--known-records", args.known_records)) if v is not None]
    if largest and args.column is None:
        raise ValidationError(f"--scenario {given} needs --column (the magnitude column).",
                              code="OPTION_REQUIRED")
    if largest and scenario_options:
        raise ValidationError(f"{', '.join(scenario_options)}: not with --scenario {given} (the "
                              "intruder guesses the largest value of --column).",
                              code="OPTION_CONFLICT")
    for option, value, only in (("--column", args.column, LARGEST_VALUE_CHOICES),
                                ("--upper", args.upper, LARGEST_VALUE_CHOICES[:2]),
                                ("--delta", args.delta, LARGEST_VALUE_CHOICES),
                                ("--total-known", args.total_known or None, ("second-largest",))):
        if value is not None and given not in only:
            what = "the largest-value scenarios " if len(only) > 1 else ""
            raise ValidationError(f"{option} applies to {what}(--scenario {'|'.join(only)}), "
                                  f"not {given}.", code="OPTION_CONFLICT")
    if args.known_sweep and given != "worst-case":
        raise ValidationError(
            "--known-sweep sets the known columns of every subset itself (the empty subset is "
            "the worst case): drop --known and --scenario.", code="OPTION_CONFLICT")
    if largest:
        return given.replace("-", "_")
    return ScenarioSpec(
        kind=given.replace("-", "_"), **values,
        pairs=None if args.pairs is None else parse_pairs(args.pairs),
        known_records=parse_records(args.known_records, n, "--known-records"))


def parse_pairs(text: str) -> list[tuple[int, int]]:
    """``--pairs``: ``"0:1,2:5"`` or a file with one pair per line (``I J``, ``I,J`` or ``I:J``);
    ``ValidationError`` for a malformed pair (a record outside the original: the library's
    check of ``ScenarioSpec.pairs``)."""
    from pathlib import Path

    from bayes_risk.exceptions import ValidationError

    path = Path(text)
    if path.is_file():
        items = [ln.strip() for ln in path.read_text().splitlines()
                 if ln.strip() and not ln.lstrip().startswith("#")]
        where = f"file {text!r}"
    else:
        items = [t.strip() for t in text.split(",") if t.strip()]
        where = "--pairs"
    out = []
    for it in items:
        parts = [p for p in it.replace(":", " ").replace(",", " ").replace(";", " ").split()]
        if len(parts) != 2 or not all(p.isdigit() for p in parts):
            raise ValidationError(f"{where}: {it!r} is not a pair of record numbers; expected "
                                  "'I:J' such as '0:1,2:5' (a file: one pair 'I J' per line); "
                                  "records are numbered from 0.", code="BAD_OPTION_VALUE")
        i, j = int(parts[0]), int(parts[1])
        if i == j:
            raise ValidationError(f"{where}: pair {it!r} names record {i} twice; a pair is two "
                                  "different records (for one record: --scenario worst-case).",
                                  code="BAD_OPTION_VALUE")
        out.append((i, j))
    if not out:
        raise ValidationError(f"{where} holds no pair.", code="BAD_OPTION_VALUE")
    return out


def _run_largest_value(args: argparse.Namespace, scenario: str, model: Any, original: Any,
                       synthetic: Any) -> int:
    """The Wei & Reiter largest-value scenarios: ``largest_value.csv`` and ``summary.json``."""
    from bayes_risk.attribute.largest_value import largest_value_risk
    from bayes_risk.exceptions import ValidationError

    if args.records is not None:
        raise ValidationError("--records does not apply: the target is the largest value.",
                              code="OPTION_CONFLICT")
    table, summary = largest_value_risk(
        model, original, synthetic, args.column, scenario=scenario, upper=args.upper,
        total_known=args.total_known, allow_other_model=args.allow_other_model,
        **({} if args.delta is None else {"delta": args.delta}))
    summary = {"scenario": args.scenario, **summary,
               "inputs": {"model": str(args.model), **inputs_summary(args)},
               "reference": "Wei & Reiter (2016), as summarised in Hu (2019, section 3.3.3)"}
    write_run(args, [
        f"largest value of {args.column!r} ({args.scenario} intruder): P(within "
        f"{summary['delta']:.0%}) = {summary['P_interval']:.3f}, p_true = "
        f"{summary['p_true']:.3f}, mode = {summary['mode']:g} (truth {summary['largest_value']:g})",
    ], summary, tables={"largest_value.csv": table})
    return 0


def _business(args: argparse.Namespace) -> bool:
    """Whether the run is of the business-data measures, which read the release alone; the
    options of the model-based measures are refused beside them (before anything is read)."""
    from bayes_risk.exceptions import ValidationError

    given = args.relative_difference is not None or args.closest_match is not None
    if not given:
        if args.top is not None:
            raise ValidationError("--top applies to --relative-difference.",
                                  code="OPTION_CONFLICT")
        return False
    model_options = [flag for flag, v in (
        ("--model", args.model), ("--scenario", args.scenario), ("--column", args.column),
        ("--pairs", args.pairs), ("--known-records", args.known_records),
        ("--known-curve", args.known_curve), ("--known-sweep", args.known_sweep),
        ("--records", args.records)) if v is not None]
    if model_options:
        raise ValidationError(
            f"{', '.join(model_options)}: not with --relative-difference or --closest-match, "
            "which read the release alone (no model, no record selection); run them "
            "separately.", code="OPTION_CONFLICT")
    if args.delta is not None and args.relative_difference is None:
        raise ValidationError("--delta applies to --relative-difference (or the largest-value "
                              "scenarios), not --closest-match.", code="OPTION_CONFLICT")
    return True


#: the business-data measures (the release alone): a row of the runner
BUSINESS = Run("bayes_risk.attribute.business:business_run",
               argument_groups={"relative": RELATIVE_DIFFERENCE_ARGUMENTS,
                                "closest": CLOSEST_MATCH_ARGUMENTS},
               reads=(("delta", lambda args, read: args.delta),),
               files=lambda res, args: res.files())


def run(args: argparse.Namespace) -> int:
    """Handler of ``bayes-risk attribute``."""
    from bayes_risk._specs import spec_values
    from bayes_risk.attribute.api import EstimatorSpec
    from bayes_risk.attribute.candidates import model_candidates
    from bayes_risk.attribute.run import attribute_run
    from bayes_risk.auditing.plots import ATTRIBUTE_FIGURES  # the audit writes the same files
    from bayes_risk.cli._run import command_line_options

    if _business(args):
        return BUSINESS(args)
    # checked before any file is read (--plugin-replicates is the plug-in's n_bootstrap)
    estimator = EstimatorSpec(**spec_values(EstimatorSpec, vars(args)))
    original, synthetic = read_inputs(args)
    spec = _scenario(args, len(original))  # checked before any fit
    check_max_size(args)
    model = _model(args, original, synthetic, estimator.plugin_replicates)
    if not args.allow_other_model:  # refused before any refit; allowed: each measure warns
        from bayes_risk.data.provenance import check_release_model

        check_release_model(model, synthetic, original)
    if isinstance(spec, str):
        return _run_largest_value(args, spec, model, original, synthetic)
    scenario = spec.kind
    records = parse_records(args.records, len(original))
    pairs = spec.pairs
    # the low-risk intruder (scenario empty) has no candidate sets: --candidates as given
    candidates = (args.candidates if scenario == "empty"
                  else model_candidates(args.candidates, model, original))
    # the sweep's known= is this command's --known-sweep, not its --known (the run itself is
    # then the worst case: _scenario refused --known)
    names = {"known": "--known-sweep"} if args.known_sweep else {}
    with dask_client(args) as client, command_line_options(names):
        risk = None
        if client is not None:
            from bayes_risk.distributed import attribute_risk as distributed

            risk = functools.partial(distributed, **dask_kwargs(args, client))
        parts = attribute_run(
            original, synthetic, model=model, records=records, scenario=spec,
            known_sweep=args.known_sweep, max_size=args.max_size, known_curve=args.known_curve,
            curve_seed=0 if args.known_seed is None else args.known_seed, risk=risk,
            progressbar=not args.quiet, executor=client, candidates=candidates,
            prior=args.prior, estimator=estimator, random_seed=args.random_seed,
            allow_other_model=args.allow_other_model)
    result, ksweep, curve = parts.result, parts.known_sweep, parts.known_curve
    summary = result.to_dict()
    summary["scenario"] = scenario
    if ksweep is not None:
        summary["known_sweep"] = ksweep.to_dict()
    if curve is not None:
        summary["known_curve"] = curve.to_dict()
    summary["inputs"] = {  # in the order given
        "model": str(args.model)
        if args.model is not None
        else f"{synthetic.method} synthesizer rebuilt from the release manifest",
        **inputs_summary(args, records=args.records,
                         **({} if pairs is None else {"pairs": args.pairs}),
                         **({} if args.known_records is None
                            else {"known_records": args.known_records})),
    }
    # records.csv with its index: column "record" (or "pair")
    tables: dict[str, Any] = {"records.csv": result.to_dataframe().to_csv}
    figures = {name: (result, kind) for kind, name, _ in ATTRIBUTE_FIGURES}
    if ksweep is not None:
        more_tables, more_figures = ksweep.files()
        tables, figures = {**tables, **more_tables}, {**figures, **more_figures}
    if curve is not None:
        tables["known_curve.csv"] = curve.table
        figures["known_curve.png"] = (curve, "curve")
    write_run(args, parts.text_lines(), summary, tables=tables, figures=figures)
    return 0
