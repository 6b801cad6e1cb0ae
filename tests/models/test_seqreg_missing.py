"""Sequential regressions fitted to data with missing values (methods, Sequential Bayesian
regressions: missing values).

Checked against brute force: the record likelihood with a missing synthesized value equals the
sum over its levels (categorical) or the integral over its values (normal) of the completed
record's; the posterior with missing outcomes equals the exact posterior of the observed records;
a padded predictor's coefficients agree with least squares on the design written by hand.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import integrate
from scipy.special import logsumexp

from bayes_risk.exceptions import ConvergenceWarning, SchemaError, ValidationError
from bayes_risk.models.seqreg.seqreg import SequentialRegression


def _fit(df, **kw):
    seed = kw.pop("random_seed", 1)
    synthesized = kw.pop("synthesized", None)
    records = kw.pop("records", None)
    kw.setdefault("draws", 400)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return SequentialRegression.from_settings({"progressbar": False, **kw}).fit(
            df, synthesized=synthesized, records=records, random_seed=seed)


@pytest.fixture(scope="module")
def table():
    """x numeric and g categorical unsynthesized (both with empty cells), y normal and a
    three-level categorical synthesized (empty cells in both)."""
    rng = np.random.default_rng(7)
    n = 240
    x = rng.normal(size=n)
    g = rng.choice(["p", "q", "r"], n)
    y = 1.0 + 2.0 * x + (g == "q") + rng.normal(scale=0.7, size=n)
    eta = np.stack([np.zeros(n), 0.5 * x, -0.3 + 0.4 * y], axis=1)
    pr = np.exp(eta - logsumexp(eta, axis=1, keepdims=True))
    a = np.array(["lo", "mid", "hi"])[(rng.random(n)[:, None] > pr.cumsum(axis=1)).sum(axis=1)]
    df = pd.DataFrame({"x": x, "g": g.astype(object), "y": y, "a": a.astype(object)})
    df.loc[[3, 11, 40], "x"] = np.nan
    df.loc[[5, 60], "g"] = None
    df.loc[[7, 8, 90], "y"] = np.nan
    df.loc[[9, 100], "a"] = None
    return df


def test_missing_outcome_posterior_is_the_observed_records_exact_posterior(table):
    """A missing outcome that predicts nothing drops out of its regression: the draws are those
    of the fit to the observed records (same seed, bit for bit), and their mean is the least
    squares fit of those records."""
    df = table[["x", "y"]].copy()
    df.loc[[3, 11, 40], "x"] = 0.1  # complete predictors: the comparison is the outcome's alone
    full = _fit(df, synthesized=["y"], draws=4000)
    obs = _fit(df.dropna().reset_index(drop=True), synthesized=["y"], draws=4000)
    b1 = full.posterior_["posterior"]["y__beta"].values
    np.testing.assert_array_equal(b1, obs.posterior_["posterior"]["y__beta"].values)
    keep = df["y"].notna().to_numpy()
    X = np.column_stack([np.ones(keep.sum()), df["x"].to_numpy()[keep]])
    hat = np.linalg.lstsq(X, df["y"].to_numpy()[keep], rcond=None)[0]
    draws = b1.reshape(-1, 2)
    # Monte Carlo error of 4000 independent draws: 5 standard errors
    assert np.all(np.abs(draws.mean(axis=0) - hat) < 5 * draws.std(axis=0) / np.sqrt(4000))
    assert full.imputed_columns_ == ["y"]


def test_padded_predictors_match_least_squares_on_the_hand_design(table):
    df = table[["x", "g", "y"]].dropna(subset=["y"]).reset_index(drop=True)
    model = _fit(df, synthesized=["y"], draws=4000)
    design = model.designs_["y"]
    assert design.names == ("(Intercept)", "x", "x[missing]", "g[T.q]", "g[T.r]", "g[missing]")
    xv = df["x"].to_numpy()
    gv = df["g"].to_numpy()
    X = np.column_stack([np.ones(len(df)), np.nan_to_num(xv), np.isnan(xv),
                         gv == "q", gv == "r", pd.isna(gv)]).astype(float)
    np.testing.assert_array_equal(model.design_matrix(df, "y"), X)
    hat = np.linalg.lstsq(X, df["y"].to_numpy(), rcond=None)[0]
    draws = model.posterior_["posterior"]["y__beta"].values.reshape(-1, X.shape[1])
    assert np.all(np.abs(draws.mean(axis=0) - hat) < 5 * draws.std(axis=0) / np.sqrt(4000))


@pytest.fixture(scope="module")
def chain(table):
    """y then a (a predicted by x, g, y): a's missing values are integrated out; y's are too,
    but y predicts a, so y's empty cells are moved out of the table first."""
    df = table.dropna(subset=["y"]).reset_index(drop=True)
    return df, _fit(df, synthesized=["y", "a"], posterior_method="laplace", draws=300)


