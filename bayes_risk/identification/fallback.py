"""The fallback sets of the pooled aggregation: the records matching each target on the known
unsynthesized columns only (:class:`FallbackSets`), enumerated on demand. See
:doc:`/methods/identification`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from bayes_risk.identification import engine as _engine
from bayes_risk.identification.index import ReplicateIndex, TargetBounds, spans, target_bounds
from bayes_risk.identification.matching import MatchRule
from bayes_risk.identification.problem import Prepared, drop_groups, target_problem

__all__ = ["FallbackSets", "GroupedFallbackSets", "fallback_sets", "merge_target_major"]


@dataclass
class FallbackSets:
    """The records matching each target on the known unsynthesized columns only (fallback rule),
    enumerated on demand from the index of those columns."""

    index: ReplicateIndex
    tkey: np.ndarray  # [N_T]
    bounds: TargetBounds  # [N_T, q_us]

    def members(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Sizes ``[len(rows)]`` and members (target-major, ascending within a target)."""
        return self.index.match(self.tkey[rows], self.bounds.rows(rows), True)

    def contains(self, rows: np.ndarray, records: np.ndarray) -> np.ndarray:
        """Whether ``records[i]`` belongs to the set of target ``rows[i]``."""
        return self.index.own(self.tkey[rows], self.bounds.rows(rows), records)

    def sizes(self, rows: np.ndarray | slice = slice(None)) -> np.ndarray:
        """Sizes of the sets of the targets ``rows`` (default: every target)."""
        return self.index.match(self.tkey[rows], self.bounds.rows(rows), False)[0]


@dataclass
class GroupedFallbackSets:
    """:class:`FallbackSets` of groups of targets matched on different known columns
    (``missing_known="any"``), on the targets' own numbering."""

    groups: list[tuple[np.ndarray, FallbackSets]]  # the targets of each group, its sets
    group: np.ndarray = field(init=False)  # [N_T] group of every target
    local: np.ndarray = field(init=False)  # [N_T] its position in the group

    def __post_init__(self) -> None:
        N = sum(rows.size for rows, _ in self.groups)
        self.group = np.empty(N, dtype=np.int64)
        self.local = np.empty(N, dtype=np.int64)
        for g, (rows, _) in enumerate(self.groups):
            self.group[rows] = g
            self.local[rows] = np.arange(rows.size)

    def members(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Sizes ``[len(rows)]`` and members (target-major, ascending within a target)."""
        rows = np.asarray(rows, dtype=np.int64)
        per = []
        for g, (_, fs) in enumerate(self.groups):
            sel = np.flatnonzero(self.group[rows] == g)
            if sel.size:
                per.append((sel, *fs.members(self.local[rows[sel]])))
        return merge_target_major(rows.size, per)

    def contains(self, rows: np.ndarray, records: np.ndarray) -> np.ndarray:
        """Whether ``records[i]`` belongs to the set of target ``rows[i]``."""
        out = np.zeros(len(rows), dtype=bool)
        grp = self.group[rows]
        for g, (_, fs) in enumerate(self.groups):
            m = grp == g
            if m.any():
                out[m] = fs.contains(self.local[rows[m]], records[m])
        return out

    def sizes(self) -> np.ndarray:
        """Size of every target's set ``[N_T]``."""
        out = np.zeros(self.group.size, dtype=np.int64)
        for rows, fs in self.groups:
            out[rows] = fs.sizes()
        return out


def merge_target_major(N: int, parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]]
                       ) -> tuple[np.ndarray, np.ndarray]:
    """One target-major list (counts ``[N]``, records) from the ``(positions, counts,
    records)`` of groups of targets, ``positions`` their places in ``0..N-1``."""
    cnt = np.zeros(N, dtype=np.int64)
    for pos, c, _ in parts:
        cnt[pos] = c
    start = np.cumsum(cnt) - cnt
    out = np.empty(int(cnt.sum()), dtype=np.int64)
    for pos, c, recs in parts:  # each group's records at its targets' places
        out[spans(start[pos], c)] = recs
    return cnt, out


def fallback_sets(prep: Prepared, rule: MatchRule) -> FallbackSets | GroupedFallbackSets:
    """:class:`FallbackSets` of every target of ``prep`` (:class:`GroupedFallbackSets` when
    some targets are not matched on some known columns, ``Prepared.tgt_drop``)."""
    if prep.tgt_drop is not None:
        groups = []
        for rows, drop in drop_groups(prep, rule):
            gp, gr = target_problem(prep, rule, drop, prep.tgt_exact[rows],
                                    prep.tgt_radius[rows], prep.in_sample[rows], prep.rec[rows])
            groups.append((rows, fallback_sets(gp, gr)))
        return GroupedFallbackSets(groups)
    q_us = len(rule.radius_us)
    return FallbackSets(
        index=_engine.us_index(prep, rule),
        tkey=_engine.target_keys(prep, rule)[1],
        bounds=target_bounds(prep, rule).cols(slice(0, q_us)),
    )
