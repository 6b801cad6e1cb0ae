"""The audit report: one content model rendered by two Jinja2 templates (HTML, Markdown).

Every number links to its file; the HTML is self-contained (inline CSS, data-URI figures, a
Content-Security-Policy that forbids every fetch).
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
from bayes_risk.auditing.outcome import step_file, where_text
from bayes_risk.auditing.plan import radius_text
from bayes_risk.results._base import plot_figure
from bayes_risk.results._format import format_number
from bayes_risk.results.attribute import EVIDENCE_FACTOR
from bayes_risk.warning_codes import message

__all__ = ["write_report", "CSP", "Block", "Section", "Span", "step_section"]

#: the report's Content-Security-Policy: nothing may be fetched; images only from data URIs
CSP = "default-src 'none'; img-src data:; style-src 'unsafe-inline'"

TOP_N = 20

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

#: the columns of synthpop's disclosure tables, in plain words
SYNTHPOP_TERMS = {
    "UiO": "unique in the original: records whose key combination occurs once in the original.",
    "UiS": "unique in the synthetic data: synthetic records whose key combination occurs once "
           "in that dataset.",
    "UiOiS": "unique in the original and found in the synthetic data: records unique in the "
             "original whose key combination occurs in the synthetic dataset.",
    "repU": "replicated uniques: records unique in the original whose key combination is also "
            "unique in the synthetic dataset — one an intruder could single out.",
    "Dorig": "disclosive in the original: records whose key combination has a single value of "
             "the target in the original.",
    "Dsyn": "disclosive in the synthetic data: synthetic records whose key combination has a "
            "single value of the target in that dataset.",
    "iS": "in synthetic: records whose key combination occurs in the synthetic dataset.",
    "DiS": "disclosive in synthetic: records whose key combination has a single value of the "
           "target in the synthetic dataset.",
    "DiSCO": "disclosive in synthetic, correct in original: records whose key combination has "
             "a single target value in the synthetic dataset, and that value is their own — "
             "an intruder who knows the keys reads the right value off the release.",
    "DiSDiO": "DiSCO records whose key combination also has a single target value in the "
              "original: their value could be read off the original just as well.",
    "max_denom, mean_denom": "the largest and the mean number of original records in the "
                             "key–target cells behind DiSCO (counts, not percentages): a large "
                             "cell is disclosure one would expect from the relation between "
                             "keys and target alone.",
    "baseCAPd": "baseline: the probability of guessing a record's target right from the "
                "target's overall distribution alone, without the keys.",
    "CAPd": "correct attribution probability in the original: the probability of guessing a "
            "record's target right from the original's distribution of the target within its "
            "key combination.",
    "CAPs": "the same from the synthetic dataset's own distribution within each key "
            "combination.",
    "DCAP": "the probability that an intruder who guesses an original record's target in "
            "proportion to the synthetic dataset's distribution within its key combination "
            "finds its own value.",
    "TCAP": "among the records whose key combination occurs in the synthetic dataset, the "
            "share whose value the release shows as the single one for their keys (DiSCO "
            "over iS).",
}

SYNTHPOP_SOURCE = ("Source: synthpop's disclosure() and replicated.uniques() help pages; Raab, "
                   "Nowok & Dibben, 'Practical privacy metrics for synthetic data'; formulas "
                   "on the methods page, Empirical disclosure measures.")


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
    #: a table behind a closed disclosure element (``False``: a summary, shown open)
    fold: bool = True
    #: a figure shown the width of the page (the utility-and-risk panels)
    wide: bool = False


@dataclass
class Section:
    """A heading with its blocks."""

    id: str
    title: str
    status: str = "ran"
    blocks: list[Block] = field(default_factory=list)
    #: HTML: the summary of the closed element the blocks after the first paragraph sit in
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

    def num(self, value: Any, rel: str | None, digits: int = 4, unit: str = "") -> Span:
        """``value`` formatted for people (no exponent), linked to file ``rel``."""
        text = format_number(value, digits, plain=True)
        return Span("—" if text in ("—", "nan") else text + unit, self.href(rel), num=True)

    def pct(self, fraction: Any, rel: str | None, digits: int = 3) -> Span:
        """A fraction of the files (summary.json holds rates as fractions) in per cent."""
        v = np.nan if fraction is None else float(fraction) * 100
        return self.num(v, rel, digits, " %")

    def count(self, value: Any, n: int, rel: str | None, noun: str = "targets") -> list[Span]:
        """A count as the rate it is of ``n``, in per cent, then the count: "0.85 % = 47.35 of
        5,571 targets", as the verdict gives it (one unit per quantity, issue 66)."""
        v = np.nan if value is None else float(value)
        return [self.pct(v / n if n else np.nan, rel), Span(" = "), self.num(v, rel),
                Span(f" of {n:,} {noun}")]

    def figure(self, draw: Callable[[], Any], name: str, caption: str) -> Block:
        """The block of the figure ``draw()`` makes, drawn once per result."""
        from bayes_risk.auditing.plots import figure_png, png_data_uri

        key = (name, self._uses.get(name, 0))
        self._uses[name] = key[1] + 1
        png = self.pngs.get(key)
        if png is None:
            png = self.pngs[key] = figure_png(draw())
        if self.fmt == "md":
            # a name seen before (the two knowledge sweeps) gets a number: one file each
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
        return Span(format_number(value, digits, plain=True), href, num=True)
    return Span(format_number(value, digits, plain=True))


