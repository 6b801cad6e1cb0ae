"""``bayes-risk utility``: pMSE and interval overlap of synthetic datasets against the original.

::

    bayes-risk utility ORIGINAL.csv SYN1.csv [SYN2.csv ...] [--categorical Urban Marital Tenure] \\
        [--pmse logit|cart] [--max-order 0|1] [--null theory|perm|pairs|auto] \\
        [--formula "Income ~ Age + C(Marital)" ...] [--synthesized COL ...] \\
        [--random-seed N] [--quiet] --out DIR

Writes ``DIR/summary.json``, ``DIR/overlap.csv`` and, with ``--formula``,
``DIR/comparison.csv``; the folder appears complete or not at all.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from bayes_risk.cli._common import (
    add_out_argument,
    add_quiet_argument,
    add_seed_argument,
    add_type_arguments,
)

__all__ = ["add_parser", "run"]

_EPILOG = """\
examples:
  bayes-risk utility CEdata.csv syn/scenario1_syn*.csv --categorical Urban Marital Tenure \\
      --max-order 1 --out util_logit
  bayes-risk utility CEdata.csv syn_cart/ --categorical Urban Marital Tenure --pmse cart \\
      --random-seed 1 --out util_cart
  bayes-risk utility CEdata.csv syn_cart/ --categorical Urban Marital Tenure \\
      --formula "Income ~ Age + C(Marital)" "Expenditure ~ Income" --out util_reg

outputs (in --out, written atomically):
  summary.json     pMSE, S_pMSE (ratio to its null expectation), standardised pMSE and k per
                   synthetic dataset and averaged; interval-overlap figures per estimand and
                   per dataset; the synthesized columns (inferred when not given) and settings
  overlap.csv      one row per estimand: original and combined synthetic intervals, overlap
  comparison.csv   (with --formula) the coefficient comparison table
