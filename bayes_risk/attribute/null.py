"""What each attribute-risk summary would be if the release said nothing about the record.

The report reads the share of records ranked first, the mean rank, the share with evidence and
mean ``p_true`` against this null, never against ``1/G`` alone (issue 85: with candidates that
differ from the truth in one variable at a time, the truth ranks first only if its level wins in
every variable at once, so a release that says nothing about the record ranks it first with
probability ``∏_j 1/d_j``, of the order of 1e-4 for the ACS extract, not ``1/G``). See
:doc:`/methods/attribute`, "What a release that says nothing gives".

**The null.** The release carries no information about the record: the intruder's
posterior over its candidates is what it is, and the record's true values are independent of
it — a draw from the population, as the worst-case intruder knows it from every other record
(the other records' frequencies: the :class:`~bayes_risk.attribute.priors.Empirical` prior, a
kernel density for numeric columns). A release that only reproduces the population (a
synthesizer that learnt nothing of the record) gives figures inside this null; one that
points to the record's own values gives figures above it. The figures are computed from each
record's posterior over its candidates, conditionally on it:

* *One variable at a time* (every candidate differs from the truth in one variable): the
  truth's level in variable ``j`` is a draw from the other records' frequencies of the levels
  of ``j`` (given the record's other values), independently over the variables; with equal
  frequencies the truth ranks first with probability ``∏_j 1/d_j``. The truth ranks first iff
  its level has the largest posterior weight in every variable, so
  ``P(rank 1) = ∏_j P_j(top)``, and the rank is ``1 + Σ_j (levels of j above the truth's)``.
  ``p_true`` and the Bayes factor of a truth moved to other levels are those of the star of
  candidates around it, which the per-variable weights give when the likelihood factorises
  over the varied variables (exactly under a one-class model; otherwise an approximation,
  recorded in ``method``). The distribution over the levels' combinations is enumerated when
  there are at most :data:`ENUMERATE_MAX` combinations, else estimated from
  :data:`MC_DRAWS` draws (fixed seed: the same figures every time).
* *Any other candidate set*: the truth is a draw from the other records' frequencies of the
  candidates: each figure is the frequency-weighted mean over the candidates, exact when the
  candidate set does not move with the truth (every level of categorical columns); for grids
  centred on a numeric truth it treats the truth as one of its grid's points.

The Bayes factor of a hypothetical truth is the intruder's: its prior (``logprior``) gives the
prior odds.

The file level (:func:`bayes_risk.results._attribute_null.file_null`) treats the records as
independent under the null.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["ENUMERATE_MAX", "MC_DRAWS", "NULL_COLUMNS", "record_nulls", "result_null"]

#: combinations of the varied variables' levels enumerated exactly, per record (more: drawn)
ENUMERATE_MAX = 1 << 14
#: draws of the truth's levels per record beyond :data:`ENUMERATE_MAX` combinations
MC_DRAWS = 4096
#: relative tolerance of a tie of two posterior weights (as the record table's ``is_top``)
_TIE = 1e-9
#: the columns of :func:`record_nulls` (``_m3``: the third central moment, which the file
#: level's range needs: a record's null p_true is often near 0 with a rare large value)
NULL_COLUMNS = ("null_p_top", "null_rank_mean", "null_rank_var", "null_rank_m3",
                "null_p_true_mean", "null_p_true_var", "null_p_true_m3", "null_p_evidence")


def _same(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a == b) | (np.isnan(a) & np.isnan(b))


def _one_variable_blocks(values: np.ndarray, g0: int) -> list[np.ndarray] | None:
    """Per varied variable, the candidates that differ from the truth in it alone (the truth
    first); ``None`` when a candidate differs in more than one variable."""
    vals = np.asarray(values, dtype=np.float64)
    diff = ~_same(vals, vals[g0][None, :])
    n_diff = diff.sum(axis=1)
    others = np.flatnonzero(np.arange(len(vals)) != g0)
    if others.size == 0 or np.any(n_diff[others] != 1):
        return None
    var = np.argmax(diff[others], axis=1)
    return [np.concatenate(([g0], others[var == j])) for j in np.unique(var)]


def _normalised(lw: np.ndarray) -> np.ndarray:
    """Weights from log weights; equal weights when every one is zero (a combination no other
    record holds)."""
    top = np.max(lw)
    if not np.isfinite(top):
        return np.full(lw.shape, 1.0 / lw.size)
    w = np.exp(lw - top)
    return w / w.sum()


def _per_variable(lp: np.ndarray, lpr: np.ndarray, lq: np.ndarray, block: np.ndarray
                  ) -> tuple[float, float, float, float, np.ndarray, np.ndarray, np.ndarray]:
    """One variable of a one-variable star: P(top), the mean, variance and third central
    moment of the levels above a truth drawn from the population's weights ``q``, and per level
    its posterior ratio r = W / w - 1, the intruder's prior term u = 1 / pi - 1 and q."""
    w = np.exp(lp[block] - np.max(lp[block]))
    q = _normalised(lq[block])
    pi = _normalised(lpr[block])
    top = w >= w.max() * (1 - _TIE)
    above = (w[None, :] > w[:, None] * (1 + _TIE)).sum(axis=1).astype(np.float64)
    mean = float(q @ above)
    var = float(q @ (above - mean) ** 2)
    m3 = float(q @ (above - mean) ** 3)
    with np.errstate(divide="ignore"):
        r = w.sum() / w - 1.0
        u = 1.0 / pi - 1.0
    return float(q[top].sum()), mean, var, m3, r, u, q


