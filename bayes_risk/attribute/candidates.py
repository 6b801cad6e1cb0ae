"""Candidate sets ``C_i`` of the intruder's unknown values: specifications, parser, builders.

See :doc:`/methods/attribute` (Candidate sets).
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import pandas as pd

from bayes_risk._constraints import (
    COLUMN_NAMES,
    Flag,
    Interval,
    Options,
    SequenceOf,
    Text,
    check_fields,
    check_value,
    checked,
)
from bayes_risk.data.schema import Schema
from bayes_risk.exceptions import ValidationError, arg_name, has_option

# a record's candidate set is part of the result, which imports nothing of the engine
from bayes_risk.results.attribute import CandidateSet

__all__ = [
    "GridSpec",
    "SpatialGridSpec",
    "CandidateSpec",
    "CandidateSet",
    "parse_candidates",
    "with_zero_fallback",
    "model_candidates",
    "grid_points",
    "spatial_points",
    "build_candidates",
    "one_variable_codes",
    "product_codes",
    "neighbourhood_size",
    "full_size",
    "columns_without_alternative",
    "too_many_candidates",
]

DEFAULT_MAX_CANDIDATES = 1_000_000
GRID_KINDS = ("percent", "additive", "fixed", "explicit")
CANDIDATE_RULES = ("one_variable", "product", "k_different")


@dataclass(frozen=True)
class GridSpec:
    """Grid of candidate values for one numeric column (the truth always a grid point).

    Parameters
    ----------
    kind : {"percent", "additive", "fixed", "explicit"}
        ``[x − a|x|, x + b|x|]``, ``[x − a, x + b]``, the interval ``bounds`` or the ``values``.
    lower, upper : float
        ``a`` and ``b`` (fractions for ``percent``, widths for ``additive``). Default 0.1.
    n_points : int
        Number of equally spaced points ``G_j`` (default 11).
    bounds : (float, float), optional
        Interval for ``fixed``.
    values : sequence of float, optional
        Points for ``explicit``.
    zero_fallback : (str, float), optional
        ``("additive", width)``: the grid of a true value 0 under ``percent``.
    """

    kind: Literal["percent", "additive", "fixed", "explicit"] = field(
        default="percent", metadata=checked(Options(GRID_KINDS, listed=True)))
    lower: float = field(default=0.1, metadata=checked(Interval(float, 0)))
    upper: float = field(default=0.1, metadata=checked(Interval(float, 0)))
    n_points: int = field(default=11, metadata=checked(Interval(int, 2)))
    bounds: tuple[float, float] | None = None
    values: tuple[float, ...] | None = None
    zero_fallback: tuple[str, float] | None = None

    def __post_init__(self) -> None:
        check_fields(self)
        b = self.bounds
        if self.kind == "fixed" and (b is None or len(b) != 2 or not b[0] < b[1]):
            raise ValidationError(
                f"fixed grid needs bounds=(lo, hi) with lo < hi. Got {self.bounds!r}."
            )
        if self.kind == "explicit":
            if self.values is None or len(self.values) < 1:
                raise ValidationError("explicit grid needs a non-empty 'values' sequence.")
            object.__setattr__(self, "values", tuple(float(v) for v in self.values))
        z = self.zero_fallback
        if z is not None and (len(z) != 2 or z[0] != "additive" or not float(z[1]) > 0):
            raise ValidationError(
                f"zero_fallback must be ('additive', width > 0). Got {self.zero_fallback!r}."
            )


@dataclass(frozen=True)
class SpatialGridSpec:
    """Regular grid (or disk) of candidate locations around the true one.

    Parameters
    ----------
    columns : (str, str)
        The two numeric coordinate columns.
    spacing : float
        Grid spacing ``Δ``.
    half_width : float
        Half-width ``w`` of the square centred at the truth.
    disk : bool
        Keep only points within distance ``w`` of the truth.
    """

    columns: tuple[str, str] = field(metadata=checked(
        SequenceOf(COLUMN_NAMES.item, "column names", min_len=2, max_len=2)))
    spacing: float = field(metadata=checked(Interval(float, 0, closed="neither")))
    half_width: float = field(metadata=checked(Interval(float, 0)))
    disk: bool = field(default=False, metadata=checked(Flag()))

    def __post_init__(self) -> None:
        check_fields(self)
        object.__setattr__(self, "columns", tuple(self.columns))


@dataclass(frozen=True)
class CandidateSpec:
    """How to build every record's candidate set (see :doc:`/methods/attribute`).

    Parameters
    ----------
    rule : {"one_variable", "product", "k_different"}
        How blocks are combined.
    k : int
        Maximum number of differing blocks for ``"k_different"``.
    grids : mapping of str to GridSpec
        Grid per numeric column; others use ``default_grid``.
    default_grid : GridSpec
        Grid for numeric columns not in ``grids`` (default: percent ±10 %, 11 points).
    spatial : SpatialGridSpec, optional
        A pair of coordinate columns varied jointly.
    max_candidates : int
        Refuse (``TOO_MANY_CANDIDATES``) larger sets (default 10^6).
    """

    rule: Literal["one_variable", "product", "k_different"] = field(
        default="one_variable", metadata=checked(Options(CANDIDATE_RULES, listed=True)))
    k: int = field(default=1, metadata=checked(Interval(int, 1)))
    grids: Mapping[str, GridSpec] = field(default_factory=dict)
    default_grid: GridSpec = field(default_factory=GridSpec)
    spatial: SpatialGridSpec | None = None
    max_candidates: int = field(default=DEFAULT_MAX_CANDIDATES,
                                metadata=checked(Interval(int, 1)))

    def __post_init__(self) -> None:
        check_fields(self)
        object.__setattr__(self, "grids", dict(self.grids))

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready description."""
        sp = self.spatial
        return {
            "rule": self.rule,
            "k": self.k,
            "grids": {c: dataclasses.asdict(g) for c, g in self.grids.items()},
            "default_grid": dataclasses.asdict(self.default_grid),
            "spatial": None if sp is None else {**dataclasses.asdict(sp),
                                                "columns": list(sp.columns)},
            "max_candidates": self.max_candidates,
        }


