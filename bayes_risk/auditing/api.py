"""``bayes_risk.audit()``: every measure of the package on one release, and one report.

The audit is an orchestrator: it works out a plan (:class:`~bayes_risk.auditing.AuditPlan`) from the
release and the arguments, then runs each step through the public function of its measure
(``utility_summary``, ``identification_risk`` / ``radius_sweep``, ``attribute_risk``,
``disclosure_measures``), writing the files its sub-command writes into a sub-folder. It defines
no measure of its own.
"""

from __future__ import annotations

import json
import os
import sys
import time
import traceback
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from bayes_risk.auditing.outcome import StepOutcome
from bayes_risk.auditing.plan import DEFAULT_SWEEP, STEP_NAMES, AuditPlan, Thresholds
from bayes_risk.auditing.result import AuditResult
from bayes_risk.exceptions import (
    ConvergenceWarning,
    SchemaError,
    ValidationError,
    _caused_by_interrupt,
)

__all__ = ["audit"]

#: the steps, in order: name (``steps.<name>_step`` runs it) and heading
_STEPS: tuple[tuple[str, str], ...] = (
    ("utility", "Utility"),
    ("identification", "Identification risk"),
    ("posterior_identification", "Posterior Monte Carlo identification risk"),
    ("attribute", "Attribute risk"),
    ("membership", "Membership risk"),
    ("disclosure", "Empirical disclosure measures (synthpop)"),
)


