"""Helpers of ``RandomForestSynthesizer.fit``: replaced records, visit order, groups, forests."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from bayes_risk._constraints import InstanceOf, check_value
from bayes_risk.data.schema import Schema
from bayes_risk.data.validate import require_synthesized
from bayes_risk.exceptions import ValidationError
from bayes_risk.models.trees.base import records_mask

__all__ = ["grouping", "grow_forest", "record_masks", "visit_order"]


def record_masks(records: Any, cols: list[str], n: int) -> dict[str, np.ndarray]:
    """Replaced-record mask of each synthesized column (one selection, or one per column)."""
    if isinstance(records, Mapping):
        require_synthesized(records, cols, "records")
        return {c: records_mask(records.get(c), n, f"records[{c!r}]") for c in cols}
    mk = records_mask(records, n)
    return {c: mk for c in cols}


def visit_order(visit_sequence: Sequence[str] | None, tie_order: str, cols: list[str],
                schema: Schema, masks: Mapping[str, np.ndarray],
                rng: np.random.Generator) -> list[str]:
    """The user's order, else by decreasing number of replaced records, ties by ``tie_order``
    (numeric columns after the categorical ones with ``"fewer_categories"``)."""
    if visit_sequence is not None:
        vs = list(visit_sequence)
        if sorted(vs) != sorted(cols):
            raise ValidationError(
                f"visit_sequence must list exactly the synthesized columns {cols}. Got {vs}.")
        return vs
    amount = {c: int(masks[c].sum()) for c in cols}
    if tie_order == "fewer_categories":
        tie = {c: schema[c].n_levels if schema[c].is_categorical else np.inf for c in cols}
    else:
        perm = rng.permutation(len(cols))
        tie = {c: int(perm[i]) for i, c in enumerate(cols)}
    return sorted(cols, key=lambda c: (-amount[c], tie[c], cols.index(c)))


def grouping(group_by: str | Mapping[str, str] | None, cols: list[str], order: list[str],
             schema: Schema) -> dict[str, str]:
    """``{column: grouping column}`` from ``group_by``, checked against the visit order."""
    gb = group_by
    if gb is None:
        return {}
    if isinstance(gb, str):
        schema.check_columns([gb], "group_by")
        groups = {c: gb for c in cols if c != gb}
    elif isinstance(gb, Mapping):
        groups = {}
        require_synthesized(gb, cols, "group_by")
        for c, g in gb.items():
            check_value(g, InstanceOf(str, "a column name"), f"group_by[{c!r}]")
            schema.check_columns([g], f"group_by[{c!r}]")
            if g == c:
                raise ValidationError(
                    f"group_by[{c!r}]: a column cannot be synthesized within groups of itself.")
            groups[c] = g
    else:
        raise ValidationError(
            f"group_by must be a column name or a mapping {{column: grouping column}}. "
            f"Got {type(gb).__name__}.")
    for c, g in groups.items():
        if not schema[g].is_categorical:
            raise ValidationError(
                f"group_by: grouping column {g!r} is {schema[g].type}; groups are the levels "
                "of a categorical column (bin a numeric column first).")
        if g in cols and order.index(g) > order.index(c):
            raise ValidationError(
                f"group_by: {c!r} is grouped by {g!r}, which is synthesized later in the visit "
                f"order {order}; its genuine values would steer the synthesis of {c!r}. Visit "
                f"{g!r} first (visit_sequence) or group by an unsynthesized column.")
    return groups


def grow_forest(model: Any, numeric: bool, X: np.ndarray, y: np.ndarray, n_preds: int,
                rng: np.random.Generator, label: str) -> tuple[Any, np.ndarray | None]:
    """One forest on ``X``, ``y`` and, with ``oob_only``, its in-bag matrix (trees added by 100
    until every record is out of bag in ``min_oob_trees``)."""
    from sklearn.ensemble import RandomForestClassifier, RandomForestRegressor

    mtry = (max(1, int(np.floor(np.sqrt(n_preds)))) if model.max_features == "sqrt"
            else min(int(model.max_features), n_preds))
    forest_cls, criterion = ((RandomForestRegressor, "squared_error") if numeric
                             else (RandomForestClassifier, "gini"))
    rf = forest_cls(n_estimators=int(model.n_trees), criterion=criterion, max_features=mtry,
                    bootstrap=True, min_samples_leaf=int(model.min_samples_leaf),
                    random_state=int(rng.integers(2**31 - 1)), n_jobs=int(model.n_jobs),
                    warm_start=True)
    rf.fit(X, y)
    if not model.oob_only:
        return rf, None
    cap = 20 * int(model.n_trees)
    while True:
        ib = np.zeros((len(rf.estimators_), len(y)), dtype=bool)
        for b, s in enumerate(rf.estimators_samples_):
            ib[b, s] = True
        if (~ib).sum(axis=0).min() >= model.min_oob_trees:
            return rf, ib
        if rf.n_estimators >= cap:
            raise ValidationError(
                f"column {label!r}: could not reach min_oob_trees={model.min_oob_trees} "
                f"out-of-bag trees for every record with {cap} trees.",
                code="FIT_FAILED")
        rf.n_estimators += 100
        rf.fit(X, y)
