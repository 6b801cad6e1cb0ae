"""``bayes-risk identification``: identification disclosure risk of a synthetic release."""

from __future__ import annotations

import argparse
import dataclasses
import functools
from typing import Any

from bayes_risk.cli._common import (
    check_max_size,
    inputs_summary,
    parse_numbers,
    parse_radius,
    write_run,
)

__all__ = ["run"]


def _engine_options(args: argparse.Namespace, schema: Any) -> dict[str, Any]:
    """``schema``, ``match`` and ``population`` of ``identification_risk`` / ``radius_sweep``:
    the specs from their options (:func:`~bayes_risk._specs.spec_values`, the specs check
    them), the files they name read here."""
    from bayes_risk._specs import spec_values
    from bayes_risk.cli._common import missing_labels, numeric_columns, read_records_table
    from bayes_risk.data.io import read_table
    from bayes_risk.identification.specs import MatchSpec, PopulationSpec

    given = vars(args)
    population = spec_values(PopulationSpec, given)
    population.pop("selection", None)  # the run conditions on --selection itself (records)
    counts = population.get("counts")
    if isinstance(counts, str) and counts.startswith("true:"):
        population["counts"] = read_table(counts.split(":", 1)[1])
    if args.targets:
        population["targets"] = read_records_table(args.targets, "--targets",
                                                   missing_labels(args), numeric_columns(args))
    return dict(schema=schema,
                match=MatchSpec(**{**spec_values(MatchSpec, given),
                                   "radius": parse_radius(args.radius)}),
                population=PopulationSpec(**population))


def _check_known_options(args: argparse.Namespace) -> None:
    """The known columns' options, before any file is read: some known column, each once, and
    no knowledge sweep beside a selection (its subsets are not conditioned on it)."""
    from bayes_risk.exceptions import ValidationError

    if not (args.known_unsynthesized or args.known_synthesized):
        raise ValidationError(
            "no known column: give the intruder's quasi-identifiers with --known-unsynthesized "
            "COL ... (released unchanged) and/or --known-synthesized COL ... (synthesized)"
            + (" — --known-sweep adds subsets of its columns to this run, it does not replace "
               "it" if args.known_sweep else "") + ".",
            code="OPTION_REQUIRED",
        )
    from bayes_risk.data.validate import require_distinct

    require_distinct([*args.known_unsynthesized, *args.known_synthesized],
                     "--known-unsynthesized + --known-synthesized",
                     hint="Give each known column once, in the option of its role.",
                     code="BAD_OPTION_VALUE")
    if args.selection is not None and args.known_sweep is not None:
        raise ValidationError(
            "--known-sweep does not condition on --selection: a subset of the known columns "
            "may not tell the intruder whether a target was selected. Run the sweep without "
            "--selection.", code="OPTION_CONFLICT")