def audit(
    original: pd.DataFrame | str | os.PathLike[str],
    synthetic: Any,
    *,
    known: Sequence[str],
    model: Any = None,
    synthesized: Sequence[str] | None = None,
    categorical: Sequence[str] | None = None,
    schema: Any = None,
    radius: float | Mapping[str, float] | None = None,
    radius_type: str = "percentage",
    sweep: Sequence[float] | None = DEFAULT_SWEEP,
    sweep_unsynthesized: bool = False,
    known_sweep: bool = False,
    targets: Sequence[str] | None = None,
    ngroups_target: int | None = 10,
    attribute_records: Sequence[int] | None = None,
    attribute_estimator: str = "auto",
    refit_draws: int | None = None,
    thresholds: Thresholds | Mapping[str, float] | Sequence[str] | None = None,
    show_confidential_values: bool = False,
    out: str | os.PathLike[str] | None = None,
    random_seed: int | None = None,
    progressbar: bool = True,
    skip: Sequence[str] | None = None,
    combining_rules: str = "auto",
    pmse_method: str = "logit",
    max_order: int = 1,
    imputed: Sequence[str] | str = "auto",
    holdout: pd.DataFrame | None = None,
) -> AuditResult:
    """Audit a synthetic release: utility, identification, attribute and empirical risk.

    Parameters
    ----------
    original : DataFrame or path
        The confidential table (CSV or Parquet path accepted).
    synthetic : SyntheticData, list of DataFrame, path or list of paths
        The release: a ``SyntheticData`` (or its folder, whose manifest gives the synthesized
        columns, the replaced records and the method) or one table per synthetic dataset.
    known : sequence of str
        Columns the intruder knows for every target (identification risk) and the keys of the
        empirical measures.
    model : fitted model or path, optional
        The fitted Bayesian synthesis model (or its folder written by ``bayes-risk fit``) for
        attribute risk. Without it, a CART or random-forest release is audited with the plug-in
        likelihood of its rebuilt synthesizer; any other release skips attribute risk.
    synthesized : sequence of str, optional
        Synthesized columns. Default: the release manifest's, else the columns that differ from
        the original in some dataset.
    categorical : sequence of str, optional
        Integer-coded factors (type inference otherwise treats integers as counts).
    schema : Schema, optional
        Column types (overrides the release's and inference).
    radius : float or dict, optional
        Matching radius of numeric known columns (a dict: only the columns named get one, the
        others are matched exactly). Default: percentage radius 0.1 for every numeric (count or
        continuous) known column (Hornby & Hu 2021); categorical columns match exactly.
    radius_type : {"percentage", "absolute", "quantile_sd"}
        How ``radius`` is read (default ``"percentage"``).
    sweep : sequence of float or None
        Common radii of the radius sweep (default Hornby & Hu's 0.01 … 0.3); ``None`` skips it.
        The sweep varies the radii of the synthesized known columns only: the release carries
        an unsynthesized column unchanged, so widening its radius only adds matches the release
        has no part in (the largest risk is then at the smallest radius by construction).
    sweep_unsynthesized : bool
        Vary the radii of the unsynthesized known columns in the sweep too (default False).
    known_sweep : bool
        Add to the identification step the risk for every subset of the known columns, the
        Pareto frontier of risk against the number of columns known and the drivers of the
        risk (Shapley values, per-level contributions;
        :func:`~bayes_risk.identification.known_sweep`), and to the attribute step the same
        over the subsets of the synthesized known columns known of the record's own values
        (:func:`~bayes_risk.attribute.attribute_known_sweep`; when a synthesized column is left
        to guess). Off by default: ``2**k`` subsets for ``k`` known columns. The verdict does
        not read it.
    targets : sequence of str, optional
        Targets of the empirical disclosure measures (one run each). Default: the synthesized
        columns the intruder does not know.
    ngroups_target : int or None
        Group a numeric target into about this many groups for the empirical measures (default
        10; ``None``: every distinct value is a level, synthpop's default).
    attribute_records : sequence of int, optional
        Records (0-based) whose attribute risk is estimated (default all).
    attribute_estimator : {"auto", "stabilised", "is"}
        Estimator of the attribute step (``estimator`` of
        :func:`~bayes_risk.attribute.attribute_risk`; default ``"auto"``: stabilised for class
        P models). The stabilised estimator refits the model once per synthetic dataset, on the
        original and that dataset together: about ``m × 2 ×`` the time of the model's own fit,
        estimated and printed before the refits start; ``"is"`` makes no refit.
    refit_draws : int, optional
        Kept draws per chain of each refit (``refit_draws`` of
        :func:`~bayes_risk.attribute.attribute_risk`; default: the model's ``draws``).
    thresholds : Thresholds, mapping or list of "NAME=VALUE", optional
        Release-board thresholds of the verdict lines (defaults:
        :class:`~bayes_risk.auditing.Thresholds`).
    show_confidential_values : bool
        Show the known (quasi-identifier) values of the records most at risk in the report.
        Off by default; the report says so.
    out : path, optional
        Folder to write every step's files into (one sub-folder per step), with ``summary.json``.
        It must not exist or be empty; it appears complete or not at all. ``None``: nothing is
        written (the report's numbers then link to no file).
    random_seed : int, optional
        Seed of every random draw (drawn and recorded when ``None``).
    progressbar : bool
        Show progress (step lines and the measures' progress bars) on stderr.
    skip : sequence of str, optional
        Steps not to run (``"utility"``, ``"identification"``, ``"posterior_identification"``,
        ``"attribute"``, ``"membership"``, ``"disclosure"``); they are reported as skipped, as
        asked.
    combining_rules : {"auto", "partial", "full-same-n", "full-population"}
        Combining rules of the interval overlaps (see
        :func:`~bayes_risk.utility.utility_summary`); ``"auto"`` (default): the release's
        recorded generation scheme, else inferred from the synthesized columns.
    pmse_method : {"logit", "cart"}
        Propensity model of the utility step's pMSE (default ``"logit"``, synthpop's
        ``utility.gen``; ``"cart"`` for wide tables whose logit design would be too large).
    max_order : int
        Interactions of the logit propensity model: ``1`` (default) adds every two-way
        interaction, ``0`` main effects only (a table with many columns or levels needs it:
        the step refuses a design with more coefficients than records, ``DESIGN_TOO_LARGE``).
    imputed : "auto" or sequence of str
        Columns whose missing values the synthesizer imputed, compared on the original's
        observed cells in the utility step (see :func:`~bayes_risk.utility.utility_summary`);
        ``"auto"`` (default): the release's recorded ``imputed_columns``, else inferred;
        ``[]``: none.
    holdout : DataFrame, optional
        Records of the same population that were not in the original: the membership step
        (:func:`~bayes_risk.membership_risk`, with the fitted ``model``) runs only when it is
        given, and is skipped with the reason otherwise (it refits the model once per dataset).

    Returns
    -------
    AuditResult
        The plan, one :class:`~bayes_risk.auditing.StepOutcome` per step (with the measure's result
        object), the verdict lines; ``to_html(path)`` / ``to_markdown(path)`` write the report.

    Raises
    ------
    ValidationError, SchemaError
        For a bad argument (named in the message), before any measure is computed; or when a
        step fails on the input (the message names the step: pass ``skip=[step]`` to audit
        without it). Nothing is written to ``out`` then.

    Notes
    -----
    A step that fails for another reason (out of memory, an error of the measure) does not
    stop the others: its outcome has status ``"failed"`` with the error, the result's
    ``complete`` is ``False`` and its ``verdict_text`` opens with "The audit is incomplete".
    """
    from bayes_risk.auditing import steps as st

    data, syn, sch = _inputs(original, synthetic, schema, categorical)
    seed_src = "given" if random_seed is not None else "drawn"
    if random_seed is None:
        random_seed = int(np.random.SeedSequence().generate_state(1, dtype=np.uint32)[0])
    plan = _make_plan(
        data, syn, sch, known=known, model=model, synthesized=synthesized, radius=radius,
        radius_type=radius_type, sweep=sweep, targets=targets, ngroups_target=ngroups_target,
        attribute_records=attribute_records, attribute_estimator=attribute_estimator,
        refit_draws=refit_draws, thresholds=Thresholds.parse(thresholds),
        show=show_confidential_values, random_seed=random_seed, seed_src=seed_src,
        skip=skip, sweep_unsynthesized=sweep_unsynthesized, combining_rules=combining_rules,
        pmse_method=pmse_method, max_order=max_order, known_sweep=known_sweep,
        imputed=imputed,
    )
    root = Path(out) if out is not None else None
    if root is not None and root.exists() and (not root.is_dir() or any(root.iterdir())):
        raise ValidationError(
            f"out {str(root)!r} exists and is not an empty folder; give a new folder."
        )
    ctx = st.StepContext(original=data, synthetic=syn, schema=sch.with_roles(plan.synthesized),
                         plan=plan, model=model, root=None, progressbar=progressbar,
                         holdout=holdout)
    _preflight(ctx)  # every input every step reads, checked before the first step runs

    def run_all() -> list[StepOutcome]:
        return [_run_step(i, len(_STEPS), name, title, getattr(st, f"{name}_step"), ctx)
                for i, (name, title) in enumerate(_STEPS, start=1)]

    if root is None:
        return AuditResult(plan=plan, steps=run_all(), root=None)
    from bayes_risk._io import atomic_dir

    with atomic_dir(root) as tmp:  # the folder appears complete or not at all
        ctx.root = tmp
        outcomes = run_all()
        AuditResult(plan=plan, steps=outcomes, root=tmp).write_summary(tmp / "summary.json")
    return AuditResult(plan=plan, steps=outcomes, root=root)