def test_missing_categorical_is_the_sum_over_its_levels(chain):
    df, model = chain
    rec = df.iloc[[0]].copy()
    rec["a"] = None
    got = model.record_loglik(rec)[:, 0]
    filled = pd.concat([rec.assign(a=lv) for lv in ["hi", "lo", "mid"]], ignore_index=True)
    np.testing.assert_allclose(got, logsumexp(model.record_loglik(filled), axis=1), rtol=1e-12)


def test_missing_normal_is_the_integral_over_its_values(table):
    """a then y: y predicts nothing, so its empty cell integrates to 1 (quadrature, 1e-8)."""
    df = table.dropna(subset=["a"]).reset_index(drop=True)
    model = _fit(df, synthesized=["a", "y"], order=["a", "y"], posterior_method="laplace",
                 draws=50)
    rec = df.iloc[[1]].copy()
    rec["y"] = np.nan
    got = model.record_loglik(rec)[:5, 0]

    def completed(t, h):
        return np.exp(model.record_loglik(rec.assign(y=t), draw_indices=[h])[0, 0])

    for h in range(5):
        val, _ = integrate.quad(completed, -30, 30, args=(h,), points=[0.0], limit=200)
        assert abs(np.log(val) - got[h]) < 1e-8


def test_release_imputes_synthesized_and_keeps_unsynthesized_empty_cells(chain):
    df, model = chain
    z = model.synthesize(2, random_seed=4).datasets
    for d in z:
        assert d[["y", "a"]].notna().all().all()
        pd.testing.assert_series_equal(d["x"], df["x"], check_names=False)
        assert d["g"].isna().to_numpy().tolist() == df["g"].isna().to_numpy().tolist()
    assert model.imputed_columns_ == ["a"]
    assert np.isfinite(model.dataset_loglik(z)).all()
    # selected records only: the others keep their values, empty cells included
    empty = np.flatnonzero(df["a"].isna().to_numpy())
    chosen = np.arange(empty[0] + 1, len(df))
    part = _fit(df, synthesized=["y", "a"], posterior_method="laplace", draws=50,
                records=chosen)
    d = part.synthesize(1, random_seed=4).datasets[0]
    assert pd.isna(d.loc[empty[0], "a"]) and d.loc[chosen, "a"].notna().all()


def test_save_load_and_refit_keep_the_padding(chain, tmp_path):
    df, model = chain
    model.save(tmp_path / "m")
    back = SequentialRegression.load(tmp_path / "m")
    assert back.designs_["a"].padded == ("x", "g")
    np.testing.assert_array_equal(back.record_loglik(df.head(12)), model.record_loglik(df.head(12)))
    syn = model.synthesize(1, random_seed=2).datasets[0]
    aug = model.fit_augmented(df, syn, random_seed=3)
    assert aug.designs_["a"].names == model.designs_["a"].names


def test_missing_values_the_chain_cannot_take_are_refused(table, chain):
    # y, missing in three records, predicts a: its imputation would couple the regressions
    with pytest.raises(ValidationError, match=r"column 'y' has 3 missing value\(s\) \(first at "
                       r"row 7\) and is a predictor of 'a'.*Put 'y' after 'a'") as e:
        _fit(table, synthesized=["y", "a"], posterior_method="laplace", draws=20)
    assert e.value.code == "MISSING_VALUES"
    # a record with an empty cell where the fitted data had none
    df, model = chain
    complete = _fit(df.dropna().reset_index(drop=True), synthesized=["y", "a"],
                    posterior_method="laplace", draws=20)
    with pytest.raises(ValidationError, match=r"records: column 'x' .* predictor of 'y'; the "
                       "model was fitted without missing values in this column"):
        complete.record_loglik(df.iloc[[3]])
    # y is observed everywhere in the fitted data, but a record may still miss it
    rec = df.iloc[[0]].copy()
    rec["y"] = np.nan
    with pytest.raises(ValidationError, match="column 'y' has 1 missing"):
        model.record_loglik(rec)
    # the one-variable neighbourhood needs the synthesized values
    cat = _fit(df[["g", "a"]].dropna(subset=["g"]).reset_index(drop=True), synthesized=["a"],
               posterior_method="laplace", draws=20)
    empty = np.flatnonzero(df["a"].isna().to_numpy())
    with pytest.raises(SchemaError, match="column 'a' is missing in row 0") as e:
        cat.neighbourhood_loglik(df.iloc[empty][["g", "a"]])
    assert e.value.code == "MISSING_VALUES"


