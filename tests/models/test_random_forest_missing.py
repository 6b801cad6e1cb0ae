"""Random forests with missing values (as CART: a categorical column's missing value is a level of
its own; a numeric predictor enters as its missingness kind and a filled value); the Bayesian
models without missing-value support refuse, naming those that accept them."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from _shared import missing_table as _table

from bayes_risk.data import infer_schema, make_ce_like
from bayes_risk.exceptions import SchemaError
from bayes_risk.models import (
    RandomForestSynthesizer,
    RFPlugin,
    SmallCellPMMSynthesizer,
    load_model,
)
from bayes_risk.models.trees.missing import encoded_values


@pytest.fixture(scope="module")
def fitted():
    df = _table()
    schema = infer_schema(df, missing_codes={"b": [-8]})
    syn = RandomForestSynthesizer(n_trees=50, random_seed=1).fit(
        df, schema=schema, synthesized=["a", "c"])
    return df, schema, syn


def test_rf_missing_level_rate_and_missingness_predictor(fitted):
    """Share of empty ``a`` within 0.03 of the original's 0.21 (mean of 3 datasets of 2000
    records); P(c = p | b missing) within 0.06 of the original's (about 700 such records:
    binomial sd 0.018, plus the forest's smoothing), which the forest learns from the inputs of
    ``b`` (its kind and its value filled with 0)."""
    df, _, syn = fitted
    assert syn.missing_ == {"a": {"type": "level"}, "b": {"type": "two_step", "codes": [-8.0]}}
    assert syn.forests_["c"].n_features_in_ == 4  # a, b filled, b's kind, d
    z = syn.synthesize(3, random_seed=2)
    assert abs(np.mean([s["a"].isna().mean() for s in z]) - df["a"].isna().mean()) < 0.03
    miss_o = df["b"].isna() | (df["b"] == -8)
    target = (df["c"][miss_o] == "p").mean()
    assert target > 0.6  # the dependence the forest has to keep (0.5 without it)
    got = np.mean([(s["c"][miss_o] == "p").mean() for s in z])  # b is not synthesized
    assert abs(got - target) < 0.06
    for s in z:
        assert set(s["a"].dropna()) <= {"x", "y", "z"}
        pd.testing.assert_series_equal(s["b"], df["b"])


def test_rf_group_by_and_save_load_with_missing(fitted, tmp_path):
    df, schema, _ = fitted
    syn = RandomForestSynthesizer(n_trees=30, group_by="c", random_seed=3).fit(
        df, schema=schema, synthesized=["a", "c"])
    syn.save(tmp_path / "rf")
    back = load_model(tmp_path / "rf")
    assert back.missing_ == syn.missing_
    for x, y in zip(syn.synthesize(2, random_seed=4), back.synthesize(2, random_seed=4),
                    strict=True):
        pd.testing.assert_frame_equal(x, y, check_exact=True)
        assert x["a"].isna().any()


def test_rf_plugin_with_missing_values_uses_the_synthesizers_probabilities(fitted):
    """The plug-in binds to a forest fitted with missing values; for the truth its
    log-likelihood is Σ log p_r(z_r) with the synthesizer's own synthesis probabilities
    (predict_proba: a's missing level is a class, b enters as its filled value and kind)."""
    df, _, syn = fitted
    z = syn.synthesize(1, random_seed=5)
    got = RFPlugin(syn, df).plugin_loglik(0, df.iloc[[0]][["c"]], list(z))[0, 0]
    zv = encoded_values(z[0].reset_index(drop=True), syn.schema_, syn.missing_)
    ref, done = 0.0, []
    for col in syn.visit_sequence_:
        sel = np.flatnonzero(syn.records_[col])
        X = syn._matrix(syn.predictors_[col],
                        lambda p, s=sel, y=syn.state_.table.values:
                        (zv[p] if p in done else y[p])[s].astype(float),
                        syn.missing_).astype(np.float32)
        P = syn.predict_proba(col, X, np.arange(sel.size))
        P /= P.sum(axis=1, keepdims=True)
        ref += np.log(P[np.arange(sel.size), zv[col][sel].astype(int)]).sum()
        done.append(col)
    assert (zv["a"] == 3).any()  # released missing values of a are part of the likelihood
    assert got == pytest.approx(ref, rel=1e-6)


def test_pmm_accepts_missing_values():
    """(It refused them before; tests/models/test_pmm_missing.py checks the treatment.)"""
    df = make_ce_like(200, random_seed=1)
    df["Income"] = df["Income"].astype(float)
    df.loc[3, "Income"] = np.nan
    schema = infer_schema(df, categorical=["Urban", "Marital", "Tenure"])
    model = SmallCellPMMSynthesizer(identifying=["Urban", "Marital"]).fit(df, schema=schema)
    assert pd.isna(model.synthesize(1, random_seed=1).datasets[0].loc[3, "Income"])


# (SequentialRegression accepts missing values: tests/models/test_seqreg_missing.py)
@pytest.mark.parametrize("cls_name", ["PoissonMixture"])
def test_bayesian_models_without_missing_support_refuse_naming_those_with(cls_name):
    """Refused before any sampling: the message names the column and the synthesizers that
    accept missing values (for the Poisson mixture: MM refuses, giving the reason and naming
    variant 'mp', which accepts them)."""
    import bayes_risk.models as models

    df = pd.DataFrame({"x": [1.0, 2.0, np.nan, 4.0, 5.0, 6.0], "y": [0, 1, 2, 1, 0, 3]})
    if cls_name == "PoissonMixture":
        schema, model = infer_schema(df, count=["x", "y"]), models.PoissonMixture(variant="mm")
        match = "column 'x'.*'mm' redistributes .* totals .*variant='mp' accepts"
    else:
        schema, model = infer_schema(df), getattr(models, cls_name)()
        match = "column 'x'.*DPMPM, CART and random forests do"
    with pytest.raises(SchemaError, match=match) as e:
        model.fit(df, schema=schema, synthesized=["x", "y"])
    assert e.value.code == "MISSING_VALUES"
    assert cls_name in str(e.value) or "Variant 'mm'" in str(e.value)
