"""The grouped arguments of attribute risk: :class:`ScenarioSpec` and :class:`EstimatorSpec`."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from bayes_risk._constraints import (
    COLUMN_NAMES,
    Flag,
    InstanceOf,
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
from bayes_risk._specs import RECORDS_HELP, cli_option
from bayes_risk.exceptions import NotSupportedError, ValidationError, arg_name

if TYPE_CHECKING:  # module level holds the standard library only (the parsers read the fields)
    import numpy as np

__all__ = ["ScenarioSpec", "EstimatorSpec", "SCENARIOS", "ESTIMATORS", "KHAT_POSTERIORS",
           "KHAT_TOLERANCE", "REFIT_CACHE", "REFIT_CACHE_HELP", "REFIT_COST_HELP",
           "PLUGIN_REPLICATES_HELP", "scenario_arg", "parse_pairs",
           "DEFAULT_DELTA", "LARGEST_VALUE_SCENARIOS"]

#: ``KHAT_HIGH`` under ``khat_rule="material"``: by how much the truth's probability may at
#: most be understated (probability scale)
KHAT_TOLERANCE = 0.01
#: the posteriors under which Pareto k-hat is computed (``EstimatorSpec.khat``)
KHAT_POSTERIORS = ("all", "base", "none")
#: the refit cache and the cost of the stabilised estimator, as the command line's help states them
#: (attribute, membership and audit)
REFIT_CACHE_HELP = (
    "a folder where the refits of the model are stored and read again by later runs: "
    "'bayes-risk attribute', 'membership' and 'audit' on the same model, release and "
    "--random-seed (needed) share them; an entry is used only when everything the refit "
    "depends on is the same, and the folder can be deleted at any time (default: none). It is "
    "as confidential as the model folder")
#: the constraint of a refit cache folder (a path, never empty: "" would be the current folder)
REFIT_CACHE = [Text("a folder path"), InstanceOf(os.PathLike, "an os.PathLike"), None]
REFIT_COST_HELP = (
    "Cost: the stabilised estimator refits the model once per synthetic dataset (m refits, "
    "each on the original plus one synthetic dataset, so about 2 x the records): expect about "
    "m x 2 x the time of the model's own sampling. The estimate, a range from the seconds per "
    "sweep the fit measured once its chains ran (one-off costs such as compiling left out) "
    "scaled by the refits' records and sweeps, up to the fit's own set-up per refit, is "
    "printed before the refits start, and the first refit's measured time after it (docs: "
    "user guide, Attribute risk, Cost of the refits); the importance-sampling estimator (is) "
    "makes no refit"
)
#: --plugin-replicates as the command line's help states it (attribute and audit)
PLUGIN_REPLICATES_HELP = (
    "Bayesian-bootstrap replicates per tree node of a smoothed CART release's plug-in "
    "likelihood (default: the plug-in's, CARTPlugin n_bootstrap); more replicates lower the "
    "Monte Carlo error that flags records MC_ERROR_HIGH, at about proportional time; refused "
    "(OPTION_UNUSED) with a likelihood that draws none (no smoothed column, a random forest, a "
    "Bayesian model), and passed by a design only to the candidates that draw them")

#: ``delta`` of the largest-value scenarios: :func:`bayes_risk.attribute.summaries.largest_value`'s
DEFAULT_DELTA = 0.05

#: What the intruder knows (see :class:`ScenarioSpec`).
SCENARIOS = ("worst_case", "partially_known", "empty", "known_records")
#: the scenarios of :func:`~bayes_risk.attribute.largest_value.largest_value_risk`
#: (``"largest_value"``: the worst-case intruder)
LARGEST_VALUE_SCENARIOS = ("largest_value", "second_largest", "two_largest_sum")
#: the shares of known records of a known-records curve (``known_fraction_curve``)
FRACTIONS = SequenceOf(Interval(float, 0, 1), "numbers in [0, 1]")



def scenario_arg(scenario: str) -> str:
    """A scenario as the caller writes it: ``scenario='known_records'`` in Python,
    ``--scenario known-records`` on the command line."""
    return arg_name("scenario", repr(scenario), cli=scenario.replace("_", "-"))


_KNOWN_HINT = (
    "An intruder who knows only some of the other records is "
    "ScenarioSpec('known_records', known_fraction=F) or known_records=[row positions]."
)


#: the fields of ``ScenarioSpec`` that one scenario takes: field -> (that scenario, why no other)
_SCENARIO_FIELDS = {
    "known": ("partially_known", "the intruder of the other scenarios knows none of the "
              "target's synthesized values"),
    "pairs": ("two_records", "use records= to choose the records of the other scenarios"),
    "known_sums": ("two_records", ""),
    "known_records": ("known_records", ""),
    "known_fraction": ("known_records", ""),
    "seed": ("known_records", ""),
}

#: the estimators of ``EstimatorSpec.kind`` (``"auto"``: chosen from the model's capabilities)
ESTIMATORS = ("auto", "stabilised", "is")


@dataclass(frozen=True)
class ScenarioSpec:
    """What the intruder of attribute risk knows (see :doc:`/methods/attribute`).

    Parameters
    ----------
    kind : {"worst_case", "partially_known", "empty", "two_records", "known_records"}
        Worst case: every other record known. Partially known: also ``known`` of the record's
        own values. Empty: Wang & Reiter's (2012) low-risk intruder. Two records: Wei & Reiter's
        (2016) intruder guessing both records of each pair in ``pairs``. Known records: only the
        records ``known_records`` (or a random ``known_fraction``) known.
    known : sequence of str, optional
        Synthesized columns the intruder knows (``partially_known`` only).
    pairs : sequence of (int, int), optional
        ``two_records`` only (and then required): the pairs of row positions.
    known_sums : bool or sequence of str, optional
        ``two_records`` only: the numeric columns whose pair sums ``y_i + y_j`` the intruder
        knows (``True``: every count and continuous one).
    known_records : sequence of int or bool mask, optional
        ``known_records`` only: the row positions (or a boolean mask) of the records known.
    known_fraction : float, optional
        ``known_records`` only, instead of ``known_records``: the first
        ``round(known_fraction * n)`` rows of a permutation seeded by ``seed``.
    seed : int, optional
        Seed of the permutation of ``known_fraction`` (default 0).

    Raises
    ------
    NotSupportedError
        For another ``kind``.
    ValidationError
        ``known``, ``pairs``, ``known_sums``, ``known_records``, ``known_fraction`` or ``seed``
        with a scenario that does not take them; ``partially_known`` without ``known``,
        ``two_records`` without ``pairs``.

    Examples
    --------
    >>> ScenarioSpec("partially_known", known=["Tenure"]).known
    ('Tenure',)
    >>> ScenarioSpec("known_records", known_fraction=0.25).known_fraction
    0.25
    >>> ScenarioSpec("two_records", pairs=[(0, 1)], known_sums=["income"]).known_sums
    ('income',)
    """

    kind: Literal[
        "worst_case", "partially_known", "empty", "two_records", "known_records"
    ] = "worst_case"
    known: Sequence[str] | None = field(default=None, metadata=cli_option(
        "--known", "synthesized columns the intruder also knows for the target record "
        "(partially-known scenario)", nargs="+", metavar="COL"))
    pairs: Sequence[tuple[int, int]] | np.ndarray | None = field(default=None, metadata=cli_option(
        "--pairs", "the pairs of records of --scenario two-records (implied by --pairs), such as "
        "'0:1,2:5', or a text file with one pair 'I J' (or 'I,J', 'I:J') per line; records.csv "
        "then has one row per pair, numbered from 0 in the order given (column 'pair'), with its "
        "record_1 and record_2", metavar="PAIRS|FILE",
        parse=lambda text: parse_pairs(text)))
    known_sums: bool | Sequence[str] | None = field(default=None, metadata=cli_option(
        "--known-sums", "with --scenario two-records: the intruder also knows the sums y_i + "
        "y_j of the pair's numeric synthesized columns COL (none named: every count and "
        "continuous one) and guesses the splits consistent with them; records.csv then has the "
        "sums (sum_COL) and p_true_unordered", nargs="*", metavar="COL",
        parse=lambda cols: tuple(cols) or True))
    # the command line reads the records of the text (its run passes their positions)
    known_records: Sequence[int] | np.ndarray | None = field(default=None, metadata=cli_option(
        "--known-records", "the records the intruder knows (--scenario known-records; the "
        f"target's own record is never among them): {RECORDS_HELP}", metavar="RANGE|FILE"))
    known_fraction: float | None = field(default=None, metadata=cli_option(
        "--known-fraction", "instead of --known-records: the intruder knows a random share F in "
        "[0, 1] of the records (the first round(F n) of a random order seeded by --known-seed)",
        type=float, metavar="F") | checked([Interval(float, 0, 1), None]))
    seed: int | None = field(default=None, metadata=cli_option(
        "--known-seed", "seed of the random order of --known-fraction and --known-curve "
        "(default 0; the sets of one seed are nested as the share grows)", type=int,
        metavar="S") | checked([Interval(int, 0), None]))

    #: the fields against each other (checked by ``check_fields``): a scenario's own fields
    #: with it alone, and what it needs
    RELATIONS: ClassVar[tuple[Relation, ...]] = (
        OneOf(("known_records", "known_fraction"), code="INVALID_ARGUMENT"),
        *(Requires(name, "kind", equal=(kind,), why=why)
          for name, (kind, why) in _SCENARIO_FIELDS.items()),
        Requires("kind", "known", when=("partially_known",), code="INVALID_ARGUMENT",
                 why="the synthesized columns the intruder knows"),
        Requires("kind", "pairs", when=("two_records",), code="INVALID_ARGUMENT",
                 why="the pairs of records the intruder does not know"),
        Requires("kind", ("known_records", "known_fraction"), when=("known_records",),
                 code="INVALID_ARGUMENT", why="row positions or a boolean mask, or a share of "
                 "the records in [0, 1]"),
    )

    def __post_init__(self) -> None:
        if self.known is not None:  # none known (an empty list) is no field given
            known = (self.known,) if isinstance(self.known, str) else tuple(self.known)
            object.__setattr__(self, "known", known or None)
        if self.known_sums is False:
            object.__setattr__(self, "known_sums", None)
        self._check_known_sums()
        check_fields(self)  # first: a field of one scenario beside another kind names both
        if self.kind not in (*SCENARIOS, "two_records"):
            raise NotSupportedError(
                f"scenario {self.kind!r} is not supported; use one of "
                f"{[*SCENARIOS, 'two_records']} ('two_records' with "
                "ScenarioSpec('two_records', pairs=[(i, j), ...])). "
                + _KNOWN_HINT,
                code="INVALID_ARGUMENT"
            )

    def _check_known_sums(self) -> None:
        """``known_sums``: ``True`` or a non-empty tuple of names."""
        ks = self.known_sums
        if ks is None or ks is True:
            return
        names = tuple(check_value(
            (ks,) if isinstance(ks, str) else ks, COLUMN_NAMES,
            "ScenarioSpec.known_sums (True: every numeric synthesized column)"))
        from bayes_risk.data.validate import require_distinct

        require_distinct(names, "ScenarioSpec.known_sums")
        object.__setattr__(self, "known_sums", names)


@dataclass(frozen=True)
class EstimatorSpec:
    """How the candidates' likelihoods are estimated and checked (see :doc:`/methods/attribute`).

    Parameters
    ----------
    kind : {"auto", "stabilised", "is"}
        ``auto``: the first of the model's ``estimators`` that applies; ``is``: the published
        estimator (Hu 2019).
    augmented : sequence of models, optional
        Stabilised estimator: one model per dataset with draws of ``p(Θ | y, Z_(l))`` (default:
        ``model.fit_augmented``).
    draw_indices : sequence of int, optional
        Indices (0-based) of the posterior draws to use (default all ``H``).
    refit_draws : int, optional
        Kept draws per chain of each refit (default: the model's ``draws``).
    psis : bool
        Pareto-smooth the stabilised estimator's means.
    khat : {"all", "base", "none"}
        Posteriors under which Pareto k̂ is computed: all ``m + 1``, ``p(Θ | y)`` only, or none.
    khat_rule : {"material", "any"}
        Flag ``KHAT_HIGH`` on ``"any"`` high k̂, or only when the k̂ bounds of ``p_true`` are
        ``"material"`` (default; the published estimator always uses ``"any"``).
    khat_tolerance : float
        Tolerance of ``khat_rule="material"`` on the probability scale (default 0.01).
    is_diagnostics : bool
        With the stabilised estimator, also the ratio diagnostics of the published one.
    compat : {"AttributeRiskCalculation"}, optional
        IS estimator only: copy the R package's prior handling (not Bayes' rule).
    chunk_size : int, optional
        Records processed together (default: 256, or fewer under the memory budget); the
        results do not depend on it.
    bootstrap : int
        Draw-bootstrap replicates for the stability of the truth's rank (0 disables).
    refit_cache : str or path, optional
        A folder where the refits are stored and reused (with a ``random_seed`` only;
        :doc:`/user_guide/attribute`, Refits reused across commands).
    plugin_replicates : int, optional
        Bayesian-bootstrap replicates per node of a smoothed CART plug-in likelihood
        (:class:`~bayes_risk.models.CARTPlugin`'s ``n_bootstrap``, default its own): where the
        plug-in is built from the release's synthesizer (the command line, the audit,
        :func:`~bayes_risk.models.release_likelihood`), it is built with these; a plug-in given
        as ``model`` must have been built with them. Where none would be drawn (no smoothed
        column, a random forest, a Bayesian model, or the audit's attribute step does not
        run), it is refused before any work (``OPTION_UNUSED``).

    Examples
    --------
    >>> EstimatorSpec("is", khat_rule="any").khat
    'all'
    """

    kind: Literal["auto", "stabilised", "is"] = field(default="auto", metadata=cli_option(
        "--estimator", "auto: stabilised for class P models, importance sampling (is) for class "
        "O", choices=ESTIMATORS) | checked(Options(ESTIMATORS, listed=True)))
    augmented: Sequence[Any] | None = None
    draw_indices: Sequence[int] | np.ndarray | None = None
    refit_draws: int | None = field(default=None, metadata=cli_option(
        "--refit-draws", "kept draws per chain of each refit of the stabilised estimator "
        "(default: the model's draws). " + REFIT_COST_HELP, metavar="N", type=int)
        | checked([Interval(int, 1), None]))
    psis: bool = field(default=False, metadata=cli_option(
        "--psis", "Pareto-smooth the stabilised estimator", action="store_true") | checked(Flag()))
    khat: Literal["all", "base", "none"] = field(default="all", metadata=cli_option(
        "--khat", "posteriors under which Pareto k-hat is computed (all m+1, only p(theta|y), "
        "or none; default all)", choices=KHAT_POSTERIORS)
        | checked(Options(KHAT_POSTERIORS, listed=True)))
    khat_rule: Literal["material", "any"] = field(default="material", metadata=checked(
        Options(("material", "any"), listed=True)))
    khat_tolerance: float = field(default=KHAT_TOLERANCE, metadata=checked(Interval(float, 0)))
    is_diagnostics: bool = field(default=True, metadata=checked(Flag()))
    compat: Literal["AttributeRiskCalculation"] | None = field(default=None, metadata=checked(
        Options((None, "AttributeRiskCalculation"), listed=True)))
    chunk_size: int | None = field(default=None, metadata=cli_option(
        "--chunk-size", "records processed together (memory bound; default 256, or fewer when "
        "--memory is smaller; the results do not depend on it)", metavar="N", type=int)
        | checked([Interval(int, 1), None]))
    bootstrap: int = field(default=200, metadata=cli_option(
        "--bootstrap", "draw-bootstrap replicates for rank stability (default 200; 0 disables)",
        metavar="B", type=int) | checked(Interval(int, 0)))
    refit_cache: str | os.PathLike[str] | None = field(default=None, metadata=cli_option(
        "--refit-cache", REFIT_CACHE_HELP, metavar="DIR") | checked(REFIT_CACHE))
    plugin_replicates: int | None = field(default=None, metadata=cli_option(
        "--plugin-replicates", PLUGIN_REPLICATES_HELP, metavar="R", type=int)
        | checked([Interval(int, 1), None]))

    __post_init__ = check_fields  # the fields' table is the whole check

    def replace(self, **changes: Any) -> EstimatorSpec:
        """A copy with ``changes`` applied (validated again)."""
        fields = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        return EstimatorSpec(**(fields | changes))


def parse_pairs(text: str) -> list[tuple[int, int]]:
    """``--pairs``: ``"0:1,2:5"`` or a file with one pair per line (``I J``, ``I,J`` or ``I:J``);
    ``ValidationError`` for a malformed pair (a record outside the original: the library's
    check of ``ScenarioSpec.pairs``)."""
    from pathlib import Path

    path = Path(text)
    if path.is_file():
        items = [ln.strip() for ln in path.read_text().splitlines()
                 if ln.strip() and not ln.lstrip().startswith("#")]
        where = f"file {text!r}"
    else:
        items = [t.strip() for t in text.split(",") if t.strip()]
        where = "--pairs"
    out = []
    for it in items:
        parts = [p for p in it.replace(":", " ").replace(",", " ").replace(";", " ").split()]
        if len(parts) != 2 or not all(p.isdigit() for p in parts):
            raise ValidationError(f"{where}: {it!r} is not a pair of record numbers; expected "
                                  "'I:J' such as '0:1,2:5' (a file: one pair 'I J' per line); "
                                  "records are numbered from 0.", code="BAD_OPTION_VALUE")
        i, j = int(parts[0]), int(parts[1])
        if i == j:
            raise ValidationError(f"{where}: pair {it!r} names record {i} twice; a pair is two "
                                  "different records (for one record: --scenario worst-case).",
                                  code="BAD_OPTION_VALUE")
        out.append((i, j))
    if not out:
        raise ValidationError(f"{where} holds no pair.", code="BAD_OPTION_VALUE")
    return out
