"""The Bayes factor of the true values and the share with evidence (issue 63, item 3): hand
values, the likelihood form it equals, its independence of the prior's mass on the truth, and
its draw-bootstrap Monte Carlo interval."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from scipy.special import logsumexp

from bayes_risk.attribute import EstimatorSpec, attribute_risk, with_prior
from bayes_risk.attribute.uncertainty import file_uncertainty
from bayes_risk.data import infer_schema
from bayes_risk.exceptions import ImportanceSamplingWarning, ValidationError
from bayes_risk.models import ArrayModel
from bayes_risk.results.attribute import bayes_factor, hrw_summary

LEVELS = 4


def _frame(values):
    return pd.DataFrame({"y": pd.Categorical(values, categories=list(range(LEVELS)))})


def _loglik(records, theta):
    y = records["y"].astype(int).to_numpy()
    return np.log(np.asarray(theta)[:, y])  # [H, n]


@pytest.fixture(scope="module")
def result():
    """A four-level column of 30 records, multinomial with a Dirichlet(1) prior: draws of the
    exact posterior, two released datasets from two of them (importance sampling is well behaved
    at this size), the uniform prior over the four levels."""
    rng = np.random.default_rng(4)
    y = rng.choice(LEVELS, size=30, p=[0.55, 0.25, 0.15, 0.05])
    post = 1.0 + np.bincount(y, minlength=LEVELS)
    syn = [_frame(rng.choice(LEVELS, size=30, p=t)) for t in rng.dirichlet(post, size=2)]
    theta = np.random.default_rng(5).dirichlet(post, size=400)
    orig = _frame(y)
    model = ArrayModel(_loglik, theta, infer_schema(orig, synthesized=["y"]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ImportanceSamplingWarning)
        return attribute_risk(orig, syn, model=model, random_seed=3, progressbar=False,
                              estimator=EstimatorSpec(kind="is", bootstrap=100))


def _log_bf(loglik, logprior, g0):
    """``log BF = ℓ_0 − log Σ_{g≠0} e^{ℓ_g} P(g) / (1 − P(0))``: the likelihood form."""
    lp = logprior - logsumexp(logprior)
    rest = np.delete(np.arange(loglik.size), g0)
    return loglik[g0] - logsumexp(loglik[rest] + lp[rest] - logsumexp(lp[rest]))


def test_hand_values_and_edges():
    # uniform prior over 35 candidates: (G − 1) p / (1 − p)
    assert bayes_factor(0.1, 1 / 35) == pytest.approx(34 * 0.1 / 0.9, rel=1e-12)
    assert bayes_factor(1 / 35, 1 / 35) == pytest.approx(1.0, rel=1e-12)
    # a release that makes the truth less likely than before: below 1
    assert bayes_factor(0.01, 1 / 35) == pytest.approx(34 * 0.01 / 0.99, rel=1e-12)
    # certainty after the release: infinite; a prior that decides alone: 1; no figure: nan
    out = bayes_factor([1.0, 1.0, 0.0, np.nan], [0.5, 1.0, 0.0, 0.2])
    assert out[0] == np.inf and out[1] == 1.0 and out[2] == 1.0 and np.isnan(out[3])
    # G = 2, where a ratio p / π could never reach 3 (at most 2), the odds can
    assert bayes_factor(0.8, 0.5) == pytest.approx(4.0, rel=1e-12)


def test_summary_share_counts_factors_at_or_above_the_evidence_factor():
    p = np.array([0.02, 0.25, 0.5, 0.9, np.nan])  # with π = 0.25: factors 0.061, 1, 3, 27
    pi = np.full(5, 0.25)
    kw = dict(rank_min=np.ones(5), is_top=np.ones(5), top_share=np.ones(5), prior_p_true=pi)
    s = hrw_summary(p, evidence_factor=2.9, **kw)
    assert s["n_records"] == 4 and s["prop_evidence"] == 0.5 and s["evidence_factor"] == 2.9
    assert hrw_summary(p, evidence_factor=27.5, **kw)["prop_evidence"] == 0.0
    q = s["bayes_factor_quantiles"]
    assert q["0%"] == pytest.approx(0.02 / 0.98 * 3) and q["100%"] == pytest.approx(27.0)
    assert q["50%"] == pytest.approx(3.0)  # the order statistic at or above the median
    assert s["mean_prior_p_true"] == 0.25
    assert "prop_evidence" not in hrw_summary(p, rank_min=np.ones(5), is_top=np.ones(5),
                                              top_share=np.ones(5))
    with pytest.raises(ValidationError, match="evidence_factor must be a Bayes factor above 1"):
        hrw_summary(p, evidence_factor=1.0, **kw)


def test_result_figures_equal_the_likelihood_form(result):
    """Per record, the factor from p_true and the prior equals the likelihood form; the summary's
    share at any factor is the share of those."""
    g0 = result._g0()
    pi = result.prior_p_true()
    np.testing.assert_allclose(pi, 1 / LEVELS, rtol=1e-12)
    log_bf = np.array([_log_bf(ll, lp, g) for ll, lp, g in
                       zip(result.loglik, result.logprior, g0, strict=True)])
    bf = bayes_factor(result.records["p_true"].to_numpy(), pi)
    np.testing.assert_allclose(np.log(bf), log_bf, rtol=0, atol=1e-9)
    ok = (result.records["flag_codes"] == "").to_numpy()
    for k in (1.5, 3.0):
        d = result.to_dict(evidence_factor=k)
        assert d["unflagged"]["prop_evidence"] == pytest.approx(np.mean(log_bf[ok] >= np.log(k)))
        assert d["all"]["prop_evidence"] == pytest.approx(np.mean(log_bf >= np.log(k)))
        assert d["all"]["evidence_factor"] == k
    # the shares differ between the two factors here, so the test tells them apart
    assert np.mean(log_bf >= np.log(1.5)) > np.mean(log_bf >= np.log(3.0))


def test_the_factor_does_not_depend_on_the_prior_mass_on_the_truth(result):
    """A truth-weighted prior changes p_true and the prior's mass on the truth, not the
    alternatives' relative weights: every Bayes factor, hence the share, is unchanged."""
    lean = with_prior(result, prior="truth-weighted:4")
    np.testing.assert_allclose(lean.prior_p_true(), 4 / (LEVELS + 3), rtol=1e-12)
    assert not np.allclose(lean.records["p_true"], result.records["p_true"])
    np.testing.assert_allclose(
        bayes_factor(lean.records["p_true"].to_numpy(), lean.prior_p_true()),
        bayes_factor(result.records["p_true"].to_numpy(), result.prior_p_true()), rtol=1e-9)
    assert lean.to_dict()["all"]["prop_evidence"] == result.to_dict()["all"]["prop_evidence"]


