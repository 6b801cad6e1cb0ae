"""Maximising-radius search (Hornby & Hu 2021 §4.1): :func:`radius_sweep`; see
:doc:`/methods/identification`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import warnings
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Literal

import numpy as np
import pandas as pd

from bayes_risk._constraints import (
    Interval,
    Options,
    SequenceOf,
    check_keywords,
    check_value,
    check_vector,
)
from bayes_risk._numeric import ties
from bayes_risk._terminal import progress, say
from bayes_risk.exceptions import CALLER, DataWarning, ValidationError, interruptible
from bayes_risk.executors import Executor, InProcessExecutor, as_executor, shared_once
from bayes_risk.identification.assemble import assemble
from bayes_risk.identification.evaluate import record_pool, run_engines
from bayes_risk.identification.matching import MatchRule
from bayes_risk.identification.plan import IdentificationPlan
from bayes_risk.identification.prepare import known_columns, prepare
from bayes_risk.identification.radius_refine import (
    REFINE_POINTS,
    PointState,
    per_dataset_state,
    pooled_state,
)
from bayes_risk.identification.specs import SEARCH_RADII, spec_options
from bayes_risk.results.identification import RadiusSweepResult

__all__ = ["RadiusSweepResult", "radius_sweep", "radius_search", "SEARCH_RADII", "check_windows"]


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
    check_value(statistic, Options(("mean", "median"), listed=True), "statistic")
    options = sweep_options(kwargs, SWEEP_DEFAULTS, "radius_sweep")
    match = _searchable(options["match"], "a radius sweep")
    cartesian = isinstance(radii, Mapping)
    grid, grid_cols, base = _grid(radii, max_grid, match.radius)
    known_us, known_s = known_columns(original, synthetic, known, synthesized,
                                      options["replicates"])
    options["key_order"] = known  # as given: prepare reads a name alone as one column
    options["match"] = match.replace(radius=base)
    plan = prepare(original, synthetic, known_us, known_s, aggregation=aggregation, **options)
    rule = plan.rule
    if not rule.radius_cols:
        raise ValidationError("no known column is matched with a radius; nothing to sweep.")
    cols = _swept_columns(rule, grid_cols, columns)
    check_windows(original, cols, np.ravel(grid), rule.radius_type, "radius_sweep radii")
    radii_of = [dict(zip(cols, grid[b], strict=False)) if cartesian
                else {c: float(grid[b]) for c in cols} for b in range(len(grid))]
    with _shared_pool(plan, executor, len(radii_of)) as (ex, shared):
        risk, tmr, _ = _sweep_risk(plan, [rule.with_radius(rad) for rad in radii_of], ex,
                                   shared, progressbar)
    summ = _summarise(risk, statistic)
    arg = _argmax(summ)
    r_star = _smallest(grid, arg, cartesian)
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
        risk_star=float(np.max(summ)),
        argmax=arg,
        settings=settings,
        warnings=list(plan.warnings),
        true_match_rate=tmr,
    )


def _summarise(values: np.ndarray, statistic: str) -> np.ndarray:
    """``statistic`` over datasets (axis 1) of a ``[B, m]`` table."""
    return values.mean(axis=1) if statistic == "mean" else np.median(values, axis=1)


def _argmax(summary: np.ndarray) -> tuple[int, ...]:
    """Every grid index attaining the maximum of ``summary`` (ties to rounding)."""
    return tuple(int(i) for i in np.flatnonzero(ties(summary, float(np.max(summary)))))


def _smallest(grid: np.ndarray, arg: tuple[int, ...], cartesian: bool) -> Any:
    """The smallest radius (lexicographically, per column) among the grid points ``arg``."""
    if cartesian:
        return grid[sorted(arg, key=lambda i: tuple(grid[i]))[0]].copy()
    return float(grid[min(arg, key=lambda i: grid[i])])


@interruptible
def radius_search(
    original: pd.DataFrame,
    synthetic: Any,
    *,
    known: Sequence[str],
    synthesized: Sequence[str] | None = None,
    radii: Sequence[float] = SEARCH_RADII,
    max_grid: int = 1000,
    statistic: str = "mean",
    aggregation: Literal["per_dataset", "pooled"] | None = "per_dataset",
    refine: int = REFINE_POINTS,
    progressbar: bool = True,
    executor: Any = None,
    **kwargs: Any,
) -> RadiusSweepResult:
    """The worst case over the intruder's radii: every numeric known column searched, exact
    matching (radius 0) included.

    An intruder who knows a numeric column chooses how closely to match it. This search
    takes the largest expected match risk, and separately the largest true match rate, over
    a grid of radii for *every* numeric known column — synthesized or released unchanged —
    with 0 (exact matching) in every column's grid: the figure an audit reports for the
    intruder it names (:doc:`/methods/identification`, "The worst case over the radii").
    Hornby & Hu's (2021) convention, one percentage radius on every continuous key, is a
    point of this grid.

    The grid is the Cartesian product of ``{0} ∪ radii`` over the columns when it has at most
    ``max_grid`` points, refined between its points (``refine``); otherwise a coordinate
    search (the best common radius, then each column's grid in turn with the others held,
    until a round changes nothing), which is stated in ``settings["search"]`` and is not
    guaranteed to find the grid's maximum.

    Parameters
    ----------
    original, synthetic, known, synthesized
        As in :func:`~bayes_risk.identification.api.identification_risk`.
    radii : sequence of float
        The radii of every searched column (0 is added). Default ``SEARCH_RADII``: 0, 0.01,
        0.025, 0.05, 0.1, 0.2, 0.3, 0.5 and 1.
    max_grid : int
        Largest Cartesian grid evaluated whole (default 1,000 points).
    statistic : {"mean", "median"}
        Summary over the datasets that is maximised (per-dataset aggregation).
    aggregation : {"per_dataset", "pooled"}
        One risk per dataset (Hornby & Hu 2021) or the intruder holding all of them (Reiter &
        Mitra 2009).
    refine : int
        Points evaluated at most between the grid's radii (default 200; 0: the grid's points
        only, the figures still bounded between them). A match count changes only where a
        radius crosses a record's distance to the target, so the figures are step functions
        of the radii: each cell of the grid is bounded from the counts at its corners (the
        fewest matches at the lower corner, the own record matched at most as at the upper
        one) and split, at the radii where records enter, while its bound exceeds the largest
        figure found. When no bound is left above it, the figures are the largest over every
        radius from 0 to the largest searched (``search_status`` ``"exact"``); else the
        largest found with the bound left (``"bounded"``, ``RADIUS_SEARCH_BOUNDED``). Not run
        for a coordinate search, population counts, the signed radius of compat mode or a
        per-dataset fallback, whose counts are not monotone in the radius
        (``RADIUS_GRID_ONLY``, the reason in ``settings["search"]["refinement"]``).
    progressbar : bool
        Show the cost before the work and progress over the grid.
    executor : None, distributed.Client or Executor, optional
        As in ``identification_risk``.
    **kwargs
        ``categorical``, ``schema``, ``match`` (its ``radius`` left unset: the search sets
        every radius), ``population``, ``replicates`` of ``identification_risk``.

    Returns
    -------
    RadiusSweepResult
        ``radii`` is ``[B, q]`` over ``columns`` (every numeric known column): the grid's
        points (``grid_points``), then the refinement's; ``r_star`` the radii of the largest
        expected match risk, ``tmr_star`` those of the largest true match rate;
        ``search_status``, ``bounds`` and ``at_edge()`` what the maxima cover;
        ``settings["search"]`` the grid, the mode and the points evaluated. Its warnings name
        ``RADIUS_AT_GRID_EDGE`` when a maximum lies at the largest radius searched.

    Raises
    ------
    ValidationError
        No numeric known column (exact matching is the only choice), ``match`` with a radius,
        a ``"quantile_sd"`` radius type, or radii that are not finite numbers >= 0.

    Examples
    --------
    >>> import pandas as pd
    >>> y = pd.DataFrame({"age": [30, 30, 41, 52], "x": [100.0, 110.0, 200.0, 400.0]})
    >>> z = pd.DataFrame({"age": [30, 30, 41, 52], "x": [104.0, 100.0, 230.0, 390.0]})
    >>> res = radius_search(y, [z], known=["age", "x"], synthesized=["x"],
    ...                     radii=[0.05, 0.2], progressbar=False)
    >>> res.radii_at(res.argmax[0]), res.risk_star
    ({'age': 0.0, 'x': 0.2}, 3.0)
    """
    check_value(statistic, Options(("mean", "median"), listed=True), "statistic")
    options = sweep_options(kwargs, SWEEP_DEFAULTS, "radius_search")
    match = options["match"]
    values = _check_search(match, radii, refine)
    known_us, known_s = known_columns(original, synthetic, known, synthesized,
                                      options["replicates"])
    # a release's manifest says which integer-coded columns are categories (no radius)
    schema = options["schema"] if options["schema"] is not None else getattr(
        synthetic, "schema", None)
    cols = search_columns(original, [*known_us, *known_s], schema, options["categorical"])
    if not cols:
        raise ValidationError(
            "no numeric known column: exact matching is the only choice, there is no radius "
            "to search.", code="INVALID_ARGUMENT")
    options["key_order"] = known  # as given: prepare reads a name alone as one column
    options["match"] = match.replace(radius=dict.fromkeys(cols, 0.0))
    check_windows(original, cols, values, match.radius_type, "radius_search radii")
    plan = prepare(original, synthetic, known_us, known_s, aggregation=aggregation, **options)
    full = len(values) ** len(cols)
    mode = "grid" if full <= max_grid else "coordinate"
    found = list(plan.warnings)
    if mode == "coordinate":  # said wherever the search runs (the audit, identification, Python)
        _warn_coordinate(cols, full, max_grid)
        found.append("RADIUS_COORDINATE_SEARCH")
    points = (np.array(list(itertools.product(*[values] * len(cols))), dtype=np.float64)
              if mode == "grid" else np.empty((0, len(cols))))
    if progressbar:
        _say_search(cols, len(values), full, max_grid, mode, plan.replicates.R, aggregation)
    why = _not_refined(plan, mode, aggregation, len(points))
    points, risk, tmr, refined = _run_search(plan, cols, points, values, mode, why, executor,
                                             statistic, refine, progressbar)
    summ = _summarise(risk, statistic)
    arg = _argmax(summ)
    settings = plan.settings_dict()
    settings["radius_type"] = plan.rule.radius_type
    settings["grid"] = "cartesian"
    settings["search"] = {"mode": mode, "values": list(values), "points": int(len(points)),
                          "grid_points": int(full if mode == "grid" else len(points)),
                          "full_grid_points": int(full), "max_grid": int(max_grid),
                          "refinement": (refined.to_dict() if refined is not None
                                         else {"status": "not run", "reason": why})}
    res = RadiusSweepResult(
        columns=tuple(cols), radii=points, risk=risk, statistic=statistic, risk_summary=summ,
        r_star=_smallest(points, arg, True), risk_star=float(np.max(summ)), argmax=arg,
        settings=settings, warnings=found, true_match_rate=tmr)
    return res.with_search_warnings()


def _searchable(match: Any, what: str) -> Any:
    """``match``, whose radius type a sweep or search of radii can vary (``what`` names it)."""
    if match.radius_type == "quantile_sd":
        raise ValidationError(f"{what} needs radius_type 'percentage' or 'absolute'.",
                              code="INVALID_ARGUMENT")
    return match


def _check_search(match: MatchRule, radii: Any, refine: Any) -> tuple[float, ...]:
    """The radii searched (:func:`_search_values`), once ``match`` leaves every radius to the
    search with a radius type that can be searched, and ``refine`` is a count of points."""
    if match.radius is not None:
        raise ValidationError(
            "radius_search sets every radius itself; give the radii to search as radii=[...] "
            f"and leave match.radius unset. Got match.radius={match.radius!r}.",
            code="OPTION_CONFLICT")
    _searchable(match, "a radius search")
    values = _search_values(radii)
    check_value(refine, Interval(int, 0), "refine")
    return values


def _warn_coordinate(cols: list[str], full: int, max_grid: int) -> None:
    """Warn (``RADIUS_COORDINATE_SEARCH``) that the grid of ``full`` points is too large and
    the search is a coordinate one, which may miss the grid's largest risk."""
    text = (f"the radius search over {len(cols)} numeric known columns ({', '.join(cols)}) "
            f"would take {full:,} grid points, more than max_grid={max_grid:,}: it is a "
            "coordinate search (each column's radii in turn, the others held), which may miss "
            "the grid's largest risk (RADIUS_COORDINATE_SEARCH). Search fewer radii, or fewer "
            "known columns at once")
    warnings.warn(DataWarning(text + ".", code="RADIUS_COORDINATE_SEARCH"),
                  skip_file_prefixes=CALLER)


