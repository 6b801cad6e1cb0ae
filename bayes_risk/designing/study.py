"""The design's Optuna study: its journal in the design folder (kept through an interrupt and
read again by ``resume``), the seeded TPE sampler, a candidate as a trial's parameters and a
record as the trial's constraints. See :doc:`/user_guide/design`."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bayes_risk._io import check_new_folder
from bayes_risk.designing.space import DesignSpace, stable_seed
from bayes_risk.exceptions import ValidationError

#: the file of the search's journal in ``out`` (Optuna's JournalStorage): every finished
#: candidate, kept through an interrupt, read again by ``resume``
JOURNAL = "design.journal"


def constraints(record: Mapping[str, Any], names: Sequence[str]) -> list[float]:
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


def threshold_names() -> list[str]:
    """The thresholds a verdict line is read against (a side, not a cut-off): one constraint
    of the study each."""
    from bayes_risk.auditing.thresholds import threshold_records

    return [k for k, t in threshold_records().items() if t.side != "cut"]


def trial_params(cand: Mapping[str, Any]) -> dict[str, str]:
    """A candidate as Optuna's parameters (JSON text of each value)."""
    out = {"columns": json.dumps(list(cand["columns"])), "method": cand["method"],
           "m": json.dumps(cand["m"]), "remedy": cand["remedy"]}
    out.update({f"{cand['method']}.{k}": json.dumps(v) for k, v in cand["knobs"].items()})
    return out


def tpe_sampler(seed: int, max_candidates: int, k: int) -> Any:
    """TPE for the ask after ``k`` finished trials, seeded by ``k``: its proposals depend on the
    history, not on how many asks this process made, so an interrupted design resumed proposes
    what the uninterrupted one would have (a failed trial, cut short, is not counted). TPE
    reads the constraints each trial sets (``Trial.set_constraint``): <= 0 within."""
    import optuna

    return optuna.samplers.TPESampler(seed=stable_seed(seed, "tpe", str(k)),
                                      n_startup_trials=min(8, max(1, max_candidates // 3)))


def suggest(trial: Any, space: DesignSpace, cands: list[dict[str, Any]]) -> dict[str, str]:
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


def journal_storage(root: Path | None, resume: bool) -> Any:
    """Optuna's journal in ``root`` (appended as each candidate finishes), or in memory."""
    if root is None:  # design's relations refuse resume without out
        return None
    from optuna.storages import JournalStorage
    from optuna.storages.journal import JournalFileBackend

    journal = root / JOURNAL
    if resume and not journal.is_file():
        raise ValidationError(f"resume: {str(root)!r} holds no design journal ({JOURNAL}); "
                              "give the out folder of an interrupted design.",
                              code="NOT_A_DESIGN")
    if not resume:
        check_new_folder(root, ", or resume to go on with the design in it")
    root.mkdir(parents=True, exist_ok=True)
    return JournalStorage(JournalFileBackend(str(journal)))


def journal_seed(storage: Any) -> int | None:
    """The seed a design's journal records (drawn when none was given), else ``None``."""
    import optuna

    try:
        study = optuna.load_study(study_name="design", storage=storage)
    except KeyError:  # a journal without the study: resumed_records says so
        return None
    return (study.user_attrs.get("spec") or {}).get("random_seed")


def resumed_records(study: Any, spec: dict[str, Any], resume: bool) -> dict[str, dict[str, Any]]:
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
