"""DPMPM: truncated Dirichlet-process mixture of products of multinomials (Hu & Savitsky 2018).

The work is done by the functions of ``dpmpm.fit``, ``dpmpm.loglik`` and ``dpmpm.coding`` on the
fitted state (:class:`~bayes_risk.models.dpmpm.state.DPMPMState`); see :doc:`/methods/models`.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, ClassVar, Literal

import numpy as np
import pandas as pd

import bayes_risk.models.dpmpm.coding as _coding
import bayes_risk.models.dpmpm.fit as _fit
import bayes_risk.models.dpmpm.loglik as _loglik
import bayes_risk.models.dpmpm.synthesis as _synthesis
from bayes_risk._constraints import Interval, Options, SequenceOf, check_params, check_value
from bayes_risk._io import to_jsonable
from bayes_risk._rng import RandomSeed
from bayes_risk.data.schema import Schema
from bayes_risk.exceptions import ValidationError, on_command_line
from bayes_risk.models._bayesian.base import BayesianSynthesizer
from bayes_risk.models._bayesian.convergence import round_verdict
from bayes_risk.models._bayesian.convergence_report import check_convergence, mcmc_run
from bayes_risk.models._bayesian.records import check_synthesized_records
from bayes_risk.models._bayesian.sampling import Sampling, model_seeds, run_gibbs, run_pymc
from bayes_risk.models._bayesian.starts import chain_starts
from bayes_risk.models._bayesian.timing import fit_clock, record_fit_time
from bayes_risk.models.base import FittedAttribute
from bayes_risk.models.dpmpm.coding import dtypes_of
from bayes_risk.models.dpmpm.state import POSTERIOR_VARIABLES, build_state
from bayes_risk.models.persistence import StateField

if TYPE_CHECKING:  # pragma: no cover
    import xarray as xr

    from bayes_risk.data.synthetic import SyntheticData
from bayes_risk.contract import ModelInfo

__all__ = ["DPMPM", "MODES", "SAMPLERS"]

MODES: tuple[str, ...] = ("marginal", "conditional_us", "posterior_class")
SAMPLERS: tuple[str, ...] = ("gibbs", "nuts")
_SETTINGS = {"dirichlet_prior": Interval(float, 0, closed="neither"),
             "synthesis_mode": [Options(MODES), None], "sampler": Options(SAMPLERS),
             "alpha_prior": SequenceOf(Interval(float, 0, closed="neither"),
                                       "numbers > 0 (shape, rate)", min_len=2, max_len=2),
             "alpha_warmup_sweeps": Interval(int, 0),
             # None: the α prior's 95 % quantile
             "alpha_warmup_bound": [Interval(float, 0, closed="neither"),
                                    Options((math.inf,), listed=True), None]}
#: the run settings of the Gibbs sampler alone: setting -> (its value with NUTS, what to do)
_GIBBS_ONLY = {
    "thin": (1, "every draw is kept (thin=1): ask for more draws instead"),
    "max_sweeps": (0, "the run has the length asked for (max_sweeps=0): ask for more draws "
                      "instead"),
    "temperatures": (1, "give temperatures=1 (parallel tempering is the Gibbs sampler's)"),
}
# default run: 500 draws every 5th sweep (occupied classes: ESS ≈ 0.16 per sweep on the ACS
# extract), extending itself up to 50,000 sweeps per chain; α bounded by its prior's 95 %
# quantile in the first 100 warm-up sweeps (chains stuck at α ≈ 100 otherwise). Figures:
# benchmarks/bench_dpmpm_mixing.py and survey_dpmpm_defaults.py of commit 977bc9f
_DEFAULT_DRAWS = 500
_DEFAULT_THIN = 5
_DEFAULT_MAX_SWEEPS = 50_000
_ALPHA_WARMUP_QUANTILE = 0.95
_ALPHA_WARMUP_SWEEPS = 100
_OVERDISPERSED = ("spread", "few", "prior")


class DPMPM(BayesianSynthesizer):
    """Truncated DP mixture of products of multinomials for categorical data (Hu & Savitsky 2018).

    Missing values are imputed inside the sampler. Sampler, defaults and convergence:
    :doc:`/user_guide/bayesian_models`; the model: :doc:`/methods/models`.

    Parameters
    ----------
    n_components : int
        Truncation level ``K >= 1`` (default 50). ``K = 1`` is the product of independent
        Dirichlet–multinomials.
    alpha_prior : (float, float)
        Shape and rate ``(a_α, b_α)`` of the Gamma prior of the DP concentration (0.25, 0.25).
    dirichlet_prior : float
        Dirichlet parameter ``a_jc`` of every category probability (1: uniform).
    synthesis_mode : {"marginal", "conditional_us", "posterior_class"}, optional
        Default: ``marginal`` for full synthesis, ``conditional_us`` for partial synthesis (both
        class P); ``posterior_class`` (NPBayesImputeCat's ``DPMPM_nozeros_syn``) is class O.
    sampler : {"gibbs", "nuts"}
        ``gibbs`` (default): blocked Gibbs. ``nuts``: PyMC NUTS, only for small problems.
    structural_zeros : DataFrame, path or list of mappings, optional
        Impossible combinations in NPBayesImputeCat's ``MCZ`` format (a missing value: any
        level), given probability zero (Manrique-Vallier & Reiter 2014). Saved with the model.
    sampling : Sampling, optional
        How the sampler runs (:class:`~bayes_risk.models.Sampling`, its fields). Defaults: 2
        chains of 1,000 warm-up sweeps and 500 draws every 5th sweep (``H = 1000``); with
        ``draws`` given or ``sampler="nuts"``, ``thin`` 1 and ``max_sweeps`` 0, else 5 and
        50,000 (the run extends itself until the checks of :meth:`convergence_summary` pass,
        as ``autorun.jags`` does); ``temperatures`` 1 (above 1 not with structural zeros or
        ``sampler="nuts"``); ``starts`` ``("spread", "few", "prior")``.
    random_seed, progressbar
        See :class:`~bayes_risk.models._bayesian.base.BayesianSynthesizer`.
    alpha_warmup_bound : float, optional
        Upper bound of α in the first ``alpha_warmup_sweeps`` warm-up sweeps (default: the 95 %
        quantile of the α prior).
    alpha_warmup_sweeps : int
        Warm-up sweeps with α bounded (default 100; at most ``tune``); 0: no bound.

    Attributes
    ----------
    posterior_ : xarray.DataTree
        ``posterior`` group: ``alpha`` [chain, draw], ``V`` [chain, draw, K-1] (K > 1), ``pi``
        [chain, draw, K], ``phi_<j>`` [chain, draw, K, d_j] for the j-th column (0-based, schema
        order). ``sample_stats``: ``loglik`` and ``k_occupied`` (Gibbs sampler).
    schema_ : Schema
    warnings_ : list of str
        Machine-readable codes, e.g. ``"TRUNCATION_TOO_SMALL"`` (``k*`` reached ``K − 1``).
    convergence_ : DataFrame
        ESS and R-hat of the label-invariant quantities.
    state_ : ~bayes_risk.models.dpmpm.state.DPMPMState
        The fitted state the likelihoods and the synthesis read (frozen): the draws as
        ``[H, ...]`` arrays (``phi``, ``logphi``, ``log_pi``, ``offsets``, ``d``), set by
        :meth:`fit`, ``load`` and ``from_posterior``; reading it before raises
        :class:`~bayes_risk.exceptions.NotFittedError`.

    Examples
    --------
    >>> import warnings
    >>> from bayes_risk.data import make_acs_like
    >>> from bayes_risk.exceptions import BayesRiskWarning
    >>> df = make_acs_like(300, random_seed=1)[["SEX", "MAR", "MIG"]]
    >>> from bayes_risk.models import Sampling
    >>> model = DPMPM(n_components=5, sampling=Sampling(tune=50, draws=50, chains=1, cores=1),
    ...               progressbar=False, random_seed=1)
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore", BayesRiskWarning)  # 50 draws: too short, it warns
    ...     model = model.fit(df)
    >>> syn = model.synthesize(2, random_seed=2)
    >>> syn.m, list(syn[0].columns), syn.draw_index
    (2, ['SEX', 'MAR', 'MIG'], [24, 49])
    """

    method_name: ClassVar[str] = "dpmpm"
    posterior_variables = POSTERIOR_VARIABLES
    saved_state = MappingProxyType({**BayesianSynthesizer.saved_state,
                                    "warnings": StateField("warnings_", list, ())})
    state_ = FittedAttribute(
        "The fitted :class:`~bayes_risk.models.dpmpm.state.DPMPMState` (set by ``fit``).")
    #: what no method shows (bayes_risk.ModelInfo; the rest: bayes_risk.contract.capabilities)
    info: ClassVar[ModelInfo] = ModelInfo(imputes=True, partial_synthesis=True,
                                          categorical_only=True)
    #: the Gibbs sweep shares the work of records with equal values (sorted patterns, shared
    #: prefixes): a refit's sweep grows by less than its records (bayes_risk.attribute.cost)
    sweep_shares_equal_records: ClassVar[bool] = True
    ratio_form: Literal["joint", "conditional"] = "joint"
    #: draws, thin and max_sweeps left at None are resolved by fit (_run_settings)
    sampling_defaults: ClassVar[Mapping[str, Any]] = MappingProxyType(
        {"draws": None, "tune": 1000, "chains": 2, "cores": None, "thin": None,
         "max_sweeps": None, "starts": "overdispersed", "temperatures": 1})

    def __init__(
        self,
        *,
        n_components: int = 50,
        alpha_prior: tuple[float, float] = (0.25, 0.25),
        dirichlet_prior: float = 1.0,
        synthesis_mode: str | None = None,
        sampler: str = "gibbs",
        structural_zeros: Any = None,
        alpha_warmup_bound: float | None = None,
        alpha_warmup_sweeps: int = _ALPHA_WARMUP_SWEEPS,
        sampling: Sampling | None = None,
        random_seed: RandomSeed = None,
        progressbar: bool = True,
    ) -> None:
        # settings are stored as given (scikit-learn's convention)
        super().__init__(sampling=sampling, random_seed=random_seed, progressbar=progressbar)
        self.n_components = n_components
        self.alpha_prior = alpha_prior
        self.dirichlet_prior = dirichlet_prior
        self.synthesis_mode = synthesis_mode
        self.sampler = sampler
        self.alpha_warmup_bound = alpha_warmup_bound
        self.alpha_warmup_sweeps = alpha_warmup_sweeps
        self.structural_zeros = structural_zeros
        self._zeros = None  # StructuralZeros of the fitted schema (models.dpmpm.zeros)

    def _run_settings(self) -> dict[str, int]:
        """``draws``, ``thin`` and ``max_sweeps`` of a fit, those left at ``None`` resolved."""
        run = self.resolved_sampling
        default_run = run.draws is None and self.sampler == "gibbs"
        thin, max_sweeps = run.thin, run.max_sweeps
        return {
            "draws": _DEFAULT_DRAWS if run.draws is None else run.draws,
            "thin": (_DEFAULT_THIN if default_run else 1) if thin is None else thin,
            "max_sweeps": ((_DEFAULT_MAX_SWEEPS if default_run else 0) if max_sweeps is None
                           else max_sweeps),
        }

    def _check_settings(self) -> None:
        self.check_mcmc_settings()
        check_value(self.n_components, Interval(int, 1), "n_components (the truncation level K)")
        check_params(self, {k: c for k, c in _SETTINGS.items() if k != "alpha_warmup_bound"})
        # what leaving the bound unset means is part of the message: None in Python, the
        # option left out on the command line
        unset = "left out" if on_command_line() else "None"
        check_value(self.alpha_warmup_bound, _SETTINGS["alpha_warmup_bound"],
                    f"alpha_warmup_bound (the upper bound of α in the first warm-up sweeps; "
                    f"{unset}: the 95 % quantile of the α prior)")
        # the settings left at None, resolved; each checked as a number by Sampling
        T = self.resolved_sampling.temperatures
        given = {**self._run_settings(), "temperatures": T}
        for name, (other, advice) in _GIBBS_ONLY.items():
            if self.sampler != "gibbs" and given[name] != other:
                raise ValidationError(
                    f"{name}={given[name]!r} applies to the Gibbs sampler; with "
                    f"sampler={self.sampler!r} {advice}.", code="OPTION_CONFLICT")
        if T > 1 and self.structural_zeros is not None:
            raise ValidationError(
                f"temperatures={T!r} (parallel tempering) is not available with structural "
                "zeros: the tempered sweep does not cover their data augmentation. Fit without "
                "temperatures, or without structural_zeros to compare regimes.",
                code="OPTION_CONFLICT")
        if self.structural_zeros is not None:
            from bayes_risk.models.dpmpm.zeros import read_structural_zeros

            read_structural_zeros(self.structural_zeros)

    def _starts(self) -> tuple[str, ...]:
        """How the chains start, cycled over them (``starts``)."""
        return chain_starts(self.resolved_sampling.starts, _OVERDISPERSED)

    def _alpha_warmup(self) -> tuple[float, int]:
        """The bound of α and the number of warm-up sweeps it holds for (0: none) in a fit."""
        sweeps = min(int(self.alpha_warmup_sweeps), int(self.resolved_sampling.tune))
        if self.sampler != "gibbs" or self.n_components == 1:
            sweeps = 0  # NUTS draws the model as it is; with one class α does nothing
        if self.alpha_warmup_bound is None:
            from scipy.special import gammaincinv

            a, b = (float(x) for x in self.alpha_prior)
            bound = float(gammaincinv(a, _ALPHA_WARMUP_QUANTILE)) / b
        else:
            bound = float(self.alpha_warmup_bound)
        return bound, (sweeps if np.isfinite(bound) else 0)

    def convergence_summary(self) -> dict[str, Any]:
        """``BayesianSynthesizer.convergence_summary`` with ``alpha_warmup`` (bound, sweeps).

        Returns
        -------
        dict
        """
        out = super().convergence_summary()
        bound, sweeps = self._alpha_warmup()
        out["alpha_warmup"] = {"bound": bound if sweeps else None, "sweeps": sweeps}
        return out

    @property
    def synthesis_mode_(self) -> str:
        """The synthesis mode in use (``synthesis_mode``, or its default for the fitted roles)."""
        if self.synthesis_mode is not None:
            return self.synthesis_mode
        schema = getattr(self, "schema_", None)
        if schema is not None and schema.unsynthesized:
            return "conditional_us"
        return "marginal"

    @property
    def model_class(self) -> Literal["P", "O"]:  # type: ignore[override]
        """``"O"`` in ``posterior_class`` mode, else ``"P"`` (see the methods page, DPMPM)."""
        return "O" if self.synthesis_mode_ == "posterior_class" else "P"

    def _needs_data_for_synthesis(self) -> bool:
        return self.synthesis_mode_ != "marginal" or super()._needs_data_for_synthesis()

    def fit(
        self,
        data: pd.DataFrame,
        *,
        schema: Schema | None = None,
        synthesized: Sequence[str] | None = None,
        categorical: Sequence[str] | None = None,
        records: Any = None,
        random_seed: RandomSeed = None,
    ) -> DPMPM:
        """Sample the posterior of Θ = (α, V, φ) given the confidential data.

        Parameters
        ----------
        data : DataFrame
            Confidential records; every column categorical (missing values allowed).
        schema, synthesized, records, random_seed
            As in :meth:`BayesianSynthesizer.fit
            <bayes_risk.models._bayesian.base.BayesianSynthesizer.fit>`.
        categorical : sequence of str, optional
            Integer-coded columns to treat as categorical when the schema is inferred.

        Returns
        -------
        DPMPM
            ``self``, fitted.

        Raises
        ------
        SchemaError
            A non-categorical column, an all-missing column or an unknown column.
        ValidationError
            Invalid settings (e.g. ``n_components < 1``).
        """
        started = fit_clock()
        self._check_settings()
        seed = self._fit_seed(random_seed)
        data, schema = self._prepare_data(
            data, schema=schema, synthesized=synthesized, categorical=categorical, allow_nan=True
        )
        flags = check_synthesized_records(records, len(data))
        self.dtypes_ = dtypes_of(data)
        codes = _coding.encode(schema, data, name="data")
        self._zeros = self._structural_zeros_for(schema)
        if self._zeros is not None:
            self._zeros.check_observed(codes)
        d = [len(c.levels) for c in schema]
        if self.sampler == "gibbs":
            history: list[float] = []  # the largest R-hat of each round (extension)

            def check(tree: xr.DataTree) -> str:
                quantities = _fit.convergence_quantities(build_state(tree, schema, self._zeros))
                return round_verdict(quantities, tree["posterior"], history)

            dt = self._gibbs_posterior(codes, d, seed, check=check)
        else:
            model = self._build_model(codes, d, transforms=True)
            dt = run_pymc(self, model, random_seed=seed)
        self.warnings_ = []
        self._set_fitted(dt, schema, len(data), data=data, synthesized_records=flags,
                         check_convergence=False)
        if self.sampler == "nuts":
            _fit.add_loglik_stat(self.state_, codes)
        elif self._zeros is None:
            self._regime_evidence(codes, d, seed)
        self.warnings_ += _fit.check_truncation(self.posterior_, self.n_components)
        self.convergence_ = check_convergence(self, warn=True)
        record_fit_time(self, started)
        return self

    def _regime_evidence(self, codes: np.ndarray, d: Sequence[int], seed: RandomSeed) -> None:
        """When the chains sit in different regimes (``REGIMES_DISAGREE``), the bounds of each
        chain's region's marginal likelihood, in the posterior's attributes
        (``models.dpmpm.evidence``; not with structural zeros, whose truncated model the
        collapsed chain does not cover)."""
        from bayes_risk.models._bayesian.regimes import regime_summary

        post = self.posterior_["posterior"]
        if int(post.sizes["chain"]) < 2:
            return
        summ = regime_summary(post, self.convergence_quantities())
        if summ is None or summ["agree"]:
            return
        from bayes_risk.models.dpmpm.evidence import record_regime_evidence

        record_regime_evidence(self.posterior_, codes, d,
                               alpha_prior=tuple(float(x) for x in self.alpha_prior),
                               dirichlet_prior=float(self.dirichlet_prior),
                               random_seed=model_seeds(self, seed))

    def _gibbs_posterior(
        self,
        codes: np.ndarray,
        d: Sequence[int],
        random_seed: RandomSeed,
        *,
        via_pymc: bool = False,
        check: Callable[[xr.DataTree], str] | None = None,
    ) -> xr.DataTree:
        """Posterior draws by blocked Gibbs in a plain loop; ``via_pymc``: the same step through
        ``pm.sample`` (same draws). ``check``: the checks of a self-extending run."""
        from bayes_risk.models._bayesian.regimes import record_starts
        from bayes_risk.models.dpmpm.run import gibbs_layout
        from bayes_risk.models.dpmpm.step import DPMPMGibbs, SweepSchedule, pymc_step

        settings = dict(
            codes=codes,
            d=np.asarray(d, dtype=np.int64),
            n_components=int(self.n_components),
            alpha_prior=tuple(float(x) for x in self.alpha_prior),
            dirichlet_prior=float(self.dirichlet_prior),
            zeros=self._zeros,
            schedule=SweepSchedule(int(self._run_settings()["thin"]), *self._alpha_warmup(),
                                   starts=tuple(self._starts())),
        )
        if via_pymc:
            kinds = self._starts()
            chains = int(self.resolved_sampling.chains)
            if (chains > 1 and self.resolved_sampling.cores != 1
                    and len({kinds[c % len(kinds)] for c in range(chains)}) > 1):
                # PyMC's worker processes each get a copy of the step and do not number the
                # chains: every chain would start as the first
                raise ValidationError(
                    "via_pymc with chains in PyMC's worker processes (cores != 1) needs chains "
                    f"that start alike: give starts one kind (got {kinds!r}) or cores=1.")
            pm_model = self._build_model(codes, d, transforms=False)
            step = pymc_step([pm_model.rvs_to_values[v] for v in pm_model.free_RVs],
                             model=pm_model, **settings)
            dt = run_pymc(self, pm_model, step=[step], random_seed=random_seed)
            record_starts(dt, kinds, chains)
            return dt
        layout = gibbs_layout(self.n_components, d)
        step = DPMPMGibbs(list(layout.shapes), **settings)
        T = int(self.resolved_sampling.temperatures)
        if T > 1:  # parallel tempering: each chain a ladder of T replicas (dpmpm.tempering)
            from bayes_risk.models.dpmpm.tempering import TemperedLadder

            step = TemperedLadder(step, T)
        dt = run_gibbs(self, step, layout, random_seed=random_seed,
                       max_sweeps=int(self._run_settings()["max_sweeps"]) if check else 0,
                       check=check)
        record_starts(dt, self._starts(), int(self.resolved_sampling.chains))
        if T > 1:
            from bayes_risk.models.dpmpm.tempering import record_evidence

            record_evidence(dt, T)
        return dt

    def _structural_zeros_for(self, schema: Schema) -> Any:
        from bayes_risk.models.dpmpm.zeros import for_schema

        return for_schema(self.structural_zeros, schema, self.synthesis_mode or (
            "conditional_us" if schema.unsynthesized else "marginal"))

    def saved_settings(self) -> dict[str, Any]:
        out = super().saved_settings()
        if self._zeros is not None:  # the table itself, never a path or a frame
            out["structural_zeros"] = to_jsonable(self._zeros.to_records())
        return out

    def _augmentation_part(self, table: pd.DataFrame, name: str) -> pd.DataFrame:
        self.schema_.check_columns(list(table.columns), name)  # levels the model knows
        return table.astype(object)

    def _refit(self, new: DPMPM, data: pd.DataFrame, both: pd.DataFrame) -> DPMPM:
        # the run this model's settings make, resolved (a refit of the default run is the
        # default run, whatever draws the caller set for it)
        run = self._run_settings()
        if run["max_sweeps"] and self.sampler == "gibbs":
            # a self-extending run starts at the thinning this model's run ended with (which
            # made its own draws pass the checks) and may extend further, with the same bound
            run["thin"] = max(int(run["thin"]), mcmc_run(self)["thin"])
        new.sampling = dataclasses.replace(self.resolved_sampling, **run)
        return super()._refit(new, data, both)

    def _build_model(
        self, codes: np.ndarray | None, d: Sequence[int], *, transforms: bool,
        observed: bool = True,
    ):
        """The class-marginalised PyMC model with this model's prior settings (``dpmpm.fit``)."""
        return _fit.build_model(
            codes, d, self._zeros, n_components=self.n_components, alpha_prior=self.alpha_prior,
            dirichlet_prior=self.dirichlet_prior, transforms=transforms, observed=observed,
        )

    def pymc_model(self, records: pd.DataFrame | None = None, *, transforms: bool = False):
        """The PyMC model (classes and missing values marginalised), ``records`` observed: the
        density every kernel is tested against."""
        self._check_fitted()
        codes = None if records is None else _fit.observed_codes(self.state_, records)
        return self._build_model(codes, list(self.state_.d), transforms=transforms,
                                 observed=records is not None)

    def _after_posterior(self) -> None:
        self._zeros = self._structural_zeros_for(self.schema_)
        self.state_ = build_state(self.posterior_, self.schema_, self._zeros)
        if self.n_components != self.state_.n_components:
            # draws made elsewhere (from_posterior): their K
            self.n_components = self.state_.n_components

    def convergence_quantities(self) -> dict[str, np.ndarray]:
        return _fit.convergence_quantities(self.state_)

    def _draws(self, draw_indices: Any) -> np.ndarray | None:
        """Flattened draw indices of ``draw_indices``; ``None`` for all (no copy)."""
        return None if draw_indices is None else self._draw_indices(draw_indices)

    def record_loglik(self, records: pd.DataFrame, *, draw_indices: Any = None) -> np.ndarray:
        """``[H, n]`` joint record log-likelihoods ``log p(y_i | Θ_h)`` (Hu & Savitsky 2018).

        A missing value is marginalised; a level the model was not fitted with gives ``-inf``.

        Parameters
        ----------
        records : DataFrame
            Records with the model's columns (extra columns are ignored).
        draw_indices : array of int, optional
            Flattened draw indices (default all ``H``).
        """
        self._check_fitted()
        return _loglik.record_loglik(self.state_, records, self._draws(draw_indices))

    def dataset_loglik(
        self, synthetic: Sequence[pd.DataFrame] | SyntheticData | pd.DataFrame, *,
        draw_indices: Any = None,
    ) -> np.ndarray:
        """``[H, m]`` log-likelihoods ``log p(Z_(l) | Θ_h)`` under the synthesis mode, summed over
        the synthesized records (:doc:`/methods/models`)."""
        self._check_fitted()
        return _loglik.dataset_loglik(
            self.state_, synthetic, self._draws(draw_indices), mode=self.synthesis_mode_,
            rows=self._synthesized_rows(), n=self.n_records, data=self.data_,
        )

    def own_record_delta(
        self,
        record: int | pd.Series,
        candidates: pd.DataFrame,
        synthetic: Sequence[pd.DataFrame] | SyntheticData | pd.DataFrame,
        *,
        draw_indices: Any = None,
    ) -> np.ndarray:
        """``[H, m, G]`` own-record term ``ℓ_{hli}(y*_g) − ℓ_{hli}(y_i)`` (class O).

        Non-zero in ``posterior_class`` mode only, for synthesized records.

        Parameters
        ----------
        record : int or Series
            Record position ``i`` in the original data, or the row (its ``name`` the position).
        candidates : DataFrame
            ``G`` candidate values of some of the model's columns.
        synthetic : sequence of DataFrame or SyntheticData
            The ``m`` released datasets.
        draw_indices : array of int, optional
            Flattened draw indices.
        """
        self._check_fitted()
        return _loglik.own_record_delta(
            self.state_, record, candidates, synthetic, self._draw_indices(draw_indices),
            mode=self.synthesis_mode_, n=self.n_records,
            synthesized_records=self.synthesized_records_, data=self.data_,
        )

    def neighbourhood_size(self) -> int:
        """``G = 1 + Σ_{j∈S} (d_j − 1)`` of the one-variable-different set."""
        self._check_fitted()
        return _loglik.neighbourhood_size(self.state_)

    def neighbourhood_loglik(
        self,
        records: pd.DataFrame,
        *,
        draw_indices: Any = None,
        chunk_size: int | None = None,
        out: np.ndarray | None = None,
    ) -> np.ndarray:
        """``[H, n, G]`` joint log-likelihoods of the one-variable-different candidates, the truth
        first (:doc:`/methods/attribute`, Candidate sets); ``out`` receives them when given.

        Raises
        ------
        SchemaError
            If a record has a missing value or a level the model was not fitted with
            (``TRUTH_OUTSIDE_SUPPORT``).
        """
        self._check_fitted()
        return _loglik.neighbourhood_loglik(
            self.state_, records, self._draws(draw_indices), chunk_size=chunk_size, out=out
        )

    def class_probabilities(self, records: pd.DataFrame, *, draw_indices: Any = None) -> np.ndarray:
        """``[H, n, K]`` class probabilities ``p(k | y_i, Θ_h)`` (missing values marginalised)."""
        self._check_fitted()
        return _loglik.class_probabilities(self.state_, records, self._draws(draw_indices))

    def _synthesize_one(
        self, draw: int, rng: np.random.Generator, data: pd.DataFrame | None
    ) -> pd.DataFrame:
        return _synthesis.synthesize_one(
            self.state_, draw, rng, data, mode=self.synthesis_mode_,
            rows=self._synthesized_rows(), n=self.n_records, dtypes=self.dtypes_,
        )
