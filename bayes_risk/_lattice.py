"""The knowledge sweep of identification and attribute risk over subsets of the intruder's known
variables: the subsets evaluated (the lattice up to ``max_size``, then the greedy path), the
per-subset table and its Pareto frontier, the drivers (Shapley values or the risk without each
variable) and the per-level contributions. A measure gives only its evaluation of a subset
(:class:`Evaluator`); see :doc:`/user_guide/knowledge`."""

from __future__ import annotations

import itertools
import math
import warnings
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
import pandas as pd

from bayes_risk._constraints import (
    Flag,
    InstanceOf,
    Interval,
    Options,
    SequenceOf,
    check_fields,
    check_params,
    check_value,
    checked,
)
from bayes_risk._terminal import progress
from bayes_risk.data.missing import missing_mask
from bayes_risk.data.validate import require_distinct
from bayes_risk.exceptions import CALLER, BayesRiskWarning, ValidationError, arg_name, has_option
from bayes_risk.results.knowledge import (
    ATTRIBUTE_SWEEP_MEASURES,
    SHAPLEY_MEASURES,
    SWEEP_MEASURES,
    KnowledgeSweepResult,
    subset_label,
)

__all__ = ["LatticeSpec", "Evaluator", "planned", "sweep", "check_max_size", "shapley_values",
           "level_labels"]

#: per kind: the file-level figures of a subset (the table's columns) and the columns of
#: ``levels`` (the risk summed by level, the second sum and its share)
#: the candidates of a sweep: at most 20 (2**20 subsets bound its lattice)
_CANDIDATES = SequenceOf(InstanceOf(str, "a variable"), "candidate variables", max_len=20)
_MEASURES = {"identification": SWEEP_MEASURES, "attribute": ATTRIBUTE_SWEEP_MEASURES}
_LEVELS = {"identification": ("expected_match_risk", "true_matches", "share_true_matches"),
           "attribute": ("p_true", "truth_first", "share_truth_first")}
#: per kind, the words of the Shapley note: the set, one of its members, the empty set
_WORDS = {"identification": ("candidates", "variable", "the intruder who knows nothing"),
          "attribute": ("columns", "column", "the worst case, no own value known")}

@dataclass(frozen=True)
class LatticeSpec:
    """The subsets of the known variables a knowledge sweep evaluates
    (:func:`~bayes_risk.identification.known_sweep`,
    :func:`~bayes_risk.attribute.attribute_known_sweep`: ``lattice=``), and the bands of its
    per-level contributions.

    Parameters
    ----------
    max_size : int, optional
        Largest subset size evaluated exhaustively, from 1 to the number of candidates
        (default: every size, the full lattice; checked when the sweep starts).
    greedy_beyond : bool
        Follow the greedy forward path from the riskiest subset of size ``max_size`` to the
        full set.
    bands : int
        Quantile bands of a numeric variable in the per-level contributions (default: deciles).
    max_subsets : int
        Largest number of subsets evaluated (default 4,096); more is an error.

    Examples
    --------
    >>> LatticeSpec(max_size=2).max_subsets
    4096
    """

    max_size: int | None = None
    greedy_beyond: bool = field(default=True, metadata=checked(Flag()))
    bands: int = field(default=10, metadata=checked(Interval(int, 1)))
    max_subsets: int = field(default=4096, metadata=checked(Interval(int, 1)))

    __post_init__ = check_fields  # the fields' table; max_size needs the candidates


#: a subset's warnings: code -> (the class to emit it with, ``None``: not emitted; its text)
Warned = dict[str, tuple[type | None, str]]


class Evaluator(Protocol):
    """What one measure gives the sweep: its ``kind`` (``"identification"``, ``"attribute"``),
    the progress bar's ``description``, the ``warnings`` already given for the whole sweep (a
    shared preparation's: code -> text), and its evaluation of subsets."""

    kind: str
    description: str
    warnings: dict[str, str]

    def evaluate(self, subsets: list[frozenset]
                 ) -> Iterator[tuple[frozenset, dict[str, Any], Warned]]:
        """Evaluate every subset, yielding it with its file-level figures and its warnings
        (keeping the full set's result for :meth:`level_inputs`)."""

    def level_inputs(self) -> tuple[pd.DataFrame, set[str], np.ndarray, np.ndarray]:
        """Under the full set: the targets' values of the candidates, the categorical ones, and
        per target the risk and the second figure that ``levels`` sums."""

    def settings(self) -> dict[str, Any]:
        """The settings of the subsets' runs (after :meth:`evaluate`)."""