def _say_search(cols: list[str], n_values: int, full: int, max_grid: int, mode: str, R: int,
                aggregation: Any) -> None:
    """State the search's cost before the work: its points and the datasets of each."""
    say(f"radius search over {', '.join(cols)}: "
        + (f"{full:,} grid points ({n_values} radii each, 0 = exact)" if mode == "grid"
           else f"a coordinate search ({n_values} radii each, 0 = exact; the full grid "
           f"of {full:,} points exceeds max_grid={max_grid})")
        + (f", each over the {R} datasets one at a time"
           if aggregation == "per_dataset" else
           f", each pooled over the {R} datasets"))


def _run_search(plan: IdentificationPlan, cols: list[str], points: np.ndarray,
                values: tuple[float, ...], mode: str, why: str | None, executor: Any,
                statistic: str, refine: int, progressbar: bool
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray, Any]:
    """Evaluate the search: the grid's ``points`` and, unless ``why`` says it cannot be, the
    refinement between them; or a coordinate search. Returns the points evaluated, their
    risks and true match rates ``[B, m]``, and the refinement (``None``: not run)."""
    refined = None
    with _shared_pool(plan, executor, len(points) if mode == "grid" else len(values)) as (
            ex, shared):

        def evaluate(rows: np.ndarray, states: bool = False, bar: bool = progressbar,
                     values: bool | list[bool] = True) -> tuple:
            rules = [plan.rule.with_radius(dict(zip(cols, r, strict=True))) for r in rows]
            return _sweep_risk(plan, rules, ex, shared, bar, states, values)

        if mode == "grid":
            risk, tmr, states = evaluate(points, why is None)
            if why is None:
                refined = _refine(plan, cols, points, values, risk, tmr, states, evaluate,
                                  statistic, refine, progressbar)
                points = np.vstack([points, refined.points])
                risk, tmr = np.vstack([risk, refined.risk]), np.vstack([tmr, refined.tmr])
        else:
            points, risk, tmr = _coordinate_search(lambda r: evaluate(r)[:2], values,
                                                   len(cols), statistic)
    return points, risk, tmr, refined


