"""What an audit runs and with which settings: :class:`AuditPlan` and :class:`Thresholds`
(:doc:`/user_guide/audit`)."""

from __future__ import annotations

import json
import os
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from bayes_risk.auditing.settings import DEFAULT_SWEEP, AuditSettings
from bayes_risk.exceptions import SchemaError, ValidationError, arg_name, on_command_line
from bayes_risk.measures import measures
from bayes_risk.results.attribute import EVIDENCE_FACTOR

__all__ = ["AuditPlan", "Setting", "Thresholds", "ATTACK_OPTIONS",
           "THRESHOLD_SOURCES", "step_names"]


def step_names() -> tuple[str, ...]:
    """The audit's steps, in order: the names of the registered measures (``skip=`` takes)."""
    return tuple(m.name for m in measures())

#: the attacks' options in an audit: anonymeter's defaults
ATTACK_OPTIONS: dict[str, float] = {"n_attacks": 500, "n_cols": 3, "n_neighbors": 1,
                                    "tolerance": 0.05}

#: Hornby & Hu's (2021) convention: one percentage radius on every numeric key, reported
#: beside the worst case, never instead of it
CONVENTION_RADIUS = 0.1


_CONVENTION = ("a convention of bayes-risk, not a finding: the papers behind the measure "
               "leave the acceptable risk to the agency (Hu 2019; Hornby & Hu 2021; Raab, "
               "Nowok & Dibben); a board sets its own (user guide, Auditing a release: "
               "Thresholds)")

_ANONYMETER = ("anonymeter (Giomi et al. 2023) defines the risk and leaves its acceptable level "
               "to the data controller, as the CNIL's opinion on it does: 0.05 is a convention "
               "of bayes-risk, not a finding; a board sets its own (user guide, Auditing a "
               "release: Thresholds)")

#: where each default of :class:`Thresholds` comes from (printed under the verdict table)
THRESHOLD_SOURCES: dict[str, str] = {
    "s_pmse": "synthpop's guidance: S_pMSE below 10 acceptable, below 3 good (methods page, "
              "Utility: null distribution)",
    "overlap": "Karr et al. (2006) define the interval overlap (1: the same interval, 0: "
               "disjoint); 0.5, half of each interval shared on average, is a convention "
               "of bayes-risk; a board sets its own (user guide, Auditing a release: "
               "Thresholds)",
    "expected_match_rate": _CONVENTION,
    "true_match_rate": _CONVENTION,
    "prop_top": _CONVENTION,
    "prop_evidence": _CONVENTION,
    "evidence_factor": "a Bayes factor of 3 is where Kass & Raftery's (1995) scale of "
                       "evidence stops calling it 'not worth more than a bare mention' "
                       "(Jeffreys' scale: 3.2): the smallest factor read as evidence, so the "
                       "most records counted (methods page, Attribute disclosure risk: "
                       "Evidence about a record)",
    "repU": _CONVENTION,
    "DiSCO": _CONVENTION,
    "membership_advantage": _CONVENTION,
    "membership_share": _CONVENTION,
    "membership_probability": "a posterior membership probability of 0.9 is a likelihood "
                              "ratio of 9 under the balanced prior: " + _CONVENTION,
    "singling_out_risk": _ANONYMETER,
    "linkability_risk": _ANONYMETER,
    "inference_risk": _ANONYMETER,
}


#: what each threshold of :class:`Thresholds` measures: its unit and the range of the
#: quantity, which the threshold must fall inside; ``"max"``: a line exceeds above it
_FRACTION = "a fraction from 0 to 1 (0.01 is 1 %)"
_PERCENT = "in per cent, from 0 to 100 (1 is 1 %)"


def _threshold(default: float, side: str, low: float, high: float, unit: str) -> Any:
    """A field of :class:`Thresholds` with the unit and range of its quantity (``side``: the
    line exceeds above a ``"max"`` threshold and below a ``"min"`` one; ``"cut"``: not a line's
    threshold but a cut-off strictly inside the range)."""
    return field(default=default, metadata={"side": side, "range": (low, high), "unit": unit})


