"""Figures of the audit report (matplotlib, Agg), and their embedding as PNG data URIs."""

from __future__ import annotations

import base64
import io
import textwrap
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["utility_risk_figure", "verdict_figure",
           "figure_png", "png_data_uri", "shown_width", "REPORT_DPI", "RISK_PANELS_PER_ROW"]


def _plt() -> Any:
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    return plt


#: the resolution of the report's figures: a figure's inches at 80 CSS pixels each
REPORT_DPI = 80


def figure_png(fig: Any, dpi: int = REPORT_DPI) -> bytes:
    """The figure as PNG bytes (closes the figure)."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
    _plt().close(fig)
    return buf.getvalue()


def png_data_uri(png: bytes) -> str:
    """PNG bytes as a ``data:image/png;base64,…`` URI."""
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


def shown_width(png: bytes) -> int:
    """The width in pixels of a PNG at :data:`REPORT_DPI`, from the resolution it was saved at
    (matplotlib records it): a figure the same size in the report whatever its file's dpi."""
    from PIL import Image

    with Image.open(io.BytesIO(png)) as im:
        dpi = float(im.info.get("dpi", (REPORT_DPI,))[0])
        return round(im.width * REPORT_DPI / dpi)


#: the most characters of a name a figure shows (longer ones are unreadable and slow)
NAME_CHARS = 60


def _short(label: Any, n: int = 22) -> str:
    """A level label of at most ``n`` characters (longer ones cut, with an ellipsis)."""
    t = str(label)
    return t if len(t) <= n else t[: n - 1] + "…"


#: the report's page width at 80 dpi (1,100 px); 11 pt text is 12 px on it
PAGE_WIDTH_IN = 13.75


#: panels of the utility-and-risk figure in a row
RISK_PANELS_PER_ROW = 3


def utility_risk_figure(points: pd.DataFrame) -> Any:
    """One point per synthetic dataset: S_pMSE against each risk measure of ``points``
    (:func:`~bayes_risk.auditing.measures.utility.utility_risk_points`), one panel each, in rows of
    :data:`RISK_PANELS_PER_ROW`, with the thresholds (dashed) and the pooled values the verdict
    reads (dotted); a measure past its threshold (``points.attrs["exceeds"]``) has its panel
    framed in red. Datasets whose points fall together share one label."""
    from bayes_risk.tradeoff import plot_utility_risk

    plt = _plt()
    risks = [c for c in points.columns if c not in ("dataset", "S_pMSE")]
    thresholds = points.attrs.get("thresholds") or {}
    verdict = points.attrs.get("verdict") or {}
    exceeds = set(points.attrs.get("exceeds") or ())
    x = points["S_pMSE"].to_numpy(dtype=float)
    x_thr = thresholds.get("S_pMSE")
    x_top = 1.08 * float(np.nanmax([np.nanmax(x), x_thr or 0.0]))
    cols = min(len(risks), RISK_PANELS_PER_ROW)
    rows = -(-len(risks) // cols)
    with plt.rc_context({"font.size": 11, "axes.titlesize": 12, "axes.labelsize": 11,
                         "xtick.labelsize": 10, "ytick.labelsize": 10}):
        fig, axes = plt.subplots(rows, cols, figsize=(PAGE_WIDTH_IN, 0.4 + 4.4 * rows),
                                 squeeze=False)
        for ax in axes.flat[len(risks):]:  # the last row's empty places
            fig.delaxes(ax)
        for ax, c in zip(axes.flat, risks, strict=False):
            # the points and their quartile rectangle (Hornby & Hu 2021, Figs 8-9)
            plot_utility_risk(points.assign(scenario="datasets"), utility="S_pMSE", risk=c,
                              ax=ax)
            ax.get_legend().remove()
            ax.ticklabel_format(axis="both", style="plain", useOffset=False)
            y = points[c].to_numpy(dtype=float)
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
            short = name.split(" (")[0] + (f" of {rest.removeprefix('target ')}"
                                           if rest.startswith("target ") else "")
            if c in exceeds:
                ax.set_title(f"✖ {_short(short, 30)}: past its threshold", color="#a51d2d")
                for side in ax.spines.values():
                    side.set_edgecolor("#a51d2d")
                    side.set_linewidth(2)
            else:
                ax.set_title(_short(short, 44))
            ax.set_ylabel(textwrap.fill(_short(f"{name}" + (f", {rest}" if rest else ""),
                                               2 * NAME_CHARS), 34))
            ax.set_xlabel("S_pMSE (lower = more useful)")
        fig.suptitle("Utility and risk: one point per synthetic dataset (its number), the box "
                     "from the first to the third quartile", fontsize=12)
        fig.tight_layout()
        # labelled once the axes have their final size: the labels' room is measured on it
        for ax, c in zip(axes.flat, risks, strict=False):
            _label_datasets(ax, points["dataset"].to_numpy(), x,
                            points[c].to_numpy(dtype=float))
    return fig


def _label_datasets(ax: Any, names: np.ndarray, x: np.ndarray, y: np.ndarray) -> None:
    """Each dataset's number beside its point; points that fall within a label's height of
    each other share one label ("2, 4, 5"), and a label that would cover one placed before it
    moves up (issue 66: "3 1 5 2 4" printed over each other where the points clustered)."""
    ok = np.isfinite(x) & np.isfinite(y)
    if not ok.any():
        return
    fig = ax.figure
    px = ax.transData.transform(np.column_stack([x[ok], y[ok]]))
    ids = [str(int(d)) for d in np.asarray(names)[ok]]
    step = 10 * fig.dpi / 72 * 1.3  # a 10-point line, in pixels
    groups: list[list[int]] = []
    for k in np.lexsort((px[:, 0], -px[:, 1])):  # top to bottom
        for g in groups:
            if np.min(np.hypot(*(px[g] - px[k]).T)) < step:
                g.append(int(k))
                break
        else:
            groups.append([int(k)])
    # label boxes, in pixels: the axes' texts first (the threshold's label)
    placed: list[tuple[float, float, float, float]] = [
        (b.x0, b.y0, b.width, b.height) for b in (t.get_window_extent() for t in ax.texts)]
    for g in groups:
        text = ", ".join(sorted((ids[k] for k in g), key=int))
        x0 = float(px[g, 0].max()) + 4
        y0 = float(px[g, 1].max()) + 3
        w = 0.62 * step * len(text)
        while any(x0 < bx + bw and bx < x0 + w and y0 < by + bh and by < y0 + step
                  for bx, by, bw, bh in placed):
            y0 += step
        placed.append((x0, y0, w, step))
        xd, yd = ax.transData.inverted().transform((x0, y0))
        ax.annotate(text, (xd, yd), fontsize=10, annotation_clip=False,
                    gid="dataset-label")


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
