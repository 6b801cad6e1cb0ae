"""The posterior every Bayesian family declares (``posterior_variables``), checked by one
validator: for every declared variable of every family, a posterior made invalid in each way
(wrong dims, wrong shape, values off its constraint, missing) is refused with
``POSTERIOR_INVALID`` naming the variable — the invalid posteriors derived from the
declarations, as scikit-learn's ``generate_invalid_param_val`` derives invalid settings."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import xarray as xr

from bayes_risk.data import infer_schema
from bayes_risk.exceptions import ValidationError
from bayes_risk.models import (
    DPMPM,
    DPMultinomial,
    PoissonMixture,
    PyMCSynthesizer,
    Sampling,
    SequentialRegression,
)
from bayes_risk.models._bayesian.posterior import (
    CONSTRAINTS,
    PosteriorDims,
    PosteriorVariable,
    check_posterior,
    concrete,
)

pytestmark = pytest.mark.filterwarnings("ignore::bayes_risk.exceptions.BayesRiskWarning")

N = 20


def _categorical() -> pd.DataFrame:
    return pd.DataFrame({"a": pd.Categorical(list("xyxy") * 5),
                         "b": pd.Categorical(list("pqrr") * 5)})


def _dpmpm(rng):
    post = {"phi_0": rng.dirichlet(np.ones(2), (1, 4, 2)),
            "phi_1": rng.dirichlet(np.ones(3), (1, 4, 2)),
            "V": rng.beta(1.0, 1.0, (1, 4, 1)), "alpha": rng.gamma(2.0, 1.0, (1, 4))}
    return DPMPM, post, infer_schema(_categorical()), {"n_records": N, "n_components": 2}


def _poisson(rng):
    data = pd.DataFrame({"x": rng.poisson(3, N), "y": rng.poisson(9, N)})
    post = {"lam": rng.gamma(3.0, 1.0, (1, 4, 2, 2)), "v": rng.beta(1.0, 1.0, (1, 4, 1)),
            "alpha": rng.gamma(2.0, 1.0, (1, 4))}
    return PoissonMixture, post, infer_schema(data), {"n_records": N, "n_components": 2}


def _dp_multinomial(rng):
    post = {"log_theta": np.log(rng.dirichlet(np.ones(6), (1, 4)))}
    return DPMultinomial, post, infer_schema(_categorical()), {"n_records": N, "alpha": 1.0}


def _seqreg(rng):
    data = _categorical().assign(c=pd.Categorical(list("uvw") * 6 + ["u", "v"]),
                                 y=rng.normal(size=N))
    model = SequentialRegression(
        families={"b": "categorical"}, posterior_method={"a": "laplace", "b": "exact",
                                                         "c": "laplace", "y": "exact"},
        sampling=Sampling(draws=4), progressbar=False).fit(data, random_seed=1)
    assert set(model.families_.values()) == {"categorical", "bernoulli_logit",
                                             "multinomial_logit", "normal"}
    return SequentialRegression, model.posterior_, model.schema_, {
        "n_records": N, "families": {"b": "categorical"}}


def _pymc(rng):
    data = pd.DataFrame({"LogExpenditure": rng.normal(size=N), "LogIncome": rng.normal(size=N)})
    post = {"b": rng.normal(size=(4, 2)), "sigma": rng.gamma(2.0, 1.0, 4)}
    return PyMCSynthesizer, post, infer_schema(data), {
        "data": data, "model_function": "_pymc_models:normal_regression"}


FAMILIES = {"dpmpm": _dpmpm, "poisson": _poisson, "dp_multinomial": _dp_multinomial,
            "seqreg": _seqreg, "pymc": _pymc}
#: a value off each constraint
OFF = {"real": lambda x: np.where(np.arange(x.size).reshape(x.shape) == 0, np.inf, x),
       "positive": lambda x: -np.abs(x) - 1.0, "nonnegative": lambda x: -np.abs(x) - 1.0,
       "unit_interval": lambda x: x + 1.5, "simplex": lambda x: 0.5 * x,
       "log_simplex": lambda x: x + 1.0, "label": lambda x: x + 100}


@pytest.fixture(scope="module", params=list(FAMILIES))
def family(request):
    """A valid adopted posterior of one family: its class, tree, schema, settings and
    variables."""
    cls, post, schema, kw = FAMILIES[request.param](np.random.default_rng(0))
    model = cls.from_posterior(post, schema, **kw)
    tree = model.posterior_.copy(deep=True)
    if cls is PoissonMixture:  # the memberships a Gibbs run records with every draw
        tree["latent"] = xr.DataTree(xr.Dataset(
            {"z": (("chain", "draw", "record"), rng_labels(tree, 2))}))
        model = cls.from_posterior(tree, model.schema_, **kw)
    spec = model._posterior_dims(None, model.schema_)
    variables = [v for v, _ in concrete(spec, cls.posterior_variables)]
    fixed = set(spec.sizes) | {"component", "stick"}
    return cls, tree, model.schema_, kw, variables, fixed


def rng_labels(tree, K):
    post = tree["posterior"]
    return np.random.default_rng(1).integers(0, K, (post.sizes["chain"], post.sizes["draw"], N))


def _with(tree: xr.DataTree, var: PosteriorVariable, da: xr.DataArray | None) -> xr.DataTree:
    bad = tree.copy(deep=True)
    ds = bad[var.group].to_dataset().drop_vars(var.name)
    bad[var.group] = xr.DataTree(ds if da is None else ds.assign({var.name: da}))
    return bad


def _invalid(tree: xr.DataTree, var: PosteriorVariable, how: str, fixed: set[str]):
    """``tree`` with ``var`` made invalid ``how`` (``None``: no such posterior)."""
    da = tree[var.group][var.name]
    if how == "dims":
        return _with(tree, var, da.expand_dims({"extra": 2}, axis=da.ndim))
    if how == "shape":
        if not var.dims or var.dims[-1] not in fixed:
            return None  # a free size (records): any is valid
        last = var.dims[-1]
        return _with(tree, var, da.isel({last: slice(0, -1)}).rename({last: f"{last}_cut"}))
    if how == "values":
        return _with(tree, var, da.copy(data=OFF[var.constraint](np.asarray(da.values))))
    if var.required and var.sticks is None and var.fill is None:  # missing
        return _with(tree, var, None)
    return None


@pytest.mark.parametrize("how", ["dims", "shape", "values", "missing"])
def test_every_declared_variable_refuses_an_invalid_posterior(family, how):
    cls, tree, schema, kw, variables, fixed = family
    assert variables and all(v.constraint in CONSTRAINTS for v in variables)
    cls.from_posterior(tree, schema, **kw)  # the valid posterior is adopted
    tried = 0
    for var in variables:
        bad = _invalid(tree, var, how, fixed)
        if bad is None:
            continue
        tried += 1
        with pytest.raises(ValidationError, match=f"'{var.name}'") as err:
            cls.from_posterior(bad, schema, **kw)
        assert err.value.code == "POSTERIOR_INVALID", (var.name, how)
        if how == "values":  # and what was expected
            assert CONSTRAINTS[var.constraint][0] in str(err.value)
    assert tried  # every way applies to some variable of every family


def test_weights_are_made_from_the_sticks_and_alpha_left_out_is_nan():
    """DPMPM draws without ``pi`` get it from ``V`` (stick breaking), without ``alpha`` nan."""
    cls, post, schema, kw = _dpmpm(np.random.default_rng(0))
    model = cls.from_posterior({k: v for k, v in post.items() if k != "alpha"}, schema, **kw)
    V = post["V"][..., 0]
    pi = model.posterior_["posterior"]["pi"].values
    np.testing.assert_allclose(pi, np.stack([V, 1 - V], axis=-1), rtol=1e-15)
    assert np.isnan(model.posterior_["posterior"]["alpha"].values).all()
    with pytest.raises(ValidationError, match="'pi' or its stick proportions 'V'"):
        cls.from_posterior({k: v for k, v in post.items() if k != "V"}, schema, **kw)


def test_dims_named_otherwise_are_renamed_and_transposed_ones_refused():
    """A posterior saved with ArviZ's default dim names (``lam_dim_0``) is read with the
    declared ones; one whose declared dims are swapped is refused."""
    cls, post, schema, kw = _poisson(np.random.default_rng(0))
    lam = post["lam"]
    tree = xr.DataTree.from_dict({"posterior": xr.Dataset(
        {"lam": (("chain", "draw", "lam_dim_0", "lam_dim_1"), lam),
         "w": (("chain", "draw", "w_dim_0"), np.full((1, 4, 2), 0.5))})})
    model = cls.from_posterior(tree, schema, **kw)
    assert model.posterior_["posterior"]["lam"].dims == ("chain", "draw", "component", "column")
    assert list(model.posterior_["posterior"]["column"].values) == ["x", "y"]
    swapped = xr.DataTree.from_dict({"posterior": xr.Dataset(
        {"lam": (("chain", "draw", "column", "component"), lam)})})
    with pytest.raises(ValidationError, match="'lam' must have dims"):
        cls.from_posterior(swapped, schema, **kw)


def test_the_validator_checks_the_declaration_alone():
    """``check_posterior`` on a toy declaration: the size a variable fixes binds the next."""
    tree = xr.DataTree.from_dict({"posterior": xr.Dataset(
        {"p": (("chain", "draw", "k"), np.full((1, 2, 3), 1 / 3)),
         "q": (("chain", "draw", "m"), np.ones((1, 2, 4)) / 4)})})
    declared = (PosteriorVariable("p", ("component",), "simplex"),
                PosteriorVariable("q", ("component",), "simplex"))
    with pytest.raises(ValidationError, match="'q' must have dims .*3 along 'component'"):
        check_posterior(tree, PosteriorDims(), declared, "Toy")


def test_a_regression_given_by_column_is_checked_as_declared():
    """``SequentialRegression.from_posterior`` takes draw tables keyed by column; their
    variables are checked as any posterior's: shapes, a positive ``sigma``, a simplex."""
    data = _categorical().assign(y=np.random.default_rng(0).normal(size=N))
    schema = infer_schema(data, synthesized=["b", "y"])
    kw = {"data": data, "families": {"b": "categorical"}}
    probs = np.full((5, 3), 1 / 3)
    coefs = np.column_stack([np.zeros((5, 4)), np.ones(5)])  # (Intercept), a, b[...], sigma
    SequentialRegression.from_posterior({"b": probs, "y": coefs}, schema, **kw)
    for draws, name in [({"b": probs[:, :2], "y": coefs}, "b__probs"),
                        ({"b": probs / 2, "y": coefs}, "b__probs"),
                        ({"b": probs, "y": coefs * [1, 1, 1, 1, -1]}, "y__sigma")]:
        with pytest.raises(ValidationError, match=f"'{name}' \\(column"):
            SequentialRegression.from_posterior(draws, schema, **kw)


@pytest.mark.parametrize("make", [_dpmpm, _dp_multinomial], ids=["DPMPM", "DPMultinomial"])
def test_a_categorical_model_refuses_draws_of_another_column(make):
    """A model of categorical columns only (``info.categorical_only``) refuses draws whose
    schema has another column, as its fit does (``WRONG_DTYPE``), before reading them; its
    dims are those the schema sizes (``level_{j}``, ``cell``)."""
    from bayes_risk.exceptions import SchemaError

    cls, post, schema, kw = make(np.random.default_rng(0))
    numeric = infer_schema(_categorical().assign(b=np.arange(N, dtype=float)))
    with pytest.raises(SchemaError, match=f"^{cls.__name__} models categorical columns only; "
                                          "column 'b' is continuous") as err:
        cls.from_posterior(post, numeric, **kw)
    assert err.value.code == "WRONG_DTYPE"
    spec = cls(**{k: v for k, v in kw.items() if k != "n_records"})._posterior_dims(None, schema)
    assert dict(spec.sizes) == ({"level_0": 2, "level_1": 3} if cls is DPMPM else {"cell": 6})
