"""The synthesizer contract, checked for every registered synthesizer.

In the style of scikit-learn's ``parametrize_with_checks``: every check below runs against every
name of :func:`bayes_risk.models.list_synthesizers`, each with a small table it can model and tiny
MCMC runs (seconds per model). A synthesizer registered without a case here fails
``test_every_registered_synthesizer_has_a_case``.

The contract (``bayes_risk.models.base``): ``__init__(..., random_seed=None)``;
``fit(data, *, schema=None, synthesized=None, records=None, random_seed=None)`` returns ``self``
and sets attributes ending in ``_``; ``synthesize(m, *, random_seed=None)`` returns ``m`` tables
with the original's columns, dtypes, levels and row count; same seed → same output; the
``random_seed`` setting is the seed of both methods (``fit`` refuses another one:
``SEED_CONFLICT``); scikit-learn's estimator conventions hold (``get_params(deep=True)`` /
``set_params``, settings stored unchanged, nothing but them set in ``__init__``,
``sklearn.base.clone`` reproduces the fit); errors are bayes_risk exceptions naming the
argument.
"""

from __future__ import annotations

import contextlib
import inspect
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from typing import Any

import numpy as np
import pandas as pd
import pytest

from bayes_risk.data import SyntheticData
from bayes_risk.exceptions import (
    DataWarning,
    NotFittedError,
    NotSupportedError,
    SchemaError,
    ValidationError,
)
from bayes_risk.models import BaseSynthesizer, Sampling, get_synthesizer, list_synthesizers

# Every Bayesian fit here has a few dozen draws: far too short to converge, by design (the
# contract is about shapes, seeds and errors; convergence is tested in test_dpmpm_convergence).
pytestmark = pytest.mark.filterwarnings("ignore::bayes_risk.exceptions.ConvergenceWarning")

N = 80


def _table() -> pd.DataFrame:
    """Mixed table: three categorical columns, two counts, one continuous column."""
    rng = np.random.default_rng(20)
    sex = rng.choice(["F", "M"], N)
    mar = rng.choice(["married", "single", "widowed"], N, p=[0.5, 0.35, 0.15])
    region = rng.choice(["north", "south", "east", "west"], N, p=[0.4, 0.3, 0.2, 0.1])
    kids = rng.poisson(1.0 + (mar == "married"), N)
    visits = rng.poisson(2.0 + 0.5 * kids, N)
    income = np.round(rng.lognormal(10 + 0.2 * (sex == "M"), 0.4, N), 2)
    df = pd.DataFrame({
        "sex": pd.Categorical(sex), "mar": pd.Categorical(mar), "region": pd.Categorical(region),
        "kids": kids, "visits": visits, "income": income,
    })
    return df


@dataclass(frozen=True)
class Case:
    """How to exercise one registered synthesizer on a small table."""

    settings: dict[str, Any]
    columns: tuple[str, ...]
    #: keywords of an ordinary fit (beyond data and random_seed)
    fit_kw: dict[str, Any] = field(default_factory=dict)
    #: columns synthesized in the partial-synthesis check (records: the even positions);
    #: ``None``: the model refuses partial synthesis (``PARTIAL_NOT_PRIVATE``)
    partial: tuple[str, ...] | None = ()
    #: warning the partial synthesis is expected to give (class, message pattern)
    partial_warns: tuple[type[Warning], str] | None = None

    def data(self) -> pd.DataFrame:
        return _table()[list(self.columns)]


_MCMC = {"sampling": Sampling(tune=10, draws=20, chains=1, cores=1), "progressbar": False}

