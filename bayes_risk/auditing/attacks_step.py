"""The audit's step of anonymeter's attacks: singling out, linkability and inference."""

from __future__ import annotations

from typing import Any

from bayes_risk._io import write_json
from bayes_risk.auditing.context import StepContext, ran, skipped, step_folder, write_table
from bayes_risk.auditing.outcome import StepOutcome
from bayes_risk.auditing.plan import ATTACK_OPTIONS
from bayes_risk.results._base import plot_figure

__all__ = ["attacks_step"]


def attacks_step(ctx: StepContext) -> StepOutcome:
    """Singling-out, linkability and inference risk against the holdout (skipped without
    one); inference of each synthesized column from every other column."""
    from bayes_risk.attacks import inference_risk, linkability_risk, singling_out_risk

    if ctx.holdout is None:
        return skipped(
            "attacks", "no holdout was given (holdout= / --holdout: records of the population that "
            "the synthesis did not use), so the attacks' success cannot be read against the "
            "same attacks on records the release knows nothing about.")
    p = ctx.plan
    opts = ATTACK_OPTIONS
    n_cols = min(opts["n_cols"], len(ctx.schema))
    common = dict(holdout=ctx.holdout, schema=ctx.schema, random_seed=p.random_seed)
    so = singling_out_risk(ctx.original, ctx.synthetic, n_attacks=int(opts["n_attacks"]),
                           n_cols=int(n_cols), **common)
    # the intruder who knows every other column of a target: anonymeter's usual setting, and
    # that of the Bayesian attribute risk (a column left as released is not a secret)
    inf = (inference_risk(ctx.original, ctx.synthetic, secret=p.synthesized,
                          n_attacks=int(opts["n_attacks"]), tolerance=opts["tolerance"],
                          **common) if p.synthesized and len(ctx.schema) > 1 else None)
    lk, why_not = None, None
    if p.linkability_columns is None:
        why_not = ("every column is known to the intruder, so no second table is left to link "
                   "(give linkability_columns / --linkability)")
    else:
        n = min(int(opts["n_attacks"]), len(ctx.original), len(ctx.holdout))
        lk = linkability_risk(ctx.original, ctx.synthetic, aux_columns=p.linkability_columns,
                              n_attacks=n, n_neighbors=int(opts["n_neighbors"]), **common)
    folder = step_folder(ctx, "attacks")
    files: list[str] = []
    if folder is not None:
        write_json(folder / "summary.json", {
            "measure": "attacks", "singling_out": so.to_dict(),
            "linkability": None if lk is None else lk.to_dict(),
            "linkability_not_run": why_not,
            "inference": None if inf is None else inf.to_dict(),
            "warnings": list(dict.fromkeys(w for r in (so, lk, inf) if r is not None
                                           for w in r.warnings))})
        write_table(ctx, so.table, folder / "singling_out.csv")
        write_table(ctx, so.queries, folder / "singling_out_queries.csv")
        plot_figure(so, "risk").savefig(folder / "singling_out.png", dpi=100)
        files = ["summary.json", "singling_out.csv", "singling_out_queries.csv",
                 "singling_out.png"]
        if lk is not None:
            write_table(ctx, lk.table, folder / "linkability.csv")
            write_table(ctx, lk.records, folder / "linkability_records.csv")
            plot_figure(lk, "risk").savefig(folder / "linkability.png", dpi=100)
            files += ["linkability.csv", "linkability_records.csv", "linkability.png"]
        if inf is not None:
            write_table(ctx, inf.table, folder / "inference.csv")
            write_table(ctx, inf.records, folder / "inference_records.csv")
            plot_figure(inf, "risk").savefig(folder / "inference.png", dpi=100)
            files += ["inference.csv", "inference_records.csv", "inference.png"]
    result: dict[str, Any] = {"singling_out": so, "linkability": lk, "inference": inf}
    return ran("attacks", result, folder, files, linkability_not_run=why_not)
