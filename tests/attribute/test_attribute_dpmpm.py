"""Exact checks of the attribute-risk engine on DPMPM (issue 5 "Correctness" list).

With ``K = 1`` the DPMPM is a product of independent Dirichlet–multinomials: its Gibbs draws are
exact i.i.d. posterior draws ``φ_j ~ Dir(1 + c_j(y))`` and, for the marginal (full-synthesis)
mode, ``p(Z_(l) | y*, y_{-i}) = Π_j B(1 + c_j(y*) + s_jl) / B(1 + c_j(y*))`` (ordered sequence of
the synthetic column ``j``; ``c_j(y*)`` counts the confidential column with record ``i`` set to
``y*``; ``s_jl`` counts the synthetic column). This is exactly what refitting the model on the
data with ``y_i := y*`` gives (conjugacy), so it serves both as the closed-form check and as the
refit check — without the Monte Carlo error of an actual refit.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from scipy.special import gammaln

from bayes_risk.attribute import EstimatorSpec, attribute_risk
from bayes_risk.attribute.candidates import one_variable_codes
from bayes_risk.data import make_acs_like
from bayes_risk.data.validate import encode
from bayes_risk.exceptions import ImportanceSamplingWarning
from bayes_risk.models import Sampling

dpmpm = pytest.importorskip("bayes_risk.models.dpmpm.dpmpm")

COLS = ["SEX", "AGE", "RACE", "EDUC"]
RECORDS = [0, 1, 2]


@pytest.fixture(scope="module")
def k1_setup():
    df = make_acs_like(200, random_seed=3)[COLS]
    model = dpmpm.DPMPM(n_components=1, sampling=Sampling(tune=20, draws=2000), progressbar=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(df, random_seed=11)
    syn = model.synthesize(2, random_seed=12)
    return df, model, syn


def _lmvbeta(a: np.ndarray) -> np.ndarray:
    return gammaln(a).sum(axis=-1) - gammaln(a.sum(axis=-1))


def exact_loglik(df: pd.DataFrame, schema, syn, record: int) -> tuple[np.ndarray, np.ndarray]:
    """Closed-form ``log p(Z | y*, y_{-i})`` (up to a constant) over the one-variable set."""
    codes = encode(df, schema, COLS)
    d = [schema[c].n_levels for c in COLS]
    cands = one_variable_codes(codes[record][None, :], d)[0]  # [G, p]
    out = np.zeros(cands.shape[0])
    for j, c in enumerate(COLS):
        base = np.bincount(codes[:, j], minlength=d[j]).astype(float)
        base[codes[record, j]] -= 1
        cnt = base[None, :] + np.eye(d[j])[cands[:, j]]  # c_j(y*) for each candidate
        for z in syn:
            s = np.bincount(encode(z, schema, [c])[:, 0], minlength=d[j]).astype(float)
            out += _lmvbeta(1.0 + cnt + s[None, :]) - _lmvbeta(1.0 + cnt)
    return out, cands


def _softmax(a):
    e = np.exp(a - a.max())
    return e / e.sum()


def test_k1_closed_form_through_cli(k1_setup, tmp_path):
    """``bayes-risk attribute`` on a saved K = 1 DPMPM: p_true matches the closed form.

    Tolerance: 4 × the draw-bootstrap standard error of p_true (estimated from the bootstrap
    5 %–95 % range / 3.29) plus 0.002 for the bootstrap's own noise.
    """
    df, model, syn = k1_setup
    model.save(tmp_path / "model")
    syn.save(tmp_path / "syn")
    df.to_csv(tmp_path / "orig.csv", index=False)
    from bayes_risk.cli import main

    rc = main(
        [
            "attribute",
            "--model",
            str(tmp_path / "model"),
            str(tmp_path / "orig.csv"),
            str(tmp_path / "syn"),
            "--records",
            "0-2",
            "--random-seed",
            "1",
            "--quiet",
            "--out",
            str(tmp_path / "out"),
        ]
    )
    assert rc == 0
    rec = pd.read_csv(tmp_path / "out" / "records.csv")
    assert rec["record"].tolist() == [0, 1, 2]  # 0-based, as --records
    for k, i in enumerate(RECORDS):
        ll, _ = exact_loglik(df, model.schema_, syn, i)
        p_exact = _softmax(ll)[0]  # truth is candidate 0
        se = (rec.loc[k, "boot_p_true_q95"] - rec.loc[k, "boot_p_true_q05"]) / 3.29
        assert rec.loc[k, "p_true"] == pytest.approx(p_exact, abs=4 * se + 0.002)


def test_refit_check_both_estimators(k1_setup, record_property):
    """Differences ``log p(Z | y*) − log p(Z | y_i)`` against the exact (refit) values.

    Stabilised: within 4 bootstrap SEs + 0.01 nats for every candidate of 3 records. The
    published estimator (SPEC §2.6) is only recorded: its error is dominated by the single draw
    that best explains each whole synthetic file.
    """
    df, model, syn = k1_setup
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ImportanceSamplingWarning)
        st = attribute_risk(df, syn, model=model, records=RECORDS, random_seed=5, progressbar=False)
        ist = attribute_risk(
            df, syn, model=model, records=RECORDS, random_seed=5,
            progressbar=False,
            estimator=EstimatorSpec(kind="is", bootstrap=0))
    is_err = []
    for k, i in enumerate(RECORDS):
        ll, cands = exact_loglik(df, model.schema_, syn, i)
        exact = ll - ll[0]
        np.testing.assert_array_equal(st.candidates[k].values.astype(int), cands)
        est = st.loglik[k] - st.loglik[k][0]
        boot = st._boot_loglik[k] - st._boot_loglik[k][:, :1]
        se = np.std(boot, axis=0, ddof=1)
        assert np.all(np.abs(est - exact) <= 4 * se + 0.01), (i, est - exact, se)
        is_err.append(float(np.max(np.abs(ist.loglik[k] - ist.loglik[k][0] - exact))))
    # reported, not asserted: how far the published estimator is from the exact values here
    deg = ist.to_dict()["published_estimator"]["share_degenerate_triples"]
    record_property("is_max_abs_error_nats", is_err)
    record_property("is_share_degenerate_triples", deg)
    assert np.all(np.isfinite(is_err))
