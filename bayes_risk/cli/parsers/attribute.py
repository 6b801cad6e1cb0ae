"""``bayes-risk attribute``: its arguments and its runs (the runner's rows: the model's
intruders, the business-data measures)."""

from __future__ import annotations

import argparse
from typing import Any

from bayes_risk._constraints import Requires, check_relations
from bayes_risk._specs import parse_records
from bayes_risk.attribute.specs import (
    LARGEST_VALUE_SCENARIOS,
    REFIT_COST_HELP,
    EstimatorSpec,
    ScenarioSpec,
)
from bayes_risk.cli import _common
from bayes_risk.cli._common import add_input_arguments, add_run_arguments
from bayes_risk.cli._runner import Run
from bayes_risk.cli.parsers import add_argument_options, add_spec_options

__all__ = ["add_parser", "RUN", "BUSINESS"]

#: ``--scenario``'s Wei & Reiter largest-value scenarios
LARGEST_VALUE_CHOICES = tuple(s.replace("_", "-") for s in LARGEST_VALUE_SCENARIOS)
#: the intruder of the largest value, whose options the command takes
LARGEST_VALUE = "bayes_risk.attribute.largest_value:largest_value_risk"
#: the intruder of the other scenarios (--candidates, --prior)
ATTRIBUTE_RISK = "bayes_risk.attribute.api:attribute_risk"


#: the business-data measures' options against each other
BUSINESS_RELATIONS = (Requires("top", "relative_difference",
                               why="its targets are the K largest values of each column"),)


def _business(args: argparse.Namespace) -> bool:
    """Whether the run is of the business-data measures, which read the release alone; the
    options of the model-based measures are refused beside them (before anything is read)."""
    from bayes_risk.exceptions import ValidationError

    check_relations(vars(args), BUSINESS_RELATIONS)
    if args.relative_difference is None and args.closest_match is None:
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


def _given_scenario(args: argparse.Namespace) -> str:
    """``--scenario``, else the one the options that go with it imply."""
    by_records = args.known_records is not None or args.known_fraction is not None
    return args.scenario or ("partially-known" if args.known else
                             "two-records" if args.pairs else
                             "known-records" if by_records else "worst-case")


def _check(args: argparse.Namespace) -> None:
    """The run's relations (the library's), on the options before any file is read or any
    synthesizer refitted."""
    from bayes_risk.attribute.run import RELATIONS

    check_relations({**vars(args), "scenario": _given_scenario(args).replace("-", "_")}, RELATIONS)


def _scenario(args: argparse.Namespace, read: dict[str, Any]) -> Any:
    """``--scenario`` (implied by the options that go with it) as the API's ``ScenarioSpec``,
    or the name of a largest-value scenario."""
    from bayes_risk._specs import spec_values

    given = _given_scenario(args)
    values = spec_values(ScenarioSpec, vars(args))
    if args.known_curve:  # --known-seed is the curve's (the spec's applies to known-records)
        values.pop("seed", None)
    if given in LARGEST_VALUE_CHOICES and not values:  # (else refused by the spec)
        return given.replace("-", "_")
    if "known_records" in values:  # record numbers of ORIGINAL
        values["known_records"] = parse_records(values["known_records"], len(read["original"]),
                                                "--known-records")
    return ScenarioSpec(kind=given.replace("-", "_"), **values)


def _model(args: argparse.Namespace, read: dict[str, Any]) -> Any:
    """The saved model's likelihood, or the plug-in of the tree synthesizer that made the
    release (:func:`bayes_risk.models.release_likelihood`) with ``--plugin-replicates``;
    refused before any refit when it did not make the release (unless
    ``--allow-other-model``: each measure then warns)."""
    from bayes_risk.models import release_likelihood

    original, synthetic = read["original"], read["synthetic"]
    model = release_likelihood(
        original, synthetic, None if args.model is None else _common.read_model(args, original),
        random_seed=args.random_seed, n_bootstrap=read["estimator"].plugin_replicates)
    if not args.allow_other_model:
        from bayes_risk.data.provenance import check_release_model

        check_release_model(model, synthetic, original)
    return model


def _candidates(args: argparse.Namespace, read: dict[str, Any]) -> Any:
    """``--candidates``, with the model's grids; as given for the low-risk intruder (scenario
    empty: no candidate sets) and the largest-value scenarios (none)."""
    scenario, candidates = read["scenario"], read.get("candidates", "one-variable")
    if isinstance(scenario, str) or scenario.kind == "empty":
        return candidates
    from bayes_risk.attribute.candidates import model_candidates

    return model_candidates(candidates, read["model"], read["original"])


