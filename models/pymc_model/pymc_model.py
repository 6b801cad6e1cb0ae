"""Any PyMC model as a synthesizer: :class:`PyMCSynthesizer` (:doc:`/user_guide/pymc_models`).

Everything the risk engines need is read off the model's graph: the record and dataset
log-likelihoods (the observed variables' log-density, compiled once), synthesis (the observed
variables drawn at a posterior draw), the refits of the stabilised estimator (the same model on
more records), convergence diagnostics (ArviZ) and persistence (the model function by its
importable path, the draws as NetCDF).
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, ClassVar, Literal

import numpy as np
import pandas as pd

import bayes_risk.models.pymc_model.graph as _graph
import bayes_risk.models.pymc_model.loglik as _loglik
import bayes_risk.models.pymc_model.synthesis as _synthesis
from bayes_risk._constraints import InstanceOf, Interval, SequenceOf, check_value
from bayes_risk._rng import RandomSeed
from bayes_risk.contract import ModelInfo
from bayes_risk.data.schema import Schema
from bayes_risk.data.synthetic import SyntheticData, as_frames
from bayes_risk.exceptions import CALLER, ConvergenceWarning, ValidationError
from bayes_risk.models._bayesian.base import BayesianSynthesizer
from bayes_risk.models._bayesian.design import output_column
from bayes_risk.models._bayesian.posterior import PosteriorDims, PosteriorVariable
from bayes_risk.models._bayesian.sampling import Sampling, run_pymc
from bayes_risk.models.base import FittedAttribute
from bayes_risk.models.persistence import StateField
from bayes_risk.models.pymc_model.function import (
    approve_function,
    function_path,
    importable_path,
    resolve_function,
)
from bayes_risk.models.pymc_model.state import PyMCState

if TYPE_CHECKING:  # pragma: no cover
    import xarray as xr

__all__ = ["PyMCSynthesizer"]

#: the sampler statistic of the log-likelihood of the fitted records at each draw (diagnosed)
LOGLIK = "loglik"


class PyMCSynthesizer(BayesianSynthesizer):
    """A synthesis model written in PyMC: its likelihoods, synthesis and refits read off the
    model's graph, nothing written by hand.

    Parameters
    ----------
    model_function : str or callable
        ``"module:function"`` (or the function itself, which must be importable by that path to
        be saved): ``function(data) -> pymc.Model`` for a table ``data`` whose categorical
        columns are pandas Categoricals of the fitted levels. Every column the model reads is a
        data container named after it (``pm.Data("area", data["area"].cat.codes)``), one value
        per record; the observed variables' values are such containers (one, or several
        stacked along the last axis) and their columns are the synthesized ones; the other
        containers are covariates, released as they are (:doc:`/user_guide/pymc_models`).
    target_accept : float
        NUTS's target acceptance rate (raise it towards 0.95 when the fit reports divergent
        transitions).
    diagnose : sequence of str, optional
        Free variables (and ``"loglik"``, the fitted records' log-likelihood) whose R-hat and
        ESS are checked; default every element of every free variable and ``"loglik"``. Name
        label-invariant ones for a mixture, whose components swap between chains.
    sampling : Sampling, optional
        How the sampler runs (:class:`~bayes_risk.models.Sampling`): ``draws`` (default
        1,000), ``tune`` (1,000), ``chains`` (2), ``cores`` (1).
    random_seed, progressbar
        See :class:`~bayes_risk.models._bayesian.base.BayesianSynthesizer`.

    Attributes
    ----------
    posterior_ : xarray.DataTree
        Group ``posterior``: the model's free variables (``[chain, draw, ...]``); group
        ``sample_stats`` with ``loglik``.
    model_class : "P"
    ratio_form : {"joint", "conditional"}
        ``"conditional"`` when the model reads covariates (columns it does not observe), else
        ``"joint"``.
    warnings_ : list of str
        Codes of the fit's own warnings (``DIVERGENCES``).
    state_ : ~bayes_risk.models.pymc_model.state.PyMCState
        The fitted state the likelihoods and the synthesis read (frozen): the model's graph,
        its draws and the compiled functions; set by :meth:`fit`, ``load`` and
        ``from_posterior``; reading it before raises
        :class:`~bayes_risk.exceptions.NotFittedError`.

    Notes
    -----
    Refused with the reason (``RECORDS_NOT_INDEPENDENT``): a model whose records are not
    independent given its parameters — a latent variable per record, a distribution over the
    records jointly, a record's likelihood reading other records, a constant computed from the
    table, a potential holding part of the likelihood. See :doc:`/methods/models` (Models
    written in PyMC).

    Examples
    --------
    >>> model = PyMCSynthesizer(model_function="my_models:income_model")  # doctest: +SKIP
    >>> model.fit(data, random_seed=1).synthesize(5)  # doctest: +SKIP
    """

    method_name = "pymc"
    state_ = FittedAttribute(
        "The fitted :class:`~bayes_risk.models.pymc_model.state.PyMCState` (set by ``fit``).")
    info = ModelInfo(partial_synthesis=True, required=("model_function",))
    model_class: Literal["P", "O"] = "P"

    @property
    def ratio_form(self) -> Literal["joint", "conditional"]:  # type: ignore[override]
        """``"conditional"`` when the model reads covariates (columns it does not observe), else
        ``"joint"`` (Hu 2019 §3.2.5; the methods page, Models written in PyMC)."""
        schema = getattr(self, "schema_", None)
        return "conditional" if schema is not None and schema.unsynthesized else "joint"

    sampling_defaults: ClassVar[Mapping[str, Any]] = MappingProxyType(
        {"draws": 1000, "tune": 1000, "chains": 2, "cores": 1})
    saved_state = MappingProxyType({
        **BayesianSynthesizer.saved_state, "graph_digest": StateField("_graph_digest", str),
        "observed": StateField("_observed", list), "warnings": StateField("warnings_", list, ())})

    def __init__(
        self,
        *,
        model_function: str | Any = None,
        target_accept: float = 0.8,
        diagnose: Sequence[str] | None = None,
        sampling: Sampling | None = None,
        random_seed: RandomSeed = None,
        progressbar: bool = True,
    ) -> None:
        super().__init__(sampling=sampling, random_seed=random_seed, progressbar=progressbar)
        self.model_function = model_function
        self.target_accept = target_accept
        self.diagnose = diagnose

    # ---------------------------------------------------------------------------- settings
    def _check_settings(self) -> None:
        resolve_function(self.model_function)
        check_value(self.target_accept, Interval(float, 0, 1, closed="neither"), "target_accept")
        check_value(self.diagnose, [SequenceOf(InstanceOf(str, "a variable name"),
                                               "variable names"), None], "diagnose")

    def saved_settings(self) -> dict[str, Any]:
        settings = super().saved_settings()
        settings["model_function"] = function_path(self.model_function)
        return settings

    # ---------------------------------------------------------------------------- fitting
    def _prepare_data(self, data: pd.DataFrame, *, schema: Schema | None = None,
                      synthesized: Sequence[str] | None = None,
                      categorical: Sequence[str] | None = None, allow_nan: bool = False,
                      fitting: bool = True) -> tuple[pd.DataFrame, Schema]:
        """The base class's checks; when fitting, the model is built on the table and checked,
        and the synthesized columns are its observed ones."""
        given = synthesized is not None or (isinstance(schema, Schema) and bool(
            schema.synthesized))
        data, schema = super()._prepare_data(data, schema=schema, synthesized=synthesized,
                                             categorical=categorical, allow_nan=allow_nan,
                                             fitting=fitting)
        if not fitting:
            return data, schema
        fn = resolve_function(self.model_function)
        graph = _graph.inspect_model(_graph.build_model(fn, data, schema), data, schema)
        schema = self._observed_roles(schema, graph, given)
        _graph.check_probe(fn, data, schema, graph)
        self._pending = graph
        return data, schema

    @staticmethod
    def _observed_roles(schema: Schema, graph: Any, given: bool) -> Schema:
        """``schema`` with the observed columns synthesized (refused when other ones are
        given)."""
        observed = graph.synthesized
        if given and sorted(schema.synthesized) != sorted(observed):
            raise ValidationError(
                f"the columns to synthesize ({schema.synthesized}) are not the model's observed "
                f"columns ({observed}): the model synthesizes what it observes. Observe the "
                "columns to synthesize, and read the others as covariates (data containers "
                "only), or leave the synthesized columns out.", code="MODEL_FUNCTION_INVALID")
        return schema.with_roles(observed)

    def draw_values(self, schema: Schema) -> int:
        """The values one posterior draw holds: every element of every free variable of the
        model built on ``schema`` (made-up records: the shapes do not depend on the records),
        what the memory check sizes the draws, the gradients and NUTS's trees by."""
        model = _graph.build_model(resolve_function(self.model_function),
                                   _graph.template_table(schema, 2), schema)
        shapes = model.eval_rv_shapes()
        return int(sum(int(np.prod(shapes[rv.name])) for rv in model.free_RVs))

    def _draw_posterior(self, data: pd.DataFrame, schema: Schema, seed: RandomSeed
                        ) -> xr.DataTree:
        import pymc as pm

        from bayes_risk._memory import check_nuts_memory

        graph = self._pending
        run = self.resolved_sampling
        shapes = graph.model.eval_rv_shapes()
        check_nuts_memory(sum(int(np.prod(shapes[rv.name])) for rv in graph.model.free_RVs),
                          len(data), len(data.columns), draws=run.draws, chains=run.chains,
                          tune=run.tune, cores=run.cores)  # before anything is compiled
        known = [*graph.free, LOGLIK]
        unknown = [v for v in (self.diagnose or ()) if v not in known]
        if unknown:  # before the sampler runs
            raise ValidationError(
                f"diagnose names {unknown}, which are not free variables of the model; expected "
                f"some of {known}.")
        comp = _loglik.compile_loglik(graph.likelihood, graph.digest)
        cols = _loglik.record_values(data, schema, comp.columns, "data")
        # at a draw of the prior (fixed: no randomness of the check reaches a result)
        prior = pm.draw([graph.model[p] for p in comp.params], random_seed=0)
        _loglik.check_independent(comp, [np.asarray(v)[None] for v in prior], cols)
        continuous = any(v.dtype.startswith("float") for v in graph.model.free_RVs)
        extra: dict[str, Any] = {"var_names": list(graph.free)}
        if continuous:
            extra["nuts"] = {"target_accept": float(self.target_accept)}
        dt = run_pymc(self, graph.model, random_seed=seed, **extra)
        for group in list(dt.children):  # the data containers' values are confidential
            if group not in ("posterior", "sample_stats"):
                del dt[group]
        self._pending_loglik = comp
        self.warnings_ = self._divergence_warnings(dt)
        state = PyMCState(graph=graph, schema=schema, tree=dt, model_function=None,
                          n_records=len(data))
        post = dt["posterior"]
        total = _loglik.evaluate(comp, state.draws(comp.params, None),
                                 [cols[c] for c in comp.columns],
                                 int(post.sizes["chain"] * post.sizes["draw"]), total=True)
        _add_loglik_stat(dt, total)
        return dt

    def _divergence_warnings(self, dt: Any) -> list[str]:
        """``["DIVERGENCES"]`` (and the warning) when NUTS reported divergent transitions."""
        stats = dt["sample_stats"] if "sample_stats" in dt.children else None
        if stats is None or "diverging" not in stats.data_vars:
            return []
        nd = int(np.asarray(stats["diverging"].values).sum())
        if not nd:
            return []
        warnings.warn(ConvergenceWarning(
            f"PyMCSynthesizer: {nd} divergent transitions of NUTS: the posterior draws may be "
            "biased (DIVERGENCES). Raise target_accept (e.g. 0.95), or reparametrise the model "
            "(a non-centred random effect).", code="DIVERGENCES"), skip_file_prefixes=CALLER)
        return ["DIVERGENCES"]

    def _augmentation_part(self, table: pd.DataFrame, name: str) -> pd.DataFrame:
        return _graph.model_table(table, self.schema_)  # as the model's fit reads a table

    # ---------------------------------------------------------------------------- adopting draws
    @classmethod
    def from_posterior(cls, posterior: Any, schema: Schema, *, n_records: int | None = None,
                       data: pd.DataFrame | None = None,
                       synthesized_records: np.ndarray | None = None,
                       **settings: Any) -> PyMCSynthesizer:
        """A fitted model from draws made by ``pm.sample`` (or elsewhere) of the model that
        ``model_function`` builds.

        Parameters
        ----------
        posterior : DataTree or mapping of name → array
            Draws of the model's free variables (group ``posterior``, dimensions ``chain`` and
            ``draw`` first), as ``pm.sample`` returns them.
        schema : Schema
            The table's columns; without roles, the synthesized columns are the model's
            observed ones.
        n_records, data, synthesized_records
            As :meth:`~bayes_risk.models._bayesian.fitted.FittedPosterior.from_posterior`;
            ``data`` (the table the draws were fitted to) also lets the model's checks run on
            it.
        **settings
            ``model_function=...`` and the other settings.

        Returns
        -------
        PyMCSynthesizer
        """
        if isinstance(schema, Schema) and not schema.synthesized:
            probe = cls(**settings)
            probe._check_settings()
            table = data if data is not None else _graph.template_table(schema, 2)
            graph = _graph.inspect_model(
                _graph.build_model(resolve_function(probe.model_function), table, schema),
                table, schema)
            schema = schema.with_roles(graph.synthesized)
        return super().from_posterior(posterior, schema, n_records=n_records, data=data,
                                      synthesized_records=synthesized_records, **settings)

    def _posterior_dims(self, posterior: xr.DataTree | None, schema: Schema,
                        data: pd.DataFrame | None = None) -> PosteriorDims:
        """The model's free variables (draws given as arrays: ``posterior`` ``None``), once the
        model function is checked against the draws' (``MODEL_FUNCTION_CHANGED``; on ``data``,
        the fitted table, when given)."""
        self._check_settings()
        fn = resolve_function(self.model_function)
        data = data if posterior is not None else None
        table = data if data is not None else _graph.template_table(schema, 2)
        model = _graph.build_model(fn, table, schema)
        if posterior is not None:
            graph = _graph.inspect_model(model, table, schema)
            self._observed_roles(schema, graph, True)
            expected = getattr(self, "_graph_digest", None)  # a saved folder's
            if expected is not None and expected != graph.digest:
                raise ValidationError(
                    f"model_function {function_path(self.model_function)!r} now builds another "
                    "likelihood than the one these draws were fitted with (its graph differs): "
                    "the draws belong to another model. Fit the model again, or restore the "
                    "function.", code="MODEL_FUNCTION_CHANGED")
            if data is not None and expected is None:
                _graph.check_probe(fn, data, schema, graph)
            self._pending = graph
        shapes = model.eval_rv_shapes()
        variables, sizes = [], {}
        for rv in model.free_RVs:
            named = model.named_vars_to_dims.get(rv.name) or ()
            shape = tuple(int(x) for x in shapes[rv.name])
            dims = tuple((named[i] if i < len(named) and named[i] else f"{rv.name}_dim_{i}")
                         for i in range(len(shape)))
            variables.append(PosteriorVariable(rv.name, dims))
            sizes.update(zip(dims, shape, strict=True))
        return PosteriorDims(sizes=sizes, variables=tuple(variables))

    def _after_posterior(self) -> None:
        graph = self._pending
        self.state_ = PyMCState(graph=graph, schema=self.schema_, tree=self.posterior_,
                                model_function=resolve_function(self.model_function),
                                n_records=int(self._n_records), data=self.data_,
                                _cache={"loglik": getattr(self, "_pending_loglik", None)})
        self._pending_loglik = None
        # what a saved folder records of the graph (the digest checked on loading)
        self._graph_digest = graph.digest
        self._observed = [o.name for o in graph.observed]

    @classmethod
    def load(cls, path: Any, *, model_function: str | Any = None) -> PyMCSynthesizer:
        """Load a model saved with :meth:`save`, built with the model function you name.

        A model folder is data: its ``model.json`` names the model function by its path, and
        importing that module runs its code, so the folder alone never decides what is
        imported (:doc:`/user_guide/security`). ``model_function`` must be the function the
        folder names; its graph is then checked against the saved one before the draws are
        used (``MODEL_FUNCTION_CHANGED``).

        Parameters
        ----------
        path : path-like
            The model's folder.
        model_function : str or callable
            ``"module:function"`` (as the folder's ``model.json`` records it under
            ``settings.model_function``) or the function itself.

        Raises
        ------
        ValidationError
            ``MODEL_FUNCTION_REQUIRED`` without ``model_function`` (the message names the
            function the folder names); ``MODEL_FUNCTION_MISMATCH`` for another function;
            ``MODEL_FUNCTION_CHANGED`` when it builds another graph; those of
            ``BayesianSynthesizer.load``.
        """
        from bayes_risk.models.persistence import load_bayesian

        def approve(folder: Any, settings: dict[str, Any]) -> dict[str, Any]:
            given = approve_function(model_function, settings.get("model_function"), folder)
            return {**settings, "model_function": given}

        return load_bayesian(cls, path, approve)

    def save(self, path: Any) -> Any:
        """Save the fitted model as a folder (``posterior.nc``, ``model.json`` naming the model
        function by its importable path), atomically.

        Raises
        ------
        ValidationError
            ``MODEL_FUNCTION_NOT_IMPORTABLE`` for a model function another process cannot
            import (a lambda, a function of ``__main__``).
        """
        self._check_fitted("save")
        importable_path(self.model_function)
        return super().save(path)

    # ---------------------------------------------------------------------------- likelihoods
    def _values(self, df: pd.DataFrame, name: str) -> dict[str, np.ndarray]:
        return _loglik.record_values(df, self.schema_, self.state_.loglik.columns, name)

    def record_loglik(self, records: pd.DataFrame, *, draw_indices: Any = None) -> np.ndarray:
        """``[H, n]`` log-likelihood of each record under each draw: the model's observed
        variables' log-density at the record's values (given its covariates under the
        conditional form)."""
        self._check_fitted("record_loglik")
        idx = self._draw_indices(draw_indices)
        st = self.state_
        comp = st.loglik
        cols = self._values(records, "records")
        return _loglik.evaluate(comp, st.draws(comp.params, idx),
                                [cols[c] for c in comp.columns], int(idx.size))

    def dataset_loglik(self, synthetic: Sequence[pd.DataFrame] | SyntheticData, *,
                       draw_indices: Any = None) -> np.ndarray:
        """``[H, m]`` ``log p(Z_(l) | Θ_h)``: the synthesized records' log-likelihoods summed
        (class P)."""
        self._check_fitted("dataset_loglik")
        frames = as_frames(synthetic)
        idx = self._draw_indices(draw_indices)
        comp = self.state_.loglik
        values = [self._values(self._synthesized_part(z, name=f"synthetic dataset {li + 1}"),
                               f"synthetic dataset {li + 1}") for li, z in enumerate(frames)]
        return _loglik.dataset_loglik(comp, self.state_.draws(comp.params, idx), values,
                                      int(idx.size))

    # ---------------------------------------------------------------------------- synthesis
    def _synthesize_one(self, draw: int, rng: np.random.Generator,
                        data: pd.DataFrame | None) -> pd.DataFrame:
        st = self.state_
        samplers = st.samplers()
        names = tuple(p for s in samplers for p in s.params)
        params = dict(zip(names, (a[0] for a in st.draws(names, np.array([draw]))),
                          strict=True))
        dtypes = st.graph.containers
        n = self.n_records
        cols = ({} if data is None else
                _graph.column_arrays(data, self.schema_, {c: dtypes[c]
                                                          for c in st.graph.covariates}))
        for c in st.graph.synthesized:  # the records' number, for the shapes
            cols[c] = np.zeros(n, dtype=dtypes[c])
        drawn = _synthesis.draw_columns(samplers, params, cols, dtypes, self.schema_, rng)
        convert = {c: output_column(self.schema_, self.dtypes_, c) for c in drawn}
        return _synthesis.released_frame(drawn, convert, st.released(data, self.dtypes_),
                                         self.schema_.names, self.synthesized_records_)

    # ---------------------------------------------------------------------------- diagnostics
    def convergence_quantities(self) -> dict[str, np.ndarray]:
        post = self.posterior_["posterior"]
        names = list(self.diagnose) if self.diagnose else [
            *(v for v in self.state_.graph.free if v in post.data_vars), LOGLIK]
        stats = (self.posterior_["sample_stats"] if "sample_stats" in self.posterior_.children
                 else None)
        out: dict[str, np.ndarray] = {}
        for v in names:
            if v == LOGLIK:
                if stats is not None and LOGLIK in stats.data_vars:
                    out[LOGLIK] = np.asarray(stats[LOGLIK].transpose("chain", "draw").values)
                continue
            da = post[v]
            dims = [d for d in da.dims if d not in ("chain", "draw")]
            arr = np.asarray(da.transpose("chain", "draw", *dims).values, dtype=np.float64)
            if not dims:
                out[v] = arr
                continue
            labels = [[str(x) for x in da[d].values] for d in dims]
            flat = arr.reshape(arr.shape[0], arr.shape[1], -1)
            for k, index in enumerate(np.ndindex(*arr.shape[2:])):
                out[f"{v}[{','.join(labels[j][i] for j, i in enumerate(index))}]"] = flat[:, :, k]
        return out


def _add_loglik_stat(dt: Any, total: np.ndarray) -> None:
    """Add ``loglik`` (the fitted records' log-likelihood at each draw) to ``sample_stats``."""
    import xarray as xr

    post = dt["posterior"]
    shape = (post.sizes["chain"], post.sizes["draw"])
    da = xr.DataArray(total.reshape(shape), dims=("chain", "draw"),
                      coords={"chain": post["chain"].values, "draw": post["draw"].values})
    if "sample_stats" in dt.children:
        ds = dt["sample_stats"].to_dataset().assign({LOGLIK: da})
    else:
        ds = xr.Dataset({LOGLIK: da})
    dt["sample_stats"] = xr.DataTree(ds)
