"""Wei & Reiter's (2016) largest-value intruder.

See :doc:`/methods/attribute` (Intruders of the largest value).
"""

from __future__ import annotations

import numpy as np

from bayes_risk._numeric import logsumexp, normalise_log
from bayes_risk.attribute.estimator import is_estimate
from bayes_risk.contract import LargestValuePieces, missing_members
from bayes_risk.exceptions import ValidationError

__all__ = ["largest_value_posterior", "constraint_term"]


def largest_value_posterior(
    pieces: LargestValuePieces, prior: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Posterior of ``Y_(1)j`` over the candidates with the estimator of Hu 2019 §3.2.5.

    Parameters
    ----------
    pieces : LargestValuePieces
        From the model, e.g. ``PoissonMixture.largest_value_loglik(column, datasets, ...)``.
    prior : array (G,), optional
        Intruder prior weights on the candidates (default uniform; renormalised).

    Returns
    -------
    (post [G], loglik [G])
        ``post`` is ``nan`` everywhere if every candidate has zero likelihood.

    Raises
    ------
    ValidationError
        When ``pieces`` lacks a piece, or for a bad ``prior``.
    """
    if not isinstance(pieces, LargestValuePieces):
        raise ValidationError(
            "pieces must hold the largest-value likelihood pieces "
            f"(bayes_risk.contract.LargestValuePieces); {type(pieces).__name__} lacks "
            f"{missing_members(pieces, LargestValuePieces)}."
        )
    logr = pieces.logp_rec - pieces.logp_rec[:, [pieces.g0]]
    if pieces.model_class == "P":
        loglik = is_estimate(logr[None], pieces.L)["loglik"][0]
    else:
        # L + delta without the inf - inf ambiguity: pass the candidate likelihoods as "delta"
        # on top of L = 0
        zero = np.zeros_like(pieces.L)
        loglik = is_estimate(logr[None], zero, delta=pieces.loglik_candidates[None])["loglik"][0]
    cons = getattr(pieces, "constraint_loglik", None)
    if cons is not None:
        loglik = loglik + constraint_term(logr, np.asarray(cons, dtype=np.float64))
    logprior = np.zeros(loglik.size)
    if prior is not None:
        w = np.asarray(prior, dtype=np.float64)
        if w.shape != loglik.shape or np.any(w < 0) or not w.sum() > 0:
            raise ValidationError(
                f"prior must be {loglik.size} non-negative weights with a positive sum."
            )
        with np.errstate(divide="ignore"):
            logprior = np.log(w / w.sum())
    return normalise_log(loglik + logprior), loglik


def constraint_term(logr: np.ndarray, constraint: np.ndarray) -> np.ndarray:
    """``Σ_c log Σ_h q_h(y*) exp(constraint[h, c, y*])``, ``q_h`` self-normalised over draws.

    Parameters
    ----------
    logr : array (H, G)
        Log importance ratios of the candidates (``logp_rec − logp_rec[:, g0]``).
    constraint : array (H, C, G)
        Per draw, log-probability of each piece of knowledge given the candidate.

    Returns
    -------
    array (G,)
        ``-inf`` for a candidate no draw supports.

    Examples
    --------
    Two equally weighted draws giving a constraint probability 0.2 and 0.6: log 0.4.

    >>> round(float(np.exp(constraint_term(np.zeros((2, 1)), np.log([[[0.2]], [[0.6]]]))[0])), 12)
    0.4
    """
    logr = np.asarray(logr, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        logq = logr - logsumexp(logr, axis=0)[None, :]
    logq = np.where(np.isnan(logq), -np.inf, logq)
    return logsumexp(logq[:, None, :] + constraint, axis=0).sum(axis=0)
