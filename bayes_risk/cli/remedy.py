"""``bayes-risk remedy``: synthpop's post-processing of a release, written as a new release."""

from __future__ import annotations

import argparse
from typing import Any

__all__ = ["run"]


def _number(text: str, option: str, col: str) -> float | None:
    """A value of ``option``'s ``col``; an empty bound of ``--bottom-top`` is ``None``."""
    from bayes_risk.exceptions import ValidationError

    if not text.strip() and option == "--bottom-top":
        return None
    try:
        value = float(text)
    except ValueError:
        raise ValidationError(f"{option} {col}: {text!r} is not a number.",
                              code="BAD_OPTION_VALUE") from None
    return int(value) if value.is_integer() else value


def _coding(items: list[str], excludes: list[str]) -> tuple[dict[str, Any], dict[str, Any]]:
    """``--bottom-top COL=BOTTOM:TOP`` and ``--exclude COL=V,V`` as ``sdc``'s mappings (``sdc``
    checks the columns and bounds)."""
    from bayes_risk.cli._common import parse_key_value
    from bayes_risk.exceptions import ValidationError

    coding: dict[str, Any] = {}
    for col, bounds in parse_key_value(items, "--bottom-top", str).items():
        low, sep, high = bounds.partition(":")
        if not sep or ":" in high:
            raise ValidationError(f"--bottom-top {col}={bounds}: expected COL=BOTTOM:TOP, a side "
                                  "empty for no bound (Income=:200000).",
                                  code="BAD_OPTION_VALUE")
        coding[col] = (_number(low, "--bottom-top", col), _number(high, "--bottom-top", col))
    exclude = {col: [_number(v, "--exclude", col) for v in values.split(",")]
               for col, values in parse_key_value(excludes, "--exclude", str).items()}
    return coding, exclude


def run(args: argparse.Namespace) -> int:
    """Post-process the release and write it."""
    from bayes_risk._specs import argument_values
    from bayes_risk.cli._common import read_inputs, write_run
    from bayes_risk.disclosure.sdc import sdc
    from bayes_risk.disclosure.specs import SDC_ARGUMENTS

    coding, exclude = _coding(args.bottom_top or [], args.exclude or [])
    original, syn = read_inputs(args)
    out = sdc(original, syn, **{**argument_values(SDC_ARGUMENTS, vars(args)),
                                "bottom_top_coding": coding or None,
                                "recode_exclude": exclude or None})
    from bayes_risk.data.statfiles import file_labels

    labels = file_labels(original)
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
    write_run(args, lines, extra=lambda tmp: out.save(tmp, file_format=args.file_format,
                                                    labels=labels))
    return 0
