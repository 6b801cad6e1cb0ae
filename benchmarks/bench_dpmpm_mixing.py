"""DPMPM mixing with the default MCMC settings (issue 10 item 1).

For each seed, ``DPMPM(n_components=80)`` with the defaults (2 chains in parallel, 1,000 warm-up
sweeps + 500 draws kept every 5th sweep each) is fitted to the five categorical columns of
``../shared/data/ss16pusa_sample_zeros.csv`` (1,000 records; ``--data ny``: the ten columns of
``NYexample_X.csv``, 20,000 records, 10 % missing per column) and the model's own convergence
report is printed: posterior mean, R-hat and bulk ESS of α, the data log-likelihood and the
number of occupied classes ``k_occupied``, with the Monte Carlo standard error of the means of α
and ``k_occupied`` (ArviZ ``mcse``), the wall and CPU seconds of the fit (CPU: this process and
the chain workers) and the load average at its start. NPBayesImputeCat on the ACS extract
(K = 80, 2,000 burn-in, four seeds) reports α ≈ 2.6–6.0; why this package's α is smaller: docs,
methods, compatibility (NPBayesImputeCat).

``--trace B`` also prints, per chain, the mean data log-likelihood and ``k_occupied`` of each
block of ``B`` sweeps, warm-up included (``warmup_sample_stats``; kept draws: each stands for
``thin`` sweeps): whether a chain is still trending (not yet at stationarity) or flat at a level
other chains do not share (a metastable state).

``--records N`` also compares the two chains of each fit on what the risk depends on, for ``N``
records drawn at random: the log of the posterior-mean probability of each record,
``log E[p(y_i | Θ)]``, and the posterior-mean probability of each record's own level of a few
columns given its other values, ``E[p(y_ij | y_i,-j, Θ)]``. Printed: median, 95th percentile and
maximum over the records of the difference between the chains, and the same of the difference
between the halves of one chain divided by √2 (about the difference two chains that sample the
same distribution would show: the Monte Carlo noise).

``--structural-zeros`` fits the ACS extract with its 8 structural-zero cells
(``ss16pusa_ds_MCZ.csv``, as ``bayes-risk fit --structural-zeros``): the case whose chains can
sit in a minor mode of ≈ 6 classes (benchmarks/README.md, "Mixing").

Run from the repository root:
``.venv/bin/python benchmarks/bench_dpmpm_mixing.py [--data acs|ny] [--structural-zeros]
[--seeds 1 2 3 4] [--draws N --thin T] [--tune W] [--trace B] [--records N]``.
Prints a table; never asserts.
"""

from __future__ import annotations

import argparse
import os
import platform
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = {
    "acs": (ROOT.parent / "shared" / "data" / "ss16pusa_sample_zeros.csv",
            ["AGEP", "MAR", "SCHL", "SEX", "WKL"]),
    "ny": (ROOT.parent / "shared" / "data" / "NYexample_X.csv",
           ["OWNERSHP", "MORTGAGE", "AGE", "SEX", "MARST", "RACESING", "EDUC", "EMPSTAT",
            "DISABWRK", "VETSTAT"]),
}

# structural zeros of the ACS extract (--structural-zeros)
MCZ = ROOT.parent / "shared" / "data" / "ss16pusa_ds_MCZ.csv"

# columns whose conditional probabilities --records compares between chains
COMPARED = {"acs": ("AGEP", "MAR", "SCHL"), "ny": ("AGE", "EDUC", "MARST")}


