"""The base class of the PyMC-based synthesizers (:doc:`/user_guide/bayesian_models`).

Draws are flattened chain-major, ``h = c * draws + d``, in every ``[H, ...]`` array.
"""

from __future__ import annotations

import os
from abc import ABCMeta, abstractmethod
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, ClassVar, Literal

import numpy as np
import pandas as pd

from bayes_risk._constraints import Flag, Interval, Requires, check_relations, check_value
from bayes_risk._io import to_jsonable
from bayes_risk._rng import RandomSeed, spawn
from bayes_risk.data.fingerprint import fingerprint_problem, fingerprint_record
from bayes_risk.data.levels import drop_unused_levels
from bayes_risk.data.normalise import check_not_empty
from bayes_risk.data.provenance import model_release
from bayes_risk.data.schema import SCHEMA, Schema, infer_schema
from bayes_risk.data.synthetic import SyntheticData
from bayes_risk.data.validate import (
    check_m,
    require_categorical,
    require_columns,
    require_frame,
    validate_table,
)
from bayes_risk.exceptions import ValidationError
from bayes_risk.models._bayesian import convergence_report
from bayes_risk.models._bayesian.design import record_dtypes
from bayes_risk.models._bayesian.posterior import (
    PosteriorDims,
    PosteriorVariable,
    as_datatree,
    check_posterior,
    concrete,
    schema_dims,
)
from bayes_risk.models._bayesian.records import (
    check_draw_indices,
    check_synthesized_records,
    stacked_values,
    synthesized_part,
)
from bayes_risk.models._bayesian.sampling import Sampling, moved_keywords
from bayes_risk.models._bayesian.timing import fit_clock, record_fit_time
from bayes_risk.models.base import check_is_fitted, synthesized_columns
from bayes_risk.models.persistence import StateField, load_bayesian, save_bayesian
from bayes_risk.models.settings_group import SAMPLING, GroupedSettingsSynthesizer
from bayes_risk.models.trees.missing import refusal_hint

if TYPE_CHECKING:  # pragma: no cover
    import xarray as xr

__all__ = ["BayesianSynthesizer"]

#: :meth:`BayesianSynthesizer.from_posterior`'s arguments against each other
FROM_POSTERIOR_RELATIONS = (Requires("synthesized_records", "data", code="INVALID_ARGUMENT",
                                     why="the records not synthesized are released as they "
                                     "are, from the confidential data"),)