"""

def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Register the ``utility`` sub-command."""
    p = subparsers.add_parser(
        "utility",
        help="utility of synthetic datasets: pMSE, S_pMSE and confidence-interval overlap",
        description=(
            "Measure the utility of m synthetic datasets against the original: the propensity-"
            "score mean squared error (pMSE) with a logistic (synthpop-compatible) or CART "
            "propensity model, its ratio to the null expectation (S_pMSE) and standardised "
            "form, and the overlap of original and combined synthetic confidence intervals "
            "(Reiter's combining rules) for means and proportions or for the coefficients of "
            "user formulas."
        ),
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("original", metavar="ORIGINAL", help="confidential table (.csv or .parquet)")
    p.add_argument("synthetic", nargs="+", metavar="SYN",
                   help="synthetic datasets (.csv/.parquet, one per dataset) or one SyntheticData "
                   "folder written by 'bayes-risk synthesize'")
    add_type_arguments(p)
    p.add_argument("--pmse", choices=["logit", "cart"], default="logit",
                   help="propensity model (default logit: synthpop's utility.gen design)")
    p.add_argument("--max-order", type=int, default=1, metavar="{0,1}",
                   help="logit: 0 = main effects, 1 = plus all two-way interactions (default 1)")
    p.add_argument("--null", choices=["auto", "theory", "perm", "pairs"], default="auto",
                   help="pMSE null: chi-square theory (logit), label permutations, or pairs of "
                   "synthetic datasets (default auto: theory for logit, perm/pairs for cart)")
    p.add_argument("--n-perm", type=int, default=100, metavar="B",
                   help="permutations for --null perm (default 100)")
    p.add_argument("--formula", nargs="+", default=None, metavar="FORMULA",
                   help='statsmodels formulas whose coefficients are compared, e.g. '
                   '"Income ~ Age + C(Marital)" (default estimands: means and proportions '
                   "of the synthesized columns)")
    p.add_argument("--family", choices=["ols", "logit", "poisson"], default="ols",
                   help="model family of the formulas (default ols)")
    p.add_argument("--synthesized", nargs="+", default=None, metavar="COL",
                   help="synthesized columns (default: the roles recorded in a SyntheticData "
                   "folder, otherwise the columns that differ from the original in some "
                   "dataset)")
    p.add_argument("--alpha", type=float, default=0.05, metavar="A",
                   help="1 - confidence level of the intervals (default 0.05)")
    add_seed_argument(p)
    add_quiet_argument(p)
    add_out_argument(p, "summary.json, overlap.csv and comparison.csv")
    p.set_defaults(handler=run)
    return p


def run(args: argparse.Namespace) -> int:
    """Compute the utility summary and write the output folder."""
    from bayes_risk._io import write_json
    from bayes_risk.cli._common import read_records_table, schema_from_args
    from bayes_risk.cli._run import output_dir
    from bayes_risk.data.io import read_synthetic
    from bayes_risk.exceptions import ValidationError
    from bayes_risk.utility.summary import utility_summary

    out = Path(args.out)
    if args.max_order < 0:
        raise ValidationError(f"--max-order must be >= 0. Got {args.max_order}.")
    seed = args.random_seed
    if seed is None:
        import numpy as np

        # recorded in summary.json, so a CART / permutation run can be repeated exactly
        seed = int(np.random.SeedSequence().generate_state(1, dtype=np.uint32)[0])
    original = read_records_table(args.original, "ORIGINAL")
    syn = read_synthetic(args.synthetic, like=original)
    typed = any(getattr(args, a) for a in ("categorical", "ordinal", "count", "continuous"))
    schema = schema_from_args(original, args) if (typed or syn.schema is None) else None
    synthesized = args.synthesized
    if synthesized is None and syn.schema is not None and syn.schema.synthesized:
        synthesized = list(syn.schema.synthesized)  # roles recorded by `bayes-risk synthesize`
    summary = utility_summary(
        original,
        syn,
        schema=schema,
        pmse_method=args.pmse,
        max_order=args.max_order,
        estimands=args.formula,
        null=args.null,
        family=args.family,
        synthesized=synthesized,
        alpha=args.alpha,
        n_perm=args.n_perm,
        random_seed=seed,
        progressbar=not args.quiet,
    )
    d = summary.to_dict()
    d["inputs"] = {"original": str(args.original), "synthetic": [str(s) for s in args.synthetic]}
    with output_dir(args) as tmp:
        write_json(tmp / "summary.json", d)
        summary.overlap.to_csv(tmp / "overlap.csv", index=False)
        if summary.comparison is not None:
            summary.comparison.to_csv(tmp / "comparison.csv", index=False)
    _print_summary(summary, out)
    return 0


def _print_summary(s, out: Path) -> None:
    p = s.pmse
    how = "inferred: columns differing from the original" if s.synthesized_inferred else "given"
    lines = [
        f"utility of m = {s.m} synthetic dataset(s) vs the original (n = {p.n_original})",
        f"  synthesized columns ({how}): {', '.join(s.synthesized) or 'none'}",
        f"  pMSE ({p.method}"
        + (f", max order {p.max_order}" if p.method == "logit" else "")
        + f"; null {p.null}): mean {p.mean_pmse:.6g}",
        f"  S_pMSE (pMSE / null expectation): mean {p.mean_ratio:.4g}"
        f"  [per dataset {min(p.ratio):.4g} .. {max(p.ratio):.4g}]",
        f"  standardised pMSE: mean {p.mean_std:.4g}",
    ]
    if p.method == "logit":
        lines.append(f"  k (estimable coefficients): {sorted(set(int(k) for k in p.k))}")
    lines.append(
        f"  interval overlap ({s.estimand_kind.replace('_', ' ')}, {len(s.overlap)} estimands): "
        f"mean {s.mean_overlap:.4f}"
    )
    if s.warnings:
        lines.append(f"  warnings: {', '.join(s.warnings)}")
    files = ["summary.json", "overlap.csv"] + (["comparison.csv"] if s.comparison is not None
                                                else [])
    lines.append(f"  wrote {', '.join(str(out / f) for f in files)}")
    print("\n".join(lines), file=sys.stdout)
