"""Sequential Bayesian regression synthesizers (chains of GLMs). See :doc:`/methods/models`."""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import pandas as pd

import bayes_risk.models.seqreg.loglik as _loglik
import bayes_risk.models.seqreg.missing as _missing
import bayes_risk.models.seqreg.posterior as _posterior
import bayes_risk.models.seqreg.synthesis as _synthesis
from bayes_risk._constraints import Options, Within, check_relations, check_value
from bayes_risk._rng import RandomSeed, spawn
from bayes_risk.contract import ModelInfo
from bayes_risk.data.schema import Schema
from bayes_risk.data.synthetic import SyntheticData, as_frames
from bayes_risk.data.validate import require_synthesized
from bayes_risk.exceptions import CALLER, ConvergenceWarning, ValidationError
from bayes_risk.models._bayesian.base import BayesianSynthesizer
from bayes_risk.models._bayesian.design import (
    FAMILIES,
    DesignSpec,
    column_values,
    normal_exact_posterior,
    parse_formula,
)
from bayes_risk.models._bayesian.posterior import PosteriorDims, PosteriorVariable, concrete
from bayes_risk.models._bayesian.sampling import Sampling, run_pymc
from bayes_risk.models._bayesian.timing import record_sweep_time
from bayes_risk.models.base import FittedAttribute
from bayes_risk.models.seqreg.draws import NAME_SEP, draw_name, laplace_draws, prior_sd
from bayes_risk.models.seqreg.state import SeqRegState

if TYPE_CHECKING:  # pragma: no cover
    import xarray as xr

__all__ = ["SequentialRegression", "default_family"]

_METHODS = ("auto", "exact", "nuts", "laplace")
#: the settings against each other
_RELATIONS = (Within("predictors", "formulas", apart=True,
                     why="give a column's predictors or its formula"),)


def default_family(spec) -> str:
    """Default GLM family of a column: ``normal``, ``poisson_log``, ``bernoulli_logit`` (2
    levels) or ``multinomial_logit``."""
    if spec.type == "continuous":
        return "normal"
    if spec.type == "count":
        return "poisson_log"
    return "bernoulli_logit" if spec.n_levels == 2 else "multinomial_logit"


