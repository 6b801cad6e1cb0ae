"""The run's memory budget (``bayes_risk._memory``): sizes, the limit's scope, the checks."""

from __future__ import annotations

import pytest

from bayes_risk import _memory
from bayes_risk.exceptions import ValidationError


@pytest.mark.parametrize("value, nbytes", [
    ("2GB", 2 * 10**9), ("512MB", 512 * 10**6), ("1.5GiB", 3 * 2**29), ("64 mib", 64 * 2**20),
    ("1000000", 10**6), (3 * 10**9, 3 * 10**9), (2.5e9, 2_500_000_000), (None, None),
])
def test_parse_memory(value, nbytes):
    assert _memory.parse_memory(value) == nbytes


@pytest.mark.parametrize("value", ["2XB", "GB", "", "-1GB", "0.5MB", "nan", True, float("inf")])
def test_parse_memory_refuses(value):
    with pytest.raises(ValidationError, match="--memory") as err:
        _memory.parse_memory(value, "--memory")
    assert err.value.code == "BAD_OPTION_VALUE"
    with pytest.raises(ValidationError) as err:
        _memory.parse_memory(value)
    assert err.value.code == "INVALID_ARGUMENT"


def test_limits_nest_and_end_with_their_block():
    assert _memory.current_limit() is None
    with _memory.memory_limit("8GB"):
        assert _memory.current_limit() == 8 * 10**9
        with _memory.memory_limit("16GB"):  # a wider inner limit does not widen the outer
            assert _memory.current_limit() == 8 * 10**9
        with _memory.memory_limit("4GB"):
            assert _memory.current_limit() == 4 * 10**9
        with _memory.memory_limit(None):
            assert _memory.current_limit() == 8 * 10**9
        assert _memory.current_limit() == 8 * 10**9
    assert _memory.current_limit() is None


def test_budget_counts_the_resident_memory():
    resident = _memory.resident_memory()
    assert resident > 10**6  # the interpreter and numpy
    with _memory.memory_limit(resident + 400 * 10**6):
        left = _memory.room()
        assert 0 < left <= 400 * 10**6
        # a quarter of what is left, below the fast size; never below the floor
        assert _memory.working_bytes(10**12) == max(_memory.MIN_WORKING_BYTES, left // 4)
        assert _memory.working_bytes(1) == _memory.MIN_WORKING_BYTES
        _memory.check_memory(left / 2, "n", what="a table")
        with pytest.raises(ValidationError, match=r"of the memory limit .*--memory.*reduce n or "
                                                  r"raise the limit") as err:
            _memory.check_memory(10**9, "n", what="a table")
        assert err.value.code == "MEMORY_TOO_LARGE"
    with _memory.memory_limit(2 * 10**6):  # below what the process holds: nothing is left
        assert _memory.room() == 0


def test_format_bytes_reads_back():
    assert _memory.format_bytes(1.5e9) == "1.5 GB"
    assert _memory.format_bytes(999) == "999 B"
    assert _memory.parse_memory(_memory.format_bytes(2.5e9).replace(" ", "")) == 2_500_000_000
