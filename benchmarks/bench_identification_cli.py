"""Identification risk as users run it: whole processes, beside the R package (issue 15, goals 2-3).

Cases (CEdata, n = 5,571; Hornby & Hu's scenario 4: known Age, Urban, Marital; synthesized
Tenure, Expenditure, Income; percentage radius 0.1; compat mode; synthetic data from
``CARTSynthesizer``, written once as CSV files):

1. ``bayes-risk identification ORIG.csv SYN1.csv ... --compat IdentificationRiskCalculation
   --out DIR`` with m = 20 and m = 5: records.csv (one row per target, the default) +
   summary.json. Measured twice: the installed ``bayes-risk`` command (its parser registers
   every sub-command) and the identification path alone (a parser holding only this
   sub-command: what the command costs once the parser is lazy, issue 15 goal 1).
2. Peak resident memory of the m = 20 command beyond the interpreter's (``python -c pass``).
3. 1,000,000 records, m = 5, three categorical known unsynthesized columns, two continuous
   synthesized ones, pooled **with the default fallback** (library call in a fresh process; data
   generation not timed but in the peak memory).

Every case runs in its own process (forked by a small launcher); wall time, CPU time (user +
system, all threads) and peak RSS come from ``os.wait4`` for that process. Cases alternate over
``--rounds`` rounds (default 3) and the load average is printed, since the machine is shared:
compare CPU seconds.

The R figures are those of issue 15 (IdentificationRiskCalculation, whole ``Rscript`` calls on
the project machine, CPU seconds).

Usage: ``python benchmarks/bench_identification_cli.py [--rounds N] [--skip-large]``
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"
CE = SHARED / "data" / "CEdata.csv"
R_CPU = {20: (4.1, 4.3), 5: (1.4, 1.5)}  # IdentificationRiskCalculation, whole call (issue 15)
R_RSS_BEYOND = 120.0  # MiB beyond the interpreter (issue 15)

_IDENT_ONLY = """
import argparse, sys
from bayes_risk.cli.parsers import identification
from bayes_risk.exceptions import BayesRiskError
p = argparse.ArgumentParser(prog="bayes-risk")
identification.add_parser(p.add_subparsers(dest="command"))
args = p.parse_args(sys.argv[1:])
sys.exit(args.handler(args))
"""

_LARGE = """
import json, sys, time, warnings
sys.path.insert(0, {bench!r})
from suite.identification import _large
y, zs = _large({n}, 5)
from bayes_risk.identification.api import identification_risk
from bayes_risk import MatchSpec
warnings.simplefilter("ignore")
t, c = time.perf_counter(), time.process_time()
res = identification_risk(y, zs, known=["region", "hhsize", "sex", "income", "expend"],
                          synthesized=["income", "expend"],
                          categorical=["region", "hhsize", "sex"], match=MatchSpec(radius=0.05),
                          progressbar=False)
el, cpu = time.perf_counter() - t, time.process_time() - c
s = res.file
print(json.dumps({{"call_s": el, "call_cpu": cpu, "fallback": res.settings["fallback"],
                  "risk": s["expected_match_risk"], "explicit": int(res.pooled.explicit.nnz),
                  "nnz": int(res.pooled.nnz)}}))
"""


# Runs one command and reports its own wall, CPU and peak RSS: a small launcher forks it (a
# child forked from this process, which holds pandas, would start with this process's RSS).
_LAUNCHER = r"""
import json, os, sys, time
cmd, cwd = json.loads(sys.argv[1]), sys.argv[2]
r, w = os.pipe()
t = time.perf_counter()
pid = os.fork()
if pid == 0:
    os.chdir(cwd)
    os.dup2(w, 1)
    os.close(r)
    os.execvp(cmd[0], cmd)
os.close(w)
chunks = []
while True:
    b = os.read(r, 1 << 16)
    if not b:
        break
    chunks.append(b)
_, status, ru = os.wait4(pid, 0)
print(json.dumps({"wall": time.perf_counter() - t, "cpu": ru.ru_utime + ru.ru_stime,
                  "rss": ru.ru_maxrss / 1024.0, "rc": os.waitstatus_to_exitcode(status),
                  "stdout": b"".join(chunks).decode()}))
