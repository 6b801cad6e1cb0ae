"""Identification-risk benchmarks (issue 3); prints a table.

1. CEdata scenario 4 of Hornby & Hu (known Age, Urban, Marital; synthesized Tenure, Expenditure,
   Income; r = 0.1 percentage; m = 20; per dataset, compat mode). The R package
   (IdentificationRiskCalculation) takes 6.6 s for this call on the project machine. The synthetic
   data come from ``bayes_risk.models.cart.CARTSynthesizer`` when it is available, otherwise from
   a fast stand-in (resampling Tenure within Urban x Marital cells and multiplicative log-normal
   noise on Expenditure and Income, fixed seed). Also times the reference scenario 1 and 3 calls
   (synthetic data in ../shared/reference/identification).
2. 1,000,000 records, m = 5, three categorical known columns (10 x 8 x 5 levels), two continuous
   synthesized columns (log-normal income, expenditure; synthetic = confidential x log-normal
   noise, sd 0.1), percentage radius 0.05; per-dataset and pooled aggregation (pooled with
   ``fallback="none"``: the fallback to the unsynthesized key would give every unmatched target
   ~2,500 candidate records); each case runs in a fresh subprocess so that its peak RSS
   (``resource.getrusage``) is its own.

Usage: ``python benchmarks/bench_identification.py [--quick]`` (``--quick``: 100,000 records).
"""

from __future__ import annotations

import json
import os
import platform
import resource
import subprocess
import sys
import time
import warnings
from functools import partial
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"
CE = SHARED / "data" / "CEdata.csv"
REF = SHARED / "reference" / "identification"
CATS = ["Urban", "Marital", "Tenure"]


def _timeit(fn, repeat=7):
    """Best and median wall time, and the CPU time (all threads) of the best run."""
    times = []
    cpus = []
    out = None
    for _ in range(repeat):
        t = time.perf_counter()
        c = time.process_time()
        out = fn()
        times.append(time.perf_counter() - t)
        cpus.append(time.process_time() - c)
    i = int(np.argmin(times))
    return times[i], float(np.median(times)), cpus[i], out


def _scenario4_synthetic(ce: pd.DataFrame, m: int = 20, seed: int = 2021):
    try:
        from bayes_risk.data.schema import infer_schema
        from bayes_risk.models.cart import CARTSynthesizer

        schema = infer_schema(ce, categorical=CATS)
        model = CARTSynthesizer().fit(
            ce, schema=schema, synthesized=["Tenure", "Expenditure", "Income"], random_seed=seed
        )
        return list(model.synthesize(m=m, random_seed=seed).datasets), "CARTSynthesizer"
    except Exception as err:  # CART synthesizer not (yet) available: fast stand-in
        rng = np.random.default_rng(seed)
        out = []
        cell = ce.groupby(["Urban", "Marital"]).indices
        for _ in range(m):
            z = ce.copy()
            ten = z["Tenure"].to_numpy().copy()
            for idx in cell.values():
                ten[idx] = rng.choice(ce["Tenure"].to_numpy()[idx], size=len(idx))
            z["Tenure"] = ten
            z["Expenditure"] = (ce["Expenditure"] * rng.lognormal(0, 0.15, len(ce))).round(4)
            z["Income"] = (ce["Income"] * rng.lognormal(0, 0.15, len(ce))).round(0)
            out.append(z)
        return out, f"stand-in (perturbation; CART unavailable: {type(err).__name__})"


def bench_ce() -> list[dict]:
    from bayes_risk.identification.api import identification_risk

    ce = pd.read_csv(CE)
    rows = []
    syn4, how = _scenario4_synthetic(ce)
    calls = [("CE scenario 4 (m=20, compat, per dataset)", syn4,
              ["Age", "Urban", "Marital"], ["Tenure", "Expenditure", "Income"], {}, 6.6, how)]
    man = json.loads((REF / "manifest.json").read_text()) if REF.is_dir() else {"runs": []}
    for run in man["runs"]:
        syn = [pd.read_csv(REF / f) for f in run["synthetic_files"]]
        shape = "legacy_hh_euclid" if run["euclideanDist"] else "rectangle"
        calls.append((f"CE reference {run['id']} (m=20, compat)", syn,
                      [c for c in run["known"] if c not in run["syn"]], run["syn"],
                      {"shape": shape, "radius": run["r"]}, None, "shared/reference"))
    for label, syn, kus, ks, extra, r_time, how in calls:
        kw = dict(categorical=CATS, radius=0.1, compat="IdentificationRiskCalculation",
                  progressbar=False)
        kw.update(extra)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t0 = time.perf_counter()
            identification_risk(ce, syn, known_unsynthesized=kus, known_synthesized=ks,
                                **kw)  # first call (numba cache load)
            first = time.perf_counter() - t0
            best, med, cpu, res = _timeit(partial(identification_risk, ce, syn,
                                                  known_unsynthesized=kus, known_synthesized=ks,
                                                  **kw))
        rows.append({
            "case": label, "first_s": first, "best_s": best, "median_s": med, "cpu_s": cpu,
            "R_s": r_time, "speedup_vs_R": (r_time / best) if r_time else None,
            "expected_match_risk": res.file["expected_match_risk"], "data": how,
        })
    return rows


