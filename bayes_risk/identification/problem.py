"""The encoded identification problem (:class:`Prepared`) and its restriction to groups of
targets matched on the known columns they hold (:func:`drop_groups`, :func:`target_problem`).
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from bayes_risk.identification.matching import MatchRule

__all__ = ["Prepared", "TargetPartition", "drop_groups", "target_problem", "without_columns",
           "positions", "restricted_columns"]


@dataclass
class Prepared:
    """Encoded records, replicates and targets: exact columns as integer codes in the narrowest
    type that holds them (``-1``: absent from every released table), radius columns as
    float64 (or, for one rule, int32 codes: ``coded``)."""

    n: int
    R: int
    rule: MatchRule
    exact_sizes: dict[str, int]
    rec_exact_us: np.ndarray  # [n, e_us]
    rec_radius_us: np.ndarray  # [q_us, n]
    rep_exact_s: list[np.ndarray]  # R x [n, e_s]
    rep_radius_s: list[np.ndarray]  # R x [q_s, n]
    tgt_exact: np.ndarray  # [N_T, e_us + e_s]
    tgt_radius: np.ndarray  # [N_T, q_us + q_s]
    confidential_radius: dict[str, np.ndarray]
    in_sample: np.ndarray  # bool [N_T]
    rec: np.ndarray  # int64 [N_T], -1 out of sample
    #: bool [N_T, e + q]: the known columns a target is not matched on (``None``: none)
    tgt_drop: np.ndarray | None = None
    #: R x bool [n]: the records whose own row each dataset releases, when rows were removed
    #: after synthesis (``None``: every record's); a row not released matches no target
    released: list[np.ndarray] | None = None
    #: one run only: a replicate's index is not kept once the per-dataset engine used it
    single_run: bool = False
    #: rules the plan is evaluated on (a radius search's grid points): the compiled kernels'
    #: load (:func:`~bayes_risk.identification.engine.use_compiled`) is repaid by all of them
    runs: int = 1
    #: the rule the radius columns are coded for (``None``: float64 values): the records' and
    #: replicates' values as int32 codes that keep every comparison with the targets' windows,
    #: ``tgt_radius`` the windows' codes ``[lo | hi]`` (:func:`.index.code_windows`)
    coded: MatchRule | None = None
    _cache: dict = field(default_factory=dict, repr=False)

    @property
    def n_targets(self) -> int:
        return self.tgt_exact.shape[0]

    def cached(self, key: tuple, make: Callable[[], Any]) -> Any:
        """``make()``, built once and kept in the cache under ``key``."""
        if key not in self._cache:
            self._cache[key] = make()
        return self._cache[key]

    @contextlib.contextmanager
    def cache_scope(self) -> Iterator[None]:
        """Drop at the end of the block the columns and indexes cached in it (one subset's of a
        knowledge sweep, which serve no other subset; the sort orders of unsynthesized columns
        may, and are kept)."""
        held = set(self._cache)
        try:
            yield
        finally:
            for key in [k for k in self._cache if k not in held and k[:1] != ("us_order",)]:
                del self._cache[key]

    def release_replicates(self) -> None:
        """Drop the replicates' encoded columns and indexes once a one-run engine has run (the
        measures do not read them); the unsynthesized index is kept."""
        self.rep_exact_s = []
        self.rep_radius_s = []
        for key in [k for k in self._cache if isinstance(k, tuple) and k[0] != "us"]:
            del self._cache[key]

    def release_encoding(self) -> None:
        """Drop every encoded column and index once a one-run per-dataset engine has run (its
        measures come from the counts and own-record flags alone): at 10^6 targets 0.1 GB
        fewer while the measures are computed, the run's peak."""
        self.release_replicates()
        self._cache.clear()
        # new empty arrays, not views (a view keeps its table); the targets' rows stay counted
        self.rec_exact_us = np.empty((0, self.rec_exact_us.shape[1]), self.rec_exact_us.dtype)
        self.rec_radius_us = np.empty((self.rec_radius_us.shape[0], 0), np.float64)
        self.tgt_exact = np.empty((self.n_targets, 0), self.tgt_exact.dtype)
        self.tgt_radius = np.empty((0, self.tgt_radius.shape[1]), self.tgt_radius.dtype)
        self.confidential_radius = {}


