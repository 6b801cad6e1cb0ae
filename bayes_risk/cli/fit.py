"""``bayes-risk fit``: fit a synthesis model and save it (arguments:
:mod:`bayes_risk.cli.parsers.fit`, model options: :func:`bayes_risk.registry.fit_options`).
"""

from __future__ import annotations

import argparse
from typing import Any

__all__ = ["run"]


def run(args: argparse.Namespace) -> int:
    """Fit the model, save it and print a summary; the model's capabilities decide the path
    (memory check and convergence summary for MCMC models)."""
    from bayes_risk._memory import lean_process

    # pyarrow with the system allocator before the table is read: its own pool kept about
    # 8 MiB of the reading's buffers to the end of the fit (NYexample's DPMPM fit)
    lean_process(blas_threads=True)
    import numpy as np

    from bayes_risk._lazy import overlap
    from bayes_risk._memory import check_forest_memory, check_posterior_memory
    from bayes_risk._sampling_spec import Sampling
    from bayes_risk._specs import spec_values
    from bayes_risk.cli._common import read_records_table, schema_from_args, write_run
    from bayes_risk.contract import capabilities
    from bayes_risk.exceptions import ValidationError
    from bayes_risk.models import get_synthesizer, list_synthesizers
    from bayes_risk.models.persistence import warm_up_writer
    from bayes_risk.registry import (
        check_option_columns,
        check_required,
        fit_options,
        model_settings,
    )

    if args.method is None:
        raise ValidationError("--method is required: the synthesis model, one of "
                              f"{', '.join(list_synthesizers())}.", code="OPTION_REQUIRED")
    cls = get_synthesizer(args.method)
    info = capabilities(cls)
    if not info.persistence:
        raise ValidationError(f"--method {args.method}: {cls.__name__} cannot be saved (it has no "
                              "save and load), so 'fit' cannot write a model folder.",
                              code="MODEL_UNSUITED")
    options = fit_options()
    # the MCMC options given, the model-specific ones, the seed and the progress bar: each
    # only if the model takes it
    settings = model_settings(cls, args.method, options, vars(args),
                              sampling=spec_values(Sampling, vars(args)),
                              run={"random_seed": args.random_seed, "progressbar": not args.quiet})
    # what the model cannot default (ModelInfo.required), refused before the data are read
    check_required(cls, args.method, synthesized=args.synthesize, settings=settings,
                   options=options)
    df = read_records_table(args)
    if args.columns:
        from bayes_risk.data.schema import did_you_mean

        for c in args.columns:
            if c not in df.columns:
                raise ValidationError(f"--columns: column {c!r} is not in {args.original} "
                                      f"(columns: {list(df.columns)})." +
                                      did_you_mean(c, df.columns), code="UNKNOWN_COLUMN")
        df = df[list(args.columns)]
    schema = schema_from_args(df, args, categorical_only=info.categorical_only,
                              synthesized=args.synthesize or None)
    check_option_columns(settings, options, schema)
    model = cls.from_settings(settings)  # --draws ... grouped as sampling=Sampling(...)
    fit_kw: dict[str, Any] = {}
    if args.records is not None:
        from bayes_risk._specs import parse_records

        # every synthesizer's fit takes records= (the common fit signature, models/base.py)
        fit_kw["records"] = np.asarray(parse_records(args.records, len(df)), dtype=np.int64)
    if info.convergence:
        check_posterior_memory(model, settings, df, schema)
        # warnings are printed as one line each and recorded in summary.json (cli._run); the
        # NetCDF writer's imports run on the other core while the sampler's kernels run
        with overlap(warm_up_writer):
            model.fit(df, schema=schema, random_seed=args.random_seed, **fit_kw)
    else:  # CART, random forests, PMM, or a model such as an exact conjugate posterior
        check_forest_memory(model, settings, df, schema, args.synthesize or None)
        model.fit(df, schema=schema, synthesized=args.synthesize or None,
                  random_seed=args.random_seed, **fit_kw)
    from bayes_risk._io import write_json
    from bayes_risk.data.statfiles import LABELS_FILE, file_labels

    labels = file_labels(df)
    tables = {} if labels is None else {  # for 'synthesize --model DIR --format sav|dta|xpt'
        LABELS_FILE: lambda path: write_json(path, labels.to_dict())}
    write_run(args, model.text_lines(),
              _summary(args, model) if info.convergence else None, tables=tables,
              extra=model.save)
    return 0


def _summary(args: argparse.Namespace, model: Any) -> dict[str, Any]:
    """``summary.json`` of the fit: whether its convergence checks passed, and which failed."""
    conv = model.convergence_summary()
    return {
        "command": "fit",
        "method": args.method,
        "convergence_passed": bool(conv["passed"]),
        "failed_convergence_checks": [dict(c, fit="model") for c in conv["failed_checks"]],
        # which chains agree on α, k* and the log-likelihood (REGIMES_DISAGREE when not)
        "regimes": conv.get("regimes"),
    }

