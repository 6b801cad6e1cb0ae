"""The audit's settings resolved against the data and the release: the inputs read and
checked, every option checked before a step runs, and the :class:`~bayes_risk.auditing.AuditPlan`
made (:func:`make_plan`), each value with where it came from and its row of the settings
table (:doc:`/user_guide/audit`)."""

from __future__ import annotations

import dataclasses
import json
import os
import warnings
from collections.abc import Mapping
from dataclasses import MISSING
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from bayes_risk._constraints import (
    COLUMN_NAMES,
    InstanceOf,
    Within,
    check_relations,
    check_value,
)
from bayes_risk.auditing.plan import (
    CONVENTION_RADIUS,
    AuditPlan,
    cli_step_name,
    post_processing,
    post_processing_text,
)
from bayes_risk.auditing.thresholds import Thresholds, threshold_records
from bayes_risk.data.normalise import check_not_empty
from bayes_risk.data.validate import require_distinct
from bayes_risk.exceptions import SchemaError, ValidationError, arg_name, on_command_line
from bayes_risk.measures import measures

__all__ = ["audit_inputs", "make_plan"]


def audit_inputs(original: Any, synthetic: Any, schema: Any, categorical: Any,
                 weights: Any = None) -> tuple:
    """The original, the release, the schema and the survey weights, read and checked.

    Parameters
    ----------
    original, synthetic, schema
        As :func:`~bayes_risk.audit` takes them.
    categorical : sequence of str or None
        ``AuditSettings.categorical``, read when neither ``schema`` nor the release gives one.
    weights : str, optional
        ``AuditSettings.weights``: the original's survey weights column, taken out of it.

    Returns
    -------
    tuple
        ``(original, synthetic, schema, weights)``: a DataFrame, a ``SyntheticData``, the
        schema and the weight vector (``None`` without weights).

    Raises
    ------
    ValidationError, SchemaError
        An input of the wrong type, an empty original, columns that differ between the
        original and the release, or levels the release cannot hold.
    """
    from bayes_risk.data import SyntheticData, infer_schema
    from bayes_risk.data.alignment import warn_release_holds_original
    from bayes_risk.data.io import read_table
    from bayes_risk.data.synthetic import read_synthetic
    from bayes_risk.data.validate import check_release_levels, release_only_levels

    check_value(weights, [InstanceOf(str, "the name of a column of the original"), None],
                "weights")
    if isinstance(original, (str, os.PathLike)):
        original = read_table(original)
    check_value(original, InstanceOf(pd.DataFrame, "a DataFrame or a table path"), "original")
    w, rest = None, original
    if weights is not None:
        from bayes_risk.identification.population import _weight_vector

        w = _weight_vector(weights, original)  # a missing column or a bad weight is refused
        rest = original.drop(columns=[weights])
    check_not_empty(rest, "original")
    if isinstance(synthetic, (str, os.PathLike)) or (
        isinstance(synthetic, (list, tuple)) and synthetic
        and all(isinstance(s, (str, os.PathLike)) for s in synthetic)
    ):
        synthetic = read_synthetic(synthetic, like=rest)
    elif isinstance(synthetic, pd.DataFrame):
        synthetic = SyntheticData([synthetic], method="unknown")
    elif isinstance(synthetic, (list, tuple)) and synthetic and all(
        isinstance(s, pd.DataFrame) for s in synthetic
    ):
        synthetic = SyntheticData(list(synthetic), method="unknown")
    else:
        check_value(synthetic, InstanceOf(SyntheticData, "a SyntheticData, a list of DataFrames, "
                                          "a SyntheticData folder or a list of table paths"),
                    "synthetic")
    if weights is not None and weights not in synthetic[0].columns:
        original = rest
    missing = [c for c in original.columns if c not in synthetic[0].columns]
    if missing:
        from bayes_risk.data.schema import did_you_mean

        raise SchemaError(f"synthetic: the release lacks the original's columns {missing}."
                          + did_you_mean(missing[0], synthetic[0].columns),
                          code="MISSING_COLUMN")
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
    # the check every measure makes of the release's levels, once for every column before a
    # step runs (the steps warn for the columns the release recodes)
    check_release_levels(release_only_levels(original, list(synthetic), schema),
                         synthetic.recoded_columns, original=original, warn=False)
    warn_release_holds_original(original, list(synthetic))
    return original, synthetic, schema, w


