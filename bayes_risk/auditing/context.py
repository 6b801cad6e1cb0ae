"""The run's context and the helpers the audit steps share."""

from __future__ import annotations

import contextlib
import copy
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from bayes_risk._io import write_json
from bayes_risk.auditing.outcome import StepFigure, StepOutcome
from bayes_risk.auditing.plan import AuditPlan, radius_text

__all__ = ["add_run_warnings", "aligned_columns", "identification_kwargs", "loaded_model",
           "membership_reuses", "named_run", "radius_label", "ran",
           "rebuilt_synthesizer", "release_independent", "rows_aligned", "RunState",
           "shown_known_values", "skipped", "step_folder", "StepContext", "write_known_sweep",
           "write_table"]


@dataclass
class RunState:
    """What the steps of one run work out once and share (a rerun on another release starts
    from a fresh one, the pooled intruder's radii kept)."""

    #: the synthesizer rebuilt from the release's manifest (built once)
    rebuilt: Any = None
    #: the fitted model once checked against the original and the release (several steps'
    #: ``applies`` and ``preflight`` read it before their steps do)
    checked_model: Any = None
    #: whether row i of every dataset is record i of the original (None: not checked)
    rows_aligned: bool | None = None
    #: the attribute step's refits of ``refits_model``, reused by the membership step
    refits: list[Any] | None = None
    refits_model: Any = None
    #: the radii of the pooled intruder's worst case over the radius search (the posterior
    #: replicates are matched there, with the same fallback)
    worst_radius: dict[str, float] | None = None
    #: where the audit's executor runs (:func:`bayes_risk.executors.describe`), read once
    where: dict[str, Any] | None = None
    #: the posterior step's replicates drawn and matched at once, from the memory plan
    #: (``None``: a whole batch)
    replicate_chunk: int | None = None
    #: the posterior step's figures comparable with the identification lines' (the
    #: replicates pooled m at a time, and one at a time), which those lines read
    #: (:func:`~bayes_risk.auditing.measures.posterior_identification.comparable_figures`)
    posterior_figures: dict[str, Any] | None = None


@dataclass
class StepContext:
    """What every step reads: the data, the release, the plan (with the audit's settings,
    ``plan.given``), where to write, and what the run's steps share (``run``)."""

    original: pd.DataFrame
    synthetic: Any
    schema: Any
    plan: AuditPlan
    model: Any
    root: Path | None
    progressbar: bool
    #: records of the population not in the original (the membership step's non-members)
    holdout: Any = None
    #: the original's survey weights (``weights=``)
    weights: Any = None
    #: where the engines of the steps whose measure names an ``executor`` part run their
    #: partitions (``audit(executor=...)``, an :class:`~bayes_risk.executors.Executor`)
    executor: Any = None
    #: the model function of a PyMC model folder given as ``model`` (``load_model``'s)
    model_function: Any = None
    run: RunState = field(default_factory=RunState)


def aligned_columns(ctx: StepContext) -> list[str]:
    """The columns the release carries unchanged row by row (none when lengths differ)."""
    from bayes_risk.data.alignment import check_rows_aligned

    syn = ctx.synthetic
    if not all(len(z) == len(ctx.original) for z in syn):
        return []
    manifest = syn if (getattr(syn, "schema", None) is not None
                       and syn.schema.synthesized) else None
    return check_rows_aligned(ctx.original, list(syn), manifest,
                              synthesized=ctx.plan.synthesized)


def rows_aligned(ctx: StepContext) -> bool:
    """Whether some column is released unchanged row by row (checked once, then kept)."""
    if ctx.run.rows_aligned is None:
        import warnings

        from bayes_risk.exceptions import SchemaError

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the check's warnings are the preflight's
            try:
                ctx.run.rows_aligned = bool(aligned_columns(ctx))
            except SchemaError:
                ctx.run.rows_aligned = False
    return ctx.run.rows_aligned


def rebuilt_synthesizer(ctx: StepContext) -> Any:
    """The synthesizer rebuilt from the release's manifest (built on first use, then kept)."""
    if ctx.run.rebuilt is None:
        from bayes_risk.models import rebuild_synthesizer

        ctx.run.rebuilt = rebuild_synthesizer(ctx.original, ctx.synthetic)
    return ctx.run.rebuilt


def release_independent(what: str, why: str) -> None:
    """Warn (``RELEASE_INDEPENDENT``) that a measure is a baseline of the original."""
    import warnings

    from bayes_risk.exceptions import CALLER, DataWarning

    warnings.warn(DataWarning(
        f"{what} cannot depend on the release: {why} It is a baseline of the original, "
        "reported apart from the verdict, not a risk of the release (RELEASE_INDEPENDENT).",
        code="RELEASE_INDEPENDENT"), skip_file_prefixes=CALLER)


@contextlib.contextmanager
def named_run(label: str) -> Iterator[None]:
    """Raise the package's warnings of the block again, naming the run they come from."""
    import warnings

    from bayes_risk.exceptions import BayesRiskWarning

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield
    for w in caught:
        msg = w.message
        if isinstance(msg, BayesRiskWarning):  # a copy: its code and attributes kept
            msg = copy.copy(msg)
            msg.args = (f"{str(w.message).rstrip()} (run: {label})",)
        warnings.warn_explicit(msg, w.category, w.filename, w.lineno)


