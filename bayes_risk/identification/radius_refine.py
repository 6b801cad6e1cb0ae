"""The supremum of the radius search between the grid's points (:func:`refine`): branch and
bound on the step structure of the figures. See :doc:`/methods/identification`, "The worst
case over the radii".

A record enters a target's window when a radius crosses the record's distance to the target,
and never leaves it as the radius grows, so in each dataset a target's match count and whether
its own record is matched are non-decreasing step functions of the radii. Over a box of radii
``[lo, hi]`` the count is at least its value at ``lo`` and the own record is matched at most
where it is at ``hi``: that bounds every target's contribution to the expected match risk and
the true match rate inside the box, and a target whose counts are the same at both corners
contributes exactly what it does at ``lo`` everywhere inside. A box whose bound does not exceed
the largest figure found holds nothing larger; the others are split (at a radius where records
enter, else in the middle), until none is left (the maximum over every radius in the searched
range, exact) or the points allowed are spent (the largest figure found and the largest bound
left: the supremum lies between them).
"""

from __future__ import annotations

import heapq
import itertools
import weakref
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from bayes_risk.identification.specs import REFINE_POINTS

__all__ = ["PointState", "Refinement", "refine", "per_dataset_state", "pooled_state",
           "REFINE_POINTS"]

#: pooled probabilities closer than this may tie (the engine's tolerance, ``TIE_RTOL`` on a
#: probability of at most 1, with room for the rounding of the bound's own sums)
_TIE = 4e-9
#: a box is bounded at its exact upper corner (an extra point) once this little of its grid
#: cell is left in some column: a count that changes exactly at the evaluated corner above it
#: (a round income at a round percentage) then no longer keeps it open
_TIGHTEN_SHARE = 2.0**-10


@dataclass
class PointState:
    """What the bounds read at one evaluated point: per target and dataset the records matched
    directly (no fallback) and whether the target's own record is among them; pooled, also the
    target's measures there, whether a record other than its own tops it, and its fallback set
    (size, own record in it)."""

    n: np.ndarray  # [N, R] int32
    own: np.ndarray  # [N, R] bool
    ir: np.ndarray | None = None  # pooled: [N] IR, K, p_max, competitor, fallback set
    k: np.ndarray | None = None
    p_max: np.ndarray | None = None
    rival: np.ndarray | None = None
    f: np.ndarray | None = None
    f_own: np.ndarray | None = None


def per_dataset_state(c: np.ndarray, T: np.ndarray) -> PointState:
    """The state of a per-dataset run without population counts or fallback (``c`` is then the
    count and ``T`` the own record matched, in sample)."""
    return PointState(n=np.asarray(c, dtype=np.int32), own=np.asarray(T, dtype=bool))


def pooled_state(direct: PointState, c: np.ndarray, T: np.ndarray, p_max: np.ndarray,
                 f: np.ndarray | None, f_own: np.ndarray | None) -> PointState:
    """The state of a pooled run: ``direct`` (the datasets one at a time, no fallback), the
    pooled top sets (``c``, ``T``, ``p_max``) and the fallback sets (``None``: no fallback)."""
    c = np.asarray(c, dtype=np.int64)
    T = np.asarray(T, dtype=bool) & (c > 0)
    ir = np.zeros(c.shape)
    np.divide(T, c, out=ir, where=c > 0)
    return PointState(n=direct.n, own=direct.own, ir=ir, k=T & (c == 1),
                      p_max=np.asarray(p_max, dtype=np.float64),
                      rival=(np.asarray(p_max) > 0) & (~T | (c >= 2)),
                      f=None if f is None else np.asarray(f, dtype=np.int64),
                      f_own=None if f_own is None else np.asarray(f_own, dtype=bool))


def box_bound(L: PointState, H: PointState, statistic: str) -> tuple[float, float]:
    """Upper bounds of the expected match risk and of the true match rate (summarised over the
    datasets as the search is: ``statistic``, or pooled) anywhere in the box whose lower corner
    is ``L`` and whose upper corner is at most ``H``."""
    if L.ir is None:
        ir, k, _ = _per_dataset_bound(L, H)
        e, t = ir.sum(axis=0), k.sum(axis=0) / max(ir.shape[0], 1)
        summ = np.mean if statistic == "mean" else np.median
        return float(summ(e)), float(summ(t))
    ir, k, _ = _pooled_bound(L, H)
    return float(ir.sum()), float(k.sum() / max(ir.size, 1))


