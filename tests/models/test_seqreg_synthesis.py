"""Synthesis of many sequential-regression datasets at once is bit-identical to one dataset at a
time: the same draws from the same generators in the same order, the same released tables
(values, dtypes, categories, index), and so the same membership normaliser.

The reference is the per-dataset synthesis as it was before the datasets were made together
(kept here verbatim), run on the same fitted models and seeds.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from bayes_risk._rng import replicate_rng, seed_sequence, spawn
from bayes_risk.data import infer_schema
from bayes_risk.data.normalise import select_columns
from bayes_risk.data.validate import decode
from bayes_risk.membership import AttackSpec, RatioSpec, membership_risk
from bayes_risk.models import Sampling
from bayes_risk.models._bayesian.design import apply_dtypes, column_values, family_sample
from bayes_risk.models.seqreg.seqreg import SequentialRegression


def _reference_one(model, draw: int, rng: np.random.Generator, data) -> pd.DataFrame:
    """``SequentialRegression._synthesize_one`` before the vectorised path (verbatim)."""
    n = model.n_records
    schema = model.schema_
    if data is not None:
        vals = column_values(data, schema, schema.names)
        out = data[schema.names].copy()
    else:
        vals = {}
        out = pd.DataFrame(index=np.arange(n))
    mask = model.synthesized_records_
    idx = np.array([draw])
    for c in model.order_:
        fam = model.families_[c]
        X = None if fam == "categorical" else model.designs_[c].build(vals, n)
        params = {k: v for k, v in model.state_.params(c, idx).items()}
        new = family_sample(fam, X, params, 0, n, rng)
        if mask is not None and c in vals:
            new = np.where(mask, new, vals[c])
        vals[c] = new
        spec = schema[c]
        if spec.is_categorical:
            out[c] = decode(new.astype(np.int64)[:, None], schema, [c])[c].to_numpy()
        elif spec.type == "count":
            out[c] = np.clip(np.rint(new), 0, None).astype(np.int64)
        else:
            out[c] = new
    return apply_dtypes(out[schema.names].reset_index(drop=True), model.dtypes_, schema)


def _reference_many(model, draws, rngs, data) -> list[pd.DataFrame]:
    return [_reference_one(model, int(h), rng, data) for h, rng in zip(draws, rngs, strict=True)]


def _fit(df, *, schema=None, synthesized=None, records=None, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return SequentialRegression.from_settings({"progressbar": False, **kw}).fit(
            df, schema=schema, synthesized=synthesized, records=records, random_seed=5)


def _table(n: int = 60) -> pd.DataFrame:
    rng = np.random.default_rng(3)
    a = rng.integers(0, 3, n)
    x = rng.normal(0, 1, n).round(1)
    y = 1.0 + 0.5 * x + 0.3 * a + rng.normal(0, 1, n)
    b = (x + rng.normal(0, 1, n) > 0).astype(int)
    k = rng.poisson(np.exp(0.5 + 0.2 * x))
    lv = ["lo", "mid", "hi"]
    return pd.DataFrame({
        "A": pd.Categorical(np.array(["0", "1", "2"])[a], categories=["0", "1", "2"]),
        "X": x,
        "Y": y,
        "B": pd.Categorical(np.where(b == 1, "yes", "no"), categories=["no", "yes"]),
        "K": k,
        "S": pd.Series(np.array(lv)[rng.integers(0, 3, n)], dtype=object),  # text, not category
        "I": rng.integers(1, 4, n),  # integer-coded categorical
        "O": pd.Categorical(np.array(lv)[rng.integers(0, 3, n)], categories=lv, ordered=True),
    })


def _variants():
    df = _table()
    cat = ["A", "B", "S", "I", "O"]
    schema = infer_schema(df, categorical=cat)
    lap = {"B": "laplace", "K": "laplace", "S": "laplace", "I": "laplace"}
    return {
        # the membership tests' chains: categorical and normal targets, partially synthetic
        "categorical_partial": (df[["A", "S"]], dict(families={"S": "categorical"},
                                                     synthesized=["S"], draws=40)),
        "normal_on_categorical": (df[["A", "Y"]], dict(synthesized=["Y"], draws=40)),
        "normal_on_numeric": (df[["X", "Y"]], dict(synthesized=["Y"], draws=40)),
        "fully_synthetic_normal_chain": (df[["X", "Y"]], dict(sampling=Sampling(draws=40))),
        # every family, every kind of column, earlier synthetic values as predictors
        "every_family": (df, dict(schema=schema, synthesized=["B", "K", "Y", "S", "I", "O"],
                                  families={"O": "categorical"}, posterior_method=lap,
                                  draws=40)),
        "count_as_normal": (df[["X", "K"]], dict(families={"K": "normal"}, synthesized=["K"],
                                                 draws=40)),
        "fully_synthetic_mixed": (df[["A", "X", "B"]],
                                  dict(schema=infer_schema(df[["A", "X", "B"]],
                                                           categorical=["A", "B"]),
                                       families={"A": "categorical"},
                                       posterior_method={"B": "laplace"}, draws=40)),
        # selected records only, with the chain's later column predicted by the earlier one
        "selected_records": (df[["A", "X", "Y", "B"]],
                             dict(synthesized=["Y", "B"], records=np.arange(0, 60, 3),
                                  posterior_method={"B": "laplace"}, draws=40)),
        "no_record_selected": (df[["A", "S"]], dict(families={"S": "categorical"},
                                                    synthesized=["S"], records=[], draws=40)),
    }


@pytest.fixture(scope="module", params=sorted(_variants()))
def variant(request):
    df, kw = _variants()[request.param]
    return _fit(df, **kw)


def _assert_same(new: list[pd.DataFrame], ref: list[pd.DataFrame]) -> None:
    assert len(new) == len(ref)
    for a, b in zip(new, ref, strict=True):
        pd.testing.assert_frame_equal(a, b, check_exact=True, check_column_type=True,
                                      check_index_type=True, check_categorical=True)
        for c in a.columns:  # bit for bit, not just equal within pandas' notion
            assert a[c].dtype == b[c].dtype
            if isinstance(a[c].dtype, pd.CategoricalDtype):
                assert np.array_equal(a[c].cat.codes.to_numpy(), b[c].cat.codes.to_numpy())
            else:
                assert np.array_equal(a[c].to_numpy(), b[c].to_numpy())


def test_synthesize_equals_one_dataset_at_a_time(variant):
    """``synthesize(m)`` (datasets made together) equals the per-dataset reference for the same
    draws and child generators, for every family and column kind."""
    m = 7
    syn = variant.synthesize(m, random_seed=11)
    idx = variant._spread_draws(variant.n_draws, m)
    ref = _reference_many(variant, idx, spawn(11, m), variant.data_)
    _assert_same(list(syn.datasets), ref)
    assert syn.draw_index == [int(h) for h in idx]
    # and one at a time through the model's own per-dataset method
    _assert_same([variant._synthesize_one(int(h), r, variant.data_)
                  for h, r in zip(idx, spawn(11, m), strict=True)], ref)


@pytest.mark.parametrize("rows", [None, "every third"])
def test_stacked_datasets_equal_the_datasets_concatenated(variant, rows):
    """The membership normaliser's stacked population datasets (``_synthesize_stacked``) are
    the reference datasets concatenated (their rows ``rows`` only, when given), and the seed's
    generator moves on as it does under ``synthesize``."""
    sel = None if rows is None else np.arange(0, variant.n_records, 3)
    rng_a, rng_b = np.random.default_rng(21), np.random.default_rng(21)
    got, sizes = variant._synthesize_stacked(6, random_seed=rng_a, rows=sel)
    idx = variant._spread_draws(variant.n_draws, 6)
    ref = _reference_many(variant, idx, spawn(rng_b, 6), variant.data_)
    if sel is not None:
        ref = [z.iloc[sel] for z in ref]
    _assert_same([got], [pd.concat(ref, ignore_index=True)])
    assert sizes == [len(z) for z in ref]
    assert rng_a.random() == rng_b.random()


def test_posterior_replicates_unchanged(variant):
    """Posterior-predictive replicates (one dataset per generator) are the reference's."""
    got = [z for chunk in variant.posterior_replicates(5, chunk_size=2, random_seed=4)
           for z in chunk]
    seq = seed_sequence(4)
    cols = list(variant.schema_.synthesized)
    ref = []
    for r in range(5):
        rng = replicate_rng(seq, r)
        z = _reference_one(variant, int(rng.integers(variant.n_draws)), rng, variant.data_)
        ref.append(select_columns(z, cols, pd.Index(cols)))
    _assert_same(got, ref)


