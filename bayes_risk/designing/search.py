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
import warnings
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from bayes_risk._constraints import InstanceOf, check_value
from bayes_risk._memory import current_limit, format_bytes, parse_memory, peak_memory
from bayes_risk._terminal import say
from bayes_risk.designing.space import (
    OBJECTIVES,
    REMEDIES,
    DesignSpace,
    SearchSpec,
    columns_to_cover,
    fit_key,
    grown_columns,
    objective_value,
    stable_seed,
)
from bayes_risk.exceptions import SchemaError, ValidationError
from bayes_risk.results.business import wilson_interval

__all__ = ["design", "OBJECTIVES"]

#: the file of the search's journal in ``out`` (Optuna's JournalStorage): every finished
#: candidate, kept through an interrupt, read again by ``resume``
JOURNAL = "design.journal"

#: one-sided confidence of the subsample screen: a candidate is excluded on a subsample of
#: records only when the lower bound of its share is past the threshold at this confidence
SCREEN_CONFIDENCE = 0.975


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


def _spread_range(spread: str) -> tuple[float, float] | None:
    import re

    m = re.search(r"per dataset ([-+0-9.e]+)–([-+0-9.e]+)", spread or "")
    return (float(m.group(1)), float(m.group(2))) if m else None


def line_record(v: Any, stage: str, source: str = "this release") -> dict[str, Any]:
    """A verdict line as the design keeps it, with its uncertainty: Wilson's 95 % interval
    for a share of records (``interval``), else the range over the datasets the audit
    states (``spread_range``). A line with flagged records is judged at its worst case
    (``at_worst``: every flagged record counted at risk), never passed on the others alone."""
    interval = None
    if v.count_of and v.unit == "%" and np.isfinite(v.value):
        lo, hi = wilson_interval(v.value / 100, int(v.count_of[0]))
        interval = [lo * 100, hi * 100]
    worst = replace(v, value=v.at_worst, flagged=0)
    return {"step": v.step, "measure": v.measure, "short": v.short,
            "threshold_name": v.threshold_name, "value": float(v.value),
            "at_worst": float(worst.value),
            "threshold": float(v.threshold), "direction": v.direction, "unit": v.unit,
            "exceeds": bool(worst.exceeds), "status": v.status, "warnings": list(v.warnings),
            "flagged": int(v.flagged), "spread": v.spread, "interval": interval,
            "spread_range": _spread_range(v.spread), "cause": v.cause,
            "remedies": list(v.remedies), "stage": stage, "source": source,
            "n": int(v.count_of[0]) if v.count_of else None}


def _lower_bound_past(line: dict[str, Any]) -> bool:
    """Whether the subsample's share, its flagged records counted at risk, is past the
    threshold at :data:`SCREEN_CONFIDENCE`."""
    if line["n"] is None or line["unit"] != "%" or not np.isfinite(line["at_worst"]):
        return False
    # one-sided at SCREEN_CONFIDENCE: an end of the two-sided interval of level 2c - 1
    lo, hi = wilson_interval(line["at_worst"] / 100, line["n"] + line["flagged"],
                             level=2 * SCREEN_CONFIDENCE - 1)
    return lo * 100 > line["threshold"] if line["direction"] == "max" else \
        hi * 100 < line["threshold"]


def _start_facts(start: Any) -> dict[str, Any] | None:
    """What the design reads off the start audit: the release's columns, method and m, the
    lines past their thresholds and each step's time."""
    if start is None:
        return None
    from bayes_risk.auditing.compare import audit_summary

    s = audit_summary(start)
    rows = {r["setting"]: r["value"] for r in s.get("settings", []) if r.get("step") in
            ("release", "identification")}
    cols = [c.strip() for c in str(rows.get("synthesized columns", "")).split(",") if c.strip()]
    known = [c.strip() for c in str(rows.get("known columns", "")).split(",") if c.strip()]
    return {"synthesized": cols, "method": rows.get("synthesis method"),
            "m": int(s.get("m") or 5), "known": known, "status": s.get("status"),
            "headline": s.get("headline"), "n_records": s.get("n_records"),
            "exceeding": [v for v in s.get("verdicts", []) if v.get("exceeds")],
            "seconds": {st["name"]: float(st.get("seconds") or 0) for st in s.get("steps", [])},
            "least_budget": next((parse_memory(r["value"], "least budget") for r in
                                  s.get("settings", []) if r.get("step") == "memory"
                                  and r.get("setting") == "least budget"), None),
            "folder": s.get("folder")}


