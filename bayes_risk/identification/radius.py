"""Maximising-radius search (Hornby & Hu 2021 §4.1): :func:`radius_sweep`; see
:doc:`/methods/identification`.
"""

from __future__ import annotations

import itertools
import warnings
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import numpy as np
import pandas as pd

from bayes_risk._numeric import ties
from bayes_risk._specs import check_option
from bayes_risk._terminal import progress
from bayes_risk.exceptions import ValidationError, interruptible
from bayes_risk.executors import InProcessExecutor, as_executor, shared_once
from bayes_risk.identification.assemble import assemble
from bayes_risk.identification.evaluate import record_pool, run_engine
from bayes_risk.identification.matching import MatchRule
from bayes_risk.identification.plan import IdentificationPlan
from bayes_risk.identification.prepare import known_columns, prepare
from bayes_risk.identification.specs import spec_options
from bayes_risk.results.identification import RadiusSweepResult

__all__ = ["RadiusSweepResult", "radius_sweep"]


@interruptible
def radius_sweep(
    original: pd.DataFrame,
    synthetic: Any,
    *,
    known: Sequence[str],
    synthesized: Sequence[str] | None = None,
    radii: Sequence[float] | Mapping[str, Sequence[float]] = (0.01, 0.025, 0.05, 0.1, 0.2, 0.3),
    columns: Sequence[str] | None = None,
    max_grid: int = 1000,
    statistic: str = "mean",
    aggregation: Literal["per_dataset", "pooled"] | None = "per_dataset",
    progressbar: bool = True,
    executor: Any = None,
    **kwargs: Any,
) -> RadiusSweepResult:
    """Expected match risk over a grid of radii and the maximising radius (Hornby & Hu 2021 §4.1).

    Parameters
    ----------
    original, synthetic, known, synthesized
        As in :func:`~bayes_risk.identification.api.identification_risk`.
    radii : sequence of float or dict {column: sequence of float}
        One common radius for every varied column, or a Cartesian grid of per-column radii.
    columns : sequence of str, optional
        Radius columns to vary with a common radius (default: every column matched with a
        radius). Columns not varied keep the radius given in ``match=``.
    max_grid : int
        Largest number of grid points allowed (default 1,000).
    statistic : {"mean", "median"}
        Summary over datasets that is maximised.
    aggregation : {"per_dataset", "pooled"}
        ``"per_dataset"`` (default, Hornby & Hu 2021) maximises the summary of one risk per
        dataset; ``"pooled"`` one risk per grid point (sweep the aggregation you report).
    progressbar : bool
        Show progress over the grid.
    executor : None, distributed.Client or Executor, optional
        As in ``identification_risk``.
    **kwargs
        Further arguments of ``identification_risk``; the radius of ``match`` sets the radii
        of the columns not varied.

    Returns
    -------
    RadiusSweepResult

    Examples
    --------
    >>> import pandas as pd
    >>> y = pd.DataFrame({"x": [100.0, 110.0, 200.0, 400.0]})
    >>> z = pd.DataFrame({"x": [104.0, 100.0, 230.0, 390.0]})
    >>> res = radius_sweep(y, [z], known=["x"], synthesized=["x"],
    ...                    radii=[0.05, 0.1, 0.2, 0.3, 1.0], progressbar=False)
    >>> res.r_star, res.risk_star
    (0.2, 3.0)
    """
    check_option(statistic, "statistic", ("mean", "median"))
    options = sweep_options(kwargs, SWEEP_DEFAULTS, "radius_sweep")
    match = options["match"]
    if match.radius_type == "quantile_sd":
        raise ValidationError("a radius sweep needs radius_type 'percentage' or 'absolute'.",
                              code="INVALID_ARGUMENT")
    cartesian = isinstance(radii, Mapping)
    grid, grid_cols, base = _grid(radii, max_grid, match.radius)
    known_us, known_s = known_columns(original, synthetic, known, synthesized,
                                      options["replicates"])
    options["key_order"] = [known] if isinstance(known, str) else list(known)
    options["match"] = match.replace(radius=base)
    plan = prepare(original, synthetic, known_us, known_s, aggregation=aggregation, **options)
    rule = plan.rule
    if not rule.radius_cols:
        raise ValidationError("no known column is matched with a radius; nothing to sweep.")
    cols = _swept_columns(rule, grid_cols, columns)
    radii_of = [dict(zip(cols, grid[b], strict=False)) if cartesian
                else {c: float(grid[b]) for c in cols} for b in range(len(grid))]
    risk = _sweep_risk(plan, [rule.with_radius(rad) for rad in radii_of], executor, progressbar)
    summ = risk.mean(axis=1) if statistic == "mean" else np.median(risk, axis=1)
    best = float(np.max(summ))
    arg = tuple(int(i) for i in np.flatnonzero(ties(summ, best)))
    if cartesian:
        order = sorted(arg, key=lambda i: tuple(grid[i]))
        r_star: Any = grid[order[0]].copy()
    else:
        r_star = float(grid[min(arg, key=lambda i: grid[i])])
    settings = plan.settings_dict()
    settings["radius_type"] = rule.radius_type
    settings["grid"] = "cartesian" if cartesian else "common"
    return RadiusSweepResult(
        columns=cols,
        radii=grid,
        risk=risk,
        statistic=statistic,
        risk_summary=summ,
        r_star=r_star,
        risk_star=best,
        argmax=arg,
        settings=settings,
        warnings=list(plan.warnings),
    )