def _table(df: pd.DataFrame, links: _Links, src: str | None = None, caption: str = "",
           digits: int = 4, percent: tuple[str, ...] = ()) -> Block:
    """A table whose numbers link to ``src``; the ``percent`` columns (fractions) in per cent."""
    href = links.href(src)
    cols = [str(c) for c in df.columns]
    rows = [[links.pct(v, src) if c in percent else _cell(v, c, href, digits)
             for v, c in zip(r, cols, strict=True)] for r in df.itertuples(index=False)]
    # columns holding fractions are shown in per cent, and their header says so
    return _rows_table([f"{c} (%)" if c in percent else c for c in cols], rows, links, src,
                       caption, fold=True)


def _rows_table(columns: list[str], rows: list[list[Any]], links: _Links, src: str | None,
                caption: str, fold: bool = False) -> Block:
    """A table of rows of spans whose numbers come from file ``src``."""
    return Block("table", columns=columns, rows=rows, caption=caption, csv=links.href(src),
                 file=src.rsplit("/", 1)[-1] if src else "", fold=fold)


# ---- sections --------------------------------------------------------------------------------
def step_section(step: str, anchor: str, title: str) -> Callable[..., Callable[..., Section]]:
    """A report section of one step, filled by the decorated body when it ran
    (:doc:`/adding_a_measure`)."""

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


#: each line's status as a sign and a word, so that it reads without colour
LINE_STATUS = {"exceeds": ("✖", "exceeds"), "caution": ("⚠", "within, with a caution"),
               "within": ("✔", "within")}

#: the sign of the report's banner for each :attr:`AuditResult.status`
RELEASE_SIGN = {"do_not_release": "✖", "incomplete": "⚠", "review": "⚠",
                "within_thresholds": "✔"}


def _threshold_sources(result: Any) -> tuple[list[str], dict[str, int]]:
    """The distinct sources of the verdict lines' thresholds, and each threshold's number."""
    from bayes_risk.auditing.plan import THRESHOLD_SOURCES, Thresholds
    from bayes_risk.exceptions import on_command_line

    notes: list[str] = []
    number: dict[str, int] = {}
    default = Thresholds()
    for v in result.verdicts:
        name = v.threshold_name
        if not name or name in number:
            continue
        value = getattr(result.plan.thresholds, name)
        # as the caller gave it: --threshold repU=50, or thresholds={'repU': 50} in Python
        given = (f"--threshold {name}={value:g}" if on_command_line()
                 else f"thresholds={{{name!r}: {value:g}}}")
        text = (THRESHOLD_SOURCES[name] if value == getattr(default, name) else
                f"given for this audit ({given}; the default is {getattr(default, name):g})")
        if text not in notes:
            notes.append(text)
        number[name] = notes.index(text) + 1
    return notes, number


