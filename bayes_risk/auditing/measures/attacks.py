"""Anonymeter's attacks as one unit: the audit step (singling out, linkability and inference),
its verdict lines (each risk against its threshold, the largest over the datasets) and its
report section, named by ``MEASURE`` (:doc:`/methods/attacks`, :doc:`/adding_a_measure`)."""

from __future__ import annotations

from functools import partial
from typing import Any

import numpy as np

from bayes_risk._io import write_json
from bayes_risk._thresholds import builtin_thresholds
from bayes_risk.attacks.singling_out import singling_out_risk
from bayes_risk.auditing import remedies
from bayes_risk.auditing.context import StepContext, ran, step_folder, write_table
from bayes_risk.auditing.outcome import Measure, Need, StepCost, StepFigure, StepOutcome, step_file
from bayes_risk.auditing.plan import ATTACK_OPTIONS, AuditPlan
from bayes_risk.auditing.report_blocks import (
    Links,
    Section,
    step_section,
    table_block,
)
from bayes_risk.auditing.verdict_base import Baseline, Verdict, caused, dataset_range
from bayes_risk.exceptions import arg_name
from bayes_risk.results._base import plot_figure
from bayes_risk.results.attacks import SinglingOutResult


def attacks_applies(ctx: StepContext) -> str | None:
    """Why the step is left out: no holdout, the attacks' control (``None``: it runs)."""
    if ctx.holdout is None:
        return (f"no holdout was given ({arg_name('holdout', '...', cli='FILE')}: records of "
                "the population that the synthesis did not use), so the attacks' success cannot "
                "be read against the same attacks on records the release knows nothing about.")
    return None


def attacks_preflight(ctx: StepContext) -> None:
    """Refuse, before the first step, a holdout whose every row is a record of the original
    (``HOLDOUT_OVERLAPS_ORIGINAL``: the attacks' control would succeed as the main attack and
    understate the risk), on the columns the two share; the step checks its own columns again."""
    from bayes_risk.attacks._inputs import screen_control

    cols = [c for c in ctx.schema.names if c in ctx.holdout.columns]
    screen_control(ctx.original[cols], ctx.holdout[cols])


def attacks_step(ctx: StepContext) -> StepOutcome:
    """Singling-out, linkability and inference risk against the holdout (run with one:
    :func:`attacks_applies`), as ``bayes-risk attacks`` runs them
    (:func:`~bayes_risk.attacks.run.attacks_run`), with the audit's seed and settings
    (:data:`~bayes_risk.auditing.plan.ATTACK_OPTIONS`); inference of each synthesized column
    from every other column."""
    from bayes_risk._attack_specs import GuessSpec, PredicateSpec
    from bayes_risk.attacks.run import attacks_run

    p = ctx.plan
    opts = ATTACK_OPTIONS
    # the intruder who knows every other column of a target: anonymeter's usual setting, and
    # that of the Bayesian attribute risk (a column left as released is not a secret)
    inference = ({"secret": p.synthesized, "guess": GuessSpec(tolerance=opts["tolerance"])}
                 if p.synthesized and len(ctx.schema) > 1 else None)
    linkability, why_not = None, None
    if p.linkability_columns is None:
        why_not = ("every column is known to the intruder, so no second table is left to link "
                   "(give linkability_columns / --linkability)")
    else:
        linkability = {"aux_columns": p.linkability_columns,
                       "n_neighbors": int(opts["n_neighbors"])}
    run = attacks_run(ctx.original, ctx.synthetic, holdout=ctx.holdout, schema=ctx.schema,
                      random_seed=p.random_seed,
                      singling_out={"predicates": PredicateSpec(
                          n_cols=int(min(opts["n_cols"], len(ctx.schema))))},
                      linkability=linkability, inference=inference,
                      n_attacks=int(opts["n_attacks"]))
    folder = step_folder(ctx, "attacks")
    files: list[str] = []
    tables, figures = run.files()
    if folder is not None:
        d = run.to_dict()
        # why linkability did not run, beside it: the summary's keys in their former order
        write_json(folder / "summary.json", {k: d[k] for k in ("measure", "singling_out",
                                                               "linkability")}
                   | {"linkability_not_run": why_not} | d)
        # each attack's files together, its figure last (stable sort)
        parts = ("singling_out", "linkability", "inference")
        names = sorted([*tables, *figures],
                       key=lambda f: next(i for i, a in enumerate(parts) if f.startswith(a)))
        for name, frame in tables.items():
            write_table(ctx, frame, folder / name)
        files = ["summary.json", *names]
    result: dict[str, Any] = {"singling_out": run.singling_out, "linkability": run.linkability,
                              "inference": run.inference}
    return ran("attacks", result, folder, files,
               figures={name: StepFigure(partial(plot_figure, *fig))
                        for name, fig in figures.items()}, linkability_not_run=why_not)


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