@dataclass(frozen=True)
class Thresholds:
    """Release-board thresholds of the verdict lines: conventions, not findings (sources:
    ``THRESHOLD_SOURCES``); percentages in percent, rates as fractions.

    Each threshold lies inside the range of its quantity, in the quantity's unit: one at or
    past the end a line can reach (``singling_out_risk=5`` for a risk of at most 1) would keep
    the line within it whatever the release, so it is refused.

    Parameters
    ----------
    s_pmse : float
        Largest acceptable mean S_pMSE, a ratio from 0 up. Default 10 (synthpop's guidance).
    overlap : float
        Smallest acceptable mean interval overlap (Karr et al. 2006), above 0 and at most 1.
        Default 0.5.
    expected_match_rate : float
        Largest acceptable expected match rate, the worst case over the radius search, a
        fraction. Default 0.01.
    true_match_rate : float
        Largest acceptable true match rate, the worst case over the radius search, a
        fraction. Default 0.01.
    prop_top : float
        Largest acceptable share of records whose true values are the intruder's best guess, a
        fraction. Default 0.1.
    prop_evidence : float
        Largest acceptable share of records whose true values the release gives evidence
        for, a fraction: a Bayes factor of at least ``evidence_factor`` (the release
        multiplies the intruder's odds on them at least that many times). Default 0.1.
    evidence_factor : float
        Bayes factor from which a record counts in ``prop_evidence``, above 1 (1 is no
        evidence). Default 3 (Kass & Raftery 1995).
    repU : float
        Largest acceptable replicated uniques, percent of records. Default 1.
    DiSCO : float
        Largest acceptable DiSCO, percent of records. Default 1.
    membership_advantage : float
        Largest acceptable AUC − 0.5 of the Bayesian membership attack, from 0 to 0.5.
        Default 0.05.
    membership_share : float
        Largest acceptable share of members above ``membership_probability``, a fraction.
        Default 0.01.
    membership_probability : float
        Posterior membership probability, in (0, 1), above which a member counts as exposed.
        Default 0.9.
    singling_out_risk : float
        Largest acceptable singling-out risk of anonymeter, a fraction. Default 0.05.
    linkability_risk : float
        Largest acceptable linkability risk of anonymeter, a fraction. Default 0.05.
    inference_risk : float
        Largest acceptable inference risk of anonymeter, the largest over the synthesized
        columns, a fraction. Default 0.05.

    Raises
    ------
    ValidationError
        A threshold that is not a number inside its quantity's range (``INVALID_ARGUMENT``).
    """

    s_pmse: float = _threshold(10.0, "max", 0.0, np.inf,
                               "a ratio of the pMSE to its null expectation, from 0 up")
    overlap: float = _threshold(0.5, "min", 0.0, 1.0, "a share of the intervals, from 0 to 1")
    expected_match_rate: float = _threshold(0.01, "max", 0.0, 1.0, _FRACTION)
    true_match_rate: float = _threshold(0.01, "max", 0.0, 1.0, _FRACTION)
    prop_top: float = _threshold(0.1, "max", 0.0, 1.0, _FRACTION)
    prop_evidence: float = _threshold(0.1, "max", 0.0, 1.0, _FRACTION)
    evidence_factor: float = _threshold(EVIDENCE_FACTOR, "cut", 1.0, np.inf,
                                        "a Bayes factor, above 1 (1 is no evidence)")
    repU: float = _threshold(1.0, "max", 0.0, 100.0, _PERCENT)  # noqa: N815 - synthpop's name
    DiSCO: float = _threshold(1.0, "max", 0.0, 100.0, _PERCENT)  # noqa: N815 - synthpop's name
    membership_advantage: float = _threshold(0.05, "max", 0.0, 0.5,
                                             "AUC − 0.5, from 0 (no advantage) to 0.5")
    membership_share: float = _threshold(0.01, "max", 0.0, 1.0, _FRACTION)
    membership_probability: float = _threshold(0.9, "cut", 0.0, 1.0,
                                               "a probability, strictly between 0 and 1")
    singling_out_risk: float = _threshold(0.05, "max", 0.0, 1.0,
                                          "anonymeter's risk, " + _FRACTION)
    linkability_risk: float = _threshold(0.05, "max", 0.0, 1.0,
                                         "anonymeter's risk, " + _FRACTION)
    inference_risk: float = _threshold(0.05, "max", 0.0, 1.0,
                                       "anonymeter's risk, " + _FRACTION)

    def __post_init__(self) -> None:
        # every way of making thresholds (parse, the constructor, dataclasses.replace) is checked
        for f in fields(self):
            object.__setattr__(self, f.name, self._checked(f, getattr(self, f.name)))

    @staticmethod
    def _checked(f: Any, value: Any) -> float:
        """``value`` as the float of threshold ``f``, or ``ValidationError`` naming its range."""
        name, side, (low, high), unit = (f.name, f.metadata["side"], f.metadata["range"],
                                         f.metadata["unit"])
        # "--threshold repU=50" on the command line, "thresholds: repU=50" in Python
        shown = f"{arg_name('thresholds')}{' ' if on_command_line() else ': '}{name}={value}"
        try:
            if isinstance(value, bool):
                raise TypeError
            val = float(value)
        except (TypeError, ValueError) as err:
            raise ValidationError(f"{shown}: {value!r} is not a number; {name} is {unit}.",
                                  code="INVALID_ARGUMENT") from err
        inside = {"max": low <= val < high, "min": low < val <= high,
                  "cut": low < val < high}[side]
        if inside:
            return val
        hi = "∞" if np.isinf(high) else f"{high:g}"
        expected = {"max": f"{low:g} <= {name} < {hi}", "min": f"{low:g} < {name} <= {hi}",
                    "cut": f"{low:g} < {name} < {hi}"}[side]
        why = ""
        if side == "max" and val >= high:
            why = (f"; no value of the line can exceed {val:g}, so the verdict would pass the "
                   "line whatever the release")
        elif side == "min" and val <= low:
            why = (f"; no value of the line can fall below {val:g}, so the verdict would pass "
                   "the line whatever the release")
        raise ValidationError(f"{shown} is outside its range: {name} is {unit}{why}. Expected "
                              f"{expected}.", code="INVALID_ARGUMENT")

    @classmethod
    def parse(cls, items: Mapping[str, float] | Sequence[str] | None) -> Thresholds:
        """Thresholds from ``{"repU": 2}`` or ``["repU=2", ...]`` (the others keep defaults).

        Raises
        ------
        ValidationError
            For an unknown name, or a value that is not a number inside its quantity's range.
        """
        if items is None:
            return cls()
        if isinstance(items, cls):
            return items
        names = [f.name for f in fields(cls)]
        pairs: list[tuple[str, Any]] = []
        if isinstance(items, Mapping):
            pairs = list(items.items())
        else:
            for it in items:
                if "=" not in str(it):
                    raise ValidationError(f"thresholds: expected NAME=VALUE. Got {it!r}.",
                                          code="INVALID_ARGUMENT")
                k, v = str(it).split("=", 1)
                pairs.append((k.strip(), v.strip() if isinstance(v, str) else v))
        kw: dict[str, Any] = {}
        for k, v in pairs:
            if k not in names:
                raise ValidationError(
                    f"thresholds: unknown name {k!r}; expected one of {', '.join(names)}.",
                    code="INVALID_ARGUMENT")
            kw[k] = v
        return cls(**kw)

    def to_dict(self) -> dict[str, float]:
        """The thresholds by name."""
        return {f.name: getattr(self, f.name) for f in fields(self)}