def _not_refined(plan: IdentificationPlan, mode: str, aggregation: Any, points: int
                 ) -> str | None:
    """Why the search cannot bound the figures between the grid's points (``None``: it can)."""
    st = plan.settings
    if mode != "grid":
        return "a coordinate search: its points are not the corners of the grid's cells"
    if plan.counts.inv_f is not None:
        return ("population counts: a declared match depends on the count, which is not "
                "monotone in the radius")
    if plan.rule.legacy_signed:
        return "the signed radius of compat mode: a window that does not grow with the radius"
    if aggregation == "per_dataset" and st.fallback != "none":
        return ("one dataset at a time with a fallback: the fallback set replaces an empty "
                "match set, so a count can fall as the radius grows")
    from bayes_risk._memory import room

    N, R = plan.prep.n_targets, max(plan.prep.R, 1)
    per_point = N * R * 5 + (0 if aggregation == "per_dataset" else N * 40)
    left = room()
    if left is not None and per_point * points > left // 4:
        return (f"memory: the counts of the {points:,} grid points would take "
                f"{per_point * points / 1e9:.2g} GB, more than a quarter of what is left")
    return None


def _refine(plan: IdentificationPlan, cols: list[str], points: np.ndarray,
            values: tuple[float, ...], risk: np.ndarray, tmr: np.ndarray,
            states: list[PointState], evaluate: Any, statistic: str, max_points: int,
            progressbar: bool) -> Any:
    """The search's supremum between the grid's points (:func:`.radius_refine.refine`)."""
    keys = [tuple(float(x) for x in p) for p in points]
    summ = dict(zip(keys, zip(_summarise(risk, statistic), _summarise(tmr, statistic),
                              strict=True), strict=True))
    if progressbar and max_points:
        say(f"between the grid's points: bounding the figures, up to {max_points:,} points "
            "more (exact once no bound exceeds the largest figure found)")

    def more(rows: list[tuple], full: list[bool]) -> list[tuple]:
        r, t, st = evaluate(np.array(rows, dtype=np.float64), True, False, full)
        return list(zip(r, t, st, strict=True))

    from bayes_risk._memory import room
    from bayes_risk.identification.radius_refine import refine

    left = room()
    return refine(points, values, states, summ, more, statistic, max_points, risk.shape[1],
                  memory=None if left is None else left / 4,
                  breakpoints=lambda lo, hi, L, H: _entering(plan, cols, lo, hi, L, H))


