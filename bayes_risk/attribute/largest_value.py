"""Wei & Reiter's (2016) largest-value intruder.

See :doc:`/methods/attribute` (Intruders of the largest value).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import numpy as np

from bayes_risk._constraints import Interval, checked
from bayes_risk._numeric import logsumexp, normalise_log
from bayes_risk._specs import argument_checks, cli_option
from bayes_risk.attribute.estimator import is_estimate
from bayes_risk.attribute.specs import DEFAULT_DELTA, LARGEST_VALUE_SCENARIOS
from bayes_risk.contract import LargestValuePieces, missing_members
from bayes_risk.exceptions import ValidationError, arg_name, on_command_line

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["largest_value_risk", "largest_value_posterior", "constraint_term"]


def largest_value_risk(
    model: Any,
    original: pd.DataFrame,
    synthetic: Any,
    column: Annotated[str, cli_option(
        "--column", "the magnitude column of the largest-value scenarios", metavar="COL")],
    *,
    scenario: str = "largest_value",
    upper: Annotated[float | None, cli_option(
        "--upper", "upper end of the candidate grid [y(2), U] of the largest value (default 1.5 "
        "times the largest value; largest-value and second-largest only)", type=float,
        metavar="U")] = None,
    total_known: Annotated[bool, cli_option(
        "--total-known", "second-largest: the intruder also knows the column total",
        action="store_true")] = False,
    delta: Annotated[float, cli_option(
        "--delta", "largest-value scenarios: report the posterior probability within D times the "
        f"largest value of it (default {DEFAULT_DELTA}); --relative-difference: a relative "
        "difference at most D is a disclosure", type=float, metavar="D")
        | checked(Interval(float, 0, closed="neither"))] = DEFAULT_DELTA,
    allow_other_model: bool = False,
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Wei & Reiter's (2016) intruder of the largest value of ``column``, end to end.

    Parameters
    ----------
    model : fitted model
        A model with the largest-value likelihood (``PoissonMixture``).
    original : DataFrame
        The confidential data (kept by the model unless fitted in marginal mode).
    synthetic : SyntheticData
        The release.
    column : str
        The magnitude column.
    scenario : {"largest_value", "second_largest", "two_largest_sum"}
        What the intruder knows (:doc:`/methods/attribute`, Intruders of the largest value).
    upper : float, optional
        Upper end of the candidate grid ``[y(2), upper]`` (default ``ceil(1.5 y(1))``; not
        with ``two_largest_sum``).
    total_known : bool
        ``second_largest``: the intruder also knows the column total.
    delta : float
        Half-width of the relative interval of ``P_interval`` (> 0).
    allow_other_model : bool
        Accept a release the model did not make.

    Returns
    -------
    (table, summary)
        ``table``: per candidate value, ``loglik``, ``posterior`` and ``is_truth``;
        ``summary``: the record, the truth, ``p_true`` and the figures of
        :func:`~bayes_risk.attribute.summaries.largest_value`.

    Raises
    ------
    ValidationError
        A ``delta`` that is not a positive number, or a model without the likelihood.
    """
    import pandas as pd

    from bayes_risk._constraints import Options, check_value
    from bayes_risk.attribute.summaries import largest_value
    from bayes_risk.contract import capabilities

    check_value(scenario, Options(LARGEST_VALUE_SCENARIOS, listed=True), "scenario")
    delta = check_value(delta, argument_checks(largest_value_risk)["delta"],
                        arg_name("delta"))
    if not capabilities(model).has("largest_value"):
        raise ValidationError(
            f"{arg_name('scenario', repr(scenario), cli=scenario.replace('_', '-'))} needs a "
            "model with the largest-value likelihood (a Poisson-mixture model, "
            + ("'bayes-risk fit --method poisson-mixture'" if on_command_line()
               else "fit_model(original, 'poisson-mixture')")
            + f"); {type(model).__name__} has none.", code="MODEL_UNSUITED")
    kw: dict[str, Any] = {}
    if scenario != "two_largest_sum":
        top = float(original[column].max()) if column in original.columns else float("nan")
        kw["upper"] = upper if upper is not None else float(np.ceil(1.5 * top))
    if getattr(model, "data_", None) is None:
        kw["data"] = original  # an MP model in marginal mode does not keep the data
    pieces = model.largest_value_loglik(
        column, synthetic, scenario="worst_case" if scenario == "largest_value" else scenario,
        total_known=total_known, allow_other_model=allow_other_model, **kw,
    )
    post, loglik = largest_value_posterior(pieces)
    truth = float(pieces.candidates[pieces.g0])
    table = pd.DataFrame({column: pieces.candidates, "loglik": loglik, "posterior": post,
                          "is_truth": np.arange(post.size) == pieces.g0})
    summary = {
        "column": column,
        "record": int(pieces.record),
        "second_record": None if pieces.second_record is None else int(pieces.second_record),
        "largest_value": truth,
        "second_largest": float(pieces.second_largest),
        "n_candidates": int(post.size),
        "p_true": float(post[pieces.g0]),
        "delta": delta,
        **largest_value(post, pieces.candidates, truth, delta=delta),
        "total_known": bool(total_known),
        "memberships": pieces.memberships,
        "warnings": list(pieces.warnings),
    }
    return table, summary


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