@dataclass(frozen=True)
class Setting:
    """One setting of the audit, with where its value came from."""

    step: str
    name: str
    value: Any
    source: str  # "given", "release manifest", "default", "inferred"
    note: str = ""


#: the fields of :class:`AuditPlan` named as an option of ``AuditSettings``: each holds the
#: value resolved from the option, never a copy of it (the option itself is ``plan.given``)
_RESOLVED: dict[str, str] = {
    "sweep": "the radii searched, 0 (exact matching) added; () when the search does not run",
    "skip": "the steps' names, as measures() spells them, each once",
    "ngroups_target": "the groups of each target (None for a categorical target)",
    "attribute_records": "the records' positions, checked against the original",
    "membership_selection": "the selection rule, parsed (membership.selection.as_selection)",
    "linkability_columns": "the two tables, the default filled in (None: every column known)",
}


@dataclass
class AuditPlan:
    """What the audit decided from its settings, the data and the release
    (``AuditResult.plan``): the columns known and synthesized, the radii, the defaults resolved,
    the steps withheld and why, and the settings table with each value's source.

    What the user asked is :attr:`given`, the audit's one :class:`~bayes_risk.AuditSettings`:
    a step reads an option there (``plan.given.combining_rules``); the plan holds only what
    was resolved from it. The fields named as an option of ``AuditSettings`` hold the resolved
    value (``_RESOLVED`` says how each is resolved; a test refuses any other such field).
    """

    #: what the user asked: the audit's one settings object
    given: AuditSettings
    n_records: int
    m: int
    method: str | None
    synthesized: list[str]
    known_unsynthesized: list[str]
    known_synthesized: list[str]
    radius: dict[str, float]
    sweep: tuple[float, ...]
    disclosure_targets: list[str]
    disclosure_keys: dict[str, list[str]]
    ngroups_target: dict[str, int | None]
    attribute_source: str | None  # "model", "cart plug-in", "rf plug-in" or None
    attribute_records: list[int] | None
    thresholds: Thresholds
    random_seed: int
    #: steps the caller asked to skip
    skip: tuple[str, ...] = ()
    #: steps that do not apply to this release, with the reason
    withheld: dict[str, str] = field(default_factory=dict)
    #: every column synthesized, no record released unchanged
    fully_synthetic: bool = False
    #: the numeric known columns whose radius the worst-case search varies (every one)
    search_columns: list[str] = field(default_factory=list)
    #: where ``radius`` came from: "default" (Hornby & Hu's convention) or "given"
    radius_source: str = "default"
    #: the membership step's ``selection``
    membership_selection: Any = None
    #: ``None``: every column is known, linkability is not run
    linkability_columns: tuple[list[str], list[str]] | None = None
    settings: list[Setting] = field(default_factory=list)
    #: the synthesized columns that are numeric (CART's smoothing applies to them)
    numeric_synthesized: list[str] = field(default_factory=list)
    #: the numeric synthesized columns released as donors' original values, each with the
    #: method that draws them (the synthesizer's ``releases_donor_values``, less what its
    #: settings smooth or draw anew)
    donor_columns: dict[str, str] = field(default_factory=dict)
    #: those of them the synthesizer's ``smoothing`` setting can smooth
    smoothable_columns: list[str] = field(default_factory=list)
    #: the original file's variable labels (a SAS, Stata or SPSS file), shown beside the names
    variable_labels: dict[str, str] = field(default_factory=dict)

    @property
    def known(self) -> list[str]:
        """Every column the intruder knows (unsynthesized first)."""
        return [*self.known_unsynthesized, *self.known_synthesized]

    @property
    def identification_release_independent(self) -> bool:
        """Whether the intruder matches on unsynthesized columns only."""
        return not self.known_synthesized

    def release_independent_keys(self, target: str) -> bool:
        """Whether the keys of the empirical measures of ``target`` are all unsynthesized."""
        return not set(self.disclosure_keys.get(target, ())) & set(self.synthesized)

    def add(self, step: str, name: str, value: Any, source: str, note: str = "") -> None:
        """Record one setting."""
        self.settings.append(Setting(step, name, value, source, note))

    def settings_frame(self) -> pd.DataFrame:
        """Every setting as a table (step, name, value, source, note)."""
        return pd.DataFrame(
            [
                {
                    "step": s.step,
                    "setting": s.name,
                    "value": s.value if isinstance(s.value, str) else repr(s.value),
                    "source": s.source,
                    "note": s.note,
                }
                for s in self.settings
            ],
            columns=["step", "setting", "value", "source", "note"],
        )


