"""The audit report: one content model rendered by two Jinja2 templates (HTML and Markdown).

The content is built from the steps' result objects (their DataFrames and summaries), never by
re-reading the files; every number links to the file it came from, relative to the report.
The HTML is self-contained: CSS inline, figures as PNG data URIs, and a Content-Security-Policy
that forbids every fetch, so the report opens from disk with no network access.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

import numpy as np
import pandas as pd

from bayes_risk._io import file_slug
from bayes_risk.auditing.disclosure_step import target_folder
from bayes_risk.report import format_number
from bayes_risk.warning_codes import message

__all__ = ["write_report", "CSP"]

#: the report's Content-Security-Policy: nothing may be fetched; images only from data URIs
CSP = "default-src 'none'; img-src data:; style-src 'unsafe-inline'"

TOP_N = 20

#: one sentence per diagnostic column of the attribute-risk records
DIAGNOSTICS = {
    "khat_max": "Pareto k-hat (largest over the candidates): above the threshold the "
    "importance weights have a heavy tail. Under the default rule ('material') the record is "
    "flagged KHAT_HIGH only when the tail could raise its p_true by more than the tolerance "
    "(p_true_upper) or make the truth the best guess; otherwise it stays with the stable "
    "estimates, whose p_true may then overstate the risk (p_true_lower).",
    "ess_q_min": "Effective sample size of the importance weights (smallest over the "
    "candidates): how many equally weighted posterior draws the estimate is worth.",
    "mc_se_max": "Monte Carlo standard error of the log posterior ratio (largest over the "
    "candidates): the noise left from using finitely many draws or bootstrap replicates.",
    "ess_omega_min": "Effective sample size of the stabilised weights ω: the same "
    "reading as above for the stabilised estimator.",
    "max_omega_max": "Largest single normalised weight: near 1 means one draw decides the "
    "estimate.",
    "n_dropped": "Draws dropped as numerically degenerate (zero likelihood).",
    "boot_rank_q05": "5 % quantile of the rank of the truth over the draw bootstrap: a rank "
    "that moves between bootstrap replicates is not a stable finding.",
    "chain_z": "Largest difference of p_true between two MCMC chains, in Monte Carlo "
    "standard errors (p_true_chain_min / p_true_chain_max: each chain's own estimate).",
    "flag_codes": "Why a record's estimate is flagged unstable; flagged records are counted "
    "separately, never averaged in.",
}


@dataclass
class Span:
    """Inline text, optionally a link."""

    text: str
    href: str | None = None
    strong: bool = False
    num: bool = False


@dataclass
class Block:
    """A paragraph, list, table, figure or definition list of a section."""

    kind: str
    spans: list[Span] = field(default_factory=list)
    items: list[list[Span]] = field(default_factory=list)
    columns: list[str] = field(default_factory=list)
    rows: list[list[Span]] = field(default_factory=list)
    caption: str = ""
    csv: str | None = None
    uri: str = ""
    file: str = ""
    terms: list[tuple[str, str]] = field(default_factory=list)
    #: a table behind a closed disclosure element (caption visible; per-dataset and per-record
    #: detail); ``False``: a summary, shown open
    fold: bool = True


@dataclass
class Section:
    """A heading with its blocks."""

    id: str
    title: str
    status: str = "ran"
    blocks: list[Block] = field(default_factory=list)
    #: HTML: the blocks after the first paragraph sit behind a closed disclosure element whose
    #: summary is this text (detail one click away); ``""``: shown open
    fold: str = ""

    def p(self, *parts: Any) -> None:
        self.blocks.append(Block("p", spans=[x if isinstance(x, Span) else Span(str(x))
                                             for x in parts]))


class _Links:
    """Relative links from the report to the audit's files; figures collected for Markdown."""

    def __init__(self, result: Any, report: Path, fmt: str) -> None:
        self.root = result.root
        self.base = report.parent
        self.fmt = fmt
        self.figures: list[tuple[str, bytes]] = []
        self.fig_dir = report.stem + "_figures"
        # the figures drawn by an earlier report of this result (AuditResult._report_figures)
        self.pngs: dict[tuple[str, int], bytes] = result._report_figures()
        self._uses: dict[str, int] = {}

    def href(self, rel: str | None) -> str | None:
        # percent-encoded: a link target is a URL, whatever folder names the path crosses
        if rel is None or self.root is None:
            return None
        return quote(Path(os.path.relpath(Path(self.root) / rel, self.base)).as_posix())

    def num(self, value: Any, rel: str | None, digits: int = 4) -> Span:
        return Span(format_number(value, digits), self.href(rel), num=True)

    def figure(self, draw: Callable[[], Any], name: str, caption: str) -> Block:
        """The block of the figure ``draw()`` makes, as PNG (80 dpi). Drawing and encoding a
        figure costs tens of milliseconds (≈ 1.5 CPU-s for a whole report), so its PNG is
        kept on the result: a second report of it (``bayes-risk audit`` writes the HTML and
        the Markdown) does not draw it again. Keyed by name and by how often the name came
        before in this report (the same name may appear in two sections)."""
        from bayes_risk.auditing.plots import figure_png, png_data_uri

        key = (name, self._uses.get(name, 0))
        self._uses[name] = key[1] + 1
        png = self.pngs.get(key)
        if png is None:
            png = self.pngs[key] = figure_png(draw())
        if self.fmt == "md":
            # a name seen before in this report (the knowledge sweeps of the identification and
            # attribute steps) gets a number: one file would hold the last figure for both
            if key[1]:
                stem, dot, ext = name.rpartition(".")
                name = f"{stem}_{key[1] + 1}{dot}{ext}" if dot else f"{name}_{key[1] + 1}"
            self.figures.append((name, png))
            return Block("figure", file=quote(f"{self.fig_dir}/{name}"), caption=caption)
        return Block("figure", uri=png_data_uri(png), caption=caption)