def parse_candidates(text: str | CandidateSpec) -> CandidateSpec:
    """Parse a candidate-set description (also used by the CLI).

    Comma-separated parts: ``one-variable`` (``reduced``), ``full`` (``product``),
    ``k-different:K``, ``grid:percent|additive:A[:G]``, ``grid:percent|additive:A:B:G``,
    ``grid:fixed:LO:HI[:G]``; a grid alone implies the product rule. Raises ``ValidationError``
    for an unknown form.
    """
    if isinstance(text, CandidateSpec):
        return text
    check_value(text, Text("a string or CandidateSpec"), "candidates")
    rule: str | None = None
    k = 1
    grid: GridSpec | None = None
    for part in (p.strip() for p in text.split(",")):
        low = part.lower().replace("_", "-")
        if low in ("one-variable", "reduced", "one-variable-different"):
            rule = "one_variable"
        elif low in ("full", "product"):
            rule = "product"
        elif low.startswith("k-different"):
            bits = low.split(":")
            try:
                k = int(bits[1])
            except (IndexError, ValueError) as err:
                raise ValidationError(
                    f"candidates {part!r}: expected 'k-different:K' with integer K.",
                    code="INVALID_ARGUMENT"
                ) from err
            rule = "k_different"
        elif low.startswith("grid:"):
            bits = low.split(":")[1:]
            kind = bits[0] if bits else ""
            try:
                nums = [float(b) for b in bits[1:]]
            except ValueError as err:
                raise ValidationError(
                    f"candidates {part!r}: grid parameters must be numbers.",
                    code="INVALID_ARGUMENT"
                ) from err
            if kind in ("percent", "additive"):
                if len(nums) in (1, 2):  # A[:G]: the same width on both sides
                    grid = GridSpec(kind, nums[0], nums[0], *(int(g) for g in nums[1:]))
                elif len(nums) == 3:
                    grid = GridSpec(kind, nums[0], nums[1], int(nums[2]))
                else:
                    raise ValidationError(
                        f"candidates {part!r}: expected grid:{kind}:A[:G] or grid:{kind}:A:B:G.",
                        code="INVALID_ARGUMENT"
                    )
            elif kind == "fixed":
                if len(nums) not in (2, 3):
                    raise ValidationError(f"candidates {part!r}: expected grid:fixed:LO:HI[:G].",
                                          code="INVALID_ARGUMENT")
                grid = GridSpec("fixed", n_points=int(nums[2]) if len(nums) == 3 else 11,
                                bounds=(nums[0], nums[1]))
            else:
                raise ValidationError(
                    f"candidates {part!r}: grid kind must be percent, additive or fixed.",
                    code="INVALID_ARGUMENT"
                )
        else:
            raise ValidationError(
                f"{arg_name('candidates')} {part!r} not understood; expected 'one-variable', "
                "'full', 'k-different:K' or 'grid:percent|additive|fixed:...'.",
                code="INVALID_ARGUMENT"
            )
    return CandidateSpec(rule=rule or "product", k=k, default_grid=grid or GridSpec())  # type: ignore[arg-type]


