"""The base class of the PyMC-based synthesizers (:doc:`/user_guide/bayesian_models`): the
sampler's settings and run, synthesis from the draws and the fit in words; the draws and the
state fitted with them are :class:`~bayes_risk.models._bayesian.fitted.FittedPosterior`'s.

Draws are flattened chain-major, ``h = c * draws + d``, in every ``[H, ...]`` array.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Iterator, Mapping, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, ClassVar, Literal

import numpy as np
import pandas as pd

from bayes_risk._constraints import Flag, check_value
from bayes_risk._rng import RandomSeed, spawn
from bayes_risk.data.provenance import model_release
from bayes_risk.data.schema import Schema
from bayes_risk.data.synthetic import SyntheticData
from bayes_risk.data.validate import check_m, require_columns, require_frame
from bayes_risk.exceptions import ValidationError
from bayes_risk.models._bayesian import convergence_report
from bayes_risk.models._bayesian.design import record_dtypes
from bayes_risk.models._bayesian.fitted import FittedPosterior
from bayes_risk.models._bayesian.records import check_synthesized_records
from bayes_risk.models._bayesian.sampling import Sampling, moved_keywords
from bayes_risk.models._bayesian.timing import fit_clock, record_fit_time
from bayes_risk.models.settings_group import SAMPLING

if TYPE_CHECKING:  # pragma: no cover
    import xarray as xr

__all__ = ["BayesianSynthesizer"]


class BayesianSynthesizer(FittedPosterior):
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
    #: Hu 2019 §3.2.5 form of the importance ratios.
    ratio_form: Literal["joint", "conditional"] = "joint"

    settings_group = SAMPLING
    #: the sampler settings (:class:`~bayes_risk.models.Sampling` fields) the model takes, with
    #: its defaults; a field left at ``None`` in ``sampling`` takes these
    sampling_defaults: ClassVar[Mapping[str, Any]] = MappingProxyType(
        {"draws": 1000, "tune": 500, "chains": 1, "cores": 1})

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

    def _run_settings(self) -> dict[str, int]:
        """The run length of a fit: ``{"draws": ...}`` (DPMPM adds ``thin``, ``max_sweeps``)."""
        return {"draws": self.resolved_sampling.draws}

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

    def _draw_posterior(self, data: pd.DataFrame, schema: Schema, seed: RandomSeed
                        ) -> xr.DataTree:
        """The posterior draws given the prepared confidential table (the work of :meth:`fit`)."""
        raise NotImplementedError(f"{type(self).__name__} implements its own fit.")

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
        """Convergence of the fit: the record written to ``convergence.json`` by
        :meth:`~bayes_risk.models._bayesian.fitted.FittedPosterior.save`.

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

