"""DPMPM benchmarks (issues 4 and 15).

1. ``bayes-risk fit`` on ``../shared/data/NYexample_X.csv`` (20,000 × 10, 10 % missing per
   column, imputed in the sampler), K = 80, 500 tuning + 500 kept sweeps, one chain, and with the
   default MCMC settings (2 chains in parallel, 1,000 warm-up + 2,500 sweeps, every 5th kept).
   Each run is a fresh process (wall, CPU of all its threads and processes, peak RSS from
   ``os.wait4``; wall minus the main thread's run-queue wait, an estimate of the idle wall time
   on a loaded machine), run from a directory outside the repository; "via pm.sample" runs the same
   command with the step driven by ``pm.sample`` on the PyMC model (the path before issue 15),
   "direct loop" the default (``bayes_risk.models._bayesian.gibbs``); cases alternate over
   ``--runs``
   rounds after a warm-up run. Reference: NPBayesImputeCat's single-threaded call takes 7.5–7.8 s
   wall and 136–170 MiB (issue 15); target: at most half its time (3.8 s wall on an idle
   machine), at most 200 MiB beyond the interpreter.
   ``--stages``: the one-chain command's steps in one fresh process, CPU seconds (all threads)
   and peak RSS after each (``getrusage``), and which heavy modules it imported. ``--floor``:
   the dependency stack alone (numpy, pandas, numba and its target, xarray, arviz_base,
   h5netcdf), stage by stage: the memory floor of the command before any data.
2. The neighbourhood kernel (one-variable-different candidates) for n = 10,000 ACS-like records
   (``make_acs_like``), p = 14, K = 30, H = 1,000 posterior draws (from a short Gibbs fit),
   computed in record chunks. Target < 60 s.

Run: ``.venv/bin/python benchmarks/bench_dpmpm.py [--skip-fit] [--skip-neighbourhood]
[--runs 3] [--skip-defaults] [--skip-pymc] [--stages] [--floor] [--one-thread]
[--baseline OTHER/.venv/bin/python]``
(``--baseline``: the same cases in another installation, alternating with this one's;
``--one-thread``: the one-chain command also with ``NUMBA_NUM_THREADS=1``, i.e. the class step's
serial twin, against the threaded class step of the default).
Prints tables; never asserts timings.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NY = ROOT.parent / "shared" / "data" / "NYexample_X.csv"
NY_COLUMNS = ["OWNERSHP", "MORTGAGE", "AGE", "SEX", "MARST", "RACESING", "EDUC", "EMPSTAT",
              "DISABWRK", "VETSTAT"]
NPBAYES = "7.5–7.8 s wall, 136–170 MiB"

# the same command with the Gibbs step driven by pm.sample (the path before issue 15)
_VIA_PYMC = (
    "import functools, sys; import bayes_risk.models.dpmpm.run as r; "
    "r.gibbs_posterior = functools.partial(r.gibbs_posterior, via_pymc=True); "
    "from bayes_risk.cli import console_main; sys.exit(console_main())"
)


# the steps of `bayes-risk fit ... --chains 1 --tune 500 --draws 500` (cli/fit.py) one by one
_STAGES = r"""
import json, resource, sys, tempfile, time
rows = []
def mark(name):
    r = resource.getrusage(resource.RUSAGE_SELF)
    rows.append((name, r.ru_utime + r.ru_stime, r.ru_maxrss / 1024, time.perf_counter()))
mark("interpreter")
import pandas
mark("interpreter + import pandas")
import argparse
from bayes_risk.cli._common import read_records_table
from bayes_risk.cli.fit import _schema
from bayes_risk.models.dpmpm.dpmpm import DPMPM
path, cols = sys.argv[1], sys.argv[2:]
df = read_records_table(path, "ORIGINAL")
args = argparse.Namespace(method="dpmpm", categorical=cols, ordinal=[], count=[], continuous=[],
                          synthesize=None, columns=None)
schema = _schema(df, args)
mark("read the CSV, schema, import the DPMPM module")
import bayes_risk.models.dpmpm.run, bayes_risk.models.dpmpm.step
mark("import the step class (numba, kernels)")
import numpy as np
import bayes_risk.models.dpmpm.kernels as kern
kern.counts(np.zeros((2, 1), np.int64), np.zeros(2, np.int64), np.zeros(1, np.int64), 1, 1)
mark("first call of a compiled kernel")
model = DPMPM(n_components=80, tune=500, draws=500, chains=1, random_seed=1, progressbar=False)
set_fitted, report = DPMPM._set_fitted, DPMPM._check_convergence
def _set_fitted(self, *a, **k):
    mark("1,000 sweeps and the DataTree")
    set_fitted(self, *a, **k)
    mark("_set_fitted (caches, fingerprint)")