def model_candidates(candidates: str | CandidateSpec, model: Any, original: pd.DataFrame
                     ) -> CandidateSpec:
    """``candidates`` with the zero fallback (:func:`with_zero_fallback`) for the percent grids of
    the numeric synthesized columns of ``model`` (a true value of 0 would otherwise stop the run).

    Parameters
    ----------
    candidates : str or CandidateSpec
        As :func:`parse_candidates` takes it.
    model : fitted model
        Its ``schema_`` names the synthesized columns (none: ``candidates`` as given).
    original : DataFrame
        The original table.

    Returns
    -------
    CandidateSpec
    """
    spec = parse_candidates(candidates)
    schema = getattr(model, "schema_", None)
    if schema is None:
        return spec
    numeric = [c for c in schema.synthesized if c in schema.numeric and c in original.columns]
    return with_zero_fallback(spec, original, numeric)


def with_zero_fallback(spec: CandidateSpec, data: pd.DataFrame, columns: Sequence[str]
                       ) -> CandidateSpec:
    """``spec`` with a zero fallback for the percent grid of each of ``columns``: the additive grid
    of half-width ``max(a, b)`` times the median non-zero ``|value|`` of the column (else 1).

    Parameters
    ----------
    spec : CandidateSpec
    data : DataFrame
        The original table.
    columns : sequence of str
        The numeric columns whose grids get a fallback.

    Returns
    -------
    CandidateSpec
        ``spec`` itself when no grid needed a fallback.

    Examples
    --------
    >>> df = pd.DataFrame({"income": [0.0, 20.0, 30.0, 40.0]})
    >>> s = with_zero_fallback(CandidateSpec(), df, ["income"])
    >>> s.grids["income"].zero_fallback
    ('additive', 3.0)
    """
    grids = dict(spec.grids)
    for c in columns:
        g = grids.get(c, spec.default_grid)
        if g.kind != "percent" or g.zero_fallback is not None:
            continue
        x = np.abs(pd.to_numeric(data[c], errors="coerce").to_numpy(dtype=np.float64))
        nz = x[np.isfinite(x) & (x != 0)]
        width = max(g.lower, g.upper) * float(np.median(nz)) if nz.size else 1.0
        grids[c] = dataclasses.replace(g, zero_fallback=("additive", width))
    if grids == dict(spec.grids):
        return spec
    return dataclasses.replace(spec, grids=grids)


# per-column points
def _insert_truth(points: np.ndarray, x: float) -> np.ndarray:
    if not np.any(points == x):
        j = int(np.argmin(np.abs(points - x)))
        points = points.copy()
        points[j] = x
    return points


