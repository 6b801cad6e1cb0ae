"""α and the number of occupied classes in the DPMPM's augmented fits vs exact (issue 10).

The K = 3 table of ``tests/attribute/test_ground_truth.py::
test_dpmpm_p_true_k3_matches_exact_both_estimators`` (n = 20, two binary columns, one released
dataset Z of 20 records). Two parts:

1. ``--reps`` replicates at the ground-truth tests' settings (2 chains × (200 warm-up + 2,000)
   sweeps; ``--tune`` changes the warm-up): the base fit on ``y`` and its augmented fit on
   ``y ∪ Z`` (``DPMPM.fit_augmented``), each replicate with its own seeds; mean α and mean
   number of occupied classes per fit against the exact posterior means (``tests/_exact.py``):
   mean error (standard error over replicates).
2. ``--trace-reps`` fits on ``y ∪ Z`` with no warm-up (2 chains × 2,200 sweeps): the mean of α
   and of the occupied classes by window of sweeps from the start, i.e. how the start (every
   class occupied) decays.
3. ``--plain-reps`` plain fits ``DPMPM(...).fit`` on the stacked table ``y ∪ Z`` (the augmented
   fit draws the same numbers: ``tests/attribute/test_ground_truth_augmented.py``) with
   ``--plain-tune`` warm-up and ``--plain-draws`` kept sweeps per chain (2 chains): mean error of
   α, of the occupied classes and of P(k* = 1, 2, 3) against the exact posterior, each with its
   standard error over replicates, t and the Bonferroni-free two-sided p-value. The power to see
   an error of the size part 1 suggested (≈ −0.02) comes from long chains: the per-fit sd of mean
   α falls as one over the square root of the kept sweeps.

Not a timing, not run by ``make bench``. Run from the repository root:
``.venv/bin/python benchmarks/study_augmented_alpha.py [--reps N] [--trace-reps N] [--tune N]
[--plain-reps N --plain-tune N --plain-draws N]``; ``--reps 0 --trace-reps 0 --plain-reps 200
--plain-tune 1000 --plain-draws 10000`` is the powered run recorded in ``benchmarks/README.md``
(about 15 CPU minutes).
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "tests" / "attribute")]
WINDOWS = (0, 1, 20, 50, 100, 200, 400, 800, 1400, 2200)


def _case() -> tuple[np.ndarray, np.ndarray]:
    from test_ground_truth import _structured_table

    y = _structured_table(2024, 20, 2, 7)
    return y, np.random.default_rng(2025).integers(0, 2, size=(20, 2))


def _summary(m) -> tuple[float, float]:
    return (float(m.posterior_["posterior"]["alpha"].mean()),
            float(m.posterior_["sample_stats"]["k_occupied"].mean()))


def _line(name: str, x: np.ndarray, exact: float) -> str:
    from scipy import stats

    se = x.std(ddof=1) / np.sqrt(len(x)) if len(x) > 1 else float("nan")
    err = x.mean() - exact
    p = 2 * stats.t.sf(abs(err / se), len(x) - 1) if len(x) > 1 else float("nan")
    return (f"{name:<34} exact {exact:.4f}  mean error {err:+.4f} ({se:.4f})  "
            f"t = {err / se:+.2f}  p = {p:.2f}")


def _plain(args, y: np.ndarray, Z: np.ndarray, ex) -> None:
    """Part 3: long plain fits on y ∪ Z against the exact posterior."""
    from bayes_risk.models import DPMPM

    both = pd.DataFrame(np.vstack([y, Z]), columns=["a", "b"]).astype(str)
    kw = dict(n_components=3, tune=args.plain_tune, draws=args.plain_draws, chains=2, cores=1,
              progressbar=False)
    rows = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for r in range(args.plain_reps):
            m = DPMPM(**kw).fit(both, random_seed=args.seed + 7919 * r + 3)
            k = m.posterior_["sample_stats"]["k_occupied"].values
            rows.append([float(m.posterior_["posterior"]["alpha"].mean()), float(k.mean()),
                         *((k == j).mean() for j in (1, 2, 3))])
    x = np.array(rows)
    occ = (ex.nk > 0).sum(axis=1)
    p_occ = [float(ex.state_post[occ == j].sum()) for j in (1, 2, 3)]
    print(f"\n{args.plain_reps} plain fits on y+Z, 2 chains x ({args.plain_tune} + "
          f"{args.plain_draws:,}) sweeps; mean per fit vs exact")
    print(_line("alpha", x[:, 0], ex.alpha_mean))
    print(_line("occupied classes", x[:, 1], ex.k_occupied_mean))
    for j in (1, 2, 3):
        print(_line(f"P(k* = {j})", x[:, 1 + j], p_occ[j - 1]))


def main() -> None:
    from _exact import dpmpm_exact

    from bayes_risk.models import DPMPM

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=100)
    ap.add_argument("--trace-reps", type=int, default=30)
    ap.add_argument("--seed", type=int, default=8000)
    ap.add_argument("--tune", type=int, default=200, help="warm-up sweeps of part 1's fits")
    ap.add_argument("--plain-reps", type=int, default=0, help="part 3's replicates")
    ap.add_argument("--plain-tune", type=int, default=1000)
    ap.add_argument("--plain-draws", type=int, default=10000)
    args = ap.parse_args()
    y, Z = _case()
    d = np.array([2, 2])
    ex_y, ex_yz = dpmpm_exact(y, d, 3), dpmpm_exact(np.vstack([y, Z]), d, 3)
    df = pd.DataFrame(y, columns=["a", "b"]).astype(str)
    zf = pd.DataFrame(Z, columns=["a", "b"]).astype(str)
    kw = dict(n_components=3, tune=args.tune, draws=2000, chains=2, cores=1, progressbar=False)
    base, aug = [], []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for r in range(args.reps):
            m = DPMPM(**kw).fit(df, random_seed=args.seed + 1000 * r + 1)
            base.append(_summary(m))
            aug.append(_summary(m.fit_augmented(df, zf, random_seed=args.seed + 1000 * r + 2)))
    base, aug = np.array(base), np.array(aug)
    if args.reps:
        print(f"{args.reps} replicates, 2 chains x ({args.tune} + 2,000) sweeps; mean per fit "
              "vs exact")
        print(_line("base fit on y: alpha", base[:, 0], ex_y.alpha_mean))
        print(_line("base fit on y: occupied classes", base[:, 1], ex_y.k_occupied_mean))
        print(_line("augmented fit on y+Z: alpha", aug[:, 0], ex_yz.alpha_mean))
        print(_line("augmented fit on y+Z: occupied", aug[:, 1], ex_yz.k_occupied_mean))
    if args.plain_reps:
        _plain(args, y, Z, ex_yz)
    if args.trace_reps:
        both = pd.DataFrame(np.vstack([y, Z]), columns=["a", "b"]).astype(str)
        A, K = [], []
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for r in range(args.trace_reps):
                m = DPMPM(**{**kw, "tune": 0, "draws": WINDOWS[-1]}).fit(
                    both, random_seed=args.seed + 7 + 1000 * r)
                A.append(m.posterior_["posterior"]["alpha"].values)
                K.append(m.posterior_["sample_stats"]["k_occupied"].values)
        A, K = np.concatenate(A), np.concatenate(K)
        print(f"\n{args.trace_reps} fits on y+Z from the start (no warm-up), {len(A)} chains: "
              f"exact alpha {ex_yz.alpha_mean:.4f}, occupied {ex_yz.k_occupied_mean:.4f}")
        for a, b in zip(WINDOWS[:-1], WINDOWS[1:], strict=True):
            am, km = A[:, a:b].mean(axis=1), K[:, a:b].mean(axis=1)
            sa, sk = (x.std(ddof=1) / np.sqrt(len(x)) for x in (am, km))
            print(f"sweeps {a:>5}-{b:<5} alpha {am.mean():.3f} ({sa:.3f})  "
                  f"occupied {km.mean():.3f} ({sk:.3f})")


if __name__ == "__main__":
    main()
