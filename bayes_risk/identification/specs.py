"""The grouped arguments of identification risk: :class:`MatchSpec` (``match=``, how known
columns match) and :class:`PopulationSpec` (``population=``, the targets and membership).

Both are validated when built; what depends on the data is checked when the risk is computed.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from bayes_risk._constraints import (
    Interval,
    OneOf,
    Options,
    Relation,
    Requires,
    SequenceOf,
    Text,
    check_fields,
    check_value,
    checked,
)
from bayes_risk._specs import as_spec, cli_option, is_number, parse_numbers, parse_radius
from bayes_risk.exceptions import ValidationError, arg_name, has_option, on_command_line

if TYPE_CHECKING:
    import numpy as np

__all__ = ["MatchSpec", "PopulationSpec", "MEMBERSHIPS", "POPULATION_ESTIMATES", "COMPAT_MODES",
           "MISSING_KNOWN", "FALLBACKS", "AGGREGATIONS", "RADIUS_TYPES", "WINDOWS", "SHAPES",
           "LOGLINEAR_ORIGINAL", "LOGLINEAR_SYNTHETIC", "REPLICATES", "REPLICATES_FIELDS",
           "KNOWLEDGE", "INTRUDER"]

# module level holds the standard library only: the command line builds its parser from the
# fields' options (cli_option) without numpy
RADIUS_TYPES = ("percentage", "absolute", "quantile_sd")
WINDOWS = ("closed", "open")
SHAPES = ("rectangle", "ellipse", "mahalanobis", "legacy_hh_euclid")
MEMBERSHIPS = ("known", "unknown")
POPULATION_ESTIMATES = ("default", "scaled", "expected_inverse")
COMPAT_MODES = ("IdentificationRiskCalculation",)
#: a target's missing known value matches any released value, or only a missing one
MISSING_KNOWN = ("any", "level")
FALLBACKS = ("none", "unsynthesized")
#: points a radius search evaluates at most between the grid's radii (``refine=``)
REFINE_POINTS = 200
#: the radii of :func:`~bayes_risk.radius_search` (0, exact matching, is always added): Hornby &
#: Hu's (2021) grid, widened to ±100 % so that an intruder who matches loosely is covered
SEARCH_RADII: tuple[float, ...] = (0.0, 0.01, 0.025, 0.05, 0.1, 0.2, 0.3, 0.5, 1.0)
#: how the datasets' matches are combined (``aggregation=``; ``"pooled_measures"`` resolved)
AGGREGATIONS = ("pooled", "per_dataset")
#: the names of log-linear population counts fitted on the original, or on each replicate
LOGLINEAR_ORIGINAL = ("loglinear_original", "loglinear_orig", "loglinear-original")
LOGLINEAR_SYNTHETIC = ("loglinear_synthetic", "loglinear_syn", "loglinear-synthetic")
#: the argument groups of the command line's help the fields' options are listed in
MATCHING, INTRUDER, TARGETS = ("matching (methods, Matching rules)",
                               "probabilities and intruder (Drechsler & Reiter 2008 §4)",
                               "targets")
#: the argument group of the posterior replicates' options
REPLICATES = "posterior replicates (Drechsler & Reiter 2008, eq. 5)"


def _replicates(text: str) -> int | str:
    """``--replicates``'s text as ``n``: a whole number, else the text (``auto``; the field
    checks it)."""
    return int(text) if text.strip().isdigit() else text


#: the fields of :class:`~bayes_risk.identification.PosteriorReplicates` that options of
#: ``bayes-risk identification`` set, with their checks (the class's fields take them from
#: here: it imports numpy, the command line's parser does not)
REPLICATES_FIELDS: dict[str, dict[str, Any]] = {
    "n": cli_option(
        "--replicates", "number of posterior replicates, or auto (default): until the relative "
        "Monte Carlo standard error of the expected match risk is below --mcse-tol",
        metavar="R|auto", parse=_replicates, group=REPLICATES)
    | checked([Options(("auto",), listed=True), Interval(int, 1)]),
    "view": cli_option(
        "--view", "agency: the model as fitted to the original (default); intruder: the same "
        "model refitted to the first released dataset", choices=("agency", "intruder"),
        group=REPLICATES) | checked(Options(("agency", "intruder"), listed=True)),
    "mcse_tol": cli_option(
        "--mcse-tol", "relative MCSE at which --replicates auto stops (default 0.01)",
        type=float, metavar="TOL", group=REPLICATES)
    | checked(Interval(float, 0, 1, closed="neither")),
    "max_replicates": cli_option(
        "--max-replicates", "cap of --replicates auto (default 2000)", type=int, metavar="R",
        group=REPLICATES) | checked(Interval(int, 1)),
}


#: the argument group of the known sweep's options
KNOWLEDGE = "sensitivity to the intruder's knowledge (Hu 2019 §5)"


def _nonnegative(value: Any, what: str, column: str | None = None) -> float:
    """``value`` as a float, or a ValidationError naming ``what`` (and ``column``)."""
    shown = (arg_name(what) if column is None else f"{arg_name(what)} {column}"
             if on_command_line() and has_option(what) else f"{what}[{column!r}]")
    return check_value(value, Interval(float, 0), shown)


def parse_strategy(strategy: Any) -> str | tuple[str, float]:
    """``"always"``, ``"not_if_max"`` or ``("threshold", γ)`` (Drechsler & Reiter 2008 §4.3;
    ``"threshold:γ"`` is the command line's spelling of the last)."""
    if strategy is None or strategy == "always":
        return "always"
    if strategy in ("not_if_max", "not-if-max"):
        return "not_if_max"
    if isinstance(strategy, str) and strategy.startswith("threshold:"):
        strategy = ("threshold", strategy.split(":", 1)[1])
    if isinstance(strategy, (tuple, list)) and len(strategy) == 2 and strategy[0] == "threshold":
        g = strategy[1]
        with contextlib.suppress(TypeError, ValueError):  # "threshold:γ" gives a string
            g = float(g)
        return ("threshold", check_value(g, Interval(float, 0, 1, closed="neither"),
                                         "strategy: the threshold γ"))
    forms = ("always, threshold:GAMMA or not-if-max" if on_command_line()
             else "'always', ('threshold', γ) or 'not_if_max'")
    raise ValidationError(f"strategy must be {forms}. Got {strategy!r}.")


#: MatchSpec.radius given as a vector (the R package's, in compat mode)
_RADIUS_VECTOR = SequenceOf(Interval(float, 0), "finite numbers >= 0 (compat mode; otherwise "
                            "a number or a {column: radius} mapping)", min_len=0)


def _per_column(value: Any, what: str) -> float | dict[str, float] | None:
    """A number or a ``{column: number}`` mapping of non-negative numbers (or ``None``)."""
    if value is None:
        return None
    if isinstance(value, Mapping):
        return {str(c): _nonnegative(v, what, str(c)) for c, v in value.items()}
    return _nonnegative(value, what)


@dataclass(frozen=True)
class MatchSpec:
    """How a released record matches a target's known values.

    Categorical columns, and count columns given no radius, match by equality; the others
    inside a window around the target's value. The options are described in the user guide
    (:doc:`/user_guide/identification`, Options) and the methods (:doc:`/methods/identification`).

    Parameters
    ----------
    radius : float, dict or sequence, optional
        Radius ``r_j``: one for every continuous known column, ``{column: r}``, or (compat mode
        only) a vector in data-frame column order.
    radius_type : {"percentage", "absolute", "quantile_sd"}
        ``R = r·|t|``, ``R = r``, or ``r`` standard deviations of the target's quantile group.
    r_min : float or dict, optional
        Floor of the percentage radius.
    quantile_groups : int
        Number of quantile groups of ``"quantile_sd"`` (default 20).
    window : {"closed", "open"}, optional
        ``|x − t| ≤ R`` (default) or ``< R``.
    shape : {"rectangle", "ellipse", "mahalanobis", "legacy_hh_euclid"}, optional
        How several radius columns combine (default ``"rectangle"``).
    missing_known : {"any", "level"}
        A target's missing known value matches any released value, or only a missing one.
    strategy : "always", ("threshold", γ) or "not_if_max"
        When the intruder declares a match (Drechsler & Reiter 2008 §4.3).
    fallback : {None, "none", "unsynthesized"}
        Records matching on the unsynthesized known columns when nothing matches in a replicate
        (``None``: automatic).
    compat : {None, "IdentificationRiskCalculation"}
        Reproduce the R package exactly (:doc:`/methods/compatibility`).

    Examples
    --------
    >>> MatchSpec(radius={"income": 0.05}, window="open").radius
    {'income': 0.05}
    """

    radius: float | Mapping[str, float] | Sequence[float] | None = field(
        default=None, metadata=cli_option(
            "--radius", "radius of a numeric column (repeat per column); a bare number applies "
            "to every continuous known column (in the R package's compatibility mode: a vector in "
            "data-frame column order)", metavar="COL=R", action="append", group=MATCHING,
            parse=parse_radius))
    radius_type: Literal["percentage", "absolute", "quantile_sd"] = field(
        default="percentage", metadata=cli_option(
            "--radius-type", "R = r|t| (default), R = r, or quantile-group SD",
            choices=RADIUS_TYPES, group=MATCHING) | checked(Options(RADIUS_TYPES)))
    r_min: float | Mapping[str, float] | None = field(default=None, metadata=cli_option(
        "--r-min", "floor of the percentage radius", metavar="R", type=float, group=MATCHING))
    quantile_groups: int = field(default=20, metadata=cli_option(
        "--quantile-groups", "number of quantile groups for --radius-type quantile-sd (default "
        "20)", metavar="Q", type=int, group=MATCHING) | checked(Interval(int, 1)))
    window: Literal["closed", "open"] | None = field(default=None, metadata=cli_option(
        "--window", "|x-t| <= R (closed, default) or < R (open; the R package)",
        choices=WINDOWS, group=MATCHING) | checked([Options(WINDOWS), None]))
    shape: Literal["rectangle", "ellipse", "mahalanobis", "legacy_hh_euclid"] | None = field(
        default=None, metadata=cli_option(
            "--shape", "how several radius columns combine (default rectangle); mahalanobis: "
            "one --radius R, a Mahalanobis distance with the covariance of the original's "
            "radius columns", choices=SHAPES, group=MATCHING)
        | checked([Options(SHAPES), None]))
    missing_known: Literal["any", "level"] = field(default="any", metadata=cli_option(
        "--missing-known", "a target's missing known value (empty or a --missing-code): matches "
        "any released value (default; the intruder does not know it) or only a released "
        "missing value", choices=MISSING_KNOWN, group=INTRUDER)
        | checked(Options(MISSING_KNOWN)))
    strategy: Any = field(default="always", metadata=cli_option(
        "--strategy", "always (default), threshold:GAMMA or not-if-max", metavar="S",
        group=INTRUDER))
    fallback: Literal["none", "unsynthesized"] | None = field(default=None, metadata=cli_option(
        "--fallback", "when nothing matches in a dataset (default: unsynthesized for pooled "
        "known-membership runs, else none)", choices=FALLBACKS, group=INTRUDER)
        | checked([Options(FALLBACKS), None]))
    compat: Literal["IdentificationRiskCalculation"] | None = field(
        default=None, metadata=cli_option(
            "--compat", "reproduce the IdentificationRiskCalculation R package exactly",
            choices=COMPAT_MODES, group=INTRUDER) | checked([Options(COMPAT_MODES), None]))

    #: the fields against each other (checked by ``check_fields``)
    RELATIONS: ClassVar[tuple[Relation, ...]] = (
        Requires("shape", "radius_type", when=("mahalanobis",), equal=("percentage", "absolute"),
                 code="INVALID_ARGUMENT", why="it takes the radius as a Mahalanobis distance, "
                 "one absolute radius on whitened values"),
        Requires("r_min", "radius_type", equal=("percentage",), code="INVALID_ARGUMENT",
                 why="the floor of a percentage radius"),
    )

    def __post_init__(self) -> None:
        radius = self.radius
        if radius is not None and not is_number(radius) and not isinstance(radius, Mapping):
            radius = tuple(float(r) for r in check_value(radius, _RADIUS_VECTOR,
                                                         "MatchSpec.radius"))
        else:
            radius = _per_column(radius, "MatchSpec.radius")
        object.__setattr__(self, "radius", radius)
        object.__setattr__(self, "r_min", _per_column(self.r_min, "MatchSpec.r_min"))
        strategy = self.strategy
        object.__setattr__(self, "strategy", parse_strategy(
            tuple(strategy) if isinstance(strategy, list) else strategy))
        check_fields(self)

    def options(self) -> dict[str, Any]:
        """The fields as the keyword options of the engine's ``prepare``."""
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        if isinstance(self.radius, tuple):
            out["radius"] = list(self.radius)
        return out

    to_dict = options  # the options are JSON-ready

    def replace(self, **changes: Any) -> MatchSpec:
        """A copy with ``changes`` applied (validated again)."""
        return MatchSpec(**{**self.options(), **changes})


@dataclass(frozen=True, eq=False)
class PopulationSpec:
    """The targets, whether the intruder knows who is in the sample, and the population counts
    if not (:doc:`/user_guide/identification`, Options; :doc:`/methods/identification`).

    Parameters
    ----------
    membership : {"known", "unknown"}
        Whether the intruder knows the targets are in the sample (default ``"known"``).
    counts : mapping, DataFrame, array, "loglinear_original" or "loglinear_synthetic", optional
        Population counts ``F_t`` keyed by the known values, one per target, or log-linear
        estimates fitted on the original or on each replicate (Hu 2019 §4.2.3).
    estimate : {"default", "scaled", "expected_inverse"}
        How the log-linear fit gives ``F̂``: ``f + (1−a)μ̂/a``, ``μ̂/a``, or ``E[1/F | f]``.
    sampling_fraction : float, optional
        ``a = n / population_size`` for the log-linear estimates, in ``(0, 1]``.
    population_size : int, optional
        The population's size (alternative to ``sampling_fraction``).
    weights : str or array, optional
        Survey weights of the original's records (a column, or one per row), positive and
        finite: ``F_t`` is their sum over the records with the target's key.
    targets : DataFrame, optional
        External targets holding the known columns and ``target_id`` (default: every original
        record).
    target_id, original_id : str, optional
        The id columns of ``targets`` and of the original.
    selection : "release", "records", str, callable, boolean mask or sequence of int, optional
        What the intruder knows of why records were selected for synthesis (``R``, Hu 2019
        §4.2.4), read by :func:`~bayes_risk.identification_risk`: ``"release"``, the rule the
        release's manifest records (a small-cell PMM release's sensitive cells);
        ``"records"``, the synthesized records the manifest lists; an expression
        on the known columns (``"Age >= 90"``) or a callable of a DataFrame, the rule, evaluated
        on each target's known values; or the selected records of the original (a mask or
        positions). A target known to be unselected then matches only unselected released
        records, exactly on every known column; one known to be selected only synthesized
        records (:doc:`/methods/identification`, Identification given the selection metadata
        R). Default ``None``: the intruder does not know ``R``. Another entry point takes the
        inputs of ``bayes_risk.identification.selection.conditioned`` instead.

    Examples
    --------
    >>> PopulationSpec(membership="unknown", weights="w").weights
    'w'
    """

    membership: Literal["known", "unknown"] = field(default="known", metadata=cli_option(
        "--membership", "whether the intruder knows the targets are in the sample",
        choices=MEMBERSHIPS, group=INTRUDER) | checked(Options(MEMBERSHIPS)))
    # the command line reads true:FILE (its run passes the table)
    counts: Any = field(default=None, metadata=cli_option(
        "--population-counts", "true:FILE (known columns + count column F), "
        "loglinear-original or loglinear-synthetic (membership unknown)", metavar="SOURCE",
        group=INTRUDER))
    estimate: Literal["default", "scaled", "expected_inverse"] = field(
        default="default", metadata=cli_option(
            "--population-estimate", "log-linear estimate of F (Hu 2019 §4.2.3)",
            choices=POPULATION_ESTIMATES, group=INTRUDER)
        | checked(Options(POPULATION_ESTIMATES)))
    sampling_fraction: float | None = field(default=None, metadata=cli_option(
        "--sampling-fraction", "sampling fraction a = n / N, N the population size "
        "(log-linear counts)", metavar="A", type=float, group=INTRUDER)
        | checked([Interval(float, 0, 1, closed="right"), None]))
    population_size: int | None = field(default=None, metadata=cli_option(
        "--n-pop", "population size (alternative to --sampling-fraction)", metavar="N",
        type=int, group=INTRUDER) | checked([Interval(int, 1), None]))
    weights: str | Sequence[float] | np.ndarray | None = field(default=None, metadata=cli_option(
        "--weights", "survey weights of the original's records (a column of ORIGINAL): "
        "population counts estimated as the sum of the weights of the records sharing the "
        "target's known values (Reiter & Mitra 2009; membership unknown)", metavar="COL",
        group=INTRUDER))
    # the command line reads the file (its run passes the table)
    targets: Any = field(default=None, metadata=cli_option(
        "--targets", "external target table (known columns + an id column)", metavar="FILE",
        group=TARGETS))
    target_id: str | None = field(default=None, metadata=cli_option(
        "--target-id", "id column of --targets linking to the original's records",
        metavar="COL", group=TARGETS) | checked([Text("a column name"), None]))
    original_id: str | None = field(default=None, metadata=cli_option(
        "--original-id", "id column of the original (default: the --target-id column)",
        metavar="COL", group=TARGETS) | checked([Text("a column name"), None]))
    selection: Any = field(default=None, metadata=cli_option(
        "--selection", "the intruder knows why records were selected for synthesis (R, Hu 2019 "
        "§4.2.4): 'release' (the rule the release's manifest records, e.g. a small-cell PMM "
        "release's sensitive cells), 'records' (the manifest's synthesized records: the intruder "
        "knows which original records were selected) or an expression on the known columns "
        "('Income > 150000'); a target known to be unselected then matches only unselected "
        "records, exactly; one known to be selected only synthesized records", metavar="RULE",
        group=INTRUDER))

    #: the fields against each other (checked by ``check_fields``)
    RELATIONS: ClassVar[tuple[Relation, ...]] = (
        *(Requires(name, "membership", equal=("unknown",), code="OPTION_REQUIRED",
                   why="the intruder does not know who is in the sample")
          for name in ("counts", "weights")),
        OneOf(("counts", "weights"), why="the population counts, or the survey weights they "
              "are estimated from"),
        OneOf(("sampling_fraction", "population_size"), code="INVALID_ARGUMENT"),
        Requires("targets", "target_id", code="OPTION_REQUIRED",
                 why="the id column linking the targets to the original's records"),
        Requires("target_id", "targets", code="INVALID_ARGUMENT",
                 why="the id column of the targets"),
    )

    def __post_init__(self) -> None:
        check_fields(self)
        if isinstance(self.counts, str):  # else true counts, checked with the targets
            check_value(self.counts, Options(LOGLINEAR_ORIGINAL + LOGLINEAR_SYNTHETIC,
                                             listed=True), "PopulationSpec.counts given as text")
        if self.weights is not None:
            object.__setattr__(self, "weights", _weights(self.weights))
        if self.estimate != "default" and (self.weights is not None or not (
                self.counts is None or isinstance(self.counts, str))):
            raise ValidationError(
                f"PopulationSpec.estimate={self.estimate!r} applies to log-linear counts only, "
                "not to survey weights or counts given.")

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready description (data given as counts or weights are described, not copied)."""
        def described(v: Any) -> Any:
            if v is None or isinstance(v, str):
                return v
            return f"{type(v).__name__} of {len(v)}"

        return {f.name: described(getattr(self, f.name))
                if f.name in ("counts", "weights", "targets") else getattr(self, f.name)
                for f in dataclasses.fields(self)}


def _weights(weights: Any) -> str | np.ndarray:
    """A column name, or the weights as a read-only float64 vector (positive, finite)."""
    import numpy as np

    if isinstance(weights, str):
        if not weights:
            raise ValidationError("PopulationSpec.weights: the column name is empty.")
        return weights
    try:
        w = np.array(weights, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise ValidationError(
            "PopulationSpec.weights must be a column name or one number per original record. "
            f"Got {type(weights).__name__}."
        ) from err
    if w.ndim != 1 or w.size == 0:
        raise ValidationError(
            f"PopulationSpec.weights must be one weight per original record (a vector); got "
            f"shape {w.shape}."
        )
    bad = np.flatnonzero(~np.isfinite(w) | (w <= 0))
    if bad.size:
        raise ValidationError(
            f"PopulationSpec.weights must be positive and finite; weight {int(bad[0])} is "
            f"{float(w[bad[0]])!r} ({bad.size} such weight(s))."
        )
    w.setflags(write=False)
    return w


def spec_options(match: Any, population: Any) -> dict[str, Any]:
    """``match=`` and ``population=`` as their specs (validated once, here): the options
    :func:`~bayes_risk.identification.prepare.prepare` takes."""
    population = as_spec(population, PopulationSpec, "population")
    if population.selection is not None:  # identification_risk conditions on it before
        raise ValidationError(
            "PopulationSpec.selection is read by identification_risk; for this entry point give "
            "the inputs of bayes_risk.identification.selection.conditioned(...) instead.",
            code="OPTION_CONFLICT")
    return {"match": as_spec(match, MatchSpec, "match"), "population": population}


def sweep_radii(text: str) -> list[float]:
    """``--radius-sweep``'s radii: comma-separated numbers (``""`` is no radius, refused by the
    sweep, never ignored)."""
    return parse_numbers(text, "--radius-sweep")


def search_radii(text: str) -> list[float]:
    """``--radius-search``'s radii: comma-separated numbers, or ``default``
    (:data:`SEARCH_RADII`)."""
    return list(SEARCH_RADII) if text == "default" else parse_numbers(text, "--radius-search")