def _star(lp: np.ndarray, lpr: np.ndarray, lq: np.ndarray, blocks: list[np.ndarray],
          factor: float, seed: int) -> tuple[float, ...]:
    parts = [_per_variable(lp, lpr, lq, b) for b in blocks]
    p_top = math.prod(p[0] for p in parts)
    rank_mean = 1.0 + sum(p[1] for p in parts)
    # the variables' counts above the truth are independent: their central moments add
    rank_var = sum(p[2] for p in parts)
    rank_m3 = sum(p[3] for p in parts)
    sizes = [len(b) for b in blocks]
    if math.prod(sizes) <= ENUMERATE_MAX:
        # every combination of the truth's levels, with its prior weight
        T = np.zeros(1)
        U = np.zeros(1)
        Q = np.ones(1)
        for *_, r, u, q in parts:
            T = (T[:, None] + r[None, :]).ravel()
            U = (U[:, None] + u[None, :]).ravel()
            Q = (Q[:, None] * q[None, :]).ravel()
    else:
        rng = np.random.default_rng([seed, 85])
        T = np.zeros(MC_DRAWS)
        U = np.zeros(MC_DRAWS)
        for *_, r, u, q in parts:
            k = rng.choice(len(q), size=MC_DRAWS, p=q)
            T += r[k]
            U += u[k]
        Q = np.full(MC_DRAWS, 1.0 / MC_DRAWS)
    # p_true of the truth at those levels: 1 / (1 + T); its prior mass 1 / (1 + U); the Bayes
    # factor [p/(1-p)] / [pi/(1-pi)] = U / T
    p = 1.0 / (1.0 + T)
    with np.errstate(divide="ignore", invalid="ignore"):
        bf = np.where(T > 0, U / T, np.where(U > 0, np.inf, 1.0))
    pm = float(Q @ p)
    return (p_top, rank_mean, rank_var, rank_m3, pm, float(Q @ (p - pm) ** 2),
            float(Q @ (p - pm) ** 3), float(Q @ (bf >= factor)))


