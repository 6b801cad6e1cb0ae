"""Small-cell PMM with missing values (methods, Small-cell predictive mean matching: missing
values): a recipient's value is deleted and replaced whether observed or empty, donors give
observed values only, other records keep their empty cells; predictors with empty cells are
padded as synthpop's ``padModel`` does (value 0 and an indicator; a categorical empty cell a
level of its own). Checked against the design and the least-squares fit written by hand.
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


def test_recipients_leave_empty_cells_and_donors_give_observed_values(table):
    df, schema = table
    m = _fit(df, schema)
    empty = df["Marital"].isna().to_numpy()
    # an empty cell is a value of the cross-table: these records are alone in their cells
    assert m.recipients_[empty].all()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rel = m.synthesize(3, random_seed=2)
    assert rel.imputed_columns == ["Marital"]
    donors = ~m.recipients_ & ~empty
    allowed = set(df.loc[donors, "Marital"])
    for d in rel.datasets:
        # every recipient takes an observed donor's value, its empty cell included
        assert set(d.loc[m.recipients_, "Marital"]) <= allowed
        # non-recipients are unchanged, empty cells included
        pd.testing.assert_frame_equal(d.loc[~m.recipients_], df.loc[~m.recipients_])
    # a non-recipient's empty cell is never a donor's value: every record of the empty cells
    # is a recipient here, so no release has one
    assert not any(d["Marital"].isna().any() for d in rel.datasets)


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


def test_non_recipients_keep_empty_cells_that_are_never_donated(table):
    df, _ = table
    df = df.copy()
    big = df.index[(df["Urban"] == df["Urban"].mode()[0])
                   & (df["Tenure"] == df["Tenure"].mode()[0])][:12]
    df.loc[big, "Marital"] = None  # a cell of 12 records with the empty cell: no recipient
    m = _fit(df, infer_schema(df, categorical=IV))
    empty = df["Marital"].isna().to_numpy()
    kept = empty & ~m.recipients_
    assert kept.sum() >= 12
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        z = m.synthesize(3, random_seed=6).datasets
    for d in z:
        np.testing.assert_array_equal(d["Marital"].isna().to_numpy(), kept)
