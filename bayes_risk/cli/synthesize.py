"""``bayes-risk synthesize``: m synthetic releases with CART, random forests, PMM or a saved model.

Two forms::

    bayes-risk synthesize ORIGINAL.csv --method cart|rf|pmm --synthesize COL [COL ...] \\
        [--categorical ...] [-m 20] [--random-seed 1] --out DIR
    bayes-risk synthesize --model MODEL_DIR -m 5 [--random-seed 2] --out SYN_DIR

Both write a :class:`~bayes_risk.data.SyntheticData` folder (``syn_001.parquet`` … and
``manifest.json``; ``--csv`` adds CSV copies), atomically.
"""

from __future__ import annotations

import argparse

__all__ = ["run"]

_DEFAULT_M = {"cart": 20, "rf": 20, "pmm": 1, "model": 5}


def _fresh_seed() -> int:
    import numpy as np

    # a recorded seed makes a run without --random-seed reproducible from its manifest
    return int(np.random.SeedSequence().generate_state(1, dtype=np.uint32)[0])


def _synthesizer(args: argparse.Namespace):
    from bayes_risk.models import get_synthesizer

    cls = get_synthesizer(args.method)
    if args.method == "cart":
        bw = args.bandwidth
        return cls(
            min_leaf=args.min_leaf, min_deviance=args.min_deviance, max_depth=args.max_depth,
            prune_to_diversity=args.prune_to_diversity,
            donor=args.donor.replace("-", "_"), unroutable=args.unroutable.replace("-", "_"),
            smoothing=bool(args.smoothing), bandwidth=bw, n_jobs=args.n_jobs,
            progressbar=not args.quiet,
        )
    if args.method == "rf":
        return cls(
            n_trees=args.n_trees, probabilities=args.probabilities.replace("-", "_"),
            alpha=args.alpha, oob_only=args.oob_only, min_oob_trees=args.min_oob_trees,
            procedure=args.procedure, visit_sequence=args.visit_sequence,
            group_by=_group_by(args.group_by),
            min_group_size=args.min_group_size, n_jobs=args.n_jobs, progressbar=not args.quiet,
        )
    return cls(identifying=args.identifying, threshold=args.threshold, tie=args.tie,
               progressbar=not args.quiet)


def _group_by(items):
    """``--group-by``: one bare column name, or ``COL=GROUP`` pairs."""
    from bayes_risk.exceptions import ValidationError

    if not items:
        return None
    pairs = [i for i in items if "=" in i]
    if not pairs:
        if len(items) != 1:
            raise ValidationError(
                f"--group-by: give one grouping column or COL=GROUP pairs. Got {items}.",
                code="BAD_OPTION_VALUE",
            )
        return items[0]
    if len(pairs) != len(items):
        raise ValidationError(
            f"--group-by: mix of bare names and COL=GROUP pairs: {items}.", code="BAD_OPTION_VALUE"
        )
    out = {}
    for i in items:
        c, g = i.split("=", 1)
        if not c or not g or c in out:
            raise ValidationError(
                f"--group-by: {i!r} is not a new COL=GROUP pair.", code="BAD_OPTION_VALUE"
            )
        out[c] = g
    return out


def run(args: argparse.Namespace) -> int:
    """Run ``bayes-risk synthesize``; returns the exit status."""
    import numpy as np

    from bayes_risk.cli._run import output_dir
    from bayes_risk.data import SyntheticData, check_m
    from bayes_risk.exceptions import ValidationError

    if (args.original is None) == (args.model is None):
        raise ValidationError(
            "give either ORIGINAL (a confidential table, with --method) or --model DIR "
            "(a model saved by 'bayes-risk fit'), not both and not neither.",
            code="OPTION_CONFLICT",
        )
    seed = args.random_seed if args.random_seed is not None else _fresh_seed()
    if args.model is not None:
        given = [
            name for name, val in (("--method", args.method), ("--synthesize", args.synthesize),
                                   ("--identifying", args.identifying), ("--records", args.records))
            if val is not None
        ]
        if given:
            raise ValidationError(
                f"{', '.join(given)} cannot be used with --model: the saved model already "
                "fixes what is synthesized.",
                code="OPTION_CONFLICT",
            )
        m = check_m(args.m if args.m is not None else _DEFAULT_M["model"], "-m")
        from bayes_risk.models import load_model

        model = load_model(args.model)
        syn = model.synthesize(m, random_seed=seed)
        if not isinstance(syn, SyntheticData):
            raise ValidationError(
                f"the model in {args.model!r} returned {type(syn).__name__}, not SyntheticData.",
                code="MODEL_UNSUITED",
            )
    else:
        if args.method is None:
            raise ValidationError(
                "--method (cart, rf or pmm) is required with ORIGINAL.", code="OPTION_REQUIRED"
            )
        m = check_m(args.m if args.m is not None else _DEFAULT_M[args.method], "-m")
        if args.method in ("cart", "rf") and not args.synthesize:
            raise ValidationError(
                f"--synthesize COL [COL ...] is required with --method {args.method}.",
                code="OPTION_REQUIRED",
            )
        if args.method == "pmm" and not args.identifying:
            raise ValidationError(
                "--identifying COL [COL ...] is required with --method pmm.", code="OPTION_REQUIRED"
            )
        from bayes_risk.cli._common import (
            missing_labels,
            parse_records,
            read_records_table,
            schema_from_args,
        )

        df = read_records_table(args.original, "ORIGINAL", missing_labels(args))
        schema = schema_from_args(df, args)
        if args.synthesize:
            schema.check_columns(args.synthesize, "--synthesize")
        if args.identifying:
            schema.check_columns(args.identifying, "--identifying")
        model = _synthesizer(args)
        records = None if args.records is None else np.asarray(
            parse_records(args.records, len(df)), dtype=np.int64
        )
        # fitting (tree tie-breaks, forest bootstraps) uses the stream [seed, 1], distinct
        # from the synthesis streams spawned from seed
        model.fit(df, schema=schema, synthesized=args.synthesize, records=records,
                  random_seed=[seed, 1])
        syn = model.synthesize(m, random_seed=seed)
    with output_dir(args) as tmp:
        syn.save(tmp, csv=args.csv)
    _print_summary(args, syn)
    return 0


def _print_summary(args: argparse.Namespace, syn) -> None:
    from bayes_risk.cli._common import print_summary

    source = f"model {args.model}" if args.model is not None else str(args.original)
    lines = [f"synthesized {syn.m} dataset(s) ({syn.method}) of {len(syn[0])} records from "
             f"{source}"]
    if syn.schema is not None and syn.schema.synthesized:
        lines.append(f"synthesized columns: {', '.join(map(str, syn.schema.synthesized))}")
    if syn.synthesized_records is not None:
        lines.append(f"records synthesized: {int(syn.synthesized_records.sum())}")
    lines.append(f"random seed: {syn.random_seed} (recorded in manifest.json)")
    print_summary(lines, args.out)
