"""Sensitivity of identification risk to the intruder's knowledge: :func:`known_sweep`.

The data are encoded once; a subset's problem is that encoding restricted to its columns (results
equal separate ``identification_risk`` runs bit for bit). See :doc:`/methods/identification` and
:doc:`/user_guide/knowledge`.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Literal

import numpy as np
import pandas as pd

from bayes_risk._constraints import Requires, Within, check_relations
from bayes_risk._lattice import LatticeSpec, Warned, planned, shapley_values, sweep
from bayes_risk._memory import check_memory, working_bytes
from bayes_risk._specs import as_spec
from bayes_risk.data.schema import CATEGORICAL_TYPES
from bayes_risk.exceptions import (
    DataWarning,
    SchemaError,
    ValidationError,
    arg_name,
    interruptible,
)
from bayes_risk.executors import as_executor
from bayes_risk.identification import engine as _engine
from bayes_risk.identification import masks as _masks
from bayes_risk.identification.assemble import assemble
from bayes_risk.identification.evaluate import run_engine
from bayes_risk.identification.plan import IdentificationPlan
from bayes_risk.identification.prepare import (
    check_original,
    default_fallback,
    inferred_synthesized,
    prepare,
)
from bayes_risk.identification.problem import positions, restricted_columns, without_columns
from bayes_risk.identification.radius import SWEEP_DEFAULTS, sweep_options
from bayes_risk.results.knowledge import SWEEP_MEASURES, KnowledgeSweepResult

__all__ = ["known_sweep", "KnowledgeSweepResult", "shapley_values", "SWEEP_MEASURES"]

#: arguments of ``identification_risk`` a sweep passes on, with their defaults
_OPTIONS: dict[str, Any] = {**SWEEP_DEFAULTS, "aggregation": None}


@interruptible
def known_sweep(
    original: pd.DataFrame,
    synthetic: Any,
    *,
    candidates: Sequence[str],
    synthesized: Sequence[str] | None = None,
    lattice: LatticeSpec | None = None,
    measure: Literal["expected_match_risk", "true_match_rate_targets"] = "expected_match_risk",
    progressbar: bool = True,
    executor: Any = None,
    **kwargs: Any,
) -> KnowledgeSweepResult:
    """Identification risk over subsets of the intruder's candidate known variables.

    Every subset of ``candidates`` up to ``lattice.max_size`` variables, then a greedy path to
    the full set; see :doc:`/user_guide/knowledge`.

    Parameters
    ----------
    original : DataFrame
        Confidential data.
    synthetic : list of DataFrame or SyntheticData
        The released datasets.
    candidates : sequence of str
        The candidate known variables (at least one; at most 20).
    synthesized : sequence of str, optional
        The candidates that were synthesized. Default: the release's schema roles, else every
        candidate whose released values differ from the original's in some dataset.
    lattice : LatticeSpec, optional
        See :class:`~bayes_risk.identification.LatticeSpec` (default: the full lattice).
    measure : {"expected_match_risk", "true_match_rate_targets"}
        The risk the greedy path and the frontier rank subsets by.
    progressbar : bool
        Show progress over the subsets.
    executor : None, distributed.Client or Executor, optional
        Where the matching engine runs (as in ``identification_risk``).
    **kwargs
        Further arguments of ``identification_risk``; each subset uses the radii of its own
        columns.

    Returns
    -------
    KnowledgeSweepResult
        ``.table`` (one row per subset evaluated), ``.frontier``, ``.drivers``, ``.levels``.

    Raises
    ------
    ValidationError
        Bad candidates, ``lattice.max_size`` or arguments, too many subsets, or user population
        counts.

    Examples
    --------
    >>> import warnings
    >>> import pandas as pd
    >>> y = pd.DataFrame({"sex": ["M", "M", "M", "F", "F"], "race": ["W", "W", "B", "W", "B"]})
    >>> z1 = y.assign(race=["W", "B", "B", "W", "W"])
    >>> z2 = y.assign(race=["W", "W", "W", "B", "B"])
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")  # ZERO_UNIQUE: sex alone gives no unique match
    ...     res = known_sweep(y, [z1, z2], candidates=["sex", "race"], progressbar=False)
    >>> dict(zip(res.table["known"], res.table["expected_match_risk"]))
    {'(none)': 1.0, 'sex': 2.0, 'race': 1.5, 'sex, race': 2.5}
    >>> res.drivers[["variable", "shapley_expected_match_risk"]].to_numpy().tolist()
    [['sex', 1.0], ['race', 0.5]]
    """
    check_original(original)
    lattice = as_spec(lattice, LatticeSpec, "lattice")
    cands, max_size, subsets = planned(candidates, kind="identification", measure=measure,
                                       lattice=lattice)
    absent = [c for c in cands if c not in original.columns]
    if absent:  # named here, not as the known columns each subset passes on
        raise SchemaError(
            f"{arg_name('candidates')}: column(s) {absent} are not in the original (columns: "
            f"{[str(c) for c in original.columns]}).", code="UNKNOWN_COLUMN")
    options = sweep_options(kwargs, _OPTIONS, "known_sweep")
    if options["population"].counts is not None and not isinstance(
            options["population"].counts, str):
        raise ValidationError(
            "known_sweep: population counts given by the user are keyed by one set of known "
            "columns; a sweep over known sets needs PopulationSpec(counts='loglinear_original' or "
            "'loglinear_synthetic') (estimated for every subset) or survey weights "
            "(PopulationSpec(weights=...)).",
            code="INVALID_ARGUMENT"
        )
    if type(options["replicates"]).__name__ == "PosteriorReplicates":
        raise ValidationError(
            "known_sweep takes replicates as a list of arrays or DataFrames (draw them once "
            "with PosteriorReplicates and pass the draws), not a PosteriorReplicates object.",
            code="INVALID_ARGUMENT"
        )
    syn = _synthesized(original, synthetic, cands, synthesized, options["replicates"])
    known_s = [c for c in cands if c in syn]
    ev = _Evaluator(original, synthetic, cands, [c for c in cands if c not in syn], known_s,
                    options, as_executor(executor))
    return sweep(ev, cands, [s for s in subsets if s or ev.nothing], max_size=max_size,
                 lattice=lattice, measure=measure,
                 synthesized=known_s, progressbar=progressbar,
                 extra={"shared_encoding": ev.shared, "match_masks": ev.masks})


#: :func:`known_sweep`'s arguments against each other
_RELATIONS = (Within("synthesized", "candidates"),
              Requires("replicates", "synthesized", code="INVALID_ARGUMENT",
                       why="the candidates the replicates replicate"))


def _synthesized(original: pd.DataFrame, synthetic: Any, cands: list[str],
                 synthesized: Sequence[str] | None, replicates: Any) -> set[str]:
    """The synthesized candidates: as given, from the release's schema roles, or found by
    comparing the released values with the original's."""
    check_relations(dict(synthesized=synthesized, candidates=cands, replicates=replicates),
                    _RELATIONS)
    if synthesized is not None:
        return {str(c) for c in ([synthesized] if isinstance(synthesized, str) else synthesized)}
    return inferred_synthesized(original, synthetic, cands)