#: arguments of ``identification_risk`` a sweep passes on, with their defaults
SWEEP_DEFAULTS: dict[str, Any] = {
    "categorical": None, "schema": None, "match": None, "population": None, "replicates": None,
}


def sweep_options(kwargs: dict[str, Any], defaults: dict[str, Any], what: str
                  ) -> dict[str, Any]:
    """The options a sweep passes on to :func:`prepare`: ``kwargs`` (some of ``defaults``), with
    ``match=`` and ``population=`` as their specs."""
    unknown = sorted(set(kwargs) - set(defaults))
    if unknown:
        raise ValidationError(f"unknown argument(s) for {what}: {unknown}.",
                              code="INVALID_ARGUMENT")
    options = {k: kwargs.get(k, v) for k, v in defaults.items()}
    return {**options, **spec_options(options["match"], options["population"])}


def _sweep_risk(plan: IdentificationPlan, rules: list[MatchRule], executor: Any,
                progressbar: bool) -> np.ndarray:
    """Expected match risk ``[B, m]`` (``m = 1`` pooled) of every rule of the grid; the record
    pool is shared once for the whole sweep."""
    ex = as_executor(executor)
    pool = record_pool(plan, shipped=not isinstance(ex, InProcessExecutor))
    rows = []
    with shared_once(ex, pool) as shared:
        for rule in progress(rules, total=len(rules), description="radius sweep",
                             unit="radii", enabled=progressbar):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                # the file measures only: no pooled probabilities kept (nor their size limited)
                res = assemble(plan, rule, run_engine(plan, rule, ex, shared, progressbar=False,
                                                      keep_prob=False))
            if res.per_dataset is not None:
                rows.append(np.asarray(res.per_dataset["expected_match_risk"], dtype=np.float64))
            else:
                rows.append(np.array([res.file["expected_match_risk"]], dtype=np.float64))
            del res  # its tables are not held while the next radius runs
    return np.vstack(rows)


def _grid(radii: Any, max_grid: int, radius: Any) -> tuple[np.ndarray, list[str] | None, Any]:
    """The grid ``[B]`` (common radius) or ``[B, q]`` (Cartesian, columns ``grid_cols``) and the
    ``radius`` the plan is prepared with."""
    grid_cols = None
    if isinstance(radii, Mapping):
        grid_cols = [str(c) for c in radii]
        axes = []
        for c in grid_cols:
            v = np.asarray(list(radii[c]), dtype=np.float64).ravel()
            if v.size == 0:
                raise ValidationError(f"radii for column {c!r} are empty.")
            axes.append(np.sort(v))
        B = int(np.prod([len(a) for a in axes]))
        if B > max_grid:
            raise ValidationError(
                f"the Cartesian radius grid has {B} points (> max_grid={max_grid}); use fewer "
                "values per column or raise max_grid."
            )
        grid = np.array(list(itertools.product(*axes)), dtype=np.float64)
        base = dict(radius or {})
        for c, a in zip(grid_cols, axes, strict=False):
            base[c] = float(a[0])
    else:
        grid = np.sort(np.asarray(list(radii), dtype=np.float64).ravel())
        if grid.size == 0:
            raise ValidationError("radii is empty.")
        if grid.size > max_grid:
            raise ValidationError(f"{grid.size} radii given (> max_grid={max_grid}).")
        base = float(grid[0]) if radius is None else radius
    if np.any(~np.isfinite(grid)) or np.any(grid < 0):
        raise ValidationError("radii must be finite numbers >= 0.")
    return grid, grid_cols, base


def _swept_columns(rule: MatchRule, grid_cols: list[str] | None, columns: Any) -> tuple:
    """The radius columns the sweep varies (checked against the rule)."""
    cols = tuple(grid_cols if grid_cols is not None
                 else rule.radius_cols if columns is None else columns)
    for c in cols:
        if c not in rule.radius_cols:
            raise ValidationError(
                (f"radii given for column {c!r}, which is" if grid_cols is not None
                 else f"columns: {c!r} is") + " not matched with a radius "
                f"(radius columns: {list(rule.radius_cols)})."
            )
    return cols
