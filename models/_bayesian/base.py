"""Shared machinery of the PyMC-based synthesis models (DPMPM, Poisson mixtures, regressions).

:class:`BayesianSynthesizer` holds what every Bayesian synthesizer of the package has in common:
MCMC settings, the posterior draws (an ArviZ ``xarray.DataTree``, as returned by ``pm.sample``),
the flattening of ``chain × draw`` into ``H`` draws, synthesis from ``m`` draws far apart in the
chain (Hu 2019 §3.2.5), saving/loading (NetCDF + JSON, never pickle), construction from draws made
elsewhere (:meth:`BayesianSynthesizer.from_posterior`) and convergence diagnostics on
label-invariant scalars (ArviZ rank-normalised ESS and R-hat).

Contract for subclasses
-----------------------
A subclass (e.g. :class:`bayes_risk.models.dpmpm.dpmpm.DPMPM`) must

* define ``method_name`` (its registry name), ``model_class`` ("P"/"O", methods, Two classes of
  synthesis model) and ``ratio_form`` ("joint"/"conditional", Hu 2019 §3.2.5), and an ``__init__``
  that lists **all** its settings (model settings plus the MCMC settings of this class: ``tune``,
  ``draws``, ``chains``, ``cores``, ``random_seed``, ``progressbar``) and passes the MCMC ones to
  ``super().__init__``;
* implement ``_draw_posterior(data, schema, seed)`` (build the model and sample, e.g. with
  ``_run_sampler`` or ``_run_gibbs``; the posterior as a DataTree) and, when it has settings of
  its own, ``_check_settings()``: the template :meth:`BayesianSynthesizer.fit` checks the
  settings, prepares the table (``_prepare_data``), samples and stores the fit
  (``_set_fitted``). A model whose ``fit`` takes more (DPMPM's ``categorical``) overrides
  ``fit`` and follows the same steps;
* implement ``_synthesize_one(draw, rng, data)`` (one synthetic dataset from flattened draw
  ``draw``; ``_synthesize_many(draws, rngs, data)``, which ``synthesize`` calls, may prepare
  once what many datasets share), ``record_loglik``, ``dataset_loglik`` and ``fit_augmented``
  (the likelihood protocol of :mod:`bayes_risk.contract`); optionally
  ``neighbourhood_loglik`` (the fast candidate route, offered by having it); a model that can
  be in class O also provides
  ``own_record_delta(record, candidates, datasets, *, draw_indices=None)``
  → ``[H, m, G]`` (methods, Two classes of synthesis model), which the attribute-risk engine
  requires for class O;
* implement ``_validate_posterior(posterior, schema)`` (check variables/shapes of a posterior
  given to :meth:`from_posterior` or loaded from disk; may add derived variables),
  ``_event_ndims()`` (number of parameter dimensions of each variable, so that
  :meth:`from_posterior` can read a dict of ``(draw, ...)`` or ``(chain, draw, ...)`` arrays) and
  ``_convergence_quantities()`` (label-invariant scalars, each ``[chain, draw]``);
* optionally override ``_needs_data_for_synthesis()`` (whether the confidential data must be
  saved with the model), ``_state_to_json()`` / ``_state_from_json(state)`` (extra fitted state
  for ``model.json``). Options of ``bayes-risk fit`` are declared in
  ``bayes_risk.cli.parsers.fit`` (building the command line must not import the models).

Draw order
----------
Posterior draws are flattened **chain-major**: flattened index ``h = c * n_draws_per_chain + d``
for chain ``c`` and draw ``d`` (as ``posterior.stack(sample=("chain", "draw"))`` does). Every
``[H, ...]`` array returned by a model, every ``draw_indices=`` argument and every ``draw_index``
recorded in :class:`~bayes_risk.data.SyntheticData` uses this order.

Layout
------
The class's methods call module-level helpers, one module per concern: the fitted table, record
selections and draw indices (``_bayesian.records``), running the samplers
(``_bayesian.sampling``), synthesis from the draws (``_bayesian.synthesis``), convergence
diagnostics (``_bayesian.convergence``) and persistence (``_bayesian.io``: save/load,
fingerprint, ``from_posterior``); the file names and thresholds they define are re-exported
here.
"""

from __future__ import annotations

import os
import time
from abc import ABCMeta, abstractmethod
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

import numpy as np
import pandas as pd