"""


def run(cmd: list[str], cwd: Path | None = None) -> dict:
    """Run ``cmd`` in a fresh process: wall and CPU seconds (user + system, all threads) and
    peak RSS (MiB) of that process alone (``os.wait4``)."""
    out = subprocess.run(
        [sys.executable, "-c", _LAUNCHER, json.dumps(cmd), str(cwd or Path.cwd())],
        capture_output=True, text=True,
    )
    try:
        res = json.loads(out.stdout.strip().splitlines()[-1])
    except (IndexError, ValueError) as err:
        raise RuntimeError(f"launcher failed: {out.stderr[-2000:]}") from err
    if res["rc"] != 0:
        raise RuntimeError(f"{cmd[:3]}... failed ({res['rc']}): {out.stderr[-2000:]}")
    return res


def _write_scenario4(folder: Path, m: int) -> list[Path]:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from suite._data import cart_release

    syn = cart_release(m)
    print("synthetic data: CARTSynthesizer (seed 2021)")
    paths = []
    for l, z in enumerate(syn, start=1):
        p = folder / f"syn{l}.csv"
        z.to_csv(p, index=False)
        paths.append(p)
    return paths


def _median(xs):
    xs = sorted(xs)
    k = len(xs)
    return xs[k // 2] if k % 2 else 0.5 * (xs[k // 2 - 1] + xs[k // 2])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--skip-large", action="store_true")
    ap.add_argument("--n-large", type=int, default=1_000_000)
    opts = ap.parse_args()
    py = sys.executable
    exe = shutil.which("bayes-risk", path=str(Path(py).parent)) or "bayes-risk"
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
          f"Python {platform.python_version()}")
    print(f"load average at start: {os.getloadavg()}")
    work = Path(tempfile.mkdtemp(prefix="bench-ident-cli-"))
    try:
        syn = _write_scenario4(work, 20)
        base = ["--known-unsynthesized", "Age", "Urban", "Marital", "--known-synthesized",
                "Tenure", "Expenditure", "Income", "--categorical", "Urban", "Marital",
                "Tenure", "--radius", "0.1", "--compat", "IdentificationRiskCalculation", "--quiet",
                "--overwrite"]
        cases = {}
        for m in (20, 5):
            files = [str(CE), *map(str, syn[:m])]
            cases[f"bayes-risk identification, m = {m}"] = (
                m, [exe, "identification", *files, *base, "--out", str(work / "out")])
            cases[f"identification path alone, m = {m}"] = (
                m, [py, "-c", _IDENT_ONLY, "identification", *files, *base, "--out",
                    str(work / "out2")])
        res: dict[str, list[dict]] = {k: [] for k in cases}
        res["python -c pass"] = []
        res["python -c 'import pandas'"] = []
        # warm-up (numba/bytecode caches, page cache), not recorded
        for _, cmd in cases.values():
            run(cmd, cwd=work)
        for _ in range(opts.rounds):
            res["python -c pass"].append(run([py, "-c", "pass"]))
            res["python -c 'import pandas'"].append(run([py, "-c", "import pandas"]))
            for k, (_, cmd) in cases.items():
                res[k].append(run(cmd, cwd=work))
        n_rec = sum(1 for _ in open(work / "out" / "records.csv")) - 1
        base_rss = min(r["rss"] for r in res["python -c pass"])
        print(f"\n1. CEdata scenario 4, compat, CSV in, records.csv ({n_rec:,} rows) + "
              f"summary.json out; {opts.rounds} rounds, min / median")
        print(f"{'case':<40} {'wall s':>13} {'CPU s':>13} {'R CPU s':>9} {'R / ours (CPU)':>15} "
              f"{'peak RSS MiB':>13} {'beyond interp.':>15}")
        for k, (m, _) in cases.items():
            w = [r["wall"] for r in res[k]]
            c = [r["cpu"] for r in res[k]]
            rss = max(r["rss"] for r in res[k])
            lo, hi = R_CPU[m]
            print(f"{k:<40} {min(w):6.2f} / {_median(w):4.2f} {min(c):6.2f} / {_median(c):4.2f} "
                  f"{lo:4.1f}–{hi:3.1f} {lo / _median(c):6.1f}–{hi / _median(c):3.1f}x "
                  f"{rss:13.0f} {rss - base_rss:15.0f}")
        for k in ("python -c pass", "python -c 'import pandas'"):
            c = [r["cpu"] for r in res[k]]
            rss = max(r["rss"] for r in res[k])
            print(f"{k:<40} {'':>13} {min(c):6.2f} / {_median(c):4.2f} {'':>9} {'':>15} "
                  f"{rss:13.0f} {rss - base_rss:15.0f}")
        print(f"R package: peak memory ≈ {R_RSS_BEYOND:.0f} MiB beyond its interpreter")
        print(f"load average after part 1: {os.getloadavg()}")
        if not opts.skip_large:
            n = opts.n_large
            r = run([py, "-c", _LARGE.format(bench=str(ROOT / "benchmarks"), n=n)], cwd=work)
            info = json.loads(r["stdout"].strip().splitlines()[-1])
            print(f"\n2. {n:,} records, m = 5, pooled, fallback = {info['fallback']} (default); "
                  "targets: ≤ 30 s, ≤ 2 GB")
            print(f"{'call s':>8} {'call CPU s':>11} {'process CPU s':>14} {'peak RSS MiB':>13} "
                  f"{'stored π entries':>17} {'entries of the full π':>22} {'exp. risk':>12}")
            print(f"{info['call_s']:8.1f} {info['call_cpu']:11.1f} {r['cpu']:14.1f} "
                  f"{r['rss']:13.0f} {info['explicit']:17,} {info['nnz']:22,} {info['risk']:12.1f}")
            print(f"load average at the end: {os.getloadavg()}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
