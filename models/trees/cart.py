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

The class is here; its methods call module-level helpers: the fit (``trees.cart_fit``), the leaf
likelihoods (``trees.cart_leaf``), routing and synthesis from the fitted trees
(``trees.cart_synthesis``) and the saved state (``trees.cart_io``). What the tree synthesizers
share (saving, loading, the fit helpers) is in ``trees.base``.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, ClassVar

import numpy as np
import pandas as pd

import bayes_risk.models.trees.cart_fit as _fit
import bayes_risk.models.trees.cart_io as _io
import bayes_risk.models.trees.cart_synthesis as _synthesis
from bayes_risk._rng import RandomSeed, seed_to_json, spawn
from bayes_risk._terminal import progress
from bayes_risk.contract import ModelInfo, available_if
from bayes_risk.data.provenance import model_id
from bayes_risk.data.schema import Schema
from bayes_risk.data.synthetic import SyntheticData, generation_from_roles
from bayes_risk.data.validate import check_m
from bayes_risk.models.base import check_is_fitted
from bayes_risk.models.trees.base import TreeSynthesizer, records_mask
from bayes_risk.models.trees.cart_leaf import kernel_log_terms, polya_logprob, truncated_kde_logpdf
from bayes_risk.models.trees.cart_state import CARTState

__all__ = [
    "CARTSynthesizer",
    "polya_logprob",
    "truncated_kde_logpdf",
    "kernel_log_terms",
    "records_mask",
]


# --------------------------------------------------------------------------------------------
# the synthesizer
# --------------------------------------------------------------------------------------------
class CARTSynthesizer(TreeSynthesizer):
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
        Seed of :meth:`fit` and default seed of :meth:`synthesize` (a seed passed to
        ``synthesize`` takes precedence; one passed to ``fit`` must be this one, or this setting
        ``None``: ``SEED_CONFLICT``).

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
    #: the plug-in likelihood is exact given the fitted splits: membership risk is derived
    #: from it (``membership_risk``; ``CARTPlugin.donor_trees``)
    exact_plugin: ClassVar[bool] = True
    _fitted_attribute: ClassVar[str] = "trees_"

    #: what no method shows (bayes_risk.ModelInfo; the rest: bayes_risk.contract.capabilities)
    info = ModelInfo(partial_synthesis=True, required=("synthesized",), visit_order=True,
                     releases_donor_values=True)

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
            Seeds scikit-learn's tie-breaking between equally good splits when the
            ``random_seed`` setting is ``None`` (default: the setting; another seed than a
            setting given raises ``SEED_CONFLICT``).

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
        _fit.fit(self, data, schema, synthesized, records, random_seed)
        self._set_state()
        return self

    def _set_state(self) -> None:
        """Build the fitted state (``trees.cart_state``) the synthesis functions read."""
        self._state = CARTState(
            schema=self.schema_, visit_sequence=self.visit_sequence_,
            predictors=self.predictors_, trees=self.trees_, missing=self.missing_,
            missing_trees=self.missing_trees_, smoothed=self.smoothed_,
            bandwidth=self.bandwidth_, integer=self._integer, decimals=self._decimals,
            records=self.records_, data=self._data, index=self._index, values=self._values,
        )

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
            return _synthesis.synthesize_one(self._state, gens[l], unroutable=self.unroutable,
                                             donor=self.donor)

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
            model_id=model_id(self),
            generation=generation_from_roles(self.schema_, self.records_),
            # the per-leaf Bayesian bootstrap draws each dataset's leaf distributions anew
            # missing values are synthesized as values, never filled in
            imputed_columns=[],
            proper=self.donor == "bayes_bootstrap",
        )

    # ----- persistence (save, load, check_fingerprint: trees.base) ---------------------------
    def _persisted_state(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        return _io.cart_state(self._state, self.fit_call_, self.n_records_)

    # ----- plug-in likelihood ---------------------------------------------------------------
    def plugin_likelihood(
        self, original: pd.DataFrame, *, random_seed: RandomSeed = None
    ) -> Any:
        """The plug-in likelihood of this fitted synthesizer for attribute risk
        (:class:`~bayes_risk.models.CARTPlugin`; offered by having this method).

        Parameters
        ----------
        original : DataFrame
            The confidential table the synthesizer was fitted to.
        random_seed : RandomSeed
            Seed of the Monte Carlo terms of kernel-smoothed columns.
        """
        from bayes_risk.models.trees.plugins.plugin_cart import CARTPlugin

        return CARTPlugin(self, original, random_seed=random_seed)


    @staticmethod
    def _restore(obj: Any, meta: dict[str, Any], arrays: Any, data: pd.DataFrame) -> None:
        _io.restore_cart(obj, meta, arrays, data)
        obj._set_state()

    # -- the work is done by module-level functions of ``trees.cart_synthesis``, which take the
    # fitted state (self._state, trees.cart_state.CARTState) and the settings

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
        check_is_fitted(self, "trees_")
        return _synthesis.route(self._state, records, column, random_seed,
                                unroutable=self.unroutable)

    def donors(self, column: str, node: int) -> np.ndarray:
        """Row positions (in the fitted data) of the donors of ``node`` in the tree of ``column``.

        Their values of ``column`` are the leaf's donor multiset (Reiter 2005).
        """
        check_is_fitted(self, "trees_")
        return _synthesis.donors(self._state, column, node)

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
        check_is_fitted(self, "trees_")
        return _synthesis.output_rounding(self._state, column)

    @available_if(lambda self: self.donor == "bayes_bootstrap")  # equal weights: no posterior
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
        AttributeError
            With ``donor="uniform"`` the method is absent (``available_if``): donors drawn with
            equal weights are not draws from a posterior predictive (no Bayesian bootstrap).
        """
        from bayes_risk.models._replicates import check_replicate_columns, iter_replicates

        check_is_fitted(self, "trees_")
        cols = check_replicate_columns(columns, self.visit_sequence_, type(self).__name__)
        state, unroutable, donor = self._state, self.unroutable, self.donor
        return iter_replicates(
            lambda rng: _synthesis.synthesize_one(state, rng, cols, unroutable=unroutable,
                                                  donor=donor)[0],
            n, columns=cols, chunk_size=chunk_size, random_seed=random_seed, start=start,
        )