def block_trace(m, block: int) -> list[str]:
    """Per chain: mean log-likelihood / ``k_occupied`` of each block of ``block`` sweeps."""
    import numpy as np

    thin = int(getattr(m, "thin", 1))
    lines = []
    for c in range(int(m.posterior_["posterior"].sizes["chain"])):
        parts = []
        for group, per in (("warmup_sample_stats", 1), ("sample_stats", thin)):
            if group not in m.posterior_.children:
                continue
            ll = m.posterior_[group]["loglik"].values[c]
            k = m.posterior_[group]["k_occupied"].values[c].astype(np.float64)
            step = max(block // per, 1)
            parts += [f"{ll[i:i + step].mean():.0f}/{k[i:i + step].mean():.1f}"
                      for i in range(0, ll.size, step)]
        lines.append(f"  chain {c} (log-likelihood/k* per {block} sweeps): " + " ".join(parts))
    return lines


def chain_disagreement(m, df, n_records: int, columns: list[str]) -> list[str]:
    """Between-chain differences of record probabilities against the Monte Carlo noise."""
    import numpy as np
    from scipy.special import logsumexp

    H = int(m.posterior_["posterior"].sizes["draw"])
    rows = np.random.default_rng(0).choice(len(df), min(n_records, len(df)), replace=False)
    sub = df.iloc[rows].reset_index(drop=True)
    chain = [np.arange(c * H, (c + 1) * H) for c in range(2)]
    halves = [x for c in chain for x in (c[: H // 2], c[H // 2:])]

    def compare(stat, keep) -> str:  # stat(draw indices) -> [n]
        between = np.abs(stat(chain[0]) - stat(chain[1]))[keep]
        h = [stat(x) for x in halves]
        within = np.concatenate([np.abs(h[0] - h[1]), np.abs(h[2] - h[3])])[np.tile(keep, 2)]
        q = lambda x: f"{np.median(x):.4f} / {np.quantile(x, 0.95):.4f} / {x.max():.3f}"  # noqa: E731
        return f"between chains {q(between)}; within (halves / √2) {q(within / np.sqrt(2))}"

    ll = m.record_loglik(sub)  # [chains * H, n]
    lines = ["  log E[p(y_i)] (median / p95 / max): "
             + compare(lambda s: logsumexp(ll[s], axis=0) - np.log(s.size),
                       np.ones(len(sub), bool))]
    for col in columns:
        levels = sorted(df[col].dropna().unique())
        lev = np.stack([m.record_loglik(sub.assign(**{col: v})) for v in levels])  # [G, HC, n]
        cond = np.exp(lev - logsumexp(lev, axis=0))
        observed = sub[col].notna().to_numpy()
        own = np.array([levels.index(v) if o else 0 for v, o in zip(sub[col], observed,
                                                                     strict=True)])
        own_p = cond[own, :, np.arange(len(sub))]  # [n, chains * H]
        lines.append(f"  E[p({col} = own | rest)]: "
                     + compare(lambda s, p=own_p: p[:, s].mean(axis=1), observed))
    return lines


def fit_one(df, seed: int, settings: dict, trace: int = 0, records: int = 0,
            columns: tuple[str, ...] = ()) -> dict[str, float]:
    import arviz_stats
    import numpy as np

    from bayes_risk.models import DPMPM

    load = os.getloadavg()[0]
    c0 = os.times()
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = DPMPM(n_components=80, progressbar=False, **settings).fit(df, random_seed=seed)
    sec = time.perf_counter() - t0
    c1 = os.times()
    cpu = sum(b - a for a, b in zip(c0[:4], c1[:4], strict=True))  # user + system, + children
    rep = m._check_convergence()
    a = m.posterior_["posterior"]["alpha"].values
    k = m.posterior_["sample_stats"]["k_occupied"].values.astype(np.float64)
    ll = m.posterior_["sample_stats"]["loglik"].values
    out = {"seed": seed, "seconds": sec, "cpu": cpu, "load": load}
    for name, x in (("alpha", a), ("k_occupied", k), ("loglik", ll)):
        out[f"{name}_mean"] = float(x.mean())
        out[f"{name}_mcse"] = float(arviz_stats.mcse(x, method="mean"))
        out[f"{name}_rhat"] = float(arviz_stats.rhat(x))
        out[f"{name}_ess"] = float(arviz_stats.ess(x, method="bulk"))
    out["flags"] = ";".join(f"{q}:{f}" for q, f in rep["flag"].items() if f)
    out["trace"] = block_trace(m, trace) if trace else []
    if records and int(m.posterior_["posterior"].sizes["chain"]) == 2:
        out["trace"] += chain_disagreement(m, df, records, list(columns))
    return out


def main() -> None:
    import pandas as pd

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", choices=sorted(DATA), default="acs")
    ap.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3, 4])
    ap.add_argument("--draws", type=int, default=None,
                    help="kept draws per chain (default: the model's; --draws 500 --thin 1 is "
                         "the previous default run)")
    ap.add_argument("--thin", type=int, default=None, help="sweeps per kept draw")
    ap.add_argument("--tune", type=int, default=None, help="warm-up sweeps per chain")
    ap.add_argument("--structural-zeros", action="store_true",
                    help="fit the ACS extract with its structural zeros (ss16pusa_ds_MCZ.csv)")
    ap.add_argument("--trace", type=int, default=0, metavar="B",
                    help="also print each chain's mean log-likelihood and k* per B sweeps")
    ap.add_argument("--records", type=int, default=0, metavar="N",
                    help="also compare the two chains' record probabilities on N records")
    args = ap.parse_args()
    settings = {k: v for k, v in (("draws", args.draws), ("thin", args.thin),
                                  ("tune", args.tune)) if v is not None}
    if args.structural_zeros:
        if args.data != "acs":
            ap.error("--structural-zeros: only with --data acs")
        settings["structural_zeros"] = MCZ
    path, cols = DATA[args.data]
    compared = COMPARED[args.data]
    df = pd.read_csv(path, dtype=str)[cols]  # NYexample's empty fields stay missing (NaN)
    rows = [fit_one(df, s, settings, args.trace, args.records, compared) for s in args.seeds]
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
          f"Python {platform.python_version()}; {path.name}, K = 80, defaults {settings}")
    print(f"{'seed':>4} {'alpha (mcse)':>16} {'Rhat':>5} {'ESS':>5} {'k* (mcse)':>14} {'Rhat':>5} "
          f"{'ESS':>5} {'loglik (mcse)':>18} {'Rhat':>5} {'ESS':>5} {'wall s':>7} {'CPU s':>6} "
          f"{'load':>5}  flags")
    for r in rows:
        print(f"{r['seed']:>4} {r['alpha_mean']:>8.3f} ({r['alpha_mcse']:.3f}) "
              f"{r['alpha_rhat']:>5.3f} {r['alpha_ess']:>5.0f} "
              f"{r['k_occupied_mean']:>6.2f} ({r['k_occupied_mcse']:.2f}) "
              f"{r['k_occupied_rhat']:>5.3f} {r['k_occupied_ess']:>5.0f} "
              f"{r['loglik_mean']:>10.1f} ({r['loglik_mcse']:.1f}) "
              f"{r['loglik_rhat']:>5.3f} {r['loglik_ess']:>5.0f} "
              f"{r['seconds']:>7.1f} {r['cpu']:>6.1f} {r['load']:>5.1f}  {r['flags']}")
        for line in r["trace"]:
            print(line)


if __name__ == "__main__":
    main()
