"""Shared machinery of the PyMC-based synthesis models (DPMPM, Poisson mixtures, regressions).

:class:`BayesianSynthesizer` holds what every Bayesian synthesizer of the package has in common:
MCMC settings, the posterior draws (an ArviZ ``xarray.DataTree``, as returned by ``pm.sample``),
the flattening of ``chain × draw`` into ``H`` draws, synthesis from ``m`` draws far apart in the
chain (Hu 2019 §3.2.5), saving/loading (NetCDF + JSON, never pickle), construction from draws made
elsewhere (:meth:`BayesianSynthesizer.from_posterior`) and convergence diagnostics on
label-invariant scalars (ArviZ rank-normalised ESS and R-hat).

Contract for subclasses
-----------------------
A subclass (e.g. :class:`bayes_risk.models.dpmpm.DPMPM`) must

* define ``method_name`` (its registry name), ``model_class`` ("P"/"O", methods, Two classes of
  synthesis model) and ``ratio_form`` ("joint"/"conditional", Hu 2019 §3.2.5), and an ``__init__``
  that lists **all** its settings (model settings plus the MCMC settings of this class: ``tune``,
  ``draws``, ``chains``, ``cores``, ``random_seed``, ``progressbar``) and passes the MCMC ones to
  ``super().__init__``;
* implement ``fit(data, *, schema=None, synthesized=None, random_seed=None, ...)``: validate with
  :meth:`_prepare_data`, build the PyMC model, sample with :meth:`_run_sampler` and finish with
  :meth:`_set_fitted`;
* implement ``_synthesize_one(draw, rng, data)`` (one synthetic dataset from flattened draw
  ``draw``), ``record_loglik``, ``dataset_loglik``, ``neighbourhood_loglik`` and
  ``fit_augmented`` (the likelihood protocol of :mod:`bayes_risk.protocols`); a model that can
  be in class O also provides ``own_record_delta(record, candidates, datasets, *, draws=None)``
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
``[H, ...]`` array returned by a model, every ``draws=`` argument and every ``draw_index``
recorded in :class:`~bayes_risk.data.SyntheticData` uses this order.
"""

from __future__ import annotations

import os
import warnings
from abc import ABCMeta, abstractmethod
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

import numpy as np
import pandas as pd

