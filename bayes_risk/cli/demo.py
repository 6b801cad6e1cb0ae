"""``bayes-risk demo``: ``bayes-risk audit`` on embedded demo data (CE-like with CART, ACS-like
with DPMPM), made and audited with the other sub-commands run on files as a user would.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

__all__ = ["run"]

CE_CATEGORICAL = ["Urban", "Marital", "Tenure"]
CE_SYNTHESIZED = ["Tenure", "Expenditure", "Income"]
#: Hornby & Hu's intruder: the unsynthesized keys and the true value of a synthesized one (an
#: intruder who knows only unsynthesized columns finds the same records in every release)
CE_KNOWN = ["Age", "Urban", "Marital", "Income"]
ACS_ID_KEY = ["SEX", "AGE", "RACE", "MAR"]
ACS_TARGETS = ["EDUC", "DIS"]
#: the demo's DPMPM run unless --draws is given: the model's default run (1,000 warm-up sweeps,
#: every 5th sweep kept, extending itself up to 50,000 sweeps while its convergence checks fail)
#: with 300 kept draws per chain instead of 500
DEMO_DRAWS = 300
DEMO_THIN = 5
DEMO_MAX_SWEEPS = 50_000


def _call(argv: list[str], quiet: bool) -> None:
    """Run one sub-command; a failure stops the demo with that command's error."""
    import contextlib
    import os
    import sys

    from bayes_risk.cli import main
    from bayes_risk.exceptions import BayesRiskError

    if quiet:
        argv = [*argv, "--quiet"]
    # a step's summary is progress of the demo (stderr, silenced by --quiet); the demo's own
    # summary (stdout) names its reports
    with open(os.devnull, "w") as null, contextlib.redirect_stdout(null if quiet else sys.stderr):
        status = main(argv)
    if status == 130:  # the step was interrupted: so is the demo
        raise KeyboardInterrupt
    if status != 0:
        raise BayesRiskError(f"demo step `bayes-risk {' '.join(argv)}` failed (status {status}).",
                             code="DEMO_STEP_FAILED")


def run(args: argparse.Namespace) -> int:
    """Run the demo (see module docstring)."""
    from bayes_risk._constraints import Interval, check_value
    from bayes_risk._sampling_spec import Sampling
    from bayes_risk.cli._run import output_dir
    from bayes_risk.data.validate import check_m

    m = check_m(args.m, "-m")
    # the DPMPM options are checked here, before any step runs, so that an error names the
    # demo's own option rather than a step's command line in a temporary folder (the sampler's
    # by their spec)
    Sampling(draws=args.draws, tune=args.tune, chains=args.chains)
    if args.components is not None:
        check_value(args.components, Interval(int, 1), "--components")
    _check_sizes(args, m)
    from bayes_risk.cli._common import print_summary

    with output_dir(args) as tmp:
        reports = _run_parts(args, m, tmp)
    out = Path(args.out)
    # with --quiet, as every command: the paths written, here the reports a reader opens
    print_summary([f"demo: {len(reports)} audit report(s) of releases made from the demo data",
                   *(f"report: {out / rel}" for rel in reports)], out,
                  written=[out / rel for rel in reports])
    return 0


def _check_sizes(args: argparse.Namespace, m: int) -> None:
    """Refuse, before any step, tables, releases and a DPMPM posterior that cannot fit in the
    memory left (the steps check their own work again as they run)."""
    from bayes_risk._constraints import Interval, check_value
    from bayes_risk._memory import check_memory, posterior_bytes, release_bytes
    from bayes_risk.data import make_acs_like, make_ce_like

    check_value(args.n_ce, Interval(int, 1), "--n-ce")
    check_value(args.n_acs, Interval(int, 1), "--n-acs")
    if args.part in ("all", "ce"):
        row = make_ce_like(50, random_seed=0).memory_usage(deep=True).sum() / 50
        check_memory(release_bytes(m, row * args.n_ce, fitted=True), "--n-ce or -m",
                     what=f"a CE-like table of {args.n_ce:,} records and {m:,} syntheses of it")
    if args.part in ("all", "acs"):
        small = make_acs_like(50, random_seed=0)
        row = small.memory_usage(deep=True).sum() / 50
        width = sum(small[c].nunique() for c in small.columns)  # every level a parameter
        posterior = posterior_bytes(
            args.n_acs, small.shape[1], width, args.components or 50,
            draws=args.draws or DEMO_DRAWS, chains=args.chains or 2,
            tune=1000 if args.tune is None else args.tune)
        check_memory(release_bytes(m, row * args.n_acs, fitted=False) + posterior,
                     "--n-acs, -m, --tune, --draws, --chains or --components",
                     what=f"an ACS-like table of {args.n_acs:,} records, its DPMPM posterior "
                          f"and {m:,} syntheses")


