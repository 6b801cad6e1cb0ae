"""The staged attribute engine: executors, estimator strategies and the model protocols."""

from __future__ import annotations

import inspect
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy.special import xlog1py, xlogy

from bayes_risk.attribute import attribute_risk
from bayes_risk.attribute.plan import RecordPartition
from bayes_risk.attribute.prepare import prepare
from bayes_risk.attribute.specs import EstimatorSpec, ScenarioSpec
from bayes_risk.attribute.strategies import EstimatorStrategy, PublishedIS, Stabilised
from bayes_risk.contract import ModelInfo, RiskModel, capabilities, missing_members
from bayes_risk.data import infer_schema
from bayes_risk.exceptions import ImportanceSamplingWarning, ValidationError
from bayes_risk.executors import InProcessExecutor
from bayes_risk.models import ArrayModel


def _ll(records, theta):
    y = records["y"].astype(int).to_numpy()[None, :]
    t = np.asarray(theta, dtype=float)[:, None]
    return xlogy(y, t) + xlog1py(1 - y, -t)


@pytest.fixture(scope="module")
def bern():
    rng = np.random.default_rng(5)
    y = rng.integers(0, 2, 40)
    orig = pd.DataFrame({"y": pd.Categorical(y, categories=[0, 1])})
    schema = infer_schema(orig, synthesized=["y"])
    model = ArrayModel(_ll, rng.beta(1 + y.sum(), 1 + 40 - y.sum(), 60), schema)
    syn = [
        pd.DataFrame({"y": pd.Categorical(rng.integers(0, 2, 40), categories=[0, 1])})
        for _ in range(2)
    ]
    aug = [model.with_draws(rng.beta(30, 30, 50)) for _ in syn]
    return model, orig, syn, aug


def _run(*args, **kw):
    kw.setdefault("progressbar", False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ImportanceSamplingWarning)
        return attribute_risk(*args, **kw)


class _ReversedExecutor:
    """Runs the partitions last to first (returns them in order, as the protocol says)."""

    partition_size = 7

    def __init__(self):
        self.calls = 0

    def map(self, fn, shared, parts, *, progressbar=True, description=""):
        self.calls += len(parts)
        return [fn(shared, p) for p in reversed(parts)][::-1]


@pytest.mark.parametrize("estimator", ["is", "stabilised"])
def test_same_numbers_whatever_the_executor(bern, estimator):
    model, orig, syn, aug = bern
    kw = {"estimator": EstimatorSpec(kind=estimator, bootstrap=30,
                                     augmented=aug if estimator == "stabilised" else None),
          "random_seed": 2, "records": [30, 2, 11, 7]}
    ref = _run(orig, syn, model=model, **kw)
    ex = _ReversedExecutor()
    small = InProcessExecutor()
    small.partition_size = 1
    for executor in (ex, small):
        res = _run(orig, syn, model=model, executor=executor, **kw)
        pd.testing.assert_frame_equal(res.records, ref.records)
        for a, b in zip(res.loglik, ref.loglik, strict=True):
            np.testing.assert_array_equal(a, b)
        assert res.warnings == ref.warnings
    assert ex.calls == 1  # 4 records, partitions of 7
    with pytest.raises(ValidationError, match="executor must be None"):
        _run(orig, syn, model=model, executor="local", **kw)


def test_plan_holds_the_estimator_strategy(bern):
    model, orig, syn, aug = bern
    kw = dict(candidates="one-variable", prior="uniform", scenario=ScenarioSpec(),
              random_seed=0, progressbar=False)
    est = EstimatorSpec(khat_tolerance=0.01, chunk_size=128, bootstrap=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ImportanceSamplingWarning)
        plan = prepare(model, orig, syn, [0, 1], estimator=est.replace(kind="is"), **kw)
        assert isinstance(plan.estimator, PublishedIS)
        plan_st = prepare(model, orig, syn, None,
                          estimator=est.replace(kind="stabilised", augmented=aug), **kw)
    assert isinstance(plan_st.estimator, Stabilised)
    assert isinstance(plan.estimator, EstimatorStrategy) and inspect.isabstract(EstimatorStrategy)
    assert plan.data.m == 2 and plan.draws.L.shape == (60, 2)
    assert plan_st.augmented.n_draws == [50, 50] and plan_st.data.positions.size == 40
    from bayes_risk.attribute.evaluate import evaluate

    out = evaluate(plan, RecordPartition(np.array([1, 0])))
    assert sorted(out.loglik) == [0, 1] and out.loglik[0].shape == (2,)


def test_capabilities_are_read_off_the_methods(bern):
    model, orig, syn, _ = bern
    assert isinstance(model, RiskModel) and not capabilities(model).has("plugin")
    assert not capabilities(model).has("neighbourhood")
    fast = ArrayModel(_ll, model.draws, model.schema_,
                      neighbourhood_fn=lambda r, t: np.zeros((len(t), len(r), 2)))
    assert capabilities(fast).has("neighbourhood")

    class NoLikelihood:  # declares something, so it is told what it lacks
        info = ModelInfo()
        model_class = "P"
        schema_ = model.schema_

    assert missing_members(NoLikelihood(), RiskModel) == [
        "dataset_loglik", "n_draws", "ratio_form", "record_loglik"
    ]
    with pytest.raises(ValidationError, match=r"RiskModel\) lacks \['dataset_loglik', 'n_draws', "
                       r"'ratio_form', 'record_loglik'\]; a plug-in .* lacks \['plugin_loglik'\]"):
        _run(orig, syn, model=NoLikelihood())

    class NoDatasets:
        model_class = "P"
        ratio_form = "joint"
        schema_ = model.schema_
        n_draws = model.n_draws
        record_loglik = model.record_loglik

    # the required protocol includes the dataset likelihood
    with pytest.raises(ValidationError, match=r"RiskModel\) lacks \['dataset_loglik'\]"):
        _run(orig, syn, model=NoDatasets(), estimator="is")

    class NoAugment(NoDatasets):
        dataset_loglik = model.dataset_loglik

    assert capabilities(NoAugment()).estimators == ("is",)
    with pytest.raises(ValidationError, match="SupportsAugmentedFit"):
        _run(orig, syn, model=NoAugment(), estimator="stabilised")

    class ClassO(NoAugment):
        model_class = "O"

    with pytest.raises(NotImplementedError, match="SupportsOwnRecordTerm"):
        _run(orig, syn, model=ClassO(), estimator="is")


def test_bayesian_synthesizer_is_an_abstract_base_class():
    from bayes_risk.models._bayesian.base import BayesianSynthesizer

    assert inspect.isabstract(BayesianSynthesizer)
    assert {"record_loglik", "dataset_loglik", "_synthesize_one"} <= set(
        BayesianSynthesizer.__abstractmethods__
    )

    class Incomplete(BayesianSynthesizer):
        pass

    with pytest.raises(TypeError, match="abstract"):
        Incomplete()