def grid_points(x: float, spec: GridSpec, *, column: str = "?", integer: bool = False
                ) -> tuple[np.ndarray, int]:
    """Candidate values for one numeric column with true value ``x`` (ascending, the truth
    once) and the truth's index.

    Examples
    --------
    >>> pts, g0 = grid_points(11.6, GridSpec("additive", 2.5, 2.5, 11))
    >>> float(round(pts[0], 6)), float(round(pts[-1], 6)), g0
    (9.1, 14.1, 5)
    """
    x = float(x)
    if spec.kind == "percent":
        if x == 0.0:
            if spec.zero_fallback is None:
                raise ValidationError(
                    f"column {column!r}: the true value is 0, so the percent grid "
                    "[x - a|x|, x + b|x|] is degenerate. Pass zero_fallback=('additive', width) "
                    "or use an additive/fixed grid.",
                    code="ZERO_VALUE_PERCENT_GRID",
                )
            w = float(spec.zero_fallback[1])
            pts = np.linspace(x - w, x + w, int(spec.n_points))
        else:
            pts = np.linspace(x - spec.lower * abs(x), x + spec.upper * abs(x), int(spec.n_points))
    elif spec.kind == "additive":
        pts = np.linspace(x - spec.lower, x + spec.upper, int(spec.n_points))
    elif spec.kind == "fixed":
        lo, hi = spec.bounds  # type: ignore[misc]
        if not lo <= x <= hi:
            raise ValidationError(
                f"column {column!r}: the true value {x} lies outside the fixed grid bounds "
                f"[{lo}, {hi}].",
                code="TRUTH_OUTSIDE_FIXED_GRID",
            )
        pts = np.linspace(lo, hi, int(spec.n_points))
    else:
        pts = np.unique(np.asarray(spec.values, dtype=np.float64))
        if not np.any(pts == x):
            pts = np.sort(np.append(pts, x))  # explicit grids get the truth added, not swapped
    if integer:
        pts = np.unique(np.round(pts))
        pts = pts[pts >= 0]
        if not np.any(pts == x):
            pts = np.sort(np.append(pts, x))
    else:
        pts = np.sort(_insert_truth(pts, x))
    g0 = int(np.flatnonzero(pts == x)[0])
    return pts, g0


def spatial_points(truth: Sequence[float], spec: SpatialGridSpec) -> tuple[np.ndarray, int]:
    """Candidate locations ``[G, 2]`` around ``truth`` and the truth's index.

    Examples
    --------
    >>> spatial_points((50, 50), SpatialGridSpec(("x", "y"), 1, 2))[0].shape
    (25, 2)
    >>> spatial_points((50, 50), SpatialGridSpec(("x", "y"), 1, 2, disk=True))[0].shape
    (13, 2)
    """
    kmax = int(math.floor(spec.half_width / spec.spacing + 1e-9))
    k = np.arange(-kmax, kmax + 1)
    kx, ky = np.meshgrid(k, k, indexing="ij")
    off = np.stack([kx.ravel(), ky.ravel()], axis=1) * float(spec.spacing)
    if spec.disk:
        keep = np.hypot(off[:, 0], off[:, 1]) <= spec.half_width * (1 + 1e-12)
        off = off[keep]
    pts = np.asarray(truth, dtype=np.float64)[None, :] + off
    g0 = int(np.flatnonzero((off[:, 0] == 0) & (off[:, 1] == 0))[0])
    pts[g0] = np.asarray(truth, dtype=np.float64)  # exact truth, no rounding
    return pts, g0


# candidate sets
def columns_without_alternative(
    cands: Sequence[CandidateSet], is_cat: Sequence[bool] | None = None
) -> dict[str, int]:
    """Per varying column, the records whose candidates all hold the truth's value in it.

    Examples
    --------
    >>> cs = CandidateSet(("a", "b"), np.array([[1.0, 3.0], [2.0, 3.0]]), 0)
    >>> columns_without_alternative([cs])
    {'b': 1}
    """
    out: dict[str, int] = {}
    for cs in cands:
        v = np.asarray(cs.values, dtype=np.float64)
        t = v[cs.g0]
        miss = np.isnan(t)
        if is_cat is not None:
            miss |= np.asarray(is_cat, dtype=bool) & (t < 0)
        same = np.all((v == t) | miss, axis=0) & ~miss
        for j in np.flatnonzero(same):
            out[cs.columns[j]] = out.get(cs.columns[j], 0) + 1
    return out


