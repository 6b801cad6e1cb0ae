"""What the attribute step costs (:mod:`~bayes_risk.auditing.memory_plan`): its records and
bootstrap replicates, its least need in memory and what it keeps, its work (CART's plug-in
likelihood, smoothed columns at their own rate, a fitted model's refits), and its record
``COST``."""

from __future__ import annotations

from typing import Any

import numpy as np

from bayes_risk.auditing.context import StepContext
from bayes_risk.auditing.outcome import README_SIZES, Need, StepCost, Work
from bayes_risk.exceptions import NotSupportedError


def _attribute_sizes(p: Any) -> tuple[int, int]:
    """The step's records and bootstrap replicates: none with a ``compat`` estimator, and none
    with the plug-in the step rebuilds from the release's manifest (a plug-in likelihood has no
    posterior draws to bootstrap, ``attribute.prepare``)."""
    est = p.given.attribute_estimator
    plugin = p.attribute_source in ("cart plug-in", "rf plug-in")
    B = 0 if est.compat is not None or plugin else int(est.bootstrap)
    return (p.n_records if p.attribute_records is None else len(p.attribute_records)), B


def _attribute_need(p: Any) -> float:
    """The least the step holds: what ``attribute.evaluate.chunk_records`` checks before its
    first record, with one candidate a record (the step counts its candidate sets) and one
    record a chunk: a record's outputs (8 bytes a column guessed, 5 doubles and the ``B``
    bootstrap replicates, and 2 kB of Python objects), its share of the result's tables
    (1.5 kB) and of the summary's bootstrap tables (16 ``B`` bytes), beside one record's
    working arrays."""
    n, B = _attribute_sizes(p)
    per_record = 8.0 * (len(p.synthesized) + 5 + B) + 2048 + 1500 + 16.0 * B
    return n * per_record + 8.0 * (p.m + 2) * (2 + B)


def _attribute_kept(p: Any) -> float:
    """What the step leaves held after it: 4 kB a record, measured on the README's audit
    (CART's plug-in, no bootstrap: 3.6 kB a record at 20,000 records and 3.9 kB at 5,000, of
    which the result's own tables are 0.6 kB), and a record's bootstrap tables (16 bytes each
    of the ``B`` replicates) when the step bootstraps the draws."""
    n, B = _attribute_sizes(p)
    return n * (16.0 * B + 4000.0)


def attribute_need(ctx: StepContext, left: float | None) -> Need:
    """The step's least need (:func:`_attribute_need`) and what it keeps
    (:func:`_attribute_kept`)."""
    return Need(_attribute_need(ctx.plan), (
        "records in chunks sized from what is left beside the outputs every record keeps, "
        "which the step checks again from its candidate sets before its first record"),
        "it states its records a chunk and, for refits, their expected time when it starts",
        keeps=_attribute_kept(ctx.plan))


def _refit_time(ctx: Any) -> str:
    """What the step with a fitted model will say of its time: its refits' estimate
    (:func:`~bayes_risk.attribute.cost.refit_cost`, refined by a pilot refit when long, as the
    step starts) when the estimator refits; the records' evaluation, whose cost depends on the
    model's draws, is not estimated."""
    from bayes_risk.attribute.cost import distinct_records, refit_cost
    from bayes_risk.contract import auto_estimator

    model = ctx.model
    est = ctx.plan.given.attribute_estimator
    rest = "the records' evaluation depends on the model's draws and is timed as it runs"
    if model is None or isinstance(model, (str, bytes)) or hasattr(model, "__fspath__"):
        return f"the model is loaded when the step starts; {rest}"
    try:
        kind = est.kind if est.kind != "auto" else auto_estimator(model, augmented_given=False)
    except (AttributeError, TypeError, ValueError, NotSupportedError):
        return rest  # no refitting estimator (a plug-in model): the step decides its path
    if kind != "stabilised" or est.augmented is not None:
        return rest
    # each refit appends a dataset's synthesized records, as the step's own statement counts
    sel = getattr(model, "synthesized_records_", None)
    n_syn = int(np.count_nonzero(sel)) if sel is not None else ctx.plan.n_records
    first = next(iter(ctx.synthetic), None)
    distinct = None if first is None else distinct_records(model, ctx.original, first)
    cost = refit_cost(model, n_syn, ctx.plan.m, refit_draws=est.refit_draws, distinct=distinct)
    return f"its refits: {cost.line()}; {rest}"


#: CART's plug-in likelihood with smoothed columns: each smoothed value's kernel density is a
#: Monte Carlo sum over every candidate and dataset (CE-like tables, smoothed CART releases, the
#: audit's attribute step alone, CPU seconds, 2 cores at a load of 8: 400 records,
#: m = 2 and 5, 2–3 columns guessed, 2 smoothed: 0.40–0.64 ms a unit; 1,000 records, m = 5,
#: the README's release smoothed: 0.49–0.52 ms (0.44 ms at a load of 2–4); 2,000 records,
#: m = 3: 0.58–0.59 ms; benchmarks/README.md, attribute.SmoothedCARTPlugin)
_SMOOTHED_RATE = ("records x columns guessed x smoothed columns x datasets", 0.35e-3, 0.8e-3)
#: the originals it was measured up to and is trusted for (twice that, as ``README_SIZES``): a
#: unit costs more with more donors a node (300 records of CEdata, 5,571 records, 4 columns
#: guessed, 3 smoothed, m = 2: about 4 ms a unit; benchmarks/README.md)
_SMOOTHED_SIZES = (2_000, 4_000)


def attribute_work(ctx: StepContext) -> Work | str:
    """The step's work: records x columns guessed with CART's plug-in likelihood, times the
    smoothed columns and datasets (at their own rate, for an original of up to
    ``_SMOOTHED_SIZES[1]`` records) when columns are smoothed; with a fitted model, its refits'
    estimate instead (:func:`_refit_time`)."""
    p = ctx.plan
    if p.attribute_source == "model":
        return _refit_time(ctx)
    if p.attribute_source != "cart plug-in":
        return f"measured for CART's plug-in likelihood only, not {p.attribute_source}"
    m = max(p.m, 1)
    k, g, sm = _attribute_sizes(p)[0], max(len(p.synthesized), 1), len(p.smoothed_columns)
    if sm and p.n_records > _SMOOTHED_SIZES[1]:
        measured, trusted = _SMOOTHED_SIZES
        return (f"{p.n_records:,} records, more than the {trusted:,} the rate for smoothed "
                f"columns is trusted for (measured up to {measured:,})")
    units = k * g * (sm * m if sm else 1)
    return Work(units, units, f"{k:,} x {g}" + (f" x {sm} x {m}" if sm else ""),
                rate=_SMOOTHED_RATE if sm else None)


#: the step's costs (:mod:`bayes_risk.auditing.memory_plan`): its rate, for CART's plug-in
#: likelihood, measured on the README's audit (``README_SIZES``) on an AMD EPYC; what it keeps
#: is :func:`_attribute_kept`; its kernels' first run loads 12 MB (the README's audit of 5,000
#: records)
COST = StepCost(rate=("records x columns guessed", 3.4e-4, 5.1e-4), sizes=README_SIZES,
                work=attribute_work, need=attribute_need,
                kernels=("bayes_risk.attribute._kernels",), kernel_bytes=12e6)