def _verdicts(result: Any, links: _Links) -> list[dict[str, Any]]:
    out = []
    _, number = _threshold_sources(result)
    for v in result.verdicts:
        u = f" {v.unit}" if v.unit else ""
        val = [Span(format_number(v.value, 4, plain=True) + u, links.href(v.source), num=True)]
        if v.count_of and v.unit == "%" and np.isfinite(v.value):
            n, noun = v.count_of
            val.append(Span(f" = {format_number(v.value / 100 * n, 4, plain=True)} of "
                            f"{n:,} {noun}", num=True))
        sign, word = LINE_STATUS[v.status]
        out.append({
            "step": v.step, "measure": v.measure, "value": val,
            "threshold": ("≤ " if v.direction == "max" else "≥ ")
            + format_number(v.threshold, plain=True) + u,
            "source": number.get(v.threshold_name),
            "exceeds": v.exceeds, "status": v.status, "sign": sign, "word": word,
            "detail": v.detail, "spread": v.spread,
            "cause": v.cause, "remedies": list(v.remedies),
            "warnings": [(c, message(c)) for c in v.warnings],
        })
    return out


def _before_after(result: Any) -> dict[str, Any] | None:
    """The verdict lines of the earlier audit (:attr:`AuditResult.before`) beside this one's."""
    cmp = result.comparison()
    if cmp is None:
        return None

    def value(x: Any, unit: str) -> str:
        return "—" if x is None or pd.isna(x) else format_number(x, 4, plain=True) + (
            f" {unit}" if unit else "")

    def status(word: str) -> str:
        sign, text = LINE_STATUS.get(word, ("", word))
        return f"{sign} {text}".strip()

    rows = [{"step": r.step, "measure": r.measure,
             "before": value(r.before, r.unit), "status_before": status(r.status_before),
             "after": value(r.after, r.unit), "status_after": status(r.status_after),
             "change": "—" if r.change is None or pd.isna(r.change) else
             ("+" if r.change > 0 else "") + format_number(r.change, 3, plain=True)
             # the change of a percentage is in percentage points
             + {"": "", "%": " pp"}.get(r.unit, f" {r.unit}"),
             "thresholds_differ": r.threshold_before is not None and r.threshold_after
             is not None and r.threshold_before != r.threshold_after}
            for r in cmp.itertuples()]
    b = result.before
    # why a risk rose after the remedy, beside the figures (computed: auditing.rises)
    causes = [{"step": r.step, "measure": r.measure, "before": value(r.before, r.unit),
               "after": value(r.after, r.unit), "cause": r.cause}
              for r in cmp.itertuples() if r.cause]
    return {"rows": rows, "causes": causes,
            "folder": str(b.get("folder") or "the earlier audit"),
            "headline": str(b.get("headline") or "").rstrip("."),
            "status_sign": RELEASE_SIGN.get(b.get("status"), "")}


def _baseline(b: Any, links: _Links) -> dict[str, Any]:
    u = f" {b.unit}" if b.unit else ""
    val = links.num(b.value, b.source)
    val.text += u
    return {"step": b.step, "measure": b.measure, "value": val,
            # a measure of the original alone (sdcMicro's) has no release threshold
            "threshold": "—" if b.threshold is None else format_number(b.threshold) + u,
            "why": b.why, "code": b.code}


