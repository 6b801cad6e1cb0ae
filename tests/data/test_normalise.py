"""The shared normalisers of bayes_risk.data: synthetic inputs, record selections, level codes."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bayes_risk.data import SyntheticData
from bayes_risk.data.levels import level_codes
from bayes_risk.data.normalise import as_synthetic_list, record_positions
from bayes_risk.exceptions import DataWarning, SchemaError, ValidationError


# ----------------------------------------------------------------------------------------------
# synthetic inputs
# ----------------------------------------------------------------------------------------------
def test_synthetic_inputs():
    z = pd.DataFrame({"a": [1, 2]})
    assert as_synthetic_list(z).datasets[0] is z
    z2 = pd.DataFrame({"a": [2, 1]})
    sd = SyntheticData([z, z2], method="test")
    got = as_synthetic_list(sd)
    assert len(got.datasets) == 2 and got.source is sd and got.schema is sd.schema
    assert as_synthetic_list((z, z2)).source is None
    with pytest.warns(DataWarning, match="datasets 1 and 2 are identical") as caught:
        as_synthetic_list(SyntheticData([z, z.copy()], method="test"))
    assert caught[0].message.code == "DUPLICATE_DATASETS"
    assert as_synthetic_list(None, allow_none=True).datasets == []
    with pytest.raises(ValidationError, match="synthetic is empty"):
        as_synthetic_list([])
    with pytest.raises(ValidationError, match="synthetic dataset 2 must be a pandas DataFrame"):
        as_synthetic_list([z, np.zeros(2)])
    with pytest.raises(ValidationError, match="synthetic must be a DataFrame"):
        as_synthetic_list(None)


# ----------------------------------------------------------------------------------------------
# record selections
# ----------------------------------------------------------------------------------------------
def test_record_positions():
    np.testing.assert_array_equal(record_positions(None, 3), [0, 1, 2])
    np.testing.assert_array_equal(record_positions(2, 3), [2])
    np.testing.assert_array_equal(record_positions([2, 0], 3), [2, 0])  # order kept
    np.testing.assert_array_equal(record_positions(np.array([1.0, 2.0]), 3), [1, 2])
    np.testing.assert_array_equal(record_positions(np.array([True, False, True]), 3), [0, 2])
    with pytest.raises(ValidationError, match="row position 3 is out of range"):
        record_positions([0, 3], 3)
    with pytest.raises(ValidationError, match="row position -1"):
        record_positions([-1], 3)
    with pytest.raises(ValidationError, match="duplicate"):
        record_positions([1, 1], 3)
    with pytest.raises(ValidationError, match="empty"):
        record_positions([], 3)
    with pytest.raises(ValidationError, match="must be row positions"):
        record_positions(["a"], 3)
    with pytest.raises(ValidationError, match="must be row positions"):
        record_positions([0.5], 3)
    with pytest.raises(ValidationError, match="one flag per record"):
        record_positions(np.array([True, False]), 3)
    with pytest.raises(ValidationError, match="selection: row position"):
        record_positions([5], 3, argument="selection")


def test_record_mask_one_check_for_every_selection():
    """record_mask: a boolean mask or integer positions as a mask, each error naming the
    argument; the synthesizers' records= and differencing_check's records= use it."""
    from bayes_risk.data.validate import record_mask

    np.testing.assert_array_equal(record_mask([2, 0, 2], 4), [True, False, True, False])
    np.testing.assert_array_equal(record_mask(pd.Series([True, False]), 2), [True, False])
    np.testing.assert_array_equal(record_mask([], 2), [False, False])
    flags = np.array([True, False])
    assert record_mask(flags, 2) is not flags  # never the caller's array
    with pytest.raises(ValidationError, match=r"records\['AGE'\] as a boolean mask needs one "
                       r"flag per record \(3\)\. Got shape \(2,\)"):
        record_mask(flags, 3, argument="records['AGE']")
    with pytest.raises(ValidationError, match="sel: index 5 is outside 0..2"):
        record_mask([0, 5], 3, argument="sel")
    with pytest.raises(ValidationError, match="sel: index -1 is outside 0..2"):
        record_mask([-1], 3, argument="sel")
    for bad in ([0.5], [1.0], ["a"], [[0, 1]]):
        with pytest.raises(ValidationError, match="sel must be a boolean mask or integer"):
            record_mask(bad, 3, argument="sel")
    with pytest.raises(ValidationError) as err:
        record_mask([9], 3, code="BAD_OPTION_VALUE")
    assert err.value.code == "BAD_OPTION_VALUE"


def test_record_selections_share_one_check():
    """The same bad selection gets the same message from CART, a Bayesian model and the
    differencing check (a position 1.5 used to be truncated to 1 by the differencing check)."""
    from bayes_risk.disclosure import differencing_check
    from bayes_risk.models._bayesian.records import check_synthesized_records
    from bayes_risk.models.trees.base import records_mask

    y = pd.DataFrame({"a": [1, 2, 3], "b": [1, 1, 2]})
    for check in (lambda r: records_mask(r, 3), lambda r: check_synthesized_records(r, 3),
                  lambda r: differencing_check(y, [y, y.assign(b=[1, 2, 2])], records=r)):
        with pytest.raises(ValidationError, match="records: index 3 is outside 0..2"):
            check([0, 3])
        with pytest.raises(ValidationError, match="records must be a boolean mask or integer"):
            check(np.array([1.5]))
        with pytest.raises(ValidationError, match="records as a boolean mask needs one flag"):
            check(np.ones(2, dtype=bool))


# ----------------------------------------------------------------------------------------------
# level codes
# ----------------------------------------------------------------------------------------------
def test_level_codes_paths_and_unknown_values():
    # integer codes through the lookup table; 2.0 and 2 are one level
    np.testing.assert_array_equal(level_codes(np.array([3, 1, 3]), [1, 2.0, 3]), [2, 0, 2])
    np.testing.assert_array_equal(level_codes(pd.Series([2.0, np.nan]), [1, 2]), [1, -1])
    s = pd.Series(pd.Categorical(["b", None, "a"], categories=["a", "b", "c"]))
    np.testing.assert_array_equal(level_codes(s, ["c", "b", "a"]), [1, -1, 2])
    np.testing.assert_array_equal(level_codes(np.array(["x", "a"], dtype=object), ["a"],
                                              unknown="missing"), [-1, 0])
    np.testing.assert_array_equal(level_codes(np.array([5, 0]), [0, 1], unknown="missing"),
                                  [-1, 0])
    with pytest.raises(SchemaError, match="column 'g' has value 'x' that is not among"):
        level_codes(pd.Series(["a", "x", "z"]), ["a"], column="g")
    with pytest.raises(SchemaError, match="value 7"):
        level_codes(np.array([7, 0]), [0, 1])
    with pytest.raises(SchemaError, match="value 'c'"):
        level_codes(pd.Series(pd.Categorical(["c"], categories=["a", "c"])), ["a"])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 6), min_size=1, max_size=40), st.permutations(range(8)))
def test_level_codes_fast_paths_agree(values, order):
    """The lookup table, the categorical path and the hashing path give the same codes."""
    levels = list(order)
    a = np.asarray(values, dtype=np.int64)
    lut = level_codes(a, levels)
    cat = level_codes(pd.Series(pd.Categorical(a, categories=sorted(set(values)))), levels)
    obj = level_codes(a.astype(object), levels)
    flt = level_codes(a.astype(np.float64), levels)
    expect = [levels.index(v) for v in values]
    for got in (lut, cat, obj, flt):
        np.testing.assert_array_equal(got, expect)
