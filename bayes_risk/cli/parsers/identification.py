"""``bayes-risk identification``: its arguments and its run (the runner's row)."""

from __future__ import annotations

import argparse
from typing import Any

from bayes_risk.cli import _common
from bayes_risk.cli._common import add_input_arguments, add_run_arguments, add_type_arguments
from bayes_risk.cli._runner import Run
from bayes_risk.cli.parsers import add_argument_options, add_spec_options
from bayes_risk.identification.specs import (
    MATCHING,
    REPLICATES,
    REPLICATES_FIELDS,
    MatchSpec,
    PopulationSpec,
)

__all__ = ["add_parser", "RUN", "IDENTIFICATION_RISK"]

#: the library function declaring the intruder's options (--known-unsynthesized ...)
IDENTIFICATION_RISK = "bayes_risk.identification.api:identification_risk"


def _check(args: argparse.Namespace) -> None:
    """Some known column, each once, before any file is read (the library checks the other
    options against each other)."""
    from bayes_risk._memory import fixed_mmap_threshold, lean_process

    # before numpy loads: posterior replicates (--model) are drawn by models that may use BLAS
    lean_process(blas_threads=args.model is not None)
    fixed_mmap_threshold()
    from bayes_risk.data.validate import require_distinct
    from bayes_risk.exceptions import ValidationError

    if not (args.known_unsynthesized or args.known_synthesized):
        raise ValidationError(
            "no known column: give the intruder's quasi-identifiers with --known-unsynthesized "
            "COL ... (released unchanged) and/or --known-synthesized COL ... (synthesized)"
            + (" — --known-sweep adds subsets of its columns to this run, it does not replace "
               "it" if args.known_sweep else "") + ".",
            code="OPTION_REQUIRED",
        )
    require_distinct(_known(args),
                     "--known-unsynthesized + --known-synthesized",
                     hint="Give each known column once, in the option of its role.",
                     code="BAD_OPTION_VALUE")


def _known(args: argparse.Namespace) -> list[str]:
    """``known=``: --known-unsynthesized, then --known-synthesized."""
    from bayes_risk._specs import argument_values

    return argument_values(IDENTIFICATION_RISK, vars(args)).get("known", [])


def _per_dataset(args: argparse.Namespace) -> bool:
    """Whether the datasets are evaluated one at a time (``--aggregation``, else ``--compat``)."""
    aggregation = args.aggregation.replace("-", "_") if args.aggregation else None
    return aggregation == "per_dataset" or (aggregation is None and args.compat)


def _population(args: argparse.Namespace, read: dict[str, Any]) -> Any:
    """The ``PopulationSpec`` of its options (``None``: none given), with the tables of
    ``--population-counts true:FILE`` and ``--targets`` read; of a sampled release (matched on
    its census's units), without ``--membership``, the intruder who does not know the sample
    (the library's default)."""
    import dataclasses

    from bayes_risk._specs import spec_values
    from bayes_risk.data.io import read_table
    from bayes_risk.data.synthetic import sampled_records

    values = spec_values(PopulationSpec, vars(args))
    counts = values.get("counts")
    if isinstance(counts, str) and counts.startswith("true:"):
        values["counts"] = read_table(counts.split(":", 1)[1])
    if args.targets:
        values["targets"] = _common.read_records_table(args, "targets", "--targets")
    if not values:
        return None
    spec = PopulationSpec(**values)  # checked as given
    if ("membership" not in values and args.model is None  # no replicates: the census's
            and sampled_records(read["synthetic"]) is not None):
        return dataclasses.replace(spec, membership="unknown")
    return spec


def _replicates(args: argparse.Namespace, read: dict[str, Any]) -> Any:
    """The ``PosteriorReplicates`` of ``--model`` (``None`` without it): the options given,
    the others at the replicates' defaults (which check them)."""
    from bayes_risk._specs import argument_values, cli_arguments

    given = argument_values(REPLICATES_FIELDS, vars(args))
    if args.model is None:
        flags = [opt.flag for name, opt in cli_arguments(REPLICATES_FIELDS) if name in given] + (
            ["--allow-other-model"] if args.allow_other_model else [])
        if flags:
            from bayes_risk.exceptions import ValidationError

            raise ValidationError(f"{', '.join(flags)} need(s) --model (the fitted synthesis "
                                  "model the replicates are drawn from).", code="OPTION_REQUIRED")
        return None
    from bayes_risk.identification.replicates import PosteriorReplicates
    from bayes_risk.models import rebuild_synthesizer

    original, syn = read["original"], read["synthetic"]
    model = (rebuild_synthesizer(original, syn) if args.model == "release"
             else _common.read_model(args, original))
    if hasattr(model, "progressbar"):  # the replicates show their own progress
        model.progressbar = False
    if "max_replicates" in given:  # >= 1: a bad --max-replicates is reported as itself
        given["min_replicates"] = max(1, min(500, given["max_replicates"]))
    return PosteriorReplicates(model, **given, random_seed=args.random_seed,
                               allow_other_model=args.allow_other_model)