def _check_utility_options(sch: Any, combining_rules: str, imputed: Any) -> None:
    """Check the utility step's options: the rules, and ``imputed`` (``"auto"`` or columns)."""
    if combining_rules != "auto":
        from bayes_risk.utility.combining import check_rules

        check_rules(combining_rules, "combining_rules")
    from bayes_risk._utility_specs import IMPUTED

    if isinstance(check_value(imputed, IMPUTED, "imputed"), str):  # "auto"
        return
    sch.check_columns(list(imputed), "imputed")


def _plan_sweep(sweep: Any, known: list[str], sch: Any, radius_type: str
                ) -> tuple[tuple[float, ...], list[str]]:
    """The search's radii (checked by the settings; 0 added when it runs) and the columns it
    searches: every numeric known column, synthesized or released unchanged."""
    grid = tuple(sorted({0.0, *sweep})) if sweep else ()
    cols = [c for c in sch.names if c in known and c in sch.numeric]
    if grid and cols and radius_type == "quantile_sd":
        raise ValidationError(
            f"{arg_name('sweep')}: the radius search needs {arg_name('radius_type')} "
            f"'percentage' or 'absolute'. Got 'quantile_sd'; give "
            f"{arg_name('sweep', 'None', cli='none')} or another radius type.",
            code="OPTION_CONFLICT",
        )
    return grid, cols


def _attribute_source(model: Any, syn: Any, attribute_estimator: str,
                      refit_draws: Any) -> str | None:
    """Where the attribute step's likelihood comes from (``None``: none), options checked."""
    from bayes_risk.models import rebuildable_synthesizer

    if isinstance(model, (str, os.PathLike)) and not (Path(model) / "model.json").is_file():
        raise ValidationError(
            f"{arg_name('model')} {str(model)!r} is not a fitted-model folder (no model.json); "
            "give the folder written by "
            + ("'bayes-risk fit'" if on_command_line() else "a fitted model's save()")
            + ", or no model for a CART / random-forest release.",
            code="NOT_A_MODEL"
        )
    if model is not None:
        a_src = "model"
    elif rebuildable_synthesizer(syn) is not None:  # its ModelInfo, not its name
        a_src = f"{syn.method} plug-in"
    else:
        a_src = None
    if a_src is not None and a_src != "model" and (attribute_estimator != "auto"
                                                   or refit_draws is not None):
        raise ValidationError(
            f"{arg_name('attribute_estimator')} and {arg_name('refit_draws')} apply to a fitted "
            f"Bayesian model ({arg_name('model')}); "
            f"this release's attribute step uses the {a_src} likelihood.",
            code="OPTION_CONFLICT",
        )
    return a_src


