"""Poisson-mixture synthesizers for count (magnitude) data: MP, MM and TCMM (Hu 2019 §3.3.3).

Wei & Reiter (2016), as summarised in Hu (2019, §3.3.3): a truncated stick-breaking
mixture of products of Poissons (**MP**) fitted to the confidential counts; **MM** keeps the MP
memberships of a posterior draw and redistributes each component's column totals multinomially
over its members (every marginal total is reproduced exactly); **TCMM** additionally pools each
column's upper tail (values above the empirical ``q``-quantile) into one group before
redistribution (provisional: Wei & Reiter give no full algorithm). Every variant also supports
partial synthesis of selected records (``fit(..., records=...)``; see
:class:`PoissonMixture`).

The PyMC model (:meth:`PoissonMixture.build_pymc_model`) is the single source of truth for the
density; the default sampler is a blocked Gibbs step (a PyMC ``BlockedStep`` with Numba kernels,
:mod:`bayes_risk.models._poisson_kernels`) that also records the memberships ``z`` of every kept
draw, which MM/TCMM synthesis and their likelihoods need.

The class is assembled from mixins, one module each: the PyMC model and fit (``_poisson_fit``),
the record/dataset/candidate likelihoods (``_poisson_loglik``) and the largest-value pieces
(``_poisson_largest``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import pandas as pd

from bayes_risk._rng import RandomSeed
from bayes_risk.data.schema import Schema
from bayes_risk.data.validate import validate_table
from bayes_risk.exceptions import SchemaError, ValidationError
from bayes_risk.models import _poisson_kernels as pk
from bayes_risk.models._design import apply_dtypes, record_dtypes
from bayes_risk.models._poisson_fit import LATENT_GROUP, _PoissonFitting
from bayes_risk.models._poisson_largest import LargestValueLikelihood, _LargestValue
from bayes_risk.models._poisson_loglik import _group_totals, _PoissonLikelihoods
from bayes_risk.models.bayesian import BayesianSynthesizer

if TYPE_CHECKING:  # pragma: no cover
    import xarray as xr

__all__ = ["PoissonMixture", "LargestValueLikelihood"]

_VARIANTS = ("mp", "mm", "tcmm")
_MODES = ("marginal", "posterior_class")
_SAMPLERS = ("gibbs", "nuts")
_MEMBERSHIPS = ("map", "stored")


# ----------------------------------------------------------------------------------------------
# the model
# ----------------------------------------------------------------------------------------------
class PoissonMixture(_PoissonFitting, _PoissonLikelihoods, _LargestValue, BayesianSynthesizer):
    """Truncated Dirichlet-process mixture of products of Poissons for count data (Hu 2019 §3.3.3).

    Model: ``y_ij | z_i = k ~ Poisson(λ_kj)``, ``λ_kj ~ Gamma(a_λ, b_λj)`` (shape, rate),
    ``z_i ~ Cat(π)`` with truncated stick breaking ``π_k = V_k Π_{h<k}(1 − V_h)``,
    ``V_k ~ Beta(1, α)``, ``V_K = 1``, ``α ~ Gamma(a_α, b_α)``.

    Parameters
    ----------
    variant : {"mp", "mm", "tcmm"}
        ``"mp"``: synthetic records are drawn from the MP posterior predictive (class P in
        ``synthesis_mode="marginal"``). ``"mm"``: each component's column totals are
        redistributed multinomially over its members (all marginal totals reproduced exactly;
        class O). ``"tcmm"``: tail-collapsed MM with threshold ``q`` — **provisional** (Hu 2019
        §3.3.3: reconstructed from the description in Hu (2019), the original rule was not
        verified).
    q : float
        TCMM only: quantile in ``(0, 1]`` defining each column's tail ``{y_ij > τ_j}``, ``τ_j`` the
        inverse-CDF empirical ``q``-quantile. Smaller ``q`` collapses more (lower risk).
    n_components : int
        Truncation level ``K`` (default 50). ``K = 1`` is independent Poissons.
    a_lambda : float
        Gamma shape ``a_λ`` of the rates (default 1).
    b_lambda : float or None
        Gamma rate ``b_λ``; ``None`` (default) uses ``1 / max(1, mean(y_·j))`` per column, so the
        prior mean of each rate equals the column mean (Hu 2019 §3.3.3 package default).
    a_alpha, b_alpha : float
        Gamma(shape, rate) prior of the concentration ``α`` (default 0.25, 0.25).
    synthesis_mode : {"marginal", "posterior_class"}
        MP only: draw each synthetic record's component from ``π`` (class P, default) or use the
        record's sampled membership ``z_i`` (class O, as NPBayesImputeCat does for DPMPM).
    sampler : {"gibbs", "nuts"}
        ``"gibbs"`` (default): blocked Gibbs in a PyMC ``BlockedStep``; records memberships.
        ``"nuts"``: PyMC's NUTS on the class-marginalised model (small problems only: label
        switching makes it slow per effective draw); memberships for MM/TCMM are then drawn from
        ``p(z | Θ_h, y)`` at synthesis time.
    tune, draws, chains, cores, random_seed, progressbar
        MCMC settings (see :class:`~bayes_risk.models.bayesian.BayesianSynthesizer`). With the
        Gibbs sampler chains always run sequentially in this process (``cores`` is ignored),
        because the recorded memberships live on the step object.

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
    model_class : {"P", "O"}
        ``"P"`` for MP in marginal mode, ``"O"`` otherwise (methods, Two classes of synthesis
        model).
    ratio_form : "joint"

    Notes
    -----
    **Partial synthesis of selected records** (``fit(..., records=...)``). The
    mixture is fitted to every record (it describes the whole table); in every synthetic dataset
    the records that are not selected keep all their original values, and only the selected
    records ``S`` get synthetic counts:

    * MP, ``marginal``: each selected record is drawn from the posterior predictive ``p(· | Θ)``;
      ``posterior_class``: from ``Poisson(λ_{z_i})`` with its own membership ``z_i``.
    * MM: within each component ``k``, the total of the *selected* members,
      ``T_kj^S = Σ_{i∈I_k∩S} y_ij``, is redistributed over the selected members,
      ``Multinomial(T_kj^S; 1/n_k^S, …)``. The non-selected records keep their values, so every
      component total and every column total is still reproduced exactly.
    * TCMM: as MM, with the tail taken among the selected records: ``τ_j`` is the empirical
      ``q``-quantile of the selected records' values of column ``j``, and the selected records
      above it form the pooled tail group.

    Synthesis thus involves only the selected records' confidential counts (and the
    memberships), so the likelihoods follow: :meth:`dataset_loglik` is the product over the
    selected records (MP) or the multinomial over the selected members of each group (MM,
    TCMM), and :meth:`own_record_delta` is 0 for a record that is not selected (its value does
    not enter the synthesis given Θ and the memberships). :meth:`fit_augmented` appends only
    the selected rows of ``Z_(l)``.

    Examples
    --------
    >>> import warnings
    >>> import numpy as np, pandas as pd
    >>> from bayes_risk.exceptions import BayesRiskWarning
    >>> rng = np.random.default_rng(0)
    >>> df = pd.DataFrame({"workers": rng.poisson(5, 100), "wages": rng.poisson(50, 100)})
    >>> pm_ = PoissonMixture(variant="mm", n_components=5, tune=50, draws=50, progressbar=False)
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore", BayesRiskWarning)  # 50 draws: too short, it warns
    ...     pm_ = pm_.fit(df, random_seed=1)
    >>> syn = pm_.synthesize(2, random_seed=2)
    >>> int(syn[0]["wages"].sum()) == int(df["wages"].sum())  # MM keeps every column total
    True

    References
    ----------
    Wei, L. and Reiter, J. P. (2016). Releasing synthetic magnitude microdata constrained to fixed
    marginal totals. Statistical Journal of the IAOS 32, 93–108.
    Hu, J. (2019). Bayesian estimation of attribute and identification disclosure risks in
    synthetic data. Transactions on Data Privacy 12, 61–89 (§3.3.3).
    """

    method_name = "poisson-mixture"
    ratio_form: Literal["joint", "conditional"] = "joint"

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
        tune: int = 500,
        draws: int = 1000,
        chains: int = 1,
        cores: int | None = 1,
        random_seed: RandomSeed = None,
        progressbar: bool = True,
    ) -> None:
        super().__init__(
            tune=tune, draws=draws, chains=chains, cores=cores, random_seed=random_seed,
            progressbar=progressbar,
        )
        self.variant = variant
        self.q = q
        self.n_components = n_components
        self.a_lambda = a_lambda
        self.b_lambda = b_lambda
        self.a_alpha = a_alpha
        self.b_alpha = b_alpha
        self.synthesis_mode = synthesis_mode
        self.sampler = sampler

    # ------------------------------------------------------------------ settings
    @property
    def model_class(self) -> Literal["P", "O"]:  # type: ignore[override]
        """``"P"`` for MP in ``marginal`` mode, ``"O"`` for MM, TCMM and ``posterior_class``."""
        return "P" if (self.variant == "mp" and self.synthesis_mode == "marginal") else "O"

    def _check_settings(self) -> None:
        if self.variant not in _VARIANTS:
            raise ValidationError(
                f"variant must be one of {list(_VARIANTS)}. Got {self.variant!r}."
            )
        if self.synthesis_mode not in _MODES:
            raise ValidationError(
                f"synthesis_mode must be one of {list(_MODES)}. Got {self.synthesis_mode!r}."
            )
        if self.variant != "mp" and self.synthesis_mode != "marginal":
            raise ValidationError(
                f"synthesis_mode applies to variant 'mp' only (MM and TCMM always use the "
                f"sampled memberships); got synthesis_mode={self.synthesis_mode!r} with "
                f"variant={self.variant!r}."
            )
        if self.sampler not in _SAMPLERS:
            raise ValidationError(
                f"sampler must be one of {list(_SAMPLERS)}. Got {self.sampler!r}."
            )
        K = self.n_components
        if isinstance(K, bool) or not isinstance(K, (int, np.integer)) or K < 1:
            raise ValidationError(f"n_components must be an integer >= 1. Got {K!r}.")
        for name in ("a_lambda", "a_alpha", "b_alpha"):
            v = getattr(self, name)
            if not isinstance(v, (int, float, np.number)) or not np.isfinite(v) or v <= 0:
                raise ValidationError(f"{name} must be a positive number. Got {v!r}.")
        if self.b_lambda is not None and (
            not isinstance(self.b_lambda, (int, float, np.number)) or not self.b_lambda > 0
        ):
            raise ValidationError(
                f"b_lambda must be None or a positive number. Got {self.b_lambda!r}."
            )
        if not isinstance(self.q, (int, float, np.number)) or not (0.0 < float(self.q) <= 1.0):
            raise ValidationError(f"q must be a number in (0, 1]. Got {self.q!r}.")

    # ------------------------------------------------------------------ data
    def _count_columns(self, schema: Schema) -> list[str]:
        # no synthesized role given (e.g. from_posterior with an inferred schema): full synthesis
        cols = schema.synthesized or schema.names
        bad = [c for c in cols if schema[c].type != "count"]
        if bad:
            raise SchemaError(
                f"PoissonMixture models count columns only; column {bad[0]!r} is "
                f"{schema[bad[0]].type}. Synthesize only count columns (synthesized=[...]; "
                "command line: --columns or --synthesize) or declare integer columns with "
                "count=[...] in infer_schema (command line: --count COL ...).",
                code="WRONG_DTYPE",
            )
        return cols

    def _counts(
        self, df: pd.DataFrame, name: str = "records", *, strict: bool = True
    ) -> np.ndarray:
        """The modelled count columns as floats; ``strict=False`` lets negative or non-integer
        values through (they have Poisson probability 0; candidates may hold them)."""
        cols = self.columns_
        if not isinstance(df, pd.DataFrame):
            raise ValidationError(f"{name} must be a pandas DataFrame. Got {type(df).__name__}.")
        missing = [c for c in cols if c not in df.columns]
        if missing:
            raise SchemaError(f"{name} lacks the modelled count column(s) {missing}.",
                              code="MISSING_COLUMN")
        if strict:
            validate_table(df[cols], self.schema_.select(cols), name=name)
        else:
            validate_table(df[cols], self.schema_.select(cols).with_types(
                **{c: "continuous" for c in cols}), name=name)
        return df[cols].to_numpy(dtype=np.float64)

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
        return 1.0 / np.maximum(1.0, y.mean(axis=0))

    def _needs_data_for_synthesis(self) -> bool:
        # class O needs the confidential counts; columns outside the mixture, and records that
        # are not synthesized, are copied
        schema = self.schema_
        extra = schema is not None and len(self._count_columns(schema)) < len(schema)
        return (
            self.model_class == "O" or bool(extra) or self.synthesized_records_ is not None
        )

    # Public methods written in the _poisson_* modules, bound here so that the API page (which
    # lists a class's own members) documents them with the class.
    build_pymc_model = _PoissonFitting.build_pymc_model
    pymc_record_logp = _PoissonFitting.pymc_record_logp
    fit_augmented = _PoissonFitting.fit_augmented
    record_loglik = _PoissonLikelihoods.record_loglik
    neighbourhood_loglik = _PoissonLikelihoods.neighbourhood_loglik
    dataset_loglik = _PoissonLikelihoods.dataset_loglik
    candidate_dataset_loglik = _PoissonLikelihoods.candidate_dataset_loglik
    own_record_delta = _PoissonLikelihoods.own_record_delta
    largest_value_candidates = _LargestValue.largest_value_candidates
    largest_value_loglik = _LargestValue.largest_value_loglik

    # ------------------------------------------------------------------ fitting
    def fit(
        self,
        data: pd.DataFrame,
        *,
        schema: Schema | None = None,
        synthesized: Sequence[str] | None = None,
        records: Any = None,
        random_seed: RandomSeed = None,
    ) -> PoissonMixture:
        """Fit the MP model to the count columns by MCMC.

        Parameters
        ----------
        data : DataFrame
            Confidential table; the synthesized columns must be non-negative integer counts.
        schema : Schema, optional
            Column types and roles (default inferred: integer columns are counts).
        synthesized : sequence of str, optional
            The count columns to model and synthesize (default: the schema's synthesized
            columns, or every column). Other columns are released unchanged and the mixture
            does not condition on them.
        records : array of bool or int indices, optional
            Records whose count columns are replaced (default all); the others are released
            unchanged (see the class Notes for MM/TCMM). The mixture is fitted to every record.
        random_seed : RandomSeed
            Seed of the sampler (default: the ``random_seed`` setting).

        Returns
        -------
        self

        Raises
        ------
        SchemaError
            If a synthesized column is not a count column (naming it).
        ValidationError
            For invalid settings.
        """
        self._check_settings()
        data, schema = self._prepare_data(data, schema=schema, synthesized=synthesized)
        flags = self._check_synthesized_records(records, len(data))
        cols = self._count_columns(schema)
        y = data[cols].to_numpy(dtype=np.float64)
        seed = self._seed_for_fit(random_seed)
        posterior = self._sample(y, cols, seed)
        self.dtypes_ = record_dtypes(data)
        self._set_fitted(posterior, schema, len(data), data=data, synthesized_records=flags)
        return self
    # ------------------------------------------------------------------ posterior handling
    def _event_ndims(self) -> dict[str, int]:
        return {"alpha": 0, "v": 1, "w": 1, "lam": 2}

    def _validate_posterior(self, posterior: xr.DataTree, schema: Schema) -> None:
        import xarray as xr

        self._check_settings()
        cols = self._count_columns(schema)
        post = posterior["posterior"]
        if "lam" not in post.data_vars:
            raise ValidationError(
                "a PoissonMixture posterior needs variable 'lam' [chain, draw, K, p]."
            )
        lam = post["lam"]
        if lam.ndim != 4 or lam.shape[3] != len(cols):
            raise ValidationError(
                f"posterior 'lam' must have shape (chain, draw, K, p) with p = {len(cols)} "
                f"count columns {cols}. Got shape {tuple(lam.shape)}."
            )
        K = int(lam.shape[2])
        if K != int(self.n_components):
            raise ValidationError(
                f"posterior 'lam' has K = {K} components but n_components = {self.n_components}; "
                "pass n_components to match."
            )
        if np.any(~np.isfinite(lam.values)) or np.any(lam.values < 0):
            raise ValidationError("posterior 'lam' must hold finite non-negative rates.")
        lam_dims = ("chain", "draw", "component", "column")
        ds = post.to_dataset() if hasattr(post, "to_dataset") else post.ds
        ds = ds.copy()
        if tuple(lam.dims) != lam_dims:
            ds["lam"] = (lam_dims, lam.values)
        if "w" not in ds.data_vars:
            if K == 1:
                w = np.ones(lam.shape[:2] + (1,))
            elif "v" in ds.data_vars:
                v = np.asarray(ds["v"].values, dtype=np.float64)
                if v.shape[-1] != K - 1 or np.any((v <= 0) | (v >= 1)):
                    raise ValidationError(
                        f"posterior 'v' must have K - 1 = {K - 1} stick proportions in (0, 1)."
                    )
                w = np.exp(pk.stick_breaking_log_weights(v))
            else:
                raise ValidationError(
                    "a PoissonMixture posterior needs 'w' (mixture weights) or 'v'."
                )
            ds["w"] = (("chain", "draw", "component"), w)
        w = np.asarray(ds["w"].values, dtype=np.float64)
        if w.shape[-1] != K or np.any(w < 0) or not np.allclose(w.sum(-1), 1.0, atol=1e-6):
            raise ValidationError(
                f"posterior 'w' must hold K = {K} non-negative weights summing to 1 per draw."
            )
        if tuple(ds["w"].dims) != ("chain", "draw", "component"):
            ds["w"] = (("chain", "draw", "component"), w)
        if "v" in ds.data_vars and tuple(ds["v"].dims) != ("chain", "draw", "stick"):
            ds["v"] = (("chain", "draw", "stick"), np.asarray(ds["v"].values))
        ds = ds.assign_coords(column=list(cols))
        posterior["posterior"] = xr.DataTree(ds)
        if LATENT_GROUP in posterior.children:
            z = posterior[LATENT_GROUP]["z"]
            if z.shape[:2] != lam.shape[:2] or np.any(z.values < 0) or np.any(z.values >= K):
                raise ValidationError(
                    "latent 'z' must be [chain, draw, record] with values in 0..K-1."
                )

    def _after_posterior(self) -> None:
        self._generating_cache = {}
        if not hasattr(self, "dtypes_"):
            self.dtypes_ = record_dtypes(self.data_) if self.data_ is not None else {}

    def _state_to_json(self) -> dict[str, Any]:
        return {"dtypes": dict(getattr(self, "dtypes_", {}))}

    def _state_from_json(self, state: Mapping[str, Any]) -> None:
        self.dtypes_ = dict(state.get("dtypes", {}))

    def _params(self, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``log π`` [H', K] and ``λ`` [H', K, p] of the flattened draws ``idx``."""
        w = self._stacked("w", idx)
        lam = self._stacked("lam", idx)
        with np.errstate(divide="ignore"):
            return np.log(w), lam

    def _memberships_of(self, h: int) -> np.ndarray | None:
        if LATENT_GROUP not in self.posterior_.children:
            return None
        z = np.asarray(self.posterior_[LATENT_GROUP]["z"].values)
        return z.reshape(-1, z.shape[-1])[h].astype(np.int64)

    def _convergence_quantities(self) -> dict[str, np.ndarray]:
        post = self.posterior_["posterior"]
        w = np.asarray(post["w"].transpose("chain", "draw", "component").values)
        lam = np.asarray(post["lam"].transpose("chain", "draw", "component", "column").values)
        out: dict[str, np.ndarray] = {}
        if "alpha" in post.data_vars:
            out["alpha"] = np.asarray(post["alpha"].values)
        # label-invariant: posterior predictive mean and variance of each column
        mean = np.einsum("cdk,cdkj->cdj", w, lam)
        second = np.einsum("cdk,cdkj->cdj", w, lam + lam**2)
        for j, c in enumerate(self._count_columns(self.schema_)):
            out[f"mean[{c}]"] = mean[..., j]
            out[f"var[{c}]"] = second[..., j] - mean[..., j] ** 2
        if "sample_stats" in self.posterior_.children:
            ss = self.posterior_["sample_stats"]
            for name in ("loglik", "n_occupied"):
                if name in ss.data_vars:
                    out[name] = np.asarray(ss[name].values, dtype=np.float64)
        return out

    # ------------------------------------------------------------------ synthesis
    def _synthesize_one(
        self, draw: int, rng: np.random.Generator, data: pd.DataFrame | None
    ) -> pd.DataFrame:
        cols = self.columns_
        n = self.n_records
        log_pi, lam = self._params(np.array([draw]))
        log_pi, lam = log_pi[0], lam[0]
        K = lam.shape[0]
        if data is not None:
            out = data.copy()
        else:
            out = pd.DataFrame({c: np.zeros(n, dtype=np.int64) for c in self.schema_.names})
            unsyn = [c for c in self.schema_.names if c not in cols]
            if unsyn:
                raise ValidationError(
                    "this model has unsynthesized columns but no confidential data to copy them "
                    "from; refit, or build it with from_posterior(..., data=...)."
                )
        rows = self._synthesized_rows()  # every record unless synthesized_records was given
        if self.model_class == "P":
            k = rng.choice(K, size=rows.size, p=np.exp(log_pi) / np.exp(log_pi).sum())
            vals = rng.poisson(lam[k]).astype(np.int64)
        else:
            y = data[cols].to_numpy(dtype=np.float64)
            z = self._memberships_of(draw)
            if z is None or z.shape[0] != n:
                z = pk.sample_memberships(y, log_pi, lam, rng)
            if self.variant == "mp":  # posterior_class
                vals = rng.poisson(lam[z[rows]]).astype(np.int64)
            else:
                vals = np.empty((rows.size, len(cols)), dtype=np.int64)
                for j in range(len(cols)):
                    groups, ng = self._groups(y[:, j], z, K)
                    totals = _group_totals(y[:, j], groups, ng)
                    if rows.size:
                        vals[:, j] = pk.redistribute_totals(groups[rows], totals, rng)
        for j, c in enumerate(cols):
            if rows.size == n:
                out[c] = vals[:, j]
            else:  # the records that are not selected keep their values
                col = out[c].to_numpy(dtype=np.int64, copy=True)
                col[rows] = vals[:, j]
                out[c] = col
        out = out[self.schema_.names].reset_index(drop=True)
        return apply_dtypes(out, {k: v for k, v in self.dtypes_.items() if k not in cols},
                            self.schema_)

    def _groups(self, ycol: np.ndarray, z: np.ndarray, K: int) -> tuple[np.ndarray, int]:
        """Redistribution groups of one column: components (MM) or components + tail (TCMM).

        Under partial synthesis only the selected records are grouped (the others get ``-1``:
        they are released unchanged) and the TCMM tail threshold is the ``q``-quantile of the
        selected records' values, so that synthesis involves the selected records only.
        """
        ng = K + 1 if self.variant == "tcmm" else K
        sel = self.synthesized_records_
        if sel is None:
            if self.variant == "tcmm":
                return pk.tcmm_groups(ycol, z, K, float(self.q))[0], ng
            return np.asarray(z, dtype=np.int64), ng
        g = np.full(np.shape(ycol)[0], -1, dtype=np.int64)
        if sel.any():
            if self.variant == "tcmm":
                g[sel] = pk.tcmm_groups(np.asarray(ycol)[sel], np.asarray(z)[sel], K,
                                        float(self.q))[0]
            else:
                g[sel] = np.asarray(z, dtype=np.int64)[sel]
        return g, ng
