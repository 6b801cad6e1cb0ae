"""The audit report: one content model rendered by two Jinja2 templates (HTML, Markdown).

Every number links to its file; the HTML is self-contained (inline CSS, data-URI figures, a
Content-Security-Policy that forbids every fetch).
"""

from __future__ import annotations

import functools
import os
import re
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from bayes_risk.auditing.compare import CARRIED
from bayes_risk.auditing.outcome import where_text
from bayes_risk.auditing.report_blocks import Block, Links, Section, Span, step_section
from bayes_risk.results._format import format_number, format_value
from bayes_risk.warning_codes import message

__all__ = ["write_report", "CSP", "Block", "Section", "Span", "step_section"]

#: the report's Content-Security-Policy: nothing may be fetched; images only from data URIs
CSP = "default-src 'none'; img-src data:; style-src 'unsafe-inline'"

#: each line's status as a sign and a word, so that it reads without colour
LINE_STATUS = {"exceeds": ("✖", "exceeds"), "caution": ("⚠", "within, with a caution"),
               "within": ("✔", "within")}

#: the sign of the report's banner for each :attr:`AuditResult.status`
RELEASE_SIGN = {"do_not_release": "✖", "incomplete": "⚠", "review": "⚠",
                "within_thresholds": "✔"}


def _threshold_sources(result: Any) -> tuple[list[str], dict[str, int]]:
    """The distinct sources of the verdict lines' thresholds, and each threshold's number."""
    from bayes_risk.auditing.thresholds import threshold_records
    from bayes_risk.exceptions import on_command_line

    notes: list[str] = []
    number: dict[str, int] = {}
    records = threshold_records()
    for v in result.verdicts:
        name = v.threshold_name
        if not name or name in number:
            continue
        value, record = result.plan.thresholds[name], records[name]
        # as the caller gave it: --threshold repU=50, or thresholds={'repU': 50} in Python
        given = (f"--threshold {name}={value:g}" if on_command_line()
                 else f"thresholds={{{name!r}: {value:g}}}")
        text = (record.source if value == record.default else
                f"given for this audit ({given}; the default is {record.default:g})")
        if text not in notes:
            notes.append(text)
        number[name] = notes.index(text) + 1
    return notes, number


def _verdicts(result: Any, links: Links) -> list[dict[str, Any]]:
    out = []
    _, number = _threshold_sources(result)
    for v in result.verdicts:
        # a carried line's file is in the earlier audit's folder, not this one's
        val = [Span(format_value(v.value, v.unit, 4),
                    None if v.carried else links.href(v.source), num=True)]
        if v.count_of and v.unit == "%" and np.isfinite(v.value):
            n, noun = v.count_of
            val.append(Span(f" = {format_number(v.value / 100 * n, 4, plain=True)} of "
                            f"{n:,} {noun}", num=True))
        sign, word = LINE_STATUS[v.status]
        if v.carried:  # short: the status column is not wrapped; the note says where from
            word += " (upper bound)"
        out.append({
            "step": v.step, "measure": v.measure, "value": val,
            "threshold": ("≤ " if v.direction == "max" else "≥ ")
            + format_value(v.threshold, v.unit, 4),
            "source": number.get(v.threshold_name),
            "exceeds": v.exceeds, "status": v.status, "sign": sign, "word": word,
            "detail": f"Not measured on this release: {v.carried}. {v.detail}" if v.carried
            else v.detail, "spread": v.spread,
            "cause": v.cause, "remedies": list(v.remedies),
            "warnings": [(c, message(c)) for c in v.warnings],
        })
    return out


def _before_after(result: Any) -> dict[str, Any] | None:
    """The verdict lines of the earlier audit (:attr:`AuditResult.before`) beside this one's."""
    cmp = result.comparison()
    if cmp is None:
        return None

    def value(x: Any, unit: str) -> str:
        return format_value(x, unit, 4, missing="—")

    def status(word: str) -> str:
        bound = word.startswith(CARRIED)
        sign, text = LINE_STATUS.get(word.rsplit(", ", 1)[-1] if bound else word, ("", word))
        return f"{sign} {text}{' (upper bound, carried)' if bound else ''}".strip()

    rows = [{"step": r.step, "measure": r.measure,
             "before": value(r.before, r.unit), "status_before": status(r.status_before),
             "after": value(r.after, r.unit), "status_after": status(r.status_after),
             "change": "—" if r.change is None or pd.isna(r.change) else
             ("+" if r.change > 0 else "") + format_number(r.change, 3, plain=True)
             # the change of a percentage is in percentage points
             + {"": "", "%": " pp"}.get(r.unit, f" {r.unit}"),
             "thresholds_differ": r.threshold_before is not None and r.threshold_after
             is not None and r.threshold_before != r.threshold_after}
            for r in cmp.itertuples()]
    b = result.before
    # why a risk rose after the remedy, beside the figures (computed: auditing.rises)
    causes = [{"step": r.step, "measure": r.measure, "before": value(r.before, r.unit),
               "after": value(r.after, r.unit), "cause": r.cause}
              for r in cmp.itertuples() if r.cause]
    return {"rows": rows, "causes": causes,
            "folder": str(b.get("folder") or "the earlier audit"),
            "headline": str(b.get("headline") or "").rstrip("."),
            "status_sign": RELEASE_SIGN.get(b.get("status"), "")}