def _release_capabilities(syn: Any, schema: Any, numeric: list[str]
                          ) -> tuple[dict[str, str], list[str], list[str]]:
    """The numeric synthesized columns whose released values are donors' original values,
    each with the method that draws them, those of them the synthesizer can smooth, and those
    its settings smooth: what the synthesizer declares (``releases_donor_values``, a
    ``smoothing`` setting), less the columns its settings already smooth or draw new values for
    (a specification's ``norm``)."""
    import inspect

    from bayes_risk.contract import capabilities
    from bayes_risk.registry import get_synthesizer, list_synthesizers

    method = getattr(syn, "method", None)
    if not isinstance(method, str) or method not in list_synthesizers():
        return {}, [], []
    cls = get_synthesizer(method)
    if not capabilities(cls).releases_donor_values:
        return {}, [], []
    try:
        takes_smoothing = "smoothing" in inspect.signature(cls).parameters
    except (TypeError, ValueError):  # a class whose signature cannot be read
        takes_smoothing = False
    settings = getattr(syn, "settings", None) or {}
    by = dict.fromkeys(numeric, method)
    spec = settings.get("spec")
    if spec is not None:
        from bayes_risk.models.trees.spec import DONOR_METHODS, SynthesisSpec

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # resolved as the fit resolved it (and warned)
            resolved = SynthesisSpec.coerce(spec).resolve(schema, list(
                getattr(syn.schema, "synthesized", None) or numeric) or None)
        by = {c: resolved.methods[c] for c in numeric
              if resolved.methods.get(c) in DONOR_METHODS}
    sm = settings.get("smoothing") if takes_smoothing else None
    smoothed = set(numeric) if sm is True else {sm} if isinstance(sm, str) else set(sm or ())
    # kernel smoothing applies to the columns the synthesizer's own leaves draw (a
    # specification's CART columns), not to its other methods' columns
    leaves = [c for c, m in by.items() if m in (method, "cart")] if takes_smoothing else []
    by = {c: m for c, m in by.items() if c not in smoothed}
    return by, [c for c in leaves if c in by], [c for c in leaves if c in smoothed]


#: the audit's known columns against its settings' columns
_RELATIONS = (
    Within("known", "targets", apart=True, why="a target of the empirical measures is a column "
           "the intruder does not know and would disclose; drop it from the targets or from the "
           "known columns"),
    Within("known", "weights", apart=True, why="survey weights are not a key"),
)