#: columns holding record numbers or dataset numbers: shown as plain integers
_ID_COLUMNS = {"record", "target", "dataset", "syn"}


def _cell(value: Any, column: str, href: str | None, digits: int) -> Span:
    if isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(
        value, (bool, np.bool_)
    ):
        if column in _ID_COLUMNS and np.isfinite(value):
            return Span(str(int(value)), num=True)
        return Span(format_number(value, digits), href, num=True)
    return Span(format_number(value, digits))


def _table(df: pd.DataFrame, links: _Links, src: str | None = None, caption: str = "",
           digits: int = 4) -> Block:
    """A table whose every number links to ``src`` (the file it comes from)."""
    href = links.href(src)
    cols = [str(c) for c in df.columns]
    rows = [[_cell(v, c, href, digits) for v, c in zip(r, cols, strict=True)]
            for r in df.itertuples(index=False)]
    return Block("table", columns=cols, rows=rows, caption=caption, csv=href,
                 file=src.rsplit("/", 1)[-1] if src else "")


# ---- sections --------------------------------------------------------------------------------
def _step_section(step: str, anchor: str, title: str) -> Callable[..., Callable[..., Section]]:
    """A report section of one audit step: the decorated ``body(sec, s, result, links)`` fills
    it only when the step ran (otherwise the section shows the step's status alone)."""

    def wrap(body: Callable[[Section, Any, Any, _Links], None]) -> Callable[..., Section]:
        @functools.wraps(body)
        def build(result: Any, links: _Links) -> Section:
            s = result.step(step)
            sec = Section(anchor, title, s.status)
            if s.status == "ran":
                body(sec, s, result, links)
            return sec

        return build

    return wrap


def _verdicts(result: Any, links: _Links) -> list[dict[str, Any]]:
    out = []
    for v in result.verdicts:
        u = f" {v.unit}" if v.unit else ""
        val = links.num(v.value, v.source)
        val.text += u
        out.append({
            "step": v.step, "measure": v.measure, "value": val,
            "threshold": ("≤ " if v.direction == "max" else "≥ ") + format_number(v.threshold)
            + u,
            "exceeds": v.exceeds, "detail": v.detail, "spread": v.spread,
            "cause": v.cause, "remedies": list(v.remedies),
            "warnings": [(c, message(c)) for c in v.warnings],
        })
    return out


def _baseline(b: Any, links: _Links) -> dict[str, Any]:
    u = f" {b.unit}" if b.unit else ""
    val = links.num(b.value, b.source)
    val.text += u
    return {"step": b.step, "measure": b.measure, "value": val,
            "threshold": format_number(b.threshold) + u, "why": b.why, "code": b.code}


def _intruders(result: Any) -> list[tuple[str, str]]:
    """Who the intruder of each verdict line is, once per distinct description."""
    seen: dict[str, list[str]] = {}
    for v in result.verdicts:
        if v.intruder:  # the disclosure lines differ by keys and target: named by measure
            seen.setdefault(v.intruder, []).append(v.measure if v.step == "disclosure"
                                                   else v.step)
    return [(", ".join(dict.fromkeys(ms)), who) for who, ms in seen.items()]