def _say(ctx: Any, msg: str) -> None:
    if ctx.progressbar:
        sys.stderr.write(f"[audit] {msg}\n")  # progress goes where the progress bars go
        sys.stderr.flush()


def _run_step(i: int, n: int, name: str, title: str, fn: Any, ctx: Any) -> StepOutcome:
    """Run one step; its warnings are recorded on the outcome and passed on to the caller.

    A step the caller asked to skip is not run. A step that fails on the input (a
    ``ValidationError`` or ``SchemaError``) fails the audit: the error is raised again, naming
    the step. Any other error is recorded on the outcome (status ``"failed"``): the other
    steps still run and the result is marked incomplete.
    """
    if name in ctx.plan.skip:
        return StepOutcome(name=name, title=title, status="skipped",
                           reason=f"skipped as asked (skip {name!r}, --skip {_cli_name(name)}).")
    _say(ctx, f"step {i}/{n}: {title.lower()}")
    t0 = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for cat in (DeprecationWarning, PendingDeprecationWarning, FutureWarning,
                    ResourceWarning):
            warnings.simplefilter("ignore", cat)
        try:
            outcome = fn(ctx)
        except (ValidationError, SchemaError) as err:
            # bad input the checks before the first step did not catch: the audit fails on it
            # (a verdict without this step would read as a complete one)
            raise type(err)(
                f"{title} step: {' '.join(str(err).split())} (to audit the release without "
                f"this step, pass skip=[{name!r}] / --skip {_cli_name(name)}).",
                code=getattr(err, "code", None),
            ) from err
        except Exception as err:
            if _caused_by_interrupt(err):
                raise
            # one measure that cannot be computed on this release does not hide the others;
            # the audit is marked incomplete and the verdict says so first
            outcome = StepOutcome(name=name, status="failed",
                                  reason=f"{type(err).__name__}: {' '.join(str(err).split())}",
                                  extra={"traceback": "".join(traceback.format_exception(err))})
    outcome.name, outcome.title = name, title
    outcome.seconds = time.perf_counter() - t0
    outcome.warnings = _dedupe(caught)
    named = _with_mcmc_warnings(outcome.warnings, outcome.extra.get("mcmc_warnings") or [])
    if outcome.folder is not None and ctx.root is not None:
        from bayes_risk.auditing.steps import add_run_warnings

        add_run_warnings(ctx.root / outcome.folder, name, outcome.warnings)
    for w in caught:  # the caller (or the CLI's run) sees every warning once
        warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    for w in named:  # and the failed checks no warning raised during the step (a saved fit's)
        warnings.warn(ConvergenceWarning(w["message"], code=w["code"]), stacklevel=2)
    if outcome.status != "ran":
        _say(ctx, f"  {outcome.status}: {outcome.reason}")
    return outcome


def _cli_name(step: str) -> str:
    return step.replace("_", "-")