def _per_dataset_bound(L: PointState, H: PointState) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per target and dataset: the largest ``IR`` and ``K`` in the box, and whether constant.

    Inside the box the count is at least ``n(lo)``, one more where the own record enters; the
    own record is matched at most where it is at ``hi``; a true match needs no other record
    matched at ``lo`` (it stays)."""
    frozen = L.n == H.n
    entry = H.own & ~L.own
    ir = np.where(frozen, L.own / np.maximum(L.n, 1),
                  H.own / np.maximum(L.n.astype(np.int64) + entry, 1))
    k = np.where(frozen, L.own & (L.n == 1), H.own & (L.n == L.own))
    return ir, k, frozen


def _pooled_bound(L: PointState, H: PointState) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per target: the largest pooled ``IR`` and ``K`` in the box, and whether constant.

    In each dataset the match set is the direct one, or the fallback set where nothing matches
    directly; each only grows inside the box. A record other than the target's own that is in
    the top set at ``lo`` (the rival, with pooled probability ``p_max``) stays in every direct
    set it was in, and in a fallback set while the dataset falls back. Per dataset, the largest
    excess of the own record's share over the rival's is bounded with the rival in the set at
    ``lo`` (``b``) and without it (``a``, the own record's largest share: the rival may enter);
    which datasets hold the rival is unknown but their shares at ``lo`` sum to ``R p_max``, so
    the largest excess over the datasets is at most the fractional knapsack's (the cheapest
    ``a − b`` per share first). Below 0 (the engine's tie tolerance kept) the own record is
    never in the top set; at 0 it at best ties with the rival (``IR <= 1/2``, no true match);
    above, ``IR`` and ``K`` are at most 1."""
    fb = L.f is not None
    d_lo, d_hi = L.n.astype(np.float64), H.n.astype(np.float64)
    o_hi = H.own.astype(np.float64)
    entry = H.own & ~L.own
    direct = o_hi / np.maximum(d_lo + entry, 1.0)
    with np.errstate(divide="ignore"):
        a = np.where(d_lo > 0, direct, np.where(d_hi > 0, o_hi, 0.0))
        b = np.where(d_lo > 0, np.where(H.own, 0.0, -1.0 / np.maximum(d_hi, 1.0)), -np.inf)
        w = np.where(d_lo > 0, 1.0 / np.maximum(d_lo, 1.0), np.inf)
        if fb:
            f_lo = L.f.astype(np.float64)[:, None]
            f_hi = H.f.astype(np.float64)[:, None]
            f_own = H.f_own[:, None]
            share = f_own / np.maximum(f_lo + (f_own & ~L.f_own[:, None]), 1.0)
            falls = d_lo == 0  # the dataset falls back at lo (and may go on doing so)
            a = np.where(falls, np.maximum(a, share), a)
            held = falls & (f_lo > 0)  # the fallback set is the match set at lo
            b_f = np.where(f_own, 0.0, -1.0 / np.maximum(f_hi, 1.0))
            b = np.where(held, np.maximum(b_f, np.where(d_hi > 0, o_hi, -np.inf)), b)
            w = np.where(held, 1.0 / np.maximum(f_lo, 1.0), w)
    excess = a.sum(axis=1) - _knapsack(np.where(np.isfinite(w), a - b, 0.0), w,
                                       L.p_max * a.shape[1])
    # without a rival (the own record alone on top, or nothing matched at lo): its share only
    top_own = np.where(L.rival, excess, a.sum(axis=1))
    possible = top_own >= -_TIE * a.shape[1]
    alone = possible & (~L.rival | (top_own > 0))
    same = d_lo == d_hi
    if fb:
        same &= (d_lo > 0) | (L.f == H.f)[:, None]
    frozen = same.all(axis=1)
    ir = np.where(alone, 1.0, np.where(possible, 0.5, 0.0))
    return (np.where(frozen, L.ir, ir), np.where(frozen, L.k, alone).astype(np.float64),
            frozen)