CASES: dict[str, Case] = {
    "cart": Case({"min_leaf": 5}, ("sex", "mar", "region", "kids", "visits", "income"),
                 {"synthesized": ["mar", "kids", "income"]}, ("kids", "income")),
    "rf": Case({"n_trees": 10}, ("sex", "mar", "region", "kids", "income"),
               {"synthesized": ["sex", "mar"]}, ("mar",)),
    # recipients chosen by records= rather than by the cells: small cells remain, and it says so
    "pmm": Case({"identifying": ["sex", "mar", "region"], "threshold": 2},
                ("sex", "mar", "region", "kids", "income"), {}, ("mar",),
                (DataWarning, "cell of the identifying variables' table still has only")),
    "dpmpm": Case({"n_components": 3, **_MCMC}, ("sex", "mar", "region"), {}, ("mar",)),
    "poisson-mixture": Case({"n_components": 3, **_MCMC}, ("kids", "visits"), {}, ("kids",)),
    "regression": Case({"posterior_method": "laplace", **_MCMC}, ("sex", "kids", "income"), {},
                       ("income",)),
    # kids and income observed, sex a covariate (tests/_pymc_models.py)
    "pymc": Case({"model_function": "_pymc_models:contract_model", **_MCMC},
                 ("sex", "kids", "income"), {}, ("kids", "income")),
    # exact draws; full synthesis only (released true values have no ε): partial=None
    "dp-multinomial": Case({"epsilon": 2.0, "sampling": Sampling(draws=20, chains=1)},
                           ("sex", "mar", "region"), {}, None),
}

NAMES = list_synthesizers()


def _make(name: str, **settings: Any) -> BaseSynthesizer:
    return get_synthesizer(name)(**{**CASES[name].settings, **settings})


@cache
def _fitted(name: str, fit_seed: int | None = 0, init_seed: int | None = None) -> BaseSynthesizer:
    """A fitted model, shared between checks (fit is deterministic given the seeds)."""
    case = CASES[name]
    model = _make(name, random_seed=init_seed)
    assert model.fit(case.data(), random_seed=fit_seed, **case.fit_kw) is model
    return model


def _same(a: SyntheticData, b: SyntheticData) -> bool:
    return a.m == b.m and all(x.equals(y) for x, y in zip(a, b, strict=True))


# ------------------------------------------------------------------------------ the checks
def check_signatures(name: str) -> None:
    cls = get_synthesizer(name)
    assert issubclass(cls, BaseSynthesizer) and cls.method_name == name
    init = inspect.signature(cls.__init__).parameters
    assert init["random_seed"].default is None
    fit = list(inspect.signature(cls.fit).parameters.values())
    assert [p.name for p in fit[:2]] == ["self", "data"]
    kw = {p.name: p for p in fit[2:]}
    for arg in ("schema", "synthesized", "records", "random_seed"):
        assert kw[arg].kind is inspect.Parameter.KEYWORD_ONLY and kw[arg].default is None, arg
    syn = list(inspect.signature(cls.synthesize).parameters.values())
    assert [p.name for p in syn] == ["self", "m", "random_seed"]
    assert syn[2].kind is inspect.Parameter.KEYWORD_ONLY and syn[2].default is None


def check_fit_returns_self_and_keeps_settings(name: str) -> None:
    """scikit-learn's ``check_dont_overwrite_parameters``: fit leaves every setting the very
    object it was (not only an equal one) and adds only attributes ending or starting in _."""
    case = CASES[name]
    model = _make(name)
    before = model.get_params(deep=False)
    unfitted = set(vars(model))
    assert model.fit(case.data(), random_seed=1, **case.fit_kw) is model
    after = model.get_params(deep=False)
    assert after.keys() == before.keys()
    assert all(after[k] is v for k, v in before.items()), "fit changed a setting"
    new = [k for k in vars(model) if k not in unfitted]
    assert new, "fit set no attribute"
    public = [k for k in new if not k.startswith("_")]
    assert public and all(k.endswith("_") for k in public), public


def check_sklearn_estimator_api(name: str) -> None:
    """The API checks of scikit-learn's ``check_estimator`` that apply to a synthesizer (the
    others feed numeric ``X``/``y`` arrays to ``fit``): cloneable, repr, nothing but the
    settings set in ``__init__``, defaults stored unchanged, ``get_params(deep=False)`` within
    ``get_params(deep=True)``, ``set_params`` stores what it is given, and neither
    ``__init__`` nor ``set_params`` validates."""
    from sklearn.utils import estimator_checks as ec

    model = _make(name)
    for check in (ec.check_estimator_cloneable, ec.check_estimator_repr,
                  ec.check_no_attributes_set_in_init, ec.check_parameters_default_constructible,
                  ec.check_get_params_invariance, ec.check_set_params):
        check(name, model)
    _check_do_not_raise_errors_in_init_or_set_params(type(model))


