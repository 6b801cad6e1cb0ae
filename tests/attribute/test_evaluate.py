"""Identical records are evaluated once, and a record's numbers do not depend on its chunk.

``evaluate.distinct_records`` lets each set of identical records be evaluated once (class P
models, built-in candidate rules, estimators with posterior draws); the outputs must be bitwise
those of evaluating every record. The draw bootstrap's matrix product is formed over whole
column blocks (``estimator._product_by_blocks``), so a record's replicates are bitwise the same
in any chunk (checked at the bootstrap's usual shapes, B = 200 and H = 1,000).
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import bayes_risk.attribute.evaluate as evaluate_mod
from bayes_risk.attribute import EstimatorSpec, attribute_risk
from bayes_risk.attribute.estimator import _COL_BLOCK, _product_by_blocks
from bayes_risk.data import infer_schema
from bayes_risk.exceptions import ImportanceSamplingWarning
from bayes_risk.models import ArrayModel


def _model(n=60, H=1000, seed=1, model_class="P"):
    """Three categorical columns with few distinct rows (many identical records)."""
    rng = np.random.default_rng(seed)
    orig = pd.DataFrame(
        {
            "a": pd.Categorical(rng.integers(0, 3, n), categories=[0, 1, 2]),
            "b": pd.Categorical(rng.integers(0, 2, n), categories=[0, 1]),
            "u": pd.Categorical(rng.integers(0, 2, n), categories=[0, 1]),
        }
    )
    schema = infer_schema(orig, synthesized=["a", "b"])

    def draws():
        return {
            "pa": rng.dirichlet(np.ones(3) * 3, size=H),
            "pb": rng.dirichlet(np.ones(2) * 3, size=H),
        }

    def ll(rec, d):
        ca = rec["a"].astype(int).to_numpy()
        cb = rec["b"].astype(int).to_numpy()
        return np.log(d["pa"][:, ca]) + np.log(d["pb"][:, cb])

    kw = {}
    if model_class == "O":
        kw["own_record_delta_fn"] = lambda rec, cands, datasets, draws=None: np.zeros(
            (H if draws is None else len(draws), len(datasets), len(cands))
        )
    model = ArrayModel(ll, draws(), schema, model_class=model_class, **kw)
    syn = [
        orig.assign(a=pd.Categorical(rng.integers(0, 3, n), categories=[0, 1, 2]))
        for _ in range(3)
    ]
    aug = [model.with_draws(draws()) for _ in range(3)] if model_class == "P" else None
    return model, orig, syn, aug


def _run(model, orig, syn, aug, estimator="auto", **kw):
    kw.setdefault("progressbar", False)
    kw.setdefault("random_seed", 5)
    est = EstimatorSpec(kind=estimator) if isinstance(estimator, str) else estimator
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ImportanceSamplingWarning)
        return attribute_risk(orig, syn, model=model, estimator=est.replace(augmented=aug), **kw)


def _assert_same(r1, r2):
    a, b = r1.records, r2.records
    assert list(a.columns) == list(b.columns)
    for c in a.columns:
        x, y = a[c].to_numpy(), b[c].to_numpy()
        if x.dtype.kind == "f":
            assert np.array_equal(x, y, equal_nan=True), c
        else:
            assert list(x) == list(y), c
    assert len(r1._boot_loglik) == len(r2._boot_loglik)
    for x, y in zip(r1._boot_loglik, r2._boot_loglik, strict=True):
        assert np.array_equal(x, y, equal_nan=True)
    assert a.index.equals(b.index)
    for i in a.index:
        pd.testing.assert_frame_equal(
            r1.candidate_posteriors(int(i)), r2.candidate_posteriors(int(i)), check_exact=True
        )
    d1, d2 = r1.to_dict(), r2.to_dict()
    assert d1["flag_counts"] == d2["flag_counts"]
    assert d1["published_estimator"] == d2["published_estimator"]


def _every_record(plan, order):
    return order, {}


@pytest.mark.parametrize("estimator", ["stabilised", "is"])
def test_identical_records_evaluated_once_give_the_same_numbers(monkeypatch, estimator):
    model, orig, syn, aug = _model()
    kw = {"estimator": EstimatorSpec(kind=estimator, chunk_size=7)}
    if estimator == "is":
        aug = None
    fast = _run(model, orig, syn, aug, **kw)
    monkeypatch.setattr(evaluate_mod, "distinct_records", _every_record)
    ref = _run(model, orig, syn, aug, **kw)
    _assert_same(fast, ref)
    # the data really has identical records, and their rows are identical
    dup = orig.duplicated(keep=False).to_numpy()
    assert dup.sum() > 20
    rec = fast.records
    first = orig.groupby(list(orig.columns), observed=True).ngroup().to_numpy()
    for g in np.unique(first[dup]):
        rows = rec.loc[np.flatnonzero(first == g)].select_dtypes("number")
        assert (rows.nunique(dropna=False) <= 1).all()


@pytest.mark.parametrize("chunk", [1, 3, 8, 64])
def test_bootstrap_replicates_bitwise_equal_whatever_the_chunk(chunk):
    model, orig, syn, aug = _model()
    recs = [0, 5, 6, 17, 33, 59]
    ref = _run(model, orig, syn, aug, records=recs, estimator=EstimatorSpec(chunk_size=64))
    res = _run(model, orig, syn, aug, records=recs[::-1], estimator=EstimatorSpec(chunk_size=chunk))
    for k, i in enumerate(recs):
        j = recs[::-1].index(i)
        assert np.array_equal(ref._boot_loglik[k], res._boot_loglik[j])


def test_distinct_records_groups_identical_rows_and_keeps_the_first():
    model, orig, syn, aug = _model(n=30)
    orig = orig.copy()
    plan = type("P", (), {})()
    plan.data = type("D", (), {"orig": orig})()
    plan.rule = type("R", (), {"spec": object()})()
    plan.estimator = object()
    plan.model = type("M", (), {"model": model})()
    plan.known = None  # every other record known (ScenarioSpec("known_records") evaluates all)
    order = np.arange(30, dtype=np.int64)
    reps, copies = evaluate_mod.distinct_records(plan, order)
    key = [tuple(r) for r in orig.astype(int).itertuples(index=False)]
    assert reps.tolist() == sorted({key.index(k) for k in key})
    covered = set(reps.tolist())
    for i, dups in copies.items():
        assert i in covered and all(key[j] == key[i] and j > i for j in dups)
        covered |= set(dups.tolist())
    assert covered == set(range(30))
    # a missing value matches a missing value only; 0.0 and -0.0 stay apart
    num = pd.DataFrame({"x": [np.nan, 1.0, np.nan, 0.0, -0.0, 1.0]})
    plan.data = type("D", (), {"orig": num})()
    reps, copies = evaluate_mod.distinct_records(plan, np.arange(6, dtype=np.int64))
    assert reps.tolist() == [0, 1, 3, 4]
    assert {k: v.tolist() for k, v in copies.items()} == {0: [2], 1: [5]}
    # a subset of positions (a partition)
    reps, copies = evaluate_mod.distinct_records(plan, np.array([2, 4, 5], dtype=np.int64))
    assert reps.tolist() == [2, 4, 5] and copies == {}


def test_records_of_class_o_models_are_all_evaluated():
    model, orig, syn, _ = _model(model_class="O")
    plan = type("P", (), {})()
    plan.data = type("D", (), {"orig": orig})()
    plan.rule = type("R", (), {"spec": object()})()
    plan.estimator = object()
    plan.model = type("M", (), {"model": model})()
    order = np.arange(len(orig), dtype=np.int64)
    reps, copies = evaluate_mod.distinct_records(plan, order)
    assert np.array_equal(reps, order) and copies == {}
    plan.rule.spec = None  # a candidate function may depend on the record's position
    plan.model.model = _model()[0]
    reps, copies = evaluate_mod.distinct_records(plan, order)
    assert np.array_equal(reps, order) and copies == {}


@pytest.mark.parametrize("n", [1, 3, 7, 8, 15, 16, 17, 35, 100, 257])
def test_product_by_blocks_does_not_depend_on_the_number_of_columns(n):
    # the bootstrap's shapes: B = 200 replicates of H = 1,000 draws. A column's values must not
    # depend on how many columns are multiplied with it (nor on the thread count, which the
    # slabs fix at one BLAS thread each). A wide multithreaded ``a @ b`` is no reference: on a
    # loaded machine OpenBLAS may split its sums differently, so it is compared within rtol.
    from threadpoolctl import threadpool_limits

    rng = np.random.default_rng(n)
    a = rng.multinomial(1000, np.full(1000, 1 / 1000), size=200).astype(np.float64)
    b = rng.random((1000, 320))
    wide = _product_by_blocks(a, b)
    got = _product_by_blocks(a, np.ascontiguousarray(b[:, :n]))
    assert got.shape == (200, n)
    assert np.array_equal(got, wide[:, :n])
    with threadpool_limits(limits=1, user_api="blas"):  # as in a one-threaded Dask worker
        assert np.array_equal(_product_by_blocks(a, np.ascontiguousarray(b[:, :n])), got)
    assert np.allclose(got, a @ b[:, :n], rtol=1e-13, atol=0)
    assert _COL_BLOCK % 8 == 0


def _bootstrap_stabilised_reference(logr0, logr_aug, counts0, counts_aug):
    """The replicates as the estimator wrote them before the threaded slabs (one posterior at
    a time, whole arrays)."""
    from bayes_risk.attribute.estimator import _log_weighted_sum

    h0 = counts0.sum(axis=1)[None, :, None]
    lm0 = _log_weighted_sum(counts0, logr0) - np.log(h0)
    tot = np.zeros_like(lm0)
    for lr, c in zip(logr_aug, counts_aug, strict=False):
        tot = tot + _log_weighted_sum(c, lr) - np.log(c.sum(axis=1)[None, :, None])
    with np.errstate(invalid="ignore"):
        out = tot - len(logr_aug) * lm0
    return np.where(np.isnan(out), -np.inf, out)


@pytest.mark.parametrize(("R", "m"), [(1, 1), (9, 3), (40, 5)])
def test_bootstrap_stabilised_slabs_equal_the_reference_bitwise(R, m):
    from bayes_risk.attribute.estimator import (
        RatioStats,
        bootstrap_counts,
        bootstrap_stabilised,
    )

    rng = np.random.default_rng(R + m)
    H, G, B = 400, 7, 60

    def stats():
        lp = rng.normal(scale=3.0, size=(H, R, G))
        lp[:, :, 3] = -np.inf  # an impossible candidate
        lp[5, 0, :] = -np.inf  # a dropped draw
        return RatioStats.from_logp(lp, np.zeros(R, dtype=np.int64), tail=20)

    sts = [stats() for _ in range(m + 1)]
    counts = [bootstrap_counts(rng, B, H) for _ in range(m + 1)]
    got = bootstrap_stabilised(sts[0], sts[1:], counts[0], counts[1:])
    ref = _bootstrap_stabilised_reference(sts[0], sts[1:], counts[0], counts[1:])
    assert got.shape == (R, B, G)
    assert np.array_equal(got, ref)
    assert np.isneginf(got[:, :, 3]).all()
