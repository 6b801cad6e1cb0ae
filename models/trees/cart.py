"""Sequential CART synthesizer with a per-leaf Bayesian bootstrap (Reiter 2005). See
:doc:`/methods/models`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any, ClassVar

import numpy as np
import pandas as pd

import bayes_risk.models.trees.cart_fit as _fit
import bayes_risk.models.trees.cart_io as _io
import bayes_risk.models.trees.cart_synthesis as _synthesis
from bayes_risk._rng import RandomSeed
from bayes_risk._terminal import progress
from bayes_risk._tree_spec import CART_TREES, TreeOptions
from bayes_risk.contract import available_if
from bayes_risk.data.provenance import model_release
from bayes_risk.data.schema import Schema
from bayes_risk.data.synthetic import SyntheticData
from bayes_risk.exceptions import NotSupportedError
from bayes_risk.models.base import FittedAttribute, check_is_fitted
from bayes_risk.models.trees.base import SEQUENTIAL_TREES, TreeSynthesizer
from bayes_risk.models.trees.cart_leaf import kernel_log_terms, polya_logprob, truncated_kde_logpdf
from bayes_risk.models.trees.cart_state import CARTState
from bayes_risk.models.trees.spec import SynthesisSpec

__all__ = ["CARTSynthesizer", "polya_logprob", "truncated_kde_logpdf", "kernel_log_terms"]


class CARTSynthesizer(TreeSynthesizer):
    """Sequential CART synthesizer with a per-leaf Bayesian bootstrap (Reiter 2005;
    :doc:`/methods/models`).

    Parameters
    ----------
    trees : TreeOptions, optional
        How the trees are grown: the CART fields of :class:`~bayes_risk.models.TreeOptions`,
        which states their defaults.
    donor : {"bayes_bootstrap", "uniform"}
        Donors drawn with Dirichlet(1..1) weights per leaf and dataset, or equally likely
        (synthpop with ``proper=FALSE``).
    unroutable : {"climb", "random_descent"}
        At a split a record cannot take, use the node's records as donors, or descend at random
        (synthpop).
    smoothing : bool or sequence of str, default False
        Truncated Gaussian kernel smoothing (Wang & Reiter 2012) of all (``True``) or the listed
        numeric synthesized columns.
    bandwidth : float or dict, optional
        Kernel bandwidth (one value, or per column; default: Silverman's rule per leaf).
    spec : SynthesisSpec, optional
        A synthpop-style specification (:class:`~bayes_risk.models.SynthesisSpec`). Default:
        every unsynthesized column and every earlier synthesized one predicts (Reiter 2005).
    n_jobs : int, default 1
        Threads synthesizing datasets in parallel (results do not depend on it).
    progressbar : bool, default False
        Show a progress bar over the datasets.
    random_seed : RandomSeed, optional
        Seed of :meth:`fit` and default seed of :meth:`synthesize`.
    **tree_options
        The fields of ``trees`` given flat, ``CARTSynthesizer(min_leaf=10)`` as
        ``CARTSynthesizer(trees=TreeOptions(min_leaf=10))``; each is also a read-only attribute
        of its resolved value (``model.min_leaf``).

    Attributes
    ----------
    schema_, visit_sequence_, predictors_, trees_ (a ``SeqTree`` per column), records_ (the
    synthesized records), bandwidth_ (per smoothed column and node), missing_ (columns with
    missing values), missing_trees_ (per two-step numeric column, its missingness-kind tree),
    regressions_ (per column a spec draws by a regression method, ``rf`` or ``ctree``, its fit).
    state_ : ~bayes_risk.models.trees.cart_state.CARTState
        The fitted state the synthesis and the plug-in likelihood read (frozen): the trees, the
        leaves' donors and the output rounding; set by :meth:`fit` and ``load``; reading it
        before raises :class:`~bayes_risk.exceptions.NotFittedError`.

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
    """

    method_name = "cart"
    state_ = FittedAttribute(
        "The fitted :class:`~bayes_risk.models.trees.cart_state.CARTState` (set by ``fit``).")
    default_m = 20
    #: the plug-in likelihood is exact given the splits: membership risk is derived from it
    exact_plugin: ClassVar[bool] = True
    _fitted_attribute: ClassVar[str] = "trees_"
    info = SEQUENTIAL_TREES

    tree_defaults = CART_TREES

    def __init__(self, *, trees: TreeOptions | None = None, donor: str = "bayes_bootstrap",
                 unroutable: str = "climb", smoothing: bool | Sequence[str] = False,
                 bandwidth: float | dict[str, float] | None = None,
                 spec: SynthesisSpec | None = None, n_jobs: int = 1,
                 progressbar: bool = False, random_seed: RandomSeed = None,
                 **tree_options: Any) -> None:
        self.trees = self._fold_trees(trees, tree_options)
        self.donor = donor
        self.unroutable = unroutable
        self.smoothing = smoothing
        self.bandwidth = bandwidth
        self.spec = spec
        self.n_jobs = n_jobs
        self.progressbar = progressbar
        self.random_seed = random_seed

    def fit(self, data: pd.DataFrame, *, schema: Schema | None = None,
            synthesized: Sequence[str] | None = None, records: Any = None,
            random_seed: RandomSeed = None) -> CARTSynthesizer:
        self._use_state(_fit.fit(self, data, schema, synthesized, records, random_seed))
        return self

    def synthesize(self, m: int = 1, *, random_seed: RandomSeed = None) -> SyntheticData:
        m, random_seed, gens = self._streams(m, random_seed)

        def one(l: int) -> tuple[pd.DataFrame, dict[str, int]]:
            return _synthesis.synthesize_one(self.state_, gens[l], unroutable=self.unroutable,
                                             donor=self.donor)

        idx = range(m)
        if self.n_jobs > 1 and m > 1:
            from concurrent.futures import ThreadPoolExecutor

            with ThreadPoolExecutor(max_workers=int(self.n_jobs)) as ex:
                out = list(progress(ex.map(one, idx), total=m, description="CART synthesis",
                                    unit="datasets", enabled=self.progressbar))
        else:
            out = [one(l) for l in progress(idx, total=m, description="CART synthesis",
                                            unit="datasets", enabled=self.progressbar)]
        extra = {"visit_sequence": list(self.visit_sequence_),
                 "predictors": {k: list(v) for k, v in self.predictors_.items()},
                 "unroutable": [o[1] for o in out], "unroutable_rule": self.unroutable,
                 "fit_call": self.fit_call_}
        # the per-leaf Bayesian bootstrap draws each dataset's leaf distributions anew
        # missing values are synthesized as values, never filled in
        return model_release(self, [o[0] for o in out], random_seed=random_seed,
                             records=self.records_.copy(), extra=extra,
                             proper=self.donor == "bayes_bootstrap", imputed_columns=[])

    def persisted_state(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        return _io.cart_state(self.state_, self.fit_call_, self.n_records_)

    def plugin_likelihood(self, original: pd.DataFrame, *, random_seed: RandomSeed = None,
                          n_bootstrap: int | None = None) -> Any:
        """The plug-in likelihood for attribute risk (:class:`~bayes_risk.models.CARTPlugin`)
        given the ``original`` table fitted to; ``random_seed`` seeds its Monte Carlo terms,
        ``n_bootstrap`` (default the plug-in's) is their replicates per node.

        Raises
        ------
        NotSupportedError
            When a spec draws a column by a regression method (``norm``, ``normrank``,
            ``pmm``, ``logreg``, ``polyreg``, ``polr``), ``rf`` or ``ctree``.
        """
        from bayes_risk.models.trees.plugins.plugin_cart import CARTPlugin

        check_is_fitted(self, "trees_")
        if self.regressions_:
            raise NotSupportedError(
                f"the columns {list(self.regressions_)} are drawn by a regression method, rf or "
                f"ctree ({ {c: r.method for c, r in self.regressions_.items()} }); the CART "
                "plug-in likelihood covers 'cart' and 'sample' columns only: it "
                "holds the fitted trees fixed and lets a candidate value act through the donors "
                "it changes, while a regression column's draw is a parametric density whose "
                "coefficients the candidate itself moves (and an rf column's forest is grown on "
                "a bootstrap sample the candidate is part of, a ctree column's tree on records "
                "the candidate is one of, its splits chosen by tests of them; a refit per "
                "candidate; with "
                "Bayesian-bootstrap donors, parameters drawn per dataset), a likelihood not "
                "derived nor checked against exact values. Draw the columns whose risk you "
                "evaluate by 'cart', or synthesize by SequentialRegression (posterior draws).",
                code="MODEL_UNSUITED")
        return CARTPlugin(self, original, random_seed=random_seed,
                          **({} if n_bootstrap is None else {"n_bootstrap": n_bootstrap}))

    def restore_state(self, state: Mapping[str, Any], arrays: Mapping[str, np.ndarray]) -> None:
        self.fit_call_ = state["fit_call"]
        self.n_records_ = int(state["n_records"])
        self._use_state(_io.restore_cart(state, arrays, self.schema_, self._data, self._index))

    def _use_state(self, st: CARTState) -> None:
        """Keep the fitted state ``st`` (of ``fit`` or ``load``), its public fields as the
        fitted attributes of the same names (the encoded table and the output rounding are
        read from it)."""
        self.state_ = st
        self.visit_sequence_, self.predictors_ = st.visit_sequence, st.predictors
        self.trees_, self.regressions_ = st.trees, st.regressions
        self.missing_, self.missing_trees_ = st.missing, st.missing_trees
        self.records_ = st.table.records
        self.smoothed_, self.bandwidth_ = st.leaf_draw.smoothed, st.leaf_draw.bandwidth

    def route(self, records: pd.DataFrame, column: str,
              random_seed: RandomSeed = None) -> tuple[np.ndarray, np.ndarray]:
        """Node reached by each row of ``records`` in the fixed tree of ``column`` (with the
        ``unroutable`` rule).

        Parameters
        ----------
        records : DataFrame
            Must hold the predictor columns.
        column : str
            A synthesized column.
        random_seed : RandomSeed
            Only used by ``unroutable="random_descent"``.

        Returns
        -------
        node : ndarray of int
            Node id per row (a leaf, or where the record climbed).
        unroutable : ndarray of bool
        """
        check_is_fitted(self, "trees_")
        return _synthesis.route(self.state_, records, column, random_seed,
                                unroutable=self.unroutable)

    def donors(self, column: str, node: int) -> np.ndarray:
        """Positions (in the fitted data) of the donors of ``node`` in the tree of ``column``."""
        check_is_fitted(self, "trees_")
        return _synthesis.donors(self.state_, column, node)

    def output_rounding(self, column: str) -> tuple[int | None, bool]:
        """How smoothed values of ``column`` are rounded on output (Wang & Reiter 2012).

        Returns
        -------
        decimals : int or None
            Decimals kernel draws are rounded to (``None``: unrounded).
        integer_output : bool
            The released column has an integer dtype.
        """
        check_is_fitted(self, "trees_")
        return _synthesis.output_rounding(self.state_, column)

    @available_if(lambda self: self.donor == "bayes_bootstrap")  # equal weights: no posterior
    def posterior_replicates(self, n: int | None, *, columns: Sequence[str] | None = None,
                             chunk_size: int = 50, random_seed: RandomSeed = None,
                             start: int = 0) -> Iterator[list[pd.DataFrame]]:
        """Draw replicates of synthesized columns from the Bayesian-bootstrap predictive, in chunks
        (replicate ``r`` uses child stream ``r`` of ``random_seed``).

        Parameters
        ----------
        n : int or None
            Number of replicates (``None``: until the caller stops).
        columns : sequence of str, optional
            Synthesized columns to return (default: all, in visit order).
        chunk_size : int
            Replicates per yielded list.
        random_seed : RandomSeed
        start : int
            Index of the first replicate.

        Yields
        ------
        list of DataFrame

        Raises
        ------
        AttributeError
            With ``donor="uniform"`` (no posterior predictive).
        """
        from bayes_risk.models._replicates import check_replicate_columns, iter_replicates

        check_is_fitted(self, "trees_")
        cols = check_replicate_columns(columns, self.visit_sequence_, type(self).__name__)
        state, unroutable, donor = self.state_, self.unroutable, self.donor
        return iter_replicates(
            lambda rng: _synthesis.synthesize_one(state, rng, cols, unroutable=unroutable,
                                                  donor=donor)[0],
            n, columns=cols, chunk_size=chunk_size, random_seed=random_seed, start=start,
        )
