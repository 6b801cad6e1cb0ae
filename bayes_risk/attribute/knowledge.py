"""Attribute risk over the synthesized values the intruder knows (Hu 2019 §5).

See :doc:`/user_guide/knowledge`.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
import pandas as pd

from bayes_risk._lattice import (
    candidate_list,
    check_max_size,
    frontier,
    greedy_path,
    level_labels,
    planned_subsets,
    shapley_values,
    subset_label,
    subset_order,
)
from bayes_risk._specs import as_spec
from bayes_risk._terminal import progress
from bayes_risk.attribute.api import attribute_risk
from bayes_risk.attribute.prepare import prepare
from bayes_risk.attribute.specs import ESTIMATORS, EstimatorSpec, ScenarioSpec
from bayes_risk.data.provenance import check_release_model
from bayes_risk.data.schema import CATEGORICAL_TYPES
from bayes_risk.data.validate import require_frame
from bayes_risk.exceptions import (
    CALLER,
    BayesRiskWarning,
    ValidationError,
    arg_name,
    interruptible,
)
from bayes_risk.results.knowledge import ATTRIBUTE_SWEEP_MEASURES, KnowledgeSweepResult
from bayes_risk.warning_codes import message

__all__ = ["attribute_known_sweep", "shared_refits", "file_measures", "one_seed"]

#: the measures the frontier, the greedy path and the Shapley values rank subsets by
RANK_MEASURES = ("mean_p_true", "prop_top")

#: arguments of ``attribute_risk`` a sweep passes on to every subset, with their defaults
_OPTIONS: dict[str, Any] = {
    "records": None, "candidates": "one-variable", "prior": "uniform", "estimator": "auto",
    "allow_other_model": False,
}


@interruptible
def attribute_known_sweep(
    original: pd.DataFrame, synthetic: Any, *, model: Any, known: Sequence[str],
    max_size: int | None = None, greedy_beyond: bool = True,
    measure: Literal["mean_p_true", "prop_top"] = "mean_p_true", bands: int = 10,
    max_subsets: int = 4096, random_seed: Any = None, progressbar: bool = True,
    executor: Any = None, **kwargs: Any,
) -> KnowledgeSweepResult:
    """Attribute risk over subsets of the synthesized values the intruder knows.

    Every subset ``K`` of ``known`` with ``|K| <= max_size`` is run with
    ``scenario="partially_known"``, then a greedy path beyond (see :doc:`/user_guide/knowledge`).

    Parameters
    ----------
    original, synthetic, model
        As in :func:`~bayes_risk.attribute.attribute_risk`.
    known : sequence of str
        The synthesized columns the intruder may know (1 to 20; not every synthesized column).
    max_size : int, optional
        Largest subset size evaluated exhaustively (default: every size).
    greedy_beyond : bool
        Follow the greedy forward path beyond ``max_size`` (default ``True``).
    measure : {"mean_p_true", "prop_top"}
        What the greedy path and the frontier rank subsets by.
    bands : int
        Quantile bands of a numeric column in the per-level contributions (default 10).
    max_subsets : int
        Largest number of subsets evaluated (default 4,096); more is an error.
    random_seed : int, Generator or None
        One seed for every subset (kept in ``settings["random_seed"]``).
    progressbar : bool
        Show progress over the subsets (and the refits).
    executor : None, distributed.Client or Executor, optional
        Where each subset's per-record stage runs.
    **kwargs
        ``records``, ``candidates``, ``prior``, ``estimator`` and ``allow_other_model``.

    Returns
    -------
    KnowledgeSweepResult
        ``kind="attribute"``, with ``.table``, ``.frontier``, ``.drivers`` and ``.levels``.

    Raises
    ------
    ValidationError
        A bad ``known``, ``max_size`` out of range, too many subsets, ``scenario`` or an unknown
        argument in ``kwargs``.

    References
    ----------
    Hu (2019) §5; Hu, Reiter & Wang (2014); Shapley (1953).
    """
    require_frame(original, "original")
    cands = candidate_list(known, "known")
    if "scenario" in kwargs or "known" in kwargs:
        raise ValidationError(
            "attribute_known_sweep sets scenario and known for every subset; give the columns "
            "the intruder may know as known=[...]."
        )
    unknown = sorted(set(kwargs) - set(_OPTIONS))
    if unknown:
        raise ValidationError(f"unknown argument(s) for attribute_known_sweep: {unknown}.",
                              code="INVALID_ARGUMENT")
    if measure not in RANK_MEASURES:
        raise ValidationError(f"measure must be one of {list(RANK_MEASURES)}. Got {measure!r}.")
    if isinstance(bands, bool) or not isinstance(bands, (int, np.integer)) or bands < 1:
        raise ValidationError(f"bands must be an integer >= 1. Got {bands!r}.")
    n_c = len(cands)
    max_size = check_max_size(max_size, cands, "known")
    syn = _synthesized(model)
    notsyn = [c for c in cands if c not in syn]
    if notsyn:
        raise ValidationError(
            f"{arg_name('known')} names {notsyn}, which the model did not synthesize "
            f"(synthesized: {syn}); unsynthesized columns are always known to the intruder.",
            code="INVALID_ARGUMENT",
        )
    if not [c for c in syn if c not in cands]:
        raise ValidationError(
            f"{arg_name('known')} holds every synthesized column ({syn}): with all of them known "
            "nothing is left to guess; leave at least one out.",
            code="INVALID_ARGUMENT",
        )
    planned = planned_subsets(cands, int(max_size), max_subsets, "known")
    options = {k: kwargs.get(k, v) for k, v in _OPTIONS.items()}
    options["estimator"] = as_spec(options["estimator"], EstimatorSpec, "estimator", "kind",
                                   ESTIMATORS)
    records = options.pop("records")
    if not options["allow_other_model"]:  # refused before the refits (each subset checks too)
        check_release_model(model, synthetic, original)
    seed = one_seed(random_seed)
    sweep = _AttributeSweep(original, synthetic, model, cands, records, options, seed,
                            executor, progressbar)
    sweep.run_many(planned, progressbar=progressbar)
    greedy = greedy_path(sweep, cands, int(max_size), measure) if greedy_beyond else []
    lattice = max_size >= n_c - 1
    table = _table(sweep, cands, measure, greedy)
    drivers, note = _drivers(sweep, cands, lattice)
    levels = _levels(sweep, cands, original, bands)
    settings = dict(sweep.settings)
    settings.update(candidates=cands, synthesized=list(syn), max_size=int(max_size),
                    greedy_beyond=bool(greedy_beyond), measure=measure, bands=int(bands),
                    lattice_complete=lattice, n_subsets=len(sweep.done), random_seed=seed,
                    refits_shared=sweep.refits_shared)
    warn = {}
    for code, where in sweep.warn_subsets.items():
        shown = "; ".join(f"{{{w}}}" for w in where[:5]) + (" …" if len(where) > 5 else "")
        cat, first = sweep.caught.get(code, (None, message(code)))
        warn[code] = (f"in {len(where)} of {len(sweep.done)} subsets ({shown}); in the first: "
                      f"{first}")
        # once per code for the whole sweep (each subset's run was silenced)
        if cat is not None and issubclass(cat, BayesRiskWarning):
            warnings.warn(cat(f"{code}: {warn[code]}", code=code), skip_file_prefixes=CALLER)
        elif cat is not None:
            warnings.warn(f"{code}: {warn[code]}", cat, skip_file_prefixes=CALLER)
    return KnowledgeSweepResult(
        candidates=tuple(cands), synthesized=tuple(cands), measure=measure, table=table,
        drivers=drivers, levels=levels, shapley_note=note, settings=settings,
        warnings=tuple(warn), warning_details=warn, kind="attribute",
    )


def _synthesized(model: Any) -> list[str]:
    schema = getattr(model, "schema_", None)
    if schema is None:
        raise ValidationError(
            f"model {type(model).__name__} has no schema_ (the columns it synthesized).",
            code="MODEL_UNSUITED"
        )
    return list(schema.synthesized)


def one_seed(random_seed: Any) -> Any:
    """One seed every subset can reuse: a Generator or ``None`` gives one integer."""
    if random_seed is None:
        return int(np.random.SeedSequence().entropy % 2**63)
    if isinstance(random_seed, np.random.Generator):
        return int(random_seed.integers(2**63))
    return random_seed


class _AttributeSweep:
    """The subsets' ``attribute_risk`` runs, with the refits made once."""

    def __init__(self, original, synthetic, model, cands, records, options, seed, executor,
                 progressbar) -> None:
        self.original, self.synthetic, self.model = original, synthetic, model
        self.cands, self.records, self.seed, self.executor = cands, records, seed, executor
        self.options = dict(options)
        self.done: dict[frozenset, dict[str, Any]] = {}
        self.results: dict[frozenset, Any] = {}
        self.warn_subsets: dict[str, list[str]] = {}
        #: the first warning of each code: its class and text
        self.caught: dict[str, tuple[type, str]] = {}
        self.refits_shared = self._share_refits(progressbar)
        self.settings: dict[str, Any] = {}

    def _share_refits(self, progressbar: bool) -> bool:
        """The refits made once (:func:`shared_refits`); ``False`` when none are needed."""
        est = self.options["estimator"]
        if est.augmented is not None:
            return False
        fits = shared_refits(self.original, self.synthetic, model=self.model,
                             records=self.records, random_seed=self.seed,
                             progressbar=progressbar, **self.options)
        if fits is None:
            return False
        # the refits are made: their draws are set
        self.options["estimator"] = est.replace(augmented=fits, refit_draws=None)
        return True

    def value(self, s: frozenset, measure: str) -> float:
        v = self.done[s][measure]
        return -np.inf if v is None or not np.isfinite(v) else float(v)

    def run_many(self, subsets: Sequence[frozenset], progressbar: bool = False) -> None:
        todo = [s for s in dict.fromkeys(subsets) if s not in self.done]
        for s in progress(todo, total=len(todo), description="attribute knowledge sweep",
                          unit="column sets", enabled=progressbar):
            self._run(s)

    def _run(self, s: frozenset) -> None:
        known = [c for c in self.cands if c in s]
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            res = attribute_risk(
                self.original, self.synthetic, model=self.model, records=self.records,
                scenario=ScenarioSpec("partially_known", known=known) if known else "worst_case",
                random_seed=self.seed, progressbar=False, executor=self.executor,
                **self.options,
            )
        self.done[s] = file_measures(res.records)
        codes = list(res.warnings)
        for w in caught:  # e.g. RECORDS_FLAGGED, which the result's warnings do not list
            code = getattr(w.message, "code", None)
            if code:
                self.caught.setdefault(code, (w.category, str(w.message)))
                codes.append(code)
        for code in dict.fromkeys(codes):
            self.warn_subsets.setdefault(code, []).append(subset_label(s, self.cands))
        if not self.settings:
            self.settings = {k: res.settings.get(k) for k in
                             ("estimator", "prior", "candidates", "n_draws", "m", "bootstrap",
                              "model_check")
                             if k in res.settings}
        if s == frozenset(self.cands):
            self.results[s] = res