class _Evaluator:
    """Fits, synthesizes and audits candidates; a fit and a release's model-based lines are
    made once and shared by every candidate that shares them."""

    def __init__(self, original: pd.DataFrame, schema: Any, known: Sequence[str],
                 settings: Any, thresholds: Any, seed: int, screen_records: int | None,
                 progressbar: bool) -> None:
        from bayes_risk.measures import measures

        self.original, self.schema, self.known = original, schema, list(known)
        self.settings, self.thresholds, self.seed = settings, thresholds, int(seed)
        self.screen_records, self.progressbar = screen_records, progressbar
        # the audit's registry: every step it runs; the first screen, the cheap ones whose line
        # past its threshold excludes a candidate whatever the later steps find
        self.cheap = [m.name for m in measures() if m.cheap]
        self.expensive = [m.name for m in measures() if not m.cheap]
        self._fit: tuple[str, Any] | None = None  # one fitted model held at a time
        self._model_lines: dict[str, list[dict[str, Any]]] = {}
        self.n_fits = 0

    def model(self, cand: Mapping[str, Any], tag: str = "search") -> Any:
        """The fitted model of ``cand`` (reused while candidates share it)."""
        key = fit_key(cand) + tag
        if self._fit is not None and self._fit[0] == key:
            return self._fit[1]
        self._fit = None  # the model before goes first: one fit in memory
        from bayes_risk.registry import get_synthesizer

        cls = get_synthesizer(cand["method"])
        knobs = {k: (tuple(v) if isinstance(v, list) else v) for k, v in cand["knobs"].items()}
        kw: dict[str, Any] = {}
        if cand["method"] == "pmm":
            kw["identifying"] = [c for c in self.known if c not in cand["columns"]]
        if "progressbar" in _init_names(cls):
            kw["progressbar"] = False
        model = cls(**knobs, **kw)
        schema = self.schema.with_roles(cand["columns"])
        model.fit(self.original, schema=schema, synthesized=cand["columns"],
                  random_seed=stable_seed(self.seed, "fit", fit_key(cand), tag))
        self.n_fits += 1
        self._fit = (key, model)
        return model

    def release(self, cand: Mapping[str, Any], tag: str = "search") -> tuple[Any, Any, Any]:
        """``(model, release before the remedy, release)`` of ``cand``."""
        model = self.model(cand, tag)
        before = model.synthesize(cand["m"], random_seed=stable_seed(
            self.seed, "synthesize", fit_key(cand), str(cand["m"]), tag))
        rel = REMEDIES[cand["remedy"]].apply(self.original, before, {
            **cand, "random_seed": stable_seed(self.seed, "remedy", cand["key"], tag)})
        return model, before, rel

    def audit(self, release: Any, model: Any, steps: Sequence[str], seed: list[int], *,
              records: Sequence[int] | None = None, out: Any = None) -> Any:
        from bayes_risk.auditing.api import audit

        # the steps the user skips stay skipped; the others run in their screen
        skip = [n for n in [*self.cheap, *self.expensive]
                if n not in steps or n in (self.settings.skip or ())]
        if len(skip) == len(self.cheap) + len(self.expensive):
            return _NOTHING  # every step of this screen is skipped as the user asks
        s = self.settings.replace(skip=skip or None,
                                  attribute_records=records if records is not None
                                  else self.settings.attribute_records)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # each line carries the codes that question it
            return audit(self.original, release, known=self.known, model=model,
                         settings=s, thresholds=self.thresholds,
                         random_seed=int(np.random.SeedSequence(seed).generate_state(1)[0]),
                         progressbar=False, out=out)

    def model_lines(self, cand: Mapping[str, Any], model: Any, before: Any
                    ) -> list[dict[str, Any]]:
        """The lines of the steps after the first screen (attribute, posterior identification,
        membership, …) of the release before any remedy: a subsample of records first, whose
        share past its threshold at the screen's confidence excludes the release, then every
        record. Shared by the remedies of one release."""
        key = fit_key(cand) + f"|m={cand['m']}"
        if key in self._model_lines:
            return self._model_lines[key]
        seed = stable_seed(self.seed, "audit-model", key)
        n = len(self.original)
        lines: list[dict[str, Any]] = []
        k = self.screen_records
        if k and n >= 2 * k and self.settings.attribute_records is None \
                and "attribute" in self.expensive and "attribute" not in (self.settings.skip
                                                                          or ()):
            rng = np.random.default_rng(seed)
            sub = np.sort(rng.choice(n, size=k, replace=False)).tolist()
            res = self.audit(before, model, ["attribute"], seed, records=sub)
            screen = [line_record(v, f"subsample of {k} records") for v in res.verdicts]
            if res.failed_steps:
                return self._keep(key, screen, res)
            if any(_lower_bound_past(x) for x in screen):
                self._model_lines[key] = screen
                return screen
        res = self.audit(before, model, self.expensive, seed)
        lines = [line_record(v, "all records") for v in res.verdicts]
        return self._keep(key, lines, res)

    def _keep(self, key: str, lines: list[dict[str, Any]], res: Any) -> list[dict[str, Any]]:
        lines = lines + [_failed_line(s) for s in res.failed_steps]
        self._model_lines[key] = lines
        return lines

    def evaluate(self, cand: Mapping[str, Any]) -> dict[str, Any]:
        """A candidate's record: its lines from the first screen on, stopping at the first
        screen with a line past its threshold."""
        t0, c0 = time.perf_counter(), time.process_time()
        model, before, rel = self.release(cand)
        remedied = cand["remedy"] != "none"
        seed = stable_seed(self.seed, "audit-cheap", cand["key"])
        res = self.audit(rel, None if remedied else model, self.cheap, seed)
        lines = [line_record(v, "first screen") for v in res.verdicts]
        lines += [_failed_line(s) for s in res.failed_steps]
        if not any(x["exceeds"] for x in lines):
            src = "release before the remedy" if remedied else "this release"
            lines += [{**x, "source": src} for x in self.model_lines(cand, model, before)]
        return _record(cand, lines, time.perf_counter() - t0, time.process_time() - c0)


