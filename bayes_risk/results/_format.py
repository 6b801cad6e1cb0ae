"""Formatting of numbers and tables for text, Markdown and HTML (summaries and the audit report)."""

from __future__ import annotations

import html
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["format_number", "markdown_table", "text_table", "html_table"]


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


def text_table(df: pd.DataFrame, digits: int = 4, index: bool = False) -> str:
    """Render a DataFrame as aligned plain text (numbers formatted by :func:`format_number`)."""
    if df.shape[1] == 0:
        return "(no columns)"
    if len(df) == 0:
        return "  ".join(str(c) for c in df.columns) + "\n(no rows)"
    return _formatted(df, digits, index).to_string(index=False)


def html_table(df: pd.DataFrame, digits: int = 4, index: bool = False) -> str:
    """Render a DataFrame as an HTML ``<table>`` (values formatted, text escaped)."""
    f = _formatted(df, digits, index)
    head = "".join(f"<th>{html.escape(c)}</th>" for c in f.columns)
    rows = "".join(
        "<tr>" + "".join(f"<td>{html.escape(v)}</td>" for v in row) + "</tr>"
        for row in f.itertuples(index=False)
    )
    return f'<table class="dataframe"><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>'
