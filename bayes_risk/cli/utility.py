"""``bayes-risk utility``: pMSE and interval overlap of synthetic datasets against the original."""

from __future__ import annotations

import argparse

from bayes_risk.cli._common import inputs_summary, run_seed

__all__ = ["run"]


def run(args: argparse.Namespace) -> int:
    """Compute the utility summary and write the output folder."""
    from bayes_risk._specs import argument_values, spec_values
    from bayes_risk._utility_specs import UTILITY_ARGUMENTS, OverlapSpec, PropensitySpec
    from bayes_risk.cli._common import read_inputs, release_schema, write_run
    from bayes_risk.utility.summary import utility_summary

    seed = run_seed(args)  # recorded in summary.json: a CART / permutation run repeats exactly
    # the settings' checks before the inputs are read
    propensity = PropensitySpec(**spec_values(PropensitySpec, vars(args)))
    overlap = OverlapSpec(**spec_values(OverlapSpec, vars(args)))
    original, syn = read_inputs(args)
    schema = release_schema(original, syn, args)
    summary = utility_summary(
        original, syn, schema=schema, propensity=propensity, overlap=overlap,
        random_seed=seed, progressbar=not args.quiet,
        **argument_values(UTILITY_ARGUMENTS, vars(args)))  # synthesized: default the release's
    d = summary.to_dict()
    d["inputs"] = inputs_summary(args)
    tables = {"overlap.csv": summary.overlap, "tables.csv": summary.tables.tables,
              "marginals.csv": summary.marginals, "quality.csv": summary.quality.shapes,
              "quality_pairs.csv": summary.quality.pair_trends}
    if summary.comparison is not None:
        tables["comparison.csv"] = summary.comparison
    write_run(args, summary.headline().splitlines(), d, tables=tables)
    return 0
