"""``bayes_risk.design()``: the most useful release of a stated space that passes every verdict
line of the audit, the frontier around it and a fresh-seed re-audit of the one chosen.
See :doc:`/user_guide/design`."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any

import numpy as np
import pandas as pd

from bayes_risk._constraints import InstanceOf, Requires, check_relations, check_value
from bayes_risk._memory import peak_memory
from bayes_risk._rng import given_or_fresh
from bayes_risk._search_spec import OBJECTIVES, SearchSpec
from bayes_risk._specs import cli_option
from bayes_risk._terminal import say
from bayes_risk.designing.evaluate import (
    Evaluator,
    candidate_record,
    describe,
    fresh_reaudit,
    refused_line,
)
from bayes_risk.designing.plan import plan_lines, start_facts
from bayes_risk.designing.space import (
    DesignSpace,
    columns_to_cover,
    fit_key,
    grown_columns,
    objective_value,
    remedies_named,
)
from bayes_risk.designing.study import (
    constraints,
    journal_seed,
    journal_storage,
    resumed_records,
    suggest,
    threshold_names,
    tpe_sampler,
    trial_params,
)
from bayes_risk.exceptions import SchemaError, ValidationError

__all__ = ["design"]


class _BudgetSpent(BaseException):
    """The search's CPU budget ran out inside a candidate (a BaseException, as an interrupt
    is, so that no step's ``except Exception`` records it as the step's failure)."""


@contextlib.contextmanager
def _cpu_deadline(seconds: float | None) -> Iterator[bool]:
    """Raise :class:`_BudgetSpent` in the block once the process has spent ``seconds`` more
    CPU time (``ITIMER_PROF``: every thread's user and system time, as ``process_time``).
    Yields whether the deadline is armed: not without a budget, on a platform without
    ``setitimer`` (Windows) or off the main thread, where only whole candidates are held to
    the budget."""
    if seconds is None or not hasattr(signal, "setitimer") \
            or threading.current_thread() is not threading.main_thread():
        yield False
        return

    def spent(signum: int, frame: Any) -> None:
        raise _BudgetSpent

    old = signal.signal(signal.SIGPROF, spent)
    signal.setitimer(signal.ITIMER_PROF, max(seconds, 1e-3))
    try:
        yield True
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGPROF, old)


#: :func:`design`'s arguments against each other
_RELATIONS = (Requires("resume", "out", code="OPTION_REQUIRED",
                       why="the folder of the design to go on with"),)


def design(
    original: pd.DataFrame | str | os.PathLike[str],
    *,
    known: Annotated[Sequence[str], cli_option(
        "--known", "columns the intruder knows (as bayes-risk audit)", nargs="+", metavar="COL",
        required=True)],
    start: Annotated[Any, cli_option(
        "--start", "the failing audit to start from: its release's columns, method and m, and "
        "the lines past their thresholds, seed the space; its steps' times give the cost stated "
        "before the work", metavar="AUDIT_DIR")] = None,
    space: DesignSpace | Mapping[str, Any] | None = None,
    settings: Any = None,
    categorical: Annotated[Sequence[str] | None, cli_option(
        "--categorical", "integer-coded factors of ORIGINAL", nargs="+", metavar="COL")] = None,
    search: SearchSpec | None = None,
    out: str | os.PathLike[str] | None = None,
    resume: bool = False,
    random_seed: int | None = None,
    progressbar: bool = True,
) -> Any:
    """Search a stated space of releases for the most useful one that passes every verdict
    line of the audit, and re-audit the one chosen with fresh seeds and fresh datasets.

    Every candidate is scored by :func:`bayes_risk.audit` itself (the registered measures of
    :func:`bayes_risk.measures.measures`): first its cheap steps (utility, identification,
    the empirical measures); a line past its threshold there excludes it. Then the other steps
    on a random subsample of records, excluding the release when a share's lower 97.5 %
    confidence bound is past its threshold; then on every record. A fit is shared by the
    candidates that differ in ``m`` or the remedy only, and so are the model-based lines of
    a release and its remedies (the audit withholds those steps from a post-processed
    release, which gives an intruder no more, on average, than the release before it).

    Parameters
    ----------
    original : DataFrame or path
        The confidential table.
    known : sequence of str
        The intruder's known columns (as :func:`~bayes_risk.audit`).
    start : AuditResult, dict or path, optional
        The failing audit the design starts from: its synthesized columns, method and ``m``
        and the lines past their thresholds seed the space (:class:`DesignSpace`'s defaults);
        its steps' times give the cost stated before the work.
    space : DesignSpace or mapping, optional
        The space searched (a mapping: :meth:`DesignSpace.from_dict`).
    settings : AuditSettings, optional
        How each candidate is audited, with the verdict's thresholds (the audit's defaults).
    categorical : sequence of str, optional
        Integer-coded factors of ``original``.
    search : SearchSpec, optional
        See :class:`~bayes_risk.designing.SearchSpec` (default: its defaults).
    out : path, optional
        The design folder: the journal of the search (kept through an interrupt), the
        frontier, the report, the recommended release and its audit.
    resume : bool
        Go on with the search whose journal is in ``out`` (its finished candidates kept).
    random_seed : int, optional
        Seed of every fit, synthesis and audit (drawn and recorded when ``None``; a resumed
        design without one goes on with the seed its journal recorded).
    progressbar : bool
        Show progress on stderr.

    Returns
    -------
    DesignResult

    Raises
    ------
    ValidationError
        A bad argument, an empty space, an ``out`` that holds another design (or any file
        without ``resume``), or a resumed design whose settings differ (``DESIGN_DIFFERS``).
    """
    check_relations(dict(resume=resume, out=out), _RELATIONS)
    import optuna

    from bayes_risk._specs import as_spec
    from bayes_risk.auditing.settings import AuditSettings
    from bayes_risk.auditing.thresholds import Thresholds
    from bayes_risk.data.schema import infer_schema
    from bayes_risk.designing.result import DesignResult

    sr = as_spec(search, SearchSpec, "search")
    objective = sr.objective
    s = as_spec(settings, AuditSettings, "settings")
    th = Thresholds.parse(s.thresholds)
    space = _as_space(space)
    data, known, facts = _original_and_start(original, known, start)
    schema = infer_schema(data, categorical=list(categorical or []))
    space = _resolved_space(space, facts, known)
    cands, dropped = space.candidates(data, schema, known)
    # the order of enumeration: candidates sharing a fit side by side, each release before
    # its remedies (whose model-based lines it gives)
    cands.sort(key=lambda c: (fit_key(c), -c["m"], c["remedy"] != "none", c["remedy"]))
    root = Path(out) if out is not None else None
    storage = journal_storage(root, resume)
    # a resumed design without a seed goes on with the one its journal drew
    stored = journal_seed(storage) if resume and random_seed is None else None
    seed = given_or_fresh(random_seed if stored is None else stored)
    enumerate_all = len(cands) <= sr.max_candidates
    spec = {"known": known, "space": space.to_dict(), "thresholds": th.to_dict(),
            "objective": objective, "random_seed": seed, "n_records": len(data),
            "settings": repr(s.replace(thresholds=None)), "screen_records": sr.screen_records}
    plan = plan_lines(facts, cands, dropped, enumerate_all, sr, len(data))
    if progressbar:
        for line in plan:
            say(f"[design] {line}")
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(study_name="design", storage=storage, direction="maximize",
                                sampler=tpe_sampler(seed, sr.max_candidates, 0),
                                load_if_exists=resume)
    records = resumed_records(study, spec, resume)
    ev = Evaluator(data, schema, known, s, th, seed, sr.screen_records, progressbar)
    stop = _search(study, ev, records, cands, space, enumerate_all, objective=objective,
                   seed=seed, max_candidates=sr.max_candidates, patience=sr.patience,
                   cpu_budget=sr.cpu_budget, progressbar=progressbar)
    if progressbar:
        say(f"[design] search stopped: {stop}; {len(records)} candidate(s) audited")
    result = DesignResult(space=space.to_dict(), candidates=list(records.values()),
                          dropped=[{k: d[k] for k in ("key", "reason")} for d in dropped],
                          objective=objective, thresholds=th.to_dict(), plan=plan, stop=stop,
                          start=facts, random_seed=seed, known=known, n_fits=ev.n_fits,
                          n_space=len(cands),
                          sampler="enumeration (every candidate)" if enumerate_all else
                          "Optuna TPE with the verdict lines as constraints")
    fresh_reaudit(result, ev, cands, sr.confirm, root, progressbar)
    result.peak_memory = peak_memory()
    if root is not None:
        result.write(root)
    return result


def _as_space(space: DesignSpace | Mapping[str, Any] | None) -> DesignSpace:
    """``space`` as a :class:`DesignSpace` (a mapping: :meth:`DesignSpace.from_dict`; ``None``:
    the default one)."""
    if isinstance(space, Mapping):
        space = DesignSpace.from_dict(space)
    space = space if space is not None else DesignSpace()
    return check_value(space, InstanceOf(DesignSpace, "a DesignSpace or a mapping"), "space")


def _original_and_start(original: pd.DataFrame | str | os.PathLike[str], known: Sequence[str],
                        start: Any) -> tuple[pd.DataFrame, list[str], dict[str, Any] | None]:
    """The original (read from a path), the known columns (each one of it) and the facts of
    the ``start`` audit (which must be of an original with as many records)."""
    from bayes_risk.data.io import read_table

    data = read_table(original) if not isinstance(original, pd.DataFrame) else original
    known = list(known)
    missing = [c for c in known if c not in data.columns]
    if missing:
        raise ValidationError(f"known: {missing} not in the original (columns: "
                              f"{', '.join(map(str, data.columns))}).", code="MISSING_COLUMN")
    facts = start_facts(start)
    if facts and facts.get("n_records") not in (None, len(data)):
        raise ValidationError(f"start: the audit is of another original ({facts['n_records']} "
                              f"records, this one {len(data)}).", code="ORIGINAL_DIFFERS")
    return data, known, facts


def _resolved_space(space: DesignSpace, facts: dict[str, Any] | None, known: list[str]
                    ) -> DesignSpace:
    """``space`` with its defaults filled from the ``start`` audit (``facts``): the column
    sets grown from its synthesized columns to cover its lines past their thresholds, its
    method and its ``m`` (and half of it), the remedies its lines name (``Measure.remedies``)
    beside the default ones; without a start, ``cart`` and ``m`` 5 and 2."""
    from bayes_risk.registry import list_synthesizers

    base = facts["synthesized"] if facts else []
    if space.columns is None:
        if not facts:
            raise ValidationError("space: give the column sets to synthesize (columns), or a "
                                  "start audit to grow them from.", code="OPTION_REQUIRED")
        covers = [columns_to_cover(v, known, base) for v in facts["exceeding"]]
        col_sets = grown_columns(base, covers, [c for c in known if c not in base])
    else:
        col_sets = [list(c) for c in space.columns]
    m0 = facts["m"] if facts else 5
    return space.resolved(columns=col_sets,
                          methods=[facts["method"]] if facts and facts.get("method") in
                          list_synthesizers() else ["cart"],
                          m=sorted({m0, max(1, m0 // 2)}, reverse=True) if facts else [5, 2],
                          remedies=[r for v in (facts or {}).get("exceeding", [])
                                    for r in remedies_named(v)])


def _search(study: Any, ev: Evaluator, records: dict[str, dict[str, Any]],
            cands: list[dict[str, Any]], space: DesignSpace, enumerate_all: bool, *,
            objective: str, seed: int, max_candidates: int, patience: int | None,
            cpu_budget: float | None, progressbar: bool) -> str:
    """The search: ask the study for candidates (every one of ``cands`` in turn when
    ``enumerate_all``) and audit each one not yet in ``records`` (which it extends), telling
    the study its objective and constraints, until a stop; returns why it stopped."""
    import optuna

    names = threshold_names()
    by_params = {json.dumps(trial_params(c), sort_keys=True): c for c in cands}
    if enumerate_all and not study.trials:
        for c in cands:
            study.enqueue_trial(trial_params(c))
    sign = 1.0 if OBJECTIVES[objective] == "max" else -1.0
    stop, new, since_best, asks = "", 0, 0, 0
    best = max((sign * objective_value(r, objective) for r in records.values()
                if r["feasible"]), default=-np.inf)
    cpu0 = time.process_time()
    while not stop:
        if enumerate_all and all(c["key"] in records for c in cands):
            stop = "every candidate of the space audited"
            break
        if new >= max_candidates or len(records) >= max_candidates:
            stop = f"max_candidates ({max_candidates}) reached"
            break
        if cpu_budget is not None and time.process_time() - cpu0 >= cpu_budget:
            stop = f"CPU budget ({cpu_budget:g} s) spent"
            break
        if patience and np.isfinite(best) and since_best >= patience:
            stop = f"patience: {patience} candidates in a row without a better release"
            break
        asks += 1
        if asks > 20 * max_candidates:
            stop = "the sampler proposes only candidates already audited"
            break
        done = (optuna.trial.TrialState.COMPLETE, optuna.trial.TrialState.PRUNED)
        study.sampler = tpe_sampler(seed, max_candidates,
                                    len(study.get_trials(deepcopy=False, states=done)))
        trial = study.ask()
        cand = by_params.get(json.dumps(suggest(trial, space, cands), sort_keys=True))
        if cand is None:  # a combination the space leaves out (a remedy that cannot apply)
            study.tell(trial, state=optuna.trial.TrialState.PRUNED)
            continue
        if cand["key"] in records:
            rec = records[cand["key"]]
        else:
            if progressbar:
                say(f"[design] candidate {len(records) + 1}: {describe(cand)}")
            left = None if cpu_budget is None else cpu_budget - (time.process_time() - cpu0)
            try:
                with _cpu_deadline(left):
                    rec = ev.evaluate(cand)
            except (ValidationError, SchemaError) as err:  # refused: recorded, never a pass
                rec = candidate_record(cand, [refused_line(err)], 0.0, 0.0)
            except _BudgetSpent:  # not a record: queued again for a resume with more budget
                study.tell(trial, state=optuna.trial.TrialState.FAIL)
                study.enqueue_trial(trial_params(cand))
                stop = (f"CPU budget ({cpu_budget:g} s) spent during candidate "
                        f"{len(records) + 1} ({describe(cand)}), which is not counted; "
                        "resume with a larger budget to finish it")
                break
            records[cand["key"]] = rec
            new += 1
            if progressbar:
                say("[design]   " + ("passes every line" if rec["feasible"] else
                                     "excluded by " + ", ".join(rec["failed_lines"]))
                    + f" ({rec['seconds']:.0f} s)")
        trial.set_user_attr("record", rec)
        for name, c in zip([*names, "complete"], constraints(rec, names), strict=True):
            trial.set_constraint(name, c)
        val = objective_value(rec, objective)
        if not np.isfinite(val):
            study.tell(trial, state=optuna.trial.TrialState.FAIL)
        else:
            study.tell(trial, sign * val)
        if rec["feasible"] and np.isfinite(val) and sign * val > best:
            best, since_best = sign * val, 0
        else:
            since_best += 1
    return stop