def run(args: argparse.Namespace) -> int:
    """Run ``bayes-risk identification`` (see the module docstring)."""
    from bayes_risk._memory import fixed_mmap_threshold, lean_process

    # posterior replicates (--model) are drawn by models that may use BLAS
    lean_process(blas_threads=args.model is not None)
    fixed_mmap_threshold()

    from bayes_risk._memory import release_free_memory
    from bayes_risk.cli._common import (
        dask_client,
        dask_kwargs,
        read_inputs,
        release_schema,
    )
    from bayes_risk.data.io import write_csv
    from bayes_risk.exceptions import ValidationError
    from bayes_risk.identification.radius import SEARCH_RADII
    from bayes_risk.identification.run import LARGE_TABLES, identification_run
    from bayes_risk.identification.specs import REFINE_POINTS

    _check_known_options(args)
    original, syn = read_inputs(args)
    # the manifest's roles and types (Urban, Marital as categories: no radius), the options on top
    schema = release_schema(original, syn, args) or syn.schema
    kw = _engine_options(args, schema)
    aggregation = args.aggregation.replace("-", "_") if args.aggregation else None
    per_dataset = aggregation == "per_dataset" or (aggregation is None and args.compat)
    if args.records_output == "per-dataset" and not per_dataset:
        raise ValidationError("--records-output per-dataset needs --aggregation per-dataset (or "
                              "--compat): pooled probabilities give one row per target.",
                              code="OPTION_CONFLICT")
    grid = parse_numbers(args.radius_sweep, "--radius-sweep")  # "" is refused, never ignored
    search_grid = (None if args.radius_search is None else list(SEARCH_RADII)
                   if args.radius_search == "default"
                   else parse_numbers(args.radius_search, "--radius-search"))
    if args.radius_refine is not None and search_grid is None:
        raise ValidationError("--radius-refine needs --radius-search (it refines that search).",
                              code="OPTION_REQUIRED")
    check_max_size(args)
    replicates = _posterior_replicates(args, original, syn)
    release_free_memory()  # the CSV readers' buffers
    # the command writes no pooled probabilities: the run keeps none (its memory, the sweep's)
    run_aggregation = aggregation if replicates is not None or per_dataset else "pooled_measures"
    from bayes_risk.identification.selection import release_rule

    recorded = args.selection is None and release_rule(syn) is not None
    known, synthesized, given = ([*args.known_unsynthesized, *args.known_synthesized],
                                 list(args.known_synthesized), None)
    if args.selection is not None:  # every run below for the intruder who knows R
        from bayes_risk.identification.selection import conditioned

        given = conditioned(original, syn, _selection(args, syn), known=known,
                            synthesized=synthesized, schema=kw["schema"], match=kw["match"],
                            population=kw["population"], replicates=replicates)
        original, syn, known, synthesized = (given.original, given.synthetic, given.known,
                                             given.synthesized)
        kw.update(schema=given.schema, population=given.population)
    from bayes_risk.identification.sampled import sampled_inputs

    # a sample of the census from synthetic populations: every census unit a target
    # (membership unknown unless --membership says otherwise: the point of the design)
    population = (kw["population"] if getattr(args, "membership", None) is not None
                  else dataclasses.replace(kw["population"], membership="unknown"))
    sampled = None if replicates is not None else sampled_inputs(
        original, syn, known=known, synthesized=synthesized, population=population)
    if sampled is not None:
        original, syn = sampled.original, sampled.synthetic
        synthesized = sampled.synthesized if sampled.synthesized is not None else synthesized
        kw.update(population=sampled.population)
    inputs = [original, syn]  # handed over: freed once encoded when nothing else reads them
    del original, syn
    with dask_client(args) as client:
        executor = None
        if client is not None:
            from bayes_risk.executors import DaskExecutor

            executor = DaskExecutor(**dask_kwargs(args, client))
        run = identification_run(
            inputs, known=known, synthesized=synthesized, search=search_grid,
            refine=REFINE_POINTS if args.radius_refine is None else args.radius_refine,
            sweep=grid, known_sweep=args.known_sweep or None, max_size=args.max_size,
            free_inputs=True, replicates=replicates, aggregation=run_aggregation,
            progressbar=not args.quiet, executor=executor, **kw)
    del inputs, kw  # the inputs: the result holds what is written
    res = run.result
    if given is not None:
        given.annotate(res)
    if sampled is not None:
        sampled.annotate(res)
    release_free_memory()  # the inputs, the matching engine's indexes and buffers
    out = res.to_dict()
    out["settings"]["records_output"] = args.records_output
    for name, part in (("radius_sweep", run.sweep), ("radius_search", run.search),
                       ("known_sweep", run.known_sweep)):
        if part is not None:
            out[name] = part.to_dict()
    out["inputs"] = inputs_summary(args, **({"targets": str(args.targets)} if args.targets
                                            else {}))
    lines = run.text_lines()
    if recorded:  # a selection rule the manifest records and --selection leaves unused
        lines.append("the release's manifest records why records were selected for synthesis: "
                     "--selection release gives the risk for the intruder who knows it")
    tables, figures = run.files(records=args.records_output)
    write_run(args, lines, out, figures=figures, dpi=120, tables={
        name: functools.partial(write_csv, t) if name in LARGE_TABLES else t
        for name, t in tables.items()})
    return 0


def _selection(args: argparse.Namespace, syn: Any) -> Any:
    """``selection=`` of ``--selection``; ``records``: the release's synthesized records."""
    if args.selection.strip() != "records":
        return args.selection
    from bayes_risk.exceptions import ValidationError

    flags = getattr(syn, "synthesized_records", None)
    if flags is None:
        raise ValidationError(
            "--selection records: the release's manifest lists no synthesized records (a "
            "partially synthetic release of selected records lists them). Give the rule as an "
            "expression on the known columns, or 'release'.", code="SELECTION_NOT_RECORDED")
    return flags


def _posterior_replicates(args: argparse.Namespace, original, syn):
    """The ``PosteriorReplicates`` of ``--model`` (``None`` without it): the options given,
    the others at the replicates' defaults (which check them)."""
    from bayes_risk._specs import argument_values, cli_arguments
    from bayes_risk.identification.specs import REPLICATES_FIELDS

    given = argument_values(REPLICATES_FIELDS, vars(args))
    if args.model is None:
        flags = [opt.flag for name, opt in cli_arguments(REPLICATES_FIELDS) if name in given] + (
            ["--allow-other-model"] if args.allow_other_model else [])
        if flags:
            from bayes_risk.exceptions import ValidationError

            raise ValidationError(f"{', '.join(flags)} need(s) --model (the fitted synthesis "
                                  "model the replicates are drawn from).", code="OPTION_REQUIRED")
        return None
    from bayes_risk.cli._common import read_model
    from bayes_risk.identification.replicates import PosteriorReplicates
    from bayes_risk.models import rebuild_synthesizer

    model = (rebuild_synthesizer(original, syn) if args.model == "release"
             else read_model(args, original))
    if hasattr(model, "progressbar"):  # the replicates show their own progress
        model.progressbar = False
    if "max_replicates" in given:  # >= 1: a bad --max-replicates is reported as itself
        given["min_replicates"] = max(1, min(500, given["max_replicates"]))
    return PosteriorReplicates(model, **given, random_seed=args.random_seed,
                               allow_other_model=args.allow_other_model)
