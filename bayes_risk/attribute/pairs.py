"""Wei & Reiter's (2016) two-record intruder: ``scenario="two_records"``.

See :doc:`/methods/attribute` (Wei & Reiter's two-record intruder).
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from bayes_risk._terminal import progress
from bayes_risk.attribute.candidates import (
    DEFAULT_MAX_CANDIDATES,
    CandidateSet,
    GridSpec,
    too_many_candidates,
)
from bayes_risk.attribute.evaluate import candidate_sets, finish
from bayes_risk.attribute.plan import (
    AnalysisData,
    AttributePlan,
    CandidateGroup,
    PartitionOutput,
    Workspace,
)
from bayes_risk.attribute.priors import Empirical, ModelPredictive, Prior
from bayes_risk.attribute.specs import scenario_arg
from bayes_risk.contract import capabilities
from bayes_risk.data.schema import Schema
from bayes_risk.exceptions import NotSupportedError, ValidationError, arg_name, has_option

__all__ = [
    "PAIR_SUFFIXES",
    "check_pairs",
    "check_pair_prior",
    "check_pair_plan",
    "sum_columns",
    "sum_sets",
    "p_true_unordered",
    "pair_columns",
    "evaluate_pairs",
    "pair_data",
]

#: suffixes of a pair's candidate columns: ``age[1]`` is the first record's age
PAIR_SUFFIXES = ("[1]", "[2]")

#: a pair group's size (pairs × pair candidates) is kept near ``chunk_size`` records with this
#: many candidates each, the memory the single-record engine is calibrated for
_CANDIDATES_PER_RECORD = 35



def _two_records() -> str:
    """The scenario as the caller wrote it (``scenario='two_records'`` in Python,
    ``--scenario two-records`` on the command line)."""
    return scenario_arg("two_records")

def pair_columns(vary: Sequence[str]) -> list[str]:
    """The pair's candidate columns: ``vary`` for the first record, then for the second."""
    return [f"{c}{s}" for s in PAIR_SUFFIXES for c in vary]


def check_pairs(pairs: Any, n: int) -> np.ndarray:
    """``pairs`` (``ScenarioSpec.pairs``, given: the spec requires them) as a ``[P, 2]`` int
    array of distinct pairs of distinct row positions."""
    hint = "pairs must be a sequence of (i, j) row positions (0-based), e.g. [(0, 1), (2, 5)]"
    try:
        arr = np.asarray(list(pairs) if not isinstance(pairs, np.ndarray) else pairs)
    except TypeError:
        raise ValidationError(f"{hint}. Got {type(pairs).__name__}.",
                              code="INVALID_ARGUMENT") from None
    if arr.ndim != 2 or arr.shape[1] != 2 or arr.shape[0] == 0:
        raise ValidationError(f"{hint}. Got an array of shape {arr.shape}.",
                              code="INVALID_ARGUMENT")
    if arr.dtype == bool or not (np.issubdtype(arr.dtype, np.integer) or (
        np.issubdtype(arr.dtype, np.floating) and np.all(arr == np.round(arr))
    )):
        raise ValidationError(f"{hint}; got values of type {arr.dtype}.", code="INVALID_ARGUMENT")
    arr = arr.astype(np.int64)
    bad = np.flatnonzero((arr < 0).any(axis=1) | (arr >= n).any(axis=1))
    if bad.size:
        raise ValidationError(
            f"pairs[{int(bad[0])}] = {tuple(arr[bad[0]].tolist())} names a row outside "
            f"0..{n - 1} of the original.",
            code="RECORD_OUT_OF_RANGE"
        )
    same = np.flatnonzero(arr[:, 0] == arr[:, 1])
    if same.size:
        raise ValidationError(
            f"pairs[{int(same[0])}] = {tuple(arr[same[0]].tolist())} names one record twice; a "
            f"pair is two different records (for one record use {scenario_arg('worst_case')})."
        )
    key = np.sort(arr, axis=1)
    _, first, counts = np.unique(key, axis=0, return_index=True, return_counts=True)
    if np.any(counts > 1):
        k = int(first[np.flatnonzero(counts > 1)[0]])
        raise ValidationError(
            f"the pair {tuple(arr[k].tolist())} is listed twice in pairs (in some order)."
        )
    return arr


