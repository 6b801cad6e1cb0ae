"""Benchmark: CART synthesis of SD2011 with its missing values, against complete data.

The table is synthpop's vignette selection of SD2011 (Nowok, Raab & Dibben 2016, *synthpop:
Bespoke creation of synthetic data in R*, J. Stat. Softw. 74(11), §4: ``sex``, ``age``, ``edu``,
``marital``, ``income``, ``ls``, ``wkabint``), with its empty cells and ``income``'s ``-8`` code
declared missing (the vignette's ``cont.na = list(income = c(NA, -8))``); ``--with-nociga`` adds
``nociga`` and its ``-8`` code, ``--all`` uses all 35 columns (every ``-8`` of a numeric column
declared). Every column is synthesized (``m = 5``, default settings) and the timings are compared
with the same synthesis of

* the complete cases (records without an empty cell or a declared code; only 4 of the
  5,000 records are complete on all 35 columns), and
* a complete-data table of the same size as SD2011 (every missing cell replaced by a random
  observed value of its column, seed 0: the same rows, column types and levels),

so that the cost of the missing values (a kind tree per numeric column with missing values, one
more level per categorical one) is separated from the cost of the table's size. Prints fit,
synthesis and total wall times (best of ``--repeat`` runs) and the machine; never asserts.

Usage::

    .venv/bin/python benchmarks/bench_cart_sd2011.py [--m 5] [--repeat 3] [--with-nociga] [--all]
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from pathlib import Path

import numpy as np
import pandas as pd

from bayes_risk.data import infer_schema, read_table
from bayes_risk.data.missing import missing_mask
from bayes_risk.models.trees.cart import CARTSynthesizer

VIGNETTE = ["sex", "age", "edu", "marital", "income", "ls", "wkabint"]
DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "SD2011.csv"


def machine() -> str:
    cpu = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    return (f"{os.cpu_count()} CPUs ({cpu}), Python {platform.python_version()}, "
            f"load average {load}")


def tables(cols: list[str], seed: int = 0) -> dict[str, tuple[pd.DataFrame, dict]]:
    df = read_table(DATA)[cols]
    numeric = [c for c in cols if pd.api.types.is_numeric_dtype(df[c])]
    codes = {c: [-8] for c in numeric if (df[c] == -8).any()}
    miss = np.zeros(len(df), dtype=bool)
    for c in cols:
        miss |= missing_mask(df[c], codes.get(c, ()))
    cc = df[~miss].reset_index(drop=True)
    rng = np.random.default_rng(seed)
    same_n = df.copy()
    for c in cols:
        m = missing_mask(df[c], codes.get(c, ()))
        if m.any():
            obs = df.loc[~m, c].to_numpy()
            same_n.loc[m, c] = obs[rng.integers(0, obs.size, int(m.sum()))]
    same_n = same_n.astype({c: df[c].dtype for c in cols})
    return {
        "with missing values": (df, codes),
        "complete cases": (cc, {}),
        "complete, same size": (same_n, {}),
    }


def run(df: pd.DataFrame, codes: dict, m: int, repeat: int) -> tuple[float, float]:
    schema = infer_schema(df, missing_codes=codes or None)
    best_fit = best_syn = float("inf")
    for r in range(repeat):
        t0 = time.perf_counter()
        model = CARTSynthesizer().fit(df, schema=schema, synthesized=list(df.columns),
                                      random_seed=r)
        t1 = time.perf_counter()
        model.synthesize(m, random_seed=r)
        t2 = time.perf_counter()
        best_fit, best_syn = min(best_fit, t1 - t0), min(best_syn, t2 - t1)
    return best_fit, best_syn


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--m", type=int, default=5)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--with-nociga", action="store_true",
                    help="add nociga (and its -8 code) to the vignette's columns")
    ap.add_argument("--all", action="store_true", help="all 35 columns of SD2011")
    args = ap.parse_args()
    if not DATA.is_file():
        print(f"SD2011.csv not found at {DATA}; nothing to time.")
        return
    sets = {"vignette (7 columns)": VIGNETTE}
    if args.with_nociga:
        sets["vignette + nociga (8 columns)"] = VIGNETTE + ["nociga"]
    if args.all:
        sets["all 35 columns"] = list(read_table(DATA).columns)
    print(f"CART synthesis of SD2011, every column synthesized, m = {args.m}, "
          f"best of {args.repeat}")
    print(f"machine: {machine()}")
    header = (f"{'columns':<30} {'table':<22} {'rows':>6} {'codes':<24} {'fit s':>7} "
              f"{'synth s':>8} {'total s':>8}")
    print(header)
    print("-" * len(header))
    for sname, cols in sets.items():
        for tname, (df, codes) in tables(cols).items():
            f, s = run(df, codes, args.m, args.repeat)
            cs = ", ".join(f"{c}=-8" for c in codes) or "-"
            print(f"{sname:<30} {tname:<22} {len(df):>6} {cs[:24]:<24} {f:>7.2f} {s:>8.2f} "
                  f"{f + s:>8.2f}", flush=True)
    print(f"load average after: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