def test_monte_carlo_interval_of_the_share_recomputed_by_hand(result):
    out = file_uncertainty(result, level=0.9, evidence_factor=1.5)
    assert out["evidence_factor"] == 1.5
    keep = np.flatnonzero((result.records["flag_codes"] == "").to_numpy())
    g0 = result._g0()
    # each record's replicates of log BF = logit p_true − logit P(truth), moved by twice their
    # mean's distance from the estimate (the bias-corrected replicates of p_true)
    hits = []
    for i in keep:
        lbf = np.array([_log_bf(result._boot_loglik[i][b], result.logprior[i], g0[i])
                        for b in range(out["bootstrap"])])
        est = _log_bf(result.loglik[i], result.logprior[i], g0[i])
        hits.append(lbf - 2 * (np.mean(lbf) - est) >= np.log(1.5))
    shares = np.mean(hits, axis=0)
    assert out["mc_interval_90"]["prop_evidence"] == pytest.approx(
        np.quantile(shares, [0.05, 0.95]).tolist(), abs=1e-12)
    assert out["mc_se"]["prop_evidence"] == pytest.approx(np.std(shares, ddof=1), rel=1e-9)
    assert 0 < out["mc_se"]["prop_evidence"]  # the bootstrap moves records across the factor
    # the result's summary carries the interval at the factor asked, computed once per factor
    assert result.to_dict(evidence_factor=1.5)["mc_uncertainty"] == out
    assert result.to_dict()["mc_uncertainty"]["evidence_factor"] == 3.0
    with pytest.raises(ValidationError, match="evidence_factor must be a Bayes factor above 1"):
        file_uncertainty(result, evidence_factor=0.9)


def test_the_record_table_carries_the_prior_and_the_factor(result):
    """``records.csv`` (``to_dataframe()``): ``prior_p_true`` and ``bayes_factor`` after
    ``baseline``; :attr:`records` itself is unchanged."""
    df = result.to_dataframe()
    cols = list(df.columns)
    assert cols[cols.index("baseline") + 1:cols.index("baseline") + 3] == [
        "prior_p_true", "bayes_factor"]
    assert "bayes_factor" not in result.records.columns
    np.testing.assert_allclose(df["prior_p_true"], 1 / LEVELS, rtol=1e-12)
    np.testing.assert_allclose(df["bayes_factor"],
                               (LEVELS - 1) * df["p_true"] / (1 - df["p_true"]), rtol=1e-9)
