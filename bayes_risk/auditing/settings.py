"""The settings of the audit's steps: :class:`AuditSettings`. See :doc:`/user_guide/audit`."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from bayes_risk._constraints import Interval, SequenceOf, check_fields, checked
from bayes_risk._specs import (
    RECORDS_HELP,
    as_spec,
    cli_option,
    cli_spec,
    parse_radius,
    split_lists,
)
from bayes_risk._utility_specs import (
    COMBINING_RULES,
    PROPENSITY_METHODS,
    RULES_HELP,
    PropensitySpec,
    imputed_columns,
)
from bayes_risk.attribute.specs import (
    ESTIMATORS,
    PLUGIN_REPLICATES_HELP,
    REFIT_COST_HELP,
    EstimatorSpec,
)
from bayes_risk.exceptions import ValidationError
from bayes_risk.identification.specs import REFINE_POINTS, MatchSpec

# imports no numpy at module level: the command line declares the audit's options from the
# fields (cli_option, cli_spec) and 'bayes-risk --help' imports no numpy

__all__ = ["AuditSettings", "DEFAULT_SWEEP", "SETTINGS_GROUP", "settings_row"]

#: the argument group of ``bayes-risk audit --help`` that lists the settings the report states
SETTINGS_GROUP = "settings (each default is stated in the report)"

#: the radii of the audit's radius search (0, exact matching, is always added): Hornby & Hu's
#: (2021, §4.1) grid widened to ±100 % (:data:`bayes_risk.identification.radius.SEARCH_RADII`)
DEFAULT_SWEEP: tuple[float, ...] = (0.01, 0.025, 0.05, 0.1, 0.2, 0.3, 0.5, 1.0)


def settings_row(step: str, name: str, note: str = "") -> dict[str, tuple[str, str, str]]:
    """``metadata=`` of a field of :class:`AuditSettings` that the audit's settings table
    shows as it is given, with no code of its own: the row ``(step, name, value, source,
    note)``, the source "default" when the value is the field's default, else "given".

    Parameters
    ----------
    step : str
        The step the row is listed under (a name of :func:`bayes_risk.measures.measures`, or
        "all").
    name : str
        The setting's name in the table.
    note : str
        What the value means.

    Returns
    -------
    dict
        ``{"settings_row": (step, name, note)}``, merged with ``cli_option``'s metadata when
        the field is a command-line option too.

    Examples
    --------
    >>> from dataclasses import dataclass, field
    >>> @dataclass(frozen=True, eq=False)
    ... class MySettings(AuditSettings):
    ...     min_share: float = field(default=0.5, metadata=settings_row("toy", "minimum share"))
    >>> MySettings(min_share=0.25).replace(sweep=None).min_share
    0.25
    """
    return {"settings_row": (step, name, note)}


@dataclass(frozen=True, eq=False)
class AuditSettings:
    """How the audit's steps measure the release, where they run, which thresholds judge them
    (every field has the audit's default).

    Parameters
    ----------
    categorical : sequence of str, optional
        Integer-coded factors; read only when :func:`~bayes_risk.audit` is given no ``schema``.
    match : MatchSpec, optional
        ``radius`` and ``radius_type`` of the identification steps. The radius is the one
        reported beside the worst case (default: Hornby & Hu's convention, a percentage radius
        of 0.1 on every numeric known column); any other field given is refused.
    thresholds : Thresholds, mapping or list of "NAME=VALUE", optional
        Thresholds of the verdict lines (:class:`~bayes_risk.auditing.Thresholds`; default:
        each measure's own).
    sweep : sequence of float or None
        ``radii`` of the worst-case radius search (:func:`~bayes_risk.radius_search`), over
        every numeric known column, synthesized or released unchanged (default
        ``DEFAULT_SWEEP``: 0.01, 0.025, 0.05, 0.1, 0.2, 0.3, 0.5 and 1, Hornby & Hu's 0.01 …
        0.3 widened to 1).
        ``None`` skips the search: the verdict then reads ``match``'s radius, which is not the
        worst case, and says so (``RADIUS_NOT_SEARCHED``).
    radius_refine : int
        ``refine`` of the radius search (:func:`~bayes_risk.radius_search`, default 200); a
        bounded search's verdict lines state the bound (``RADIUS_SEARCH_BOUNDED``).
    known_sweep : bool
        Add the knowledge sweeps (:func:`~bayes_risk.identification.known_sweep`,
        :func:`~bayes_risk.attribute.attribute_known_sweep`; ``2**k`` subsets). Default off.
    known_fractions : sequence of float, optional
        Shares in ``[0, 1]`` of the other records the intruder knows, for the attribute step's
        curve (:func:`~bayes_risk.attribute.known_fraction_curve`). Default ``None``: no curve.
    targets : sequence of str, optional
        Targets of the empirical disclosure measures. Default: the synthesized columns the
        intruder does not know.
    ngroups_target : int or None
        Groups of a numeric target of the empirical measures (at least 2, default 10;
        ``None``: none).
    attribute_records : sequence of int, optional
        Records (0-based) whose attribute risk is estimated (default all).
    attribute_estimator : EstimatorSpec or {"auto", "stabilised", "is"}
        ``kind``, ``refit_draws``, ``refit_cache`` and ``plugin_replicates`` (a smoothed CART
        release's plug-in) of the attribute step's :class:`~bayes_risk.EstimatorSpec` (default
        ``"auto"``); any other field is refused. ``plugin_replicates`` is the attribute
        step's alone: the membership step's CART plug-in has no replicates (it covers CART
        without smoothing, whose plug-in probabilities are exact); it is refused before any
        step (``OPTION_UNUSED``) when the attribute step does not run or its likelihood draws
        no replicate.
    combining_rules : {"auto", "partial", "full-same-n", "full-population", "partial-sample"}
        Combining rules of the interval overlaps (``rules`` of
        :class:`~bayes_risk.utility.OverlapSpec`).
    propensity : PropensitySpec, "logit" or "cart", optional
        ``method`` and ``max_order`` of the pMSE's propensity model (default logit with two-way
        interactions); any other field is refused.
    imputed : "auto" or sequence of str
        ``imputed`` of the utility step (:func:`~bayes_risk.utility.utility_summary`).
    membership_selection : None, "independent", str or callable
        How the synthesized records of a partial release were selected (``selection`` of
        :func:`~bayes_risk.membership_risk`); without it such a release skips membership.
    weights : str, optional
        Survey weights column of ``original`` for :func:`~bayes_risk.disclosure.original_risk`.
    linkability_columns : (sequence of str, sequence of str), optional
        The intruder's two tables of the linkability attack (default: the ``known`` columns and
        the others).
    skip : sequence of str, optional
        Steps not to run (names of :func:`bayes_risk.measures.measures`).
    show_confidential_values : bool
        Show the known values of the records most at risk in the report (default off).
    allow_other_model : bool
        Go on, with warning ``MODEL_DIFFERS``, when ``model`` did not make the release
        (:doc:`/user_guide/provenance`).
    model_function : str or callable, optional
        The model function of a PyMC model folder given as ``model``, as its ``model.json``
        names it (:func:`~bayes_risk.models.load_model`; :doc:`/user_guide/security`).
    executor : None, distributed.Client or Executor, optional
        Where the engines of the identification, posterior-identification and attribute steps
        run their partitions (:func:`bayes_risk.executors.as_executor`; a ``Client``: on its
        Dask cluster, each engine's own partition size); every other step runs in process.
        The figures are the same whatever the executor; the report and ``summary.json`` say
        where each step ran (:doc:`/user_guide/dask`).

    Examples
    --------
    >>> s = AuditSettings(sweep=None, skip=["membership"])
    >>> s.replace(known_sweep=True).skip
    ['membership']
    >>> s.propensity.method
    'logit'
    """

    categorical: Sequence[str] | None = None
    match: MatchSpec | None = field(default=None, metadata=cli_spec(
        MatchSpec,
        radius={"metavar": "COL=R|R", "group": SETTINGS_GROUP,
                "help": "the radius reported beside the worst case (repeat per column, or one "
                "number for every numeric known column; default 0.1, Hornby & Hu's convention)",
                "parse": functools.partial(parse_radius, vector=False)},
        radius_type={"group": SETTINGS_GROUP, "help": "how --radius is read (default "
                     "percentage)"}))
    # checked by the audit (Thresholds.parse reads the registered measures)
    thresholds: Any = field(default=None, metadata=cli_option(
        "--threshold", "verdict threshold (repeat; names and defaults below)", action="append",
        metavar="NAME=VALUE", group=SETTINGS_GROUP))
    sweep: Sequence[float] | None = field(default=DEFAULT_SWEEP, metadata=cli_option(
        "--radius-sweep", "radii of the worst-case radius search (default Hornby & Hu's grid "
        "widened to 1: 0.01,0.025,0.05,0.1,0.2,0.3,0.5,1), or 'none' (the verdict then reads "
        "--radius, not the worst case); every numeric known column is searched, synthesized or "
        "not, with 0 (exact matching) added to every grid", metavar="R1,R2,...",
        parse=lambda text: _numbers(text, none=True), group=SETTINGS_GROUP)
        | checked([SequenceOf(Interval(float, 0), "radii (finite numbers >= 0)", min_len=0,
                              unique=True), None]))
    radius_refine: int = field(default=REFINE_POINTS, metadata=cli_option(
        "--radius-refine", "points the radius search evaluates at most between the grid's "
        "radii to find and bound the worst case over every radius (default 200; 0: the grid's "
        "points only, bounded between them)", metavar="N", type=int, group=SETTINGS_GROUP)
        | checked(Interval(int, 0)))
    known_sweep: bool = field(default=False, metadata=cli_option(
        "--known-sweep", "add to the identification step the risk for every subset of the "
        "known columns, the Pareto frontier and the drivers of the risk (Shapley values, "
        "per-level contributions), and to the attribute step the same over the synthesized "
        "known columns known of the record's own values; off by default (one run per subset)",
        action="store_true", group=SETTINGS_GROUP))
    known_fractions: Sequence[float] | None = field(default=None, metadata=cli_option(
        "--known-fractions", "add to the attribute step the risk when the intruder knows only "
        "these shares in [0, 1] of the other records (1: the worst case; class P models; the "
        "refits made once); off by default (one run per share)", metavar="F", nargs="+",
        type=float, group=SETTINGS_GROUP)
        | checked([SequenceOf(Interval(float, 0, 1), "shares in [0, 1]"), None]))
    targets: Sequence[str] | None = field(default=None, metadata=cli_option(
        "--target", "targets of the empirical measures (default: the synthesized columns the "
        "intruder does not know)", metavar="COL", nargs="+", group=SETTINGS_GROUP))
    ngroups_target: int | None = field(default=10, metadata=cli_option(
        "--ngroups-target", "group a numeric target into about N groups (default 10; none: "
        "every value is a level)", metavar="N|none", parse=lambda text: _numbers(
            text, none=True, one=True), group=SETTINGS_GROUP)
        | checked([Interval(int, 2), None]))
    attribute_records: Sequence[int] | None = field(default=None, metadata=cli_option(
        "--records", f"records for attribute risk (default all): {RECORDS_HELP}",
        metavar="RANGE|FILE", group=SETTINGS_GROUP))
    attribute_estimator: EstimatorSpec | str = field(default="auto", metadata=cli_spec(
        EstimatorSpec,
        kind={"flag": "--attribute-estimator", "group": SETTINGS_GROUP,
              "help": "estimator of the attribute step (as 'bayes-risk attribute --estimator'; "
              "default auto: stabilised for class P models)"},
        refit_draws={"group": SETTINGS_GROUP,
                     "help": "kept draws per chain of each refit of the attribute step's "
                     "stabilised estimator (default: the model's draws). " + REFIT_COST_HELP},
        refit_cache={"group": SETTINGS_GROUP},
        plugin_replicates={"group": SETTINGS_GROUP,
                           "help": f"{PLUGIN_REPLICATES_HELP}. Refused too when the attribute "
                           "step does not run. The attribute step's plug-in only: the membership "
                           "step's has no replicates (it covers CART without smoothing, whose "
                           "plug-in probabilities are exact)"}))
    combining_rules: str = field(default="auto", metadata=cli_option(
        "--combining-rules", RULES_HELP + " (the utility step)",
        choices=("auto", *COMBINING_RULES)))
    propensity: PropensitySpec | str | None = field(default=None, metadata=cli_spec(
        PropensitySpec, method={}, max_order={}))
    imputed: Sequence[str] | str = field(default="auto", metadata=cli_option(
        "--imputed", "columns whose missing values the synthesizer imputed, compared on the "
        "original's observed cells in the utility step ('none': missing values compared as a "
        "level; default: recorded in the release's manifest, else inferred; see bayes-risk "
        "utility --help)", metavar="COL", nargs="+",
        parse=imputed_columns))
    membership_selection: str | Callable[..., Any] | None = field(default=None, metadata=cli_option(
        "--membership-selection", "membership step of a release that synthesized selected "
        "records only (a model fitted with --records): how they were selected, 'independent' "
        "or a rule on a record's own values such as \"Income > 150000 or Age >= 90\" (see "
        "bayes-risk membership --help, --selection); recorded in the settings",
        metavar="RULE"))
    weights: str | None = field(default=None, metadata=cli_option(
        "--weights", "survey weights of the original's records (a column of ORIGINAL): the "
        "disclosure step's baseline of the original, sdcMicro's individual risk, is the "
        "Benedetti-Franconi risk with them; default: none, the risk is 1/f_k", metavar="COL",
        group=SETTINGS_GROUP))
    linkability_columns: tuple[Sequence[str], Sequence[str]] | None = field(
        default=None, metadata=cli_option(
            "--linkability", "attacks step: the columns of the intruder's two tables, each a "
            "comma-separated list (default: the --known columns and the others)",
            metavar=("COLS_A", "COLS_B"), nargs=2,
            parse=lambda texts: tuple(split_lists(texts))))
    # the steps named by the epilog's folders, not read off the registry: --help imports no
    # measure's module; the audit checks the names (those of added measures too)
    skip: Sequence[str] | None = field(default=None, metadata=cli_option(
        "--skip", "steps not to run (reported as skipped), by the names of their folders below",
        metavar="STEP", nargs="+"))
    show_confidential_values: bool = field(default=False, metadata=cli_option(
        "--show-confidential-values", "show the known (quasi-identifier) values of the records "
        "most at risk in the report, and write the confidential records' values into its files "
        "(off by default: record numbers only; every file and report.zip withhold them too: the "
        "predicates that single out a record of the original or the holdout)",
        action="store_true"))
    allow_other_model: bool = False
    model_function: str | Callable[..., Any] | None = None
    executor: Any = None

    def __post_init__(self) -> None:
        check_fields(self, prefix="")
        set_ = object.__setattr__
        set_(self, "match", _used_fields(as_spec(self.match, MatchSpec, "match"),
                                         ("radius", "radius_type"), "match"))
        set_(self, "propensity", _used_fields(
            as_spec(self.propensity, PropensitySpec, "propensity", "method", PROPENSITY_METHODS),
            ("method", "max_order"), "propensity"))
        set_(self, "attribute_estimator", _used_fields(
            as_spec(self.attribute_estimator, EstimatorSpec, "attribute_estimator", "kind",
                    ESTIMATORS),
            ("kind", "refit_draws", "refit_cache", "plugin_replicates"), "attribute_estimator"))
        if self.sweep is not None:
            set_(self, "sweep", _radii(self.sweep))
        if self.known_fractions is not None:
            set_(self, "known_fractions", tuple(sorted({float(v) for v in self.known_fractions})))

    def replace(self, **changes: Any) -> AuditSettings:
        """A copy with ``changes`` applied (validated again), of the class of ``self``."""
        fields = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        fields.update(changes)
        return type(self)(**fields)


def _numbers(text: str, *, none: bool = False, one: bool = False) -> Any:
    """The numbers of an option's comma-separated ``text`` (``one``: a number), ``None`` for
    'none' (with ``none``); a text that is not one is returned as it is, for the field's check
    to refuse."""
    if none and text.strip().lower() == "none":
        return None
    try:
        numbers = [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        return text
    if one:
        return int(numbers[0]) if len(numbers) == 1 and numbers[0].is_integer() else text
    return numbers


def _radii(sweep: Any) -> tuple[float, ...]:
    grid = [float(r) for r in sweep]  # checked by the field's constraint
    if not any(r > 0 for r in grid):  # e.g. an empty shell variable: exact matching alone
        raise ValidationError(
            f"sweep holds no radius above 0 (got {sweep!r}): the radius search would be exact "
            "matching alone, which understates the risk of an intruder who matches loosely. Give "
            "radii above 0, or None to skip the search (the verdict then reads the radius "
            "given, with warning RADIUS_NOT_SEARCHED).", code="INVALID_ARGUMENT")
    return tuple(grid)


def _used_fields(spec: Any, used: Sequence[str], argument: str) -> Any:
    """``spec`` if it sets no field but ``used`` (the audit's steps set the others)."""
    default = type(spec)()
    for f in dataclasses.fields(spec):
        if f.name not in used and not _same(getattr(spec, f.name), getattr(default, f.name)):
            raise ValidationError(
                f"{argument}: the audit reads {type(spec).__name__}'s {', '.join(used)} only; "
                f"{type(spec).__name__}.{f.name} is set by its steps (leave it at its default).")
    return spec


def _same(a: Any, b: Any) -> bool:
    import numpy as np

    return a is b or (type(a) is type(b) and not isinstance(a, np.ndarray) and a == b)
