"""Benchmark of membership risk of a CART release under the plug-in (issue 33, item 1).

2,000 CEdata records (shuffled with seed 1) fitted by an un-smoothed CART synthesizer with the
Bayesian bootstrap (the package's defaults, seed 1), m = 5 datasets (seed 2), and the next
``--holdout`` records as non-members. Two versions of the table: ``banded`` (age, expenditure
and income in quantile bands, every column categorical) and ``raw`` (the numeric columns as
recorded: every expenditure is unique, so the release copies members' own values). Times the
synthesizer's fit and synthesis and :func:`bayes_risk.membership_risk` (every member, the
holdout, the normaliser by importance sampling over 400 population records, the distance
baseline, a B = 200 bootstrap), and prints the file summaries. Run with

    BAYES_RISK_SHARED_DATA=../shared/data .venv/bin/python benchmarks/bench_membership_cart.py
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _band(x: pd.Series, k: int) -> pd.Categorical:
    return pd.qcut(x.rank(method="first"), k, labels=[f"q{j + 1}" for j in range(k)])


def ce_table(raw: pd.DataFrame, banded: bool) -> pd.DataFrame:
    """CEdata with its categorical columns declared; ``banded``: numeric ones in bands."""
    out = pd.DataFrame({c: raw[c].astype("category")
                        for c in ("Urban", "Tenure", "Marital", "Educ")})
    for c, k in (("Age", 6), ("Expenditure", 5), ("Income", 5)):
        out[c] = _band(raw[c], k) if banded else raw[c].astype(np.float64)
    return out.sample(frac=1, random_state=1).reset_index(drop=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--members", type=int, default=2000)
    ap.add_argument("--holdout", type=int, default=500)
    ap.add_argument("--version", choices=["banded", "raw", "both"], default="both")
    a = ap.parse_args()

    import bayes_risk as br
    from bayes_risk.models import CARTSynthesizer

    shared = Path(os.environ.get("BAYES_RISK_SHARED_DATA", "../shared/data"))
    raw = br.read_table(shared / "CEdata.csv")
    versions = ["banded", "raw"] if a.version == "both" else [a.version]
    rows: list[tuple[str, str]] = []
    for v in versions:
        ce = ce_table(raw, v == "banded")
        train = ce.iloc[: a.members].reset_index(drop=True)
        hold = ce.iloc[a.members: a.members + a.holdout].reset_index(drop=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t0 = time.perf_counter()
            cart = CARTSynthesizer(random_seed=1).fit(train, synthesized=list(train.columns),
                                                      random_seed=1)
            syn = cart.synthesize(5, random_seed=2)
            t_fit = time.perf_counter() - t0
            t1, c1 = time.perf_counter(), time.process_time()
            res = br.membership_risk(cart, train, syn, holdout=hold, random_seed=3)
            t_eng, c_eng = time.perf_counter() - t1, time.process_time() - c1
        f = res.file
        rows += [
            (f"[{v}] members / holdout, m", f"{f['n_members']:,} / {a.holdout:,}, 5"),
            (f"[{v}] CART fit + synthesis", f"{t_fit:.1f} s"),
            (f"[{v}] membership_risk (plug-in, normaliser, DCR, bootstrap)",
             f"{t_eng:.1f} s wall, {c_eng:.1f} s CPU"),
            (f"[{v}] normaliser", res.settings["normaliser"]),
            (f"[{v}] flagged targets", f"{f['n_flagged']:,}"),
            (f"[{v}] share of members revealed (P = 1)", f"{f['share_members_revealed']:.3f}"),
            (f"[{v}] share of members with P(member) > 0.5", f"{f['share_members_above']:.3f}"),
            (f"[{v}] mean P(member): members / non-members",
             f"{f['mean_p_member_members']:.4f} / {f['mean_p_member_non_members']:.4f}"),
            (f"[{v}] AUC - 0.5, plug-in [95% bootstrap]",
             f"{f['auc_advantage']:.4f} [{f['auc_advantage_interval'][0]:.4f}, "
             f"{f['auc_advantage_interval'][1]:.4f}]"),
            (f"[{v}] TPR - FPR at 0.5 [95% bootstrap]",
             f"{f['tpr_fpr']:.4f} [{f['tpr_fpr_interval'][0]:.4f}, "
             f"{f['tpr_fpr_interval'][1]:.4f}]"),
            (f"[{v}] AUC - 0.5, distance to closest record [95%]",
             f"{f['dcr_auc_advantage']:.4f} [{f['dcr_auc_advantage_interval'][0]:.4f}, "
             f"{f['dcr_auc_advantage_interval'][1]:.4f}]"),
        ]
    rows += [("peak resident memory", f"{_peak_mb():,.0f} MB"),
             ("machine", f"{platform.machine()}, Python {platform.python_version()}")]
    width = max(len(k) for k, _ in rows)
    print(f"{'measure':<{width}}  value")
    for k, v in rows:
        print(f"{k:<{width}}  {v}")


if __name__ == "__main__":
    main()
