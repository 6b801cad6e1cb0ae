"""Write draws.json: posterior draws of small fixed DPMPM fits (tests/models/test_dpmpm_draws.py).

Run from the repository root with the package installed: ``python
tests/models/dpmpm_draws/make_draws.py [NAME ...]`` (names: those entries only, the others kept).
The stored file was written by the sampler before its per-sweep overhead was cut (the sticks'
and φ's random numbers drawn in the compiled moves' call); the entries from
``thin_two_classes`` on by the sampler before the generator was passed to the compiled calls
as a handle (``models._bayesian.generator``). The test checks that the sampler still gives
these draws.
"""

from __future__ import annotations

import json
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
ZEROS = pd.DataFrame({"a": [2, None, 2], "b": [3, 1, None], "c": [None, 2, 2]})


def table(with_zeros: bool) -> pd.DataFrame:
    """25 records of three categorical columns, about 10% missing (none in the rows of ZEROS'
    patterns: the data must lie outside the structural zeros)."""
    rng = np.random.default_rng(2024)
    rows = []
    while len(rows) < 25:
        a, b, c = (int(x) for x in rng.integers(1, [3, 4, 3]))
        if with_zeros and ((a == 2 and b == 3) or (b == 1 and c == 2) or (a == 2 and c == 2)):
            continue
        rows.append((a, b, c))
    df = pd.DataFrame(rows, columns=["a", "b", "c"]).astype(float)
    return df.mask(rng.random(df.shape) < 0.1)


#: name: (DPMPM settings, structural zeros?)
CONFIGS = {
    # every chain started with every class occupied, as all chains did when the draws were
    # stored (before the overdispersed starts: starts="spread")
    "two_chains_missing": dict(n_components=4, tune=30, draws=20, chains=2, cores=1,
                               starts="spread"),
    "structural_zeros": dict(n_components=3, tune=30, draws=20, chains=1,
                             structural_zeros=ZEROS, synthesis_mode="posterior_class"),
    "one_class": dict(n_components=1, tune=10, draws=20, chains=1),
    # two classes (no neighbour swaps), three sweeps per kept draw
    "thin_two_classes": dict(n_components=2, tune=20, draws=15, thin=3, chains=1),
    # rounds that extend the run (each chain on its own copy of the step), twice the thinning
    "extension_rounds": dict(n_components=5, tune=20, draws=10, chains=1, max_sweeps=200),
    # chains in forked worker processes
    "parallel_chains": dict(n_components=4, tune=20, draws=10, chains=2, cores=2,
                            starts="spread"),
    # many classes for 25 records: many empty ones, α bounded in the warm-up
    "many_classes": dict(n_components=12, tune=40, draws=20, chains=1),
}


def draws(name: str) -> dict[str, list]:
    from bayes_risk.models import DPMPM

    # the configurations are written flat, as the models took them when the draws were stored
    settings = CONFIGS[name]
    df = table("structural_zeros" in settings)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # short runs: convergence warnings expected
        m = DPMPM.from_settings({"progressbar": False, **settings}).fit(
            df, categorical=list(df.columns), random_seed=11)
    post, stats = m.posterior_["posterior"], m.posterior_["sample_stats"]
    out = {v: post[v].values.tolist() for v in ("alpha", "phi_0", "phi_1", "phi_2")}
    if "V" in post:
        out["V"] = post["V"].values.tolist()
    out["loglik"] = stats["loglik"].values.tolist()
    return out


if __name__ == "__main__":
    path = HERE / "draws.json"
    result = json.loads(path.read_text(encoding="utf-8")) if sys.argv[1:] else {}
    result.update({name: draws(name) for name in sys.argv[1:] or CONFIGS})
    result = {name: result[name] for name in CONFIGS}
    path.write_text(json.dumps(result) + "\n", encoding="utf-8")
    sys.exit(0)
