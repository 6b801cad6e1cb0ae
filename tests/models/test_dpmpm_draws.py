"""The DPMPM sweep's random numbers drawn in compiled code are numpy's, bit for bit.

After the first sweep, the sticks' and φ's random numbers are drawn in the compiled call of the
collapsed moves (``labels._collapsed_moves_and_variates``) instead of by numpy calls in Python,
and so are the label-switching move's and the class step's; the compiled calls receive the
generator as a handle read once per chain (``models._bayesian.generator``): the same seed must
give the same posterior draws. Checked piece by piece against the numpy calls
the sweep made before, and end to end against draws stored by the sampler before the change
(``dpmpm_draws/``, written by ``make_draws.py`` there), which also covers the order of the draws
in the combined call. (Calling ``labels._collapsed_moves`` on its own here would compile it a
second time, ≈ 14 s of CPU on a fresh installation, for what the stored draws already show.)
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pytest

from bayes_risk.models._bayesian.generator import generator_handle, uniforms_at
from bayes_risk.models._bayesian.stick_kernels import (
    gamma_variates,
    label_switch_draws,
    stick_variates,
)
from bayes_risk.models._bayesian.sticks import sample_sticks, sticks_and_weights_from_variates

STORED = Path(__file__).parent / "dpmpm_draws"


def _same_stream(r1: np.random.Generator, r2: np.random.Generator) -> bool:
    """Both generators have consumed the same random numbers."""
    return r1.bit_generator.state == r2.bit_generator.state


@pytest.mark.parametrize("shape", [
    np.full(5_000, 0.3),  # below 1: numpy's rejection sampler for small shapes
    np.full(5_000, 1.0),  # exactly 1: the exponential branch
    np.array([0.0, 1e-300, 1e-3, 0.999, 1.0 + 1e-12]),  # boundaries
    np.linspace(1.0, 400.0, 5_000),  # Marsaglia–Tsang
])
def test_gamma_variates_are_numpys(shape):
    r1, r2 = np.random.default_rng(7), np.random.default_rng(7)
    expected = r1.standard_gamma(shape)
    got = gamma_variates(shape, r2)
    np.testing.assert_array_equal(got, expected)
    assert _same_stream(r1, r2)
    # a 2-D array is drawn in C order, as numpy's
    r1, r2 = np.random.default_rng(8), np.random.default_rng(8)
    m = shape[: (shape.size // 5) * 5].reshape(5, -1) + 0.5
    np.testing.assert_array_equal(gamma_variates(m, r2), r1.standard_gamma(m))
    assert _same_stream(r1, r2)


@pytest.mark.parametrize(("nk", "alpha"), [
    (np.array([12, 0, 7, 0, 6]), 1.3),
    # α below 1 with empty classes at the end: shapes α + 0 < 1 (log_gamma_variates' branch for
    # small shapes, where 1 − V is far below machine precision)
    (np.array([20, 5, 0, 0, 0, 0]), 0.01),
    (np.array([3, 0]), 0.5),
    (np.array([0, 0, 0]), 2.0),
])
def test_stick_variates_give_sample_sticks(nk, alpha):
    for seed in range(20):
        r1, r2 = np.random.default_rng(seed), np.random.default_rng(seed)
        lv1, l11 = sample_sticks(nk, alpha, r1)
        lv2, l12, _ = sticks_and_weights_from_variates(*stick_variates(nk, alpha, r2))
        np.testing.assert_array_equal(lv2, lv1)
        np.testing.assert_array_equal(l12, l11)
        assert _same_stream(r1, r2)


def _numpy_label_switch_draws(nk, rng):
    """The label-switching moves' random numbers as numpy draws them: the pair of occupied
    classes by ``choice(occupied, 2, replace=False)`` and its uniform, ``K − 2`` classes by
    ``integers`` and their uniforms."""
    K = nk.size
    occ = np.flatnonzero(nk > 0)
    j = l = -1
    r = [0.0]
    if occ.size >= 2:
        j, l = (int(x) for x in rng.choice(occ, 2, replace=False))
        r = [rng.random()]
    js = rng.integers(0, K - 2, size=K - 2) if K >= 3 else np.zeros(0, dtype=np.int64)
    u = rng.random(K - 2) if K >= 3 else np.zeros(0)
    return j, l, js, np.concatenate([r, u])


@pytest.mark.parametrize("K", [2, 3, 4, 7, 50, 81])
def test_label_switch_draws_are_numpys(K):
    """The label-switching moves' random numbers, drawn compiled from a generator handle:
    numpy's (``choice`` without replacement, bounded ``integers``, ``random``) in numpy's
    order, bit for bit, and the stream left where numpy leaves it."""
    for seed in range(100):
        nk = np.random.default_rng(seed).integers(0, 3, size=K).astype(np.float64)
        r1, r2 = np.random.default_rng(seed), np.random.default_rng(seed)
        h = generator_handle(r2)
        for _ in range(3):
            j, l, js, r = label_switch_draws(nk, h)
            ej, el, ejs, er = _numpy_label_switch_draws(nk, r1)
            assert (j, l) == (ej, el)
            np.testing.assert_array_equal(js, ejs)
            np.testing.assert_array_equal(r, er)
            # numpy's own calls in between move the same stream (uint32 halves included)
            assert int(r1.integers(0, 5)) == int(r2.integers(0, 5))
        assert _same_stream(r1, r2)


def test_uniforms_at_are_numpys():
    r1, r2 = np.random.default_rng(3), np.random.default_rng(3)
    first, second = np.random.default_rng(4).permutation(9), np.random.default_rng(5).permutation(4)
    got = uniforms_at(generator_handle(r2), first, second)
    np.testing.assert_array_equal(got[0], r1.random(9)[first])
    np.testing.assert_array_equal(got[1], r1.random(4)[second])
    assert _same_stream(r1, r2)


def test_step_reads_a_handle_per_generator():
    """A copy or pickle of the step (own steps of extension rounds, PyMC's worker processes)
    never carries a handle (addresses of this process), and a new generator gets its own."""
    import copy
    import pickle

    from bayes_risk.models.dpmpm.run import gibbs_layout
    from bayes_risk.models.dpmpm.step import DPMPMGibbs

    d = np.array([2, 2])
    step = DPMPMGibbs(list(gibbs_layout(3, d).shapes), codes=np.zeros((4, 2), dtype=np.int64),
                      d=d, n_components=3, alpha_prior=(1.0, 1.0), dirichlet_prior=1.0)
    rng = np.random.default_rng(0)
    step.setup_chain(rng, 1, 1)
    h = step._generator()
    assert step._generator() is h
    np.testing.assert_array_equal(h, generator_handle(rng))
    for other in (copy.copy(step), pickle.loads(pickle.dumps(step))):
        assert other._handle is None
    step.setup_chain(np.random.default_rng(1), 1, 1)
    assert step._generator()[0] != h[0]


@pytest.mark.filterwarnings("ignore::bayes_risk.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("name", ["two_chains_missing", "structural_zeros", "one_class",
                                  "thin_two_classes", "extension_rounds", "parallel_chains",
                                  "many_classes"])
def test_draws_as_stored(name):
    """Posterior draws of small fixed fits (missing values, two chains, structural zeros with
    ``posterior_class``, one class, two classes thinned, extension rounds, chains in worker
    processes, many classes) equal those stored before the changes (make_draws.py).

    Compared to 1e-12 relative rather than bit for bit: numpy's vectorised ``log`` may differ in
    the last bit between processors (AVX-512 or not), which is not what this test is about; a
    change in the random numbers used moves every draw by far more."""
    import sys

    sys.path.insert(0, str(STORED))
    try:
        from make_draws import draws
    finally:
        sys.path.remove(str(STORED))
    stored = json.loads((STORED / "draws.json").read_text(encoding="utf-8"))[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        got = draws(name)
    assert set(got) == set(stored)
    for var, values in stored.items():
        np.testing.assert_allclose(got[var], np.asarray(values), rtol=1e-12, atol=0, err_msg=var)