def step_folder(ctx: StepContext, name: str) -> Path | None:
    """The step's sub-folder ``name``, made now; ``None`` when the audit writes nothing."""
    if ctx.root is None:
        return None
    p = ctx.root / name
    p.mkdir(parents=True, exist_ok=True)
    return p


def write_table(ctx: StepContext, frame: pd.DataFrame, path: Path, *, index: bool = False,
                fast: bool = False) -> None:
    """Write a step's table as CSV, the confidential records' values withheld unless the
    audit shows them (:func:`~bayes_risk.auditing.confidential.withheld`: the report's rule);
    ``fast``: with pyarrow, for the large record tables (no index)."""
    from bayes_risk.auditing.confidential import withheld

    shown = withheld(frame, path.name, bool(ctx.plan.given.show_confidential_values))
    if fast:
        from bayes_risk.data.io import write_csv

        write_csv(shown, path)
    else:
        shown.to_csv(path, index=index)


def ran(name: str, result: Any, folder: Path | None, files: list[str], *,
        figures: dict[str, StepFigure] | None = None, **extra: Any) -> StepOutcome:
    """The outcome of step ``name`` that ran, its ``files`` in ``folder`` (``None``: none);
    its ``figures`` (file name -> :class:`StepFigure`) are drawn into ``folder`` now, listed
    where ``files`` names them, else after them."""
    figures = figures or {}
    if folder is not None:
        for file, fig in figures.items():
            fig.save(folder / file)
        files = [*files, *(f for f in figures if f not in files)]
    return StepOutcome(name=name, status="ran", result=result,
                       folder=name if folder is not None else None, files=files, extra=extra,
                       figures=figures)


def skipped(name: str, reason: str, **extra: Any) -> StepOutcome:
    """The outcome of step ``name`` that did not run, and why."""
    return StepOutcome(name=name, status="skipped", reason=reason, extra=extra)


def add_run_warnings(folder: Path, step: str, run_warnings: list[dict[str, Any]]) -> None:
    """Add ``command`` and ``run_warnings`` to a step's ``summary.json`` files."""
    for path in sorted(folder.rglob("summary.json")):
        d = json.loads(path.read_text())
        d.setdefault("command", f"audit {step}")
        d["run_warnings"] = run_warnings
        codes = [w["code"] for w in run_warnings]
        d["warnings"] = list(dict.fromkeys([*(d.get("warnings") or []), *codes]))
        write_json(path, d)


def loaded_model(ctx: StepContext) -> Any:
    """The fitted model given (loaded from its folder), checked against the original and the
    release once."""
    from bayes_risk.exceptions import ValidationError

    model = ctx.model
    if isinstance(model, (str, Path)):
        from bayes_risk.models import load_model

        model = load_model(model, model_function=ctx.model_function)
        ctx.model = model  # loaded once for every step
    if model is ctx.run.checked_model:
        return model
    check = getattr(model, "check_fingerprint", None)
    problem = check(ctx.original) if check is not None else None
    if problem is not None:
        raise ValidationError(
            f"model: the original is not the table the model was fitted to ({problem}).",
            code="ORIGINAL_DIFFERS",
        )
    if not ctx.plan.given.allow_other_model:  # allowed: each step's measure warns MODEL_DIFFERS
        from bayes_risk.data.provenance import check_release_model

        check_release_model(model, ctx.synthetic, ctx.original)
    if not ctx.progressbar and hasattr(model, "progressbar"):
        model.progressbar = False
    ctx.run.checked_model = model
    return model


def shown_known_values(ctx: StepContext) -> pd.DataFrame | None:
    """The known values of every record when the report may show them."""
    if not ctx.plan.given.show_confidential_values:
        return None
    return ctx.original[ctx.plan.known]


def write_known_sweep(ctx: StepContext, ks: Any, folder: Path) -> list[str]:
    """Write a knowledge sweep's tables into ``folder``; their file names."""
    tables, _ = ks.files()  # the report draws the figures itself
    for name, frame in tables.items():
        write_table(ctx, frame, folder / name, fast=True)
    return list(tables)


def membership_reuses(ctx: StepContext, model: Any) -> bool:
    """Whether the membership step will run on ``model``, so the attribute refits serve both."""
    from bayes_risk.exceptions import NotSupportedError
    from bayes_risk.membership.api import check_model

    if ctx.holdout is None or ctx.model is None or model is not loaded_model(ctx):
        return False
    try:
        check_model(model, selection=ctx.plan.membership_selection)
    except NotSupportedError:
        return False
    return True


def radius_label(radius: dict[str, float]) -> str:
    """``"radius Age = 0.1, Income = 0.01"`` (or exact matching), for the runs' warnings."""
    return f"radius {radius_text(radius)}" if radius else radius_text(radius)


def identification_kwargs(ctx: StepContext) -> dict[str, Any]:
    """The identification engine's arguments of both identification steps (and of the
    rises' re-runs): per dataset, at the plan's radius, no match where no record matches."""
    p = ctx.plan
    from bayes_risk.identification.specs import MatchSpec

    return dict(schema=ctx.schema,
                match=MatchSpec(radius=dict(p.radius) or None,
                                radius_type=p.given.match.radius_type,
                                fallback="none"),
                aggregation="per_dataset", progressbar=ctx.progressbar,
                executor=ctx.executor)