def _report(self, *a, **k):
    out = report(self, *a, **k)
    mark("convergence report (R-hat, ESS)")
    return out
DPMPM._set_fitted, DPMPM._check_convergence = _set_fitted, _report
import warnings
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    model.fit(df, schema=schema, random_seed=1)
with tempfile.TemporaryDirectory() as tmp:
    model.save(tmp + "/m")
mark("saving (NetCDF, JSON)")
heavy = [m for m in ("pymc", "pytensor", "scipy.stats", "scipy.linalg", "arviz_stats", "dask")
         if m in sys.modules]
print(json.dumps({"rows": rows, "heavy": heavy,
                  "alpha": float(model.posterior_["posterior"]["alpha"].mean()),
                  "k": float(model.posterior_["sample_stats"]["k_occupied"].mean())}))
"""


def bench_stages(runs: int = 3, baseline: str | None = None) -> None:
    """The one-chain command's stages in fresh processes (CPU s and peak RSS after each);
    with ``baseline`` (another installation's Python) the two alternate run by run."""
    import subprocess

    if not NY.is_file():
        print(f"skipping the stage benchmark: {NY} not found", file=sys.stderr)
        return
    pythons = {"this": sys.executable}
    if baseline:
        pythons["baseline"] = baseline
    work = Path(tempfile.mkdtemp(prefix="bench-dpmpm-"))
    try:
        print(f"load average at start: {os.getloadavg()}")
        res: dict[str, list[dict]] = {k: [] for k in pythons}
        for rnd in range(runs + 1):  # the first round warms numba's cache and the page cache
            for k, py in pythons.items():
                out = subprocess.run([py, "-c", _STAGES, str(NY), *NY_COLUMNS],
                                     capture_output=True, text=True, cwd=work, check=True)
                if rnd:
                    res[k].append(json.loads(out.stdout.strip().splitlines()[-1]))
        print(f"load average at the end: {os.getloadavg()}")
        for k, rs in res.items():
            print(f"\n{k} ({pythons[k]}): stages of the one-chain fit ({runs} runs; CPU s of "
                  "the stage min / median, peak RSS MiB after it, max)")
            names = [r[0] for r in rs[0]["rows"]]
            for i, name in enumerate(names):
                cpu = [r["rows"][i][1] - (r["rows"][i - 1][1] if i else 0.0) for r in rs]
                rss = max(r["rows"][i][2] for r in rs)
                print(f"  {name:<48} {min(cpu):6.2f} / {_median(cpu):5.2f} {rss:8.0f}")
            tot = [r["rows"][-1][1] for r in rs]
            wall = [r["rows"][-1][3] - r["rows"][0][3] for r in rs]
            print(f"  {'total CPU s (wall s after start-up)':<48} {min(tot):6.2f} / "
                  f"{_median(tot):5.2f}  ({min(wall):.2f} / {_median(wall):.2f})")
            print(f"  heavy modules imported: {rs[0]['heavy']}; mean alpha {rs[0]['alpha']:.3f}, "
                  f"mean k* {rs[0]['k']:.2f}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


# the dependency stack of a DPMPM `bayes-risk fit`, imported stage by stage (cached kernels): the
# memory floor before any data. "numba target" = the first call of a cached kernel (numba's CPU
# target with its LLVM JIT and its BLAS check, which imports scipy.linalg).
_FLOOR = r"""
import json, resource, sys
rows = []
def mark(name):
    r = resource.getrusage(resource.RUSAGE_SELF)
    rows.append((name, r.ru_utime + r.ru_stime, r.ru_maxrss / 1024))
mark("interpreter")
import numpy
mark("numpy")
import pandas
mark("pandas (with pyarrow, which pandas imports when installed)")
import numba
mark("numba, llvmlite")
import bayes_risk.models.dpmpm.kernels as kern
kern.counts(numpy.zeros((2, 1), numpy.int64), numpy.zeros(2, numpy.int64),
            numpy.zeros(1, numpy.int64), 1, 1)
mark("numba target (first cached kernel call, scipy.linalg)")
import xarray
mark("xarray")
import arviz_base
mark("arviz_base")
import h5netcdf
mark("h5netcdf, h5py")
import bayes_risk.cli.fit, bayes_risk.models.dpmpm.step, bayes_risk.models.dpmpm.run
mark("bayes_risk (CLI, DPMPM modules)")
print(json.dumps({"rows": rows, "dask": "dask" in sys.modules}))
"""


def bench_floor(runs: int = 3) -> None:
    """Peak RSS (and CPU) of the dependency stack a fit needs, stage by stage, fresh processes."""
    import subprocess

    work = Path(tempfile.mkdtemp(prefix="bench-dpmpm-"))
    try:
        res = []
        for rnd in range(runs + 1):  # the first run warms numba's cache
            out = subprocess.run([sys.executable, "-c", _FLOOR], capture_output=True, text=True,
                                 cwd=work, check=True)
            if rnd:
                res.append(json.loads(out.stdout.strip().splitlines()[-1]))
        print(f"\nimport floor of the fit ({runs} runs; stage CPU s min / median, peak RSS MiB "
              "after it, max; beyond the interpreter)")
        names = [r[0] for r in res[0]["rows"]]
        base = max(r["rows"][0][2] for r in res)
        for i, name in enumerate(names):
            cpu = [r["rows"][i][1] - (r["rows"][i - 1][1] if i else 0.0) for r in res]
            rss = max(r["rows"][i][2] for r in res)
            print(f"  {name:<56} {min(cpu):5.2f} / {_median(cpu):5.2f} {rss:7.1f} "
                  f"{rss - base:7.1f}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _median(xs: list[float]) -> float:
    xs = sorted(xs)
    k = len(xs)
    return xs[k // 2] if k % 2 else 0.5 * (xs[k // 2 - 1] + xs[k // 2])


# ``bench_identification_cli.run``'s launcher, which also reads the command's main thread's
# scheduler statistics (Linux ``/proc/PID/schedstat``: time on a CPU, time waiting for one) before
# reaping it. Under load, wall minus that run-queue wait estimates the idle wall time: it keeps
# the main thread's CPU time and its waits for the other threads (the GIL, a background import),
# and drops only the time it was ready to run but another process had the core.
_LAUNCHER = r"""
import json, os, sys, time
cmd, cwd = json.loads(sys.argv[1]), sys.argv[2]
t = time.perf_counter()
pid = os.fork()
if pid == 0:
    os.chdir(cwd)
    fd = os.open(os.devnull, os.O_WRONLY)
    os.dup2(fd, 1)
    os.execvp(cmd[0], cmd)
os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)  # ended, not reaped: /proc/PID still there
wall = time.perf_counter() - t
try:
    wait = int(open(f"/proc/{pid}/schedstat").read().split()[1]) / 1e9
except (OSError, IndexError, ValueError):
    wait = float("nan")
_, status, ru = os.wait4(pid, 0)
print(json.dumps({"wall": wall, "cpu": ru.ru_utime + ru.ru_stime, "rss": ru.ru_maxrss / 1024.0,
                  "rc": os.waitstatus_to_exitcode(status), "runq": wait}))
"""


def _run(cmd: list[str], cwd: Path | None = None) -> dict:
    """``cmd`` in a fresh process: wall, CPU (all threads), peak RSS, main thread's run-queue
    wait (s)."""
    import subprocess

    out = subprocess.run([sys.executable, "-c", _LAUNCHER, json.dumps(cmd), str(cwd or Path.cwd())],
                         capture_output=True, text=True)
    res = json.loads(out.stdout.strip().splitlines()[-1])
    if res["rc"] != 0:
        raise RuntimeError(f"{cmd[:3]}... failed ({res['rc']}): {out.stderr[-2000:]}")
    return res


def bench_fit(runs: int = 3, defaults: bool = True, baseline: str | None = None,
              via_pymc: bool = True, one_thread: bool = False) -> None:
    if not NY.is_file():
        print(f"skipping the fit benchmark: {NY} not found", file=sys.stderr)
        return
    run = _run  # fresh process: wall, CPU, peak RSS (os.wait4), run-queue wait
    py = sys.executable
    exe = shutil.which("bayes-risk", path=str(Path(py).parent)) or "bayes-risk"
    work = Path(tempfile.mkdtemp(prefix="bench-dpmpm-"))
    args = ["fit", str(NY), "--method", "dpmpm", "--categorical", *NY_COLUMNS,
            "--components", "80", "--random-seed", "1", "--quiet", "--overwrite"]
    one = ["--tune", "500", "--draws", "500", "--chains", "1"]
    cases = {
        "one chain, 500 + 500 sweeps, via pm.sample": [py, "-c", _VIA_PYMC, *args, *one],
        "one chain, 500 + 500 sweeps, direct loop": [exe, *args, *one],
    }
    if one_thread:  # the class step's serial twin throughout (no parallel region)
        cases["one chain, 500 + 500 sweeps, direct loop, 1 numba thread"] = [
            "env", "NUMBA_NUM_THREADS=1", exe, *args, *one]
    if baseline:  # the same command in another installation (e.g. before a change)
        bexe = shutil.which("bayes-risk", path=str(Path(baseline).parent)) or "bayes-risk"
        cases["one chain, 500 + 500 sweeps, direct loop, baseline"] = [bexe, *args, *one]
        if one_thread:
            cases["one chain, direct loop, 1 numba thread, baseline"] = [
                "env", "NUMBA_NUM_THREADS=1", bexe, *args, *one]
    if defaults:
        cases["defaults (2 chains x (1000 + 2500/5), parallel), via pm.sample"] = [
            py, "-c", _VIA_PYMC, *args]
        cases["defaults (2 chains x (1000 + 2500/5), parallel), direct loop"] = [exe, *args]
        if baseline:
            cases["defaults, direct loop, baseline"] = [bexe, *args]
    if not via_pymc:
        cases = {k: v for k, v in cases.items() if "pm.sample" not in k}
    try:
        print(f"load average at start: {os.getloadavg()}")
        res: dict[str, list[dict]] = {k: [] for k in cases}
        base = []
        out = {k: str(work / f"out{i}") for i, k in enumerate(cases)}
        for k, cmd in cases.items():  # warm-up: numba caches, page cache
            run([*cmd, "--out", out[k]], cwd=work)
        for _ in range(runs):
            base.append(run([py, "-c", "pass"]))
            for k, cmd in cases.items():
                res[k].append(run([*cmd, "--out", out[k]], cwd=work))
        base_rss = min(r["rss"] for r in base)
        print(f"load average at the end: {os.getloadavg()}")
        print(f"\n1. bayes-risk fit NYexample (20,000 x 10, K = 80); {runs} rounds, min / median; "
              f"NPBayesImputeCat: {NPBAYES}")
        print("(wall - run-queue wait: the wall time less the time the command's main thread "
              "waited for a core; an estimate of the idle wall time under load)")
        print(f"{'case':<62} {'wall s':>13} {'wall - runq s':>13} {'CPU s':>13} "
              f"{'peak RSS MiB':>13} {'beyond interp.':>15} {'mean alpha':>11} {'mean k*':>8}")
        for k in cases:
            w = [r["wall"] for r in res[k]]
            q = [r["wall"] - r["runq"] for r in res[k]]
            c = [r["cpu"] for r in res[k]]
            rss = max(r["rss"] for r in res[k])
            conv = json.loads((Path(out[k]) / "convergence.json").read_text())["quantities"]
            print(f"{k:<62} {min(w):6.2f} / {_median(w):5.2f} {min(q):6.2f} / {_median(q):5.2f} "
                  f"{min(c):6.2f} / {_median(c):5.2f} "
                  f"{rss:13.0f} {rss - base_rss:15.0f} {conv['alpha']['mean']:11.3f} "
                  f"{conv['k_occupied']['mean']:8.2f}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


def bench_neighbourhood() -> list[tuple[str, float]]:
    import numpy as np

    from bayes_risk.data import make_acs_like
    from bayes_risk.models.dpmpm.dpmpm import DPMPM

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
    ap.add_argument("--skip-defaults", action="store_true")
    ap.add_argument("--skip-neighbourhood", action="store_true")
    ap.add_argument("--stages", action="store_true",
                    help="the one-chain command's stages (CPU, peak RSS) in one process")
    ap.add_argument("--floor", action="store_true",
                    help="peak RSS of the fit's dependency stack, stage by stage")
    ap.add_argument("--baseline", metavar="PYTHON",
                    help="another installation's Python (e.g. before a change): its runs "
                         "alternate with this one's")
    ap.add_argument("--skip-pymc", action="store_true",
                    help="leave out the cases run through pm.sample")
    ap.add_argument("--one-thread", action="store_true",
                    help="also the one-chain command with NUMBA_NUM_THREADS=1 (serial class step)")
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
          f"Python {platform.python_version()}")
    if args.floor:
        bench_floor(args.runs)
    if args.stages:
        bench_stages(args.runs, args.baseline)
    if not args.skip_fit:
        bench_fit(args.runs, defaults=not args.skip_defaults, baseline=args.baseline,
                  via_pymc=not args.skip_pymc, one_thread=args.one_thread)
    if not args.skip_neighbourhood:
        rows = bench_neighbourhood()
        width = max(len(r[0]) for r in rows)
        print(f"\n2. {'benchmark':<{width}}  seconds")
        for name, sec in rows:
            print(f"   {name:<{width}}  {sec:8.2f}")


if __name__ == "__main__":
    main()
