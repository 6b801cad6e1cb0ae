"""``bayes-risk synthesize``: m synthetic datasets by a registered synthesizer or a saved model."""

from __future__ import annotations

import argparse
from typing import Any

from bayes_risk._constraints import OneOf, Requires, check_relations

__all__ = ["run"]

#: ``-m`` with ``--model`` when not given
_DEFAULT_M_SAVED = 5


def _synthesizer_class(args: argparse.Namespace) -> tuple[type, dict[str, Any]]:
    """``--method``'s registered class and its settings, checked before any data is read."""
    from bayes_risk.contract import capabilities
    from bayes_risk.exceptions import ValidationError
    from bayes_risk.fit_options.trees import tree_options
    from bayes_risk.models import get_synthesizer
    from bayes_risk.registry import check_required, model_settings

    cls = get_synthesizer(args.method)
    info = capabilities(cls)
    if info.convergence:
        raise ValidationError(f"--method {args.method}: {cls.__name__} is fitted by MCMC, whose "
                              "convergence checks 'bayes-risk fit' reports; fit it with "
                              f"'bayes-risk fit ORIGINAL --method {args.method} --out MODEL_DIR', "
                              "then synthesize with 'bayes-risk synthesize --model MODEL_DIR'.",
                              code="OPTION_CONFLICT")
    options = tree_options()
    settings = model_settings(cls, args.method, options, vars(args),
                              run={"progressbar": not args.quiet})
    check_required(cls, args.method, synthesized=args.synthesize, settings=settings,
                   options=options)
    return cls, settings


def run(args: argparse.Namespace) -> int:
    """Run ``bayes-risk synthesize``; returns the exit status."""
    import numpy as np

    from bayes_risk._memory import (
        check_release_size,
        check_saved_release,
        forest_bytes,
        load_what_the_run_loads,
    )
    from bayes_risk._rng import given_or_fresh
    from bayes_risk.cli._common import read_records_table, write_run
    from bayes_risk.data import SyntheticData, check_m
    from bayes_risk.exceptions import ValidationError
    from bayes_risk.fit_options.trees import tree_options

    sampled = _sampling(args)
    if (args.original is None) == (args.model is None) and not (sampled and args.model):
        raise ValidationError("give either ORIGINAL (a confidential table, with --method) or "
                              "--model DIR (a model saved by 'bayes-risk fit'), not both and not "
                              "neither" + (" (with --populations: ORIGINAL, the census, and "
                                           "--method or --model)" if sampled else "") + ".",
                              code="OPTION_CONFLICT" if args.original is not None
                              else "OPTION_REQUIRED")
    seed = given_or_fresh(args.random_seed)  # recorded in the manifest
    if args.model is not None:
        _refuse_fitting_options(args)
        from bayes_risk.models import load_model

        # with --populations, ORIGINAL is the census the model was fitted to, sampled from
        m = None if sampled else check_m(args.m if args.m is not None else _DEFAULT_M_SAVED, "-m")
        df = read_records_table(args) if sampled else None
        model = load_model(args.model, original=df, model_function=args.model_function)
        labels = _model_labels(args.model)
        if not sampled:
            check_saved_release(model, m)
    else:
        if args.method is None:
            raise ValidationError("--method (cart, rf, pmm or another registered synthesizer) is "
                                  "required with ORIGINAL.", code="OPTION_REQUIRED")
        cls, settings = _synthesizer_class(args)
        m = check_m(args.m if args.m is not None else int(getattr(cls, "default_m", 5)), "-m")
        from bayes_risk._specs import parse_records
        from bayes_risk.cli._common import schema_from_args
        from bayes_risk.contract import capabilities
        from bayes_risk.data.statfiles import file_labels
        from bayes_risk.registry import check_option_columns

        df = read_records_table(args)
        labels = file_labels(df)
        schema = schema_from_args(df, args, categorical_only=capabilities(cls).categorical_only)
        check_option_columns(settings, tree_options(), schema)
        load_what_the_run_loads(cls, settings, df, lambda probe, folder: probe.synthesize(
            1, random_seed=0).save(folder, csv=args.csv), schema=schema,
            synthesized=args.synthesize)
        model = cls.from_settings(settings)
        check_release_size(m, len(df), len(df.columns),
                            float(df.memory_usage(deep=True).sum()), fitted=True,
                            forest=forest_bytes(model, len(df), args.synthesize or
                                                schema.synthesized or schema.names))
        records = None if args.records is None else np.asarray(
            parse_records(args.records, len(df)), dtype=np.int64
        )
        # fitting (tree tie-breaks, forest bootstraps) uses the stream [seed, 1], distinct
        # from the synthesis streams spawned from seed
        model.fit(df, schema=schema, synthesized=args.synthesize, records=records,
                  random_seed=[seed, 1])
    if sampled:
        from bayes_risk.models import sampling_with_synthesis

        syn = sampling_with_synthesis(model, df, populations=args.populations,
                                      sample_fraction=args.sample_fraction, random_seed=seed)
    else:
        syn = model.synthesize(m, random_seed=seed)
    if args.model is not None and not isinstance(syn, SyntheticData):
        raise ValidationError(f"the model in {args.model!r} returned {type(syn).__name__}, "
                              "not SyntheticData.", code="MODEL_UNSUITED")
    write_run(args, [ln.strip() for ln in repr(syn).splitlines()], extra=lambda tmp: syn.save(
        tmp, csv=args.csv, file_format=args.file_format, labels=labels))
    return 0


_SAMPLING = ("sampling with synthesis: the number of synthetic populations and the share of "
             "the census released from each")
#: the options against each other
RELATIONS = (
    Requires("model_function", "model", why="the function of a PyMC model folder (a PyMC model "
             "is fitted with 'bayes-risk fit'); leave it out with ORIGINAL"),
    Requires("populations", "sample_fraction", code="OPTION_REQUIRED", why=_SAMPLING),
    Requires("sample_fraction", "populations", code="OPTION_REQUIRED", why=_SAMPLING),
    OneOf(("m", "populations"), why="each synthetic population gives one released dataset"),
    Requires("populations", "original", code="OPTION_REQUIRED", why="the census the samples "
             "are drawn from; with --model, the census the model was fitted to"),
)


def _sampling(args: argparse.Namespace) -> bool:
    """Whether the run is sampling with synthesis, the options checked against each other."""
    check_relations(vars(args), RELATIONS)
    return args.populations is not None


def _refuse_fitting_options(args: argparse.Namespace) -> None:
    """Refuse, with ``--model``, the options of a fit (the saved model fixed them)."""
    from bayes_risk._specs import cli_arguments
    from bayes_risk.exceptions import ValidationError
    from bayes_risk.fit_options.trees import tree_options

    given = [name for name, val in (("--method", args.method), ("--synthesize", args.synthesize),
                                    ("--records", args.records)) if val is not None]
    given += [opt.flag for _, opt in cli_arguments(tree_options())
              if getattr(args, opt.dest) is not None]
    if given:
        raise ValidationError(f"{', '.join(given)} cannot be used with --model: the saved model "
                              "already fixes what is synthesized.", code="OPTION_CONFLICT")


def _model_labels(folder: str) -> Any:
    """The original file's labels that ``fit`` saved beside a model (``None``: none)."""
    from pathlib import Path

    from bayes_risk._io import read_json
    from bayes_risk.data.statfiles import LABELS_FILE, FileLabels

    f = Path(folder) / LABELS_FILE
    if not f.is_file():
        return None
    return FileLabels.from_dict(read_json(f, f"{f} cannot be read.", code="MODEL_DAMAGED"))
