"""PyMCSynthesizer: any PyMC model as a synthesizer (issue 67).

Checked against what exists: on the same posterior draws, the record and dataset
log-likelihoods compiled from the PyMC forms of DPMPM, the Poisson mixture MP and a normal
regression equal the built-in models' hand-written kernels (rtol 1e-10), and so does attribute
risk; the normal regression reproduces AttributeRiskCalculation's reference run A1; a conjugate
Beta–Bernoulli model's attribute risk matches exact enumeration. The refusals of models whose
records are not independent given Θ, synthesis, persistence and the refits are checked on small
NUTS fits (tens of draws: convergence is not the point, so ConvergenceWarning is ignored).
"""

from __future__ import annotations

import json
import warnings

import _pymc_models
import numpy as np
import pandas as pd
import pytest
from _shared import shared_path
from scipy.special import betaln

from bayes_risk.attribute import CandidateSpec, EstimatorSpec, GridSpec, attribute_risk
from bayes_risk.data import infer_schema
from bayes_risk.data.provenance import model_id
from bayes_risk.exceptions import NotSupportedError, SchemaError, ValidationError
from bayes_risk.models import (
    DPMPM,
    PoissonMixture,
    PyMCSynthesizer,
    Sampling,
    SequentialRegression,
    load_model,
)

pytestmark = pytest.mark.filterwarnings("ignore::bayes_risk.exceptions.ConvergenceWarning")

_TINY = {"sampling": Sampling(tune=50, draws=50, chains=1), "progressbar": False}


def _quiet(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kwargs)