def _check_do_not_raise_errors_in_init_or_set_params(cls: type) -> None:
    """scikit-learn's ``check_do_not_raise_errors_in_init_or_set_params`` over the named
    parameters: its smoke values, each given to every parameter, neither in ``__init__`` nor in
    ``set_params`` raise. scikit-learn's own check also passes a value named after a ``**``
    parameter (the tree synthesizers' ``**tree_options``, the keyword form of
    ``TreeOptions``' fields, ``CARTSynthesizer(min_leaf=5)``), which is no setting: a name the
    class does not take is Python's ``TypeError``, as for any constructor."""
    import inspect

    params = [k for k, p in inspect.signature(cls).parameters.items()
              if p.kind is not p.VAR_KEYWORD]
    for value in (-1, 3.0, "helloworld", np.array([1.0, 4.0]), [1], {}, []):
        given = dict.fromkeys(params, value)
        cls(**given).set_params(**given)


def check_clone(name: str) -> None:
    """``sklearn.base.clone`` of a fitted model is an unfitted model with the same settings,
    and fitting it with the same data reproduces the fit (the seed is a setting)."""
    from sklearn.base import clone
    from sklearn.exceptions import NotFittedError as SklearnNotFitted
    from sklearn.utils.validation import check_is_fitted

    case = CASES[name]
    fitted = _fitted(name, fit_seed=None, init_seed=0)
    check_is_fitted(fitted)
    copy = clone(fitted)
    assert type(copy) is type(fitted) and copy.get_params() == fitted.get_params()
    with pytest.raises(SklearnNotFitted):
        check_is_fitted(copy)
    with pytest.raises(NotFittedError):
        copy.synthesize(1)
    assert not [k for k in vars(copy) if k.endswith("_")], "a clone has no fitted attribute"
    copy.fit(case.data(), **case.fit_kw)
    assert _same(copy.synthesize(2, random_seed=4), fitted.synthesize(2, random_seed=4))
    changed = clone(fitted).set_params(random_seed=1)
    assert changed.get_params()["random_seed"] == 1 and fitted.random_seed == 0
    with pytest.raises(ValidationError, match="has no setting 'nope'; valid settings"):
        clone(fitted).set_params(nope=1)


def check_unfitted_synthesize_raises(name: str) -> None:
    with pytest.raises(NotFittedError, match="not fitted.*'fit'.*'synthesize'"):
        _make(name).synthesize(1, random_seed=0)


def check_synthesize_keeps_columns_dtypes_levels(name: str) -> None:
    data = CASES[name].data()
    syn = _fitted(name).synthesize(2, random_seed=1)
    assert isinstance(syn, SyntheticData) and syn.m == 2 and syn.method == name
    json.dumps(syn.settings)  # the manifest is JSON
    for z in syn:
        assert list(z.columns) == list(data.columns) and len(z) == len(data)
        for c in data.columns:
            assert z[c].dtype == data[c].dtype, (c, z[c].dtype, data[c].dtype)
            if isinstance(data[c].dtype, pd.CategoricalDtype):
                assert list(z[c].cat.categories) == list(data[c].cat.categories), c
                assert z[c].notna().all(), c
    synthesized = syn.schema.synthesized
    assert synthesized
    assert any(not z[synthesized].equals(data[synthesized]) for z in syn), "nothing synthesized"


def check_same_seed_same_output(name: str) -> None:
    model = _fitted(name)
    a = model.synthesize(2, random_seed=5)
    assert _same(a, model.synthesize(2, random_seed=5))
    assert not _same(a, model.synthesize(2, random_seed=6))
    assert a.random_seed == 5


def check_fit_is_reproducible(name: str) -> None:
    case = CASES[name]
    again = _make(name).fit(case.data(), random_seed=0, **case.fit_kw)
    assert _same(again.synthesize(2, random_seed=3), _fitted(name).synthesize(2, random_seed=3))


