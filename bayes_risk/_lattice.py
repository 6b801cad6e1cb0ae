"""Subsets of the intruder's known variables for the knowledge sweeps of identification and
attribute risk: the lattice, its Pareto frontier, the greedy path and Shapley values."""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

import numpy as np
import pandas as pd

from bayes_risk.data.missing import missing_mask
from bayes_risk.exceptions import ValidationError, arg_name, has_option

__all__ = ["candidate_list", "subset_order", "subset_label", "greedy_path", "frontier",
           "shapley_values", "level_labels", "planned_subsets", "check_max_size"]


class _Sweep(Protocol):
    done: dict[frozenset, dict[str, Any]]

    def run_many(self, subsets: Sequence[frozenset]) -> None: ...

    def value(self, s: frozenset, measure: str) -> float: ...


def check_max_size(max_size: Any, candidates: Sequence[str], argument: str) -> int:
    """A knowledge sweep's ``max_size`` (``None``: every candidate), checked before any work.

    Parameters
    ----------
    max_size : int or None
        The largest subset evaluated exhaustively.
    candidates : sequence of str
        The sweep's candidate columns.
    argument : str
        The argument that names them, as messages name it.

    Returns
    -------
    int

    Raises
    ------
    ValidationError
        Not an integer from 1 to the number of candidates (``INVALID_ARGUMENT``).
    """
    n_c = len(candidates)
    if max_size is None:
        return n_c
    if isinstance(max_size, bool) or not isinstance(max_size, (int, np.integer)) or not (
            1 <= max_size <= n_c):
        raise ValidationError(
            f"{arg_name('max_size')} must be an integer between 1 and the number of columns in "
            f"{arg_name(argument)} ({n_c}). Got {max_size!r}.", code="INVALID_ARGUMENT")
    return int(max_size)


def planned_subsets(cands: list[str], max_size: int, max_subsets: int,
                    argument: str = "candidates") -> list[frozenset]:
    """Every subset of at most ``max_size`` candidates (the empty one first), then the full set
    minus each candidate and the full set; an error beyond ``max_subsets``."""
    n_c = len(cands)
    n_planned = sum(math.comb(n_c, k) for k in range(max_size + 1))
    if n_planned > max_subsets:
        lower = [f"lower {arg_name('max_size')} (the greedy path continues beyond it)"
                 ] if has_option("max_size") else []
        if has_option("max_subsets"):
            lower.append(f"raise {arg_name('max_subsets')}")
        raise ValidationError(
            f"{arg_name(argument)}: {n_planned} subsets of {n_c} candidates up to size "
            f"{max_size}, more than the {max_subsets} a sweep evaluates; "
            + (" or ".join(lower) if lower else "give fewer candidates") + ".",
            code="INVALID_ARGUMENT")
    order = [frozenset(s) for k in range(max_size + 1) for s in itertools.combinations(cands, k)]
    full = frozenset(cands)
    order += [full - {c} for c in cands] + [full]
    return list(dict.fromkeys(order))


def candidate_list(candidates: Any, argument: str = "candidates") -> list[str]:
    """The candidate variables as a list of names (at least one, each once, at most 20)."""
    if isinstance(candidates, str):
        candidates = [candidates]
    cands = [str(c) for c in (candidates or ())]
    if not cands:
        raise ValidationError(f"{arg_name(argument)} is empty: give the candidate known "
                              "variables.", code="INVALID_ARGUMENT")
    if len(set(cands)) != len(cands):
        raise ValidationError(f"{arg_name(argument)} lists a variable twice: {cands}.",
                              code="INVALID_ARGUMENT")
    if len(cands) > 20:
        raise ValidationError(f"{arg_name(argument)}: at most 20 candidate variables. "
                              f"Got {len(cands)}.", code="INVALID_ARGUMENT")
    return cands


def subset_order(s: frozenset, cands: list[str]) -> tuple:
    """Sort key of a subset: size, then the candidates' order."""
    return (len(s), sorted(cands.index(c) for c in s))


def greedy_path(sweep: _Sweep, cands: list[str], max_size: int, measure: str) -> list[frozenset]:
    """The greedy forward path: from the riskiest subset of size ``max_size``, add at each step
    the variable that raises ``measure`` most (the earlier candidate on a tie)."""
    if max_size >= len(cands) - 1:  # the lattice is complete: nothing beyond it
        return []
    size_k = sorted((s for s in sweep.done if len(s) == max_size),
                    key=lambda s: subset_order(s, cands))
    cur = _argmax(size_k, sweep, measure)
    path = [cur]
    while len(cur) < len(cands):
        steps = [cur | {c} for c in cands if c not in cur]
        sweep.run_many(steps)
        cur = _argmax(steps, sweep, measure)
        path.append(cur)
    return path


def _argmax(subsets: Sequence[frozenset], sweep: _Sweep, measure: str) -> frozenset:
    """The subset of highest ``measure``; the first of them in the given order on a tie."""
    best = subsets[0]
    for s in subsets[1:]:
        if sweep.value(s, measure) > sweep.value(best, measure):
            best = s
    return best


def subset_label(s: frozenset, cands: list[str]) -> str:
    """The label of a subset: its variables in the candidates' order, ``"(none)"`` if empty."""
    return ", ".join(c for c in cands if c in s) or "(none)"


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
