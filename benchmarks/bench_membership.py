"""Benchmark of membership risk (issue 33): every record of the 2,000-record demo release.

The release is the ACS part of ``bayes-risk demo`` (``bayes_risk/cli/demo.py``): 2,000 records
of the ACS-like table (14 categorical variables, seed 2026), a DPMPM with the model's defaults
fitted by ``bayes-risk fit`` (seed 2028) and m = 5 datasets from ``bayes-risk synthesize``
(seed 2029). ``--demo DIR`` uses the ``acs/`` folder of an existing ``bayes-risk demo --out DIR``;
otherwise the two steps are run here with the demo's arguments (the audit is not run).

Non-members: a holdout of ``--holdout`` fresh records of the same population (the same
generator and seed, so the same latent-class parameters; records that were not fitted) and as
many look-alikes from the model's posterior predictive. Times, separately, the m augmented
refits and the rest of the engine (likelihoods, the normaliser, diagnostics, the distance
baseline, a B = 200 bootstrap), and prints the file summaries. Run with

    .venv/bin/python benchmarks/bench_membership.py [--demo demo-output] [--holdout 1000]
"""

from __future__ import annotations

import argparse
import platform
import resource
import tempfile
import time
import warnings
from pathlib import Path


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _release(demo: str | None, work: Path, seed: int) -> Path:
    """The ``acs/`` folder of the demo: an existing one, or the demo's fit and synthesis."""
    if demo is not None:
        return Path(demo) / "acs"
    from bayes_risk.cli import main
    from bayes_risk.data import make_acs_like

    acs = work / "acs"
    acs.mkdir()
    make_acs_like(2000, random_seed=seed).to_csv(acs / "original.csv", index=False)
    for argv in (["fit", str(acs / "original.csv"), "--method", "dpmpm", "--random-seed",
                  str(seed + 2), "-q", "--out", str(acs / "model")],
                 ["synthesize", "--model", str(acs / "model"), "-m", "5", "--random-seed",
                  str(seed + 3), "-q", "--out", str(acs / "synthetic")]):
        if main(argv) != 0:
            raise SystemExit(f"step failed: bayes-risk {' '.join(argv)}")
    return acs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--demo", default=None, metavar="DIR",
                    help="output folder of an existing 'bayes-risk demo' run")
    ap.add_argument("--holdout", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=2026)
    ap.add_argument("--bootstrap", type=int, default=200)
    a = ap.parse_args()

    from bayes_risk.data import make_acs_like, read_synthetic, read_table
    from bayes_risk.membership import AttackSpec, RatioSpec, membership_risk
    from bayes_risk.models import load_model

    rows: list[tuple[str, str]] = []
    with tempfile.TemporaryDirectory() as tmp, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t0 = time.perf_counter()
        acs = _release(a.demo, Path(tmp), a.seed)
        if a.demo is None:
            rows.append(("demo fit + synthesis (bayes-risk fit, synthesize)",
                         f"{time.perf_counter() - t0:.1f} s"))
        original = read_table(acs / "original.csv")
        model = load_model(acs / "model")
        model.progressbar = False
        syn = read_synthetic(acs / "synthetic", like=original)
        # the same population (make_acs_like draws the latent-class parameters first from the
        # seed, then the records): fresh records of it; read back as the original was, so that
        # the holdout's values have the same types
        fresh = make_acs_like(2000 + a.holdout, random_seed=a.seed).iloc[2000:]
        fresh.to_csv(Path(tmp) / "hold.csv", index=False)
        hold = read_table(Path(tmp) / "hold.csv")
        t1 = time.perf_counter()
        aug = [model.fit_augmented(original, z, random_seed=a.seed + 10 + l)
               for l, z in enumerate(syn.datasets)]
        t_aug = time.perf_counter() - t1
        t2 = time.perf_counter()
        res = membership_risk(model, original, syn, holdout=hold, population=len(original),
                              random_seed=a.seed, ratio=RatioSpec(augmented=aug),
                              attack=AttackSpec(bootstrap=a.bootstrap))
        t_eng = time.perf_counter() - t2
    f = res.file
    H = res.settings["n_draws"]
    rows += [
        ("records (members) / holdout / look-alikes",
         f"{f['n_members']:,} / {a.holdout:,} / {len(original):,}"),
        ("m, H (draws per posterior)", f"{len(syn.datasets)}, {H:,}"),
        ("m augmented refits", f"{t_aug:.1f} s"),
        ("membership_risk (likelihoods, normaliser, k-hat, DCR, bootstrap)", f"{t_eng:.1f} s"),
        ("flagged targets", f"{f['n_flagged']:,}"),
        ("share of members with P(member) > 0.5", f"{f['share_members_above']:.3f}"),
        ("mean P(member): members / non-members",
         f"{f['mean_p_member_members']:.4f} / {f['mean_p_member_non_members']:.4f}"),
        ("AUC - 0.5, Bayesian [95% bootstrap]",
         f"{f['auc_advantage']:.4f} [{f['auc_advantage_interval'][0]:.4f}, "
         f"{f['auc_advantage_interval'][1]:.4f}]"),
        ("TPR - FPR at 0.5 [95% bootstrap]",
         f"{f['tpr_fpr']:.4f} [{f['tpr_fpr_interval'][0]:.4f}, {f['tpr_fpr_interval'][1]:.4f}]"),
        ("AUC - 0.5, distance to closest record [95%]",
         f"{f['dcr_auc_advantage']:.4f} [{f['dcr_auc_advantage_interval'][0]:.4f}, "
         f"{f['dcr_auc_advantage_interval'][1]:.4f}]"),
        ("Spearman, log LR vs -DCR", f"{f['spearman_bayes_dcr']:.3f}"),
        ("synthetic rows closer to training than holdout",
         f"{f['dcr_overfitting']['share_closer_to_training']:.3f}"),
        ("peak resident memory", f"{_peak_mb():,.0f} MB"),
        ("machine", f"{platform.machine()}, Python {platform.python_version()}"),
    ]
    width = max(len(k) for k, _ in rows)
    print(f"{'measure':<{width}}  value")
    for k, v in rows:
        print(f"{k:<{width}}  {v}")


if __name__ == "__main__":
    main()