@_step_section("utility", "utility", "Utility")
def _utility(sec: Section, s: Any, result: Any, links: _Links) -> None:
    r = s.result
    p = r.pmse
    src = f"{s.folder}/summary.json" if s.folder else None
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
    sec.blocks.append(_table(tab, links, src, "pMSE and interval overlap per synthetic dataset"))
    sec.p(f"Last row: the pMSE figures are means over the {r.m} datasets; the interval overlap "
          f"is that of the intervals combined over the {r.m} datasets with the combining rules "
          "for synthetic data, which the verdict uses. It is not the mean of the rows above: "
          "the combined intervals are estimated from all the datasets together.")
    for note in r.comparison_notes():
        sec.p(note)
    ov = r.overlap.sort_values("overlap").head(TOP_N)
    cols = [c for c in ("estimand", "estimate_orig", "estimate_syn", "overlap") if c in ov]
    sec.blocks.append(_table(ov[cols], links, f"{s.folder}/overlap.csv" if s.folder else None,
                             f"Estimands with the smallest 95 % interval overlap (top {TOP_N}; "
                             "all in overlap.csv)"))


@_step_section("utility", "compare", "Original versus synthetic, variable by variable")
def _comparisons(sec: Section, s: Any, result: Any, links: _Links) -> None:
    from bayes_risk.auditing.plots import marginal_figure

    marg = s.extra["marginals"]
    sec.p("Marginal distributions of the original and the pooled synthetic datasets (as "
          "synthpop's compare()): bars of the percentage of records per level, densities for "
          "numeric variables.")
    syn = set(result.plan.synthesized)
    for v in list(dict.fromkeys(marg["variable"]))[:24]:
        tag = " (synthesized)" if v in syn else ""
        sec.blocks.append(links.figure(lambda v=v: marginal_figure(marg, v),
                                       f"compare_{file_slug(v)}.png", f"{v}{tag}"))
    tw = s.extra["twoway"]
    n_fig = sum(b.kind == "figure" for b in sec.blocks)
    n_tab = tw.groupby(["variable_1", "variable_2"], sort=False).ngroups
    sec.fold = (f"{n_fig} figure{'s' if n_fig != 1 else ''} of the marginals and {n_tab} two-way "
                f"table{'s' if n_tab != 1 else ''} (all in marginals.csv and twoway.csv)")
    for (a, b), t in tw.groupby(["variable_1", "variable_2"], sort=False):
        top = t.reindex(t["difference"].abs().sort_values(ascending=False).index).head(10)
        sec.blocks.append(_table(
            top[["level_1", "level_2", "original", "synthetic", "difference"]].rename(
                columns={"level_1": a, "level_2": b}),
            links, f"{s.folder}/twoway.csv" if s.folder else None,
            f"Two-way table {a} × {b}: % of records, the 10 cells that differ most", digits=3))


def _computed(col: pd.Series) -> bool:
    """Whether a diagnostic column holds a value for some record (the plug-in estimators
    compute no importance-sampling diagnostics: their columns are empty)."""
    if not pd.api.types.is_numeric_dtype(col):
        return True
    return bool(np.isfinite(col.to_numpy(dtype=float, na_value=np.nan)).any())


def _at_risk(df: pd.DataFrame, qi: pd.DataFrame | None, id_col: str) -> pd.DataFrame:
    if qi is None:
        return df
    vals = qi.iloc[df[id_col].to_numpy(dtype=int)].reset_index(drop=True)
    return pd.concat([df.reset_index(drop=True), vals], axis=1)


