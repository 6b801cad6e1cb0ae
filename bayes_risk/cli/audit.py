"""``bayes-risk audit``: every measure on one release, and one report (HTML and Markdown)."""

from __future__ import annotations

import argparse
from pathlib import Path

__all__ = ["run"]

#: the zip of the audit folder written beside the report, which the report names as the file
#: to send (the report's links are relative: report.html alone keeps its numbers, not its links)
BUNDLE = "report.zip"


def _before(args: argparse.Namespace) -> dict | None:
    """``--before DIR``: the earlier audit's summary, of the same ORIGINAL file."""
    if args.before is None:
        return None
    from bayes_risk._checksums import file_sha256
    from bayes_risk.auditing.compare import load_audit
    from bayes_risk.exceptions import ValidationError

    before = load_audit(args.before)
    recorded = (before.get("input_sha256") or {}).get((before.get("inputs") or {}).get(
        "original"))
    if recorded is not None and recorded != file_sha256(args.original):
        raise ValidationError(f"--before {args.before!r} is the audit of another original (its "
                              "original file's SHA-256 differs from ORIGINAL's); give an audit "
                              "of the same original.", code="ORIGINAL_DIFFERS")
    return before


def run(args: argparse.Namespace) -> int:
    """Run the audit into the output folder and print the verdict lines."""
    from bayes_risk._specs import parse_records, spec_values
    from bayes_risk.auditing import AuditSettings, Thresholds, audit
    from bayes_risk.auditing.verdicts import text_lines
    from bayes_risk.cli._common import (
        print_summary,
        read_holdout,
        read_inputs,
        release_schema,
    )
    from bayes_risk.cli._run import output_dir
    from bayes_risk.cli._runner import cluster

    # the thresholds and settings first: a bad one is refused before any input is read
    thresholds = Thresholds.parse(args.threshold)
    settings = AuditSettings(**{**spec_values(AuditSettings, vars(args)),  # --records: below
                                "thresholds": thresholds, "attribute_records": None},
                             allow_other_model=args.allow_other_model,
                             model_function=args.model_function)
    before = _before(args)
    original, syn = read_inputs(args)
    schema = release_schema(original, syn, args)
    settings = settings.replace(attribute_records=parse_records(args.records, len(original)))
    kw = dict(
        known=args.known, model=args.model, synthesized=args.synthesized, schema=schema,
        random_seed=args.random_seed,
        progressbar=not args.quiet,
        holdout=read_holdout(args), before=before,
    )
    done: list = []
    # the zip of the whole folder, made once summary.json is complete: the one file to send
    with cluster(args) as executor, output_dir(
            args, finalize=lambda folder: done[0].to_zip(folder / BUNDLE)) as tmp:
        res = audit(original, syn, out=tmp, settings=settings.replace(executor=executor), **kw)
        done.append(res)
        res.to_html(tmp / "report.html", bundle=BUNDLE)
        res.to_markdown(tmp / "report.md", bundle=BUNDLE)
    lines = text_lines(res)
    lines.append(f"report: {Path(args.out) / 'report.html'} (and report.md; to send it, send "
                 f"{Path(args.out) / BUNDLE}: the report with every file it links to)")
    print_summary(lines, args.out)
    # a step that failed (not on the input: that is an error, exit 2) leaves the audit
    # incomplete: the report is written, and the exit status says so
    return 0 if res.complete else 1