#: targets whose entering records the refinement lists to split a box (more: it halves it)
ENTERING_TARGETS = 64


def _entering(plan: IdentificationPlan, cols: list[str], lo: tuple, hi: tuple,
              L: PointState, H: PointState) -> list[np.ndarray] | None:
    """Per searched column, the radii at which the records matched at ``hi`` by the targets
    whose counts change between ``L`` and ``H`` enter their windows (``|z - t| / |t|``, or
    ``|z - t|`` absolute): where the refinement splits a box. Listed by the engine's index
    for at most :data:`ENTERING_TARGETS` targets of rectangular windows (``None`` otherwise:
    the box is halved)."""
    from bayes_risk.identification.engine import replicate_index, target_keys
    from bayes_risk.identification.fallback import fallback_sets
    from bayes_risk.identification.index import target_bounds

    prep, rule = plan.prep, plan.rule
    moved = L.n != H.n
    f_moved = np.zeros(prep.n_targets, dtype=bool) if L.f is None else L.f != H.f
    rows = np.flatnonzero(moved.any(axis=1) | f_moved)
    if rule.shape != "rectangle" or not 0 < rows.size <= ENTERING_TARGETS:
        return None
    at = rule.with_radius(dict(zip(cols, hi, strict=True)))
    bounds = target_bounds(prep, at).rows(rows)
    t = prep.tgt_radius[rows]
    pos = {c: j for j, c in enumerate(at.radius_cols)}
    found: list[list[np.ndarray]] = [[] for _ in cols]

    def add(who: np.ndarray, vals: Any, recs: np.ndarray, columns: list[str]) -> None:
        for c in columns:
            k = pos[c]
            z, tv = vals[k, recs], t[who, k]
            with np.errstate(divide="ignore", invalid="ignore"):
                d = np.abs(z - tv) / (np.abs(tv) if at.radius_type == "percentage" else 1.0)
            found[cols.index(c)].append(d[np.isfinite(d)])

    tkey = target_keys(prep, at)[0][rows]
    for r in range(prep.R):
        sel = np.flatnonzero(moved[rows, r])
        if sel.size:
            idx = replicate_index(prep, at, r)
            cnt, recs = idx.match(tkey[sel], bounds.rows(sel), True)
            add(np.repeat(sel, cnt), idx.vals, recs, cols)
    sel = np.flatnonzero(f_moved[rows])
    if sel.size:  # records entering the fallback sets: the unsynthesized columns' radii
        cnt, recs = fallback_sets(prep, at).members(rows[sel])
        add(np.repeat(sel, cnt), prep.rec_radius_us, recs, [c for c in cols
                                                             if c in at.radius_us])
    return [np.concatenate(f) if f else np.zeros(0) for f in found]