def test_datasets_do_not_share_memory():
    """Each released dataset owns its columns: changing one leaves the others (and the model's
    copy of the confidential data) as they were."""
    df = _table()[["A", "X", "Y"]]
    model = _fit(df, synthesized=["Y"], draws=20)
    a, b = model.synthesize(2, random_seed=1).datasets
    before_b, before_data = b.copy(), model.data_.copy()
    a.loc[0, "X"] = 1e6
    a.loc[0, "A"] = "2" if a.loc[0, "A"] != "2" else "0"
    a.loc[0, "Y"] = -1e6
    pd.testing.assert_frame_equal(b, before_b)
    pd.testing.assert_frame_equal(model.data_, before_data)


def test_user_draws_without_data_equal_reference():
    """A chain built from user draws without data (no recorded dtypes) releases what the
    reference released."""
    n = 12
    df = pd.DataFrame({"x": np.linspace(0, 1, n), "y": np.linspace(1, 3, n)})
    schema = infer_schema(df, synthesized=["x", "y"])
    rng = np.random.default_rng(0)
    draws = {"x": np.column_stack([rng.normal(0, 1, 30), rng.uniform(0.5, 1, 30)]),
             "y": np.column_stack([rng.normal(0, 1, (30, 2)), rng.uniform(0.5, 1, 30)])}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = SequentialRegression.from_posterior(draws, schema, n_records=n)
    assert model.data_ is None
    syn = model.synthesize(4, random_seed=9)
    idx = model._spread_draws(model.n_draws, 4)
    _assert_same(list(syn.datasets), _reference_many(model, idx, spawn(9, 4), None))