def check_pair_prior(prior: Prior) -> None:
    """Refuse a prior that reads the other records (the pair's other record is unknown)."""
    if isinstance(prior, (Empirical, ModelPredictive)):
        raise NotSupportedError(
            f"prior {prior.label()!r} reads the other records' values, and the two-record "
            "intruder does not know the pair's other record; use 'uniform', "
            "'truth-weighted:K' or user weights over the pair's candidates.",
            code="OPTION_CONFLICT"
        )


def check_pair_plan(plan: AttributePlan, pairs: np.ndarray) -> None:
    """What the two-record scenario needs from the model and the records."""
    model = plan.model.model
    if plan.estimator.name == "plugin":
        raise NotSupportedError(
            f"{_two_records()} is not available for {type(model).__name__}: a plug-in "
            "likelihood of a tree synthesizer changes the donors of the leaves holding the "
            "record, and two records sharing a leaf do not change it independently (methods "
            "page 'Attribute disclosure risk', Wei & Reiter's two-record intruder).",
            code="MODEL_UNSUITED",
        )
    if getattr(model, "model_class", "O") != "P":
        raise NotSupportedError(
            f"{_two_records()} needs a class P model; {type(model).__name__} is class O "
            "(a record's synthetic values depend on its own confidential values given Θ), "
            "whose own-record term is derived for one unknown record only (methods page "
            "'Attribute disclosure risk', Wei & Reiter's two-record intruder; for the Poisson "
            "mixtures MM and TCMM the intruder who knows the sum of the two largest values of "
            "a column is largest_value_loglik(..., scenario='two_largest_sum')).",
            code="MODEL_UNSUITED",
        )
    if plan.compat is not None:
        raise ValidationError(
            "compat='AttributeRiskCalculation' reproduces the R package, which has no "
            "two-record scenario; leave compat at None.",
            code="INVALID_ARGUMENT"
        )
    members = np.unique(pairs)
    miss = plan.data.orig.iloc[members][plan.data.vary].isna().to_numpy().any(axis=1)
    if miss.any():
        raise NotSupportedError(
            f"record {int(members[np.flatnonzero(miss)[0]])} has a missing synthesized value; "
            "the two-record scenario evaluates records with observed values only.",
            code="MISSING_VALUES",
        )
    flags = model.synthesized_records_ if capabilities(model).partial_synthesis else None
    if flags is not None:  # None: every record was synthesized
        kept = members[~np.asarray(flags, dtype=bool)[members]]
        if kept.size:
            raise ValidationError(
                f"record {int(kept[0])} was not synthesized (its values are released as they "
                "are, so the intruder reads them); pair only synthesized records, or evaluate "
                f"the other record alone with {scenario_arg('worst_case')}.",
                code="RECORD_NOT_SYNTHESIZED"
            )


