"""The figures of the identification results: of an
:class:`~bayes_risk.results.IdentificationResult` (the record risks, the datasets, the running
estimate of the posterior replicates) and of a :class:`~bayes_risk.results.RadiusSweepResult`
(the risk by radius, a box over the datasets or each column's profile). Each takes the result
(typed loosely: the module the classes are defined in imports this one) and the Axes."""

from __future__ import annotations

from typing import Any

import numpy as np

from bayes_risk._numeric import ties
from bayes_risk.exceptions import ValidationError
from bayes_risk.results._base import draws, legend_below

__all__ = ["box", "per_dataset", "profile", "record_risk", "running_estimate"]


@draws("record_risk")
def record_risk(result: Any, ax: Any) -> Any:
    """Histogram of the record-level identification risk ``IR`` of the targets."""
    ir = np.asarray(result.record_IR, dtype=float)
    ax.hist(ir[np.isfinite(ir)], bins=30)
    ax.set(xlabel="record-level identification risk IR", ylabel="targets")
    ax.set_title(f"Expected match risk {result.file.get('expected_match_risk', np.nan):.4g}")
    return ax


@draws("per_dataset")
def per_dataset(result: Any, ax: Any) -> Any:
    """Expected match risk of each synthetic dataset (per-dataset aggregation)."""
    if result.per_dataset is None:
        raise ValidationError(
            "kind='per_dataset' needs a result with aggregation='per_dataset'; this one "
            "pools the datasets.",
            code="RESULT_UNSUITED"
        )
    v = np.asarray(result.per_dataset["expected_match_risk"], dtype=float)
    pos = np.arange(1, v.size + 1)
    ax.plot(pos, v, "o-", lw=1, ms=4)
    ax.axhline(float(np.nanmean(v)), color="k", ls="--", label="mean")
    ax.set_xticks(pos)
    ax.set(xlabel="synthetic dataset", ylabel="expected match risk (sum of IR)")
    ax.legend(loc="best")
    return ax


@draws("running_estimate")
def running_estimate(result: Any, ax: Any) -> Any:
    """Running pooled expected match risk by replicates, with its ±2 MCSE band."""
    trace = result.file.get("mc_trace")
    if not trace:
        raise ValidationError(
            "kind='running_estimate' needs a result computed with posterior replicates "
            "(PosteriorReplicates); this one has no Monte Carlo trace.",
            code="RESULT_UNSUITED"
        )
    R = np.asarray(trace["n_replicates"], dtype=float)
    est = np.asarray(trace["expected_match_risk"], dtype=float)
    se = np.nan_to_num(np.asarray(trace["mc_se"], dtype=float))
    # Σ IR lies in [0, number of targets]: the ± 2 MCSE band is cut there
    n_targets = result.file.get("n_targets")
    lo = np.clip(est - 2 * se, 0.0, None)
    hi = est + 2 * se if n_targets is None else np.clip(est + 2 * se, None, float(n_targets))
    ax.fill_between(R, lo, hi, alpha=0.3,
                    label="± 2 MCSE (jackknife), cut at the possible range")
    ax.errorbar(R, est, yerr=np.vstack([est - lo, hi - est]), fmt="o-", ms=3, capsize=2,
                label="pooled estimate")
    pr = result.settings.get("posterior_replicates", {})
    warning = ""
    if pr.get("n") == "auto":
        tol = float(pr["mcse_tol"])
        for sign in (-1, 1):
            ax.axhline(est[-1] * (1 + sign * 2 * tol), ls=":", color="grey", lw=1,
                       label="final ± 2 × tolerance" if sign < 0 else None)
        if not pr.get("stopped_by_tolerance", True):
            warning = (f"MCSE_NOT_REACHED: relative MCSE above {100 * tol:g} % at\n"
                       f"R = {int(R[-1])}, the cap: the pooled figure is uncertain")
    ax.set(xlabel="number of posterior replicates R", ylabel="expected match risk (targets)")
    # whether the tolerance was reached is a warning beside the figure, not its title
    ax.set_title(f"Running pooled estimate ({pr.get('view', '')} view, R = {int(R[-1])})",
                 fontsize="medium")
    legend_below(ax, ncols=1, warning=warning)
    return ax