def _preflight(ctx: Any) -> None:
    """Check, before the first step runs, the inputs the steps read from the data: the
    original against the release (fingerprint, row alignment), the fitted model against the
    original, and the synthesizer rebuilt from a CART / random-forest manifest (built once here
    and shared by the steps that need it). Errors are raised as the steps would raise them."""
    from bayes_risk.auditing import steps as st

    plan, data, syn = ctx.plan, ctx.original, ctx.synthetic
    _say(ctx, "checking the inputs of every step")
    with warnings.catch_warnings():
        # only the errors matter here: the steps raise these warnings again, recorded
        warnings.simplefilter("ignore")
        from bayes_risk.data.alignment import check_rows_aligned
        from bayes_risk.data.fingerprint import check_original

        check_original(data, syn)
        ctx.rows_aligned = False
        if all(len(z) == len(data) for z in syn):
            manifest = syn if (syn.schema is not None and syn.schema.synthesized) else None
            ctx.rows_aligned = bool(check_rows_aligned(data, list(syn), manifest,
                                                       synthesized=plan.synthesized))
        attribute = "attribute" not in plan.skip and plan.attribute_source is not None
        posterior = "posterior_identification" not in plan.skip and bool(plan.known_synthesized)
        users = [n for n, use in (("attribute", attribute), ("posterior_identification",
                                                             posterior)) if use]
        try:
            if users and ctx.model is not None:
                st._loaded_model(ctx)
            elif attribute or (posterior and st.rebuilt_has_posterior(syn)):
                st.rebuilt_synthesizer(ctx)
        except (ValidationError, SchemaError) as err:
            raise type(err)(
                f"{' '.join(str(err).split())} (needed by the "
                f"{' and '.join(u.replace('_', ' ') for u in users)} step"
                f"{'s' if len(users) > 1 else ''}; to audit the release without "
                f"{'them' if len(users) > 1 else 'it'}, pass skip={users!r} / --skip "
                f"{' '.join(_cli_name(u) for u in users)}).",
                code=getattr(err, "code", None),
            ) from err