def _intruders(result: Any) -> list[tuple[str, str, str]]:
    """Who the intruder of each verdict line is and the worst case over their choices the line
    takes, once per distinct description."""
    seen: dict[tuple[str, str], list[str]] = {}
    for v in result.verdicts:
        if v.intruder:  # the disclosure lines differ by keys and target: named by measure
            seen.setdefault((v.intruder, v.worst_case), []).append(
                v.measure if v.step == "disclosure" else v.step)
    return [(", ".join(dict.fromkeys(ms)), who, worst) for (who, worst), ms in seen.items()]


@step_section("utility", "utility", "Utility")
def utility_section(sec: Section, s: Any, result: Any, links: _Links) -> None:
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
    sec.blocks.append(_table(tab, links, src, "pMSE and interval overlap per synthetic dataset"))
    sec.p(f"Last row: the pMSE figures are means over the {r.m} datasets; the interval overlap "
          f"is that of the intervals combined over the {r.m} datasets with the combining rules "
          "for synthetic data, which the verdict uses. It is not the mean of the rows above: "
          "the combined intervals are estimated from all the datasets together.")
    for note in r.comparison_notes():
        sec.p(note)
    ov = r.overlap.sort_values("overlap").head(TOP_N)
    cols = [c for c in ("estimand", "estimate_orig", "estimate_syn", "overlap") if c in ov]
    sec.blocks.append(_table(ov[cols], links, step_file(s, "overlap.csv"),
                             f"Estimands with the smallest 95 % interval overlap (top {TOP_N}; "
                             "all in overlap.csv)"))


