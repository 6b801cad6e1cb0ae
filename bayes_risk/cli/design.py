"""``bayes-risk design``: the most useful release of a stated space that passes every line."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

__all__ = ["run"]


def _pairs(items: list[str] | None, option: str) -> dict[str, str]:
    from bayes_risk.exceptions import ValidationError

    out: dict[str, str] = {}
    for it in items or []:
        key, sep, value = it.partition("=")
        if not sep or not key.strip() or not value.strip():
            raise ValidationError(f"{option} {it!r}: expected AXIS=VALUE.",
                                  code="BAD_OPTION_VALUE")
        out[key.strip()] = value.strip()
    return out


def _list(text: str) -> list[Any]:
    from bayes_risk.designing.space import _value

    return [_value(v) for v in text.split(",") if v.strip()]


def space_from_args(args: argparse.Namespace) -> Any:
    """The :class:`~bayes_risk.designing.DesignSpace` of ``--space`` and the options."""
    from bayes_risk.designing import DesignSpace
    from bayes_risk.exceptions import ValidationError

    spec: dict[str, Any] = {}
    if args.space is not None:
        try:
            spec = json.loads(Path(args.space).read_text(encoding="utf-8"))
        except ValueError as err:
            raise ValidationError(f"--space {args.space!r} is not JSON: {err}.",
                                  code="BAD_OPTION_VALUE") from None
        if not isinstance(spec, dict):
            raise ValidationError(f"--space {args.space!r}: expected a JSON object.",
                                  code="BAD_OPTION_VALUE")
    if args.columns is not None:
        spec["columns"] = [[c.strip() for c in s.split(",") if c.strip()] for s in args.columns]
    if args.methods is not None:
        spec["methods"] = args.methods
    if args.m is not None:
        spec["m"] = args.m
    if args.remedies is not None:
        spec["remedies"] = args.remedies
    if args.knob:
        knobs = dict(spec.get("knobs") or {})
        for axis, values in _pairs(args.knob, "--knob").items():
            method, dot, name = axis.partition(".")
            if not dot or not name:
                raise ValidationError(f"--knob {axis!r}: expected METHOD.SETTING=V,V "
                                      "(cart.min_leaf=5,20).", code="BAD_OPTION_VALUE")
            knobs.setdefault(method, {})[name] = _list(values)
        spec["knobs"] = knobs
    if args.fix:
        spec["fix"] = {**(spec.get("fix") or {}), **{
            k: (_list(v) if k == "columns" else v) for k, v in _pairs(args.fix, "--fix").items()}}
    if args.exclude:
        spec["exclude"] = {**(spec.get("exclude") or {}), **{
            k: _list(v) for k, v in _pairs(args.exclude, "--exclude").items()}}
    return DesignSpace.from_dict(spec)


def run(args: argparse.Namespace) -> int:
    """Run the design into ``--out`` and print its answer."""
    import shutil

    from bayes_risk._specs import spec_values
    from bayes_risk._terminal import line
    from bayes_risk.auditing.thresholds import Thresholds
    from bayes_risk.cli._common import print_summary
    from bayes_risk.designing import SearchSpec, design

    thresholds = Thresholds.parse(args.threshold)  # checked before any input is read
    space = space_from_args(args)
    search = SearchSpec(**spec_values(SearchSpec, vars(args)))
    out = Path(args.out)
    if args.overwrite and not args.resume and out.exists() and any(out.iterdir()):
        shutil.rmtree(out)  # --overwrite: the old design goes when the new one starts
    try:
        res = design(args.original, known=args.known, start=args.start, space=space,
                     thresholds=thresholds, categorical=args.categorical,
                     search=search, out=out, resume=args.resume,
                     random_seed=args.random_seed, progressbar=not args.quiet)
    except KeyboardInterrupt:
        if (out / "design.journal").is_file():
            line(f"the finished candidates are kept in {out / 'design.journal'}; run the same "
                 "command with --resume to go on")
        raise
    print_summary([res.headline, *(t for t in res.summary_lines()[1:] if t)], out)
    return 0