def search_columns(original: pd.DataFrame, known: Sequence[str], schema: Any = None,
                   categorical: Any = None) -> list[str]:
    """The numeric (count or continuous) known columns, in the original's column order: the
    columns whose radius :func:`radius_search` searches."""
    from bayes_risk.data.schema import infer_schema

    if schema is None:
        cat = [categorical] if isinstance(categorical, str) else list(categorical or [])
        schema = infer_schema(original, categorical=cat or None)
    numeric = set(schema.numeric)
    return [str(c) for c in original.columns if c in known and c in numeric]


def _search_values(radii: Any) -> tuple[float, ...]:
    """``{0} ∪ radii``, sorted; refused unless finite numbers >= 0, one of them above 0 (named
    ``radius_search radii``: the command line's ``--radius-search``, not the sweep's)."""
    vals = list(check_value(radii, SequenceOf(Interval(float, 0), "finite numbers >= 0",
                                              min_len=0), "radius_search radii"))
    if not any(float(r) > 0 for r in vals):
        raise ValidationError(
            f"radius_search radii holds no radius above 0 (got {radii!r}): the search would be "
            "exact matching alone, which understates the risk of an intruder who matches "
            "loosely. Give radii above 0, or the default grid "
            f"({', '.join(f'{r:g}' for r in SEARCH_RADII[1:])}).",
            code="INVALID_ARGUMENT")
    return tuple(sorted({0.0, *(float(r) for r in vals)}))


