"""The attacks step's verdict lines: anonymeter's singling-out (per mode), linkability and
inference risks against their thresholds, the largest over the datasets
(:doc:`/methods/attacks`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from bayes_risk.auditing import remedies
from bayes_risk.auditing.outcome import StepOutcome, step_file
from bayes_risk.auditing.plan import AuditPlan
from bayes_risk.auditing.verdict_base import CAVEATS, Baseline, Verdict, caused, dataset_range

__all__ = ["attacks_lines"]


#: what the anonymeter lines take as the worst case over their intruder's choices
_ATTACKS_WORST_CASE = (
    "datasets: the largest risk over the m datasets, each attacked alone; predicates and "
    "neighbours: anonymeter's defaults (500 attacks a mode, 3 columns, the nearest row; not "
    "searched); inference: the synthesized column most at risk, the intruder knowing every "
    "other column; control: the holdout, its count corrected for its size")


def _attack_caveats(row: Any, size_ratio: float) -> tuple[str, ...]:
    """The caveats of one headline row of an attack's table (its dataset and mode)."""
    have = set()
    if row.get("n_queries", row["n_attacks"]) < row["n_attacks"]:
        have.add("FEW_SINGLING_OUT_QUERIES")
    if row["baseline_rate"] >= row["main_rate"]:
        have.add("ATTACK_NOT_BETTER_THAN_BASELINE")
    # a holdout of another size: the control count was extrapolated (far) or could not be
    corr = row.get("control_correction", np.nan)
    if row.get("n_control_raw", 0) > 0 and size_ratio != 1.0 and (
            not np.isfinite(corr) or not 0.5 <= size_ratio <= 2.0):
        have.add("CONTROL_SIZE_CORRECTION")
    return tuple(c for c in CAVEATS["attacks"] if c in have)


def attacks_lines(plan: AuditPlan, a: StepOutcome) -> list[Verdict | Baseline]:
    """anonymeter's singling-out (per mode), linkability and inference risk, the largest over
    datasets."""
    th = plan.thresholds
    out: list[Verdict | Baseline] = []
    so, lk = a.result["singling_out"], a.result["linkability"]
    cause = remedies.attacks_cause(plan, a)
    s = so.settings
    ratio = (s["n_original_distinct"] / s["n_holdout_distinct"]
             if s.get("n_holdout_distinct") else 1.0)
    lvl = f"{100 * float(s['confidence_level']):.3g} %"

    def interval(r: Any) -> str:  # the headline row's interval and, of several, its dataset
        return f"{lvl} interval {r['ci_low']:.3g}–{r['ci_high']:.3g}" + (
            f" (dataset {int(r['dataset'])}, the largest of {plan.m})" if plan.m > 1 else "")

    for _, r in so.headline().iterrows():
        mode = str(r["mode"])
        each = so.table.loc[so.table["mode"] == mode, "risk"]
        what = ("one column" if mode == "univariate" else f"{int(r['n_cols'])} columns")
        v = Verdict(
            "attacks", f"{mode} singling-out risk", float(r["risk"]),
            th.singling_out_risk, "max", step_file(a, "singling_out.csv"),
            interval(r) + f"; of {int(r['n_queries'])} predicates that single out a synthetic row, "
            f"{int(r['n_main'])} single out a record of the original and "
            f"{r['n_control']:.4g} one of the holdout"
            + (f" (corrected for its size by {r['control_correction']:.3g})"
               if np.isfinite(r["control_correction"]) else "")
            + f"; random predicates: {int(r['n_baseline'])} of {int(r['n_attacks'])}",
            _attack_caveats(r, ratio), spread=dataset_range(each),
            intruder=f"holds a synthetic dataset and writes predicates on {what} that match "
            "exactly one of its rows, claiming that each isolates one person of the "
            "confidential data (anonymeter's singling-out attack)",
            threshold_name="singling_out_risk", worst_case=_ATTACKS_WORST_CASE)
        out.append(caused(v, *cause[mode]))
    if lk is not None:
        r = lk.headline().iloc[0]
        (ca, cb), k = lk.settings["aux_columns"], int(r["n_neighbors"])
        each = lk.table.loc[lk.table["n_neighbors"] == k, "risk"]
        v = Verdict(
            "attacks", f"linkability risk ({', '.join(ca)} with {', '.join(cb)})",
            float(r["risk"]), th.linkability_risk, "max", step_file(a, "linkability.csv"),
            interval(r) + f"; records relinked through their {k} nearest synthetic row"
            f"{'s' if k > 1 else ''}: {int(r['n_main'])} of {int(r['n_attacks'])} of the "
            f"original, {int(r['n_control'])} of as many of the holdout, "
            f"{int(r['n_baseline'])} by random rows",
            _attack_caveats(r, 1.0), spread=dataset_range(each),
            intruder=f"holds two tables about the same people, one with {', '.join(ca)}, the "
            f"other with {', '.join(cb)}, and links them through the nearest synthetic rows "
            "(anonymeter's linkability attack)",
            threshold_name="linkability_risk", worst_case=_ATTACKS_WORST_CASE)
        out.append(caused(v, *cause["linkability"]))
    inf = a.result.get("inference")
    if inf is not None:
        out.append(caused(_inference_line(plan, inf, a, interval), *cause["inference"]))
    return out


def _inference_line(plan: AuditPlan, inf: Any, a: StepOutcome, interval: Any) -> Verdict:
    """anonymeter's inference risk of the secret most at risk (an undefined risk first)."""
    h = inf.headline()
    r = h.iloc[int(np.argmax(h["risk"].fillna(np.inf).to_numpy()))]
    secret = str(r["secret"])
    others = "; ".join(f"{o['secret']} {o['risk']:.3g}" for _, o in h.iterrows()
                       if o["secret"] != secret)
    n_ctrl = r["n_attacks_control"]
    return Verdict(
        "attacks", f"inference risk ({secret})", float(r["risk"]),
        plan.thresholds.inference_risk, "max", step_file(a, "inference.csv"),
        interval(r) + f"; {secret} guessed right from the nearest synthetic row: "
        f"{int(r['n_main'])} of {int(r['n_attacks'])} records of the original, "
        f"{r['n_control']:.4g} of {n_ctrl:.4g} of the holdout, {int(r['n_baseline'])} of "
        f"{int(r['n_attacks_baseline'])} by random synthetic values"
        + (f"; the other synthesized columns: {others}" if others else ""),
        _attack_caveats(r, 1.0), spread=dataset_range(inf.table.loc[inf.table["secret"] == secret,
                                                              "risk"]),
        intruder="knows every other column of a record and guesses each synthesized column "
        "as the value of the nearest synthetic row (anonymeter's inference attack; a number "
        f"within {100 * inf.settings['tolerance']:.3g} % of the guess, a category when equal)",
        threshold_name="inference_risk", worst_case=_ATTACKS_WORST_CASE)