def test_attribute_risk_integrates_out_a_missing_synthesized_value(chain):
    """The record's missing a is held out of the candidates (probability 0 where filled) and
    integrated out of every likelihood."""
    from bayes_risk.attribute import attribute_risk

    df, model = chain
    empty = int(np.flatnonzero(df["a"].isna().to_numpy())[0])
    syn = model.synthesize(2, random_seed=5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = attribute_risk(df, syn, model=model, records=[empty, 0], random_seed=5,
                             progressbar=False)
    assert res.settings["missing_values"] == "integrated_out"
    assert np.isfinite(res.records["p_true"].to_numpy()).all()
    # the record's candidates vary y only (a stays empty); the complete record's a has 2 more
    assert res.candidates[0].frame(model.schema_)["a"].isna().all()
    g = res.records["G"].to_numpy()
    assert g[0] == g[1] - 2
    assert np.isfinite(res.loglik[0]).all()


def test_cli_fit_and_synthesize_data_with_empty_cells(table, tmp_path, capsys):
    from bayes_risk.cli import main
    from bayes_risk.models import load_model

    csv = tmp_path / "d.csv"
    table.to_csv(csv, index=False)  # empty cells in every column
    base = ["fit", str(csv), "--method", "regression", "--categorical", "g", "a",
            "--posterior-method", "laplace", "--draws", "40", "--random-seed", "3", "--quiet"]
    # both synthesized columns have empty cells: neither may predict the other
    assert main([*base, "--synthesize", "y", "a", "--order", "a", "y", "--formula",
                 "y ~ x + g", "--out", str(tmp_path / "m")]) == 0
    m = load_model(tmp_path / "m")
    assert m.designs_["y"].padded == ("x", "g") and m.imputed_columns_ == ["y", "a"]
    assert main(["synthesize", "--model", str(tmp_path / "m"), "-m", "1", "--random-seed", "1",
                 "--quiet", "--out", str(tmp_path / "syn")]) == 0
    # the default order has y, which has empty cells, predict a: refused, naming both
    assert main([*base, "--synthesize", "y", "a", "--out", str(tmp_path / "bad")]) != 0
    assert "column 'y' has 3 missing value(s)" in capsys.readouterr().err


def test_declared_missing_codes_are_refused():
    from bayes_risk.data import infer_schema

    df = pd.DataFrame({"x": np.arange(20.0), "y": np.r_[np.arange(19.0), -8.0]})
    schema = infer_schema(df, missing_codes={"y": [-8]})
    with pytest.raises(ValidationError, match=r"column 'y' holds its declared missing-value "
                       r"code\(s\) \[-8.0\] in 1 record\(s\)") as e:
        SequentialRegression(progressbar=False).fit(df, schema=schema, synthesized=["y"])
    assert e.value.code == "MISSING_VALUES"


def test_indicator_without_data_is_refused_for_the_flat_prior():
    """x is missing only where y is: x[missing] has no data, the exact posterior is improper;
    NUTS's prior identifies it."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=60)
    df = pd.DataFrame({"x": x, "y": 1 + x + rng.normal(size=60)})
    df.loc[[1, 2, 3], "x"] = np.nan
    df.loc[[1, 2, 3, 4], "y"] = np.nan
    with pytest.raises(ValidationError, match=r"predictor 'x' of 'y' is missing only in records "
                       r"where 'y' is missing too.*'x\[missing\]'") as e:
        _fit(df, synthesized=["y"], draws=20)
    assert e.value.code == "RANK_DEFICIENT"
    nuts = _fit(df, synthesized=["y"], posterior_method={"y": "nuts"}, tune=50, draws=50)
    assert nuts.synthesize(1, random_seed=1).datasets[0]["y"].notna().all()
