"""DPMPM benchmarks (issue 4).

1. ``bayes-risk fit`` on ``../shared/data/NYexample_X.csv`` (20,000 × 10, 10 % missing per
   column, imputed in the sampler), K = 80, 500 tuning + 500 kept sweeps, one chain, timed as a
   subprocess, twice (the first run may compile/cache the numba kernels), then once with the
   default MCMC settings (2 chains in parallel, 1000 + 500 sweeps). Reference: the C++ Gibbs
   sampler of the R package NPBayesImputeCat takes 10.7 s; target <= 2x (21.4 s).
2. The neighbourhood kernel (one-variable-different candidates, SPEC §2.3.2) for n = 10,000
   ACS-like records (``make_acs_like``), p = 14, K = 30, H = 1,000 posterior draws (from a short
   Gibbs fit), computed in record chunks. Target < 60 s.

Run: ``.venv/bin/python benchmarks/bench_dpmpm.py [--skip-fit] [--skip-neighbourhood]``.
Prints a table; never asserts timings.
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NY = ROOT.parent / "shared" / "data" / "NYexample_X.csv"
NY_COLUMNS = ["OWNERSHP", "MORTGAGE", "AGE", "SEX", "MARST", "RACESING", "EDUC", "EMPSTAT",
              "DISABWRK", "VETSTAT"]


def bench_fit(runs: int = 2) -> list[tuple[str, float]]:
    rows = []
    if not NY.is_file():
        print(f"skipping the fit benchmark: {NY} not found", file=sys.stderr)
        return rows
    import importlib.util

    import bayes_risk.cli as cli

    if all(importlib.util.find_spec(f"bayes_risk.cli.{n}") for n in cli.SUBCOMMANDS):
        cmd0 = [sys.executable, "-m", "bayes_risk"]
    else:  # some sub-commands are not written yet: run main() with the ones present
        shim = (
            "import sys, importlib.util, bayes_risk.cli as c; "
            "c.SUBCOMMANDS = tuple(n for n in c.SUBCOMMANDS "
            "if importlib.util.find_spec('bayes_risk.cli.' + n)); sys.exit(c.main(sys.argv[1:]))"
        )
        cmd0 = [sys.executable, "-c", shim]
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(runs):
            cmd = cmd0 + [
                "fit", str(NY), "--method", "dpmpm", "--categorical", *NY_COLUMNS,
                "--components", "80", "--tune", "500", "--draws", "500", "--chains", "1",
                "--random-seed", "1", "--quiet", "--out", str(Path(tmp) / f"m{r}"),
            ]
            t0 = time.perf_counter()
            subprocess.run(cmd, check=True, env={**os.environ, "PYTHONWARNINGS": "ignore"},
                           stderr=subprocess.DEVNULL)
            rows.append((f"bayes-risk fit NYexample (20000x10, K=80, 1000 sweeps), run {r + 1}",
                         time.perf_counter() - t0))
        # the defaults (issue 10): 2 chains in parallel, 1000 warm-up + 500 kept sweeps each
        cmd = cmd0 + [
            "fit", str(NY), "--method", "dpmpm", "--categorical", *NY_COLUMNS,
            "--components", "80", "--random-seed", "1", "--quiet", "--out", str(Path(tmp) / "d"),
        ]
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True, env={**os.environ, "PYTHONWARNINGS": "ignore"},
                       stderr=subprocess.DEVNULL)
        rows.append(("bayes-risk fit NYexample, K=80, defaults (2 parallel chains x 1500 sweeps)",
                     time.perf_counter() - t0))
    return rows


def bench_neighbourhood() -> list[tuple[str, float]]:
    import numpy as np

    from bayes_risk.data import make_acs_like
    from bayes_risk.models.dpmpm import DPMPM

    df = make_acs_like(10_000, random_seed=2012)
    t0 = time.perf_counter()
    # a short chain gives 1,000 posterior draws with the right shapes and magnitudes
    model = DPMPM(n_components=30, tune=100, draws=1000, progressbar=False)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(df, random_seed=1)
    t_fit = time.perf_counter() - t0
    G = model.neighbourhood_size()
    chunk = 500
    model.neighbourhood_loglik(df.iloc[:2])  # compile / load cached kernel
    t0 = time.perf_counter()
    checksum = 0.0
    for a in range(0, len(df), chunk):
        out = model.neighbourhood_loglik(df.iloc[a : a + chunk])
        checksum += float(np.mean(out))
    t_nb = time.perf_counter() - t0
    return [
        ("DPMPM fit ACS-like (10000x14, K=30, 1100 sweeps) [setup]", t_fit),
        (f"neighbourhood kernel n=10000, p=14, K=30, H=1000, G={G}", t_nb),
    ]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--skip-fit", action="store_true")
    ap.add_argument("--skip-neighbourhood", action="store_true")
    ap.add_argument("--runs", type=int, default=2)
    args = ap.parse_args()
    rows = []
    if not args.skip_fit:
        rows += bench_fit(args.runs)
    if not args.skip_neighbourhood:
        rows += bench_neighbourhood()
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
          f"Python {platform.python_version()}")
    width = max(len(r[0]) for r in rows) if rows else 10
    print(f"{'benchmark':<{width}}  seconds")
    for name, sec in rows:
        print(f"{name:<{width}}  {sec:8.2f}")


if __name__ == "__main__":
    main()