def _knapsack(cost: np.ndarray, weight: np.ndarray, total: np.ndarray) -> np.ndarray:
    """Per row, the least cost of shares of the items (``[N, R]``; infinite weight: not
    available) whose weights sum to ``total`` (fractional: at most the least integer cost)."""
    ok = np.isfinite(weight) & (weight > 0)
    ratio = np.where(ok, cost / np.where(ok, weight, 1.0), np.inf)
    order = np.argsort(ratio, axis=1, kind="stable")
    c = np.take_along_axis(np.where(ok, cost, 0.0), order, axis=1)
    wt = np.take_along_axis(np.where(ok, weight, 0.0), order, axis=1)
    before = np.cumsum(wt, axis=1) - wt
    take = np.clip((total[:, None] - before) / np.where(wt > 0, wt, 1.0), 0.0, 1.0)
    take = np.where(wt > 0, take, 0.0)
    return (take * c).sum(axis=1)


@dataclass
class Refinement:
    """What :func:`refine` found: the points it evaluated (beyond the grid), their figures,
    and the largest bounds left (equal to the largest figures when the search is exact)."""

    points: np.ndarray  # [k, q]
    risk: np.ndarray  # [k, m]
    tmr: np.ndarray  # [k, m]
    status: str  # "exact" or "bounded"
    risk_bound: float
    tmr_bound: float
    boxes: int = 0  # boxes examined
    probes: int = 0  # upper corners whose counts alone were evaluated
    stopped: str | None = None  # why a bounded search stopped

    def to_dict(self) -> dict[str, Any]:
        return {"status": self.status, "points": int(len(self.points)),
                "boxes": int(self.boxes), "probes": int(self.probes),
                **({"stopped": self.stopped} if self.stopped else {}),
                "expected_match_risk_bound": float(self.risk_bound),
                "true_match_rate_bound": float(self.tmr_bound)}


@dataclass
class _Box:
    """Radii ``lo``..``hi`` (both included, floats; ``hi`` may lie below the evaluated upper
    corner ``top`` whose state bounds it) and the states at ``lo`` and ``top``."""

    lo: tuple
    hi: tuple
    top: tuple
    L: PointState
    H: PointState
    #: columns along which the last split changed no count (split last, if at all)
    inert: frozenset = frozenset()


