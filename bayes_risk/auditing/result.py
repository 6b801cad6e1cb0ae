"""Result of :func:`bayes_risk.audit`: the plan, one outcome per step, the verdict lines."""

from __future__ import annotations

import os
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import pandas as pd

from bayes_risk.auditing.outcome import StepOutcome, where_text
from bayes_risk.auditing.plan import AuditPlan
from bayes_risk.auditing.verdict_base import short_name
from bayes_risk.auditing.verdicts import (
    Baseline,
    Verdict,
    verdict_lines,
    verdict_steps,
)
from bayes_risk.measures import measures
from bayes_risk.results._base import RiskResult, draws
from bayes_risk.results._summary import ResultWarning, Summary

# importable from here, as before
__all__ = ["AuditResult", "Baseline", "StepOutcome", "Verdict"]


def _fit_order(fit: Any) -> tuple[int, int]:
    """The saved model first, then the augmented fits in order (``augmented_<l>``)."""
    name = str(fit)
    if name == "model":
        return (0, 0)
    tail = name.removeprefix("augmented_")
    return (1, int(tail)) if tail.isdigit() else (2, 0)


def _frame(items: Any, columns: list[str]) -> pd.DataFrame:
    """One row per item: its attributes ``columns`` (tuples as lists)."""
    return pd.DataFrame([{c: list(x) if isinstance(x, tuple) else x
                          for c in columns for x in [getattr(i, c)]} for i in items],
                        columns=columns)


