"""The between-chain check of attribute risk (``CHAINS_DISAGREE``): cost and flagged share.

Fits a DPMPM with two chains (and the ``m`` augmented fits, two chains each), runs
``attribute_risk`` on the records and prints a table: the time of the check (the per-chain
regrouping of the ratio sums and the per-record test) against the whole analysis, how many
records are flagged ``CHAINS_DISAGREE`` (and with what else), and how far the chains' estimates
of ``p_true`` lie apart.

* ``--data demo`` (default): the demo's ACS-like table (2,000 records, K = 20, 300 warm-up
  sweeps, 500 draws per chain as the demo's one chain);
* ``--data ny``: ``NYexample_X.csv`` of the shared data (20,000 records, ten columns, K = 80, the
  fit's defaults), on ``--records`` records drawn at random (default 2,000).

Run with ``.venv/bin/python benchmarks/bench_chain_check.py [--data demo|ny] [--m 5]
[--records N] [--seed S]``.
"""

from __future__ import annotations

import argparse
import os
import platform
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

NY = Path(__file__).resolve().parents[2] / "shared" / "data" / "NYexample_X.csv"


def _data(a: argparse.Namespace) -> tuple[pd.DataFrame, dict, np.ndarray | None]:
    if a.data == "demo":
        from bayes_risk.data import make_acs_like

        df = make_acs_like(2000, random_seed=a.seed)
        return df, {"n_components": 20, "tune": 300, "draws": 500}, None
    path = Path(a.ny) if a.ny else NY
    df = pd.read_csv(path, dtype=str).astype("category")  # empty fields stay missing (NaN)
    rec = np.sort(np.random.default_rng(a.seed).choice(len(df), a.records, replace=False))
    return df, {"n_components": 80}, rec


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", choices=["demo", "ny"], default="demo")
    ap.add_argument("--ny", default=None, help="path of NYexample_X.csv")
    ap.add_argument("--m", type=int, default=5)
    ap.add_argument("--records", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=2026)
    a = ap.parse_args()

    from bayes_risk.attribute import EstimatorSpec, attribute_risk
    from bayes_risk.models.dpmpm.dpmpm import DPMPM

    df, settings, records = _data(a)
    rows: list[tuple[str, str]] = []
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = DPMPM(**settings, chains=2, progressbar=False)
        model.fit(df, random_seed=a.seed)
        syn = model.synthesize(a.m, random_seed=a.seed + 1)
        aug = [model.fit_augmented(df, z, random_seed=a.seed + 10 + li)
               for li, z in enumerate(syn)]
    rows.append((f"DPMPM fit + {a.m} augmented fits ({settings}, 2 chains)",
                 f"{time.perf_counter() - t0:.1f} s"))
    t1 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = attribute_risk(df, syn, model=model, records=records,
                             random_seed=a.seed,
                             progressbar=False,
                             estimator=EstimatorSpec(augmented=aug))
    rows.append((f"attribute_risk, {len(res.records)} records, H = {res.settings['H']}",
                 f"{time.perf_counter() - t1:.1f} s"))
    tm = res.settings["timing"]
    rows.append(("  of which engine (estimators, diagnostics, bootstrap)",
                 f"{tm['engine_s']:.2f} s"))
    rows.append(("  of which the between-chain check", f"{tm.get('chain_check_s', 0.0):.3f} s"))
    s = res.to_dict()
    n = s["n_records"]
    ch = s["between_chain_check"]
    rows.append(("between-chain check", f"{ch['status']} ({ch['reason']})"))
    r = res.records
    cd = r["flag_codes"].str.contains("CHAINS_DISAGREE", regex=False)
    rows.append(("records flagged CHAINS_DISAGREE", f"{int(cd.sum())} of {n} "
                 f"({100 * cd.mean():.2f} %)"))
    only = cd & (r["flag_codes"] == "CHAINS_DISAGREE")
    rows.append(("  of which with no other flag", f"{int(only.sum())}"))
    rows.append(("records flagged (any flag)", f"{s['n_flagged']} of {n} "
                 f"({100 * s['n_flagged'] / n:.2f} %)"))
    rows.append(("  flag counts", ", ".join(f"{k} {v}" for k, v in s["flag_counts"].items())))
    if "p_true_chain_max" in r:
        d = (r["p_true_chain_max"] - r["p_true_chain_min"]).to_numpy()
        q = np.nanquantile(d, [0.5, 0.9, 0.99, 1.0])
        rows.append(("|p_true chain 1 - chain 2|: median / 90 % / 99 % / max",
                     " / ".join(f"{v:.4f}" for v in q)))
        rows.append(("  records with a difference > 0.06", f"{int(np.sum(d > 0.06))}"))
        z = r["chain_z"].to_numpy()
        rows.append(("chain_z: median / 99 % / max",
                     " / ".join(f"{v:.2f}" for v in np.nanquantile(z, [0.5, 0.99, 1.0]))))
    rh = [w for w in res.mcmc.get("warnings", []) if w.get("code") == "RHAT_HIGH"]
    rows.append(("fits with RHAT_HIGH", ", ".join(sorted({w["fit"] for w in rh})) or "none"))
    rows.append(("machine", f"{platform.processor() or platform.machine()}, "
                 f"{os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}"))
    w = max(len(k) for k, _ in rows)
    print(f"{'step'.ljust(w)} | value")  # noqa: T201 - benchmark scripts print a table
    print("-" * w + "-|------")  # noqa: T201
    for k, v in rows:
        print(f"{k.ljust(w)} | {v}")  # noqa: T201


if __name__ == "__main__":
    main()
