"""Checks that a synthesis model keeps the model contract: :func:`check_synthesizer`
(scikit-learn's ``check_estimator``) and :func:`synthesizer_checks` (its
``parametrize_with_checks``). See :doc:`/adding_a_model`.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import os
import re
import sys
import tempfile
import unittest
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from bayes_risk._constraints import Text, check_params
from bayes_risk.contract import Capabilities, ModelInfo, RiskModel, capabilities
from bayes_risk.data.validate import require_frame
from bayes_risk.exceptions import BayesRiskError, NotFittedError, ValidationError

__all__ = ["CHECKS", "CheckContext", "CheckSkipped", "SynthesizerCheckError", "check_data",
           "check_id", "check_synthesizer", "registered_synthesizer", "synthesizer_checks"]


class SynthesizerCheckError(BayesRiskError, AssertionError):
    """A model breaks the model contract; ``failures`` maps each failed check to its message."""

    default_code = "CONTRACT_VIOLATED"

    def __init__(self, message: str, failures: Mapping[str, str] | None = None) -> None:
        super().__init__(message)
        self.failures = dict(failures or {})


class CheckSkipped(unittest.SkipTest):
    """A check that does not apply to the model, with the reason (pytest reports a skip)."""


def _fail(message: str) -> None:
    raise SynthesizerCheckError(message)


def _needs_synthesis(ctx: CheckContext, what: str) -> None:
    """Skip a check of ``what`` for a model that does not synthesize."""
    if not ctx.synthesizes:
        raise CheckSkipped(
            f"{type(ctx.model).__name__} does not synthesize (it has no synthesize method: "
            f"posterior draws made elsewhere, evaluated as given), so {what} cannot be checked.")


@dataclass
class CheckContext:
    """What every check of one model shares: the unfitted ``model`` (only copies are fitted),
    the ``data``, the ``fit_kw`` of ``fit``, ``m`` datasets and the ``random_seed``."""

    model: Any
    data: pd.DataFrame
    fit_kw: dict[str, Any] = field(default_factory=dict)
    m: int = 2
    random_seed: int = 0
    _fitted: Any = field(default=None, repr=False)
    _synthetic: Any = field(default=None, repr=False)

    @property
    def synthesizes(self) -> bool:
        """Whether the model synthesizes; one that does not (``ArrayModel``) is checked as given."""
        return callable(getattr(self.model, "synthesize", None))

    def new(self) -> Any:
        """An unfitted copy of the model with the same settings."""
        get = getattr(self.model, "get_params", None)
        return type(self.model)(**get(deep=False)) if callable(get) else type(self.model)()

    def fit_new(self, seed: int | None = None) -> Any:
        """A freshly fitted copy (``fit`` must return the model itself)."""
        model = self.new()
        seed = self.random_seed if seed is None else seed
        if getattr(model, "random_seed", None) is not None:
            model.set_params(random_seed=None)  # the check's seed, given to fit
        out = model.fit(self.data, random_seed=seed, **self.fit_kw)
        if out is not model:
            _fail(f"fit returned {type(out).__name__}, not the model itself (self).")
        return model

    @property
    def fitted(self) -> Any:
        """The model fitted once with ``random_seed`` (one that does not synthesize, as given)."""
        if self._fitted is None:
            self._fitted = self.fit_new() if self.synthesizes else self.model
        return self._fitted

    @property
    def synthetic(self) -> list[pd.DataFrame]:
        """``m`` datasets synthesized by :attr:`fitted`; for a model that does not synthesize,
        ``m`` row permutations of ``data``."""
        if self._synthetic is None:
            if self.synthesizes:
                self._synthetic = list(self.fitted.synthesize(self.m, random_seed=self.random_seed))
            else:
                rng = np.random.default_rng(self.random_seed)
                self._synthetic = [
                    self.data.iloc[rng.permutation(len(self.data))].reset_index(drop=True)
                    for _ in range(self.m)]
        return self._synthetic

    @property
    def info(self) -> Capabilities:
        """What the fitted model can do (:func:`~bayes_risk.contract.capabilities`)."""
        return capabilities(self.fitted)


# ------------------------------------------------------------------------------ helpers
def _check_array(arr: Any, shape: tuple[int, ...], what: str, *, finite: bool = True) -> None:
    if not isinstance(arr, np.ndarray):
        _fail(f"{what} returned {type(arr).__name__}; expected a numpy array.")
    if arr.dtype != np.float64:
        _fail(f"{what} returned dtype {arr.dtype}; expected float64 (log space, float64).")
    if arr.shape != shape:
        _fail(f"{what} returned shape {arr.shape}; expected {shape}.")
    if finite and not np.all(np.isfinite(arr)):
        bad = int(np.count_nonzero(~np.isfinite(arr)))
        _fail(f"{what} returned {bad} value(s) that are not finite (nan or ±inf).")
    if np.any(np.isnan(arr)) or np.any(arr == np.inf):
        _fail(f"{what} returned nan or +inf log-likelihoods.")


def _same_tables(a: list[pd.DataFrame], b: list[pd.DataFrame]) -> bool:
    return len(a) == len(b) and all(
        x.reset_index(drop=True).equals(y.reset_index(drop=True)) for x, y in zip(a, b, strict=True)
    )


# ------------------------------------------------------------------------------ the checks
def check_info(ctx: CheckContext) -> None:
    """What the model declares (``info``, a :class:`ModelInfo` if present) holds for what it
    has: a record likelihood makes it a :class:`~bayes_risk.contract.RiskModel`, partial
    synthesis leaves ``synthesized_records_``, ``required`` names settings of ``__init__``."""
    cls = type(ctx.model)
    declared = getattr(cls, "info", None)
    if declared is not None and not isinstance(declared, ModelInfo):
        _fail(f"{cls.__name__}.info is {type(declared).__name__}; declare what no method shows "
              "as a class attribute info = bayes_risk.ModelInfo(...).")
    model = ctx.fitted
    info = capabilities(model)
    if info.has("record") and not isinstance(model, RiskModel):
        _fail(f"{cls.__name__} declares a record likelihood but is not a bayes_risk.RiskModel.")
    if info.partial_synthesis and info.has("record") and not hasattr(model, "synthesized_records_"):
        _fail(f"{cls.__name__} declares partial_synthesis but a fitted model has no "
              "synthesized_records_ (bool [n], or None for every record).")
    settings = set(inspect.signature(cls).parameters)
    unknown = [r for r in info.required if r != "synthesized" and r not in settings]
    if unknown:
        _fail(f"{cls.__name__}'s ModelInfo.required names {unknown}, which are neither "
              "'synthesized' nor settings of its __init__.")
    if info.has("record") and getattr(model, "model_class", None) not in ("P", "O"):
        _fail(f"model_class must be 'P' or 'O'. Got {getattr(model, 'model_class', None)!r}.")
    if info.has("record") and getattr(model, "ratio_form", None) not in ("joint", "conditional"):
        _fail("ratio_form must be 'joint' or 'conditional'. "
              f"Got {getattr(model, 'ratio_form', None)!r}.")


def check_fit(ctx: CheckContext) -> None:
    """``fit`` returns the model, sets ``schema_`` (a :class:`~bayes_risk.data.Schema` of the
    data's columns) and leaves the data unchanged; ``synthesize`` before ``fit`` raises
    :class:`~bayes_risk.exceptions.NotFittedError`."""
    _needs_synthesis(ctx, "fitting")
    from bayes_risk.data.schema import Schema

    before = ctx.data.copy()
    model = ctx.fitted
    if not ctx.data.equals(before):
        _fail("fit modified the data it was given.")
    schema = getattr(model, "schema_", None)
    if not isinstance(schema, Schema):
        _fail(f"a fitted model's schema_ is {type(schema).__name__}; expected a Schema.")
    if list(schema.names) != list(ctx.data.columns):
        _fail(f"schema_ names {schema.names}; expected the data's columns "
              f"{list(ctx.data.columns)}.")
    try:
        ctx.new().synthesize(1, random_seed=0)
    except NotFittedError:
        pass
    else:
        _fail("synthesize before fit did not raise NotFittedError.")


def check_synthesize(ctx: CheckContext) -> None:
    """``synthesize(m)`` gives a :class:`~bayes_risk.data.SyntheticData` of ``m`` tables with
    the original's columns and number of rows."""
    _needs_synthesis(ctx, "synthesis")
    from bayes_risk.data.synthetic import SyntheticData

    syn = ctx.fitted.synthesize(ctx.m, random_seed=ctx.random_seed)
    if not isinstance(syn, SyntheticData):
        _fail(f"synthesize returned {type(syn).__name__}; expected SyntheticData.")
    if syn.m != ctx.m:
        _fail(f"synthesize({ctx.m}) returned {syn.m} datasets.")
    for z in syn:
        if list(z.columns) != list(ctx.data.columns) or len(z) != len(ctx.data):
            _fail(f"a synthetic dataset has columns {list(z.columns)} and {len(z)} rows; "
                  f"expected {list(ctx.data.columns)} and {len(ctx.data)}.")


def check_same_seed(ctx: CheckContext) -> None:
    """Same seed, same synthesis: two fits with one seed synthesize the same tables with one
    seed; another synthesis seed gives other tables."""
    _needs_synthesis(ctx, "the seeds of synthesis")
    a = ctx.synthetic
    b = list(ctx.fit_new().synthesize(ctx.m, random_seed=ctx.random_seed))
    if not _same_tables(a, b):
        _fail("two fits with the same random_seed synthesized different datasets with the same "
              "random_seed.")
    c = list(ctx.fitted.synthesize(ctx.m, random_seed=ctx.random_seed + 1))
    if _same_tables(a, c):
        _fail("synthesize gave the same datasets for two different random_seed values.")


def _check_loglik(model: Any, name: str, arg: Any, width: int) -> None:
    """``model.<name>(arg)`` is float64 ``[H, width]``, finite; ``draw_indices=`` selects rows."""
    h = int(model.n_draws)
    ll = getattr(model, name)(arg)
    _check_array(ll, (h, width), name)
    idx = np.unique(np.array([0, h // 2, h - 1], dtype=np.int64))
    sub = getattr(model, name)(arg, draw_indices=idx)
    _check_array(sub, (idx.size, width), f"{name}(draw_indices=...)")
    if not np.allclose(sub, ll[idx], rtol=1e-10, atol=1e-10):
        _fail(f"{name}(draw_indices=idx) differs from {name}()[idx].")


def check_record_loglik(ctx: CheckContext) -> None:
    """``record_loglik(records)`` is float64 ``[H, n]`` and finite on the fitted records;
    ``draw_indices=`` selects rows."""
    if not ctx.info.has("record"):
        return
    h = int(ctx.fitted.n_draws)
    if h < 1:
        _fail(f"n_draws is {h}; expected a positive number of posterior draws.")
    recs = ctx.data.iloc[: min(len(ctx.data), 10)]
    _check_loglik(ctx.fitted, "record_loglik", recs, len(recs))


def check_dataset_loglik(ctx: CheckContext) -> None:
    """``dataset_loglik(datasets)`` is float64 ``[H, m]`` and finite on the model's own
    synthetic datasets; ``draw_indices=`` selects rows."""
    if ctx.info.has("dataset"):
        _check_loglik(ctx.fitted, "dataset_loglik", ctx.synthetic, ctx.m)


def check_draws(ctx: CheckContext) -> None:
    """Posterior draws follow ArviZ's conventions: ``posterior_`` (when present) has a
    ``posterior`` group with dimensions ``chain`` and ``draw`` and ``H = chains × draws``;
    ``draw_chains()`` labels the flattened draws chain by chain."""
    model = ctx.fitted
    if not ctx.info.has("record"):
        return
    h = int(model.n_draws)
    post = getattr(model, "posterior_", None)
    n_chain = None
    if post is not None:
        group = post["posterior"] if "posterior" in getattr(post, "children", {}) else getattr(
            post, "posterior", None)
        if group is None:
            _fail("posterior_ has no 'posterior' group (ArviZ DataTree / InferenceData).")
        dims = dict(group.sizes) if hasattr(group, "sizes") else dict(group.dims)
        if "chain" not in dims or "draw" not in dims:
            _fail(f"the posterior group's dimensions are {sorted(dims)}; expected 'chain' and "
                  "'draw' first (ArviZ conventions).")
        n_chain = int(dims["chain"])
        if n_chain * int(dims["draw"]) != h:
            _fail(f"n_draws = {h} but the posterior holds {dims['chain']} chain(s) x "
                  f"{dims['draw']} draws.")
    if ctx.info.chains:
        lab = np.asarray(model.draw_chains())
        if lab.shape != (h,) or not np.issubdtype(lab.dtype, np.integer):
            _fail(f"draw_chains() returned {lab.dtype} {lab.shape}; expected integers ({h},).")
        if lab.min() != 0 or np.any(np.diff(lab) < 0) or np.any(np.diff(lab) > 1):
            _fail("draw_chains() must label the chains 0..C-1 with the draws flattened chain by "
                  "chain (ArviZ's (chain, draw) order).")
        if n_chain is not None and int(lab.max()) + 1 != n_chain:
            _fail(f"draw_chains() names {int(lab.max()) + 1} chain(s); the posterior has "
                  f"{n_chain}.")


def check_optional_likelihoods(ctx: CheckContext) -> None:
    """The declared optional likelihoods have their shapes: the neighbourhood ``[H, n, G]``
    with the truth at index 0 equal to the record likelihood, the candidate likelihood
    ``[H, G]``, the own-record term ``[H, m, G]``."""
    model, info = ctx.fitted, ctx.info
    if not info.has("record"):
        return
    h = int(model.n_draws)
    recs = ctx.data.iloc[:3]
    if info.has("neighbourhood"):
        try:
            nb = model.neighbourhood_loglik(recs)
        except NotImplementedError:  # allowed: the engine falls back (protocols)
            nb = None
        if nb is not None:
            if not (isinstance(nb, np.ndarray) and nb.ndim == 3 and nb.shape[:2] == (h, 3)):
                _fail(f"neighbourhood_loglik returned shape {getattr(nb, 'shape', None)}; "
                      f"expected ({h}, 3, G).")
            _check_array(nb[:, :, 0].copy(), (h, 3), "neighbourhood_loglik[..., 0] (the truth)")
            if not np.allclose(nb[:, :, 0], model.record_loglik(recs), rtol=1e-8, atol=1e-8):
                _fail("neighbourhood_loglik[:, :, 0] (the true record) differs from "
                      "record_loglik.")
            if info.has("neighbourhood_buffer") and nb.shape[2] != int(model.neighbourhood_size()):
                _fail(f"neighbourhood_size() is {model.neighbourhood_size()}; the neighbourhood "
                      f"has {nb.shape[2]} candidates.")
    if info.has("candidate"):
        cand = recs.iloc[[0, 1, 2]].reset_index(drop=True)
        out = model.candidate_loglik(recs.iloc[0], cand)
        _check_array(np.asarray(out), (h, 3), "candidate_loglik", finite=False)
    if info.has("own_record") and getattr(model, "model_class", "P") == "O":
        cand = recs.iloc[[0, 1]].reset_index(drop=True)
        out = model.own_record_delta(recs.iloc[0], cand, ctx.synthetic)
        _check_array(np.asarray(out), (h, ctx.m, 2), "own_record_delta", finite=False)


def check_posterior_replicates(ctx: CheckContext) -> None:
    """``posterior_replicates`` yields lists of tables of the synthesized columns, one row per
    record, the same for the same seed."""
    model = ctx.fitted
    if not ctx.info.posterior_replicates:
        return
    first = next(iter(model.posterior_replicates(2, chunk_size=2, random_seed=1)))
    again = next(iter(model.posterior_replicates(2, chunk_size=2, random_seed=1)))
    if not isinstance(first, list) or len(first) != 2:
        _fail("posterior_replicates(2, chunk_size=2) did not yield a list of 2 tables.")
    for t in first:
        if not isinstance(t, pd.DataFrame) or len(t) != len(ctx.data):
            _fail("a posterior replicate is not a table with one row per record.")
    if not _same_tables(first, again):
        _fail("posterior_replicates gave different replicates for the same random_seed.")


def check_convergence(ctx: CheckContext) -> None:
    """``convergence_summary()`` is the record the command line and the results read."""
    if not ctx.info.convergence:
        return
    summ = ctx.fitted.convergence_summary()
    need = {"passed", "warnings", "failed_checks", "chains", "draws", "tune", "thin",
            "quantities"}
    if not isinstance(summ, dict) or not need <= set(summ):
        _fail(f"convergence_summary() lacks {sorted(need - set(summ or {}))}.")


def check_persistence(ctx: CheckContext) -> None:
    """A saved model loads back — through :func:`bayes_risk.models.load_model` when its
    ``model.json`` names a registered synthesizer — with the same likelihoods and synthesis."""
    if not ctx.info.persistence:
        return
    from bayes_risk.models.persistence import SETTINGS_FILE, read_model_meta
    from bayes_risk.registry import list_synthesizers

    model = ctx.fitted
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "model"
        model.save(folder)
        _, meta = read_model_meta(folder)
        name = meta.get("method")
        if not isinstance(name, str):
            _fail(f"save wrote no registered name under 'method' in {SETTINGS_FILE}.")
        if name in list_synthesizers():
            from bayes_risk.models import load_model

            back = load_model(folder, model_function=getattr(model, "model_function", None))
        else:
            from bayes_risk.models.base import load_like

            back = load_like(model, folder)
        if type(back) is not type(model):
            _fail(f"the saved model loaded back as {type(back).__name__}.")
        if ctx.info.has("record"):
            recs = ctx.data.iloc[:5]
            if not np.array_equal(back.record_loglik(recs), model.record_loglik(recs)):
                _fail("the loaded model's record_loglik differs from the saved model's.")
        again = list(back.synthesize(ctx.m, random_seed=ctx.random_seed)) if ctx.synthesizes \
            else ctx.synthetic
        if not _same_tables(again, ctx.synthetic):
            _fail("the loaded model synthesizes other datasets with the same random_seed.")


#: the checks, in the order they run
CHECKS: tuple[Callable[[CheckContext], None], ...] = (
    check_info,
    check_fit,
    check_synthesize,
    check_same_seed,
    check_record_loglik,
    check_dataset_loglik,
    check_draws,
    check_optional_likelihoods,
    check_posterior_replicates,
    check_convergence,
    check_persistence)


def check_data(model: Any, *, n: int = 60, random_seed: int = 0) -> pd.DataFrame:
    """A small table ``model`` can be checked on: its ``schema_``'s columns for a model that has
    one unfitted (``ArrayModel``), else two categorical columns and a count (or, for
    ``categorical_only``, a third categorical) column.

    Parameters
    ----------
    model : object or class
    n : int
        Number of records.
    random_seed : int

    Returns
    -------
    DataFrame
    """
    rng = np.random.default_rng(random_seed)
    schema = getattr(model, "schema_", None) if not callable(getattr(model, "fit", None)) \
        else None
    if schema is not None:
        cols: dict[str, Any] = {}
        for spec in schema:
            if spec.is_categorical:
                cols[spec.name] = pd.Categorical(
                    [spec.levels[i] for i in rng.integers(0, spec.n_levels, n)],
                    categories=list(spec.levels), ordered=spec.type == "ordinal")
            elif spec.type == "count":
                cols[spec.name] = rng.poisson(3.0, n)
            else:
                cols[spec.name] = rng.normal(0.0, 1.0, n)
        return pd.DataFrame(cols)
    a = rng.integers(0, 3, n)
    b = (a + rng.integers(0, 2, n)) % 2  # related to a, so that the models have something to fit
    table = {"a": pd.Categorical(np.array(["x", "y", "z"])[a], categories=["x", "y", "z"]),
             "b": pd.Categorical(np.array(["p", "q"])[b], categories=["p", "q"])}
    if capabilities(model).categorical_only:
        c = rng.integers(0, 2, n)
        table["c"] = pd.Categorical(np.array(["u", "v"])[c], categories=["u", "v"])
    else:
        table["n"] = rng.poisson(2.0 + a)
    return pd.DataFrame(table)


def _context(model_or_class: Any, data: pd.DataFrame | None, fit_kw: Mapping[str, Any] | None,
             m: int, random_seed: int, expected_failed_checks: Mapping[str, str] | None
             ) -> tuple[CheckContext, dict[str, str]]:
    """The checks' context and the checks expected to fail, with their reasons."""
    expected = dict(expected_failed_checks or {})
    names = [c.__name__ for c in CHECKS]
    unknown = sorted(set(expected) - set(names))
    if unknown:
        raise ValidationError(
            f"expected_failed_checks names {unknown}, which are not checks; expected names "
            f"among {names}.", code="INVALID_ARGUMENT")
    model = model_or_class() if inspect.isclass(model_or_class) else model_or_class
    fit_kw = dict(fit_kw or {})
    if data is None:
        data = check_data(model, random_seed=random_seed)
        if "synthesized" in capabilities(model).required:  # what the model cannot default
            fit_kw.setdefault("synthesized", list(data.columns))
    require_frame(data, 'data')
    return CheckContext(model, data, fit_kw, int(m), int(random_seed)), expected


def _bound(check: Callable[[CheckContext], None], ctx: CheckContext,
           reason: str | None = None) -> Callable[[Any], None]:
    @functools.wraps(check)
    def run(model: Any = None) -> None:
        try:
            check(ctx)
        except CheckSkipped:
            raise
        except Exception as err:  # an expected failure is reported as a skip with its reason
            if reason is None:
                raise
            raise CheckSkipped(f"{check.__name__} fails as expected ({reason}): {err}") from err

    return run


def synthesizer_checks(
    model_or_class: Any,
    data: pd.DataFrame | None = None,
    *,
    fit_kw: Mapping[str, Any] | None = None,
    m: int = 2,
    random_seed: int = 0,
    expected_failed_checks: Mapping[str, str] | None = None,
) -> Iterator[tuple[Any, Callable[[Any], None]]]:
    """``(model, check)`` pairs for ``pytest.mark.parametrize`` (scikit-learn's
    ``parametrize_with_checks``): call ``check(model)``; the checks share one fit. The
    parameters are those of :func:`check_synthesizer`.

    Yields
    ------
    tuple
        ``(model, check)``; ``check.__name__`` names the check (see :func:`check_id`).
    """
    ctx, expected = _context(model_or_class, data, fit_kw, m, random_seed,
                             expected_failed_checks)
    for check in CHECKS:
        yield ctx.model, _bound(check, ctx, expected.get(check.__name__))


def check_id(obj: Any) -> str | None:
    """pytest ids of :func:`synthesizer_checks`' pairs: the class name and the check name."""
    if callable(obj) and getattr(obj, "__name__", "").startswith("check_"):
        return obj.__name__
    if not callable(obj) or not inspect.isfunction(obj):
        return type(obj).__name__
    return None


def check_synthesizer(
    model_or_class: Any,
    data: pd.DataFrame | None = None,
    *,
    fit_kw: Mapping[str, Any] | None = None,
    m: int = 2,
    random_seed: int = 0,
    expected_failed_checks: Mapping[str, str] | None = None,
) -> list[str]:
    """Check that a synthesis model keeps the model contract (scikit-learn's ``check_estimator``).

    Runs every check of ``bayes_risk.testing.CHECKS`` (one shared fit) and reports all
    failures at once (:doc:`/adding_a_model`).

    Parameters
    ----------
    model_or_class : object or class
        An unfitted model (small settings keep the checks fast) or a class (its defaults).
    data : DataFrame, optional
        A small table the model can fit (default: :func:`check_data`).
    fit_kw : dict, optional
        Further keywords of ``fit`` (``synthesized=``, ``schema=``).
    m : int
        Synthetic datasets made by the checks (at most the model's number of draws).
    random_seed : int
        Seed of the fits and syntheses.
    expected_failed_checks : dict of str to str, optional
        ``{check name: reason}`` of the checks the model is known to fail: not raised
        (:func:`synthesizer_checks` reports them as skips).

    Returns
    -------
    list of str
        The checks that passed, in order (not those that do not apply, nor expected failures).

    Raises
    ------
    SynthesizerCheckError
        Naming every unexpected failure and why (code ``CONTRACT_VIOLATED``).

    Examples
    --------
    >>> from bayes_risk.testing import check_synthesizer
    >>> check_synthesizer(MyModel(draws=50))  # doctest: +SKIP
    ['check_info', 'check_fit', ...]
    >>> check_synthesizer(MyModel(draws=50), expected_failed_checks={  # doctest: +SKIP
    ...     "check_same_seed": "draws from the operating system's entropy"})
    """
    ctx, expected = _context(model_or_class, data, fit_kw, m, random_seed,
                             expected_failed_checks)
    failures: dict[str, str] = {}
    passed: list[str] = []
    for check in CHECKS:
        try:
            check(ctx)
        except CheckSkipped:
            continue  # does not apply to this model (synthesizer_checks reports the reason)
        except SynthesizerCheckError as err:
            failures[check.__name__] = str(err)
        except Exception as err:  # a model's own error is a failure of the check that met it
            failures[check.__name__] = f"{type(err).__name__}: {err}"
            if check is check_fit and ctx._fitted is None:
                break  # nothing else can run without a fit
        else:
            passed.append(check.__name__)
    failures = {k: v for k, v in failures.items() if k not in expected}
    if failures:
        name = type(ctx.model).__name__
        lines = "\n".join(f"  {k}: {v}" for k, v in failures.items())
        raise SynthesizerCheckError(
            f"{name} breaks the model contract in {len(failures)} check(s):\n{lines}", failures)
    return passed


#: the arguments of registered_synthesizer: entry-point names and values
_REGISTERED = {
    "name": Text("letters, digits, '.', '_' or '-'", r"[A-Za-z0-9][A-Za-z0-9._-]*"),
    "target": Text("'module:Class'", r"[\w.]+:[\w.]+"),
    "options": [Text("'module:OPTIONS'", r"[\w.]+:[\w.]+"), None],
}


@contextlib.contextmanager
def registered_synthesizer(
    name: str, target: str, *, path: str | os.PathLike[str] | None = None,
    options: str | None = None,
) -> Iterator[Path]:
    """Register a synthesizer under ``name`` for the duration of a ``with`` block.

    Writes the entry-point metadata ``pip install`` would into a temporary folder on
    ``sys.path`` (a subprocess sees it with that folder on ``PYTHONPATH``).
    See :doc:`/adding_a_model`.

    Parameters
    ----------
    name : str
        The registered name (``bayes-risk fit --method NAME``).
    target : str
        ``"module:Class"``.
    options : str, optional
        ``"module:OPTIONS"``: the model's options, a tuple of
        :func:`bayes_risk.registry.ModelOption` entries (or the table of them).
    path : path-like, optional
        A folder to put on ``sys.path`` as well, from which ``module`` imports.

    Yields
    ------
    Path
        The folder holding the metadata (removed from ``sys.path`` and deleted afterwards).
    """
    from bayes_risk.registry import GROUP, OPTIONS_GROUP

    check_params(dict(name=name, target=target, options=options), _REGISTERED)
    added = [str(Path(path).resolve())] if path is not None else []
    with tempfile.TemporaryDirectory(prefix="bayes_risk_ep_") as tmp:
        dist = "bayes_risk_registered_" + re.sub(r"[^A-Za-z0-9]", "_", name)
        info = Path(tmp) / f"{dist}-0.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(
            f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0\n", encoding="utf-8")
        groups = f"[{GROUP}]\n{name} = {target}\n"
        if options is not None:
            groups += f"\n[{OPTIONS_GROUP}]\n{name} = {options}\n"
        (info / "entry_points.txt").write_text(groups, encoding="utf-8")
        entries = [tmp, *added]
        sys.path[:0] = entries
        try:
            yield Path(tmp)
        finally:
            for e in entries:
                with contextlib.suppress(ValueError):
                    sys.path.remove(e)
