"""``bayes-risk remedy``: synthpop's and sdcMicro's post-processing of a release, written as a new
release."""

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
    from bayes_risk.data.statfiles import file_labels
    from bayes_risk.disclosure.sdc import sdc
    from bayes_risk.disclosure.sdcmicro import sdcmicro
    from bayes_risk.disclosure.specs import SDC_ARGUMENTS, SDCMICRO_ARGUMENTS
    from bayes_risk.exceptions import ValidationError

    coding, exclude = _coding(args.bottom_top or [], args.exclude or [])
    synthpop = {**argument_values(SDC_ARGUMENTS, vars(args)), "bottom_top_coding": coding or None,
                "recode_exclude": exclude or None}
    micro = argument_values(SDCMICRO_ARGUMENTS, vars(args))
    if not any(v is not None for v in synthpop.values()) and not micro:
        raise ValidationError("nothing to do: give --bottom-top, --remove, --smooth, --pram, "
                              "--local-suppression, --microaggregation or --add-noise.",
                              code="OPTION_REQUIRED")
    original, syn = read_inputs(args)
    done = len((getattr(syn, "extra", None) or {}).get("post_processing") or [])
    out = syn
    if any(v is not None for v in synthpop.values()):
        out = sdc(original, out, **synthpop)
    if micro:
        out = sdcmicro(original, out, **micro, random_seed=args.random_seed)
    steps = out.extra["post_processing"][done:]
    for step in steps[1:]:  # one remedy: every step of this run applied to the release read
        step["source"] = steps[0]["source"]
    labels = file_labels(original)
    lines = [f"post-processed {out.m} dataset(s) of {str(args.synthetic[0])!r}"
             + (" ..." if len(args.synthetic) > 1 else "")]
    for step in steps:
        lines.extend(_step_lines(step))
    write_run(args, lines, extra=lambda tmp: out.save(tmp, file_format=args.file_format,
                                                    labels=labels))
    return 0


def _per(values: list[int]) -> str:
    """Counts of each dataset: ``12`` or ``12, 9 (per dataset)``."""
    return ", ".join(f"{n:,}" for n in values) + (" (per dataset)" if len(values) > 1 else "")


def _all(values: list[int]) -> str:
    """Counts of each dataset summed: ``21`` (``(all datasets)`` after it when several)."""
    return f"{sum(values):,}" + (" (all datasets)" if len(values) > 1 else "")


def _step_lines(step: dict[str, Any]) -> list[str]:
    """What one post-processing step did, as the run's summary says it."""
    op = step["operation"]
    if op == "bottom_top_coding":
        return [f"{c}: {sum(step['n_bottom_coded'][c]):,} value(s) bottom-coded, "
                f"{sum(step['n_top_coded'][c]):,} top-coded (all datasets)" for c in step["bounds"]]
    if op.startswith("remove_"):
        return [f"{op.removeprefix('remove_').replace('_', ' ')} removed: "
                + _per(step["n_removed"])]
    if op == "smoothing":
        return [f"smoothed: {', '.join(step['columns'])}"]
    if op == "pram":
        return [f"post-randomized {c} (PRAM, pd {step['pd']:g}, alpha {step['alpha']:g}): "
                f"{_all(n)} value(s) changed" for c, n in step["n_changed"].items()]
    if op == "local_suppression":
        counts = step["n_suppressed"]
        return [f"{step['k']}-anonymity on {', '.join(step['keys'])}: value(s) suppressed "
                + ", ".join(f"{c} {sum(n):,}" for c, n in counts.items())
                + (" (all datasets)" if len(next(iter(counts.values()))) > 1 else "")]
    if op == "microaggregation":
        how = "MDAV" if step["method"] == "mdav" else step["method"]
        return [f"microaggregated {', '.join(step['columns'])} ({how}, groups of "
                f"{step['aggr']} or more): {_all(step['n_groups'])} groups"]
    spread = ("standard deviation" if step["method"] == "additive" else "covariance")
    return [f"noise added to {', '.join(step['columns'])} ({step['method']}: its {spread} "
            f"{step['noise']:g} % of the columns')"]