# ---- the plan from the inputs -----------------------------------------------------------------


def radius_text(radius: dict[str, float]) -> str:
    """``"Age exact, Income = 0.01"``, or ``"exact matching"`` without a radius."""
    return ", ".join(f"{c} exact" if r == 0 else f"{c} = {r:g}"
                     for c, r in radius.items()) or "exact matching"


def _cli_name(step: str) -> str:
    """``--skip posterior-identification``: a step's name as the command line writes it."""
    return step.replace("_", "-")


def _inputs(original: Any, synthetic: Any, schema: Any, categorical: Any,
            weights: Any = None) -> tuple:
    """The original, the release, the schema and the survey weights, read and checked."""
    from bayes_risk.data import SyntheticData, infer_schema
    from bayes_risk.data.io import read_synthetic, read_table
    from bayes_risk.data.validate import check_release_levels, release_only_levels

    if weights is not None and not isinstance(weights, str):
        raise ValidationError(
            f"weights must name a column of the original. Got {type(weights).__name__}.")
    if isinstance(original, (str, os.PathLike)):
        original = read_table(original)
    if not isinstance(original, pd.DataFrame):
        raise ValidationError(
            f"original must be a DataFrame or a table path. Got {type(original).__name__}."
        )
    w, rest = None, original
    if weights is not None:
        from bayes_risk.identification.population import _weight_vector

        w = _weight_vector(weights, original)  # a missing column or a bad weight is refused
        rest = original.drop(columns=[weights])
    if len(rest) == 0 or len(rest.columns) == 0:
        raise ValidationError("original has no records or no columns; expected a table.",
                              code="EMPTY_TABLE")
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
    elif not isinstance(synthetic, SyntheticData):
        raise ValidationError(
            "synthetic must be a SyntheticData, a list of DataFrames, a SyntheticData folder or "
            f"a list of table paths. Got {type(synthetic).__name__}."
        )
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
    return original, synthetic, schema, w