from bayes_risk._io import atomic_dir, to_jsonable, write_json
from bayes_risk._rng import RandomSeed, as_generator, seed_to_json, spawn
from bayes_risk.data.schema import Schema, infer_schema
from bayes_risk.data.synthetic import SyntheticData
from bayes_risk.data.validate import check_m, validate_table
from bayes_risk.exceptions import (
    CALLER,
    ConvergenceWarning,
    NotFittedError,
    SchemaError,
    ValidationError,
)
from bayes_risk.models.base import (
    SETTINGS_FILE,
    BaseSynthesizer,
    read_model_meta,
    synthesized_columns,
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

POSTERIOR_FILE = "posterior.nc"
#: convergence record of a saved model (R-hat / ESS of the diagnosed quantities, warnings)
CONVERGENCE_FILE = "convergence.json"
DATA_FILE = "data.parquet"
FORMAT_VERSION = 1
#: R-hat above this flags non-convergence (Vehtari et al. 2021 recommend 1.01).
RHAT_MAX = 1.01
#: bulk/tail ESS below this flags too few effective draws (Vehtari et al. 2021: 100).
ESS_MIN = 100.0


def _check_int(value: Any, name: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or int(value) < minimum:
        raise ValidationError(f"{name} must be an integer >= {minimum}. Got {value!r}.")
    return int(value)


def _check_complete(dt: Any, chains: int, draws: int) -> None:
    """PyMC returns the draws made so far when interrupted: a partial posterior is refused."""
    post = dt["posterior"] if "posterior" in dt.children else None
    got = (int(post.sizes.get("chain", 0)), int(post.sizes.get("draw", 0))) if post else (0, 0)
    if got != (chains, draws):
        raise KeyboardInterrupt(
            f"sampling interrupted: {got[0]} chain(s) x {got[1]} draws of the requested "
            f"{chains} x {draws}"
        )


def table_fingerprint(data: pd.DataFrame, schema: Schema) -> str:
    """SHA-256 of a table encoded by ``schema`` (categories as level codes, numbers as float64).

    Identifies the fitted table without storing it: the same records in the same order give
    the same fingerprint whatever the file format or dtypes they were read with.
    """
    import hashlib

    from bayes_risk.data.validate import encode

    h = hashlib.sha256()
    h.update(f"{len(data)}|{'|'.join(schema.names)}".encode())
    for spec in schema:
        if spec.is_categorical:
            col = encode(data, schema, [spec.name])[:, 0]
        else:
            col = pd.to_numeric(data[spec.name], errors="coerce").to_numpy(dtype=np.float64)
            col = np.where(np.isnan(col), np.nan, col + 0.0)  # one NaN pattern, no -0.0
        h.update(np.ascontiguousarray(col).tobytes())
    return h.hexdigest()


class _InterruptGuard:
    """Make Ctrl-C (and a handled SIGTERM) stop every chain of ``pm.sample``, not only one.

    PyMC's sequential sampler catches ``KeyboardInterrupt`` per chain, keeps the draws so far
    and starts the next chain, so one Ctrl-C would cost the whole of the remaining chains. The
    guard records the signal (and passes it on to the handler in place) and its draw callback
    stops each later chain at once; the caller then raises ``KeyboardInterrupt`` instead of
    returning a truncated posterior. SIGTERM is watched only where a Python handler is
    installed (the command line's); otherwise its default action, ending the process, stands.
    """

    def __init__(self) -> None:
        self.interrupted = False
        self._previous: dict[int, Any] = {}

    def __enter__(self) -> _InterruptGuard:
        import signal
        import threading

        if threading.current_thread() is not threading.main_thread():
            return self
        for sig in (signal.SIGINT, signal.SIGTERM):
            previous = signal.getsignal(sig)
            if sig != signal.SIGINT and not callable(previous):
                continue

            def handler(signum: int, frame: Any, previous: Any = previous) -> None:
                self.interrupted = True
                if callable(previous):
                    previous(signum, frame)
                else:
                    raise KeyboardInterrupt

            self._previous[sig] = previous
            signal.signal(sig, handler)
        return self

    def __exit__(self, *exc: Any) -> None:
        import signal

        for sig, previous in self._previous.items():
            signal.signal(sig, previous)

    def callback(self, user: Any = None) -> Any:
        """A ``pm.sample`` draw callback that stops sampling once interrupted."""

        def cb(*args: Any, **kwargs: Any) -> None:
            if self.interrupted:
                raise KeyboardInterrupt
            if user is not None:
                user(*args, **kwargs)

        return cb


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
        Chains run in parallel processes (``None``: PyMC's default, at most 4). ``1`` runs them
        sequentially in this process.
    random_seed : RandomSeed
        Default seed of :meth:`fit` and :meth:`synthesize` (a seed given to either takes
        precedence).
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
        ESS and R-hat of the label-invariant scalars (see :meth:`convergence_report`).

    Notes
    -----
    A subclass must provide (``abc.abstractmethod``; an incomplete subclass cannot be
    instantiated): the likelihoods the attribute engine uses (``record_loglik``,
    ``dataset_loglik``, ``neighbourhood_loglik``, ``fit_augmented``; the protocols of
    ``bayes_risk.protocols``), one synthetic dataset per posterior draw
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
        self.posterior_: xr.DataTree | None = None
        self.schema_: Schema | None = None
        self.data_: pd.DataFrame | None = None
        self.synthesized_records_: np.ndarray | None = None
        self.convergence_: pd.DataFrame | None = None

    # ------------------------------------------------------------------ settings & checks
    def _check_mcmc_settings(self) -> None:
        _check_int(self.tune, "tune", 0)
        _check_int(self.draws, "draws", 1)
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
        if records is None:
            return None
        arr = np.asarray(records)
        if arr.dtype == bool:
            if arr.shape != (n,):
                raise ValidationError(
                    f"records as a boolean mask needs one flag per record ({n}). "
                    f"Got shape {arr.shape}."
                )
            return arr.copy()
        if arr.ndim != 1 or not np.issubdtype(arr.dtype, np.integer):
            raise ValidationError(
                "records must be a boolean mask or integer record indices. "
                f"Got {records!r}."
            )
        if arr.size and (arr.min() < 0 or arr.max() >= n):
            bad = int(arr[(arr < 0) | (arr >= n)][0])
            raise ValidationError(
                f"records: index {bad} is outside 0..{n - 1}; indices must lie in "
                f"0..{n - 1} (the data has {n} records)."
            )
        flags = np.zeros(n, dtype=bool)
        flags[arr] = True
        return flags

    def _synthesized_rows(self) -> np.ndarray:
        """Positions of the records whose synthesized columns are replaced (all by default)."""
        if self.synthesized_records_ is None:
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
        if not isinstance(z, pd.DataFrame):
            raise ValidationError(f"{name} must be a pandas DataFrame. Got {type(z).__name__}.")
        if len(z) != self.n_records:
            raise SchemaError(
                f"{name} has {len(z)} rows; the model synthesizes selected records of a table of "
                f"{self.n_records} rows, so a released dataset must have {self.n_records}.",
                code="ROW_COUNT_MISMATCH",
            )
        return z.iloc[self._synthesized_rows()].reset_index(drop=True)

    def _check_fitted(self, method: str | None = None) -> None:
        if self.posterior_ is None or self.schema_ is None:
            before = f"'{method}'" if method else "using it"
            raise NotFittedError(
                f"This {type(self).__name__} instance is not fitted yet. Call 'fit' (or build it "
                f"with 'from_posterior' / 'load') before {before}."
            )

    @property
    def n_draws(self) -> int:
        """Number of posterior draws ``H = chains × draws`` (flattened chain-major)."""
        self._check_fitted()
        post = self.posterior_["posterior"]
        return int(post.sizes["chain"] * post.sizes["draw"])

    @property
    def n_records(self) -> int:
        """Number of records of the data the model was fitted to (rows of each synthetic set)."""
        self._check_fitted()
        return int(self._n_records)

    def _draw_indices(self, draws: Any = None) -> np.ndarray:
        """Validate a ``draws=`` argument and return flattened draw indices (int64).

        ``None`` means all ``H`` draws in order; otherwise a sequence (or array) of integers in
        ``0..H-1`` (repeats allowed), or a boolean mask of length ``H``.
        """
        H = self.n_draws
        if draws is None:
            return np.arange(H, dtype=np.int64)
        arr = np.asarray(draws)
        if arr.dtype == bool:
            if arr.shape != (H,):
                raise ValidationError(
                    f"draws given as a boolean mask must have length H = {H}. "
                    f"Got shape {arr.shape}."
                )
            return np.flatnonzero(arr).astype(np.int64)
        if arr.ndim == 0:
            arr = arr.reshape(1)
        if arr.ndim != 1 or not np.issubdtype(arr.dtype, np.integer):
            raise ValidationError(
                f"draws must be None, integer draw indices in 0..{H - 1} or a boolean mask. "
                f"Got {draws!r}."
            )
        if arr.size and (arr.min() < 0 or arr.max() >= H):
            bad = arr[(arr < 0) | (arr >= H)][0]
            raise ValidationError(
                f"draws: index {int(bad)} is outside 0..{H - 1} (the model has H = {H} draws)."
            )
        return arr.astype(np.int64)

    def _stacked(self, name: str, draws: np.ndarray | None = None) -> np.ndarray:
        """Posterior variable ``name`` as an ``[H, ...]`` float array (chain-major), optionally
        restricted to the flattened indices ``draws``."""
        self._check_fitted()
        post = self.posterior_["posterior"]
        if name not in post.data_vars:
            raise ValidationError(f"posterior has no variable {name!r}.")
        da = post[name]
        dims = ["chain", "draw", *[d for d in da.dims if d not in ("chain", "draw")]]
        vals = np.asarray(da.transpose(*dims).values)
        vals = vals.reshape(-1, *vals.shape[2:])
        return vals if draws is None else vals[draws]

    # ------------------------------------------------------------------ data preparation
    def _prepare_data(
        self,
        data: pd.DataFrame,
        *,
        schema: Schema | None = None,
        synthesized: Sequence[str] | None = None,
        categorical: Sequence[str] | None = None,
        allow_nan: bool = False,
    ) -> tuple[pd.DataFrame, Schema]:
        """Validate the confidential table and settle its schema and roles.

        ``schema`` (or one inferred with ``categorical`` overrides) gives types and levels;
        ``synthesized`` names the synthesized columns. If neither ``synthesized`` nor the schema's
        roles name any, every column is synthesized (full synthesis).
        """
        if not isinstance(data, pd.DataFrame):
            raise ValidationError(f"data must be a pandas DataFrame. Got {type(data).__name__}.")
        if len(data) == 0:
            raise ValidationError("data has no records.")
        data = data.copy()
        data.columns = [str(c) for c in data.columns]
        if schema is None:
            schema = infer_schema(data, categorical=categorical)
        elif not isinstance(schema, Schema):
            raise ValidationError(f"schema must be a Schema. Got {type(schema).__name__}.")
        missing = [c for c in schema.names if c not in data.columns]
        if missing:
            raise SchemaError(
                f"data is missing column(s) {missing} named in the schema.", code="MISSING_COLUMN"
            )
        extra = [c for c in data.columns if c not in schema.names]
        if extra:
            raise SchemaError(
                f"data has column(s) {extra} that are not in the schema; select the columns to "
                "model first.",
                code="EXTRA_COLUMN",
            )
        data = data[schema.names]
        synthesized = synthesized_columns(synthesized, schema)
        if synthesized is not None:
            schema = schema.with_roles(synthesized)
        if not schema.synthesized:
            schema = schema.with_roles(schema.names)
        validate_table(data, schema, name="data", allow_nan=allow_nan)
        return data.reset_index(drop=True), schema

    # ------------------------------------------------------------------ sampling
    def _seed_for_fit(self, random_seed: RandomSeed) -> RandomSeed:
        return self.random_seed if random_seed is None else random_seed

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
        import pymc as pm

        seeds = self._chain_seeds(random_seed)
        kwargs: dict[str, Any] = dict(
            draws=int(self.draws),
            tune=int(self.tune),
            chains=int(self.chains),
            cores=self.cores,
            random_seed=seeds,
            progressbar=bool(self.progressbar),
            quiet=not bool(self.progressbar),
            compute_convergence_checks=False,
            discard_tuned_samples=False,
            model=model,
        )
        if step is not None:
            kwargs["step"] = step
        kwargs.update(sample_kwargs)
        with warnings.catch_warnings(), _InterruptGuard() as guard:
            # PyMC's own short-chain message; convergence is reported by convergence_report().
            warnings.filterwarnings("ignore", message=".*samples per chain.*")
            kwargs["callback"] = guard.callback(kwargs.get("callback"))
            try:
                dt = pm.sample(**kwargs)
            except KeyError as err:
                # PyMC interrupted during tuning fails while assembling the empty trace
                raise KeyboardInterrupt(f"sampling interrupted during tuning ({err})") from err
        if guard.interrupted:
            raise KeyboardInterrupt("sampling interrupted")
        _check_complete(dt, int(self.chains), int(self.draws))
        if "warmup_posterior" in dt.children:
            del dt["warmup_posterior"]
        if "observed_data" in dt.children:
            del dt["observed_data"]
        return dt

    def _chain_seeds(self, random_seed: RandomSeed) -> list[int]:
        """Check the MCMC settings; one integer seed per chain drawn from ``random_seed``."""
        self._check_mcmc_settings()
        rng = as_generator(random_seed)
        return [int(s) for s in rng.integers(0, 2**31 - 1, size=int(self.chains))]

    def _run_gibbs(self, step: Any, layout: Any, *, random_seed: RandomSeed = None) -> xr.DataTree:
        """``_run_sampler`` for a model sampled by one Gibbs step alone: the step runs in a
        plain loop (``bayes_risk.models._gibbs_run``), same seeds, same DataTree."""
        from bayes_risk.models._gibbs_run import sample_gibbs

        seeds = self._chain_seeds(random_seed)
        with _InterruptGuard() as guard:
            dt = sample_gibbs(step, layout, seeds=seeds, tune=self.tune, draws=self.draws,
                              chains=self.chains, cores=self.cores,
                              progressbar=bool(self.progressbar), stop=lambda: guard.interrupted)
        _check_complete(dt, int(self.chains), int(self.draws))
        return dt

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
            self.data_fingerprint_ = table_fingerprint(data, schema)
        self.synthesized_records_ = synthesized_records
        self.data_ = data if (data is not None and self._needs_data_for_synthesis()) else None
        self._after_posterior()
        self.convergence_ = None
        if check_convergence:
            self.convergence_ = self.convergence_report(warn=True)

    def _after_posterior(self) -> None:
        """Hook called whenever ``posterior_`` is set (fit, load, from_posterior): caches."""

    def _needs_data_for_synthesis(self) -> bool:
        """Whether :meth:`synthesize` needs the confidential records (saved with the model)."""
        return False

    # ------------------------------------------------------------------ synthesis
    @staticmethod
    def _spread_draws(H: int, m: int) -> np.ndarray:
        """``m`` flattened draw indices evenly spaced over ``0..H-1``, ending at the last draw:
        ``h_l = floor(l H / m) - 1``, ``l = 1..m`` (spacing ``H/m``; Hu 2019 §3.2.5)."""
        return ((np.arange(1, m + 1, dtype=np.int64) * H) // m - 1).astype(np.int64)

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
        self._check_fitted("synthesize")
        m = check_m(m)
        random_seed = self._seed(random_seed)
        H = self.n_draws
        if m > H:
            raise ValidationError(
                f"m = {m} synthetic datasets need m distinct posterior draws, but the model has "
                f"only H = {H}; sample more draws."
            )
        idx = self._spread_draws(H, m)
        rngs = spawn(random_seed, m)
        datasets = [
            self._synthesize_one(int(h), rng, self.data_)
            for h, rng in zip(idx, rngs, strict=True)
        ]
        return SyntheticData(
            datasets=datasets,
            method=self.method_name,
            settings=to_jsonable(self._json_settings()),
            random_seed=seed_to_json(random_seed),
            draw_index=[int(h) for h in idx],
            schema=self.schema_,
            synthesized_records=self.synthesized_records_,
            extra={"model_class": self.model_class, "ratio_form": self.ratio_form},
        )

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
        from bayes_risk.models._replicates import check_replicate_columns, iter_replicates

        self._check_fitted()
        cols = check_replicate_columns(columns, self.schema_.synthesized, type(self).__name__)
        H = self.n_draws

        def draw_one(rng: np.random.Generator) -> pd.DataFrame:
            return self._synthesize_one(int(rng.integers(H)), rng, self.data_)

        return iter_replicates(draw_one, n, columns=cols, chunk_size=chunk_size,
                               random_seed=random_seed, start=start)

    @abstractmethod
    def _synthesize_one(
        self, draw: int, rng: np.random.Generator, data: pd.DataFrame | None
    ) -> pd.DataFrame:
        """One synthetic dataset from flattened posterior draw ``draw``.

        ``data`` is the confidential table when :meth:`_needs_data_for_synthesis` is true (else
        ``None``). Must return the original's columns in order, ``n_records`` rows, unsynthesized
        columns unchanged, and draw only from ``rng``.
        """

    # ------------------------------------------------------------------ protocol (abstract)
    @abstractmethod
    def record_loglik(self, records: pd.DataFrame, *, draws: Any = None) -> np.ndarray:
        """``[H, n]`` array of ``log p(y_i | Θ_h)`` (joint or conditional form, ``ratio_form``)."""

    @abstractmethod
    def dataset_loglik(
        self, datasets: Sequence[pd.DataFrame] | SyntheticData, *, draws: Any = None
    ) -> np.ndarray:
        """``[H, m]`` array of ``log p(Z_(l) | Θ_h)`` under the model's synthesis mode."""

    @abstractmethod
    def neighbourhood_loglik(self, records: pd.DataFrame, *, draws: Any = None) -> np.ndarray:
        """``[H, n, G]`` record log-likelihoods of the one-variable-different candidates
        (methods, Candidate sets) over the synthesized columns: truth first, then column by column
        in column order, levels ascending skipping the true level."""

    @abstractmethod
    def fit_augmented(
        self, data: pd.DataFrame, synthetic: pd.DataFrame, *, random_seed: RandomSeed = None
    ) -> BayesianSynthesizer:
        """A new fitted model whose draws come from ``p(Θ | y, Z_(l))`` (stabilised estimator)."""

    # ------------------------------------------------------------------ convergence
    @abstractmethod
    def _convergence_quantities(self) -> dict[str, np.ndarray]:
        """Label-invariant scalars to diagnose, each an array ``[chain, draw]``."""

    def convergence_report(self, *, warn: bool = False) -> pd.DataFrame:
        """Rank-normalised bulk/tail ESS and R-hat of label-invariant scalars.

        Mixture labels switch freely, so component-wise parameters are not diagnosed; the model
        supplies quantities that do not depend on labels (log-likelihood, cell probabilities,
        concentration, number of occupied components). With one chain, R-hat is computed on the
        chain split in two halves (split-R-hat). Computed with ``arviz_stats.ess`` /
        ``arviz_stats.rhat``.

        Parameters
        ----------
        warn : bool
            Issue a :class:`ConvergenceWarning` naming the quantities with R-hat > 1.01 or
            bulk/tail ESS < 100 (Vehtari et al. 2021).

        Returns
        -------
        DataFrame
            Index: quantity; columns ``mean``, ``sd``, ``ess_bulk``, ``ess_tail``, ``rhat``,
            ``flag`` (``""``, ``"RHAT_HIGH"``, ``"LOW_ESS"`` or both joined by ``","``).

        References
        ----------
        Vehtari, A., Gelman, A., Simpson, D., Carpenter, B., Bürkner, P.-C. (2021). Rank-
        normalization, folding, and localization: an improved R-hat for assessing convergence of
        MCMC. Bayesian Analysis 16(2), 667–718. https://doi.org/10.1214/20-BA1221
        """
        import arviz_stats

        self._check_fitted()
        rows = []
        for name, x in self._convergence_quantities().items():
            x = np.asarray(x, dtype=np.float64)
            if x.ndim == 1:
                x = x[None, :]
            finite = np.all(np.isfinite(x))
            if x.shape[1] < 4 or not finite:
                rows.append((name, np.nanmean(x), np.nanstd(x), np.nan, np.nan, np.nan))
                continue
            xr_ = x if x.shape[0] > 1 else x[:, : 2 * (x.shape[1] // 2)].reshape(2, -1)
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore")
                eb = float(arviz_stats.ess(x, method="bulk"))
                et = float(arviz_stats.ess(x, method="tail", prob=(0.05, 0.95)))
                rh = float(arviz_stats.rhat(xr_))
            if np.ptp(x) == 0:  # a constant (e.g. K = 1): nothing to diagnose
                eb, et, rh = float(x.size), float(x.size), 1.0
            rows.append((name, float(x.mean()), float(x.std()), eb, et, rh))
        df = pd.DataFrame(rows, columns=["quantity", "mean", "sd", "ess_bulk", "ess_tail", "rhat"])
        df = df.set_index("quantity")
        flags = []
        for _, r in df.iterrows():
            f = []
            if np.isfinite(r.rhat) and r.rhat > RHAT_MAX:
                f.append("RHAT_HIGH")
            if (np.isfinite(r.ess_bulk) and r.ess_bulk < ESS_MIN) or (
                np.isfinite(r.ess_tail) and r.ess_tail < ESS_MIN
            ):
                f.append("LOW_ESS")
            flags.append(",".join(f))
        df["flag"] = flags
        if warn:
            for w in self._convergence_warnings(df):
                warnings.warn(ConvergenceWarning(w["message"], code=w["code"]),
                              skip_file_prefixes=CALLER)
        return df

    def _convergence_warnings(self, df: pd.DataFrame) -> list[dict[str, Any]]:
        """One structured warning per failed check of a convergence table (code, quantities,
        message)."""
        out = []
        for code, what in (("RHAT_HIGH", f"R-hat > {RHAT_MAX}"),
                           ("LOW_ESS", f"bulk or tail ESS < {ESS_MIN:.0f}")):
            bad = df[[code in str(f).split(",") for f in df["flag"]]] if len(df) else df
            if not len(bad):
                continue
            desc = "; ".join(
                f"{q}: R-hat {r.rhat:.3f}, ESS bulk {r.ess_bulk:.0f}, tail {r.ess_tail:.0f}"
                for q, r in bad.iterrows()
            )
            out.append({
                "code": code,
                "quantities": [str(q) for q in bad.index],
                "message": (
                    f"{type(self).__name__}: MCMC may not have converged ({what}: {desc}) "
                    f"({code}). Run longer chains (more tune/draws) or more chains; see "
                    "convergence_report()."
                ),
            })
        return out

    def mcmc_warnings(self) -> list[dict[str, Any]]:
        """Structured MCMC warnings of this fit: failed convergence checks and model codes.

        Returns
        -------
        list of dict
            Each with ``code`` (``"RHAT_HIGH"``, ``"LOW_ESS"``, or a model code such as
            ``"TRUNCATION_TOO_SMALL"``), ``quantities`` (the diagnosed quantities concerned)
            and ``message``.
        """
        self._check_fitted()
        if self.convergence_ is None:
            self.convergence_ = self.convergence_report(warn=False)
        out = self._convergence_warnings(self.convergence_)
        for code in getattr(self, "warnings_", None) or []:
            if code not in {w["code"] for w in out}:
                out.append({"code": str(code), "quantities": [],
                            "message": f"{type(self).__name__}: {code}"})
        return out

    def convergence_summary(self) -> dict[str, Any]:
        """JSON-ready convergence record of the fit (written to ``convergence.json`` by
        :meth:`save`; included in the outputs of every run that uses the model).

        Returns
        -------
        dict
            ``chains``, ``draws`` (per chain), ``tune``, ``thresholds`` (R-hat, ESS),
            ``quantities`` (per diagnosed quantity: ``mean``, ``sd``, ``ess_bulk``,
            ``ess_tail``, ``rhat``, ``flag``), ``warnings`` (:meth:`mcmc_warnings`) and
            ``passed`` (no failed check).
        """
        warns = self.mcmc_warnings()
        post = self.posterior_["posterior"]
        return to_jsonable({
            "model": type(self).__name__,
            "chains": int(post.sizes["chain"]),
            "draws": int(post.sizes["draw"]),
            "tune": int(self.tune),
            "thresholds": {"rhat_max": RHAT_MAX, "ess_min": ESS_MIN},
            "quantities": {
                str(q): {k: (float(v) if k != "flag" else v) for k, v in r.items()}
                for q, r in self.convergence_.iterrows()
            },
            "warnings": warns,
            "passed": not warns,
        })

    # ------------------------------------------------------------------ persistence
    def _json_settings(self) -> dict[str, Any]:
        params = self.get_params()
        params["random_seed"] = seed_to_json(params.get("random_seed"))
        return to_jsonable(params)

    def _state_to_json(self) -> dict[str, Any]:
        """Extra fitted state written to ``model.json`` (JSON-serialisable)."""
        return {}

    def _state_from_json(self, state: Mapping[str, Any]) -> None:
        """Restore what :meth:`_state_to_json` wrote."""

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
        self._check_fitted()
        meta = {
            "format": "bayes-risk model",
            "format_version": FORMAT_VERSION,
            "method": self.method_name,
            "class": type(self).__name__,
            "settings": self._json_settings(),
            "schema": self.schema_.to_dict(),
            "n_records": int(self._n_records),
            "n_draws": self.n_draws,
            "draw_order": "chain-major: h = chain * draws_per_chain + draw",
            "synthesized_records": None
            if self.synthesized_records_ is None
            else [int(i) for i in np.flatnonzero(self.synthesized_records_)],
            "data_file": DATA_FILE if self.data_ is not None else None,
            "confidential": self.data_ is not None,
            "state": to_jsonable(self._state_to_json()),
            # a hash of the encoded fitted table (never the data): checks the original later
            "data_fingerprint": getattr(self, "data_fingerprint_", None),
        }
        with atomic_dir(path) as tmp:
            self.posterior_.to_netcdf(tmp / POSTERIOR_FILE, engine="h5netcdf")
            if self.data_ is not None:
                self.data_.to_parquet(tmp / DATA_FILE, index=False)
            write_json(tmp / SETTINGS_FILE, meta)
            write_json(tmp / CONVERGENCE_FILE, self.convergence_summary())
        return Path(path)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> BayesianSynthesizer:
        """Load a model saved with :meth:`save` (no pickle: NetCDF + JSON + Parquet).

        Raises
        ------
        ValidationError
            If the folder is not a saved model of this class or a file is missing.
        """
        import xarray as xr

        p, meta = read_model_meta(path)
        if meta.get("method") != cls.method_name:
            raise ValidationError(
                f"{p} holds a {meta.get('method')!r} model, not {cls.method_name!r}; use "
                "bayes_risk.models.load_model(path)."
            )
        if int(meta.get("format_version", 0)) > FORMAT_VERSION:
            raise ValidationError(
                f"{p} was written by a newer bayes-risk (format version "
                f"{meta.get('format_version')}); upgrade bayes-risk to read it."
            )
        post_file = p / POSTERIOR_FILE
        if not post_file.is_file():
            raise ValidationError(f"{p}: {POSTERIOR_FILE} is missing.")
        try:
            with xr.open_datatree(post_file, engine="h5netcdf") as dt:
                posterior = dt.load().copy()
        except (OSError, ValueError, KeyError, TypeError, RuntimeError) as err:
            raise ValidationError(
                f"the model folder {str(p)!r} is damaged: {POSTERIOR_FILE} cannot be read "
                f"({type(err).__name__}: {' '.join(str(err).split())[:200]}); fit the model "
                "again.",
                code="MODEL_DAMAGED",
            ) from err
        # JSON has no tuples: sequence settings come back as tuples (as the defaults are)
        settings = {
            k: tuple(v) if isinstance(v, list) else v for k, v in meta.get("settings", {}).items()
        }
        obj = cls(**settings)
        data = None
        if meta.get("data_file"):
            dfile = p / meta["data_file"]
            if not dfile.is_file():
                raise ValidationError(
                    f"{p}: {meta['data_file']} (the confidential data) is missing."
                )
            data = pd.read_parquet(dfile)
        flags = None
        if meta.get("synthesized_records") is not None:
            flags = np.zeros(int(meta["n_records"]), dtype=bool)
            flags[np.asarray(meta["synthesized_records"], dtype=np.int64)] = True
        schema = Schema.from_dict(meta["schema"])
        obj._state_from_json(meta.get("state") or {})
        obj._validate_posterior(posterior, schema)
        obj._set_fitted(
            posterior,
            schema,
            int(meta["n_records"]),
            data=data,
            synthesized_records=flags,
            check_convergence=False,
        )
        obj.data_ = data
        obj.data_fingerprint_ = meta.get("data_fingerprint")
        return obj

    def check_fingerprint(self, data: pd.DataFrame) -> str | None:
        """Whether ``data`` is the table this model was fitted to.

        Compares the SHA-256 fingerprint (``table_fingerprint``) of ``data`` (its schema
        columns) with the one stored at fit time. Returns ``None`` when they agree (or no
        fingerprint was stored: a model saved by an older version), otherwise a short
        description of the difference.
        """
        self._check_fitted()
        stored = getattr(self, "data_fingerprint_", None)
        if stored is None:
            return None
        missing = [c for c in self.schema_.names if c not in data.columns]
        if missing:
            return f"it lacks column(s) {missing}"
        if len(data) != self._n_records:
            return f"it has {len(data)} records, the fitted table {self._n_records}"
        try:
            fp = table_fingerprint(data[self.schema_.names].reset_index(drop=True), self.schema_)
        except (ValueError, TypeError) as err:  # SchemaError: a level the model never saw
            return " ".join(str(err).split())
        return None if fp == stored else "same size, different values"

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
        obj = cls(**settings)
        if not isinstance(schema, Schema):
            raise ValidationError(f"schema must be a Schema. Got {type(schema).__name__}.")
        if not schema.synthesized:  # no roles given: full synthesis, as in fit
            schema = schema.with_roles(schema.names)
        dt = obj._as_datatree(posterior)
        if data is not None:
            data, _ = obj._prepare_data(data, schema=schema, allow_nan=True)
        if n_records is None:
            if data is None:
                raise ValidationError(
                    "from_posterior needs n_records or data (the number of "
                    "records per synthetic dataset)."
                )
            n_records = len(data)
        n_records = _check_int(n_records, "n_records", 1)
        if synthesized_records is not None:
            synthesized_records = np.asarray(synthesized_records, dtype=bool)
            if synthesized_records.shape != (n_records,):
                raise ValidationError(
                    f"synthesized_records must have one flag per record ({n_records})."
                )
            if data is None:
                # the records that are not synthesized are released unchanged: copied from data
                raise ValidationError(
                    "synthesized_records (partial synthesis of selected records) needs the "
                    "confidential data: pass data=..."
                )
        obj._validate_posterior(dt, schema)
        if obj._needs_data_for_synthesis_given(schema) and data is None:
            raise ValidationError(
                "this model's synthesis mode needs the confidential data: pass data=..."
            )
        obj._set_fitted(dt, schema, n_records, data=data, synthesized_records=synthesized_records)
        obj.data_ = data if obj._needs_data_for_synthesis() else None
        return obj

    def _needs_data_for_synthesis_given(self, schema: Schema) -> bool:
        """Like :meth:`_needs_data_for_synthesis` before ``schema_`` is set."""
        old = self.schema_
        self.schema_ = schema
        try:
            return self._needs_data_for_synthesis()
        finally:
            self.schema_ = old

    def _event_ndims(self) -> dict[str, int]:
        """Number of non-sample dimensions of each posterior variable (for dict input)."""
        return {}

    def _as_datatree(self, posterior: Any) -> xr.DataTree:
        import xarray as xr

        if isinstance(posterior, xr.DataTree):
            if "posterior" not in posterior.children:
                raise ValidationError("the posterior DataTree has no 'posterior' group.")
            post = posterior["posterior"]
            for d in ("chain", "draw"):
                if d not in post.dims:
                    raise ValidationError(f"the posterior group has no {d!r} dimension.")
            return posterior.copy()
        if not isinstance(posterior, Mapping):
            raise ValidationError(
                "posterior must be an xarray.DataTree or a mapping of variable name to array. "
                f"Got {type(posterior).__name__}."
            )
        ev = self._event_ndims()
        arrays: dict[str, np.ndarray] = {}
        for name, val in posterior.items():
            a = np.asarray(val, dtype=np.float64)
            if name not in ev:
                raise ValidationError(
                    f"posterior variable {name!r} is not a parameter of {type(self).__name__}; "
                    f"expected some of {sorted(ev)}."
                )
            if a.ndim == ev[name] + 1:
                a = a[None, ...]
            elif a.ndim != ev[name] + 2:
                raise ValidationError(
                    f"posterior variable {name!r} must have shape (chain, draw, ...) or "
                    "(draw, ...) "
                    f"with {ev[name]} parameter dimension(s). Got shape {a.shape}."
                )
            arrays[name] = a
        shapes = {a.shape[:2] for a in arrays.values()}
        if len(shapes) != 1:
            raise ValidationError(
                f"posterior variables disagree on (chain, draw): {sorted(shapes)}."
            )
        ds = xr.Dataset(
            {
                k: (["chain", "draw", *[f"{k}_dim_{i}" for i in range(v.ndim - 2)]], v)
                for k, v in arrays.items()
            }
        )
        ds = ds.assign_coords(chain=np.arange(ds.sizes["chain"]), draw=np.arange(ds.sizes["draw"]))
        return xr.DataTree.from_dict({"posterior": ds})

    @abstractmethod
    def _validate_posterior(self, posterior: xr.DataTree, schema: Schema) -> None:
        """Check that ``posterior`` holds this model's parameters for ``schema`` (names, shapes,
        support); may add derived variables in place. Raise :class:`ValidationError`."""