def neighbourhood_size(levels: Sequence[int]) -> int:
    """One-variable-different set size ``1 + Σ (d_j − 1)``."""
    return 1 + int(sum(int(d) - 1 for d in levels))


def full_size(levels: Sequence[int]) -> int:
    """Full product size ``Π d_j``."""
    return int(math.prod(int(d) for d in levels))


def one_variable_codes(truth: np.ndarray, n_levels: Sequence[int]) -> np.ndarray:
    """Vectorised one-variable-different sets ``[R, G, q]`` of codes ``truth [R, q]``."""
    truth = np.asarray(truth, dtype=np.int64)
    r, q = truth.shape
    g = neighbourhood_size(n_levels)
    out = np.repeat(truth[:, None, :], g, axis=1)
    pos = 1
    for j, d in enumerate(n_levels):
        d = int(d)
        if d < 2:
            continue
        c = np.arange(d - 1)[None, :]
        lv = c + (c >= truth[:, j : j + 1])  # skip the true level
        out[:, pos : pos + d - 1, j] = lv
        pos += d - 1
    return out


def product_codes(n_levels: Sequence[int]) -> np.ndarray:
    """All ``Π d_j`` code vectors, last column varying fastest: int64 ``[G, q]``."""
    idx = np.indices([int(d) for d in n_levels]).reshape(len(n_levels), -1).T
    return idx.astype(np.int64)


def _blocks_for_record(truth: Mapping[str, Any], vary: Sequence[str], schema: Schema,
                       spec: CandidateSpec) -> list[tuple[tuple[str, ...], np.ndarray, int]]:
    """Per-block candidate values: ``(columns, values [n_b, |cols|], truth index)``."""
    blocks: list[tuple[tuple[str, ...], np.ndarray, int]] = []
    spatial_cols = tuple(spec.spatial.columns) if spec.spatial is not None else ()
    done_spatial = False
    for c in vary:
        if c in spatial_cols:
            if done_spatial:
                continue
            done_spatial = True
            pts, t = spatial_points([float(truth[sc]) for sc in spatial_cols], spec.spatial)  # type: ignore[arg-type]
            blocks.append((spatial_cols, pts, t))
            continue
        cs = schema[c]
        t = float(truth[c])
        if np.isnan(t) or (cs.is_categorical and t < 0):
            # a missing true value is not guessed (attribute.missing): the block holds it
            blocks.append(((c,), np.array([[-1.0 if cs.is_categorical else np.nan]]), 0))
        elif cs.is_categorical:
            d = cs.n_levels
            blocks.append(((c,), np.arange(d, dtype=np.float64)[:, None], int(truth[c])))
        else:
            g = spec.grids.get(c, spec.default_grid)
            if int(g.n_points) > spec.max_candidates:  # refused before the grid is made
                raise too_many_candidates(f"the grid of column {c!r} has {int(g.n_points):,} "
                                          "points", spec.max_candidates)
            pts, t = grid_points(float(truth[c]), g, column=c, integer=cs.type == "count")
            blocks.append(((c,), pts[:, None], t))
    return blocks


def too_many_candidates(what: str, limit: int) -> ValidationError:
    """``TOO_MANY_CANDIDATES``: ``what`` exceeds ``max_candidates`` = ``limit``, with the ways
    the caller has to a smaller set (``max_candidates`` has no command-line option)."""
    ways = [arg_name("candidates", repr("one-variable"), cli="one-variable"),
            "fewer grid points (the grid's last number)"]
    limit_text = f"the limit of {limit:,} candidates"
    if has_option("max_candidates"):
        ways.append("raise max_candidates")
        limit_text = f"max_candidates = {limit:,}"
    return ValidationError(f"{what}, more than {limit_text}. Use "
                           f"{', '.join(ways[:-1])} or {ways[-1]}.", code="TOO_MANY_CANDIDATES")


