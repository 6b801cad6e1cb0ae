"""The Poisson mixture's Gibbs draws stay those of the sampler before its per-sweep changes.

The label-switching moves take the chain's generator as a handle read once per chain
(``models._bayesian.generator``), as the DPMPM sweep does, instead of the generator itself at
every sweep (whose addresses ``label_switch_moves`` then read afresh through ``ctypes``): the
same seed must give the same posterior draws and memberships. Checked end to end against draws
stored by the sampler before the change (``poisson_draws/``, written by ``make_draws.py``
there).
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pytest

STORED = Path(__file__).parent / "poisson_draws"


@pytest.mark.parametrize("name", ["many_classes", "two_chains", "two_classes", "one_class"])
def test_draws_as_stored(name):
    """Posterior draws, statistics and memberships of small fixed fits (many classes, two
    chains, two classes, one class) equal those stored before the change (make_draws.py).

    Compared to 1e-12 relative rather than bit for bit (numpy's vectorised ``log`` may differ in
    the last bit between processors); the memberships exactly. A change in the random numbers
    used moves every draw by far more."""
    import importlib.util

    # by its path, under a name of its own (dpmpm_draws/ has a make_draws.py too)
    spec = importlib.util.spec_from_file_location("poisson_make_draws", STORED / "make_draws.py")
    make_draws = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(make_draws)
    draws = make_draws.draws
    stored = json.loads((STORED / "draws.json").read_text(encoding="utf-8"))[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        got = draws(name)
    assert set(got) == set(stored)
    for var, values in stored.items():
        if var in ("z", "n_occupied"):
            np.testing.assert_array_equal(got[var], np.asarray(values), err_msg=var)
        else:
            np.testing.assert_allclose(got[var], np.asarray(values), rtol=1e-12, atol=0,
                                       err_msg=var)


def test_step_reads_a_handle_per_generator():
    """The step reads its generator's handle once per generator; a copy of the step never
    carries one (addresses of this process; the class, local to ``_gibbs_step_class``, is never
    pickled: the chains run in this process), and a new generator gets its own."""
    import copy

    from bayes_risk.models import PoissonMixture
    from bayes_risk.models._bayesian.generator import generator_handle
    from bayes_risk.models.poisson.fit import _gibbs_step_class

    y = np.array([[1, 2], [3, 4], [0, 1], [2, 2]])
    model = PoissonMixture(n_components=3).build_pymc_model(y, ["a", "b"])
    step = _gibbs_step_class()([model.rvs_to_values[v] for v in model.free_RVs], y=y, K=3,
                               a_lam=1.0, b_lam=np.ones(2), a_alpha=1.0, b_alpha=1.0,
                               names={}, model=model)
    rng = np.random.default_rng(0)
    step.setup_chain(rng, 1, 1)
    h = step._generator()
    assert step._generator() is h
    np.testing.assert_array_equal(h, generator_handle(rng))
    assert copy.copy(step)._handle is None
    step.setup_chain(np.random.default_rng(1), 1, 1)
    assert step._generator()[0] != h[0]
