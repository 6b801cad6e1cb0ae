"""Random-forest synthesizer for categorical data (SPEC §3.5, seed 004); numeric columns are in
test_random_forest_numeric."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from bayes_risk.data import infer_schema, make_acs_like, make_ce_like
from bayes_risk.exceptions import NotFittedError, SchemaError, ValidationError
from bayes_risk.models import get_synthesizer
from bayes_risk.models.trees.forest_leaves import (
    distinct_rows,
    forest_apply_distinct,
    leaf_probabilities,
)
from bayes_risk.models.trees.random_forest import RandomForestSynthesizer

RTOL, ATOL = 1e-6, 1e-9
CAT = ["Urban", "Marital", "Tenure"]


@pytest.fixture(scope="module")
def ce():
    df = make_ce_like(1500, random_seed=5)
    return df, infer_schema(df, categorical=CAT)


# ----- SPEC §3.5.2 worked examples --------------------------------------------------------------
def test_vote_example():
    # 500 pure leaves: 300 white, 100 black, 75 Asian, 25 American Indian (S004)
    counts = np.zeros((500, 4))
    counts[np.arange(500), np.repeat([0, 1, 2, 3], [300, 100, 75, 25])] = 1
    np.testing.assert_allclose(leaf_probabilities(counts, "vote").mean(axis=0),
                               [0.6, 0.2, 0.15, 0.05], rtol=RTOL, atol=ATOL)


def test_vote_ties_split_equally_and_leaf_counts_ignored():
    q = leaf_probabilities(np.array([[2, 2, 0], [5, 1, 0], [0, 0, 3]]), "vote")
    np.testing.assert_allclose(q, [[0.5, 0.5, 0], [1, 0, 0], [0, 0, 1]])


def test_leaf_dirichlet_example():
    counts = np.array([[2, 0, 0], [0, 1, 0], [1, 1, 0], [3, 0, 0]])
    np.testing.assert_allclose(leaf_probabilities(counts, "leaf_dirichlet", alpha=0.0).mean(axis=0),
                               [0.625, 0.375, 0.0], rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(leaf_probabilities(counts, "leaf_dirichlet", alpha=1.0).mean(axis=0),
                               [0.479167, 0.316667, 0.204167], rtol=1e-5)
    with pytest.raises(ValidationError, match="probabilities must be"):
        leaf_probabilities(counts, "majority")
    with pytest.raises(ValidationError, match="alpha must be"):
        leaf_probabilities(counts, "leaf_dirichlet", alpha=-1)


# ----- fitting ----------------------------------------------------------------------------------
def test_forests_grown_on_replaced_records_only_with_spec_defaults(ce):
    df, schema = ce
    mask = np.asarray(df["Age"] > 60)
    model = RandomForestSynthesizer(n_trees=20).fit(df, schema=schema, synthesized=["Tenure"],
                                                    records=mask, random_seed=1)
    rf = model.forests_["Tenure"]
    p = len(model.predictors_["Tenure"])
    assert p == 6  # procedure A: all other columns
    assert rf.estimators_[0].max_features == int(np.floor(np.sqrt(p)))
    assert rf.criterion == "gini" and rf.bootstrap
    # each tree's bootstrap sample has n_replaced draws from the replaced records
    assert all(len(s) == mask.sum() for s in rf.estimators_samples_)
    # leaves are pure in their bootstrap sample unless records share all predictor values
    table, offs = model.state_.tables["Tenure"]
    is_leaf = np.concatenate([e.tree_.children_left == -1 for e in rf.estimators_])
    top = np.round(table[is_leaf].max(axis=1), 12)
    assert np.isin(top, [1.0, 0.5, 1 / 3, 0.25]).all()
    assert (top == 1.0).mean() > 0.95


def test_leaf_counts_recomputed_from_bootstrap(ce):
    df, schema = ce
    model = RandomForestSynthesizer(
        n_trees=5, probabilities="leaf_dirichlet", alpha=0.0, min_samples_leaf=20
    ).fit(df, schema=schema, synthesized=["Marital"], random_seed=3)
    rf = model.forests_["Marital"]
    table, offs = model.state_.tables["Marital"]
    fitted = model.state_.table.values
    X = np.column_stack([fitted[p] for p in model.predictors_["Marital"]]).astype(np.float32)
    y = model.state_.table.values["Marital"].astype(int)
    est, s = rf.estimators_[2], rf.estimators_samples_[2]
    leaves = est.apply(X[s])
    leaf = leaves[0]
    cnt = np.bincount(y[s][leaves == leaf], minlength=5)
    np.testing.assert_allclose(table[offs[2] + leaf], cnt / cnt.sum())
    # sklearn's stored class fractions agree (classes present in training are 0..4 here)
    np.testing.assert_allclose(est.tree_.value[leaf, 0], cnt / cnt.sum())


def test_ordering_and_procedure_b(ce):
    df, schema = ce
    masks = {"Tenure": np.asarray(df["Age"] > 30), "Marital": np.asarray(df["Age"] > 50),
             "Urban": np.asarray(df["Age"] > 50)}
    m = RandomForestSynthesizer(n_trees=5).fit(
        df, schema=schema, synthesized=["Marital", "Urban", "Tenure"], records=masks, random_seed=0
    )
    # decreasing amount of synthesis; tie Marital/Urban → fewer categories (Urban: 2) first
    assert m.visit_sequence_ == ["Tenure", "Urban", "Marital"]
    user = RandomForestSynthesizer(n_trees=5, visit_sequence=["Urban", "Marital", "Tenure"]).fit(
        df, schema=schema, synthesized=["Marital", "Urban", "Tenure"], records=masks, random_seed=0
    )
    assert user.visit_sequence_ == ["Urban", "Marital", "Tenure"]
    r1 = RandomForestSynthesizer(n_trees=5, tie_order="random").fit(
        df, schema=schema, synthesized=["Marital", "Urban"], random_seed=4
    )
    r2 = RandomForestSynthesizer(n_trees=5, tie_order="random").fit(
        df, schema=schema, synthesized=["Marital", "Urban"], random_seed=4
    )
    assert r1.visit_sequence_ == r2.visit_sequence_
    with pytest.raises(ValidationError, match="procedure 'B' requires"):
        RandomForestSynthesizer(n_trees=5, procedure="B").fit(
            df,
            schema=schema,
            synthesized=["Marital", "Tenure"],
            records={"Marital": masks["Marital"], "Tenure": masks["Tenure"]},
            random_seed=0,
        )
    b = RandomForestSynthesizer(n_trees=5, procedure="B").fit(
        df, schema=schema, synthesized=["Marital", "Urban", "Tenure"], random_seed=0
    )
    first, second, third = b.visit_sequence_
    unsyn = ["Age", "Educ", "Expenditure", "Income"]
    assert b.predictors_[first] == unsyn
    assert b.predictors_[second] == unsyn + [first]
    assert b.predictors_[third] == unsyn + [first, second]


def test_oob_only_grows_enough_trees(ce):
    df, schema = ce
    model = RandomForestSynthesizer(n_trees=50, oob_only=True, min_oob_trees=40).fit(
        df, schema=schema, synthesized=["Tenure"], random_seed=2
    )
    ib = model.state_.inbag["Tenure"]
    assert (~ib).sum(axis=0).min() >= 40
    assert model.n_trees_["Tenure"] > 50 and model.n_trees_["Tenure"] % 50 == 0
    # probabilities only use out-of-bag trees: compare with a direct computation for record 0
    fitted = model.state_.table.values
    X = np.column_stack([fitted[p] for p in model.predictors_["Tenure"]]).astype(np.float32)
    p0 = model.predict_proba("Tenure", X[:1], np.array([0]))[0]
    rf = model.forests_["Tenure"]
    y = model.state_.table.values["Tenure"].astype(int)
    votes = []
    for b, (est, s) in enumerate(zip(rf.estimators_, rf.estimators_samples_, strict=False)):
        if ib[b, 0]:
            continue
        leaf = est.apply(X[:1])[0]
        cnt = np.bincount(y[s][est.apply(X[s]) == leaf], minlength=5)
        votes.append(leaf_probabilities(cnt, "vote"))
    np.testing.assert_allclose(p0, np.mean(votes, axis=0))
    # out-of-bag synthesis reproduces the original value less often than all-tree synthesis
    z_oob = model.synthesize(2, random_seed=1)
    z_all = (
        RandomForestSynthesizer(n_trees=50)
        .fit(df, schema=schema, synthesized=["Tenure"], random_seed=2)
        .synthesize(2, random_seed=1)
    )
    same_oob = np.mean([(d["Tenure"] == df["Tenure"]).mean() for d in z_oob])
    same_all = np.mean([(d["Tenure"] == df["Tenure"]).mean() for d in z_all])
    assert same_oob < same_all


# ----- synthesis ----------------------------------------------------------------------------------
def test_partial_synthesis_reproducibility_and_provenance(ce):
    df, schema = ce
    assert get_synthesizer("rf") is RandomForestSynthesizer
    mask = np.asarray(df["Income"] > df["Income"].median())
    a = RandomForestSynthesizer(n_trees=30, n_jobs=1).fit(
        df, schema=schema, synthesized=["Tenure", "Marital"], records=mask, random_seed=8
    )
    b = RandomForestSynthesizer(n_trees=30, n_jobs=2).fit(
        df, schema=schema, synthesized=["Tenure", "Marital"], records=mask, random_seed=8
    )
    za, zb = a.synthesize(3, random_seed=5), b.synthesize(3, random_seed=5)
    for x, y in zip(za, zb, strict=False):
        pd.testing.assert_frame_equal(x, y)
    assert not za[0].equals(a.synthesize(3, random_seed=6)[0])
    assert za.method == "rf" and za.random_seed == 5
    np.testing.assert_array_equal(za.synthesized_records, mask)
    assert za.extra["n_replaced"] == {"Tenure": int(mask.sum()), "Marital": int(mask.sum())}
    for d in za:
        pd.testing.assert_frame_equal(d[~mask], df[~mask])
        assert (d.dtypes == df.dtypes).all()
        assert d["Tenure"].isin(schema["Tenure"].levels).all()


def test_pandas_categorical_columns_keep_dtype():
    a = make_acs_like(400, random_seed=3)
    z = (
        RandomForestSynthesizer(n_trees=10)
        .fit(a, synthesized=["SEX", "RACE"], random_seed=0)
        .synthesize(1, random_seed=0)
    )
    assert z[0]["RACE"].dtype == a["RACE"].dtype
    assert list(z[0].columns) == list(a.columns)


def test_errors(ce):
    df, schema = ce
    with pytest.raises(NotFittedError):
        RandomForestSynthesizer().synthesize(1)
    # numeric columns are synthesized (test_random_forest_numeric), but not with missing values
    holes = df.assign(Income=df["Income"].where(np.arange(len(df)) % 5 > 0))
    with pytest.raises(ValidationError, match="column 'Income' is continuous with missing"):
        RandomForestSynthesizer(n_trees=5).fit(holes, schema=schema, synthesized=["Income"])
    with pytest.raises(SchemaError, match="Tenur"):
        RandomForestSynthesizer(n_trees=5).fit(df, schema=schema, synthesized=["Tenur"])
    with pytest.raises(ValidationError, match="n_trees must be an integer >= 1"):
        RandomForestSynthesizer(n_trees=0).fit(df, schema=schema, synthesized=["Tenure"])
    with pytest.raises(ValidationError, match="procedure must be"):
        RandomForestSynthesizer(procedure="C").fit(df, schema=schema, synthesized=["Tenure"])
    with pytest.raises(ValidationError, match="visit_sequence must list exactly"):
        RandomForestSynthesizer(n_trees=5, visit_sequence=["Tenure"]).fit(
            df, schema=schema, synthesized=["Tenure", "Urban"]
        )
    with pytest.raises(ValidationError, match=r"records: column 'Urban' is not synthesized"):
        RandomForestSynthesizer(n_trees=5).fit(
            df, schema=schema, synthesized=["Tenure"], records={"Urban": np.ones(len(df), bool)}
        )


def test_marginals_and_regression_agree_with_original():
    """m = 5 full synthesis of Tenure and Marital (procedure A, 100 trees) on 3,000 demo records.

    Marginal proportions: per-dataset variance ≤ about 2 p(1−p)/n (a draw per record from a
    distribution estimated on the same records), so the average over m is within
    4·sqrt(2 p(1−p)/(n m)) unless biased. Regression (linear probability model of owning with a
    mortgage on age, married, rural and log income): |q̄_m − q_obs| ≤ 3·sqrt(T_p) with Reiter's
    partial-synthesis variance T_p = b_m/m + ū_m.
    """
    df = make_ce_like(3000, random_seed=11)
    schema = infer_schema(df, categorical=CAT)
    m, n = 5, len(df)
    z = (
        RandomForestSynthesizer(n_trees=100)
        .fit(df, schema=schema, synthesized=["Tenure", "Marital"], random_seed=1)
        .synthesize(m, random_seed=2)
    )
    for col, levels in [("Tenure", [1, 2, 4]), ("Marital", [1, 2, 3, 5])]:
        for lev in levels:
            p = (df[col] == lev).mean()
            pbar = np.mean([(d[col] == lev).mean() for d in z])
            assert abs(pbar - p) <= 4 * np.sqrt(2 * p * (1 - p) / (n * m)), (col, lev)

    def ols(d):
        y = (d["Tenure"].to_numpy() == 1).astype(float)
        X = np.column_stack(
            [
                np.ones(len(d)),
                d["Age"].to_numpy(float) / 10,
                (d["Marital"].to_numpy() == 1).astype(float),
                (d["Urban"].to_numpy() == 2).astype(float),
                np.log1p(np.maximum(d["Income"].to_numpy(float), 0)),
            ]
        )
        beta, *_ = np.linalg.lstsq(X, y, rcond=None)
        r = y - X @ beta
        return beta, np.diag(r @ r / (len(y) - X.shape[1]) * np.linalg.inv(X.T @ X))

    q_obs, _ = ols(df)
    qs, us = map(np.array, zip(*[ols(d) for d in z], strict=False))
    T = qs.var(0, ddof=1) / m + us.mean(0)
    assert np.all(np.abs(qs.mean(0) - q_obs) <= 3 * np.sqrt(T)), (qs.mean(0), q_obs, np.sqrt(T))


def test_unsplittable_leaves_vote_majority_and_class_shares_keep_the_margin():
    """Caiola & Reiter's trees are grown to purity and each votes for its leaf's class; a leaf
    whose records share every predictor but not the class cannot be split and votes for its
    majority (``"vote"``, R's ``randomForest``), which moves the synthetic margin towards the
    commonest class (the gallery's NYexample page). ``"leaf_dirichlet"`` with ``alpha=0`` votes
    in proportion to the leaf's classes and keeps the margin.

    The outcome (three classes, 60/30/10 %) is independent of two categorical predictors with
    6 combinations, so every leaf is impure. Class shares: the synthetic margin pooled over
    m = 5 datasets of n = 2,000 draws matches the original within 4·sqrt(2 p(1−p)/(n m)) (the 2
    allows for the shares being estimated on the same records). Majority votes: the commonest
    class takes more than 90 %.
    """
    rng = np.random.default_rng(34)
    n, m = 2000, 5
    df = pd.DataFrame({"A": rng.integers(0, 3, n), "B": rng.integers(0, 2, n),
                       "Y": rng.choice(3, n, p=[0.6, 0.3, 0.1])})
    schema = infer_schema(df, categorical=["A", "B", "Y"])

    def pooled_share(**settings) -> np.ndarray:
        z = (RandomForestSynthesizer(n_trees=20, **settings)
             .fit(df, schema=schema, synthesized=["Y"], random_seed=1)
             .synthesize(m, random_seed=2))
        return np.array([np.mean([(d["Y"] == lev).mean() for d in z]) for lev in (0, 1, 2)])

    shares = pooled_share(probabilities="leaf_dirichlet", alpha=0.0)
    for lev in (0, 1, 2):
        p = (df["Y"] == lev).mean()
        assert abs(shares[lev] - p) <= 4 * np.sqrt(2 * p * (1 - p) / (n * m)), (lev, p, shares)
    assert pooled_share()[0] > 0.9


# ----- routing each distinct record once --------------------------------------------------------
def test_distinct_rows_merge_only_identical_float32_rows():
    X = np.array([[1.0, 2.0], [1.0, 2.0 + 1e-12], [np.nan, 0.0], [np.nan, 0.0], [0.5, 2.0]])
    u, inv = distinct_rows(X)
    # 2 and 2 + 1e-12 are the same float32 (the value every tree compares); NaN rows merge
    assert u.dtype == np.float32 and u.shape == (3, 2)
    assert inv[0] == inv[1] and inv[2] == inv[3] and len({inv[0], inv[2], inv[4]}) == 3
    np.testing.assert_array_equal(u[inv], X.astype(np.float32))
    one, inv1 = distinct_rows(X[:1])
    assert one.shape == (1, 2) and inv1.tolist() == [0]


def test_forest_apply_distinct_is_apply_row_for_row(ce):
    from bayes_risk.models.trees.io import StoredForest

    df, schema = ce
    model = RandomForestSynthesizer(n_trees=15).fit(df, schema=schema, synthesized=["Tenure"],
                                                    random_seed=2)
    rf = model.forests_["Tenure"]
    X = np.column_stack([model.state_.table.values[p] for p in model.predictors_["Tenure"]])
    repeated = np.repeat(X[:40], 3, axis=0)[::-1]
    for Z in (X, repeated):  # every row distinct (numeric predictors); rows repeated
        np.testing.assert_array_equal(forest_apply_distinct(rf, Z), rf.apply(Z))
    # a saved (flattened) forest routes the same way
    stored = StoredForest.from_sklearn(rf)
    np.testing.assert_array_equal(forest_apply_distinct(stored, repeated), rf.apply(repeated))


def test_synthesis_probabilities_route_each_distinct_record_once(ce, monkeypatch):
    # the forest sees each distinct predictor row once; every record's probabilities are still
    # the mean over all trees of its leaves' tables (brute force, tree by tree)
    df, _ = ce
    model = RandomForestSynthesizer(n_trees=12).fit(
        df[CAT], schema=infer_schema(df[CAT], categorical=CAT), synthesized=["Urban", "Marital"],
        random_seed=8)
    rf = model.forests_["Marital"]
    fitted = model.state_.table.values
    X = np.column_stack([fitted[p] for p in model.predictors_["Marital"]]).astype(np.float32)
    n_distinct = len(np.unique(X, axis=0))
    assert n_distinct < len(X) / 10  # two categorical predictors: few distinct rows
    table, offs = model.state_.tables["Marital"]
    brute = sum(table[offs[b] + est.apply(X)].astype(np.float64)
                for b, est in enumerate(rf.estimators_)) / len(rf.estimators_)
    seen = []
    real = type(rf).apply
    monkeypatch.setattr(type(rf), "apply", lambda self, Z: seen.append(len(Z)) or real(self, Z))
    P = model.predict_proba("Marital", X, np.arange(len(X)))
    assert seen == [n_distinct]
    np.testing.assert_allclose(P, brute, rtol=1e-12, atol=0)
    monkeypatch.setattr(type(rf), "apply", real)
    # bitwise the numbers of routing and averaging every record
    np.testing.assert_array_equal(P, model._mean_leaf_table(rf.apply(X), table, offs))


@given(
    arrays(
        np.int64, st.tuples(st.integers(1, 6), st.integers(2, 5)), elements=st.integers(0, 4)
    ).filter(lambda a: (a.sum(axis=1) > 0).all()),
    st.sampled_from(["vote", "leaf_dirichlet"]),
    st.floats(0, 3),
)
def test_property_synthesis_probabilities_are_distributions(counts, rule, alpha):
    p = leaf_probabilities(counts, rule, alpha).mean(axis=0)
    assert np.all(p >= 0) and p.sum() == pytest.approx(1.0, rel=1e-12)
    if rule == "vote":
        # only classes that win some leaf get probability
        assert np.all(p[counts.max(axis=0) == 0] == 0)
    elif alpha > 0:
        assert np.all(p > 0)
