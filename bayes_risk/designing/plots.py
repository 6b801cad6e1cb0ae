"""The frontier figure of a design (matplotlib, Agg)."""

from __future__ import annotations

import os
import textwrap
from typing import Any

import numpy as np

__all__ = ["frontier_figure"]

#: panels per row of the frontier figure
PANELS_PER_ROW = 3


def _pareto(x: np.ndarray, y: np.ndarray, better_high: bool) -> np.ndarray:
    """Indices of the points no other point beats on both lower risk ``x`` and better ``y``."""
    order = np.lexsort((-y if better_high else y, x))
    keep, best = [], -np.inf
    for i in order:
        v = y[i] if better_high else -y[i]
        if v > best:
            keep.append(i)
            best = v
    return np.asarray(keep, dtype=int)


def frontier_figure(result: Any, path: str | os.PathLike[str] | None = None) -> Any:
    """One panel per risk line measured (each DiSCO target its own): x the candidate's figure
    of that line with its interval (bars), y the objective; the threshold a dashed line, the
    utility threshold another; filled: passes every line; ×: past this panel's threshold;
    open: excluded by another line; ★: the chosen release (its search figure)."""
    from bayes_risk._search_spec import OBJECTIVES
    from bayes_risk.auditing.plots import _plt
    from bayes_risk.measures import measures

    plt = _plt()
    fr = result.frontier_frame()
    obj = result.objective
    # the lines of the measures whose record says they measure no risk (utility) are no panel
    no_risk = [m.name for m in measures() if not m.risk]
    risk = fr[~fr["step"].isin(no_risk) & (fr["threshold_name"] != "")]
    # a panel per line the audit judges, by its short name (DiSCO of each target its own), the
    # lines of one threshold side by side
    order = {t: k for k, t in enumerate(dict.fromkeys(risk["threshold_name"]))}
    names = sorted(dict.fromkeys(zip(risk["threshold_name"], risk["step"], risk["line"],
                                     strict=True)), key=lambda p: order[p[0]])
    n = max(1, len(names))
    cols = min(PANELS_PER_ROW, n)
    rows = int(np.ceil(n / cols))
    fig, axes = plt.subplots(rows, cols, figsize=(4.6 * cols, 3.9 * rows + 0.9), squeeze=False)
    high = OBJECTIVES[obj] == "max"
    thr_obj = result.thresholds.get(obj)
    for ax, (name, step, line) in zip(axes.ravel(), names, strict=False):
        sub = risk[(risk["threshold_name"] == name) & (risk["step"] == step)
                   & (risk["line"] == line)]
        # each line at the figure the design judges it by (flagged records counted at worst);
        # a candidate's worst where two of its lines share a short name (repU of other keys)
        sub = sub.assign(value=sub["at_worst"])
        worst = sub.sort_values("value", ascending=sub["direction"].iloc[0] != "max") \
            .groupby("candidate", sort=False).head(1).set_index("candidate")
        x = worst["value"].to_numpy(float)
        y = worst[obj].to_numpy(float)
        lo = np.where(np.isfinite(worst["low"]), worst["low"], x)
        hi = np.where(np.isfinite(worst["high"]), worst["high"], x)
        ok = worst["passes"].to_numpy(bool)
        past = worst["exceeds"].to_numpy(bool)
        ax.errorbar(x, y, xerr=[np.clip(x - lo, 0, None), np.clip(hi - x, 0, None)],
                    fmt="none", ecolor="0.6", elinewidth=0.8, zorder=1)
        ax.scatter(x[ok], y[ok], s=36, color="tab:green", label="passes every line", zorder=3)
        ax.scatter(x[past], y[past], s=36, marker="x", color="tab:red",
                   label="past this threshold", zorder=3)
        other = ~ok & ~past
        ax.scatter(x[other], y[other], s=36, facecolors="none", edgecolors="0.4",
                   label="excluded by another line", zorder=2)
        fin = np.isfinite(x) & np.isfinite(y)
        if fin.sum() > 1:
            idx = np.flatnonzero(fin)[_pareto(x[fin], y[fin], high)]
            ax.step(x[idx], y[idx], where="post", color="tab:blue", lw=1, alpha=0.6,
                    label="frontier (not dominated)")
        if result.chosen is not None:
            k = result._number(result.chosen)
            if k in worst.index:
                ax.scatter([worst.loc[k, "value"]], [worst.loc[k, obj]], marker="*", s=220,
                           color="gold", edgecolors="black", zorder=4, label="chosen")
        t = sub["threshold"].iloc[0]
        ax.axvline(t, color="tab:red", ls="--", lw=1, label="threshold")
        if thr_obj is not None:
            ax.axhline(thr_obj, color="tab:purple", ls=":", lw=1, label=f"{obj} threshold")
        unit = sub["unit"].iloc[0]
        ax.set_xlabel(line + (f" ({unit})" if unit else "")
                      + f", threshold {t:g}")
        ax.set_ylabel(f"{obj} ({'higher' if high else 'lower'} is better)")
        ax.set_title(f"{name}: {len(worst)} of {len(result.candidates)} candidates measured",
                     fontsize=9)
        ax.grid(alpha=0.3)
    for ax in axes.ravel()[len(names):]:
        ax.axis("off")
    handles, labels = [], []
    for ax in axes.ravel():
        for h, lab in zip(*ax.get_legend_handles_labels(), strict=True):
            if lab not in labels:
                handles.append(h)
                labels.append(lab)
    fig.legend(handles, labels, loc="lower center", ncol=min(4, len(labels)), fontsize=8,
               frameon=False)
    flagged = bool((risk["flagged"] > 0).any())
    parts = ["Utility against each risk line: every candidate of the design, with its "
             "interval (Wilson 95 % for a share of records, else the range over the datasets)"]
    if flagged:
        parts.append("a line with flagged records is placed with them counted at worst (at "
                     "risk unless their bounds rule it out), its bar reaching down to the "
                     "records assessed alone")
    # wrapped to the figure's width (about 16 characters of 9-point text an inch), the panels
    # below the lines it takes
    title = "\n".join(textwrap.fill(p, int(16 * fig.get_figwidth())) for p in parts)
    fig.suptitle(title, fontsize=9)
    top = 1 - (0.16 * (title.count("\n") + 1) + 0.05) / fig.get_figheight()
    fig.tight_layout(rect=(0, 0.07, 1, min(0.96, top)))
    if path is not None:
        fig.savefig(path, dpi=110)
        plt.close(fig)
    return fig