def shared_refits(original: pd.DataFrame, synthetic: Any, *, model: Any, records: Any,
                  random_seed: Any, progressbar: bool = False, **options: Any
                  ) -> list[Any] | None:
    """The ``m`` augmented models a run with these options fits, or ``None``."""
    unknown = sorted(set(options) - (set(_OPTIONS) - {"records"}))
    if unknown:
        raise ValidationError(f"unknown argument(s) for shared_refits: {unknown}.",
                              code="INVALID_ARGUMENT")
    o = {**_OPTIONS, **options}
    est = as_spec(o["estimator"], EstimatorSpec, "estimator", "kind", ESTIMATORS).replace(
        augmented=None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plan = prepare(model, original, synthetic, records, candidates=o["candidates"],
                       prior=o["prior"], scenario=ScenarioSpec(), estimator=est,
                       random_seed=random_seed, progressbar=progressbar)
    fits = [a.model for a in plan.augmented.models]
    return fits or None


def file_measures(records: pd.DataFrame) -> dict[str, Any]:
    """A subset's file-level figures over the records with a ``p_true``; flagged ones counted."""
    p = records["p_true"].to_numpy(dtype=np.float64)
    ok = ~np.isnan(p)
    top = records["is_top"].to_numpy(dtype=np.float64)[ok]
    base = records["baseline"].to_numpy(dtype=np.float64)[ok]
    return {
        "mean_p_true": float(np.mean(p[ok])) if ok.any() else float("nan"),
        "prop_top": float(np.mean(top)) if ok.any() else float("nan"),
        "mean_baseline": float(np.mean(base)) if ok.any() else float("nan"),
        "n_records": int(ok.sum()),
        "n_flagged": int((records["flag_codes"] != "").sum()),
    }


def _table(sweep: _AttributeSweep, cands: list[str], measure: str,
           greedy: list[frozenset]) -> pd.DataFrame:
    rows = []
    for s in sorted(sweep.done, key=lambda s: subset_order(s, cands)):
        row: dict[str, Any] = {"known": subset_label(s, cands), "n_known": len(s)}
        row.update({c: c in s for c in cands})
        row.update({k: sweep.done[s][k] for k in ATTRIBUTE_SWEEP_MEASURES})
        row["greedy_step"] = greedy.index(s) if s in greedy else -1
        rows.append(row)
    tab = pd.DataFrame(rows)
    tab["frontier"] = frontier(tab["n_known"].to_numpy(), tab[measure].to_numpy(dtype=float))
    return tab


def _drivers(sweep: _AttributeSweep, cands: list[str], lattice: bool
             ) -> tuple[pd.DataFrame, str]:
    full = frozenset(cands)
    shap: dict[str, dict[str, float]] = {}
    if lattice:
        note = ("exact Shapley values over every subset of the columns (the empty set: the "
                "worst case, no own value known)")
        for m in RANK_MEASURES:
            shap[m] = shapley_values({s: float(r[m]) for s, r in sweep.done.items()}, cands)
    else:
        note = ("Shapley values not computed: they need every subset of the columns, and the "
                "sweep stopped exhaustive evaluation at max_size; the risk without each column "
                "(from the full set) is given instead")
    rows = []
    for c in cands:
        row: dict[str, Any] = {"variable": c, "synthesized": True}
        for m in RANK_MEASURES:
            v_full = float(sweep.done[full][m])
            v_wo = float(sweep.done[full - {c}][m])
            row.update({f"shapley_{m}": shap[m][c] if shap else np.nan, f"{m}_without": v_wo,
                        f"{m}_removed": v_full - v_wo,
                        f"{m}_removed_share": (v_full - v_wo) / v_full if v_full else np.nan})
        rows.append(row)
    key = "shapley_mean_p_true" if shap else "mean_p_true_removed"
    tab = pd.DataFrame(rows).sort_values(key, ascending=False, kind="stable")
    return tab.reset_index(drop=True), note


def _levels(sweep: _AttributeSweep, cands: list[str], original: pd.DataFrame,
            bands: int) -> pd.DataFrame:
    """The records' ``p_true`` with every column of ``known`` known, summed by level."""
    res = sweep.results[frozenset(cands)]
    recs = res.records
    p = recs["p_true"].to_numpy(dtype=np.float64)
    ok = ~np.isnan(p)
    pos, p = recs.index.to_numpy(dtype=np.int64)[ok], p[ok]
    top = recs["is_top"].to_numpy(dtype=np.float64)[ok]
    total, N, t_total = float(p.sum()), len(p), float(top.sum())
    schema = sweep.model.schema_
    rows = []
    for c in cands:
        col = original[c].iloc[pos].reset_index(drop=True)
        lab = level_labels(col, schema[c].type in CATEGORICAL_TYPES, bands)
        codes = np.asarray(lab.cat.codes)
        for j, level in enumerate(lab.cat.categories):
            idx = np.flatnonzero(codes == j)
            r, n = float(p[idx].sum()), len(idx)
            first = float(top[idx].sum())
            rows.append({
                "variable": c, "level": str(level), "n_targets": n,
                "share_targets": n / N if N else np.nan, "p_true": r,
                "share_risk": r / total if total else np.nan,
                "risk_ratio": (r / total) / (n / N) if total and n else np.nan,
                "truth_first": first, "share_truth_first": first / t_total if t_total else np.nan,
            })
    return pd.DataFrame(rows)