def evaluate_pairs(plan: AttributePlan, pairs: np.ndarray, *, progressbar: bool,
                   sums: Sequence[str] = ()) -> PartitionOutput:
    """Likelihoods, diagnostics and flags of every pair (outputs keyed by pair number)."""
    t_loop = time.perf_counter()
    ws, out, data = Workspace(), PartitionOutput(), plan.data
    size = max(1, plan.chunk_size)
    spec = plan.rule.spec
    limit = spec.max_candidates if spec is not None else DEFAULT_MAX_CANDIDATES
    chunks = [np.arange(a, min(a + size, len(pairs))) for a in range(0, len(pairs), size)]
    counts = [c for c in sums if data.schema[c].type == "count"]
    cand_plan = plan
    if counts and spec is not None:
        # a count column's splits are 0..s whatever its grid: a grid that is never degenerate
        # (the percent grid is, at a true 0) builds the sets whose other columns are used
        grids = {**spec.grids, **{c: GridSpec("additive", 1.0, 1.0, 3) for c in counts}}
        cand_plan = dataclasses.replace(plan, rule=dataclasses.replace(
            plan.rule, spec=dataclasses.replace(spec, grids=grids)))
    for chunk in progress(chunks, total=len(pairs), description="attribute risk (pairs)",
                          unit="pairs", size=len, enabled=progressbar):
        members = np.unique(pairs[chunk])
        csets = dict(zip(members.tolist(), candidate_sets(cand_plan, members), strict=True))
        unknown = {i: _unknown(plan, cs) for i, cs in csets.items()}
        out.any_unknown = out.any_unknown or any(u.any() for u in unknown.values())
        by_size: dict[tuple[int, int], list[int]] = {}
        for p in chunk:
            i, j = (int(v) for v in pairs[p])
            ci, cj = csets[i], csets[j]
            if sums:
                cs = sum_sets(data, i, j, ci, cj, sums, limit=limit, pair=int(p))
            elif ci.size * cj.size > limit:
                raise too_many_candidates(
                    f"pair {int(p)} (records {i} and {j}) has G = {ci.size} x {cj.size} = "
                    f"{ci.size * cj.size:,} joint candidates", limit)
            else:
                cs = _pair_set(data.vary, ci, cj)
            g = cs.size
            out.candidates[int(p)] = cs
            out.flags[int(p)] = []
            if unknown[i][ci.g0] or unknown[j][cj.g0]:
                out.flags[int(p)] = ["TRUTH_OUTSIDE_SUPPORT"]
                out.skip(int(p), g)
                continue
            by_size.setdefault((g, 1) if sums else (ci.size, cj.size), []).append(int(p))
        for (gi, gj), ps in by_size.items():
            step = max(1, size * _CANDIDATES_PER_RECORD // (gi * gj))
            for a in range(0, len(ps), step):
                sub = np.asarray(ps[a : a + step], dtype=np.int64)
                grp = (_aligned_group(sub, pairs, out.candidates, plan) if sums
                       else _pair_group(sub, pairs, csets, unknown))
                plan.estimator.estimate(plan, grp, ws, out)
    return finish(out, ws, t_loop)


def _unknown(plan: AttributePlan, cs: CandidateSet | np.ndarray) -> np.ndarray:
    """``[..., G]``: candidates at a level the model was never fitted with."""
    data = plan.data
    vals = cs.values if isinstance(cs, CandidateSet) else cs
    out = np.zeros(vals.shape[:-1], dtype=bool)
    for j, c in enumerate(data.vary):
        if data.is_cat[j]:
            out |= vals[..., j] >= data.levels_model[c]
    return out


def _pair_set(vary: Sequence[str], ci: CandidateSet, cj: CandidateSet) -> CandidateSet:
    """The product ``C_i × C_j`` (first record's candidate the slow index)."""
    gi, gj = ci.size, cj.size
    vals = np.concatenate([np.repeat(ci.values, gj, axis=0), np.tile(cj.values, (gi, 1))],
                          axis=1)
    return CandidateSet(tuple(pair_columns(vary)), vals, ci.g0 * gj + cj.g0)


def _pair_group(ps: np.ndarray, pairs: np.ndarray, csets: dict[int, CandidateSet],
                unknown: dict[int, np.ndarray]) -> CandidateGroup:
    """Pairs ``ps`` (same ``(G_i, G_j)``) as one group whose members are their records."""

    def member(k: int) -> CandidateGroup:
        recs = pairs[ps, k]
        return CandidateGroup(
            pos=recs,
            vals=np.stack([csets[int(i)].values for i in recs]),
            g0=np.array([csets[int(i)].g0 for i in recs], dtype=np.int64),
            unknown=np.stack([unknown[int(i)] for i in recs]),
        )

    first, second = member(0), member(1)
    gj = second.n_candidates
    r = ps.size
    vals = np.concatenate(
        [np.repeat(first.vals, gj, axis=1), np.tile(second.vals, (1, first.n_candidates, 1))],
        axis=2,
    )
    unk = (first.unknown[:, :, None] | second.unknown[:, None, :]).reshape(r, -1)
    return CandidateGroup(
        pos=ps, vals=vals, g0=first.g0 * gj + second.g0, unknown=unk,
        weight=np.ones(r, dtype=np.int64), members=(first, second),
    )


def pair_data(plan: AttributePlan, pairs: np.ndarray) -> AttributePlan:
    """The plan as the assembly reads it for pairs: one row per pair, the pair's columns."""
    data = plan.data
    vals = np.concatenate([data.values[pairs[:, 0]], data.values[pairs[:, 1]]], axis=1)
    specs = [dataclasses.replace(data.schema[c], name=f"{c}{s}")
             for s in PAIR_SUFFIXES for c in data.vary]
    pd_ = dataclasses.replace(
        data, schema=Schema(tuple(data.schema.columns) + tuple(specs)),
        vary=pair_columns(data.vary), is_cat=np.concatenate([data.is_cat, data.is_cat]),
        values=vals, scenario="two_records", positions=np.arange(len(pairs), dtype=np.int64),
    )
    return dataclasses.replace(plan, data=pd_)


def sum_columns(data: AnalysisData, known_sums: bool | Sequence[str]) -> list[str]:
    """The columns of ``ScenarioSpec.known_sums``, each a numeric guessed column."""
    numeric = [c for c, cat in zip(data.vary, data.is_cat, strict=True) if not cat]
    if known_sums is True:
        if not numeric:
            raise ValidationError(
                f"{arg_name('known_sums')}: the model synthesizes no count or continuous "
                f"column (guessed columns {data.vary}); a sum applies to numeric columns.",
                code="INVALID_ARGUMENT",
            )
        return numeric
    for c in known_sums:
        if c in numeric:
            continue
        if c not in data.orig.columns:
            why, code = "is not a column the model was fitted to", "UNKNOWN_COLUMN"
        elif c in data.vary:
            why, code = ("is categorical; a sum applies to count and continuous columns",
                         "INVALID_ARGUMENT")
        else:
            why, code = ("is not synthesized (the intruder reads it from the release)",
                         "INVALID_ARGUMENT")
        raise ValidationError(
            f"{arg_name('known_sums')}: column {c!r} {why}; the numeric synthesized columns "
            f"are {numeric}.", code=code,
        )
    return list(known_sums)


def sum_sets(data: AnalysisData, i: int, j: int, ci: CandidateSet, cj: CandidateSet,
             sums: Sequence[str], *, limit: int, pair: int) -> CandidateSet:
    """The pair candidates ``(a, b)`` of records ``i`` and ``j`` consistent with the known sums
    ``y_i + y_j`` of ``sums`` (see :doc:`/methods/attribute`, Wei & Reiter's two-record intruder).
    """
    q = len(data.vary)
    S = [data.vary.index(c) for c in sums]
    N = [k for k in range(q) if k not in S]
    yi, yj = ci.values[ci.g0], cj.values[cj.g0]
    splits, t_split = [], []
    for k in S:
        ab, t = _splits(data, k, yi[k], yj[k], ci.values[:, k], cj.values[:, k])
        splits.append(ab)
        t_split.append(t)
    ni, ti = _distinct_rows(ci.values[:, N], ci.g0)
    nj, tj = _distinct_rows(cj.values[:, N], cj.g0)
    n_split = [len(ab) for ab in splits]
    g = math.prod(n_split) * len(ni) * len(nj)
    if g > limit:
        raise ValidationError(
            f"pair {pair} (records {i} and {j}) has G = {g:,} splits consistent with the known "
            f"sums of {list(sums)} ({' x '.join(map(str, n_split))} splits x "
            f"{len(ni)} x {len(nj)} values of the other columns), more than "
            + (f"max_candidates = {limit:,}" if has_option("max_candidates")
               else f"the limit of {limit:,} candidates")
            + f"; name fewer columns in {arg_name('known_sums')}"
            + (" or raise max_candidates." if has_option("max_candidates") else "."),
            code="TOO_MANY_CANDIDATES",
        )
    idx = np.indices((*n_split, len(ni), len(nj))).reshape(len(S) + 2, -1)
    first, second = np.empty((g, q)), np.empty((g, q))
    for c, (k, ab) in enumerate(zip(S, splits, strict=True)):
        first[:, k], second[:, k] = ab[idx[c], 0], ab[idx[c], 1]
    first[:, N], second[:, N] = ni[idx[-2]], nj[idx[-1]]
    g0 = int(np.ravel_multi_index((*t_split, ti, tj), (*n_split, len(ni), len(nj))))
    return CandidateSet(tuple(pair_columns(data.vary)), np.concatenate([first, second], axis=1),
                        g0)


def _splits(data: AnalysisData, k: int, yi: float, yj: float, vi: np.ndarray, vj: np.ndarray
            ) -> tuple[np.ndarray, int]:
    """``[n, 2]`` splits ``(a, s − a)`` of column ``k``'s pair sum, and the truth's index."""
    c = data.vary[k]
    s, scale = yi + yj, max(abs(yi), abs(yj), 1.0)
    if data.schema[c].type == "count":
        a = np.arange(int(round(s)) + 1, dtype=np.float64)
    else:
        # the candidates of either record, and the splits that leave them to the other one;
        # equal up to rounding (s − (s − v)) is one point, keyed relative to the values' scale
        a = np.concatenate([vi, vj, s - vi, s - vj, [yi, yj]])
        _, first = np.unique(np.rint(a / scale * 1e10), return_index=True)
        a = a[first]
    ab = np.column_stack([a, s - a])
    near = np.abs(ab[:, 0] - yj) <= 1e-10 * scale
    ab[near] = (yj, yi)
    near = np.abs(ab[:, 0] - yi) <= 1e-10 * scale
    ab[near] = (yi, yj)
    if data.schema[c].type != "count" and not (data.orig[c] < 0).any():
        ab = ab[(ab >= 0).all(axis=1)]  # a column with no negative value: both parts >= 0
    ab = np.unique(ab, axis=0)  # ascending in a; one row where the keys split a point
    return ab, int(np.flatnonzero((ab[:, 0] == yi) & (ab[:, 1] == yj))[0])


def _distinct_rows(vals: np.ndarray, g0: int) -> tuple[np.ndarray, int]:
    """The distinct rows of ``vals [G, k]`` in first-appearance order, and row ``g0``'s index."""
    if vals.shape[1] == 0:
        return vals[:1], 0
    _, first, inv = np.unique(vals, axis=0, return_index=True, return_inverse=True)
    order = np.argsort(first)
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    return vals[first[order]], int(rank[np.ravel(inv)[g0]])


def _aligned_group(ps: np.ndarray, pairs: np.ndarray, candidates: dict[int, CandidateSet],
                   plan: AttributePlan) -> CandidateGroup:
    """Pairs ``ps`` of the known-sums intruder: candidate ``g`` is row ``g`` of both members."""
    vals = np.stack([candidates[int(p)].values for p in ps])  # [R, G, 2q]
    g0 = np.array([candidates[int(p)].g0 for p in ps], dtype=np.int64)
    q = vals.shape[2] // 2

    def member(k: int) -> CandidateGroup:
        v = np.ascontiguousarray(vals[:, :, k * q : (k + 1) * q])
        return CandidateGroup(pos=pairs[ps, k], vals=v, g0=g0, unknown=_unknown(plan, v))

    first, second = member(0), member(1)
    return CandidateGroup(pos=ps, vals=vals, g0=g0, unknown=first.unknown | second.unknown,
                          weight=np.ones(ps.size, dtype=np.int64), members=(first, second),
                          aligned=True)


def p_true_unordered(candidates: Sequence[CandidateSet], log_post: Sequence[np.ndarray]
                     ) -> np.ndarray:
    """Per pair, the posterior probability of the unordered pair of true values ``{y_i, y_j}``."""
    out = np.full(len(candidates), np.nan)
    for k, (cs, lp) in enumerate(zip(candidates, log_post, strict=True)):
        p = np.exp(np.asarray(lp, dtype=np.float64))
        q = cs.values.shape[1] // 2
        t = cs.values[cs.g0]
        swap = (cs.values == np.concatenate([t[q:], t[:q]])).all(axis=1)
        swap[cs.g0] = False
        out[k] = p[cs.g0] + p[swap].sum()
    return out
