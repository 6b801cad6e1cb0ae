"""The release board's thresholds of the verdict lines, each with its source and the range of
its quantity: :class:`Thresholds` (:doc:`/user_guide/audit`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np

from bayes_risk.exceptions import ValidationError, arg_name, on_command_line
from bayes_risk.results.attribute import EVIDENCE_FACTOR

__all__ = ["THRESHOLD_SOURCES", "Thresholds"]


_CONVENTION = ("a convention of bayes-risk, not a finding: the papers behind the measure "
               "leave the acceptable risk to the agency (Hu 2019; Hornby & Hu 2021; Raab, "
               "Nowok & Dibben); a board sets its own (user guide, Auditing a release: "
               "Thresholds)")

_ANONYMETER = ("anonymeter (Giomi et al. 2023) defines the risk and leaves its acceptable level "
               "to the data controller, as the CNIL's opinion on it does: 0.05 is a convention "
               "of bayes-risk, not a finding; a board sets its own (user guide, Auditing a "
               "release: Thresholds)")

_SPMSE = ("synthpop's guidance: S_pMSE below 10 acceptable, below 3 good (methods page, "
          "Utility: null distribution)")

_OVERLAP = ("Karr et al. (2006) define the interval overlap (1: the same interval, 0: disjoint); "
            "0.5, half of each interval shared on average, is a convention of bayes-risk; a "
            "board sets its own (user guide, Auditing a release: Thresholds)")

_BAYES_FACTOR = ("a Bayes factor of 3 is where Kass & Raftery's (1995) scale of evidence stops "
                 "calling it 'not worth more than a bare mention' (Jeffreys' scale: 3.2): the "
                 "smallest factor read as evidence, so the most records counted (methods page, "
                 "Attribute disclosure risk: Evidence about a record)")

_MEMBERSHIP_PROBABILITY = ("a posterior membership probability of 0.9 is a likelihood ratio of "
                           "9 under the balanced prior: " + _CONVENTION)

_LARGEST_VALUE = ("Kim et al. (2018) measure how close the intruder's estimate of a largest "
                  "value comes to it; 0.05 is the largest-value scenarios' --delta, a "
                  "convention of bayes-risk, not a finding; a board sets its own (user guide, "
                  "Auditing a release: Thresholds)")


#: what each threshold of :class:`Thresholds` measures: its unit and the range of the
#: quantity, which the threshold must fall inside; ``"max"``: a line exceeds above it
_FRACTION = "a fraction from 0 to 1 (0.01 is 1 %)"
_PERCENT = "in per cent, from 0 to 100 (1 is 1 %)"


def _threshold(default: float, side: str, low: float, high: float, unit: str,
               source: str = _CONVENTION) -> Any:
    """A field of :class:`Thresholds` with the unit and range of its quantity (``side``: the
    line exceeds above a ``"max"`` threshold and below a ``"min"`` one; ``"cut"``: not a line's
    threshold but a cut-off strictly inside the range) and where its default comes from
    (``source``, printed under the verdict table)."""
    return field(default=default, metadata={"side": side, "range": (low, high), "unit": unit,
                                            "source": source})


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
    relative_difference : float
        Smallest acceptable relative difference between a largest true value and the
        intruder's estimate of it (Kim et al. 2018), the smallest over the synthesized numeric
        columns, a fraction from 0 up. Default 0.05.
    closest_match : float
        Largest acceptable share of records whose closest released record is their own
        (Domingo-Ferrer et al. 2001; Kim et al. 2015), a fraction. Default 0.01.

    Raises
    ------
    ValidationError
        A threshold that is not a number inside its quantity's range (``INVALID_ARGUMENT``).
    """

    s_pmse: float = _threshold(10.0, "max", 0.0, np.inf,
                               "a ratio of the pMSE to its null expectation, from 0 up", _SPMSE)
    overlap: float = _threshold(0.5, "min", 0.0, 1.0, "a share of the intervals, from 0 to 1",
                                _OVERLAP)
    expected_match_rate: float = _threshold(0.01, "max", 0.0, 1.0, _FRACTION)
    true_match_rate: float = _threshold(0.01, "max", 0.0, 1.0, _FRACTION)
    prop_top: float = _threshold(0.1, "max", 0.0, 1.0, _FRACTION)
    prop_evidence: float = _threshold(0.1, "max", 0.0, 1.0, _FRACTION)
    evidence_factor: float = _threshold(EVIDENCE_FACTOR, "cut", 1.0, np.inf,
                                        "a Bayes factor, above 1 (1 is no evidence)",
                                        _BAYES_FACTOR)
    repU: float = _threshold(1.0, "max", 0.0, 100.0, _PERCENT)  # noqa: N815 - synthpop's name
    DiSCO: float = _threshold(1.0, "max", 0.0, 100.0, _PERCENT)  # noqa: N815 - synthpop's name
    membership_advantage: float = _threshold(0.05, "max", 0.0, 0.5,
                                             "AUC − 0.5, from 0 (no advantage) to 0.5")
    membership_share: float = _threshold(0.01, "max", 0.0, 1.0, _FRACTION)
    membership_probability: float = _threshold(0.9, "cut", 0.0, 1.0,
                                               "a probability, strictly between 0 and 1",
                                               _MEMBERSHIP_PROBABILITY)
    singling_out_risk: float = _threshold(0.05, "max", 0.0, 1.0,
                                          "anonymeter's risk, " + _FRACTION, _ANONYMETER)
    linkability_risk: float = _threshold(0.05, "max", 0.0, 1.0,
                                         "anonymeter's risk, " + _FRACTION, _ANONYMETER)
    inference_risk: float = _threshold(0.05, "max", 0.0, 1.0,
                                       "anonymeter's risk, " + _FRACTION, _ANONYMETER)
    relative_difference: float = _threshold(0.05, "min", 0.0, np.inf,
                                            "a relative difference, from 0 up (0.05 is 5 %)",
                                            _LARGEST_VALUE)
    closest_match: float = _threshold(0.01, "max", 0.0, 1.0, _FRACTION)

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


#: where each default of :class:`Thresholds` comes from (printed under the verdict table),
#: declared with its field
THRESHOLD_SOURCES: dict[str, str] = {f.name: f.metadata["source"] for f in fields(Thresholds)}
