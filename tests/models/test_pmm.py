"""Small-cell selection + predictive mean matching (Hawala 2008; SPEC §3.7, seed 001)."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from bayes_risk.data import infer_schema, make_ce_like
from bayes_risk.exceptions import NotFittedError, SchemaError, ValidationError
from bayes_risk.models import get_synthesizer
from bayes_risk.models.trees.pmm import (
    SmallCellPMMSynthesizer,
    expected_score,
    match_donor,
    min_cell_count,
    sensitive_cells,
)

RTOL, ATOL = 1e-6, 1e-9
IV = ["AGE", "EDU", "PRO"]

# S001 Appendix Table 1: AGE (4 groups) × EDU (4) × PRO (Worker, Clerk, Manager)
TABLE1 = {
    1: [(15, 0, 0), (0, 0, 0), (0, 0, 0), (0, 0, 0)],
    2: [(27, 0, 0), (7, 1, 0), (12, 8, 0), (0, 0, 0)],
    3: [(759, 0, 0), (90, 123, 0), (143, 653, 142), (2, 87, 220)],
    4: [(12, 0, 0), (0, 0, 0), (0, 3, 4), (0, 0, 5)],
}


@pytest.fixture(scope="module")
def hawala():
    rows = []
    for age, edus in TABLE1.items():
        for edu, counts in enumerate(edus, start=1):
            for pro, c in enumerate(counts, start=1):
                rows += [(age, edu, pro)] * c
    df = pd.DataFrame(rows, columns=IV)
    return df, infer_schema(df, ordinal=IV)


@pytest.fixture(scope="module")
def hawala_syn(hawala):
    df, schema = hawala
    model = SmallCellPMMSynthesizer(identifying=IV, threshold=5).fit(df, schema=schema)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return model, model.synthesize(1, random_seed=2008)


# ----- SPEC worked examples -----------------------------------------------------------------------
def test_donor_matching_examples():
    donors = np.array([1.0, 2.5, 4.0])  # values A, B, C
    assert match_donor(2.2, donors, tie="first")[0] == 1  # → B
    idx, tied = match_donor(1.75, donors, tie="first")
    assert tied.tolist() == [0, 1] and idx == 0
    picks = {match_donor(1.75, donors, rng=np.random.default_rng(s))[0] for s in range(40)}
    assert picks == {0, 1}  # ties broken at random between A and B only
    # constraints remove donors; none allowed → -1
    assert match_donor(2.2, donors, allowed=np.array([True, False, True]), tie="first")[0] == 0
    assert match_donor(2.2, donors, allowed=np.zeros(3, bool))[0] == -1
    # a single allowed donor far away is chosen, never a disallowed one (no inf-inf "ties")
    for s in range(20):
        j, tied = match_donor(2.2, donors, allowed=np.array([False, False, True]),
                              rng=np.random.default_rng(s))
        assert j == 2 and tied.tolist() == [2]
    # probability vectors: Euclidean distance
    P = np.array([[0.8, 0.2], [0.5, 0.5], [0.1, 0.9]])
    assert match_donor(np.array([0.45, 0.55]), P, tie="first")[0] == 1
    with pytest.raises(ValidationError, match="tie='random' needs"):
        match_donor(1.75, donors)


def test_expected_score_example():
    assert float(expected_score(np.array([0.2, 0.5, 0.3]))) == pytest.approx(2.1, rel=RTOL)


def test_hawala_fixture_moments_and_recipients(hawala):
    df, _ = hawala
    assert len(df) == 2313
    np.testing.assert_allclose(df.mean().to_numpy(), [2.973627, 2.337224, 1.699092], atol=5e-7)
    np.testing.assert_allclose(df.var(ddof=1).to_numpy(), [0.059425, 1.198514, 0.531388],
                               atol=5e-7)
    cells = sensitive_cells(df, IV, 5)
    got = {tuple(r[:3]): r[3] for r in cells.itertuples(index=False)}
    assert got == {(2, 2, 2): 1, (3, 4, 1): 2, (4, 3, 2): 3, (4, 3, 3): 4, (4, 4, 3): 5}
    assert cells["count"].sum() == 15
    assert min_cell_count(df, IV) == 1


def test_hawala_synthesis_properties(hawala, hawala_syn):
    df, _ = hawala
    model, z = hawala_syn
    assert get_synthesizer("pmm") is SmallCellPMMSynthesizer
    assert model.recipients_.sum() == 15
    assert z.m == 1 and z.method == "pmm"
    np.testing.assert_array_equal(z.synthesized_records, model.recipients_)
    d = z[0]
    rec = model.recipients_
    # donors untouched, total count unchanged, values always observed donor values
    pd.testing.assert_frame_equal(d[~rec], df[~rec])
    assert len(d) == len(df)
    for c in IV:
        assert d.loc[rec, c].isin(df.loc[~rec, c]).all()
    # reported post-synthesis minimum cell count is the real one
    assert z.extra["min_cell_count_after"] == [min_cell_count(d, IV)]
    assert z.extra["min_cell_count_before"] == 1
    assert z.extra["n_recipients"] == 15
    # the recipients left the five sensitive cells here (S001 reports a smallest cell of 8)
    assert z.extra["min_cell_count_after"][0] > 5
    assert z.extra["warnings"] == [[]]


def test_hawala_reproducible_and_tie_first(hawala):
    df, schema = hawala
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = SmallCellPMMSynthesizer(identifying=IV).fit(df, schema=schema)
        a, b = m.synthesize(2, random_seed=3), m.synthesize(2, random_seed=3)
        for x, y in zip(a, b, strict=False):
            pd.testing.assert_frame_equal(x, y)


def test_constraints_are_honoured(hawala):
    df, schema = hawala

    def no_old_managers(row, value):  # e.g. "no retired person is a manager"
        return not (row["AGE"] == 4 and value == 3)

    def young_only_worker(row, value):
        return row["AGE"] != 4 or value == 1

    m = SmallCellPMMSynthesizer(
        identifying=IV, constraints={"PRO": [no_old_managers, young_only_worker]}, tie="first")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        z = m.fit(df, schema=schema, synthesized=["PRO", "EDU"]).synthesize(1, random_seed=1)
    d = z[0]
    rec = m.recipients_
    assert not ((d.loc[rec, "AGE"] == 4) & (d.loc[rec, "PRO"] != 1)).any()
    assert z.settings["constraints"] == {"PRO": ["no_old_managers", "young_only_worker"]}
    pd.testing.assert_series_equal(d["AGE"], df["AGE"])  # AGE not synthesized


def test_nominal_and_continuous_models():
    # CE-like data: cells of Urban × Marital × Tenure; synthesize Marital (nominal, MNLogit)
    # and a numeric IV (Educ, additive spline regression)
    df = make_ce_like(800, random_seed=4)
    schema = infer_schema(df, categorical=["Urban", "Marital", "Tenure"])
    ivs = ["Urban", "Marital", "Tenure", "Educ"]
    m = SmallCellPMMSynthesizer(identifying=ivs, threshold=2, tie="first")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m.fit(df, schema=schema, synthesized=["Marital", "Educ"])
        pred_nom = m._predict(df, "Marital")
        pred_num = m._predict(df, "Educ")
        z = m.synthesize(1, random_seed=0)
    assert pred_nom.shape == (len(df), 5)
    np.testing.assert_allclose(pred_nom.sum(axis=1), 1.0, atol=1e-8)
    assert pred_num.shape == (len(df),)
    # additive splines beat the grand mean (R² > 0 on Educ, which depends on Age)
    r2 = 1 - np.var(df["Educ"] - pred_num) / np.var(df["Educ"])
    assert r2 > 0.01
    rec = m.recipients_
    assert rec.sum() > 0
    d = z[0]
    pd.testing.assert_frame_equal(d[~rec], df[~rec])
    assert d.loc[rec, "Educ"].isin(df.loc[~rec, "Educ"]).all()
    assert d.loc[rec, "Marital"].isin(df.loc[~rec, "Marital"]).all()
    pd.testing.assert_series_equal(d["Tenure"], df["Tenure"])


def test_errors(hawala):
    df, schema = hawala
    with pytest.raises(NotFittedError):
        SmallCellPMMSynthesizer(identifying=IV).synthesize(1)
    with pytest.raises(ValidationError, match=r"identifying \(the .*\) must be a non-empty"):
        SmallCellPMMSynthesizer().fit(df, schema=schema)
    with pytest.raises(SchemaError, match="AG"):
        SmallCellPMMSynthesizer(identifying=["AG"]).fit(df, schema=schema)
    with pytest.raises(ValidationError, match="threshold must be an integer >= 1"):
        SmallCellPMMSynthesizer(identifying=IV, threshold=0).fit(df, schema=schema)
    with pytest.raises(ValidationError, match="not an identifying variable"):
        SmallCellPMMSynthesizer(identifying=["AGE", "EDU"]).fit(
            df, schema=schema, synthesized=["PRO"]
        )
    with pytest.raises(ValidationError, match="constraints: column 'PRO' is not synthesized"):
        SmallCellPMMSynthesizer(identifying=IV, constraints={"PRO": lambda r, v: True}).fit(
            df, schema=schema, synthesized=["AGE"])
    with pytest.raises(ValidationError, match="tie must be"):
        SmallCellPMMSynthesizer(identifying=IV, tie="last").fit(df, schema=schema)


def test_no_sensitive_cells_returns_original(hawala):
    df, schema = hawala
    m = SmallCellPMMSynthesizer(identifying=["PRO"], threshold=5).fit(df, schema=schema)
    z = m.synthesize(1, random_seed=0)
    pd.testing.assert_frame_equal(z[0], df)
    assert z.extra["warnings"] == [["NO_SENSITIVE_CELLS"]]


def test_aggregated_ordered_logit_equals_statsmodels_full_fit():
    # the frequency-weighted fit on distinct patterns must reproduce OrderedModel on all records
    from statsmodels.miscmodels.ordinal_model import OrderedModel

    from bayes_risk.models.trees.pmm import _ordered_logit_proba

    rng = np.random.default_rng(0)
    n = 400
    x = rng.integers(0, 3, size=(n, 2)).astype(float)
    eta = 0.8 * x[:, 0] - 0.5 * x[:, 1]
    y = np.digitize(eta + rng.logistic(size=n), [-0.5, 0.7])
    p_ours, conv = _ordered_logit_proba(x, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = OrderedModel(y, x, distr="logit").fit(method="bfgs", disp=False, maxiter=2000)
    assert conv
    np.testing.assert_allclose(p_ours, ref.predict(), atol=1e-4)  # both stop at gtol 1e-5


def test_no_allowed_donor_keeps_values_and_warns(hawala):
    df, schema = hawala
    from bayes_risk.exceptions import DataWarning

    m = SmallCellPMMSynthesizer(identifying=IV, constraints=[lambda row, v: False]).fit(
        df, schema=schema, synthesized=["PRO"])
    with pytest.warns(DataWarning, match="still has only 1 record") as w:
        z = m.synthesize(1, random_seed=0)
    # the code the command line prints (warning [SMALL_CELLS_REMAIN]), not the class name
    assert [x.message.code for x in w if issubclass(x.category, DataWarning)] == [
        "SMALL_CELLS_REMAIN"]
    pd.testing.assert_frame_equal(z[0], df)
    assert z.extra["unmatched"] == [np.flatnonzero(m.recipients_).tolist()]
    assert z.extra["warnings"] == [["SMALL_CELLS_REMAIN", "NO_ALLOWED_DONOR"]]