def make_plan(data: Any, syn: Any, sch: Any, s: Any, *, known: Any, model: Any,
              synthesized: Any, thresholds: Thresholds, random_seed: int,
              seed_src: str = "given") -> AuditPlan:
    """Resolve and check every setting of ``s`` and the inputs, recording where each came from.

    Parameters
    ----------
    data, syn, sch
        The original, the release and the schema, as :func:`audit_inputs` returns them.
    s : AuditSettings
        The audit's settings: the plan holds this object (``plan.given``), not a copy.
    known, model, synthesized
        As :func:`~bayes_risk.audit` takes them.
    thresholds : Thresholds
        The verdict lines' thresholds.
    random_seed : int
        The run's seed.
    seed_src : str
        "given", or "drawn" when the audit drew the seed.

    Returns
    -------
    AuditPlan
        What the audit resolved, with the settings table.

    Raises
    ------
    ValidationError, SchemaError
        A setting the data or the release refuses, before any step runs.
    """
    from bayes_risk.utility._inputs import differing_share

    est = s.attribute_estimator
    _check_utility_options(sch, s.combining_rules, s.imputed)
    check_value(known, COLUMN_NAMES, "known (the columns the intruder knows)")
    known = require_distinct(sch.check_columns(list(known), "known"), "known")
    check_relations(dict(known=known, targets=s.targets, weights=s.weights), _RELATIONS)
    if s.known_sweep:
        _check_known_sweep(known)
    skip_steps = _skip_steps(s.skip)
    if synthesized is not None:
        syn_cols = require_distinct(sch.check_columns(list(synthesized), "synthesized"),
                                    "synthesized")
        src = "given"
    elif syn.schema is not None and syn.schema.synthesized:
        syn_cols, src = list(syn.schema.synthesized), "release manifest"
    else:
        syn_cols, src = list(differing_share(data, list(syn), sch)), "inferred"
    if not syn_cols:
        raise ValidationError(
            f"{arg_name('synthesized')}: no synthesized column given, recorded or found (every "
            "released column equals the original's); give "
            f"{arg_name('synthesized', '[...]', cli='COL ...')}.",
            code="NO_DIFFERENCES"
        )
    ku = [c for c in known if c not in syn_cols]
    ks = [c for c in known if c in syn_cols]
    rad, rad_src = _plan_radius(s.match.radius, known, sch)
    grid, search_cols = _plan_sweep(s.sweep, known, sch, s.match.radius_type)
    if grid:  # a window that overflows, refused before any step
        from bayes_risk.identification.radius import check_windows

        check_windows(data, search_cols, grid, s.match.radius_type, "sweep")
    tg, tg_src = _plan_targets(s.targets, syn_cols, known, sch)
    keys = {t: [c for c in known if c != t] for t in tg}
    ng = {t: (s.ngroups_target if t in sch.numeric else None) for t in tg}
    a_src = _attribute_source(model, syn, est.kind, est.refit_draws)
    recs = None
    if s.attribute_records is not None:
        from bayes_risk.data.normalise import record_positions

        recs = [int(r) for r in record_positions(
            list(s.attribute_records) if not isinstance(s.attribute_records, np.ndarray)
            else s.attribute_records, len(data), argument="attribute_records")]
    plan = AuditPlan(
        given=s, n_records=len(data), m=syn.m, method=syn.method, synthesized=syn_cols,
        numeric_synthesized=[c for c in syn_cols if c in sch.numeric],
        known_unsynthesized=ku, known_synthesized=ks, radius=rad, sweep=grid,
        disclosure_targets=tg, disclosure_keys=keys, ngroups_target=ng,
        attribute_source=a_src, attribute_records=recs, thresholds=thresholds,
        random_seed=int(random_seed), skip=tuple(dict.fromkeys(skip_steps)),
        search_columns=search_cols, radius_source=rad_src, targets_source=tg_src,
    )
    from bayes_risk.data.statfiles import file_labels

    labels = file_labels(data)
    if labels is not None:
        plan.variable_labels = {c: v for c, v in labels.variable_labels.items()
                                if c in sch.names}
    if s.membership_selection is not None:
        from bayes_risk.membership.selection import as_selection

        plan.membership_selection = as_selection(s.membership_selection)
    plan.linkability_columns, plan.linkability_source = _plan_linkability(
        s.linkability_columns, known, sch)
    if s.allow_other_model:
        plan.add("release", "model", "allowed not to be the one that made the release",
                 "given", "the steps that use the fitted model measure its risks, with warning "
                 "MODEL_DIFFERS when it did not make the release")
    plan.donor_columns, plan.smoothable_columns, plan.smoothed_columns = \
        _release_capabilities(syn, sch, plan.numeric_synthesized)
    done = post_processing(syn)
    if done:
        plan.add("release", "post-processing", post_processing_text(done), "release manifest",
                 "applied after synthesis (bayes-risk remedy); the model-based steps are "
                 "withheld")
        plan.suppressed_columns = sorted({
            c for d in done if d.get("operation") == "local_suppression"
            for c, n in (d.get("n_suppressed") or {}).items() if sum(n)})
    plan.partial_synthesis = 0 < len(syn_cols) < len(sch.names)
    plan.fully_synthetic = (not plan.partial_synthesis
                            and getattr(syn, "synthesized_records", None) is None)
    for m in measures():  # each measure's options checked, and its step withheld or not
        why = m.resolve(plan, data, syn, sch) if m.resolve is not None else None
        if why is not None:
            plan.withheld[m.name] = why
    record_settings(plan, src, seed_src,
                    method=getattr(syn, "method_description", None) or plan.method)
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
    """``(number of patterns, source)`` of a model fitted with structural zeros, else ``None``."""
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


def _plan_linkability(columns: Any, known: list[str], sch: Any
                      ) -> tuple[tuple[list[str], list[str]] | None, str]:
    """The linkability attack's two tables (``None``: every column known) and their source."""
    if columns is None:
        rest = [c for c in sch.names if c not in known]
        return ((list(known), rest) if rest else None), "default"
    from bayes_risk._attack_specs import two_tables

    parts = [sch.check_columns(require_distinct(part, "linkability_columns"),
                               "linkability_columns")
             for part in two_tables(columns, "linkability_columns")]
    return (parts[0], parts[1]), "given"


