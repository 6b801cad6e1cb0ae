"""Match rules for identification risk: exact codes and windows ``t_j ± R_j`` combined as a
rectangle, ellipse, Mahalanobis ball or ``legacy_hh_euclid``; see :doc:`/methods/identification`.

An open window ``(t−R, t+R)`` becomes the closed ``[nextafter(t−R, +inf), nextafter(t+R, −inf)]``
(exactly equivalent for float64), so one binary search serves both window types.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from bayes_risk.exceptions import ValidationError, arg_name, has_option, on_command_line

__all__ = [
    "MatchRule",
    "quantile_sd_radius",
    "target_radii",
    "window_bounds",
    "mahalanobis_whitening",
    "mahalanobis_inputs",
    "ELLIPTIC_SHAPES",
]

#: shapes whose windows are the bounding box of a quadratic form tested afterwards
ELLIPTIC_SHAPES = ("ellipse", "mahalanobis")


@dataclass(frozen=True)
class MatchRule:
    """How the known columns match: ``exact_*`` by equality, ``radius_*`` within ``radius[c]``
    (unsynthesized/synthesized), the rest as in :class:`~bayes_risk.identification.MatchSpec`
    (``legacy_signed``: the R package's signed radius ``r·t``)."""

    exact_us: tuple[str, ...] = ()
    exact_s: tuple[str, ...] = ()
    radius_us: tuple[str, ...] = ()
    radius_s: tuple[str, ...] = ()
    radius: dict[str, float] = field(default_factory=dict)
    radius_type: str = "percentage"
    r_min: dict[str, float] = field(default_factory=dict)
    window: str = "closed"
    shape: str = "rectangle"
    legacy_signed: bool = False
    quantile_groups: int = 20

    def __post_init__(self) -> None:
        # MatchSpec and prepare have checked every option; what is left depends on the columns
        if self.shape == "mahalanobis" and len({float(self.radius[c]) for c in self.radius_cols
                                                if c in self.radius}) > 1:
            raise ValidationError(
                "shape='mahalanobis' uses one radius (a Mahalanobis distance) for all radius "
                f"columns together. Got {dict(self.radius)}."
            )
        for c in self.r_min:
            if c not in self.radius_cols:
                raise ValidationError(
                    f"r_min given for column {c!r}, which is not matched with a radius "
                    f"(radius columns: {list(self.radius_cols)})."
                )

    @property
    def radius_cols(self) -> tuple[str, ...]:
        """Radius columns, unsynthesized first."""
        return self.radius_us + self.radius_s

    @property
    def exact_cols(self) -> tuple[str, ...]:
        """Exact-match columns, unsynthesized first."""
        return self.exact_us + self.exact_s

    def with_radius(self, radius: Mapping[str, float]) -> MatchRule:
        """Copy with some radii replaced (radius sweep)."""
        new = {**self.radius, **{k: float(v) for k, v in radius.items()}}
        return dataclasses.replace(self, radius=new, r_min=dict(self.r_min))

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready description of the rule."""
        return {
            "exact_unsynthesized": list(self.exact_us),
            "exact_synthesized": list(self.exact_s),
            "radius_unsynthesized": list(self.radius_us),
            "radius_synthesized": list(self.radius_s),
            "radius": dict(self.radius),
            "radius_type": self.radius_type,
            "r_min": dict(self.r_min),
            "window": self.window,
            "shape": self.shape,
            "legacy_signed": self.legacy_signed,
            "quantile_groups": self.quantile_groups,
        }


def quantile_sd_radius(
    confidential: np.ndarray, targets: np.ndarray, q: int = 20
) -> np.ndarray:
    """Quantile-group standard deviation radius (Drechsler & Reiter 2009).

    Each target gets the sample standard deviation of the group of ``Q`` quantile groups of the
    confidential values that holds its value (:doc:`/methods/identification`).

    Examples
    --------
    >>> x = np.array([1, 2, 3, 4, 10, 20, 30, 40.0])
    >>> np.round(quantile_sd_radius(x, np.array([3.0, 20.0]), q=2), 6)
    array([ 1.290994, 12.909944])
    """
    x = np.asarray(confidential, dtype=np.float64)
    t = np.asarray(targets, dtype=np.float64)
    cuts = np.quantile(x, np.linspace(0.0, 1.0, q + 1))
    inner = cuts[1:q]
    gx = np.searchsorted(inner, x, side="left")
    gt = np.searchsorted(inner, t, side="left")
    sd = np.zeros(q, dtype=np.float64)
    for g in range(q):
        v = x[gx == g]
        if v.size >= 2:
            sd[g] = float(np.std(v, ddof=1))
    return sd[gt]


def target_radii(
    rule: MatchRule,
    target_values: Mapping[str, np.ndarray],
    confidential: Mapping[str, np.ndarray] | None = None,
) -> dict[str, np.ndarray]:
    """Radius ``R_j`` of every radius column for every target (before the shape transform);
    ``confidential`` (the original's values) is needed by ``quantile_sd``."""
    out: dict[str, np.ndarray] = {}
    for c in rule.radius_cols:
        t = np.asarray(target_values[c], dtype=np.float64)
        r = float(rule.radius[c])
        if rule.radius_type == "absolute":
            R = np.full(t.shape, r)
        elif rule.radius_type == "percentage":
            with np.errstate(over="ignore"):  # refused below, with the column and the radius
                R = r * t if rule.legacy_signed else r * np.abs(t)
            if c in rule.r_min:
                R = np.maximum(R, float(rule.r_min[c]))
        else:
            if confidential is None:
                raise ValidationError("quantile_sd radius needs the confidential values.")
            R = quantile_sd_radius(confidential[c], t, rule.quantile_groups)
            if r != 1.0:
                R = r * R
        with np.errstate(over="ignore", invalid="ignore"):
            wide = np.isfinite(t) & ~np.isfinite(t + np.abs(R))
        if wide.any():
            raise ValidationError(
                f"{arg_name('radius', f'{{{c!r}: {r:g}}}', cli=f'{c}={r:g}')}: the window "
                f"around the value {float(t[wide][0]):g} overflows "
                "the floating-point range, so it would hold every value; give a smaller radius.",
                code="RADIUS_TOO_LARGE")
        out[c] = R
    if rule.shape == "legacy_hh_euclid" and out:
        # the R package's euclideanDist: R_known = sqrt(sum_us R_j^2) and
        # R_syn = sqrt(R_known + sum_syn R_j^2) (non-squared R_known, as the package does)
        n_t = len(next(iter(out.values())))
        r_known = np.sqrt(sum((out[c] * out[c] for c in rule.radius_us), np.zeros(n_t)))
        r_syn = np.sqrt(sum((out[c] * out[c] for c in rule.radius_s), r_known))
        out.update({c: r_known for c in rule.radius_us})
        out.update({c: r_syn for c in rule.radius_s})
    return out


def window_bounds(
    rule: MatchRule, t: np.ndarray, R: np.ndarray, *, exact_zero: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Closed float bounds ``[lo, hi]`` equivalent to the rule's window around ``t`` (``lo > hi``:
    empty); for elliptic shapes the bounding box, the quadratic form tested afterwards."""
    t = np.asarray(t, dtype=np.float64)
    R = np.asarray(R, dtype=np.float64)
    lo = t - R
    hi = t + R
    if rule.window == "open" and rule.shape not in ELLIPTIC_SHAPES:
        lo_o = np.nextafter(lo, np.inf)
        hi_o = np.nextafter(hi, -np.inf)
        if exact_zero is not None:
            lo_o = np.where(exact_zero, t, lo_o)
            hi_o = np.where(exact_zero, t, hi_o)
        return lo_o, hi_o
    return lo, hi


def mahalanobis_whitening(
    confidential: np.ndarray, columns: Sequence[str]
) -> tuple[np.ndarray, np.ndarray]:
    """Whitening for Mahalanobis-distance matching (Hu 2019 §4.2.2).

    With ``S = L Lᵀ`` the Cholesky factorisation of the sample covariance, ``y = L⁻¹ x`` turns
    the Mahalanobis distance into the Euclidean one (:doc:`/methods/identification`).

    Parameters
    ----------
    confidential : ndarray [n, q]
        The original file's values of the ``q`` radius columns (float64, no NaN).
    columns : sequence of str
        Their names (for error messages).

    Returns
    -------
    cov : ndarray [q, q]
        The covariance ``S``.
    inv_chol : ndarray [q, q]
        ``L⁻¹`` (lower triangular): whitened values are ``x @ inv_chol.T``.

    Raises
    ------
    ValidationError
        Fewer than ``q + 1`` records, or a covariance that is not positive definite.

    Examples
    --------
    >>> x = np.array([[0.0, 0.0], [2.0, 0.0], [0.0, 2.0], [2.0, 2.0], [1.0, 1.0]])
    >>> cov, w = mahalanobis_whitening(x, ["a", "b"])
    >>> cov
    array([[1., 0.],
           [0., 1.]])
    """
    x = np.asarray(confidential, dtype=np.float64)
    q = x.shape[1]
    if x.shape[0] <= q:
        raise ValidationError(
            f"shape='mahalanobis' needs more original records ({x.shape[0]}) than radius "
            f"columns ({q}: {list(columns)}) to estimate their covariance.",
            code="TOO_FEW_RECORDS"
        )
    cov = np.atleast_2d(np.cov(x, rowvar=False, ddof=1))
    sd = np.sqrt(np.clip(np.diag(cov), 0.0, None))
    const = [c for c, s in zip(columns, sd, strict=True) if not s > 0]
    if const:
        raise ValidationError(
            f"shape='mahalanobis': column(s) {const} are constant in the original data; their "
            "variance is 0, so the Mahalanobis distance is undefined (match them exactly instead).",
            code="CONSTANT_COLUMN"
        )
    # condition on the correlation scale, so units do not matter
    corr = cov / np.outer(sd, sd)
    ev = np.linalg.eigvalsh(corr)
    if ev[0] <= 1e-10 * ev[-1]:
        raise ValidationError(
            f"shape='mahalanobis': the covariance of {list(columns)} in the original data is "
            f"singular (smallest correlation-matrix eigenvalue {ev[0]:.3g}); a column is a linear "
            "combination of the others. Drop one of them from the radius columns.",
            code="SINGULAR_COVARIANCE"
        )
    L = np.linalg.cholesky(cov)
    inv_chol = np.linalg.solve(L, np.eye(q))
    # exact zeros above the diagonal keep the unsynthesized coordinates free of synthetic values
    return cov, np.tril(inv_chol)


def mahalanobis_inputs(
    rule: MatchRule,
    confidential: Mapping[str, np.ndarray],
    rec_radius_us: np.ndarray,
    rep_radius_s: Sequence[np.ndarray],
    tgt_radius: np.ndarray,
) -> tuple[np.ndarray, list[np.ndarray], np.ndarray, np.ndarray]:
    """Whitened radius values of records ``[q_u, n]``, replicates ``[q_s, n]`` and targets
    ``[N_T, q]`` for ``shape="mahalanobis"``, and the covariance of ``confidential`` used."""
    cols = rule.radius_cols
    qu = len(rule.radius_us)
    x = np.stack([np.asarray(confidential[c], dtype=np.float64) for c in cols], axis=1)
    cov, w = mahalanobis_whitening(x, cols)
    rec_us = w[:qu, :qu] @ rec_radius_us
    base = w[qu:, :qu] @ rec_radius_us
    rep_s = [base + w[qu:, qu:] @ np.asarray(v, dtype=np.float64) for v in rep_radius_s]
    tgt = np.asarray(tgt_radius, dtype=np.float64) @ w.T
    return rec_us, rep_s, tgt, cov


def parse_radius(
    radius: float | Mapping[str, float] | Sequence[float] | None,
    *,
    known_us: Sequence[str],
    known_s: Sequence[str],
    column_order: Sequence[str],
    categorical: set[str],
    continuous: set[str],
    count: set[str],
    radius_type: str,
    compat: bool,
) -> dict[str, float]:
    """Resolve ``MatchSpec.radius`` (its values checked there) to ``{column: r}`` for the radius
    columns: a scalar for every continuous known column (compat: every non-categorical one), a
    mapping for exactly its columns, a sequence (compat only) in data-frame column order."""
    known = list(known_us) + list(known_s)
    numeric_known = [c for c in column_order if c in known and c not in categorical]
    cont_known = [c for c in numeric_known if c in continuous]
    # a value the release carries unchanged is matched exactly unless a radius is given: the
    # worst case for the intruder, who knows it (Hornby & Hu's radius is for a synthesized one)
    cont_syn = cont_known if compat else [c for c in cont_known if c in known_s]
    if radius is None:
        if radius_type == "quantile_sd":
            return {c: 1.0 for c in (numeric_known if compat else cont_known)}
        if cont_syn:
            raise ValidationError(
                f"known synthesized continuous column(s) {cont_syn} need a radius; give "
                + ("radius=r (all continuous known columns) or radius={column: r} (0 for exact "
                   "matching), or search every radius with radius_search()." if not
                   on_command_line() else
                   f"{arg_name('radius', cli=f'{cont_syn[0]}=R')} (repeat per column; 0 for "
                   "exact matching)" + (", or --radius-search for the worst case over the radii"
                                        if has_option("radius_search") else "") + "."),
                code="INVALID_ARGUMENT",
            )
        if compat and numeric_known:
            raise ValidationError(
                "compat='IdentificationRiskCalculation': known numeric column(s) "
                f"{numeric_known} need a radius (the package treats every non-factor column as "
                "continuous)."
            )
        return {}
    if isinstance(radius, Mapping):
        out = {}
        for c, r in radius.items():
            if c not in known:
                raise ValidationError(
                    f"radius given for column {c!r}, which is not a known column "
                    f"(known: {known})."
                )
            if c in categorical:
                raise ValidationError(
                    f"radius given for categorical column {c!r}; categorical columns are "
                    "matched exactly (remove it from radius, or declare the column numeric)."
                )
            out[c] = float(r)
        missing = [c for c in (numeric_known if compat else cont_syn) if c not in out]
        if missing:
            raise ValidationError(
                f"known continuous column(s) {missing} have no radius in "
                f"{arg_name('radius', dict(radius), cli=_cli_radii(radius))}; give each one a "
                "radius (0 for exact matching).", code="INVALID_ARGUMENT",
            )
        out_ordered = {c: out[c] for c in column_order if c in out}
        if not out_ordered:
            raise ValidationError(
                f"radius_type={radius_type!r} but no known column is matched with a radius."
            )
        return out_ordered
    if isinstance(radius, (list, tuple, np.ndarray)):
        vals = [float(r) for r in radius]
        if len(vals) == 1:
            radius = vals[0]
        else:
            if not compat:
                raise ValidationError(
                    "a radius vector is only accepted with "
                    "compat='IdentificationRiskCalculation' (where it is assigned in data-frame "
                    "column order); pass radius={column: r} instead."
                )
            if len(vals) != len(numeric_known):
                raise ValidationError(
                    f"radius vector has {len(vals)} values but there are {len(numeric_known)} "
                    f"known numeric columns {numeric_known} (data-frame order)."
                )
            return dict(zip(numeric_known, vals, strict=False))
    r = float(radius)
    targets = numeric_known if compat else cont_known
    if not targets:
        raise ValidationError(
            f"radius={r!r} ({radius_type}) given but no known column is continuous"
            + (
                f" (known numeric count columns {numeric_known} are matched exactly unless "
                "named in radius={column: r})"
                if numeric_known
                else ""
            )
            + "; declare a continuous column or drop the radius."
        )
    return {c: r for c in targets}


def _cli_radii(radius: Mapping[str, Any]) -> str:
    """Radii as ``--radius`` takes them: ``Income=0.1 Age=2``."""
    return " ".join(f"{c}={r}" for c, r in radius.items())
