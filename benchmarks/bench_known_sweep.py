"""Knowledge-sweep benchmark (issue 33): ``known_sweep`` against separate runs; prints a table.

CEdata (5,571 records), a CART release made with the package's synthesizer as in
``examples/hornby_hu_radius.py`` (uniform donor, random descent; Tenure, Expenditure and Income
synthesized; m = 20). The candidates are Age, Urban, Marital, Tenure, Income and Expenditure
(Age, Income and Expenditure matched within a 10 % percentage radius). Times:

* ``known_sweep`` over every subset (63 non-empty, and the empty set it adds), twice: the first
  call in the process also imports numba and loads the compiled mask kernel;
* 63 separate ``identification_risk`` calls, one per non-empty subset;

and checks that every subset's measures are equal (bit for bit). Wall and CPU seconds (CPU:
the process's, every thread), with the load average. Per-dataset aggregation by
default; ``--aggregation pooled`` times the pooled one (slow: a coarse synthesized subset makes
every target match thousands of records in every dataset).

``--candidates Age Urban Marital --aggregation pooled`` times the pooled sweep over the subsets of
the unsynthesized columns (matched once, not once per dataset, by the sweep).

Usage: ``python benchmarks/bench_known_sweep.py [--aggregation pooled] [--m 20]
[--candidates COL ...]``.
"""

from __future__ import annotations

import argparse
import itertools
import os
import platform
import time
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
CE = ROOT.parent / "shared" / "data" / "CEdata.csv"
CANDIDATES = ["Age", "Urban", "Marital", "Tenure", "Income", "Expenditure"]
SYNTHESIZED = ["Tenure", "Expenditure", "Income"]
RADIUS = {"Age": 0.1, "Income": 0.1, "Expenditure": 0.1}
MEASURES = ("expected_match_risk", "true_match_rate_targets", "false_match_rate", "n_unique",
            "true_match_risk", "true_match_rate_unique", "expected_match_rate")


def _release(m: int):
    from bayes_risk.data import infer_schema, read_table
    from bayes_risk.models import CARTSynthesizer

    if not CE.is_file():  # a stand-in table would be timed under CEdata's name
        raise SystemExit(f"bench_known_sweep.py: {CE} is needed (the shared data); not run.")
    data = read_table(CE)
    schema = infer_schema(data, categorical=["Urban", "Marital", "Tenure"],
                          continuous=["Age", "Expenditure", "Income"])
    synth = CARTSynthesizer(donor="uniform", unroutable="random_descent")
    synth.fit(data, schema=schema, synthesized=SYNTHESIZED, random_seed=[2021, 4])
    return data, schema, synth.synthesize(m, random_seed=[2022, 4])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--aggregation", choices=["per_dataset", "pooled"], default="per_dataset")
    ap.add_argument("--m", type=int, default=20)
    ap.add_argument("--candidates", nargs="+", default=CANDIDATES)
    a = ap.parse_args()
    from bayes_risk import MatchSpec, identification_risk, known_sweep

    warnings.simplefilter("ignore")
    t = time.perf_counter()
    data, schema, release = _release(a.m)
    t_release = time.perf_counter() - t
    kw = dict(schema=schema, aggregation=a.aggregation, progressbar=False)
    # warm-up: imports and caches of the first call are not the sweep's
    identification_risk(data, release, known=["Urban", "Income"], synthesized=["Income"],
                        match=MatchSpec(radius={"Income": 0.1}), **kw)

    cands = list(a.candidates)
    radius = {c: r for c, r in RADIUS.items() if c in cands} or None
    # the first sweep in the process also imports numba and loads the compiled mask kernel
    # (≈ 0.5 s of CPU); the second is the sweep's own cost
    times = []
    for _ in range(2):
        t, c = time.perf_counter(), time.process_time()
        ks = known_sweep(data, release, candidates=cands, match=MatchSpec(radius=radius),
                         **kw)
        times.append((time.perf_counter() - t, time.process_time() - c))
    (t_first, c_first), (t_sweep, c_sweep) = times

    t, c = time.perf_counter(), time.process_time()
    separate = {}
    for k in range(1, len(cands) + 1):
        for s in itertools.combinations(cands, k):
            us = [c for c in s if c not in SYNTHESIZED]
            sy = [c for c in s if c in SYNTHESIZED]
            rad = {c: RADIUS[c] for c in s if c in RADIUS} or None
            separate[", ".join(s)] = identification_risk(data, release, known=[*us, *sy],
                                                         synthesized=sy,
                                                         match=MatchSpec(radius=rad),
                                                         **kw).file
    t_sep, c_sep = time.perf_counter() - t, time.process_time() - c

    diff = 0
    for label, f in separate.items():
        row = ks.table[ks.table["known"] == label].iloc[0]
        for m in MEASURES:
            x, y = row[m], f[m]
            if not (x == y or (np.isnan(x) and np.isnan(y))):
                diff += 1
    print(f"machine: {platform.machine()}, python {platform.python_version()}; CEdata "
          f"n = {len(data)}, m = {a.m}, aggregation {a.aggregation}; CART release made in "
          f"{t_release:.1f} s")
    print(f"load average (1, 5, 15 min): {', '.join(f'{x:.1f}' for x in os.getloadavg())} "
          f"on {os.cpu_count()} cores")
    print(f"{'run':<46}{'subsets':>8}{'wall s':>9}{'CPU s':>9}")
    print(f"{'known_sweep, first in the process':<46}{len(ks.table):>8}"
          f"{t_first:>9.2f}{c_first:>9.2f}")
    print(f"{'known_sweep (all subsets, the empty set too)':<46}{len(ks.table):>8}"
          f"{t_sweep:>9.2f}{c_sweep:>9.2f}")
    print(f"{'separate identification_risk calls':<46}{len(separate):>8}{t_sep:>9.2f}"
          f"{c_sep:>9.2f}")
    print(f"ratio separate / sweep: {t_sep / t_sweep:.1f} (wall), {c_sep / c_sweep:.1f} (CPU); "
          f"first sweep in the process: {t_sep / t_first:.1f} (wall), {c_sep / c_first:.1f} "
          "(CPU); "
          f"measures differing from the separate runs: {diff} of "
          f"{len(separate) * len(MEASURES)}")


if __name__ == "__main__":
    main()
