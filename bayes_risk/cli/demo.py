"""``bayes-risk demo``: :func:`bayes_risk.demo.run_demo`, its steps run by
:func:`bayes_risk.cli.main` as a user would run them."""

from __future__ import annotations

import argparse
from pathlib import Path

__all__ = ["run"]


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
    """Run the demo into ``--out`` and print the reports written."""
    from bayes_risk._specs import argument_values
    from bayes_risk._terminal import say
    from bayes_risk.cli._common import print_summary
    from bayes_risk.cli._run import output_dir, shown
    from bayes_risk.demo import run_demo

    def step(name: str, argv: list[str]) -> None:
        # (the steps write into the temporary folder: their lines name the final one)
        say(f"[demo] {name}: bayes-risk {shown(' '.join(argv))}")
        _call(argv, args.quiet)

    with output_dir(args) as tmp:
        reports = run_demo(tmp, step, **argument_values(run_demo, vars(args)),
                           random_seed=args.random_seed)
    out = Path(args.out)
    # with --quiet, as every command: the paths written, here the reports a reader opens
    print_summary([f"demo: {len(reports)} audit report(s) of releases made from the demo data",
                   *(f"report: {out / rel}" for rel in reports)], out,
                  written=[out / rel for rel in reports])
    return 0