def check_max_size(max_size: Any, candidates: Sequence[str], argument: str) -> int:
    """A knowledge sweep's ``max_size`` (``None``: every candidate), checked before any work: an
    integer from 1 to the number of ``candidates`` (named by ``argument`` in the message)."""
    n_c = len(candidates)
    if max_size is None:
        return n_c
    # at most the number of columns in ``argument``
    return check_value(max_size, Interval(int, 1, n_c), arg_name("max_size"))


def planned(candidates: Any, *, kind: str, measure: str, lattice: LatticeSpec,
            argument: str = "candidates") -> tuple[list[str], int, list[frozenset]]:
    """The candidates (at least one, each once, at most 20), ``max_size`` and the subsets a
    sweep evaluates first: every subset of at most ``max_size`` candidates (the empty one
    first), then the full set minus each candidate and the full set; the sweep's arguments
    checked before any work."""
    cands = [str(c) for c in ([candidates] if isinstance(candidates, str) else candidates or ())]
    check_value(cands, _CANDIDATES, arg_name(argument))
    require_distinct(cands, argument, what="variable")
    check_params(dict(measure=measure), {"measure": Options(SHAPLEY_MEASURES[kind])})
    size, n_c = check_max_size(lattice.max_size, cands, argument), len(cands)
    n_planned = sum(math.comb(n_c, k) for k in range(size + 1))
    max_subsets = lattice.max_subsets
    if n_planned > max_subsets:
        lower = [f"lower {arg_name('max_size')} (the greedy path continues beyond it)"
                 ] if has_option("max_size") else []
        if has_option("max_subsets"):
            lower.append(f"raise {arg_name('max_subsets')}")
        raise ValidationError(
            f"{arg_name(argument)}: {n_planned} subsets of {n_c} candidates up to size "
            f"{size}, more than the {max_subsets} a sweep evaluates; "
            + (" or ".join(lower) if lower else "give fewer candidates") + ".",
            code="INVALID_ARGUMENT")
    full = frozenset(cands)
    order = [frozenset(s) for k in range(size + 1) for s in itertools.combinations(cands, k)]
    return cands, size, list(dict.fromkeys([*order, *(full - {c} for c in cands), full]))


def sweep(ev: Evaluator, cands: list[str], planned: list[frozenset], *, max_size: int,
          lattice: LatticeSpec, measure: str, synthesized: Sequence[str],
          extra: Mapping[str, Any], progressbar: bool) -> KnowledgeSweepResult:
    """The knowledge sweep of ``ev``'s measure: the ``planned`` subsets, then the greedy path
    beyond ``max_size`` (``lattice.max_size`` resolved by :func:`planned`), tabulated; the
    drivers' ``synthesized`` column from ``synthesized``; ``extra`` settings after the sweep's
    own (or in their place). The subsets' warnings are given once per code for the sweep."""
    lat = _Lattice(ev, cands)
    lat.run_many(planned, progressbar)
    greedy = _greedy_path(lat, max_size, measure) if lattice.greedy_beyond else []
    complete = max_size >= len(cands) - 1  # every subset evaluated
    drivers, note = _drivers(lat, ev.kind, synthesized, complete)
    settings = ev.settings()
    settings.update(candidates=cands, synthesized=list(synthesized), max_size=int(max_size),
                    greedy_beyond=bool(lattice.greedy_beyond), measure=measure,
                    bands=int(lattice.bands), lattice_complete=complete)
    settings.update(extra)
    settings["n_subsets"] = len(lat.done)
    warn = dict(ev.warnings)
    for code, where in lat.where.items():  # once per code for the whole sweep
        cat, first = lat.first[code]
        shown = "; ".join(f"{{{w}}}" for w in where[:5]) + (" …" if len(where) > 5 else "")
        warn[code] = f"in {len(where)} of {len(lat.done)} subsets ({shown}); in the first: {first}"
        if cat is not None and issubclass(cat, BayesRiskWarning):
            warnings.warn(cat(f"{code}: {warn[code]}", code=code), skip_file_prefixes=CALLER)
        elif cat is not None:
            warnings.warn(f"{code}: {warn[code]}", cat, skip_file_prefixes=CALLER)
    return KnowledgeSweepResult(
        candidates=tuple(cands), synthesized=tuple(synthesized), measure=measure,
        table=_table(lat, ev.kind, measure, greedy), drivers=drivers,
        levels=_levels(ev, cands, lattice.bands), shapley_note=note, settings=settings,
        warnings=tuple(warn), warning_details=warn, kind=ev.kind,
    )