@dataclass(repr=False)
class AuditResult(RiskResult):
    """What :func:`bayes_risk.auditing.audit` returns: a result of the family
    (:doc:`/user_guide/results`) whose ``to_html(path)`` and ``to_markdown(path)`` write the report.

    Attributes
    ----------
    plan : AuditPlan
        Every setting, with where it came from.
    steps : list of StepOutcome
        One per step, in order.
    root : Path or None
        The audit folder (``out``) holding the steps' files, or ``None``.
    before : dict or None
        The summary of an earlier audit of the same original
        (:func:`~bayes_risk.auditing.compare.load_audit`), shown side by side
        (:meth:`comparison`).
    rises : dict
        ``(step, measure) ->`` why that risk line rose against ``before``, computed on the
        release before the remedy (``bayes_risk.auditing.rises``); the ``cause`` column of
        :meth:`comparison`.
    """

    plan: AuditPlan
    steps: list[StepOutcome]
    root: Path | None = None
    before: dict[str, Any] | None = None
    rises: dict[tuple[str, str], str] = field(default_factory=dict)

    def step(self, name: str) -> StepOutcome:
        """The outcome of step ``name`` (``"utility"``, ``"identification"``, …)."""
        for s in self.steps:
            if s.name == name:
                return s
        raise KeyError(name)

    @property
    def verdicts(self) -> list[Verdict]:
        """The verdict lines (the release-independent figures are :attr:`baselines`): those
        measured on this release, then those carried from the release before the remedy as
        upper bounds (:attr:`carried`)."""
        return [*self.measured, *self.carried]

    @property
    def measured(self) -> list[Verdict]:
        """The verdict lines measured on this release."""
        return [v for v in self._lines() if isinstance(v, Verdict)]

    @property
    def carried(self) -> list[Verdict]:
        """The lines of the earlier audit (``before``) of the release before the remedy, for
        the steps this audit withholds whose lines there bound this release's from above
        (``plan.bounded_before``: an intruder who sees a function of the release learns no
        more, on average); each line's ``carried`` says so."""
        if self.before is None or not self.plan.bounded_before:
            return []
        import dataclasses

        names = {f.name for f in dataclasses.fields(Verdict)} - {"carried"}
        where = self.before.get("folder") or "the earlier audit"
        out = []
        for row in self.before.get("verdicts") or []:
            step = row.get("step")
            why = self.plan.bounded_before.get(step)
            if why is None or self.step(step).status == "ran":
                continue
            kw = {k: tuple(v) if isinstance(v, list) else v for k, v in row.items()
                  if k in names}
            out.append(Verdict(**{**kw, "source": f"{where}/{kw.get('source') or ''}",
                                  "carried": f"release before the remedy, an upper bound "
                                  f"(measured by the audit in {where}; {why})"}))
        return out

    @property
    def baselines(self) -> list[Baseline]:
        """Headline figures that cannot depend on the release (``RELEASE_INDEPENDENT``)."""
        return [v for v in self._lines() if isinstance(v, Baseline)]

    @property
    def complete(self) -> bool:
        """Whether every step ran or was skipped for a stated reason (none failed)."""
        return not self.failed_steps

    @property
    def failed_steps(self) -> list[StepOutcome]:
        """The steps whose measure raised an error (the audit is incomplete)."""
        return [s for s in self.steps if s.status == "failed"]

    @property
    def not_assessed(self) -> list[str]:
        """What has no verdict line, and why (a step whose lines are carried from the release
        before the remedy has them)."""
        with_lines = verdict_steps()
        carried = {v.step for v in self.carried}
        out = [f"{s.title.lower()} ({s.status})" for s in self.steps
               if s.status != "ran" and s.name in with_lines and s.name not in carried]
        by_name: dict[str, StepOutcome] = {}
        for s in self.steps:
            by_name.setdefault(s.name, s)
        for m in measures():  # what a step that ran leaves unassessed (Measure.not_assessed)
            s = by_name.get(m.name)
            if m.not_assessed is not None and s is not None and s.status == "ran":
                out += m.not_assessed(self.plan, s)
        return out

    @property
    def status(self) -> str:
        """The overall status of the release against the thresholds:

        * ``"do_not_release"``: some verdict line is on the wrong side of its threshold;
        * ``"incomplete"``: none is, but a step failed;
        * ``"review"``: none is, but a line has a caution, or no line could be computed;
        * ``"within_thresholds"``: every line is within its threshold, with no caution.
        """
        v = self.verdicts
        if any(x.exceeds for x in self.measured):
            return "do_not_release"
        # an upper bound past its threshold shows nothing of this release: no verdict
        if self.failed_steps or self.unmeasured_since_before(exceeded=True) or any(
                x.exceeds for x in self.carried):
            return "incomplete"
        if not v or any(x.status == "caution" for x in v):
            return "review"
        return "within_thresholds"

    @property
    def headline(self) -> str:
        """The verdict in one sentence: the :attr:`status` and what decides it."""
        return ": ".join(self.headline_parts())

    def headline_parts(self) -> tuple[str, str]:
        """:attr:`headline` in two parts: the status in words and what decides it."""
        from bayes_risk.results._format import format_value

        v = self.verdicts
        status = self.status

        if status == "do_not_release":
            v = self.measured
            bad = [x for x in v if x.exceeds]
            return ("Do not release as it stands",
                    f"{len(bad)} of {len(v)} measures "
                    f"{'exceeds its threshold' if len(v) == 1 else 'exceed their thresholds'}"
                    " — " + "; ".join(f"{x.short} {format_value(x.value, x.unit)} (threshold "
                                      f"{'≥ ' if x.direction == 'min' else ''}"
                                      f"{format_value(x.threshold, x.unit)})" for x in bad) + ".")
        if status == "incomplete":
            bounds = [x for x in self.carried if x.exceeds]
            if not self.failed_steps and bounds:  # upper bounds past their thresholds
                m = len(self.measured)
                return ("No release verdict", f"none of the {m} measures measured exceeds its "
                        f"threshold, but {len(bounds)} carried from the release before the "
                        f"remedy as upper bounds {'exceeds' if len(bounds) == 1 else 'exceed'} "
                        f"{'its' if len(bounds) == 1 else 'their'} threshold ("
                        + "; ".join(f"{x.short} {format_value(x.value, x.unit)}, threshold "
                                    f"{format_value(x.threshold, x.unit)}" for x in bounds)
                        + "): a bound past its threshold does not show this release within it; "
                        "measure those lines on the remedied release or remedy further.")
            if not self.failed_steps:  # lines that exceeded before were not measured again
                gone = self.unmeasured_since_before(exceeded=True)
                return ("No release verdict", f"none of the {len(v)} measures assessed exceeds "
                        f"its threshold, but {len(gone)} that exceeded "
                        f"{'its' if len(gone) == 1 else 'their'} threshold in the earlier audit "
                        f"{'was' if len(gone) == 1 else 'were'} not measured again ("
                        + "; ".join(f"{r['short']}: {r['why']}" for r in gone) + ").")
            return ("No release verdict", f"the audit is incomplete; none of the {len(v)} "
                    "measures assessed exceeds its threshold.")
        if status == "review":
            if not v:
                return ("Review", "no verdict line could be computed (no measure is "
                        "assessed).")
            odd = [x for x in v if x.status == "caution"]
            why = "; ".join(
                f"{x.short}: " + ", ".join(
                    [*x.warnings, *([f"{x.flagged:,} flagged record(s) left out, "
                                     "unassessed"] if x.flagged else [])])
                for x in odd)
            return ("Review before release",
                    f"none of the {len(v)} measures exceeds its threshold, but {len(odd)} "
                    f"{'line needs' if len(odd) == 1 else 'lines need'} a second look — "
                    f"{why}.")
        return ("Within every threshold", f"all {len(v)} measures are within their "
                "thresholds (the board decides; see what was not assessed).")

    @property
    def verdict_text(self) -> str:
        """The verdict in words: :attr:`headline`, then what qualifies it."""
        return " ".join(self.verdict_sentences())

    def verdict_sentences(self) -> list[str]:
        """The sentences of :attr:`verdict_text`."""
        parts = []
        failed = self.failed_steps
        if failed:
            names = ", ".join(f"{s.title.lower()} ({s.reason})" for s in failed)
            parts.append(
                f"The audit is incomplete: {len(failed)} step{'s' if len(failed) > 1 else ''} "
                f"failed: {names}; {'its' if len(failed) == 1 else 'their'} measures are not "
                "assessed and this verdict does not cover them.")
        v = self.verdicts
        parts.append(self.headline)
        like = self.before_after_sentence()
        if like:
            parts.append(like)
        nc = sum(bool(x.warnings) for x in v)
        if nc:
            parts.append(f"{nc} {'carries a warning' if nc == 1 else 'carry a warning'} of "
                         f"{'its' if nc == 1 else 'their'} measure that questions the value "
                         f"(named on the line): read {'it' if nc == 1 else 'them'} with the "
                         "warning, not as a pass or a fail alone.")
        held = [x for x in v if x.flagged and not x.exceeds]
        if held:
            parts.append("Records with unreliable estimates were left out of "
                         + "; ".join(f"{x.short} ({x.flagged:,} flagged)" for x in held)
                         + ": they are unassessed, to be treated as at risk (named on the "
                         "line).")
        na = self.not_assessed
        if na:
            parts.append(f"Not assessed (no verdict line): {', '.join(na)}.")
        nb = len(self.baselines)
        if nb:
            parts.append(f"{nb} figure{'s' if nb > 1 else ''} cannot depend on the release "
                         "(RELEASE_INDEPENDENT) and "
                         f"{'is' if nb == 1 else 'are'} reported as a baseline of the original, "
                         "not as a verdict.")
        return parts

    @property
    def warnings(self) -> list[dict[str, Any]]:
        """Every warning of every step: ``step``, ``code``, ``message``, ``count``."""
        return [{"step": s.name, **w} for s in self.steps for w in s.warnings]

    @property
    def convergence_checks(self) -> list[dict[str, Any]]:
        """The failed MCMC convergence checks of the fits the steps used, one dict each."""
        out = [{"step": s.name, **c} for s in self.steps for w in s.warnings
               for c in w.get("checks") or []]
        return sorted(out, key=lambda c: _fit_order(c.get("fit")))

    def verdict_frame(self) -> pd.DataFrame:
        """The verdict lines as a table."""
        return _frame(self.verdicts, [
            "step", "measure", "value", "threshold", "direction", "exceeds", "status", "unit",
            "threshold_name", "spread", "intruder", "worst_case", "source", "detail", "warnings",
            "flagged", "cause", "remedies", "carried"])

    def baseline_frame(self) -> pd.DataFrame:
        """The figures that cannot depend on the release (baselines of the original)."""
        return _frame(self.baselines, ["step", "measure", "value", "threshold", "unit",
                                       "source", "why", "code"])

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready summary: verdicts, steps, settings and failed convergence checks."""
        from bayes_risk._io import to_jsonable

        out = to_jsonable({
            "command": "audit",
            "n_records": self.plan.n_records,
            "m": self.plan.m,
            "complete": self.complete,
            "failed_steps": [s.name for s in self.failed_steps],
            "status": self.status,
            "headline": self.headline,
            "verdict_text": self.verdict_text,
            "verdicts": self.verdict_frame().to_dict(orient="records"),
            "baseline": self.baseline_frame().to_dict(orient="records"),
            "steps": [
                {"name": s.name, "status": s.status, "reason": s.reason, "folder": s.folder,
                 "files": s.files, "seconds": s.seconds, "where": s.where,
                 "warnings": s.warnings,
                 **({"traceback": s.extra["traceback"]} if "traceback" in s.extra else {})}
                for s in self.steps
            ],
            "settings": self.plan.settings_frame().to_dict(orient="records"),
            "thresholds": self.plan.thresholds.to_dict(),
            "step_warnings": self.warnings,
            "failed_convergence_checks": self.convergence_checks,
            "warnings": list(dict.fromkeys(w["code"] for w in self.warnings)),
        })
        if self.plan.variable_labels:  # the original file's (SAS, Stata, SPSS)
            out["variable_labels"] = dict(self.plan.variable_labels)
        if self.before is not None:
            out["before_after"] = to_jsonable({
                "before": {k: self.before.get(k) for k in ("folder", "status", "headline")},
                "lines": self.comparison(out).to_dict(orient="records")})
        return out

    def unmeasured_since_before(self, *, exceeded: bool = False) -> list[dict[str, Any]]:
        """The verdict lines of the earlier audit (``before``) that this audit has not
        measured (``exceeded``: only those past their threshold then), each with ``step``,
        ``measure``, ``short``, ``before`` (value and unit) and ``why`` (the step's reason)."""
        cmp = self.comparison()
        if cmp is None:
            return []
        from bayes_risk.results._format import format_value

        gone = cmp[(cmp["status_before"] != "not assessed") & (cmp["status_after"] ==
                                                               "not assessed")]
        if exceeded:
            gone = gone[gone["status_before"] == "exceeds"]
        out = []
        for r in gone.itertuples():
            step = next((x for x in self.steps if x.name == r.step), None)
            why = (step.reason if step is not None and step.reason else
                   "its step did not run" if step is None or step.status != "ran" else
                   "its line was not produced")
            value = format_value(r.before, r.unit, missing="—")
            out.append({"step": r.step, "measure": r.measure,
                        "short": short_name(r.measure), "before": value,
                        "why": why.rstrip(".")})
        return out

    def before_after_sentence(self) -> str:
        """The like-for-like count of the verdict lines against the earlier audit: how many
        exceeded before, how many measured now exceed, and the lines measured before that were
        not measured again (never a smaller denominator in silence); ``""`` without one."""
        cmp = self.comparison()
        if cmp is None:
            return ""
        from bayes_risk.auditing.compare import CARRIED

        measured_before = cmp[cmp["status_before"] != "not assessed"]
        carried = cmp[cmp["status_after"].str.startswith(CARRIED)]
        measured_now = cmp[(cmp["status_after"] != "not assessed")
                           & ~cmp["status_after"].str.startswith(CARRIED)]
        nb, eb = len(measured_before), int((measured_before["status_before"] == "exceeds").sum())
        na, ea = len(measured_now), int((measured_now["status_after"] == "exceeds").sum())
        gone = self.unmeasured_since_before()
        text = (f"Against the earlier audit: {eb} of {nb} measures exceeded their thresholds "
                f"before; {ea} of {na} measured now exceed")
        if len(carried):
            past = int(carried["status_after"].str.endswith("exceeds").sum())
            k = len(carried)
            text += (f"; {k} {'is' if k == 1 else 'are'} not measured again but carried from the "
                     "release before the remedy as upper bounds (an intruder who sees the "
                     f"remedied release learns no more, on average), {past} of them past "
                     f"{'its' if k == 1 else 'their'} threshold")
        if not gone:
            return text + (", every other line of the earlier audit measured again." if len(
                carried) else ", every line of the earlier audit measured again.")
        by_step: dict[str, list[dict[str, Any]]] = {}
        for r in gone:  # one reason per step
            by_step.setdefault(r["step"], []).append(r)
        names = "; ".join(" and ".join(f"{r['short']} ({r['before']} before)" for r in rows)
                          + f": {rows[0]['why']}" for rows in by_step.values())
        return (text + f", and {len(gone)} measured before {'was' if len(gone) == 1 else 'were'}"
                f" not measured again ({names}). The comparison is incomplete: those lines are "
                "not assessed, not passed.")

    def comparison(self, summary: dict[str, Any] | None = None) -> pd.DataFrame | None:
        """This audit's verdict lines beside those of ``before`` (``compare_audits``'s columns
        and ``cause``: why a risk line rose, ``rises``), or ``None`` without one."""
        if self.before is None:
            return None
        from bayes_risk.auditing.compare import compare_audits

        if summary is None:  # the lines alone (to_dict's verdict text reads this comparison)
            summary = {"n_records": self.plan.n_records,
                       "verdicts": self.verdict_frame().to_dict(orient="records")}
        out = compare_audits(self.before, summary)
        # why a risk line rose after a remedy, computed (empty: it did not rise)
        out["cause"] = [self.rises.get((s, m), "") for s, m in zip(out["step"], out["measure"],
                                                                      strict=True)]
        return out

    def write_summary(self, path: str | os.PathLike[str]) -> Path:
        """Write ``to_dict()`` as JSON."""
        from bayes_risk._io import write_json

        write_json(path, self.to_dict())
        return Path(path)

    def _kept(self, name: str, state: tuple, make) -> Any:
        """``make()``, kept on the result under ``name`` while every object of ``state`` is the
        one it was made from (compared by identity: a step replaced or changed in place, a new
        plan or threshold set makes it again)."""
        cached = self.__dict__.get(name)
        if cached is None or len(cached[0]) != len(state) or any(
                a is not b for a, b in zip(cached[0], state, strict=True)):
            cached = (state, make())
            self.__dict__[name] = cached  # not a field: not compared, not in repr
        return cached[1]

    def _steps_state(self) -> tuple:
        return (self.plan, self.steps, *(x for s in self.steps
                                         for x in (s, s.name, s.status, s.result, s.extra)))

    def _lines(self) -> list[Verdict | Baseline]:
        """The verdict lines and baselines of :func:`verdict_lines`, computed once: the report,
        the printed verdict and ``summary.json`` read them about a hundred times (a tenth of a
        small audit's CPU time when each read computed them again)."""
        state = (*self._steps_state(), *(getattr(self.plan, f.name) for f in fields(self.plan)),
                 *(x for s in self.steps for x in (s.reason, s.warnings)), *measures())
        return self._kept("_verdict_lines", state, lambda: verdict_lines(self.plan, self.steps))

    def _report_figures(self) -> dict[tuple[str, int], bytes]:
        """The report's figures as PNG bytes, reused while no step's objects changed."""
        return self._kept("_figures", self._steps_state(), dict)

    def to_html(self, path: str | os.PathLike[str], *, bundle: str | None = None) -> Path:
        """Write the self-contained HTML report; its numbers link to the step files.

        Parameters
        ----------
        path : path-like
            The report's file.
        bundle : str, optional
            The name of the zip of the audit folder beside the report (:meth:`to_zip`), named as
            the file to send.
        """
        from bayes_risk.auditing.render import write_report

        return write_report(self, path, fmt="html", bundle=bundle)

    def to_markdown(self, path: str | os.PathLike[str], *, bundle: str | None = None) -> Path:
        """Write the report as Markdown, plots in ``<stem>_figures/`` (``bundle``: see to_html)."""
        from bayes_risk.auditing.render import write_report

        return write_report(self, path, fmt="md", bundle=bundle)

    def to_zip(self, path: str | os.PathLike[str]) -> Path:
        """Write the audit folder as one zip file, atomically, in a folder named after the zip.

        Raises
        ------
        ValidationError
            ``RESULT_UNSUITED`` when the audit wrote no files (``out=`` not given).
        """
        import zipfile

        from bayes_risk._io import atomic_file
        from bayes_risk.exceptions import ValidationError

        if self.root is None:
            raise ValidationError(
                "to_zip needs the audit's files: run audit(..., out=DIR) (bayes-risk audit "
                "--out DIR writes report.zip itself).", code="RESULT_UNSUITED")
        path, root = Path(path), Path(self.root)
        files = sorted(p for p in root.rglob("*") if p.is_file()
                       and p.resolve() != path.resolve()
                       and not any(part.startswith(".") for part in p.relative_to(root).parts))
        with atomic_file(path, "wb") as fh, zipfile.ZipFile(
                fh, "w", compression=zipfile.ZIP_DEFLATED) as z:
            for f in files:
                z.write(f, f"{path.stem}/{f.relative_to(root).as_posix()}")
        return path

    # ----- the result family's interface (summary, table, plot, warnings) -------------------
    plot_kinds = ("verdict",)

    def summary(self) -> Summary:
        """Printable summary: the verdict, its lines, the baselines and every step."""
        p = self.plan
        header = [("status", self.status.replace("_", " ")),
                  ("records", p.n_records), ("synthetic datasets (m)", p.m),
                  ("synthesis method", p.method or "unknown"),
                  ("synthesized columns", ", ".join(p.synthesized)),
                  ("intruder knows (identification)", ", ".join(p.known)),
                  ("complete", "yes" if self.complete else
                   "no: " + ", ".join(s.name for s in self.failed_steps) + " failed")]
        verdict = self.verdict_frame()
        tables: dict[str, pd.DataFrame] = {}
        if len(verdict):
            v = verdict[["step", "measure", "value", "unit", "threshold", "direction",
                         "exceeds", "status", "spread"]].copy()
            v["direction"] = v["direction"].map({"max": "at most", "min": "at least"})
            v["questioned by"] = [", ".join(w) for w in verdict["warnings"]]
            tables["Verdict lines (value against the release board's threshold)"] = v
            c = verdict.loc[verdict["cause"] != "", ["measure", "cause", "remedies"]].copy()
            if len(c):
                c["remedies"] = ["; ".join(r) for r in c["remedies"]]
                tables["Cause and remedies of each line past its threshold"] = c
        base = self.baseline_frame()
        if len(base):
            tables["Baseline of the original (cannot depend on the release)"] = base[
                ["step", "measure", "value", "threshold", "why"]]
        tables["Steps"] = pd.DataFrame(
            [{"step": s.name, "status": s.status, "reason": s.reason or "",
              "seconds": round(s.seconds, 1), "where": where_text(s)} for s in self.steps])
        notes = [self.verdict_text]
        if self.root is not None:
            notes.append(f"Files of every step: {self.root}")
        return Summary("Audit of a synthetic release", header=header, tables=tables,
                       notes=notes, warnings=self.structured_warnings)

    def to_dataframe(self) -> pd.DataFrame:
        """The verdict lines (:meth:`verdict_frame`)."""
        return self.verdict_frame()

    @property
    def structured_warnings(self) -> list[ResultWarning]:
        """The warnings of every step, each once per step, with the step as ``where``."""
        seen: dict[tuple[str, str], ResultWarning] = {}
        for w in self.warnings:
            key = (w["step"], str(w.get("code")))
            if key not in seen:
                msg = str(w.get("message", ""))
                code = str(w.get("code"))
                if msg.startswith(f"{code}: "):
                    msg = msg[len(code) + 2:]
                seen[key] = ResultWarning(code, msg, f"{w['step']} step")
        return list(seen.values())

    def _figsize(self, kind: str) -> tuple[float, float]:
        return (8.0, 1.2 + 0.5 * max(len(self.verdicts), 1))

    @draws("verdict")
    def _plot_verdict(self, ax: Any) -> Any:
        from bayes_risk.auditing.plots import verdict_figure

        verdict_figure(self.verdicts, ax)
        return ax

    def _layout(self, fig: Any) -> None:
        """``verdict_figure`` lays out its figure itself (room for the wrapped labels)."""

    def brief(self) -> Summary:
        """What a printed audit shows (``print(audit)``, a notebook): the verdict and its lines
        in 100 columns, and where the rest is — :meth:`summary` holds every table, and the
        report all of it (issue 66: the whole summary printed lines of up to 1,020 characters).
        """
        from bayes_risk.results._format import format_value

        p = self.plan
        status, why = self.headline_parts()
        header = [("records", p.n_records), ("synthetic datasets (m)", p.m),
                  ("synthesized columns", ", ".join(p.synthesized) or "none"),
                  ("intruder knows (identification)", ", ".join(p.known) or "nothing")]
        if not self.complete:
            header.append(("failed steps", ", ".join(s.name for s in self.failed_steps)))

        rows = [{"": {"exceeds": "✖", "caution": "!", "within": "✓"}[v.status],
                 "line": f"{v.step}: {v.short}" + (f" (keys {v.measure.split(', keys ')[1]})"
                                                    if ", keys " in v.measure else ""),
                 "value": format_value(v.value, v.unit),
                 "threshold": ("≤ " if v.direction == "max" else "≥ ")
                 + format_value(v.threshold, v.unit),
                 "questioned by": ", ".join(v.warnings)} for v in self.verdicts]
        tables = {}
        if rows:
            t = pd.DataFrame(rows)
            if not t["questioned by"].any():
                t = t.drop(columns="questioned by")
            tables["Verdict lines (✖ past the threshold, ! to read with a warning, ✓ within)"] = t
        notes = [f"{status}: {why}"]
        rest = self.verdict_sentences()[1 + bool(self.failed_steps):]
        if self.failed_steps:
            notes.insert(0, self.verdict_sentences()[0])
        notes += rest
        where = ["audit.verdict_frame() (each line's spread, intruder, cause and remedies)"]
        if self.baselines:
            where.append("audit.baseline_frame() (figures of the original)")
        where += ["audit.summary() (every table)",
                  "audit.step(NAME).result (a step's result: "
                  + ", ".join(s.name for s in self.steps if s.status == "ran") + ")",
                  "audit.to_html(PATH) (the report)"]
        notes.append("In full: " + "; ".join(where) + ".")
        title = "Audit of a synthetic release" + ("" if self.complete else " (INCOMPLETE)")
        return Summary(f"{title}: {status}", header=header,
                       tables=tables, notes=notes,
                       warnings=[w for w in self.structured_warnings])

    def __str__(self) -> str:
        return self.brief().as_text()

    __repr__ = __str__

    def _repr_html_(self) -> str:
        return self.brief().as_html()
