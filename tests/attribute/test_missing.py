"""Attribute risk of records with missing synthesized values (user guide, Missing values).

A K = 1 DPMPM has a closed form (products of Dirichlet-multinomials, as in
``test_attribute_dpmpm``): integrating out record ``i``'s missing value of column ``j`` removes
the record from column ``j``'s counts, the same for every candidate, so only the other columns'
terms differ between candidates; candidates that would fill column ``j`` have probability 0
(the candidate set covers observed values only).
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from scipy.special import gammaln

from bayes_risk import ModelInfo
from bayes_risk.attribute import attribute_risk
from bayes_risk.attribute.candidates import one_variable_codes
from bayes_risk.data import make_acs_like
from bayes_risk.data.validate import encode
from bayes_risk.exceptions import ImportanceSamplingWarning, ValidationError
from bayes_risk.models import Sampling

dpmpm = pytest.importorskip("bayes_risk.models.dpmpm.dpmpm")

COLS = ["SEX", "AGE", "RACE", "EDUC"]
MISSING_COL = 2  # RACE of record 0 is missing


@pytest.fixture(scope="module")
def setup():
    df = make_acs_like(200, random_seed=3)[COLS].astype(object)
    df.loc[0, "RACE"] = None
    model = dpmpm.DPMPM(n_components=1, sampling=Sampling(tune=20, draws=2000), progressbar=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(df, random_seed=11)
    syn = model.synthesize(2, random_seed=12)
    return df, model, syn


def _lmvbeta(a):
    return gammaln(a).sum(axis=-1) - gammaln(a.sum(axis=-1))


def _exact(df, schema, syn, record):
    codes = encode(df, schema, COLS)  # -1: missing
    d = [schema[c].n_levels for c in COLS]
    cands = one_variable_codes(codes[record][None, :], d)[0]
    out = np.zeros(cands.shape[0])
    for j, c in enumerate(COLS):
        if codes[record, j] < 0:
            continue  # integrated out: the same term for every candidate
        obs = codes[:, j][codes[:, j] >= 0]
        base = np.bincount(obs, minlength=d[j]).astype(float)
        base[codes[record, j]] -= 1
        cnt = base[None, :] + np.eye(d[j])[cands[:, j]]
        for z in syn:
            s = np.bincount(encode(z, schema, [c])[:, 0], minlength=d[j]).astype(float)
            out += _lmvbeta(1.0 + cnt + s[None, :]) - _lmvbeta(1.0 + cnt)
    fills = (codes[record] < 0)[None, :] & (cands >= 0) & (cands != codes[record][None, :])
    out[fills.any(axis=1)] = -np.inf
    return out


def test_missing_value_integrated_out_k1_closed_form(setup):
    """Log-likelihood differences within 4 bootstrap SEs + 0.01 nats of the closed form."""
    df, model, syn = setup
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ImportanceSamplingWarning)
        res = attribute_risk(df, syn, model=model, records=[0, 1], random_seed=5, progressbar=False)
    for k, i in enumerate([0, 1]):
        exact = _exact(df, model.schema_, syn, i)
        est = res.loglik[k] - res.loglik[k][0]
        fin = np.isfinite(exact)
        np.testing.assert_array_equal(np.isfinite(est), fin)
        boot = res._boot_loglik[k] - res._boot_loglik[k][:, :1]
        se = np.std(boot[:, fin], axis=0, ddof=1)
        assert np.all(np.abs(est[fin] - (exact - exact[0])[fin]) <= 4 * se + 0.01)
    # the truth of record 0 has RACE missing (decoded as missing, not as a level)
    assert pd.isna(res.candidates[0].frame(model.schema_)["RACE"].iloc[0])
    assert np.isfinite(res.records["p_true"].to_numpy()).all()


class _NoImputation:
    """A model that declares it does not integrate missing values out (ModelInfo.imputes
    False, also the default of a model declaring nothing)."""

    info = ModelInfo()


def test_models_that_cannot_integrate_out_are_refused():
    from bayes_risk.attribute.missing import check_missing_truth

    values = np.array([[0.0, 1.5], [1.0, np.nan], [-1.0, 2.0]])
    is_cat = np.array([True, False])
    # DPMPM integrates out; any other model is refused, naming the column
    with pytest.raises(ValidationError, match="'y'.*record 1.*cannot integrate out"):
        check_missing_truth(_NoImputation(), ["x", "y"], values, is_cat, np.array([0, 1]))
    with pytest.raises(ValidationError, match="'x'.*record 2"):
        check_missing_truth(_NoImputation(), ["x", "y"], values, is_cat, np.array([2]))
    check_missing_truth(_NoImputation(), ["x", "y"], values, is_cat, np.array([0]))  # complete
    # a missing unsynthesized value of an evaluated record is named too
    orig = pd.DataFrame({"x": [0, 1, 2], "y": [1.5, 0.0, 2.0], "u": [1.0, 2.0, np.nan]})
    with pytest.raises(ValidationError, match="'u'.*record 2"):
        check_missing_truth(_NoImputation(), ["x", "y"], values[:, :] * 0, is_cat, np.array([2]),
                            orig)
    # each column with its own count (SD2011: income -8 in 562 records, nociga -8 in 3120, 3229
    # with either; the message said income was missing in 3229)
    with pytest.raises(ValidationError,
                       match=r"'x' is missing in 1 evaluated record\(s\) \(first: record 2\); "
                       r"also 'y' in 1 \(2 records in all\)"):
        check_missing_truth(_NoImputation(), ["x", "y"], values, is_cat, np.array([0, 1, 2]))