class _Nothing:
    """The audit of a screen whose steps the user skips: no line, no failed step."""

    verdicts: list[Any] = []
    failed_steps: list[Any] = []


_NOTHING = _Nothing()


def _init_names(cls: type) -> set[str]:
    import inspect

    return set(inspect.signature(cls.__init__).parameters)


def _failed_line(step: Any) -> dict[str, Any]:
    """A step that failed: a line that never passes (the candidate is not assessed)."""
    return {"step": step.name, "measure": f"{step.title or step.name} (step failed)",
            "short": f"{step.name} failed", "threshold_name": "", "value": float("nan"),
            "at_worst": float("nan"),
            "threshold": float("nan"), "direction": "max", "unit": "", "exceeds": True,
            "status": "failed", "warnings": [], "flagged": 0, "spread": "",
            "interval": None, "spread_range": None, "cause": str(step.reason or ""),
            "remedies": [], "stage": "failed", "source": "this release", "n": None}


def _refused_line(err: Exception) -> dict[str, Any]:
    """A candidate the audit refused (its release breaks the schema): a line never passed."""
    text = " ".join(str(err).split())
    return {**_failed_line(type("S", (), {"name": "audit", "title": "audit", "reason": text})),
            "measure": "audit refused the release", "short": "audit refused the release"}


