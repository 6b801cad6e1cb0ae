"""Exact ground truth for the attribute-risk estimators: conjugate normal regression (issue 10.5).

``SequentialRegression`` draws a normal outcome's ``(β, σ)`` exactly under ``p(β, σ²) ∝ σ^{-2}``,
the limit of the conjugate normal–inverse-gamma prior. Then ``p(Z_(l) | Y_i = y*, y_{-i})`` is
closed form, a multivariate Student t (``_exact.normal_regression_log_predictive``), and the
intruder's exact posterior over a grid of candidates follows by Bayes' rule
(``_exact.normal_regression_p_true_exact``) — no enumeration, no MCMC. The package's posterior
draws are exact too, so what is compared is the estimators alone: their Monte Carlo error and any
bias of finite ``H``.

Design: ``n = 12`` records, an unsynthesized predictor ``x`` (one point of high leverage) and a
synthesized normal outcome ``y``; ``m = 2`` datasets synthesized by the package; candidates the
additive grid ``y_i ± 1`` of 11 points (about ± 2 residual sd), uniform prior, four records.
Replicates are whole runs (fit, augmented fits, estimator) with their own seeds; the statistic
per record and estimator is ``t = (replicate mean − exact) / (sd / √reps)``, held to the
Bonferroni bound of ``_exact.t_bound``.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from _exact import (
    check_p_true,
    normal_regression_log_predictive,
    normal_regression_p_true_exact,
    t_bound,
)
from scipy.special import gammaln

from bayes_risk.attribute import EstimatorSpec
from bayes_risk.models import Sampling, SequentialRegression
from bayes_risk.models._bayesian.design import normal_exact_posterior

GRID_HALF_WIDTH, GRID_POINTS = 1.0, 11
RECORDS = [0, 1, 2, 3]


def _log_evidence_flat(X: np.ndarray, y: np.ndarray) -> float:
    """``log ∫∫ N(y | Xβ, σ² I) σ^{-2} dβ dσ²`` (the improper prior's constant left out; it
    cancels in ratios): ``(2π)^{-ν/2} |XᵀX|^{-1/2} Γ(ν/2) (RSS/2)^{-ν/2}``, ``ν = n − q``."""
    n, q = X.shape
    beta, *_ = np.linalg.lstsq(X, y, rcond=None)
    rss = float(np.sum((y - X @ beta) ** 2))
    nu = n - q
    return float(-0.5 * nu * np.log(2 * np.pi) - 0.5 * np.linalg.slogdet(X.T @ X)[1]
                 + gammaln(nu / 2) - 0.5 * nu * np.log(rss / 2))


def test_t_predictive_is_the_evidence_ratio_and_the_mean_likelihood():
    """The multivariate-t predictive of the exact helper equals the evidence ratio
    ``ev(y ∪ Z) / ev(y)`` (an independent closed form) and the mean of ``p(Z | β, σ)`` over the
    package's exact posterior draws (relative Monte Carlo error < 1 % with 400,000 draws)."""
    rng = np.random.default_rng(4)
    X = np.column_stack([np.ones(9), rng.normal(size=9)])
    y = X @ [1.0, 0.5] + rng.normal(0, 0.3, 9)
    Xn = np.column_stack([np.ones(3), rng.normal(size=3)])
    yn = Xn @ [1.0, 0.5] + rng.normal(0, 0.3, 3)
    lp = normal_regression_log_predictive(X, y, Xn, yn)
    ratio = _log_evidence_flat(np.vstack([X, Xn]), np.concatenate([y, yn])) - _log_evidence_flat(
        X, y)
    assert lp == pytest.approx(ratio, abs=1e-10)
    d = normal_exact_posterior(X, y, 400_000, np.random.default_rng(5))
    mu = d["beta"] @ Xn.T
    s = d["sigma"][:, None]
    ll = (-0.5 * ((yn - mu) / s) ** 2 - np.log(s) - 0.5 * np.log(2 * np.pi)).sum(axis=1)
    mc = np.log(np.mean(np.exp(ll - ll.max()))) + ll.max()
    assert mc == pytest.approx(lp, abs=0.01)


