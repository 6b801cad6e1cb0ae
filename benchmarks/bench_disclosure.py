"""Time synthpop's empirical disclosure measures on CEdata with m = 20 synthetic datasets.

Uses the shared CE data and scenario-1 synthetic datasets when ``../shared`` is present,
otherwise the CE-like demo table with Income resampled. Keys Age, Urban, Marital; target
Income. synthpop 1.9-2 is not timed here (no R on the machine). Prints a table; no assertions.

    .venv/bin/python benchmarks/bench_disclosure.py
"""

from __future__ import annotations

import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from bayes_risk.disclosure import disclosure_measures, replicated_uniques

CAT = ["Urban", "Marital", "Tenure"]
KEYS = ["Age", "Urban", "Marital"]


def load() -> tuple[pd.DataFrame, list[pd.DataFrame], str]:
    shared = Path(__file__).resolve().parents[2] / "shared"
    folder = shared / "reference" / "identification" / "synthetic"
    if (shared / "data" / "CEdata.csv").is_file() and folder.is_dir():
        orig = pd.read_csv(shared / "data" / "CEdata.csv")
        syn = [pd.read_csv(folder / f"scenario1_syn{l}.csv") for l in range(1, 21)]
        return orig, syn, "CEdata + scenario 1"
    from bayes_risk.data import make_ce_like

    orig = make_ce_like(n=5571, random_seed=2018)
    rng = np.random.default_rng(1)
    syn = [orig.assign(Income=orig["Income"].to_numpy()[rng.integers(0, len(orig), len(orig))])
           for _ in range(20)]
    return orig, syn, "make_ce_like + resampled Income"


def best_of(fn, repeat: int = 3) -> tuple[float, float]:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fn()
        times.append(time.perf_counter() - t)
    return min(times), float(np.median(times))


def main() -> None:
    orig, syn, what = load()
    cases = [
        ("disclosure_measures, Income ungrouped",
         lambda: disclosure_measures(orig, syn, keys=KEYS, target="Income", categorical=CAT)),
        ("disclosure_measures, compat='synthpop'",
         lambda: disclosure_measures(orig, syn, keys=KEYS, target="Income", categorical=CAT,
                                     compat="synthpop")),
        ("disclosure_measures, ngroups_target=10",
         lambda: disclosure_measures(orig, syn, keys=KEYS, target="Income", categorical=CAT,
                                     ngroups_target=10)),
        ("replicated_uniques, keys + Income",
         lambda: replicated_uniques(orig, syn, keys=[*KEYS, "Income"], categorical=CAT)),
        ("replicated_uniques, compat='synthpop'",
         lambda: replicated_uniques(orig, syn, keys=[*KEYS, "Income"], categorical=CAT,
                                    compat="synthpop")),
    ]
    print(f"data: {what} (n = {len(orig)}, m = {len(syn)})")
    print(f"{'case':45s} {'best s':>8s} {'median s':>9s}")
    for label, fn in cases:
        b, med = best_of(fn)
        print(f"{label:45s} {b:8.3f} {med:9.3f}")


if __name__ == "__main__":
    main()
