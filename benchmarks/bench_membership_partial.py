"""Benchmark of membership risk of a partially synthetic release (issue 33, item 1).

CEdata (the shared extract; households with positive income): 2,000 households are the
confidential data, ``--holdout`` others the non-members. A chain of normal regressions
(:class:`~bayes_risk.models.SequentialRegression`, exact posterior draws) synthesizes log
expenditure and log income given urban/rural status, marital status and tenure, which are
released unchanged; m = 5 datasets. Times, separately, the m augmented refits and the rest of the
engine (likelihoods, the per-cell normaliser, diagnostics, the distance baseline, a B = 200
bootstrap), and prints the file summaries with the unsynthesized values' share. Run with

    BAYES_RISK_SHARED_DATA=../shared/data .venv/bin/python benchmarks/bench_membership_partial.py
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import time
import warnings
from pathlib import Path


def main() -> None:
    import numpy as np
    import pandas as pd

    import bayes_risk as br
    from bayes_risk.models import SequentialRegression

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--holdout", type=int, default=500)
    ap.add_argument("-m", type=int, default=5)
    a = ap.parse_args()
    csv = Path(os.environ.get("BAYES_RISK_SHARED_DATA", "../shared/data")) / "CEdata.csv"
    ce = br.read_table(csv)
    ce = ce[(ce["Income"] > 0) & (ce["Expenditure"] > 0)]
    df = pd.DataFrame({
        "Urban": ce["Urban"].astype("category"), "Marital": ce["Marital"].astype("category"),
        "Tenure": ce["Tenure"].astype("category"),
        "LogExpenditure": np.log(ce["Expenditure"]), "LogIncome": np.log(ce["Income"]),
    }).sample(frac=1, random_state=1).reset_index(drop=True)
    train = df.iloc[: a.n].reset_index(drop=True)
    hold = df.iloc[a.n: a.n + a.holdout].reset_index(drop=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = SequentialRegression(progressbar=False).fit(
            train, synthesized=["LogExpenditure", "LogIncome"], random_seed=1)
        syn = model.synthesize(a.m, random_seed=2)
        t0, c0 = time.perf_counter(), time.process_time()
        aug = [model.fit_augmented(train, z, random_seed=10 + l)
               for l, z in enumerate(syn.datasets)]
        t1, c1 = time.perf_counter(), time.process_time()
        res = br.membership_risk(model, train, syn, holdout=hold, random_seed=3,
                                 ratio=br.RatioSpec(augmented=aug))
        t2, c2 = time.perf_counter(), time.process_time()
    f = res.file
    print(f"{platform.processor() or platform.machine()}, python {platform.python_version()}")
    print(f"n = {a.n}, holdout = {a.holdout}, m = {a.m}, H = {res.settings['n_draws']}")
    print(f"refits: {t1 - t0:.1f} s wall, {c1 - c0:.1f} s CPU")
    print(f"engine: {t2 - t1:.1f} s wall, {c2 - c1:.1f} s CPU")
    print(f"peak memory: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")
    lo, hi = f["auc_advantage_interval"]
    print(f"AUC - 0.5 = {f['auc_advantage']:.3f} [{lo:.3f}, {hi:.3f}]; distance baseline "
          f"{f['dcr_auc_advantage']:.3f}; flagged {f['n_flagged']}")
    print(f"share of members with P(member) > 0.5: {f['share_members_above']:.3f}")
    print("unsynthesized:", f["unsynthesized"])


if __name__ == "__main__":
    main()
