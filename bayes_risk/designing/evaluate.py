"""A candidate of the design audited: fitted, synthesized and audited by :class:`Evaluator`
(a fit and a release's model-based lines shared by the candidates that share them), its verdict
lines and record as the design keeps them, and the fresh re-audit of the best ones
(:func:`fresh_reaudit`). See :doc:`/user_guide/design`."""

from __future__ import annotations

import os
import time
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from bayes_risk._terminal import say
from bayes_risk.designing.space import REMEDIES, fit_key, stable_seed
from bayes_risk.exceptions import ValidationError
from bayes_risk.results.business import wilson_interval

#: one-sided confidence of the subsample screen: a candidate is excluded on a subsample of
#: records only when the lower bound of its share is past the threshold at this confidence
SCREEN_CONFIDENCE = 0.975


def _spread_range(spread: str) -> tuple[float, float] | None:
    import re

    m = re.search(r"per dataset ([-+0-9.e]+)–([-+0-9.e]+)", spread or "")
    return (float(m.group(1)), float(m.group(2))) if m else None


def line_record(v: Any, stage: str, source: str = "this release") -> dict[str, Any]:
    """A verdict line as the design keeps it, with its uncertainty: Wilson's 95 % interval
    for a share of records (``interval``), else the range over the datasets the audit
    states (``spread_range``). A line with flagged records is judged at its worst case
    (``at_worst``: every flagged record counted at risk that its bounds, Monte Carlo or k̂, do not
    rule out; ``flagged_at_risk`` of them), never passed on the others alone."""
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
            "flagged": int(v.flagged),
            "flagged_at_risk": int(v.flagged if v.flagged_at_risk is None else v.flagged_at_risk),
            "spread": v.spread, "interval": interval,
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


class Evaluator:
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
        #: whether the attribute step of a release (``model_lines``' key) used plugin_replicates
        self.replicates_used: dict[str, bool] = {}
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
              records: Sequence[int] | None = None, out: Any = None, before: Any = None
              ) -> Any:
        from bayes_risk.auditing.api import audit

        # the steps the user skips stay skipped; the others run in their screen
        skip = [n for n in [*self.cheap, *self.expensive]
                if n not in steps or n in (self.settings.skip or ())]
        if len(skip) == len(self.cheap) + len(self.expensive):
            return _NOTHING  # every step of this screen is skipped as the user asks
        s = self.settings.replace(skip=skip or None,
                                  attribute_records=records if records is not None
                                  else self.settings.attribute_records,
                                  thresholds=self.thresholds)
        kw = dict(known=self.known, model=model, progressbar=False,
                  random_seed=int(np.random.SeedSequence(seed).generate_state(1)[0]), out=out,
                  before=before)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # each line carries the codes that question it
            try:
                return audit(self.original, release, settings=s, **kw)
            except ValidationError as err:
                if err.code != "OPTION_UNUSED" or s.attribute_estimator.plugin_replicates is None:
                    raise
            # plugin_replicates is the smoothed CART plug-in's: the audit refuses it, before
            # any work, where its attribute step does not run or draws no replicate (another
            # method, no smoothing, a remedy, a screen without the step); that one goes on
            # without it (the candidate's record says which used it)
            est = replace(s.attribute_estimator, plugin_replicates=None)
            return audit(self.original, release, settings=s.replace(attribute_estimator=est),
                         **kw)

    def model_lines(self, cand: Mapping[str, Any], model: Any, before: Any
                    ) -> list[dict[str, Any]]:
        """The lines of the steps after the first screen (attribute, posterior identification,
        membership, …) of the release before any remedy: a subsample of records first, whose
        share past its threshold at the screen's confidence excludes the release, then every
        record. Shared by the remedies of one release."""
        key = release_key(cand)
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
            self.replicates_used[key] = replicates_used(res)
            screen = [line_record(v, f"subsample of {k} records") for v in res.verdicts]
            if res.failed_steps:
                return self._keep(key, screen, res)
            if any(_lower_bound_past(x) for x in screen):
                self._model_lines[key] = screen
                return screen
        res = self.audit(before, model, self.expensive, seed)
        self.replicates_used[key] = replicates_used(res)
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
        used = False
        if not any(x["exceeds"] for x in lines):
            src = "release before the remedy" if remedied else "this release"
            lines += [{**x, "source": src} for x in self.model_lines(cand, model, before)]
            used = self.replicates_used.get(release_key(cand), False)
        rec = candidate_record(cand, lines, time.perf_counter() - t0, time.process_time() - c0)
        if self.settings.attribute_estimator.plugin_replicates is not None:
            rec["plugin_replicates_used"] = used
        return rec


def release_key(cand: Mapping[str, Any]) -> str:
    """The key of a candidate's release before any remedy (its fit and ``m``)."""
    return fit_key(cand) + f"|m={cand['m']}"