@_step_section("identification", "identification", "Identification risk")
def _identification(sec: Section, s: Any, result: Any, links: _Links) -> None:
    r, plan = s.result, result.plan
    sm = r.file
    src = f"{s.folder}/summary.json" if s.folder else None
    sec.p(f"An intruder who knows {', '.join(plan.known)} for every target looks for it among "
          "the released records (Reiter & Mitra 2009; Hornby & Hu 2021), each synthetic "
          f"dataset evaluated separately and the measures averaged: every figure below is the "
          f"mean over the m = {plan.m} released datasets; a target that matches no record in "
          "a dataset has no match there (no fallback).")
    if plan.identification_release_independent:
        sec.p(Span("Baseline of the original, not a risk of the release "
                   "(RELEASE_INDEPENDENT). ", strong=True),
              "No known column is synthesized: the intruder matches on columns the release "
              "carries unchanged, so every synthetic dataset gives the same figures, whatever "
              "was synthesized. To assess the release, give a synthesized column the intruder "
              "may know (the intruder of Hornby & Hu 2021 also knows the true values of the "
              "synthesized keys).")
    rows = [("expected match risk (sum of IR)", "expected_match_risk"),
            ("expected match rate", "expected_match_rate"),
            ("true match risk (correct unique matches)", "true_match_risk"),
            ("unique matches", "n_unique"), ("true match rate", "true_match_rate_targets"),
            ("false match rate", "false_match_rate")]
    sec.blocks.append(Block("table", columns=["measure", "value"],
                            rows=[[Span(lab), links.num(sm[k], src)] for lab, k in rows],
                            csv=links.href(src), file="summary.json",
                            caption=f"File-level measures over {sm['n_targets']:,} targets, "
                            + (", ".join(f"radius {c} = {r:g}" for c, r in plan.radius.items())
                               or "exact matching"), fold=False))
    sw = s.extra.get("sweep")
    if sw is not None:
        sec.blocks.append(links.figure(sw.plot, "radius_sweep.png",
                                       "Expected match risk by radius, one box per radius over "
                                       "the datasets; the dotted line marks the maximum"))
        ssrc = f"{s.folder}/radius_sweep.csv" if s.folder else None
        sec.p("The risk is largest at radius ", links.num(sw.r_star, ssrc), " (mean expected "
              "match risk ", links.num(sw.risk_star, ssrc), "): the conservative value to "
              "report (Hornby & Hu 2021, §4.1).")
        star = s.extra.get("at_r_star")
        if star is not None:
            f = star.file
            sec.p("At that radius: true match rate ", links.num(f["true_match_rate_targets"], src),
                  " (", links.num(f["true_match_risk"], src), " correct unique matches, ",
                  links.num(f["n_unique"], src), " unique matches), false match rate ",
                  links.num(f["false_match_rate"], src), "; every measure in summary.json "
                  "(at_maximising_radius). The table above is at the step's radius.")
    pooled = s.extra.get("pooled")
    if pooled is not None:
        f = pooled.headline.file
        where = (f" at its own maximising radius {pooled.sweep.r_star:g}"
                 if pooled.sweep is not None else "")
        sec.p(Span("An intruder who holds all the datasets. ", strong=True),
              f"Pooling the match probabilities over the m = {plan.m} datasets (Reiter & Mitra "
              "2009; Drechsler & Reiter 2008; the defaults of bayes-risk identification) gives",
              where, ": expected match risk ", links.num(f["expected_match_risk"], src),
              ", true match rate ", links.num(f["true_match_rate_targets"], src), " (",
              links.num(f["true_match_risk"], src), " correct unique matches), false match "
              "rate ", links.num(f["false_match_rate"], src), " (summary.json: pooled). "
              "Each verdict line reads the larger of this intruder's figure and the "
              "per-dataset mean: an intruder with every dataset is usually the stronger, and "
              "the mean over single datasets alone would understate the risk.")
    if s.extra.get("note"):
        sec.p(s.extra["note"] + ".")
    ks = s.extra.get("known_sweep")
    if ks is not None:
        _known_sweep_blocks(sec, ks, s.folder, links)
    tt = r.target_table().sort_values("IR", ascending=False, kind="stable").head(TOP_N)
    sec.blocks.append(_table(_at_risk(tt, s.extra.get("qi"), "target"), links,
                             f"{s.folder}/records.csv" if s.folder else None,
                             f"Targets most at risk (top {TOP_N} by IR; every target in "
                             "records.csv)"))