import bayes_risk.models._bayesian.convergence as _convergence
import bayes_risk.models._bayesian.io as _io
import bayes_risk.models._bayesian.records as _records
import bayes_risk.models._bayesian.sampling as _sampling
import bayes_risk.models._bayesian.synthesis as _synthesis
from bayes_risk._io import to_jsonable
from bayes_risk._rng import RandomSeed
from bayes_risk.data.fingerprint import fingerprint_record
from bayes_risk.data.schema import Schema
from bayes_risk.data.synthetic import SyntheticData
from bayes_risk.exceptions import (
    NotFittedError,
    ValidationError,
)
from bayes_risk.models._bayesian.convergence import ESS_MIN, RHAT_MAX
from bayes_risk.models._bayesian.design import record_dtypes
from bayes_risk.models._bayesian.io import (
    CONVERGENCE_FILE,
    DATA_FILE,
    FORMAT_VERSION,
    POSTERIOR_FILE,
    _check_int,
)
from bayes_risk.models._bayesian.timing import record_fit_time
from bayes_risk.models.base import (
    BaseSynthesizer,
)

if TYPE_CHECKING:  # pragma: no cover
    import xarray as xr

__all__ = [
    "BayesianSynthesizer",
    "POSTERIOR_FILE",
    "CONVERGENCE_FILE",
    "DATA_FILE",
    "FORMAT_VERSION",
    "RHAT_MAX",
    "ESS_MIN",
]


