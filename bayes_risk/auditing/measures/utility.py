"""The utility measure as one unit: its audit step (pMSE, interval overlap, the per-variable
comparisons), its verdict lines and its report sections, and its registry entry
(:doc:`/adding_a_measure`)."""

from __future__ import annotations

from functools import partial
from typing import Any

import numpy as np
import pandas as pd

from bayes_risk._io import write_json
from bayes_risk._thresholds import builtin_thresholds
from bayes_risk.auditing import remedies
from bayes_risk.auditing.context import (
    StepContext,
    ran,
    step_folder,
    write_table,
)
from bayes_risk.auditing.measures._identification_lines import worst_case_point
from bayes_risk.auditing.outcome import (
    README_SIZES,
    Measure,
    Need,
    StepCost,
    StepOutcome,
    step_file,
)
from bayes_risk.auditing.plan import AuditPlan, radius_text
from bayes_risk.auditing.report_blocks import (
    TOP_N,
    Links,
    Section,
    step_section,
    table_block,
)
from bayes_risk.auditing.verdict_base import (
    Baseline,
    Verdict,
    caused,
    dataset_range,
    line_caveats,
    outside_range,
)
from bayes_risk.results.utility import UtilitySummary
from bayes_risk.utility.summary import OverlapSpec, utility_summary


def utility_step(ctx: StepContext) -> StepOutcome:
    """pMSE (null by partial / complete synthesis), interval overlap, per-variable marginals."""
    plan = ctx.plan
    res = utility_summary(
        ctx.original, ctx.synthetic, schema=ctx.schema, synthesized=plan.synthesized,
        random_seed=plan.random_seed, progressbar=ctx.progressbar,
        overlap=OverlapSpec(rules=plan.given.combining_rules), propensity=plan.given.propensity,
        imputed=plan.given.imputed,
    )
    # the tables too compare imputed columns on the original's observed cells
    from bayes_risk.utility._inputs import ImputedChoice, observed_cells

    imputed = list(res.settings.get("imputed_columns") or [])
    datasets = list(ctx.synthetic)
    aligned = all(len(z) == len(ctx.original) for z in datasets)
    choice = ImputedChoice(imputed, str(res.settings.get("imputed_columns_source")), aligned)
    _, datasets = observed_cells(ctx.original, datasets, choice, for_pmse=False)
    marg = res.marginals  # synthpop's compare(), computed by utility_summary
    tw = twoway(ctx.original, datasets, ctx.schema, plan.synthesized)
    files: list[str] = []
    folder = step_folder(ctx, "utility")
    if folder is not None:
        write_json(folder / "summary.json", res.to_dict())
        write_table(ctx, res.overlap, folder / "overlap.csv")
        write_table(ctx, res.tables.tables, folder / "tables.csv")
        write_table(ctx, res.quality.shapes, folder / "quality.csv")
        write_table(ctx, res.quality.pair_trends, folder / "quality_pairs.csv")
        write_table(ctx, marg, folder / "marginals.csv")
        write_table(ctx, tw, folder / "twoway.csv")
        files = ["summary.json", "overlap.csv", "tables.csv", "quality.csv",
                 "quality_pairs.csv", "marginals.csv", "twoway.csv"]
    from bayes_risk.auditing.causes import marginal_discrepancy

    cats = [c for c in plan.synthesized if ctx.schema[c].is_categorical]
    drivers = marginal_discrepancy(ctx.original, datasets, plan.synthesized, cats)
    return ran("utility", res, folder, files, marginals=marg, twoway=tw, drivers=drivers)


def twoway(original: pd.DataFrame, synthetic: Any, schema: Any, synthesized: list[str],
           max_pairs: int = 3) -> pd.DataFrame:
    """Two-way tables (% of records) of up to ``max_pairs`` categorical pairs with a synthesized
    member, original against pooled release (synthpop ``compare()``)."""
    cats = schema.categorical
    pairs = [(a, b) for a in synthesized if a in cats for b in cats if b != a]
    pairs = list(dict.fromkeys(tuple(p) for p in pairs))[:max_pairs]
    pooled = pd.concat(list(synthetic), ignore_index=True)
    frames = []
    for a, b in pairs:
        po = pd.crosstab(original[a], original[b], normalize=True) * 100
        ps = pd.crosstab(pooled[a], pooled[b], normalize=True) * 100
        po, ps = po.align(ps, fill_value=0.0)
        t = pd.DataFrame({"original": po.stack(), "synthetic": ps.stack()}).reset_index()
        t.columns = ["level_1", "level_2", "original", "synthetic"]
        t.insert(0, "variable_2", b)
        t.insert(0, "variable_1", a)
        t["difference"] = t["synthetic"] - t["original"]
        frames.append(t)
    cols = ["variable_1", "variable_2", "level_1", "level_2", "original", "synthetic",
            "difference"]
    if not frames:
        return pd.DataFrame(columns=cols)
    out = pd.concat(frames, ignore_index=True)[cols]
    out[["level_1", "level_2"]] = out[["level_1", "level_2"]].astype(str)
    return out


