"""Formatting of numbers and tables for text, Markdown and HTML (summaries and the audit report)."""

from __future__ import annotations

import html
import textwrap
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["format_number", "format_value", "markdown_table", "text_table", "html_table"]


def format_number(x: Any, digits: int = 4, *, plain: bool = False) -> str:
    """Format a scalar for a table: integers as is, floats with ``digits`` significant digits;
    ``plain=True`` never uses exponents (``0.00004796``, ``15,598``)."""
    if x is None:
        return "—"
    if isinstance(x, (bool, np.bool_)):
        return "yes" if x else "no"
    if isinstance(x, (int, np.integer)):
        return f"{int(x):,}"
    if isinstance(x, (float, np.floating)):
        f = float(x)
        if np.isnan(f):
            return "nan"
        if np.isinf(f):
            return "inf" if f > 0 else "-inf"
        if plain:
            if f != 0 and abs(f) < 1e-3:
                dec = digits - 1 - int(np.floor(np.log10(abs(f))))
                return f"{f:.{dec}f}".rstrip("0").rstrip(".")
            rounded = float(f"{f:.{digits}g}")
            return f"{f:,.0f}" if abs(rounded) >= 1000 else f"{rounded:.{digits}g}"
        if f != 0 and (abs(f) < 1e-3 or abs(f) >= 1e6):
            return f"{f:.{digits - 1}e}"
        return f"{f:.{digits}g}"
    return str(x)


def format_value(x: Any, unit: str = "", digits: int = 3, *, missing: str | None = None) -> str:
    """A figure for people: ``x`` by ``format_number`` (``plain=True``), then its ``unit``
    after a space (``"0.85 %"``); with ``missing``, a missing or NaN ``x`` is that text alone
    (the report's "—")."""
    if missing is not None and (x is None or (np.ndim(x) == 0 and pd.isna(x))):
        return missing
    return format_number(x, digits, plain=True) + (f" {unit}" if unit else "")


def _formatted(df: pd.DataFrame, digits: int, index: bool) -> pd.DataFrame:
    if index:
        df = df.reset_index()
    out = pd.DataFrame(
        {str(c): [format_number(v, digits) for v in df[c].tolist()] for c in df.columns}
    )
    out.columns = [str(c) for c in df.columns]
    return out


def markdown_table(df: pd.DataFrame, digits: int = 4, index: bool = False) -> str:
    """Render a DataFrame as a GitHub-flavoured Markdown table."""
    if index:
        df = df.reset_index()
    cols = [str(c) for c in df.columns]
    lines = ["| " + " | ".join(cols) + " |", "|" + "|".join(" --- " for _ in cols) + "|"]
    for row in df.itertuples(index=False):
        lines.append("| " + " | ".join(format_number(v, digits) for v in row) + " |")
    return "\n".join(lines)


def text_table(df: pd.DataFrame, digits: int = 4, index: bool = False,
               width: int | None = None) -> str:
    """Render a DataFrame as aligned plain text (numbers formatted by :func:`format_number`);
    with ``width``, no line is longer: headers and text cells wrap within their column, and a
    table that cannot fit even so is cut into blocks of columns, its first column repeated."""
    if df.shape[1] == 0:
        return "(no columns)"
    if len(df) == 0:
        return textwrap.fill("  ".join(str(c) for c in df.columns), width or 10**9) + \
            "\n(no rows)"
    f = _formatted(df, digits, index)
    src = df.reset_index() if index else df
    # numbers right-aligned, text left-aligned (a column of names reads from its left edge)
    numeric = [pd.api.types.is_numeric_dtype(src[c]) or pd.api.types.is_bool_dtype(src[c])
               for c in src.columns]
    header, rows = list(f.columns), [list(r) for r in f.itertuples(index=False)]
    widths = [max([len(header[j])] + [len(r[j]) for r in rows]) for j in range(len(header))]
    if width is None or sum(widths) + len(widths) - 1 <= width:
        lines = [" ".join(c.rjust(w) if num else c.ljust(w)
                          for c, w, num in zip(cells, widths, numeric, strict=True)).rstrip()
                 for cells in [header, *rows]]
        return "\n".join(lines)
    return _wrapped_table(header, rows, numeric, width)


#: the narrowest a text column of a wrapped table becomes (longer words are cut)
_MIN_TEXT = 12
_GAP = "  "


def _wrapped_table(header: list[str], rows: list[list[str]], numeric: list[bool],
                   width: int) -> str:
    """A table of formatted cells within ``width`` characters (see :func:`text_table`)."""
    def longest_word(text: str) -> int:
        return max((len(w) for w in text.split()), default=0)

    n = len(header)
    natural = [max([len(header[j])] + [len(r[j]) for r in rows]) for j in range(n)]
    # a number is never wrapped; a header wraps at its words; a text cell to _MIN_TEXT
    least = [max([min(longest_word(header[j]), _MIN_TEXT if not numeric[j] else 10**9)]
                 + [len(r[j]) if numeric[j] else min(len(r[j]), _MIN_TEXT) for r in rows])
             for j in range(n)]
    least = [min(a, b) for a, b in zip(least, natural, strict=True)]
    widths = list(natural)
    room = width - len(_GAP) * (n - 1)
    while sum(widths) > room:
        slack = [w - lo for w, lo in zip(widths, least, strict=True)]
        j = max(range(n), key=lambda k: (slack[k] > 0, widths[k] if slack[k] else -1))
        if slack[j] <= 0:
            break
        widths[j] -= 1
    if sum(widths) > room and n > 1:  # blocks of columns, the first column in each
        blocks, cur = [], [0]
        for j in range(1, n):
            if sum(widths[k] for k in cur) + widths[j] + len(_GAP) * len(cur) > width:
                blocks.append(cur)
                cur = [0]
            cur.append(j)
        blocks.append(cur)
        return "\n\n".join(_wrapped_table([header[k] for k in b], [[r[k] for k in b] for r in rows],
                                           [numeric[k] for k in b], width) for b in blocks)
    out = _cells_lines(header, widths, numeric)
    out.append(_GAP.join("-" * w for w in widths))
    multi = False
    body = []
    for r in rows:
        lines = _cells_lines(r, widths, numeric)
        multi = multi or len(lines) > 1
        body.append(lines)
    for k, lines in enumerate(body):
        if multi and k:
            out.append("")
        out += lines
    return "\n".join(ln.rstrip() for ln in out)


def _cells_lines(cells: list[str], widths: list[int], numeric: list[bool]) -> list[str]:
    """One row's cells, each wrapped to its width, as lines (numbers right-aligned)."""
    parts = [textwrap.wrap(c, w, break_long_words=True, break_on_hyphens=False) or [""]
             for c, w in zip(cells, widths, strict=True)]
    depth = max(map(len, parts))
    return [_GAP.join((p[i] if i < len(p) else "").rjust(w) if num
                      else (p[i] if i < len(p) else "").ljust(w)
                      for p, w, num in zip(parts, widths, numeric, strict=True))
            for i in range(depth)]


def html_table(df: pd.DataFrame, digits: int = 4, index: bool = False) -> str:
    """Render a DataFrame as an HTML ``<table>`` (values formatted, text escaped)."""
    f = _formatted(df, digits, index)
    head = "".join(f"<th>{html.escape(c)}</th>" for c in f.columns)
    rows = "".join(
        "<tr>" + "".join(f"<td>{html.escape(v)}</td>" for v in row) + "</tr>"
        for row in f.itertuples(index=False)
    )
    return f'<table class="dataframe"><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>'
