"""Wei–Reiter largest-value scenario of :class:`~bayes_risk.models.PoissonMixture` (pieces only).

The model returns per-candidate likelihood pieces; the attribute engine turns them into the
intruder's posterior (``bayes_risk.attribute.largest_value``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

import bayes_risk.models.poisson.kernels as pk
import bayes_risk.models.poisson.loglik as _loglik
import bayes_risk.models.poisson.weak as pw
from bayes_risk._constraints import Interval, Options, Requires, check_relations, check_value
from bayes_risk.exceptions import SchemaError, ValidationError
from bayes_risk.models.poisson.state import PoissonState

#: What the intruder of the largest-value scenario knows (see ``largest_value_loglik``).
LARGEST_VALUE_SCENARIOS = ("worst_case", "second_largest", "two_largest_sum")


@dataclass(frozen=True)
class LargestValueLikelihood:
    """Likelihood pieces of the Wei–Reiter largest-value scenario, per candidate
    (:class:`bayes_risk.contract.LargestValuePieces`), for
    :func:`bayes_risk.attribute.largest_value.largest_value_posterior`.

    Attributes
    ----------
    column : str
        The magnitude variable ``j``.
    record : int
        Row (0-based) of the record holding the largest confidential value ``y_(1)j``.
    second_largest : float
        ``y_(2)j``, the value the intruder is assumed to know.
    candidates : ndarray [G]
        Candidate values ``y*`` of ``Y_(1)j``; the truth is among them at index ``g0``.
    g0 : int
    model_class : {"P", "O"}
    logp_rec : ndarray [H, G]
        ``log p(y_(1) with column j set to y*_g | Θ_h)`` (Hu 2019 §3.2.5).
    L : ndarray [H, m] or None
        ``log p(Z_(l) | Θ_h)`` under the model's synthesis mode.
    delta : ndarray [H, m, G] or None
        Class O only: ``ℓ_{hl}(y*_g) − ℓ_{hl}(y_(1)j)`` (``+inf`` where only the truth's is 0).
    loglik_candidates : ndarray [H, m, G] or None
        Class O only: ``log p(Z_(l) | Θ_h, y*_g, y_{-i})`` (= ``L + delta`` where defined).
    memberships : str
        How memberships were obtained (``"generating"``, ``"map"``, ``"stored"`` or ``"user"``).
    warnings : list of str
        ``"TRUTH_ZERO_LIKELIHOOD"``, ``"TARGET_NOT_SYNTHESIZED"`` or
        ``"THETA_GIVEN_OTHER_RECORDS"``.
    scenario : {"worst_case", "second_largest", "two_largest_sum"}
        What the intruder knows (see ``PoissonMixture.largest_value_loglik``).
    constraint_loglik : ndarray [H, C, G] or None
        ``second_largest``: ``log P_h(S_r = σ_c − y*_g − c_c)`` for each group-sum constraint.
    constraints : list of tuple or None
        ``second_largest``: each constraint as ``(σ, c, r, lo, hi, by_component)``.
    second_record : int or None
        The record holding ``y_(2)j``.
    pair_total : float or None
        ``two_largest_sum``: ``T_2j = y_(1)j + y_(2)j``.
    """

    column: str
    record: int
    second_largest: float
    candidates: np.ndarray
    g0: int
    model_class: str
    logp_rec: np.ndarray
    L: np.ndarray | None
    delta: np.ndarray | None
    loglik_candidates: np.ndarray | None
    memberships: str
    warnings: list[str] = field(default_factory=list)
    scenario: str = "worst_case"
    constraint_loglik: np.ndarray | None = None
    constraints: list[tuple[float, float, int, int, int, bool]] | None = None
    second_record: int | None = None
    pair_total: float | None = None
    total_known: bool = False


def largest_value_candidates(state: PoissonState, column: str, upper: float, step: float,
                             data: pd.DataFrame | None, kept: pd.DataFrame | None
                             ) -> tuple[np.ndarray, int, int]:
    """The work of :meth:`PoissonMixture.largest_value_candidates` (documented there);
    ``kept``: the confidential table the model keeps."""
    y = _loglik.confidential_counts(state, kept, data)
    j = column_index(state, column)
    col = y[:, j]
    order = observed_order(col)
    rec = int(order[0])
    y1 = float(col[rec])
    y2 = float(col[order[1]]) if col.size > 1 else 0.0
    if not upper >= y1:
        raise ValidationError(
            f"upper = {upper!r} is below the largest confidential value of {column!r}; the "
            "candidate interval [y_(2), upper] must contain the truth."
        )
    check_value(step, Interval(float, 0, closed="neither"), "step")
    grid = np.arange(y2, float(upper) + step / 2, step)
    grid = np.round(grid)
    if not np.any(grid == y1):
        grid = np.sort(np.unique(np.append(grid, y1)))
    grid = np.unique(grid)
    g0 = int(np.flatnonzero(grid == y1)[0])
    return grid, g0, rec


def observed_order(col: np.ndarray) -> np.ndarray:
    """Rows of ``col`` by decreasing value, those whose value is missing (NaN) left out: the
    largest values are the largest observed ones."""
    order = np.argsort(-col, kind="stable")
    return order[~np.isnan(col[order])]


def column_index(state: PoissonState, column: str) -> int:
    cols = state.columns
    if column not in cols:
        raise SchemaError(f"column {column!r} is not a modelled count column {cols}.",
                          code="UNKNOWN_COLUMN")
    return cols.index(column)


#: :meth:`PoissonMixture.largest_value_loglik`'s arguments against each other
_RELATIONS = (Requires("total_known", "scenario", equal=("second_largest",),
                       code="INVALID_ARGUMENT"),)


def largest_value_loglik(state: PoissonState, column: str, synthetic: Any, scenario: str,
                         total_known: bool, candidates: Any, upper: Any, step: float,
                         idx: np.ndarray, memberships: Any, data: pd.DataFrame | None,
                         kept: pd.DataFrame | None) -> LargestValueLikelihood:
    """The work of :meth:`PoissonMixture.largest_value_loglik` (documented there); ``kept``: the
    confidential table the model keeps."""
    check_value(scenario, Options(LARGEST_VALUE_SCENARIOS), "scenario")
    check_relations(dict(total_known=total_known, scenario=scenario), _RELATIONS)
    if scenario != "worst_case" and state.synthesized_records is not None:
        raise NotImplementedError(
            f"scenario={scenario!r} with partial synthesis of selected records: the records "
            "released unchanged are known to the intruder, which these scenarios do not "
            "model; use scenario='worst_case'."
        )
    if data is not None and kept is not None and state.model_class == "O":
        raise ValidationError(
            "a class-O model uses the confidential data it was fitted to; omit data=."
        )
    y = _loglik.confidential_counts(state, kept, data)
    j = column_index(state, column)
    order = observed_order(y[:, j])
    if order.size < 2:
        raise ValidationError("the largest-value scenarios need at least two records observed "
                              f"in {column!r}.", code="TOO_FEW_RECORDS")
    if total_known and order.size < y.shape[0]:
        raise ValidationError(
            f"total_known: column {column!r} has {y.shape[0] - order.size} missing value(s), "
            "so its total is not known to anyone; use total_known=False.",
            code="MISSING_VALUES")
    rec, rec2 = int(order[0]), int(order[1])
    if scenario == "two_largest_sum":
        return two_largest_pieces(state, column, synthetic, y, j, order, candidates, idx,
                                  memberships, kept)
    grid, g0 = largest_grid(state, column, y[:, j], rec, candidates, upper, step, data, kept)
    cand = np.repeat(y[rec][None, :], grid.size, axis=0)
    cand[:, j] = grid
    log_pi, lam = state.params(idx)
    logp_rec = pk.record_loglik(cand, log_pi, lam)
    common = dict(column=column, record=rec, second_largest=float(y[rec2, j]),
                  candidates=grid, g0=g0, model_class=state.model_class, logp_rec=logp_rec,
                  scenario=scenario, second_record=rec2, total_known=bool(total_known))
    if scenario == "second_largest" and state.variant != "mp":
        return group_sum_pieces(state, common, synthetic, y, j, idx, memberships)
    return ratio_pieces(state, common, cand, synthetic, y, j, idx, memberships, kept)


def ratio_pieces(
    state: PoissonState, common: dict[str, Any], cand: np.ndarray, datasets: Any, y: np.ndarray,
    j: int, idx: np.ndarray, memberships: Any, kept: pd.DataFrame | None,
) -> LargestValueLikelihood:
    """The pieces of Hu 2019 §3.2.5 (worst case; MP under ``second_largest``, with the
    column-total term when ``total_known``)."""
    rec, rec2 = common["record"], common["second_record"]
    grid, g0 = common["candidates"], common["g0"]
    scenario, total_known = common["scenario"], common["total_known"]
    log_pi, lam = state.params(idx)
    L = _loglik.dataset_loglik(state, datasets, idx, memberships, kept)
    delta = cand_ll = None
    warns: list[str] = []
    if state.model_class == "O":
        cand_ll = _loglik.candidate_dataset_loglik(state, rec, cand, datasets, idx, memberships,
                                                   kept)
        delta = _delta(cand_ll, g0, warns)
    sel = state.synthesized_records
    if sel is not None and not sel[rec]:
        # the likelihood covers the synthesized records only; the value itself is released
        warns.append("TARGET_NOT_SYNTHESIZED")
    constraint = cons = None
    if scenario == "second_largest":
        warns.append("THETA_GIVEN_OTHER_RECORDS")
        if total_known:
            y2 = int(y[rec2, j])
            total = (float(y[:, j].sum()), float(y2), y.shape[0] - 2, 0, y2, False)
            constraint = pw.constraint_loglik(log_pi, lam[:, :, j], [total], grid)
            cons = [total]
    return LargestValueLikelihood(
        **common, L=L, delta=delta, loglik_candidates=cand_ll,
        memberships=(_loglik.membership_mode(state, memberships)
                     if isinstance(memberships, (str, type(None))) else "user"),
        warnings=warns, constraint_loglik=constraint, constraints=cons,
    )


def largest_grid(
    state: PoissonState, column: str, col: np.ndarray, rec: int, candidates: Any, upper: Any,
    step: float, data: Any, kept: pd.DataFrame | None,
) -> tuple[np.ndarray, int]:
    """The candidate values of ``Y_(1)j`` and the truth's index."""
    y1 = float(col[rec])
    if candidates is None:
        if upper is None:
            raise ValidationError(
                "give candidates=... or upper=... (the bound U_j of the grid)."
            )
        grid, g0, _ = largest_value_candidates(state, column, upper, step, data, kept)
        return grid, g0
    grid = np.asarray(candidates, dtype=np.float64).ravel()
    g0 = _truth_index(grid, y1, column)
    if np.any(grid < 0) or np.any(grid % 1 != 0):
        raise ValidationError("candidates must be non-negative integers (counts).")
    return grid, g0


def _truth_index(candidates: np.ndarray, y1: float, column: str) -> int:
    hit = np.flatnonzero(candidates == y1)
    if hit.size != 1:
        raise ValidationError(
            f"candidates must contain the largest confidential value of {column!r} exactly "
            "once."
        )
    return int(hit[0])


def group_sum_pieces(
    state: PoissonState, common: dict[str, Any], datasets: Any, y: np.ndarray, j: int,
    idx: np.ndarray, memberships: Any,
) -> LargestValueLikelihood:
    """MM / TCMM under ``second_largest``: the group-sum constraints (module
    ``poisson.weak``); the importance ratios only weight the draws."""
    zs = _loglik.synthetic_counts(state, datasets)
    mode = _loglik.membership_mode(state, memberships)
    if isinstance(mode, str):
        if mode != "generating":
            raise ValidationError(
                "scenario='second_largest' with MM/TCMM needs the synthesis groups of each "
                "dataset: memberships='generating' (default) or an integer array [n] or "
                f"[m, n]. Got {memberships!r}."
            )
        gen = _loglik.generating_memberships(state, datasets, zs, y)
        label = "generating"
    else:
        z = np.asarray(memberships)
        z = np.broadcast_to(z, (len(zs), y.shape[0])) if z.ndim == 1 else z
        if (z.shape != (len(zs), y.shape[0]) or not np.issubdtype(z.dtype, np.integer)
                or z.min() < 0 or z.max() >= state.n_components):
            raise ValidationError(
                f"memberships given as an array must be integers in 0..{state.n_components - 1}"
                f" of shape ({y.shape[0]},) or ({len(zs)}, {y.shape[0]})."
            )
        gen = [np.asarray(r, dtype=np.int64) for r in z]
        label = "user"
    cons = pw.group_constraints(state, common["record"], common["second_record"], j, zs, y,
                                gen)
    log_pi, lam = state.params(idx)
    H, G = idx.size, common["candidates"].size
    zero = np.zeros((H, len(zs), G))
    return LargestValueLikelihood(
        **common, L=np.zeros((H, len(zs))), delta=zero, loglik_candidates=zero,
        memberships=label, warnings=[],
        constraint_loglik=pw.constraint_loglik(log_pi, lam[:, :, j], cons,
                                               common["candidates"]),
        constraints=cons,
    )


def two_largest_pieces(
    state: PoissonState, column: str, datasets: Any, y: np.ndarray, j: int, order: np.ndarray,
    candidates: Any, idx: np.ndarray, memberships: Any, kept: pd.DataFrame | None,
) -> LargestValueLikelihood:
    """``two_largest_sum``: the splits ``(y*, T_2j − y*)`` of the two largest values."""
    rec, rec2 = int(order[0]), int(order[1])
    y1, y2 = float(y[rec, j]), float(y[rec2, j])
    y3 = float(y[order[2], j]) if order.size > 2 else 0.0
    t2 = y1 + y2
    lo, hi = float(np.ceil(t2 / 2)), t2 - y3
    if candidates is None:
        grid = np.arange(lo, hi + 1)
    else:
        grid = np.asarray(candidates, dtype=np.float64).ravel()
        if np.any(grid < lo) or np.any(grid > hi) or np.any(grid % 1 != 0):
            raise ValidationError(
                f"two_largest_sum candidates must be integers in {lo:g}..{hi:g} (the larger "
                f"of two values summing to {t2:g}, the smaller at least y_(3) = {y3:g})."
            )
    g0 = _truth_index(grid, y1, column)
    c1 = np.repeat(y[rec][None, :], grid.size, axis=0)
    c2 = np.repeat(y[rec2][None, :], grid.size, axis=0)
    c1[:, j], c2[:, j] = grid, t2 - grid
    log_pi, lam = state.params(idx)
    logp_rec = pk.record_loglik(c1, log_pi, lam) + pk.record_loglik(c2, log_pi, lam)
    L = _loglik.dataset_loglik(state, datasets, idx, memberships, kept)
    delta = cand_ll = None
    warns: list[str] = []
    if state.model_class == "O":
        cand_ll = pw.pair_dataset_loglik(state, (rec, rec2), (c1, c2), datasets, idx,
                                         memberships, kept)
        delta = _delta(cand_ll, g0, warns)
    return LargestValueLikelihood(
        column=column, record=rec, second_largest=y2, candidates=grid, g0=g0,
        model_class=state.model_class, logp_rec=logp_rec, L=L, delta=delta,
        loglik_candidates=cand_ll,
        memberships=(_loglik.membership_mode(state, memberships)
                     if isinstance(memberships, (str, type(None))) else "user"),
        warnings=warns, scenario="two_largest_sum", second_record=rec2, pair_total=t2,
    )


def _delta(cand_ll: np.ndarray, g0: int, warns: list[str]) -> np.ndarray:
    """Class-O ``delta = ℓ(y*) − ℓ(truth)`` with the conventions of ``own_record_delta``."""
    truth = cand_ll[:, :, g0]
    with np.errstate(invalid="ignore"):
        delta = cand_ll - truth[:, :, None]
    delta[np.isneginf(cand_ll) & np.isneginf(truth)[:, :, None]] = 0.0
    delta[np.isneginf(truth)[:, :, None] & np.isfinite(cand_ll)] = np.inf
    if np.any(np.isneginf(truth)):
        warns.append("TRUTH_ZERO_LIKELIHOOD")
    return delta