def check_seed_setting_is_the_default(name: str) -> None:
    """``random_seed`` in ``__init__`` seeds fit and synthesize; ``fit(random_seed=)`` is the
    same seed given to a model created without one (another one is refused: the fit would not
    be the one ``get_params`` describes); a seed given to ``synthesize`` wins."""
    case = CASES[name]
    by_setting = _fitted(name, fit_seed=None, init_seed=0)
    by_call = _fitted(name, fit_seed=0)
    syn = by_setting.synthesize(2)
    assert syn.random_seed == 0
    assert _same(syn, by_call.synthesize(2, random_seed=0))
    assert _same(by_setting.synthesize(2, random_seed=4), by_call.synthesize(2, random_seed=4))
    assert by_setting.get_params()["random_seed"] == 0
    assert by_call.get_params()["random_seed"] is None
    model = _make(name, random_seed=123)
    with pytest.raises(ValidationError, match="created with random_seed=123 and fit was given "
                       "random_seed=0") as err:
        model.fit(case.data(), random_seed=0, **case.fit_kw)
    assert err.value.code == "SEED_CONFLICT"
    assert not [k for k in vars(model) if k.endswith("_")], "a refused fit leaves no state"
    same = _make(name, random_seed=0).fit(case.data(), random_seed=0, **case.fit_kw)
    assert _same(same.synthesize(2, random_seed=4), by_call.synthesize(2, random_seed=4))


def check_bad_arguments(name: str) -> None:
    case = CASES[name]
    data = case.data()
    for kw, what in (
        ({"data": data.to_numpy()}, "data must be a pandas DataFrame"),
        ({"data": data, "schema": {"sex": "categorical"}}, "schema must be a (bayes_risk )?Schema"),
        ({"data": data, "random_seed": 1.5}, "random_seed must be an integer seed"),
    ):
        with pytest.raises(ValidationError, match=what):
            _make(name).fit(**kw, **case.fit_kw)
    with pytest.raises(ValidationError, match="random_seed must be an integer seed"):
        _make(name, random_seed=1.5).fit(data, **case.fit_kw)
    fitted = _fitted(name)
    with pytest.raises(ValidationError, match="m must be an integer >= 1"):
        fitted.synthesize(0, random_seed=0)
    with pytest.raises(ValidationError, match="random_seed"):
        fitted.synthesize(1, random_seed="seed")


def check_bad_synthesized(name: str) -> None:
    case = CASES[name]
    data = case.data()
    first = data.columns[0]
    for bad, exc, what in (
        ([], ValidationError, "synthesized .* must be a non-empty sequence of column names"),
        ([first, first], ValidationError, "synthesized lists column"),
        (3, ValidationError, r"synthesized \(a column name, or a sequence of them\) must be"),
        (["nope"], SchemaError, "synthesized: column 'nope' is not in the data"),
    ):
        kw = {**case.fit_kw, "synthesized": bad}
        with pytest.raises(exc, match=what):
            _make(name).fit(data, random_seed=0, **kw)


def check_bad_records(name: str) -> None:
    case = CASES[name]
    data = case.data()
    for bad, what in (
        ([0, N], "records.*outside|records.*position"),
        (np.ones(3, dtype=bool), "records.*one (flag|entry) per record"),
        (["a"], "records must be a boolean mask"),
    ):
        with pytest.raises(ValidationError, match=what):
            _make(name).fit(data, records=bad, random_seed=0, **case.fit_kw)