def _exchangeable(lp: np.ndarray, lpr: np.ndarray, lq: np.ndarray, factor: float
                  ) -> tuple[float, ...]:
    """The truth as a draw from the population's weights over the candidates."""
    p = _normalised(lp)
    q = _normalised(lq)
    pi = _normalised(lpr)
    top = p >= p.max() * (1 - _TIE)
    order = np.sort(p)
    # candidates strictly above each one (ties within the tolerance are not above)
    above = len(p) - np.searchsorted(order, p * (1 + _TIE), side="right")
    rank = 1.0 + above
    rm = float(q @ rank)
    with np.errstate(divide="ignore", invalid="ignore"):
        odds_p = p / (1.0 - p)
        odds_pi = pi / (1.0 - pi)
        bf = np.where(odds_pi > 0, odds_p / odds_pi, 1.0)
    pm = float(q @ p)
    return (float(q[top].sum()), rm, float(q @ (rank - rm) ** 2), float(q @ (rank - rm) ** 3),
            pm, float(q @ (p - pm) ** 2), float(q @ (p - pm) ** 3), float(q @ (bf >= factor)))


def record_nulls(log_post: Sequence[np.ndarray], logprior: Sequence[np.ndarray],
                 population: Sequence[np.ndarray], candidates: Sequence[Any], *,
                 evidence_factor: float) -> dict[str, Any]:
    """Each record's figures under the null (the module's docstring).

    Parameters
    ----------
    log_post, logprior : sequence of ndarray
        Each record's log posterior and the intruder's log prior over its candidates.
    population : sequence of ndarray
        Each record's log weights of its candidates as the truth's position under the null (the
        other records' frequencies: ``Empirical().log_weights``).
    candidates : sequence of CandidateSet
        The records' candidate sets (``values``, ``g0``).
    evidence_factor : float
        The Bayes factor from which a record counts as given evidence.

    Returns
    -------
    dict
        The arrays of :data:`NULL_COLUMNS` (``nan`` for a record without candidates), and
        ``method``: ``"one variable at a time"`` or ``"exchangeable with the candidates"`` when
        every record's set is of that kind, else ``"mixed"``.
    """
    n = len(candidates)
    out = {k: np.full(n, np.nan) for k in NULL_COLUMNS}
    kinds = set()
    for i, (lp, lpr, lq, cs) in enumerate(zip(log_post, logprior, population, candidates,
                                                strict=True)):
        lp = np.asarray(lp, dtype=np.float64)
        if lp.size == 0 or not np.isfinite(lp).any():
            continue
        lpr = np.asarray(lpr, dtype=np.float64)
        lq = np.asarray(lq, dtype=np.float64)
        blocks = _one_variable_blocks(cs.values, int(cs.g0))
        if blocks is not None:
            figs = _star(lp, lpr, lq, blocks, evidence_factor, seed=i)
            kinds.add("one variable at a time")
        else:
            figs = _exchangeable(lp, lpr, lq, evidence_factor)
            kinds.add("exchangeable with the candidates")
        for k, v in zip(NULL_COLUMNS, figs, strict=True):
            out[k][i] = v
    out["method"] = kinds.pop() if len(kinds) == 1 else ("mixed" if kinds else "none")
    return out


def result_null(result: Any, *, evidence_factor: float) -> dict[str, Any]:
    """The null of an :class:`~bayes_risk.attribute.AttributeRiskResult`'s records (the
    result calls it on first use: :meth:`~bayes_risk.attribute.AttributeRiskResult.null`):
    :func:`record_nulls` with the other records' frequencies as the truth's position."""
    from bayes_risk.attribute.priors import Empirical

    inp = result._prior_inputs
    # the frequencies themselves (no pseudo-count: one would pull the truth's position towards
    # equal frequencies, and the null's p_true below that of a release that says nothing)
    with np.errstate(divide="ignore"):
        population = Empirical(alpha=0.0).log_weights(inp)
    return record_nulls(result.log_post, result.logprior, population, result.candidates,
                        evidence_factor=evidence_factor)
