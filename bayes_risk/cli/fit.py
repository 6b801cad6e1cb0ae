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
    from bayes_risk._sampling_spec import Sampling
    from bayes_risk._specs import argument_values, spec_values
    from bayes_risk.cli._common import read_records_table, schema_from_args, write_run
    from bayes_risk.contract import capabilities
    from bayes_risk.models.fitting import fit_model
    from bayes_risk.registry import fit_options

    # warnings are printed as one line each and recorded in summary.json (cli._run)
    model, df = fit_model(lambda: read_records_table(args),
                          **argument_values(fit_model, vars(args)),
                          # the model's options by its settings' names, as Python gives them
                          options=argument_values(fit_options(), vars(args)),
                          sampling=spec_values(Sampling, vars(args)),
                          infer=lambda df, **kw: schema_from_args(df, args, **kw),
                          random_seed=args.random_seed, progressbar=not args.quiet)
    from bayes_risk._io import write_json
    from bayes_risk.data.statfiles import LABELS_FILE, file_labels

    labels = file_labels(df)
    tables = {} if labels is None else {  # for 'synthesize --model DIR --format sav|dta|xpt'
        LABELS_FILE: lambda path: write_json(path, labels.to_dict())}
    write_run(args, model.text_lines(),
              _summary(args, model) if capabilities(type(model)).convergence else None,
              tables=tables,
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

