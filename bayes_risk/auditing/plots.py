"""Figures of the audit report (matplotlib, Agg), and their embedding as PNG data URIs."""

from __future__ import annotations

import base64
import io
import textwrap
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["ATTRIBUTE_FIGURES", "marginal_figure", "utility_risk_figure", "verdict_figure",
           "data_uri", "figure_png", "png_data_uri"]


# (plot kind of AttributeRiskResult, file name written by `bayes-risk attribute`, caption)
ATTRIBUTE_FIGURES = (
    ("p_true", "p_true_hist.png", "Probability of the truth, with the random-guess baseline"),
    ("rank", "rank_hist.png", "Rank of the truth, with the random-guess mean rank"),
    ("khat", "khat.png", "Pareto k-hat per record"),
)


def _plt() -> Any:
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    return plt


def figure_png(fig: Any, dpi: int = 80) -> bytes:
    """The figure as PNG bytes, the bytes ``fig.savefig("x.png", dpi=dpi)`` writes (closes the
    figure)."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
    _plt().close(fig)
    return buf.getvalue()


def png_data_uri(png: bytes) -> str:
    """PNG bytes as a ``data:image/png;base64,…`` URI."""
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


def data_uri(fig: Any, dpi: int = 80) -> str:
    """The figure as a ``data:image/png;base64,…`` URI (closes the figure)."""
    return png_data_uri(figure_png(fig, dpi))


def marginal_figure(marg: pd.DataFrame, variable: str) -> Any:
    """synthpop ``compare()``-style plot of one variable from its rows of the marginals table
    (``utility/marginals.csv``): bars of the level percentages, or the two densities."""
    plt = _plt()
    d = marg[marg["variable"] == variable]
    title = variable
    miss = d[d["kind"] == "missing"]
    if len(miss):  # a numeric column's missing values (empty or a code) are not plotted
        title += (f" (missing: {miss['original'].iloc[0]:.3g} % original, "
                  f"{miss['synthetic'].iloc[0]:.3g} % synthetic)")
        d = d[d["kind"] != "missing"]
    bars = bool(len(d)) and bool((d["kind"] == "level").all())
    labels = [_short(v) for v in d["value"]] if bars else []
    # level labels side by side take about 0.065 in per character at 7 pt; longer ones than the
    # room a bar has (SD2011's "URBAN 100,000-200,000") are slanted, and the figure grows for them
    slant = bars and max(map(len, labels)) * 0.065 > 3.4 / len(labels)
    fig, ax = plt.subplots(figsize=(4.2, 2.6 + (0.05 * max(map(len, labels)) if slant else 0)))
    if bars:
        x = np.arange(len(d))
        ax.bar(x - 0.2, d["original"], width=0.4, label="original", color="tab:gray")
        ax.bar(x + 0.2, d["synthetic"], width=0.4, label="synthetic", color="tab:blue")
        ax.set_xticks(x)
        if slant:
            ax.set_xticklabels(labels, rotation=40, ha="right", rotation_mode="anchor",
                               fontsize=7)
        else:
            ax.set_xticklabels(labels, fontsize=7)
        ax.set_ylabel("% of records", fontsize=8)
        top = float(np.nanmax(d[["original", "synthetic"]].to_numpy(dtype=float)))
        if np.isfinite(top) and top > 0:
            ax.set_ylim(0, top * 1.3)  # room for the legend above the tallest bar
    else:
        dd = d[d["kind"] == "density"]
        x = dd["value"].astype(float)
        ax.step(x, dd["original"], where="mid", color="tab:gray", lw=1.5, label="original")
        ax.step(x, dd["synthetic"], where="mid", color="tab:blue", lw=1.5, label="synthetic")
        ax.set_ylabel("density", fontsize=8)
        ax.set_xlabel("central 99 % of values", fontsize=7)
    ax.set_title(title, fontsize=9 if title == variable else 8)
    ax.tick_params(labelsize=7)
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def _short(label: Any, n: int = 22) -> str:
    """A level label of at most ``n`` characters (longer ones cut, with an ellipsis)."""
    t = str(label)
    return t if len(t) <= n else t[: n - 1] + "…"


def utility_risk_figure(points: pd.DataFrame) -> Any:
    """One point per synthetic dataset: utility (S_pMSE) against each risk measure given.

    ``points`` has a column ``S_pMSE`` and one column per risk measure (Hornby & Hu 2021,
    Figs 8 and 9).
    """
    from bayes_risk.tradeoff import plot_utility_risk

    plt = _plt()
    risks = [c for c in points.columns if c not in ("dataset", "S_pMSE")]
    fig, axes = plt.subplots(1, len(risks), figsize=(3.6 * len(risks), 3.2), squeeze=False)
    for ax, c in zip(axes[0], risks, strict=True):
        # the same figure as the package's plot_utility_risk: the points and their quartile
        # rectangle (Hornby & Hu 2021, Figs 8-9), one release
        plot_utility_risk(points.assign(scenario="datasets"), utility="S_pMSE", risk=c, ax=ax)
        ax.set_title("")
        ax.get_legend().remove()
        for _, row in points.iterrows():
            ax.annotate(str(int(row["dataset"])), (row["S_pMSE"], row[c]), fontsize=7,
                        xytext=(3, 3), textcoords="offset points")
        ax.set_xlabel("S_pMSE (lower = more useful)", fontsize=8)
        ax.set_ylabel(c, fontsize=8)
        ax.tick_params(labelsize=7)
    fig.suptitle("utility and risk, one point per synthetic dataset, the rectangle from the "
                 "first to the third quartile", fontsize=9)
    fig.tight_layout()
    return fig


def verdict_figure(verdicts: Sequence[Any], ax: Any) -> Any:
    """Each verdict line's value over its threshold (1 = at the threshold): bars past the
    line are on the wrong side (for an "at least" measure, the ratio is threshold over
    value); hatched bars carry a warning that questions the value.

    ``verdicts`` are the :class:`~bayes_risk.auditing.Verdict` lines of an audit; draws on
    ``ax`` and returns its figure (``AuditResult.plot(kind="verdict")``).
    """
    vs = list(verdicts)
    if not vs:
        ax.text(0.5, 0.5, "no verdict line (no step with one ran)", ha="center",
                va="center", transform=ax.transAxes)
        ax.set_axis_off()
        return ax.figure
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.array([v.value / v.threshold if v.direction == "max"
                          else v.threshold / v.value for v in vs], dtype=np.float64)
    shown = np.where(np.isfinite(ratio) & (ratio > 0), ratio, np.nan)
    lo = min(0.5, float(np.nanmin(shown)) / 2) if np.isfinite(shown).any() else 0.5
    pos = np.arange(len(vs))[::-1]
    for y, v, r in zip(pos, vs, shown, strict=True):
        if np.isnan(r):
            ax.text(lo * 1.1, y, "not computed or 0", va="center", fontsize=8)
            continue
        ax.barh(y, r - lo, left=lo, color="#c0392b" if v.exceeds else "#2e86c1",
                hatch="//" if v.warnings else None, edgecolor="#333333", linewidth=0.5)
    ax.set_xscale("log")
    ax.axvline(1.0, color="black", lw=1)
    labels = [textwrap.fill(f"{v.step}: {v.measure}", 38) for v in vs]
    ax.set_yticks(pos, labels, fontsize=7)
    ax.set_xlabel("value / threshold, log scale (right of 1: wrong side; hatched: "
                  "questioned by a warning)", fontsize=8)
    ax.set_title("Audit verdict lines")
    ax.figure.tight_layout()
    # the wrapped labels need about 2.9 inches whatever the renderer measured
    left = 2.9 / ax.figure.get_size_inches()[0]
    if ax.get_position().x0 < left:
        ax.figure.subplots_adjust(left=left)
    return ax.figure
