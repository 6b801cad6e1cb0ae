"""``bayes-risk remedy``: synthpop's post-processing of a release, written as a new release."""

from __future__ import annotations

import argparse
from typing import Any

__all__ = ["run"]


def _number(text: str, option: str, item: str) -> float | None:
    from bayes_risk.exceptions import ValidationError

    if not text.strip():
        return None
    try:
        value = float(text)
    except ValueError:
        raise ValidationError(f"{option} {item!r}: {text!r} is not a number.",
                              code="BAD_OPTION_VALUE") from None
    return int(value) if value.is_integer() else value


def _coding(items: list[str], excludes: list[str]) -> tuple[dict[str, Any], dict[str, Any]]:
    """``--bottom-top COL=BOTTOM:TOP`` and ``--exclude COL=V,V`` as ``sdc``'s mappings."""
    from bayes_risk.exceptions import ValidationError

    coding: dict[str, Any] = {}
    for item in items:
        col, eq, bounds = item.partition("=")
        if not eq or bounds.count(":") != 1 or not col:
            raise ValidationError(f"--bottom-top {item!r}: expected COL=BOTTOM:TOP, a side "
                                  "empty for no bound (Income=:200000).",
                                  code="BAD_OPTION_VALUE")
        low, high = bounds.split(":")
        coding[col] = (_number(low, "--bottom-top", item), _number(high, "--bottom-top", item))
    exclude: dict[str, Any] = {}
    for item in excludes:
        col, eq, values = item.partition("=")
        if not eq or not col or not values.strip():
            raise ValidationError(f"--exclude {item!r}: expected COL=V[,V...].",
                                  code="BAD_OPTION_VALUE")
        exclude[col] = [_number(v, "--exclude", item) for v in values.split(",")]
    return coding, exclude


def run(args: argparse.Namespace) -> int:
    """Post-process the release and write it."""
    from bayes_risk.cli._common import print_summary, read_inputs
    from bayes_risk.cli._run import output_dir
    from bayes_risk.disclosure.sdc import sdc
    from bayes_risk.exceptions import ValidationError

    coding, exclude = _coding(args.bottom_top, args.exclude)
    if not (coding or exclude or args.remove or args.smooth):
        raise ValidationError("nothing to do: give --bottom-top, --remove or --smooth.",
                              code="OPTION_REQUIRED")
    if args.keys and not args.remove:
        raise ValidationError("--keys applies to --remove, which is not given.",
                              code="OPTION_CONFLICT")
    original, syn = read_inputs(args)
    out = sdc(original, syn, keys=args.keys,
              remove=None if args.remove is None else args.remove.replace("-", "_"),
              bottom_top_coding=coding or None, recode_exclude=exclude or None,
              smooth=args.smooth or None, compat=args.compat)
    from bayes_risk.data.statfiles import file_labels

    with output_dir(args) as tmp:
        out.save(tmp, file_format=args.file_format, labels=file_labels(original))
    lines = [f"post-processed {out.m} dataset(s) of {str(args.synthetic[0])!r}"
             + (" ..." if len(args.synthetic) > 1 else "")]
    for step in out.extra["post_processing"][-3:]:
        op = step["operation"]
        if op == "bottom_top_coding":
            for c in step["bounds"]:
                lines.append(f"{c}: {sum(step['n_bottom_coded'][c]):,} value(s) bottom-coded, "
                             f"{sum(step['n_top_coded'][c]):,} top-coded (all datasets)")
        elif op.startswith("remove_"):
            lines.append(f"{op.removeprefix('remove_').replace('_', ' ')} removed: "
                         + ", ".join(f"{n:,}" for n in step["n_removed"]) + " (per dataset)")
        else:
            lines.append(f"smoothed: {', '.join(step['columns'])}")
    print_summary(lines, args.out)
    return 0