def replicates_used(res: Any) -> bool:
    """Whether the audit ``res`` ran its attribute step with ``plugin_replicates``."""
    plan = getattr(res, "plan", None)  # none: every step of the screen skipped
    return (plan is not None and plan.given.attribute_estimator.plugin_replicates is not None
            and any(st.name == "attribute" and st.status == "ran" for st in res.steps))


class _Nothing:
    """The audit of a screen whose steps the user skips: no line, no failed step."""

    verdicts: list[Any] = []
    measured: list[Any] = []
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


def refused_line(err: Exception) -> dict[str, Any]:
    """A candidate the audit refused (its release breaks the schema): a line never passed."""
    text = " ".join(str(err).split())
    return {**_failed_line(type("S", (), {"name": "audit", "title": "audit", "reason": text})),
            "measure": "audit refused the release", "short": "audit refused the release"}


def candidate_record(cand: Mapping[str, Any], lines: list[dict[str, Any]], wall: float,
                     cpu: float) -> dict[str, Any]:
    """A candidate's record: its settings, its lines, whether it passes every one (``feasible``)
    and the lines that exclude it or call for caution, with its wall and CPU seconds."""
    bad = [x for x in lines if x["exceeds"]]
    return {"key": cand["key"], "settings": {k: cand[k] for k in ("columns", "method", "knobs",
                                                                   "m", "remedy")},
            "lines": lines, "feasible": not bad,
            "failed_lines": sorted({x["short"] for x in bad}),
            "caution": sorted({x["short"] for x in lines if x["status"] == "caution"}),
            "seconds": wall, "cpu_seconds": cpu}


def describe(cand: Mapping[str, Any]) -> str:
    """A candidate in words, as the progress lines and the re-audit name it."""
    knobs = ", ".join(f"{k}={v}" for k, v in cand["knobs"].items())
    return (f"synthesize {', '.join(cand['columns'])}; {cand['method']}"
            + (f" ({knobs})" if knobs else "") + f"; m = {cand['m']}; remedy {cand['remedy']}")


def fresh_reaudit(result: Any, ev: Evaluator, cands: list, confirm: int, root: Path | None,
                  progressbar: bool) -> None:
    """Re-audit the best candidates that pass with fresh seeds and fresh datasets, best first,
    until one passes again (at most ``confirm``); write it and its audit."""
    ranked = result.ranked()
    for rec in ranked[:confirm]:
        cand = next(c for c in cands if c["key"] == rec["key"])
        if progressbar:
            say(f"[design] fresh re-audit of {describe(cand)}")
        t0 = time.perf_counter()
        model, before, rel = ev.release(cand, tag="fresh")
        remedied = cand["remedy"] != "none"
        folder = None if root is None else root / "release_audit"
        pre = _NOTHING
        if remedied:  # the model-based steps, which the remedied release's audit withholds
            pre_folder = None if root is None else root / "release_before_remedy_audit"
            pre = _written_audit(ev, before, model, cand, pre_folder, ev.expensive,
                                 label="before the remedy")
        # the release's audit carries those lines as upper bounds (where they bound it): its
        # report has every line; the design judges every line of both, as in the search
        res = _written_audit(ev, rel, None if remedied else model, cand, folder,
                             [*ev.cheap, *ev.expensive], label="release",
                             before=None if pre is _NOTHING else pre)
        lines = [line_record(v, "fresh re-audit") for v in res.measured]
        lines += [line_record(v, "fresh re-audit", "release before the remedy")
                  for v in pre.verdicts]
        lines += [_failed_line(s) for s in [*res.failed_steps, *pre.failed_steps]]
        rec_fresh = candidate_record(cand, lines, time.perf_counter() - t0, 0.0)
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


def _written_audit(ev: Evaluator, release: Any, model: Any, cand: Mapping[str, Any],
                   folder: Path | None, steps: Sequence[str], *, label: str,
                   before: Any = None) -> Any:
    """The audit of a fresh release by ``steps``, written with its report and report.zip when
    ``folder`` is given; ``before``: the audit of the release before its remedy. Its seed is
    the design's, the candidate's and ``label``'s: the same wherever the design is written."""
    seed = stable_seed(ev.seed, "audit-fresh", cand["key"], label)
    if folder is None or all(s in (ev.settings.skip or ()) for s in steps):
        return ev.audit(release, model, steps, seed, before=before)  # nothing to write
    from bayes_risk._io import atomic_dir

    with atomic_dir(folder) as tmp:
        res = ev.audit(release, model, steps, seed, out=tmp, before=before)
        res.to_html(tmp / "report.html", bundle="report.zip")
        res.to_markdown(tmp / "report.md", bundle="report.zip")
        res.to_zip(tmp / "report.zip")
    res.root = folder
    return res
