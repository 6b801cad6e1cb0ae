"""``bayes-risk remedy``: synthpop's and sdcMicro's post-processing of a release, written as a new
release."""

from __future__ import annotations

import argparse

__all__ = ["run"]


def run(args: argparse.Namespace) -> int:
    """Post-process the release and write it."""
    from bayes_risk._specs import argument_values
    from bayes_risk.cli._common import read_inputs, write_run
    from bayes_risk.data.statfiles import file_labels
    from bayes_risk.disclosure.remedy import remedy_run
    from bayes_risk.disclosure.specs import SDC_ARGUMENTS, SDCMICRO_ARGUMENTS
    from bayes_risk.exceptions import ValidationError

    synthpop = argument_values(SDC_ARGUMENTS, vars(args))
    micro = argument_values(SDCMICRO_ARGUMENTS, vars(args))
    if not synthpop and not micro:
        raise ValidationError("nothing to do: give --bottom-top, --remove, --smooth, --pram, "
                              "--local-suppression, --microaggregation or --add-noise.",
                              code="OPTION_REQUIRED")
    original, syn = read_inputs(args)
    res = remedy_run(original, syn, synthpop=synthpop, sdcmicro_options=micro,
                     random_seed=args.random_seed)
    labels = file_labels(original)
    lines = [f"post-processed {res.release.m} dataset(s) of {str(args.synthetic[0])!r}"
             + (" ..." if len(args.synthetic) > 1 else ""), *res.lines()]
    write_run(args, lines, extra=lambda tmp: res.release.save(tmp, file_format=args.file_format,
                                                            labels=labels))
    return 0
