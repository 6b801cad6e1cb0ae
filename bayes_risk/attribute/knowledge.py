"""Attribute risk over the synthesized values the intruder knows (Hu 2019 §5).

See :doc:`/user_guide/knowledge`.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator, Sequence
from typing import Annotated, Any, Literal

import numpy as np
import pandas as pd

from bayes_risk._constraints import check_keywords
from bayes_risk._lattice import LatticeSpec, Warned, planned, sweep
from bayes_risk._specs import as_spec, cli_option
from bayes_risk.attribute.api import attribute_risk
from bayes_risk.attribute.prepare import prepare
from bayes_risk.attribute.specs import ESTIMATORS, EstimatorSpec, ScenarioSpec
from bayes_risk.data.provenance import check_release_model
from bayes_risk.data.schema import CATEGORICAL_TYPES
from bayes_risk.data.validate import require_frame, require_synthesized
from bayes_risk.exceptions import ValidationError, arg_name, interruptible
from bayes_risk.results.knowledge import KnowledgeSweepResult
from bayes_risk.warning_codes import message

__all__ = ["attribute_known_sweep", "with_shared_refits", "file_measures", "one_seed"]

#: arguments of ``attribute_risk`` a sweep passes on to every subset, with their defaults
_OPTIONS: dict[str, Any] = {
    "records": None, "candidates": "one-variable", "prior": "uniform", "estimator": "auto",
    "allow_other_model": False,
}


@interruptible
def attribute_known_sweep(
    original: pd.DataFrame, synthetic: Any, *, model: Any,
    known: Annotated[Sequence[str], cli_option(
        "--known-sweep", "also compute the attribute risk for every subset of these synthesized "
        "columns known of each record's own values (up to --max-size, a greedy path beyond; the "
        "empty subset is the worst case), the Pareto frontier, Shapley values and per-level "
        "contributions (DIR/known_sweep*.csv and .png); the refits are made once", nargs="+",
        metavar="COL")],
    lattice: LatticeSpec | None = None,
    measure: Literal["mean_p_true", "prop_top"] = "mean_p_true",
    random_seed: Any = None, progressbar: bool = True,
    executor: Any = None, **kwargs: Any,
) -> KnowledgeSweepResult:
    """Attribute risk over subsets of the synthesized values the intruder knows.

    Every subset ``K`` of ``known`` with ``|K| <= lattice.max_size`` is run with
    ``scenario="partially_known"``, then a greedy path beyond (see :doc:`/user_guide/knowledge`).

    Parameters
    ----------
    original, synthetic, model
        As in :func:`~bayes_risk.attribute.attribute_risk`.
    known : sequence of str
        The synthesized columns the intruder may know (1 to 20; not every synthesized column).
    lattice : LatticeSpec, optional
        As in :func:`~bayes_risk.identification.known_sweep`.
    measure : {"mean_p_true", "prop_top"}
        What the greedy path and the frontier rank subsets by.
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
        A bad ``known``, ``lattice.max_size`` out of range, too many subsets, ``scenario`` or an
        unknown argument in ``kwargs``.

    References
    ----------
    Hu (2019) §5; Hu, Reiter & Wang (2014); Shapley (1953).
    """
    require_frame(original, "original")
    lattice = as_spec(lattice, LatticeSpec, "lattice")
    cands, max_size, subsets = planned(known, kind="attribute", measure=measure, lattice=lattice,
                                       argument="known")
    if "scenario" in kwargs or "known" in kwargs:
        raise ValidationError(
            "attribute_known_sweep sets scenario and known for every subset; give the columns "
            "the intruder may know as known=[...]."
        )
    check_keywords(kwargs, _OPTIONS, "attribute_known_sweep")
    syn = _synthesized(model)
    require_synthesized(cands, syn, arg_name("known"), code="INVALID_ARGUMENT",
                        note="; unsynthesized columns are always known to the intruder")
    if not [c for c in syn if c not in cands]:
        raise ValidationError(
            f"{arg_name('known')} holds every synthesized column ({syn}): with all of them known "
            "nothing is left to guess; leave at least one out.",
            code="INVALID_ARGUMENT",
        )
    options = {k: kwargs.get(k, v) for k, v in _OPTIONS.items()}
    options["estimator"] = as_spec(options["estimator"], EstimatorSpec, "estimator", "kind",
                                   ESTIMATORS)
    records = options.pop("records")
    if not options["allow_other_model"]:  # refused before the refits (each subset checks too)
        check_release_model(model, synthetic, original)
    seed = one_seed(random_seed)
    ev = _Evaluator(original, synthetic, model, cands, records, options, seed, executor,
                    progressbar)
    return sweep(ev, cands, subsets, max_size=max_size, lattice=lattice,
                 measure=measure, synthesized=cands, progressbar=progressbar,
                 extra={"synthesized": list(syn), "random_seed": seed,
                        "refits_shared": ev.refits_shared})


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


class _Evaluator:
    """The subsets' ``attribute_risk`` runs, with the refits made once."""

    kind = "attribute"
    description = "attribute knowledge sweep"

    def __init__(self, original, synthetic, model, cands, records, options, seed, executor,
                 progressbar) -> None:
        self.original, self.synthetic, self.model = original, synthetic, model
        self.cands, self.records, self.seed, self.executor = cands, records, seed, executor
        self.options = dict(options)
        self.warnings: dict[str, str] = {}
        self.full: Any = None
        self.options["estimator"] = with_shared_refits(
            original, synthetic, model=model, records=records, random_seed=seed,
            progressbar=progressbar, **self.options)
        self.refits_shared = (options["estimator"].augmented is None
                              and self.options["estimator"].augmented is not None)
        self._settings: dict[str, Any] = {}

    def evaluate(self, todo: list[frozenset]
                 ) -> Iterator[tuple[frozenset, dict[str, Any], Warned]]:
        for s in todo:
            yield s, *self._run(s)

    def _run(self, s: frozenset) -> tuple[dict[str, Any], Warned]:
        known = [c for c in self.cands if c in s]
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            res = attribute_risk(
                self.original, self.synthetic, model=self.model, records=self.records,
                scenario=ScenarioSpec("partially_known", known=known) if known else "worst_case",
                random_seed=self.seed, progressbar=False, executor=self.executor,
                **self.options,
            )
        # a code of the result's warnings not emitted is given with its standard text
        warned: Warned = {code: (None, message(code)) for code in res.warnings}
        emitted: set[str] = set()
        for w in caught:  # e.g. RECORDS_FLAGGED, which the result's warnings do not list
            code = getattr(w.message, "code", None)
            if code and code not in emitted:
                emitted.add(code)
                warned[code] = (w.category, str(w.message))
        if not self._settings:
            self._settings = {k: res.settings.get(k) for k in
                              ("estimator", "prior", "candidates", "n_draws", "m", "bootstrap",
                               "model_check")
                              if k in res.settings}
        if s == frozenset(self.cands):
            self.full = res
        return file_measures(res), warned

    def settings(self) -> dict[str, Any]:
        return dict(self._settings)

    def level_inputs(self) -> tuple[pd.DataFrame, set[str], np.ndarray, np.ndarray]:
        """The records with a ``p_true`` under the full set, their ``p_true`` and whether the
        true values are the best guess."""
        recs = self.full.records
        p = recs["p_true"].to_numpy(dtype=np.float64)
        ok = ~np.isnan(p)
        pos = recs.index.to_numpy(dtype=np.int64)[ok]
        schema = self.model.schema_
        return (self.original[self.cands].iloc[pos].reset_index(drop=True),
                {c for c in self.cands if schema[c].type in CATEGORICAL_TYPES}, p[ok],
                recs["is_top"].to_numpy(dtype=np.float64)[ok])