def _area_table(n: int = 60, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    area = rng.choice(["a", "b", "c"], n)
    x = np.round(rng.normal(size=n), 3)
    y = rng.poisson(np.exp(0.3 + 0.4 * x + (area == "b") * 0.5))
    return pd.DataFrame({"area": pd.Categorical(area), "x": x, "y": y})


@pytest.fixture(scope="module")
def area_model():
    """The hierarchical Poisson model of a count y, fitted with a few NUTS draws."""
    data = _area_table()
    model = PyMCSynthesizer(model_function="_pymc_models:poisson_area", **_TINY)
    return data, _quiet(model.fit, data, random_seed=1)


# ------------------------------------------------------------- against the built-in kernels
def _cat_table(n: int = 40, seed: int = 3) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({
        "a": pd.Categorical(rng.choice(["x", "y", "z"], n)),
        "b": pd.Categorical(rng.choice(["p", "q"], n)),
        "c": pd.Categorical(rng.choice(["u", "v", "w", "t"], n))})


def _dpmpm_draws(schema, chains=2, draws=15, seed=5) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    K = _pymc_models.K_DPMPM
    post = {"alpha": rng.gamma(2.0, 1.0, (chains, draws)),
            "V": rng.beta(1.0, 2.0, (chains, draws, K - 1))}
    for j, spec in enumerate(schema):
        post[f"phi_{j}"] = rng.dirichlet(np.ones(spec.n_levels), (chains, draws, K))
    return post


def test_dpmpm_form_equals_the_builtin_kernels():
    """DPMPM's PyMC form (its fit module's log-density, columns stacked): the compiled record
    and dataset log-likelihoods equal DPMPM's on the same draws, and so does attribute risk."""
    data = _cat_table()
    schema = infer_schema(data)
    post = _dpmpm_draws(schema)
    built_in = _quiet(DPMPM.from_posterior, dict(post), schema.with_roles(schema.names),
                      n_records=len(data), n_components=_pymc_models.K_DPMPM)
    adapter = _quiet(PyMCSynthesizer.from_posterior, dict(post), schema, data=data,
                     model_function="_pymc_models:dpmpm_form")
    assert adapter.schema_.synthesized == ["a", "b", "c"] and adapter.ratio_form == "joint"
    np.testing.assert_allclose(adapter.record_loglik(data), built_in.record_loglik(data),
                               rtol=1e-10, atol=0)
    syn = [data.sample(frac=1.0, random_state=k).reset_index(drop=True) for k in range(3)]
    np.testing.assert_allclose(adapter.dataset_loglik(syn), built_in.dataset_loglik(syn),
                               rtol=1e-10, atol=0)
    idx = np.array([0, 7, 29])
    np.testing.assert_allclose(adapter.record_loglik(data, draw_indices=idx),
                               built_in.record_loglik(data)[idx], rtol=1e-10, atol=0)
    kw = {"records": range(8), "estimator": EstimatorSpec(kind="is", bootstrap=0),
          "progressbar": False}
    a = _quiet(attribute_risk, data, syn, model=adapter, **kw)
    b = _quiet(attribute_risk, data, syn, model=built_in, **kw)
    np.testing.assert_allclose(a.records["p_true"], b.records["p_true"], rtol=1e-9)


def test_poisson_mixture_form_equals_the_builtin_kernels():
    rng = np.random.default_rng(7)
    n, K = 30, _pymc_models.K_POISSON
    data = pd.DataFrame({"kids": rng.poisson(1.5, n), "visits": rng.poisson(3.0, n)})
    schema = infer_schema(data)
    post = {"alpha": rng.gamma(2.0, 1.0, (2, 10)), "v": rng.beta(1.0, 2.0, (2, 10, K - 1)),
            "lam": rng.gamma(3.0, 1.0, (2, 10, K, 2))}
    built_in = _quiet(PoissonMixture.from_posterior, dict(post), schema.with_roles(schema.names),
                      n_records=n, n_components=K)
    adapter = _quiet(PyMCSynthesizer.from_posterior, dict(post), schema, data=data,
                     model_function="_pymc_models:poisson_mixture_form")
    np.testing.assert_allclose(adapter.record_loglik(data), built_in.record_loglik(data),
                               rtol=1e-10, atol=0)
    syn = [data.iloc[::-1].reset_index(drop=True), data.sample(frac=1.0, random_state=1)]
    np.testing.assert_allclose(adapter.dataset_loglik(syn), built_in.dataset_loglik(syn),
                               rtol=1e-10, atol=0)


def _a1():
    base = shared_path("reference", "attribute")
    cols = ["LogExpenditure", "LogIncome"]
    orig = pd.read_csv(base / "inputs" / "origdata_first200.csv")[cols]
    syn = [pd.read_csv(base / "inputs" / f"A1_syn{li}.csv")[cols] for li in (1, 2)]
    draws = pd.read_csv(base / "inputs" / "A1_draws_LogIncome.csv")
    return base, orig, syn, draws


@pytest.mark.reference
def test_normal_regression_reproduces_attribute_risk_calculation_a1():
    """A normal regression written in PyMC, given run A1's 50 draws, has the built-in sequential
    regression's record likelihoods and reproduces the R package's TrueValProb."""
    base, orig, syn, draws = _a1()
    schema = infer_schema(orig, synthesized=["LogIncome"])
    post = {"b": draws[["(Intercept)", "LogExpenditure"]].to_numpy(),
            "sigma": draws["sigma"].to_numpy()}
    adapter = _quiet(PyMCSynthesizer.from_posterior, post, infer_schema(orig), data=orig,
                     model_function="_pymc_models:normal_regression")
    assert adapter.schema_.synthesized == ["LogIncome"]
    assert adapter.ratio_form == "conditional"
    seqreg = _quiet(SequentialRegression.from_posterior, {"LogIncome": draws}, schema, data=orig,
                    n_records=len(orig))
    np.testing.assert_allclose(adapter.record_loglik(orig), seqreg.record_loglik(orig),
                               rtol=1e-10, atol=0)
    np.testing.assert_allclose(adapter.dataset_loglik(syn), seqreg.dataset_loglik(syn),
                               rtol=1e-10, atol=0)
    res = _quiet(attribute_risk, orig, syn, model=adapter, progressbar=False,
                 candidates=CandidateSpec("product", default_grid=GridSpec("percent", 0.1, 0.1,
                                                                           11)),
                 estimator=EstimatorSpec(kind="is", bootstrap=0))
    ref = pd.read_csv(base / "outputs" / "A1_records.csv")
    np.testing.assert_allclose(res.records["p_true"], ref["TrueValProb"], rtol=1e-9, atol=1e-12)


# ------------------------------------------------------------------------ exact enumeration
def _exact_p_true(y: np.ndarray, syn: list[np.ndarray]) -> np.ndarray:
    """Beta(1, 1)–Bernoulli, full synthesis: the intruder's posterior of record i's value under
    a uniform prior, p(y* | Z) ∝ Π_l p(Z_l | y*, y_-i), p(Z | y) = B(1 + k + s, 1 + 2n - k - s)
    / B(1 + k, 1 + n - k) (k, s: ones in y and in Z)."""
    n = y.size
    out = np.empty(n)
    for i in range(n):
        logp = []
        for cand in (0, 1):
            k = int(y.sum() - y[i] + cand)
            logp.append(sum(betaln(1 + k + z.sum(), 1 + 2 * n - k - z.sum())
                            - betaln(1 + k, 1 + n - k) for z in syn))
        logp = np.array(logp)
        out[i] = np.exp(logp[y[i]] - np.logaddexp(*logp))
    return out


@pytest.mark.slow
def test_conjugate_model_matches_exact_enumeration():
    """The stabilised estimator through the adapter (NUTS draws and NUTS refits) against exact
    enumeration: within 0.01 (Monte Carlo error of 2,000 draws: about 0.002). Eight records
    and three datasets, so that the release moves p_true well away from the prior's 0.5."""
    y = np.array([1] * 3 + [0] * 5)
    data = pd.DataFrame({"y": pd.Categorical(y, categories=[0, 1])})
    model = PyMCSynthesizer(model_function="_pymc_models:bernoulli",
                            sampling=Sampling(tune=300, draws=1000, chains=2), progressbar=False)
    model = _quiet(model.fit, data, random_seed=11)
    syn = model.synthesize(3, random_seed=12)
    exact = _exact_p_true(y, [z["y"].astype(int).to_numpy() for z in syn])
    assert np.max(np.abs(exact - 0.5)) > 0.05  # the check can tell an estimate from the prior
    res = _quiet(attribute_risk, data, syn, model=model, progressbar=False, random_seed=13,
                 estimator=EstimatorSpec(kind="stabilised", bootstrap=0))
    assert res.settings["estimator"] == "stabilised"
    np.testing.assert_allclose(res.records["p_true"], exact, atol=0.01)


# ------------------------------------------------------------------------------ refusals
@pytest.mark.parametrize("function, code, text", [
    ("latent_per_record", "RECORDS_NOT_INDEPENDENT", "free variable 'u' has shape"),
    ("joint_over_records", "RECORDS_NOT_INDEPENDENT", "one number for all records"),
    ("lagged", "RECORDS_NOT_INDEPENDENT", "depends on the other records' values"),
    ("centred_constant", "RECORDS_NOT_INDEPENDENT", "constant computed from the table"),
    ("data_potential", "RECORDS_NOT_INDEPENDENT", "potential 'penalty' reads the data"),
    ("count_potential", "RECORDS_NOT_INDEPENDENT", "potential of the model changes"),
    ("centred_container", "MODEL_FUNCTION_INVALID", "container 'x' holds"),
    ("observed_array", "MODEL_FUNCTION_INVALID", "given its values as an array"),
    ("not_a_model", "MODEL_FUNCTION_INVALID", "returned a DataFrame"),
])
def test_models_outside_the_contract_are_refused_with_the_reason(function, code, text):
    data = _area_table(12)[["x", "y"]]
    model = PyMCSynthesizer(model_function=f"_pymc_models:{function}", **_TINY)
    with pytest.raises(ValidationError, match=text) as err:
        model.fit(data, random_seed=0)
    assert err.value.code == code


@pytest.mark.parametrize("spec, code", [
    ("nope", "MODEL_FUNCTION_UNAVAILABLE"),
    ("no_such_module_xyz:f", "MODEL_FUNCTION_UNAVAILABLE"),
    ("_pymc_models:no_such_function", "MODEL_FUNCTION_UNAVAILABLE"),
    ("_pymc_models:K_DPMPM", "MODEL_FUNCTION_UNAVAILABLE"),
])
def test_bad_model_function_paths(spec, code):
    with pytest.raises(ValidationError) as err:
        PyMCSynthesizer(model_function=spec).fit(_area_table(10))
    assert err.value.code == code and "model_function" in str(err.value)


def test_columns_to_synthesize_are_the_observed_ones():
    data = _area_table(12)
    model = PyMCSynthesizer(model_function="_pymc_models:poisson_area", **_TINY)
    with pytest.raises(ValidationError, match="are not the model's observed columns") as err:
        model.fit(data, synthesized=["x", "y"], random_seed=0)
    assert err.value.code == "MODEL_FUNCTION_INVALID"
    with pytest.raises(ValidationError, match="diagnose names \\['nope'\\]"):
        PyMCSynthesizer(model_function="_pymc_models:poisson_area", diagnose=["nope"],
                        **_TINY).fit(data, random_seed=0)


# ------------------------------------------------------------------------- fitted models
def test_what_the_graph_shows(area_model):
    data, model = area_model
    assert model.schema_.synthesized == ["y"] and model.schema_.unsynthesized == ["area", "x"]
    assert model.ratio_form == "conditional" and model.model_class == "P"
    post = model.posterior_["posterior"]
    assert set(post.data_vars) == {"b", "s", "u"}  # free variables only
    assert set(model.posterior_.children) == {"posterior", "sample_stats", "label_invariant"}
    summary = model.convergence_summary()
    assert {"b[0]", "b[1]", "s", "u[a]", "u[b]", "u[c]", "loglik"} == set(summary["quantities"])
    # the log-likelihood statistic is the fitted records' total at each draw
    total = model.record_loglik(data).sum(axis=1)
    np.testing.assert_allclose(
        model.posterior_["sample_stats"]["loglik"].values.reshape(-1), total, rtol=1e-10)


def test_record_loglik_is_the_poisson_density_by_hand(area_model):
    """The compiled log-density against the hierarchical Poisson written out, at every draw."""
    from scipy.stats import poisson

    data, model = area_model
    post = model.posterior_["posterior"]
    b = post["b"].values.reshape(-1, 2)
    u = post["u"].values.reshape(b.shape[0], -1)
    codes = data["area"].cat.codes.to_numpy()
    mu = np.exp(b[:, :1] + b[:, 1:] * data["x"].to_numpy() + u[:, codes])
    np.testing.assert_allclose(model.record_loglik(data), poisson.logpmf(data["y"], mu),
                               rtol=1e-10)


def test_a_dimension_of_the_records_in_the_coords(area_model):
    """With ``dims="obs"`` on the containers and the observed variable, PyMC broadcasts the
    log-density to the records the model was built on: any number of records is evaluated all
    the same, with the numbers of the model without the dimension (same draws)."""
    data, model = area_model
    dims = _quiet(PyMCSynthesizer.from_posterior, model.posterior_, model.schema_, data=data,
                  model_function="_pymc_models:poisson_area_dims")
    np.testing.assert_array_equal(dims.record_loglik(data.head(3)),
                                  model.record_loglik(data.head(3)))
    np.testing.assert_allclose(dims.dataset_loglik([data]), model.dataset_loglik([data]),
                               rtol=1e-12)
    z = dims.synthesize(1, random_seed=2)[0]
    assert len(z) == len(data) and list(z.columns) == list(data.columns)


def test_blocks_under_a_memory_budget_give_the_same_numbers(area_model, monkeypatch):
    import bayes_risk.models.pymc_model.loglik as lk

    data, model = area_model
    whole = model.record_loglik(data)
    monkeypatch.setattr(lk, "working_bytes", lambda cap, reserve=0: 7 * 16 * 8)  # tiny blocks
    np.testing.assert_array_equal(model.record_loglik(data), whole)
    np.testing.assert_allclose(model.dataset_loglik([data]), whole.sum(axis=1)[:, None],
                               rtol=1e-12)


def test_bad_records_are_named(area_model):
    data, model = area_model
    bad = data.copy()
    bad.loc[3, "y"] = np.nan
    with pytest.raises(SchemaError, match="records: column 'y' has 1 missing value"):
        model.record_loglik(bad)
    other = data.assign(area=pd.Categorical(["d"] * len(data)))
    with pytest.raises(SchemaError, match="value 'd' that is not among its levels"):
        model.record_loglik(other)


def test_synthesis_keeps_covariates_and_is_reproducible(area_model):
    data, model = area_model
    a = model.synthesize(3, random_seed=5)
    b = model.synthesize(3, random_seed=5)
    for za, zb in zip(a, b, strict=True):
        pd.testing.assert_frame_equal(za, zb)
        pd.testing.assert_frame_equal(za[["area", "x"]], data[["area", "x"]])
        assert za["y"].dtype == data["y"].dtype and (za["y"] >= 0).all()
    assert not a[0]["y"].equals(a[1]["y"])
    assert a.draw_index == [int(h) for h in model._spread_draws(model.n_draws, 3)]
    assert a.model_id == model_id(model) and a.extra["ratio_form"] == "conditional"
    reps = next(iter(model.posterior_replicates(2, chunk_size=2, random_seed=1)))
    assert [list(r.columns) for r in reps] == [["y"], ["y"]]


def test_columns_are_drawn_one_after_another():
    """z ~ Normal(x, 0.001) reads x: synthesized z follows the synthesized x, not the original."""
    rng = np.random.default_rng(2)
    x = rng.normal(size=30)
    data = pd.DataFrame({"x": x, "z": x + rng.normal(0, 0.001, 30)})
    model = _quiet(PyMCSynthesizer(model_function="_pymc_models:copy_chain", **_TINY).fit,
                   data, random_seed=3)
    z = model.synthesize(1, random_seed=4)[0]
    assert np.max(np.abs(z["z"] - z["x"])) < 0.01
    assert np.max(np.abs(z["x"] - data["x"])) > 0.5


def test_categorical_columns_round_trip_their_levels():
    rng = np.random.default_rng(4)
    data = pd.DataFrame({"sex": pd.Categorical(rng.choice(["F", "M"], 40)),
                         "mar": pd.Categorical(rng.choice(["married", "single", "other"], 40))})
    model = _quiet(PyMCSynthesizer(model_function="_pymc_models:categorical_chain",
                                   **_TINY).fit, data, random_seed=3)
    assert model.schema_.synthesized == ["sex", "mar"] and model.ratio_form == "joint"
    z = model.synthesize(1, random_seed=1)[0]
    assert list(z["mar"].cat.categories) == list(data["mar"].cat.categories)
    assert z["sex"].isin(["F", "M"]).all()
    # a record's log-likelihood: log p(sex) + log p(mar | sex), by hand at every draw
    post = model.posterior_["posterior"]
    p = post["p"].values.reshape(-1, 2)
    B = post["B"].values.reshape(p.shape[0], 2, 3)
    s, m = data["sex"].cat.codes.to_numpy(), data["mar"].cat.codes.to_numpy()
    logit = B[:, s, :]
    by_hand = (np.log(p[:, s]) + np.take_along_axis(logit, m[None, :, None], 2)[..., 0]
               - np.log(np.exp(logit).sum(axis=2)))
    np.testing.assert_allclose(model.record_loglik(data), by_hand, rtol=1e-10)


def test_a_model_that_cannot_draw_says_so():
    data = _cat_table(20)
    post = _dpmpm_draws(infer_schema(data), chains=1, draws=4)
    model = _quiet(PyMCSynthesizer.from_posterior, post, infer_schema(data), data=data,
                   model_function="_pymc_models:dpmpm_form")
    with pytest.raises(NotSupportedError, match="observed variable 'record' cannot be drawn"):
        model.synthesize(1, random_seed=0)


# ------------------------------------------------------------------------------ persistence
def test_save_and_load_keep_likelihoods_synthesis_and_identity(area_model, tmp_path):
    data, model = area_model
    model.save(tmp_path / "m")
    meta = json.loads((tmp_path / "m" / "model.json").read_text())
    assert meta["method"] == "pymc"
    assert meta["settings"]["model_function"] == "_pymc_models:poisson_area"
    assert not list(tmp_path.glob("m/*.pkl")) and (tmp_path / "m" / "data.parquet").is_file()
    back = load_model(tmp_path / "m", model_function="_pymc_models:poisson_area")
    assert isinstance(back, PyMCSynthesizer) and model_id(back) == model_id(model)
    np.testing.assert_array_equal(back.record_loglik(data), model.record_loglik(data))
    for za, zb in zip(back.synthesize(2, random_seed=9), model.synthesize(2, random_seed=9),
                      strict=True):
        pd.testing.assert_frame_equal(za, zb)


def test_a_changed_model_function_is_refused_at_load(area_model, tmp_path, monkeypatch):
    _, model = area_model
    model.save(tmp_path / "m")
    monkeypatch.setattr(_pymc_models, "poisson_area", _pymc_models.centred_constant)
    with pytest.raises(ValidationError) as err:
        load_model(tmp_path / "m", model_function="_pymc_models:poisson_area")
    assert err.value.code in ("MODEL_FUNCTION_CHANGED", "MODEL_FUNCTION_INVALID")


def test_a_function_that_cannot_be_imported_is_not_saved(tmp_path):
    data = pd.DataFrame({"y": pd.Categorical([0, 1] * 10)})
    fitted = _quiet(PyMCSynthesizer(model_function=_pymc_models.bernoulli, **_TINY).fit, data,
                    random_seed=0)
    fitted.save(tmp_path / "ok")  # an importable function is saved by its path
    assert json.loads((tmp_path / "ok" / "model.json").read_text())["settings"][
        "model_function"] == "_pymc_models:bernoulli"

    def local(table):
        return _pymc_models.bernoulli(table)

    fitted.model_function = local
    with pytest.raises(ValidationError, match="defined inside another function") as err:
        fitted.save(tmp_path / "no")
    assert err.value.code == "MODEL_FUNCTION_NOT_IMPORTABLE" and not (tmp_path / "no").exists()


# ------------------------------------------------------------------------ refits and cache
def test_refits_use_the_same_model_and_settings_and_the_cache(area_model, tmp_path,
                                                              monkeypatch):
    from bayes_risk.attribute.cost import refit_cost

    data, model = area_model
    syn = model.synthesize(2, random_seed=2)
    refit = _quiet(model.fit_augmented, data, syn[0], random_seed=4)
    assert refit.get_params()["model_function"] == model.model_function
    assert refit.n_records == 2 * len(data) and refit.n_draws == model.n_draws
    assert refit.schema_.synthesized == ["y"]
    cost = refit_cost(model, len(data), 2)
    assert cost.seconds is not None and "sweeps per chain" in cost.basis
    grid = GridSpec("explicit", values=tuple(float(v) for v in range(int(data["y"].max()) + 1)))
    kw = {"records": range(5), "progressbar": False, "random_seed": 3,
          "candidates": CandidateSpec("product", default_grid=grid),
          "estimator": EstimatorSpec(kind="stabilised", bootstrap=0,
                                     refit_cache=tmp_path / "cache")}
    first = _quiet(attribute_risk, data, syn, model=model, **kw)
    assert len(list((tmp_path / "cache").iterdir())) == 2

    def no_refit(*args, **kwargs):
        raise AssertionError("refit made again instead of read from the cache")

    monkeypatch.setattr(PyMCSynthesizer, "fit_augmented", no_refit)
    again = _quiet(attribute_risk, data, syn, model=model, **kw)
    pd.testing.assert_series_equal(first.records["p_true"], again.records["p_true"])


def test_a_start_with_zero_density_names_the_records():
    """Issue 92: a model whose starting point gives zero density to some records (a log-normal
    income, two incomes negative) raised PyMC's raw SamplingError; it is a coded error naming
    the observed variable and the records."""
    rng = np.random.default_rng(2)
    data = pd.DataFrame({"sex": pd.Categorical(rng.choice(["F", "M"], 30)),
                         "kids": rng.poisson(1.0, 30),
                         "income": np.round(rng.lognormal(10, 0.5, 30))})
    data.loc[[3, 17], "income"] = -5.0
    model = PyMCSynthesizer(model_function="_pymc_models:contract_model", **_TINY)
    with pytest.raises(ValidationError, match="ZERO_DENSITY_AT_START|zero density") as err:
        _quiet(model.fit, data, random_seed=1)
    assert err.value.code == "ZERO_DENSITY_AT_START"
    assert "'income_obs': record(s) 3, 17 (0-based rows of the data)" in str(err.value)