_NO_INTRUDER = "none (utility: how closely the release reproduces the original)"


def utility_lines(plan: AuditPlan, u: StepOutcome) -> list[Verdict | Baseline]:
    """Mean S_pMSE and the mean confidence-interval overlap."""
    th, r = plan.thresholds, u.result
    v = Verdict("utility", "mean S_pMSE (pMSE / null expectation)",
                float(r.pmse.mean_ratio), th.s_pmse, "max", step_file(u, "summary.json"),
                f"{r.pmse.null} null", line_caveats(CAVEATS["s_pmse"], r.pmse.warnings),
                spread=dataset_range(r.pmse.ratio), intruder=_NO_INTRUDER, threshold_name="s_pmse")
    ov = float(r.mean_overlap)
    w = Verdict("utility", "mean confidence-interval overlap",
                ov, th.overlap, "min", step_file(u, "overlap.csv"),
                warnings=line_caveats(CAVEATS["overlap"], r.warnings),
                spread=dataset_range(r.overlap_per_dataset) + "; " + outside_range(
                    ov, r.overlap_per_dataset,
                    f"the value is not their mean but the overlap of the interval combined "
                    f"over the {plan.m} datasets, centred on the mean of their estimates "
                    "(closer to the original's than one dataset's)",
                    f"the value combines the intervals of the {plan.m} datasets"),
                intruder=_NO_INTRUDER, threshold_name="overlap")
    return [caused(v, *remedies.utility_cause(u)), caused(w, *remedies.overlap_cause(u))]


def utility_risk_points(result: Any) -> pd.DataFrame | None:
    """One row per dataset: S_pMSE and the risk measures of the utility-and-risk figure —
    every verdict line with a value per dataset (the identification rates, repU of each set
    of keys, DiSCO of every target: issue 66, the ACS report drew the first target's DiSCO
    alone, not the target past its threshold). ``attrs``: each column's ``thresholds``, the
    pooled ``verdict`` value where the line reads one, and the columns past their threshold
    (``exceeds``)."""
    u, i, d = (result.step(n) for n in ("utility", "identification", "disclosure"))
    if u.status != "ran":
        return None
    plan = result.plan
    th = plan.thresholds
    pts = pd.DataFrame({"dataset": np.arange(1, plan.m + 1),
                        "S_pMSE": np.asarray(u.result.pmse.ratio, dtype=float)})
    thresholds: dict[str, float] = {"S_pMSE": th.s_pmse}
    verdict: dict[str, float] = {}
    exceeds: list[str] = []
    lines = {v.threshold_name: v for v in result.verdicts}

    def add(col: str, values: Any, line: Any, threshold: float) -> None:
        pts[col] = np.asarray(values, dtype=float)
        thresholds[col] = threshold
        if line is not None and line.exceeds:
            exceeds.append(col)

    # a baseline of the original is the same for every dataset: not plotted
    if i.status == "ran" and i.result.per_dataset is not None and \
            not plan.identification_release_independent:
        n = float(i.result.file["n_targets"])
        sw = i.extra.get("sweep")
        # at the worst case over the radii, as the verdict reads each line (the true match
        # rate's may lie at other radii than the risk's)
        per = i.result.to_dict()["summary"]["per_dataset"]
        cols = {"expected_match_rate": (np.asarray(per["expected_match_risk"], float) / n,
                                        plan.radius),
                "true_match_rate": (np.asarray(per["true_match_risk"], float) / n, plan.radius)}
        if sw is not None and sw.argmax:  # the point whose radii the verdict line names
            j = worst_case_point(sw, sw.argmax)
            cols["expected_match_rate"] = (np.asarray(sw.risk[j], float) / n, sw.radii_at(j))
        if sw is not None and sw.tmr_argmax and sw.true_match_rate is not None:
            j = worst_case_point(sw, sw.tmr_argmax)
            cols["true_match_rate"] = (np.asarray(sw.true_match_rate[j], float), sw.radii_at(j))
        for name, (share, rad) in cols.items():
            line = lines.get(name)
            if line is None:
                continue
            col = f"{name.replace('_', ' ')} (% of targets), {radius_text(rad)}"
            add(col, share * 100, line, getattr(th, name) * 100)
            if line.detail.startswith("larger: pooled"):
                verdict[col] = line.value
    if d.status == "ran":
        seen: set[tuple[str, ...]] = set()
        for t, res in d.result.items():
            fixed = plan.release_independent_keys(t)
            if not fixed and tuple(res.keys) not in seen:
                seen.add(tuple(res.keys))
                add(f"repU (% of records), keys {', '.join(res.keys)}",
                    res.ident["repU"].to_numpy(dtype=float),
                    _line(result, "disclosure", f"repU (%), keys {', '.join(res.keys)}"),
                    th.repU)
            if not (fixed and t not in plan.synthesized):
                add(f"DiSCO (% of records), target {t}", res.attrib["DiSCO"].to_numpy(dtype=float),
                    _line(result, "disclosure", f"DiSCO (%), target {t}"), th.DiSCO)
    pts.attrs.update(thresholds=thresholds, verdict=verdict, exceeds=exceeds)
    return pts if pts.shape[1] > 2 else None


