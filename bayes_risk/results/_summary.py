"""The printable summary every result returns from ``summary()`` (as statsmodels' ``Summary``)."""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from bayes_risk.results._format import format_number, html_table, markdown_table, text_table

__all__ = ["Summary", "ResultWarning"]


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

    def _header_pairs(self) -> list[tuple[str, str]]:
        return [(str(k), format_number(v, self.digits)) for k, v in self.header]

    def as_text(self) -> str:
        """Plain text: title, header, each table, notes and warnings."""
        lines = [self.title, "=" * len(self.title)]
        pairs = self._header_pairs()
        if pairs:
            width = max(len(k) for k, _ in pairs) + 1
            lines += [f"{k + ':':<{width}} {v}" for k, v in pairs]
        for name, df in self.tables.items():
            lines += ["", name, text_table(df, self.digits)]
        if self.notes:
            lines += [""] + list(self.notes)
        if self.warnings:
            lines += ["", "Warnings:"] + [f"  {w}" for w in self.warnings]
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

    def as_html(self) -> str:
        """HTML fragment (a ``<div>``): header, tables, notes and warnings."""
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
            parts.append(f"<h5>{e(name)}</h5>" + html_table(df, self.digits))
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
