"""The figures of an attribute result
(:meth:`AttributeRiskResult.plot <bayes_risk.results.AttributeRiskResult.plot>`): the
histograms of ``p_true`` and of the truth's rank, and the Pareto k-hat of the records. Each
takes the result (an AttributeRiskResult, typed loosely: the module it is defined in imports
this one) and the Axes."""

from __future__ import annotations

from typing import Any

import numpy as np

from bayes_risk.results._base import draws, legend_below

__all__ = ["khat", "p_true", "rank", "KHAT_SCATTER_MAX"]


#: records up to which the k-hat figure is a scatter (beyond: a histogram)
KHAT_SCATTER_MAX = 10_000


@draws("p_true")
def p_true(result: Any, ax: Any) -> Any:
    """Stacked histogram of ``p_true``, stable and flagged, with two means of the stable
    estimates: before the release (the intruder's prior; 1/G under the uniform prior) and
    after a release that says nothing about the records
    (:meth:`~bayes_risk.results.AttributeRiskResult.null`)."""
    df = result.records
    codes = df["flag_codes"]
    flagged = np.asarray((codes.astype(str) != "").to_numpy() & codes.notna(), dtype=bool)
    p = df["p_true"].to_numpy(dtype=float)
    ok = ~np.isnan(p)
    # the whole [0, 1] unless every p_true is small (then [0, max]: the baseline stays visible)
    hi = 1.0 if not ok.any() or np.nanmax(p) > 0.5 else float(np.nanmax(p)) * 1.05
    ax.hist([p[~flagged & ok], p[flagged & ok]], bins=30, range=(0, hi), stacked=True,
            label=["stable estimate", "flagged (unstable)"], color=["tab:blue", "tab:orange"])
    # the records the summary's means are over (`unflagged`), and its prior mass
    keep = ~flagged & ok
    guess = df["baseline"].to_numpy(dtype=float)[keep]
    prior = result.prior_p_true()[keep] if result._fixed_candidates else guess
    if prior.size and np.isfinite(prior).all():
        uniform = " = 1/G" if np.allclose(prior, guess, rtol=1e-9, atol=0) else ""
        # candidates read off the release (Wang & Reiter's stand-in) have no "before"
        what = (f"before the release (the intruder's prior{uniform})"
                if result._fixed_candidates else "uniform over the released candidates, 1/G")
        ax.axvline(float(np.mean(prior)), color="0.5", ls=":",
                   label=f"{what}: {100 * float(np.mean(prior)):.3g} %")
    null = (result.null() or {}).get("mean_p_true")
    if null:
        ax.axvline(null["expected"], color="k", ls="--",
                   label=f"after a release that says nothing of the records: "
                         f"{100 * null['expected']:.3g} %")
    from matplotlib.ticker import PercentFormatter

    # in per cent, as the report and the command line give p_true
    ax.xaxis.set_major_formatter(PercentFormatter(1.0))
    ax.set_xlabel("probability of the true values, p_true (renormalised over the "
                  "candidates)")
    ax.set_ylabel("records")
    legend_below(ax)
    return ax


@draws("rank")
def rank(result: Any, ax: Any, prop_top_threshold: float | None = None) -> Any:
    """Histogram of the truth's rank among the candidates, with the mean rank of a release
    that says nothing about the records (:meth:`~bayes_risk.results.AttributeRiskResult.null`);
    with ``prop_top_threshold`` (per cent of the records, the audit's ``prop_top``), the
    records ranked first that it allows, beside those the estimate ranks first."""
    df = result.records
    r = df["rank_min"].to_numpy(dtype=float)
    r = r[~np.isnan(r)]
    if r.size:
        ax.hist(r, bins=np.arange(0.5, r.max() + 1.5, 1.0), color="tab:blue")
    null = (result.null() or {}).get("mean_rank")
    if null:
        ax.axvline(null["expected"], color="k", ls="--",
                   label=f"mean rank if the release said nothing of the records: "
                         f"{null['expected']:.3g}")
    if prop_top_threshold is not None and r.size:
        allowed = float(prop_top_threshold) / 100 * r.size
        ax.hlines(allowed, 0.5, 1.5, color="#a51d2d", ls="--", lw=1.5,
                  label=f"threshold of the share ranked first: {prop_top_threshold:g} % "
                        f"({allowed:,.0f} records)")
        ax.set_ylim(top=max(ax.get_ylim()[1], 1.1 * allowed))
    legend_below(ax, ncols=1 if prop_top_threshold is not None else 3)
    ax.set_xlabel("rank of the true values (1 = the intruder's best guess)")
    ax.set_ylabel("records")
    return ax