def _run_parts(args: argparse.Namespace, m: int, out: Path) -> list[str]:
    """Run the steps into ``out`` (the temporary folder that becomes ``--out``)."""
    import json

    from bayes_risk._terminal import say
    from bayes_risk.cli._run import shown
    from bayes_risk.data import make_acs_like, make_ce_like

    seed = args.random_seed
    q = args.quiet
    timings: dict[str, float] = {}
    reports: list[str] = []

    def step(name: str, argv: list[str]) -> None:
        say(f"[demo] {name}: bayes-risk {shown(' '.join(argv))}")
        t0 = time.perf_counter()
        _call(argv, q)
        timings[name] = time.perf_counter() - t0

    if args.part in ("all", "ce"):
        ce_dir = out / "ce"
        ce_dir.mkdir(exist_ok=True)
        ce_csv = ce_dir / "original.csv"
        make_ce_like(args.n_ce, random_seed=seed).to_csv(ce_csv, index=False)
        syn = ce_dir / "synthetic"
        step("CE: CART synthesis", [
            "synthesize", str(ce_csv), "--method", "cart", "--synthesize", *CE_SYNTHESIZED,
            "--categorical", *CE_CATEGORICAL, "-m", str(m), "--random-seed", str(seed + 1),
            "--out", str(syn),
        ])
        step("CE: audit", [
            "audit", str(ce_csv), str(syn), "--known", *CE_KNOWN,
            "--target", "Expenditure", "--random-seed", str(seed + 4),
            "--out", str(ce_dir / "audit"),
        ])
        reports.append("ce/audit/report.html")

    if args.part in ("all", "acs"):
        acs_dir = out / "acs"
        acs_dir.mkdir(exist_ok=True)
        acs = make_acs_like(args.n_acs, random_seed=seed)
        acs_csv = acs_dir / "original.csv"
        acs.to_csv(acs_csv, index=False)
        cats = list(acs.columns)
        model = acs_dir / "model"
        syn = acs_dir / "synthetic"
        mcmc = [
            a for opt, v in (("--components", args.components), ("--tune", args.tune),
                             ("--draws", args.draws), ("--chains", args.chains))
            if v is not None for a in (opt, str(v))
        ]
        if args.draws is None:
            # the model's default run (every 5th sweep kept, extended while its convergence
            # checks fail) with fewer kept draws: the fit and the attribute step's m refits
            # (same settings) are most of the demo's time, and these draws pass the checks
            mcmc += ["--draws", str(DEMO_DRAWS), "--thin", str(DEMO_THIN),
                     "--max-sweeps", str(DEMO_MAX_SWEEPS)]
        step("ACS: DPMPM fit", [
            "fit", str(acs_csv), "--method", "dpmpm", *mcmc, "--random-seed", str(seed + 2),
            "--out", str(model),
        ])
        step("ACS: DPMPM synthesis", [
            "synthesize", "--model", str(model), "-m", str(m),
            "--random-seed", str(seed + 3), "--out", str(syn),
        ])
        step("ACS: audit", [
            "audit", str(acs_csv), str(syn), "--model", str(model), "--known", *ACS_ID_KEY,
            "--categorical", *cats, "--target", *ACS_TARGETS, "--random-seed", str(seed + 4),
            "--out", str(acs_dir / "audit"),
        ])
        reports.append("acs/audit/report.html")

    # the audits' warnings, gathered where a reader of the demo's own summary.json looks
    from bayes_risk._io import write_json

    steps = []
    for rel in reports:
        d = json.loads((out / Path(rel).parent / "summary.json").read_text())
        part = rel.split("/", 1)[0]
        steps += [{**w, "step": f"{part}/audit/{w['step']}"} for w in d.get("step_warnings", [])]
    write_json(out / "summary.json", {
        "command": "demo",
        "reports": reports,
        "timings": timings,
        "steps_with_warnings": sorted({w["step"] for w in steps}),
        "step_warnings": steps,
        "warnings": list(dict.fromkeys(w["code"] for w in steps)),
    })
    return reports
