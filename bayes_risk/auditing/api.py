"""``bayes_risk.audit()``: every registered measure on one release. See :doc:`/user_guide/audit`."""

from __future__ import annotations

import dataclasses
import logging
import os
import time
import traceback
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any

import pandas as pd

from bayes_risk._io import check_new_folder
from bayes_risk._rng import given_or_fresh
from bayes_risk._specs import as_spec, cli_option
from bayes_risk._terminal import say
from bayes_risk.auditing.outcome import StepOutcome
from bayes_risk.auditing.plan import skip_arg
from bayes_risk.auditing.resolve import audit_inputs, make_plan
from bayes_risk.auditing.result import AuditResult
from bayes_risk.auditing.settings import AuditSettings
from bayes_risk.auditing.thresholds import Thresholds
from bayes_risk.exceptions import (
    ConvergenceWarning,
    SchemaError,
    ValidationError,
    _caused_by_interrupt,
    warning_line,
)
from bayes_risk.measures import measures

#: each step's memory, chunking and expected time (the terminal shows a summary)
_log = logging.getLogger("bayes_risk.audit")

__all__ = ["audit"]


def audit(
    original: pd.DataFrame | str | os.PathLike[str],
    synthetic: Any,
    *,
    known: Annotated[Sequence[str], cli_option(
        "--known", "columns the intruder knows (identification; keys of the empirical measures)",
        nargs="+", required=True, metavar="COL")],
    model: Any = None,
    synthesized: Annotated[Sequence[str] | None, cli_option(
        "--synthesized", "synthesized columns (default: the release manifest's, else the "
        "columns that differ from the original)", nargs="+", metavar="COL")] = None,
    schema: Any = None,
    holdout: pd.DataFrame | None = None,
    settings: AuditSettings | None = None,
    out: str | os.PathLike[str] | None = None,
    random_seed: int | None = None,
    progressbar: bool = True,
    before: Any = None,
) -> AuditResult:
    """Audit a synthetic release: utility, identification, attribute and empirical risk.

    Parameters
    ----------
    original : DataFrame or path
        The confidential table (a CSV, Parquet, SAS, Stata or SPSS path accepted).
    synthetic : SyntheticData, list of DataFrame, path or list of paths
        The release: a ``SyntheticData`` (or its folder) or one table per synthetic dataset.
    known : sequence of str
        Columns the intruder knows for every target; the keys of the empirical measures.
    model : fitted model or path, optional
        The fitted synthesis model (or its ``bayes-risk fit`` folder). Without it, a CART or
        random-forest release uses its rebuilt synthesizer's plug-in likelihood.
    synthesized : sequence of str, optional
        Synthesized columns. Default: the release manifest's, else the columns that differ.
    schema : Schema, optional
        Column types (overrides the release's and inference).
    holdout : DataFrame, optional
        Records of the population not in the original; the membership and attacks steps run
        only with it.
    settings : AuditSettings, optional
        See :class:`~bayes_risk.AuditSettings` (default: its defaults).
    out : path, optional
        New or empty folder for every step's files, written atomically; ``None``: no files.
    random_seed : int, optional
        Seed of every random draw (drawn and recorded when ``None``).
    progressbar : bool
        Show progress on stderr.
    before : AuditResult, dict or path, optional
        An earlier audit of the same original (its result, summary or folder): the report
        shows its verdict lines beside this one's ("Before and after"), and when this release
        is a remedy of another (``bayes_risk.sdc``) says why each risk line that rose rose,
        computed by running the line's step again on the release before the remedy and with
        one remedied column undone at a time (``bayes_risk.auditing.rises``).

    Returns
    -------
    AuditResult
        The plan, one :class:`~bayes_risk.auditing.StepOutcome` per step and the verdict lines.

    Raises
    ------
    ValidationError, SchemaError
        For a bad argument (``settings.executor`` first, before any input is read), before any
        measure is computed, or when a step fails on the input
        (the message names the step). A step failing for another reason is marked
        ``"failed"`` and the audit incomplete.
    """
    from bayes_risk.auditing.context import StepContext
    from bayes_risk.auditing.memory_plan import audit_budget
    from bayes_risk.executors import as_executor

    s = as_spec(settings, AuditSettings, "settings")
    ex = as_executor(s.executor)
    budget = audit_budget()  # read first: what the process holds before the audit's inputs
    data, syn, sch, w = audit_inputs(original, synthetic, schema, s.categorical, s.weights)
    seed_src = "given" if random_seed is not None else "drawn"
    random_seed = given_or_fresh(random_seed)
    plan = make_plan(data, syn, sch, s, known=known, model=model, synthesized=synthesized,
                      thresholds=Thresholds.parse(s.thresholds), random_seed=random_seed,
                      seed_src=seed_src)
    root = Path(out) if out is not None else None
    if root is not None:
        check_new_folder(root)
    earlier = _earlier(before, len(data))
    ctx = StepContext(original=data, synthetic=syn, schema=sch.with_roles(plan.synthesized),
                         plan=plan, model=model, root=None, progressbar=progressbar,
                         holdout=holdout, weights=w, executor=ex, model_function=s.model_function)
    steps = measures()  # the registered measures, in order: one step each
    _record_executor(ctx, steps)
    with budget.applied():
        _preflight(ctx, steps)  # every input every step reads, checked before the first step
        planned = _plan_memory(ctx, budget, steps)
        return _audit_steps(ctx, steps, root, earlier, plan, (planned, budget))