def _baseline(b: Any, links: Links) -> dict[str, Any]:
    u = f" {b.unit}" if b.unit else ""
    val = links.num(b.value, b.source)
    val.text += u
    return {"step": b.step, "measure": b.measure, "value": val,
            # a measure of the original alone (sdcMicro's) has no release threshold
            "threshold": "—" if b.threshold is None else format_number(b.threshold) + u,
            "why": b.why, "code": b.code}


def _intruders(result: Any) -> list[tuple[str, str, str]]:
    """Who the intruder of each verdict line is and the worst case over their choices the line
    takes, once per distinct description."""
    from bayes_risk.measures import measures

    lines = [v for v in result.verdicts if v.intruder]
    # a step's lines are named by measure where their intruders differ (by what they know, or
    # the attribute lines' evidence factor): a step's name twice would not say which is which
    described: dict[str, set[tuple[str, str]]] = {}
    for v in lines:
        described.setdefault(v.step, set()).add((v.intruder, v.worst_case))
    by_line = {m.name for m in measures() if m.intruders_by_line}
    by_line |= {step for step, ds in described.items() if len(ds) > 1}
    seen: dict[tuple[str, str], list[str]] = {}
    for v in lines:
        seen.setdefault((v.intruder, v.worst_case), []).append(
            v.measure if v.step in by_line else v.step)
    return [(", ".join(dict.fromkeys(ms)), who, worst) for (who, worst), ms in seen.items()]


def _sending(result: Any, links: Links, bundle: str | None) -> list[Span]:
    """What to send (the report's links point to the files beside it)."""
    if result.root is None:
        return [Span("This report links to no file (the audit wrote none): it can be sent "
                     "alone.")]
    if bundle:
        return [Span("To send this report, send "), Span(bundle, links.href(bundle),
                                                          strong=True),
                Span(" (beside it): this report with every file its numbers link to, in one "
                     "file. This file alone keeps every number and figure, but not its links "
                     "to the files.")]
    return [Span("The numbers link to the files of the audit folder: to send the report, send "
                 "the folder (in Python, result.to_zip(path) writes it as one zip file), not "
                 "this file alone, whose links would break.")]


def _context(result: Any, links: Links, bundle: str | None = None) -> dict[str, Any]:
    plan = result.plan
    from bayes_risk.measures import measures

    # each registered measure's sections, in the order of the steps
    sections = [section(result, links) for m in measures() for section in m.sections]
    steps = [{"title": s.title, "status": s.status, "reason": s.reason,
              "seconds": f"{s.seconds:.1f}", "where": where_text(s),
              "folder": links.href(s.folder),
              "folder_name": s.folder} for s in result.steps]
    settings = plan.settings_frame()
    from bayes_risk._version import __version__

    method = plan.method or "unknown"
    zeros = next((s for s in plan.settings if s.name == "structural zeros"), None)
    if zeros is not None:  # the header says what the release can never hold
        method += f", {zeros.value} (structural zeros; see Settings)"

    word, reason = result.headline_parts()
    labels = plan.variable_labels

    def named(cols: list[str]) -> str:  # a column with its file's variable label beside it
        return ", ".join(f"{c} ({labels[c]})" if labels.get(c) else str(c) for c in cols)

    return {
        "title": "bayes-risk audit",
        "version": __version__,
        "csp": CSP,
        "n": f"{plan.n_records:,}", "m": plan.m, "method": method,
        "synthesized": named(plan.synthesized), "known": named(plan.known),
        "variables": [{"name": c, "label": v,
                       "role": ("synthesized" if c in plan.synthesized else "unsynthesized")
                       + (", known" if c in plan.known else "")}
                      for c, v in labels.items()],
        "verdicts": _verdicts(result, links),
        "before_after": _before_after(result),
        "threshold_sources": _threshold_sources(result)[0],
        "intruders": _intruders(result),
        "complete": result.complete,
        "status": result.status, "status_sign": RELEASE_SIGN[result.status],
        "status_word": word, "headline": reason,
        # the headline is shown on its own, the other sentences after it
        "verdict_sentences": [t for t in result.verdict_sentences() if t != result.headline],
        # each measure's sentences reading its lines with another's (Measure.together)
        "together": [t for m in measures() if m.together is not None
                     for t in m.together(result)],
        "sending": _sending(result, links, bundle),
        "guide_href": GUIDE_FILE,
        "baselines": [_baseline(b, links) for b in result.baselines],
        "steps": steps,
        "sections": [s for s in sections if s.status == "ran"],
        "settings": settings.to_dict(orient="records"),
        "warnings": result.warnings,
        "show_confidential": plan.given.show_confidential_values,
        "summary_href": links.href("summary.json"),
    }


