"""DPMPM run length and what R-hat can see (issue 10 item 1).

The default run keeps 500 draws per chain, each the last of 5 Gibbs sweeps (``thin``): on the
ACS extract the number of occupied classes has an ESS of about 0.16 per sweep, and 500
unthinned draws per chain left too few effective draws for R-hat to stay below 1.01 when the
chains agree (seed 1: R-hat of k* 1.010 with ESS 162, of the log-likelihood 1.015).
``test_dpmpm_convergence.test_default_sampler_agrees_across_seeds_on_acs_extract`` checks that
the default fits of seeds 1–4 pass every check; here a fit that has not reached the posterior
must still fail them, and ``thin`` must keep exactly every ``thin``-th sweep.

α is bounded in the first warm-up sweeps (``alpha_warmup_bound``, ``alpha_warmup_sweeps``): the
bounded update must draw the truncated conditional, hold in those sweeps only, and free the
default fit of ``ss16pusa_sample_nozeros`` seed 31, whose two chains both settled at α ≈ 118
with ≈ 58 classes and passed every check.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from _shared import shared_path

from bayes_risk.data import make_acs_like
from bayes_risk.exceptions import BayesRiskWarning, ValidationError
from bayes_risk.models import DPMPM, Sampling
from bayes_risk.models._bayesian.sampling import SAMPLING_FIELDS
from bayes_risk.models.dpmpm.coding import encode


def _fit(df, **kw):
    run = {"chains": 2, "cores": 1, **{k: kw.pop(k) for k in SAMPLING_FIELDS if k in kw}}
    settings = dict(n_components=5, sampling=Sampling(**run), progressbar=False, **kw)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BayesRiskWarning)
        return DPMPM(**settings).fit(df, random_seed=3)


def test_thin_keeps_the_last_of_every_thin_sweeps():
    df = make_acs_like(300, random_seed=1)[["SEX", "MAR", "MIG"]]
    every = _fit(df, tune=30, draws=40)
    thinned = _fit(df, tune=30, draws=10, thin=4)
    assert every._run_settings()["thin"] == 1 and thinned.sampling.thin == 4
    # the outputs of every run that uses the model say how the kept draws were thinned
    assert every.convergence_summary()["thin"] == 1
    assert thinned.convergence_summary()["thin"] == 4
    assert thinned.convergence_summary()["draws"] == 10
    for group, names in (("posterior", ["alpha", "V", "phi_1", "pi"]),
                         ("sample_stats", ["loglik", "k_occupied"])):
        for name in names:
            a = every.posterior_[group][name].values
            b = thinned.posterior_[group][name].values
            assert b.shape[1] == 10
            np.testing.assert_array_equal(a[:, 3::4], b, err_msg=name)
    # the warm-up is not thinned: the same 30 sweeps
    np.testing.assert_array_equal(every.posterior_["warmup_sample_stats"]["loglik"].values,
                                  thinned.posterior_["warmup_sample_stats"]["loglik"].values)


def test_thin_default_and_settings():
    m = DPMPM()
    run = m._run_settings()
    given = m.resolved_sampling
    assert (run["draws"], run["thin"], given.tune, given.chains) == (500, 5, 1000, 2)
    assert (given.draws, given.thin) == (None, None)  # left to fit, which resolves them
    # a run length asked for: every sweep kept (PyMC)
    assert DPMPM(sampling=Sampling(draws=200))._run_settings()["thin"] == 1
    assert DPMPM(sampling=Sampling(draws=200, thin=3))._run_settings()["thin"] == 3
    assert DPMPM(sampler="nuts")._run_settings()["thin"] == 1
    # the augmented fits and a loaded model are built from get_params: the same run
    assert DPMPM(**m.get_params()).get_params() == m.get_params()
    df = make_acs_like(50, random_seed=1)[["SEX", "MAR"]]
    for bad in (0, 1.5, True, "2"):
        with pytest.raises(ValidationError, match="thin"):
            DPMPM(n_components=3,
                  sampling=Sampling(draws=5, tune=5, thin=bad), progressbar=False).fit(df)
    with pytest.raises(ValidationError, match="sampler='nuts'"):
        DPMPM(n_components=3, sampler="nuts", sampling=Sampling(thin=2), progressbar=False).fit(df)


def test_fits_that_have_not_reached_the_posterior_record_rhat_high():
    """The 1.01 bound still sees chains that disagree: on the ACS extract (K = 80), chains
    started with every class occupied and kept without warm-up, and chains given only 100
    warm-up sweeps without the bound of α, record ``RHAT_HIGH`` (the warning and
    ``mcmc_warnings``). (With the bound in those 100 sweeps the chains of seed 1 come close
    enough to the posterior that only ``LOW_ESS`` is recorded for k*.)"""
    cols = ["AGEP", "MAR", "SCHL", "SEX", "WKL"]
    df = pd.read_csv(shared_path("data", "ss16pusa_sample_zeros.csv"))[cols].astype(str)
    for tune, draws in ((0, 100), (100, 200)):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            m = DPMPM(n_components=80,
                      sampling=Sampling(tune=tune, draws=draws, cores=1), alpha_warmup_sweeps=0,
                      progressbar=False).fit(df, random_seed=1)
        rep = m.convergence_
        assert "RHAT_HIGH" in rep.loc["k_occupied", "flag"], (tune, rep)
        assert "RHAT_HIGH" in {w["code"] for w in m.mcmc_warnings()}
        assert any(getattr(w.message, "code", None) == "RHAT_HIGH" for w in caught)


def test_thinned_draws_are_the_same_through_pm_sample_and_in_parallel():

    df = make_acs_like(200, random_seed=2)[["SEX", "MAR", "MIG"]]
    trees = []
    for via_pymc, cores in ((False, 1), (True, 1), (False, 2)):
        model = DPMPM(n_components=4,
                      sampling=Sampling(tune=5, draws=6, thin=3, chains=2, cores=cores),
                      progressbar=False)
        data, schema = model._prepare_data(df, allow_nan=True)
        codes = encode(schema, data, name="data")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            trees.append(model._gibbs_posterior(codes, [len(c.levels) for c in schema], 7,
                                         via_pymc=via_pymc))
    for other in trees[1:]:
        for group, name in (("posterior", "alpha"), ("posterior", "phi_0"),
                            ("sample_stats", "loglik"), ("sample_stats", "k_occupied")):
            np.testing.assert_array_equal(trees[0][group][name].values,
                                          other[group][name].values, err_msg=name)


def test_bounded_alpha_update_draws_the_truncated_conditional():
    """The slice update restricted to α <= bound samples ``p(α | z) 1{α <= bound}`` (a clipped
    draw would put an atom at the bound and the wrong mass below it): mean and two quantile
    probabilities of 20,000 updates against the density integrated on a grid of log α."""
    from _exact import _log_p_z_given_alpha
    from scipy.integrate import trapezoid

    from bayes_risk.models._bayesian.sticks import slice_alpha

    nk = np.array([30, 20, 5, 1, 0, 0, 0, 0, 0, 0])
    bound = 0.9  # in the bulk of the unrestricted conditional (mean ≈ 0.9)
    t = np.linspace(np.log(1e-6), np.log(bound), 40_001)
    a = np.exp(t)
    # log p(α) + log p(z | α), Gamma(0.25, 0.25) prior, + t: d α = α d log α
    logp = _log_p_z_given_alpha(nk[None, :].astype(float), t)[0] - 0.75 * t - 0.25 * a + t
    p = np.exp(logp - logp.max())
    p /= trapezoid(p, t)
    mean = trapezoid(a * p, t)
    cdf = {q: trapezoid(np.where(a <= q, p, 0.0), t) for q in (0.3, 0.6)}
    rng = np.random.default_rng(11)
    x, draws = 0.5, np.empty(20_000)
    for i in range(draws.size):
        x = slice_alpha(nk, x, 0.25, 0.25, rng, upper=bound)
        draws[i] = x
    assert draws.max() <= bound and np.mean(draws == bound) == 0
    # tolerances: 5 standard errors with an ESS of 5,000 (a quarter of the draws)
    sd = draws.std()
    assert abs(draws.mean() - mean) < 5 * sd / np.sqrt(5_000), (draws.mean(), mean)
    for q, c in cdf.items():
        assert abs(np.mean(draws <= q) - c) < 5 * np.sqrt(c * (1 - c) / 5_000), (q, c)
    # unrestricted (upper = inf): the conditional's mass above the bound is reached
    x, free = 0.5, np.empty(2_000)
    for i in range(free.size):
        x = slice_alpha(nk, x, 0.25, 0.25, rng)
        free[i] = x
    assert np.mean(free > bound) > 0.2


def _step_alphas(tune, draws, bound, sweeps, seed=5):
    """α after every call of the Gibbs step (one sweep per warm-up call, one per kept draw)."""
    from bayes_risk.models.dpmpm.step import DPMPMGibbs, SweepSchedule

    df = make_acs_like(300, random_seed=1)[["SEX", "MAR", "MIG"]]
    codes = np.column_stack([pd.factorize(df[c])[0] for c in df.columns]).astype(np.int64)
    d = codes.max(axis=0) + 1
    step = DPMPMGibbs(["alpha", "V", "phi_0", "phi_1", "phi_2"], codes=codes, d=d,
                      n_components=10, alpha_prior=(0.25, 0.25), dirichlet_prior=1.0,
                      schedule=SweepSchedule(alpha_warmup_bound=bound,
                                             alpha_warmup_sweeps=sweeps))
    step.setup_chain(np.random.default_rng(seed), tune, draws)
    point: dict = {}
    out = np.empty(tune + draws)
    for i in range(out.size):
        point, _ = step.step(point)
        out[i] = float(point["alpha"])
    return out


def test_alpha_bound_holds_in_the_first_warmup_sweeps_only():
    """α <= bound in the first ``alpha_warmup_sweeps`` sweeps and never after them; with a
    warm-up shorter than that, never in a kept sweep. The bound (0.05) lies far below α's
    conditional on these data (posterior mean ≈ 0.5), so unrestricted draws exceed it."""
    a = _step_alphas(tune=30, draws=40, bound=0.05, sweeps=10)
    assert a[:10].max() <= 0.05
    assert np.mean(a[10:] > 0.05) > 0.9
    short = _step_alphas(tune=4, draws=40, bound=0.05, sweeps=100)
    assert short[:4].max() <= 0.05
    assert np.mean(short[4:] > 0.05) > 0.9
    # no bound (0 sweeps, or an infinite bound): the same draws, the sampler without the bound
    free = _step_alphas(tune=30, draws=40, bound=0.05, sweeps=0)
    np.testing.assert_array_equal(free, _step_alphas(tune=30, draws=40, bound=np.inf,
                                                     sweeps=100))
    assert free[:10].max() > 0.05


def test_alpha_warmup_settings_are_recorded_and_checked():
    from scipy.stats import gamma

    m = DPMPM()
    bound, sweeps = m._alpha_warmup()
    assert sweeps == 100 and bound == pytest.approx(gamma.ppf(0.95, 0.25, scale=4.0))
    assert 4.8 < bound < 5.0  # the value the docs quote
    assert DPMPM(alpha_prior=(2.0, 1.0))._alpha_warmup()[0] == pytest.approx(
        gamma.ppf(0.95, 2.0, scale=1.0))
    assert DPMPM(sampling=Sampling(tune=30))._alpha_warmup()[1] == 30  # never beyond the warm-up
    assert DPMPM(sampler="nuts")._alpha_warmup()[1] == 0
    assert DPMPM(n_components=1)._alpha_warmup()[1] == 0
    df = make_acs_like(300, random_seed=1)[["SEX", "MAR", "MIG"]]
    fit = _fit(df, tune=4, draws=30, alpha_warmup_bound=0.05)
    assert fit.convergence_summary()["alpha_warmup"] == {"bound": 0.05, "sweeps": 4}
    assert np.mean(fit.posterior_["posterior"]["alpha"].values > 0.05) > 0.9
    # same seed, same draws
    again = _fit(df, tune=4, draws=30, alpha_warmup_bound=0.05)
    np.testing.assert_array_equal(fit.posterior_["posterior"]["alpha"].values,
                                  again.posterior_["posterior"]["alpha"].values)
    off = _fit(df, tune=4, draws=30, alpha_warmup_sweeps=0)
    assert off.convergence_summary()["alpha_warmup"] == {"bound": None, "sweeps": 0}
    assert DPMPM(**fit.get_params(deep=False)).get_params() == fit.get_params()
    small = make_acs_like(50, random_seed=1)[["SEX", "MAR"]]
    for name, bad in (("alpha_warmup_sweeps", -1), ("alpha_warmup_sweeps", 2.5),
                      ("alpha_warmup_sweeps", True), ("alpha_warmup_bound", 0.0),
                      ("alpha_warmup_bound", -1.0), ("alpha_warmup_bound", "5"),
                      ("alpha_warmup_bound", float("nan"))):
        with pytest.raises(ValidationError, match=name):
            DPMPM(n_components=3,
                  sampling=Sampling(draws=5, tune=5), progressbar=False, **{name: bad}).fit(small)


@pytest.mark.slow
def test_default_fit_leaves_the_many_class_state_on_nozeros_seed_31():
    """Issue 10.1: the default fit of ``ss16pusa_sample_nozeros.csv`` (K = 80) with seed 31
    had both chains at α ≈ 118 with ≈ 58.5 occupied classes and passed every convergence
    check; the posterior, where every other surveyed chain agrees, is at α ≈ 0.59 and ≈ 4.75
    classes (seeds 2–4: 0.584–0.598 and 4.72–4.83; benchmarks/survey_dpmpm_defaults.py of
    commit 977bc9f).
    With α bounded in the first 100 warm-up sweeps the fit must be there, every
    chain: its mean α within 0.2 of 0.6 and its mean number of classes within 0.5 of 4.7 (the
    trapped chains were 100 and 50 away). CPU ≈ 18 s."""
    from bayes_risk.data.io import read_table

    df = read_table(shared_path("data", "ss16pusa_sample_nozeros.csv"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BayesRiskWarning)
        m = DPMPM(n_components=80, progressbar=False).fit(
            df, categorical=list(df.columns), random_seed=31)
    alpha = m.posterior_["posterior"]["alpha"].values
    k = m.posterior_["sample_stats"]["k_occupied"].values
    assert alpha.shape[0] == 2
    for c in range(alpha.shape[0]):
        assert abs(alpha[c].mean() - 0.6) < 0.2, (c, alpha.mean(axis=1))
        assert abs(k[c].mean() - 4.7) < 0.5, (c, k.mean(axis=1))