def check_partial_synthesis(name: str) -> None:
    """Unsynthesized columns and unselected records are released unchanged."""
    case = CASES[name]
    data = case.data()
    selected = np.arange(N) % 2 == 0
    if case.partial is None:  # refused, with the reason
        for kw in ({"records": selected}, {"synthesized": [data.columns[0]]}):
            with pytest.raises(NotSupportedError) as err:
                _make(name).fit(data, random_seed=0, **kw)
            assert err.value.code == "PARTIAL_NOT_PRIVATE"
        return
    model = _make(name).fit(data, synthesized=list(case.partial), records=selected,
                            random_seed=0, **{k: v for k, v in case.fit_kw.items()
                                              if k != "synthesized"})
    expected = case.partial_warns
    with pytest.warns(expected[0], match=expected[1]) if expected else contextlib.nullcontext():
        syn = model.synthesize(2, random_seed=1)
    np.testing.assert_array_equal(syn.synthesized_records, selected)
    assert syn.schema.synthesized == list(case.partial)
    others = [c for c in data.columns if c not in case.partial]
    changed = False
    for z in syn:
        pd.testing.assert_frame_equal(z[others], data[others])
        pd.testing.assert_frame_equal(z[~selected], data[~selected])
        changed |= not z[selected].equals(data[selected])
    assert changed, "no selected record was synthesized"
    assert syn.generation == "partial"  # the combining rules of partial synthesis apply


#: whether each synthesizer draws every dataset with its own parameter draw (proper synthesis)
PROPER = {"cart": True, "rf": False, "pmm": False, "dpmpm": True, "poisson-mixture": True,
          "regression": True, "pymc": True, "dp-multinomial": True}


def check_generation_recorded(name: str) -> None:
    """The release records its generation scheme and properness (they pick the combining
    rules of the utility measures), and the manifest keeps them."""
    data = CASES[name].data()
    syn = _fitted(name).synthesize(2, random_seed=1)
    everything = set(syn.schema.synthesized) == set(data.columns) and (
        syn.synthesized_records is None or bool(syn.synthesized_records.all()))
    assert syn.generation == ("full-same-n" if everything else "partial")
    assert syn.proper is PROPER[name]
    man = syn.manifest()
    assert man["generation"] == syn.generation and man["proper"] is PROPER[name]


CHECKS: list[Callable[[str], None]] = [
    check_signatures,
    check_fit_returns_self_and_keeps_settings,
    check_sklearn_estimator_api,
    check_clone,
    check_unfitted_synthesize_raises,
    check_synthesize_keeps_columns_dtypes_levels,
    check_same_seed_same_output,
    check_fit_is_reproducible,
    check_seed_setting_is_the_default,
    check_bad_arguments,
    check_bad_synthesized,
    check_bad_records,
    check_partial_synthesis,
    check_generation_recorded,
]


def test_every_registered_synthesizer_has_a_case():
    assert set(NAMES) == set(CASES), "register a Case for every synthesizer"


@pytest.mark.parametrize("check", CHECKS, ids=lambda c: c.__name__)
@pytest.mark.parametrize("name", NAMES)
def test_synthesizer_contract(name: str, check: Callable[[str], None]) -> None:
    check(name)


# ------------------------------------------------------------------------------ call forms
@pytest.mark.parametrize("name", ["cart", "rf", "pmm", "regression"])
def test_pre_release_call_forms_are_type_errors(name):
    """``schema``/``synthesized`` and the synthesis seed are keyword-only and ``records=`` has
    no former spelling: the package was never released, so there is no deprecation path."""
    data = CASES[name].data()
    with pytest.raises(TypeError):
        _make(name).fit(data, None)
    with pytest.raises(TypeError):
        _make(name).fit(data, synthesized_records=np.arange(N) < 40)
    with pytest.raises(TypeError):
        _make(name).synthesize(2, 7)


# ------------------------------------------------- the published checks (bayes_risk.testing)
def _published_checks() -> list[Any]:
    """Every check of ``bayes_risk.testing`` for every built-in synthesizer, one fit shared
    between a model's checks (the same small cases and tiny MCMC runs as above)."""
    from bayes_risk.testing import synthesizer_checks

    return [
        pytest.param(model, check, id=f"{name}-{check.__name__}")
        for name in NAMES if name in CASES
        for model, check in synthesizer_checks(_make(name), CASES[name].data(),
                                               fit_kw=CASES[name].fit_kw)
    ]


@pytest.mark.parametrize("model, check", _published_checks())
def test_builtin_synthesizers_pass_check_synthesizer(model, check):
    """bayes_risk.testing.check_synthesizer's checks hold for every built-in synthesizer:
    ModelInfo consistent with the members, likelihood shapes and dtypes, ArviZ draw dims,
    same seed same synthesis, save/load round trip."""
    check(model)
