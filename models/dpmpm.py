"""DPMPM: truncated Dirichlet-process mixture of products of multinomials (Hu & Savitsky 2018).

The latent-class model of Dunson & Xing (2009) used for categorical synthesis by Hu, Reiter &
Wang (2014) and in the R package NPBayesImputeCat. The PyMC model (classes marginalised out) is
the single source of truth for the density; the default sampler is a blocked Gibbs step with
numba kernels that runs inside ``pm.sample`` and returns a normal ArviZ DataTree.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Literal

import numpy as np
import pandas as pd

from bayes_risk._io import to_jsonable
from bayes_risk._rng import RandomSeed
from bayes_risk.data.levels import normalise_level
from bayes_risk.data.schema import Schema
from bayes_risk.data.synthetic import SyntheticData
from bayes_risk.exceptions import CALLER, ConvergenceWarning, SchemaError, ValidationError
from bayes_risk.models._stick import (  # noqa: F401  (re-exported)
    alpha_conditional,
    stick_breaking_log,
    stick_conditional,
)
from bayes_risk.models.base import legacy_call_forms
from bayes_risk.models.bayesian import BayesianSynthesizer

if TYPE_CHECKING:  # pragma: no cover
    import xarray as xr

__all__ = ["DPMPM", "MODES", "SAMPLERS"]

MODES: tuple[str, ...] = ("marginal", "conditional_us", "posterior_class")
SAMPLERS: tuple[str, ...] = ("gibbs", "nuts")
_PHI_FLOOR = 1e-300  # the DPMPM φ step: floor before logs
_UNKNOWN = -2  # code of a level the model was not fitted with (log-probability -inf)


# stick breaking and α conditionals are shared with the Poisson mixtures (Hu & Savitsky 2018)


class DPMPM(BayesianSynthesizer):
    """Truncated DP mixture of products of multinomials for categorical data (Hu & Savitsky 2018).

    Model: ``y_ij | z_i = k ~ Cat(φ_kj)``, ``z_i ~ Cat(π)``, ``π`` by truncated stick breaking
    with ``V_k ~ Beta(1, α)`` (``V_K = 1``), ``α ~ Gamma(a_α, b_α)`` (shape, rate),
    ``φ_kj ~ Dirichlet(a, …, a)``. Missing values in the confidential data are imputed inside the
    sampler (each sweep draws the missing ``y_ij`` from ``φ_{z_i j}``), as NPBayesImputeCat does.

    Parameters
    ----------
    n_components : int
        Truncation level ``K >= 1`` (default 50; Hu & Savitsky use 40, NPBayesImputeCat examples
        80). ``K = 1`` is the product of independent Dirichlet–multinomials.
    alpha_prior : (float, float)
        Shape and rate ``(a_α, b_α)`` of the Gamma prior of the DP concentration (0.25, 0.25).
    dirichlet_prior : float
        Dirichlet parameter ``a_jc`` of every category probability (1: uniform).
    synthesis_mode : {"marginal", "conditional_us", "posterior_class"}, optional
        Synthesis mode (Hu & Savitsky 2018). Default: ``marginal`` for full synthesis (no
        unsynthesized columns), ``conditional_us`` for partial synthesis — both class P.
        ``posterior_class`` (NPBayesImputeCat's ``DPMPM_nozeros_syn``) draws each record's class
        from ``p(k | y_i, Θ)`` and is class O.
    sampler : {"gibbs", "nuts"}
        ``gibbs`` (default): blocked Gibbs (Hu & Savitsky 2018) with numba kernels. ``nuts``: PyMC
        NUTS on the class-marginalised model — only for small problems (label switching and
        multimodality make it far slower per effective draw); no missing-value imputation is
        needed there because missing entries are marginalised in the likelihood.
    structural_zeros : DataFrame, path or list of mappings, optional
        Impossible combinations (structural zeros) in NPBayesImputeCat's ``MCZ`` format: the
        model's columns, one pattern per row, a missing value meaning any level (a CSV file:
        an empty field). They get probability zero in the model (truncated-multinomial data
        augmentation of Manrique-Vallier & Reiter 2014), in synthesis and in every likelihood
        (normalised over the allowed cells). Saved with the model (``model.json``).
    tune, draws, chains, cores, random_seed, progressbar
        MCMC settings (see :class:`~bayes_risk.models.bayesian.BayesianSynthesizer`). Defaults:
        2 chains (run in parallel; ``cores=None`` is PyMC's choice, at most the number of CPUs)
        of 1,000 warm-up and 500 kept sweeps, so ``H = 1000`` draws and R-hat can see a chain
        that is stuck in another mode.

    Attributes
    ----------
    posterior_ : xarray.DataTree
        ``posterior`` group: ``alpha`` [chain, draw], ``V`` [chain, draw, K-1] (K > 1), ``pi``
        [chain, draw, K], ``phi_<j>`` [chain, draw, K, d_j] for the j-th column (0-based, schema
        order). ``sample_stats``: ``loglik`` (observed-data log-likelihood at the draw) and
        ``k_occupied`` (occupied classes ``k*``) for the Gibbs sampler.
    schema_ : Schema
    warnings_ : list of str
        Machine-readable codes, e.g. ``"TRUNCATION_TOO_SMALL"`` (``k*`` reached ``K − 1``).
    convergence_ : DataFrame
        ESS and R-hat of log-likelihood, α, ``k*`` and a few marginal and two-way cell
        probabilities (label-invariant).

    Examples
    --------
    >>> import warnings
    >>> from bayes_risk.data import make_acs_like
    >>> from bayes_risk.exceptions import BayesRiskWarning
    >>> df = make_acs_like(300, random_seed=1)[["SEX", "MAR", "MIG"]]
    >>> model = DPMPM(n_components=5, tune=50, draws=50, chains=1, cores=1, progressbar=False,
    ...               random_seed=1)
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore", BayesRiskWarning)  # 50 draws: too short, it warns
    ...     model = model.fit(df)
    >>> syn = model.synthesize(2, random_seed=2)
    >>> syn.m, list(syn[0].columns), syn.draw_index
    (2, ['SEX', 'MAR', 'MIG'], [24, 49])

    References
    ----------
    Dunson, D. B., Xing, C. (2009). Nonparametric Bayes modeling of multivariate categorical data.
    JASA 104(487), 1042–1051. https://doi.org/10.1198/jasa.2009.tm08439

    Manrique-Vallier, D., Reiter, J. P. (2014). Bayesian estimation of discrete multivariate
    latent structure models with structural zeros. JCGS 23(4), 1061–1079.
    https://doi.org/10.1080/10618600.2013.844700

    Hu, J., Reiter, J. P., Wang, Q. (2014). Disclosure risk evaluation for fully synthetic
    categorical data. Privacy in Statistical Databases, LNCS 8744, 185–199.
    https://doi.org/10.1007/978-3-319-11257-2_15
    """

    method_name: ClassVar[str] = "dpmpm"
    ratio_form: Literal["joint", "conditional"] = "joint"

    def __init__(
        self,
        n_components: int = 50,
        *,
        alpha_prior: tuple[float, float] = (0.25, 0.25),
        dirichlet_prior: float = 1.0,
        synthesis_mode: str | None = None,
        sampler: str = "gibbs",
        structural_zeros: Any = None,
        tune: int = 1000,
        draws: int = 500,
        chains: int = 2,
        cores: int | None = None,
        random_seed: RandomSeed = None,
        progressbar: bool = True,
    ) -> None:
        super().__init__(
            tune=tune,
            draws=draws,
            chains=chains,
            cores=cores,
            random_seed=random_seed,
            progressbar=progressbar,
        )
        self.n_components = n_components
        self.alpha_prior = alpha_prior
        self.dirichlet_prior = dirichlet_prior
        self.synthesis_mode = synthesis_mode
        self.sampler = sampler
        self.structural_zeros = structural_zeros
        self._zeros = None  # StructuralZeros of the fitted schema (models._dpmpm_zeros)
        self.warnings_: list[str] = []
        self.dtypes_: dict[str, str] = {}

    # ------------------------------------------------------------------ settings
    def _check_settings(self) -> None:
        self._check_mcmc_settings()
        K = self.n_components
        if isinstance(K, bool) or not isinstance(K, (int, np.integer)) or K < 1:
            raise ValidationError(
                f"n_components (the truncation level K) must be an integer >= 1. Got {K!r}."
            )
        try:
            a, b = (float(x) for x in self.alpha_prior)
        except (TypeError, ValueError) as err:
            raise ValidationError(
                f"alpha_prior must be two positive numbers (shape, rate). Got {self.alpha_prior!r}."
            ) from err
        if not (a > 0 and b > 0 and np.isfinite(a) and np.isfinite(b)):
            raise ValidationError(
                f"alpha_prior must be two positive numbers (shape, rate). Got {self.alpha_prior!r}."
            )
        dp = self.dirichlet_prior
        if isinstance(dp, bool) or not isinstance(dp, (int, float, np.number)) or not (
            np.isfinite(dp) and dp > 0
        ):
            raise ValidationError(f"dirichlet_prior must be a positive number. Got {dp!r}.")
        if self.synthesis_mode is not None and self.synthesis_mode not in MODES:
            raise ValidationError(
                f"synthesis_mode must be one of {list(MODES)} or None. Got {self.synthesis_mode!r}."
            )
        if self.sampler not in SAMPLERS:
            raise ValidationError(f"sampler must be one of {list(SAMPLERS)}. Got {self.sampler!r}.")
        if self.structural_zeros is not None:
            from bayes_risk.models._dpmpm_zeros import read_structural_zeros

            read_structural_zeros(self.structural_zeros)

    @property
    def synthesis_mode_(self) -> str:
        """The synthesis mode in use (``synthesis_mode``, or its default for the fitted roles)."""
        if self.synthesis_mode is not None:
            return self.synthesis_mode
        if self.schema_ is not None and self.schema_.unsynthesized:
            return "conditional_us"
        return "marginal"

    @property
    def model_class(self) -> Literal["P", "O"]:  # type: ignore[override]
        """``"O"`` in ``posterior_class`` mode, else ``"P"`` (see the methods page, DPMPM)."""
        return "O" if self.synthesis_mode_ == "posterior_class" else "P"

    def _needs_data_for_synthesis(self) -> bool:
        return (
            self.synthesis_mode_ != "marginal"
            or bool(self.schema_ is not None and self.schema_.unsynthesized)
            or self.synthesized_records_ is not None
        )

    # ------------------------------------------------------------------ encoding
    def _check_categorical(self, schema: Schema) -> None:
        bad = [c for c in schema if not c.is_categorical]
        if bad:
            c = bad[0]
            raise SchemaError(
                f"DPMPM models categorical columns only; column {c.name!r} is {c.type}. Declare "
                "integer-coded factors as categorical (fit(..., categorical=[...]) or "
                "bayes-risk fit --categorical COL ...), or leave the column out.",
                code="WRONG_DTYPE",
            )
        for c in schema:
            if not c.levels:
                raise SchemaError(
                    f"column {c.name!r} has no observed level (all values missing); DPMPM cannot "
                    "model it.",
                    code="MISSING_VALUES",
                )

    def _encode(
        self, df: pd.DataFrame, schema: Schema | None = None, *, name: str = "records"
    ) -> np.ndarray:
        """Codes ``0..d_j-1``; ``-1`` missing; ``-2`` a level the model was not fitted with."""
        schema = schema or self.schema_
        if not isinstance(df, pd.DataFrame):
            raise ValidationError(f"{name} must be a pandas DataFrame. Got {type(df).__name__}.")
        missing = [c for c in schema.names if c not in df.columns]
        if missing:
            raise SchemaError(
                f"{name} is missing column(s) {missing}; expected columns {schema.names}.",
                code="MISSING_COLUMN",
            )
        out = np.empty((len(df), len(schema)), dtype=np.int64)
        for j, spec in enumerate(schema):
            lookup = {normalise_level(v): k for k, v in enumerate(spec.levels or ())}
            codes, uniques = pd.factorize(df[spec.name], use_na_sentinel=True)
            mapped = np.array(
                [lookup.get(normalise_level(u), _UNKNOWN) for u in uniques], dtype=np.int64
            )
            col = np.full(len(df), -1, dtype=np.int64)
            ok = codes >= 0
            col[ok] = mapped[codes[ok]]
            out[:, j] = col
        return out

    def _decode_column(self, codes: np.ndarray, j: int) -> pd.Series:
        spec = self.schema_.columns[j]
        levels = np.empty(len(spec.levels), dtype=object)
        levels[:] = list(spec.levels)
        vals = levels[codes]
        dtype = self.dtypes_.get(spec.name, "object")
        if dtype.startswith("category"):
            return pd.Series(
                pd.Categorical(
                    vals, categories=list(spec.levels), ordered=dtype == "category-ordered"
                )
            )
        try:
            return pd.Series(vals).astype(dtype)
        except (TypeError, ValueError):
            return pd.Series(vals)

    # ------------------------------------------------------------------ PyMC model
    def _build_model(
        self, codes: np.ndarray, d: Sequence[int], *, transforms: bool, observed: bool = True
    ):
        """The class-marginalised PyMC model: the density every kernel is tested against.

        ``transforms=False`` gives the value variables on the constrained scale (the Gibbs step
        writes draws directly); ``True`` keeps PyMC's default transforms (NUTS).
        """
        import pymc as pm
        import pytensor.tensor as pt

        K = int(self.n_components)
        a_alpha, b_alpha = (float(x) for x in self.alpha_prior)
        tr = {} if transforms else {"default_transform": None}
        coords = {"component": np.arange(K)}
        if K > 1:
            coords["stick"] = np.arange(K - 1)
        for j, dj in enumerate(d):
            coords[f"level_{j}"] = np.arange(dj)
        with pm.Model(coords=coords) as model:
            alpha = pm.Gamma("alpha", alpha=a_alpha, beta=b_alpha, **tr)
            if K > 1:
                V = pm.Beta("V", alpha=1.0, beta=alpha, dims="stick", **tr)
                l1 = pt.log1p(-V)
                cum = pt.cumsum(l1)
                head = pt.concatenate([pt.zeros(1), cum[:-1]])
                log_pi = pt.concatenate([pt.log(V) + head, cum[-1:]])
            else:
                log_pi = pt.zeros(1)
            pm.Deterministic("pi", pt.exp(log_pi), dims="component")
            log_phis = []
            for j, dj in enumerate(d):
                phi = pm.Dirichlet(
                    f"phi_{j}",
                    a=np.full((K, dj), float(self.dirichlet_prior)),
                    dims=("component", f"level_{j}"),
                    **tr,
                )
                log_phis.append(pt.log(phi))
            if observed:
                # the last parameter only carries the record length p into the signature
                sig = ",".join(["(k)"] + [f"(k,d{j})" for j in range(len(d))] + ["(p)"]) + "->(p)"
                pm.CustomDist(
                    "y",
                    log_pi,
                    *log_phis,
                    np.zeros(len(d)),
                    logp=_marginal_logp,
                    observed=np.asarray(codes, dtype=np.int64),
                    signature=sig,
                    dtype="int64",
                )
                if self._zeros is not None:  # truncated to the allowed cells
                    from bayes_risk.models._dpmpm_zeros import pymc_log_allowed

                    pm.Potential("structural_zeros", -len(codes) * pymc_log_allowed(
                        self._zeros, log_pi, log_phis))
        return model

    def pymc_model(self, records: pd.DataFrame | None = None, *, transforms: bool = False):
        """The PyMC model (classes marginalised) with ``records`` as observed data.

        The single source of truth for the density: every hand-written kernel is tested against
        ``pm.compute_log_likelihood`` on this model. Missing values are marginalised.
        """
        self._check_fitted()
        codes = None
        if records is not None:
            codes = self._encode(records)
            if np.any(codes == _UNKNOWN):
                i, j = np.argwhere(codes == _UNKNOWN)[0]
                raise SchemaError(
                    f"records: row {i} has a level of column {self.schema_.names[j]!r} the model "
                    "was not fitted with.",
                    code="UNKNOWN_LEVEL",
                )
        return self._build_model(
            codes, list(self._d), transforms=transforms, observed=records is not None
        )

    # ------------------------------------------------------------------ fit
    @legacy_call_forms(renamed={"synthesized_records": "records"})
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
            Confidential records; every column categorical (missing values allowed: imputed in
            the Gibbs sampler, marginalised under NUTS).
        schema : Schema, optional
            Types, levels and roles (default: inferred, with ``categorical`` overrides).
        synthesized : sequence of str, optional
            Columns to synthesize (default: the schema's synthesized columns, or all columns).
        categorical : sequence of str, optional
            Integer-coded columns to treat as categorical when the schema is inferred.
        records : array of bool or int indices, optional
            Records whose synthesized columns are replaced (default all).
        random_seed : RandomSeed
            Seed of the sampler (default: the ``random_seed`` setting).

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
        self._check_settings()
        data, schema = self._prepare_data(
            data, schema=schema, synthesized=synthesized, categorical=categorical, allow_nan=True
        )
        self._check_categorical(schema)
        flags = self._check_synthesized_records(records, len(data))
        self.dtypes_ = _dtypes_of(data)
        codes = self._encode(data, schema, name="data")
        self._zeros = self._structural_zeros_for(schema)
        if self._zeros is not None:
            self._zeros.check_observed(codes)
        d = [len(c.levels) for c in schema]
        seed = self._seed_for_fit(random_seed)
        if self.sampler == "gibbs":
            model = self._build_model(codes, d, transforms=False)
            with model:
                from bayes_risk.models._dpmpm_step import DPMPMGibbs

                step = DPMPMGibbs(
                    [model.rvs_to_values[v] for v in model.free_RVs],
                    codes=codes,
                    d=np.asarray(d, dtype=np.int64),
                    n_components=int(self.n_components),
                    alpha_prior=tuple(float(x) for x in self.alpha_prior),
                    dirichlet_prior=float(self.dirichlet_prior),
                    zeros=self._zeros,
                    model=model,
                )
            dt = self._run_sampler(model, step=[step], random_seed=seed)
        else:
            model = self._build_model(codes, d, transforms=True)
            dt = self._run_sampler(model, random_seed=seed)
        self.warnings_ = []
        self._set_fitted(dt, schema, len(data), data=data, synthesized_records=flags,
                         check_convergence=False)
        if self.sampler == "nuts":
            self._add_loglik_stat(codes)
        self._check_truncation()
        self.convergence_ = self.convergence_report(warn=True)
        return self

    def _add_loglik_stat(self, codes: np.ndarray) -> None:
        import xarray as xr

        from bayes_risk.models import _dpmpm_kernels as kern

        p = codes.shape[1]
        ll = kern.lse_two_sum(
            codes, np.ones(p, bool), codes, np.zeros(p, bool), self._offsets,
            self._logphi, self._log_pi, np.arange(codes.shape[0], dtype=np.int64), self._phi,
        )
        if self._zeros is not None:  # the truncated model's (records in S are refused at fit)
            ll = ll - codes.shape[0] * self._zeros.log_allowed(self._phi, self._log_pi)
        post = self.posterior_["posterior"]
        shape = (post.sizes["chain"], post.sizes["draw"])
        da = xr.DataArray(ll.reshape(shape), dims=("chain", "draw"),
                          coords={"chain": post["chain"].values, "draw": post["draw"].values})
        if "sample_stats" in self.posterior_.children:
            ds = self.posterior_["sample_stats"].to_dataset().assign(loglik=da)
        else:
            ds = xr.Dataset({"loglik": da})
        self.posterior_["sample_stats"] = xr.DataTree(ds)

    def _check_truncation(self) -> None:
        """``TRUNCATION_TOO_SMALL`` when a **kept** draw occupies ``K − 1`` or more classes.

        Warm-up draws are not read: they include the starting state, which says nothing about
        whether the truncation is large enough for the posterior.
        """
        K = int(self.n_components)
        if K < 3:
            return
        kmax = 0
        if "sample_stats" in self.posterior_.children and (
            "k_occupied" in self.posterior_["sample_stats"].data_vars
        ):
            vals = np.asarray(self.posterior_["sample_stats"]["k_occupied"].values)
            if vals.size:
                kmax = int(vals.max())
        if kmax >= K - 1:
            self.warnings_.append("TRUNCATION_TOO_SMALL")
            warnings.warn(
                ConvergenceWarning(
                    f"DPMPM: kept posterior draws occupy up to {kmax} of the K = {K} classes "
                    "(TRUNCATION_TOO_SMALL): the truncation may cut off posterior mass; "
                    "increase n_components.",
                    code="TRUNCATION_TOO_SMALL",
                ),
                skip_file_prefixes=CALLER,
            )

    # ------------------------------------------------------------------ posterior handling
    def _event_ndims(self) -> dict[str, int]:
        ev = {"alpha": 0, "V": 1, "pi": 1}
        for j in range(64 if self.schema_ is None else len(self.schema_)):
            ev[f"phi_{j}"] = 2
        return ev

    def _as_datatree(self, posterior: Any):
        if isinstance(posterior, dict):
            ev = {"alpha": 0, "V": 1, "pi": 1}
            ev.update({k: 2 for k in posterior if str(k).startswith("phi_")})
            self._event_ndims = lambda: ev  # type: ignore[method-assign]
        return super()._as_datatree(posterior)

    def _validate_posterior(self, posterior: xr.DataTree, schema: Schema) -> None:
        import xarray as xr

        self._check_categorical(schema)
        post = posterior["posterior"]
        names = set(post.data_vars)
        p = len(schema)
        need = [f"phi_{j}" for j in range(p)]
        miss = [v for v in need if v not in names]
        if miss:
            raise ValidationError(
                f"the DPMPM posterior needs variables {need} (one per column, shape "
                f"[chain, draw, K, d_j]); missing {miss}."
            )
        K = None
        for j, spec in enumerate(schema):
            sh = post[f"phi_{j}"].shape
            if len(sh) != 4 or sh[3] != len(spec.levels):
                raise ValidationError(
                    f"posterior variable phi_{j} (column {spec.name!r}) must have shape "
                    f"[chain, draw, K, {len(spec.levels)}]. Got {sh}."
                )
            if K is None:
                K = sh[2]
            elif sh[2] != K:
                raise ValidationError(f"phi_{j} has K = {sh[2]} components; phi_0 has {K}.")
            vals = np.asarray(post[f"phi_{j}"].values)
            if np.any(vals < 0) or not np.allclose(vals.sum(-1), 1.0, atol=1e-6):
                raise ValidationError(
                    f"phi_{j} (column {spec.name!r}): category probabilities must be >= 0 and "
                    "sum to 1 over levels."
                )
        self.n_components = int(K)
        dims = ("chain", "draw")
        if "pi" not in names:
            if K > 1 and "V" not in names:
                raise ValidationError("the DPMPM posterior needs 'pi' [chain, draw, K] or 'V' "
                                      "[chain, draw, K-1].")
            if K == 1:
                pi = np.ones(post["phi_0"].shape[:2] + (1,))
            else:
                V = np.asarray(post["V"].values)
                if V.shape[-1] != K - 1:
                    raise ValidationError(
                        f"V must have K - 1 = {K - 1} entries. Got {V.shape[-1]}."
                    )
                pi = np.exp(stick_breaking_log(V))
            ds = post.to_dataset().assign(pi=(dims + ("component",), pi))
            posterior["posterior"] = xr.DataTree(ds)
            post = posterior["posterior"]
        pi = np.asarray(post["pi"].values)
        if pi.shape[-1] != K or np.any(pi < 0) or not np.allclose(pi.sum(-1), 1.0, atol=1e-6):
            raise ValidationError(f"pi must have K = {K} non-negative weights summing to 1.")
        if "alpha" not in names:
            ds = post.to_dataset().assign(alpha=(dims, np.full(pi.shape[:2], np.nan)))
            posterior["posterior"] = xr.DataTree(ds)

    def _after_posterior(self) -> None:
        schema = self.schema_
        d = np.array([len(c.levels) for c in schema], dtype=np.int64)
        self._d = d
        self._offsets = np.concatenate([[0], np.cumsum(d)[:-1]]).astype(np.int64)
        pi = self._stacked("pi")
        with np.errstate(divide="ignore"):
            self._log_pi = np.ascontiguousarray(np.log(pi))
        phis = [self._stacked(f"phi_{j}") for j in range(len(schema))]  # [H, K, d_j]
        phi = np.concatenate([np.transpose(x, (0, 2, 1)) for x in phis], axis=1)  # [H, L, K]
        self._phi = np.ascontiguousarray(phi)
        with np.errstate(divide="ignore"):
            self._logphi = np.ascontiguousarray(np.log(phi))
        self.n_components = int(pi.shape[-1])
        self._zeros = self._structural_zeros_for(schema)

    def _state_to_json(self) -> dict[str, Any]:
        return {"warnings": list(self.warnings_), "dtypes": dict(self.dtypes_)}

    def _structural_zeros_for(self, schema: Schema) -> Any:
        from bayes_risk.models._dpmpm_zeros import for_schema

        return for_schema(self.structural_zeros, schema, self.synthesis_mode or (
            "conditional_us" if schema.unsynthesized else "marginal"))

    def _json_settings(self) -> dict[str, Any]:
        out = super()._json_settings()
        if self._zeros is not None:  # the table itself, never a path or a frame
            out["structural_zeros"] = to_jsonable(self._zeros.to_records())
        return out

    def _state_from_json(self, state: dict[str, Any]) -> None:
        self.warnings_ = list(state.get("warnings", []))
        self.dtypes_ = dict(state.get("dtypes", {}))

    # ------------------------------------------------------------------ convergence
    def _convergence_quantities(self) -> dict[str, np.ndarray]:
        post = self.posterior_["posterior"]
        C, D = post.sizes["chain"], post.sizes["draw"]
        out: dict[str, np.ndarray] = {}
        stats = (
            self.posterior_["sample_stats"] if "sample_stats" in self.posterior_.children else None
        )
        if stats is not None and "loglik" in stats.data_vars:
            out["loglik"] = np.asarray(stats["loglik"].values, dtype=float)
        alpha = np.asarray(post["alpha"].values, dtype=float)
        if np.all(np.isfinite(alpha)) and self.n_components > 1:
            out["alpha"] = alpha
        if stats is not None and "k_occupied" in stats.data_vars:
            out["k_occupied"] = np.asarray(stats["k_occupied"].values, dtype=float)
        pi = np.exp(self._log_pi)  # [H, K]
        names = self.schema_.names
        for j in range(min(3, len(names))):
            row = self._offsets[j]
            cell = np.einsum("hk,hk->h", pi, self._phi[:, row, :])
            out[f"P({names[j]}={self.schema_.columns[j].levels[0]})"] = cell.reshape(C, D)
        if len(names) >= 2:
            r0, r1 = self._offsets[0], self._offsets[1]
            cell = np.einsum("hk,hk,hk->h", pi, self._phi[:, r0, :], self._phi[:, r1, :])
            lv0, lv1 = self.schema_.columns[0].levels[0], self.schema_.columns[1].levels[0]
            out[f"P({names[0]}={lv0},{names[1]}={lv1})"] = cell.reshape(C, D)
        if self._zeros is not None:  # the truncated model's cells (the mass on S is not identified)
            from bayes_risk.models import _dpmpm_zeros_loglik as zl

            out.update(zl.convergence_cells(self, C, D))
        return out

    # ------------------------------------------------------------------ protocol
    def _masks(self) -> tuple[np.ndarray, np.ndarray]:
        syn = set(self.schema_.synthesized)
        s = np.array([c in syn for c in self.schema_.names], dtype=bool)
        return s, ~s

    def _sub(self, draws: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        if draws is None:  # all draws: the stored arrays themselves (read only), no copy
            return self._logphi, self._log_pi, self._phi
        idx = self._draw_indices(draws)
        return self._logphi[idx], self._log_pi[idx], self._phi[idx]

    def record_loglik(self, records: pd.DataFrame, *, draws: Any = None) -> np.ndarray:
        """``[H, n]`` joint record log-likelihoods ``log p(y_i | Θ_h)`` (Hu & Savitsky 2018).

        ``logsumexp_k(log π_k + Σ_j log φ_kj[y_ij])``; a missing value is marginalised (its
        column is left out of the sum); a level the model was not fitted with gives ``-inf``.

        Parameters
        ----------
        records : DataFrame
            Records with the model's columns (extra columns are ignored).
        draws : array of int, optional
            Flattened draw indices (default all ``H``).
        """
        from bayes_risk.models import _dpmpm_kernels as kern

        self._check_fitted()
        codes = self._encode(records)
        lp, lpi, ph = self._sub(draws)
        p = codes.shape[1]
        unknown = (codes == _UNKNOWN).any(axis=1)
        c = np.where(codes == _UNKNOWN, -1, codes)
        out = kern.lse_two(c, np.ones(p, bool), c, np.zeros(p, bool), self._offsets, lp, lpi)
        if self._zeros is not None:  # zero on S, normalised over the allowed cells
            from bayes_risk.models import _dpmpm_zeros_loglik as zl

            zl.record_loglik(self, c, out, lp, lpi, ph)
        out[:, unknown] = -np.inf
        return out

    def dataset_loglik(
        self, datasets: Sequence[pd.DataFrame] | SyntheticData | pd.DataFrame, *, draws: Any = None
    ) -> np.ndarray:
        """``[H, m]`` log-likelihoods ``log p(Z_(l) | Θ_h)`` under the synthesis mode.

        Sum over the synthesized records of: ``marginal`` —
        ``logsumexp_k(log π_k + Σ_{j∈S} log φ_kj[z_ij])``; ``conditional_us`` —
        ``log p(z_i^S | z_i^US, Θ)`` (the released
        unsynthesized values equal the original's); ``posterior_class`` —
        ``logsumexp_k(log p(k | y_i, Θ) + Σ_{j∈S} log φ_kj[z_ij])`` with the confidential
        ``y_i`` (class O).
        """
        from bayes_risk.models import _dpmpm_kernels as kern

        self._check_fitted()
        if isinstance(datasets, pd.DataFrame):
            datasets = [datasets]
        datasets = list(datasets)
        lp, lpi, ph = self._sub(draws)
        if self._zeros is not None:
            from bayes_risk.models import _dpmpm_zeros_loglik as zl

            return zl.dataset_loglik(self, datasets, lp, lpi, ph)
        s_mask, us_mask = self._masks()
        p = len(s_mask)
        none = np.zeros(p, bool)
        allc = np.ones(p, bool)
        n = self.n_records
        rows = (
            np.arange(n, dtype=np.int64)
            if self.synthesized_records_ is None
            else np.flatnonzero(self.synthesized_records_).astype(np.int64)
        )
        mode = self.synthesis_mode_
        out = np.empty((lp.shape[0], len(datasets)))
        ycodes = None
        if mode == "posterior_class":
            ycodes = self._encode(self.data_, name="data")
        for l, z in enumerate(datasets):
            if len(z) != n:
                raise SchemaError(
                    f"synthetic dataset {l + 1} has {len(z)} rows; the model synthesizes {n}.",
                    code="ROW_COUNT_MISMATCH",
                )
            zc = self._encode(z, name=f"synthetic dataset {l + 1}")
            if np.any(zc[rows][:, s_mask] == _UNKNOWN) or np.any(zc[rows][:, s_mask] < 0):
                out[:, l] = -np.inf
                continue
            zc = np.where(zc == _UNKNOWN, -1, zc)
            if mode == "marginal":
                out[:, l] = kern.lse_two_sum(zc, s_mask, zc, none, self._offsets, lp, lpi, rows, ph)
            elif mode == "conditional_us":
                num = kern.lse_two_sum(zc, allc, zc, none, self._offsets, lp, lpi, rows, ph)
                den = kern.lse_two_sum(zc, us_mask, zc, none, self._offsets, lp, lpi, rows, ph)
                out[:, l] = num - den
            else:
                num = kern.lse_two_sum(ycodes, allc, zc, s_mask, self._offsets, lp, lpi, rows, ph)
                den = kern.lse_two_sum(ycodes, allc, zc, none, self._offsets, lp, lpi, rows, ph)
                out[:, l] = num - den
        return out

    def own_record_delta(
        self,
        record: int | pd.Series,
        candidates: pd.DataFrame,
        datasets: Sequence[pd.DataFrame] | SyntheticData | pd.DataFrame,
        *,
        draws: Any = None,
    ) -> np.ndarray:
        """``[H, m, G]`` own-record term ``ℓ_{hli}(y*_g) − ℓ_{hli}(y_i)`` (class O).

        In ``posterior_class`` mode (class O) synthetic record ``i`` of dataset ``l`` has
        likelihood
        ``ℓ_{hli}(y) = logsumexp_k(log p(k | y, Θ_h) + Σ_{j∈S} log φ_hkj[z_lij])``,
        which depends on the confidential record ``y``; the candidate ``y*`` replaces the
        varying columns of ``y_i``. In the class P modes, and for records that are not
        synthesized, the term is 0.

        Parameters
        ----------
        record : int or Series
            Record position ``i`` in the original data, or the original row (its ``name`` is
            taken as the position, as ``original.iloc[i]`` gives).
        candidates : DataFrame
            ``G`` candidate values of the varying columns (any subset of the model's columns).
        datasets : sequence of DataFrame or SyntheticData
            The ``m`` released datasets (same row order as the original).
        draws : array of int, optional
            Flattened draw indices.
        """
        self._check_fitted()
        if isinstance(datasets, pd.DataFrame):
            datasets = [datasets]
        datasets = list(datasets)
        idx = self._draw_indices(draws)
        G = len(candidates)
        out = np.zeros((len(idx), len(datasets), G))
        if self.synthesis_mode_ != "posterior_class":
            return out
        pos = record.name if isinstance(record, pd.Series) else record
        if isinstance(pos, bool) or not isinstance(pos, (int, np.integer)) or not (
            0 <= int(pos) < self.n_records
        ):
            raise ValidationError(
                f"record must be a position in 0..{self.n_records - 1} (or original.iloc[i]). "
                f"Got {pos!r}."
            )
        pos = int(pos)
        if self.synthesized_records_ is not None and not self.synthesized_records_[pos]:
            return out
        if not isinstance(candidates, pd.DataFrame):
            raise ValidationError("candidates must be a DataFrame of the varying columns.")
        vary = self.schema_.check_columns(list(candidates.columns), "candidates")
        truth = self.data_.iloc[[pos]].reset_index(drop=True)
        full = pd.concat([truth] * (G + 1), ignore_index=True).astype(object)
        for c in vary:
            full.loc[1:, c] = candidates[c].astype(object).to_numpy()
        codes = self._encode(full, name="candidates")
        lp, lpi = self._logphi[idx], self._log_pi[idx]
        A = self._class_logw(codes, lp, lpi, np.ones(codes.shape[1], bool))  # [H, G+1, K]
        from bayes_risk._numeric import logsumexp

        den = logsumexp(A, axis=-1)  # [H, G+1]
        s_mask, _ = self._masks()
        for l, z in enumerate(datasets):
            zc = self._encode(z.iloc[[pos]], name=f"synthetic dataset {l + 1}")[0]
            B = np.zeros((len(idx), lpi.shape[1]))
            if self._zeros is not None:  # the synthesized part's normaliser given the class
                from bayes_risk.models import _dpmpm_zeros_loglik as zl

                B, inside = zl.own_record_terms(self, codes, zc, lp, lpi, self._phi[idx])
                den[:, inside] = -np.inf
            for j in np.flatnonzero(s_mask):
                if zc[j] == _UNKNOWN:
                    B[:] = -np.inf
                elif zc[j] >= 0:
                    B += lp[:, self._offsets[j] + zc[j], :]
            with np.errstate(invalid="ignore"):
                ell = logsumexp(A + B[:, None, :], axis=-1) - den  # [H, G+1]
                d = ell[:, 1:] - ell[:, :1]
            d[~np.isfinite(den[:, 1:])] = -np.inf  # candidate impossible under the model
            out[:, l, :] = d
        return out

    def neighbourhood_size(self) -> int:
        """``G = 1 + Σ_{j∈S} (d_j − 1)`` of the one-variable-different set."""
        self._check_fitted()
        s_mask, _ = self._masks()
        return int(1 + np.sum(self._d[s_mask] - 1))

    def neighbourhood_loglik(
        self,
        records: pd.DataFrame,
        *,
        draws: Any = None,
        chunk_size: int | None = None,
        out: np.ndarray | None = None,
    ) -> np.ndarray:
        """``[H, n, G]`` joint log-likelihoods of the one-variable-different candidates.

        Candidates (methods, Candidate sets) vary the synthesized columns: index 0 is the truth,
        then column by column in column order, levels ascending, skipping the true level;
        ``G = 1 + Σ_{j∈S}(d_j − 1)`` (:meth:`neighbourhood_size`). Uses the probability-space
        incremental update (see :func:`bayes_risk.models._dpmpm_kernels.neighbourhood`), chunked
        over records. ``out`` (float64 ``[H, n, G]``) receives the result when given: callers
        that evaluate many chunks reuse one buffer instead of allocating a large array each time.

        Raises
        ------
        SchemaError
            If a record has a missing value or a level the model was not fitted with
            (``TRUTH_OUTSIDE_SUPPORT``).
        """
        from bayes_risk._numeric import threaded_ufunc
        from bayes_risk.models import _dpmpm_kernels as kern

        self._check_fitted()
        codes = self._encode(records)
        if np.any(codes == -1):
            i, j = np.argwhere(codes == -1)[0]
            raise SchemaError(
                f"records: column {self.schema_.names[j]!r} is missing in row {i}; candidate "
                "sets need complete records.",
                code="MISSING_VALUES",
            )
        if np.any(codes == _UNKNOWN):
            i, j = np.argwhere(codes == _UNKNOWN)[0]
            raise SchemaError(
                f"records: row {i} has a level of column {self.schema_.names[j]!r} the model was "
                "not fitted with.",
                code="TRUTH_OUTSIDE_SUPPORT",
            )
        lp, lpi, ph = self._sub(draws)
        s_mask, _ = self._masks()
        syn_cols = np.flatnonzero(s_mask).astype(np.int64)
        G = self.neighbourhood_size()
        H, n = lp.shape[0], codes.shape[0]
        if chunk_size is None:
            chunk_size = max(1, int(2e7 // max(1, H * G)))
        if out is None:
            out = np.empty((H, n, G))
        elif out.shape != (H, n, G) or out.dtype != np.float64:
            raise ValidationError(
                f"out must be a float64 array of shape {(H, n, G)}; got {out.dtype} {out.shape}."
            )
        for a in range(0, n, chunk_size):
            b = min(n, a + chunk_size)
            dest = out[:, a:b, :]
            logged = kern.neighbourhood(
                np.ascontiguousarray(codes[a:b]), syn_cols, self._d, self._offsets, lp, ph, lpi,
                dest,
            )
            # the kernel leaves probabilities (logged = False) for numpy's vectorised log
            keep = dest[logged] if logged.any() else None
            # (log-space rows give nan here; they are restored just below)
            threaded_ufunc(np.log, dest, out=dest, divide="ignore", invalid="ignore")
            if keep is not None:
                dest[logged] = keep
        if self._zeros is not None:  # zero on S, normalised over the allowed cells
            from bayes_risk.models import _dpmpm_zeros_loglik as zl

            zl.neighbourhood(self, codes, syn_cols, out, lpi, ph)
        return out

    def class_probabilities(self, records: pd.DataFrame, *, draws: Any = None) -> np.ndarray:
        """``[H, n, K]`` class probabilities ``p(k | y_i, Θ_h)`` (missing values marginalised)."""
        self._check_fitted()
        codes = self._encode(records)
        lp, lpi, _ = self._sub(draws)
        logw = self._class_logw(codes, lp, lpi, np.ones(codes.shape[1], bool))
        from bayes_risk._numeric import normalise_log

        return normalise_log(logw, axis=-1)

    def _class_logw(self, codes, lp, lpi, use) -> np.ndarray:
        """``[H, n, K]`` of ``log π_k + Σ_{j∈use, observed} log φ_kj[y_ij]``."""
        H, K = lpi.shape
        out = np.broadcast_to(lpi[:, None, :], (H, codes.shape[0], K)).copy()
        for j in np.flatnonzero(use):
            c = codes[:, j]
            ok = c >= 0
            out[:, ok, :] += lp[:, self._offsets[j] + c[ok], :]
            bad = c == _UNKNOWN
            out[:, bad, :] = -np.inf
        return out

    # ------------------------------------------------------------------ synthesis
    def _synthesize_one(
        self, draw: int, rng: np.random.Generator, data: pd.DataFrame | None
    ) -> pd.DataFrame:
        schema = self.schema_
        n = self.n_records
        rows = (
            np.arange(n)
            if self.synthesized_records_ is None
            else np.flatnonzero(self.synthesized_records_)
        )
        s_mask, us_mask = self._masks()
        lp = self._logphi[draw : draw + 1]
        lpi = self._log_pi[draw : draw + 1]
        mode = self.synthesis_mode_
        if mode == "marginal":
            logw = np.broadcast_to(lpi[0], (len(rows), lpi.shape[1]))
        else:
            codes = self._encode(data.iloc[rows], name="data")
            use = us_mask if mode == "conditional_us" else np.ones(len(s_mask), bool)
            logw = self._class_logw(codes, lp, lpi, use)[0]
        if self._zeros is not None and mode == "posterior_class":
            from bayes_risk.models import _dpmpm_zeros_loglik as zl

            logw = zl.posterior_class_weights(self, draw, codes, logw)
        z = _draw_categorical(logw, rng)
        cols = {}
        phi = self._phi[draw]  # [L, K]
        for j in np.flatnonzero(s_mask):
            base, dj = self._offsets[j], self._d[j]
            cum = np.cumsum(phi[base : base + dj, :], axis=0).T[z]  # [n_rows, d_j]
            u = rng.random(len(rows)) * cum[:, -1]
            cj = np.minimum((cum < u[:, None]).sum(axis=1), dj - 1)
            cols[j] = cj
        if self._zeros is not None:  # never an impossible record: rejection
            from bayes_risk.models import _dpmpm_zeros_loglik as zl

            before = (np.full((len(rows), len(s_mask)), -1, dtype=np.int64) if data is None
                      else self._encode(data.iloc[rows], name="data"))
            zl.fix_synthesis(self, draw, rng, before, np.broadcast_to(logw, (len(rows),
                             logw.shape[1])), z, cols, keep_class=mode == "posterior_class")
        cols = {schema.names[j]: v for j, v in cols.items()}
        if data is None:
            return pd.DataFrame(
                {c: self._decode_column(cols[c], j) for j, c in enumerate(schema.names)}
            )
        out = data.copy()
        for j, name in enumerate(schema.names):
            if name not in cols:
                continue
            new = self._decode_column(cols[name], j)
            if len(rows) == n:
                is_cat = isinstance(new.dtype, pd.CategoricalDtype)
                out[name] = new if is_cat else new.to_numpy()
            else:
                col = out[name].astype(object).to_numpy(copy=True)
                col[rows] = new.astype(object).to_numpy()
                dtype = self.dtypes_.get(name, "object")
                s = pd.Series(col)
                try:
                    if dtype.startswith("category"):
                        s = pd.Series(pd.Categorical(col, categories=list(schema[name].levels),
                                                     ordered=dtype == "category-ordered"))
                    else:
                        s = s.astype(dtype)
                except (TypeError, ValueError):
                    pass
                out[name] = s
        return out.reset_index(drop=True)

    # ------------------------------------------------------------------ augmented fit
    def fit_augmented(
        self, data: pd.DataFrame, synthetic: pd.DataFrame, *, random_seed: RandomSeed = None
    ) -> DPMPM:
        """A new DPMPM fitted to the confidential records and one synthetic dataset together.

        Its draws come from ``p(Θ | y, Z_(l))`` (methods, The stabilised estimator): same settings,
        schema and roles as this model; the records of ``synthetic`` are appended to ``data`` —
        under partial synthesis of selected records only the selected rows, the ones
        :meth:`dataset_loglik` counts (the others are copies of ``data``).

        In ``conditional_us`` mode this is an approximation: the appended rows enter as full
        records, so the draws come from ``p(Θ | y, Z_(l)) × Π_r p(z_r^US | Θ)`` rather than from
        the posterior under the likelihood :meth:`dataset_loglik` uses
        (``Π_r p(z_r^S | z_r^US, Θ)``); the unsynthesized values ``z_r^US`` are the confidential
        ``y_r^US`` counted a second time. On tiny tables with exact ground truth the resulting
        shift of ``p_true`` was ≤ 0.0007 (n = 30, m = 2). An exact Metropolis correction was
        tried and mixes far too slowly at realistic n (the stick block is never accepted with
        1,000 synthetic rows), so it is not used.

        Raises
        ------
        SchemaError
            If ``synthetic`` does not fit the schema (columns, unknown levels).
        """
        self._check_fitted()
        if not isinstance(synthetic, pd.DataFrame):
            raise ValidationError(
                f"synthetic must be a pandas DataFrame. Got {type(synthetic).__name__}."
            )
        names = self.schema_.names
        synthetic = self._synthesized_part(synthetic)
        for name, df in (("data", data), ("synthetic", synthetic)):
            if not isinstance(df, pd.DataFrame):
                raise ValidationError(
                    f"{name} must be a pandas DataFrame. Got {type(df).__name__}."
                )
            self.schema_.check_columns([c for c in names if c in df.columns], name)
            missing = [c for c in names if c not in df.columns]
            if missing:
                raise SchemaError(f"{name} is missing column(s) {missing}.", code="MISSING_COLUMN")
        combined = pd.concat(
            [data[names].astype(object), synthetic[names].astype(object)], ignore_index=True
        )
        new = type(self)(**self.get_params())
        new.fit(combined, schema=self.schema_, random_seed=random_seed)
        return new


# ---------------------------------------------------------------------- helpers
def _marginal_logp(value, log_pi, *params):
    """PyMC log-density of each record, classes and missing entries (code -1) marginalised."""
    import pytensor.tensor as pt

    # PyMC prepends length-1 batch dimensions to the parameters: drop them
    log_pi = log_pi[(0,) * (log_pi.ndim - 1)]
    log_phis = [lp[(0,) * (lp.ndim - 2)] for lp in params[:-1]]
    terms = log_pi[None, :]
    for j, lphi in enumerate(log_phis):
        col = value[:, j]  # noqa: B023
        obs = pt.ge(col, 0)
        lp = lphi[:, pt.maximum(col, 0)].T  # [n, K]
        terms = terms + pt.switch(obs[:, None], lp, 0.0)
    return pt.logsumexp(terms, axis=1)


def _draw_categorical(logw: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One draw per row from unnormalised log-weights (inverse CDF with one uniform per row)."""
    logw = np.asarray(logw, dtype=np.float64)
    mx = logw.max(axis=1, keepdims=True)
    w = np.exp(logw - mx)
    cum = np.cumsum(w, axis=1)
    u = rng.random(logw.shape[0]) * cum[:, -1]
    return np.minimum((cum < u[:, None]).sum(axis=1), logw.shape[1] - 1)


def _dtypes_of(df: pd.DataFrame) -> dict[str, str]:
    out = {}
    for c in df.columns:
        dt = df[c].dtype
        if isinstance(dt, pd.CategoricalDtype):
            out[c] = "category-ordered" if dt.ordered else "category"
        elif pd.api.types.is_bool_dtype(dt):
            out[c] = "bool"
        elif pd.api.types.is_integer_dtype(dt):
            out[c] = "int64"
        elif pd.api.types.is_float_dtype(dt):
            out[c] = "float64"
        elif pd.api.types.is_string_dtype(dt) and not pd.api.types.is_object_dtype(dt):
            out[c] = "str"
        else:
            out[c] = "object"
    return out