def _line(result: Any, step: str, measure: str) -> Any:
    """The verdict line of ``step`` measuring ``measure``, or ``None``."""
    return next((v for v in result.verdicts if v.step == step and v.measure == measure), None)


def utility_risk_section(result: Any, links: Links) -> Section:
    """The report's figure of utility against every risk line with a value per dataset, the
    first of the report's sections (skipped: no such line, or the utility step did not run)."""
    from bayes_risk.auditing.plots import utility_risk_figure

    pts = utility_risk_points(result)
    if pts is None:
        return Section("utility-risk", "Utility and risk together", "skipped")
    sec = Section("utility-risk", "Utility and risk together")
    sec.p("One panel per verdict line with a value per dataset (each set of keys' repU, each "
          "target's DiSCO); a line past its threshold has its panel framed in red and "
          "marked ✖. Each point is one released synthetic dataset, its number beside it "
          "(datasets whose points fall together share one label, \"1, 3\") (Hornby & Hu "
          "2021, Figs 8 and 9): further left is more useful, lower is less risky; the box "
          "spans the first to the third quartile of the datasets. The dashed lines are the "
          "thresholds of the verdict lines; the axes start at 0, so that the spread between "
          "datasets is seen against the threshold, not magnified. The share ranked first of "
          "attribute risk has no value per dataset (the intruder reads them all at once) and "
          "no panel."
          + (" The dotted line is the value the verdict line reads: the intruder holding all "
             "the datasets pools them, which no single dataset shows."
             if pts.attrs.get("verdict") else ""))
    sec.blocks.append(links.figure(lambda: utility_risk_figure(pts), "utility_risk.png",
                                   "Utility (S_pMSE) against risk, one point per dataset"))
    sec.blocks[-1].wide = True
    return sec