def with_shared_refits(original: pd.DataFrame, synthetic: Any, *, model: Any, records: Any,
                       random_seed: Any, progressbar: bool = False, **options: Any
                       ) -> EstimatorSpec:
    """The estimator of a run with these options, holding the ``m`` augmented models it fits
    made once (for the runs that share them: a sweep's subsets, a curve's shares, the run
    beside them); as given when it holds them already or the run needs none."""
    check_keywords(options, set(_OPTIONS) - {"records"}, "with_shared_refits")
    o = {**_OPTIONS, **options}
    est = as_spec(o["estimator"], EstimatorSpec, "estimator", "kind", ESTIMATORS)
    if est.augmented is not None:
        return est
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plan = prepare(model, original, synthetic, records, candidates=o["candidates"],
                       prior=o["prior"], scenario=ScenarioSpec(), estimator=est,
                       random_seed=random_seed, progressbar=progressbar)
    fits = [a.model for a in plan.augmented.models]
    # the refits are made: their draws are set
    return est.replace(augmented=fits, refit_draws=None) if fits else est


def file_measures(result: Any) -> dict[str, Any]:
    """A run's file-level figures over the records with a ``p_true`` (flagged ones counted),
    with what a release that says nothing of those records would give
    (:func:`~bayes_risk.results._attribute_null.file_null`: ``null_mean_p_true``,
    ``null_prop_top``, their expected values; ``nan`` without fixed candidates)."""
    from bayes_risk.results._attribute_null import file_null

    records = result.records
    p = records["p_true"].to_numpy(dtype=np.float64)
    ok = ~np.isnan(p)
    top = records["is_top"].to_numpy(dtype=np.float64)[ok]
    base = records["baseline"].to_numpy(dtype=np.float64)[ok]
    per = result.record_null()
    null = {} if per is None else file_null({c: per[c].to_numpy() for c in per.columns}, ok)
    nan = float("nan")
    return {
        "mean_p_true": float(np.mean(p[ok])) if ok.any() else nan,
        "prop_top": float(np.mean(top)) if ok.any() else nan,
        "null_mean_p_true": null.get("mean_p_true", {}).get("expected", nan),
        "null_prop_top": null.get("prop_top", {}).get("expected", nan),
        "mean_baseline": float(np.mean(base)) if ok.any() else nan,
        "n_records": int(ok.sum()),
        "n_flagged": int((records["flag_codes"] != "").sum()),
    }
