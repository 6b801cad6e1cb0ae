"""The largest share one posterior draw carries in a sum a record's estimate uses
(``max_weight_share``) is a diagnostic of its own, flagged ``DOMINATED_SUM`` above 0.9 whatever
Pareto k̂ says, for the stabilised estimator as for the published one (issue 85).

The model is a categorical column with a Dirichlet posterior given as arrays of draws
(``ArrayModel``); one base draw puts almost no mass on level ``a``, so the ratio
``r_h = θ_b / θ_a`` of a record of level ``a`` is huge under that draw alone: the mean
``Σ_h r_h`` is that one draw, and its share is computed here from the draws by hand.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from bayes_risk import ArrayModel, attribute_risk
from bayes_risk.attribute import EstimatorSpec
from bayes_risk.data import infer_schema

LEVELS = ["a", "b", "c"]
Y = np.array([0, 0, 1, 2, 1, 0, 2, 1, 1, 2])
Z = [np.array([0, 1, 1, 0, 2, 0, 1, 1, 2, 2]), np.array([0, 0, 2, 1, 0, 1, 0, 2, 1, 1])]
H = 400


def _frame(codes):
    return pd.DataFrame({"y": pd.Categorical(np.asarray(LEVELS)[codes], categories=LEVELS)})


def _loglik(records, theta):
    return np.log(np.asarray(theta))[:, records["y"].cat.codes.to_numpy()]


@pytest.fixture(scope="module")
def draws():
    rng = np.random.default_rng(2)
    cy = np.bincount(Y, minlength=3)
    base = rng.dirichlet(1.0 + cy, size=H)
    base[7] = [1e-9, 0.5, 0.5 - 1e-9]  # one draw all but excludes level a
    aug = [rng.dirichlet(1.0 + cy + np.bincount(z, minlength=3), size=H) for z in Z]
    return base, aug


def _result(draws, kind):
    base, aug = draws
    schema = infer_schema(_frame(Y), synthesized=["y"])
    model = ArrayModel(_loglik, base, schema)
    est = EstimatorSpec(kind=kind, augmented=[model.with_draws(a) for a in aug],
                        bootstrap=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return attribute_risk(_frame(Y), [_frame(z) for z in Z], model=model,
                              progressbar=False, estimator=est, random_seed=1)


def test_the_published_estimators_share_is_its_largest_omega(draws):
    """For the published estimator the sums are its ω sums: the share is ``max_omega_max``."""
    rec = _result(draws, "is").records
    np.testing.assert_allclose(rec["max_weight_share"], rec["max_omega_max"], rtol=1e-12)
    dominated = rec["max_weight_share"] > 0.9
    assert (rec["flag_codes"].str.contains("DOMINATED_SUM") == dominated).all()


def test_one_dominating_draw_is_flagged(draws):
    """Records of level a: one base draw carries more than 90 % of the mean ratio of each
    other candidate (by hand: ``max_h r_h / Σ_h r_h``); the record table reports that share
    and flags DOMINATED_SUM, whatever k̂ says. Records of other levels have no such draw and
    are not flagged for it. (On 7c1914f3 the stabilised estimator had neither the column nor
    the flag.)"""
    base, aug = draws
    rec = _result(draws, "stabilised").records
    assert "max_weight_share" in rec.columns
    r = base[:, 1] / base[:, 0]  # candidate b of a record of level a
    share = r.max() / r.sum()
    assert share > 0.99
    for i in np.flatnonzero(Y == 0):
        assert rec.loc[i, "max_weight_share"] > 0.9
        assert "DOMINATED_SUM" in rec.loc[i, "flag_codes"]
        assert rec.loc[i, "max_weight_share"] == pytest.approx(
            max(share, (base[:, 2] / base[:, 0]).max() / (base[:, 2] / base[:, 0]).sum(),
                *(np.max(a[:, g] / a[:, 0]) / np.sum(a[:, g] / a[:, 0])
                  for a in aug for g in (1, 2))), rel=1e-9)
    for i in np.flatnonzero(Y != 0):
        assert rec.loc[i, "max_weight_share"] < 0.9
        assert "DOMINATED_SUM" not in rec.loc[i, "flag_codes"]