class _Lattice:
    """The subsets evaluated so far: their figures and the subsets each warning came from."""

    def __init__(self, ev: Evaluator, cands: list[str]) -> None:
        self.ev, self.cands = ev, cands
        self.done: dict[frozenset, dict[str, Any]] = {}
        #: per warning code: the subsets' labels, and its class and text in the first of them
        self.where: dict[str, list[str]] = {}
        self.first: Warned = {}

    def run_many(self, subsets: Sequence[frozenset], progressbar: bool = False) -> None:
        """Evaluate the subsets not yet evaluated."""
        todo = [s for s in dict.fromkeys(subsets) if s not in self.done]
        for s, figures, warned in progress(self.ev.evaluate(todo), total=len(todo),
                                           description=self.ev.description, unit="column sets",
                                           enabled=progressbar):
            self.done[s] = figures
            for code, (cat, text) in warned.items():
                self.where.setdefault(code, []).append(subset_label(s, self.cands))
                if code not in self.first or (self.first[code][0] is None and cat is not None):
                    self.first[code] = (cat, text)  # the first emitted, else the first

    def value(self, s: frozenset, measure: str) -> float:
        v = self.done[s][measure]
        return -np.inf if v is None or not np.isfinite(v) else float(v)

    def order(self, s: frozenset) -> tuple:
        """Sort key of a subset: size, then the candidates' order."""
        return (len(s), sorted(self.cands.index(c) for c in s))

    def argmax(self, subsets: Sequence[frozenset], measure: str) -> frozenset:
        """The subset of highest ``measure``; the first of them in the given order on a tie."""
        return max(subsets, key=lambda s: self.value(s, measure))


def _greedy_path(lat: _Lattice, max_size: int, measure: str) -> list[frozenset]:
    """The greedy forward path: from the riskiest subset of size ``max_size``, add at each step
    the variable that raises ``measure`` most (the earlier candidate on a tie)."""
    cands = lat.cands
    if max_size >= len(cands) - 1:  # the lattice is complete: nothing beyond it
        return []
    cur = lat.argmax(sorted((s for s in lat.done if len(s) == max_size), key=lat.order),
                     measure)
    path = [cur]
    while len(cur) < len(cands):
        steps = [cur | {c} for c in cands if c not in cur]
        lat.run_many(steps)
        cur = lat.argmax(steps, measure)
        path.append(cur)
    return path


def _table(lat: _Lattice, kind: str, measure: str, greedy: list[frozenset]) -> pd.DataFrame:
    """One row per subset evaluated: its label, size, candidates, figures and place on the
    greedy path and the frontier."""
    rows = []
    for s in sorted(lat.done, key=lat.order):
        row: dict[str, Any] = {"known": subset_label(s, lat.cands), "n_known": len(s)}
        row.update({c: c in s for c in lat.cands})
        row.update({k: lat.done[s][k] for k in _MEASURES[kind]})
        row["greedy_step"] = greedy.index(s) if s in greedy else -1
        rows.append(row)
    tab = pd.DataFrame(rows)
    tab["frontier"] = frontier(tab["n_known"].to_numpy(), tab[measure].to_numpy(dtype=float))
    return tab


def _drivers(lat: _Lattice, kind: str, synthesized: Sequence[str], lattice: bool
             ) -> tuple[pd.DataFrame, str]:
    """Per candidate: Shapley values over the complete lattice, and the risk without it (from
    the full set); how the Shapley values were computed, or why not."""
    cands, done = lat.cands, lat.done
    full = frozenset(cands)
    ranked = SHAPLEY_MEASURES[kind]
    noun, item, empty = _WORDS[kind]
    instead = f"; the risk without each {item} (from the full set) is given instead"
    shap: dict[str, dict[str, float]] = {}
    if lattice and frozenset() not in done:
        note = ("Shapley values not computed: they need the risk of the intruder who knows "
                "nothing, which has no figure under unknown membership" + instead)
    elif lattice:
        note = f"exact Shapley values over every subset of the {noun} (the empty set: {empty})"
        for m in ranked:
            shap[m] = shapley_values({s: float(r[m]) for s, r in done.items()}, cands)
    else:
        note = (f"Shapley values not computed: they need every subset of the {noun}, and the "
                "sweep stopped exhaustive evaluation at max_size" + instead)
    rows = []
    for c in cands:
        row: dict[str, Any] = {"variable": c, "synthesized": c in synthesized}
        for m in ranked:
            v_full = float(done[full][m])
            v_wo = float(done[full - {c}][m])
            row.update({f"shapley_{m}": shap[m][c] if shap else np.nan, f"{m}_without": v_wo,
                        f"{m}_removed": v_full - v_wo,
                        f"{m}_removed_share": (v_full - v_wo) / v_full if v_full else np.nan})
        rows.append(row)
    key = f"shapley_{ranked[0]}" if shap else f"{ranked[0]}_removed"
    tab = pd.DataFrame(rows).sort_values(key, ascending=False, kind="stable")
    return tab.reset_index(drop=True), note