def check_windows(original: pd.DataFrame, cols: Sequence[str], radii: Any, radius_type: str,
                  what: str) -> None:
    """Refuse a radius whose window around a value of ``cols`` overflows float64 (``1e308``
    times an income): such a window holds every value, and numpy would only warn."""
    for c in cols:
        if c not in original.columns:
            continue
        x = pd.to_numeric(original[c], errors="coerce").to_numpy(np.float64)
        x = np.abs(x[np.isfinite(x)])
        if not x.size:
            continue
        m = float(x.max())
        with np.errstate(over="ignore"):
            for r in np.asarray(radii, dtype=np.float64):
                reach = r * m if radius_type == "percentage" else r
                if np.isfinite(r) and not np.isfinite(m + reach):
                    raise ValidationError(
                        f"{what}: the radius {r:g} of column {c!r} gives a window that "
                        f"overflows the floating-point range at its largest value ({m:g}): it "
                        "would hold every value. Give a radius below "
                        f"{np.finfo(np.float64).max / max(m, 1.0) / 2:.3g}.",
                        code="INVALID_ARGUMENT")


def _coordinate_search(evaluate: Any, values: tuple[float, ...], q: int, statistic: str,
                       max_rounds: int = 20) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Coordinate ascent of the summary risk over ``values``^q: the best common radius, then
    each column's values with the others held, until a round moves nothing. Every point
    evaluated is returned (each once)."""
    seen: dict[tuple[float, ...], tuple[np.ndarray, np.ndarray]] = {}

    def run(rows: list[tuple[float, ...]]) -> None:
        new = [r for r in dict.fromkeys(rows) if r not in seen]
        if new:
            risk, tmr = evaluate(np.array(new, dtype=np.float64))
            seen.update({r: (risk[i], tmr[i]) for i, r in enumerate(new)})

    def score(r: tuple[float, ...]) -> float:
        return float(_summarise(seen[r][0][None, :], statistic)[0])

    run([(v,) * q for v in values])
    best = max(((v,) * q for v in values), key=score)
    for _ in range(max_rounds):
        start = best
        for j in range(q):
            line = [best[:j] + (v,) + best[j + 1:] for v in values]
            run(line)
            best = max(line, key=lambda r: (score(r), r == best))
        if best == start:
            break
    rows = sorted(seen)  # lexicographic, as the full grid: the first of ties is the smallest
    return (np.array(rows, dtype=np.float64), np.vstack([seen[r][0] for r in rows]),
            np.vstack([seen[r][1] for r in rows]))


#: grid points whose partitions a radius search sends to a cluster in one map, at most
GRID_POINTS_PER_MAP = 4

#: arguments of ``identification_risk`` a sweep passes on, with their defaults
SWEEP_DEFAULTS: dict[str, Any] = {
    "categorical": None, "schema": None, "match": None, "population": None, "replicates": None,
}


def sweep_options(kwargs: dict[str, Any], defaults: dict[str, Any], what: str
                  ) -> dict[str, Any]:
    """The options a sweep passes on to :func:`prepare`: ``kwargs`` (some of ``defaults``), with
    ``match=`` and ``population=`` as their specs."""
    check_keywords(kwargs, defaults, what)
    options = {k: kwargs.get(k, v) for k, v in defaults.items()}
    return {**options, **spec_options(options["match"], options["population"])}


@contextlib.contextmanager
def _shared_pool(plan: IdentificationPlan, executor: Any, runs: int
                 ) -> Iterator[tuple[Executor, Any]]:
    """The executor and the record pool that every point of a sweep or search reads, sent to a
    cluster's workers once (with their index caches, which then serve every later round of the
    refinement: a pool sent per round cost a small audit on two local workers 30 s). ``runs``
    points share the plan: its indexes are compiled if the whole search repays it (the audit's
    per-dataset search of 81 points, 20,000 CE-like records, m = 5: 37 s of CPU on the
    pure-numpy index, 9 s compiled)."""
    ex = as_executor(executor)
    plan.prep.runs = max(plan.prep.runs, runs)
    pool = record_pool(plan, shipped=not isinstance(ex, InProcessExecutor))
    with shared_once(ex, pool) as shared:
        yield ex, shared


def _sweep_risk(plan: IdentificationPlan, rules: list[MatchRule], ex: Executor, shared: Any,
                progressbar: bool, states: bool = False,
                values: bool | Sequence[bool] = True
                ) -> tuple[Any, Any, list[PointState] | None]:
    """Expected match risk and true match rate ``[B, m]`` (``m = 1`` pooled) of every rule of
    the grid, and with ``states`` what the refinement's bounds read at each
    (:func:`_point_state`), on ``ex`` with the record pool ``shared`` (:func:`_shared_pool`).
    Pooled, a rule whose ``values`` is false (one flag, or one a rule) is evaluated for the
    datasets' counts only (a bound's upper corner): its figures are then ``None``, and the
    figures are lists rather than arrays."""
    # on a cluster, up to GRID_POINTS_PER_MAP points' tasks at once: no wait at each point's
    # last task (at 10^6 records on two workers, a fifth of a worker's time), as many as a
    # quarter of the memory left holds of their outputs (CELL_BYTES a target and dataset)
    step = 1
    if not isinstance(ex, InProcessExecutor):
        from bayes_risk._memory import room
        from bayes_risk.identification.engine import CELL_BYTES

        left = room()
        out = CELL_BYTES * plan.prep.n_targets * max(1, plan.prep.R)
        step = GRID_POINTS_PER_MAP if left is None else int(
            max(1, min(GRID_POINTS_PER_MAP, left // 4 // max(out, 1))))
    risk, tmr, kept = [], [], []
    # pooled, the bounds read each dataset's direct matches too (one dataset at a time, no
    # fallback: the same engine, the same targets)
    direct = dataclasses.replace(plan, settings=dataclasses.replace(
        plan.settings, aggregation="per_dataset", fallback="none"))
    pooled = plan.settings.aggregation != "per_dataset"
    need = [values] * len(rules) if isinstance(values, bool) else list(values)
    chunks = [(rules[i:i + step], need[i:i + step]) for i in range(0, len(rules), step)]
    for chunk, full in progress(chunks, total=len(rules), description="radius sweep",
                                unit="grid points", size=lambda c: len(c[0]),
                                enabled=progressbar):
        # one map for the chunk: pooled, the datasets one at a time (the bounds' counts) and,
        # where the figures are needed, pooled (a round trip to a cluster each costs more than
        # a refinement round's work on a small file)
        direct_jobs = [(direct, r) for r in chunk] if states and pooled else []
        jobs = [(plan, r) for r, f in zip(chunk, full, strict=True) if f or not pooled]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            # the file measures only: no pooled probabilities kept (nor their size limited)
            outs = run_engines([*direct_jobs, *jobs], ex, shared, keep_prob=False)
            douts = outs[:len(direct_jobs)] or [None] * len(chunk)
            outs = outs[len(direct_jobs):]
            for rule, f, dout in zip(chunk, full, douts, strict=True):
                if pooled and not f:  # the counts only
                    kept.append(_point_state(plan, rule, None, dout))
                    risk.append(None)
                    tmr.append(None)
                    continue
                out = outs.pop(0)
                if states:
                    kept.append(_point_state(plan, rule, out, dout))
                res = assemble(plan, rule, out)
                fig = res.per_dataset if res.per_dataset is not None else {
                    k: [v] for k, v in res.file.items()}
                risk.append(np.asarray(fig["expected_match_risk"], dtype=np.float64))
                tmr.append(np.asarray(fig["true_match_rate_targets"], dtype=np.float64))
                del res, out  # its tables are not held while the next radius runs
    if any(r is None for r in risk):
        return risk, tmr, kept
    return np.vstack(risk), np.vstack(tmr), (kept if states else None)


def _point_state(plan: IdentificationPlan, rule: MatchRule, out: Any, direct: Any
                 ) -> PointState:
    """What the refinement's bounds read at one point: the per-dataset counts and own-record
    flags (pooled: of ``direct``, the datasets one at a time without fallback, with the pooled
    top sets of ``out``, ``None`` at an upper corner, and the fallback sets)."""
    if direct is None:
        return per_dataset_state(out.c, out.T)
    f = f_own = None
    if plan.settings.fallback == "unsynthesized":
        from bayes_risk.identification.fallback import fallback_sets

        prep = plan.prep
        sets = fallback_sets(prep, rule)
        f = sets.sizes()
        f_own = np.zeros(prep.n_targets, dtype=bool)
        mine = np.flatnonzero(prep.in_sample & (prep.rec >= 0))
        f_own[mine] = sets.contains(mine, prep.rec[mine])
    if out is None:  # an upper corner: the counts the bounds read there
        d = per_dataset_state(direct.c, direct.T)
        return PointState(n=d.n, own=d.own, f=None if f is None else np.asarray(f, np.int64),
                          f_own=f_own)
    return pooled_state(per_dataset_state(direct.c, direct.T), out.c, out.T, out.p_max, f,
                        f_own)


def _grid(radii: Any, max_grid: int, radius: Any) -> tuple[np.ndarray, list[str] | None, Any]:
    """The grid ``[B]`` (common radius) or ``[B, q]`` (Cartesian, columns ``grid_cols``) and the
    ``radius`` the plan is prepared with."""
    grid_cols = None
    if isinstance(radii, Mapping):
        grid_cols = [str(c) for c in radii]
        axes = [np.sort(check_vector(radii[c], _RADII, f"radii[{c!r}]")) for c in grid_cols]
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
        grid = np.sort(check_vector(radii, SequenceOf(
            _RADII.item, f"finite numbers >= 0 (max_grid={max_grid})", max_len=max_grid),
            "radii"))
        base = float(grid[0]) if radius is None else radius
    return grid, grid_cols, base


#: the radii of one column of a sweep
_RADII = SequenceOf(Interval(float, 0), "finite numbers >= 0")


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