def drop_groups(prep: Prepared, rule: MatchRule
                ) -> list[tuple[np.ndarray, tuple[str, ...]]]:
    """The targets grouped by the known columns they are not matched on:
    ``[(rows, dropped columns)]`` (one group of every target when none is dropped)."""
    N = prep.n_targets
    if prep.tgt_drop is None:
        return [(np.arange(N, dtype=np.int64), ())]
    cols = rule.exact_cols + rule.radius_cols
    patterns, pid = np.unique(prep.tgt_drop, axis=0, return_inverse=True)
    order = np.argsort(pid.ravel(), kind="stable")
    bounds = np.searchsorted(pid.ravel()[order], np.arange(len(patterns) + 1))
    return [(order[bounds[p]:bounds[p + 1]],
             tuple(c for c, d in zip(cols, pattern, strict=True) if d))
            for p, pattern in enumerate(patterns)]


def target_problem(pool: Prepared, rule: MatchRule, drop: Sequence[str],
                   tgt_exact: np.ndarray, tgt_radius: np.ndarray, in_sample: np.ndarray,
                   rec: np.ndarray) -> tuple[Prepared, MatchRule]:
    """The record pool with the given targets, and the rule they are matched with: without the
    columns ``drop`` they miss (the pool restricted to the others, cached on the pool)."""
    if drop:  # matched on the known columns where the targets' values are not missing
        sub = without_columns(rule, drop)
        tgt_exact = tgt_exact[:, positions(rule.exact_cols, sub.exact_cols)]
        tgt_radius = tgt_radius[:, positions(rule.radius_cols, sub.radius_cols)]
        pool, rule = _restricted(pool, rule, sub), sub
    # the pool's cache (replicate indexes) is shared by every group of targets
    prep = dataclasses.replace(
        pool, tgt_exact=tgt_exact, tgt_radius=tgt_radius, in_sample=in_sample, rec=rec,
        tgt_drop=None, _cache=pool._cache,
    )
    return prep, rule


def without_columns(rule: MatchRule, drop: Sequence[str]) -> MatchRule:
    """``rule`` without the columns in ``drop``."""
    keep = lambda cols: tuple(c for c in cols if c not in drop)  # noqa: E731
    return dataclasses.replace(
        rule, exact_us=keep(rule.exact_us), exact_s=keep(rule.exact_s),
        radius_us=keep(rule.radius_us), radius_s=keep(rule.radius_s),
        radius={c: v for c, v in rule.radius.items() if c not in drop},
        r_min={c: v for c, v in rule.r_min.items() if c not in drop},
    )


def positions(cols: Sequence[str], keep: Sequence[str]) -> list[int]:
    """The positions of ``keep`` in ``cols``."""
    return [list(cols).index(c) for c in keep]


def restricted_columns(pool: Prepared, rule: MatchRule, sub: MatchRule) -> dict[str, Any]:
    """The records' and replicates' encoded columns of ``sub`` (some of ``rule``'s columns)."""
    e_us, e_s = positions(rule.exact_us, sub.exact_us), positions(rule.exact_s, sub.exact_s)
    r_us, r_s = positions(rule.radius_us, sub.radius_us), positions(rule.radius_s, sub.radius_s)
    return dict(rec_exact_us=pool.rec_exact_us[:, e_us],
                rep_exact_s=[a[:, e_s] for a in pool.rep_exact_s],
                rec_radius_us=pool.rec_radius_us[r_us],
                rep_radius_s=[a[r_s] for a in pool.rep_radius_s])


def _restricted(pool: Prepared, rule: MatchRule, sub: MatchRule) -> Prepared:
    """The record pool on the columns of ``sub`` (cached on the pool)."""
    arrays = pool.cached(("columns", sub.exact_us, sub.exact_s, sub.radius_us, sub.radius_s),
                         lambda: restricted_columns(pool, rule, sub))
    return dataclasses.replace(pool, **arrays, _cache=pool._cache)


@dataclass
class TargetPartition:
    """One partition of the targets and what the engine needs to evaluate it."""

    tgt_exact: np.ndarray
    tgt_radius: np.ndarray
    in_sample: np.ndarray
    rec: np.ndarray
    inv_f: np.ndarray | None
    rule: MatchRule
    aggregation: str
    strategy: str | tuple[str, float]  # plan.Strategy
    fallback: str
    progressbar: bool = False
    #: known columns the partition's targets are not matched on (their missing values)
    drop: tuple[str, ...] = ()
    #: keep the pooled probabilities ``π`` (``False``: the measures only, the knowledge sweep)
    keep_prob: bool = True