#: CommonMark/GFM inline markup, and an underscore that could open or close emphasis
_MD_MARKUP = re.compile(r"[\\`*\[\]<>&|~#]|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])")
#: a list item, block quote or setext underline marker at the start of a line
_MD_BLOCK_START = re.compile(r"^(\s*\d{1,9})([.)])(?=\s|$)|^(\s*)([-+=](?=[\s=]|$)|>)")


def _md_text(s: Any) -> str:
    """``s`` as literal Markdown text: markup escaped, line breaks as spaces."""
    text = re.sub(r"[\r\n]+", " ", str(s))
    text = _MD_MARKUP.sub(lambda m: "\\" + m.group(0), text)
    return _MD_BLOCK_START.sub(
        lambda m: (m.group(1) + "\\" + m.group(2)) if m.group(1) is not None
        else (m.group(3) + "\\" + m.group(4)), text, count=1)


#: the one-page guide for release boards, written beside the HTML report and linked from its
#: first screen (its text: ``templates/reading_the_report.md``, also a page of the docs)
GUIDE_FILE = "reading_the_report.html"


def guide_html(report: str = "report.html") -> str:
    """The guide for release boards as a page of its own (offline, as the report), linking
    back to ``report``."""
    from importlib.resources import files

    import markdown_it

    source = files("bayes_risk.auditing").joinpath("templates", "reading_the_report.md")
    body = markdown_it.MarkdownIt("commonmark").render(source.read_text(encoding="utf-8"))
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<title>Reading the audit report</title><style>body { font-family: system-ui, "
            "sans-serif; max-width: 46em; margin: 2em auto; padding: 0 1em; line-height: 1.45; "
            "color: #222; } h1 { font-size: 1.5em; } h2 { font-size: 1.15em; margin-top: 1.4em; }"
            " code { background: #f3f3f3; padding: 0 .2em; }</style></head><body>\n"
            f"{body}<p><a href=\"{report}\">Back to the report</a></p>\n</body></html>\n")


@functools.cache
def _templates() -> Any:
    """The report's Jinja2 environment, made once: it keeps the templates compiled (each
    report compiled its template again, 0.04 CPU seconds)."""
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.PackageLoader("bayes_risk.auditing", "templates"),
        autoescape=jinja2.select_autoescape(["html", "html.j2"], default_for_string=False),
        trim_blocks=True, lstrip_blocks=True, undefined=jinja2.StrictUndefined,
    )
    # Markdown: text from the data renders as text, never markup (also as a table cell)
    env.filters["mdtext"] = _md_text
    return env


def write_report(result: Any, path: str | os.PathLike[str], fmt: str = "html",
                 bundle: str | None = None) -> Path:
    """Render the report of ``result`` to ``path`` (``fmt`` "html" or "md"), atomically."""
    from bayes_risk._io import atomic_file

    path = Path(path)
    links = Links(result, path, fmt)
    ctx = _context(result, links, bundle)
    text = _templates().get_template("report.html.j2" if fmt == "html" else "report.md.j2"
                                     ).render(**ctx)
    guide = path.parent / GUIDE_FILE
    if fmt == "html" and not guide.exists():  # linked from the first screen, sent with it
        with atomic_file(guide) as fh:
            fh.write(guide_html(path.name))
    if links.figures:
        fig_dir = path.parent / links.fig_dir
        fig_dir.mkdir(parents=True, exist_ok=True)
        for name, png in links.figures:
            (fig_dir / name).write_bytes(png)
    with atomic_file(path) as fh:
        fh.write(text)
    return path
