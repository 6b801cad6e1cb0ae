"""DPMPM with and without structural zeros (issue 16 item 2): impossible records released.

For each data set with a table of structural zeros in ``../shared/data`` (``ss16pusa`` with its
8 cells; ``NYexample`` with its 60 patterns, ``--ny``), fit a DPMPM with and without the zeros
(one chain, ``--tune`` + ``--draws`` sweeps), synthesize ``m = 20`` datasets and print the share
of released records that are impossible, the model's posterior mean of ``P(S | Θ)`` (the mass
the unrestricted model puts on impossible cells) and the fit time.

Run: ``.venv/bin/python benchmarks/bench_structural_zeros.py [--ny] [--tune N] [--draws N]``.
Prints a table; never asserts.
"""

from __future__ import annotations

import argparse
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

DATA = Path(__file__).resolve().parent.parent.parent / "shared" / "data"
SETS = {
    "ss16pusa": ("ss16pusa_sample_zeros.csv", "ss16pusa_ds_MCZ.csv"),
    "NYexample": ("NYexample_X.csv", "NYexample_MCZ.csv"),
}


def run(name: str, K: int, tune: int, draws: int, m: int) -> list[tuple]:
    from bayes_risk.models.dpmpm.coding import encode
    from bayes_risk.models.dpmpm.dpmpm import DPMPM
    from bayes_risk.models.dpmpm.zeros import StructuralZeros, read_structural_zeros

    data_file, mcz = (DATA / f for f in SETS[name])
    df = pd.read_csv(data_file)
    rows = []
    for label, zeros in (("without", None), ("with", mcz)):
        model = DPMPM(n_components=K, tune=tune, draws=draws, chains=1, progressbar=False,
                      structural_zeros=zeros)
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model.fit(df, categorical=list(df.columns), random_seed=1)
        fit_s = time.perf_counter() - t0
        syn = model.synthesize(m, random_seed=2)
        zs = StructuralZeros(read_structural_zeros(mcz), model.schema_.names,
                             [c.levels for c in model.schema_])
        share = float(np.mean([zs.contains(encode(model.schema_, s)).mean() for s in syn]))
        mass = float(np.exp(zs.log_mass(model._state.phi, model._state.log_pi)).mean())
        rows.append((name, label, len(df), len(zs.boxes), share, mass, fit_s))
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ny", action="store_true", help="also NYexample (20,000 records)")
    ap.add_argument("--components", type=int, default=30)
    ap.add_argument("--tune", type=int, default=500)
    ap.add_argument("--draws", type=int, default=500)
    ap.add_argument("-m", type=int, default=20)
    args = ap.parse_args()
    rows = []
    for name in ["ss16pusa"] + (["NYexample"] if args.ny else []):
        if not (DATA / SETS[name][0]).is_file():
            print(f"skipping {name}: {DATA / SETS[name][0]} not found")
            continue
        rows += run(name, args.components, args.tune, args.draws, args.m)
    print(f"K = {args.components}, {args.tune} + {args.draws} sweeps, one chain, m = {args.m}")
    print("| data | structural zeros | n | disjoint boxes | share impossible released "
          "| posterior mean P(S) | fit s |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
    for name, label, n, boxes, share, mass, fit_s in rows:
        print(f"| {name} | {label} | {n} | {boxes} | {share:.4%} | {mass:.4%} | {fit_s:.1f} |")


if __name__ == "__main__":
    main()
