"""Candidate log-likelihoods ``log p(candidate | Θ_h)`` from a model, by its fastest route."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from bayes_risk.attribute.plan import (
    AnalysisData,
    CandidateGroup,
    CandidateRule,
    ModelAccess,
    Workspace,
)
from bayes_risk.contract import capabilities
from bayes_risk.data.validate import decode_values
from bayes_risk.exceptions import ValidationError

__all__ = ["model_access", "model_logp", "candidate_rows", "neighbourhood_index"]


def model_access(model: Any) -> ModelAccess:
    """The likelihood routes ``model`` offers (checked once)."""
    info = capabilities(model)
    return ModelAccess(model=model, neighbourhood=info.has("neighbourhood"),
                       buffer=info.has("neighbourhood_buffer"), candidate=info.has("candidate"))


def model_logp(access: ModelAccess, data: AnalysisData, rule: CandidateRule,
               group: CandidateGroup, draw_indices: np.ndarray | None, ws: Workspace
               ) -> np.ndarray:
    """``[R, H, G]`` log p(candidate | Θ_h) of one model (pair candidates summed)."""
    if group.members is not None:
        first, second = group.members
        if group.aligned:  # the members' candidates are splits, not the one-variable neighbourhood
            rule = dataclasses.replace(rule, nb_index=None)
        # a copy: the second call may reuse the model's output buffer (Workspace.buffer)
        a = np.array(model_logp(access, data, rule, first, draw_indices, ws))
        b = model_logp(access, data, rule, second, draw_indices, ws)
        if group.aligned:
            return a + b
        r, h = a.shape[:2]
        return (a[:, :, :, None] + b[:, :, None, :]).reshape(r, h, -1)
    t = time.perf_counter()
    try:
        arr = _neighbourhood_logp(access, data, rule, group, draw_indices, ws)
        if arr is not None:
            return arr
        return _candidate_logp(access, data, group, draw_indices)
    finally:
        ws.timing["model_likelihood_s"] += time.perf_counter() - t


def _neighbourhood_logp(access: ModelAccess, data: AnalysisData, rule: CandidateRule,
                        group: CandidateGroup, draw_indices: np.ndarray | None, ws: Workspace
                        ) -> np.ndarray | None:
    """The fast route, or ``None`` when it does not apply or the model declines it."""
    if rule.nb_index is None or not access.neighbourhood:
        return None
    rows, missing = ws.records(data, group)
    if missing:
        return None  # the record likelihood marginalises the missing values
    mdl, r = access.model, group.size
    try:
        kw: dict[str, Any] = {"draw_indices": draw_indices}
        if access.buffer:
            # one output buffer per model, reused for every chunk
            hm = int(mdl.n_draws) if draw_indices is None else int(np.size(draw_indices))
            kw["out"] = ws.buffer(("logp", id(mdl)), (hm, r, int(mdl.neighbourhood_size())))
        arr = np.asarray(mdl.neighbourhood_loglik(rows, **kw), dtype=np.float64)
    except NotImplementedError:
        return None
    nb_index = rule.nb_index
    if arr.ndim != 3 or arr.shape[1] != r or arr.shape[2] < nb_index.max() + 1:
        raise ValidationError(
            f"model.neighbourhood_loglik returned shape {arr.shape}; expected (H, {r}, G).",
            code="MODEL_OUTPUT_INVALID"
        )
    if not (rule.nb_all and arr.shape[2] == nb_index.size):
        arr = arr[:, :, nb_index]  # (the full neighbourhood in order needs no copy)
    return np.moveaxis(arr, 0, 1)


def _candidate_logp(
    access: ModelAccess, data: AnalysisData, group: CandidateGroup, draw_indices: np.ndarray | None
) -> np.ndarray:
    """Per-record candidate likelihoods, or the record likelihood of full candidate rows."""
    mdl, vals, unknown, pos = access.model, group.vals, group.unknown, group.pos
    r, g, _ = vals.shape
    safe = vals.copy()
    if unknown.any():
        truth = vals[np.arange(r), group.g0]  # [R, q]
        safe = np.where(unknown[:, :, None], truth[:, None, :], vals)
    if access.candidate:
        kw = {} if draw_indices is None else {"draw_indices": draw_indices}
        out = np.stack([
            np.asarray(mdl.candidate_loglik(data.orig.iloc[int(pos[k])],
                                            decode_values(safe[k], data.vary, data.schema), **kw),
                       dtype=np.float64)
            for k in range(r)
        ])
    else:
        rows = candidate_rows(data.orig, pos, safe, data.vary, data.schema)
        ll = np.asarray(mdl.record_loglik(rows, draw_indices=draw_indices), dtype=np.float64)
        out = ll.reshape(ll.shape[0], r, g).transpose(1, 0, 2)
    if unknown.any():
        out = np.where(unknown[:, None, :], -np.inf, out)
    return out


def candidate_rows(
    orig: pd.DataFrame, pos: np.ndarray, vals: np.ndarray, columns: Sequence[str], schema: Any
) -> pd.DataFrame:
    """Full records ``[R*G]``: each record's row with the varying columns set to candidates."""
    r, g, q = vals.shape
    rows = orig.iloc[np.repeat(pos, g)].reset_index(drop=True)
    flat = vals.reshape(r * g, q)
    for j, c in enumerate(columns):
        spec = schema[c]
        dtype = orig[c].dtype
        if spec.is_categorical:
            lv = np.asarray(list(spec.levels), dtype=object)
            k = flat[:, j].astype(np.int64)
            v = np.where(k >= 0, lv[np.maximum(k, 0)], None)  # code -1: missing
            if isinstance(dtype, pd.CategoricalDtype):
                rows[c] = pd.Categorical(v, dtype=dtype)
            else:
                try:
                    rows[c] = pd.Series(v, dtype=dtype)
                except (TypeError, ValueError):
                    rows[c] = pd.Series(v)
        else:
            v = flat[:, j]
            if pd.api.types.is_integer_dtype(dtype) and np.all(v == np.round(v)):
                rows[c] = v.astype(dtype)
            else:
                rows[c] = v
    return rows


def neighbourhood_index(vary: Sequence[str], syn_cols: Sequence[str], d: dict[str, int]
                        ) -> np.ndarray | None:
    """Positions of the one-variable candidates in the model's neighbourhood, or None."""
    if any(c not in syn_cols for c in vary):
        return None
    idx = [0]
    pos = 1
    for c in syn_cols:
        w = d[c] - 1
        if c in vary:
            idx.extend(range(pos, pos + w))
        pos += w
    return np.asarray(idx, dtype=np.int64)
