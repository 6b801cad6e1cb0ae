"""Poisson-mixture synthesizers for count data: MP, MM and TCMM (Wei & Reiter 2016; Hu 2019 §3.3.3).

The work is done by the functions of the ``poisson`` modules on the fitted state
(:class:`~bayes_risk.models.poisson.state.PoissonState`); see :doc:`/methods/models`.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, ClassVar, Literal

import numpy as np
import pandas as pd

import bayes_risk.models.poisson.fit as _fit
import bayes_risk.models.poisson.largest as _largest
import bayes_risk.models.poisson.loglik as _loglik
import bayes_risk.models.poisson.posterior as _posterior
import bayes_risk.models.poisson.synthesis as _synthesis
from bayes_risk._constraints import Interval, Options, Requires, check_params
from bayes_risk._rng import RandomSeed
from bayes_risk.contract import ModelInfo
from bayes_risk.data.schema import Schema
from bayes_risk.exceptions import SchemaError, on_command_line
from bayes_risk.models._bayesian.base import BayesianSynthesizer
from bayes_risk.models._bayesian.posterior import PosteriorDims, PosteriorVariable
from bayes_risk.models._bayesian.sampling import Sampling, run_pymc
from bayes_risk.models._bayesian.starts import chain_starts
from bayes_risk.models.base import FittedAttribute
from bayes_risk.models.poisson.fit import LATENT_GROUP
from bayes_risk.models.poisson.largest import LargestValueLikelihood
from bayes_risk.models.poisson.state import PoissonState

if TYPE_CHECKING:  # pragma: no cover
    import xarray as xr

    from bayes_risk.data.synthetic import SyntheticData

__all__ = ["PoissonMixture", "LargestValueLikelihood"]

_VARIANTS = ("mp", "mm", "tcmm")
_MODES = ("marginal", "posterior_class")
_SAMPLERS = ("gibbs", "nuts")
_POSITIVE = Interval(float, 0, closed="neither")
#: the constraint table of the plain settings
_SETTINGS = {
    "variant": Options(_VARIANTS), "synthesis_mode": Options(_MODES),
    "sampler": Options(_SAMPLERS), "n_components": Interval(int, 1),
    "a_lambda": _POSITIVE, "a_alpha": _POSITIVE, "b_alpha": _POSITIVE,
    "b_lambda": [_POSITIVE, None], "q": Interval(float, 0, 1, closed="right"),
}
_RELATIONS = (Requires("synthesis_mode", "variant", when=("posterior_class",), equal=("mp",),
                       why="MM and TCMM always use the sampled memberships",
                       code="INVALID_ARGUMENT"),)
_OVERDISPERSED = ("prior", "spread", "few")


class PoissonMixture(BayesianSynthesizer):
    """Truncated Dirichlet-process mixture of products of Poissons for count data (Hu 2019 §3.3.3).

    The model and its variants: :doc:`/methods/models`.

    Parameters
    ----------
    variant : {"mp", "mm", "tcmm"}
        ``"mp"``: the posterior predictive. ``"mm"``: each component's column totals
        redistributed over its members (class O). ``"tcmm"``: tail-collapsed MM with threshold
        ``q`` (**provisional**).
    q : float
        TCMM only: quantile in ``(0, 1]`` defining each column's tail (smaller: more collapsed).
    n_components : int
        Truncation level ``K`` (default 50). ``K = 1`` is independent Poissons.
    a_lambda : float
        Gamma shape ``a_λ`` of the rates (default 1).
    b_lambda : float or None
        Gamma rate ``b_λ``; ``None`` (default): ``1 / max(1, mean(y_·j))`` per column.
    a_alpha, b_alpha : float
        Gamma(shape, rate) prior of the concentration ``α`` (default 0.25, 0.25).
    synthesis_mode : {"marginal", "posterior_class"}
        MP only: components drawn from ``π`` (class P, default) or the sampled ``z_i`` (class O).
    sampler : {"gibbs", "nuts"}
        ``"gibbs"`` (default): blocked Gibbs, recording memberships. ``"nuts"``: PyMC's NUTS
        (small problems only).
    sampling : Sampling, optional
        How the sampler runs (:class:`~bayes_risk.models.Sampling`): ``draws`` (default
        1,000), ``tune`` (500), ``chains`` (1), ``cores`` (1) and ``starts`` (``("prior",
        "spread", "few")``).
    random_seed, progressbar
        See :class:`~bayes_risk.models._bayesian.base.BayesianSynthesizer`.

    Attributes
    ----------
    posterior_ : xarray.DataTree
        ``posterior``: ``alpha`` [chain, draw], ``v`` [..., stick], ``w`` (= π) [..., component],
        ``lam`` [..., component, column]; ``sample_stats``: ``n_occupied``, ``loglik``;
        ``latent``: ``z`` [chain, draw, record] (Gibbs only).
    schema_ : Schema
    data_ : DataFrame or None
        Confidential records, kept for MM/TCMM and ``posterior_class`` (needed to synthesize).
    synthesized_records_ : ndarray of bool or None
        Records whose count columns are replaced (``None``: all records).
    state_ : ~bayes_risk.models.poisson.state.PoissonState
        The fitted state the likelihoods and the synthesis read (frozen): ``params(idx)``,
        ``memberships_of(h)``, ``counts(df)``; set by :meth:`fit`, ``load`` and
        ``from_posterior``; reading it before raises
        :class:`~bayes_risk.exceptions.NotFittedError`.
    model_class : {"P", "O"}
        ``"P"`` for MP in marginal mode, ``"O"`` otherwise.
    ratio_form : "joint"

    Notes
    -----
    Under partial synthesis of selected records the mixture is fitted to every record; only the
    selected ones get synthetic counts (MM: the totals of its selected members) and count in the
    likelihoods. Missing counts (variant ``"mp"`` only): :doc:`/methods/models`.

    Examples
    --------
    >>> import warnings
    >>> import numpy as np, pandas as pd
    >>> from bayes_risk.exceptions import BayesRiskWarning
    >>> rng = np.random.default_rng(0)
    >>> df = pd.DataFrame({"workers": rng.poisson(5, 100), "wages": rng.poisson(50, 100)})
    >>> from bayes_risk.models import Sampling
    >>> pm_ = PoissonMixture(variant="mm", n_components=5,
    ...                      sampling=Sampling(tune=50, draws=50), progressbar=False)
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore", BayesRiskWarning)  # 50 draws: too short, it warns
    ...     pm_ = pm_.fit(df, random_seed=1)
    >>> syn = pm_.synthesize(2, random_seed=2)
    >>> int(syn[0]["wages"].sum()) == int(df["wages"].sum())  # MM keeps every column total
    True
    """

    method_name = "poisson-mixture"
    state_ = FittedAttribute(
        "The fitted :class:`~bayes_risk.models.poisson.state.PoissonState` (set by ``fit``).")
    #: what no method shows (bayes_risk.ModelInfo; the rest: bayes_risk.contract.capabilities)
    info = ModelInfo(imputes=True, partial_synthesis=True)
    ratio_form: Literal["joint", "conditional"] = "joint"
    sampling_defaults: ClassVar[Mapping[str, Any]] = MappingProxyType(
        {"draws": 1000, "tune": 500, "chains": 1, "cores": 1, "starts": "overdispersed"})
    posterior_variables = (
        PosteriorVariable("lam", ("component", "column"), "nonnegative"),
        PosteriorVariable("w", ("component",), "simplex", sticks="v"),
        PosteriorVariable("v", ("stick",), "unit_interval", required=False),
        PosteriorVariable("alpha", (), "positive", required=False),
        # the memberships the Gibbs sampler recorded with every draw
        PosteriorVariable("z", ("record",), "label", required=False, group=LATENT_GROUP),
    )

    def __init__(
        self,
        *,
        variant: Literal["mp", "mm", "tcmm"] = "mp",
        q: float = 0.9,
        n_components: int = 50,
        a_lambda: float = 1.0,
        b_lambda: float | None = None,
        a_alpha: float = 0.25,
        b_alpha: float = 0.25,
        synthesis_mode: Literal["marginal", "posterior_class"] = "marginal",
        sampler: Literal["gibbs", "nuts"] = "gibbs",
        sampling: Sampling | None = None,
        random_seed: RandomSeed = None,
        progressbar: bool = True,
    ) -> None:
        super().__init__(sampling=sampling, random_seed=random_seed, progressbar=progressbar)
        self.variant = variant
        self.q = q
        self.n_components = n_components
        self.a_lambda = a_lambda
        self.b_lambda = b_lambda
        self.a_alpha = a_alpha
        self.b_alpha = b_alpha
        self.synthesis_mode = synthesis_mode
        self.sampler = sampler

    @property
    def model_class(self) -> Literal["P", "O"]:  # type: ignore[override]
        """``"P"`` for MP in ``marginal`` mode, ``"O"`` for MM, TCMM and ``posterior_class``."""
        return "P" if (self.variant == "mp" and self.synthesis_mode == "marginal") else "O"

    def _check_settings(self) -> None:
        check_params(self, _SETTINGS, relations=_RELATIONS)

    def _starts(self) -> tuple[str, ...]:
        """How the Gibbs chains start, cycled over them (``starts``)."""
        return chain_starts(self.resolved_sampling.starts, _OVERDISPERSED)

    def _count_columns(self, schema: Schema) -> list[str]:
        # no synthesized role given (e.g. from_posterior with an inferred schema): full synthesis
        cols = schema.synthesized or schema.names
        bad = [c for c in cols if schema[c].type != "count"]
        if bad:
            raise SchemaError(
                f"PoissonMixture models count columns only; column {bad[0]!r} is "
                f"{schema[bad[0]].type}. Synthesize only count columns ("
                + ("--columns or --synthesize" if on_command_line() else "synthesized=[...]")
                + ") or declare integer columns with "
                + ("--count COL ..." if on_command_line() else "count=[...] in infer_schema")
                + ".",
                code="WRONG_DTYPE",
            )
        return cols

    @property
    def columns_(self) -> list[str]:
        """The modelled (synthesized) count columns."""
        self._check_fitted()
        return self._count_columns(self.schema_)

    def _b_lambda_vector(self, y: np.ndarray) -> np.ndarray:
        if self.b_lambda is not None:
            return np.full(y.shape[1], float(self.b_lambda))
        fixed = getattr(self, "_prior_rate_fixed", None)
        if fixed is not None:  # an augmented fit keeps the base fit's prior (fit_augmented)
            return np.asarray(fixed, dtype=np.float64)
        # the mean of the observed counts (missing ones are NaN)
        return 1.0 / np.maximum(1.0, np.nanmean(y, axis=0))

    def _missing_refusal(self) -> str:
        if self.variant == "mp":  # its likelihood sums a missing count out
            return ""
        return (f"Variant {self.variant!r} redistributes each component's confidential column "
                "totals over its members, and a missing count leaves its group's total "
                "unobserved (methods, Poisson mixtures: missing values); "
                + ("--variant mp" if on_command_line() else "variant='mp'")
                + " accepts missing counts. Leave the column or its records out, or fill the "
                "cells first.")

    def _draw_posterior(self, data: pd.DataFrame, schema: Schema, seed: RandomSeed
                        ) -> xr.DataTree:
        # the mixture is fitted to the count columns of every record
        cols = self._count_columns(schema)
        y = data[cols].to_numpy(dtype=np.float64)
        empty = [c for c, seen in zip(cols, (~np.isnan(y)).any(axis=0), strict=True) if not seen]
        if empty:
            raise SchemaError(f"data: column {empty[0]!r} is missing in every record; a "
                              "modelled count column needs an observed value.",
                              code="MISSING_VALUES")
        model = self.build_pymc_model(y, cols)
        if self.sampler == "nuts":
            return run_pymc(self, model, random_seed=seed)
        return _fit.sample_gibbs(
            model, y, seed, run_sampler=functools.partial(run_pymc, self),
            n_components=self.n_components,
            a_lambda=self.a_lambda, b_lambda=self._b_lambda_vector(y), a_alpha=self.a_alpha,
            b_alpha=self.b_alpha, starts=self._starts(), chains=self.resolved_sampling.chains,
        )

    def _posterior_dims(self, posterior: xr.DataTree | None, schema: Schema,
                        data: pd.DataFrame | None = None) -> PosteriorDims:
        self._check_settings()
        cols = self._count_columns(schema)
        return PosteriorDims(sizes={"component": int(self.n_components), "column": cols},
                             about={"component": "n_components: pass n_components to match",
                                    "column": f"the count columns {cols}"})

    def _after_posterior(self) -> None:
        self.state_ = PoissonState(
            schema=self.schema_, columns=self._count_columns(self.schema_),
            variant=self.variant, q=float(self.q), model_class=self.model_class,
            tree=self.posterior_, synthesized_records=self.synthesized_records_,
            n_records=self._n_records,
        )

    def convergence_quantities(self) -> dict[str, np.ndarray]:
        return _posterior.convergence_quantities(self.state_)

    def _synthesize_one(
        self, draw: int, rng: np.random.Generator, data: pd.DataFrame | None
    ) -> pd.DataFrame:
        return _synthesis.synthesize_one(self.state_, draw, rng, data, dtypes=self.dtypes_)

    def build_pymc_model(
        self, y: np.ndarray, columns: Sequence[str], b_lambda: np.ndarray | None = None
    ):
        """The class-marginalised PyMC model of Hu 2019 §3.3.3 (the single source of truth).

        Parameters
        ----------
        y : ndarray [n, p]
            Counts (observed).
        columns : sequence of str
            Column names (coordinate ``column``).
        b_lambda : ndarray [p], optional
            Prior rates of ``λ`` (default: from the settings and ``y``).

        Returns
        -------
        pymc.Model
            Free ``alpha``, ``v`` (``K > 1``) and ``lam``; deterministic ``w``; observed ``y``.
        """
        b = self._b_lambda_vector(np.asarray(y, dtype=np.float64)) if b_lambda is None else b_lambda
        return _fit.build_pymc_model(
            y, columns, b, n_components=self.n_components, a_lambda=self.a_lambda,
            a_alpha=self.a_alpha, b_alpha=self.b_alpha,
        )

    def pymc_record_logp(self, records: pd.DataFrame, *, draw_indices: Any = None) -> np.ndarray:
        """``[H, n]`` record log-densities by the PyMC model itself (slow; for checks)."""
        self._check_fitted()
        idx = self._draw_indices(draw_indices)
        y = self.state_.counts(records)
        model = self.build_pymc_model(y, self.columns_, b_lambda=np.ones(y.shape[1]))
        return _fit.pymc_record_logp(model, self.posterior_, y.shape[0], idx)

    def _refit(self, new: PoissonMixture, data: pd.DataFrame, both: pd.DataFrame
               ) -> PoissonMixture:
        cols = self.columns_
        # same prior as the base fit: the default b_λ = 1 / max(1, mean y) is computed on the
        # confidential data y, not on y ∪ Z_(l), or p(Θ | y, Z_(l)) would use another prior
        new._prior_rate_fixed = self._b_lambda_vector(data[cols].to_numpy(dtype=np.float64))
        return new.fit(both, schema=self.schema_.keeping_levels(), synthesized=cols)

    def record_loglik(self, records: pd.DataFrame, *, draw_indices: Any = None) -> np.ndarray:
        """``[H, n]`` MP record log-likelihood ``log p(y_i | Θ_h)`` (every variant's importance
        ratios, Hu 2019 §3.2.5); a negative or non-integer count gives ``-inf``."""
        self._check_fitted()
        return _loglik.record_loglik(self.state_, records, self._draw_indices(draw_indices))

    def neighbourhood_loglik(self, records: pd.DataFrame, *,
        draw_indices: Any = None) -> np.ndarray:
        """Not defined for count data: counts have no finite level set.

        Raises
        ------
        NeighbourhoodUnavailable
            Always; use :meth:`record_loglik` on a grid, or :meth:`largest_value_loglik`.
        """
        raise _loglik.neighbourhood_unavailable()

    def dataset_loglik(
        self, synthetic: Sequence[pd.DataFrame] | SyntheticData, *, draw_indices: Any = None,
        memberships: Any = None,
    ) -> np.ndarray:
        """``[H, m]`` array of ``log p(Z_(l) | Θ_h)`` under the synthesis mode (Hu 2019 §3.3.3).

        Parameters
        ----------
        memberships : str, int array [n] or [H, n], or None
            Class O only, the unreleased memberships: ``"generating"`` (default when recorded),
            ``"map"`` (default otherwise), ``"stored"``, an integer array (the intruder's
            guess) or ``"marginalised"`` (default for MP ``posterior_class``); see
            :doc:`/methods/models`.
        """
        self._check_fitted()
        return _loglik.dataset_loglik(self.state_, synthetic, self._draw_indices(draw_indices),
                                      memberships, self.data_)

    def candidate_dataset_loglik(
        self,
        record: int,
        candidates: pd.DataFrame | np.ndarray,
        synthetic: Sequence[pd.DataFrame] | SyntheticData,
        *,
        draw_indices: Any = None,
        memberships: Any = None,
    ) -> np.ndarray:
        """``[H, m, G]`` class-O dataset log-likelihood with the record's counts set to ``y*_g``.

        ``L_{hl} + delta`` of the class-O estimator (Hu 2019 §3.2.5), defined when
        ``L_{hl} = −inf``.

        Parameters
        ----------
        record : int or Series
            Row position (0-based) of the target record in the confidential data, or the row itself.
        candidates : DataFrame or array [G, p]
            Candidate count vectors: an array over all modelled columns (``columns_`` order) or
            a DataFrame over some of them (the others keep the record's true values).
        synthetic : sequence of DataFrame or SyntheticData
            The released datasets.
        draw_indices, memberships
            As in :meth:`dataset_loglik` (the target keeps its given membership for every
            candidate).

        Raises
        ------
        ValidationError
            For a class-P model (no own-record dependence) or a bad record index.
        """
        self._check_fitted()
        return _loglik.candidate_dataset_loglik(
            self.state_, record, candidates, synthetic, self._draw_indices(draw_indices),
            memberships, self.data_,
        )

    def own_record_delta(
        self,
        record: int,
        candidates: pd.DataFrame | np.ndarray,
        synthetic: Sequence[pd.DataFrame] | SyntheticData,
        *,
        draw_indices: Any = None,
        memberships: Any = None,
    ) -> np.ndarray:
        """``[H, m, G]`` class-O own-record term ``ℓ_{hl}(y*_g) − ℓ_{hl}(y_i)``.

        :meth:`candidate_dataset_loglik` minus its value at the truth (``+inf`` where only the
        truth's is ``−inf``; 0 for a record that is not synthesized).
        """
        self._check_fitted()
        return _loglik.own_record_delta(
            self.state_, record, candidates, synthetic, self._draw_indices(draw_indices),
            memberships, self.data_,
        )

    def largest_value_candidates(
        self, column: str, upper: float, *, step: float = 1.0, data: pd.DataFrame | None = None
    ) -> tuple[np.ndarray, int, int]:
        """Candidate grid for the largest value of ``column`` (Wei & Reiter 2016): ``step``s from
        ``y_(2)j`` to ``upper``, with the truth ``y_(1)j``.

        Returns
        -------
        (candidates [G], g0, record)
            ``record`` is the row holding ``y_(1)j`` (the first one if tied).

        Raises
        ------
        ValidationError
            If ``upper < y_(1)j`` or ``column`` is not modelled.
        """
        self._check_fitted()
        return _largest.largest_value_candidates(self.state_, column, upper, step, data,
                                                 self.data_)

    def largest_value_loglik(
        self,
        column: str,
        synthetic: Sequence[pd.DataFrame] | SyntheticData,
        *,
        scenario: str = "worst_case",
        total_known: bool = False,
        candidates: np.ndarray | None = None,
        upper: float | None = None,
        step: float = 1.0,
        draw_indices: Any = None,
        memberships: Any = None,
        data: pd.DataFrame | None = None,
        allow_other_model: bool = False,
    ) -> LargestValueLikelihood:
        """Per-candidate likelihood pieces for the Wei–Reiter largest-value scenarios.

        The target is the record holding ``y_(1)j``; the pieces go to
        :func:`bayes_risk.attribute.largest_value.largest_value_posterior`. Scenarios:
        :doc:`/methods/attribute` (Intruders of the largest value). Provisional.

        Parameters
        ----------
        column : str
            The magnitude variable.
        synthetic : sequence of DataFrame or SyntheticData
            The released datasets ``Z``.
        scenario : {"worst_case", "second_largest", "two_largest_sum"}
            What the intruder knows.
        total_known : bool
            ``second_largest`` only: the intruder also knows the column total ``T_j``.
        candidates : array [G], optional
            Candidate values (must contain ``y_(1)j``); default the grid of
            :meth:`largest_value_candidates` on ``[y_(2)j, upper]`` (``two_largest_sum``: every
            admissible split).
        upper, step : float
            Grid upper bound ``U_j`` and spacing (used when ``candidates`` is ``None``).
        draw_indices, memberships
            As in :meth:`dataset_loglik`.
        data : DataFrame, optional
            The confidential table (default: the one kept by class-O models; an MP model in
            marginal mode does not keep it, so pass it).
        allow_other_model : bool, default False
            Go on when this model is not the one that made the release (user guide,
            Provenance), with warning ``MODEL_DIFFERS`` (in the pieces' ``warnings``).

        Returns
        -------
        LargestValueLikelihood

        Raises
        ------
        ValidationError
            For an unknown scenario, ``total_known`` outside ``second_largest``, candidates
            without the truth or outside the admissible range; ``MODEL_DIFFERS`` for a release
            this model did not make.
        NotImplementedError
            For the weaker scenarios under partial synthesis of selected records.
        """
        from bayes_risk.data.provenance import check_release_model

        provenance = check_release_model(self, synthetic, data, allow=allow_other_model)
        self._check_fitted()
        pieces = _largest.largest_value_loglik(
            self.state_, column, synthetic, scenario, total_known, candidates, upper, step,
            self._draw_indices(draw_indices), memberships, data, self.data_,
        )
        pieces.warnings.extend(provenance.warnings)
        return pieces

