"""The report's sections of the risks assessed record by record: identification, posterior
identification and attribute disclosure, which share the table of the records most at risk and
the knowledge sweep's blocks (:doc:`/user_guide/audit`)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from bayes_risk.auditing.outcome import step_file
from bayes_risk.auditing.plan import radius_text
from bayes_risk.auditing.report_blocks import (
    TOP_N,
    Block,
    Links,
    Section,
    Span,
    rows_block,
    step_section,
    table_block,
)
from bayes_risk.results._base import plot_figure
from bayes_risk.results._format import format_number
from bayes_risk.results.attribute import EVIDENCE_FACTOR
from bayes_risk.warning_codes import message

__all__ = ["identification_section", "posterior_identification_section",
           "attribute_section"]

#: the diagnostic columns of the attribute step's records.csv, in plain words
DIAGNOSTICS = {
    "khat_max": ("Pareto k̂ (khat_max)",
                 "how heavy the tail of the record's importance weights is, the largest over "
                 "its candidate values. Below the threshold the reweighted posterior draws "
                 "give a reliable estimate; above it a few draws carry most of the weight and "
                 "the estimate may be off. Under the default rule ('material') the record is "
                 "flagged KHAT_HIGH only when the tail could raise its p_true by more than the "
                 "tolerance (p_true_upper) or make the truth the best guess; otherwise it "
                 "stays with the stable estimates, whose p_true may then overstate the risk "
                 "(p_true_lower)."),
    "ess_q_min": ("effective sample size (ess_q_min)",
                  "how many equally weighted posterior draws the record's reweighted estimate "
                  "is worth, the smallest over its candidate values: a small number means a "
                  "noisy estimate."),
    "mc_se_max": ("Monte Carlo error (mc_se_max)",
                  "the noise left in the record's estimate by using finitely many posterior "
                  "draws or bootstrap replicates (standard error of the log probability "
                  "ratio, the largest over its candidate values)."),
    "ess_omega_min": ("effective sample size of the stabilised weights (ess_omega_min)",
                      "as the effective sample size above, for the stabilised estimator's "
                      "weights ω."),
    "max_omega_max": ("largest single weight (max_omega_max)",
                      "the share of the total weight held by the heaviest posterior draw: "
                      "near 1, one draw decides the estimate."),
    "n_dropped": ("draws dropped (n_dropped)",
                  "posterior draws left out because the release had zero probability under "
                  "them (numerically degenerate)."),
    "boot_rank_q05": ("bootstrap rank (boot_rank_q05)",
                      "the rank of the truth that 5 % of bootstrap resamples of the posterior "
                      "draws reach or better: a rank that moves between resamples is not a "
                      "stable finding."),
    "chain_z": ("between-chain difference (chain_z)",
                "how far apart two MCMC chains put the record's p_true, in Monte Carlo "
                "standard errors (p_true_chain_min and p_true_chain_max: each chain's own "
                "estimate); a large value flags the record CHAINS_DISAGREE."),
    "flag_codes": ("flags (flag_codes)",
                   "why a record's estimate is unreliable (the codes are explained below); "
                   "flagged records are counted on their own, never averaged in."),
}


def _computed(col: pd.Series) -> bool:
    """Whether a diagnostic column holds a value for some record (the plug-ins' are empty)."""
    if not pd.api.types.is_numeric_dtype(col):
        return True
    return bool(np.isfinite(col.to_numpy(dtype=float, na_value=np.nan)).any())


def _at_risk(df: pd.DataFrame, qi: pd.DataFrame | None, id_col: str) -> pd.DataFrame:
    if qi is None:
        return df
    vals = qi.iloc[df[id_col].to_numpy(dtype=int)].reset_index(drop=True)
    return pd.concat([df.reset_index(drop=True), vals], axis=1)


@step_section("identification", "identification", "Identification risk")
def identification_section(sec: Section, s: Any, result: Any, links: Links) -> None:
    r, plan = s.result, result.plan
    sm = r.file
    n = int(sm["n_targets"])
    src = step_file(s, "summary.json")
    sec.p(f"An intruder who knows {', '.join(plan.known)} for every target looks for it among "
          "the released records (Reiter & Mitra 2009; Hornby & Hu 2021). Every measure below is "
          f"a per cent of the {n:,} targets, as on the verdict's lines, followed by the count "
          "it is; a target that matches no record "
          "in a dataset has no match there (no fallback).")
    if plan.identification_release_independent:
        sec.p(Span("Baseline of the original, not a risk of the release "
                   "(RELEASE_INDEPENDENT). ", strong=True),
              "No known column is synthesized: the intruder matches on columns the release "
              "carries unchanged, so every synthetic dataset gives the same figures, whatever "
              "was synthesized. To assess the release, give a synthesized column the intruder "
              "may know (the intruder of Hornby & Hu 2021 also knows the true values of the "
              "synthesized keys).")
    pooled = s.extra.get("pooled")
    sw, star = s.extra.get("sweep"), s.extra.get("at_r_star")
    verdict_reads = ("" if pooled is None else
                     " The verdict reads the larger of this and the pooled intruder's (below).")
    rad = (dict(zip(sw.columns, (float(x) for x in sw.r_star), strict=True))
           if sw is not None else plan.radius)
    where = ("at the worst case over the radii" if sw is not None else "at the radius given")
    sec.blocks.append(rows_block(
        ["measure", "value"], _id_rows((star or r).file, n, src, links), links, src,
        f"One dataset at a time, {where} ({radius_text(rad)}): the mean over the m = "
        f"{plan.m} datasets of the measures of an intruder who holds one." + verdict_reads))
    if sw is not None:
        ssrc = step_file(s, "radius_search.csv")
        sec.blocks.append(links.figure(
            lambda: plot_figure(sw, "profile",
                                rate_threshold=plan.thresholds.expected_match_rate * 100,
                                n_targets=n), "radius_search.png",
            "Expected match risk by the radius of each searched column, the others held at "
            "the worst case (the band: the range over the datasets; the ring: the maximum; "
            "the dashed line: the verdict's threshold)"))
        sec.p(*_search_sentence(sw, plan, n, ssrc, links))
        given = ("Hornby & Hu's convention" if plan.radius_source == "default"
                 else "the radius given")
        sec.p(f"At {given} ({radius_text(plan.radius)}), reported beside the "
              "worst case and never instead of it: expected match rate ",
              *links.count(r.file["expected_match_risk"], n, src), ", true match rate ",
              *links.count(r.file["true_match_risk"], n, src),
              " (mean over the datasets; summary.json: summary).")
    if pooled is not None:
        f = pooled.headline.file
        psw = pooled.sweep
        where = (f" at its own worst case over the radii "
                 f"({radius_text(dict(zip(psw.columns, map(float, psw.r_star), strict=True)))})"
                 if psw is not None else "")
        tmr = ("" if psw is None or not psw.tmr_argmax else
               f"; its largest true match rate over the radii is "
               f"{100 * psw.tmr_star_value:.3g} % "
               f"({radius_text(psw.radii_at(psw.tmr_argmax[0]))})")
        sec.p(Span("An intruder who holds all the datasets. ", strong=True),
              f"Pooling the match probabilities over the m = {plan.m} datasets (Reiter & Mitra "
              "2009; Drechsler & Reiter 2008; the defaults of bayes-risk identification) gives",
              where, ": expected match rate ", *links.count(f["expected_match_risk"], n, src),
              ", true match rate ", *links.count(f["true_match_risk"], n, src),
              ", false match rate ", links.pct(f["false_match_rate"], src), " of the unique "
              f"matches (summary.json: pooled){tmr}. Each verdict line reads the larger of this "
              "intruder's figure and the per-dataset mean: an intruder with every dataset is "
              "usually the stronger, and the mean over single datasets alone would understate "
              "the risk.")
    if s.extra.get("note"):
        sec.p(s.extra["note"] + ".")
    ks = s.extra.get("known_sweep")
    if ks is not None:
        _known_sweep_blocks(sec, ks, s, links)
    tt = r.target_table().sort_values("IR", ascending=False, kind="stable").head(TOP_N)
    sec.blocks.append(table_block(_at_risk(tt, s.extra.get("qi"), "target"), links,
                                  step_file(s, "records.csv"),
                                  f"Targets most at risk (top {TOP_N} by IR; every target in "
                                  "records.csv)"))
    sec.p("The columns of the targets table:")
    sec.blocks.append(Block("dl", terms=[(k, v) for k, v in TARGET_COLUMNS.items()
                                         if k in tt.columns]))


#: the columns of the identification step's per-target table, in plain words
TARGET_COLUMNS = {
    "IR": "the target's identification risk: the probability that the intruder's declared "
          "match is the target (1/c when its own record is among the c records declared, else "
          "0), mean over the datasets; summed over the targets it is the expected match risk.",
    "c_mean": "records declared as the target's match (those tied at the top), mean over the "
              "datasets.",
    "T_datasets": "datasets in which the target's own record is among the declared matches.",
    "K_datasets": "datasets in which the declared match is one record, the target's own (a "
                  "true match).",
    "W_datasets": "datasets in which the declared match is one record, another one (a false "
                  "match).",
    "declared_datasets": "datasets in which the intruder declares a match for the target.",
}


#: the identification measures that count targets, in plain words
_ID_COUNTS = {"expected_match_risk": "expected match rate: targets expected to be identified "
                                     "(the expected match risk, sum of IR)",
              "true_match_risk": "true match rate: targets matched to one record, their own",
              "n_unique": "unique matches: targets matched to one record"}


def _id_rows(f: dict[str, Any], n: int, src: str | None, links: Links) -> list[list[Any]]:
    """The identification measures, each as its per cent of the ``n`` targets and its count."""
    return [*([Span(text), links.count(f[k], n, src)] for k, text in _ID_COUNTS.items()),
            [Span("false match rate: unique matches that are another record"),
             [links.pct(f["false_match_rate"], src), Span(" of the unique matches")]]]


def _search_sentence(sw: Any, plan: Any, n: int, src: str | None, links: Links) -> list[Any]:
    """What the radius search covered, and where each measure is largest."""
    search = sw.settings.get("search") or {}
    how = (f"every point of the grid ({search.get('points')} points)"
           if search.get("mode") == "grid" else
           f"a coordinate search of {search.get('points')} points (the full grid of "
           f"{search.get('full_grid_points')} exceeds max_grid; RADIUS_COORDINATE_SEARCH)")
    tmr = ("" if not sw.tmr_argmax else
           f"; the true match rate is largest, {100 * sw.tmr_star_value:.3g} % of the targets, "
           f"at {radius_text(sw.radii_at(sw.tmr_argmax[0]))}")
    return [f"The intruder chooses how closely to match each numeric key. The search covers "
            f"{', '.join(sw.columns)} — synthesized or released unchanged — each over the radii "
            f"{', '.join(f'{r:g}' for r in search.get('values', []))} (0: exact matching), "
            f"{how}. Per dataset, the expected match rate is largest at "
            f"{radius_text(dict(zip(sw.columns, map(float, sw.r_star), strict=True)))} (mean ",
            *links.count(sw.risk_star, n, src), f"){tmr}. The verdict reads these "
            "maxima, the worst case for the intruder it names; a value the release carries "
            "unchanged is usually best matched exactly, since a wider window only adds other "
            "records."]


def _known_curve_blocks(sec: Section, s: Any, links: Links) -> None:
    """The attribute risk by the share of other records the intruder knows (when asked for)."""
    curve, note = s.extra.get("known_curve"), s.extra.get("known_curve_note")
    if curve is None and note is None:
        return
    head = Span("Intruders who know some of the other records. ", strong=True)
    if curve is None:
        sec.p(head, f"Not computed: {note}.")
        return
    sec.p(head, "The figures above assume the intruder knows every other record (Hu 2019, "
          "§3.4, calls this unrealistic). The same measures when the intruder knows only a "
          "random share of them; a record whose reweighted estimate cannot be trusted is "
          "counted in n_flagged, not averaged in (mean_p_true_unflagged). Not read by the "
          "verdict.")
    sec.blocks.append(links.figure(lambda: plot_figure(curve, "curve"), "known_curve.png",
                                   "Mean p_true against the share of other records known"))
    sec.blocks.append(table_block(curve.table, links, step_file(s, "known_curve.csv"),
                                  "Attribute risk by the share of other records known"))


def _known_sweep_blocks(sec: Section, ks: Any, s: Any, links: Links) -> None:
    """The knowledge sweep of the identification or the attribute step."""
    m1, m2 = ks.shapley_measures
    if ks.kind == "identification":
        what = ("The same measures for every subset of the known columns "
                f"({len(ks.table)} subsets; the empty set is the intruder who knows nothing)")
        fig = "Expected match risk against the number of known columns"
        unit, last = "targets", "true_matches"
    else:
        what = ("The same measures for every subset of the synthesized known columns the "
                "intruder may also know of the target's own values "
                f"({len(ks.table)} subsets; the empty set is the worst case above)")
        fig = "Mean p_true against the number of the record's own values known"
        unit, last = "records", "truth_first"
    lv_cols = ["variable", "level", "n_targets", "share_targets", "share_risk", "risk_ratio",
               last]
    sec.p(Span("Sensitivity to the intruder's knowledge. ", strong=True),
          f"{what}: how much the figures above depend on the assumption about what the "
          "intruder knows (Hu 2019, §5). Not read by the verdict.")
    sec.blocks.append(links.figure(lambda: plot_figure(ks, "frontier"), "known_sweep.png",
                                   f"{fig}, one point per subset; the Pareto frontier joined"))
    fr = ks.frontier[["known", "n_known", *ks.shown_measures]]
    sec.blocks.append(table_block(fr, links, step_file(s, "known_sweep.csv"),
                                  "Pareto frontier: the fewest known columns for the most risk "
                                  "(every subset in known_sweep.csv)"))
    sec.blocks.append(links.figure(lambda: plot_figure(ks, "drivers"), "known_sweep_drivers.png",
                                   "What drives the risk: each column's Shapley value and the "
                                   "risk withholding it removes from the full set"))
    dv = ks.drivers[["variable", "synthesized", f"shapley_{m1}", f"shapley_{m2}",
                     f"{m1}_without", f"{m1}_removed_share"]]
    sec.blocks.append(table_block(dv, links, step_file(s, "known_sweep_drivers.csv"),
                                  "Drivers: " + ks.shapley_note))
    sec.p(ks.headline())
    lv = ks.levels.sort_values("share_risk", ascending=False, kind="stable").head(TOP_N)
    sec.blocks.append(table_block(lv[lv_cols], links, step_file(s, "known_sweep_levels.csv"),
                                  f"Levels holding the most risk, every known column known (top "
                                  f"{TOP_N}; risk_ratio: share of the risk over share of the "
                                  f"{unit})"))


@step_section(
    "posterior_identification", "posterior-identification",
    "Posterior Monte Carlo identification risk",
)
def posterior_identification_section(sec: Section, s: Any, result: Any, links: Links) -> None:
    r = s.result
    pr = r.settings.get("posterior_replicates") or {}
    src = step_file(s, "summary.json")
    R = int(r.file["n_replicates"])
    m = result.plan.m
    sec.p("The synthesized known columns are replaced by R = ", links.num(R, src),
          f" draws from the posterior predictive of {pr.get('model', 'the synthesis model')} "
          "(agency's view; Drechsler & Reiter 2008, eq. 5) instead of the m = "
          f"{m} released datasets, matched as the identification step's pooled intruder at "
          f"its worst case over the radii ({radius_text(r.settings['match_rule']['radius'])}"
          "; with its fallback to the unsynthesized known columns where nothing matches); a "
          "search over the radii is not repeated on the replicates, for its cost. Two figures "
          "per measure, which estimate different things:")
    sec.blocks.append(Block("ul", items=[
        [Span("mean over single replicates", strong=True),
         Span(": each replicate evaluated alone, as a released dataset would be; it does not "
              "depend on R (its Monte Carlo error does).")],
        [Span(f"pooled over R = {R} replicates", strong=True),
         Span(" (Reiter & Mitra 2009): the match probabilities averaged over the replicates, "
              "then the targets tied at the top declared. This figure grows with R (with few "
              "replicates many records tie at the top; with many, more targets get a unique "
              "best record) before it settles: it is not comparable with a per-dataset figure "
              "nor with a pooled figure from another R. MCSE is its Monte Carlo standard error "
              "at this R, which does not show the growth (user guide, posterior replicates).")],
    ]))
    unc = r.uncertainty()
    ident = result.step("identification")
    # the identification step's pooled intruder, at the same radii and fallback
    per_ds = ident.extra["pooled"].headline.file if ident.status == "ran" else {}
    # one unit in the table, per cent, the verdict's (issue 66: rows of targets and rows of
    # per cent); a count of targets over the targets (summary.json: fractions and counts)
    n_i = int(r.file.get("n_targets") or 0)
    n_t = float(n_i or np.nan)
    labels = [("expected match rate (% of targets)", "expected_match_risk", n_t),
              ("true match rate (% of targets)", "true_match_rate_targets", 1.0),
              ("unique matches (% of targets)", "n_unique", n_t),
              ("false match rate (% of the unique matches)", "false_match_rate", 1.0)]
    rows = []
    isrc = step_file(ident, "summary.json")
    for lab, k, over in labels:
        u = unc.get(k) or {}
        q = u.get("replicate_quantiles") or {}

        def cell(v: Any, rel: str | None, over: float = over) -> Span:
            return links.pct(None if v is None else float(v) / over, rel)

        rows.append([Span(lab), cell(per_ds.get(k), isrc),
                     cell(u.get("replicate_mean"), src), cell(u.get("replicate_mean_mc_se"), src),
                     cell(q.get("0.025"), src), cell(q.get("0.975"), src),
                     cell(u.get("value"), src), cell(u.get("mc_se"), src)])
    sec.blocks.append(rows_block(
        ["measure", f"identification step: pooled over m = {m} datasets",
         f"mean over R = {R} single replicates", "its MCSE", "replicate 2.5%", "replicate 97.5%",
         f"pooled over R = {R} (grows with R)", "pooled MCSE"], rows, links, src,
        "File-level measures: the pooled figure of the identification step, the same "
        "measure over single posterior replicates, and pooled over the replicates"))
    trace = r.file.get("mc_trace") or {}
    est = list(trace.get("expected_match_risk") or [])
    rs = list(trace.get("n_replicates") or [])
    if len(est) >= 2 and est[-1] > est[0]:
        sec.p("The pooled expected match rate rose from ", *links.count(est[0], n_i, src),
              f" at R = {int(rs[0])} to ", *links.count(est[-1], n_i, src),
              f" at R = {int(rs[-1])}: "
              "it depends on R, as the pooled definition does; report it with R, and the "
              "mean over single replicates beside it.")
    if pr.get("n") == "auto" and not pr.get("stopped_by_tolerance", True):
        e = unc.get("expected_match_risk") or {}
        sec.blocks.append(Block("warning", spans=[
            Span("MCSE_NOT_REACHED", strong=True),
            Span(f": after R = {R} replicates (the audit's cap) the Monte Carlo standard "
                 "error of the pooled expected match rate, "),
            *links.count(e.get("mc_se"), n_i, src),
            Span(f", is still above the tolerance asked "
                 f"({format_number(100 * float(pr.get('mcse_tol', np.nan)), 3, plain=True)} % "
                 "of the estimate): the pooled figure "),
            *links.count(e.get("value"), n_i, src),
            Span(" is known to about ± "),
            *links.count(2 * float(e.get("mc_se", np.nan)), n_i, src),
            Span(" (2 MCSE), and the figure below shows it still moving. Read it as a "
                 "range, not a finding; bayes-risk identification with --model, which draws up "
                 "to --max-replicates (2,000 by default), narrows it.")]))
    sec.blocks.append(links.figure(lambda: plot_figure(r, "running_estimate"),
                                   "running_estimate.png",
                                   "Running pooled expected match risk with ±2 MCSE (a curve "
                                   "still rising means the pooled figure still depends on R)"))


@step_section("attribute", "attribute", "Attribute risk")
def attribute_section(sec: Section, s: Any, result: Any, links: Links) -> None:
    sm, recs = s.extra["summary"], s.result.records
    src = step_file(s, "summary.json")
    st = sm.get("settings", {})
    sec.p(f"Worst-case intruder (knows every record but the target's synthesized values "
          f"{', '.join(st.get('columns', []))}); posterior: {result.plan.attribute_source}; "
          f"estimator: {st.get('estimator')}. p_true is the probability the intruder gives "
          "the record's true values among its candidates, in per cent; rank 1 is the "
          "intruder's best guess, and the share ranked first (prop_top in summary.json) the "
          "share of records whose true values are that guess. A random guess gives p_true ",
          links.pct(sm.get("random_guess_baseline"), src), " (1/G for G candidates).")
    k = result.plan.thresholds.evidence_factor
    rows = []
    for key, lab in (("all", "all"), ("unflagged", "stable estimates"),
                     ("flagged", "flagged (unstable)")):
        d = sm.get(key) or {}
        q = d.get("p_true_quantiles") or {}
        rows.append([Span(lab), links.num(d.get("n_records"), src),
                     links.pct(d.get("mean_prior_p_true"), src),
                     links.pct(d.get("mean_p_true"), src), links.pct(q.get("50%"), src),
                     links.pct(q.get("95%"), src), links.pct(d.get("prop_top"), src),
                     links.pct(d.get("prop_evidence"), src)])
    sec.blocks.append(rows_block(
        ["records", "n", "mean p_true before the release: the intruder's prior (%)",
         "mean p_true (%)", "median p_true (%)", "95th percentile of p_true over the records "
         "(%)", "share ranked first (%)", f"share with evidence: Bayes factor ≥ {k:g} (%)"],
        rows, links, src, "The probability of the truth over the records (summary.json holds "
        "fractions: 0.04 = 4 %)"))
    _reading_attribute(sec, sm, recs, k, links, src)
    mc = sm.get("mc_uncertainty")
    if mc:
        sec.blocks.append(_mc_block(mc, links, src))
    from bayes_risk.auditing.plots import ATTRIBUTE_FIGURES

    for kind, name, cap in ATTRIBUTE_FIGURES:
        if kind == "khat" and not ("khat_max" in recs and _computed(recs["khat_max"])):
            # an empty frame says nothing a sentence cannot: no figure, and why
            sec.p(f"No Pareto k̂ figure: the '{st.get('estimator')}' estimator reweights no "
                  "posterior draws, so there are no importance weights whose tail k̂ could "
                  "measure (its Monte Carlo error is checked record by record instead).")
            continue
        # the rank figure shows the threshold of the share ranked first, the verdict's line
        opts = ({"prop_top_threshold": result.plan.thresholds.prop_top * 100}
                if kind == "rank" else {})
        sec.blocks.append(links.figure(lambda kind=kind, opts=opts: plot_figure(
            s.result, kind, **opts), name, cap))
    ks = s.extra.get("known_sweep")
    if ks is not None:
        _known_sweep_blocks(sec, ks, s, links)
    _known_curve_blocks(sec, s, links)
    table = s.result.to_dataframe()  # records.csv: with the Bayes factors
    stable = table[table["flag_codes"].fillna("").astype(str) == ""]
    top = stable.sort_values("p_true", ascending=False, kind="stable").head(TOP_N).reset_index()
    cols = [c for c in ("record", "p_true", "rank_min", "G", "baseline", "bayes_factor")
            if c in top]
    sec.blocks.append(table_block(
        _at_risk(top[cols], s.extra.get("qi"), "record").rename(
            columns={"rank_min": "rank of the truth", "G": "candidates G",
                     "baseline": "random guess", "bayes_factor": "Bayes factor"}),
        links, step_file(s, "records.csv"),
        f"Records most at risk among stable estimates (top {TOP_N} by p_true; every record in "
        "records.csv, as fractions; Bayes factor: how many times the release multiplies the "
        "intruder's odds on the record's true values)", percent=("p_true", "random guess")))
    counts = sm.get("flag_counts") or {}
    sec.p("Flagged records: ", links.num(sm.get("n_flagged", 0), src),
          (" (" + ", ".join(f"{k} × {v}" for k, v in counts.items()) + ")") if counts else "",
          ". What the diagnostic columns of records.csv mean:")
    sec.blocks.append(Block("dl", terms=[DIAGNOSTICS[k] for k in DIAGNOSTICS
                                         if k in recs.columns and _computed(recs[k])]))
    kh = sm.get("pareto_khat") or {}
    if kh.get("records_with_high_khat"):
        sec.p("Pareto k-hat above the threshold (",
              format_number(st.get("khat_threshold"), 2), "): ",
              links.num(kh["records_with_high_khat"], src), " record(s), under the posterior "
              "given the original or an augmented one (n_khat_high > 0; the figure shows the "
              "former, khat_max). Under the ",
              f"'{kh.get('rule')}' rule (tolerance {format_number(kh.get('tolerance'))}), ",
              links.num(kh.get("records_high_khat_immaterial"), src), " of them are not "
              "flagged: the tail cannot raise their p_true by more than the tolerance. For ",
              links.num(kh.get("records_p_true_may_overstate"), src), " unflagged record(s) "
              "the reported p_true may overstate the risk (p_true_lower < p_true): an upper "
              "bound, safe for accepting a release, not for claiming the risk is that high "
              "(user guide, attribute risk).")
    if counts:
        sec.p("The flags:")
        sec.blocks.append(Block("dl", terms=[(k, message(k)) for k in counts]))
    ch = sm.get("between_chain_check") or {}
    if ch:
        sec.p("Between-chain check of the record estimates: "
              + (f"{ch.get('reason')}; {ch.get('records_flagged')} record(s) flagged "
                 "CHAINS_DISAGREE." if ch.get("status") == "run"
                 else f"not run ({ch.get('reason')})."))


def _reading_attribute(sec: Section, sm: dict[str, Any], recs: pd.DataFrame, k: float,
                       links: Links, src: str | None) -> None:
    """How to read the share ranked first beside the evidence, for a release board; when the
    share falls below the random guess, why that is not protection."""
    un = sm.get("unflagged") or {}
    guess, top = sm.get("random_guess_baseline"), un.get("prop_top")
    q = un.get("bayes_factor_quantiles") or {}

    def factor(name: str) -> Span:
        # summary.json writes an infinite factor (p_true = 1) as "inf"
        x = q.get(name)
        if x is not None and float(x) == np.inf:
            return Span("∞ (p_true 100 %)", links.href(src), num=True)
        return links.num(x, src)

    sec.p("How to read these figures. The share ranked first counts the records whose true "
          "values would be the intruder's single best guess. The share with evidence counts "
          f"the records whose true values the release makes at least {k:g} times likelier, in "
          "odds, than the intruder believed before seeing it (a Bayes factor of at least "
          f"{k:g}; 1 means the release tells nothing about the record). Here, over the stable "
          "estimates, the mean p_true is ", links.pct(un.get("mean_p_true"), src),
          " after the release against ", links.pct(un.get("mean_prior_p_true"), src),
          " before it, and the Bayes factor of the true values is ",
          factor("50%"), " at the median and ", factor("95%"),
          " at the 95th percentile.")
    if top is None or guess is None or not float(top) < float(guess):
        return
    rank = (un.get("rank_min_quantiles") or {}).get("50%")
    g = recs["G"].to_numpy(dtype=float) if "G" in recs else np.array([])
    # a random guess's expected rank among G candidates, as the rank figure draws it
    middle = float(np.nanmean((g + 1) / 2)) if np.isfinite(g).any() else np.nan
    ranks = ([Span(" The truth's median rank is "), links.num(rank, src),
              Span(f" against {format_number(middle, 3, plain=True)} for a random guess.")]
             if rank is not None and np.isfinite(middle) else [])
    hi = q.get("95%")
    if hi is not None and float(hi) >= k:
        # not flat: the truth gains, other candidates gain more
        sec.blocks.append(Block("warning", spans=[
            Span("A share ranked first below the random guess is not protection", strong=True),
            Span(" (here "), links.pct(top, src), Span(" against "), links.pct(guess, src),
            Span(")."), *ranks,
            Span(" The release gives evidence for the true values of at least 5 % of the "
                 "records (the Bayes factor at the 95th percentile is "), factor("95%"),
            Span("), but other candidates gain still more, so the truth is seldom ranked "
                 "first: the ranking hides what the release tells. Read the share with "
                 "evidence. (Methods page, Attribute disclosure risk: A share ranked first "
                 "below the random guess.)")]))
        return
    sec.blocks.append(Block("warning", spans=[
        Span("A share ranked first below the random guess is not protection", strong=True),
        Span(" (here "), links.pct(top, src), Span(" against "), links.pct(guess, src),
        Span(")."), *ranks,
        Span(" When the release says little about each record, the intruder's posterior over "
             "its candidates is nearly flat, and small chance differences in the released "
             "values decide which candidate comes first. The truth comes first only if it "
             "comes out ahead of every alternative at once — with one-variable candidates, in "
             "every guessed column — so in almost every record some alternative edges ahead. "
             "That is Bayes' rule applied to an uninformative release: the intruder's best "
             "guess is wrong, but not because the release misleads. Read instead the share "
             "with evidence and p_true after against before the release: a release that "
             "discloses raises them whatever the ranking. (Methods page, Attribute disclosure "
             "risk: A share ranked first below the random guess; Hu 2019.)")]))


def _mc_block(mc: dict[str, Any], links: Links, src: str | None) -> Block:
    """The draw bootstrap's Monte Carlo error of the attribute figures, rates in per cent."""
    key = next(k for k in mc if k.startswith("mc_interval_"))
    names = {"mean_p_true": "mean p_true", "prop_top": "share ranked first",
             "p_true_q25": "p_true, 25th percentile over the records",
             "p_true_q50": "p_true, median over the records",
             "p_true_q75": "p_true, 75th percentile over the records",
             "rank_q50": "rank of the truth, median", "rank_q75": "rank of the truth, 75th "
             "percentile", "prop_evidence": "share with evidence, Bayes factor ≥ "
             f"{mc.get('evidence_factor', EVIDENCE_FACTOR):g}"}
    rows = []
    for f, v in mc["value"].items():
        cell = links.num if f.startswith("rank") else links.pct
        lo, hi = mc[key][f]
        rows.append([Span(names.get(f, f) + ("" if f.startswith("rank") else " (%)")),
                     cell(v, src), cell(mc["mc_se"][f], src),
                     [cell(lo, src), Span(" – "), cell(hi, src)]])
    return rows_block(["figure", "value", "MCSE", f"{key.rsplit('_', 1)[1]} % Monte Carlo "
                        "interval"], rows, links, src,
                      f"Monte Carlo error of the stable estimates' figures (draw bootstrap, "
                      f"{mc['bootstrap']} resamples of the posterior draws; "
                      f"{mc['n_flagged_excluded']} flagged record(s) left out)", fold=True)
