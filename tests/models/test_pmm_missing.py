"""Small-cell PMM with missing values (methods, Small-cell predictive mean matching: missing
values): a record whose identifying value is missing is neither a recipient nor a donor of that
column and keeps its empty cell; predictors with empty cells are padded as synthpop's
``padModel`` does (value 0 and an indicator; a categorical empty cell a level of its own).
Checked against the design and the least-squares fit written by hand.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm

from bayes_risk.data import infer_schema, make_ce_like
from bayes_risk.models import SmallCellPMMSynthesizer, load_model

IV = ["Urban", "Marital", "Tenure"]


@pytest.fixture(scope="module")
def table():
    df = make_ce_like(300, random_seed=1)
    df["Income"] = df["Income"].astype(float)
    df.loc[[3, 10, 200], "Income"] = np.nan
    df["Marital"] = df["Marital"].astype(object)
    df.loc[[5, 6, 40], "Marital"] = None
    df.loc[[7], "Expenditure"] = np.nan
    return df, infer_schema(df, categorical=IV)


def _fit(df, schema, **kw):
    return SmallCellPMMSynthesizer(identifying=IV, **kw).fit(df, schema=schema)


def test_padded_design_is_the_hand_design(table):
    df, schema = table
    m = _fit(df, schema)
    X = m._design(df, ["Marital", "Expenditure"], splines=False)
    codes = df["Marital"].map({1: 0, 2: 1, 3: 2, 4: 3, 5: 4}).fillna(5).to_numpy(dtype=int)
    cat = np.eye(6)[codes][:, 1:]  # levels 2..5 and the empty cell, after them
    x = df["Expenditure"].to_numpy()
    obs = ~np.isnan(x)
    z = np.where(obs, (x - x[obs].mean()) / x[obs].std(), 0.0)
    np.testing.assert_allclose(X, np.column_stack([cat, z, ~obs]), rtol=1e-12)


def test_prediction_is_the_observed_records_fit(table):
    """Income (numeric, 3 empty cells) on the padded predictors: OLS fitted to the records where
    Income is observed, NaN where it is missing."""
    df, schema = table
    m = _fit(df, schema)
    # a numeric model, as for a numeric identifying variable (the same code path)
    m.predictors_["Income"] = ["Marital", "Expenditure"]
    pred = m._predict(df, "Income")
    miss = df["Income"].isna().to_numpy()
    assert np.isnan(pred[miss]).all()
    kept = df.loc[~miss]
    X = m._design(kept, ["Marital", "Expenditure"], splines=True)
    hand = sm.OLS(kept["Income"].to_numpy(), sm.add_constant(X, has_constant="add")).fit()
    np.testing.assert_allclose(pred[~miss], hand.fittedvalues, rtol=1e-10)


def test_missing_identifying_value_is_kept_and_never_donated(table):
    df, schema = table
    m = _fit(df, schema)
    # a record in a small cell is a recipient, empty cells included (NaN is a cell value)
    assert m.recipients_[[5, 6, 40]].any()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        z = m.synthesize(3, random_seed=2).datasets
    empty = df["Marital"].isna().to_numpy()
    donors = ~m.recipients_ & ~empty
    allowed = set(df.loc[donors, "Marital"])
    for d in z:
        # the empty cells stay, and nobody else gets one
        np.testing.assert_array_equal(d["Marital"].isna().to_numpy(), empty)
        # recipients with an observed value take an observed donor's value
        rec = m.recipients_ & ~empty
        assert set(d.loc[rec, "Marital"]) <= allowed
        # non-recipients are unchanged, empty cells included
        pd.testing.assert_frame_equal(d.loc[~m.recipients_], df.loc[~m.recipients_])


def test_complete_table_takes_the_former_path(table):
    """The same table without empty cells gives the same release with and without the empty
    cells of a column nobody uses (predictors exclude it)."""
    df, schema = table
    full = df.dropna().reset_index(drop=True)
    sch = infer_schema(full, categorical=IV)
    preds = {c: [x for x in IV if x != c] + ["Age"] for c in IV}
    a = _fit(full, sch, predictors=preds).synthesize(1, random_seed=4).datasets[0]
    holes = full.copy()
    holes["Income"] = holes["Income"].where(np.arange(len(holes)) % 7 != 0)
    b = _fit(holes, infer_schema(holes, categorical=IV), predictors=preds).synthesize(
        1, random_seed=4).datasets[0]
    pd.testing.assert_frame_equal(a[IV], b[IV])


def test_save_load_with_empty_cells(table, tmp_path):
    df, schema = table
    m = _fit(df, schema)
    m.save(tmp_path / "pmm")
    back = load_model(tmp_path / "pmm")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = m.synthesize(1, random_seed=5).datasets[0]
        b = back.synthesize(1, random_seed=5).datasets[0]
    # (the saved table gives the column with empty cells back as floats)
    pd.testing.assert_frame_equal(a.astype({"Marital": float}), b.astype({"Marital": float}))
