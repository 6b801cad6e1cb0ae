"""Accuracy of the stabilised estimator against exact values by number of draws H (issue 10.5).

The K = 3 table of ``tests/attribute/test_ground_truth.py::
test_dpmpm_p_true_k3_matches_exact_both_estimators`` (n = 20, two binary columns, m = 1, three
records): each replicate fits the DPMPM to ``y`` and to ``y ∪ Z`` (2 chains × (200 + 8,000)
sweeps) and computes ``p_true`` with both estimators from the first H/2 kept draws of each chain,
H = 2,000, 8,000 and 16,000; the exact values come from ``tests/_exact.py``. Prints the mean
error (standard error) per record and H, the sd per replicate, and the paired difference between
H = 2,000 and 16,000. The figures in the docs' methods page (the stabilised estimator) are from
60 replicates (``--reps 60``: about 30 CPU minutes). Not run by ``make bench`` (not a timing).

Run from the repository root:
``.venv/bin/python benchmarks/study_stabilised_accuracy.py [--reps N]``.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.special import logsumexp

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "tests" / "attribute")]
HALF = (1000, 4000, 8000)  # kept draws per chain used: H = 2 × HALF


def _case():
    from test_ground_truth import _structured_table

    y = _structured_table(2024, 20, 2, 7)
    Z = np.random.default_rng(2025).integers(0, 2, size=(20, 2))
    records = [int(np.flatnonzero((y == y[i]).all(axis=1))[0]) for i in (0, 12)]
    records.append(int(next(i for i in range(20) if not (y[i] == y[records]).all(axis=1).any())))
    return y, Z, records


def _candidates(yi: np.ndarray) -> np.ndarray:
    out = [yi.copy()]
    for j in range(2):
        c = yi.copy()
        c[j] = 1 - c[j]
        out.append(c)
    return np.array(out)


def _logp_rows(post, rows: np.ndarray) -> np.ndarray:
    """``[chain, draw, row]`` log p(row | Θ) of a two-column DPMPM."""
    with np.errstate(divide="ignore"):
        lpi = np.log(post["pi"].values)
        l0, l1 = np.log(post["phi_0"].values), np.log(post["phi_1"].values)
    return np.stack([logsumexp(lpi + l0[..., r[0]] + l1[..., r[1]], axis=-1) for r in rows], -1)


def replicate(df, zf, y, Z, records, seed: int) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    from bayes_risk.models import DPMPM

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = DPMPM(n_components=3, tune=200, draws=max(HALF), chains=2, cores=1,
                  progressbar=False).fit(df, random_seed=seed + 1)
        ma = m.fit_augmented(df, zf, random_seed=seed + 3)
    post, posta = m.posterior_["posterior"], ma.posterior_["posterior"]
    cells, counts = np.unique(Z, axis=0, return_counts=True)
    LZ = (_logp_rows(post, cells) * counts).sum(-1)  # log p(Z | Θ_h) [chain, draw]
    out = {}
    for h in HALF:
        stab, pub = [], []
        for i in records:
            cs = _candidates(y[i])
            lb = _logp_rows(post, cs)[:, :h].reshape(-1, 3)
            la = _logp_rows(posta, cs)[:, :h].reshape(-1, 3)
            lrb, lra = lb - lb[:, :1], la - la[:, :1]
            ll = logsumexp(lra, axis=0) - logsumexp(lrb, axis=0)  # the log H terms cancel
            stab.append(1.0 / np.exp(ll - ll[0]).sum())
            lq = lrb - logsumexp(lrb, axis=0)
            lp = logsumexp(LZ[:, :h].reshape(-1)[:, None] + lq, axis=0)
            pub.append(1.0 / np.exp(lp - lp[0]).sum())
        out[2 * h] = (np.array(stab), np.array(pub))
    return out


def main() -> None:
    from _exact import dpmpm_p_true_exact

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=60)
    ap.add_argument("--seed", type=int, default=7000)
    args = ap.parse_args()
    y, Z, records = _case()
    truth = np.array([dpmpm_p_true_exact(y, [Z], i, np.array([2, 2]), 3) for i in records])
    df = pd.DataFrame(y, columns=["a", "b"]).astype(str)
    zf = pd.DataFrame(Z, columns=["a", "b"]).astype(str)
    runs = [replicate(df, zf, y, Z, records, args.seed + 1000 * r) for r in range(args.reps)]
    print(f"exact p_true {truth.round(4)}; {args.reps} replicates; mean error (standard error)")
    for H in sorted(runs[0]):
        for k, name in ((0, "stabilised"), (1, "published ")):
            x = np.array([r[H][k] for r in runs])
            err, sd = x.mean(0) - truth, x.std(0, ddof=1) if len(x) > 1 else np.full(3, np.nan)
            se = sd / np.sqrt(len(x))
            cells = ", ".join(f"{e:+.4f} ({s:.4f})" for e, s in zip(err, se, strict=True))
            print(f"H = {H:>6,} {name}  {cells}   sd per replicate {sd.min():.4f}-{sd.max():.4f}")
    hs = sorted(runs[0])
    d = np.array([r[hs[0]][0] - r[hs[-1]][0] for r in runs])
    se = d.std(0, ddof=1) / np.sqrt(len(d)) if len(d) > 1 else np.full(3, np.nan)
    print(f"stabilised, H = {hs[0]:,} minus H = {hs[-1]:,}: "
          + ", ".join(f"{e:+.4f} ({s:.4f})" for e, s in zip(d.mean(0), se, strict=True)))


if __name__ == "__main__":
    main()