def _record(cand: Mapping[str, Any], lines: list[dict[str, Any]], wall: float,
            cpu: float) -> dict[str, Any]:
    bad = [x for x in lines if x["exceeds"]]
    return {"key": cand["key"], "settings": {k: cand[k] for k in ("columns", "method", "knobs",
                                                                   "m", "remedy")},
            "lines": lines, "feasible": not bad,
            "failed_lines": sorted({x["short"] for x in bad}),
            "caution": sorted({x["short"] for x in lines if x["status"] == "caution"}),
            "seconds": wall, "cpu_seconds": cpu}


def _constraints(record: Mapping[str, Any], names: Sequence[str]) -> list[float]:
    """Optuna's constraints of a candidate: per threshold, how far its worst line is past it
    as a share of the threshold (<= 0: within); a failed step counts as past."""
    out = []
    for name in names:
        past = [((x["at_worst"] - x["threshold"]) if x["direction"] == "max" else
                 (x["threshold"] - x["at_worst"])) / (abs(x["threshold"]) or 1.0)
                for x in record["lines"]
                if x["threshold_name"] == name and np.isfinite(x["at_worst"])]
        out.append(float(max(past)) if past else 0.0)
    out.append(1.0 if any(x["status"] == "failed" for x in record["lines"]) else -1.0)
    return out


