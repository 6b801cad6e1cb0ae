"""CART with missing values (synthpop's ``NA`` / ``cont.na`` treatment, Nowok, Raab & Dibben 2016).

A categorical column's missing value is a level of its own; a numeric column is synthesized in two
steps (missingness kind, then value among the observed); a numeric predictor with missing values
enters the trees through its missingness kind and a filled value.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from _shared import missing_table as _table

from bayes_risk.data import infer_schema, make_ce_like
from bayes_risk.exceptions import ValidationError
from bayes_risk.models import CARTPlugin, CARTSynthesizer, load_model


@pytest.fixture(scope="module")
def fitted():
    df = _table()
    schema = infer_schema(df, missing_codes={"b": [-8]})
    syn = CARTSynthesizer(random_seed=1).fit(df, schema=schema, synthesized=["a", "b", "c", "d"])
    return df, schema, syn


def test_missing_rates_codes_and_observed_values(fitted):
    """Per column, the synthetic share of empty cells and of the code -8 (mean over m = 5
    datasets of 2000 records) is within 0.03 of the original's (binomial sd of one share is
    about 0.009; the leaf bootstrap adds about as much again); observed values come from
    observed values."""
    df, _, syn = fitted
    assert syn.missing_ == {"a": {"type": "level"}, "b": {"type": "two_step", "codes": [-8.0]}}
    z = syn.synthesize(5, random_seed=2)
    obs_b = set(df["b"][df["b"].notna() & (df["b"] != -8)])
    for col in ("a", "b"):
        rate = np.mean([s[col].isna().mean() for s in z])
        assert abs(rate - df[col].isna().mean()) < 0.03, col
    code = np.mean([(s["b"] == -8).mean() for s in z])
    assert abs(code - (df["b"] == -8).mean()) < 0.03
    for s in z:
        vb = s["b"][s["b"].notna() & (s["b"] != -8)]
        assert set(vb) <= obs_b  # donors of the value tree are observed records only
        assert set(s["a"].dropna()) <= {"x", "y", "z"}
        assert s["c"].notna().all() and s["d"].notna().all()


def test_missingness_depends_on_predictors_and_predicts(fitted):
    """The kind tree learns P(b missing | c) (0.35 for c = p, 0.15 for c = q, each code share
    included); the missingness of ``b`` predicts ``d`` through its inputs (kind and filled
    value): records whose
    synthetic ``b`` is empty keep ``d`` near 1 (tolerance 0.05 on shares of about 1000
    records; the mean of ``d`` within 0.3)."""
    df, _, syn = fitted
    z = syn.synthesize(3, random_seed=5)
    for s in z:
        miss = s["b"].isna() | (s["b"] == -8)
        for lev, p in (("p", 0.35), ("q", 0.15)):
            assert abs(miss[s["c"] == lev].mean() - p) < 0.05, lev
        assert abs(s["d"][s["b"].isna()].mean() - 1.0) < 0.3
        assert abs(s["d"][s["b"].notna()].mean() - 5.0) < 0.3
    design = syn.trees_["d"].design
    assert "b.missing" in design.predictors  # the kind input of the numeric predictor
    assert design.n_levels[design.predictors.index("b.missing")] == 3  # observed, empty, -8
    assert design.n_levels[design.predictors.index("a")] == 4  # x, y, z and missing


def test_complete_data_unchanged():
    """No layout, no kind tree and the same syntheses as before for complete data (the
    reference tests in test_cart.py hold the numbers; here: fitted twice, identical)."""
    df = make_ce_like(300, random_seed=1)
    schema = infer_schema(df, categorical=["Urban", "Marital", "Tenure"])
    syn = CARTSynthesizer(random_seed=1).fit(df, schema=schema, synthesized=["Tenure", "Income"])
    assert syn.missing_ == {} and syn.missing_trees_ == {}
    assert all("missing" not in p for t in syn.trees_.values() for p in t.design.predictors)


def test_save_load_round_trip_with_missing(fitted, tmp_path):
    _, _, syn = fitted
    syn.save(tmp_path / "m")
    state = json.loads((tmp_path / "m" / "model.json").read_text())["state"]
    assert state["missing"]["b"] == {"type": "two_step", "codes": [-8.0]}
    back = load_model(tmp_path / "m")
    assert back.missing_ == syn.missing_
    a, b = syn.synthesize(2, random_seed=7), back.synthesize(2, random_seed=7)
    for x, y in zip(a, b, strict=True):
        pd.testing.assert_frame_equal(x, y, check_exact=True)


def test_load_refuses_a_folder_without_its_kind_tree(fitted, tmp_path):
    _, _, syn = fitted
    syn.save(tmp_path / "m")
    meta_path = tmp_path / "m" / "model.json"
    meta = json.loads(meta_path.read_text())
    del meta["state"]["kind_trees"]["b"]
    meta_path.write_text(json.dumps(meta))
    with pytest.raises(ValidationError) as err:
        load_model(tmp_path / "m")
    assert err.value.code == "MODEL_DAMAGED"


def test_smoothing_applies_to_the_observed_values_only():
    df = _table(800, seed=3)
    schema = infer_schema(df, missing_codes={"b": [-8]})
    syn = CARTSynthesizer(smoothing=["b"], random_seed=1).fit(
        df, schema=schema, synthesized=["c", "b"])
    z = syn.synthesize(2, random_seed=3)
    obs = df["b"][df["b"].notna() & (df["b"] != -8)]
    for s in z:
        vb = s["b"][s["b"].notna() & (s["b"] != -8)]
        assert vb.min() >= obs.min() and vb.max() <= obs.max()
        assert abs(s["b"].isna().mean() - df["b"].isna().mean()) < 0.05
        assert abs((s["b"] == -8).mean() - (df["b"] == -8).mean()) < 0.05


def test_column_without_observed_value_refused():
    df = _table(200).assign(b=np.nan)
    with pytest.raises(ValidationError, match="'b' has no observed value"):
        CARTSynthesizer().fit(df, synthesized=["b"])


def test_plugin_likelihood_binds_with_missing_values(fitted):
    """The CART plug-in accepts a synthesizer fitted with missing values (its kind trees and
    missing level are part of the likelihood: tests/attribute/test_plugin_missing.py)."""
    df, _, syn = fitted
    plugin = CARTPlugin(syn, df)
    assert plugin.holds_missing and ("kind", "b") in plugin._trees
    z = syn.synthesize(1, random_seed=4)
    got = plugin.plugin_loglik(0, df.iloc[[0]][["a"]], list(z))
    assert got.shape == (1, 1) and got[0, 0] == 0.0  # the truth: no change


def test_smoothing_of_a_nullable_integer_column_with_missing_values():
    """An ``Int64`` column with ``<NA>`` and a code: kernel draws are rounded integers among the
    observed range, empty cells stay ``<NA>`` and the dtype is kept."""
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"g": rng.choice(["a", "b"], 300),
                       "x": pd.array(rng.integers(0, 50, 300), dtype="Int64")})
    df.loc[::7, "x"] = pd.NA
    df.loc[1::11, "x"] = -8
    schema = infer_schema(df, missing_codes={"x": [-8]})
    z = CARTSynthesizer(smoothing=["x"], random_seed=1).fit(
        df, schema=schema, synthesized=["x"]).synthesize(1, random_seed=2)[0]
    assert z["x"].dtype == df["x"].dtype
    assert z["x"].isna().any() and (z["x"] == -8).any()
    obs = z["x"][z["x"].notna() & (z["x"] != -8)]
    assert obs.min() >= 0 and obs.max() <= 49