def _twice(cols: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(c for c in cols if list(cols).count(c) > 1))


def _once(cols: list[str], name: str, what: str) -> list[str]:
    """``cols``, refused when one is listed twice."""
    if _twice(cols):
        raise ValidationError(f"{arg_name(name)}: column(s) {_twice(cols)} listed more than "
                              f"once; give each {what} once.")
    return cols


def _check_utility_options(sch: Any, combining_rules: str, imputed: Any) -> None:
    """Check the utility step's options: the rules, and ``imputed`` (``"auto"`` or columns)."""
    if combining_rules != "auto":
        from bayes_risk.utility.combining import check_rules

        check_rules(combining_rules, "combining_rules")
    if isinstance(imputed, str) and imputed == "auto":
        return
    if isinstance(imputed, str):
        raise ValidationError(
            f"imputed must be 'auto' or a list of column names ([] for none). Got {imputed!r}.")
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
            "give the "
            "folder written by 'bayes-risk fit', or no model for a CART / random-forest release.",
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
                          ) -> tuple[dict[str, str], list[str]]:
    """The numeric synthesized columns whose released values are donors' original values,
    each with the method that draws them, and those of them the synthesizer can smooth: what
    the synthesizer declares (``releases_donor_values``, a ``smoothing`` setting), less the
    columns its settings already smooth or draw new values for (a specification's ``norm``)."""
    import inspect

    from bayes_risk.contract import capabilities
    from bayes_risk.registry import get_synthesizer, list_synthesizers

    method = getattr(syn, "method", None)
    if not isinstance(method, str) or method not in list_synthesizers():
        return {}, []
    cls = get_synthesizer(method)
    if not capabilities(cls).releases_donor_values:
        return {}, []
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
    by = {c: m for c, m in by.items() if c not in smoothed}
    if not takes_smoothing:
        return by, []
    # kernel smoothing applies to the columns the synthesizer's own leaves draw (a
    # specification's CART columns), not to its other methods' columns
    return by, [c for c, m in by.items() if m in (method, "cart")]