def _case() -> tuple[pd.DataFrame, list[pd.DataFrame], np.ndarray]:
    rng = np.random.default_rng(31)
    n = 12
    x = rng.normal(0, 1, n)
    x[0] = 2.5  # a record of high leverage
    y = 1.0 + 0.8 * x + rng.normal(0, 0.5, n)
    df = pd.DataFrame({"x": x, "y": y})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        gen = SequentialRegression(sampling=Sampling(draws=10), progressbar=False).fit(
            df, synthesized=["y"], random_seed=1)
        datasets = list(gen.synthesize(2, random_seed=2))
    X = np.column_stack([np.ones(n), x])
    zs = [z["y"].to_numpy() for z in datasets]
    truth = np.array([
        normal_regression_p_true_exact(
            X, y, zs, i, y[i] + np.linspace(-GRID_HALF_WIDTH, GRID_HALF_WIDTH, GRID_POINTS)
        )[GRID_POINTS // 2]
        for i in RECORDS
    ])
    return df, datasets, truth


def _replicates(df, datasets, *, reps: int, draws: int, seed: int) -> dict[str, np.ndarray]:
    from bayes_risk.attribute import attribute_risk

    out: dict[str, list[np.ndarray]] = {"stabilised": [], "is": []}
    for r in range(reps):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            m = SequentialRegression(sampling=Sampling(draws=draws), progressbar=False).fit(
                df, synthesized=["y"], random_seed=seed + 1000 * r + 1)
            for e in out:
                res = attribute_risk(
                    df, datasets, model=m, records=RECORDS,
                    candidates=f"grid:additive:{GRID_HALF_WIDTH}:{GRID_POINTS}",
                    random_seed=seed + 1000 * r + 2,
                    progressbar=False,
                    estimator=EstimatorSpec(kind=e, bootstrap=0))
                out[e].append(res.records["p_true"].to_numpy())
    return {e: np.array(v) for e, v in out.items()}


@pytest.mark.slow
def test_normal_regression_p_true_matches_exact_both_estimators():
    """Stabilised and published estimators vs the exact t-predictive posterior.

    12 replicates of H = 16,000 exact draws; eight statistics (four records, two estimators),
    each Student t with 11 degrees of freedom for an unbiased estimator, held to the Bonferroni
    bound at a family-wise 1 % (4.30), and |mean − exact| ≤ 0.003. Exact ``p_true`` 0.122,
    0.149, 0.136, 0.111; measured errors (t): stabilised 0.0000 (0.0), 0.0003 (1.1), 0.0001
    (0.5), 0.0018 (0.5); published 0.0001 (0.1), 0.0002 (0.9), 0.0002 (0.8), 0.0013 (0.4).

    Measured with 100 replicates (other seeds): at H = 16,000 every mean error is
    ≤ 0.0002 (|t| ≤ 2.1); at H = 4,000 the record with the largest residual (record 3, −1.8
    residual sd; k̂ 0.64, under the threshold 0.7) is biased low by 0.0035 (stabilised, t = −3.3)
    and 0.0025 (published, t = −3.7) — a finite-``H`` bias of a mean of heavy-tailed ratios,
    a third of one run's Monte Carlo sd (0.0105), gone at H = 16,000. Sensitivity: a shift of
    ±0.003 in every record's ``p_true`` fails the check (below; |t| ≥ 9.5 on records 1 and 2).
    """
    df, datasets, truth = _case()
    est = _replicates(df, datasets, reps=12, draws=16_000, seed=70)
    bound = t_bound(reps=12, comparisons=8, family_alpha=0.01)
    for e in ("stabilised", "is"):
        check_p_true(est[e], truth, 0.003, z_max=bound)
        for shift in (0.003, -0.003):
            with pytest.raises(AssertionError):
                check_p_true(est[e] + shift, truth, 0.003, z_max=bound)
