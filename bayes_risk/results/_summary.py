"""The printable summary every result returns from ``summary()`` (as statsmodels' ``Summary``)."""

from __future__ import annotations

import html
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from bayes_risk.results._format import format_number, html_table, markdown_table, text_table

__all__ = ["Summary", "ResultWarning", "TEXT_WIDTH", "SHORT_ROWS"]


#: the columns of a printed summary: a terminal's, a notebook's text output (issue 66: an
#: audit printed lines of up to 1,020 characters)
TEXT_WIDTH = 100
#: the rows of each table a printed result shows (its ``summary()`` holds them all)
SHORT_ROWS = 12


def _default_source(name: str) -> str:
    return f'result.summary().tables["{name}"]'


def _filler(width: int | None) -> Any:
    """``fill(text, indent="")``: the lines of ``text`` wrapped to ``width`` (kept as they are
    without one), later lines indented by ``indent``."""
    def fill(text: str, indent: str = "") -> list[str]:
        out = []
        for para in str(text).split("\n"):
            if width is None or len(para) <= width:
                out.append(para)
                continue
            lead = len(para) - len(para.lstrip(" "))
            out += textwrap.wrap(para, width, initial_indent="", subsequent_indent=indent
                                 or " " * lead, break_long_words=True, break_on_hyphens=False,
                                 drop_whitespace=True) if lead == 0 else textwrap.wrap(
                para.lstrip(" "), width, initial_indent=" " * lead,
                subsequent_indent=indent or " " * lead, break_long_words=True,
                break_on_hyphens=False)
        return out

    return fill


@dataclass(frozen=True)
class ResultWarning:
    """One warning carried by a result.

    Attributes
    ----------
    code : str
        Machine-readable code, e.g. ``"KHAT_HIGH"``.
    message : str
        What deserves attention and what to do about it.
    where : str
        What it concerns: ``"file"``, a fit, records, a dataset.
    """

    code: str
    message: str
    where: str = "file"

    def to_dict(self) -> dict[str, str]:
        """JSON-ready ``{"code", "message", "where"}``."""
        return {"code": self.code, "message": self.message, "where": self.where}

    def __str__(self) -> str:
        return f"[{self.code}] ({self.where}) {self.message}"


@dataclass(repr=False)
class Summary:
    """Printable summary of a result: ``as_text``, ``as_markdown``, ``as_html``.

    Parameters
    ----------
    title : str
        What the result is.
    header : sequence of (label, value)
        Key facts, shown before the tables.
    tables : dict of str to DataFrame
        Named tables in display order.
    notes : list of str
        Footer lines.
    warnings : list of ResultWarning
        The result's structured warnings.
    digits : int
        Significant digits of floats in the rendered tables.

    Examples
    --------
    >>> import pandas as pd
    >>> s = Summary("Example", header=[("records", 3)],
    ...             tables={"figures": pd.DataFrame({"measure": ["a"], "value": [0.5]})})
    >>> print(s.as_text())
    Example
    =======
    records: 3
    <BLANKLINE>
    figures
    measure value
          a   0.5
    """

    title: str
    header: Sequence[tuple[str, Any]] = field(default_factory=list)
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    warnings: list[ResultWarning] = field(default_factory=list)
    digits: int = 4
    #: where a table is in full, by its name (default ``.summary().tables["NAME"]``), named
    #: when a printed result shows part of it
    table_sources: dict[str, str] = field(default_factory=dict)

    def _header_pairs(self) -> list[tuple[str, str]]:
        return [(str(k), format_number(v, self.digits)) for k, v in self.header]

    def as_text(self, *, width: int | None = TEXT_WIDTH, max_rows: int | None = None) -> str:
        """Plain text: title, header, each table, notes and warnings.

        Parameters
        ----------
        width : int or None
            No line is longer (default 100 columns): text wraps, a wide table's headers and
            text cells wrap within their columns, and a table that cannot fit so is cut into
            blocks of columns, its first repeated; ``None``: lines as long as they are.
        max_rows : int or None
            Rows shown of each table, the others counted and named where they are in full
            (``None``: every row).

        Returns
        -------
        str
        """
        fill = _filler(width)
        lines = [*fill(self.title), "=" * min(len(self.title), width or len(self.title))]
        pairs = self._header_pairs()
        if pairs:
            key = min(max(len(k) for k, _ in pairs) + 1, 40)
            for k, v in pairs:
                lines += fill(f"{k + ':':<{key}} {v}", indent=" " * (key + 1))
        for name, df in self.tables.items():
            shown = df if max_rows is None or len(df) <= max_rows else df.head(max_rows)
            lines += ["", *fill(name), text_table(shown, self.digits, width=width)]
            if len(shown) < len(df):
                lines += fill(f"… {len(df) - len(shown):,} more rows: the table in full is "
                              f"{self.table_sources.get(name, _default_source(name))}")
        if self.notes:
            lines.append("")
            for note in self.notes:
                lines += fill(note)
        if self.warnings:
            lines += ["", "Warnings:"]
            for w in self.warnings:
                lines += fill(f"  {w}", indent="    ")
        return "\n".join(lines)

    def as_markdown(self) -> str:
        """Markdown: a level-3 heading, the header table, tables, notes and warnings."""
        blocks = [f"### {self.title}"]
        pairs = self._header_pairs()
        if pairs:
            blocks.append(
                "| | |\n| --- | --- |\n" + "\n".join(f"| {k} | {v} |" for k, v in pairs)
            )
        for name, df in self.tables.items():
            blocks.append(f"**{name}**\n\n" + markdown_table(df, self.digits))
        blocks += list(self.notes)
        if self.warnings:
            blocks.append(
                "**Warnings**\n\n"
                + "\n".join(f"- `{w.code}` ({w.where}): {w.message}" for w in self.warnings)
            )
        return "\n\n".join(blocks) + "\n"

    def as_html(self, *, max_rows: int | None = None) -> str:
        """HTML fragment (a ``<div>``): header, tables (``max_rows`` of each: see
        :meth:`as_text`), notes and warnings."""
        e = html.escape
        parts = [f'<div class="bayes-risk-summary"><h4>{e(self.title)}</h4>']
        pairs = self._header_pairs()
        if pairs:
            parts.append(
                "<table>"
                + "".join(f"<tr><th>{e(k)}</th><td>{e(v)}</td></tr>" for k, v in pairs)
                + "</table>"
            )
        for name, df in self.tables.items():
            shown = df if max_rows is None or len(df) <= max_rows else df.head(max_rows)
            parts.append(f"<h5>{e(name)}</h5>" + html_table(shown, self.digits))
            if len(shown) < len(df):
                where = self.table_sources.get(name, _default_source(name))
                parts.append(f"<p>… {len(df) - len(shown):,} more rows: the table in full is "
                             f"<code>{e(where)}</code></p>")
        parts += [f"<p>{e(n)}</p>" for n in self.notes]
        if self.warnings:
            items = "".join(
                f"<li><code>{e(w.code)}</code> ({e(w.where)}): {e(w.message)}</li>"
                for w in self.warnings
            )
            parts.append(f"<p><strong>Warnings</strong></p><ul>{items}</ul>")
        parts.append("</div>")
        return "".join(parts)

    def _repr_html_(self) -> str:
        return self.as_html()

    def __str__(self) -> str:
        return self.as_text()

    def __repr__(self) -> str:
        return self.as_text()