def _check_known_sweep(known: list[str]) -> None:
    """Refuse more known columns than the knowledge sweeps evaluate."""

    from bayes_risk._lattice import LatticeSpec

    limit = LatticeSpec().max_subsets
    if 2 ** len(known) <= limit:
        return
    most = limit.bit_length() - 1
    partial = ("bayes-risk identification --known-sweep COL ... --max-size K" if on_command_line()
               else "identification.known_sweep(..., lattice=LatticeSpec(max_size=K))")
    raise ValidationError(
        f"{arg_name('known_sweep', True, cli='')}: a sweep over the {len(known)} known columns "
        f"evaluates all {2 ** len(known)} subsets of them, more than the {limit} a sweep "
        f"evaluates; give at most {most} columns in {arg_name('known')} with it, or sweep the "
        f"subsets up to a size K (greedy beyond it) with {partial}.")


def _skip_steps(skip: Any) -> list[str]:
    """The steps to skip, by their Python names (an unknown one or all of them refused)."""
    given = [] if skip is None else ([skip] if isinstance(skip, str) else list(skip))
    names = [m.name for m in measures()]
    steps = []
    for s_ in given:
        name = str(s_).replace("-", "_")
        if name not in names:
            raise ValidationError(
                f"skip: unknown step {s_!r}; expected one of "
                f"{', '.join(cli_step_name(n) for n in names)}."
            )
        steps.append(name)
    if len(set(steps)) == len(names):
        raise ValidationError("skip: every step is skipped; nothing would be audited.")
    return steps


def _plan_radius(radius: Any, known: list[str], sch: Any) -> tuple[dict[str, float], str]:
    """Radius of each numeric known column (default 0.1) and its source."""
    from bayes_risk.data.validate import check_real

    numeric_known = [c for c in known if c in sch.numeric]
    if radius is None:
        return dict.fromkeys(numeric_known, CONVENTION_RADIUS), "default"
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
    """Targets of the empirical measures and their source."""
    if targets is None:
        return [c for c in syn_cols if c not in known], "default"
    tg = require_distinct(sch.check_columns(
        [targets] if isinstance(targets, str) else list(targets), "targets"), "targets")
    return tg, "given"


def record_settings(plan: AuditPlan, syn_src: str, seed_src: str = "given", *,
                    method: str | None) -> None:
    """Add the settings table's rows: the release's, the random seed, each measure's (its
    record's ``settings``, in the registry's order), the options declared with their row
    (:func:`~bayes_risk.auditing.settings.settings_row`) and the thresholds.

    Each row is a value of ``plan`` or of ``plan.given`` with its source: "given" when the
    user set it, "default" otherwise, or where it was read from.

    Parameters
    ----------
    plan : AuditPlan
        The plan, resolved: its rows are appended to ``plan.settings``.
    syn_src, seed_src : str
        Where the synthesized columns and the random seed came from.
    method : str or None
        The release's synthesis method as its manifest describes it.
    """
    a = plan.add
    a("release", "synthetic datasets (m)", plan.m, "release manifest")
    a("release", "synthesis method", method or "unknown", "release manifest")
    a("release", "synthesized columns", ", ".join(plan.synthesized), syn_src,
      "inferred = the columns that differ from the original in some dataset"
      if syn_src == "inferred" else "")
    a("all", "random seed", plan.random_seed, seed_src,
      "same seed, same numbers" + ("; drawn for this run (give it to repeat the run)"
                                   if seed_src == "drawn" else ""))
    for m in measures():
        if m.settings is not None:
            m.settings(plan)
    s = plan.given
    # an option declared with its row (settings.settings_row) needs no code here
    for f in dataclasses.fields(s):
        if "settings_row" in f.metadata:
            row_step, name, note = f.metadata["settings_row"]
            value = getattr(s, f.name)
            default = f.default if f.default is not MISSING else f.default_factory()
            try:
                same = bool(value is default or value == default)
            except ValueError:  # an array compares element by element: not the default
                same = False
            a(row_step, name, value, "default" if same else "given", note)
    records = threshold_records()
    for k, v in plan.thresholds.items():
        a("thresholds", k, v, "default" if v == records[k].default else "given")
