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
    write_run(args, _summary_lines(summary, given=args.synthesized is not None), d,
              tables=tables)
    return 0


def _summary_lines(s, *, given: bool) -> list[str]:
    p = s.pmse
    if s.synthesized_inferred:
        how = "inferred: columns differing from the original"
    else:  # --synthesized, else the roles a SyntheticData folder records
        how = "given" if given else "recorded in the release's manifest"
    lines = [
        f"utility of m = {s.m} synthetic dataset(s) vs the original (n = {p.n_original})",
        f"synthesized columns ({how}): {', '.join(s.synthesized) or 'none'}",
        f"pMSE ({p.method}"
        + (f", max order {p.max_order}" if p.method == "logit" else "")
        + f"; null {p.null}): mean {p.mean_pmse:.6g}",
        f"S_pMSE (pMSE / null expectation): mean {p.mean_ratio:.4g}"
        f"  [per dataset {min(p.ratio):.4g} .. {max(p.ratio):.4g}]",
        f"standardised pMSE: mean {p.mean_std:.4g}",
    ]
    if p.method == "logit":
        lines.append(f"k (estimable coefficients): {sorted(set(int(k) for k in p.k))}")
    lines.append(f"interval overlap ({s.estimand_kind.replace('_', ' ')}, {len(s.overlap)} "
                 f"estimands): mean {s.mean_overlap:.4f}")
    q = s.quality
    lines.append(f"quality score (SDMetrics' definitions): {q.score:.4f} (column shapes "
                 f"{q.column_shapes:.4f}, column pair trends {q.column_pair_trends:.4f})")
    t = s.tables.tables
    worst = t.sort_values("S_pMSE", ascending=False, kind="stable").head(3)
    lines.append(f"per-table utility ({len(t)} tables of 1 to {s.tables.settings['order']} "
                 "columns): largest S_pMSE " + ", ".join(
                     f"{n} {v:.3g}" for n, v in zip(worst["table"], worst["S_pMSE"],
                                                    strict=True)))
    lines += [n[0].lower() + n[1:] for n in s.comparison_notes()]
    if s.warnings:
        lines.append(f"warnings: {', '.join(s.warnings)}")
    return lines