@step_section("utility", "compare", "Original versus synthetic, variable by variable")
def comparisons_section(sec: Section, s: Any, result: Any, links: _Links) -> None:
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
            links, step_file(s, "twoway.csv"),
            f"Two-way table {a} × {b}: % of records, the 10 cells that differ most", digits=3))


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
def identification_section(sec: Section, s: Any, result: Any, links: _Links) -> None:
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
    sec.blocks.append(_rows_table(
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
    sec.blocks.append(_table(_at_risk(tt, s.extra.get("qi"), "target"), links,
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


def _id_rows(f: dict[str, Any], n: int, src: str | None, links: _Links) -> list[list[Any]]:
    """The identification measures, each as its per cent of the ``n`` targets and its count."""
    return [*([Span(text), links.count(f[k], n, src)] for k, text in _ID_COUNTS.items()),
            [Span("false match rate: unique matches that are another record"),
             [links.pct(f["false_match_rate"], src), Span(" of the unique matches")]]]


def _search_sentence(sw: Any, plan: Any, n: int, src: str | None, links: _Links) -> list[Any]:
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


def _known_curve_blocks(sec: Section, s: Any, links: _Links) -> None:
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
    sec.blocks.append(_table(curve.table, links, step_file(s, "known_curve.csv"),
                             "Attribute risk by the share of other records known"))


def _known_sweep_blocks(sec: Section, ks: Any, s: Any, links: _Links) -> None:
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
    sec.blocks.append(_table(fr, links, step_file(s, "known_sweep.csv"),
                             "Pareto frontier: the fewest known columns for the most risk "
                             "(every subset in known_sweep.csv)"))
    sec.blocks.append(links.figure(lambda: plot_figure(ks, "drivers"), "known_sweep_drivers.png",
                                   "What drives the risk: each column's Shapley value and the "
                                   "risk withholding it removes from the full set"))
    dv = ks.drivers[["variable", "synthesized", f"shapley_{m1}", f"shapley_{m2}",
                     f"{m1}_without", f"{m1}_removed_share"]]
    sec.blocks.append(_table(dv, links, step_file(s, "known_sweep_drivers.csv"),
                             "Drivers: " + ks.shapley_note))
    sec.p(ks.headline())
    lv = ks.levels.sort_values("share_risk", ascending=False, kind="stable").head(TOP_N)
    sec.blocks.append(_table(lv[lv_cols], links, step_file(s, "known_sweep_levels.csv"),
                             f"Levels holding the most risk, every known column known (top "
                             f"{TOP_N}; risk_ratio: share of the risk over share of the "
                             f"{unit})"))


@step_section(
    "posterior_identification", "posterior-identification",
    "Posterior Monte Carlo identification risk",
)
def posterior_identification_section(sec: Section, s: Any, result: Any, links: _Links) -> None:
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
    sec.blocks.append(_rows_table(
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
def attribute_section(sec: Section, s: Any, result: Any, links: _Links) -> None:
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
    sec.blocks.append(_rows_table(
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
    sec.blocks.append(_table(
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
                       links: _Links, src: str | None) -> None:
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


def _mc_block(mc: dict[str, Any], links: _Links, src: str | None) -> Block:
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
    return _rows_table(["figure", "value", "MCSE", f"{key.rsplit('_', 1)[1]} % Monte Carlo "
                        "interval"], rows, links, src,
                       f"Monte Carlo error of the stable estimates' figures (draw bootstrap, "
                       f"{mc['bootstrap']} resamples of the posterior draws; "
                       f"{mc['n_flagged_excluded']} flagged record(s) left out)", fold=True)


@step_section("disclosure", "disclosure", "Empirical disclosure measures (synthpop)")
def disclosure_section(sec: Section, s: Any, result: Any, links: _Links) -> None:
    sec.p("The measures of synthpop's disclosure() and replicated.uniques() (Raab, Nowok & "
          "Dibben, 'Practical privacy metrics for synthetic data'), in per cent of the "
          "records, one row per synthetic dataset; with the original's sample uniques and "
          "k-anonymity on the keys. The keys are the columns the intruder knows, the target "
          "the one they want to learn. What the columns mean (synthpop's names):")
    sec.blocks.append(Block("dl", terms=list(SYNTHPOP_TERMS.items()), caption=SYNTHPOP_SOURCE))
    for t, res in s.result.items():
        sub = target_folder(s.result, t)
        sec.p(f"Target {t}, keys {', '.join(res.keys)}.")
        for df, f, cap in ((res.ident, "ident.csv", "identity measures, % of records"),
                           (res.attrib, "attrib.csv", "attribute measures, % of records "
                            "(max_denom, mean_denom: counts)"),
                           (res.allCAPs, "allCAPs.csv", "correct attribution probabilities, "
                            "%")):
            sec.blocks.append(_table(df, links, step_file(s, sub + f), f"{cap} ({t})"))
        kb = res.key_baseline
        ksrc = step_file(s, sub + "summary.json")
        sec.p("Original data: ", links.num(kb["n_sample_uniques"], ksrc),
              " sample uniques on the keys (", links.num(kb["pct_sample_uniques"], ksrc),
              " %) in ", links.num(kb["n_key_combinations"], ksrc), " key combinations; "
              "records violating k-anonymity: ",
              *[x for i, (k, d) in enumerate(kb["k_anonymity"].items())
                for x in (Span(("; " if i else "") + f"k = {k}: "),
                          links.num(d["n_violating"], ksrc))], ".")
    base = s.extra.get("original_risk") or {}
    for i, (keys, r) in enumerate(base.items(), start=1):
        sfx = f"_{i}" if len(base) > 1 else ""
        osrc = step_file(s, f"original_risk{sfx}/summary.json")
        g = r.global_risk
        sec.p(f"sdcMicro's risk of the original on the keys {', '.join(keys)} (Templ, Kowarik "
              "& Meindl 2015; a baseline, the same for every release): ",
              links.num(g["expected_reidentifications"], osrc),
              " expected re-identifications (global risk ", links.num(g["global_risk_pct"], osrc,
                                                                     unit=" %"),
              "; " + ("Benedetti–Franconi individual risk with the survey weights "
                      f"{r.settings['weights']}" if r.weighted else
                      "no survey weights: each record's risk is 1/f_k, an upper bound") + ")",
              *([", ", links.num(r.suda["n_records_with_msu"], osrc),
                 " records with a SUDA2 minimal sample unique"] if r.suda else []),
              *[x for c, d in r.l_diversity.items()
                for x in (f"; key cells with one value of {c} hold ",
                          links.num(d["n_records_l1"], osrc), " records (l-diversity 1)")],
              ". Per-record risk, SUDA2 scores and l-diversity: records.csv beside it "
              "(methods page, Risk of the original).")
        sec.blocks.append(links.figure(
            lambda r=r: plot_figure(r, "risk"), f"original_risk{sfx}.png",
            f"The original's records by sdcMicro's individual re-identification risk on the keys "
            f"{', '.join(keys)} (logarithmic axis; dashed: the global risk, their mean): a "
            "baseline, the same for every release."))


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
        if sw is not None and sw.argmax:
            cols["expected_match_rate"] = (np.asarray(sw.risk[sw.argmax[0]], float) / n,
                                           sw.radii_at(sw.argmax[0]))
        if sw is not None and sw.tmr_argmax and sw.true_match_rate is not None:
            cols["true_match_rate"] = (np.asarray(sw.true_match_rate[sw.tmr_argmax[0]], float),
                                       sw.radii_at(sw.tmr_argmax[0]))
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


def _utility_risk(result: Any, links: _Links) -> Section | None:
    from bayes_risk.auditing.plots import utility_risk_figure

    pts = utility_risk_points(result)
    if pts is None:
        return None
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


@step_section("membership", "membership", "Membership risk")
def membership_section(sec: Section, s: Any, result: Any, links: _Links) -> None:
    f, st = s.result.file, s.result.settings
    src = step_file(s, "summary.json")
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
    sec.blocks.append(links.figure(lambda: plot_figure(s.result, "roc"), "membership_roc.png",
                                   "ROC of the Bayesian score and of the distance baseline"))


@step_section("attacks", "attacks", "Singling out, linkability and inference (anonymeter)")
def attacks_section(sec: Section, s: Any, result: Any, links: _Links) -> None:
    so, lk = s.result["singling_out"], s.result["linkability"]
    sec.p("anonymeter's attacks (Giomi et al. 2023; methods page 'Singling out, "
          "linkability and inference'), each made on the records of the original (main "
          "attack), on the holdout, records the synthesis did not use (control attack), and at "
          "random (baseline). The risk is the main attack's success beyond the control's, over "
          "what the control leaves: (main − control) / (1 − control), 0 when the release tells no "
          "more about its own records than about others, with its interval (Wilson score), "
          "clipped to [0, 1] as anonymeter does.")
    sec.blocks.append(_table(so.summary().tables["risk"], links,
                             step_file(s, "singling_out.csv"),
                             "Singling out: predicates that match exactly one synthetic row, "
                             "and how often they single out a record (rates)"))
    sec.blocks.append(links.figure(lambda: plot_figure(so, "risk"), "attacks_singling_out.png",
                                   "Singling-out risk per dataset and mode, with its interval"))
    if lk is None:
        sec.p(f"Linkability was not run: {s.extra.get('linkability_not_run')}.")
    else:
        a, b = lk.settings["aux_columns"]
        sec.p(f"Linkability: the intruder holds one table with {', '.join(a)} and another "
              f"with {', '.join(b)} about the same people, and links a record's two parts when "
              "they share a nearest synthetic row.")
        sec.blocks.append(_table(lk.summary().tables["risk"], links,
                                 step_file(s, "linkability.csv"),
                                 "Linkability: records relinked through the nearest synthetic "
                                 "rows (rates)"))
        sec.blocks.append(links.figure(lambda: plot_figure(lk, "risk"),
                                       "attacks_linkability.png",
                                       "Linkability risk per dataset and number of neighbours, "
                                       "with its interval"))
    inf = s.result.get("inference")
    if inf is None:
        return
    sec.p("Inference: the intruder knows every other column of a record and guesses each "
          "synthesized column as the value of the nearest synthetic row (a number is guessed "
          f"right within {100 * inf.settings['tolerance']:.3g} % of the guess, a category when "
          "equal). The Bayesian attribute risk (attribute step) asks the same question of the "
          "model's posterior; this is what one concrete intruder achieves (methods page, "
          "'Inference and the Bayesian attribute risk').")
    sec.blocks.append(_table(inf.summary().tables["risk"], links, step_file(s, "inference.csv"),
                             "Inference: secrets guessed right from the nearest synthetic row "
                             "(rates)"))
    sec.blocks.append(links.figure(lambda: plot_figure(inf, "risk"), "attacks_inference.png",
                                   "Inference risk per dataset and secret, with its interval"))


def _sending(result: Any, links: _Links, bundle: str | None) -> list[Span]:
    """What to send (the report's links point to the files beside it)."""
    if result.root is None:
        return [Span("This report links to no file (the audit wrote none): it can be sent "
                     "alone.")]
    if bundle:
        return [Span("To send this report, send "), Span(bundle, links.href(bundle),
                                                          strong=True),
                Span(" (beside it): this report with every file its numbers link to, in one "
                     "file. This file alone keeps every number and figure, but not its links "
                     "to the files.")]
    return [Span("The numbers link to the files of the audit folder: to send the report, send "
                 "the folder (in Python, result.to_zip(path) writes it as one zip file), not "
                 "this file alone, whose links would break.")]


def _reading_together(result: Any) -> list[str]:
    """Sentences reconciling DiSCO with the attribute line when they seem to disagree."""
    v = result.verdicts
    att = next((x for x in v if x.step == "attribute"), None)
    disco = [x for x in v if x.threshold_name == "DiSCO"]
    if att is None or not disco or all(d.exceeds == att.exceeds for d in disco):
        return []
    d_step = result.step("disclosure")
    sm = result.step("attribute").extra.get("summary") or {}
    guess = format_number(100 * float(sm.get("random_guess_baseline", np.nan)), 3, plain=True)
    parts = []
    for x in disco:
        t = x.measure.rsplit("target ", 1)[-1]
        res = d_step.result[t] if t in d_step.result else None
        diodi = (f", of which {format_number(float(res.means()['DiSDiO']), 3, plain=True)} % "
                 "can be read off the original too (DiSDiO)" if res is not None else "")
        parts.append(f"{t} {format_number(x.value, 3, plain=True)} %{diodi}")
    keys = ", ".join(next(iter(d_step.result.values())).keys)
    att_txt = (f"the attribute line ({format_number(att.value, 3, plain=True)} % of records "
               f"have their true values ranked first, against {guess} % for a random guess)")
    if any(d.exceeds for d in disco) and not att.exceeds:
        return [
            f"DiSCO exceeds its threshold while {att_txt} is within: they measure different "
            "things. DiSCO (" + "; ".join(parts) + ") counts the records whose key "
            f"combination ({keys}) shows a single value of the target in the release and that "
            "value is their own: an intruder who knows only the keys reads it off, whether "
            "the release learned it from this record or from the others who share its keys "
            "— a risk to groups of records whose keys predict the target. The attribute line "
            "asks whether the release makes a record's own true values more probable than "
            "their alternatives for an intruder who already knows everything else (the "
            "synthesis model and every other record): it finds nothing the release tells "
            "about single records beyond what the others explain. Both hold: the release "
            "discloses through key combinations with a single target value, which coarser "
            "keys address (DiSCO's remedies), not through what it learned from each record."]
    return [
        f"The attribute line exceeds its threshold while DiSCO is within ({'; '.join(parts)}): "
        "they measure different things. The attribute intruder knows the synthesis model and "
        "every other record and weighs each candidate value of the synthesized columns, "
        f"{att_txt}; DiSCO's intruder knows only the keys ({keys}) and reads a value off the "
        "key combinations that show a single one. A release can tell about single records "
        "(released original values, as a CART synthesizer's donors) without any key "
        "combination showing a single value."]


def _context(result: Any, links: _Links, bundle: str | None = None) -> dict[str, Any]:
    plan = result.plan
    from bayes_risk.measures import load, measures

    # each registered measure's sections, in the order of the steps
    sections = [load(path)(result, links) for m in measures() for path in m.sections]
    ur = _utility_risk(result, links)
    if ur is not None:
        sections.insert(0, ur)
    steps = [{"title": s.title, "status": s.status, "reason": s.reason,
              "seconds": f"{s.seconds:.1f}", "where": where_text(s),
              "folder": links.href(s.folder),
              "folder_name": s.folder} for s in result.steps]
    settings = plan.settings_frame()
    from bayes_risk._version import __version__

    method = plan.method or "unknown"
    zeros = next((s for s in plan.settings if s.name == "structural zeros"), None)
    if zeros is not None:  # the header says what the release can never hold
        method += f", {zeros.value} (structural zeros; see Settings)"

    word, reason = result.headline_parts()
    labels = plan.variable_labels

    def named(cols: list[str]) -> str:  # a column with its file's variable label beside it
        return ", ".join(f"{c} ({labels[c]})" if labels.get(c) else str(c) for c in cols)

    return {
        "title": "bayes-risk audit",
        "version": __version__,
        "csp": CSP,
        "n": f"{plan.n_records:,}", "m": plan.m, "method": method,
        "synthesized": named(plan.synthesized), "known": named(plan.known),
        "variables": [{"name": c, "label": v,
                       "role": ("synthesized" if c in plan.synthesized else "unsynthesized")
                       + (", known" if c in plan.known else "")}
                      for c, v in labels.items()],
        "verdicts": _verdicts(result, links),
        "before_after": _before_after(result),
        "threshold_sources": _threshold_sources(result)[0],
        "intruders": _intruders(result),
        "complete": result.complete,
        "status": result.status, "status_sign": RELEASE_SIGN[result.status],
        "status_word": word, "headline": reason,
        # the headline is shown on its own, the other sentences after it
        "verdict_sentences": [t for t in result.verdict_sentences() if t != result.headline],
        "together": _reading_together(result),
        "sending": _sending(result, links, bundle),
        "baselines": [_baseline(b, links) for b in result.baselines],
        "steps": steps,
        "sections": [s for s in sections if s.status == "ran"],
        "settings": settings.to_dict(orient="records"),
        "warnings": result.warnings,
        "show_confidential": plan.given.show_confidential_values,
        "summary_href": links.href("summary.json"),
    }


#: CommonMark/GFM inline markup, and an underscore that could open or close emphasis
_MD_MARKUP = re.compile(r"[\\`*\[\]<>&|~#]|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])")
#: a list item, block quote or setext underline marker at the start of a line
_MD_BLOCK_START = re.compile(r"^(\s*\d{1,9})([.)])(?=\s|$)|^(\s*)([-+=](?=[\s=]|$)|>)")


def _md_text(s: Any) -> str:
    """``s`` as literal Markdown text: markup escaped, line breaks as spaces."""
    text = re.sub(r"[\r\n]+", " ", str(s))
    text = _MD_MARKUP.sub(lambda m: "\\" + m.group(0), text)
    return _MD_BLOCK_START.sub(
        lambda m: (m.group(1) + "\\" + m.group(2)) if m.group(1) is not None
        else (m.group(3) + "\\" + m.group(4)), text, count=1)


def write_report(result: Any, path: str | os.PathLike[str], fmt: str = "html",
                 bundle: str | None = None) -> Path:
    """Render the report of ``result`` to ``path`` (``fmt`` "html" or "md"), atomically."""
    import jinja2

    from bayes_risk._io import atomic_file

    path = Path(path)
    links = _Links(result, path, fmt)
    ctx = _context(result, links, bundle)
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("bayes_risk.auditing", "templates"),
        autoescape=jinja2.select_autoescape(["html", "html.j2"], default_for_string=False),
        trim_blocks=True, lstrip_blocks=True, undefined=jinja2.StrictUndefined,
    )
    # Markdown: text from the data renders as text, never markup (also as a table cell)
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