def _levels(ev: Evaluator, cands: list[str], bands: int) -> pd.DataFrame:
    """The targets' risks under the full set summed by level of every candidate."""
    values, categorical, risk, second = ev.level_inputs()
    risk_name, second_name, second_share = _LEVELS[ev.kind]
    total, N, s_total = float(risk.sum()), len(risk), float(second.sum())
    rows = []
    for c in cands:
        lab = level_labels(values[c], c in categorical, bands)
        codes = np.asarray(lab.cat.codes)
        for j, level in enumerate(lab.cat.categories):
            idx = np.flatnonzero(codes == j)
            r, n, s2 = float(risk[idx].sum()), len(idx), float(second[idx].sum())
            rows.append({
                "variable": c, "level": str(level), "n_targets": n,
                "share_targets": n / N if N else np.nan, risk_name: r,
                "share_risk": r / total if total else np.nan,
                "risk_ratio": (r / total) / (n / N) if total and n else np.nan,
                second_name: s2, second_share: s2 / s_total if s_total else np.nan,
            })
    return pd.DataFrame(rows)


def frontier(n_known: np.ndarray, risk: np.ndarray) -> np.ndarray:
    """Subsets on the Pareto frontier of risk (higher) against variables known (fewer); the empty
    set is not a candidate."""
    out = np.zeros(len(risk), dtype=bool)
    ok = np.isfinite(risk) & (n_known > 0)
    for i in np.flatnonzero(ok):
        dominated = ok & (n_known <= n_known[i]) & (risk >= risk[i]) \
            & ((n_known < n_known[i]) | (risk > risk[i]))
        out[i] = not dominated.any()
    return out


def shapley_values(value: Mapping[frozenset, float], players: Sequence[str]) -> dict[str, float]:
    """Exact Shapley values of a game given on every subset of ``players``.

    ``φ_i = Σ_{S ⊆ N∖{i}} |S|! (n − |S| − 1)! / n! · (v(S ∪ {i}) − v(S))`` (Shapley 1953);
    the values sum to ``v(N) − v(∅)``.
    """
    n = len(players)
    fact = [math.factorial(k) for k in range(n + 1)]
    out = {}
    for p in players:
        others = [q for q in players if q != p]
        phi = 0.0
        for k in range(n):
            w = fact[k] * fact[n - k - 1] / fact[n]
            for comb in itertools.combinations(others, k):
                s = frozenset(comb)
                phi += w * (value[s | {p}] - value[s])
        out[p] = phi
    return out


def level_labels(v: pd.Series, categorical: bool, bands: int) -> pd.Series:
    """Level of every target: its value (categorical, or few distinct values) or its quantile
    band; a missing value is the level ``"missing"``."""
    v = v.reset_index(drop=True)
    miss = missing_mask(v)
    out = pd.Series(["missing"] * len(v), dtype=object)
    obs = v[~miss]
    if categorical or obs.nunique() <= bands:
        vals = obs.astype(object)
        order = sorted(vals.unique(), key=lambda x: (str(type(x)), x))
        lab = vals.map(lambda x: str(x))
        out[~miss] = lab
        cats = [str(x) for x in order] + (["missing"] if miss.any() else [])
    else:
        x = pd.to_numeric(obs, errors="coerce").astype(np.float64)
        q = pd.qcut(x, bands, duplicates="drop")
        lab = q.astype(str)
        out[~miss] = lab
        cats = [str(i) for i in q.cat.categories] + (["missing"] if miss.any() else [])
    return pd.Series(pd.Categorical(out, categories=cats))