def refine(grid: np.ndarray, values: tuple[float, ...], states: list[PointState],
           summary: dict[tuple, tuple[float, float]],
           evaluate: Callable[[list[tuple], list[bool]], list[tuple[Any, Any, PointState]]],
           statistic: str, max_points: int, m: int, memory: float | None = None,
           breakpoints: Callable[[tuple, tuple, PointState, PointState],
                                 list[np.ndarray] | None] | None = None) -> Refinement:
    """The supremum of the summarised expected match risk and true match rate over every
    radius in ``[0, max(values)]`` of each column, from the states of the grid's points.

    Parameters
    ----------
    grid : ndarray [B, q]
        The grid's points (the Cartesian product of ``values``).
    values : tuple of float
        Each column's radii, sorted (0 first).
    states : list of PointState
        Each grid point's, in the order of ``grid``; emptied here (the boxes hold them, and
        a state no box holds is freed).
    summary : dict
        Each grid point's summarised figures ``(risk, tmr)``, by its radii.
    evaluate : callable
        ``(points, full)`` to ``(risk [m], tmr [m], state)`` of each point; ``full`` says
        which need their figures (a box's lower corner), the others their counts only
        (``risk`` and ``tmr`` may then be ``None``). The points allowed count those whose
        figures were evaluated.
    statistic : {"mean", "median"}
        The per-dataset summary (ignored pooled).
    max_points : int
        Points evaluated at most beyond the grid.
    m : int
        Datasets per point (1 pooled).
    memory : float, optional
        Bytes the states the boxes hold may take (``None``: no limit); beyond it the search
        stops, as when the points allowed are spent.
    breakpoints : callable, optional
        ``(lo, hi, L, H)`` to the radii of each column inside the box at which records enter
        the windows of the targets whose counts change (``None``: not listed). A box is split
        at their median rather than at its middle: a change is isolated in about as many
        splits as the box holds changes, not as the lattice has points. Any split is valid;
        this only speeds the search.

    Returns
    -------
    Refinement
    """
    q = grid.shape[1]
    # the states by their radii, while a box holds them (a point's state is freed with the
    # last box that reads it: the boxes' corners, not every point evaluated, stay in memory)
    held: weakref.WeakValueDictionary = weakref.WeakValueDictionary()
    per_state = max((st.n.nbytes + st.own.nbytes + 40 * st.n.shape[0] for st in states),
                    default=1)
    grid_states = {tuple(float(x) for x in p): st for p, st in zip(grid, states, strict=True)}
    states.clear()
    vals = np.asarray(values, dtype=np.float64)
    widths = np.diff(vals)
    best = [max(v[0] for v in summary.values()), max(v[1] for v in summary.values())]
    counter = itertools.count()
    # per figure: (-bound, order, box); a box sits in the heap of each figure it may exceed
    heaps: list[list[tuple[float, int, _Box]]] = [[], []]
    new_points: list[tuple] = []
    new_risk: list[np.ndarray] = []
    new_tmr: list[np.ndarray] = []
    boxes = 0

    def eps(i: int) -> float:
        # the bound's sums against the engine's differ by rounding: "exact" is to a relative
        # 1e-9 of the figure (1e-4 of a target at 10^5 expected matches)
        return 1e-9 * max(1.0, abs(best[i]))

    def push(b: _Box) -> None:
        nonlocal boxes
        boxes += 1
        bounds = box_bound(b.L, b.H, statistic)
        order = next(counter)
        for i in (0, 1):
            if bounds[i] > best[i] + eps(i):
                heapq.heappush(heaps[i], (-bounds[i], order, b))

    probes = 0

    def run(points: list[tuple], full: list[bool]) -> list[PointState]:
        """The states of ``points``; their figures too where ``full`` (a lower corner) or
        where they come with the state (one dataset at a time)."""
        nonlocal probes
        need = {}
        for p, f in zip(points, full, strict=True):
            if p not in held or (f and p not in summary):
                need[p] = need.get(p, False) or f
        got = dict.fromkeys(points)
        got.update({p: held[p] for p in points if p in held})
        if need:
            for p, (risk, tmr, st) in zip(need, evaluate(list(need), list(need.values())),
                                          strict=True):
                held[p] = got[p] = st
                if risk is None:  # the counts only (pooled: an upper corner)
                    probes += 1
                    continue
                s = (_summ(risk, statistic), _summ(tmr, statistic))
                summary[p] = s
                best[0], best[1] = max(best[0], s[0]), max(best[1], s[1])
                new_points.append(p)
                new_risk.append(np.asarray(risk, dtype=np.float64))
                new_tmr.append(np.asarray(tmr, dtype=np.float64))
        return [got[p] for p in points]

    h = lattice_step(float(vals[-1]))
    for lo, hi, top in _cells(vals, h, q):
        push(_Box(lo, hi, top, grid_states[lo], grid_states[top]))
    held.update(grid_states)
    del grid_states  # the boxes hold them now
    split: set[int] = set()  # boxes already split (a box may sit in both heaps)
    stopped = "the points allowed were evaluated"
    while len(new_points) < max_points:
        if memory is not None and len(held) * per_state > memory:
            stopped = "the memory: the counts of the boxes' corners fill a quarter of what is left"
            break
        item = _next(heaps, best, eps, split)
        if item is None:
            break
        b = item[2]
        split.add(item[1])
        span = [(b.hi[j] - b.lo[j]) / _cell_width(widths, vals, b.lo[j]) for j in range(q)]
        if b.top != b.hi and min(span) <= _TIGHTEN_SHARE:
            (H,) = run([b.hi], [False])
            push(_Box(b.lo, b.hi, b.hi, b.L, H, b.inert))
            continue
        if b.lo == b.hi:  # one point, evaluated: its value is known
            continue
        j, mid = _split(b, h, None if breakpoints is None else
                        breakpoints(b.lo, b.hi, b.L, b.H))
        a = b.lo[j]
        p_top = _with(b.top, j, mid)
        p_lo = _with(b.lo, j, mid)
        H1, L2 = run([p_top, p_lo], [False, True])
        inert = (b.inert | {j}) if _same(L2, b.L) and _same(H1, b.H) else b.inert - {j}
        push(_Box(b.lo, _with(b.hi, j, max(a, _below(mid, h))), p_top, b.L, H1, inert))
        push(_Box(p_lo, b.hi, b.top, L2, b.H, inert))
    left = [max((-k for k, o, _ in h if o not in split), default=-np.inf) for h in heaps]
    bound = [max(best[i], left[i]) for i in (0, 1)]
    exact = all(bound[i] <= best[i] + eps(i) for i in (0, 1))
    return Refinement(
        points=np.array(new_points, dtype=np.float64).reshape(-1, q),
        risk=np.array(new_risk, dtype=np.float64).reshape(-1, m),
        tmr=np.array(new_tmr, dtype=np.float64).reshape(-1, m),
        status="exact" if exact else "bounded",
        risk_bound=best[0] if exact else bound[0], tmr_bound=best[1] if exact else bound[1],
        boxes=boxes, probes=probes, stopped=None if exact else stopped)