def _files(run: Any, args: argparse.Namespace) -> tuple[dict[str, Any], dict[str, Any]]:
    """The run's tables (the large ones written by pyarrow) and figures."""
    import functools

    from bayes_risk.data.io import write_csv
    from bayes_risk.identification.run import LARGE_TABLES

    tables, figures = run.files()
    return {name: functools.partial(write_csv, t) if name in LARGE_TABLES else t
            for name, t in tables.items()}, figures


#: identification_run of ORIGINAL and SYN, handed over (freed once encoded): the run, the radius
#: search and sweep and the knowledge sweep given, for the intruder of --selection
RUN = Run(
    "bayes_risk.identification.run:identification_run", check=_check, specs={"match": MatchSpec},
    reads=(("schema", lambda args, v: _common.release_schema(v["original"], v["synthetic"], args)
            # the manifest's roles and types (Urban, Marital as categories: no radius)
            or v["synthetic"].schema),
           ("population", _population),
           ("replicates", _replicates),
           # the command writes no pooled probabilities: the run keeps none (its memory, the
           # sweep's) unless the replicates or the records per dataset need them
           ("aggregation", lambda args, v: (
               (args.aggregation or "").replace("-", "_") or None
               if v["replicates"] is not None or _per_dataset(args) else "pooled_measures")),
           ("known", lambda args, v: _known(args)),
           # none given: none synthesized (not the release's manifest, the library's default)
           ("synthesized", lambda args, v: list(args.known_synthesized or ())),
           "progressbar"),
    inputs=("original", "synthetic", "targets?"), files=_files, dask=True, hand_over=True,
    dpi=120)


_DESCRIPTION = """\
Estimate how likely an intruder who knows the true quasi-identifiers of the original records (or of
an external target table) is to find them among the released partially synthetic records (Reiter &
Mitra 2009; Hornby & Hu 2021). Writes DIR/records.csv (one row per target; with --aggregation
per-dataset and --records-output per-dataset one row per target and dataset; none with
--records-output none), DIR/summary.json (file-level measures per dataset and averaged, the
settings and warning codes) and, with --radius-sweep, DIR/radius_sweep.csv and
DIR/radius_sweep.png; with --radius-search, DIR/radius_search.csv and DIR/radius_search.png (the
worst case over the radii of every numeric known column, as the audit reads it); with
--known-sweep, DIR/known_sweep.csv (one row per subset of the candidate known columns),
DIR/known_sweep_drivers.csv, DIR/known_sweep_levels.csv, DIR/known_sweep.png (risk against the
number of columns known, the frontier highlighted) and DIR/known_sweep_drivers.png. With --model,
the synthesized known columns are replicated R times from the fitted model's posterior predictive
(Drechsler & Reiter 2008, eq. 5) instead of using the m released datasets: summary.json then holds
each measure's Monte Carlo standard error (mc_se) and its spread over replicates
(replicate_quantiles), and DIR/running_estimate.png the running estimate with its +/- 2 MCSE band.

example:
  bayes-risk identification CEdata.csv syn1.csv syn2.csv \\
      --known-unsynthesized Age Urban Marital --known-synthesized Income \\
      --categorical Urban Marital Tenure --radius Age=0.1 --radius Income=0.1 \\
      --radius-type percentage --out risk/
"""


def add_parser(subparsers: Any) -> None:
    """Register ``bayes-risk identification``."""
    p = subparsers.add_parser("identification",
                              help="identification risk (matching known quasi-identifiers to "
                              "released records)", description=_DESCRIPTION,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    add_input_arguments(p, recoded=True)
    add_argument_options(p, IDENTIFICATION_RISK, fields=("known", "synthesized"))
    add_type_arguments(p)
    p.add_argument_group(MATCHING)  # listed before the intruder's options
    add_argument_options(p, IDENTIFICATION_RISK, fields=("aggregation",))
    add_spec_options(p, MatchSpec, PopulationSpec)
    add_argument_options(p, RUN.function)  # the run's radius search, sweeps and records.csv
    p.add_argument_group(REPLICATES).add_argument(
        "--model", default=None, metavar="DIR",
        help="draw the replicates from this fitted model (a folder written by 'bayes-risk fit'); "
        "the word 'release' instead of DIR refits the CART synthesizer that made a CART release "
        "from its manifest")
    add_argument_options(p, REPLICATES_FIELDS)
    add_run_arguments(p, RUN,
                      "records.csv, summary.json, radius_sweep.csv/.png, "
                      "radius_search.csv/.png, "
                      "known_sweep*.csv/.png, running_estimate.png", dask="targets",
                      check="the release SYN or the --model", other_model=True)