@step_section("utility", "utility", "Utility")
def utility_section(sec: Section, s: Any, result: Any, links: Links) -> None:
    r = s.result
    p = r.pmse
    src = step_file(s, "summary.json")
    model = ("a CART model" if p.method == "cart" else
             "a logistic model with main effects" + (
                 "" if p.max_order == 0 else " and two-way interactions" if p.max_order == 1
                 else f" and interactions of up to {p.max_order + 1} columns"))
    sec.p(f"Propensity-score mean squared error (pMSE) of {model} telling original from "
          "synthetic records, on the "
          f"synthesized columns ({', '.join(r.synthesized)}); null: {p.null}",
          " (partial synthesis: the null expectation counts only the synthesized columns)"
          if p.incomplete else " (complete synthesis)",
          ". S_pMSE is pMSE over its null expectation: about 1 when the synthetic data are "
          "indistinguishable from the original; synthpop's guidance is below 10, better below 3.")
    tab = pd.DataFrame({
        "dataset": [*range(1, r.m + 1), f"all {r.m}"],
        "pMSE": [*p.pmse, p.mean_pmse], "S_pMSE": [*p.ratio, p.mean_ratio],
        "standardised pMSE": [*p.std, p.mean_std],
        "mean CI overlap": [*r.overlap_per_dataset, r.mean_overlap],
    })
    sec.blocks.append(table_block(tab, links, src,
                                  "pMSE and interval overlap per synthetic dataset"))
    sec.p(f"Last row: the pMSE figures are means over the {r.m} datasets; the interval overlap "
          f"is that of the intervals combined over the {r.m} datasets with the combining rules "
          "for synthetic data, which the verdict uses. It is not the mean of the rows above: "
          "the combined intervals are estimated from all the datasets together.")
    for note in r.comparison_notes():
        sec.p(note)
    if r.tables is not None:
        from bayes_risk.results._base import plot_figure

        t = r.tables
        sec.p(f"Per-table utility (synthpop's utility.tables): each table of 1 to "
              f"{t.settings['order']} columns tabulated in the original and in each synthetic "
              f"dataset (numeric columns in {t.settings['ngroups']} groups at the quantiles of "
              "the original and synthetic values pooled); S_pMSE is the table's pMSE over its "
              "null expectation (its degrees of freedom: the table's occupied cells less 1), "
              "about 1 when the synthetic tables are as close to the original as a sample of "
              "it would be. The heat map shows every pair, each column alone on the diagonal.")
        sec.blocks.append(links.figure(lambda: plot_figure(r, "tables"), "utility_tables.png",
                                       "S_pMSE of every pair of columns"))
        worst = t.tables.sort_values("S_pMSE", ascending=False, kind="stable").head(TOP_N)
        sec.blocks.append(table_block(
            worst[["table", "order", "S_pMSE", "pMSE", "VW", "FT", "JSD", "df"]], links,
            step_file(s, "tables.csv"),
            f"Tables with the largest S_pMSE (top {TOP_N}; all {len(t.tables)} in tables.csv)"))
        from bayes_risk.results.utility import COMPARE_PANELS

        syn = set(r.synthesized)
        cols = list(dict.fromkeys(r.marginals["variable"]))
        # synthesized columns first: the panel shows at most COMPARE_PANELS
        cols = [c for c in cols if c in syn] + [c for c in cols if c not in syn]
        sec.p("Marginal distributions of the original and the pooled synthetic datasets "
              "(synthpop's compare()): the percentage of records per level, or per histogram bin "
              "of a numeric column (labelled by its lower end), each column's one-way S_pMSE in "
              "its title" + (f"; the first {COMPARE_PANELS} columns, synthesized ones first"
                             if len(cols) > COMPARE_PANELS else "") + ".")
        sec.blocks.append(links.figure(
            lambda: plot_figure(r, "compare", columns=cols), "utility_compare.png",
            "Marginals, original against synthetic (all in marginals.csv)"))
    if r.quality is not None:
        q = r.quality
        st = q.settings
        sec.p(f"Quality score with SDMetrics' definitions: {q.score:.3f} (0 to 1, 1 the "
              f"original's own), the mean of column shapes ({q.column_shapes:.3f}: "
              "KSComplement of numeric columns, TVComplement of categorical ones) and column "
              f"pair trends ({q.column_pair_trends:.3f}: CorrelationSimilarity of numeric "
              "pairs, ContingencySimilarity of the others, counting the pairs whose original "
              f"correlation exceeds {st['correlation_threshold']:g} or Cramér's V "
              f"{st['association_threshold']:g}); means over the {r.m} datasets.")
        worst = pd.concat([
            q.shapes.groupby("column", sort=False).agg(metric=("metric", "first"),
                                                       score=("score", "mean")).reset_index()
            .rename(columns={"column": "columns"}),
            q.pair_trends[q.pair_trends["meets_threshold"]]
            .groupby(["column_1", "column_2"], sort=False)
            .agg(metric=("metric", "first"), score=("score", "mean")).reset_index()
            .assign(columns=lambda t: t["column_1"] + " × " + t["column_2"])
            [["columns", "metric", "score"]]], ignore_index=True)
        sec.blocks.append(table_block(
            worst.sort_values("score", kind="stable").head(TOP_N), links,
            step_file(s, "quality.csv"),
            f"Columns and pairs with the lowest SDMetrics score (top {TOP_N}; all in "
            "quality.csv and quality_pairs.csv)"))
    ov = r.overlap.sort_values("overlap").head(TOP_N)
    cols = [c for c in ("estimand", "estimate_orig", "estimate_syn", "overlap") if c in ov]
    sec.blocks.append(table_block(ov[cols], links, step_file(s, "overlap.csv"),
                                  f"Estimands with the smallest 95 % interval overlap (top "
                                  f"{TOP_N}; all in overlap.csv)"))


