"""Default DPMPM fits on every categorical shared data set: do they reach the posterior? (issue 10)

Fits ``DPMPM(n_components=80)`` with the package's defaults (what ``bayes-risk fit DATA.csv
--method dpmpm --components 80 [--structural-zeros MCZ.csv] --random-seed S`` runs: the CSV read
by ``bayes_risk.data.io.read_table``, every column categorical, 2 chains × (1,000 warm-up +
2,500 sweeps, every 5th kept), extended in rounds that double the window and the thinning
while the convergence checks fail, up to ``max_sweeps`` = 50,000 sweeps per chain) to each
categorical data set of ``../shared/data`` that the docs,
examples or tests fit a DPMPM to, for seeds 1–4:

* ``ss16pusa_sample_nozeros.csv`` and ``_nozeros_miss.csv`` (3 columns; no structural zeros);
* ``ss16pusa_sample_zeros.csv`` and ``_zeros_miss.csv`` (5 columns), each without and with the
  8 structural-zero cells of ``ss16pusa_ds_MCZ.csv``;
* ``NYexample_X.csv`` (20,000 × 10, 10 % missing per column), without and with the 60 patterns
  of ``NYexample_MCZ.csv``.

(``SD2011.csv`` and the ``CEdata`` files are not fitted with a DPMPM anywhere in the docs,
examples or tests, so they are not surveyed.)

For each fit it prints the model's own convergence record (``convergence_summary()``): R-hat and
bulk ESS of α, of the number of occupied classes ``k_occupied`` and of the data log-likelihood;
the largest R-hat and the smallest bulk/tail ESS over the marginal cell probabilities it checks;
the recorded warning codes with the quantities they name; the rounds the run took, its final
thinning and sweeps per chain; the CPU and wall seconds of the fit (this process and any chain
workers) and the load average at its start. ``--cores 1`` (the default
here) runs the two chains one after the other: the draws are the same as with the chains in
parallel, and the survey then uses one core of the shared machine.

Not a timing, not run by ``make bench``. Run from the repository root:
``.venv/bin/python benchmarks/survey_dpmpm_defaults.py [--sets NAME ...] [--seeds 1 2 3 4]
[--cores N] [--alpha-warmup-sweeps W] [--max-sweeps N] [--jsonl FILE]``. Prints a table;
never asserts.
"""

from __future__ import annotations

import argparse
import json
import os
import time
import warnings
from pathlib import Path

DATA = Path(__file__).resolve().parent.parent.parent / "shared" / "data"
#: name -> (data file, structural-zeros file or None); K = 80 for all, as the docs use
SETS = {
    "nozeros": ("ss16pusa_sample_nozeros.csv", None),
    "nozeros_miss": ("ss16pusa_sample_nozeros_miss.csv", None),
    "zeros": ("ss16pusa_sample_zeros.csv", None),
    "zeros+MCZ": ("ss16pusa_sample_zeros.csv", "ss16pusa_ds_MCZ.csv"),
    "zeros_miss": ("ss16pusa_sample_zeros_miss.csv", None),
    "zeros_miss+MCZ": ("ss16pusa_sample_zeros_miss.csv", "ss16pusa_ds_MCZ.csv"),
    "ny": ("NYexample_X.csv", None),
    "ny+MCZ": ("NYexample_X.csv", "NYexample_MCZ.csv"),
}
MAIN = ("alpha", "k_occupied", "loglik")


