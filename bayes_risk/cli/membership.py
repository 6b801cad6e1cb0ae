"""``bayes-risk membership``: membership disclosure risk of a synthetic release."""

from __future__ import annotations

import argparse

from bayes_risk.cli._common import inputs_summary

__all__ = ["run"]


def run(args: argparse.Namespace) -> int:
    """Handler of ``bayes-risk membership``."""
    import math

    from bayes_risk._specs import argument_values, spec_values
    from bayes_risk.cli._common import (
        parse_records,
        read_holdout,
        read_inputs,
        read_model,
        write_run,
    )
    from bayes_risk.membership.api import membership_risk
    from bayes_risk.membership.specs import MEMBERSHIP_ARGUMENTS, AttackSpec, RatioSpec

    original, synthetic = read_inputs(args)
    holdout = read_holdout(args)
    model = read_model(args, original)
    result = membership_risk(
        model,
        original,
        synthetic,
        holdout=holdout,
        records=parse_records(args.records, len(original)),
        attack=AttackSpec(**spec_values(AttackSpec, vars(args))),
        ratio=RatioSpec(**spec_values(RatioSpec, vars(args))),
        progressbar=not args.quiet,
        random_seed=args.random_seed,
        allow_other_model=args.allow_other_model,
        **argument_values(MEMBERSHIP_ARGUMENTS, vars(args)),
    )
    summary = result.to_dict()
    summary["inputs"] = {
        "model": str(args.model),
        **inputs_summary(args, holdout=None if args.holdout is None else str(args.holdout),
                         records=args.records),
    }
    f = result.file

    def num(x: float) -> str:
        return "nan" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.3f}"

    def pct(x: float) -> str:  # a share in per cent, as the audit's verdict line gives it
        return "nan" if num(x) == "nan" else f"{100 * x:.3g} %"

    lines = [
        f"membership risk of {f['n_members']} members against {f['n_non_members']} "
        f"non-members ({f['n_flagged']} flagged, counted separately)",
        f"share of members with P(member) > {f['threshold']:g}: "
        f"{pct(f['share_members_above'])} of the members (summary.json: a fraction); "
        f"AUC - 0.5 = {num(f['auc_advantage'])}"
        + (f" (distance baseline {num(f['dcr_auc_advantage'])})"
           if "dcr_auc_advantage" in f else ""),
    ]
    if "share_members_revealed" in f:
        lines.append(f"CART plug-in: share of members revealed outright (P(member) = 1): "
                     f"{pct(f['share_members_revealed'])}")
    us = f.get("unsynthesized")
    if us:
        factor, matching = us["median_factor_members"], us["share_non_members_matching"]
        lines.append(
            f"partial synthesis: the released unsynthesized values ({', '.join(us['columns'])}) "
            f"multiply a member's likelihood ratio by a median of {num(factor)}; non-members "
            f"whose values match their slot's: {pct(matching)} (the others have P(member) = 0)")
    sel = f.get("selection")
    if sel:
        lines.append(f"selection {sel['rule']!r}: {sel['n_selected']} of {sel['n_records']} "
                     "records synthesized; members released whole (P(member) = 1, revealed): "
                     f"{sel['n_members_released_whole']}")
    write_run(args, lines, summary, tables={"records.csv": result.records.to_csv},
              figures={"p_member_hist.png": (result, "p_member"), "roc.png": (result, "roc"),
                       "dcr.png": (result, "dcr")})
    return 0
