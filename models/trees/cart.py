"""Sequential CART synthesizer with a per-leaf Bayesian bootstrap (Reiter 2005).

One tree per synthesized column, fitted on the confidential data; records are routed with their
unsynthesized values and the synthetic values of the columns synthesized before, and each routed
record copies the value of a donor drawn from its leaf with Dirichlet(1, …, 1) weights (Reiter
2005; Drechsler & Reiter 2008; Wang & Reiter 2012). Options cover synthpop's variant (uniform
donor, random descent for unroutable records) and per-leaf truncated Gaussian kernel smoothing.

Also exports the leaf likelihoods used by the attribute-risk engine for tree synthesizers
(methods, Tree synthesizers: plug-in likelihoods): :func:`polya_logprob`,
:func:`truncated_kde_logpdf` and its per-centre terms :func:`kernel_log_terms` (densities, or
probabilities of rounded output values).

The module is split in three: the class with its fit (here, with the helpers the other tree
synthesizers share), the leaf likelihoods (``trees.cart_leaf``) and routing and synthesis from the
fitted trees (``trees.cart_synthesis``, module-level helpers the class's methods call).
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

import bayes_risk.models.trees.cart_synthesis as _synthesis
from bayes_risk._progress import progress
from bayes_risk._rng import RandomSeed, replayable_seed, seed_to_json, spawn
from bayes_risk.data.fingerprint import fingerprint_record
from bayes_risk.data.schema import Schema, infer_schema
from bayes_risk.data.synthetic import SyntheticData, generation_from_roles
from bayes_risk.data.validate import check_m, validate_table
from bayes_risk.exceptions import ValidationError
from bayes_risk.models.base import (
    BaseSynthesizer,
    check_is_fitted,
    synthesized_columns,
)
from bayes_risk.models.trees.cart_leaf import kernel_log_terms, polya_logprob, truncated_kde_logpdf
from bayes_risk.models.trees.io import check_fitted_fingerprint
from bayes_risk.models.trees.missing import (
    design_inputs,
    encoded_values,
    kind_codes,
    missing_layout,
    n_kinds,
)
from bayes_risk.models.trees.seqtree import Design, SeqTree
from bayes_risk.protocols import ModelInfo, instance_info

__all__ = [
    "CARTSynthesizer",
    "polya_logprob",
    "truncated_kde_logpdf",
    "kernel_log_terms",
    "records_mask",
]


# --------------------------------------------------------------------------------------------
# shared helpers
# --------------------------------------------------------------------------------------------
def records_mask(records: Any, n: int, argument: str = "records") -> np.ndarray:
    """Normalise a record selection (boolean mask, integer positions or ``None``) to a mask."""
    if records is None:
        return np.ones(n, dtype=bool)
    arr = np.asarray(records.to_numpy() if isinstance(records, pd.Series) else records)
    if arr.dtype == bool:
        if arr.shape != (n,):
            raise ValidationError(
                f"{argument} as a boolean mask must have one entry per record ({n}). "
                f"Got shape {arr.shape}."
            )
        mask = arr.copy()
    elif arr.size == 0 or np.issubdtype(arr.dtype, np.integer):
        idx = arr.astype(np.int64).ravel()
        if idx.size and (idx.min() < 0 or idx.max() >= n):
            bad = idx[(idx < 0) | (idx >= n)][0]
            raise ValidationError(
                f"{argument} holds record position {int(bad)}; expected positions 0..{n - 1}."
            )
        mask = np.zeros(n, dtype=bool)
        mask[idx] = True
    else:
        raise ValidationError(
            f"{argument} must be a boolean mask or integer record positions. Got dtype {arr.dtype}."
        )
    if not mask.any():
        raise ValidationError(f"{argument} selects no record; nothing would be synthesized.")
    return mask


def prepare_schema(
    data: pd.DataFrame, schema: Schema | None, synthesized: Sequence[str] | None,
    *, allow_missing: bool = False,
) -> tuple[Schema, list[str]]:
    """Schema with roles set and the ordered list of synthesized columns.

    ``allow_missing``: empty cells are accepted (CART); otherwise refused (``MISSING_VALUES``).
    """
    if not isinstance(data, pd.DataFrame):
        raise ValidationError(f"data must be a pandas DataFrame. Got {type(data).__name__}.")
    if schema is None:
        schema = infer_schema(data)
    elif not isinstance(schema, Schema):
        raise ValidationError(f"schema must be a bayes_risk Schema. Got {type(schema).__name__}.")
    order = synthesized_columns(synthesized, schema)
    if order is None:
        order = schema.synthesized
    if not order:
        raise ValidationError(
            "no column to synthesize: pass synthesize=[...] or a schema with synthesized roles."
        )
    schema = schema.with_roles(order, known=schema.known)
    validate_table(data, schema, name="data", allow_nan=allow_missing)
    return schema, list(order)


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


def decimals_of(values: np.ndarray, max_decimals: int = 6) -> int | None:
    """Number of decimals to which every value is recorded (``None`` if more than 6)."""
    v = values[np.isfinite(values)]
    for d in range(max_decimals + 1):
        s = v * 10.0**d
        if np.all(np.abs(s - np.round(s)) <= 1e-6 * np.maximum(1.0, np.abs(s)) * 1e-3 + 1e-9):
            return d
    return None


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


# --------------------------------------------------------------------------------------------
# the synthesizer
# --------------------------------------------------------------------------------------------
class CARTSynthesizer(BaseSynthesizer):
    """Sequential CART synthesizer with a per-leaf Bayesian bootstrap (Reiter 2005).

    For the visit order ``v_1 → … → v_S`` (the order of ``synthesized``), the tree for
    ``v_k`` is fitted on the confidential data with predictors = all unsynthesized columns and
    ``v_1..v_{k-1}`` (Reiter 2005): a regression tree (squared error) for count/continuous
    columns, a classification tree (Gini) for categorical/ordinal ones. To synthesize, each
    selected record is routed with its unsynthesized values and its synthetic ``v_1..v_{k-1}``,
    and copies the value of a donor of its leaf drawn with Dirichlet(1, …, 1) leaf weights drawn
    afresh for each dataset (Reiter 2005; Wang & Reiter 2012).

    Categorical predictors: unordered categorical columns enter the trees as one-hot indicators
    (each split is "one level versus the rest"; scikit-learn has no subset splits), ordinal
    columns as their level codes. For every node the set of levels of each unordered predictor
    present among its training records is recorded, so a record whose level was not seen in a
    node that splits on that predictor is detected as unroutable (methods, CART with a Bayesian
    bootstrap) and handled by ``unroutable``.

    Parameters
    ----------
    min_leaf : int, default 5
        Minimum number of training records per leaf (Drechsler & Reiter 2008).
    min_deviance : float, default 0.0
        A node is not split when its deviance is below ``min_deviance`` × the root's deviance
        (R ``tree``'s ``mindev``; W&R 2012 use 1e-4). 0 switches the rule off.
    max_depth : int, optional
        Maximum depth of each tree.
    prune_to_diversity : int, optional
        Collapse leaves into their parent until every leaf holds at least this many distinct
        confidential values (Reiter 2005's diversity criterion).
    donor : {"bayes_bootstrap", "uniform"}
        ``"bayes_bootstrap"`` (default; Reiter): donors drawn with Dirichlet(1..1) weights per leaf
        and dataset. ``"uniform"``: each donor equally likely (synthpop with ``proper=FALSE``).
    unroutable : {"climb", "random_descent"}
        What to do at a node whose split cannot be evaluated for a record (an unordered level not
        seen in the node): stop and use the node's records as donors (``"climb"``, Drechsler &
        Reiter 2008/W&R, default) or continue to a child chosen with probability proportional to its
        training size (``"random_descent"``, synthpop's rule).
    smoothing : bool or sequence of str, default False
        Per-leaf truncated Gaussian kernel smoothing of numeric synthesized columns (Wang & Reiter
        2012): ``True`` for all numeric synthesized columns, or a list of them.
    bandwidth : float or dict, optional
        Kernel bandwidth (one value, or per column). Default: Silverman's rule on each leaf's
        donor values, floored at the column's data resolution (smallest gap between distinct
        values).
    n_jobs : int, default 1
        Threads used to synthesize datasets in parallel. Results do not depend on it: dataset
        ``l`` always uses child stream ``l`` of ``random_seed``.
    progressbar : bool, default False
        Show a progress bar over the datasets.
    random_seed : RandomSeed, optional
        Default seed of :meth:`fit` and :meth:`synthesize` (a seed passed to either takes
        precedence).

    Attributes
    ----------
    schema_ : Schema
        Schema with synthesized roles.
    visit_sequence_ : list of str
        Synthesized columns in visit order.
    predictors_ : dict
        Predictor columns of each tree.
    trees_ : dict
        Fitted trees (:class:`~bayes_risk.models.trees.seqtree.SeqTree`) per synthesized column.
    records_ : ndarray of bool
        Records that are synthesized (δ_i).
    bandwidth_ : dict
        Per column, the bandwidth of every node (smoothed columns only).
    missing_ : dict
        Columns with missing values in the fitted data: ``{"type": "level"}`` (categorical) or
        ``{"type": "two_step", "codes": [...]}`` (numeric); empty for complete data.
    missing_trees_ : dict
        Per two-step numeric column, the classification tree of its missingness kind
        (``trees_`` holds its value tree, fitted on the observed records).

    Examples
    --------
    >>> from bayes_risk.data import make_ce_like, infer_schema
    >>> df = make_ce_like(300, random_seed=1)
    >>> schema = infer_schema(df, categorical=["Urban", "Marital", "Tenure"])
    >>> syn = CARTSynthesizer(random_seed=1).fit(
    ...     df, schema=schema, synthesized=["Tenure", "Income"]
    ... )
    >>> z = syn.synthesize(2, random_seed=2)
    >>> z.m, z.method
    (2, 'cart')

    References
    ----------
    Reiter, J. P. (2005). Using CART to generate partially synthetic public use microdata.
    Journal of Official Statistics 21(3), 441–462.
    Drechsler, J. & Reiter, J. P. (2008). Accounting for intruder uncertainty due to sampling
    when estimating identification disclosure risks in partially synthetic data. PSD 2008.
    """

    method_name = "cart"
    #: synthetic datasets of a release by default (``bayes-risk synthesize -m``)
    default_m = 20

    @instance_info(ModelInfo(persistence=True, partial_synthesis=True, plugin_likelihood=True,
                             posterior_replicates=True, required=("synthesized",)))
    def info(self) -> ModelInfo:
        """What the engines, the command line and the audit may use (bayes_risk.ModelInfo):
        posterior replicates only with the Bayesian-bootstrap donors."""
        return type(self).info.replace(posterior_replicates=self.donor == "bayes_bootstrap")

    def __init__(
        self,
        *,
        min_leaf: int = 5,
        min_deviance: float = 0.0,
        max_depth: int | None = None,
        prune_to_diversity: int | None = None,
        donor: str = "bayes_bootstrap",
        unroutable: str = "climb",
        smoothing: bool | Sequence[str] = False,
        bandwidth: float | dict[str, float] | None = None,
        n_jobs: int = 1,
        progressbar: bool = False,
        random_seed: RandomSeed = None,
    ) -> None:
        self.min_leaf = min_leaf
        self.min_deviance = min_deviance
        self.max_depth = max_depth
        self.prune_to_diversity = prune_to_diversity
        self.donor = donor
        self.unroutable = unroutable
        self.smoothing = smoothing
        self.bandwidth = bandwidth
        self.n_jobs = n_jobs
        self.progressbar = progressbar
        self.random_seed = random_seed

    # ----- validation ---------------------------------------------------------------------
    def _check_settings(self) -> None:
        def _int(name: str, v: Any, lo: int, allow_none: bool = False) -> None:
            if v is None and allow_none:
                return
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < lo:
                raise ValidationError(f"{name} must be an integer >= {lo}. Got {v!r}.")

        _int("min_leaf", self.min_leaf, 1)
        _int("max_depth", self.max_depth, 1, allow_none=True)
        _int("prune_to_diversity", self.prune_to_diversity, 1, allow_none=True)
        _int("n_jobs", self.n_jobs, 1)
        if not (isinstance(self.min_deviance, (int, float)) and 0 <= self.min_deviance < 1):
            raise ValidationError(
                f"min_deviance must be a number in [0, 1). Got {self.min_deviance!r}."
            )
        if self.donor not in ("bayes_bootstrap", "uniform"):
            raise ValidationError(
                f"donor must be 'bayes_bootstrap' or 'uniform'. Got {self.donor!r}."
            )
        if self.unroutable not in ("climb", "random_descent"):
            raise ValidationError(
                f"unroutable must be 'climb' or 'random_descent'. Got {self.unroutable!r}."
            )

    def _smoothed_columns(self, schema: Schema, order: list[str]) -> list[str]:
        sm = self.smoothing
        if sm is False or sm is None:
            return []
        numeric = [c for c in order if not schema[c].is_categorical]
        if sm is True:
            return numeric
        cols = [sm] if isinstance(sm, str) else list(sm)
        for c in cols:
            if c not in order:
                raise ValidationError(
                    f"smoothing: column {c!r} is not synthesized (synthesized: {order})."
                )
            if schema[c].is_categorical:
                raise ValidationError(
                    f"smoothing: column {c!r} is {schema[c].type}; kernel smoothing applies to "
                    "numeric (count/continuous) columns only."
                )
        return cols

    # ----- fit ----------------------------------------------------------------------------
    def fit(
        self,
        data: pd.DataFrame,
        *,
        schema: Schema | None = None,
        synthesized: Sequence[str] | None = None,
        records: Any = None,
        random_seed: RandomSeed = None,
    ) -> CARTSynthesizer:
        """Fit one tree per synthesized column on the confidential data.

        Parameters
        ----------
        data : DataFrame
            Confidential table. Empty cells and the schema's declared missing-value codes are
            accepted (synthpop's treatment; user guide, Synthesizers, Missing values): a
            categorical column's missing value is a level of its own; a numeric column is
            synthesized in two steps (kind of missing value, then value among the observed);
            a numeric predictor enters as its missingness kind and its value filled with 0.
        schema : Schema, optional
            Column types (default: inferred; integer-coded factors must be declared categorical).
        synthesized : sequence of str, optional
            Columns to synthesize, in visit order (default: the schema's synthesized columns).
        records : boolean mask or integer positions, optional
            Records whose synthesized columns are replaced (default: all). Trees are fitted on all
            records; unselected records keep every original value in every dataset.
        random_seed : RandomSeed
            Seeds scikit-learn's tie-breaking between equally good splits (default: the
            ``random_seed`` setting).

        Returns
        -------
        CARTSynthesizer
            ``self``.

        Raises
        ------
        ValidationError, SchemaError
            For invalid settings, unknown columns, a synthesized column with no observed value or a
            bad record selection.
        """
        from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

        self._check_settings()
        random_seed = self._seed(random_seed)
        schema, order = prepare_schema(data, schema, synthesized, allow_missing=True)
        smoothed = self._smoothed_columns(schema, order)
        n = len(data)
        if n < 2:
            raise ValidationError(f"data must have at least 2 records. Got {n}.")
        mask = records_mask(records, n)
        unsyn = [c for c in schema.names if c not in order]
        # columns with missing values (empty, or a declared code): {} for complete data, which
        # then take exactly the paths they always took
        layout = missing_layout(data, schema)
        for c in order:
            if layout.get(c, {}).get("type") == "two_step" and \
                    not (kind_codes(data[c].to_numpy(dtype=np.float64, na_value=np.nan),
                                    layout[c]["codes"]) == 0).any():
                raise ValidationError(
                    f"column {c!r} has no observed value (every cell is empty or a missing-value "
                    "code); expected at least one value to synthesize from."
                )
        # encoded views of the confidential data (codes for categorical, floats for numeric)
        values = encoded_values(data, schema, layout)
        seeds = spawn(random_seed, len(order))
        trees: dict[str, SeqTree] = {}
        kind_trees: dict[str, SeqTree] = {}
        predictors: dict[str, list[str]] = {}
        node_h: dict[str, np.ndarray] = {}
        rows = np.arange(n)
        for k, col in enumerate(order):
            preds = unsyn + order[:k]
            predictors[col] = preds
            if preds:
                names, kinds, nlev, arrs = design_inputs(schema, preds, layout, values.__getitem__)
                design = Design(names, kinds, nlev)
                X, codes = design.matrix(arrs)
            else:  # nothing to split on: a single-leaf tree
                X, codes = np.zeros((n, 1), dtype=np.float32), np.zeros((n, 0), dtype=np.int64)
                design = Design(["__const__"], ["numeric"], [0])
            y = values[col]
            rs = int(seeds[k].integers(2**31 - 1))
            lay = layout.get(col)
            fit_rows = rows
            if schema[col].is_categorical:
                est = DecisionTreeClassifier(
                    criterion="gini", min_samples_leaf=self.min_leaf, max_depth=self.max_depth,
                    random_state=rs,
                )
            else:
                if lay is not None:
                    # step 1 (synthpop's cont.na): which kind of missing value, or observed
                    yk = kind_codes(y, lay["codes"])
                    kind_trees[col] = self._grow(
                        DecisionTreeClassifier(
                            criterion="gini", min_samples_leaf=self.min_leaf,
                            max_depth=self.max_depth, random_state=rs,
                        ),
                        design, X, codes, rows, yk, True, n_kinds(lay),
                    )
                    # step 2: the value, among the records where it is observed
                    fit_rows = np.flatnonzero(yk == 0)
                est = DecisionTreeRegressor(
                    criterion="squared_error", min_samples_leaf=self.min_leaf,
                    max_depth=self.max_depth, random_state=rs,
                )
            n_classes = 0
            if schema[col].is_categorical:
                n_classes = schema[col].n_levels + (1 if lay is not None else 0)
            if fit_rows is rows:
                tree = self._grow(est, design, X, codes, rows, y,
                                  schema[col].is_categorical, n_classes)
            else:
                tree = self._grow(est, design, X[fit_rows], codes[fit_rows], fit_rows,
                                  y[fit_rows], False, 0)
            trees[col] = tree
            if col in smoothed:
                node_h[col] = self._node_bandwidths(tree, col, y[fit_rows])
        self.schema_ = schema
        # a hash of the encoded fitted table (never the data): releases carry it in their
        # manifest, and every measure checks the original it is given against it
        self.original_fingerprint_ = fingerprint_record(data, schema)
        self.visit_sequence_ = order
        self.predictors_ = predictors
        self.trees_ = trees
        self.missing_ = layout
        self.missing_trees_ = kind_trees
        self.records_ = mask
        # provenance: what a release needs to rebuild this synthesizer from the confidential data
        # (bayes_risk.models.rebuild_synthesizer; None seed = not replayable)
        self.fit_call_ = {"synthesized": list(order), "random_seed": replayable_seed(random_seed)}
        self.smoothed_ = smoothed
        self.bandwidth_ = node_h
        self.n_records_ = n
        self._index = data.index
        self._data = data.reset_index(drop=True)
        self._values = values
        self._decimals = {
            c: decimals_of(observed_values(values[c], layout.get(c))) for c in smoothed
        }
        self._integer = {
            c: schema[c].type == "count" or pd.api.types.is_integer_dtype(data[c].dtype)
            for c in smoothed
        }
        return self

    def _grow(self, est: Any, design: Design, X: np.ndarray, codes: np.ndarray,
              rows: np.ndarray, y: np.ndarray, categorical: bool, n_classes: int) -> SeqTree:
        """Fit ``est`` and rewrite it as a :class:`SeqTree` with the stopping rules applied."""
        est.fit(X, y)
        tree = SeqTree(est, design, X, codes, rows, y, categorical, n_classes=n_classes)
        tree.collapse_low_deviance(float(self.min_deviance))
        if self.prune_to_diversity is not None:
            tree.prune_to_diversity(int(self.prune_to_diversity))
        return tree

    def _node_bandwidths(self, tree: SeqTree, col: str, y: np.ndarray) -> np.ndarray:
        """Per-node bandwidth: user value or Silverman on the node's donors, floored."""
        bw = self.bandwidth
        if isinstance(bw, dict):
            bw = bw.get(col)
        if bw is not None:
            if not (isinstance(bw, (int, float)) and bw > 0):
                raise ValidationError(
                    f"bandwidth for {col!r} must be a positive number. Got {bw!r}."
                )
            return np.full(tree.n_nodes, float(bw))
        res = data_resolution(np.asarray(y, dtype=np.float64))
        h = np.zeros(tree.n_nodes)
        for k in range(tree.n_nodes):
            v = tree.y_sorted[tree.node_start[k] : tree.node_stop[k]]
            h[k] = max(silverman(v), res)
        return h
    # ----- synthesize ---------------------------------------------------------------------
    def synthesize(self, m: int = 1, *, random_seed: RandomSeed = None) -> SyntheticData:
        """Draw ``m`` synthetic datasets, each from its own child stream of ``random_seed``.

        Parameters
        ----------
        m : int
            Number of datasets.
        random_seed : RandomSeed
            Same seed → identical datasets (whatever ``n_jobs``); default: the ``random_seed``
            setting.

        Returns
        -------
        SyntheticData
            ``method="cart"``, ``settings`` = :meth:`get_params`, the schema with roles and the
            record flags; ``extra["unroutable"]`` gives, per dataset and column, how many records
            met an unevaluable split (methods, CART with a Bayesian bootstrap) and
            ``extra["unroutable_rule"]`` the rule used.

        Raises
        ------
        NotFittedError
            Before :meth:`fit`.
        """
        check_is_fitted(self, "trees_", method="synthesize")
        m = check_m(m)
        random_seed = self._seed(random_seed)
        gens = spawn(random_seed, m)

        def one(l: int) -> tuple[pd.DataFrame, dict[str, int]]:
            return self._synthesize_one(gens[l])

        idx = range(m)
        if self.n_jobs > 1 and m > 1:
            from concurrent.futures import ThreadPoolExecutor

            with ThreadPoolExecutor(max_workers=int(self.n_jobs)) as ex:
                out = list(progress(ex.map(one, idx), total=m, description="CART synthesis",
                                    enabled=self.progressbar))
        else:
            out = [one(l) for l in progress(idx, total=m, description="CART synthesis",
                                            enabled=self.progressbar)]
        return SyntheticData(
            datasets=[o[0] for o in out],
            method=self.method_name,
            settings=self._release_settings(),
            random_seed=seed_to_json(random_seed),
            schema=self.schema_,
            synthesized_records=self.records_.copy(),
            extra={
                "visit_sequence": list(self.visit_sequence_),
                "predictors": {k: list(v) for k, v in self.predictors_.items()},
                "unroutable": [o[1] for o in out],
                "unroutable_rule": self.unroutable,
                "fit_call": self.fit_call_,
            },
            original_fingerprint=getattr(self, "original_fingerprint_", None),
            generation=generation_from_roles(self.schema_, self.records_),
            # the per-leaf Bayesian bootstrap draws each dataset's leaf distributions anew
            # missing values are synthesized as values, never filled in
            imputed_columns=[],
            proper=self.donor == "bayes_bootstrap",
        )


    # ----- persistence --------------------------------------------------------------------
    def plugin_likelihood(
        self, original: pd.DataFrame, *, random_seed: RandomSeed = None
    ) -> Any:
        """The plug-in likelihood of this fitted synthesizer for attribute risk
        (:class:`~bayes_risk.models.CARTPlugin`; declared by ``ModelInfo.plugin_likelihood``).

        Parameters
        ----------
        original : DataFrame
            The confidential table the synthesizer was fitted to.
        random_seed : RandomSeed
            Seed of the Monte Carlo terms of kernel-smoothed columns.
        """
        from bayes_risk.models.trees.plugins.plugin_cart import CARTPlugin

        return CARTPlugin(self, original, random_seed=random_seed)

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Save the fitted synthesizer as a folder, atomically (no pickle).

        The folder holds ``model.json`` (format version, settings, schema, visit order,
        predictors, fingerprint of the fitted table, checksums), ``arrays.npz`` (every tree's
        nodes, splits, donor blocks and seen levels; bandwidths; the synthesized records) and
        ``data.parquet`` (the fitted table: the leaves' donors). **The folder is as
        confidential as the data**: release only the synthetic datasets, never the folder.
        :meth:`load` (or :func:`bayes_risk.models.load_model`) reads it back; the loaded
        synthesizer makes the same synthetic data as this one for the same seed.

        Parameters
        ----------
        path : path-like
            The folder (replaced atomically if it exists).

        Returns
        -------
        Path
            The folder written.

        Raises
        ------
        NotFittedError
            Before :meth:`fit`.
        """
        from bayes_risk.models.trees.io import save_synthesizer, seqtree_to_arrays

        check_is_fitted(self, "trees_", method="save")
        arrays: dict[str, np.ndarray] = {"records": np.asarray(self.records_, dtype=bool)}
        trees = []
        for k, col in enumerate(self.visit_sequence_):
            info, arr = seqtree_to_arrays(self.trees_[col], f"tree{k}")
            trees.append(info)
            arrays.update(arr)
            if col in self.bandwidth_:
                arrays[f"bandwidth{k}"] = np.asarray(self.bandwidth_[col], dtype=np.float64)
        kind_trees = {}
        for k, col in enumerate(self.visit_sequence_):
            if col in getattr(self, "missing_trees_", {}):
                info, arr = seqtree_to_arrays(self.missing_trees_[col], f"kindtree{k}")
                kind_trees[col] = info
                arrays.update(arr)
        state = {
            "visit_sequence": list(self.visit_sequence_),
            "predictors": {c: list(v) for c, v in self.predictors_.items()},
            "trees": trees,
            "fit_call": self.fit_call_,
            "smoothed": list(self.smoothed_),
            "decimals": dict(self._decimals),
            "integer": {c: bool(v) for c, v in self._integer.items()},
            "n_records": int(self.n_records_),
            # columns with missing values and the kind trees of two-step numeric columns
            # (absent in folders of complete data: their files are unchanged)
            **({"missing": self.missing_, "kind_trees": kind_trees}
               if getattr(self, "missing_", {}) else {}),
        }
        return save_synthesizer(self, path, state=state, arrays=arrays,
                                data=self._data.set_axis(self._index))

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> CARTSynthesizer:
        """Load a synthesizer saved with :meth:`save`.

        Parameters
        ----------
        path : path-like
            The folder.

        Returns
        -------
        CARTSynthesizer
            Fitted; same seed, same synthetic data as the synthesizer that was saved.

        Raises
        ------
        ValidationError
            ``MODEL_FORMAT_VERSION`` for a folder of another format version, ``MODEL_DAMAGED``
            for a missing, unreadable or changed file, or a folder of another model type.
        """
        from bayes_risk.models.trees.io import (
            check_missing_layout,
            load_synthesizer,
            seqtree_from_arrays,
            split_data,
        )

        def restore(obj: CARTSynthesizer, meta: dict[str, Any], arrays: Any,
                    data: pd.DataFrame) -> None:
            st = meta["state"]
            schema = obj.schema_
            obj.visit_sequence_ = list(st["visit_sequence"])
            obj.predictors_ = {c: list(v) for c, v in st["predictors"].items()}
            obj.trees_ = {c: seqtree_from_arrays(st["trees"][k], arrays, f"tree{k}")
                          for k, c in enumerate(obj.visit_sequence_)}
            obj.fit_call_ = st["fit_call"]
            obj.missing_ = check_missing_layout(st.get("missing", {}), schema)
            kinds = st.get("kind_trees", {})
            obj.missing_trees_ = {
                c: seqtree_from_arrays(kinds[c], arrays, f"kindtree{k}")
                for k, c in enumerate(obj.visit_sequence_) if c in kinds
            }
            if any(obj.missing_.get(c, {}).get("type") == "two_step"
                   and c not in obj.missing_trees_ for c in obj.visit_sequence_):
                raise ValueError("a kind tree of a column with missing values is missing")
            obj.smoothed_ = list(st["smoothed"])
            obj.bandwidth_ = {c: arrays[f"bandwidth{k}"]
                              for k, c in enumerate(obj.visit_sequence_) if c in obj.smoothed_}
            obj._decimals = dict(st["decimals"])
            obj._integer = dict(st["integer"])
            obj._index, obj._data = split_data(data)
            n = len(obj._data)
            obj.n_records_ = int(st["n_records"])
            obj.records_ = np.asarray(arrays["records"], dtype=bool)
            if obj.records_.shape != (n,) or obj.n_records_ != n:
                raise ValueError(f"{n} records in the data, {obj.records_.shape} flags")
            obj._values = encoded_values(obj._data, schema, obj.missing_)

        return load_synthesizer(cls, path, restore)

    # -- thin methods: the work is done by module-level helpers of the family's modules

    def route(
        self, records: pd.DataFrame, column: str, random_seed: RandomSeed = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Node reached by each row of ``records`` in the fixed tree of ``column``.

        The rows' values of the tree's predictors (``predictors_[column]``) are routed through
        the fitted splits with the ``unroutable`` rule (methods, CART with a Bayesian bootstrap);
        used by the attribute-risk engine to relocate a record with a candidate value ``y*`` in
        later trees (methods, Tree synthesizers: plug-in likelihoods).

        Parameters
        ----------
        records : DataFrame
            Must hold the predictor columns (categorical values among the schema's levels).
        column : str
            A synthesized column.
        random_seed : RandomSeed
            Only used by ``unroutable="random_descent"``.

        Returns
        -------
        node : ndarray of int
            Node id per row (a leaf, or an internal node for records that climbed).
        unroutable : ndarray of bool
            Rows that met an unevaluable split.
        """
        return _synthesis.route(self, records, column, random_seed)

    def donors(self, column: str, node: int) -> np.ndarray:
        """Row positions (in the fitted data) of the donors of ``node`` in the tree of ``column``.

        Their values of ``column`` are the leaf's donor multiset (Reiter 2005).
        """
        return _synthesis.donors(self, column, node)

    def output_rounding(self, column: str) -> tuple[int | None, bool]:
        """How smoothed values of ``column`` are rounded on output (Wang & Reiter 2012).

        Returns
        -------
        decimals : int or None
            Kernel draws are rounded to this many decimals (0 for count/integer columns);
            ``None`` when they are released unrounded.
        integer_output : bool
            The released column has an integer dtype (the clipped value is rounded to an integer
            once more).
        """
        return _synthesis.output_rounding(self, column)

    def posterior_replicates(
        self,
        n: int | None,
        *,
        columns: Sequence[str] | None = None,
        chunk_size: int = 50,
        random_seed: RandomSeed = None,
        start: int = 0,
    ) -> Iterator[list[pd.DataFrame]]:
        """Draw replicates of synthesized columns from the Bayesian-bootstrap predictive, in chunks.

        Each replicate is a fresh synthesis: new Dirichlet(1, …, 1) weights in every leaf (the
        posterior of the leaf distribution under the Bayesian bootstrap, Reiter 2005), then a
        donor per routed record, exactly as :meth:`synthesize`. Replicate ``r`` uses child stream
        ``r`` of ``random_seed`` (independent of ``chunk_size``; ``start`` continues a run).

        Parameters
        ----------
        n : int or None
            Number of replicates (``None``: chunks until the caller stops).
        columns : sequence of str, optional
            Synthesized columns to return (default: all, in visit order).
        chunk_size : int
            Replicates per yielded list.
        random_seed : RandomSeed
            Seed of the replicates.
        start : int
            Index of the first replicate.

        Yields
        ------
        list of DataFrame
            Up to ``chunk_size`` tables ``[n_records, len(columns)]`` in record order.

        Raises
        ------
        ValidationError
            With ``donor="uniform"``: donors drawn with equal weights are not draws from a
            posterior predictive (no Bayesian bootstrap).
        """
        return _synthesis.posterior_replicates(
            self, n, columns=columns, chunk_size=chunk_size, random_seed=random_seed, start=start
        )

    def _synthesize_one(self, rng: np.random.Generator, columns: Sequence[str] | None = None
                        ) -> tuple[pd.DataFrame, dict[str, int]]:
        # columns: return only these synthesized columns (replicates; the same draws)
        return _synthesis.synthesize_one(self, rng, columns)

    def _two_step(self, col, lay, sel, cur, src, unrout, rng) -> None:
        return _synthesis.two_step(self, col, lay, sel, cur, src, unrout, rng)

    def _route_blocks(self, tree, col, cur, sel, rng, subset=None):
        return _synthesis.route_blocks(self, tree, col, cur, sel, rng, subset)

    def _kernel_draw(self, col, tree, used, inv, seg_start, sizes, pos_map, rng):
        return _synthesis.kernel_draw(self, col, tree, used, inv, seg_start, sizes, pos_map, rng)

    def check_fingerprint(self, data: pd.DataFrame) -> str | None:
        """Whether ``data`` is the table this synthesizer was fitted to.

        Compares the SHA-256 fingerprints stored at fit time (also in a saved folder) with those
        of ``data``. Returns ``None`` when they agree, otherwise a short description of the
        difference (missing columns, another number of records, other values or row order).
        """
        return check_fitted_fingerprint(self, data)