def _audit_steps(ctx: Any, steps: list[Any], root: Path | None, earlier: Any,
                 plan: Any, memory: tuple[list[Any], Any] | None = None) -> AuditResult:
    """Run ``steps`` (into ``root`` when given, atomically) and assemble the result
    (``memory``: the memory plan and budget, checked again before each step)."""

    def run_all() -> list[StepOutcome]:
        from bayes_risk._memory import release_free_memory
        from bayes_risk.auditing.memory_plan import check_steps

        out = []
        for i, m in enumerate(steps, start=1):
            # what the step before freed goes back to the machine, so that the budget's checks
            # see what the process holds (as the plan counts it), not what the allocator kept
            release_free_memory()
            if memory is not None:  # the steps left, beside what the steps done hold now
                left = [sm for sm in memory[0] if sm.step in {s.name for s in steps[i - 1:]}]
                check_steps(left, memory[1], lambda step: skip_arg([step]),
                            done=", ".join(o.name.replace("_", " ") for o in out))
            out.append(_run_step(i, len(steps), m, ctx))
        return out

    def result(outcomes: list[StepOutcome], folder: Path | None) -> AuditResult:
        rises = {}
        if earlier is not None:
            from bayes_risk.auditing.rises import rise_causes

            _say(ctx, "comparing with the earlier audit: why a risk rose")
            rises = rise_causes(dataclasses.replace(ctx, root=None), outcomes, earlier)
        return AuditResult(plan=plan, steps=outcomes, root=folder, before=earlier, rises=rises)

    if root is None:
        return result(run_all(), None)
    from bayes_risk._io import atomic_dir

    with atomic_dir(root) as tmp:  # the folder appears complete or not at all
        ctx.root = tmp
        outcomes = run_all()
        done = result(outcomes, tmp)
        done.write_summary(tmp / "summary.json")
    done.root = root
    return done


def _record_executor(ctx: Any, steps: Sequence[Any]) -> None:
    """State where the steps run (printed, and recorded among the settings): the engines of the
    ``steps`` whose measure names an ``executor`` part on the audit's executor."""
    from bayes_risk.executors import describe

    where = describe(ctx.executor)
    ctx.run.where = where
    source = "default" if where["kind"] == "in process" else "given"
    *most, last = (m.name.replace("_", " ") for m in steps if m.executor)
    names = f"{', '.join(most)} and {last}" if most else last
    note = ("every step" if where["kind"] == "in process" else
            f"the {names} steps' engines (the report's list of steps says what of each); every "
            "other step in process")
    _say(ctx, f"executor: {where['text']}")
    ctx.plan.add("executor", "where the engines run", where["text"], source, note)


def _where(ctx: Any, m: Any) -> dict[str, Any]:
    """Where the step of measure ``m`` ran: the audit's executor when ``m`` names what of its
    step runs there (``Measure.executor``, with that part), else in process."""
    where = ctx.run.where
    if where is None or where["kind"] == "in process" or not m.executor:
        return {"kind": "in process", "text": "in process"}
    return {**where, "part": m.executor}


def _left_out(ctx: Any, steps: Sequence[Any]) -> set[str]:
    """The steps that will not run: skipped as asked, withheld by the plan, or left out by
    their measure (``Measure.applies``)."""
    off = {*ctx.plan.skip, *ctx.plan.withheld}
    return off | {m.name for m in steps
                  if m.name not in off and m.applies is not None and m.applies(ctx) is not None}