@draws("khat")
def khat(result: Any, ax: Any) -> Any:
    """Largest Pareto k-hat over each record's candidates, with the threshold, and the
    records the k-hat rule flags (``KHAT_HIGH``) apart from those above the threshold it
    does not flag: under ``khat_rule="material"`` a high k-hat is flagged only where it
    could move the truth's probability by more than the tolerance (issue 66: about 100
    points above the line, one flagged, and the figure did not say which). Beyond
    :data:`KHAT_SCATTER_MAX` records a scatter is a smear: a histogram of k-hat (counts
    on a log scale, so that one flagged record shows)."""
    df = result.records
    thr = float(result.settings.get("khat_threshold", np.nan))
    k = df["khat_max"].to_numpy(dtype=float) if "khat_max" in df else np.full(len(df), np.nan)
    if np.isnan(k).all():  # the plug-in estimators: no importance weights, no k-hat
        ax.text(0.5, 0.5, f"no Pareto k-hat: estimator "
                f"'{result.settings.get('estimator', '?')}'\nuses no importance weights",
                ha="center", va="center", transform=ax.transAxes)
        ax.set_xticks([])
        ax.set_yticks([])
        ax.set_xlabel("record (0-based, as in records.csv)")
        ax.set_ylabel("max Pareto k-hat over candidates")
        return ax
    k = np.where(np.isinf(k), np.nan, k)
    groups = _khat_groups(result)
    material = result.settings.get("khat_rule") == "material"
    tol = result.settings.get("khat_tolerance")
    labels = {
        "below": "k-hat at or below the threshold",
        "immaterial": (f"above, not flagged: p_true moves by less than {tol:g}"
                       if material and tol is not None else "above, not flagged"),
        "flagged": "flagged KHAT_HIGH" + (": p_true may move more" if material else ""),
    }
    style = {"below": ("tab:blue", 3, 1), "immaterial": ("0.6", 3, 2),
             "flagged": ("#c0392b", 7, 3)}
    n = {g: int(mask.sum()) for g, mask in groups.items()}
    if len(df) <= KHAT_SCATTER_MAX:
        x = df.index.to_numpy()
        for g, mask in groups.items():
            colour, size, z = style[g]
            ax.plot(x[mask], k[mask], ".", ms=size, color=colour, zorder=z,
                    label=f"{labels[g]} ({n[g]:,})")
        ax.set_xlabel("record (0-based, as in records.csv)")
        ax.set_ylabel("max Pareto k-hat over candidates")
        if np.isfinite(thr):
            ax.axhline(thr, color="r", ls="--", label=f"threshold {thr:.2f}")
    else:
        fin = np.isfinite(k)
        bins = np.histogram_bin_edges(k[fin], bins=40) if fin.any() else 10
        order = ["below", "immaterial"]
        ax.hist([k[groups[g] & fin] for g in order], bins=bins, stacked=True,
                color=[style[g][0] for g in order],
                label=[f"{labels[g]} ({n[g]:,})" for g in order])
        # each flagged record a mark of its own under the bars: a bar of one on a
        # thousand would not show
        hit = groups["flagged"] & fin
        ax.plot(k[hit], np.full(int(hit.sum()), 0.03), "^", ms=7, color=style["flagged"][0],
                transform=ax.get_xaxis_transform(), clip_on=False, zorder=3,
                label=f"{labels['flagged']} ({n['flagged']:,}), one mark each")
        ax.set_yscale("log")
        ax.set_xlabel("max Pareto k-hat over candidates")
        ax.set_ylabel("records (log scale)")
        if np.isfinite(thr):
            ax.axvline(thr, color="r", ls="--", label=f"threshold {thr:.2f}")
    rule = ("k-hat above the threshold and material" if material
            else "k-hat above the threshold")
    ax.set_title(f"{n['flagged']:,} of {len(df):,} records flagged ({rule})",
                 fontsize="medium")
    legend_below(ax, ncols=2)
    return ax


def _khat_groups(result: Any) -> dict[str, np.ndarray]:
    """Masks over the result's records: ``"flagged"`` (``KHAT_HIGH``), ``"immaterial"`` (k-hat
    above the threshold, not flagged: the material rule) and ``"below"`` (the others)."""
    df = result.records
    thr = float(result.settings.get("khat_threshold", np.nan))
    k = df["khat_max"].to_numpy(dtype=float) if "khat_max" in df else np.full(len(df), np.nan)
    flagged = df["flag_codes"].fillna("").astype(str).str.split(";").map(
        lambda c: "KHAT_HIGH" in c).to_numpy(dtype=bool)
    with np.errstate(invalid="ignore"):
        above = (k > thr) if np.isfinite(thr) else np.zeros(len(df), dtype=bool)
    return {"below": ~flagged & ~above, "immaterial": ~flagged & above, "flagged": flagged}