class BayesianSynthesizer(GroupedSettingsSynthesizer, metaclass=ABCMeta):
    """Abstract base class of the PyMC-based synthesizers (not instantiated directly).

    Parameters
    ----------
    sampling : Sampling, optional
        How the sampler runs (:class:`~bayes_risk.models.Sampling`); ``None`` or a field left
        at ``None``: the model's ``sampling_defaults``.
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
        Columns, types, levels and roles the model was fitted with.
    data_ : DataFrame or None
        The confidential records, kept only when synthesis needs them (partial synthesis,
        class-O modes). **Confidential**: it is saved with the model.
    synthesized_records_ : ndarray of bool or None
        Records whose synthesized columns are replaced (``None``: all records).
    convergence_ : DataFrame or None
        ESS and R-hat of the label-invariant scalars (see :meth:`convergence_summary`).

    Notes
    -----
    How to write a subclass: :doc:`/adding_a_model`.
    """

    method_name: ClassVar[str] = "bayesian"
    #: Model class ("P"/"O") of the default synthesis mode (subclasses may set it per instance).
    model_class: Literal["P", "O"] = "P"
    #: Hu 2019 §3.2.5 form of the importance ratios.
    ratio_form: Literal["joint", "conditional"] = "joint"

    settings_group = SAMPLING
    #: the sampler settings (:class:`~bayes_risk.models.Sampling` fields) the model takes, with
    #: its defaults; a field left at ``None`` in ``sampling`` takes these
    sampling_defaults: ClassVar[Mapping[str, Any]] = MappingProxyType(
        {"draws": 1000, "tune": 500, "chains": 1, "cores": 1})
    #: the variables of the model's posterior: names, dims after ``(chain, draw)``,
    #: constraints; the sizes of their dims are the fitted model's (``_posterior_dims``)
    posterior_variables: ClassVar[tuple[PosteriorVariable, ...]] = ()
    #: the fitted attributes a saved folder keeps beside the draws (``model.json``'s
    #: ``state``, :meth:`persisted_state`), by field; draws made elsewhere take the defaults
    saved_state: ClassVar[Mapping[str, StateField]] = MappingProxyType(
        {"dtypes": StateField("dtypes_", dict, ())})

    def __new__(cls, *args: Any, **kwargs: Any) -> BayesianSynthesizer:
        # the sampler settings moved into sampling=Sampling(...): name the migration, not
        # Python's "unexpected keyword argument"
        params = cls._param_names()
        moved_keywords(cls.__name__, {k: v for k, v in kwargs.items() if k not in params})
        return super().__new__(cls)

    def __init__(
        self,
        *,
        sampling: Sampling | None = None,
        random_seed: RandomSeed = None,
        progressbar: bool = True,
    ) -> None:
        self.sampling = sampling
        self.random_seed = random_seed
        self.progressbar = progressbar

    @property
    def resolved_sampling(self) -> Sampling:
        """The sampler settings a fit runs: ``sampling``'s fields left at ``None`` set to the
        model's ``sampling_defaults`` (``draws``, ``thin`` and ``max_sweeps`` may stay ``None``
        where the model resolves them from its run: DPMPM).

        Raises
        ------
        ValidationError
            ``sampling`` is not a :class:`~bayes_risk.models.Sampling`, or sets a field this
            model's sampler does not take (``OPTION_CONFLICT``).
        """
        return self._resolved_group()

    def check_mcmc_settings(self) -> None:
        """Check the sampler settings before a run (``sampling.run_pymc``, ``run_gibbs``).

        Raises
        ------
        ValidationError
            ``sampling`` of the wrong type or with a field this model does not take,
            ``progressbar`` not a bool.
        """
        # the values are Sampling's to check (once, when it is made): here its type and fields
        _ = self.resolved_sampling
        check_value(self.progressbar, Flag(), "progressbar")

    def _synthesized_rows(self) -> np.ndarray:
        """Positions of the records whose synthesized columns are replaced (all by default)."""
        if getattr(self, "synthesized_records_", None) is None:
            return np.arange(self.n_records, dtype=np.int64)
        return np.flatnonzero(self.synthesized_records_).astype(np.int64)

    def _synthesized_part(self, z: pd.DataFrame, name: str = "synthetic") -> pd.DataFrame:
        """The synthesized records' rows of a released dataset (all rows under full synthesis)."""
        if self.synthesized_records_ is None:
            return z
        return synthesized_part(z, self._synthesized_rows(), self.n_records, name)

    def _run_settings(self) -> dict[str, int]:
        """The run length of a fit: ``{"draws": ...}`` (DPMPM adds ``thin``, ``max_sweeps``)."""
        return {"draws": self.resolved_sampling.draws}

    def _check_fitted(self, method: str | None = None) -> None:
        check_is_fitted(self, ("posterior_", "schema_"), method=method,
                        how="(or build it with 'from_posterior' / 'load')")

    @property
    def n_draws(self) -> int:
        """Number of posterior draws ``H = chains × draws`` (flattened chain-major)."""
        self._check_fitted()
        post = self.posterior_["posterior"]
        return int(post.sizes["chain"] * post.sizes["draw"])

    def draw_chains(self) -> np.ndarray:
        """``[H]`` chain of each flattened draw
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
        """A ``draw_indices=`` argument (``None``, integers or a mask) as int64 draw indices."""
        return check_draw_indices(self.n_draws, draw_indices)

    def _stacked(self, name: str, draw_indices: np.ndarray | None = None) -> np.ndarray:
        self._check_fitted()
        return stacked_values(self.posterior_["posterior"], name, draw_indices)

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
            Confidential table.
        schema : Schema, optional
            Column types, levels and roles (default inferred: integer columns are counts).
        synthesized : sequence of str, optional
            Columns to model and synthesize (default: the schema's synthesized columns, else all).
        records : array of bool or int indices, optional
            Records whose synthesized columns are replaced (default all; the model is fitted to
            every record).
        random_seed : RandomSeed
            Seed of the sampler when the ``random_seed`` setting is ``None`` (``SEED_CONFLICT``
            if it differs from a setting given).

        Returns
        -------
        self

        Raises
        ------
        SchemaError
            A synthesized column the model does not take, or a column named in the settings that
            is not in the data.
        ValidationError
            Invalid settings or record selection.
        """
        started = fit_clock()
        self._check_settings()
        data, schema = self._prepare_data(data, schema=schema, synthesized=synthesized)
        flags = check_synthesized_records(records, len(data))
        posterior = self._draw_posterior(data, schema, self._fit_seed(random_seed))
        self.dtypes_ = record_dtypes(data)
        self._set_fitted(posterior, schema, len(data), data=data, synthesized_records=flags)
        record_fit_time(self, started)
        return self

    def _check_settings(self) -> None:
        """Check the model's own settings before fitting (naming the bad one)."""

    def _missing_refusal(self) -> str:
        """Why :meth:`fit` refuses empty cells (``""``: it accepts them)."""
        from bayes_risk.contract import capabilities

        return "" if capabilities(self).imputes else refusal_hint(type(self).__name__)

    def _draw_posterior(self, data: pd.DataFrame, schema: Schema, seed: RandomSeed
                        ) -> xr.DataTree:
        """The posterior draws given the prepared confidential table (the work of :meth:`fit`)."""
        raise NotImplementedError(f"{type(self).__name__} implements its own fit.")

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
        """Validate the confidential table and settle its schema and roles (none: all
        synthesized); ``fitting`` drops levels no record holds (``UNUSED_LEVEL``)."""
        check_not_empty(require_frame(data, "data"), "data", "a model is fitted to records")
        data = data.copy()
        data.columns = [str(c) for c in data.columns]
        if check_value(schema, [SCHEMA, None], "schema") is None:
            schema = infer_schema(data, categorical=categorical)
        synthesized = synthesized_columns(synthesized, schema)
        if synthesized is not None:
            schema = schema.with_roles(synthesized)
        if not schema.synthesized:
            schema = schema.with_roles(schema.names)
        refusal = "" if allow_nan else self._missing_refusal()
        # a column missing from data or outside the schema: validate_table's
        validate_table(data, schema, name="data", allow_nan=not refusal, missing_hint=refusal)
        data = data[schema.names]
        if fitting:
            schema = drop_unused_levels(data, schema)
        _check_kinds(self, schema)
        return data.reset_index(drop=True), schema

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
        if not hasattr(self, "dtypes_"):  # draws made elsewhere (from_posterior)
            self.dtypes_ = record_dtypes(self.data_) if self.data_ is not None else {}
        for name, field in self.saved_state.items():  # the others: their defaults
            if not hasattr(self, field.attribute):
                setattr(self, field.attribute, field.read({}, name))
        self._after_posterior()
        self.convergence_ = None
        if check_convergence:
            self.convergence_ = convergence_report.check_convergence(self, warn=True)

    def _after_posterior(self) -> None:
        """Hook called whenever ``posterior_`` is set (fit, load, from_posterior): caches."""

    def _needs_data_for_synthesis(self) -> bool:
        """Whether :meth:`synthesize` needs the confidential records: it copies some, or
        draws from them (class O)."""
        return self.model_class == "O" or bool(
            self.schema_ is not None and self.schema_.unsynthesized) or (
            getattr(self, "synthesized_records_", None) is not None)

    @abstractmethod
    def _synthesize_one(
        self, draw: int, rng: np.random.Generator, data: pd.DataFrame | None
    ) -> pd.DataFrame:
        """One synthetic dataset from flattened draw ``draw``, drawing only from ``rng``."""

    def _synthesize_many(
        self, draws: np.ndarray, rngs: Sequence[np.random.Generator], data: pd.DataFrame | None
    ) -> list[pd.DataFrame]:
        """:meth:`_synthesize_one` for each draw (a model may override it, same datasets)."""
        return [self._synthesize_one(int(h), rng, data)
                for h, rng in zip(draws, rngs, strict=True)]

    @abstractmethod
    def record_loglik(self, records: pd.DataFrame, *, draw_indices: Any = None) -> np.ndarray:
        """``[H, n]`` array of ``log p(y_i | Θ_h)`` (joint or conditional form, ``ratio_form``)."""

    @abstractmethod
    def dataset_loglik(
        self, synthetic: Sequence[pd.DataFrame] | SyntheticData, *, draw_indices: Any = None
    ) -> np.ndarray:
        """``[H, m]`` array of ``log p(Z_(l) | Θ_h)`` under the model's synthesis mode."""

    def fit_augmented(
        self, data: pd.DataFrame, synthetic: pd.DataFrame, *, random_seed: RandomSeed = None
    ) -> BayesianSynthesizer:
        """A new model, same settings, fitted to the confidential records and the synthesized
        rows of ``synthetic`` stacked: draws from ``p(Θ | y, Z_(l))`` (:doc:`/methods/attribute`,
        The stabilised estimator).

        Parameters
        ----------
        data : DataFrame
            The confidential records the model was fitted to.
        synthetic : DataFrame
            One released dataset ``Z_(l)``.
        random_seed : RandomSeed
            Seed of the refit, as its setting (default: this model's).

        Returns
        -------
        BayesianSynthesizer
            The new model, fitted.

        Raises
        ------
        SchemaError
            If ``data`` or ``synthetic`` lacks a column of the model (``MISSING_COLUMN``).
        """
        self._check_fitted("fit_augmented")
        names = self.schema_.names
        tables = []
        for name, df in (("data", data), ("synthetic", self._synthesized_part(synthetic))):
            require_columns(require_frame(df, name), names, name)
            tables.append(self._augmentation_part(df[names], name))
        params = self.get_params(deep=False)
        if random_seed is not None:  # the refit's own seed, as its setting
            params["random_seed"] = random_seed
        return self._refit(type(self)(**params), data, pd.concat(tables, ignore_index=True))

    def _augmentation_part(self, table: pd.DataFrame, name: str) -> pd.DataFrame:
        """``table`` (``data``, or ``synthetic``'s synthesized rows; the model's columns) as
        :meth:`fit_augmented` stacks it."""
        return table

    def _refit(self, new: BayesianSynthesizer, data: pd.DataFrame, both: pd.DataFrame
               ) -> BayesianSynthesizer:
        """``new`` (this model's settings) fitted to the stacked table ``both`` (the
        confidential records ``data`` and the synthesized rows, :meth:`fit_augmented`)."""
        return new.fit(both, schema=self.schema_.keeping_levels())

    @abstractmethod
    def convergence_quantities(self) -> dict[str, np.ndarray]:
        """Label-invariant scalars to diagnose (the convergence report's), each family's own.

        Returns
        -------
        dict of str to ndarray
            Each an array ``[chain, draw]``.
        """

    def _posterior_dims(self, posterior: xr.DataTree | None, schema: Schema,
                        data: pd.DataFrame | None = None) -> PosteriorDims:
        """The sizes of the dims of ``posterior_variables`` for ``schema`` (``posterior``:
        the draws being adopted, with the fitted table ``data`` when given; ``None`` for draws
        given as arrays), after the model's own checks of a posterior it adopts; by default
        those the schema gives by their names (``posterior.schema_dims``)."""
        _check_kinds(self, schema)
        return schema_dims(schema, self.posterior_variables)

    @staticmethod
    def _spread_draws(H: int, m: int) -> np.ndarray:
        """``h_l = floor(l H / m) - 1``, ``l = 1..m`` (far apart in the chain, Hu 2019 §3.2.5)."""
        return ((np.arange(1, m + 1, dtype=np.int64) * H) // m - 1).astype(np.int64)

    def _synthesis_plan(self, m: int, random_seed: RandomSeed
                        ) -> tuple[np.ndarray, list[np.random.Generator], RandomSeed]:
        """The posterior draws and child generators of ``m`` synthetic datasets, and the seed."""
        self._check_fitted("synthesize")
        m = check_m(m)
        random_seed = self._seed(random_seed)
        H = self.n_draws
        if m > H:
            raise ValidationError(
                f"m = {m} synthetic datasets need m distinct posterior draws, but the model has "
                f"only H = {H}; sample more draws.",
                code="TOO_FEW_DRAWS"
            )
        return self._spread_draws(H, m), spawn(random_seed, m), random_seed

    def synthesize(self, m: int = 1, *, random_seed: RandomSeed = None) -> SyntheticData:
        """Generate ``m`` synthetic datasets from evenly spaced posterior draws (Hu 2019 §3.2.5).

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
            The datasets (original column and row order) and the draw behind each.

        Raises
        ------
        NotFittedError
            Before ``fit``.
        ValidationError
            If ``m`` is not an integer in ``1..H``.
        """
        idx, rngs, random_seed = self._synthesis_plan(m, random_seed)
        return model_release(
            self, self._synthesize_many(idx, rngs, self.data_), random_seed=random_seed,
            draw_index=[int(h) for h in idx], records=self.synthesized_records_,
            extra={"model_class": self.model_class, "ratio_form": self.ratio_form},
            proper=True, imputed_columns=getattr(self, "imputed_columns_", None))

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

        Each from a uniformly drawn posterior draw and its own child stream
        (:doc:`/user_guide/posterior_replicates`).

        Parameters
        ----------
        n : int or None
            Number of replicates (``None``: chunks until the caller stops).
        columns : sequence of str, optional
            Synthesized columns to return (default: all).
        chunk_size : int
            Replicates per yielded list (the values do not depend on it).
        random_seed : RandomSeed
            Seed of the replicates.
        start : int
            Index of the first replicate.

        Yields
        ------
        list of DataFrame
            Up to ``chunk_size`` tables ``[n_records, len(columns)]`` in record order.
        """
        from bayes_risk.models._replicates import check_replicate_columns, iter_replicates

        self._check_fitted()
        cols = check_replicate_columns(columns, self.schema_.synthesized, type(self).__name__)
        H = self.n_draws

        def draw_one(rng: np.random.Generator) -> pd.DataFrame:
            return self._synthesize_one(int(rng.integers(H)), rng, self.data_)

        return iter_replicates(draw_one, n, columns=cols, chunk_size=chunk_size,
                               random_seed=random_seed, start=start)

    def mcmc_warnings(self) -> list[dict[str, Any]]:
        """Structured MCMC warnings of this fit: failed convergence checks and model codes.

        Returns
        -------
        list of dict
            Each with ``code`` (e.g. ``"RHAT_HIGH"``, ``"TRUNCATION_TOO_SMALL"``),
            ``quantities``, ``checks`` (the failed checks) and ``message``.
        """
        self._check_fitted()
        return convergence_report.mcmc_warnings(self)

    def text_lines(self) -> list[str]:
        """The fit in words, as ``bayes-risk fit`` prints it: the table it was fitted to and
        its run, the columns it synthesizes, its identity, a private model's ε, and the
        convergence checks (R-hat, ESS; Vehtari et al. 2021) as :meth:`convergence_text`.

        Returns
        -------
        list of str
            One line each.

        Raises
        ------
        NotFittedError
            Before ``fit``.
        """
        self._check_fitted("text_lines")
        head, lines = self._fit_lines()
        run, *checks = convergence_report.convergence_lines(self)
        eps = getattr(self, "epsilon_per_dataset", None)  # a synthesizer with a known ε
        if eps is not None:
            lines.append(f"differential privacy: ε = {eps:.4g} per synthetic dataset of "
                         f"{self.n_records:,} records (prior count {self.alpha_:.4g} per cell); "
                         "a release of m datasets has m·ε (the fitted model itself is not "
                         "private: keep it)")
        return [f"{head} ({run})", *lines, *checks]

    def convergence_text(self) -> str:
        """The run and its convergence checks in words, as ``bayes-risk fit`` prints them: the
        chains, draws and warm-up; the largest R-hat and smallest bulk ESS of the quantities
        checked and whether every check passed; chains in disagreeing regimes; the failed
        checks with their quantities and values (:meth:`convergence_summary` has them all).

        Examples
        --------
        >>> print(model.convergence_text())  # doctest: +SKIP
        2 chain(s) x 500 draws after 500 tuning
        convergence: max R-hat 1.004, min bulk ESS 612 over 7 label-invariant quantities (passed)
        """
        self._check_fitted()
        return "\n".join(convergence_report.convergence_lines(self))

    def convergence_summary(self) -> dict[str, Any]:
        """Convergence of the fit: the record written to ``convergence.json`` by :meth:`save`.

        R-hat and ESS of label-invariant quantities (Vehtari et al. 2021), the posterior's group
        ``label_invariant``; see :doc:`/user_guide/bayesian_models`.

        Returns
        -------
        dict
            The run (``chains``, ``draws``, ``thin``, ``tune``, ``rounds``, ...), ``thresholds``,
            ``quantities``, ``failed_checks``, ``warnings`` (:meth:`mcmc_warnings`), ``passed``
            and ``regimes`` (which chains agree; ``None`` with one chain).

        Examples
        --------
        >>> summary = model.convergence_summary()  # doctest: +SKIP
        >>> summary["passed"], summary["quantities"]["loglik"]["rhat"]  # doctest: +SKIP
        >>> import arviz as az  # doctest: +SKIP
        >>> az.summary(model.posterior_, group="label_invariant")  # doctest: +SKIP
        """
        self._check_fitted()
        return convergence_report.convergence_summary(self)

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Save the fitted model as a folder (``posterior.nc``, ``convergence.json``,
        ``model.json``), atomically (``bayes_risk.models.persistence``).

        When synthesis needs them the confidential records are saved too (``data.parquet``):
        **the folder is then as confidential as the data**.

        Returns
        -------
        Path
            The folder written.
        """
        self._check_fitted()
        return save_bayesian(self, path)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> BayesianSynthesizer:
        """Load a model saved with :meth:`save` (no pickle: NetCDF + JSON + Parquet).

        Raises
        ------
        ValidationError
            If the folder is not a saved model of this class or a file is missing
            (``MODEL_UNSUITED``, ``MODEL_FORMAT_VERSION``, ``MODEL_DAMAGED``).
        """
        return load_bayesian(cls, path)

    def check_fingerprint(self, data: pd.DataFrame) -> str | None:
        """Whether ``data`` is the table this model was fitted to (SHA-256 fingerprints).

        Returns ``None`` when they agree (or none was stored), else what differs.
        """
        self._check_fitted()
        record = getattr(self, "original_fingerprint_", None) or {}
        return fingerprint_problem(data, getattr(self, "data_fingerprint_", None), self.schema_,
                                   self._n_records, record.get("columns"))

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
        """Build a fitted model from posterior draws made elsewhere (Stan, brms, ...).

        Parameters
        ----------
        posterior : DataTree or mapping of name → array
            A DataTree with a ``posterior`` group, or arrays with leading dimensions
            ``(chain, draw)`` (or ``(draw,)``); names and shapes are model specific.
        schema : Schema
            Columns, types, levels and roles of the data the draws were fitted to.
        n_records : int, optional
            Records per synthetic dataset (default: ``len(data)``).
        data : DataFrame, optional
            The confidential data, needed for partial synthesis and class-O modes.
        synthesized_records : array of bool, optional
            Records to synthesize (default all).
        **settings
            Model settings (``__init__`` arguments).

        Returns
        -------
        BayesianSynthesizer
        """
        check_relations(dict(synthesized_records=synthesized_records, data=data),
                        FROM_POSTERIOR_RELATIONS)
        model = cls(**settings)
        check_value(schema, SCHEMA, "schema")
        if not schema.synthesized:  # no roles given: full synthesis, as in fit
            schema = schema.with_roles(schema.names)
        dt = as_datatree(posterior, lambda: [v for v, _ in concrete(
            model._posterior_dims(None, schema), model.posterior_variables)], cls.__name__)
        if data is not None:
            data, _ = model._prepare_data(data, schema=schema, allow_nan=True, fitting=False)
        if n_records is None:
            if data is None:
                raise ValidationError("from_posterior needs n_records or data (the number of "
                                      "records per synthetic dataset).")
            n_records = len(data)
        n_records = check_value(n_records, Interval(int, 1), "n_records")
        flags = None
        if synthesized_records is not None:
            flags = np.asarray(synthesized_records, dtype=bool)
            if flags.shape != (n_records,):
                raise ValidationError(
                    f"synthesized_records must have one flag per record ({n_records}).")
        return model.adopt(dt, schema, n_records, data=data, flags=flags)

    def adopt(self, posterior: xr.DataTree, schema: Schema, n_records: int, *,
               data: pd.DataFrame | None, flags: np.ndarray | None,
               state: Mapping[str, Any] | None = None,
               arrays: Mapping[str, np.ndarray] | None = None) -> BayesianSynthesizer:
        """Fit this new instance to checked draws (of :meth:`from_posterior`, or with the
        ``state`` of a saved folder, whose convergence table is not remade).

        Parameters
        ----------
        posterior : DataTree
            The draws, checked against ``posterior_variables``.
        schema : Schema
        n_records : int
            Records of the fitted table.
        data : DataFrame or None
            The fitted table, when synthesis copies records from it.
        flags : ndarray of bool or None
            The synthesized records (``None``: all).
        state : mapping, optional
            A saved folder's fitted state (:meth:`persisted_state`'s fields).
        arrays : mapping of str to ndarray, optional
            Its arrays (:meth:`persisted_state`'s arrays).

        Returns
        -------
        BayesianSynthesizer
            ``self``, fitted.
        """
        if state is not None:
            self.restore_state(state, arrays or {})
        posterior = check_posterior(posterior, self._posterior_dims(posterior, schema, data),
                                    self.posterior_variables, type(self).__name__)
        self.schema_ = schema  # read by _needs_data_for_synthesis (a new instance: no clean-up)
        if data is None and self._needs_data_for_synthesis():
            raise ValidationError(
                "this model's synthesis mode needs the confidential data: pass data=..."
            )
        self._set_fitted(posterior, schema, n_records, data=data, synthesized_records=flags,
                         check_convergence=state is None)
        return self

    def _identity(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        """What :func:`bayes_risk.data.provenance.model_id` hashes."""
        from bayes_risk.data.provenance import identity_settings

        self._check_fitted()
        flags = self.synthesized_records_
        post = self.posterior_["posterior"]
        state, arrays = self.persisted_state()
        parts = {
            "method": self.method_name, "class": type(self).__name__,
            # as its releases record them (DPMPM: the table of structural zeros, not its path)
            "settings": identity_settings(self.saved_settings()),
            "schema": self.schema_.to_dict(), "n_records": int(self._n_records),
            "synthesized_records": None if flags is None else
            [int(i) for i in np.flatnonzero(flags)],
            "state": to_jsonable(state),
            "data": getattr(self, "data_fingerprint_", None),
        }
        return parts, {**{str(k): np.asarray(post[k].values) for k in post.data_vars}, **arrays}

    def persisted_state(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        """The fitted state a saved folder keeps besides the draws (the attributes
        ``saved_state`` declares), read back by :meth:`restore_state`
        (``bayes_risk.models.persistence``: the protocol of every synthesizer).

        Returns
        -------
        state : dict
            JSON-ready (``model.json``'s ``state``).
        arrays : dict of str to ndarray
            Named arrays (``arrays.npz``); none of the package's families has any beyond its
            draws, which ``posterior.nc`` holds.
        """
        return {name: field.value(self) for name, field in self.saved_state.items()}, {}

    def restore_state(self, state: Mapping[str, Any], arrays: Mapping[str, np.ndarray]) -> None:
        """Set the fitted state of :meth:`persisted_state` on this new instance (``load``).

        Parameters
        ----------
        state : mapping
            ``model.json``'s ``state``.
        arrays : mapping of str to ndarray
            The saved arrays (``arrays.npz``; empty without one).

        Raises
        ------
        ValueError
            A field that fails its declared check (the loader: a damaged folder).
        """
        for name, field in self.saved_state.items():
            setattr(self, field.attribute, field.read(state, name))


def _check_kinds(model: BayesianSynthesizer, schema: Schema) -> None:
    """Refuse a column that is not categorical, or has no level, for a model of categorical
    columns only (``info.categorical_only``)."""
    info = getattr(model, "info", None)
    if info is not None and info.categorical_only:
        require_categorical(schema, type(model).__name__)