@pytest.mark.parametrize("kind", ["categorical", "normal", "numeric", "full", "selected"])
def test_membership_normaliser_unchanged(monkeypatch, kind):
    """The membership result — normalisers, their k-hats and ESS, probabilities — is the one the
    per-dataset synthesis gives, for the membership tests' kinds of release."""
    table = _table(44)
    df, population = table.iloc[:40], table.iloc[40:].reset_index(drop=True)
    if kind == "categorical":
        model = _fit(df[["A", "S"]], families={"S": "categorical"}, synthesized=["S"],
                     draws=200)
        kw: dict = {}
    elif kind == "normal":
        model = _fit(df[["A", "Y"]], synthesized=["Y"], draws=200)
        kw = {}
    elif kind == "numeric":
        model = _fit(df[["X", "Y"]], synthesized=["Y"], draws=200)
        kw = {}
    elif kind == "full":
        model = _fit(df[["X", "Y"]], draws=200)
        kw = {}
    else:
        sel = np.flatnonzero(df["S"].to_numpy() == "hi")
        model = _fit(df[["A", "S"]], families={"S": "categorical"}, synthesized=["S"],
                     records=sel, draws=200)
        kw = {"selection": "S == 'hi'"}
    orig = df[list(model.schema_.names)]
    syn = model.synthesize(2, random_seed=2)
    run = dict(holdout=population[list(orig.columns)], records=[0, 4, 9], population=2,
               attack=AttackSpec(bootstrap=0), ratio=RatioSpec(normaliser_draws=40),
               random_seed=3, **kw)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        new = membership_risk(model, orig, syn, **run).records
        # the former path: one dataset at a time, through synthesize, concatenated
        monkeypatch.setattr(SequentialRegression, "_synthesize_many",
                            lambda self, d, r, x: _reference_many(self, d, r, x))
        monkeypatch.delattr(SequentialRegression, "_synthesize_stacked")
        old = membership_risk(model, orig, syn, **run).records
    assert "log_normaliser" in new
    pd.testing.assert_frame_equal(new, old, check_exact=True)


def test_normal_loglik_equals_the_expression_written_out():
    """The normal family's log-density, computed in place, equals the expression
    ``-0.5 r² - log σ - log √(2π)`` bit for bit."""
    from bayes_risk.models._bayesian.design import family_loglik

    rng = np.random.default_rng(8)
    H, n = 300, 50
    X = np.column_stack([np.ones(n), rng.normal(0, 1, n), rng.integers(0, 2, n)])
    y = rng.normal(0, 3, n)
    params = {"beta": rng.normal(0, 1, (H, 3)), "sigma": rng.uniform(0.1, 2, H)}
    eta = params["beta"] @ X.T
    sigma = params["sigma"][:, None]
    r = (y[None, :] - eta) / sigma
    want = -0.5 * r * r - np.log(sigma) - 0.5 * np.log(2.0 * np.pi)
    assert np.array_equal(family_loglik("normal", y, X, params), want)


def test_draws_are_read_again_after_a_new_fit():
    """The draws read off the posterior once are those of the current posterior: refitting the
    same object gives the likelihoods of a fresh model fitted to the new data."""
    df = _table()[["A", "X", "Y"]]
    model = _fit(df, synthesized=["Y"], draws=30)
    first = model.record_loglik(df.head(5))
    other = df.assign(Y=df["Y"] * 2.0 + 1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(other, synthesized=["Y"], random_seed=5)
    fresh = _fit(other, synthesized=["Y"], draws=30)
    assert not np.array_equal(model.record_loglik(df.head(5)), first)
    assert np.array_equal(model.record_loglik(df.head(5)), fresh.record_loglik(df.head(5)))
    pd.testing.assert_frame_equal(model.synthesize(2, random_seed=1).datasets[1],
                                  fresh.synthesize(2, random_seed=1).datasets[1])
