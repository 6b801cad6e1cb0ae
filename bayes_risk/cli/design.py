"""``bayes-risk design``: the most useful release of a stated space that passes every line."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

__all__ = ["run"]


def space_from_args(args: argparse.Namespace) -> Any:
    """The :class:`~bayes_risk.designing.DesignSpace` of ``--space`` and the options: a field
    given by an option replaces the file's, and the mappings ``knobs`` (each method's),
    ``fix`` and ``exclude`` take the options' keys over the file's."""
    from bayes_risk._specs import spec_values
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
    given = spec_values(DesignSpace, vars(args))
    if "knobs" in given:
        file_knobs = dict(spec.get("knobs") or {})
        given["knobs"] = {**file_knobs, **{method: {**(file_knobs.get(method) or {}), **ks}
                                           for method, ks in given["knobs"].items()}}
    for name in ("fix", "exclude"):
        if name in given:
            given[name] = {**(spec.get(name) or {}), **given[name]}
    return DesignSpace.from_dict({**spec, **given})


def run(args: argparse.Namespace) -> int:
    """Run the design into ``--out`` and print its answer."""
    import shutil

    from bayes_risk._specs import spec_values
    from bayes_risk._terminal import line
    from bayes_risk.attribute.specs import EstimatorSpec
    from bayes_risk.auditing.settings import AuditSettings
    from bayes_risk.auditing.thresholds import Thresholds
    from bayes_risk.cli._common import print_summary
    from bayes_risk.designing import SearchSpec, design

    thresholds = Thresholds.parse(args.threshold)  # checked before any input is read
    space = space_from_args(args)
    search = SearchSpec(**spec_values(SearchSpec, vars(args)))
    estimator = spec_values(EstimatorSpec, vars(args))  # --plugin-replicates
    settings = AuditSettings(thresholds=thresholds, **(
        {"attribute_estimator": EstimatorSpec(**estimator)} if estimator else {}))
    out = Path(args.out)
    if args.overwrite and not args.resume and out.exists() and any(out.iterdir()):
        shutil.rmtree(out)  # --overwrite: the old design goes when the new one starts
    try:
        res = design(args.original, known=args.known, start=args.start, space=space,
                     categorical=args.categorical,
                     search=search, settings=settings, out=out, resume=args.resume,
                     random_seed=args.random_seed, progressbar=not args.quiet)
    except KeyboardInterrupt:
        if (out / "design.journal").is_file():
            line(f"the finished candidates are kept in {out / 'design.journal'}; run the same "
                 "command with --resume to go on")
        raise
    print_summary([res.headline, *(t for t in res.summary_lines()[1:] if t)], out)
    return 0