def design(
    original: pd.DataFrame | str | os.PathLike[str],
    *,
    known: Sequence[str],
    start: Any = None,
    space: DesignSpace | Mapping[str, Any] | None = None,
    thresholds: Any = None,
    settings: Any = None,
    categorical: Sequence[str] | None = None,
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
    thresholds : Thresholds, mapping or list of "NAME=VALUE", optional
        The verdict's thresholds (the audit's defaults).
    settings : AuditSettings, optional
        How each candidate is audited (the audit's defaults).
    categorical : sequence of str, optional
        Integer-coded factors of ``original``.
    search : SearchSpec, optional
        What the search optimises, when it stops (most candidates, patience, CPU budget), its
        subsample screen and its fresh-seed re-audits
        (:class:`~bayes_risk.designing.SearchSpec`; default: its defaults).
    out : path, optional
        The design folder: the journal of the search (kept through an interrupt), the
        frontier, the report, the recommended release and its audit.
    resume : bool
        Go on with the search whose journal is in ``out`` (its finished candidates kept).
    random_seed : int, optional
        Seed of every fit, synthesis and audit (drawn and recorded when ``None``).
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
    import optuna

    from bayes_risk._specs import as_spec
    from bayes_risk.auditing.settings import AuditSettings
    from bayes_risk.auditing.thresholds import Thresholds
    from bayes_risk.data.schema import infer_schema
    from bayes_risk.designing.result import DesignResult

    sr = as_spec(search, SearchSpec, "search")
    objective = sr.objective
    th = Thresholds.parse(thresholds)
    s = as_spec(settings, AuditSettings, "settings")
    space = _as_space(space)
    data, known, facts = _original_and_start(original, known, start)
    schema = infer_schema(data, categorical=list(categorical or []))
    space = _resolved_space(space, facts, known)
    cands, dropped = space.candidates(data, schema, known)
    # the order of enumeration: candidates sharing a fit side by side, each release before
    # its remedies (whose model-based lines it gives)
    cands.sort(key=lambda c: (fit_key(c), -c["m"], c["remedy"] != "none", c["remedy"]))
    seed = int(random_seed) if random_seed is not None else int(
        np.random.SeedSequence().generate_state(1, dtype=np.uint32)[0])
    enumerate_all = len(cands) <= sr.max_candidates
    spec = {"known": known, "space": space.to_dict(), "thresholds": th.to_dict(),
            "objective": objective, "random_seed": seed, "n_records": len(data),
            "settings": repr(s), "screen_records": sr.screen_records}
    root = Path(out) if out is not None else None
    storage = _storage(root, resume)
    plan = _plan(facts, cands, dropped, enumerate_all, sr, len(data))
    if progressbar:
        for line in plan:
            say(f"[design] {line}")
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(study_name="design", storage=storage, direction="maximize",
                                sampler=_sampler(seed, sr.max_candidates, 0),
                                load_if_exists=resume)
    records = _resumed(study, spec, resume)
    ev = _Evaluator(data, schema, known, s, th, seed, sr.screen_records, progressbar)
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
    _confirm(result, ev, cands, sr.confirm, root, progressbar)
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
    facts = _start_facts(start)
    if facts and facts.get("n_records") not in (None, len(data)):
        raise ValidationError(f"start: the audit is of another original ({facts['n_records']} "
                              f"records, this one {len(data)}).", code="ORIGINAL_DIFFERS")
    return data, known, facts


def _resolved_space(space: DesignSpace, facts: dict[str, Any] | None, known: list[str]
                    ) -> DesignSpace:
    """``space`` with its defaults filled from the ``start`` audit (``facts``): the column
    sets grown from its synthesized columns to cover its lines past their thresholds, its
    method and its ``m`` (and half of it); without a start, ``cart`` and ``m`` 5 and 2."""
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
                          _known_methods() else ["cart"],
                          m=sorted({m0, max(1, m0 // 2)}, reverse=True) if facts else [5, 2])


def _search(study: Any, ev: _Evaluator, records: dict[str, dict[str, Any]],
            cands: list[dict[str, Any]], space: DesignSpace, enumerate_all: bool, *,
            objective: str, seed: int, max_candidates: int, patience: int | None,
            cpu_budget: float | None, progressbar: bool) -> str:
    """The search: ask the study for candidates (every one of ``cands`` in turn when
    ``enumerate_all``) and audit each one not yet in ``records`` (which it extends), telling
    the study its objective and constraints, until a stop; returns why it stopped."""
    import optuna

    names = [n for n, side in _sides().items()]
    by_params = {json.dumps(_params(c), sort_keys=True): c for c in cands}
    if enumerate_all and not study.trials:
        for c in cands:
            study.enqueue_trial(_params(c))
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
        study.sampler = _sampler(seed, max_candidates,
                                 len(study.get_trials(deepcopy=False, states=done)))
        trial = study.ask()
        cand = by_params.get(json.dumps(_suggest(trial, space, cands), sort_keys=True))
        if cand is None:  # a combination the space leaves out (a remedy that cannot apply)
            study.tell(trial, state=optuna.trial.TrialState.PRUNED)
            continue
        if cand["key"] in records:
            rec = records[cand["key"]]
        else:
            if progressbar:
                say(f"[design] candidate {len(records) + 1}: {_describe(cand)}")
            left = None if cpu_budget is None else cpu_budget - (time.process_time() - cpu0)
            try:
                with _cpu_deadline(left):
                    rec = ev.evaluate(cand)
            except (ValidationError, SchemaError) as err:  # refused: recorded, never a pass
                rec = _record(cand, [_refused_line(err)], 0.0, 0.0)
            except _BudgetSpent:  # not a record: queued again for a resume with more budget
                study.tell(trial, state=optuna.trial.TrialState.FAIL)
                study.enqueue_trial(_params(cand))
                stop = (f"CPU budget ({cpu_budget:g} s) spent during candidate "
                        f"{len(records) + 1} ({_describe(cand)}), which is not counted; "
                        "resume with a larger budget to finish it")
                break
            records[cand["key"]] = rec
            new += 1
            if progressbar:
                say("[design]   " + ("passes every line" if rec["feasible"] else
                                     "excluded by " + ", ".join(rec["failed_lines"]))
                    + f" ({rec['seconds']:.0f} s)")
        trial.set_user_attr("record", rec)
        for name, c in zip([*names, "complete"], _constraints(rec, names), strict=True):
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


def _known_methods() -> list[str]:
    from bayes_risk.registry import list_synthesizers

    return list_synthesizers()


def _sides() -> dict[str, str]:
    from bayes_risk.auditing.thresholds import threshold_records

    return {k: t.side for k, t in threshold_records().items() if t.side != "cut"}


def _params(cand: Mapping[str, Any]) -> dict[str, str]:
    """A candidate as Optuna's parameters (JSON text of each value)."""
    out = {"columns": json.dumps(list(cand["columns"])), "method": cand["method"],
           "m": json.dumps(cand["m"]), "remedy": cand["remedy"]}
    out.update({f"{cand['method']}.{k}": json.dumps(v) for k, v in cand["knobs"].items()})
    return out


def _sampler(seed: int, max_candidates: int, k: int) -> Any:
    """TPE for the ask after ``k`` finished trials, seeded by ``k``: its proposals depend on the
    history, not on how many asks this process made, so an interrupted design resumed proposes
    what the uninterrupted one would have (a failed trial, cut short, is not counted). TPE
    reads the constraints each trial sets (``Trial.set_constraint``): <= 0 within."""
    import optuna

    return optuna.samplers.TPESampler(seed=stable_seed(seed, "tpe", str(k)),
                                      n_startup_trials=min(8, max(1, max_candidates // 3)))


def _suggest(trial: Any, space: DesignSpace, cands: list[dict[str, Any]]) -> dict[str, str]:
    """The trial's candidate, drawn axis by axis over the values left in the space."""

    def choices(axis: str, vals: list[Any]) -> list[str]:
        return list(dict.fromkeys(json.dumps(v) if axis != "method" and axis != "remedy"
                                  else v for v in vals))

    out = {"columns": trial.suggest_categorical("columns", choices(
        "columns", [list(c["columns"]) for c in cands]))}
    out["method"] = trial.suggest_categorical("method", choices("method",
                                                                [c["method"] for c in cands]))
    mine = [c for c in cands if c["method"] == out["method"]]
    for k in (mine[0]["knobs"] if mine else {}):
        out[f"{out['method']}.{k}"] = trial.suggest_categorical(
            f"{out['method']}.{k}", choices(k, [c["knobs"][k] for c in mine]))
    out["m"] = trial.suggest_categorical("m", choices("m", [c["m"] for c in cands]))
    out["remedy"] = trial.suggest_categorical("remedy", choices("remedy",
                                                                [c["remedy"] for c in cands]))
    return out


def _describe(cand: Mapping[str, Any]) -> str:
    knobs = ", ".join(f"{k}={v}" for k, v in cand["knobs"].items())
    return (f"synthesize {', '.join(cand['columns'])}; {cand['method']}"
            + (f" ({knobs})" if knobs else "") + f"; m = {cand['m']}; remedy {cand['remedy']}")


def _storage(root: Path | None, resume: bool) -> Any:
    """Optuna's journal in ``root`` (appended as each candidate finishes), or in memory."""
    if root is None:
        if resume:
            raise ValidationError("resume needs out, the folder of the design to go on with.",
                                  code="OPTION_REQUIRED")
        return None
    from optuna.storages import JournalStorage
    from optuna.storages.journal import JournalFileBackend

    journal = root / JOURNAL
    if resume and not journal.is_file():
        raise ValidationError(f"resume: {str(root)!r} holds no design journal ({JOURNAL}); "
                              "give the out folder of an interrupted design.",
                              code="NOT_A_DESIGN")
    if not resume and root.exists() and (not root.is_dir() or any(root.iterdir())):
        raise ValidationError(f"out {str(root)!r} exists and is not an empty folder; give a new "
                              "folder, or resume to go on with the design in it.",
                              code="OUT_EXISTS")
    root.mkdir(parents=True, exist_ok=True)
    return JournalStorage(JournalFileBackend(str(journal)))


def _resumed(study: Any, spec: dict[str, Any], resume: bool) -> dict[str, dict[str, Any]]:
    """The finished candidates of a resumed study; candidates interrupted mid-audit are
    marked failed and queued again. A new study records ``spec``."""
    import optuna

    from bayes_risk._io import to_jsonable

    spec = to_jsonable(spec)
    stored = study.user_attrs.get("spec")
    if stored is None:
        study.set_user_attr("spec", spec)
        return {}
    if stored != spec:
        diff = sorted(k for k in set(spec) | set(stored) if spec.get(k) != stored.get(k))
        raise ValidationError(f"resume: the design in this folder was run with other "
                              f"settings ({', '.join(diff)} differ); give the same ones, or a "
                              "new out folder.", code="DESIGN_DIFFERS")
    records: dict[str, dict[str, Any]] = {}
    for t in study.get_trials(deepcopy=False):
        rec = t.user_attrs.get("record")
        if rec is not None and t.state.is_finished():
            records[rec["key"]] = rec
        elif t.state == optuna.trial.TrialState.RUNNING:
            study.tell(t.number, state=optuna.trial.TrialState.FAIL)
            if t.params:
                study.enqueue_trial(dict(t.params))
    return records


def _plan(facts: Any, cands: list, dropped: list, enumerate_all: bool, search: SearchSpec,
          n: int) -> list[str]:
    """The design's plan and cost, stated before the first candidate."""
    max_candidates, patience, cpu_budget = (search.max_candidates, search.patience,
                                            search.cpu_budget)
    screen, objective = search.screen_records, search.objective
    n_fits = len({fit_key(c) for c in cands})
    k = len(cands) if enumerate_all else max_candidates
    lines = [f"space: {len(cands)} candidate(s) ({n_fits} fit(s))"
             + (f"; {len(dropped)} left out ({'; '.join(sorted({d['reason'] for d in dropped}))})"
                if dropped else ""),
             ("search: every candidate, each release before its remedies" if enumerate_all
              else f"search: Optuna's TPE sampler, the verdict lines as constraints, at most "
              f"{max_candidates} candidates") + (f"; stops after {patience} candidates without "
                                                 "a better release" if patience else "")
             + (f"; within {cpu_budget:g} CPU seconds" if cpu_budget else ""),
             "screens: utility, identification and the empirical measures first (a line past "
             "its threshold excludes the candidate), then the model-based steps"
             + (f" on {screen} random records (excluded when a share's lower "
                f"{SCREEN_CONFIDENCE:.1%} bound is past its threshold), then on all {n:,}"
                if screen and n >= 2 * screen else " on every record"),
             f"objective: the best {objective} among the candidates that pass every line; the "
             "chosen one re-audited with fresh seeds and fresh datasets"]
    # a candidate that synthesizes more columns or smooths can take many times the start
    # audit (the attribute step's candidates and smoothed likelihoods): no bound is claimed
    # from it; the CPU budget bounds the search, stopping the candidate it runs out in
    took = (f"the start audit took {sum(facts['seconds'].values()):.0f} s of wall time (the "
            "budget counts CPU); a candidate that synthesizes more columns or smooths takes "
            "longer; "
            if facts and facts.get("seconds") else "")
    lines.append(f"cost: {took}at most {k} candidate audit(s), each one's time printed as it "
                 "finishes" + (f"; the search ends when its {cpu_budget:g} CPU seconds are "
                               "spent, the candidate then running stopped and not counted"
                               if cpu_budget else "")
                 + "; then the fresh re-audit of the chosen one")
    lines.append(_memory_line(facts, cands))
    return lines


def _memory_line(facts: Any, cands: list) -> str:
    """What the design holds, from the start audit's least budget (its steps' needs beside
    what its process held), scaled to the candidates' largest ``m`` where it is larger."""
    from bayes_risk.auditing.memory_plan import DEFAULT_SHARE

    limit = current_limit()
    budget = (f"{DEFAULT_SHARE:.0%} of the memory available when it starts, the audit's default "
              "(--memory sets one)" if limit is None else f"{format_bytes(limit)} given (--memory)")
    tail = (f"; each audit checks its own plan within the budget, {budget}, before it starts, "
            "and one that does not fit is recorded as refused (MEMORY_TOO_LARGE); one fitted "
            "model and its release held at a time")
    least = (facts or {}).get("least_budget")
    if not least:
        return "memory: not estimated before the first candidate (no start audit)" + tail
    m0, m_max = int(facts["m"]), max(int(c["m"]) for c in cands)
    # the audit's needs grow with the datasets matched at once (identification's tables)
    need = least * max(1.0, m_max / m0)
    over = (f"; past the {format_bytes(limit)} budget: the candidates of the largest m "
            "may be refused" if limit is not None and need > limit else "")
    return (f"memory: each candidate's audit about {format_bytes(need, up=True)} (the start "
            f"audit's least budget, {format_bytes(least, up=True)} at m = {m0}"
            + (f", scaled to m = {m_max}" if m_max > m0 else "") + ")" + over + tail)


def _confirm(result: Any, ev: _Evaluator, cands: list, confirm: int, root: Path | None,
             progressbar: bool) -> None:
    """Re-audit the best candidates that pass with fresh seeds and fresh datasets, best first,
    until one passes again (at most ``confirm``); write it and its audit."""
    ranked = result.ranked()
    for rec in ranked[:confirm]:
        cand = next(c for c in cands if c["key"] == rec["key"])
        if progressbar:
            say(f"[design] fresh re-audit of {_describe(cand)}")
        t0 = time.perf_counter()
        model, before, rel = ev.release(cand, tag="fresh")
        remedied = cand["remedy"] != "none"
        folder = None if root is None else root / "release_audit"
        lines: list[dict[str, Any]] = []
        res = _written_audit(ev, rel, None if remedied else model, cand, folder)
        lines += [line_record(v, "fresh re-audit") for v in res.verdicts]
        lines += [_failed_line(s) for s in res.failed_steps]
        if remedied:
            pre_folder = None if root is None else root / "release_before_remedy_audit"
            pre = _written_audit(ev, before, model, cand, pre_folder, withheld_only=res)
            lines += [line_record(v, "fresh re-audit", "release before the remedy")
                      for v in pre.verdicts]
        rec_fresh = _record(cand, lines, time.perf_counter() - t0, 0.0)
        result.confirmations.append({"key": rec["key"], "record": rec_fresh})
        if rec_fresh["feasible"]:
            result.chosen = rec["key"]
            if root is not None:
                from bayes_risk._io import atomic_dir

                with atomic_dir(root / "release") as tmp:
                    rel.save(tmp)
                result.release_folder = str(root / "release")
            result.release = rel
            break
        if folder is not None:  # the failed one's audit is kept under its rank
            os.replace(folder, root / f"release_audit_rejected_{len(result.confirmations)}")
            if remedied:
                os.replace(root / "release_before_remedy_audit",
                           root / f"release_before_remedy_audit_rejected_"
                                  f"{len(result.confirmations)}")


def _written_audit(ev: _Evaluator, release: Any, model: Any, cand: Mapping[str, Any],
                   folder: Path | None, withheld_only: Any = None) -> Any:
    """The full audit of a fresh release, written with its report and report.zip when
    ``folder`` is given; ``withheld_only``: the steps that audit withheld, alone."""
    steps = [*ev.cheap, *ev.expensive]
    if withheld_only is not None:
        steps = [s for s in steps if s in withheld_only.plan.withheld]
    seed = stable_seed(ev.seed, "audit-fresh", cand["key"], str(folder))
    if folder is None:
        return ev.audit(release, model, steps, seed)
    from bayes_risk._io import atomic_dir

    with atomic_dir(folder) as tmp:
        res = ev.audit(release, model, steps, seed, out=tmp)
        res.to_html(tmp / "report.html", bundle="report.zip")
        res.to_markdown(tmp / "report.md", bundle="report.zip")
        res.to_zip(tmp / "report.zip")
    res.root = folder
    return res
