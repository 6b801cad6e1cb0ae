"""Success rates of an attack and the privacy risk read from them, as anonymeter computes them.

See :doc:`/methods/attacks`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any

import numpy as np

from bayes_risk._constraints import check_value
from bayes_risk._specs import argument_checks
from bayes_risk.exceptions import ValidationError

__all__ = ["SuccessRate", "AttackRisk", "success_rate", "attack_risk", "check_confidence_level",
           "group_rows", "group_labels"]


@dataclass(frozen=True)
class SuccessRate:
    """The Wilson-score estimate of an attack's success rate.

    Attributes
    ----------
    n_attempts : int
        Attempts made (0 leaves the rate undefined: ``nan``).
    n_success : float
        Successful attempts (fractional after the control's size correction).
    rate : float
        Centre of the Wilson interval.
    error : float
        Half-width of the interval.
    """

    n_attempts: int
    n_success: float
    rate: float
    error: float

    @property
    def interval(self) -> tuple[float, float]:
        """``(rate − error, rate + error)``, not clipped."""
        return (self.rate - self.error, self.rate + self.error)


@dataclass(frozen=True)
class AttackRisk:
    """The risk read from the main and control attacks (anonymeter's ``PrivacyRisk``).

    Attributes
    ----------
    residual : float
        ``(r_main − r_control) / (1 − r_control)`` before clipping (without a control: the
        main rate).
    error : float
        Its propagated half-width.
    risk : float
        ``residual`` clipped to ``[0, 1]`` (anonymeter's value).
    ci : (float, float)
        ``residual ± error``, each end clipped to ``[0, 1]`` (anonymeter's interval).
    """

    residual: float
    error: float
    risk: float
    ci: tuple[float, float]


def check_confidence_level(confidence_level: float) -> float:
    """``confidence_level`` as a float in (0, 1), or a ``ValidationError`` naming it (the
    constraint of every attack's ``confidence_level``, declared on ``singling_out_risk``'s)."""
    return check_value(confidence_level, argument_checks(
        "bayes_risk.attacks.singling_out:singling_out_risk")["confidence_level"],
        "confidence_level")


def _z(confidence_level: float) -> float:
    return NormalDist().inv_cdf(0.5 * (1.0 + confidence_level))


def success_rate(n_success: float, n_attempts: int, confidence_level: float = 0.95
                 ) -> SuccessRate:
    """Wilson score estimate of a success rate (Wilson 1927), as anonymeter's ``success_rate``.

    Parameters
    ----------
    n_success : float
        Successful attempts, ``0 <= n_success <= n_attempts``.
    n_attempts : int
        Attempts made; with none the rate and its error are ``nan``.
    confidence_level : float

    Returns
    -------
    SuccessRate

    Examples
    --------
    >>> r = success_rate(0, 100)
    >>> round(r.rate, 4), round(r.error, 4)
    (0.0185, 0.0185)
    """
    c = check_confidence_level(confidence_level)
    n, k = int(n_attempts), float(n_success)
    if n <= 0:
        return SuccessRate(n, k, math.nan, math.nan)
    z2 = _z(c) ** 2
    var = k * (n - k) / n
    denom = n + z2
    rate = (k + 0.5 * z2) / denom
    error = (math.sqrt(z2) / denom) * math.sqrt(max(var, 0.0) + 0.25 * z2)
    return SuccessRate(n, k, rate, error)


def attack_risk(main: SuccessRate, control: SuccessRate | None) -> AttackRisk:
    """The privacy risk of anonymeter's ``EvaluationResults.risk()``.

    Parameters
    ----------
    main : SuccessRate
        The attack on the records used for the synthesis.
    control : SuccessRate or None
        The same attack on the holdout; ``None``: the risk is the main success rate.

    Returns
    -------
    AttackRisk
        ``nan`` throughout when a rate is undefined or the control rate is 1.
    """
    if control is None:
        res, err = main.rate, main.error
    elif not (math.isfinite(main.rate) and math.isfinite(control.rate)) or control.rate >= 1.0:
        res, err = math.nan, math.nan
    else:
        q = 1.0 - control.rate
        res = (main.rate - control.rate) / q
        # dR = sqrt((dR/dr_main δ_main)² + (dR/dr_control δ_control)²), anonymeter's
        # residual_success
        err = math.hypot(main.error / abs(q), control.error * (main.rate - 1.0) / q ** 2)
    if not math.isfinite(res):
        return AttackRisk(math.nan, math.nan, math.nan, (math.nan, math.nan))

    def clip(x: float) -> float:
        return min(max(x, 0.0), 1.0)

    return AttackRisk(res, err, clip(res), (clip(res - err), clip(res + err)))


def rate_columns(main: SuccessRate, control: SuccessRate | None, baseline: SuccessRate
                 ) -> dict[str, float]:
    """The three attacks' rates and the risk read from them: the columns of a result's row."""
    risk, no_control = attack_risk(main, control), control is None
    return {"main_rate": main.rate, "main_error": main.error,
            "control_rate": math.nan if no_control else control.rate,
            "control_error": math.nan if no_control else control.error,
            "baseline_rate": baseline.rate, "baseline_error": baseline.error,
            "residual": risk.residual, "risk": risk.risk, "ci_low": risk.ci[0],
            "ci_high": risk.ci[1]}


def group_rows(keys: dict[str, Any], main: tuple[np.ndarray, np.ndarray],
               control: tuple[np.ndarray, np.ndarray] | None, baseline: SuccessRate,
               labels: list[str], confidence_level: float) -> list[dict[str, Any]]:
    """The risk of each group of attempts (anonymeter's ``risk_for_groups``): per group code
    ``g`` (``nan``: a missing value, the last label), the main attack's successes among its
    attempts of the group and the control attack's among its attempts of the group
    (inference and linkability: the attacked records, of the original and of the holdout;
    anonymeter counts every holdout record of the group, attacked or not, which understates
    the control rate; singling out: the predicates allocated to the group, both times),
    against the baseline of all attempts.

    ``main`` and ``control`` are ``(group codes, successes)`` of the attempts; a success may
    be fractional (singling out's size-corrected control), a group's count at most its
    attempts."""
    codes = [np.where(np.isnan(g), len(labels) - 1, g).astype(np.int64)
             for g, _ in ([main] if control is None else [main, control])]
    out = []
    for g in np.unique(np.concatenate(codes)):
        in_main = codes[0] == g
        r_main = success_rate(float(main[1][in_main].sum()), int(in_main.sum()),
                              confidence_level)
        r_ctrl = None
        if control is not None:
            in_ctrl = codes[1] == g
            r_ctrl = success_rate(min(float(control[1][in_ctrl].sum()), int(in_ctrl.sum())),
                                  int(in_ctrl.sum()), confidence_level)
        out.append({**keys, "group": labels[int(g)], "n_attacks": int(in_main.sum()),
                    "n_main": int(main[1][in_main].sum()),
                    "n_attacks_control": math.nan if r_ctrl is None else r_ctrl.n_attempts,
                    "n_control": math.nan if r_ctrl is None else r_ctrl.n_success,
                    **rate_columns(r_main, r_ctrl, baseline)})
    return out


def group_labels(schema: Any, column: str | None, argument: str = "groups") -> list[str]:
    """The labels of a grouping column's levels, a missing value last; ``ValidationError``
    (``GROUPS_NOT_CATEGORICAL``) for a numeric column."""
    spec = schema[column]
    if not spec.is_categorical:
        raise ValidationError(
            f"{argument}: column {column!r} is {spec.type}; groups are the levels of a "
            "categorical column (cut a numeric column into groups first, e.g. pandas.qcut).",
            code="GROUPS_NOT_CATEGORICAL")
    return [str(v) for v in (spec.levels or ())] + ["missing"]
