"""The pooled probabilities do not depend on how the chunk's (target, record, replicate) keys
are sorted: the keys are unique, so every sort gives the same order, and the probabilities are
the brute-force mean over replicates.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from bayes_risk import MatchSpec, PopulationSpec
from bayes_risk.exceptions import DataWarning
from bayes_risk.identification import pooled
from bayes_risk.identification.api import identification_risk


def _problem(n=600, m=5, seed=7):
    # coarse cells: every target matches many records in every replicate (long sorted runs)
    rng = np.random.default_rng(seed)
    y = pd.DataFrame({"a": rng.integers(0, 3, n).astype(str),
                      "s": rng.integers(0, 4, n).astype(str)})
    zs = [y.assign(s=rng.integers(0, 4, n).astype(str)) for _ in range(m)]
    return y, zs


def _run(y, zs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)
        return identification_risk(y, zs, known=["a", "s"], synthesized=["s"],
                                   aggregation="pooled",
                                   population=PopulationSpec(membership="known"),
                                   progressbar=False,
                                   match=MatchSpec(fallback="none"))


class _QuickSortNumpy:
    """numpy, with argsort's default (unstable quicksort) whatever ``kind`` is asked."""

    def __getattr__(self, name):
        return getattr(np, name)

    @staticmethod
    def argsort(a, *args, kind=None, **kw):
        return np.argsort(a, *args, **kw)


def test_pooled_probabilities_equal_brute_force():
    y, zs = _problem()
    res = _run(y, zs)
    R, n = len(zs), len(y)
    key = (y["a"] + "|" + y["s"]).to_numpy()
    expect = np.zeros((n, n))
    for z in zs:  # in replicate order, as the engine sums
        zkey = (z["a"] + "|" + z["s"]).to_numpy()
        hit = key[:, None] == zkey[None, :]
        expect += hit / np.maximum(hit.sum(axis=1, keepdims=True), 1) / R
    np.testing.assert_allclose(res.prob.toarray(), expect, rtol=1e-14, atol=0)


def test_pooled_result_is_bitwise_the_same_under_another_sort(monkeypatch):
    y, zs = _problem()
    stable = _run(y, zs)
    monkeypatch.setattr(pooled, "np", _QuickSortNumpy())
    quick = _run(y, zs)
    for name in ("indptr", "indices", "data"):
        assert np.array_equal(getattr(stable.prob, name), getattr(quick.prob, name)), name
    for name in ("c", "T", "declared", "p_out", "p_unassigned"):
        assert np.array_equal(getattr(stable, name), getattr(quick, name)), name
    pd.testing.assert_frame_equal(stable.records, quick.records)


@pytest.mark.parametrize("seed", [1, 2])
def test_chunk_keys_are_unique(monkeypatch, seed):
    # why any sort gives the same numbers: the (target, record, replicate) keys a chunk sorts
    # are unique, so their sorted order is the same whatever the algorithm
    seen = []
    real = pooled._sort_keys

    def spy(keys):
        real(keys)
        seen.append(keys.copy())

    monkeypatch.setattr(pooled, "_sort_keys", spy)
    y, zs = _problem(seed=seed)
    _run(y, zs)
    assert seen and sum(k.size for k in seen) >= len(y) * len(zs)
    for k in seen:
        assert (np.diff(k) > 0).all()