def _make_plan(data: Any, syn: Any, sch: Any, s: Any, *, known: Any, model: Any,
               synthesized: Any, thresholds: Thresholds, random_seed: int,
               seed_src: str = "given") -> AuditPlan:
    """Resolve and check every setting of ``s`` and the inputs, recording where each came from."""
    from bayes_risk.utility._inputs import differing_share

    est = s.attribute_estimator
    _check_utility_options(sch, s.combining_rules, s.imputed)
    if isinstance(known, str) or not known:
        raise ValidationError("known: give the columns the intruder knows (at least one).")
    known = _once(sch.check_columns(list(known), "known"), "known", "column the intruder knows")
    if s.known_sweep:
        _check_known_sweep(known)
    skip_steps = _skip_steps(s.skip)
    if synthesized is not None:
        syn_cols = _once(sch.check_columns(list(synthesized), "synthesized"), "synthesized",
                         "synthesized column")
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
    if "utility" not in skip_steps:
        from bayes_risk.utility.compare import choose_rules

        # combining rules that cannot apply (NOT_PARTIAL_SYNTHESIS) fail before any step runs
        choose_rules(s.combining_rules, syn, data, list(syn), syn_cols, list(sch.names))
    ku = [c for c in known if c not in syn_cols]
    ks = [c for c in known if c in syn_cols]
    rad, rad_src = _plan_radius(s.match.radius, known, sch)
    grid, search_cols = _plan_sweep(s.sweep, known, sch, s.match.radius_type)
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
        search_columns=search_cols, radius_source=rad_src,
    )
    from bayes_risk.data.statfiles import file_labels

    labels = file_labels(data)
    if labels is not None:
        plan.variable_labels = {c: v for c, v in labels.variable_labels.items()
                                if c in sch.names}
    if s.membership_selection is not None:
        from bayes_risk.membership.selection import as_selection

        plan.membership_selection = as_selection(s.membership_selection)
        plan.add("membership", "selection", plan.membership_selection.description, "given",
                 "how the records of a release that synthesizes selected records were "
                 "selected; members left unsynthesized are released whole (P(member) = 1)")
    plan.linkability_columns, link_src = _plan_linkability(s.linkability_columns, known, sch)
    if s.allow_other_model:
        plan.add("release", "model", "allowed not to be the one that made the release",
                 "given", "the steps that use the fitted model measure its risks, with warning "
                 "MODEL_DIFFERS when it did not make the release")
    plan.donor_columns, plan.smoothable_columns = _release_capabilities(
        syn, sch, plan.numeric_synthesized)
    done = (getattr(syn, "extra", None) or {}).get("post_processing")
    if done:
        ops = ", ".join(str(d.get("operation")).replace("_", " ") for d in done)
        why = (f"the release was post-processed after synthesis ({ops}; bayes_risk.sdc), so no "
               "model's likelihood describes it; audit the release as synthesized for this "
               "step (an intruder who sees the post-processed release learns no more, on "
               "average, than one who sees it before).")
        plan.withheld = {n: why for n in ("attribute", "posterior_identification", "membership")}
        plan.add("release", "post-processing", ops, "release manifest",
                 "applied after synthesis (bayes_risk.sdc); the model-based steps are withheld")
    sizes = sorted({len(z) for z in syn if len(z) != len(data)})
    if sizes:
        # identification's true match is record i's own released row i: rows removed after a
        # full synthesis (or another number of rows) pair no row with a record
        plan.withheld["identification"] = (
            f"the release's datasets hold {', '.join(f'{k:,}' for k in sizes)} records, the "
            f"original {len(data):,}"
            + (" (records were removed after synthesis)" if done else "")
            + ", so no released row is paired with an original record, which identification "
            "risk's true match needs (Hornby & Hu 2021); the disclosure measures (repU, DiSCO) "
            "and the attacks measure this release's identity disclosure without that pairing.")
    # partial synthesis as the utility step's pMSE reads it: some, not all, columns synthesized
    partial = 0 < len(syn_cols) < len(sch.names)
    plan.fully_synthetic = not partial and getattr(syn, "synthesized_records", None) is None
    _record_settings(plan, src, rad_src, tg_src, seed_src, partial=partial,
                     method=getattr(syn, "method_description", None) or plan.method)
    _record_attack_settings(plan, link_src)
    zeros = _structural_zeros(model)
    if zeros is None:  # a release of such a model carries its settings in the manifest
        records = (getattr(syn, "settings", None) or {}).get("structural_zeros") or []
        zeros = (len(records), "release manifest (settings of the model)") if records else None
    if zeros is not None:
        n, source = zeros
        plan.add("release", "structural zeros", f"{n} impossible pattern{'s' * (n != 1)}",
                 source, "combinations the model gives probability 0: no synthetic record "
                 "holds them, and the attribute risk never offers them as candidates")
    if s.weights is not None and s.weights in plan.known:
        raise ValidationError(
            f"weights column {s.weights!r} is also a known column; survey weights are not a "
            "key.")
    plan.add("disclosure", "survey weights", s.weights or "none",
             "given" if s.weights else "default", "sdcMicro's individual risk of the "
             "original: Benedetti–Franconi with the weights, 1/f_k without")
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


