"""Benchmark: sequential CART synthesis of m = 20 releases of a CE-like table (target < 20 s).

Scenario 4 of Hornby & Hu (S002): synthesize Tenure (categorical), Expenditure and Income
(continuous), in that order, keeping Age, Urban, Educ and Marital; Urban, Marital and Tenure are
categorical. Runs on the embedded CE-like demo table (5,571 × 7) and, when present, on the real
CEdata (``../shared/data/CEdata.csv``). Prints a table of fit, synthesis and total wall times
(best of ``--repeat`` runs) for the default settings, the synthpop-style variant and kernel
smoothing.

Usage::

    .venv/bin/python benchmarks/bench_cart.py [--m 20] [--repeat 3]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from bayes_risk.data import infer_schema, make_ce_like, read_table
from bayes_risk.models.trees.cart import CARTSynthesizer

SYN = ["Tenure", "Expenditure", "Income"]
CAT = ["Urban", "Marital", "Tenure"]
VARIANTS = {
    "bayes_bootstrap (default)": {},
    "uniform donor + random descent": {"donor": "uniform", "unroutable": "random_descent"},
    "kernel smoothing": {"smoothing": True},
    "default, n_jobs=2": {"n_jobs": 2},
}


def run(df, m: int, repeat: int, **settings) -> tuple[float, float]:
    schema = infer_schema(df, categorical=CAT)
    best_fit = best_syn = float("inf")
    for r in range(repeat):
        t0 = time.perf_counter()
        model = CARTSynthesizer(**settings).fit(df, schema=schema, synthesized=SYN, random_seed=r)
        t1 = time.perf_counter()
        model.synthesize(m, random_seed=r)
        t2 = time.perf_counter()
        best_fit, best_syn = min(best_fit, t1 - t0), min(best_syn, t2 - t1)
    return best_fit, best_syn


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--m", type=int, default=20)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    tables = {"CE-like demo (make_ce_like)": make_ce_like()}
    real = Path(__file__).resolve().parents[2] / "shared" / "data" / "CEdata.csv"
    if real.is_file():
        tables["real CEdata.csv"] = read_table(real)
    print(f"CART synthesis, m = {args.m}, synthesized {SYN}, best of {args.repeat}")
    header = f"{'data':<28} {'rows':>6} {'variant':<32} {'fit s':>7} {'synth s':>8} {'total s':>8}"
    print(header)
    print("-" * len(header))
    for name, df in tables.items():
        for vname, settings in VARIANTS.items():
            f, s = run(df, args.m, args.repeat, **settings)
            print(f"{name:<28} {len(df):>6} {vname:<32} {f:>7.2f} {s:>8.2f} {f + s:>8.2f}")


if __name__ == "__main__":
    main()