class SequentialRegression(BayesianSynthesizer):
    """Chain of Bayesian GLMs synthesizing columns one after another.

    Parameters
    ----------
    order : sequence of str, optional
        Visit order of the synthesized columns (default: their order in the data).
    families : dict, optional
        Column → family among ``normal`` (β, σ), ``bernoulli_logit`` (β; the second level is
        "1"), ``multinomial_logit`` (baseline-category logit, first level the baseline; β_c for
        c = 2..d), ``poisson_log`` (β), ``categorical`` (probability vector, no covariates).
        Default per column type: see :func:`default_family`.
    predictors : dict, optional
        Column → list of predictor columns. Default: every unsynthesized column plus the columns
        synthesized earlier in ``order``. A predictor must be unsynthesized or earlier in order.
    formulas : dict, optional
        Column → ``"y ~ a + b"`` (sums of column names only), an alternative to ``predictors``.
    posterior_method : {"auto", "exact", "nuts", "laplace"} or dict
        How posterior draws are made (per column if a dict); ``"auto"``: ``exact`` for
        ``normal`` and ``categorical``, ``nuts`` otherwise (:doc:`/methods/models`).
    sampling : Sampling, optional
        How the sampler runs (:class:`~bayes_risk.models.Sampling`): ``draws`` (default
        1,000), ``tune`` (500), ``chains`` (1), ``cores`` (1); exact and Laplace draws are
        arranged as ``chains × draws`` independent draws.
    random_seed, progressbar
        See :class:`~bayes_risk.models._bayesian.base.BayesianSynthesizer`.

    Attributes
    ----------
    posterior_ : xarray.DataTree
        Group ``posterior`` with ``<col>__beta`` [chain, draw, <col>__coef] (``multinomial_logit``:
        [chain, draw, <col>__category, <col>__coef]), ``<col>__sigma`` (normal) and
        ``<col>__probs`` (categorical).
    order_ : list of str
    families_ : dict
    designs_ : dict of DesignSpec
    synthesized_records_ : ndarray of bool or None
        Records whose synthesized columns are replaced (``None``: all records).
    state_ : ~bayes_risk.models.seqreg.state.SeqRegState
        The fitted state the likelihoods and the synthesis read (frozen): the draws of each
        column's coefficients, ``params(column, idx)``; set by :meth:`fit`, ``load`` and
        ``from_posterior``; reading it before raises
        :class:`~bayes_risk.exceptions.NotFittedError`.
    model_class : "P"
    ratio_form : "conditional"

    Notes
    -----
    :meth:`~bayes_risk.models._bayesian.fitted.FittedPosterior.from_posterior` also takes a
    dict keyed by synthesized column of draw tables: a DataFrame with one column per coefficient
    named as the design (``(Intercept)``, ``col[T.level]``; the R/brms convention) plus
    ``sigma`` (normal), or an array ``[H, q (+1)]`` in design order (``multinomial_logit``:
    ``[H, d-1, q]``; ``categorical``: ``[H, d]``).

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> rng = np.random.default_rng(1)
    >>> x = rng.normal(10, 1, 200)
    >>> df = pd.DataFrame({"LogExp": x, "LogInc": 1 + x + rng.normal(0, 0.5, 200)})
    >>> from bayes_risk.models import Sampling
    >>> sr = SequentialRegression(sampling=Sampling(draws=100), progressbar=False)
    >>> sr = sr.fit(df, synthesized=["LogInc"], random_seed=1)
    >>> sr.record_loglik(df.head(3)).shape
    (100, 3)
    """

    method_name = "regression"
    state_ = FittedAttribute(
        "The fitted :class:`~bayes_risk.models.seqreg.state.SeqRegState` (set by ``fit``).")
    info = ModelInfo(imputes=True, partial_synthesis=True)
    model_class: Literal["P", "O"] = "P"
    ratio_form: Literal["joint", "conditional"] = "conditional"
    posterior_variables = (
        PosteriorVariable(draw_name("{column}", "beta"), (draw_name("{column}", "coef"),),
                          kinds=("normal", "bernoulli_logit", "poisson_log")),
        PosteriorVariable(draw_name("{column}", "beta"),
                          (draw_name("{column}", "category"), draw_name("{column}", "coef")),
                          kinds=("multinomial_logit",)),
        PosteriorVariable(draw_name("{column}", "sigma"), (), "positive", kinds=("normal",)),
        PosteriorVariable(draw_name("{column}", "probs"), (draw_name("{column}", "level"),),
                          "simplex", kinds=("categorical",)),
    )

    def __init__(
        self,
        *,
        order: Sequence[str] | None = None,
        families: Mapping[str, str] | None = None,
        predictors: Mapping[str, Sequence[str]] | None = None,
        formulas: Mapping[str, str] | None = None,
        posterior_method: str | Mapping[str, str] = "auto",
        sampling: Sampling | None = None,
        random_seed: RandomSeed = None,
        progressbar: bool = True,
    ) -> None:
        super().__init__(sampling=sampling, random_seed=random_seed, progressbar=progressbar)
        self.order = order
        self.families = families
        self.predictors = predictors
        self.formulas = formulas
        self.posterior_method = posterior_method

    def _resolve_structure(self, schema: Schema) -> None:
        """Settle order, families, predictors and designs for ``schema`` (validating settings)."""
        syn = schema.synthesized
        order = list(self.order) if self.order is not None else list(syn)
        schema.check_columns(order, "order")
        if sorted(order) != sorted(syn) or len(set(order)) != len(order):
            raise ValidationError(
                f"order must list every synthesized column exactly once: synthesized {syn}, "
                f"order {order}."
            )

        def synthesized_only(cols: dict[str, Any], what: str) -> None:
            schema.check_columns(cols, what)
            require_synthesized(cols, syn, what)

        fams: dict[str, str] = {}
        if not isinstance(self.families, (Mapping, list, tuple, type(None))):  # CLI: pairs
            raise ValidationError("families must be a dict column → value. Got "
                                  f"{type(self.families).__name__}.")
        given = dict(self.families or {})
        synthesized_only(given, "families")
        for c in order:
            spec = schema[c]
            f = given.get(c, default_family(spec))
            check_value(f, Options(tuple(sorted(FAMILIES))), f"families[{c!r}]")
            if spec.type not in FAMILIES[f]:
                raise ValidationError(
                    f"family {f!r} cannot model column {c!r} of type {spec.type}; it needs a "
                    f"{' or '.join(FAMILIES[f])} column.",
                    code="WRONG_DTYPE"
                )
            if f == "bernoulli_logit" and spec.n_levels != 2:
                raise ValidationError(
                    f"bernoulli_logit needs a 2-level column; {c!r} has {spec.n_levels} levels "
                    "(use multinomial_logit).",
                    code="WRONG_DTYPE"
                )
            fams[c] = f
        preds: dict[str, list[str]] = {}
        check_relations(self, _RELATIONS)
        given_p = {k: list(v) for k, v in (self.predictors or {}).items()}
        for c, form in (self.formulas or {}).items():
            given_p[c] = parse_formula(form, target=c)[1]
        synthesized_only(given_p, "predictors")
        unsyn = schema.unsynthesized
        for k, c in enumerate(order):
            allowed = unsyn + order[:k]
            p = given_p.get(c, allowed)
            schema.check_columns(p, f"predictors of {c!r}")
            bad = [x for x in p if x not in allowed]
            if bad:
                raise ValidationError(
                    f"predictor {bad[0]!r} of {c!r} is neither unsynthesized nor synthesized "
                    f"before {c!r} in the order {order}."
                )
            if fams[c] == "categorical" and p:
                if c in given_p:
                    raise ValidationError(
                        f"family 'categorical' of {c!r} has no covariates; got predictors {p}."
                    )
                p = []
            preds[c] = list(dict.fromkeys(p))
        self.order_ = order
        self.families_ = fams
        self.predictors_ = preds
        padded = getattr(self, "_padded", ())
        self.designs_ = {c: DesignSpec.from_schema(schema, preds[c], padded) for c in order}

    def _method_of(self, col: str) -> str:
        pm_ = self.posterior_method
        m = pm_.get(col, "auto") if isinstance(pm_, Mapping) else pm_
        check_value(m, Options(_METHODS), f"posterior_method for {col!r}")
        fam = self.families_[col]
        if m == "auto":
            return "exact" if fam in ("normal", "categorical") else "nuts"
        if m == "exact" and fam not in ("normal", "categorical"):
            raise ValidationError(
                f"posterior_method 'exact' exists only for normal and categorical families; "
                f"{col!r} is {fam} (use 'nuts' or 'laplace')."
            )
        if m == "laplace" and fam in ("normal", "categorical"):
            if not isinstance(pm_, Mapping):  # a global choice: exact where it exists
                return "exact"
            raise ValidationError(
                f"posterior_method 'laplace' is for GLMs; {col!r} is {fam}, whose posterior is "
                "drawn exactly (use 'exact' or 'nuts')."
            )
        return m

    def _draw_posterior(self, data: pd.DataFrame, schema: Schema, seed: RandomSeed) -> xr.DataTree:
        vals = column_values(data, schema, schema.names)
        _missing.refuse_codes(schema, vals)
        self._padded = tuple(_missing.padded_columns(schema, vals))
        self._resolve_structure(schema)
        _missing.check_missing(schema, self.predictors_, self._padded, vals, "data")
        import xarray as xr

        t0 = time.perf_counter()
        self.check_mcmc_settings()
        C, D = int(self.resolved_sampling.chains), int(self.resolved_sampling.draws)
        H = C * D
        rngs = spawn(seed, len(self.order_))
        n = len(data)
        ds = xr.Dataset(coords={"chain": np.arange(C), "draw": np.arange(D)})
        spec = self._posterior_dims(None, schema)
        dims = {v.name: v.dims for v, _ in concrete(spec, self.posterior_variables)}
        methods = {c: self._method_of(c) for c in self.order_}
        if "nuts" in methods.values():
            import pymc  # noqa: F401 - imported once per process: not a cost of the draws
        drawing = 0.0  # the draws' own time, without the imports and the DataTree
        self._nuts_steady: float | None = None
        for c, rng in zip(self.order_, rngs, strict=False):
            started = time.perf_counter()
            fam = self.families_[c]
            method = methods[c]
            design = self.designs_[c]
            X = design.build(vals, n)
            y = vals[c]
            observed = ~_missing.missing_cells(schema, vals, c)
            if not observed.all():
                # missing at random and a predictor of no later column: the record's factor of
                # this regression integrates to 1, so the observed records are its likelihood
                X, y = X[observed], y[observed]
            if method == "exact" and fam == "normal":
                _missing.check_indicators(schema, c, design.padded, vals, observed)
                d = normal_exact_posterior(X, y, H, rng)
                params = {"beta": d["beta"], "sigma": d["sigma"]}
            elif method == "exact":  # categorical
                k = schema[c].n_levels
                counts = np.bincount(y.astype(np.int64), minlength=k).astype(np.float64)
                params = {"probs": rng.dirichlet(1.0 + counts, size=H)}
            elif method == "laplace":
                params = laplace_draws(fam, X, y, schema, c, H, rng)
            else:
                params = self._nuts_draws(fam, X, y, schema, c, rng)
            took = time.perf_counter() - started
            if method == "nuts" and self._nuts_steady is not None:
                # NUTS: its chains' steady sampling, without building and compiling the model
                # (part of the fit's set-up in the estimate)
                took = min(took, self._nuts_steady)
            drawing += took
            for name, arr in params.items():
                arr = np.asarray(arr, dtype=np.float64).reshape((C, D) + np.shape(arr)[1:])
                ds[draw_name(c, name)] = (("chain", "draw", *dims[draw_name(c, name)]), arr)
        ds = ds.assign_coords(spec.sizes)
        ds.attrs["posterior_methods"] = ",".join(f"{c}={m}" for c, m in methods.items())
        if any(m == "laplace" for m in methods.values()):
            ds.attrs["approximation"] = "laplace (normal approximation at the posterior mode)"
        # as PyMC records it: what the refits of the stabilised estimator are estimated from
        ds.attrs["sampling_time"] = time.perf_counter() - t0
        tune = int(self.resolved_sampling.tune) if "nuts" in methods.values() else 0
        ds.attrs["tuning_steps"] = tune  # only NUTS has a warm-up
        dt = xr.DataTree.from_dict({"posterior": ds})
        # the draws' time as that of chains run in turn, each of tune + draws "sweeps", so that
        # the refits' estimate scales it by their sizes
        record_sweep_time(dt, drawing / (C * (tune + D)), 1)
        return dt

    def _nuts_draws(self, fam, X, y, schema, col, rng) -> dict[str, np.ndarray]:
        import pymc as pm

        sd = prior_sd(X)
        with pm.Model() as model:
            if fam == "multinomial_logit":
                d = schema[col].n_levels
                beta = pm.Normal("beta", 0.0, np.tile(sd, (d - 1, 1)), shape=(d - 1, X.shape[1]))
                eta = pm.math.dot(X, beta.T)
                full = pm.math.concatenate([np.zeros((X.shape[0], 1)), eta], axis=1)
                pm.Categorical("y", logit_p=full, observed=y.astype(np.int64))
            else:
                beta = pm.Normal("beta", 0.0, sd, shape=X.shape[1])
                eta = pm.math.dot(X, beta)
                if fam == "normal":
                    sigma = pm.Exponential("sigma", 1.0 / max(float(np.std(y)), 1e-8))
                    pm.Normal("y", eta, sigma, observed=y)
                elif fam == "bernoulli_logit":
                    pm.Bernoulli("y", logit_p=eta, observed=y.astype(np.int64))
                elif fam == "poisson_log":
                    pm.Poisson("y", mu=pm.math.exp(eta), observed=y.astype(np.int64))
        dt = run_pymc(self, model, random_seed=rng)
        post = dt["posterior"]
        # the sampling's steady wall time (bayes_risk.models._bayesian.timing), for _draw_posterior
        self._nuts_steady = None
        if "sweep_time" in post.attrs:
            at_once = int(post.attrs.get("chains_at_once", 1))
            run = self.resolved_sampling
            turns = math.ceil(int(run.chains) / at_once)
            self._nuts_steady = (turns * (int(run.tune) + int(run.draws))
                                 * float(post.attrs["sweep_time"]))
        out = {"beta": np.asarray(post["beta"].values).reshape((-1,) + post["beta"].shape[2:])}
        if fam == "normal":
            out["sigma"] = np.asarray(post["sigma"].values).reshape(-1)
        if "sample_stats" in dt.children and "diverging" in dt["sample_stats"].data_vars:
            nd = int(np.asarray(dt["sample_stats"]["diverging"].values).sum())
            if nd:
                warnings.warn(
                    f"NUTS for {col!r}: {nd} divergent transitions; the posterior draws may be "
                    "biased (increase tune, or check the predictors' scaling).",
                    ConvergenceWarning, skip_file_prefixes=CALLER,
                )
        return out

    @classmethod
    def from_posterior(cls, posterior: Any, schema: Schema, **kwargs: Any
                       ) -> SequentialRegression:
        """``BayesianSynthesizer.from_posterior``; ``posterior`` may also be a dict keyed by
        synthesized column of draw tables (see Notes).

        Returns
        -------
        SequentialRegression
        """
        import xarray as xr

        if (isinstance(posterior, Mapping) and not isinstance(posterior, xr.DataTree)
                and isinstance(schema, Schema)):
            settings = {k: v for k, v in kwargs.items() if k in cls._param_names()}
            roles = schema if schema.synthesized else schema.with_roles(schema.names)
            posterior = cls(**settings)._user_posterior(posterior, roles)
        return super().from_posterior(posterior, schema, **kwargs)

    def _user_posterior(self, posterior: Mapping[str, Any], schema: Schema
                        ) -> dict[str, np.ndarray]:
        """The draws ``[H, ...]`` of each posterior variable of a dict ``{column: draws}``
        (see :meth:`from_posterior`)."""
        self._resolve_structure(schema)
        arrays: dict[str, np.ndarray] = {}
        require_synthesized(posterior, self.order_, "posterior", code="POSTERIOR_INVALID")
        for c, val in posterior.items():
            arrays.update(_posterior.draws_from_user(c, val, self.families_[c], self.designs_[c]))
        missing = [c for c in self.order_ if not any(k.startswith(c + NAME_SEP) for k in arrays)]
        if missing:
            raise ValidationError(f"posterior: no draws for synthesized column(s) {missing}.",
                                  code="POSTERIOR_INVALID")
        return arrays

    def _synthesize_one(
        self, draw: int, rng: np.random.Generator, data: pd.DataFrame | None
    ) -> pd.DataFrame:
        return self._synthesize_many(np.array([draw]), [rng], data)[0]

    def _synthesize_many(
        self, draws: np.ndarray, rngs: Sequence[np.random.Generator], data: pd.DataFrame | None
    ) -> list[pd.DataFrame]:
        """One dataset per draw in ``draws``, dataset ``l`` from ``rngs[l]`` only."""
        return [pd.DataFrame(columns) for columns in _synthesis.datasets(
            self.state_, self.dtypes_, self.synthesized_records_, draws, rngs, data,
            self.n_records)]

    def _synthesize_stacked(
        self, m: int, *, random_seed: RandomSeed = None, rows: np.ndarray | None = None
    ) -> tuple[pd.DataFrame, list[int]]:
        """The datasets of ``synthesize(m, random_seed=random_seed)`` stacked (rows ``rows`` of
        each when given), and each dataset's number of rows."""
        idx, rngs, _ = self._synthesis_plan(m, random_seed)
        return _synthesis.stacked(self.state_, self.dtypes_, self.synthesized_records_, idx,
                                  rngs, self.data_, self.n_records, rows)

    def _posterior_dims(self, posterior: xr.DataTree | None, schema: Schema,
                        data: pd.DataFrame | None = None) -> PosteriorDims:
        if posterior is not None:
            # the padded predictors, as the coefficient names of the draws show them
            post = posterior["posterior"]
            coefs = [str(x) for k in post.coords if str(k).endswith(NAME_SEP + "coef")
                     for x in post.coords[k].values]
            self._padded = tuple(p for p in schema.unsynthesized if f"{p}[missing]" in coefs)
        self._resolve_structure(schema)
        sizes: dict[str, list[str]] = {}  # the labels of each dim
        about: dict[str, str] = {}
        for c in self.order_:
            if self.families_[c] == "categorical":
                sizes[draw_name(c, "level")] = [str(v) for v in schema[c].levels]
                continue
            sizes[draw_name(c, "coef")] = list(self.designs_[c].names)
            about[draw_name(c, "coef")] = f"coefficients {list(self.designs_[c].names)}"
            if self.families_[c] == "multinomial_logit":
                sizes[draw_name(c, "category")] = [str(v) for v in schema[c].levels[1:]]
        return PosteriorDims(sizes=sizes, columns={c: self.families_[c] for c in self.order_},
                             about=about)

    def _after_posterior(self) -> None:
        # the structure is resolved: by the fit's draws or by the dims of draws adopted
        if self.data_ is not None and self.data_.isna().to_numpy().any():
            # records given with draws made elsewhere: checked as at fit
            _missing.check_missing(
                self.schema_, self.predictors_, getattr(self, "_padded", ()),
                column_values(self.data_, self.schema_, self.schema_.names), "data")
        self.state_ = SeqRegState(
            schema=self.schema_, order=tuple(self.order_), families=self.families_,
            designs=self.designs_, tree=self.posterior_,
        )

    def posterior_methods(self) -> dict[str, str]:
        """How each column's draws were made: ``exact``, ``laplace``, ``nuts`` or ``user``."""
        self._check_fitted()
        return _posterior.posterior_methods(self.state_)

    def convergence_quantities(self) -> dict[str, np.ndarray]:
        return _posterior.convergence_quantities(self.state_)

    def design_matrix(self, df: pd.DataFrame, column: str) -> np.ndarray:
        """Design matrix ``[n, q]`` of ``column``'s regression for the rows of ``df``
        (columns: ``designs_[column].names``)."""
        self._check_fitted()
        return _loglik.design_matrix(self.state_, df, column)

    def record_loglik(self, records: pd.DataFrame, *, draw_indices: Any = None) -> np.ndarray:
        """``[H, n]`` conditional record log-likelihood (methods, Sequential Bayesian
        regressions)."""
        self._check_fitted()
        return _loglik.record_loglik(self.state_, records, self._draw_indices(draw_indices))

    def dataset_loglik(
        self, synthetic: Sequence[pd.DataFrame] | SyntheticData, *, draw_indices: Any = None
    ) -> np.ndarray:
        """``[H, m]`` ``log p(Z_(l) | Θ_h)`` over the synthesized records (class P)."""
        self._check_fitted()
        frames = as_frames(synthetic)
        idx = self._draw_indices(draw_indices)
        frames = [self._synthesized_part(z, name=f"synthetic dataset {l + 1}")
                  for l, z in enumerate(frames)]
        return _loglik.dataset_loglik(self.state_, frames, idx)

    def candidate_loglik(
        self, record_row: pd.DataFrame | pd.Series, candidates: pd.DataFrame, *,
        draw_indices: Any = None,
    ) -> np.ndarray:
        """``[H, G]`` record log-likelihood of each candidate (its values replace the record's).

        Parameters
        ----------
        record_row : one-row DataFrame or Series
            The target record (all columns).
        candidates : DataFrame
            ``G`` rows over some synthesized columns.

        Raises
        ------
        ValidationError
            If a candidate column is not synthesized.
        """
        self._check_fitted()
        rows = _loglik.candidate_rows(self.state_, record_row, candidates)
        return self.record_loglik(rows, draw_indices=draw_indices)

    def neighbourhood_loglik(self, records: pd.DataFrame, *,
        draw_indices: Any = None) -> np.ndarray:
        """``[H, n, G]`` log-likelihoods of the one-variable-different candidates (truth first,
        then column by column, levels ascending).

        Raises
        ------
        NeighbourhoodUnavailable
            If a synthesized column is numeric (use :meth:`candidate_loglik`).
        """
        self._check_fitted()
        _loglik.neighbourhood_unavailable(self.schema_)
        return _loglik.neighbourhood_loglik(self.state_, records,
                                            self._draw_indices(draw_indices))