@step_section("attacks", "attacks", "Singling out, linkability and inference (anonymeter)")
def attacks_section(sec: Section, s: Any, result: Any, links: Links) -> None:
    so, lk = s.result["singling_out"], s.result["linkability"]
    sec.p("anonymeter's attacks (Giomi et al. 2023; methods page 'Singling out, "
          "linkability and inference'), each made on the records of the original (main "
          "attack), on the holdout, records the synthesis did not use (control attack), and at "
          "random (baseline). The risk is the main attack's success beyond the control's, over "
          "what the control leaves: (main − control) / (1 − control), 0 when the release tells no "
          "more about its own records than about others, with its interval (Wilson score), "
          "clipped to [0, 1] as anonymeter does.")
    _attack_blocks(sec, s, links, so, "singling_out", "Singling out: predicates that match "
                   "exactly one synthetic row, and how often they single out a record (rates)",
                   "Singling-out risk per dataset and mode, with its interval")
    if lk is None:
        sec.p(f"Linkability was not run: {s.extra.get('linkability_not_run')}.")
    else:
        a, b = lk.settings["aux_columns"]
        sec.p(f"Linkability: the intruder holds one table with {', '.join(a)} and another "
              f"with {', '.join(b)} about the same people, and links a record's two parts when "
              "they share a nearest synthetic row.")
        _attack_blocks(sec, s, links, lk, "linkability", "Linkability: records relinked "
                       "through the nearest synthetic rows (rates)", "Linkability risk per "
                       "dataset and number of neighbours, with its interval")
    inf = s.result.get("inference")
    if inf is None:
        return
    sec.p("Inference: the intruder knows every other column of a record and guesses each "
          "synthesized column as the value of the nearest synthetic row (a number is guessed "
          f"right within {100 * inf.settings['tolerance']:.3g} % of the guess, a category when "
          "equal). The Bayesian attribute risk (attribute step) asks the same question of the "
          "model's posterior; this is what one concrete intruder achieves (methods page, "
          "'Inference and the Bayesian attribute risk').")
    _attack_blocks(sec, s, links, inf, "inference", "Inference: secrets guessed right from "
                   "the nearest synthetic row (rates)",
                   "Inference risk per dataset and secret, with its interval")


def _attack_blocks(sec: Section, s: Any, links: Links, res: Any, name: str, table: str,
                   figure: str) -> None:
    """An attack's risk table (its summary's, linked to ``name.csv``) and figure
    (``name.png``), each with its caption."""
    sec.blocks.append(table_block(res.summary().tables["risk"], links,
                                  step_file(s, f"{name}.csv"), table))
    sec.blocks.append(links.step_figure(s, f"{name}.png", figure))


