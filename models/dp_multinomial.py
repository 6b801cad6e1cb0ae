"""The multinomial–Dirichlet synthesizer of a categorical table, with a known ε of differential
privacy (Machanavajjhala et al. 2008; McClure & Reiter 2012). See :doc:`/methods/privacy`.

Every record falls in one cell of the table crossing all its columns (``K`` cells, the product
of the columns' levels). The cell probabilities ``θ`` have the prior ``Dirichlet(α, …, α)``, so
their posterior given the cell counts ``c`` is ``Dirichlet(α + c)``: its draws are exact (no
MCMC, nothing to diagnose). A synthetic dataset takes its own posterior draw ``θ_h`` and draws
``n`` records from ``Categorical(θ_h)``: every column of every record is synthesized, and given
``θ`` the release does not depend on the confidential values (class P). Each dataset is
``ε``-differentially private with ``ε = log(1 + n/α)``
(:func:`bayes_risk.privacy.dirichlet_epsilon`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
import pandas as pd
from scipy.special import logsumexp

from bayes_risk._constraints import Interval, OneOf, check_params
from bayes_risk._rng import RandomSeed, as_generator
from bayes_risk.contract import ModelInfo
from bayes_risk.data.schema import Schema
from bayes_risk.data.synthetic import SyntheticData, as_frames
from bayes_risk.exceptions import NotSupportedError, SchemaError, ValidationError, arg_name
from bayes_risk.models._bayesian.base import BayesianSynthesizer
from bayes_risk.models._bayesian.posterior import PosteriorVariable
from bayes_risk.models.base import FittedAttribute
from bayes_risk.models.dpmpm.coding import decode_column, encode, encode_dataset
from bayes_risk.models.persistence import StateField
from bayes_risk.privacy import (
    EXTRA_FIELD,
    MECHANISM,
    dirichlet_alpha,
    dirichlet_epsilon,
)

if TYPE_CHECKING:  # pragma: no cover
    import xarray as xr

__all__ = ["DPMultinomial", "DPMultinomialState"]

#: the most values of θ held at once (cells × draws): 400 MB of float64
MAX_THETA_VALUES = 50_000_000
_SETTINGS = {name: [Interval(float, 0, closed="neither"), None] for name in ("epsilon", "alpha")}
_WHY = "the ε of each synthetic dataset, or the prior count per cell"
#: the settings against each other: one of the two, not both (a conflict), not neither
_RELATIONS = (OneOf(("epsilon", "alpha"), why=_WHY),
              OneOf(("epsilon", "alpha"), required=True, why=_WHY, code="OPTION_REQUIRED"))


@dataclass(frozen=True, eq=False)
class DPMultinomialState:
    """The fitted state of a :class:`~bayes_risk.models.DPMultinomial`: what its synthesis and
    likelihoods read.

    Attributes
    ----------
    schema : Schema
    log_theta : ndarray (H, K)
        The draws of the log cell probabilities, chain-major.
    cdf : ndarray (H, K)
        Their cumulative probabilities (a record's cell drawn by inverse CDF).
    alpha : float
        The prior count per cell.
    exact_draws : bool
        Whether the draws are the model's own exact ones (adopted draws are not).
    """

    schema: Schema
    log_theta: np.ndarray
    cdf: np.ndarray
    alpha: float
    exact_draws: bool


class DPMultinomial(BayesianSynthesizer):
    """Multinomial–Dirichlet synthesizer of a categorical table, ε-differentially private.

    Give the privacy of each synthetic dataset (``epsilon``) or the prior count per cell
    (``alpha``), not both: ``α = n / (e^ε − 1)`` for a table of ``n`` records, and a release of
    ``m`` datasets has ``ε = m · log(1 + n/α)`` (:doc:`/methods/privacy`).

    Parameters
    ----------
    epsilon : float, optional
        ε of each synthetic dataset (``> 0``); sets ``alpha`` at :meth:`fit`.
    alpha : float, optional
        Dirichlet prior count of every cell (``> 0``); then ``ε = log(1 + n/α)`` per dataset.
    sampling : Sampling, optional
        ``draws`` (default 1,000) and ``chains`` (2): the exact posterior draws, arranged as
        ArviZ chains (nothing to tune, nothing to diagnose).
    random_seed
        See :class:`~bayes_risk.models._bayesian.base.BayesianSynthesizer`.
    progressbar : bool
        Unused (the draws are exact); kept for the Bayesian models' common settings.

    Attributes
    ----------
    alpha_ : float
        The prior count per cell the fit used.
    counts_ : ndarray (K,)
        Cell counts of the confidential table.
    posterior_ : xarray.DataTree
        The draws of ``θ`` (group ``posterior``, variable ``log_theta``, dims chain, draw, cell).
    state_ : ~bayes_risk.models.dp_multinomial.DPMultinomialState
        The fitted state (frozen) its synthesis and likelihoods read; set by :meth:`fit`,
        ``load`` and ``from_posterior``; reading it before raises
        :class:`~bayes_risk.exceptions.NotFittedError`.

    Notes
    -----
    The ε holds for tables of the same ``n`` over the same cells (bounded differential
    privacy): ``n`` and the columns' levels are taken as public. Levels read off the data are
    the data's, so declare them (a pandas Categorical's categories, ``infer_schema(levels=)``)
    when a level held by few records must not show; unused declared levels are kept (cells of
    prior weight only). Only the synthetic datasets are private: the fitted draws (a saved
    model) are not released. References: Machanavajjhala, A., Kifer, D., Abowd, J., Gehrke, J.
    & Vilhuber, L. (2008), Privacy: theory meets practice on the map, *ICDE*, 277–286;
    McClure, D. & Reiter, J. P. (2012), Differential privacy and statistical disclosure risk
    measures: an investigation with binary synthetic data, *Transactions on Data Privacy* 5,
    535–552.
    """

    method_name: ClassVar[str] = "dp-multinomial"
    state_ = FittedAttribute(
        "The fitted :class:`~bayes_risk.models.dp_multinomial.DPMultinomialState` (set by "
        "``fit``).")
    #: every dataset spends ε again: one by default
    default_m: int = 1
    info = ModelInfo(categorical_only=True)
    posterior_variables = (PosteriorVariable("log_theta", ("cell",), "log_simplex"),)
    model_class = "P"
    ratio_form = "joint"
    sampling_defaults: ClassVar[Mapping[str, Any]] = MappingProxyType(
        {"draws": 1000, "chains": 2})
    saved_state = MappingProxyType({
        **BayesianSynthesizer.saved_state,
        # α as the fit resolved it (from ε and n): the ε a release records rests on it
        "alpha": StateField("alpha_", float, check=lambda a: math.isfinite(a) and a > 0,
                            asks="a prior count > 0"),
        # whether the draws are this model's own exact ones (adopted draws are not)
        "exact_draws": StateField("exact_draws_", bool, False)})

    def __init__(
        self,
        *,
        epsilon: float | None = None,
        alpha: float | None = None,
        sampling: Any = None,
        random_seed: RandomSeed = None,
        progressbar: bool = True,
    ) -> None:
        super().__init__(sampling=sampling, random_seed=random_seed, progressbar=progressbar)
        self.epsilon = epsilon
        self.alpha = alpha

    # ---------------------------------------------------------------------------- fitting
    def _check_settings(self) -> None:
        self.check_mcmc_settings()
        check_params(self, _SETTINGS, relations=_RELATIONS)

    def fit(self, data: pd.DataFrame, *, schema: Schema | None = None,
            synthesized: Sequence[str] | None = None, records: Any = None,
            random_seed: RandomSeed = None) -> DPMultinomial:
        """Draw the cell probabilities from their posterior ``Dirichlet(α + counts)``.

        Raises
        ------
        NotSupportedError
            For partial synthesis (``synthesized`` short of every column, or ``records``):
            released true values have no ε (``PARTIAL_NOT_PRIVATE``).
        SchemaError
            A column that is not categorical (``WRONG_DTYPE``), or too many cells.
        ValidationError
            Neither or both of ``epsilon`` and ``alpha``, or a bad value.
        """
        if records is not None:
            from bayes_risk.models._bayesian.records import check_synthesized_records

            if isinstance(data, pd.DataFrame):
                check_synthesized_records(records, len(data))  # a bad selection named first
            raise NotSupportedError(
                "DPMultinomial synthesizes every record (full synthesis): records released "
                f"with their true values have no ε. Leave {arg_name('records')} out.",
                code="PARTIAL_NOT_PRIVATE")
        return super().fit(data, schema=schema, synthesized=synthesized,
                           random_seed=random_seed)

    def _prepare_data(self, data: pd.DataFrame, **kw: Any) -> tuple[pd.DataFrame, Schema]:
        # the cells are the domain of the guarantee: declared levels are kept, never dropped
        # because no record holds them (that would make the domain depend on the data)
        kw["fitting"] = False
        data, schema = super()._prepare_data(data, **kw)
        if schema.unsynthesized:
            raise NotSupportedError(
                f"DPMultinomial synthesizes every column; {schema.unsynthesized} would be "
                "released with their true values, which have no ε. Synthesize every column "
                f"(leave {arg_name('synthesized')} out) or drop those columns.",
                code="PARTIAL_NOT_PRIVATE")
        return data, schema

    def _draw_posterior(self, data: pd.DataFrame, schema: Schema, seed: RandomSeed
                        ) -> xr.DataTree:
        shape = _shape(schema)
        K, s = int(np.prod(shape, dtype=np.float64)), self.resolved_sampling
        if K * s.draws * s.chains > MAX_THETA_VALUES:
            raise ValidationError(
                f"the table has {K:,} cells (the product of the columns' levels) and "
                f"{s.chains * s.draws:,} draws: {K * s.chains * s.draws:,} probabilities, more "
                f"than the {MAX_THETA_VALUES:,} held at once. Model fewer columns or take fewer "
                f"{arg_name('draws')}.", code="MEMORY_TOO_LARGE")
        self.alpha_ = (float(self.alpha) if self.alpha is not None
                       else dirichlet_alpha(epsilon=self.epsilon, n_records=len(data)))
        codes = encode(schema, data, name="data")
        counts = np.bincount(np.ravel_multi_index(codes.T, shape), minlength=K)
        log_theta = _log_dirichlet(self.alpha_ + counts.astype(np.float64),
                                   (s.chains, s.draws), as_generator(seed))
        self.exact_draws_ = True
        return _tree(log_theta, counts)

    def fit_augmented(self, data: pd.DataFrame, synthetic: pd.DataFrame, *,
                      random_seed: RandomSeed = None) -> DPMultinomial:
        """A copy with exact draws of ``p(θ | y, Z_(l)) = Dirichlet(α + c_y + c_Z)`` (the
        stabilised estimator), the same α."""
        self._check_fitted("fit_augmented")
        shape = _shape(self.schema_)
        both = [encode(self.schema_, data, name="data"),
                encode_dataset(self.schema_, synthetic, 0, len(synthetic))]
        if any((c < 0).any() for c in both):
            raise SchemaError("the table or the synthetic dataset holds a missing value or a "
                              "level the model was not fitted with.", code="UNKNOWN_LEVEL")
        counts = sum(np.bincount(np.ravel_multi_index(c.T, shape), minlength=math.prod(shape))
                     for c in both)
        post = self.posterior_["posterior"]
        log_theta = _log_dirichlet(self.alpha_ + counts.astype(np.float64),
                                   (int(post.sizes["chain"]), int(post.sizes["draw"])),
                                   as_generator(random_seed))
        new = type(self)(**self.get_params(deep=False))
        return new.adopt(_tree(log_theta, counts), self.schema_, self.n_records, data=None,
                         flags=None, state=self.persisted_state()[0])

    def _after_posterior(self) -> None:
        log_theta = self._stacked("log_theta")
        self.state_ = DPMultinomialState(
            schema=self.schema_, log_theta=log_theta, cdf=np.cumsum(np.exp(log_theta), axis=1),
            alpha=float(self.alpha_), exact_draws=self.exact_draws_)

    def convergence_quantities(self) -> dict[str, np.ndarray]:
        return {}  # exact draws: nothing to diagnose

    def adopt(self, posterior: xr.DataTree, schema: Schema, n_records: int, *,
              data: pd.DataFrame | None, flags: np.ndarray | None,
              state: Mapping[str, Any] | None = None,
              arrays: Mapping[str, np.ndarray] | None = None) -> DPMultinomial:
        if state is None:  # draws made elsewhere (from_posterior): their α is the setting's
            self._check_settings()
            self.alpha_ = (float(self.alpha) if self.alpha is not None
                           else dirichlet_alpha(epsilon=self.epsilon, n_records=int(n_records)))
        return super().adopt(posterior, schema, n_records, data=data, flags=flags, state=state,
                             arrays=arrays)

    # ---------------------------------------------------------------------------- privacy
    @property
    def epsilon_per_dataset(self) -> float:
        """ε of one synthetic dataset of the fitted model: ``log(1 + n/α)``."""
        self._check_fitted("epsilon_per_dataset")
        return dirichlet_epsilon(alpha=self.alpha_, n_records=self.n_records)

    # ---------------------------------------------------------------------------- synthesis
    def synthesize(self, m: int = 1, *, random_seed: RandomSeed = None) -> SyntheticData:
        """``m`` datasets of ``n`` records, each from its own exact posterior draw; the
        manifest records the prior count, from which the release's ε is computed
        (:func:`bayes_risk.privacy.release_privacy`: ``m · log(1 + n/α)``).

        Returns
        -------
        SyntheticData
        """
        syn = super().synthesize(m, random_seed=random_seed)
        if self.exact_draws_:
            syn.extra[EXTRA_FIELD] = {"mechanism": MECHANISM, "alpha": float(self.alpha_),
                                      "n_records": int(self.n_records)}
        return syn

    def _synthesize_one(self, draw: int, rng: np.random.Generator, data: pd.DataFrame | None
                        ) -> pd.DataFrame:
        cdf = self.state_.cdf[draw]
        cells = np.minimum(np.searchsorted(cdf, rng.random(self.n_records) * cdf[-1],
                                           side="right"), cdf.size - 1)
        codes = np.unravel_index(cells, _shape(self.schema_))
        out = {}
        for j, spec in enumerate(self.schema_):
            dtype = self.dtypes_.get(spec.name, "")
            # a categorical column straight from its codes (building it from values is slow)
            out[spec.name] = (pd.Categorical.from_codes(codes[j], categories=list(spec.levels),
                                                        ordered=dtype == "category-ordered")
                              if dtype.startswith("category")
                              else decode_column(self.schema_, self.dtypes_, codes[j], j))
        return pd.DataFrame(out)

    # ---------------------------------------------------------------------------- likelihoods
    def _cells(self, table: pd.DataFrame, name: str) -> np.ndarray:
        codes = encode(self.schema_, table, name=name)
        if (codes == -1).any():
            raise SchemaError(f"{name} holds missing values; DPMultinomial models complete "
                              "records only.", code="MISSING_VALUES")
        cells = np.ravel_multi_index(np.maximum(codes, 0).T, _shape(self.schema_))
        return np.where((codes < 0).any(axis=1), -1, cells)  # -1: a level the model never saw

    def record_loglik(self, records: pd.DataFrame, *, draw_indices: Any = None) -> np.ndarray:
        """``[H, n]`` array of ``log θ_h[cell(y_i)]`` (``-inf`` for a level the model never
        saw)."""
        self._check_fitted("record_loglik")
        cells = self._cells(records, "records")
        out = self.state_.log_theta[self._draw_indices(draw_indices)][:, np.maximum(cells, 0)]
        out[:, cells < 0] = -np.inf
        return np.ascontiguousarray(out)

    def dataset_loglik(self, synthetic: Sequence[pd.DataFrame] | SyntheticData, *,
                       draw_indices: Any = None) -> np.ndarray:
        """``[H, m]`` array of ``Σ_i log θ_h[cell(z_i)] = c_Z · log θ_h``."""
        self._check_fitted("dataset_loglik")
        frames = as_frames(synthetic)
        logt = self.state_.log_theta[self._draw_indices(draw_indices)]
        out = np.empty((logt.shape[0], len(frames)))
        for l, z in enumerate(frames):
            cells = self._cells(z, f"synthetic dataset {l + 1}")
            if (cells < 0).any():
                out[:, l] = -np.inf
                continue
            counts = np.bincount(cells, minlength=logt.shape[1]).astype(np.float64)
            out[:, l] = logt @ counts
        return out


def _shape(schema: Schema) -> tuple[int, ...]:
    return tuple(len(c.levels) for c in schema)


def _log_dirichlet(concentration: np.ndarray, size: tuple[int, int],
                   rng: np.random.Generator) -> np.ndarray:
    """Exact ``log θ`` of ``Dirichlet(concentration)`` draws ``[chains, draws, K]``, in log
    space: normalised gammas, a shape ``a < 1`` drawn as ``Gamma(a + 1) · U^(1/a)`` so that a
    cell of small prior count and no record keeps its (tiny) probability instead of 0."""
    a = np.broadcast_to(concentration, (*size, concentration.size))
    small = a < 1.0
    log_g = np.log(rng.standard_gamma(np.where(small, a + 1.0, a)))
    u = rng.random(a.shape)
    log_g = np.where(small, log_g + np.log(u) / np.where(small, a, 1.0), log_g)
    return log_g - logsumexp(log_g, axis=-1, keepdims=True)


def _tree(log_theta: np.ndarray, counts: np.ndarray) -> xr.DataTree:
    import xarray as xr

    ds = xr.Dataset({"log_theta": (("chain", "draw", "cell"), log_theta)},
                    coords={"chain": np.arange(log_theta.shape[0]),
                            "draw": np.arange(log_theta.shape[1])})
    ds.attrs["posterior_method"] = "exact: Dirichlet(alpha + counts)"
    ds.attrs["n_counted"] = int(counts.sum())
    return xr.DataTree.from_dict({"posterior": ds})
