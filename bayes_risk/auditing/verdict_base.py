"""A verdict line and a baseline of the audit (:class:`Verdict`, :class:`Baseline`), the
warning codes a line names, and the wording every measure's line builder shares
(:doc:`/adding_a_measure`)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

__all__ = ["Verdict", "Baseline", "line_caveats", "caused", "pct", "dataset_range",
           "outside_range", "mass_words"]


def line_caveats(caveats: Sequence[str], codes: Any) -> tuple[str, ...]:
    """The ``caveats`` of a line (its measure's ``Measure.caveats`` of the line's kind) among
    the warning ``codes`` its step raised, in the order of ``caveats``."""
    have = set(codes or ())
    return tuple(c for c in caveats if c in have)


@dataclass(frozen=True)
class Verdict:
    """One line of the first screen: a measure against its threshold.

    ``warnings``: codes that question this value; rates (``unit`` ``"%"``) in per cent;
    ``spread``: the range over the ``m`` datasets, or that it is pooled. A line on the wrong side
    has a ``cause`` and ``remedies``.
    """

    step: str
    measure: str
    value: float
    threshold: float
    direction: str  # "max": the value should not exceed the threshold; "min": not fall below
    source: str | None  # file (relative to the audit folder) the value comes from
    detail: str = ""
    warnings: tuple[str, ...] = ()
    #: "%" for rates (value and threshold in per cent), "" for ratios
    unit: str = ""
    #: the spread over the m datasets ("per dataset 1.2–3.4 %") or "pooled, no spread"
    spread: str = ""
    #: who the intruder of this line is and what they know
    intruder: str = ""
    #: on the wrong side of the threshold: what drives the value, with numbers from this run
    cause: str = ""
    #: on the wrong side of the threshold: the changes to the release that would move it
    remedies: tuple[str, ...] = ()
    #: records with unreliable estimates, left out of the value (never a plain pass)
    flagged: int = 0
    #: of the flagged records, those the worst case counts at risk: the ones whose bounds
    #: (Monte Carlo or k̂) allow it, and every one without bounds (``None``: every one)
    flagged_at_risk: int | None = None
    #: a rate in per cent is a share of ``(n, noun)``: "127.2 of 5,571 targets"
    count_of: tuple[int, str] | None = None
    #: the name of the line's threshold in :class:`~bayes_risk.auditing.Thresholds`
    threshold_name: str = ""
    #: what the line takes as the worst case over the choices its intruder has (and any
    #: weaker choice the audit made, for cost, with its warning code)
    worst_case: str = ""
    #: not measured on this release: carried from an earlier audit of the release before the
    #: remedy as an upper bound, with where and why (``""``: measured here)
    carried: str = ""

    @property
    def exceeds(self) -> bool:
        """Whether the value is on the wrong side of the threshold (NaN counts as exceeding)."""
        if not np.isfinite(self.value):
            return True
        return self.value > self.threshold if self.direction == "max" else (
            self.value < self.threshold
        )

    @property
    def status(self) -> str:
        """``"exceeds"``, ``"caution"`` (a warning or flagged records) or ``"within"``."""
        if self.exceeds:
            return "exceeds"
        return "caution" if self.warnings or self.flagged else "within"

    @property
    def at_worst(self) -> float:
        """The value with the flagged records counted at worst (``flagged_at_risk`` of them at
        risk, the others not; the value when none is flagged; NaN when flagged records cannot
        be counted into it: a line that is not a share of ``count_of`` records that should stay
        low)."""
        if not self.flagged:
            return self.value
        if self.unit != "%" or not self.count_of or self.direction != "max":
            return float("nan")
        return counted_at_risk(self.value, self.count_of[0], self.flagged, self.flagged_at_risk)

    @property
    def short(self) -> str:
        """The measure's name without its qualifiers (the report's first sentence)."""
        return short_name(self.measure)

    def text_lines(self) -> list[str]:
        """The line in words (``bayes-risk audit`` prints it): the value against the threshold,
        its spread and warnings; past the threshold, the first clause of its cause and each
        remedy up to its details."""
        u = f" {self.unit}" if self.unit else ""
        out = [f"{_STATUS_WORD[self.status]}  {self.measure}: {self.value:.4g}{u} (threshold "
               f"{'<=' if self.direction == 'max' else '>='} {self.threshold:g}{u}; "
               f"{self.spread})" + (f" [warning: {', '.join(self.warnings)}]"
                                    if self.warnings else "")
               + (f" [not measured on this release: {self.carried}]" if self.carried else "")]
        if self.cause:
            out += [f"    cause: {_first_clause(self.cause)}", "    remedies: " + "; ".join(
                re.split(r" \(|, so|: ", r)[0] for r in self.remedies)]
        return out


#: a verdict line's status as its text opens (aligned)
_STATUS_WORD = {"exceeds": "EXCEEDS", "caution": "caution", "within": "within "}


def _first_clause(text: str) -> str:
    """``text`` up to its first "; " outside parentheses (the line's short cause)."""
    depth = 0
    for i, ch in enumerate(text):
        depth += (ch == "(") - (ch == ")")
        if depth == 0 and text.startswith("; ", i):
            return text[:i]
    return text


def pct(x: Any) -> float:
    return float(x) * 100


def counted_at_risk(share: float, n: int, flagged: int, at_risk: int | None = None) -> float:
    """A share in per cent of ``n`` records with ``flagged`` more records, ``at_risk`` of them
    (default all) counted at risk: ``(share · n + at_risk) / (n + flagged)``."""
    if not n + flagged:
        return float("nan")
    k = flagged if at_risk is None else at_risk
    return 100 * ((share / 100 * n if n else 0.0) + k) / (n + flagged)


def _finite(values: Any) -> np.ndarray:
    v = np.asarray(values, dtype=np.float64).ravel()
    return v[np.isfinite(v)]


def dataset_range(values: Any, unit: str = "") -> str:
    """``"per dataset a–b"`` of the finite ``values`` (one per synthetic dataset)."""
    v = _finite(values)
    if not v.size:
        return "no finite value per dataset"
    u = f" {unit}" if unit else ""
    return f"per dataset {v.min():.3g}–{v.max():.3g}{u} (min–max over {v.size})"


def outside_range(value: float, each: Any, why: str, otherwise: str = "") -> str:
    """Why a headline value lies outside its per-dataset range, else ``otherwise``."""
    v = _finite(each)
    if not v.size or not np.isfinite(value) or v.min() <= value <= v.max():
        return otherwise
    return f"{'above' if value > v.max() else 'below'} every dataset's own value: {why}"


def caused(v: Verdict, cause: str, remedies: Sequence[str]) -> Verdict:
    """``v`` with its cause and remedies when it is on the wrong side of its threshold."""
    if not v.exceeds or not cause:
        return v
    return replace(v, cause=cause, remedies=tuple(remedies))


@dataclass(frozen=True)
class Baseline:
    """A figure that cannot depend on the release (``RELEASE_INDEPENDENT``), reported beside the
    verdict; ``threshold`` for reference (``None``: a measure of the original alone)."""

    step: str
    measure: str
    value: float
    threshold: float | None
    source: str | None
    why: str
    code: str = "RELEASE_INDEPENDENT"
    #: "%" for rates (value and threshold in per cent), as on the verdict lines
    unit: str = ""

    def text_line(self) -> str:
        """The baseline in words (``bayes-risk audit`` prints it)."""
        return (f"baseline {self.measure}: {self.value:.4g}{' ' + self.unit if self.unit else ''}"
                f" ({self.why})")


def mass_words(regime: dict[str, Any]) -> str:
    """How much of the mass of the regions the chains visited the regime holds, by the bounds of
    the regimes' marginal likelihoods (``models.dpmpm.evidence``)."""
    from bayes_risk.models._bayesian.regimes import share_words

    # called for the regime that holds the mass: its share at least
    return (f"{share_words({**regime, 'holds_mass': True})} of the mass of the regions the "
            "chains visited, by the bounds of the regimes' marginal likelihoods, "
            "convergence_summary()['regimes']")


def short_name(measure: str) -> str:
    """A verdict line's measure without its qualifiers: ``"DiSCO of Tenure"`` for
    ``"DiSCO (%), target Tenure"``."""
    name = measure.split(":")[0].replace(", worst case over the radii", "")
    name = re.sub(r", keys .*$", "", re.sub(r" \([^)]*\)", "", name))
    return name.replace(", target ", " of ")