def _known_sweep_blocks(sec: Section, ks: Any, folder: str | None, links: _Links) -> None:
    """The knowledge sweep (``known_sweep=True``): frontier, drivers and levels, of the
    identification step (every subset of the known columns) or of the attribute step (every
    subset of the synthesized known columns, known of the record's own values)."""
    src = (lambda f: f"{folder}/{f}" if folder else None)  # noqa: E731
    m1, m2 = ks.shapley_measures
    if ks.kind == "identification":
        what = ("The same measures for every subset of the known columns "
                f"({len(ks.table)} subsets; the empty set is the intruder who knows nothing)")
        fig = "Expected match risk against the number of known columns"
        unit = "targets"
        lv_cols = ["variable", "level", "n_targets", "share_targets", "share_risk",
                   "risk_ratio", "true_matches"]
    else:
        what = ("The same measures for every subset of the synthesized known columns the "
                "intruder may also know of the target's own values "
                f"({len(ks.table)} subsets; the empty set is the worst case above)")
        fig = "Mean p_true against the number of the record's own values known"
        unit = "records"
        lv_cols = ["variable", "level", "n_targets", "share_targets", "share_risk",
                   "risk_ratio", "truth_first"]
    sec.p(Span("Sensitivity to the intruder's knowledge. ", strong=True),
          f"{what}: how much the figures above depend on the assumption about what the "
          "intruder knows (Hu 2019, §5). Not read by the verdict.")
    sec.blocks.append(links.figure(lambda: ks.plot("frontier"), "known_sweep.png",
                                   f"{fig}, one point per subset; the Pareto frontier joined"))
    fr = ks.frontier[["known", "n_known", *ks.shown_measures]]
    sec.blocks.append(_table(fr, links, src("known_sweep.csv"),
                             "Pareto frontier: the fewest known columns for the most risk "
                             "(every subset in known_sweep.csv)"))
    sec.blocks.append(links.figure(lambda: ks.plot("drivers"), "known_sweep_drivers.png",
                                   "What drives the risk: each column's Shapley value and the "
                                   "risk withholding it removes from the full set"))
    dv = ks.drivers[["variable", "synthesized", f"shapley_{m1}", f"shapley_{m2}",
                     f"{m1}_without", f"{m1}_removed_share"]]
    sec.blocks.append(_table(dv, links, src("known_sweep_drivers.csv"),
                             "Drivers: " + ks.shapley_note))
    sec.p(ks.headline())
    lv = ks.levels.sort_values("share_risk", ascending=False, kind="stable").head(TOP_N)
    sec.blocks.append(_table(lv[lv_cols], links, src("known_sweep_levels.csv"),
                             f"Levels holding the most risk, every known column known (top "
                             f"{TOP_N}; risk_ratio: share of the risk over share of the "
                             f"{unit})"))


