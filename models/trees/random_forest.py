"""Random-forest synthesizer (Caiola & Reiter 2010). See :doc:`/methods/models`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from bayes_risk._constraints import (
    COLUMN_NAMES,
    Flag,
    Interval,
    Options,
    SequenceOf,
    check_params,
    check_value,
)
from bayes_risk._rng import RandomSeed, as_generator, replayable_seed, spawn
from bayes_risk._terminal import progress
from bayes_risk._tree_spec import FOREST_TREES, TreeOptions
from bayes_risk.data.levels import drop_unused_levels
from bayes_risk.data.provenance import model_release
from bayes_risk.data.schema import Schema
from bayes_risk.data.synthetic import SyntheticData
from bayes_risk.data.validate import require_synthesized
from bayes_risk.exceptions import ValidationError
from bayes_risk.models.base import FittedAttribute, check_is_fitted
from bayes_risk.models.trees.base import (
    SEQUENTIAL_TREES,
    TreeSynthesizer,
    prepare_schema,
)
from bayes_risk.models.trees.cart_state import FittedTable
from bayes_risk.models.trees.forest_leaves import (
    distinct_rows,
    donor_weights,
    draw_donors,
    draw_smoothed,
    forest_apply_distinct,
    leaf_donors,
    leaf_probabilities,
)
from bayes_risk.models.trees.missing import FILL, encoded_values, kind_codes, missing_layout
from bayes_risk.models.trees.rf_fit import grouping, grow_forest, record_masks, visit_order
from bayes_risk.models.trees.rf_io import forest_state, restore_forests
from bayes_risk.models.trees.state import ForestGroups, ForestState

__all__ = ["RandomForestSynthesizer"]

_CHUNK = 512  # records per block when averaging leaf tables (bounds memory: chunk × trees × d)
#: the ``donor`` setting's values (numeric columns)
DONORS = ("uniform", "bayes_bootstrap")
#: the constraint table of the forest's plain settings
_SETTINGS = {
    **dict.fromkeys(("n_trees", "min_oob_trees", "min_samples_leaf", "min_group_size",
                     "n_jobs"), Interval(int, 1)),
    "probabilities": Options(("vote", "leaf_dirichlet"), listed=True),
    "alpha": Interval(float, 0),
    "donor": Options(DONORS, listed=True), "procedure": Options(("A", "B"), listed=True),
    "tie_order": Options(("fewer_categories", "random"), listed=True),
    "max_features": [Options(("sqrt",), listed=True), Interval(int, 1)],
}


class RandomForestSynthesizer(TreeSynthesizer):
    """Random-forest synthesizer (Caiola & Reiter 2010): one forest per replaced column, in visit
    order; categorical columns draw from their leaves' class distribution, numeric ones a donor
    value of their leaves (Meinshausen 2006; :doc:`/methods/models`, Random forests).
    ``fit(records=...)`` also takes a selection per column, ``{column: selection}``.

    Parameters
    ----------
    trees : TreeOptions, optional
        How the forests are grown: the random-forest fields of
        :class:`~bayes_risk.models.TreeOptions`, which states their defaults.
    probabilities : {"vote", "leaf_dirichlet"}
        How a categorical column's synthesis distribution is formed from its leaves.
    alpha : float, default 1.0
        Dirichlet prior count per class for ``"leaf_dirichlet"``.
    donor : {"uniform", "bayes_bootstrap"}
        Numeric columns: a leaf donor in proportion to its bootstrap count, or to Dirichlet
        weights drawn afresh per dataset.
    smoothing : bool or sequence of str, default False
        Draw the numeric columns (all with ``True``, or those listed) from a truncated Gaussian
        kernel density of the leaf's donors instead of a donor's value (Caiola & Reiter 2010
        §5, as CART's ``smoothing``); needs ``min_samples_leaf >= 2`` (a leaf of one record
        has nothing to smooth).
    visit_sequence : sequence of str, optional
        User order of the synthesized columns (default: by decreasing amount of synthesis).
    tie_order : {"fewer_categories", "random"}
        Ordering of columns with the same number of replaced records.
    group_by : str or mapping, optional
        One forest per level of a grouping column (or ``{column: grouping column}``).
    n_jobs : int, default 1
        Threads used by scikit-learn (results do not depend on it).
    progressbar : bool, default False
    random_seed : RandomSeed, optional
        Seed of :meth:`fit` and default seed of :meth:`synthesize`.
    **tree_options
        The fields of ``trees`` given flat, ``RandomForestSynthesizer(n_trees=100)`` as
        ``RandomForestSynthesizer(trees=TreeOptions(n_trees=100))``; each is also a read-only
        attribute of its resolved value (``model.n_trees``).

    Attributes
    ----------
    schema_, visit_sequence_, predictors_, forests_ (per column, the pooled forest), records_
    (masks per column), n_trees_, groups_, group_forests_ (column -> {level: forest}),
    group_sizes_, group_fallback_ (column -> levels synthesized by the pooled forest).
    state_ : ~bayes_risk.models.trees.state.ForestState
        The fitted state (frozen): the forests, their leaf tables or donors, the group forests
        and the fitted table; set by :meth:`fit` and ``load``; reading it before raises
        :class:`~bayes_risk.exceptions.NotFittedError`.

    References
    ----------
    Caiola, G. & Reiter, J. P. (2010). Random forests for generating partially synthetic,
    categorical data. Transactions on Data Privacy 3, 27–42.
    Meinshausen, N. (2006). Quantile regression forests. Journal of Machine Learning Research 7,
    983–999.
    """

    method_name = "rf"
    state_ = FittedAttribute(
        "The fitted :class:`~bayes_risk.models.trees.state.ForestState` (set by ``fit``).")
    default_m = 20
    #: the plug-in likelihood is approximate: no membership ratio is derived from it
    exact_plugin: ClassVar[bool] = False
    _fitted_attribute: ClassVar[str] = "forests_"
    info = SEQUENTIAL_TREES

    tree_defaults = FOREST_TREES
    # as saved folders and releases have always held them (their identity hashes them)
    settings_order = ("n_trees", "probabilities", "alpha", "donor", "smoothing", "oob_only",
                      "min_oob_trees", "procedure", "visit_sequence", "tie_order",
                      "max_features", "min_samples_leaf", "group_by", "min_group_size",
                      "n_jobs", "progressbar", "random_seed")

    def __init__(self, *, trees: TreeOptions | None = None, probabilities: str = "vote",
                 alpha: float = 1.0, donor: str = "uniform",
                 smoothing: bool | Sequence[str] = False,
                 visit_sequence: Sequence[str] | None = None, tie_order: str = "fewer_categories",
                 group_by: str | Mapping[str, str] | None = None, n_jobs: int = 1,
                 progressbar: bool = False, random_seed: RandomSeed = None,
                 **tree_options: Any) -> None:
        self.trees = self._fold_trees(trees, tree_options)
        self.probabilities = probabilities
        self.alpha = alpha
        self.donor = donor
        self.smoothing = smoothing
        self.visit_sequence = visit_sequence
        self.tie_order = tie_order
        self.group_by = group_by
        self.n_jobs = n_jobs
        self.progressbar = progressbar
        self.random_seed = random_seed

    def _check_settings(self) -> None:
        check_params(self, _SETTINGS)

    def fit(self, data: pd.DataFrame, *, schema: Schema | None = None,
            synthesized: Sequence[str] | None = None, records: Any = None,
            random_seed: RandomSeed = None) -> RandomForestSynthesizer:
        self._check_settings()
        random_seed = self._fit_seed(random_seed)
        schema, cols = prepare_schema(data, schema, synthesized, allow_missing=True)
        # the forests' classes are the levels, and leaf_dirichlet gives each class prior mass:
        # a level no record holds would be released (CART and PMM release donors' values only)
        schema = drop_unused_levels(data, schema)
        # columns with missing values ({} for complete data), treated as CART treats them
        layout = missing_layout(data, schema)
        for c in cols:
            if not schema[c].is_categorical and c in layout:
                raise ValidationError(
                    f"column {c!r} is {schema[c].type} with missing values; the random-forest "
                    "synthesizer replaces numeric columns without missing values only (a "
                    "regression forest cannot be grown on empty or coded responses). Use method "
                    "'cart', whose two-step draw synthesizes them, or leave the column "
                    "unsynthesized.", code="MISSING_VALUES")
        self._smoothed(schema, cols)  # checked before any forest is grown
        masks = record_masks(records, cols, len(data))
        rng = as_generator(random_seed)
        order = visit_order(self.visit_sequence, self.tie_order, cols, schema, masks, rng)
        if self.procedure == "B":  # every forest is grown on the same replaced records
            for c in order[1:]:
                if not np.array_equal(masks[c], masks[order[0]]):
                    raise ValidationError(
                        f"procedure 'B' requires all replaced columns to share the same replaced "
                        f"records; {c!r} and {order[0]!r} differ. Use procedure 'A'.",
                        code="INVALID_ARGUMENT")
        groups = grouping(self.group_by, cols, order, schema)
        unsyn = [c for c in schema.names if c not in cols]
        values = {c: v.astype(np.float64) for c, v in encoded_values(data, schema, layout).items()}
        forest_seeds = spawn(rng, len(order))
        forests, predictors, tables, inbag, ntrees = {}, {}, {}, {}, {}
        group_forests, group_tables, group_inbag, group_tpos = (
            {c: {} for c in groups} for _ in range(4))
        group_sizes, group_fallback = {}, {}
        for k, col in enumerate(order):
            if self.procedure == "A":
                preds = [c for c in schema.names if c != col]
            else:
                preds = unsyn + order[:k]
            if not preds:
                raise ValidationError(f"the forest for {col!r} has no predictor.",
                                      code="NO_PREDICTOR")
            predictors[col] = preds
            train = np.flatnonzero(masks[col])
            if train.size < 2:
                raise ValidationError(
                    f"column {col!r}: at least 2 replaced records are needed to grow a forest. "
                    f"Got {train.size}.",
                    code="TOO_FEW_RECORDS")
            X = self._matrix(preds, lambda p, t=train: values[p][t], layout)
            numeric = not schema[col].is_categorical
            y = values[col][train] if numeric else values[col][train].astype(np.int64)
            rf, ib = grow_forest(self, numeric, X, y, X.shape[1], forest_seeds[k], col)
            if ib is not None:
                inbag[col] = ib
            forests[col] = rf
            ntrees[col] = int(rf.n_estimators)
            tables[col] = self._table(rf, X, y, col, schema, layout)
            if col in groups:
                group_sizes[col], group_fallback[col] = self._grow_groups(
                    numeric, col, groups[col], values[groups[col]][train], X, y,
                    schema, forest_seeds[k], layout,
                    (group_forests[col], group_tables[col], group_tpos[col], group_inbag[col]))
        self.schema_ = schema
        self._keep_fitted_table(data, schema)
        # what a release needs to rebuild this synthesizer (``rebuild_synthesizer``)
        union = np.logical_or.reduce([masks[c] for c in cols])
        self.fit_call_ = {
            "synthesized": list(cols), "random_seed": replayable_seed(random_seed),
            "records": None if all(np.array_equal(masks[c], union) for c in cols)
            else {c: [int(i) for i in np.flatnonzero(masks[c])] for c in cols}}
        self._use_state(ForestState(
            schema=schema, visit_sequence=order, predictors=predictors, missing=layout,
            records=masks, forests=forests, tables=tables, inbag=inbag, n_trees=ntrees,
            groups=ForestGroups(by=groups, forests=group_forests, tables=group_tables,
                                positions=group_tpos, inbag=group_inbag, sizes=group_sizes,
                                fallback=group_fallback),
            table=FittedTable(data=self._data, index=self._index, values=values,
                              records=union)))
        return self

    def _use_state(self, st: ForestState) -> None:
        """Keep the fitted state ``st`` (of ``fit`` or ``load``), its public fields as the
        fitted attributes of the same names (the leaf tables, in-bag matrices and encoded table
        are read from it)."""
        self.state_ = st
        self.visit_sequence_, self.predictors_ = list(st.visit_sequence), st.predictors
        self.missing_, self.forests_, self.records_ = st.missing, st.forests, st.records
        self.n_trees_ = st.n_trees
        self.groups_, self.group_forests_ = st.groups.by, st.groups.forests
        self.group_sizes_, self.group_fallback_ = st.groups.sizes, st.groups.fallback

    def _smoothed(self, schema: Schema, cols: Sequence[str]) -> list[str]:
        """The numeric columns drawn from smoothed leaves (the ``smoothing`` setting, checked)."""
        sm = self.smoothing
        if sm is False or sm is None:
            return []
        numeric = [c for c in cols if not schema[c].is_categorical]
        if sm is True:
            out = numeric
        else:
            check_value(sm, [Flag(), SequenceOf(COLUMN_NAMES.item, "numeric synthesized columns",
                                                min_len=0)], "smoothing")
            out = list(dict.fromkeys(sm))
            require_synthesized(out, cols, "smoothing", code="INVALID_ARGUMENT")
            for c in out:
                if schema[c].is_categorical:
                    raise ValidationError(
                        f"smoothing: column {c!r} is {schema[c].type}; kernel smoothing applies "
                        "to numeric columns (a categorical one is drawn from its leaves' class "
                        "probabilities).", code="INVALID_ARGUMENT")
        if out and int(self.min_samples_leaf) < 2:
            raise ValidationError(
                f"smoothing {out} needs min_samples_leaf >= 2 (got {self.min_samples_leaf}): a "
                "leaf of one distinct record has no spread to smooth, and its value would be "
                "released as it is (Caiola & Reiter 2010 §5 ask for a minimum leaf size above "
                "one to estimate the smooth).", code="INVALID_ARGUMENT")
        return out

    def _grow_groups(self, numeric, col, g, gvalues, X, y, schema, seed, layout, out):
        """Grow the group forests of ``col`` into ``out``; return sizes and fallback levels."""
        g_forests, g_tables, g_tpos, g_inbag = out
        gcodes = gvalues.astype(np.int64)
        levels = list(schema[g].levels)
        # group forests: child streams of the column's stream (the pooled forest, drawn
        # first, is the same as without grouping)
        g_seeds = spawn(seed, len(levels))
        sizes, fallback = {}, []
        for code, lab in enumerate(levels):
            lab = lab.item() if isinstance(lab, np.generic) else lab  # JSON-safe label
            rows = np.flatnonzero(gcodes == code)
            sizes[lab] = int(rows.size)
            if rows.size < self.min_group_size:
                fallback.append(lab)
                continue
            grf, gib = grow_forest(self, numeric, X[rows], y[rows], X.shape[1],
                                  g_seeds[code], f"{col} (group {g} = {lab!r})")
            g_forests[code] = grf
            g_tables[code] = self._table(grf, X[rows], y[rows], col, schema, layout)
            # position of each replaced record among its group forest's records
            tpos = np.full(y.size, -1, dtype=np.int64)
            tpos[rows] = np.arange(rows.size)
            g_tpos[code] = tpos
            if gib is not None:
                g_inbag[code] = gib
        return sizes, fallback

    @staticmethod
    def _n_classes(col: str, schema: Schema, layout: Mapping[str, Any]) -> int:
        """Classes of the forest of ``col``: its levels, plus missing."""
        return schema[col].n_levels + (1 if col in layout else 0)

    @staticmethod
    def _matrix(preds: list[str], value_of: Any, layout: Mapping[str, Any]) -> np.ndarray:
        """Forest inputs of ``preds`` (two-step columns: filled value and kind)."""
        cols = []
        for p in preds:
            v = value_of(p)
            lay = layout.get(p)
            if lay is not None and lay["type"] == "two_step":
                kind = kind_codes(v, lay["codes"])
                cols += [np.where(kind > 0, FILL, v), kind.astype(np.float64)]
            else:
                cols.append(v)
        return np.column_stack(cols)

    def _table(self, rf, X, y, col, schema, layout) -> Any:
        """Leaf donors (numeric ``col``) or leaf probability tables (categorical)."""
        if not schema[col].is_categorical:
            return leaf_donors(rf, X, y)
        return self._leaf_tables(rf, X, y, self._n_classes(col, schema, layout))

    def _leaf_tables(self, rf, X, y, d) -> tuple[np.ndarray, np.ndarray]:
        """Stacked per-tree leaf probability tables and tree offsets (recounted per bootstrap)."""
        parts, offs = [], [0]
        # the training records' leaves in every tree, each distinct record routed once; a
        # tree's bootstrap sample takes its records' rows
        leaves_all = forest_apply_distinct(rf, X)
        for b, (est, s) in enumerate(zip(rf.estimators_, rf.estimators_samples_, strict=False)):
            nn = est.tree_.node_count
            leaves = leaves_all[s, b]
            cnt = np.bincount(leaves * d + y[s], minlength=nn * d).reshape(nn, d)
            # float32 halves the memory of the stacked tables (~n_trees × 2 n_train rows × d);
            # probabilities are renormalised when drawn
            parts.append(
                leaf_probabilities(cnt, self.probabilities, float(self.alpha)).astype(np.float32))
            offs.append(offs[-1] + nn)
        return np.vstack(parts), np.asarray(offs[:-1], dtype=np.int64)

    def predict_proba(self, column: str, X: np.ndarray, train_index: np.ndarray,
                      group: int | None = None) -> np.ndarray:
        """Synthesis probabilities of a categorical ``column`` for rows ``X``
        (``train_index``, ``group``: as in :meth:`predict_distribution`)."""
        rf, (table, offs), ib = self._forest(column, group, numeric=False)
        d = table.shape[1]
        if ib is None:
            # a record's probabilities depend on its row only: each distinct row is routed and
            # averaged once (the same numbers, row for row)
            distinct, inverse = distinct_rows(X)
            if distinct.shape[0] < inverse.size:
                return self._mean_leaf_table(rf.apply(distinct), table, offs)[inverse]
            return self._mean_leaf_table(rf.apply(X), table, offs)
        leaves = forest_apply_distinct(rf, X)  # (n, B)
        out = np.empty((X.shape[0], d))
        for a in range(0, X.shape[0], _CHUNK):
            sl = slice(a, a + _CHUNK)
            q = table[leaves[sl] + offs[None, :]]  # (chunk, B, d)
            w = self._valid_trees(ib, train_index[sl])
            num = (q * w[..., None]).sum(axis=1, dtype=np.float64)
            out[sl] = num / w.sum(axis=1, keepdims=True)
        return out

    def predict_distribution(self, column: str, X: np.ndarray, train_index: np.ndarray,
                             group: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """The synthesis distribution of a numeric column for rows ``X`` (the forest's weighted
        empirical distribution of the training values).

        Parameters
        ----------
        column : str
            A synthesized numeric column.
        X : array, shape (n, p)
            Forest inputs (as the synthesis builds them from ``predictors_[column]``).
        train_index : array of int, shape (n,)
            Each row's position among the training records (out-of-bag selection; ``-1``: all
            trees).
        group : int, optional
            Level code whose forest is used (default: pooled).

        Returns
        -------
        values : ndarray, shape (k,)
            The distinct donor values, sorted.
        weights : ndarray, shape (n, k)
            Each row's probabilities (rows sum to 1).
        """
        rf, donors, ib = self._forest(column, group, numeric=True)
        valid = None if ib is None else self._valid_trees(ib, train_index)
        return donor_weights(donors, forest_apply_distinct(rf, X), valid)

    def _forest(self, column: str, group: int | None, numeric: bool) -> tuple[Any, Any, Any]:
        """The forest of ``column`` (``group``'s, else pooled), its leaf tables or donors and its
        in-bag matrix (``None`` without ``oob_only``)."""
        check_is_fitted(self, self._fitted_attribute, method="predict_proba")
        require_synthesized([column], self.visit_sequence_, code="UNKNOWN_COLUMN")
        if numeric == self.schema_[column].is_categorical:
            raise ValidationError(
                f"column {column!r} is {self.schema_[column].type}; "
                + ("predict_distribution is for numeric columns (use predict_proba)." if numeric
                   else "predict_proba is for categorical columns (use predict_distribution)."),
                code="WRONG_DTYPE")
        if group is not None and group in self.group_forests_.get(column, {}):
            g = self.state_.groups
            return (g.forests[column][group], g.tables[column][group],
                    g.inbag[column].get(group))
        st = self.state_
        return st.forests[column], st.tables[column], st.inbag.get(column)

    @staticmethod
    def _valid_trees(ib: np.ndarray, train_index: np.ndarray) -> np.ndarray:
        """``(n, n_trees)``: the trees for which each row is out of bag (all for ``-1``)."""
        ti = np.asarray(train_index)
        w = ~ib[:, np.maximum(ti, 0)].T
        w[ti < 0] = True
        return w

    @staticmethod
    def _mean_leaf_table(leaves: np.ndarray, table: np.ndarray, offs: np.ndarray) -> np.ndarray:
        """Mean over the trees of the leaf probabilities reached, ``(n, d)`` (all trees)."""
        out = np.empty((leaves.shape[0], table.shape[1]))
        for a in range(0, leaves.shape[0], _CHUNK):
            sl = slice(a, a + _CHUNK)
            out[sl] = table[leaves[sl] + offs[None, :]].mean(axis=1, dtype=np.float64)
        return out

    def synthesize(self, m: int = 1, *, random_seed: RandomSeed = None) -> SyntheticData:
        m, random_seed, gens = self._streams(m, random_seed)
        cache: dict[str, np.ndarray] = {}
        smoothed = self._smoothed(self.schema_, self.visit_sequence_)
        point: dict[str, list[int]] = {c: [0, 0] for c in smoothed}  # point-mass draws, all
        datasets = [self._synthesize_one(gens[l], cache, point) for l in progress(
            range(m), total=m, description="RF synthesis", unit="datasets",
            enabled=self.progressbar)]
        union = np.logical_or.reduce(list(self.records_.values()))
        # missing values are synthesized as values, never filled in
        return model_release(self, datasets, random_seed=random_seed, records=union,
                             proper=False, imputed_columns=[], extra={
            "visit_sequence": list(self.visit_sequence_), "procedure": self.procedure,
            "predictors": {k: list(v) for k, v in self.predictors_.items()},
            "n_trees": dict(self.n_trees_),
            "n_replaced": {c: int(mk.sum()) for c, mk in self.records_.items()},
            "groups": dict(self.groups_),
            "group_sizes": {c: dict(v) for c, v in self.group_sizes_.items()},
            "group_fallback": {c: list(v) for c, v in self.group_fallback_.items()},
            "smoothed": smoothed,
            # share of smoothed values drawn from a leaf whose donors hold one value: that
            # value, released as it is (shared by min_samples_leaf records or more)
            "smoothing_point_mass": {c: (k / n if n else 0.0) for c, (k, n) in point.items()},
            "fit_call": self.fit_call_})

    def _synthesize_one(self, rng: np.random.Generator, cache: dict,
                        point: dict[str, list[int]] | None = None) -> pd.DataFrame:
        cur = {c: v.copy() for c, v in self.state_.table.values.items()}
        done: list[str] = []
        for col in self.visit_sequence_:
            sel = np.flatnonzero(self.records_[col])
            preds = self.predictors_[col]
            # forest inputs that no synthesized column feeds: computed once for all datasets
            fixed = not any(p in done for p in preds)
            X = None
            if not (fixed and col in cache):
                X = self._matrix(preds, lambda p, r=sel: cur[p][r],
                                 self.missing_).astype(np.float32)
            if self.schema_[col].is_categorical:
                cur[col][sel] = self._draw_codes(col, X, sel, cur, rng, cache, fixed)
            else:
                cur[col][sel] = self._draw_values(col, X, sel, cur, rng, cache, fixed,
                                                  None if point is None else point.get(col))
            done.append(col)
        out = self._data.copy()
        for col in self.visit_sequence_:
            sel = np.flatnonzero(self.records_[col])
            new = cur[col][sel]
            if self.schema_[col].is_categorical:
                lv = np.asarray(list(self.schema_[col].levels)
                                + ([np.nan] if col in self.missing_ else []), dtype=object)
                new = lv[new.astype(np.int64)]
            s = out[col].copy()
            if isinstance(s.dtype, np.dtype) and s.dtype != object:
                new = new.astype(s.dtype)
            s.iloc[sel] = new
            out[col] = s
        out.index = self._index
        return out

    def _by_forest(self, col: str, sel: np.ndarray, cur: dict) -> list[tuple[Any, np.ndarray,
                                                                               np.ndarray]]:
        """``(group code, rows, training positions)`` of the records of ``col`` per forest."""
        if col not in self.groups_:
            return [(None, np.arange(sel.size), np.arange(sel.size))]
        gcur = cur[self.groups_[col]][sel].astype(np.int64)
        out = []
        for code in np.unique(gcur):
            rows = np.flatnonzero(gcur == code)
            tpos = self.state_.groups.positions[col].get(int(code))
            out.append((int(code), rows, tpos[rows] if tpos is not None else rows))
        return out

    def _draw_codes(self, col, X, sel, cur, rng, cache, fixed) -> np.ndarray:
        """One level code per replaced record of categorical ``col`` by inverse CDF."""
        if fixed and col in cache:
            P = cache[col]
        else:
            P = np.empty((sel.size, self._n_classes(col, self.schema_, self.missing_)))
            for code, rows, ti in self._by_forest(col, sel, cur):
                P[rows] = self.predict_proba(col, X[rows], ti, group=code)
            if fixed:
                cache[col] = P
        cdf = np.cumsum(P, axis=1)
        u = rng.random(sel.size) * cdf[:, -1]
        return np.minimum((u[:, None] >= cdf).sum(axis=1), P.shape[1] - 1)

    def _draw_values(self, col, X, sel, cur, rng, cache, fixed, point=None) -> np.ndarray:
        """One donor value per replaced record of numeric ``col`` (:func:`draw_donors`), or a
        value of its smoothed leaf (:func:`draw_smoothed`) when ``point`` (the counts of
        point-mass draws) is given."""
        out = np.empty(sel.size)
        parts = cache.get(col) if fixed else None
        if parts is None:
            parts = [(code, rows, ti, forest_apply_distinct(
                self._forest(col, code, numeric=True)[0], X[rows]))
                for code, rows, ti in self._by_forest(col, sel, cur)]
            if fixed:
                cache[col] = parts
        bb = self.donor == "bayes_bootstrap"
        kern = None if point is None else self._kernel_settings(col)
        for code, rows, ti, leaves in parts:
            _, donors, ib = self._forest(col, code, numeric=True)
            valid = None if ib is None else self._valid_trees(ib, ti)
            if kern is None:
                out[rows] = draw_donors(donors, leaves, rng, valid, bayes_bootstrap=bb)
                continue
            out[rows], pm = draw_smoothed(donors, leaves, rng, valid, bb, **kern)
            point[0] += int(pm.sum())
            point[1] += int(pm.size)
        return out

    def _kernel_settings(self, col: str) -> dict[str, Any]:
        """The resolution (bandwidth floor) and output rounding of smoothed ``col``, read off
        its training values (as CART's smoothing)."""
        from bayes_risk._numeric import decimals_of
        from bayes_risk.models.trees.cart_fit import data_resolution

        y = self.state_.table.values[col][self.records_[col]]
        dt = self._data[col].dtype
        return {"resolution": data_resolution(y), "decimals": decimals_of(y),
                "integer": self.schema_[col].type == "count"
                or pd.api.types.is_integer_dtype(dt)}

    def plugin_likelihood(self, original: pd.DataFrame, *, random_seed: RandomSeed = None,
                          n_bootstrap: int | None = None) -> Any:
        """The plug-in likelihood for attribute risk (:class:`~bayes_risk.models.RFPlugin`) given
        the ``original`` table fitted to; ``random_seed`` and ``n_bootstrap`` are unused (no
        Monte Carlo terms; :func:`~bayes_risk.attribute.attribute_risk` refuses a
        ``plugin_replicates`` it would not use)."""
        from bayes_risk.models.trees.plugins.plugin_rf import RFPlugin

        return RFPlugin(self, original)

    def persisted_state(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        return forest_state(self.state_, self.fit_call_)

    def restore_state(self, state: Mapping[str, Any], arrays: Mapping[str, np.ndarray]) -> None:
        self.fit_call_ = state["fit_call"]
        self._use_state(restore_forests(state, arrays, self.schema_, self._data, self._index))
