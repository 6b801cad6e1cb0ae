"""How close the stabilised estimator's up-front refit estimate comes to the refits' time.

``attribute_risk`` (``bayes-risk attribute``, the audit) prints, before the ``m`` refits of the
model, an estimate from what the fit recorded (``bayes_risk.attribute.cost``). For each case this
script fits the model in one process and saves it (as ``bayes-risk fit`` does), then, in a fresh
process (as ``bayes-risk attribute`` runs), loads it, computes the estimate from the fit's
times, times a pilot refit (``pilot_refit``) and the estimate from it, then times the ``m``
refits (``fit_augmented``, one per synthetic dataset, as the estimator runs them). Printed: the
sizes, both estimates (their ranges), the estimate of the earlier versions (from the fit's total
sampling time), the refits' wall time and the ratios estimate / actual. Cases:

* DPMPM on CEdata (Urban, Tenure, Marital, Educ; 5,571 records; K = 20; 2 chains of 100 + 100
  sweeps in 2 worker processes),
* ``dpmpm-default``: the same table with the DPMPM's default run (K = 50, 2 chains of 1,000
  warm-up sweeps and 500 kept draws every 5th sweep, extending itself while its checks fail),
  whose refits the package times by a pilot,
* a Poisson mixture (MP, K = 10) of 2,000 simulated count records (one chain of 200 + 300),
* a sequential regression on 2,000 CEdata records: LogExpenditure (normal, exact), Urban
  (logistic, NUTS, 2 chains of 200 + 200), LogIncome (normal, exact) given Age.

Run with

    .venv/bin/python benchmarks/bench_refit_cost.py [--m 3] [--cases dpmpm poisson seqreg]

About 3–5 minutes on the project's loaded 2-core machine. Uses ``../shared/data/CEdata.csv``
(or ``$BAYES_RISK_SHARED_DATA``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("BAYES_RISK_SHARED_DATA", ROOT.parent / "shared")) / "data"


def _data(case: str) -> pd.DataFrame:
    if case == "poisson":
        rng = np.random.default_rng(0)
        k = rng.choice(2, 2000, p=[0.6, 0.4])
        return pd.DataFrame(rng.poisson(np.array([[2, 20], [12, 4]])[k]),
                            columns=["workers", "wages"])
    ce = pd.read_csv(SHARED / "CEdata.csv")
    if case in ("dpmpm", "dpmpm-default"):
        return ce[["Urban", "Tenure", "Marital", "Educ"]].astype("category")
    ce = ce.iloc[:2000]
    out = pd.DataFrame({"Age": ce["Age"].astype("float64"),
                        "LogExpenditure": np.log1p(ce["Expenditure"]),
                        "Urban": ce["Urban"].astype("category"),
                        "LogIncome": np.log1p(ce["Income"].astype("float64"))})
    return out.dropna().reset_index(drop=True)


def _model(case: str):
    if case == "dpmpm":
        from bayes_risk.models.dpmpm.dpmpm import DPMPM

        return DPMPM(n_components=20, tune=100, draws=100, chains=2, cores=2, max_sweeps=0,
                     progressbar=False)
    if case == "dpmpm-default":
        from bayes_risk.models.dpmpm.dpmpm import DPMPM

        return DPMPM(progressbar=False)
    if case == "poisson":
        from bayes_risk.models import PoissonMixture

        return PoissonMixture(n_components=10, tune=200, draws=300, progressbar=False)
    from bayes_risk.models.seqreg.seqreg import SequentialRegression

    return SequentialRegression(tune=200, draws=200, chains=2, cores=2, progressbar=False)


def _fit(case: str, folder: Path, m: int) -> None:
    """First process: fit, save, write the m synthetic datasets (Parquet)."""
    data = _data(case)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        kw = {"synthesized": ["LogExpenditure", "Urban", "LogIncome"]} if case == "seqreg" else {}
        model = _model(case).fit(data, random_seed=1, **kw)
        syn = model.synthesize(m, random_seed=2)
    model.save(folder / "model")
    for li, df in enumerate(syn):
        df.to_parquet(folder / f"syn{li}.parquet")


def _refits(case: str, folder: Path, m: int) -> None:
    """Second process: the estimate, then the m refits timed; one JSON line on stdout."""
    from bayes_risk.attribute.cost import distinct_records, refit_cost
    from bayes_risk.attribute.refits import _refit_settings, pilot_refit
    from bayes_risk.models import load_model

    data = _data(case)
    model = load_model(folder / "model")
    syn = [pd.read_parquet(folder / f"syn{li}.parquet") for li in range(m)]
    model.progressbar = False  # as the estimator runs its refits
    # as attribute_risk states it (bayes_risk.attribute.prepare)
    cost = refit_cost(model, len(syn[0]), m, distinct=distinct_records(model, data, syn[0]))
    attrs = model.posterior_["posterior"].attrs
    old_attrs = {k: v for k, v in attrs.items() if k not in ("sweep_time", "chains_at_once",
                                                             "fit_time")}
    saved = dict(attrs)
    attrs.clear()
    attrs.update(old_attrs)
    old = refit_cost(model, len(syn[0]), m)  # what the earlier versions printed
    attrs.clear()
    attrs.update(saved)
    t0 = time.perf_counter()
    pilot = pilot_refit(model, data, syn[0])
    pilot_took = time.perf_counter() - t0
    by_pilot = refit_cost(model, len(syn[0]), m, pilot=pilot) if pilot else None
    times = []
    seeds = np.random.default_rng(3).spawn(m)
    with warnings.catch_warnings(), _refit_settings(model, None):
        warnings.simplefilter("ignore")
        for li in range(m):
            t0 = time.perf_counter()
            model.fit_augmented(data, syn[li], random_seed=seeds[li])
            times.append(time.perf_counter() - t0)
    print(json.dumps({"low": cost.low, "high": cost.seconds, "old": old.seconds,
                      "pilot_low": by_pilot.low if by_pilot else None,
                      "pilot_high": by_pilot.seconds if by_pilot else None,
                      "pilot_took": pilot_took,
                      "line": cost.line(), "pilot_line": by_pilot.line() if by_pilot else "",
                      "times": times, "n": int(model._n_records),
                      "records": cost.records, "chains": int(model.chains),
                      "sweeps": int(model._mcmc_run()["sweeps_per_chain"]),
                      "sweep_ms": 1e3 * float(attrs.get("sweep_time", float("nan"))),
                      "fit_time": float(attrs.get("fit_time", float("nan"))),
                      "sampling_time": float(attrs["sampling_time"])}))


def _load() -> str:
    try:
        return " ".join(f"{x:.1f}" for x in os.getloadavg())
    except OSError:  # pragma: no cover - not on every system
        return "?"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--m", type=int, default=3)
    ap.add_argument("--cases", nargs="+", default=["dpmpm", "poisson", "seqreg"],
                    choices=["dpmpm", "dpmpm-default", "poisson", "seqreg"])
    ap.add_argument("--step", nargs=3, help=argparse.SUPPRESS)  # a child process's work
    a = ap.parse_args()
    if a.step:
        case, phase, folder = a.step
        (_fit if phase == "fit" else _refits)(case, Path(folder), a.m)
        return
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python "
          f"{platform.python_version()}; load average before: {_load()}; m = {a.m}")
    rows = []
    for case in a.cases:
        with tempfile.TemporaryDirectory() as tmp:
            for phase in ("fit", "refits"):
                out = subprocess.run([sys.executable, __file__, "--m", str(a.m), "--step", case,
                                      phase, tmp], capture_output=True, text=True, check=True)
            r = json.loads(out.stdout.strip().splitlines()[-1])
        actual = sum(r["times"])
        pilot = ("–" if r["pilot_low"] is None else
                 f"{r['pilot_low']:.1f}–{r['pilot_high']:.1f} ({r['pilot_low'] / actual:.2f}–"
                 f"{r['pilot_high'] / actual:.2f}; pilot {r['pilot_took']:.1f} s)")
        rows.append((case, f"{r['n']:,} + {r['records'] - r['n']:,} rec, {r['chains']} ch x "
                           f"{r['sweeps']} sw, {r['sweep_ms']:.3g} ms/sw",
                     f"{r['low']:.1f}–{r['high']:.1f}", pilot, f"{actual:.1f}",
                     f"{r['low'] / actual:.2f}–{r['high'] / actual:.2f}",
                     f"{r['old']:.1f} ({r['old'] / actual:.1f}x)",
                     " ".join(f"{t:.1f}" for t in r["times"])))
        print(f"  {case}: {r['line']}\n  {case}: {r['pilot_line']}", flush=True)
    head = ("model", "sizes (fit + appended records, chains x sweeps, fit's time per sweep)",
            "estimate s", "by a pilot s (ratio)", "actual s", "ratio", "earlier estimate s",
            "each refit s")
    widths = [max(len(str(x[i])) for x in [head, *rows]) for i in range(len(head))]
    for row in [head, *rows]:
        print("  ".join(str(v).ljust(w) for v, w in zip(row, widths, strict=True)))
    print(f"load average after: {_load()}")


if __name__ == "__main__":
    main()