def _record_settings(plan: AuditPlan, syn_src: str, rad_src: str, tg_src: str,
                     seed_src: str = "given", *, partial: bool, method: str | None) -> None:
    a = plan.add
    a("release", "synthetic datasets (m)", plan.m, "release manifest")
    a("release", "synthesis method", method or "unknown", "release manifest")
    a("release", "synthesized columns", ", ".join(plan.synthesized), syn_src,
      "inferred = the columns that differ from the original in some dataset"
      if syn_src == "inferred" else "")
    a("all", "random seed", plan.random_seed, seed_src,
      "same seed, same numbers" + ("; drawn for this run (give it to repeat the run)"
                                   if seed_src == "drawn" else ""))
    s = plan.given
    prop, est = s.propensity, s.attribute_estimator
    given = prop.method != "logit" or prop.max_order != 1
    a("utility", "pMSE propensity model",
      "CART" if prop.method == "cart" else
      "logit, main effects and two-way interactions" if prop.max_order == 1 else
      "logit, main effects only" if prop.max_order == 0 else
      f"logit, interactions up to order {prop.max_order + 1}",
      "given" if given else "default", "synthpop's utility.gen design")
    a("utility", "pMSE null", "auto", "default",
      "chi-square theory for logit; partial synthesis: the expectation uses only the "
      "synthesized columns" if partial else
      "chi-square theory for logit; complete synthesis: the expectation uses every column")
    a("utility", "interval-overlap estimands", "means and proportions of the synthesized columns",
      "default", "95 % intervals, combining rules of the release's generation scheme")
    a("utility", "combining rules", s.combining_rules,
      "default" if s.combining_rules == "auto" else "given",
      "auto: the generation recorded in the release's manifest, else inferred from the "
      "synthesized columns (the utility section says which rules were used and why)"
      if s.combining_rules == "auto" else "")
    auto = isinstance(s.imputed, str)
    a("utility", "imputed columns", "auto" if auto else (", ".join(s.imputed) or "none"),
      "default" if auto else "given",
      "auto: the imputed_columns recorded in the release's manifest, else the columns with "
      "empty cells in the original and none in any synthetic dataset; they are compared on "
      "the original's observed cells" if auto else "")
    a("identification", "known columns", ", ".join(plan.known), "given")
    a("identification", "radius beside the worst case",
      radius_text(plan.radius), rad_src,
      "Hornby & Hu's (2021) convention: 0.1 (±10 %) on every numeric (count or continuous) "
      "known column; reported beside the worst case, never instead of it"
      if rad_src == "default" else "reported beside the worst case, never instead of it")
    a("identification", "radius type", s.match.radius_type, "default"
      if s.match.radius_type == "percentage" else "given")
    a("identification", "aggregation", "per dataset and pooled", "default",
      "Hornby & Hu (2021): every dataset evaluated separately, measures averaged; Reiter & "
      "Mitra (2009): the intruder holding all m datasets; the verdict reads the larger")
    if not plan.search_columns:
        a("identification", "radius search", "not run", "default",
          "no numeric known column: categorical columns are matched exactly, the only choice")
    elif not plan.sweep:
        a("identification", "radius search", "not run", "given",
          "the verdict reads the radius above, not the worst case (RADIUS_NOT_SEARCHED)")
    else:
        a("identification", "radius search",
          f"{', '.join(f'{r:g}' for r in plan.sweep)} on each of "
          f"{', '.join(plan.search_columns)}",
          "default" if plan.sweep == tuple(sorted({0.0, *DEFAULT_SWEEP})) else "given",
          "the worst case for the intruder: every numeric known column, synthesized or "
          "released unchanged, with 0 (exact matching) in every grid; the largest expected "
          "match rate and the largest true match rate over the grid are read, each with the "
          "radius of each column that gave it")
    a("attribute", "intruder posterior", plan.attribute_source or "none",
      "given" if plan.attribute_source == "model" else "release manifest")
    a("attribute", "scenario", "worst case", "default",
      "the intruder knows every record but the target's synthesized values")
    a("attribute", "candidates",
      "one variable different; numeric: ±10 % grid of 11 points", "default",
      "a true value of 0 uses an additive grid of ±10 % of the column's median |value|")
    a("attribute", "prior", "uniform", "default")
    a("attribute", "estimator", est.kind,
      "default" if est.kind == "auto" else "given",
      "auto: stabilised for class P models (m refits of the model), importance sampling for "
      "class O")
    a("attribute", "refit draws",
      "the model's draws" if est.refit_draws is None else est.refit_draws,
      "default" if est.refit_draws is None else "given",
      "kept draws per chain of each refit of the stabilised estimator")
    a("attribute", "records",
      "all" if plan.attribute_records is None else f"{len(plan.attribute_records)} given",
      "default" if plan.attribute_records is None else "given")
    a("disclosure", "targets", ", ".join(plan.disclosure_targets) or "none", tg_src,
      "default: the synthesized columns the intruder does not know")
    a("disclosure", "keys", "the known columns other than the target", "default")
    ngroups = s.ngroups_target
    a("disclosure", "numeric target groups", ngroups if ngroups is not None else "none",
      "default" if ngroups == 10 else "given", "quantile groups of the pooled values")
    a("disclosure", "denom_lim", 5, "default", "synthpop's default")
    for k, v in plan.thresholds.to_dict().items():
        a("thresholds", k, v, "default" if v == getattr(Thresholds(), k) else "given")