@step_section("utility", "compare", "Original versus synthetic, two-way tables")
def comparisons_section(sec: Section, s: Any, result: Any, links: Links) -> None:
    sec.p("Two-way tables of the categorical columns with a synthesized member, original "
          "against the synthetic datasets pooled: the cells that differ most (the marginals and "
          "the per-table utility are in the utility section above).")
    tw = s.extra["twoway"]
    n_tab = tw.groupby(["variable_1", "variable_2"], sort=False).ngroups
    sec.fold = f"{n_tab} two-way table{'s' if n_tab != 1 else ''} (all in twoway.csv)"
    for (a, b), t in tw.groupby(["variable_1", "variable_2"], sort=False):
        top = t.reindex(t["difference"].abs().sort_values(ascending=False).index).head(10)
        sec.blocks.append(table_block(
            top[["level_1", "level_2", "original", "synthetic", "difference"]].rename(
                columns={"level_1": a, "level_2": b}),
            links, step_file(s, "twoway.csv"),
            f"Two-way table {a} × {b}: % of records, the 10 cells that differ most", digits=3))


def utility_settings(plan: AuditPlan) -> None:
    """The settings table's rows of the utility step: the pMSE's propensity model and null,
    the interval overlap's estimands and combining rules, the imputed columns."""
    a = partial(plan.add, MEASURE.name)
    s = plan.given
    prop = s.propensity
    given = prop.method != "logit" or prop.max_order != 1
    a("pMSE propensity model",
      "CART" if prop.method == "cart" else
      "logit, main effects and two-way interactions" if prop.max_order == 1 else
      "logit, main effects only" if prop.max_order == 0 else
      f"logit, interactions up to order {prop.max_order + 1}",
      "given" if given else "default", "synthpop's utility.gen design")
    a("pMSE null", "auto", "default",
      "chi-square theory for logit; partial synthesis: the expectation uses only the "
      "synthesized columns" if plan.partial_synthesis else
      "chi-square theory for logit; complete synthesis: the expectation uses every column")
    a("interval-overlap estimands", "means and proportions of the synthesized columns",
      "default", "95 % intervals, combining rules of the release's generation scheme")
    a("combining rules", s.combining_rules,
      "default" if s.combining_rules == "auto" else "given",
      "auto: the generation recorded in the release's manifest, else inferred from the "
      "synthesized columns (the utility section says which rules were used and why)"
      if s.combining_rules == "auto" else "")
    auto = isinstance(s.imputed, str)
    a("imputed columns", "auto" if auto else (", ".join(s.imputed) or "none"),
      "default" if auto else "given",
      "auto: the imputed_columns recorded in the release's manifest, else the columns with "
      "empty cells in the original and none in any synthetic dataset; they are compared on "
      "the original's observed cells" if auto else "")


def utility_need(ctx: StepContext, left: float | None) -> Need:
    """The step's least need: pMSE's propensity model stacks the original and one dataset."""
    m = ctx.plan.m
    table = float(next(iter(ctx.synthetic)).memory_usage(deep=True).sum()) if m else 0.0
    return Need(2.0 * table, "the original stacked with one dataset at a time (pMSE), not "
                "chunked")


#: the step's costs (:mod:`bayes_risk.auditing.memory_plan`): its rate measured on the
#: README's audit (``README_SIZES``) on an AMD EPYC; what its results keep, 100 bytes a record,
#: measured on the README's audit (``make_ce_like(n, random_seed=1)``, CART release of 3
#: columns, m = 5) at 5,000 and 20,000 records, the larger of the two sizes' rates, rounded up
COST = StepCost(rate=("records x datasets", 8.0e-6, 24.0e-6), sizes=README_SIZES,
                need=utility_need, kept_per_record=100.0)


#: the warning codes that question each of the step's verdict lines (Measure.caveats); a
#: line names those its measure raised
CAVEATS: dict[str, tuple[str, ...]] = {
    "s_pmse": ("SEPARATION", "NOT_CONVERGED", "LARGE_MODEL", "ZERO_DF", "FEW_PAIRS", "NO_SPLITS"),
    "overlap": ("M_EQUALS_ONE", "SMALL_T", "DEGENERATE_INTERVAL"),
}


def utility_resolve(plan: AuditPlan, original: pd.DataFrame, release: Any,
                    schema: Any) -> None:
    """Refuse, before any step runs, combining rules that cannot apply to the release
    (``NOT_PARTIAL_SYNTHESIS``), unless the step is skipped."""
    if MEASURE.name in plan.skip:
        return
    from bayes_risk.utility.compare import choose_rules

    choose_rules(plan.given.combining_rules, release, original, list(release), plan.synthesized,
                 list(schema.names))


MEASURE = Measure("utility", "Utility",
                  thresholds=builtin_thresholds("utility"), step=utility_step, cheap=True,
                  function=utility_summary,
                  result=UtilitySummary, verdict=utility_lines,
                  sections=(utility_risk_section, utility_section, comparisons_section),
                  settings=utility_settings, cost=COST, caveats=CAVEATS,
                  risk=False, resolve=utility_resolve)
