"""Posterior Monte Carlo replicates for identification risk (issue 12); prints a table.

1. CEdata (n = 5,571), Hornby & Hu's scenario 4 (known Age, Urban, Marital unsynthesized;
   Tenure, Expenditure, Income synthesized by CART with the per-leaf Bayesian bootstrap;
   percentage radius 0.1), R posterior replicates (agency view): wall time of generating the
   replicates alone, of the whole run (generation + matching + pooling + jackknife), and peak RSS.
2. The same design on 100,000 CE-like records (``make_ce_like``), R = 200.

Each case runs in a fresh subprocess so that its peak RSS (``resource.getrusage``) is its own;
comparing R = 200 and R = 1,000 on CEdata shows whether memory is flat in R.

Times are wall and CPU seconds of the process (the machine may be shared: CPU seconds are the
figure to compare; the header prints the load average). In process the run uses threads (the
next batch drawn, a batch's flushes summed and the checkpoints evaluated while the main thread
matches): ``total_cpu_s`` counts every thread, ``main_cpu_s`` the main thread alone — on an idle
machine the wall time is about the larger of ``main_cpu_s`` and half of ``total_cpu_s``.

Usage: ``python benchmarks/bench_posterior_replicates.py [--quick] [--case-list ce:200,large:50]
[--workers N]`` (``--quick``: R / 5; ``--workers N``: the batches on a local Dask cluster of N
single-threaded worker processes, as ``bayes-risk identification --workers N`` runs them — the
CPU seconds are then those of the client process only, and the peak RSS is the client's).
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
from pathlib import Path

from bayes_risk import MatchSpec

ROOT = Path(__file__).resolve().parent.parent
CE = ROOT.parent / "shared" / "data" / "CEdata.csv"
KNOWN_US = ["Age", "Urban", "Marital"]
KNOWN_S = ["Tenure", "Expenditure", "Income"]
CATS = ["Urban", "Marital", "Tenure"]


def case(kind: str, R: int, workers: int = 0) -> dict:
    import pandas as pd

    from bayes_risk import PosteriorReplicates, identification_risk
    from bayes_risk.data import infer_schema, make_ce_like
    from bayes_risk.models.trees.cart import CARTSynthesizer

    data = pd.read_csv(CE) if kind == "ce" else make_ce_like(100_000, random_seed=1)
    schema = infer_schema(data, categorical=CATS)
    model = CARTSynthesizer(progressbar=False).fit(data, schema=schema, synthesized=KNOWN_S,
                                                   random_seed=1)
    release = model.synthesize(5, random_seed=2)
    t, c = time.perf_counter(), time.process_time()
    for _ in model.posterior_replicates(R, columns=KNOWN_S, random_seed=3):
        pass
    gen, gen_cpu = time.perf_counter() - t, time.process_time() - c
    client = None
    if workers:
        from distributed import Client, LocalCluster

        client = Client(LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                     dashboard_address=None))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t, c, mc = time.perf_counter(), time.process_time(), time.thread_time()
        res = identification_risk(
            data, release, known=[*KNOWN_US, *KNOWN_S], synthesized=KNOWN_S,
            categorical=CATS, match=MatchSpec(radius=0.1), progressbar=False,
            replicates=PosteriorReplicates(model, n=R, random_seed=3), executor=client)
        total, total_cpu = time.perf_counter() - t, time.process_time() - c
        main_cpu = time.thread_time() - mc
    if client is not None:
        client.close()
    f = res.file
    return {
        "case": f"{'CEdata' if kind == 'ce' else 'CE-like'} n={len(data):,} R={R}"
                + (f" workers={workers}" if workers else ""),
        "generate_s": gen, "total_s": total, "match_pool_s": total - gen,
        "generate_cpu_s": gen_cpu, "total_cpu_s": total_cpu, "main_cpu_s": main_cpu,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "expected_match_risk": f["expected_match_risk"],
        "mc_se": f["mc_se"]["expected_match_risk"],
        "replicate_median": f["replicate_quantiles"]["expected_match_risk"]["0.5"],
    }


def main() -> None:
    if len(sys.argv) > 2 and sys.argv[1] == "--case":
        print(json.dumps(case(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))))
        return
    quick = "--quick" in sys.argv
    workers = int(sys.argv[sys.argv.index("--workers") + 1]) if "--workers" in sys.argv else 0
    div = 5 if quick else 1
    runs = [("ce", 200 // div), ("ce", 1000 // div), ("large", 200 // div)]
    if "--case-list" in sys.argv:  # e.g. --case-list ce:200,large:50
        spec = sys.argv[sys.argv.index("--case-list") + 1]
        runs = [(k, int(r)) for k, r in (x.split(":") for x in spec.split(","))]
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python "
          f"{platform.python_version()}; load average {os.getloadavg()[0]:.1f}")
    head = ("case", "generate_s", "match_pool_s", "total_s", "generate_cpu_s", "total_cpu_s",
            "main_cpu_s", "peak_rss_mb",
            "expected_match_risk", "mc_se", "replicate_median")
    print(" | ".join(head), flush=True)
    for kind, R in runs:
        out = subprocess.run([sys.executable, __file__, "--case", kind, str(R), str(workers)],
                             capture_output=True, text=True, check=True,
                             env={**os.environ, "MPLBACKEND": "Agg"})
        r = json.loads(out.stdout.strip().splitlines()[-1])
        print(" | ".join(f"{r[h]:.4g}" if isinstance(r[h], float) else str(r[h]) for h in head),
              flush=True)


if __name__ == "__main__":
    main()
