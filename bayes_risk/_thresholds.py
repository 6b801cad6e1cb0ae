"""A verdict line's threshold (:class:`Threshold`) and the package's measures' own, each declared
once with its default, the range and unit of its quantity and the source of its default.

A measure's record lists its thresholds (``Measure.thresholds``); ``Thresholds`` holds the
values of every registered measure's. Imports only the standard library: ``bayes-risk audit
--help`` lists the defaults without numpy.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from bayes_risk._constraints import Options, Text, check_value
from bayes_risk.exceptions import ValidationError, arg_name, on_command_line

__all__ = ["Threshold", "CONVENTION", "EVIDENCE_FACTOR", "builtin_thresholds"]

#: the source of a default that is the package's convention (a third party's by default)
CONVENTION = ("a convention of bayes-risk, not a finding: the papers behind the measure "
              "leave the acceptable risk to the agency (Hu 2019; Hornby & Hu 2021; Raab, "
              "Nowok & Dibben); a board sets its own (user guide, Auditing a release: "
              "Thresholds)")

#: the Bayes factor of the true values from which a record counts as one the release tells the
#: intruder about (``prop_evidence``): 3, where Jeffreys' and Kass & Raftery's scales of evidence
#: start counting a factor as more than a bare mention (:doc:`/methods/attribute`)
EVIDENCE_FACTOR = 3.0

#: a line exceeds above a "max" threshold and below a "min" one; a "cut" is not a line's
#: threshold but a cut-off strictly inside the range
_SIDES = ("max", "min", "cut")
#: a threshold's name: an attribute of the thresholds (a Python identifier)
_NAME = Text("a Python identifier (it is thresholds' attribute)", r"[^\W\d]\w*")


@dataclass(frozen=True)
class Threshold:
    """One threshold of a measure's verdict lines: a release-board setting, a convention and
    not a finding, that ``thresholds={name: value}`` and ``--threshold NAME=VALUE`` set.

    Parameters
    ----------
    name : str
        Its name (``thresholds={name: ...}``; a verdict line's ``threshold_name``).
    default : float
        Its value when the board sets none.
    side : {"max", "min", "cut"}
        A line exceeds above a ``"max"`` threshold, below a ``"min"`` one; a ``"cut"`` is a
        cut-off strictly inside the range, not a line's bound.
    low, high : float
        The range of the quantity (``math.inf`` for no upper end). A threshold at or past the
        end a line can reach would keep the line within it whatever the release, so it is
        refused.
    unit : str
        The quantity's unit, as the messages and the help name it ("a fraction from 0 to 1").
    source : str
        Where the default comes from (printed under the verdict table).
    doc : str
        What it bounds, for the documentation of ``Thresholds``.
    measure : str
        The measure whose lines it bounds (for the package's own, which list them here).

    Raises
    ------
    ValidationError
        ``MEASURE_BROKEN`` for a side that is not one of the three, a range that is not
        ``low < high``, or a default outside the range.
    """

    name: str
    default: float
    side: str
    low: float
    high: float
    unit: str
    source: str = CONVENTION
    doc: str = ""
    measure: str = ""

    def __post_init__(self) -> None:
        where = f"Threshold {self.name!r}"
        check_value(self.name, _NAME, f"{where}: name", code="MEASURE_BROKEN")
        check_value(self.side, Options(tuple(_SIDES)), f"{where}: side", code="MEASURE_BROKEN")
        if not (isinstance(self.low, (int, float)) and isinstance(self.high, (int, float))
                and self.low < self.high):
            raise ValidationError(f"{where}: expected low < high; got {self.low!r}, "
                                  f"{self.high!r}.", code="MEASURE_BROKEN")
        try:
            self.check(self.default)
        except ValidationError as err:
            raise ValidationError(f"{where}: its default is not a value it accepts: {err}",
                                  code="MEASURE_BROKEN") from err

    def check(self, value: Any) -> float:
        """``value`` as this threshold's float.

        Raises
        ------
        ValidationError
            ``INVALID_ARGUMENT`` naming the range and unit, for a value that is not a number
            inside the range.
        """
        name, low, high = self.name, self.low, self.high
        # "--threshold repU=50" on the command line, "thresholds: repU=50" in Python
        shown = f"{arg_name('thresholds')}{' ' if on_command_line() else ': '}{name}={value}"
        try:
            if isinstance(value, bool):
                raise TypeError
            val = float(value)
        except (TypeError, ValueError) as err:
            raise ValidationError(f"{shown}: {value!r} is not a number; {name} is {self.unit}.",
                                  code="INVALID_ARGUMENT") from err
        inside = {"max": low <= val < high, "min": low < val <= high,
                  "cut": low < val < high}[self.side]
        if inside:
            return val
        hi = "∞" if math.isinf(high) else f"{high:g}"
        expected = {"max": f"{low:g} <= {name} < {hi}", "min": f"{low:g} < {name} <= {hi}",
                    "cut": f"{low:g} < {name} < {hi}"}[self.side]
        why = ""
        if self.side == "max" and val >= high:
            why = (f"; no value of the line can exceed {val:g}, so the verdict would pass the "
                   "line whatever the release")
        elif self.side == "min" and val <= low:
            why = (f"; no value of the line can fall below {val:g}, so the verdict would pass "
                   "the line whatever the release")
        raise ValidationError(f"{shown} is outside its range: {name} is {self.unit}{why}. "
                              f"Expected {expected}.", code="INVALID_ARGUMENT")


_ANONYMETER = ("anonymeter (Giomi et al. 2023) defines the risk and leaves its acceptable level "
               "to the data controller, as the CNIL's opinion on it does: 0.05 is a convention "
               "of bayes-risk, not a finding; a board sets its own (user guide, Auditing a "
               "release: Thresholds)")
_FRACTION = "a fraction from 0 to 1 (0.01 is 1 %)"
_PERCENT = "in per cent, from 0 to 100 (1 is 1 %)"
_INF = math.inf


def _anonymeter(name: str, attack: str, over: str = "") -> Threshold:
    return Threshold(name, 0.05, "max", 0.0, 1.0, "anonymeter's risk, " + _FRACTION,
                     _ANONYMETER, f"Largest acceptable {attack} risk of anonymeter{over}, a "
                     "fraction. Default 0.05.", "attacks")


def _share(name: str, default: float, what: str, measure: str) -> Threshold:
    """An "at most" threshold of a share that is a fraction, its default a convention."""
    return Threshold(name, default, "max", 0.0, 1.0, _FRACTION, CONVENTION,
                     f"Largest acceptable {what}, a fraction. Default {default:g}.", measure)


#: the package's measures' thresholds, in the order of the measures
_BUILTIN: tuple[Threshold, ...] = (
    Threshold("s_pmse", 10.0, "max", 0.0, _INF,
              "a ratio of the pMSE to its null expectation, from 0 up",
              "synthpop's guidance: S_pMSE below 10 acceptable, below 3 good (methods page, "
              "Utility: null distribution)",
              "Largest acceptable mean S_pMSE, a ratio from 0 up. Default 10 (synthpop's "
              "guidance).", "utility"),
    Threshold("overlap", 0.5, "min", 0.0, 1.0, "a share of the intervals, from 0 to 1",
              "Karr et al. (2006) define the interval overlap (1: the same interval, 0: "
              "disjoint); 0.5, half of each interval shared on average, is a convention of "
              "bayes-risk; a board sets its own (user guide, Auditing a release: Thresholds)",
              "Smallest acceptable mean interval overlap (Karr et al. 2006), above 0 and at "
              "most 1. Default 0.5.", "utility"),
    _share("expected_match_rate", 0.01, "expected match rate, the worst case over the radius "
           "search", "identification"),
    _share("true_match_rate", 0.01, "true match rate, the worst case over the radius search",
           "identification"),
    _share("prop_top", 0.1, "share of records whose true values are the intruder's best guess",
           "attribute"),
    Threshold("prop_evidence", 0.1, "max", 0.0, 1.0, _FRACTION, CONVENTION,
              "Largest acceptable share of records whose true values the release gives "
              "evidence for, a fraction: a Bayes factor of at least ``evidence_factor`` (the "
              "release multiplies the intruder's odds on them at least that many times). "
              "Default 0.1.", "attribute"),
    Threshold("evidence_factor", EVIDENCE_FACTOR, "cut", 1.0, _INF,
              "a Bayes factor, above 1 (1 is no evidence)",
              "a Bayes factor of 3 is where Kass & Raftery's (1995) scale of evidence stops "
              "calling it 'not worth more than a bare mention' (Jeffreys' scale: 3.2): the "
              "smallest factor read as evidence, so the most records counted (methods page, "
              "Attribute disclosure risk: Evidence about a record)",
              "Bayes factor from which a record counts in ``prop_evidence``, above 1 (1 is no "
              "evidence). Default 3 (Kass & Raftery 1995).", "attribute"),
    Threshold("membership_advantage", 0.05, "max", 0.0, 0.5,
              "AUC − 0.5, from 0 (no advantage) to 0.5", CONVENTION,
              "Largest acceptable AUC − 0.5 of the Bayesian membership attack, from 0 to 0.5. "
              "Default 0.05.", "membership"),
    _share("membership_share", 0.01, "share of members above ``membership_probability``",
           "membership"),
    Threshold("membership_probability", 0.9, "cut", 0.0, 1.0,
              "a probability, strictly between 0 and 1",
              "a posterior membership probability of 0.9 is a likelihood ratio of 9 under the "
              "balanced prior: " + CONVENTION,
              "Posterior membership probability, in (0, 1), above which a member counts as "
              "exposed. Default 0.9.", "membership"),
    _anonymeter("singling_out_risk", "singling-out"),
    _anonymeter("linkability_risk", "linkability"),
    _anonymeter("inference_risk", "inference", ", the largest over the synthesized columns"),
    Threshold("repU", 1.0, "max", 0.0, 100.0, _PERCENT, CONVENTION,
              "Largest acceptable replicated uniques, percent of records. Default 1.",
              "disclosure"),
    Threshold("DiSCO", 1.0, "max", 0.0, 100.0, _PERCENT, CONVENTION,
              "Largest acceptable DiSCO, percent of records. Default 1.", "disclosure"),
    Threshold("relative_difference", 0.05, "min", 0.0, _INF,
              "a relative difference, from 0 up (0.05 is 5 %)",
              "Kim et al. (2018) measure how close the intruder's estimate of a largest value "
              "comes to it; 0.05 is the largest-value scenarios' --delta, a convention of "
              "bayes-risk, not a finding; a board sets its own (user guide, Auditing a "
              "release: Thresholds)",
              "Smallest acceptable relative difference between a largest true value and the "
              "intruder's estimate of it (Kim et al. 2018), the smallest over the synthesized "
              "numeric columns, a fraction from 0 up. Default 0.05.", "relative_difference"),
    _share("closest_match", 0.01, "share of records whose closest released record is their "
           "own (Domingo-Ferrer et al. 2001; Kim et al. 2015)", "closest_match"),
)


def builtin_thresholds(measure: str | None = None) -> tuple[Threshold, ...]:
    """The package's measures' thresholds (``measure``: that measure's), in the measures'
    order: what a built-in measure's record lists, and what ``bayes-risk audit --help`` shows."""
    return tuple(t for t in _BUILTIN if measure is None or t.measure == measure)
