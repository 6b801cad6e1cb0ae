"""Figures of the audit report (matplotlib, Agg), and their embedding as PNG data URIs."""

from __future__ import annotations

import base64
import io
import textwrap
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from bayes_risk.results._base import legend_below

__all__ = ["ATTRIBUTE_FIGURES", "marginal_figure", "utility_risk_figure", "verdict_figure",
           "figure_png", "png_data_uri"]


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
    """The figure as PNG bytes (closes the figure)."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
    _plt().close(fig)
    return buf.getvalue()


def png_data_uri(png: bytes) -> str:
    """PNG bytes as a ``data:image/png;base64,…`` URI."""
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


def marginal_figure(marg: pd.DataFrame, variable: str) -> Any:
    """synthpop ``compare()``-style plot of one variable of the marginals table."""
    plt = _plt()
    d = marg[marg["variable"] == variable]
    title = _short(variable, 44)  # what a 4.2-inch title shows at 11 pt
    miss = d[d["kind"] == "missing"]
    if len(miss):  # a numeric column's missing values (empty or a code) are not plotted
        title += (f" (missing: {miss['original'].iloc[0]:.3g} % original, "
                  f"{miss['synthetic'].iloc[0]:.3g} % synthetic)")
        d = d[d["kind"] != "missing"]
    bars = bool(len(d)) and bool((d["kind"] == "level").all())
    labels = [_short(v) for v in d["value"]] if bars else []
    # level labels longer than a bar's room (about 0.09 in a character at 10 pt) are slanted
    slant = bars and max(map(len, labels)) * 0.09 > 3.4 / len(labels)
    fig, ax = plt.subplots(figsize=(4.2, 3.1 + (0.07 * max(map(len, labels)) if slant else 0)))
    if bars:
        x = np.arange(len(d))
        ax.bar(x - 0.2, d["original"], width=0.4, label="original", color="tab:gray")
        ax.bar(x + 0.2, d["synthetic"], width=0.4, label="synthetic", color="tab:blue")
        ax.set_xticks(x)
        if slant:
            ax.set_xticklabels(labels, rotation=40, ha="right", rotation_mode="anchor",
                               fontsize=10)
        else:
            ax.set_xticklabels(labels, fontsize=10)
        ax.set_ylabel("% of records", fontsize=10)
        top = float(np.nanmax(d[["original", "synthetic"]].to_numpy(dtype=float)))
        if np.isfinite(top) and top > 0:
            ax.set_ylim(0, top * 1.35)  # room for the legend above the tallest bar
        ax.legend(fontsize=10, loc="upper right", ncols=2, handlelength=1.2)
    else:
        dd = d[d["kind"] == "density"]
        x = dd["value"].astype(float)
        ax.step(x, dd["original"], where="mid", color="tab:gray", lw=1.5, label="original")
        ax.step(x, dd["synthetic"], where="mid", color="tab:blue", lw=1.5, label="synthetic")
        ax.set_ylabel("density", fontsize=10)
        ax.set_xlabel("central 99 % of values", fontsize=10)
        ax.set_yticks([])  # a density's scale (1e-5 per unit of income) says nothing here
        ax.set_ylim(bottom=0)
        legend_below(ax)  # off the curves
    ax.set_title(title, fontsize=10 if len(miss) else 11)
    ax.tick_params(labelsize=10)
    fig.tight_layout()
    return fig


#: the most characters of a name a figure shows (longer ones are unreadable and slow)
NAME_CHARS = 60


def _short(label: Any, n: int = 22) -> str:
    """A level label of at most ``n`` characters (longer ones cut, with an ellipsis)."""
    t = str(label)
    return t if len(t) <= n else t[: n - 1] + "…"


#: the report's page width at 80 dpi (1,100 px); 11 pt text is 12 px on it
PAGE_WIDTH_IN = 13.75


def utility_risk_figure(points: pd.DataFrame) -> Any:
    """One point per synthetic dataset: S_pMSE against each risk measure of ``points``
    (:func:`~bayes_risk.auditing.render.utility_risk_points`), with the thresholds (dashed) and the
    pooled values the verdict reads (dotted)."""
    from bayes_risk.tradeoff import plot_utility_risk

    plt = _plt()
    risks = [c for c in points.columns if c not in ("dataset", "S_pMSE")]
    thresholds = points.attrs.get("thresholds") or {}
    verdict = points.attrs.get("verdict") or {}
    x = points["S_pMSE"].to_numpy(dtype=float)
    x_thr = thresholds.get("S_pMSE")
    x_top = 1.08 * float(np.nanmax([np.nanmax(x), x_thr or 0.0]))
    with plt.rc_context({"font.size": 11, "axes.titlesize": 12, "axes.labelsize": 11,
                         "xtick.labelsize": 10, "ytick.labelsize": 10}):
        fig, axes = plt.subplots(1, len(risks), figsize=(PAGE_WIDTH_IN, 4.6), squeeze=False)
        for ax, c in zip(axes[0], risks, strict=True):
            # the points and their quartile rectangle (Hornby & Hu 2021, Figs 8-9)
            plot_utility_risk(points.assign(scenario="datasets"), utility="S_pMSE", risk=c,
                              ax=ax)
            ax.get_legend().remove()
            ax.ticklabel_format(axis="both", style="plain", useOffset=False)
            y = points[c].to_numpy(dtype=float)
            for d, xi, yi in zip(points["dataset"], x, y, strict=True):
                ax.annotate(str(int(d)), (xi, yi), fontsize=10, xytext=(4, 3),
                            textcoords="offset points")
            top = [np.nanmax(y)]
            for lines, ls, colour, text in ((thresholds, "--", "#a51d2d", " threshold {:g} %"),
                                            (verdict, ":", "black",
                                             " verdict: all datasets pooled, {:.3g} %")):
                if c in lines:
                    t = float(lines[c])
                    ax.axhline(t, color=colour, ls=ls, lw=1.2)
                    ax.text(0.01, t, text.format(t), transform=ax.get_yaxis_transform(),
                            ha="left", va="bottom", color=colour, fontsize=10)
                    top.append(t)
            if x_thr is not None:
                ax.axvline(x_thr, color="#a51d2d", ls="--", lw=1.2)
                ax.text(x_thr, 0.98, f"S_pMSE threshold {x_thr:g} ", rotation=90,
                        transform=ax.get_xaxis_transform(), ha="right", va="top",
                        color="#a51d2d", fontsize=10)
            # from 0: the spread between datasets seen against the threshold, not magnified
            ax.set_xlim(0, x_top)
            ax.set_ylim(0, 1.15 * float(np.nanmax(top)))
            name, _, rest = c.partition(", ")
            ax.set_title(name.split(" (")[0])
            ax.set_ylabel(textwrap.fill(_short(f"{name}" + (f", {rest}" if rest else ""),
                                               2 * NAME_CHARS), 34))
            ax.set_xlabel("S_pMSE (lower = more useful)")
        fig.suptitle("Utility and risk: one point per synthetic dataset (its number), the box "
                     "from the first to the third quartile", fontsize=12)
        fig.tight_layout()
    return fig


def verdict_figure(verdicts: Sequence[Any], ax: Any) -> Any:
    """Each verdict line's value over its threshold (1 = at the threshold; threshold over value
    for an "at least" measure), hatched when a warning questions it; returns ``ax``'s figure."""
    vs = list(verdicts)
    if not vs:
        ax.text(0.5, 0.5, "no verdict line (no step with one ran)", ha="center",
                va="center", transform=ax.transAxes)
        ax.set_axis_off()
        return ax.figure
    with np.errstate(divide="ignore", invalid="ignore"):
        # numpy's division: a threshold (or value) of 0 gives inf, not ZeroDivisionError
        val = np.array([v.value for v in vs], dtype=np.float64)
        thr = np.array([v.threshold for v in vs], dtype=np.float64)
        ratio = np.where([v.direction == "max" for v in vs], val / thr, thr / val)
    shown = np.where(np.isfinite(ratio) & (ratio > 0), ratio, np.nan)
    lo = min(0.5, float(np.nanmin(shown)) / 2) if np.isfinite(shown).any() else 0.5
    pos = np.arange(len(vs))[::-1]
    for y, v, r in zip(pos, vs, shown, strict=True):
        if np.isnan(r):
            # a threshold of 0 gives no finite ratio: the line is on the wrong side all the same
            why = ("not computed" if not np.isfinite(v.value) else
                   f"exceeds a threshold of {v.threshold:g}" if v.exceeds else "0")
            ax.text(lo * 1.1, y, why, va="center", fontsize=8,
                    color="#c0392b" if v.exceeds else "black")
            continue
        ax.barh(y, r - lo, left=lo, color="#c0392b" if v.exceeds else "#2e86c1",
                hatch="//" if v.warnings else None, edgecolor="#333333", linewidth=0.5)
    ax.set_xscale("log")
    ax.axvline(1.0, color="black", lw=1)
    labels = [textwrap.fill(_short(f"{v.step}: {v.measure}", 2 * NAME_CHARS), 38) for v in vs]
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
