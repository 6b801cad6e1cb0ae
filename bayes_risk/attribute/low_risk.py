"""Wang & Reiter's (2012) low-risk intruder (``scenario="empty"``).

See :doc:`/methods/attribute` (The low-risk intruder).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from bayes_risk.attribute.candidates import CandidateSet
from bayes_risk.attribute.missing import missing_truth
from bayes_risk.attribute.prepare import _check_model, _prepare_data
from bayes_risk.attribute.priors import Prior, PriorInputs, evaluate_prior, parse_prior
from bayes_risk.attribute.record_table import point_summaries, set_point_columns
from bayes_risk.attribute.specs import scenario_arg
from bayes_risk.attribute.summaries import low_risk_posterior
from bayes_risk.data.validate import encode
from bayes_risk.exceptions import ValidationError, arg_name
from bayes_risk.results.attribute import AttributeRiskResult
from bayes_risk.warning_codes import LOW_RISK_FLAG

__all__ = ["low_risk_attribute_risk", "check_low_risk_prior"]


def check_low_risk_prior(prior: Prior) -> Prior:
    """``prior`` if the low-risk intruder can take it (uniform only)."""
    if prior.label() != "uniform":
        raise ValidationError(
            f"{scenario_arg('empty')} takes the uniform prior only (got "
            f"{arg_name('prior', repr(prior.label()), cli=prior.label())}): the record's "
            "synthetic values are draws from the low-risk intruder's posterior (Wang & Reiter "
            "2012), which already contains the prior."
        )
    return prior


def low_risk_attribute_risk(
    model: Any, original: pd.DataFrame, synthetic: Any,
    records: Sequence[int] | np.ndarray | None = None, *, prior: Any = "uniform",
) -> AttributeRiskResult:
    """Attribute risk for the Wang & Reiter (2012) low-risk intruder (``scenario="empty"``).

    Parameters
    ----------
    model : fitted synthesis model
        Supplies the schema; no likelihood is evaluated.
    original, synthetic, records
        As in :func:`~bayes_risk.attribute.attribute_risk`.
    prior : "uniform"
        Only the uniform prior (the synthetic values already contain the prior).

    Returns
    -------
    AttributeRiskResult
        With warning ``APPROX_LOW_RISK``.

    Raises
    ------
    ValidationError
        For a prior other than uniform, and the input errors of ``attribute_risk``.
    """
    _check_model(model)
    pr = check_low_risk_prior(parse_prior(prior))
    data = _prepare_data(model, original, synthetic, records, "empty", None)
    _refuse_missing_truth(data)
    syn_values = _synthetic_values(data)  # [m, n, q]
    recs = [int(i) for i in data.positions]
    cands, loglik = [], []
    for i in recs:
        values, post, _ = low_risk_posterior(syn_values[:, i, :], data.values[i])
        with np.errstate(divide="ignore"):
            ll = np.log(post)
        cands.append(CandidateSet(columns=tuple(data.vary), values=values, g0=0))
        loglik.append(ll)
    g0 = np.zeros(len(recs), dtype=np.int64)
    pinp = PriorInputs(
        records=np.asarray(recs, dtype=np.int64), values=[c.values for c in cands], g0=g0,
        columns=tuple(data.vary), categorical=data.is_cat, others=data.values,
    )
    logprior, _ = evaluate_prior(pr, pinp)
    log_post, rec = point_summaries(loglik, logprior, g0)
    df = pd.DataFrame({"record": recs, "G": [c.size for c in cands]})
    set_point_columns(df, rec)
    df["baseline"] = 1.0 / df["G"]
    df["n_synthetic_distinct"] = [int(np.sum(np.isfinite(ll[1:]))) for ll in loglik]
    df["khat_max"] = np.nan  # no importance sampling: no diagnostics
    df["flag_codes"] = ""
    settings = {
        "estimator": "synthetic_values", "model_class": model.model_class, "scenario": "empty",
        "known": [], "columns": list(data.vary),
        "candidates": "truth and the record's synthetic values", "prior": pr.label(), "H": 0,
        "m": data.m, "bootstrap": 0, "compat": None,
        "source": "Wang & Reiter (2012), low-risk scenario: the record's m synthetic values "
        "stand in for the intruder's posterior",
    }
    return AttributeRiskResult(
        records=df, columns=tuple(data.vary), candidates=cands, loglik=loglik,
        logprior=logprior, log_post=log_post, diagnostics=[{} for _ in recs],
        warnings=[LOW_RISK_FLAG], settings=settings, schema=data.schema, prior=pr,
        _prior_inputs=pinp,
    )


def _refuse_missing_truth(data: Any) -> None:
    """Refuse records with a missing true value: it matches none of the synthetic values."""
    miss = missing_truth(data.values[data.positions], data.is_cat)
    if miss.any():
        r, j = (int(x[0]) for x in np.nonzero(miss))
        raise ValidationError(
            f"{scenario_arg('empty')}: column {data.vary[j]!r} is missing in record "
            f"{int(data.positions[r])} ({int(miss.any(axis=1).sum())} evaluated record(s) with "
            "a missing synthesized value); the low-risk intruder's posterior (the record's "
            "synthetic values) has no defined truth there. Leave those records out with "
            "records=.",
            code="MISSING_VALUES"
        )


def _synthetic_values(data: Any) -> np.ndarray:
    """``[m, n, q]`` codes or values of the varying columns in every released dataset."""
    out = np.empty((data.m, len(data.orig), len(data.vary)))
    for l, z in enumerate(data.datasets):
        for j, c in enumerate(data.vary):
            if data.is_cat[j]:
                out[l, :, j] = encode(z, data.schema, [c])[:, 0]
            else:
                out[l, :, j] = z[c].to_numpy(np.float64)
    return out