class _Evaluator:
    """One preparation for every candidate and the runs of the subsets on it."""

    kind = "identification"
    description = "knowledge sweep"

    def __init__(self, original, synthetic, cands, known_us, known_s, options, ex) -> None:
        self.original, self.synthetic, self.options, self.ex = original, synthetic, options, ex
        self.cands, self.known_us, self.known_s = cands, known_us, known_s
        # the preparation's warnings reach the caller once, for the whole sweep
        self.plan = prepare(original, synthetic, known_us, known_s, **options)
        self.warnings: dict[str, str] = dict(self.plan.warnings)
        st, rule = self.plan.settings, self.plan.rule
        self.shared = (st.compat is None and st.membership == "known"
                       and rule.shape in ("rectangle", "ellipse"))
        #: the intruder who knows nothing has a figure under known membership only (unknown:
        #: the population count of the empty key is the population size, not estimated here)
        self.nothing = st.membership == "known"
        #: the subsets are matched together through match masks (per-dataset aggregation, no
        #: fallback: a subset's counts and own-record flags are all its measures need)
        self.masks = (self.shared and st.aggregation == "per_dataset"
                      and self.options["match"].fallback in (None, "none")
                      and _masks.usable(self.plan.prep, rule))
        self.full: Any = None

    def evaluate(self, todo: list[frozenset]
                 ) -> Iterator[tuple[frozenset, dict[str, Any], Warned]]:
        """Evaluate ``todo`` (through match masks where they serve), yielding each subset."""
        masked = [s for s in todo if s and self.masks]
        # a batch's counts and flags ([N_T, R] each per subset) stay below the masks' budget,
        # beside one subset's measures and the kept result of the subset of every candidate
        prep = self.plan.prep
        cells = prep.n_targets * prep.R
        if masked:
            check_memory((_engine.CELL_BYTES + 9) * cells, "the number of synthetic datasets or "
                         "of targets", what=f"the per-dataset tables of {prep.n_targets:,} "
                         f"targets x {prep.R} datasets")
        size = max(1, working_bytes(_masks.BUDGET_BYTES, reserve=_engine.CELL_BYTES * cells)
                   // max(1, 9 * cells))
        for a in range(0, len(masked), size):
            batch = masked[a:a + size]
            cols = [[c for c in self.cands if c in s] for s in batch]
            outs = _masks.subset_matches(self.plan.prep, self.plan.rule, cols)
            for s, (n_match, own) in zip(batch, outs, strict=True):
                plan = self._subset_plan(s)
                out = _engine.per_dataset_output(n_match, own, plan.prep.in_sample, inv_f=None,
                                                 strategy=plan.settings.strategy)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    res = assemble(plan, plan.rule, out)
                figures = self._figures(s, res)
                del res  # not held while the next subset is assembled
                yield figures
        for s in todo:
            if not (s and self.masks):
                yield self._figures(s, self._run(s))

    def _run(self, s: frozenset) -> Any:
        # the sweep holds one subset's columns and matching indexes at a time
        with self.plan.prep.cache_scope():
            if not s:
                plan = self._nothing_plan()
            elif self.shared:
                plan = self._subset_plan(s)
            else:
                plan = self._own_plan(s)
            return self._evaluate(plan, s)

    def _figures(self, s: frozenset, res: Any) -> tuple[frozenset, dict[str, Any], Warned]:
        if s == frozenset(self.cands):
            self.full = res
        # the intruder who knows nothing has no unique match by construction: not a finding
        warned = {code: (DataWarning, res.warning_details.get(code, code))
                  for code in (res.warnings if s else ()) if code not in self.plan.warnings}
        return s, {k: res.file.get(k) for k in SWEEP_MEASURES}, warned

    def _evaluate(self, plan: IdentificationPlan, s: frozenset):
        rule = plan.rule
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if s and not rule.exact_s and not rule.radius_s and plan.prep.R > 1 \
                    and plan.settings.membership == "known" and plan.prep.released is None:
                out = self._unsynthesized_only(plan)
            else:
                out = run_engine(plan, rule, self.ex, plan.prep, progressbar=False,
                                 keep_prob=False)
            return assemble(plan, rule, out)

    def _unsynthesized_only(self, plan: IdentificationPlan):
        """A subset of unsynthesized variables matches the same in every replicate: the engine
        runs on one replicate (pooling ``R`` equal replicates changes nothing)."""
        R = plan.prep.R
        p1 = _one_replicate(plan)
        out = run_engine(p1, plan.rule, self.ex, p1.prep, progressbar=False, keep_prob=False)
        if isinstance(out, _engine.PerDatasetOutput):  # [N_T, 1] tables repeated R times
            return dataclasses.replace(out, **{k: np.repeat(getattr(out, k), R, axis=1)
                                               for k in ("c", "T", "declared", "p_out")})
        return out

    def _nothing_plan(self) -> IdentificationPlan:
        """The intruder who knows nothing: every record released matches every target, so one
        dataset, evaluated per dataset, gives every figure (pooled: ``N_T x n`` probabilities);
        every dataset when rows were removed (each releases other records)."""
        plan = self._subset_plan(frozenset())
        if plan.prep.released is None:
            plan = _one_replicate(plan)
        settings = dataclasses.replace(plan.settings, aggregation="per_dataset", fallback="none")
        return dataclasses.replace(plan, settings=settings)

    def _own_plan(self, s: frozenset) -> IdentificationPlan:
        """A separate preparation of the subset (rules that do not restrict column by column)."""
        o, match = dict(self.options), self.options["match"]
        o["match"] = match.replace(radius=_subset_radius(match.radius, s),
                                   r_min=_subset_radius(match.r_min, s))
        if not set(self.plan.rule.radius_cols) & s:
            # matched exactly on every column: the radius and the shape do not apply (a
            # separate run would refuse a radius with no radius column)
            o["match"] = match.replace(radius=None, r_min=None, shape=None,
                                       radius_type="percentage")
        us = [c for c in self.known_us if c in s]
        sy = [c for c in self.known_s if c in s]
        if o["replicates"] is not None:
            o["replicates"] = _subset_replicates(o["replicates"], self.known_s, sy)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return prepare(self.original, self.synthetic, us, sy, **o)

    def _subset_plan(self, s: frozenset) -> IdentificationPlan:
        """The full preparation restricted to the columns of ``s`` (what a separate run on
        ``s`` would prepare: codes and radius values are per column)."""
        plan, prep, rule = self.plan, self.plan.prep, self.plan.rule
        sub = without_columns(rule, [c for c in rule.exact_cols + rule.radius_cols
                                     if c not in s])
        t_e = positions(rule.exact_cols, sub.exact_cols)
        t_r = positions(rule.radius_cols, sub.radius_cols)
        drop = None
        if prep.tgt_drop is not None:
            drop = prep.tgt_drop[:, t_e + [len(rule.exact_cols) + j for j in t_r]]
            drop = drop if drop.any() else None
        sprep = dataclasses.replace(
            prep, rule=sub, exact_sizes={c: prep.exact_sizes[c] for c in sub.exact_cols},
            **restricted_columns(prep, rule, sub),
            tgt_exact=prep.tgt_exact[:, t_e], tgt_radius=prep.tgt_radius[:, t_r],
            confidential_radius={c: v for c, v in prep.confidential_radius.items() if c in s},
            tgt_drop=drop, _cache={},
        )
        st = plan.settings
        us = [c for c in st.known_unsynthesized if c in s]
        sy = [c for c in st.known_synthesized if c in s]
        fallback = st.fallback
        if self.options["match"].fallback is None:  # the default, resolved for the subset's columns
            fallback = default_fallback(st.aggregation, st.membership, us)
        settings = dataclasses.replace(st, known_unsynthesized=us, known_synthesized=sy,
                                       fallback=fallback)
        return dataclasses.replace(plan, data=dataclasses.replace(plan.data, prep=sprep),
                                   rule=sub, settings=settings)

    def settings(self) -> dict[str, Any]:
        d = self.plan.settings_dict()
        for k in ("known_unsynthesized", "known_synthesized", "match_rule"):
            d.pop(k, None)
        d["match_rule"] = self.plan.rule.to_dict()
        return d

    def level_inputs(self) -> tuple[pd.DataFrame, set[str], np.ndarray, np.ndarray]:
        """The targets (or the original), and per target its risk and true matches."""
        K = np.asarray(self.full.K, dtype=np.float64)
        targets = self.options["population"].targets
        sk = self.plan.data.schema
        return (self.original if targets is None else targets,
                {c for c in self.cands if sk[c].type in CATEGORICAL_TYPES},
                np.asarray(self.full.record_IR, dtype=np.float64),
                K.mean(axis=1) if K.ndim == 2 else K)


def _one_replicate(plan: IdentificationPlan) -> IdentificationPlan:
    """``plan`` with its first replicate only."""
    one = dataclasses.replace(plan.prep, R=1, rep_exact_s=plan.prep.rep_exact_s[:1],
                              rep_radius_s=plan.prep.rep_radius_s[:1], _cache={})
    return dataclasses.replace(plan, data=dataclasses.replace(plan.data, prep=one))


def _subset_radius(radius: Any, s: frozenset) -> Any:
    if isinstance(radius, Mapping):
        out = {c: v for c, v in radius.items() if c in s}
        return out or None
    return radius


def _subset_replicates(replicates: Any, known_s: list[str], sy: list[str]) -> Any:
    """User replicates restricted to the subset's synthesized columns."""
    idx = [known_s.index(c) for c in sy]
    return [r[sy] if isinstance(r, pd.DataFrame) else np.asarray(r)[:, idx] for r in replicates]