def _plan_linkability(columns: Any, known: list[str], sch: Any
                      ) -> tuple[tuple[list[str], list[str]] | None, str]:
    """The linkability attack's two tables (``None``: every column known) and their source."""
    if columns is None:
        rest = [c for c in sch.names if c not in known]
        return ((list(known), rest) if rest else None), "default"
    try:
        a, b = columns
    except (TypeError, ValueError):
        raise ValidationError(
            "linkability_columns must be two lists of columns, the intruder's two tables "
            f"(--linkability COLS_A COLS_B). Got {columns!r}.") from None
    parts = []
    for part in (a, b):
        part = [part] if isinstance(part, str) else list(part)
        if not part or _twice(part):
            raise ValidationError(
                "linkability_columns: each table needs columns, each listed once "
                f"(--linkability COLS_A COLS_B). Got {columns!r}.")
        parts.append(sch.check_columns(part, "linkability_columns"))
    return (parts[0], parts[1]), "given"


def _record_attack_settings(plan: AuditPlan, link_src: str) -> None:
    """The attacks step's settings (anonymeter's defaults, :data:`ATTACK_OPTIONS`)."""
    a = plan.add
    a("attacks", "singling-out predicates",
      f"univariate and multivariate ({ATTACK_OPTIONS['n_cols']} columns), "
      f"{ATTACK_OPTIONS['n_attacks']} per dataset and mode", "default", "anonymeter's defaults")
    lc = plan.linkability_columns
    a("attacks", "linkability tables",
      "not run (every column is known)" if lc is None
      else f"({', '.join(lc[0])}) and ({', '.join(lc[1])})", link_src,
      "default: the known columns and the other columns" if link_src == "default" else "")
    a("attacks", "linkability nearest rows", ATTACK_OPTIONS["n_neighbors"], "default",
      "anonymeter's default; at most 500 records attacked in the original and in the holdout")
    a("attacks", "inference secrets", "each synthesized column, the intruder knowing every "
      "other column", "default", "anonymeter's attack with the most knowledge of a target; "
      f"a numeric guess is right within {100 * ATTACK_OPTIONS['tolerance']:g} % of it, a "
      "category when equal")
    a("attacks", "control set", "the holdout", "default",
      "the attacks run only with a holdout (records the synthesis did not use)")


def _check_known_sweep(known: list[str]) -> None:
    """Refuse more known columns than the knowledge sweeps evaluate."""
    import inspect

    from bayes_risk.identification.knowledge import known_sweep as sweep_fn

    limit = inspect.signature(sweep_fn).parameters["max_subsets"].default
    if 2 ** len(known) <= limit:
        return
    most = limit.bit_length() - 1
    partial = ("bayes-risk identification --known-sweep COL ... --max-size K" if on_command_line()
               else "identification.known_sweep(..., max_size=K)")
    raise ValidationError(
        f"{arg_name('known_sweep', True, cli='')}: a sweep over the {len(known)} known columns "
        f"evaluates all {2 ** len(known)} subsets of them, more than the {limit} a sweep "
        f"evaluates; give at most {most} columns in {arg_name('known')} with it, or sweep the "
        f"subsets up to a size K (greedy beyond it) with {partial}.")


def _skip_steps(skip: Any) -> list[str]:
    """The steps to skip, by their Python names (an unknown one or all of them refused)."""
    given = [] if skip is None else ([skip] if isinstance(skip, str) else list(skip))
    names = step_names()
    steps = []
    for s_ in given:
        name = str(s_).replace("-", "_")
        if name not in names:
            raise ValidationError(
                f"skip: unknown step {s_!r}; expected one of "
                f"{', '.join(_cli_name(n) for n in names)}."
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
    tg = _once(sch.check_columns([targets] if isinstance(targets, str) else list(targets),
                                 "targets"), "targets", "target")
    in_known = [t for t in tg if t in known]
    if in_known:
        one = len(in_known) == 1
        raise ValidationError(
            f"{arg_name('targets')}: {in_known} {'is' if one else 'are'} also known to the "
            f"intruder ({arg_name('known')}); a target of the empirical measures is a column "
            f"the intruder does not know and would disclose. Drop {'it' if one else 'them'} "
            "from the targets or from the known columns.")
    return tg, "given"