def _combine(blocks, spec: CandidateSpec) -> tuple[np.ndarray, int, tuple[str, ...]]:
    cols = tuple(c for b in blocks for c in b[0])
    sizes = [b[1].shape[0] for b in blocks]
    truth_vec = np.concatenate([b[1][b[2]] for b in blocks])
    widths = [len(b[0]) for b in blocks]
    starts = np.cumsum([0, *widths])
    if spec.rule == "product":
        g = math.prod(sizes)
        if g > spec.max_candidates:
            raise too_many_candidates(f"the full candidate set has G = {g:,} candidates",
                                      spec.max_candidates)
        idx = np.indices(sizes).reshape(len(sizes), -1).T
        vals = np.empty((g, len(cols)))
        for b, (_bc, bv, _) in enumerate(blocks):
            vals[:, starts[b] : starts[b + 1]] = bv[idx[:, b]]
        g0 = int(np.ravel_multi_index([b[2] for b in blocks], sizes))
        return vals, g0, cols
    kmax = 1 if spec.rule == "one_variable" else min(int(spec.k), len(blocks))
    rows = [truth_vec]
    for kk in range(1, kmax + 1):
        for combo in itertools.combinations(range(len(blocks)), kk):
            choices = [[v for v in range(sizes[b]) if v != blocks[b][2]] for b in combo]
            for pick in itertools.product(*choices):
                row = truth_vec.copy()
                for b, v in zip(combo, pick, strict=False):
                    row[starts[b] : starts[b + 1]] = blocks[b][1][v]
                rows.append(row)
                if len(rows) > spec.max_candidates:
                    raise too_many_candidates("the candidate set has more candidates",
                                              spec.max_candidates)
    return np.asarray(rows, dtype=np.float64).reshape(len(rows), len(cols)), 0, cols


def build_candidates(truth: Mapping[str, Any] | pd.Series, vary: Sequence[str], schema: Schema,
                     spec: CandidateSpec | str = "one-variable") -> CandidateSet:
    """Candidate set of one record from its true values of the varying columns ``vary``."""
    spec = parse_candidates(spec)
    if spec.spatial is not None:
        missing = [c for c in spec.spatial.columns if c not in vary]
        if missing:
            raise ValidationError(
                f"spatial grid columns {missing} are not among the varying columns {list(vary)}.",
                code="UNKNOWN_COLUMN"
            )
        for c in spec.spatial.columns:
            if schema[c].is_categorical:
                raise ValidationError(f"spatial grid column {c!r} must be numeric.",
                                      code="WRONG_DTYPE")
    blocks = _blocks_for_record(truth, vary, schema, spec)
    vals, g0, cols = _combine(blocks, spec)
    return CandidateSet(columns=cols, values=vals, g0=g0)


def candidates_from_frame(frame: pd.DataFrame, truth_codes: np.ndarray, columns: Sequence[str],
                          schema: Schema) -> CandidateSet:
    """A user-supplied candidate frame as a CandidateSet, the truth prepended when absent."""
    cols = list(columns)
    missing = [c for c in cols if c not in frame.columns]
    if missing:
        raise ValidationError(f"candidate callable returned a frame without column(s) {missing}.",
                              code="MISSING_COLUMN")
    vals = np.empty((len(frame), len(cols)))
    for j, c in enumerate(cols):
        cs = schema[c]
        if cs.is_categorical:
            lookup = {v: k for k, v in enumerate(cs.levels)}
            try:
                vals[:, j] = [lookup[v] for v in frame[c].tolist()]
            except KeyError as err:
                raise ValidationError(
                    f"candidate callable returned value {err.args[0]!r} for column {c!r}, "
                    f"not among its levels {list(cs.levels)}.",
                    code="UNKNOWN_LEVEL"
                ) from err
        else:
            vals[:, j] = frame[c].to_numpy(dtype=np.float64)
    if len(np.unique(vals, axis=0)) != len(vals):
        raise ValidationError(
            "candidate callable returned duplicate candidates.", code="DUPLICATE_CANDIDATES"
        )
    t = np.asarray(truth_codes, dtype=np.float64)
    hit = np.flatnonzero(np.all(vals == t[None, :], axis=1))
    if hit.size == 0:
        vals = np.vstack([t[None, :], vals])
    return CandidateSet(columns=tuple(cols), values=vals, g0=int(hit[0]) if hit.size else 0)
