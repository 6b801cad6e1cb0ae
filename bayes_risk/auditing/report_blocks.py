"""The building blocks of the audit report (:mod:`~bayes_risk.auditing.render`): spans,
blocks and sections, the links from the report to the audit's files, tables, and the
decorator that makes a step's section (:doc:`/adding_a_measure`)."""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

import numpy as np
import pandas as pd

from bayes_risk.auditing.outcome import step_file
from bayes_risk.results._base import plot_figure
from bayes_risk.results._format import format_number, format_value

__all__ = ["Span", "Block", "Section", "Links", "table_block", "rows_block", "step_section",
           "TOP_N", "at_risk"]

#: the rows of a table of the records most at risk
TOP_N = 20


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
    #: the figure's width in the HTML report, in CSS pixels
    width: int | None = None


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


class Links:
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
        """``value`` formatted for people (no exponent), then its ``unit``, linked to file
        ``rel``."""
        return Span(format_value(value, unit, digits, missing="—"), self.href(rel), num=True)

    def pct(self, fraction: Any, rel: str | None, digits: int = 3) -> Span:
        """A fraction of the files (summary.json holds rates as fractions) in per cent."""
        v = np.nan if fraction is None else float(fraction) * 100
        return self.num(v, rel, digits, "%")

    def count(self, value: Any, n: int, rel: str | None, noun: str = "targets") -> list[Span]:
        """A count as the rate it is of ``n``, in per cent, then the count: "0.85 % = 47.35 of
        5,571 targets", as the verdict gives it (one unit per quantity, issue 66)."""
        v = np.nan if value is None else float(value)
        return [self.pct(v / n if n else np.nan, rel), Span(" = "), self.num(v, rel),
                Span(f" of {n:,} {noun}")]

    def figure(self, draw: Callable[[], Any], name: str, caption: str) -> Block:
        """The block of the figure ``draw()`` makes, drawn once per result (a figure of the
        report's own; a step's: :meth:`step_figure`)."""
        from bayes_risk.auditing.plots import figure_png

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
        return _embedded(png, caption)

    def step_figure(self, s: Any, name: str, caption: str) -> Block:
        """The block of step ``s``'s figure ``name`` (:attr:`StepOutcome.figures`): the PNG
        the step wrote, embedded in the HTML report and linked from the Markdown one; drawn
        only when the audit wrote no files (or they are gone)."""
        rel = step_file(s, name)
        path = None if rel is None or self.root is None else Path(self.root) / rel
        if path is None or not path.is_file():
            return self.figure(s.figures[name].draw, name, caption)
        if self.fmt == "md":
            return Block("figure", file=self.href(rel) or "", caption=caption)
        return _embedded(path.read_bytes(), caption)


def _embedded(png: bytes, caption: str) -> Block:
    """A figure of the HTML report: the PNG as a data URI, shown at its width at the report's
    resolution (a step's figure is saved finer)."""
    from bayes_risk.auditing.plots import png_data_uri, shown_width

    return Block("figure", uri=png_data_uri(png), caption=caption, width=shown_width(png))


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


def table_block(df: pd.DataFrame, links: Links, src: str | None = None, caption: str = "",
                digits: int = 4, percent: tuple[str, ...] = ()) -> Block:
    """A table whose numbers link to ``src``; the ``percent`` columns (fractions) in per cent."""
    href = links.href(src)
    cols = [str(c) for c in df.columns]
    rows = [[links.pct(v, src) if c in percent else _cell(v, c, href, digits)
             for v, c in zip(r, cols, strict=True)] for r in df.itertuples(index=False)]
    # columns holding fractions are shown in per cent, and their header says so
    return rows_block([f"{c} (%)" if c in percent else c for c in cols], rows, links, src,
                      caption, fold=True)


def rows_block(columns: list[str], rows: list[list[Any]], links: Links, src: str | None,
               caption: str, fold: bool = False) -> Block:
    """A table of rows of spans whose numbers come from file ``src``."""
    return Block("table", columns=columns, rows=rows, caption=caption, csv=links.href(src),
                 file=src.rsplit("/", 1)[-1] if src else "", fold=fold)


def at_risk(df: pd.DataFrame, qi: pd.DataFrame | None, id_col: str) -> pd.DataFrame:
    """``df``, the records most at risk, with their values of the known columns ``qi`` (the
    row of ``qi`` each ``df[id_col]`` names) beside; ``df`` as it is without ``qi``."""
    if qi is None:
        return df
    vals = qi.iloc[df[id_col].to_numpy(dtype=int)].reset_index(drop=True)
    return pd.concat([df.reset_index(drop=True), vals], axis=1)


def step_section(step: str, anchor: str, title: str) -> Callable[..., Callable[..., Section]]:
    """A report section of one step, filled by the decorated body when it ran
    (:doc:`/adding_a_measure`)."""

    def wrap(body: Callable[[Section, Any, Any, Links], None]) -> Callable[..., Section]:
        @functools.wraps(body)
        def build(result: Any, links: Links) -> Section:
            s = result.step(step)
            sec = Section(anchor, title, s.status)
            if s.status == "ran":
                body(sec, s, result, links)
            return sec

        return build

    return wrap


def known_sweep_blocks(sec: Section, ks: Any, s: Any, links: Links, *, what: str, fig: str,
                       unit: str, last: str) -> None:
    """The knowledge sweep ``ks`` of step ``s``, in its measure's words: ``what`` the subsets
    are, ``fig`` the frontier figure's caption, ``unit`` what the levels' shares count and
    ``last`` the levels table's last column."""
    m1, m2 = ks.shapley_measures
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