@draws("profile")
def profile(result: Any, ax: Any, rate_threshold: float | None = None,
            n_targets: int | None = None) -> Any:
    """The risk against each column's radius, the other columns held where the risk is
    largest (a per-column grid's profile through its maximum; a band over the datasets);
    ``rate_threshold`` and ``n_targets``: as :func:`box`."""
    B = result.grid_points  # the grid's rows; a refinement's points follow them
    grid = (np.atleast_2d(result.radii.T).T if result.common else result.radii)[:B]
    summ = result.risk_summary[:B]
    best = np.atleast_1d(result.r_star) if not result.common else np.full(
        len(result.columns), float(result.r_star))
    # the profiles pass through the grid's own maximum
    g = int(np.flatnonzero(ties(summ, float(np.max(summ))))[0])
    gbest = grid[g]
    values = np.unique(grid)

    def pos(v: float) -> float:  # the categorical axis, between its ticks off the grid
        return float(np.interp(v, values, np.arange(len(values))))

    for j, col in enumerate(result.columns):
        others = [k for k in range(grid.shape[1]) if k != j]
        on = np.all(np.isclose(grid[:, others], gbest[others]), axis=1) if others else \
            np.ones(len(grid), bool)
        idx = np.flatnonzero(on)
        idx = idx[np.argsort(grid[idx, j])]
        x = [pos(float(v)) for v in grid[idx, j]]
        line, = ax.plot(x, summ[idx], "o-", ms=4, lw=1.2,
                        label=f"{col} (the other columns where the grid's risk is largest)"
                        if others else col)
        if result.risk.shape[1] > 1:
            ax.fill_between(x, result.risk[:B][idx].min(axis=1),
                            result.risk[:B][idx].max(axis=1), color=line.get_color(),
                            alpha=0.15, lw=0)
    # every profile passes through the grid's maximum, at its own column's radius there
    ax.scatter([pos(float(r)) for r in gbest], [float(summ[g])] * len(gbest), s=120,
               facecolors="none", edgecolors="C3", zorder=3)
    if result.risk_star > float(summ[g]):  # found between the grid's points
        ax.scatter([pos(float(r)) for r in best], [result.risk_star] * len(best), s=90,
                   marker="*", color="C3", zorder=4,
                   label="largest between the grid's points (each column's radius)")
    pooled = result.settings.get("aggregation") == "pooled"
    what = ("pooled over the datasets" if pooled
            else f"{result.statistic} over the {result.risk.shape[1]} datasets")
    ax.axhline(result.risk_star, color="C3", ls=":", lw=1,
               label=f"largest: {result.risk_star:.4g}")
    if result.search_status in ("exact", "bounded"):
        ax.axhline(result.bounds[0], color="0.4", ls="--", lw=0.8,
                   label=("no radius gives more (exact)" if result.search_status == "exact"
                          else f"bound between the points: {result.bounds[0]:.4g}"))
    ax.set_xticks(range(len(values)))
    ax.set_xticklabels(["exact" if v == 0 else f"{v:g}" for v in values])
    rt = result.settings.get("radius_type", "")
    ax.set_xlabel("radius, fraction of the value (0.1 = ±10 %)" if rt == "percentage"
                  else "radius" + (f" ({rt})" if rt else ""))
    ax.set_ylabel("expected match risk (targets, sum of IR)")
    ax.set_ylim(bottom=0)
    _rate_threshold(ax, rate_threshold, n_targets)
    at = ", ".join(f"{c} {'exact' if r == 0 else f'{r:g}'}"
                   for c, r in zip(result.columns, best, strict=True))
    ax.set_title(f"Identification risk by radius ({what}):\nlargest at {at}",
                 fontsize="medium")
    legend_below(ax, ncols=1)
    return ax


@draws("box")
def box(result: Any, ax: Any, rate_threshold: float | None = None,
        n_targets: int | None = None) -> Any:
    """Box plot of the expected match risk over datasets (Hornby & Hu 2021 Fig. 6), from 0;
    with ``rate_threshold`` (per cent of the ``n_targets`` targets: the audit's
    ``expected_match_rate``), the threshold in targets, and the rate on the right axis."""
    pos = np.arange(1, len(result.risk) + 1)
    ax.boxplot(list(result.risk), positions=pos, widths=0.6)
    ax.plot(pos, result.risk_summary, "o-", color="C1", lw=1, ms=4,
            label=f"{result.statistic} over the datasets")
    for i in result.argmax:
        ax.axvline(pos[i], color="C3", ls=":", lw=1)
    ax.set_ylim(bottom=0)
    _rate_threshold(ax, rate_threshold, n_targets)
    ax.set_xticks(pos)
    ax.set_xticklabels(
        result.labels(),
        rotation=0 if result.common else 45,
        ha="center" if result.common else "right",
    )
    rt = result.settings.get("radius_type", "")
    # a percentage radius is a fraction: 0.1 is ±10 %
    ax.set_xlabel("radius, fraction of the value (0.1 = ±10 %)" if rt == "percentage"
                  else "radius" + (f" ({rt})" if rt else ""))
    ax.set_ylabel("expected match risk (targets, sum of IR)")
    labels = result.labels()
    best = labels[result.argmax[0]] if result.argmax else ""
    same = result.indistinguishable()
    m = result.risk.shape[1]
    verdict = ("one dataset: no spread to judge it by" if same is None else
               f"above every other radius beyond the spread over the {m} datasets"
               if not same else
               "not distinguishable from the other radii (paired 95 % intervals)"
               if len(same) == len(labels) - 1 else
               f"not distinguishable from {', '.join(labels[i] for i in same)}")
    ax.set_title(f"Identification risk by radius: largest {result.statistic} at {best},\n"
                 f"{verdict}", fontsize="medium")
    legend_below(ax)
    return ax


def _rate_threshold(ax: Any, rate: float | None, n_targets: int | None) -> None:
    """On an axis of the expected match risk (targets): the audit's threshold of the expected
    match rate (``rate``, per cent of the ``n_targets`` targets), in targets, and the rate on a
    right axis, so that the figure reads in the verdict's unit too (issue 66)."""
    if rate is None or not n_targets:
        return
    n = float(n_targets)
    allowed = float(rate) / 100 * n
    ax.axhline(allowed, color="#a51d2d", ls="--", lw=1.2,
               label=f"threshold: expected match rate {rate:g} % ({allowed:,.4g} targets)")
    right = ax.secondary_yaxis("right", functions=(lambda y: 100 * y / n,
                                                   lambda p: p * n / 100))
    right.set_ylabel("expected match rate (% of targets)")
    ax.set_ylim(top=max(ax.get_ylim()[1], 1.1 * allowed))
