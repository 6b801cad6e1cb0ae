"""Time the utility measures on a 5,571-row CE table with m = 20 synthetic datasets.

Uses the shared CE data and scenario-1 synthetic datasets when ``../shared`` is present,
otherwise the CE-like demo table with Income perturbed. Prints a table; no assertions.

    .venv/bin/python benchmarks/bench_utility.py
"""

from __future__ import annotations

import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from bayes_risk.utility import pmse, utility_summary

CAT = ["Urban", "Marital", "Tenure"]


def load() -> tuple[pd.DataFrame, list[pd.DataFrame], str]:
    shared = Path(__file__).resolve().parents[2] / "shared"
    folder = shared / "reference" / "identification" / "synthetic"
    if (shared / "data" / "CEdata.csv").is_file() and folder.is_dir():
        orig = pd.read_csv(shared / "data" / "CEdata.csv")
        syn = [pd.read_csv(folder / f"scenario1_syn{l}.csv") for l in range(1, 21)]
        return orig, syn, "CEdata + scenario 1"
    from bayes_risk.data import make_ce_like

    orig = make_ce_like(n=5571, random_seed=2018)
    rng = np.random.default_rng(1)
    syn = [orig.assign(Income=orig["Income"] * np.exp(rng.normal(0, 0.2, len(orig))))
           for _ in range(20)]
    return orig, syn, "make_ce_like + perturbed Income"


def main() -> None:
    orig, syn, what = load()
    rows = []
    cases = [
        ("pmse logit max_order=0, theory", dict(max_order=0)),
        ("pmse logit max_order=1, theory", dict(max_order=1)),
        ("pmse logit max_order=0, pairs (190 pairs)", dict(max_order=0, null="pairs")),
        ("pmse logit max_order=1, pairs (190 pairs)", dict(max_order=1, null="pairs")),
        ("pmse cart, pairs (190 pairs)", dict(method="cart", null="pairs", random_seed=1)),
    ]
    for label, kw in cases:
        t = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            pmse(orig, syn, categorical=CAT, synthesized=["Income"], **kw)
        rows.append((label, time.perf_counter() - t))
    t = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        utility_summary(orig, syn, categorical=CAT, max_order=1,
                        estimands=["Income ~ Age + C(Marital) + Expenditure"])
    rows.append(("utility_summary (logit max_order=1 + 1 formula)", time.perf_counter() - t))
    print(f"data: {what}; n = {len(orig)}, m = {len(syn)}")
    print(f"{'case':<52} {'seconds':>8}")
    for label, sec in rows:
        print(f"{label:<52} {sec:8.2f}")


if __name__ == "__main__":
    main()