def attacks_settings(plan: AuditPlan) -> None:
    """The settings table's rows of the attacks step (anonymeter's defaults,
    :data:`~bayes_risk.auditing.plan.ATTACK_OPTIONS`)."""
    a = partial(plan.add, MEASURE.name)
    a("singling-out predicates",
      f"univariate and multivariate ({ATTACK_OPTIONS['n_cols']} columns), "
      f"{ATTACK_OPTIONS['n_attacks']} per dataset and mode", "default", "anonymeter's defaults")
    lc, src = plan.linkability_columns, plan.linkability_source
    a("linkability tables",
      "not run (every column is known)" if lc is None
      else f"({', '.join(lc[0])}) and ({', '.join(lc[1])})", src,
      "default: the known columns and the other columns" if src == "default" else "")
    a("linkability nearest rows", ATTACK_OPTIONS["n_neighbors"], "default",
      "anonymeter's default; at most 500 records attacked in the original and in the holdout")
    a("inference secrets", "each synthesized column, the intruder knowing every other column",
      "default", "anonymeter's attack with the most knowledge of a target; a numeric guess is "
      f"right within {100 * ATTACK_OPTIONS['tolerance']:g} % of it, a category when equal")
    a("control set", "the holdout", "default",
      "the attacks run only with a holdout (records the synthesis did not use)")


def _distance_block() -> int:
    """Cells of the attacks' distance blocks (``attacks.linkability.nearest_rows``)."""
    from bayes_risk.attacks.linkability import _BLOCK_CELLS

    return int(_BLOCK_CELLS)


def _attacks_need(ctx: Any) -> float:
    """The least the step holds: every table coded as doubles (the original, the holdout and
    each dataset, ``attacks._inputs.code_table``), the singling-out predicates
    (:func:`~bayes_risk.attacks.singling_out.predicate_bytes`, the audit's settings), and a
    distance block with one temporary of its size and a dataset's row order drawn for a tied
    target (``nearest_rows``)."""
    from bayes_risk.attacks.singling_out import MODES, predicate_bytes

    p = len(ctx.schema)
    rows = [len(d) for d in ctx.synthetic]
    cells = p * (ctx.plan.n_records + len(ctx.holdout) + sum(rows))
    n_att = int(ATTACK_OPTIONS["n_attacks"])
    k = min(int(ATTACK_OPTIONS["n_cols"]), p)
    preds = predicate_bytes(n_att, k, MODES, len(rows), p, max(rows, default=0))
    return 8.0 * cells + preds + 2 * 8.0 * _distance_block() + 8.0 * max(rows, default=0)


def attacks_need(ctx: StepContext, left: float | None) -> Need:
    """The step's least need (:func:`_attacks_need`)."""
    return Need(_attacks_need(ctx), "the attacked records' distances to a dataset's records "
                f"in blocks of {_distance_block():,} cells")


#: the step's costs (:mod:`bayes_risk.auditing.memory_plan`): anonymeter's attacks, with a
#: holdout of half the original's size: 500 attacked records' distances to every released
#: record, for each attack (2,000 and 4,000 records, m = 2 and 5: 1.1–1.4 ms; 10,000 records,
#: m = 2: 2.1 ms, so the rate grows with n and is trusted only up to the 10,000 records measured)
COST = StepCost(rate=("records x datasets", 1.1e-3, 2.1e-3), sizes=(10_000, 10_000),
                need=attacks_need)


#: the warning codes that question each of the step's verdict lines (Measure.caveats); a
#: line names those its measure raised, read off the line's own row of the attack's
#: table (attacks_lines), not the result's codes
CAVEATS: dict[str, tuple[str, ...]] = {
    "attacks": ("FEW_SINGLING_OUT_QUERIES", "ATTACK_NOT_BETTER_THAN_BASELINE",
                "CONTROL_SIZE_CORRECTION"),
}


MEASURE = Measure("attacks", "Singling out, linkability and inference (anonymeter)",
                  thresholds=builtin_thresholds("attacks"),
                  step=attacks_step, function=singling_out_risk, result=SinglingOutResult,
                  verdict=attacks_lines, sections=(attacks_section,),
                  settings=attacks_settings, cost=COST, caveats=CAVEATS, applies=attacks_applies,
                  preflight=attacks_preflight)
