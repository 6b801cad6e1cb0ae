"""Test configuration: hypothesis profiles and a guard against use of numpy's global RNG."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, settings

# tests/ helpers (e.g. tests/_shared.py) importable under --import-mode=importlib
sys.path.insert(0, str(Path(__file__).resolve().parent))

settings.register_profile(
    # derandomized: `make test` (CI) gives the same examples on every run; "deep" explores
    "fast", max_examples=25, deadline=None, derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile(
    "deep", max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "fast"))

# Numba threads in the parent process make forked PyMC chains abort unless the workqueue layer
# is used (platform fact recorded in issue 4).
os.environ.setdefault("NUMBA_THREADING_LAYER", "workqueue")

# The interrupt tests need Ctrl-C to behave as in a terminal. A suite started as a background
# job of a script inherits an ignored SIGINT, which bayes-risk rightly leaves ignored; restore
# Python's own handler here (children started by the tests then get the default action).
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture(autouse=True)
def _check_global_rng_untouched():
    """Fail any test that draws from numpy's global RNG (statsmodels' guard, STYLE.md R7)."""
    state = np.random.get_state()[1].copy()
    yield
    assert np.array_equal(state, np.random.get_state()[1]), (
        "test changed numpy's global random state; pass random_seed/rng explicitly"
    )


def pytest_collection_modifyitems(config, items):
    """Put the test files that hold ``slow`` tests first, most slow tests first.

    ``make test`` runs ``--dist loadfile --no-loadscope-reorder``: pytest-xdist hands whole
    files to the two workers in this order, so a long file that came last (the docs build, the
    ground-truth studies) would leave one worker idle while the other finishes it. Longest
    first is the classic greedy schedule (LPT). The sort is stable (within a file and between
    files of equal weight the collection order is kept) and only reorders: every collected test
    still runs, and a random-order plugin may shuffle the result.
    """
    weight: dict[str, list[int]] = {}
    for item in items:
        w = weight.setdefault(item.nodeid.split("::", 1)[0], [0, 0])
        w[0] += item.get_closest_marker("slow") is not None
        w[1] += 1
    items.sort(key=lambda it: tuple(-x for x in weight[it.nodeid.split("::", 1)[0]]))
