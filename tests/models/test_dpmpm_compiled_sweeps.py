"""The DPMPM sweep's compiled path (``step.DPMPMGibbs._sweep_compiled``, ``models.dpmpm.sweeps``)
draws what the Python path draws, bit for bit, and numpy's loops called from compiled code
(``models.dpmpm.numpy_loops``) give numpy's results bit for bit."""

from __future__ import annotations

import math

import numpy as np
import pytest
from numba import njit

import bayes_risk.models.dpmpm.step as step_module
from bayes_risk.models.dpmpm.numpy_loops import binary, loop_handles, unary
from bayes_risk.models.dpmpm.run import gibbs_layout
from bayes_risk.models.dpmpm.step import DPMPMGibbs, SweepSchedule


@njit
def _through(log_loop, logaddexp_loop, x, y):  # pragma: no cover - numba
    a = np.empty_like(x)
    unary(log_loop, x, a)
    b = np.empty_like(x)
    binary(logaddexp_loop, y, x, b)
    return a, b


@njit
def _c_log(x):  # pragma: no cover - numba
    out = np.empty_like(x)
    for i in range(x.shape[0]):
        out[i] = math.log(x[i])
    return out


@pytest.mark.parametrize("n", [0, 1, 7, 8, 9, 1_001])
def test_numpy_loops_are_numpys(n):
    loops = loop_handles()
    assert loops is not None  # numpy's float64 loops are reachable on the supported numpy
    rng = np.random.default_rng(n)
    x = np.concatenate([rng.random(n // 2), rng.standard_gamma(0.5, n - n // 2)])
    y = -700.0 * rng.random(n)
    a, b = _through(*loops, x, y)
    np.testing.assert_array_equal(a.view(np.uint64), np.log(x).view(np.uint64))
    np.testing.assert_array_equal(b.view(np.uint64), np.logaddexp(y, x).view(np.uint64))


def test_numpy_loops_differ_from_c_log_where_numpy_does():
    """Where numpy's ``log`` and C's part (SIMD loops), the compiled call follows numpy."""
    rng = np.random.default_rng(3)
    x = rng.random(200_000)
    numpy_log, c_log = np.log(x), _c_log(x)
    if np.array_equal(numpy_log, c_log):
        pytest.skip("numpy's log is C's on this machine: nothing to tell apart")
    got = _through(*loop_handles(), x, x)[0]
    np.testing.assert_array_equal(got.view(np.uint64), numpy_log.view(np.uint64))


def _table(n: int = 240, seed: int = 5) -> tuple[np.ndarray, np.ndarray]:
    """Four categorical columns with about 8 % missing cells (code -1) and repeated patterns."""
    rng = np.random.default_rng(seed)
    d = np.array([3, 4, 2, 5], dtype=np.int64)
    base = np.stack([rng.integers(0, dj, 30) for dj in d], axis=1)
    codes = base[rng.integers(0, 30, n)]
    codes[rng.random(codes.shape) < 0.08] = -1
    return codes, d


def _chain(compiled: bool, *, thin: int, threads: int | None = None, **settings):
    codes, d = _table()
    K = settings.pop("n_components", 6)
    step = DPMPMGibbs(list(gibbs_layout(K, d).shapes), codes=codes, d=d, n_components=K,
                      alpha_prior=(0.25, 0.25), dirichlet_prior=1.0,
                      schedule=SweepSchedule(thin=thin, **settings))
    if not compiled:
        step._compiled_sweeps = lambda: False
    step.setup_chain(np.random.default_rng(11), 12, 10)
    if threads is not None:  # the class step on two threads (step._class_step's split)
        step._threads = threads
    point, out = {"alpha": np.asarray(1.0)}, []
    for i in range(22):
        if i == 12:
            step.stop_tuning()
        point, (stats,) = step.step(point)
        out.append(({k: np.array(v) for k, v in point.items()}, dict(stats)))
    return out, step


def _assert_same(a, b):
    for (pa, sa), (pb, sb) in zip(a, b, strict=True):
        assert sa == sb
        assert pa.keys() == pb.keys()
        for k in pa:
            np.testing.assert_array_equal(pa[k].reshape(-1).view(np.uint8),
                                          pb[k].reshape(-1).view(np.uint8))


@pytest.mark.parametrize("case", [
    dict(thin=3),  # several sweeps a draw after the warm-up
    # α bounded in the first warm-up sweeps, more classes than records need
    dict(thin=1, alpha_warmup_bound=0.5, alpha_warmup_sweeps=6, n_components=9),
])
def test_compiled_sweeps_draw_as_the_python_path(case):
    compiled, step = _chain(True, **dict(case))
    python, _ = _chain(False, **dict(case))
    _assert_same(compiled, python)
    assert step._compiled_sweeps()  # the compiled path ran
    # the chain state after the sweeps is the same as well
    assert any(s["k_occupied"] > 1 for _, s in compiled)


def test_compiled_sweeps_with_the_class_step_on_threads(monkeypatch):
    """The class step split over two threads (large tables) after the compiled parts."""
    monkeypatch.setattr(step_module, "_SPLIT_MIN_WORK", 0)
    compiled, _ = _chain(True, thin=2, threads=2)
    python, _ = _chain(False, thin=2, threads=2)
    _assert_same(compiled, python)


def test_python_path_when_numpys_loops_are_unavailable(monkeypatch):
    monkeypatch.setattr("bayes_risk.models.dpmpm.numpy_loops.loop_handles", lambda: None)
    compiled, step = _chain(True, thin=2)
    assert not step._compiled_sweeps()
    monkeypatch.undo()
    _assert_same(compiled, _chain(True, thin=2)[0])
