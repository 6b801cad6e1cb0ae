"""DPMPM mixing with the default MCMC settings (issue 10 item 1).

For each seed, ``DPMPM(n_components=80)`` with the defaults (2 chains in parallel, 1,000 warm-up
sweeps + 500 draws kept every 5th sweep each) is fitted to the five categorical columns of
``../shared/data/ss16pusa_sample_zeros.csv`` (1,000 records; ``--data ny``: the ten columns of
``NYexample_X.csv``, 20,000 records, 10 % missing per column) and the model's own convergence
report is printed: posterior mean, R-hat and bulk ESS of α, the data log-likelihood and the
number of occupied classes ``k_occupied``, with the Monte Carlo standard error of the means of α
and ``k_occupied`` (ArviZ ``mcse``), the wall and CPU seconds of the fit (CPU: this process and
the chain workers) and the load average at its start. NPBayesImputeCat on the ACS extract
(K = 80, 2,000 burn-in, four seeds) reports α ≈ 2.6–6.0; why this package's α is smaller: docs,
methods, compatibility (NPBayesImputeCat).

Run from the repository root:
``.venv/bin/python benchmarks/bench_dpmpm_mixing.py [--data acs|ny] [--seeds 1 2 3 4]
[--draws N --thin T]``.
Prints a table; never asserts.
"""

from __future__ import annotations

import argparse
import os
import platform
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = {
    "acs": (ROOT.parent / "shared" / "data" / "ss16pusa_sample_zeros.csv",
            ["AGEP", "MAR", "SCHL", "SEX", "WKL"]),
    "ny": (ROOT.parent / "shared" / "data" / "NYexample_X.csv",
           ["OWNERSHP", "MORTGAGE", "AGE", "SEX", "MARST", "RACESING", "EDUC", "EMPSTAT",
            "DISABWRK", "VETSTAT"]),
}


def fit_one(df, seed: int, settings: dict) -> dict[str, float]:
    import arviz_stats
    import numpy as np

    from bayes_risk.models import DPMPM

    load = os.getloadavg()[0]
    c0 = os.times()
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = DPMPM(n_components=80, progressbar=False, **settings).fit(df, random_seed=seed)
    sec = time.perf_counter() - t0
    c1 = os.times()
    cpu = sum(b - a for a, b in zip(c0[:4], c1[:4], strict=True))  # user + system, + children
    rep = m.convergence_report()
    a = m.posterior_["posterior"]["alpha"].values
    k = m.posterior_["sample_stats"]["k_occupied"].values.astype(np.float64)
    ll = m.posterior_["sample_stats"]["loglik"].values
    out = {"seed": seed, "seconds": sec, "cpu": cpu, "load": load}
    for name, x in (("alpha", a), ("k_occupied", k), ("loglik", ll)):
        out[f"{name}_mean"] = float(x.mean())
        out[f"{name}_mcse"] = float(arviz_stats.mcse(x, method="mean"))
        out[f"{name}_rhat"] = float(arviz_stats.rhat(x))
        out[f"{name}_ess"] = float(arviz_stats.ess(x, method="bulk"))
    out["flags"] = ";".join(f"{q}:{f}" for q, f in rep["flag"].items() if f)
    return out


def main() -> None:
    import pandas as pd

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", choices=sorted(DATA), default="acs")
    ap.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3, 4])
    ap.add_argument("--draws", type=int, default=None,
                    help="kept draws per chain (default: the model's; --draws 500 --thin 1 is "
                         "the previous default run)")
    ap.add_argument("--thin", type=int, default=None, help="sweeps per kept draw")
    args = ap.parse_args()
    settings = {k: v for k, v in (("draws", args.draws), ("thin", args.thin)) if v is not None}
    path, cols = DATA[args.data]
    df = pd.read_csv(path, dtype=str)[cols]  # NYexample's empty fields stay missing (NaN)
    rows = [fit_one(df, s, settings) for s in args.seeds]
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
          f"Python {platform.python_version()}; {path.name}, K = 80, defaults {settings}")
    print(f"{'seed':>4} {'alpha (mcse)':>16} {'Rhat':>5} {'ESS':>5} {'k* (mcse)':>14} {'Rhat':>5} "
          f"{'ESS':>5} {'loglik (mcse)':>18} {'Rhat':>5} {'ESS':>5} {'wall s':>7} {'CPU s':>6} "
          f"{'load':>5}  flags")
    for r in rows:
        print(f"{r['seed']:>4} {r['alpha_mean']:>8.3f} ({r['alpha_mcse']:.3f}) "
              f"{r['alpha_rhat']:>5.3f} {r['alpha_ess']:>5.0f} "
              f"{r['k_occupied_mean']:>6.2f} ({r['k_occupied_mcse']:.2f}) "
              f"{r['k_occupied_rhat']:>5.3f} {r['k_occupied_ess']:>5.0f} "
              f"{r['loglik_mean']:>10.1f} ({r['loglik_mcse']:.1f}) "
              f"{r['loglik_rhat']:>5.3f} {r['loglik_ess']:>5.0f} "
              f"{r['seconds']:>7.1f} {r['cpu']:>6.1f} {r['load']:>5.1f}  {r['flags']}")


if __name__ == "__main__":
    main()
