"""The conditional population rows of a partially synthetic release (the normaliser's draws
given the slot's unsynthesized cell) are gathered with one take per cell from the datasets
stacked: the same rows, in the same order, with the same random stream as one take per cell
and dataset (the former code, kept here as the reference)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

import bayes_risk as br
from bayes_risk.membership import partial as _partial
from bayes_risk.membership import plan as stage_plan
from bayes_risk.models import Sampling, SequentialRegression


def _reference(model, original, original_keys, keys, k, rng, schema, us, rows_=None):
    uniq, counts = np.unique(original_keys if rows_ is None else original_keys[rows_],
                             return_counts=True)
    fewest = int(counts[np.searchsorted(uniq, keys)].min())
    per = min(stage_plan.ROWS_PER_DRAW, fewest)
    sets = max(1, math.ceil(k / per))
    sets = min(sets, int(getattr(model, "n_draws", sets)))
    syn = model.synthesize(sets, random_seed=rng)
    take = {key: [] for key in keys}
    need = np.asarray(keys, dtype=np.int64)
    for z in syn.datasets:
        if rows_ is not None:
            z = z.iloc[rows_].reset_index(drop=True)
        zkeys = _partial.cell_keys([z], schema, us, reference=original)[0]
        order = np.argsort(zkeys, kind="stable")
        lo = np.searchsorted(zkeys[order], need, side="left")
        hi = np.searchsorted(zkeys[order], need, side="right")
        for key, a, b in zip(keys, lo, hi, strict=True):
            rows = order[a:b]
            size = min(len(rows), max(1, math.ceil(k / sets)))
            if size:
                take[key].append(z.iloc[np.sort(rng.choice(rows, size=size, replace=False))])
    return {key: pd.concat(v, ignore_index=True).iloc[:k].reset_index(drop=True)
            for key, v in take.items()}


@pytest.fixture(scope="module")
def partial_model():
    ce = br.make_ce_like(300, random_seed=4)
    data = pd.DataFrame({
        "Age": ce["Age"].astype(float), "Urban": ce["Urban"].astype("category"),
        "LogExpenditure": np.log(ce["Expenditure"].clip(lower=1)),
        "LogIncome": np.log(ce["Income"].clip(lower=1)),
    })
    model = SequentialRegression(sampling=Sampling(draws=40), progressbar=False).fit(
        data, synthesized=["LogExpenditure", "LogIncome"], random_seed=1)
    return data, model


@pytest.mark.parametrize("selected", [False, True])
@pytest.mark.parametrize("k", [20, 100])
def test_stacked_take_equals_per_dataset_takes(partial_model, selected, k):
    data, model = partial_model
    us = ["Age", "Urban"]
    schema = model.schema_
    keys_all = _partial.cell_keys([data], schema, us, reference=data)[0]
    rows_ = np.arange(0, len(data), 2) if selected else None
    pool = keys_all if rows_ is None else keys_all[rows_]
    keys = [int(x) for x in np.unique(pool)[::7][:12]]
    rng_a, rng_b = np.random.default_rng(11), np.random.default_rng(11)
    got = stage_plan.conditional_population_rows(model, data, keys_all, keys, k, rng_a, schema,
                                                  us, rows_)
    want = _reference(model, data, keys_all, keys, k, rng_b, schema, us, rows_)
    assert list(got) == list(want)
    for key in keys:
        pd.testing.assert_frame_equal(got[key], want[key], check_exact=True)
    # the random stream moved by the same draws
    assert rng_a.random() == rng_b.random()