def _plan_memory(ctx: Any, budget: Any, steps: Sequence[Any]) -> list[Any]:
    """State the memory plan of the steps that will run (printed, and recorded among the
    settings), refuse before any work a step that cannot fit at its smallest chunk, and return
    the plan (:class:`~bayes_risk.auditing.memory_plan.StepMemory` of each step)."""
    from bayes_risk._memory import format_bytes
    from bayes_risk.auditing.memory_plan import check_steps, least_budget, step_memory, total_time
    from bayes_risk.auditing.memory_plan import resident_memory as held

    p = ctx.plan
    off = _left_out(ctx, steps)
    now = held()
    room = None if budget.limit is None else budget.limit - now
    plans = step_memory(ctx, [m.name for m in steps if m.name not in off], room)
    # the posterior step draws and matches the replicates the plan states at a time
    ctx.run.replicate_chunk = next((sm.chunk for sm in plans if sm.chunk is not None), None)
    size = "no limit" if budget.limit is None else format_bytes(budget.limit)
    # the terminal shows the budget, the steps and the expected time in a few short lines; each
    # step's memory, chunking and time goes to the log (logger "bayes_risk.audit") and to the
    # report's settings
    _log.info("memory budget %s: %s", size, budget.derivation)
    p.add("memory", "budget", size, budget.source, budget.derivation)
    where = ctx.run.where or {}
    if where.get("kind") not in (None, "in process"):
        # the plan below is the driver's: it gathers every partition's outputs, and runs the
        # steps that do not use the executor; the workers size their chunks within their own limit
        limit = where.get("worker_memory_limit")
        each = "no limit set" if not limit else f"{format_bytes(limit)} each"
        why = ("the budget and the plan below are this process's, the driver's, which gathers "
               f"every partition's outputs; the {where.get('n_workers', '?')} workers hold "
               "their partitions within their own memory limit")
        _say(ctx, f"Dask workers: {each} (the budget below is this process's)")
        _log.info("Dask workers: %s; %s", each, why)
        p.add("memory", "Dask workers", each, "cluster", why)
    for sm in plans:
        _log.info("%s", sm.line())
        p.add("memory", sm.step.replace("_", " "), sm.line().split(": ", 1)[1], "planned",
              "the least the step holds beside the process (its smallest chunk)"
              if sm.need is not None else "")
    least, at = least_budget(plans, now)
    need = "" if at is None else f"; the audit needs at least {format_bytes(least, up=True)}"
    default = "; --memory to change it" if budget.source == "default" else ""
    _say(ctx, f"memory budget {size}{need}{default}")
    if at is not None:
        why = (f"the {at.step.replace('_', ' ')} step's need beside what the process holds and "
               "what the steps before it keep")
        _log.info("the audit needs at least %s (%s)", format_bytes(least, up=True), why)
        p.add("memory", "least budget", format_bytes(least, up=True), "planned", why)
    took = total_time(plans)
    steps = [sm.step.replace("_", " ") for sm in plans]
    _say(ctx, f"{len(steps)} step(s) to run ({', '.join(steps)})"
         + (f": {took.split(';')[0]}, compiling kernels (a first run) excluded" if took else "")
         + "; each step's memory and time: the report's settings")
    if took:
        _log.info("the steps: %s", took)
        p.add("memory", "expected time", took, "planned",
              "each step's work measure at the rates measured (user guide, Memory: The expected "
              "time); compiling kernels, on a first run, is not included")
    check_steps(plans, budget, lambda step: skip_arg([step]))
    return plans


def _earlier(before: Any, n_records: int) -> dict[str, Any] | None:
    """The earlier audit's summary (``before=``), of an original of ``n_records`` records."""
    if before is None:
        return None
    from bayes_risk.auditing.compare import audit_summary

    summary = audit_summary(before)
    if summary.get("n_records") != n_records:
        raise ValidationError(
            f"before: the earlier audit is of another original ({summary.get('n_records')} "
            f"records, this one {n_records}); give an audit of the same original.",
            code="ORIGINAL_DIFFERS")
    return summary


def _say(ctx: Any, msg: str) -> None:
    if ctx.progressbar:
        say(f"[audit] {msg}")  # progress goes where the progress bars go


