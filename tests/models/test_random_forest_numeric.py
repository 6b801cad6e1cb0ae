"""Random forests for numeric columns: the forest's weighted empirical distribution of the leaf
donors (Meinshausen 2006; Caiola & Reiter 2010 §5), checked against an enumeration of
scikit-learn's own trees and bootstrap samples on a tiny table."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from bayes_risk.data import infer_schema, make_ce_like
from bayes_risk.exceptions import NotSupportedError, ValidationError
from bayes_risk.models import load_model
from bayes_risk.models.trees.forest_leaves import draw_donors, forest_apply_distinct
from bayes_risk.models.trees.random_forest import RandomForestSynthesizer


def _tiny(n: int = 14) -> tuple[pd.DataFrame, object]:
    rng = np.random.default_rng(3)
    g = rng.integers(0, 2, n)
    x = np.round(rng.normal(0, 1, n), 1)
    y = np.round(10 + 5 * g + 2 * x + rng.normal(0, 1, n), 1)
    y[:3] = y[3]  # a repeated value: its weights add up
    df = pd.DataFrame({"g": pd.Categorical(np.array(["a", "b"])[g]), "x": x, "y": y})
    return df, infer_schema(df, categorical=["g"])


def _enumerated(rf, X, n_train, valid=None):
    """Weight of training record t for row i: mean over the (valid) trees b of
    ``c_bt 1{leaf_b(t) = leaf_b(x_i)} / sum_t' c_bt' 1{leaf_b(t') = leaf_b(x_i)}``, from each
    scikit-learn tree's ``apply`` and its bootstrap sample, one (row, tree) at a time."""
    Xf = X.astype(np.float32)
    W = np.zeros((X.shape[0], n_train))
    for i in range(X.shape[0]):
        used = 0
        for b, (est, s) in enumerate(zip(rf.estimators_, rf.estimators_samples_, strict=True)):
            if valid is not None and not valid[i, b]:
                continue
            used += 1
            c = np.bincount(s, minlength=n_train).astype(float)
            same = est.apply(Xf[:n_train]) == est.apply(Xf[i:i + 1])[0]
            W[i] += c * same / (c * same).sum()
        W[i] /= used
    return W


def _by_value(W, y):
    values = np.unique(y)
    return values, np.stack([W[:, y == v].sum(axis=1) for v in values], axis=1)


@pytest.mark.parametrize("settings", [{}, {"min_samples_leaf": 2, "max_features": 2},
                                      {"oob_only": True, "min_oob_trees": 3}])
def test_weights_and_draws_match_the_enumerated_forest(settings):
    df, schema = _tiny()
    syn = RandomForestSynthesizer(n_trees=9, random_seed=4, **settings).fit(
        df, schema=schema, synthesized=["y"])
    rf = syn.forests_["y"]
    n = len(df)
    X = np.column_stack([df["g"].cat.codes.to_numpy(float), df["x"].to_numpy(float)])
    y = df["y"].to_numpy(float)
    # what scikit-learn grows on: every leaf's value is the bootstrap-count-weighted mean of the
    # in-bag records in it (records of count 0 are in no leaf's statistics)
    for est, s in zip(rf.estimators_, rf.estimators_samples_, strict=True):
        c = np.bincount(s, minlength=n)
        leaf = est.apply(X.astype(np.float32))
        for L in np.unique(leaf[c > 0]):
            inl = (leaf == L) & (c > 0)
            assert est.tree_.value[L].ravel()[0] == pytest.approx(
                (c[inl] * y[inl]).sum() / c[inl].sum(), rel=1e-12)
    valid = None
    if syn.oob_only:
        valid = np.stack([np.bincount(s, minlength=n) == 0 for s in rf.estimators_samples_]).T
    values, expected = _by_value(_enumerated(rf, X, n, valid), y)
    got_values, got = syn.predict_distribution("y", X, np.arange(n))
    np.testing.assert_array_equal(got_values, values)
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(got.sum(axis=1), 1.0, rtol=1e-12)
    # many seeded draws against the enumerated weights: each frequency is binomial(R, w) with
    # sd <= 0.5/sqrt(R) (0.0035 for the 20,000 draws per record, 0.0079 for the 4,000 calls of
    # the Bayesian bootstrap, one draw per record per call); tolerance 5 sd + 1e-3
    leaves = forest_apply_distinct(rf, X)
    for bb in (False, True):
        R = 4_000 if bb else 20_000
        rng = np.random.default_rng(11)
        if bb:  # fresh Gamma(count) weights per call: calls of one draw per record
            draws = np.stack([draw_donors(syn.state_.tables["y"], leaves, rng, valid, True)
                              for _ in range(R)])
        else:
            draws = draw_donors(syn.state_.tables["y"], np.repeat(leaves, R, axis=0), rng,
                                None if valid is None else np.repeat(valid, R, axis=0))
            draws = draws.reshape(n, R).T
        freq = np.stack([(draws == v).mean(axis=0) for v in values], axis=1)
        sd = np.sqrt(expected * (1 - expected) / R)
        assert np.all(np.abs(freq - expected) <= 5 * sd + 1e-3), (bb, np.abs(freq - expected).max())
        assert np.all(freq[expected == 0] == 0)  # never a value outside the record's leaves


def test_release_draws_leaf_donors_and_keeps_the_rest():
    df, schema = _tiny(40)
    mask = np.arange(40) % 2 == 0
    syn = RandomForestSynthesizer(n_trees=15, min_samples_leaf=3, donor="bayes_bootstrap",
                                  random_seed=2).fit(df, schema=schema, synthesized=["y"],
                                                     records=mask)
    z = syn.synthesize(3, random_seed=5)
    assert z.method == "rf" and z.proper is False
    X = np.column_stack([df["g"].cat.codes.to_numpy(float), df["x"].to_numpy(float)])[mask]
    values, W = syn.predict_distribution("y", X, np.arange(mask.sum()))
    for d in z:
        pd.testing.assert_frame_equal(d[~mask], df[~mask])
        k = np.searchsorted(values, d["y"].to_numpy()[mask])
        assert np.all(values[k] == d["y"].to_numpy()[mask])  # a donor value ...
        assert np.all(W[np.arange(k.size), k] > 0)  # ... of the record's own leaves
    assert not z[0]["y"].equals(z[1]["y"])  # fresh draws per dataset
    # the same seed gives the same release
    pd.testing.assert_frame_equal(syn.synthesize(3, random_seed=5)[2], z[2])


@pytest.fixture(scope="module")
def ce():
    df = make_ce_like(300, random_seed=5)
    return df, infer_schema(df, categorical=["Urban", "Marital", "Tenure"])


def test_mixed_columns_groups_and_dtypes(ce):
    df, schema = ce
    syn = RandomForestSynthesizer(n_trees=20, group_by="Urban", min_group_size=100,
                                  random_seed=1).fit(
        df, schema=schema, synthesized=["Age", "Income", "Tenure"])
    # numeric columns after the categorical one among equal amounts (fewer_categories)
    assert syn.visit_sequence_[0] == "Tenure"
    d = syn.synthesize(1, random_seed=2)[0]
    assert d.dtypes.equals(df.dtypes)
    for code, lab in enumerate(schema["Urban"].levels):
        rows = (df["Urban"] == lab).to_numpy()
        src = df["Income"][rows] if code in syn.group_forests_["Income"] else df["Income"]
        assert d["Income"][rows].isin(src).all()  # donors of the record's group forest
    assert d["Age"].isin(df["Age"]).all()
    with pytest.raises(NotSupportedError, match="column 'Age' is count") as e:
        syn.plugin_likelihood(df)
    assert e.value.code == "MODEL_UNSUITED"


def test_settings_and_bad_input(ce):
    df, schema = ce
    with pytest.raises(ValidationError,
                       match="donor must be 'uniform' or 'bayes_bootstrap'. Got 'polya'"):
        RandomForestSynthesizer(donor="polya").fit(df, schema=schema, synthesized=["Income"])
    holes = df.assign(Income=df["Income"].where(np.arange(len(df)) % 7 > 0))
    with pytest.raises(ValidationError, match="column 'Income' is continuous with missing") as e:
        RandomForestSynthesizer(n_trees=5).fit(holes, schema=schema, synthesized=["Income"])
    assert e.value.code == "MISSING_VALUES"
    syn = RandomForestSynthesizer(n_trees=5, random_seed=0).fit(
        df, schema=schema, synthesized=["Income", "Tenure"])
    X = np.zeros((2, len(syn.predictors_["Income"])))
    with pytest.raises(ValidationError, match="'Income' is continuous; predict_proba") as e:
        syn.predict_proba("Income", X, np.full(2, -1))
    assert e.value.code == "WRONG_DTYPE"
    with pytest.raises(ValidationError, match="'Tenure' is categorical; predict_distribution"):
        syn.predict_distribution("Tenure", X, np.full(2, -1))
    with pytest.raises(ValidationError, match="column 'Age' is not synthesized"):
        syn.predict_distribution("Age", X, np.full(2, -1))


@pytest.mark.parametrize("settings", [
    {"donor": "bayes_bootstrap", "group_by": "Urban", "min_group_size": 100},
    {"oob_only": True, "min_oob_trees": 4}])
def test_save_load_round_trip(ce, tmp_path, settings):
    df, schema = ce
    syn = RandomForestSynthesizer(n_trees=15, random_seed=1, **settings).fit(
        df, schema=schema, synthesized=["Income", "Expenditure", "Tenure"])
    loaded = load_model(syn.save(tmp_path / "m"))
    assert loaded.get_params() == syn.get_params()
    a, b = syn.synthesize(2, random_seed=9), loaded.synthesize(2, random_seed=9)
    for x, y in zip(a, b, strict=True):
        pd.testing.assert_frame_equal(x, y)
    X = np.column_stack([df[p].to_numpy(float) for p in syn.predictors_["Income"]])[:20]
    for got, want in zip(loaded.predict_distribution("Income", X, np.full(20, -1)),
                         syn.predict_distribution("Income", X, np.full(20, -1)), strict=True):
        np.testing.assert_array_equal(got, want)


def test_command_line_fit_and_synthesize(ce, tmp_path):
    """``fit --method rf`` and ``synthesize --method rf`` on numeric columns, each the same
    release as the synthesizer fitted in the session."""
    import bayes_risk.cli as cli

    df, _ = ce
    path = tmp_path / "ce.csv"
    df.to_csv(path, index=False)
    df = pd.read_csv(path)
    schema = infer_schema(df, categorical=["Urban", "Marital", "Tenure"])
    common = ["--synthesize", "Income", "Tenure", "--categorical", "Urban", "Marital", "Tenure",
              "--n-trees", "12", "--min-samples-leaf", "3", "--random-seed", "4", "--quiet"]
    assert cli.main(["fit", str(path), "--method", "rf", *common, "--donor", "bayes-bootstrap",
                     "--out", str(tmp_path / "model")]) == 0
    assert cli.main(["synthesize", "--model", str(tmp_path / "model"), "-m", "2",
                     "--random-seed", "5", "--quiet", "--out", str(tmp_path / "a")]) == 0
    assert cli.main(["synthesize", str(path), "--method", "rf", *common, "--donor",
                     "bayes-bootstrap", "-m", "2", "--out", str(tmp_path / "b")]) == 0
    direct = RandomForestSynthesizer(n_trees=12, min_samples_leaf=3, donor="bayes_bootstrap",
                                     random_seed=4).fit(
        df, schema=schema, synthesized=["Income", "Tenure"], random_seed=4)
    from bayes_risk.data import SyntheticData

    a, b = SyntheticData.load(tmp_path / "a"), SyntheticData.load(tmp_path / "b")
    assert b.settings["donor"] == "bayes_bootstrap" and b.settings["min_samples_leaf"] == 3
    for x, y in zip(a, direct.synthesize(2, random_seed=5), strict=True):
        pd.testing.assert_frame_equal(x.reset_index(drop=True), y.reset_index(drop=True),
                                      check_dtype=False, check_exact=True)
    assert b[0]["Income"].isin(df["Income"]).all() and not b[0]["Income"].equals(df["Income"])


def test_check_synthesizer_on_its_default_table():
    """The contract checks, on check_data's table with a count column synthesized."""
    from bayes_risk.testing import check_data, check_synthesizer

    assert check_data(RandomForestSynthesizer)["n"].dtype.kind == "i"
    assert "check_persistence" in check_synthesizer(RandomForestSynthesizer(n_trees=10))


def test_rebuilt_from_the_release_and_attribute_risk_refused(ce):
    """A numeric release is rebuilt exactly from its manifest; attribute risk by the plug-in
    likelihood is refused with its reason, identification risk runs."""
    from bayes_risk.attribute import attribute_risk
    from bayes_risk.models import rebuild_synthesizer

    df, schema = ce
    syn = RandomForestSynthesizer(n_trees=10, donor="bayes_bootstrap").fit(
        df, schema=schema, synthesized=["Income", "Tenure"], random_seed=6)
    rel = syn.synthesize(2, random_seed=8)
    again = rebuild_synthesizer(df, rel)
    for a, b in zip(again.synthesize(2, random_seed=8), rel, strict=True):
        pd.testing.assert_frame_equal(a, b)
    with pytest.raises(NotSupportedError, match="'Income' is continuous") as e:
        attribute_risk(df, rel, model=syn.plugin_likelihood(df), records=[0], progressbar=False)
    assert e.value.code == "MODEL_UNSUITED"
    import bayes_risk as br

    res = br.identification_risk(df, rel, known=["Age", "Urban", "Tenure"],
                                 categorical=["Urban", "Marital", "Tenure"], progressbar=False)
    assert 0 < res.to_dict()["summary"]["expected_match_risk"] <= len(df)