def _with_mcmc_warnings(step_warnings: list[dict[str, Any]],
                        mcmc: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Put the structured MCMC warnings of a step's fits (``AttributeRiskResult.mcmc``) in its
    list of warnings, each naming its fit and carrying its failed checks (``checks``: code,
    fit, quantity, statistic, value, threshold).

    A fit made during the step (an augmented fit) raised its warning then: that entry (same code
    and text) gains the fit's name. A fit made before the step (the saved model) raised none
    here: its warning is added, and returned so that the caller raises it too. A model code
    without checks (``TRUNCATION_TOO_SMALL``) is added only when no warning of the step has
    that code (its text at fit time differs from the record's; the result's ``mcmc`` record
    names every fit that has it).
    """
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
    from bayes_risk.cli._run import warning_line

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


def _inputs(original: Any, synthetic: Any, schema: Any, categorical: Any) -> tuple:
    from bayes_risk.data import SyntheticData, infer_schema
    from bayes_risk.data.io import read_synthetic, read_table

    if isinstance(original, (str, os.PathLike)):
        original = read_table(original)
    if not isinstance(original, pd.DataFrame):
        raise ValidationError(
            f"original must be a DataFrame or a table path. Got {type(original).__name__}."
        )
    if len(original) == 0 or len(original.columns) == 0:
        raise ValidationError("original has no records or no columns; expected a table.")
    if isinstance(synthetic, (str, os.PathLike)) or (
        isinstance(synthetic, (list, tuple)) and synthetic
        and all(isinstance(s, (str, os.PathLike)) for s in synthetic)
    ):
        synthetic = read_synthetic(synthetic, like=original)
    elif isinstance(synthetic, pd.DataFrame):
        synthetic = SyntheticData([synthetic], method="unknown")
    elif isinstance(synthetic, (list, tuple)) and synthetic and all(
        isinstance(s, pd.DataFrame) for s in synthetic
    ):
        synthetic = SyntheticData(list(synthetic), method="unknown")
    elif not isinstance(synthetic, SyntheticData):
        raise ValidationError(
            "synthetic must be a SyntheticData, a list of DataFrames, a SyntheticData folder or "
            f"a list of table paths. Got {type(synthetic).__name__}."
        )
    missing = [c for c in original.columns if c not in synthetic[0].columns]
    if missing:
        raise SchemaError(f"synthetic: the release lacks the original's columns {missing}.")
    extra = [c for c in synthetic[0].columns if c not in original.columns]
    if extra:
        raise SchemaError(
            f"original: the original lacks the release's columns {extra}; give the confidential "
            "table the release was made from.",
            code="MISSING_COLUMN",
        )
    if schema is None:
        if synthetic.schema is not None and not categorical:
            schema = synthetic.schema
        else:
            schema = infer_schema(original, categorical=list(categorical or []) or None)
    return original, synthetic, schema


def _twice(cols: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(c for c in cols if list(cols).count(c) > 1))


def _check_utility_options(sch: Any, combining_rules: str, pmse_method: str, max_order: Any,
                           imputed: Any) -> Any:
    """Check the utility step's options; ``imputed`` as ``"auto"`` or checked column names."""
    if combining_rules != "auto":
        from bayes_risk.utility.combining import check_rules

        check_rules(combining_rules, "combining_rules")
    if pmse_method not in ("logit", "cart"):
        raise ValidationError(f"pmse_method must be 'logit' or 'cart'. Got {pmse_method!r}.")
    if isinstance(max_order, bool) or not isinstance(max_order, (int, np.integer)) \
            or max_order < 0:
        raise ValidationError(f"max_order must be an integer >= 0. Got {max_order!r}.")
    if isinstance(imputed, str) and imputed == "auto":
        return imputed
    if isinstance(imputed, str):
        raise ValidationError(
            f"imputed must be 'auto' or a list of column names ([] for none). Got {imputed!r}.")
    return sch.check_columns(list(imputed), "imputed")


def _plan_sweep(sweep: Any, rad: dict[str, float], ks: list[str], radius_type: str,
                sweep_unsynthesized: bool) -> tuple[tuple[float, ...], list[str]]:
    """The sweep's radii (checked) and the columns whose radius it varies."""
    if radius_type not in ("percentage", "absolute", "quantile_sd"):
        raise ValidationError(
            "radius_type must be 'percentage', 'absolute' or 'quantile_sd'. "
            f"Got {radius_type!r}."
        )
    grid = tuple(float(r) for r in sweep) if sweep else ()
    if any(not (np.isfinite(r) and r > 0) for r in grid):
        raise ValidationError(f"sweep: radii must be finite numbers > 0. Got {list(grid)}.")
    if _twice(grid):
        raise ValidationError(f"sweep: radius {_twice(grid)[0]:g} listed twice. Got "
                              f"{list(grid)}.")
    # the sweep varies the radii of the synthesized known columns only (unless asked): an
    # unsynthesized column is released unchanged, so its radius adds matches the release has
    # no part in, and the risk is largest at the smallest radius by construction
    sweep_cols = [c for c in rad if sweep_unsynthesized or c in ks]
    if grid and sweep_cols and radius_type == "quantile_sd":
        raise ValidationError(
            "sweep (--radius-sweep): a radius sweep needs radius_type 'percentage' or "
            "'absolute'. Got 'quantile_sd'; give sweep=None (--radius-sweep none) or another "
            "radius type."
        )
    return grid, sweep_cols


def _attribute_source(model: Any, syn: Any, attribute_estimator: str,
                      refit_draws: Any) -> str | None:
    """Where the attribute step's likelihood comes from (``None``: the step cannot run), with
    its options checked."""
    from bayes_risk.models import rebuildable_synthesizer

    if isinstance(model, (str, os.PathLike)) and not (Path(model) / "model.json").is_file():
        raise ValidationError(
            f"model {str(model)!r} is not a fitted-model folder (no model.json); give the "
            "folder written by 'bayes-risk fit', or no model for a CART / random-forest release."
        )
    if model is not None:
        a_src = "model"
    elif rebuildable_synthesizer(syn) is not None:  # its ModelInfo, not its name
        a_src = f"{syn.method} plug-in"
    else:
        a_src = None
    if attribute_estimator not in ("auto", "stabilised", "is"):
        raise ValidationError("attribute_estimator must be 'auto', 'stabilised' or 'is'. "
                              f"Got {attribute_estimator!r}.")
    if refit_draws is not None and (isinstance(refit_draws, bool) or not isinstance(
            refit_draws, (int, np.integer)) or refit_draws < 1):
        raise ValidationError(f"refit_draws must be an integer >= 1. Got {refit_draws!r}.")
    if a_src is not None and a_src != "model" and (attribute_estimator != "auto"
                                                   or refit_draws is not None):
        raise ValidationError(
            "attribute_estimator and refit_draws apply to a fitted Bayesian model (model=); "
            f"this release's attribute step uses the {a_src} likelihood.",
            code="OPTION_CONFLICT",
        )
    return a_src


def _release_capabilities(syn: Any) -> tuple[bool, bool]:
    """Whether the release's synthesizer releases original (donor) values, and whether it takes
    a ``smoothing`` setting: read from the class registered under the release's ``method`` (its
    ``ModelInfo`` and its ``__init__``), never from the name, so that a subclass or a new model
    gets the remedies that fit it. An unregistered or unknown method gives neither."""
    import inspect

    from bayes_risk.contract import model_info
    from bayes_risk.registry import get_synthesizer, list_synthesizers

    method = getattr(syn, "method", None)
    if not isinstance(method, str) or method not in list_synthesizers():
        return False, False
    cls = get_synthesizer(method)
    try:
        takes_smoothing = "smoothing" in inspect.signature(cls).parameters
    except (TypeError, ValueError):  # a class whose signature cannot be read
        takes_smoothing = False
    return bool(model_info(cls).releases_donor_values), takes_smoothing


def _make_plan(data, syn, sch, *, known, model, synthesized, radius, radius_type, sweep,
               targets, ngroups_target, attribute_records, thresholds, show,
               random_seed, attribute_estimator="auto", refit_draws=None, seed_src="given",
               skip=None, sweep_unsynthesized=False, known_sweep=False,
               combining_rules="auto", pmse_method="logit", max_order=1,
               imputed="auto") -> AuditPlan:
    """Resolve every setting (see :func:`audit`) and record where it came from.

    Every argument every step reads is checked here, before any step runs."""
    from bayes_risk.utility._inputs import infer_synthesized

    imputed = _check_utility_options(sch, combining_rules, pmse_method, max_order, imputed)
    if isinstance(known, str) or not known:
        raise ValidationError("known: give the columns the intruder knows (at least one).")
    known = sch.check_columns(list(known), "known")
    if _twice(known):
        raise ValidationError(
            f"known: column(s) {_twice(known)} listed more than once (--known "
            f"{' '.join(known)}); give each column the intruder knows once."
        )
    skip_steps = _skip_steps(skip)
    if synthesized is not None:
        syn_cols, src = sch.check_columns(list(synthesized), "synthesized"), "given"
        if _twice(syn_cols):
            raise ValidationError(f"synthesized: column(s) {_twice(syn_cols)} listed more than "
                                  "once; give each synthesized column once.")
    elif syn.schema is not None and syn.schema.synthesized:
        syn_cols, src = list(syn.schema.synthesized), "release manifest"
    else:
        syn_cols, src = infer_synthesized(data, list(syn), sch), "inferred"
    if not syn_cols:
        raise ValidationError(
            "synthesized: no synthesized column given, recorded or found (every released "
            "column equals the original's); give synthesized=[...] (--synthesized)."
        )
    ku = [c for c in known if c not in syn_cols]
    ks = [c for c in known if c in syn_cols]
    rad, rad_src = _plan_radius(radius, known, sch)
    grid, sweep_cols = _plan_sweep(sweep, rad, ks, radius_type, sweep_unsynthesized)
    tg, tg_src = _plan_targets(targets, syn_cols, known, sch)
    keys = {t: [c for c in known if c != t] for t in tg}
    if ngroups_target is not None and (int(ngroups_target) != ngroups_target
                                       or ngroups_target < 2):
        raise ValidationError(f"ngroups_target must be an integer >= 2 or None. "
                              f"Got {ngroups_target!r}.")
    ng = {t: (ngroups_target if t in sch.numeric else None) for t in tg}
    a_src = _attribute_source(model, syn, attribute_estimator, refit_draws)
    recs = None
    if attribute_records is not None:
        from bayes_risk.data.normalise import record_positions

        recs = [int(r) for r in record_positions(
            list(attribute_records) if not isinstance(attribute_records, np.ndarray)
            else attribute_records, len(data), argument="attribute_records")]
    plan = AuditPlan(
        n_records=len(data), m=syn.m, method=syn.method, synthesized=syn_cols,
        numeric_synthesized=[c for c in syn_cols if c in sch.numeric],
        known_unsynthesized=ku, known_synthesized=ks, radius=rad, radius_type=radius_type,
        sweep=grid, disclosure_targets=tg, disclosure_keys=keys, ngroups_target=ng,
        attribute_source=a_src, attribute_records=recs, thresholds=thresholds,
        attribute_estimator=attribute_estimator,
        refit_draws=None if refit_draws is None else int(refit_draws),
        show_confidential_values=bool(show), random_seed=int(random_seed),
        skip=tuple(dict.fromkeys(skip_steps)), sweep_columns=sweep_cols,
        sweep_unsynthesized=bool(sweep_unsynthesized), combining_rules=combining_rules,
        pmse_method=pmse_method, max_order=int(max_order), known_sweep=bool(known_sweep),
        imputed=imputed,
    )
    plan.releases_donor_values, plan.smoothing_option = _release_capabilities(syn)
    # partial synthesis as the utility step's pMSE reads it: some, not all, columns synthesized
    partial = 0 < len(syn_cols) < len(sch.names)
    _record_settings(plan, src, rad_src, tg_src, ngroups_target, seed_src, partial=partial)
    zeros = _structural_zeros(model)
    if zeros is None:  # a release of such a model carries its settings in the manifest
        records = (getattr(syn, "settings", None) or {}).get("structural_zeros") or []
        zeros = (len(records), "release manifest (settings of the model)") if records else None
    if zeros is not None:
        n, source = zeros
        plan.add("release", "structural zeros", f"{n} impossible pattern{'s' * (n != 1)}",
                 source, "combinations the model gives probability 0: no synthetic record "
                 "holds them, and the attribute risk never offers them as candidates")
    return plan


def _structural_zeros(model: Any) -> tuple[int, str] | None:
    """``(number of patterns, where they came from)`` of a model fitted with structural zeros
    (DPMPM's ``structural_zeros``), ``None`` for any other model or none.

    A model folder records the patterns in ``model.json`` and, when ``bayes-risk fit`` read them
    from a file, that file's absolute path in the folder's ``summary.json``; a fitted model
    object names its file when it was given one."""
    if model is None:
        return None
    if isinstance(model, (str, os.PathLike)):
        folder = Path(model)
        try:
            settings = json.loads((folder / "model.json").read_text()).get("settings", {})
        except (OSError, ValueError):
            return None  # the model step reports an unreadable folder
        records = settings.get("structural_zeros") or []
        if not records:
            return None
        source = f"{folder.name}/model.json"
        try:
            fit = json.loads((folder / "summary.json").read_text())
            # the key is the option's destination (``model_opt_structural_zeros``)
            given = next((v for k, v in fit.get("inputs", {}).items()
                          if k.endswith("structural_zeros")), None)
        except (OSError, ValueError, AttributeError):
            given = None
        if isinstance(given, str) and given:
            source = f"{given} (recorded in {source})"
        return len(records), source
    zeros = getattr(model, "_zeros", None)
    if zeros is None:
        return None
    given = getattr(model, "structural_zeros", None)
    source = (os.path.abspath(given) if isinstance(given, (str, os.PathLike))
              else "the fitted model")
    return len(zeros.table), source


def _record_settings(plan: AuditPlan, syn_src: str, rad_src: str, tg_src: str,
                     ngroups: int | None, seed_src: str = "given", *,
                     partial: bool) -> None:
    a = plan.add
    a("release", "synthetic datasets (m)", plan.m, "release manifest")
    a("release", "synthesis method", plan.method or "unknown", "release manifest")
    a("release", "synthesized columns", ", ".join(plan.synthesized), syn_src,
      "inferred = the columns that differ from the original in some dataset"
      if syn_src == "inferred" else "")
    a("all", "random seed", plan.random_seed, seed_src,
      "same seed, same numbers" + ("; drawn for this run (give it to repeat the run)"
                                   if seed_src == "drawn" else ""))
    given = plan.pmse_method != "logit" or plan.max_order != 1
    a("utility", "pMSE propensity model",
      "CART" if plan.pmse_method == "cart" else
      "logit, main effects and two-way interactions" if plan.max_order == 1 else
      "logit, main effects only" if plan.max_order == 0 else
      f"logit, interactions up to order {plan.max_order + 1}",
      "given" if given else "default", "synthpop's utility.gen design")
    a("utility", "pMSE null", "auto", "default",
      "chi-square theory for logit; partial synthesis: the expectation uses only the "
      "synthesized columns" if partial else
      "chi-square theory for logit; complete synthesis: the expectation uses every column")
    a("utility", "interval-overlap estimands", "means and proportions of the synthesized columns",
      "default", "95 % intervals, combining rules of the release's generation scheme")
    a("utility", "combining rules", plan.combining_rules,
      "default" if plan.combining_rules == "auto" else "given",
      "auto: the generation recorded in the release's manifest, else inferred from the "
      "synthesized columns (the utility section says which rules were used and why)"
      if plan.combining_rules == "auto" else "")
    auto = isinstance(plan.imputed, str)
    a("utility", "imputed columns", "auto" if auto else (", ".join(plan.imputed) or "none"),
      "default" if auto else "given",
      "auto: the imputed_columns recorded in the release's manifest, else the columns with "
      "empty cells in the original and none in any synthetic dataset; they are compared on "
      "the original's observed cells" if auto else "")
    a("identification", "known columns", ", ".join(plan.known), "given")
    a("identification", "radius",
      ", ".join(f"{c} = {r:g}" for c, r in plan.radius.items()) or "exact matching", rad_src,
      "default: 0.1 for every numeric (count or continuous) known column; categorical "
      "columns are matched exactly")
    a("identification", "radius type", plan.radius_type, "default"
      if plan.radius_type == "percentage" else "given")
    a("identification", "aggregation", "per dataset", "default",
      "Hornby & Hu (2021): every dataset evaluated separately, measures averaged")
    if plan.sweep and not plan.radius:
        a("identification", "radius sweep", "not run", "default",
          "no numeric known column has a radius (exact matching)")
    else:
        a("identification", "radius sweep",
          ", ".join(f"{r:g}" for r in plan.sweep) or "none",
          "default" if plan.sweep == DEFAULT_SWEEP else "given",
          "Hornby & Hu (2021, §4.1); the maximising radius is the conservative one to report")
    a("attribute", "intruder posterior", plan.attribute_source or "none",
      "given" if plan.attribute_source == "model" else "release manifest")
    a("attribute", "scenario", "worst case", "default",
      "the intruder knows every record but the target's synthesized values")
    a("attribute", "candidates",
      "one variable different; numeric: ±10 % grid of 11 points", "default",
      "a true value of 0 uses an additive grid of ±10 % of the column's median |value|")
    a("attribute", "prior", "uniform", "default")
    a("attribute", "estimator", plan.attribute_estimator,
      "default" if plan.attribute_estimator == "auto" else "given",
      "auto: stabilised for class P models (m refits of the model), importance sampling for "
      "class O")
    a("attribute", "refit draws",
      "the model's draws" if plan.refit_draws is None else plan.refit_draws,
      "default" if plan.refit_draws is None else "given",
      "kept draws per chain of each refit of the stabilised estimator")
    a("attribute", "records",
      "all" if plan.attribute_records is None else f"{len(plan.attribute_records)} given",
      "default" if plan.attribute_records is None else "given")
    a("disclosure", "targets", ", ".join(plan.disclosure_targets) or "none", tg_src,
      "default: the synthesized columns the intruder does not know")
    a("disclosure", "keys", "the known columns other than the target", "default")
    a("disclosure", "numeric target groups", ngroups if ngroups is not None else "none",
      "default" if ngroups == 10 else "given", "quantile groups of the pooled values")
    a("disclosure", "denom_lim", 5, "default", "synthpop's default")
    for k, v in plan.thresholds.to_dict().items():
        a("thresholds", k, v, "default" if v == getattr(Thresholds(), k) else "given")


def _skip_steps(skip: Any) -> list[str]:
    """The steps the caller asked to skip, by their Python names; unknown names and skipping
    every step are refused."""
    given = [] if skip is None else ([skip] if isinstance(skip, str) else list(skip))
    steps = []
    for s_ in given:
        name = str(s_).replace("-", "_")
        if name not in STEP_NAMES:
            raise ValidationError(
                f"skip: unknown step {s_!r}; expected one of "
                f"{', '.join(_cli_name(n) for n in STEP_NAMES)}."
            )
        steps.append(name)
    if len(set(steps)) == len(STEP_NAMES):
        raise ValidationError("skip: every step is skipped; nothing would be audited.")
    return steps


def _plan_radius(radius: Any, known: list[str], sch: Any) -> tuple[dict[str, float], str]:
    """Radius of each numeric known column (default 0.1) and where it came from; every value is
    checked as identification_risk checks it (one check: a finite real number >= 0)."""
    from bayes_risk.data.validate import check_real

    numeric_known = [c for c in known if c in sch.numeric]
    if radius is None:
        return {c: 0.1 for c in numeric_known}, "default"
    if isinstance(radius, Mapping):
        rad = {str(k): check_real(v, f"radius for {str(k)!r}", minimum=0.0)
               for k, v in radius.items()}
        for c in sch.check_columns(list(rad), "radius"):
            if c not in numeric_known:
                raise ValidationError(f"radius: {c!r} is not a numeric known column.")
        return rad, "given"
    r = check_real(radius, f"radius for {numeric_known[0]!r}" if numeric_known else "radius",
                   minimum=0.0)
    return {c: r for c in numeric_known}, "given"


def _plan_targets(targets: Any, syn_cols: list[str], known: list[str], sch: Any
                  ) -> tuple[list[str], str]:
    """Targets of the empirical measures (default: the synthesized columns the intruder does
    not know) and where they came from; a target the intruder knows is refused by name."""
    if targets is None:
        return [c for c in syn_cols if c not in known], "default"
    tg = sch.check_columns([targets] if isinstance(targets, str) else list(targets), "targets")
    if _twice(tg):
        raise ValidationError(f"targets: column(s) {_twice(tg)} listed more than once "
                              "(--target); give each target once.")
    in_known = [t for t in tg if t in known]
    if in_known:
        one = len(in_known) == 1
        raise ValidationError(
            f"targets (--target): {in_known} {'is' if one else 'are'} also known to the "
            "intruder (known / --known); a target of the empirical measures is a column the "
            f"intruder does not know and would disclose. Drop {'it' if one else 'them'} from "
            "the targets or from the known columns."
        )
    return tg, "given"
