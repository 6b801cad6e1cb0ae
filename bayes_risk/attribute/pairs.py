"""Wei & Reiter's (2016) two-record intruder: ``attribute_risk(..., scenario="two_records")``.

The intruder knows every confidential record except the two of a pair and guesses both jointly
over the product of their candidate sets; for a class P model a pair candidate's importance ratio
is the product of the two records' (:func:`bayes_risk.attribute.likelihoods.model_logp`), so both
estimators and their diagnostics apply per pair. Class O models, tree plug-ins, unsynthesized
records, missing values and priors that read the other records are refused. See
:doc:`/methods/attribute` (Wei & Reiter's two-record intruder).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from bayes_risk._terminal import progress
from bayes_risk.attribute.candidates import DEFAULT_MAX_CANDIDATES, CandidateSet
from bayes_risk.attribute.evaluate import candidate_sets, finish
from bayes_risk.attribute.plan import AttributePlan, CandidateGroup, PartitionOutput, Workspace
from bayes_risk.attribute.priors import Empirical, ModelPredictive, Prior
from bayes_risk.contract import capabilities
from bayes_risk.data.schema import Schema
from bayes_risk.exceptions import NotSupportedError, ValidationError

__all__ = [
    "PAIR_SUFFIXES",
    "check_pairs",
    "check_pair_prior",
    "check_pair_plan",
    "pair_columns",
    "evaluate_pairs",
    "pair_data",
]

#: suffixes of a pair's candidate columns: ``age[1]`` is the first record's age
PAIR_SUFFIXES = ("[1]", "[2]")

#: a pair group's size (pairs × pair candidates) is kept near ``chunk_size`` records with this
#: many candidates each, the memory the single-record engine is calibrated for
_CANDIDATES_PER_RECORD = 35


def pair_columns(vary: Sequence[str]) -> list[str]:
    """The pair's candidate columns: ``vary`` for the first record, then for the second."""
    return [f"{c}{s}" for s in PAIR_SUFFIXES for c in vary]


def check_pairs(pairs: Any, n: int) -> np.ndarray:
    """``pairs`` as an ``[P, 2]`` int array of row positions (distinct pairs of two distinct
    records in ``0..n-1``, else a ``ValidationError``)."""
    hint = "pairs must be a sequence of (i, j) row positions (0-based), e.g. [(0, 1), (2, 5)]"
    if pairs is None:
        raise ValidationError(f"scenario='two_records' needs pairs: {hint}.")
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
            "pair is two different records (for one record use scenario='worst_case')."
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
            f"scenario='two_records' is not available for {type(model).__name__}: a plug-in "
            "likelihood of a tree synthesizer changes the donors of the leaves holding the "
            "record, and two records sharing a leaf do not change it independently (methods "
            "page 'Attribute disclosure risk', Wei & Reiter's two-record intruder).",
            code="MODEL_UNSUITED",
        )
    if getattr(model, "model_class", "O") != "P":
        raise NotSupportedError(
            f"scenario='two_records' needs a class P model; {type(model).__name__} is class O "
            "(a record's synthetic values depend on its own confidential values given Θ), "
            "whose own-record term is derived for one unknown record only (methods page "
            "'Attribute disclosure risk', Wei & Reiter's two-record intruder).",
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
                "the other record alone with scenario='worst_case'.",
                code="RECORD_NOT_SYNTHESIZED"
            )


def evaluate_pairs(plan: AttributePlan, pairs: np.ndarray, *, progressbar: bool) -> PartitionOutput:
    """Likelihoods, diagnostics and flags of every pair (outputs keyed by pair number); pairs
    with the same ``(G_i, G_j)`` are estimated together from their records' likelihoods."""
    t_loop = time.perf_counter()
    ws, out, data = Workspace(), PartitionOutput(), plan.data
    size = max(1, plan.chunk_size)
    spec = plan.rule.spec
    limit = spec.max_candidates if spec is not None else DEFAULT_MAX_CANDIDATES
    chunks = [np.arange(a, min(a + size, len(pairs))) for a in range(0, len(pairs), size)]
    for chunk in progress(chunks, description="attribute risk (pairs)", enabled=progressbar):
        members = np.unique(pairs[chunk])
        csets = dict(zip(members.tolist(), candidate_sets(plan, members), strict=True))
        unknown = {i: _unknown(plan, cs) for i, cs in csets.items()}
        out.any_unknown = out.any_unknown or any(u.any() for u in unknown.values())
        by_size: dict[tuple[int, int], list[int]] = {}
        for p in chunk:
            i, j = (int(v) for v in pairs[p])
            ci, cj = csets[i], csets[j]
            if ci.size * cj.size > limit:
                raise ValidationError(
                    f"pair {int(p)} (records {i} and {j}) has G = {ci.size} x {cj.size} = "
                    f"{ci.size * cj.size:,} joint candidates, more than max_candidates = "
                    f"{limit:,}; use smaller candidate sets (e.g. candidates='one-variable').",
                    code="TOO_MANY_CANDIDATES",
                )
            out.candidates[int(p)] = _pair_set(data.vary, ci, cj)
            out.flags[int(p)] = []
            if unknown[i][ci.g0] or unknown[j][cj.g0]:
                out.flags[int(p)] = ["TRUTH_OUTSIDE_SUPPORT"]
                out.skip(int(p), ci.size * cj.size)
                continue
            by_size.setdefault((ci.size, cj.size), []).append(int(p))
        for (gi, gj), ps in by_size.items():
            step = max(1, size * _CANDIDATES_PER_RECORD // (gi * gj))
            for a in range(0, len(ps), step):
                sub = np.asarray(ps[a : a + step], dtype=np.int64)
                plan.estimator.estimate(plan, _pair_group(sub, pairs, csets, unknown), ws, out)
    return finish(out, ws, t_loop)


def _unknown(plan: AttributePlan, cs: CandidateSet) -> np.ndarray:
    """``[G]``: candidates at a level the model was never fitted with (probability 0)."""
    data = plan.data
    out = np.zeros(cs.size, dtype=bool)
    for j, c in enumerate(data.vary):
        if data.is_cat[j]:
            out |= cs.values[:, j] >= data.levels_model[c]
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