def _cells(vals: np.ndarray, h: float, q: int) -> Iterator[tuple[tuple, tuple, tuple]]:
    """The grid's cells as their corners ``(lo, hi, top)``: ``[v_i, v_(i+1))`` in each of the
    ``q`` columns (``hi`` the last point of the lattice of step ``h`` below ``v_(i+1)``, ``top``
    the grid point) and the largest radius on its own. They partition the radii searched,
    every corner is a grid point, and every point evaluated between them is a point of the
    lattice."""
    K = len(vals) - 1
    spans = [(float(vals[i]), _below(float(vals[i + 1]), h), float(vals[i + 1]))
             for i in range(K)] + [(float(vals[K]),) * 3]
    for cell in itertools.product(spans, repeat=q):
        yield tuple(tuple(c[i] for c in cell) for i in range(3))


def _summ(v: Any, statistic: str) -> float:
    v = np.atleast_1d(np.asarray(v, dtype=np.float64))
    return float(v.mean() if statistic == "mean" else np.median(v))


def _split(b: _Box, h: float, cands: list[np.ndarray] | None) -> tuple[int, float]:
    """The column and radius at which to split a box: at the median of the radii at which
    records enter inside it (a column that has some), else in the middle of the widest
    column among those whose last split changed a count; on the lattice, above ``lo``."""
    q = len(b.lo)
    width = [b.hi[j] - b.lo[j] for j in range(q)]
    if cands is not None:
        inside = [c[(c > b.lo[j]) & (c <= b.hi[j])] if width[j] > 0 else c[:0]
                  for j, c in enumerate(cands)]
        j = int(np.argmax([c.size for c in inside]))
        if inside[j].size:
            c = float(np.sort(inside[j])[(inside[j].size - 1) // 2])
            mid = float(np.ceil(c / h) * h)  # a record at c enters at mid, not before
            return j, min(b.hi[j], max(_above(b.lo[j], h), mid))
    live = [j for j in range(q) if width[j] > 0 and j not in b.inert]
    j = max(live or [j for j in range(q) if width[j] > 0], key=lambda x: width[x])
    a, z = b.lo[j], b.hi[j]
    # the lattice point nearest the middle, above a: [a, mid - h] and [mid, z]
    return j, min(z, max(_above(a, h), float(np.floor((a + (z - a) / 2) / h) * h)))


def lattice_step(top: float) -> float:
    """The step of the radii a refinement evaluates between the grid's points: a power of 2
    about ``2**-42`` of the largest radius (about 2e-13 at ±100 %), so that each of them is far
    above the rounding of a window's bounds (``2**-52`` of the radius) and radii on it are
    matched as their exact values would be."""
    return float(2.0 ** (np.ceil(np.log2(max(top, 2.0**-1000))) - 42))


def _below(x: float, h: float) -> float:
    """The largest point of the lattice of step ``h`` below ``x``."""
    return float((np.ceil(x / h) - 1) * h)


def _above(x: float, h: float) -> float:
    """The smallest point of the lattice of step ``h`` above ``x``."""
    return float((np.floor(x / h) + 1) * h)


def _same(a: PointState, b: PointState) -> bool:
    """Whether two points match the same records (the same counts everywhere)."""
    return a is b or (np.array_equal(a.n, b.n) and (a.f is None or np.array_equal(a.f, b.f)))


def _with(p: tuple, j: int, v: float) -> tuple:
    return (*p[:j], v, *p[j + 1:])


def _cell_width(widths: np.ndarray, vals: np.ndarray, x: float) -> float:
    """The width of the grid cell holding ``x``."""
    i = int(np.clip(np.searchsorted(vals, x, side="right") - 1, 0, len(widths) - 1))
    return float(widths[i])


def _next(heaps: list[list[tuple]], best: list[float], eps: Callable[[int], float],
          split: set[int]) -> tuple | None:
    """The box (``(-bound, order, box)``) with the largest bound above its figure's best, the
    expected match risk's first; boxes already split are dropped."""
    for i in (0, 1):
        h = heaps[i]
        while h and (h[0][1] in split or -h[0][0] <= best[i] + eps(i)):
            if h[0][1] in split:
                heapq.heappop(h)
            else:
                break
        if h and -h[0][0] > best[i] + eps(i):
            return heapq.heappop(h)
    return None