def _run_step(i: int, n: int, m: Any, ctx: Any) -> StepOutcome:
    """Run the step of measure ``m`` (skipped with the reason its ``applies`` gives, if any);
    bad input fails the audit, any other error the step alone."""
    name, title = m.name, m.title
    why = (f"skipped as asked ({skip_arg([name])})." if name in ctx.plan.skip
           else ctx.plan.withheld.get(name))
    if why is not None:
        return StepOutcome(name=name, title=title, status="skipped", reason=why)
    _say(ctx, f"step {i}/{n}: {title.lower()}")
    t0 = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for cat in (DeprecationWarning, PendingDeprecationWarning, FutureWarning,
                    ResourceWarning):
            warnings.simplefilter("ignore", cat)
        try:
            left_out = m.applies(ctx) if m.applies is not None else None
            outcome = (m.step(ctx) if left_out is None else
                       StepOutcome(name=name, status="skipped", reason=left_out))
        except (ValidationError, SchemaError) as err:
            # bad input fails the audit: a verdict without this step would read as complete
            raise type(err)(
                f"{title} step: {' '.join(str(err).split())} (to audit the release without "
                f"this step, give {skip_arg([name])}).",
                code=getattr(err, "code", None),
            ) from err
        except Exception as err:
            if _caused_by_interrupt(err):
                raise
            # a failed step does not hide the others; the audit is marked incomplete
            outcome = StepOutcome(name=name, status="failed",
                                  reason=f"{type(err).__name__}: {' '.join(str(err).split())}",
                                  extra={"traceback": "".join(traceback.format_exception(err))})
    outcome.name, outcome.title = name, title
    outcome.seconds = time.perf_counter() - t0
    outcome.where = _where(ctx, m) if outcome.status != "skipped" else {}
    outcome.warnings = _dedupe(caught)
    named = _with_mcmc_warnings(outcome.warnings, outcome.extra.get("mcmc_warnings") or [])
    if outcome.folder is not None and ctx.root is not None:
        from bayes_risk.auditing.context import add_run_warnings

        add_run_warnings(ctx.root / outcome.folder, name, outcome.warnings)
    for w in caught:  # the caller (or the CLI's run) sees every warning once
        warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    for w in named:  # and the failed checks no warning raised during the step (a saved fit's)
        warnings.warn(ConvergenceWarning(w["message"], code=w["code"]), stacklevel=2)
    if outcome.status != "ran":
        _say(ctx, f"  {outcome.status}: {outcome.reason}")
    return outcome


def _preflight(ctx: Any, steps: Sequence[Any]) -> None:
    """Check every input of the steps that will run (release, model, holdout) before the
    first: each measure's ``preflight``, and its ``applies`` (which may read an input to tell).
    An input several steps read fails each of them alike: the error names every one."""
    from bayes_risk.auditing.context import aligned_columns
    from bayes_risk.data.fingerprint import check_original

    plan = ctx.plan
    _say(ctx, "checking the inputs of every step")
    failed: list[tuple[str, Exception]] = []
    with warnings.catch_warnings():
        # only the errors matter here: the steps raise these warnings again, recorded
        warnings.simplefilter("ignore")
        check_original(ctx.original, ctx.synthetic)
        ctx.run.rows_aligned = bool(aligned_columns(ctx))
        off = {*plan.skip, *plan.withheld}
        for m in steps:
            if m.name in off or (m.applies is None and m.preflight is None):
                continue
            try:
                if (m.applies is None or m.applies(ctx) is None) and m.preflight is not None:
                    m.preflight(ctx)
            except (ValidationError, SchemaError) as err:
                if getattr(err, "code", None) == "OPTION_UNUSED":
                    raise  # an option the step would not use: skipping the step is no cure
                failed.append((m.name, err))
    if failed:
        err = failed[0][1]
        same = [n for n, e in failed if (type(e), str(e)) == (type(err), str(err))]
        raise _needed_by(err, same) from err


def _needed_by(err: Exception, users: list[str]) -> Exception:
    """``err``, naming the step(s) that need the input and how to audit without them."""
    return type(err)(
        f"{' '.join(str(err).split())} (needed by the "
        f"{' and '.join(u.replace('_', ' ') for u in users)} step"
        f"{'s' if len(users) > 1 else ''}; to audit the release without "
        f"{'them' if len(users) > 1 else 'it'}, give {skip_arg(users)}).",
        code=getattr(err, "code", None),
    )


def _with_mcmc_warnings(step_warnings: list[dict[str, Any]],
                        mcmc: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Name each fit's MCMC warning in the step's warnings; return those added."""
    added = []
    for w in mcmc:
        fit, code = str(w.get("fit", "model")), str(w["code"])
        text = " ".join(str(w.get("message", "")).split())
        checks = list(w.get("checks") or [])
        named = {"fit": fit, "checks": checks, "message": f"fit {fit}: {text}"}
        if not checks and any(d["code"] == code for d in step_warnings):
            continue
        for d in step_warnings:
            if d["code"] == code and d["message"] == text and "fit" not in d:
                d.update(named)
                break
        else:
            entry = {"code": code, "category": ConvergenceWarning.__name__, **named, "count": 1}
            step_warnings.append(entry)
            added.append(entry)
    return added


def _dedupe(caught: list[warnings.WarningMessage]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for w in caught:
        code, text = warning_line(w.message, w.category)
        for d in out:
            if d["code"] == code and d["message"] == text:
                d["count"] += 1
                break
        else:
            out.append({"code": code, "category": w.category.__name__, "message": text,
                        "count": 1})
    return out
