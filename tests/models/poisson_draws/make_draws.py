"""Write draws.json: posterior draws of small fixed Poisson-mixture fits
(tests/models/test_poisson_draws.py).

Run from the repository root with the package installed: ``python
tests/models/poisson_draws/make_draws.py [NAME ...]`` (names: those entries only, the others
kept). The stored file was written by the sampler before its label-switching moves took the
chain's generator as a handle read once per chain (``models._bayesian.generator``) instead of
the generator itself at every sweep. The test checks that the sampler still gives these draws.
"""

from __future__ import annotations

import json
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent


def table() -> pd.DataFrame:
    """40 records of two count columns from two well-separated classes."""
    rng = np.random.default_rng(2024)
    k = rng.integers(0, 2, 40)
    lam = np.array([[2.0, 15.0], [10.0, 3.0]])[k]
    return pd.DataFrame(rng.poisson(lam), columns=["workers", "wages"])


#: name: PoissonMixture settings
CONFIGS = {
    # many classes for 40 records: label swaps of occupied pairs and of neighbours
    "many_classes": dict(n_components=8, tune=20, draws=15, chains=1),
    # two chains (each its own generator, the step shared)
    # every chain started from a prior draw, as all did when the draws were stored (before
    # the overdispersed starts: starts="prior")
    "two_chains": dict(n_components=5, tune=15, draws=10, chains=2, starts="prior"),
    # two classes: the pair swap only (no neighbour swaps)
    "two_classes": dict(n_components=2, tune=15, draws=10, chains=1),
    # one class: no label moves
    "one_class": dict(n_components=1, tune=5, draws=10, chains=1),
}


def draws(name: str) -> dict[str, list]:
    from bayes_risk.models import PoissonMixture

    # the configurations are written flat, as the models took them when the draws were stored
    settings = CONFIGS[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # short runs: convergence warnings expected
        m = PoissonMixture.from_settings({"progressbar": False, **settings}).fit(
            table(), random_seed=11)
    post, stats = m.posterior_["posterior"], m.posterior_["sample_stats"]
    out = {v: post[v].values.tolist() for v in ("lam", "alpha", "v") if v in post}
    out["loglik"] = stats["loglik"].values.tolist()
    out["n_occupied"] = stats["n_occupied"].values.tolist()
    out["z"] = m.posterior_["latent"]["z"].values.tolist()
    return out


if __name__ == "__main__":
    path = HERE / "draws.json"
    result = json.loads(path.read_text(encoding="utf-8")) if sys.argv[1:] else {}
    result.update({name: draws(name) for name in sys.argv[1:] or CONFIGS})
    result = {name: result[name] for name in CONFIGS}
    path.write_text(json.dumps(result) + "\n", encoding="utf-8")
    sys.exit(0)