def fit_one(name: str, seed: int, cores: int, K: int, warmup_sweeps: int | None = None,
            max_sweeps: int | None = None) -> dict:
    """One default fit and its convergence record (``warmup_sweeps``, ``max_sweeps``: the
    model's ``alpha_warmup_sweeps`` and ``max_sweeps``, ``None`` for their defaults)."""
    from bayes_risk.data.io import read_table
    from bayes_risk.models import DPMPM

    data_file, mcz = SETS[name]
    df = read_table(DATA / data_file)
    load = os.getloadavg()[0]
    c0, t0 = os.times(), time.perf_counter()
    extra = {} if warmup_sweeps is None else {"alpha_warmup_sweeps": warmup_sweeps}
    if max_sweeps is not None:
        extra["max_sweeps"] = max_sweeps
    model = DPMPM(n_components=K, cores=cores, progressbar=False,
                  structural_zeros=None if mcz is None else DATA / mcz, **extra)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the warnings are read from the record below
        model.fit(df, categorical=list(df.columns), random_seed=seed)
    wall = time.perf_counter() - t0
    c1 = os.times()
    cpu = sum(b - a for a, b in zip(c0[:4], c1[:4], strict=True))  # user + system, + children
    rec = model.convergence_summary()
    q = rec["quantities"]
    cells = {k: v for k, v in q.items() if k not in MAIN}
    worst = max(cells, key=lambda k: cells[k]["rhat"]) if cells else None
    return {
        "set": name, "seed": seed, "n": len(df), "columns": len(df.columns),
        "missing": float(df.isna().to_numpy().mean()),
        "chains": rec["chains"], "draws": rec["draws"], "thin": rec["thin"], "tune": rec["tune"],
        "rounds": rec["rounds"], "sweeps": rec["sweeps_per_chain"],
        **{f"{k}_{s}": q[k][s] for k in MAIN if k in q for s in ("mean", "rhat", "ess_bulk",
                                                                   "ess_tail")},
        "cells": len(cells),
        "cell_rhat_max": max((v["rhat"] for v in cells.values()), default=float("nan")),
        "cell_rhat_worst": worst,
        "cell_ess_min": min((min(v["ess_bulk"], v["ess_tail"]) for v in cells.values()),
                            default=float("nan")),
        "warnings": [f"{w['code']}({','.join(w['quantities'])})" for w in rec["warnings"]],
        "passed": rec["passed"], "cpu": cpu, "wall": wall, "load": load,
    }


def _row(r: dict) -> str:
    codes = "; ".join(r["warnings"]) or "none"
    return (f"| {r['set']} | {r['seed']} | {r['alpha_mean']:.3f}, {r['alpha_rhat']:.3f}, "
            f"{r['alpha_ess_bulk']:.0f} | {r['k_occupied_mean']:.2f}, "
            f"{r['k_occupied_rhat']:.3f}, {r['k_occupied_ess_bulk']:.0f} | "
            f"{r['loglik_mean']:,.1f}, {r['loglik_rhat']:.3f}, {r['loglik_ess_bulk']:.0f} | "
            f"{r['cell_rhat_max']:.3f}, {r['cell_ess_min']:.0f} ({r['cells']}) | {codes} | "
            f"{r['rounds']}, {r['thin']}, {r['sweeps']:,} | "
            f"{r['cpu']:.1f}, {r['wall']:.1f} ({r['load']:.1f}) |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sets", nargs="+", choices=list(SETS), default=list(SETS))
    ap.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3, 4])
    ap.add_argument("--cores", type=int, default=1, help="chain workers (draws do not depend "
                    "on it; 1 keeps the survey to one core)")
    ap.add_argument("--components", type=int, default=80)
    ap.add_argument("--alpha-warmup-sweeps", type=int, default=None,
                    help="warm-up sweeps with α bounded (default: the model's; 0: no bound, "
                    "the sampler before the bound)")
    ap.add_argument("--max-sweeps", type=int, default=None,
                    help="bound of the self-extending run (default: the model's; 0: the "
                    "fixed default run of 2,500 sweeps after the warm-up)")
    ap.add_argument("--jsonl", type=Path, default=None, help="also append each fit's record")
    args = ap.parse_args()
    print("| data set | seed | α: mean, R-hat, bulk ESS | k*: mean, R-hat, ESS | "
          "log-likelihood: mean, R-hat, ESS | cells: max R-hat, min ESS (n) | warnings | "
          "rounds, thin, sweeps/chain | CPU s, wall s (load) |")
    print("| --- | ---: | --- | --- | --- | --- | --- | --- | ---: |")
    for name in args.sets:
        if not (DATA / SETS[name][0]).is_file():
            print(f"skipping {name}: {DATA / SETS[name][0]} not found")
            continue
        for seed in args.seeds:
            r = fit_one(name, seed, args.cores, args.components, args.alpha_warmup_sweeps,
                        args.max_sweeps)
            print(_row(r), flush=True)
            if args.jsonl is not None:
                with args.jsonl.open("a") as fh:
                    fh.write(json.dumps(r) + "\n")


if __name__ == "__main__":
    main()
