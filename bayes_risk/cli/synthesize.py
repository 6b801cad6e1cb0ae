"""``bayes-risk synthesize``: m synthetic datasets by a registered synthesizer or a saved model."""

from __future__ import annotations

import argparse
from typing import Any

from bayes_risk._constraints import OneOf, Requires, check_relations

__all__ = ["run"]

#: ``-m`` with ``--model`` when not given
_DEFAULT_M_SAVED = 5


def run(args: argparse.Namespace) -> int:
    """Run ``bayes-risk synthesize``; returns the exit status."""
    from bayes_risk._memory import check_saved_release
    from bayes_risk._rng import given_or_fresh
    from bayes_risk._specs import argument_values
    from bayes_risk.cli._common import read_records_table, write_run
    from bayes_risk.data import SyntheticData, check_m
    from bayes_risk.exceptions import ValidationError
    from bayes_risk.fit_options.trees import tree_options
    from bayes_risk.models.fitting import fit_synthesizer

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
        from bayes_risk.cli._common import schema_from_args
        from bayes_risk.data.statfiles import file_labels

        # fitting (tree tie-breaks, forest bootstraps) uses the stream [seed, 1], distinct
        # from the synthesis streams spawned from seed
        model, m, df = fit_synthesizer(
            lambda: read_records_table(args), **argument_values(fit_synthesizer, vars(args)),
            options=argument_values(tree_options(), vars(args)),
            infer=lambda df, **kw: schema_from_args(df, args, **kw),
            probe=lambda release, folder: release.save(folder, csv=args.csv),
            random_seed=[seed, 1], progressbar=not args.quiet)
        labels = file_labels(df)
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
    from bayes_risk.models.fitting import fit_synthesizer

    given = [opt.flag for name, opt in cli_arguments(fit_synthesizer) if name != "m"
             and getattr(args, opt.key) is not None]
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