class BayesianSynthesizer(BaseSynthesizer, metaclass=ABCMeta):
    """Abstract base class of the PyMC-based synthesizers (not instantiated directly).

    Parameters
    ----------
    tune : int
        Burn-in (tuning) iterations per chain, discarded.
    draws : int
        Kept iterations per chain; the model has ``H = chains × draws`` posterior draws.
    chains : int
        Number of MCMC chains.
    cores : int, optional
        Chains run in parallel processes (``None``: the sampler's choice, at most 4; the DPMPM's
        Gibbs runs use processes only when the sampling is long enough to gain from them).
        ``1`` runs them sequentially in this process.
    random_seed : RandomSeed
        Seed of :meth:`fit` and default seed of :meth:`synthesize` (a seed given to
        ``synthesize`` takes precedence; one given to ``fit`` must be this one, or this
        setting ``None``: ``SEED_CONFLICT``).
    progressbar : bool
        Show PyMC's progress bar while sampling.

    Attributes
    ----------
    posterior_ : xarray.DataTree
        Posterior draws (group ``posterior``; sampler statistics in ``sample_stats``).
    schema_ : Schema
        Columns, types, levels and roles (synthesized / unsynthesized) the model was fitted with.
    data_ : DataFrame or None
        The confidential records, kept only when synthesis needs them (partial synthesis,
        class-O modes). **Confidential**: it is saved with the model.
    synthesized_records_ : ndarray of bool or None
        Records whose synthesized columns are replaced (``None``: all records).
    convergence_ : DataFrame or None
        ESS and R-hat of the label-invariant scalars (the figures of
        :meth:`convergence_summary`'s ``quantities``; their draws are the posterior's group
        ``label_invariant``).

    Notes
    -----
    A subclass must provide (``abc.abstractmethod``; an incomplete subclass cannot be
    instantiated): the likelihoods the attribute engine uses (``record_loglik``,
    ``dataset_loglik``, ``fit_augmented``; the protocols of
    ``bayes_risk.contract``), one synthetic dataset per posterior draw
    (``_synthesize_one``), the label-invariant convergence quantities
    (``_convergence_quantities``) and the check of a loaded posterior (``_validate_posterior``).
    """

    method_name: ClassVar[str] = "bayesian"
    #: Model class (methods, Two classes of synthesis model) of the default synthesis mode
    #: (subclasses may set it per instance).
    model_class: Literal["P", "O"] = "P"
    #: Hu 2019 §3.2.5 form of the importance ratios.
    ratio_form: Literal["joint", "conditional"] = "joint"

    def __init__(
        self,
        *,
        tune: int = 500,
        draws: int = 1000,
        chains: int = 1,
        cores: int | None = 1,
        random_seed: RandomSeed = None,
        progressbar: bool = True,
    ) -> None:
        self.tune = tune
        self.draws = draws
        self.chains = chains
        self.cores = cores
        self.random_seed = random_seed
        self.progressbar = progressbar
        # the fitted attributes (posterior_, schema_, ...) exist only once fit, load or
        # from_posterior has set them (scikit-learn's convention: their presence means fitted)

    # ------------------------------------------------------------------ settings & checks
    def _check_mcmc_settings(self) -> None:
        _check_int(self.tune, "tune", 0)
        _check_int(self._run_settings()["draws"], "draws", 1)
        _check_int(self.chains, "chains", 1)
        if self.cores is not None:
            _check_int(self.cores, "cores", 1)
        if not isinstance(self.progressbar, (bool, np.bool_)):
            raise ValidationError(f"progressbar must be True or False. Got {self.progressbar!r}.")

    @staticmethod
    def _check_synthesized_records(records: Any, n: int) -> np.ndarray | None:
        """Validate a ``records=`` argument of ``fit``: ``None`` (every record), a
        boolean mask of length ``n`` or integer record positions in ``0..n-1``.

        Returns the flags as a boolean array ``[n]`` (a copy), or ``None``.
        """
        return _records.check_synthesized_records(records, n)

    def _synthesized_rows(self) -> np.ndarray:
        """Positions of the records whose synthesized columns are replaced (all by default)."""
        if getattr(self, "synthesized_records_", None) is None:
            return np.arange(self.n_records, dtype=np.int64)
        return np.flatnonzero(self.synthesized_records_).astype(np.int64)

    def _synthesized_part(self, z: pd.DataFrame, name: str = "synthetic") -> pd.DataFrame:
        """The synthesized records' rows of a released dataset (all rows under full synthesis).

        Under partial synthesis of selected records the other rows are copies of the
        confidential data: they carry no likelihood (``dataset_loglik``) and must not be appended
        to the data a second time (``fit_augmented``, methods, The stabilised estimator).
        """
        if self.synthesized_records_ is None:
            return z
        return _records.synthesized_part(z, self._synthesized_rows(), self.n_records, name)

    def _run_settings(self) -> dict[str, int]:
        """The run length a fit with the current settings uses (settings left at ``None``
        resolved): ``{"draws": kept draws per chain}``; DPMPM adds ``thin`` and
        ``max_sweeps``."""
        return {"draws": self.draws}

    def _check_fitted(self, method: str | None = None) -> None:
        if getattr(self, "posterior_", None) is None or getattr(self, "schema_", None) is None:
            before = f"'{method}'" if method else "using it"
            raise NotFittedError(
                f"This {type(self).__name__} instance is not fitted yet. Call 'fit' (or build it "
                f"with 'from_posterior' / 'load') before {before}.",
                code="NOT_FITTED"
            )

    @property
    def n_draws(self) -> int:
        """Number of posterior draws ``H = chains × draws`` (flattened chain-major)."""
        self._check_fitted()
        post = self.posterior_["posterior"]
        return int(post.sizes["chain"] * post.sizes["draw"])

    def draw_chains(self) -> np.ndarray:
        """``[H]`` chain of each flattened draw (chain-major: ``h // draws``), for the
        attribute engine's between-chain check
        (:class:`~bayes_risk.contract.SupportsDrawChains`)."""
        self._check_fitted()
        post = self.posterior_["posterior"]
        return np.repeat(np.arange(int(post.sizes["chain"])), int(post.sizes["draw"]))

    @property
    def n_records(self) -> int:
        """Number of records of the data the model was fitted to (rows of each synthetic set)."""
        self._check_fitted()
        return int(self._n_records)

    def _draw_indices(self, draw_indices: Any = None) -> np.ndarray:
        """Validate a ``draw_indices=`` argument and return flattened draw indices (int64).

        ``None`` means all ``H`` draws in order; otherwise a sequence (or array) of integers in
        ``0..H-1`` (repeats allowed), or a boolean mask of length ``H``.
        """
        return _records.check_draw_indices(self.n_draws, draw_indices)

    def _stacked(self, name: str, draw_indices: np.ndarray | None = None) -> np.ndarray:
        """Posterior variable ``name`` as an ``[H, ...]`` float array (chain-major), optionally
        restricted to the flattened indices ``draw_indices``."""
        self._check_fitted()
        return _records.stacked_values(self.posterior_["posterior"], name, draw_indices)

    # ------------------------------------------------------------------ fit (template)
    def fit(
        self,
        data: pd.DataFrame,
        *,
        schema: Schema | None = None,
        synthesized: Sequence[str] | None = None,
        records: Any = None,
        random_seed: RandomSeed = None,
    ) -> BayesianSynthesizer:
        """Draw from the posterior of the model given the confidential table.

        Parameters
        ----------
        data : DataFrame
            Confidential table (for :class:`~bayes_risk.models.PoissonMixture` the synthesized
            columns must be non-negative integer counts).
        schema : Schema, optional
            Column types, levels and roles (default inferred: integer columns are counts).
        synthesized : sequence of str, optional
            Columns to model and synthesize (default: the schema's synthesized columns, else
            all). Other columns are released unchanged.
        records : array of bool or int indices, optional
            Records whose synthesized columns are replaced (default all); the others are
            released unchanged. The model is fitted to every record either way.
        random_seed : RandomSeed
            Seed of the sampler when the ``random_seed`` setting is ``None`` (default: the
            setting; another seed than a setting given raises ``SEED_CONFLICT``); each chain,
            and each regression of a sequential chain, gets its own child stream.

        Returns
        -------
        self

        Raises
        ------
        SchemaError
            A synthesized column the model does not take (naming it; e.g. a column that is not
            a count for :class:`~bayes_risk.models.PoissonMixture`), or a column named in the
            settings that is not in the data.
        ValidationError
            Invalid settings or record selection; for
            :class:`~bayes_risk.models.SequentialRegression` an unknown family, a family that
            does not fit the column's type, a predictor synthesized later in the order, a
            rank-deficient design.
        """
        started = time.perf_counter()
        self._check_settings()
        data, schema = self._prepare_data(data, schema=schema, synthesized=synthesized)
        flags = self._check_synthesized_records(records, len(data))
        posterior = self._draw_posterior(data, schema, self._fit_seed(random_seed))
        self.dtypes_ = record_dtypes(data)
        self._set_fitted(posterior, schema, len(data), data=data, synthesized_records=flags)
        record_fit_time(self, started)
        return self

    def _check_settings(self) -> None:
        """Check the model's own settings before fitting (naming the bad one)."""

    def _draw_posterior(self, data: pd.DataFrame, schema: Schema, seed: RandomSeed
                        ) -> xr.DataTree:
        """The posterior draws given the prepared confidential table (the work of :meth:`fit`)."""
        raise NotImplementedError(f"{type(self).__name__} implements its own fit.")

    # ------------------------------------------------------------------ data preparation
    def _prepare_data(
        self,
        data: pd.DataFrame,
        *,
        schema: Schema | None = None,
        synthesized: Sequence[str] | None = None,
        categorical: Sequence[str] | None = None,
        allow_nan: bool = False,
        fitting: bool = True,
    ) -> tuple[pd.DataFrame, Schema]:
        """Validate the confidential table and settle its schema and roles.

        ``schema`` (or one inferred with ``categorical`` overrides) gives types and levels;
        ``synthesized`` names the synthesized columns. If neither ``synthesized`` nor the schema's
        roles name any, every column is synthesized (full synthesis). ``fitting``: a level no
        record holds is dropped, unless the schema keeps it (``UNUSED_LEVEL``); ``False`` for
        records given with a posterior, whose levels are the posterior's.
        """
        return _records.prepare_data(self, data, schema, synthesized, categorical, allow_nan,
                                     fitting)

    # ------------------------------------------------------------------ sampling
    def _run_sampler(
        self,
        model: Any,
        *,
        step: Any = None,
        random_seed: RandomSeed = None,
        **sample_kwargs: Any,
    ) -> xr.DataTree:
        """Run ``pm.sample`` with this object's settings and return the posterior DataTree.

        Per-chain integer seeds are drawn from ``random_seed`` (so any accepted seed form works).
        Warm-up draws are discarded; their sampler statistics are kept in the
        ``warmup_sample_stats`` group when PyMC provides them.
        """
        return _sampling.run_sampler(self, model, step, random_seed, sample_kwargs)

    def _chain_seeds(self, random_seed: RandomSeed) -> list[int]:
        """Check the MCMC settings; one integer seed per chain drawn from ``random_seed``."""
        self._check_mcmc_settings()
        return _sampling.chain_seeds(random_seed, int(self.chains))

    def _run_gibbs(self, step: Any, layout: Any, *, random_seed: RandomSeed = None,
                   **extension: Any) -> xr.DataTree:
        """``_run_sampler`` for a model sampled by one Gibbs step alone: the step runs in a
        plain loop (``bayes_risk.models._bayesian.gibbs``), same seeds, same DataTree.
        ``extension``: ``max_sweeps`` and ``check`` of ``sample_gibbs`` (extension rounds)."""
        return _sampling.run_gibbs(self, step, layout, self._chain_seeds(random_seed), extension)

    def _set_fitted(
        self,
        posterior: xr.DataTree,
        schema: Schema,
        n_records: int,
        *,
        data: pd.DataFrame | None = None,
        synthesized_records: np.ndarray | None = None,
        check_convergence: bool = True,
    ) -> None:
        """Store the fitted state and run the convergence checks."""
        self.posterior_ = posterior
        self.schema_ = schema
        self._n_records = int(n_records)
        if data is not None:
            self.original_fingerprint_ = fingerprint_record(data, schema)
            self.data_fingerprint_ = self.original_fingerprint_["table"]
        self.synthesized_records_ = synthesized_records
        # columns whose missing values the sampler fills in (recorded in each release's
        # manifest; the utility measures compare them on the observed cells). None: unknown
        self.imputed_columns_: list[str] | None = None
        if data is not None:
            rows = data if synthesized_records is None else data.loc[
                np.asarray(synthesized_records, dtype=bool)]
            self.imputed_columns_ = [c for c in schema.synthesized
                                     if c in rows.columns and bool(rows[c].isna().any())]
        self.data_ = data if (data is not None and self._needs_data_for_synthesis()) else None
        self._after_posterior()
        self.convergence_ = None
        if check_convergence:
            self.convergence_ = self._check_convergence(warn=True)

    def _after_posterior(self) -> None:
        """Hook called whenever ``posterior_`` is set (fit, load, from_posterior): caches."""

    def _needs_data_for_synthesis(self) -> bool:
        """Whether :meth:`synthesize` needs the confidential records (saved with the model)."""
        return False

    @abstractmethod
    def _synthesize_one(
        self, draw: int, rng: np.random.Generator, data: pd.DataFrame | None
    ) -> pd.DataFrame:
        """One synthetic dataset from flattened posterior draw ``draw``.

        ``data`` is the confidential table when :meth:`_needs_data_for_synthesis` is true (else
        ``None``). Must return the original's columns in order, ``n_records`` rows, unsynthesized
        columns unchanged, and draw only from ``rng``.
        """

    def _synthesize_many(
        self, draws: np.ndarray, rngs: Sequence[np.random.Generator], data: pd.DataFrame | None
    ) -> list[pd.DataFrame]:
        """One synthetic dataset per flattened draw in ``draws``, dataset ``l`` drawn from
        ``rngs[l]`` only: :meth:`_synthesize_one` for each (a model overrides it to prepare once
        what the datasets share; the datasets must be those :meth:`_synthesize_one` makes)."""
        return [self._synthesize_one(int(h), rng, data)
                for h, rng in zip(draws, rngs, strict=True)]


    # ------------------------------------------------------------------ protocol (abstract)
    @abstractmethod
    def record_loglik(self, records: pd.DataFrame, *, draw_indices: Any = None) -> np.ndarray:
        """``[H, n]`` array of ``log p(y_i | Θ_h)`` (joint or conditional form, ``ratio_form``)."""

    @abstractmethod
    def dataset_loglik(
        self, synthetic: Sequence[pd.DataFrame] | SyntheticData, *, draw_indices: Any = None
    ) -> np.ndarray:
        """``[H, m]`` array of ``log p(Z_(l) | Θ_h)`` under the model's synthesis mode."""

    @abstractmethod
    def fit_augmented(
        self, data: pd.DataFrame, synthetic: pd.DataFrame, *, random_seed: RandomSeed = None
    ) -> BayesianSynthesizer:
        """A new fitted model whose draws come from ``p(Θ | y, Z_(l))`` (stabilised estimator)."""

    # ------------------------------------------------------------------ convergence
    @abstractmethod
    def _convergence_quantities(self) -> dict[str, np.ndarray]:
        """Label-invariant scalars to diagnose, each an array ``[chain, draw]``."""

    @abstractmethod
    def _validate_posterior(self, posterior: xr.DataTree, schema: Schema) -> None:
        """Check that ``posterior`` holds this model's parameters for ``schema`` (names, shapes,
        support); may add derived variables in place. Raise :class:`ValidationError`."""

    # -- thin methods: the work is done by module-level helpers of the family's modules

    @staticmethod
    def _spread_draws(H: int, m: int) -> np.ndarray:
        return _synthesis.spread_draws(H, m)

    def synthesize(self, m: int = 1, *, random_seed: RandomSeed = None) -> SyntheticData:
        """Generate ``m`` synthetic datasets, each from its own posterior draw.

        The draws are evenly spaced over the (chain-major) flattened draws, ``floor(l H / m) - 1``
        for ``l = 1..m``, so that they are far apart in the chain (Hu 2019 §3.2.5); each dataset
        gets an independent child random stream of ``random_seed``.

        Parameters
        ----------
        m : int
            Number of synthetic datasets, ``1 <= m <= H``.
        random_seed : RandomSeed
            Seed of the synthesis draws (same seed, same datasets); default: the
            ``random_seed`` setting.

        Returns
        -------
        SyntheticData
            ``datasets`` (same columns and row order as the original), ``draw_index`` (the
            flattened posterior draw behind each dataset), ``schema``, ``settings`` and
            ``synthesized_records``.

        Raises
        ------
        NotFittedError
            Before ``fit``.
        ValidationError
            If ``m`` is not an integer in ``1..H``.
        """
        return _synthesis.synthesize(self, m, random_seed=random_seed)

    def posterior_replicates(
        self,
        n: int | None,
        *,
        columns: Sequence[str] | None = None,
        chunk_size: int = 50,
        random_seed: RandomSeed = None,
        start: int = 0,
    ) -> Iterator[list[pd.DataFrame]]:
        """Draw posterior-predictive replicates of synthesized columns, in chunks.

        Replicate ``r`` takes a posterior draw ``θ_h`` uniformly at random among the ``H`` stored
        draws and then synthesizes exactly as :meth:`synthesize` does with that draw (given the
        unsynthesized columns; under partial synthesis only the selected records change), so
        the released datasets are such replicates too (Drechsler & Reiter 2008, eq. 5). Each
        replicate uses its own child stream ``r`` of ``random_seed``: the replicates do not depend
        on ``chunk_size``, and ``start`` continues a run.

        Parameters
        ----------
        n : int or None
            Number of replicates (``None``: chunks until the caller stops).
        columns : sequence of str, optional
            Synthesized columns to return (default: all synthesized columns).
        chunk_size : int
            Replicates per yielded list (memory; the values do not depend on it).
        random_seed : RandomSeed
            Seed of the replicates.
        start : int
            Index of the first replicate.

        Yields
        ------
        list of DataFrame
            Up to ``chunk_size`` tables ``[n_records, len(columns)]`` in record order.
        """
        return _synthesis.posterior_replicates(self, n, columns, chunk_size, random_seed, start)

    def convergence_report(self, *, warn: bool = False) -> pd.DataFrame:
        """Deprecated: use :meth:`convergence_summary` (its ``quantities`` hold these figures)
        or ``arviz.summary(model.posterior_, group="label_invariant")``.

        Issues a ``FutureWarning`` and returns, as before, one row per diagnosed quantity
        (columns ``mean``, ``sd``, ``ess_bulk``, ``ess_tail``, ``rhat``, ``flag``;
        ``attrs["mcmc_run"]``).

        Parameters
        ----------
        warn : bool
            Issue a :class:`ConvergenceWarning` naming the failed checks.

        Returns
        -------
        DataFrame
        """
        _convergence.warn_deprecated("convergence_report()")
        return self._check_convergence(warn=warn)

    def _check_convergence(self, *, warn: bool = False) -> pd.DataFrame:
        return _convergence.check_convergence(self, warn=warn)

    def _mcmc_run(self) -> dict[str, Any]:
        return _convergence.mcmc_run(self)

    def _round_verdict(self, posterior: Any, schema: Any, history: list[float]) -> str:
        return _convergence.round_verdict(self, posterior, schema, history)

    def _ess_min(self) -> float:
        """The ESS threshold of this fit: ``ESS_MIN`` per chain (Vehtari et al. 2021), read when
        called (tests lower it)."""
        return _convergence.ESS_MIN * int(self.posterior_["posterior"].sizes["chain"])

    def _convergence_warnings(self, df: pd.DataFrame) -> list[dict[str, Any]]:
        return _convergence.convergence_warnings(self, df)

    def mcmc_warnings(self) -> list[dict[str, Any]]:
        """Structured MCMC warnings of this fit: failed convergence checks and model codes.

        Returns
        -------
        list of dict
            Each with ``code`` (``"RHAT_HIGH"``, ``"LOW_ESS"``, ``"REGIMES_DISAGREE"``
            — chains in different regimes, with ``regimes`` —, or a model code such as
            ``"TRUNCATION_TOO_SMALL"``), ``quantities`` (the diagnosed quantities concerned),
            ``checks`` (the failed checks: ``code``, ``quantity``, ``statistic``, ``value``,
            ``threshold``; empty for a model code) and ``message``.
        """
        return _convergence.mcmc_warnings(self)

    def convergence_summary(
        self, kind: Literal["dict", "table"] | None = None
    ) -> dict[str, Any] | pd.DataFrame:
        """Convergence of the fit: the JSON-ready record written to ``convergence.json`` by
        :meth:`save` and included in the outputs of every run that uses the model.

        Mixture labels switch freely, so component-wise parameters are not diagnosed; the model
        supplies quantities that do not depend on labels (log-likelihood, cell probabilities,
        concentration, number of occupied components). Their draws are the posterior's group
        ``label_invariant`` (kept in a saved model's ``posterior.nc``), so that
        ``arviz.summary(model.posterior_, group="label_invariant")`` and ArviZ's plots show
        what is checked. The figures are ArviZ's, computed on those draws:
        ``arviz_stats.ess(x, method="bulk")``, ``arviz_stats.ess(x, method="tail", prob=(0.05,
        0.95))`` (the tail ESS of Vehtari et al. 2021; ArviZ 1.x's default ``prob``,
        ``rcParams["stats.ci_prob"]`` = 0.89, takes the 11 % and 89 % quantiles and gives
        larger values) and ``arviz_stats.rhat(x, method="rank")``. With one chain, R-hat is
        computed on the chain split in two halves (split-R-hat).

        Parameters
        ----------
        kind : {"dict", "table"}, optional
            Deprecated (``FutureWarning``): ``"dict"`` is the record returned without it;
            ``"table"`` returns the figures of ``quantities`` as a DataFrame with ArviZ's
            column names (``mean``, ``sd``, ``ess_bulk``, ``ess_tail``, ``r_hat``,
            ``failed_checks``); use ``pandas.DataFrame.from_dict(summary["quantities"],
            orient="index")`` or ``arviz.summary(model.posterior_, group="label_invariant")``.

        Returns
        -------
        dict
            ``chains``, ``draws`` (kept per chain), ``thin`` (sampler sweeps per kept draw
            after the warm-up; 1 where every draw is kept; the final one of a run that extended
            itself), ``tune``, ``rounds`` (1, or the rounds of a run that extended itself until
            its checks passed or its bound was reached), ``sweeps_per_chain`` (warm-up
            included), ``max_sweeps_per_chain`` (the bound of a self-extending run; 0: the
            run had the length asked for), ``stopped`` (why a self-extending run ended:
            ``"passed"``, ``"stuck"`` (R-hat stayed high, see ``DPMPM``, ``max_sweeps``),
            ``"max_sweeps"``; ``""``: no extension), ``thresholds`` (R-hat, ESS, and the
            quantiles ``ess_tail_prob`` of the tail ESS), ``quantities`` (per diagnosed
            quantity: ``mean``, ``sd``, ``ess_bulk``, ``ess_tail``, ``rhat``, ``flag``: the
            codes of its failed checks, ``"RHAT_HIGH"``, ``"LOW_ESS"``, joined by ``","``),
            ``failed_checks`` (one per quantity and statistic: ``code``, ``quantity``,
            ``statistic``, ``value``, ``threshold``), ``warnings`` (:meth:`mcmc_warnings`),
            ``passed`` (no failed check, no warning): R-hat > 1.01 or bulk/tail ESS below 100
            per chain fail (Vehtari et al. 2021), and ``regimes`` (two or more chains of a
            mixture: which chains agree on α, ``k*`` and the log-likelihood, each chain's start
            and means, each regime's evidence when tempered ladders estimated it —
            ``bayes_risk.models._bayesian.regimes.regime_summary``; ``None`` otherwise).

        References
        ----------
        Vehtari, A., Gelman, A., Simpson, D., Carpenter, B., Bürkner, P.-C. (2021). Rank-
        normalization, folding, and localization: an improved R-hat for assessing convergence of
        MCMC. Bayesian Analysis 16(2), 667–718. https://doi.org/10.1214/20-BA1221

        Examples
        --------
        >>> summary = model.convergence_summary()  # doctest: +SKIP
        >>> summary["passed"], summary["quantities"]["loglik"]["rhat"]  # doctest: +SKIP
        >>> import arviz as az  # doctest: +SKIP
        >>> az.summary(model.posterior_, group="label_invariant")  # doctest: +SKIP
        """
        return _convergence.convergence_summary(self, kind)

    def _convergence_table(self, *, passed: bool) -> pd.DataFrame:
        return _convergence.convergence_table(self, passed=passed)

    def _json_settings(self) -> dict[str, Any]:
        return to_jsonable(self._release_settings())

    def _identity(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        """What :func:`bayes_risk.data.provenance.model_id` hashes: method, settings, schema,
        records, the fitted table's fingerprint, the state and the posterior draws."""
        return _io.identity(self)

    def _state_to_json(self) -> dict[str, Any]:
        """Extra fitted state written to ``model.json`` (JSON-serialisable; none here)."""
        return {}

    def _state_from_json(self, state: Mapping[str, Any]) -> None:
        """Restore what :meth:`_state_to_json` wrote (nothing here)."""

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Save the fitted model as a folder, atomically.

        The folder holds ``posterior.nc`` (the posterior DataTree as NetCDF, h5netcdf engine),
        ``model.json`` (``method``, ``settings``, ``schema``, ``format_version``, number of
        records, synthesized-record flags, model state) and, when synthesis needs them (partial
        synthesis, class-O modes), the confidential records as ``data.parquet``. **The folder is
        then as confidential as the data**: release only the synthetic datasets, never the model
        folder.

        Returns
        -------
        Path
            The folder written.
        """
        return _io.save(self, path)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> BayesianSynthesizer:
        """Load a model saved with :meth:`save` (no pickle: NetCDF + JSON + Parquet).

        Raises
        ------
        ValidationError
            If the folder is not a saved model of this class or a file is missing.
        """
        return _io.load(cls, path)

    def check_fingerprint(self, data: pd.DataFrame) -> str | None:
        """Whether ``data`` is the table this model was fitted to.

        Compares the SHA-256 fingerprint (``table_fingerprint``) of ``data`` (its schema
        columns) with the one stored at fit time. Returns ``None`` when they agree (or no
        fingerprint was stored: a model saved by an older version), otherwise a short
        description of the difference.
        """
        return _io.check_fingerprint(self, data)

    @classmethod
    def from_posterior(
        cls,
        posterior: xr.DataTree | Mapping[str, Any],
        schema: Schema,
        *,
        n_records: int | None = None,
        data: pd.DataFrame | None = None,
        synthesized_records: np.ndarray | None = None,
        **settings: Any,
    ) -> BayesianSynthesizer:
        """Build a fitted model from posterior draws made elsewhere (Stan, brms, another chain).

        Parameters
        ----------
        posterior : DataTree or mapping of name → array
            A DataTree with a ``posterior`` group, or arrays whose leading dimensions are
            ``(chain, draw)``, or only ``(draw,)`` for one chain. Variable names and shapes are
            model specific (see the subclass's ``_validate_posterior``).
        schema : Schema
            Columns, types, levels and roles of the data the draws were fitted to.
        n_records : int, optional
            Number of records to synthesize per dataset (default: ``len(data)``).
        data : DataFrame, optional
            The confidential data, needed for partial synthesis and class-O modes.
        synthesized_records : array of bool, optional
            Records to synthesize (default all).
        **settings
            Model settings (``__init__`` arguments).

        Returns
        -------
        BayesianSynthesizer
            A fitted model; convergence is reported on the given draws.
        """
        return _io.from_posterior(cls, posterior, schema, n_records, data, synthesized_records,
                                  settings)

    def _needs_data_for_synthesis_given(self, schema: Schema) -> bool:
        return _io.needs_data_for_synthesis_given(self, schema)

    def _event_ndims(self) -> dict[str, int]:
        """Number of non-sample dimensions of each posterior variable (for dict input)."""
        return {}

    def _as_datatree(self, posterior: Any) -> xr.DataTree:
        return _io.as_datatree(posterior, self._event_ndims(), type(self).__name__)
