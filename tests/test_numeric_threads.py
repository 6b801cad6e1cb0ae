"""The thread helpers of ``bayes_risk._numeric``: same values as a single call, order kept,
usable in a forked child."""

from __future__ import annotations

import os
import warnings

import numpy as np
import pytest

from bayes_risk._numeric import threaded_map, threaded_ufunc


def test_threaded_ufunc_equals_single_call_and_applies_errstate():
    rng = np.random.default_rng(0)
    a = rng.normal(size=(300, 50, 80))
    np.testing.assert_array_equal(threaded_ufunc(np.exp, a), np.exp(a))
    a[5, 3, 2] = 0.0
    a[7, 1, 1] = -1.0
    out = np.empty_like(a)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # errstate reaches every worker thread
        threaded_ufunc(np.log, a, out=out, divide="ignore", invalid="ignore")
    with np.errstate(divide="ignore", invalid="ignore"):
        np.testing.assert_array_equal(out, np.log(a))
    small = np.arange(5.0)
    np.testing.assert_array_equal(threaded_ufunc(np.sqrt, small), np.sqrt(small))


def test_threaded_map_keeps_order():
    assert threaded_map(lambda x: x * x, list(range(50))) == [x * x for x in range(50)]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_pool_is_recreated_in_a_forked_child():
    a = np.random.default_rng(1).normal(size=(2000, 600))
    threaded_ufunc(np.exp, a)  # creates the parent's pool
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # "multi-threaded, use of fork()"
        pid = os.fork()
    if pid == 0:  # child: would hang on the parent's (dead) worker threads without the reset
        ok = np.array_equal(threaded_ufunc(np.exp, a), np.exp(a))
        os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
