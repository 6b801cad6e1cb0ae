"""The work of :meth:`CARTSynthesizer.fit <bayes_risk.models.trees.cart.CARTSynthesizer.fit>`:
settings, one tree per synthesized column, kernel bandwidths (Wang & Reiter 2012)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from bayes_risk._constraints import Interval, Options, check_params, check_value
from bayes_risk._numeric import decimals_of
from bayes_risk._rng import RandomSeed, replayable_seed, spawn
from bayes_risk.data.schema import Schema, infer_schema
from bayes_risk.data.validate import require_frame, require_synthesized
from bayes_risk.exceptions import NotSupportedError, ValidationError
from bayes_risk.models.trees.base import prepare_schema, records_mask
from bayes_risk.models.trees.cart_state import CARTState, FittedTable, LeafDraw
from bayes_risk.models.trees.missing import (
    design_inputs,
    encoded_values,
    kind_codes,
    missing_layout,
    n_kinds,
)
from bayes_risk.models.trees.regression import NUMERIC_METHODS, REGRESSION_METHODS, RegressionColumn
from bayes_risk.models.trees.seqtree import Design, SeqTree
from bayes_risk.models.trees.spec import SynthesisSpec
from bayes_risk.models.trees.spec_ctree import CtreeColumn
from bayes_risk.models.trees.spec_forest import ForestColumn

__all__ = ["check_settings", "data_resolution", "fit", "observed_values",
           "silverman"]

#: the constraint table of a CART synthesizer's plain settings
_SETTINGS = {
    "min_leaf": Interval(int, 1), "max_depth": [Interval(int, 1), None],
    "prune_to_diversity": [Interval(int, 1), None], "n_jobs": Interval(int, 1),
    "min_deviance": Interval(float, 0, 1, closed="left"),
    "donor": Options(("bayes_bootstrap", "uniform"), listed=True),
    "unroutable": Options(("climb", "random_descent"), listed=True),
}


def check_settings(model: Any) -> None:
    """Check the settings of a CART synthesizer (naming the bad one)."""
    check_params(model, _SETTINGS)
    SynthesisSpec.coerce(model.spec)


def smoothed_columns(model: Any, schema: Schema, order: list[str]) -> list[str]:
    """The kernel-smoothed columns named by the ``smoothing`` setting, checked."""
    sm = model.smoothing
    if sm is False or sm is None:
        return []
    numeric = [c for c in order if not schema[c].is_categorical]
    if sm is True:
        return numeric
    cols = [sm] if isinstance(sm, str) else list(sm)
    require_synthesized(cols, order, "smoothing", code="INVALID_ARGUMENT")
    for c in cols:
        if schema[c].is_categorical:
            raise ValidationError(
                f"smoothing: column {c!r} is {schema[c].type}; kernel smoothing applies to "
                "numeric (count/continuous) columns only.",
                code="WRONG_DTYPE")
    return cols


def _check_spec_columns(regression: dict[str, str], spec: Any, smoothed: Sequence[str],
                        layout: dict) -> None:
    """Refuse what a spec's regression, ``rf`` and ``ctree`` columns cannot take: smoothing, and
    the missing values their methods do not model."""
    for c in regression:
        if c in smoothed:
            raise ValidationError(f"smoothing: column {c!r} is drawn by {regression[c]!r}; "
                                  "kernel smoothing applies to CART columns.",
                                  code="INVALID_ARGUMENT")
        if regression[c] == "logreg" and c in layout:
            raise NotSupportedError(f"column {c!r} is drawn by 'logreg' and has missing values: "
                                    "the missing value is a third level (synthpop's too, whose "
                                    "logreg then fails); use 'polyreg' or 'cart'.",
                                    code="MISSING_VALUES")
        if regression[c] == "ctree":
            gaps = [v for v in (c, *spec.predictors[c]) if v in layout]
            if gaps:  # party sends a missing input with the majority: not built here
                raise NotSupportedError(
                    f"column {c!r} is drawn by 'ctree' and {gaps} have missing values: the "
                    "package's ctree does not take them (party sends a record with a missing "
                    "input to the larger child, and synthpop pads a missing outcome); use "
                    "'cart' or 'rf', which do.", code="MISSING_VALUES")


def fit(model: Any, data: pd.DataFrame, schema: Schema | None,
        synthesized: Sequence[str] | None, records: Any, random_seed: RandomSeed) -> CARTState:
    """The work of :meth:`CARTSynthesizer.fit` (documented there): the fitted state (the
    model's ``fit_call_``, ``n_records_`` and fitted table set)."""
    from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

    check_settings(model)
    random_seed = model._fit_seed(random_seed)
    spec = None
    if model.spec is not None:  # synthpop-style: the spec decides the order and the predictors
        require_frame(data, 'data')
        spec = SynthesisSpec.coerce(model.spec).resolve(
            infer_schema(data) if schema is None else schema, synthesized)
        synthesized = spec.synthesized
    schema, order = prepare_schema(data, schema, synthesized, allow_missing=True)
    smoothed = smoothed_columns(model, schema, order)
    n = len(data)
    if n < 2:
        raise ValidationError(f"data must have at least 2 records. Got {n}.",
                              code="TOO_FEW_RECORDS")
    mask = records_mask(records, n)
    unsyn = [c for c in schema.names if c not in order]
    # columns with missing values (empty, or a declared code): {} for complete data
    layout = missing_layout(data, schema)
    for c in order:
        if layout.get(c, {}).get("type") == "two_step" and \
                not (kind_codes(data[c].to_numpy(dtype=np.float64, na_value=np.nan),
                                layout[c]["codes"]) == 0).any():
            raise ValidationError(
                f"column {c!r} has no observed value (every cell is empty or a missing-value "
                "code); expected at least one value to synthesize from.",
                code="MISSING_VALUES")
    values = encoded_values(data, schema, layout)
    seeds = spawn(random_seed, len(order))
    # the columns a spec draws by a regression, synthpop's rf or ctree (no tree of the package's)
    regression = {c: spec.methods[c] for c in order
                  if spec is not None and spec.methods[c] in (*REGRESSION_METHODS, "rf", "ctree")}
    _check_spec_columns(regression, spec, smoothed, layout)
    regressions: dict[str, RegressionColumn | ForestColumn | CtreeColumn] = {}
    trees: dict[str, SeqTree] = {}
    kind_trees: dict[str, SeqTree] = {}
    predictors: dict[str, list[str]] = {}
    node_h: dict[str, np.ndarray] = {}
    rows = np.arange(n)
    for k, col in enumerate(order):
        preds = unsyn + order[:k] if spec is None else spec.predictors[col]
        predictors[col] = preds
        if regression.get(col) == "rf":
            regressions[col] = ForestColumn(col, preds, schema, values, layout)
            continue
        if regression.get(col) == "ctree":
            regressions[col] = CtreeColumn(col, preds, schema, values, layout)
            continue
        if col in regression:
            regressions[col] = RegressionColumn(
                regression[col], col, preds, schema, values,
                None if schema[col].is_categorical else decimals_of(values[col]), layout)
            continue
        if preds:
            names, kinds, nlev, arrs = design_inputs(schema, preds, layout, values.__getitem__)
            design = Design(names, kinds, nlev)
            X, codes = design.matrix(arrs)
        else:  # nothing to split on: a single-leaf tree
            X, codes = np.zeros((n, 1), dtype=np.float32), np.zeros((n, 0), dtype=np.int64)
            design = Design(["__const__"], ["numeric"], [0])
        y = values[col]
        kw = {"min_samples_leaf": model.min_leaf, "max_depth": model.max_depth,
              "random_state": int(seeds[k].integers(2**31 - 1))}
        lay = layout.get(col)
        cat = schema[col].is_categorical
        fit_rows = rows
        if not cat and lay is not None:
            # step 1 (synthpop's cont.na): which kind of missing value, or observed
            yk = kind_codes(y, lay["codes"])
            kind_trees[col] = grow(model, DecisionTreeClassifier(criterion="gini", **kw), design,
                                   X, codes, rows, yk, True, n_kinds(lay))
            # step 2: the value, among the records where it is observed
            fit_rows = np.flatnonzero(yk == 0)
            X, codes, y = X[fit_rows], codes[fit_rows], y[fit_rows]
        est = (DecisionTreeClassifier(criterion="gini", **kw) if cat
               else DecisionTreeRegressor(criterion="squared_error", **kw))
        n_classes = schema[col].n_levels + (1 if lay is not None else 0) if cat else 0
        trees[col] = tree = grow(model, est, design, X, codes, fit_rows, y, cat, n_classes)
        if col in smoothed:
            node_h[col] = node_bandwidths(model, tree, col, y)
    model.schema_ = schema
    index, table = model._keep_fitted_table(data, schema)
    # what a release needs to rebuild this synthesizer (None seed: not replayable)
    model.fit_call_ = {"synthesized": list(order if spec is None else spec.visit_sequence),
                       "random_seed": replayable_seed(random_seed)}
    model.n_records_ = n
    integer = [*smoothed, *(c for c, v in regression.items() if v in NUMERIC_METHODS)]
    return CARTState(
        schema=schema, visit_sequence=order, predictors=predictors, trees=trees,
        missing=layout, missing_trees=kind_trees,
        table=FittedTable(data=table, index=index, values=values, records=mask),
        leaf_draw=LeafDraw(
            smoothed=smoothed, bandwidth=node_h,
            integer={c: schema[c].type == "count" or pd.api.types.is_integer_dtype(data[c].dtype)
                     for c in integer},
            decimals={c: decimals_of(observed_values(values[c], layout.get(c)))
                      for c in smoothed}),
        regressions=regressions)


def grow(model: Any, est: Any, design: Design, X: np.ndarray, codes: np.ndarray,
          rows: np.ndarray, y: np.ndarray, categorical: bool, n_classes: int) -> SeqTree:
    """Fit ``est`` and rewrite it as a :class:`SeqTree` with the stopping rules applied."""
    est.fit(X, y)
    tree = SeqTree(est, design, X, codes, rows, y, categorical, n_classes=n_classes)
    tree.collapse_low_deviance(float(model.min_deviance))
    if model.prune_to_diversity is not None:
        tree.prune_to_diversity(int(model.prune_to_diversity))
    return tree


def node_bandwidths(model: Any, tree: SeqTree, col: str, y: np.ndarray) -> np.ndarray:
    """Per-node bandwidth: user value or Silverman on the node's donors, floored."""
    bw = model.bandwidth
    if isinstance(bw, dict):
        bw = bw.get(col)
    if bw is not None:
        bw = check_value(bw, Interval(float, 0, closed="neither"), f"bandwidth for {col!r}")
        return np.full(tree.n_nodes, bw)
    res = data_resolution(np.asarray(y, dtype=np.float64))
    h = np.zeros(tree.n_nodes)
    for k in range(tree.n_nodes):
        v = tree.y_sorted[tree.node_start[k] : tree.node_stop[k]]
        h[k] = max(silverman(v), res)
    return h


def observed_values(values: np.ndarray, layout: dict[str, Any] | None) -> np.ndarray:
    """The observed (not missing) values of a numeric column."""
    if layout is None:
        return values
    return values[kind_codes(values, layout["codes"]) == 0]


def data_resolution(values: np.ndarray) -> float:
    """Smallest positive gap between distinct values (the recorded precision); 0 if none."""
    u = np.unique(values[np.isfinite(values)])
    if u.size < 2:
        return 0.0
    return float(np.min(np.diff(u)))


def silverman(v: np.ndarray) -> float:
    """Silverman's rule of thumb ``0.9 min(sd, IQR/1.34) n^{-1/5}`` (sd alone if IQR is 0)."""
    v = np.asarray(v, dtype=np.float64)
    if v.size < 2:
        return 0.0
    sd = float(np.std(v, ddof=1))
    q75, q25 = np.percentile(v, [75, 25])
    iqr = float(q75 - q25) / 1.34
    a = min(sd, iqr) if iqr > 0 else sd
    return 0.9 * a * v.size ** (-0.2)