def make_large(n: int, m: int, seed: int = 1):
    rng = np.random.default_rng(seed)
    y = pd.DataFrame({
        "region": rng.integers(0, 10, n), "hhsize": rng.integers(0, 8, n),
        "sex": rng.integers(0, 5, n),
    })
    inc = rng.lognormal(10.5, 1.0, n)
    y["income"] = inc.round(0)
    y["expend"] = (inc**0.6 * rng.lognormal(0, 0.5, n)).round(2)
    zs = []
    for _ in range(m):
        z = y.copy()
        z["income"] = (y["income"] * rng.lognormal(0, 0.1, n)).round(0)
        z["expend"] = (y["expend"] * rng.lognormal(0, 0.1, n)).round(2)
        zs.append(z)
    return y, zs


def one_large(n: int, aggregation: str) -> dict:
    from bayes_risk.identification.api import identification_risk

    y, zs = make_large(n, 5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = time.perf_counter()
        res = identification_risk(y, zs, known_unsynthesized=["region", "hhsize", "sex"],
                                  known_synthesized=["income", "expend"],
                                  categorical=["region", "hhsize", "sex"], radius=0.05,
                                  aggregation=aggregation, progressbar=False,
                                  fallback="none")
        el = time.perf_counter() - t
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # KiB -> MiB (Linux)
    s = res.file
    return {"case": f"{n:,} records, m=5, {aggregation}", "seconds": el, "peak_rss_MiB": peak,
            "expected_match_risk": s["expected_match_risk"],
            "nnz_prob": None if res.prob is None else int(res.prob.nnz)}


def main() -> None:
    if len(sys.argv) > 2 and sys.argv[1] == "--large":
        print(json.dumps(one_large(int(sys.argv[2]), sys.argv[3])))
        return
    quick = "--quick" in sys.argv
    n_large = 100_000 if quick else 1_000_000
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores")
    print("\n1. CEdata (5,571 records)")
    rows = bench_ce()
    print(f"{'case':<52} {'first s':>8} {'best s':>8} {'median s':>9} {'CPU s':>6} {'R s':>5} "
          f"{'speed-up':>9} {'exp. risk':>10}  data")
    for r in rows:
        print(f"{r['case']:<52} {r['first_s']:8.3f} {r['best_s']:8.3f} {r['median_s']:9.3f} "
              f"{r['cpu_s']:6.3f} "
              f"{(r['R_s'] or float('nan')):5.1f} "
              f"{(r['speedup_vs_R'] or float('nan')):8.0f}x {r['expected_match_risk']:10.3f}  "
              f"{r['data']}")
    if "--ce-only" in sys.argv:
        return
    print(f"\n2. large file ({n_large:,} records, 3 categorical known, 2 continuous synthesized, "
          "percentage r = 0.05)")
    print(f"{'case':<40} {'seconds':>8} {'peak RSS MiB':>13} {'nnz(prob)':>12} {'exp. risk':>12}")
    for agg in ("per_dataset", "pooled"):
        out = subprocess.run([sys.executable, __file__, "--large", str(n_large), agg],
                             capture_output=True, text=True, check=True)
        r = json.loads(out.stdout.strip().splitlines()[-1])
        nnz = "-" if r["nnz_prob"] is None else f"{r['nnz_prob']:,}"
        print(f"{r['case']:<40} {r['seconds']:8.1f} {r['peak_rss_MiB']:13.0f} {nnz:>12} "
              f"{r['expected_match_risk']:12.1f}")


if __name__ == "__main__":
    main()
