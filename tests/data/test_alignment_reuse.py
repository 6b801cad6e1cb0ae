"""``check_rows_aligned`` reuses the original's comparable values for a released column that is
the original's column (same dtype, same values): every comparison, and so every outcome, is the
one of parsing each dataset's column again."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from bayes_risk.data import alignment
from bayes_risk.exceptions import SchemaError


def _tables():
    rng = np.random.default_rng(5)
    n = 300
    orig = pd.DataFrame({
        "a": rng.integers(1, 9, n).astype(str).astype(object),
        "b": rng.normal(size=n),
        "c": pd.Categorical(rng.choice(["x", "y", "z"], n)),
        "d": np.where(rng.random(n) < 0.1, None, rng.integers(0, 3, n).astype(str)),
        "s": rng.integers(0, 5, n),
    })
    same = orig.assign(s=rng.integers(0, 5, n))  # unchanged columns, one synthesized
    other_index = same.set_axis(np.arange(n) + 1000)  # same values, another row index
    as_float = same.assign(s=same["s"].astype(float), a=same["a"].astype(float))  # CSV round trip
    nan_for_none = same.assign(d=same["d"].where(same["d"].notna(), np.nan))
    edited = same.assign(b=same["b"].where(np.arange(n) != 7, 99.0))
    shuffled = same.iloc[rng.permutation(n)].reset_index(drop=True)
    return orig, [same, other_index, as_float, nan_for_none, edited, shuffled]


def _outcome(orig, zs, synthesized):
    # the synthesized column is drawn at random: ORIGINAL_UNCONFIRMED is expected and compared
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            out = ("ok", alignment.check_rows_aligned(orig, zs, synthesized=synthesized))
        except SchemaError as e:
            out = ("error", e.code, str(e))
    return out, [str(w.message) for w in caught]


@pytest.mark.parametrize("k", range(6))
def test_reuse_gives_the_outcome_of_parsing_again(monkeypatch, k):
    orig, candidates = _tables()
    zs = [candidates[0], candidates[k]]
    fast = _outcome(orig, zs, ["s"])
    monkeypatch.setattr(alignment, "_values_like",
                        lambda col, o, ov: alignment.comparable_values(col))
    slow = _outcome(orig, zs, ["s"])
    assert fast == slow


def test_reused_values_are_the_parsed_ones():
    orig, candidates = _tables()
    for z in candidates:
        for c in orig.columns:
            got = alignment._values_like(z[c], orig[c], alignment.comparable_values(orig[c]))
            want = alignment.comparable_values(z[c])
            if got.dtype.kind == "f" and want.dtype.kind == "f":
                assert np.array_equal(got, want, equal_nan=True), c
            else:
                assert got.dtype == want.dtype and (got == want).all(), c
