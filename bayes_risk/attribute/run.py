"""An attribute-risk run assembled once, for the command line and the audit: the run, the
knowledge sweep and the known-records curve beside it, one seed and one set of refits shared by
all of them, or the largest-value intruder (``attribute_run``), and what they give
(``AttributeRun.to_dict``, ``AttributeRun.files``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any

from bayes_risk._constraints import Interval, Requires, check_params, checked
from bayes_risk._lattice import check_max_size
from bayes_risk._specs import argument_checks, cli_option
from bayes_risk.attribute.api import attribute_risk
from bayes_risk.attribute.largest_value import largest_value_risk
from bayes_risk.attribute.specs import FRACTIONS, LARGEST_VALUE_SCENARIOS, SCENARIOS
from bayes_risk.results.attribute import EVIDENCE_FACTOR

__all__ = ["AttributeRun", "attribute_run", "ATTRIBUTE_FIGURES", "RELATIONS"]

# (plot kind of AttributeRiskResult, file name written by `bayes-risk attribute`, caption)
ATTRIBUTE_FIGURES = (
    ("p_true", "p_true_hist.png", "Probability of the truth, with its mean before the release "
     "and after one that says nothing of the records"),
    ("rank", "rank_hist.png", "Rank of the truth, with its mean if the release said nothing of "
     "the records"),
    ("khat", "khat.png", "Pareto k-hat per record, the records its rule flags in red"),
)


_LARGEST = LARGEST_VALUE_SCENARIOS
#: the run's arguments against each other (``scenario``: its kind; ``column``, ``upper``,
#: ``delta``, ``total_known``: those of ``largest_value``), checked before any work
RELATIONS = (
    Requires("known_sweep", "scenario", equal=("worst_case",), why="it sets the known columns "
             "of every subset itself; the empty subset is the worst case"),
    Requires("known_curve", "scenario", equal=("worst_case",), why="it sets the known records "
             "at each share itself; share 1 is the worst case"),
    Requires("max_size", "known_sweep", code="OPTION_REQUIRED"),
    Requires("records", "scenario", equal=(*SCENARIOS, "two_records"),
             why="the target of a largest-value scenario is the largest value"),
    Requires("scenario", "column", when=_LARGEST, code="OPTION_REQUIRED",
             why="the magnitude column"),
    *(Requires(name, "scenario", equal=only) for name, only in (
        ("column", _LARGEST), ("upper", _LARGEST[:2]), ("delta", _LARGEST),
        ("total_known", _LARGEST[1:2]))),
)


@dataclass
class AttributeRun:
    """What ``attribute_run`` computed.

    Attributes
    ----------
    result : AttributeRiskResult
        The run of the scenario.
    known_sweep : KnowledgeSweepResult or None
        The knowledge sweep over subsets of the known columns.
    known_curve : KnownCurveResult or None
        The run at each share of known records.
    estimator : EstimatorSpec or str
        The estimator every part ran with: holding the refits they shared, when they shared
        them.
    scenario : str
        The scenario's kind, or the largest-value scenario.
    largest_value : tuple or None
        The largest-value intruder's ``(table, summary)`` (``largest_value_risk``), instead of
        ``result``.
    """

    result: Any
    known_sweep: Any = None
    known_curve: Any = None
    estimator: Any = None
    scenario: str = "worst_case"
    largest_value: tuple[Any, dict[str, Any]] | None = None

    def text_lines(self) -> list[str]:
        """The run in lines of words (``bayes-risk attribute`` prints them): the result's
        headline, the knowledge sweep's line and the curve's headline (those computed)."""
        if self.largest_value is not None:
            s = self.largest_value[1]
            return [f"largest value of {s['column']!r} ({self.scenario.replace('_', '-')} "
                    f"intruder): P(within {s['delta']:.0%}) = {s['P_interval']:.3f}, p_true = "
                    f"{s['p_true']:.3f}, mode = {s['mode']:g} (truth {s['largest_value']:g})"]
        return [*self.result.headline().splitlines(),
                *(p.text_line() for p in (self.known_sweep,) if p is not None),
                *(p.headline() for p in (self.known_curve,) if p is not None)]

    def to_dict(self, *, evidence_factor: float = EVIDENCE_FACTOR) -> dict[str, Any]:
        """``summary.json`` of the run: the result's ``to_dict()`` (the share with evidence at
        ``evidence_factor``), the scenario, the knowledge sweep's and the curve's (those
        computed); of the largest-value intruder its summary, the scenario as the command line
        spells it."""
        if self.largest_value is not None:
            return {"scenario": self.scenario.replace("_", "-"), **self.largest_value[1],
                    "reference": "Wei & Reiter (2016), as summarised in Hu (2019, section "
                                 "3.3.3)"}
        out = self.result.to_dict(evidence_factor=evidence_factor)
        out["scenario"] = self.scenario
        for name, part in (("known_sweep", self.known_sweep), ("known_curve", self.known_curve)):
            if part is not None:
                out[name] = part.to_dict()
        return out

    def files(self) -> tuple[dict[str, Any], dict[str, tuple[Any, str]]]:
        """The run's tables (file name -> DataFrame, or a writer of the path) and figures (file
        name -> (result, plot kind)): ``records.csv`` with its index (column ``record`` or
        ``pair``), the :data:`ATTRIBUTE_FIGURES`, the knowledge sweep's files and
        ``known_curve.csv`` / ``.png``; of the largest-value intruder ``largest_value.csv``."""
        if self.largest_value is not None:
            return {"largest_value.csv": self.largest_value[0]}, {}
        tables: dict[str, Any] = {"records.csv": self.result.to_dataframe().to_csv}
        figures = {name: (self.result, kind) for kind, name, _ in ATTRIBUTE_FIGURES}
        if self.known_sweep is not None:
            more_tables, more_figures = self.known_sweep.files()
            tables, figures = {**tables, **more_tables}, {**figures, **more_figures}
        if self.known_curve is not None:
            tables["known_curve.csv"] = self.known_curve.table
            figures["known_curve.png"] = (self.known_curve, "curve")
        return tables, figures


def attribute_run(
    original: Any,
    synthetic: Any,
    *,
    model: Any,
    scenario: Annotated[Any, cli_option(
        "--scenario", "what the intruder knows: worst-case (default: every other record), "
        "partially-known (also --known of the target's own values; implied by --known), empty "
        "(Wang & Reiter's low-risk intruder: nothing about the other records; the record's "
        "synthetic values stand in for the posterior), two-records (Wei & Reiter: every record "
        "except the two of each --pairs pair, guessed jointly; class P models), known-records "
        "(only the records of --known-records, or a random --known-fraction of them; class P "
        "models; implied by either option); for the largest value of --column (Wei & Reiter; "
        "Poisson-mixture models): largest-value (every other record known), second-largest "
        "(only the second-largest record, plus the column total with --total-known), "
        "two-largest-sum (every record but the two largest, and their sum)",
        choices=("worst_case", "partially_known", "empty", "two_records", "known_records",
                 *LARGEST_VALUE_SCENARIOS))
    ] = "worst_case",
    known_sweep: Sequence[str] | None = None,
    max_size: Annotated[int | None, cli_option(
        "--max-size", "largest subset size evaluated exhaustively by --known-sweep (default: "
        "every size)", type=int, metavar="K")] = None,
    known_curve: Annotated[Sequence[float] | None, checked([FRACTIONS, None])] = None,
    curve_seed: Annotated[int, checked(Interval(int, 0))] = 0,
    share_refits: bool = False,
    largest_value: Mapping[str, Any] | None = None,
    executor: Any = None,
    **options: Any,
) -> AttributeRun:
    """Attribute risk with the knowledge sweep and the known-records curve the caller asks for,
    each with the run's options; with either, one seed and one set of refits serve every run
    (the sweep's empty subset and the curve's share 1 are then the run's own figures). A
    largest-value ``scenario`` is Wei & Reiter's intruder instead (``largest_value_risk``).

    Parameters
    ----------
    original, synthetic, model
        As in ``attribute_risk``.
    scenario
        As in ``attribute_risk``, or one of ``"largest_value"``, ``"second_largest"``,
        ``"two_largest_sum"``: ``largest_value_risk`` with ``largest_value``, its other
        arguments (``column``, ``upper``, ``delta``, ``total_known``), and
        ``allow_other_model`` of ``options`` (the other options do not apply).
    known_sweep : sequence of str, optional
        The known columns of ``attribute_known_sweep`` (its ``known``); ``max_size`` its
        largest subset evaluated exhaustively.
    known_curve : sequence of float, optional
        The shares of known records of ``known_fraction_curve`` (its ``fractions``);
        ``curve_seed`` its ``seed``.
    share_refits : bool
        Make the refits once even without a sweep or a curve (the audit: its membership step
        reuses them, ``AttributeRun.estimator``).
    largest_value : mapping, optional
        The arguments of ``largest_value_risk`` of a largest-value ``scenario``.
    executor : optional
        The executor of the run and of the sweep's subsets.
    **options
        The run's other arguments of ``attribute_risk`` (``records``, ``candidates``,
        ``prior``, ``estimator``, ``random_seed``, ``allow_other_model``, ``progressbar``),
        shared by the refits, the sweep and the curve.

    Returns
    -------
    AttributeRun

    Raises
    ------
    ValidationError
        Arguments that do not go together (:data:`RELATIONS`), before any work: a sweep or a
        curve beside another scenario than the worst case, ``max_size`` without
        ``known_sweep`` (or more than its columns), ``records`` beside a largest-value
        scenario, the arguments of ``largest_value`` with another scenario; a share of
        ``known_curve`` outside [0, 1], a negative ``curve_seed``.
    """
    check_params({"known_curve": known_curve, "curve_seed": curve_seed, "known_sweep": known_sweep,
                  "max_size": max_size, "records": options.get("records"),
                  "scenario": getattr(scenario, "kind", scenario), **(largest_value or {})},
                 argument_checks(attribute_run), relations=RELATIONS)
    if known_sweep:  # before the run the sweep follows
        check_max_size(max_size, known_sweep, "known_sweep")
    if isinstance(scenario, str) and scenario in LARGEST_VALUE_SCENARIOS:
        return AttributeRun(None, scenario=scenario, largest_value=largest_value_risk(
            model, original, synthetic, scenario=scenario,
            allow_other_model=options.get("allow_other_model", False), **(largest_value or {})))
    if known_sweep or known_curve or share_refits:
        from bayes_risk.attribute.knowledge import one_seed, with_shared_refits

        # one seed and one set of refits for the run and every subset or share of the sweeps
        options["random_seed"] = one_seed(options.get("random_seed"))
        options["estimator"] = with_shared_refits(original, synthetic, model=model,
                                                  **{"records": None, **options})
    run = AttributeRun(None, estimator=options.get("estimator"),
                       scenario=getattr(scenario, "kind", scenario))
    run.result = attribute_risk(original, synthetic, model=model, scenario=scenario,
                                executor=executor, **options)
    if known_sweep:
        from bayes_risk._lattice import LatticeSpec
        from bayes_risk.attribute.knowledge import attribute_known_sweep

        run.known_sweep = attribute_known_sweep(original, synthetic, model=model,
                                                known=known_sweep,
                                                lattice=LatticeSpec(max_size=max_size),
                                                executor=executor, **options)
    if known_curve:
        from bayes_risk.attribute.known_curve import known_fraction_curve

        run.known_curve = known_fraction_curve(original, synthetic, model=model,
                                               fractions=known_curve, seed=curve_seed,
                                               **options)
    return run