@_step_section(
    "posterior_identification", "posterior-identification",
    "Posterior Monte Carlo identification risk",
)
def _posterior_identification(sec: Section, s: Any, result: Any, links: _Links) -> None:
    r = s.result
    pr = r.settings.get("posterior_replicates") or {}
    src = f"{s.folder}/summary.json" if s.folder else None
    R = int(r.file["n_replicates"])
    m = result.plan.m
    sec.p("The synthesized known columns are replaced by R = ", links.num(R, src),
          f" draws from the posterior predictive of {pr.get('model', 'the synthesis model')} "
          "(agency's view; Drechsler & Reiter 2008, eq. 5) instead of the m = "
          f"{m} released datasets; same radius and no fallback, as in the identification "
          "step. Two figures per measure, which estimate different things:")
    sec.blocks.append(Block("ul", items=[
        [Span("mean over single replicates", strong=True),
         Span(f": each replicate evaluated alone, as each released dataset in the "
              f"identification step, whose figure is the mean over its m = {m} datasets. "
              "This is the figure to compare with the identification step; it does not "
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
    per_ds = ident.result.file if ident.status == "ran" else {}
    labels = [("expected match risk (sum of IR)", "expected_match_risk"),
              ("true match rate", "true_match_rate_targets"),
              ("unique matches", "n_unique"), ("false match rate", "false_match_rate")]
    rows = []
    for lab, k in labels:
        u = unc.get(k) or {}
        q = u.get("replicate_quantiles") or {}
        rows.append([Span(lab), links.num(per_ds.get(k), f"{ident.folder}/summary.json"
                                          if ident.folder else None),
                     links.num(u.get("replicate_mean"), src),
                     links.num(u.get("replicate_mean_mc_se"), src),
                     links.num(q.get("0.025"), src), links.num(q.get("0.975"), src),
                     links.num(u.get("value"), src), links.num(u.get("mc_se"), src)])
    sec.blocks.append(Block(
        "table", columns=["measure", f"identification step: mean over m = {m} datasets",
                          f"mean over R = {R} single replicates", "its MCSE",
                          "replicate 2.5%", "replicate 97.5%",
                          f"pooled over R = {R} (grows with R)", "pooled MCSE"],
        rows=rows, csv=links.href(src), file="summary.json",
        caption="File-level measures: the per-dataset figure of the identification step, the "
                "same measure over single posterior replicates, and the pooled figure",
        fold=False))
    trace = r.file.get("mc_trace") or {}
    est = list(trace.get("expected_match_risk") or [])
    rs = list(trace.get("n_replicates") or [])
    if len(est) >= 2 and est[-1] > est[0]:
        sec.p("The pooled expected match risk rose from ", links.num(est[0], src),
              f" at R = {int(rs[0])} to ", links.num(est[-1], src), f" at R = {int(rs[-1])}: "
              "it depends on R, as the pooled definition does; report it with R, and the "
              "mean over single replicates beside it.")
    sec.blocks.append(links.figure(lambda: r.plot("running_estimate"), "running_estimate.png",
                                   "Running pooled expected match risk with ±2 MCSE (a curve "
                                   "still rising means the pooled figure still depends on R)"))


@_step_section("attribute", "attribute", "Attribute risk")
def _attribute(sec: Section, s: Any, result: Any, links: _Links) -> None:
    sm, recs = s.extra["summary"], s.result.records
    src = f"{s.folder}/summary.json" if s.folder else None
    st = sm.get("settings", {})
    sec.p(f"Worst-case intruder (knows every record but the target's synthesized values "
          f"{', '.join(st.get('columns', []))}); posterior: {result.plan.attribute_source}; "
          f"estimator: {st.get('estimator')}. p_true is the probability of the record's true "
          "values among its candidates, rank 1 the intruder's best guess. Random-guess "
          "probability ", links.num(sm.get("random_guess_baseline"), src), ".")
    rows = []
    for key, lab in (("all", "all"), ("unflagged", "stable estimates"),
                     ("flagged", "flagged (unstable)")):
        d = sm.get(key) or {}
        q = d.get("p_true_quantiles") or {}
        rows.append([Span(lab), links.num(d.get("n_records"), src),
                     links.num(d.get("mean_p_true"), src), links.num(q.get("50%"), src),
                     links.num(q.get("95%"), src), links.num(d.get("prop_top"), src)])
    sec.blocks.append(Block("table", columns=["records", "n", "mean p_true", "median p_true",
                                              "95 % p_true", "share ranked first"], rows=rows,
                            csv=links.href(src), file="summary.json",
                            caption="The probability of the truth over the records",
                            fold=False))
    mc = sm.get("mc_uncertainty")
    if mc:
        from bayes_risk.results.attribute import mc_table

        sec.blocks.append(_table(mc_table(mc), links, src, (
            f"Monte Carlo error of the stable estimates' figures (draw bootstrap, "
            f"{mc['bootstrap']} resamples of the posterior draws; {mc['n_flagged_excluded']} "
            "flagged record(s) left out)")))
    from bayes_risk.auditing.plots import ATTRIBUTE_FIGURES

    for kind, name, cap in ATTRIBUTE_FIGURES:
        sec.blocks.append(links.figure(lambda kind=kind: s.result.plot(kind), name, cap))
    ks = s.extra.get("known_sweep")
    if ks is not None:
        _known_sweep_blocks(sec, ks, s.folder, links)
    stable = recs[recs["flag_codes"].fillna("").astype(str) == ""]
    top = stable.sort_values("p_true", ascending=False, kind="stable").head(TOP_N).reset_index()
    cols = [c for c in ("record", "p_true", "rank_min", "G", "baseline") if c in top]
    sec.blocks.append(_table(_at_risk(top[cols], s.extra.get("qi"), "record"), links,
                             f"{s.folder}/records.csv" if s.folder else None,
                             f"Records most at risk among stable estimates (top {TOP_N} by "
                             "p_true; every record in records.csv)"))
    counts = sm.get("flag_counts") or {}
    sec.p("Flagged records: ", links.num(sm.get("n_flagged", 0), src),
          (" (" + ", ".join(f"{k} × {v}" for k, v in counts.items()) + ")") if counts else "",
          ". Diagnostics, one sentence each:")
    sec.blocks.append(Block("dl", terms=[(k, v) for k, v in DIAGNOSTICS.items()
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
        sec.p("Flags, one sentence each:")
        sec.blocks.append(Block("dl", terms=[(k, message(k)) for k in counts]))
    ch = sm.get("between_chain_check") or {}
    if ch:
        sec.p("Between-chain check of the record estimates: "
              + (f"{ch.get('reason')}; {ch.get('records_flagged')} record(s) flagged "
                 "CHAINS_DISAGREE." if ch.get("status") == "run"
                 else f"not run ({ch.get('reason')})."))


@_step_section("disclosure", "disclosure", "Empirical disclosure measures (synthpop)")
def _disclosure(sec: Section, s: Any, result: Any, links: _Links) -> None:
    sec.p("The measures of synthpop's disclosure() and replicated.uniques() (Raab, Nowok & "
          "Dibben, 'Practical privacy metrics for synthetic data'), in percent of records, one "
          "row per synthetic dataset; with the original's sample uniques and k-anonymity on "
          "the keys.")
    for t, res in s.result.items():
        sub = f"{s.folder}/{target_folder(s.result, t)}" if s.folder else None
        sec.p(f"Target {t}, keys {', '.join(res.keys)}.")
        for df, f, cap in ((res.ident, "ident.csv", "identity"),
                           (res.attrib, "attrib.csv", "attribute"),
                           (res.allCAPs, "allCAPs.csv", "correct attribution probabilities")):
            sec.blocks.append(_table(df, links, sub + f if sub else None, f"{cap} ({t})"))
        kb = res.key_baseline
        ksrc = sub + "summary.json" if sub else None
        sec.p("Original data: ", links.num(kb["n_sample_uniques"], ksrc),
              " sample uniques on the keys (", links.num(kb["pct_sample_uniques"], ksrc),
              " %) in ", links.num(kb["n_key_combinations"], ksrc), " key combinations; "
              "records violating k-anonymity: ",
              *[x for i, (k, d) in enumerate(kb["k_anonymity"].items())
                for x in (Span(("; " if i else "") + f"k = {k}: "),
                          links.num(d["n_violating"], ksrc))], ".")


def utility_risk_points(result: Any) -> pd.DataFrame | None:
    """One row per synthetic dataset: S_pMSE and the risk measures of the "utility and risk"
    figure (the expected match risk at the maximising radius, as the verdict reads it, or at
    the step's radius without a sweep; repU and DiSCO of the first target)."""
    u, i, d = (result.step(n) for n in ("utility", "identification", "disclosure"))
    if u.status != "ran":
        return None
    pts = pd.DataFrame({"dataset": np.arange(1, result.plan.m + 1),
                        "S_pMSE": np.asarray(u.result.pmse.ratio, dtype=float)})
    plan = result.plan
    # a figure that cannot depend on the release (a baseline of the original) is the same for
    # every dataset: it is not plotted as a risk of the release
    if i.status == "ran" and i.result.per_dataset is not None and \
            not plan.identification_release_independent:
        sw = i.extra.get("sweep")
        if sw is not None and sw.argmax:  # at the maximising radius, as the verdict reads it
            pts[f"expected match risk (radius {sw.r_star})"] = sw.risk[sw.argmax[0]]
        else:
            per = i.result.to_dict()["summary"]["per_dataset"]
            rad = ", ".join(f"{c} = {r:g}" for c, r in result.plan.radius.items())
            pts["expected match risk" + (f" (radius {rad})" if rad else "")] = \
                per["expected_match_risk"]
    if d.status == "ran":
        t, res = next(iter(d.result.items()))
        fixed = plan.release_independent_keys(t)
        if not fixed:
            pts[f"repU % ({t})"] = res.ident["repU"].to_numpy()
        if not (fixed and t not in plan.synthesized):
            pts[f"DiSCO % ({t})"] = res.attrib["DiSCO"].to_numpy()
    return pts if pts.shape[1] > 2 else None


def _utility_risk(result: Any, links: _Links) -> Section | None:
    from bayes_risk.auditing.plots import utility_risk_figure

    pts = utility_risk_points(result)
    if pts is None:
        return None
    sec = Section("utility-risk", "Utility and risk together")
    sec.p("Each point is one released synthetic dataset (Hornby & Hu 2021, Figs 8 and 9): "
          "further left is more useful, lower is less risky.")
    sec.blocks.append(links.figure(lambda: utility_risk_figure(pts), "utility_risk.png",
                                   "Utility (S_pMSE) against risk, one point per dataset"))
    return sec


@_step_section("membership", "membership", "Membership risk")
def _membership(sec: Section, s: Any, result: Any, links: _Links) -> None:
    f, st = s.result.file, s.result.settings
    src = f"{s.folder}/summary.json" if s.folder else None
    sec.p("Worst-case intruder (knows every record but one) holding a record of the original "
          "(member) or of the holdout (non-member): the posterior probability that it was in "
          "the confidential data, with prior ", links.num(st.get("prior"), src),
          " (methods page 'Membership disclosure risk'); beside it the distance to the closest "
          "released record (SDMetrics, anonymeter).")
    sec.blocks.append(_table(s.result.summary().tables["attack"], links, src,
                             "The attack's advantage over the base rate (unflagged targets; "
                             "95 % bootstrap intervals over records)"))
    us = f.get("unsynthesized")
    if us:
        sec.p(f"Partially synthetic release: the unsynthesized values ({', '.join(us['columns'])}"
              ") of every record are released as they are, so a record is a member only if its "
              "own are those of the record it is compared with, and their rarity in the "
              "population weighs in (methods page, 'Partially synthetic releases'). Members "
              "alone in their cell of these columns: ",
              links.num(us.get("share_members_unique"), src),
              "; holdout records with the values of the record they are compared with: ",
              links.num(us.get("share_non_members_matching"), src), ".")
    sec.p("Flagged targets (left out of the figures above): ", links.num(f.get("n_flagged"), src),
          ".")
    sec.blocks.append(links.figure(lambda: s.result.plot("roc"), "membership_roc.png",
                                   "ROC of the Bayesian score and of the distance baseline"))


def _context(result: Any, links: _Links) -> dict[str, Any]:
    plan = result.plan
    sections = [_utility(result, links), _comparisons(result, links),
                _identification(result, links), _posterior_identification(result, links),
                _attribute(result, links), _membership(result, links),
                _disclosure(result, links)]
    ur = _utility_risk(result, links)
    if ur is not None:
        sections.insert(0, ur)
    steps = [{"title": s.title, "status": s.status, "reason": s.reason,
              "seconds": f"{s.seconds:.1f}", "folder": links.href(s.folder),
              "folder_name": s.folder} for s in result.steps]
    settings = plan.settings_frame()
    from bayes_risk._version import __version__

    method = plan.method or "unknown"
    zeros = next((s for s in plan.settings if s.name == "structural zeros"), None)
    if zeros is not None:  # the header says what the release can never hold
        method += f", {zeros.value} (structural zeros; see Settings)"

    return {
        "title": "bayes-risk audit",
        "version": __version__,
        "csp": CSP,
        "n": f"{plan.n_records:,}", "m": plan.m, "method": method,
        "synthesized": ", ".join(plan.synthesized), "known": ", ".join(plan.known),
        "verdicts": _verdicts(result, links),
        "intruders": _intruders(result),
        "complete": result.complete,
        # the first sentence says the audit is incomplete when a step failed
        "verdict_sentences": result.verdict_sentences(),
        "baselines": [_baseline(b, links) for b in result.baselines],
        "steps": steps,
        "sections": [s for s in sections if s.status == "ran"],
        "settings": settings.to_dict(orient="records"),
        "warnings": result.warnings,
        "show_confidential": plan.show_confidential_values,
        "summary_href": links.href("summary.json"),
    }


#: characters that mean something in CommonMark or GFM inline text (HTML tags and entities,
#: links and images, code spans, emphasis, table cells, strikethrough, headings), and an
#: underscore that could open or close emphasis (one inside a word, as in p_true, cannot)
_MD_SPECIAL = re.compile(r"[\\`*\[\]<>&|~#]|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])")
#: what makes a line a list item (``-``, ``+``, ``1.``, ``1)`` before a space or the end), a
#: block quote (``>``) or a setext heading's underline (``=``) at its start
_MD_BLOCK_START = re.compile(r"^(\s*\d{1,9})([.)])(?=\s|$)|^(\s*)([-+=](?=[\s=]|$)|>)")


def _md_text(s: Any) -> str:
    """``s`` as literal Markdown text: a column name, a level or a message from the data renders
    as the characters it holds and never as markup. Every character CommonMark or GFM could
    read as markup is backslash-escaped (``<img ...>`` -> ``\\<img ...\\>``, which renders as
    the text ``<img ...>``: no raw HTML, no link, no entity), line breaks become spaces (a
    name cannot start a block of its own) and a list or quote marker at the start is escaped.
    Applied once to each piece of text (the links around it are made by the template)."""
    text = re.sub(r"[\r\n]+", " ", str(s))
    text = _MD_SPECIAL.sub(lambda m: "\\" + m.group(0), text)
    return _MD_BLOCK_START.sub(
        lambda m: (m.group(1) + "\\" + m.group(2)) if m.group(1) is not None
        else (m.group(3) + "\\" + m.group(4)), text, count=1)


def write_report(result: Any, path: str | os.PathLike[str], fmt: str = "html") -> Path:
    """Render the report of ``result`` to ``path`` (``fmt`` "html" or "md"), atomically."""
    import jinja2

    from bayes_risk._io import atomic_file

    path = Path(path)
    links = _Links(result, path, fmt)
    ctx = _context(result, links)
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("bayes_risk.auditing", "templates"),
        autoescape=jinja2.select_autoescape(["html", "html.j2"], default_for_string=False),
        trim_blocks=True, lstrip_blocks=True, undefined=jinja2.StrictUndefined,
    )
    # Markdown: text from the data ("<NA>", "age<15", "<b>", a column named
    # '"><img src=x onerror=alert(1)>') must render as text, never as markup; the escaped text
    # holds no "|" or line break, so it is also a table cell's
    env.filters["mdtext"] = _md_text
    text = env.get_template("report.html.j2" if fmt == "html" else "report.md.j2").render(**ctx)
    if links.figures:
        fig_dir = path.parent / links.fig_dir
        fig_dir.mkdir(parents=True, exist_ok=True)
        for name, png in links.figures:
            (fig_dir / name).write_bytes(png)
    with atomic_file(path) as fh:
        fh.write(text)
    return path