#: attribute_run of --model (else the release's plug-in), ORIGINAL and SYN: the scenario's run
#: with the knowledge sweep and the known-records curve given, or a largest-value intruder
RUN = Run(
    "bayes_risk.attribute.run:attribute_run", passes=(ATTRIBUTE_RISK,), check=_check,
    specs={"estimator": EstimatorSpec},
    argument_groups={"largest_value": LARGEST_VALUE},
    reads=(("scenario", _scenario), ("model", _model), "records", ("candidates", _candidates),
           "random_seed", "progressbar",
           "allow_other_model", ("known_sweep", lambda args, v: args.known_sweep),
           ("known_curve", lambda args, v: args.known_curve),
           ("curve_seed", lambda args, v: args.known_seed or 0)),
    inputs=(("model", lambda args, v: str(args.model) if args.model is not None else
             f"{v['synthetic'].method} synthesizer rebuilt from the release manifest"),
            "original", "synthetic", "records", "pairs?", "known_records?"),
    files=lambda res, args: res.files(), dask=True,
    # the sweep's known= is --known-sweep, not --known (the run itself is then the worst case)
    options=lambda args: {"known": "--known-sweep"} if args.known_sweep else {})

#: the business-data measures (the release alone; ORIGINAL in another row order is the release's)
BUSINESS = Run("bayes_risk.attribute.business:business_run",
               argument_groups={"relative": "bayes_risk.attribute.business:relative_difference",
                                "closest": "bayes_risk.attribute.business:closest_match"},
               reads=(("delta", lambda args, read: args.delta),),
               files=lambda res, args: res.files(), row_order=False)


def _run(args: argparse.Namespace) -> int:
    """``bayes-risk attribute``: the business-data measures, or the model's intruders."""
    return (BUSINESS if _business(args) else RUN)(args)


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``bayes-risk attribute``."""
    p = subparsers.add_parser(
        "attribute",
        # ORIGINAL and SYN are required (checked by the run); argparse would show them optional
        usage="%(prog)s ORIGINAL SYN [SYN ...] [--model DIR] [--records RANGE|FILE] "
        "[options] --out DIR",
        help="attribute disclosure risk (intruder's posterior over each record's values)",
        description=(
            "Estimate, for each confidential record, the intruder's posterior probability of the "
            "record's true synthesized values among candidate values (Hu 2019), from a fitted "
            "Bayesian synthesis model and the released synthetic datasets. Default: worst-case "
            "intruder, one-variable-different candidates, uniform prior, stabilised estimator for "
            "class P models. A record's missing synthesized values (empty cells, and the codes "
            "declared when the model was fitted, such as -8) are not guessed: DPMPM and the MP "
            "Poisson mixture integrate them out; the CART and random-forest plug-ins hold them "
            "as released (the intruder knows which values are missing; docs: user guide, Missing "
            "values). "
            + REFIT_COST_HELP + "."
        ),
    )
    p.add_argument("--model", default=None, metavar="DIR",
                   help="fitted model folder written by 'bayes-risk fit'; omit for a CART or "
                   "random-forest release, whose synthesizer is refitted from the release's "
                   "manifest and ORIGINAL and checked to reproduce the release exactly (plug-in "
                   "likelihood; see the methods page, section Tree synthesizers: plug-in "
                   "likelihoods)")
    add_input_arguments(p, " the model was fitted to")
    add_argument_options(p, ATTRIBUTE_RISK, fields=("records", "candidates", "prior"))
    add_argument_options(p, RUN.function, fields=("scenario",))
    add_argument_options(p, "bayes_risk.attribute.known_curve:known_fraction_curve", LARGEST_VALUE,
                         "bayes_risk.attribute.knowledge:attribute_known_sweep")
    add_argument_options(p, RUN.function, fields=("max_size",))
    # the business-data measures, which read the release alone (no model)
    add_argument_options(p, *BUSINESS.argument_groups.values())
    add_spec_options(p, ScenarioSpec, EstimatorSpec)
    add_run_arguments(p, _run,
                      "records.csv, summary.json and diagnostic plots",
                      dask="records", check="the release SYN or the --model", other_model=True)
    return p
