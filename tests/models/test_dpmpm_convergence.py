"""DPMPM convergence checks and their reporting (issue 10 items 1–3, issue 17).

Truncation warning on kept draws only, R-hat/ESS of the quantities the risk depends on written
to the model folder and carried by the attribute-risk result, and seed-to-seed agreement of the
default sampler on the shared ACS extract.
"""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest
from _shared import shared_path

from bayes_risk.attribute import EstimatorSpec, attribute_risk
from bayes_risk.exceptions import BayesRiskWarning, ConvergenceWarning
from bayes_risk.models import DPMPM, Sampling, load_model
from bayes_risk.models._bayesian.convergence_report import check_convergence
from bayes_risk.models.dpmpm.fit import check_truncation


def _three_clusters(n: int = 150, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    k = rng.integers(0, 3, n)
    cols = {}
    for j in range(4):
        noise = rng.random(n) < 0.05
        cols[f"v{j}"] = np.where(noise, rng.integers(0, 3, n), k).astype(str)
    return pd.DataFrame(cols)


def _fit(df, K, **kw):
    settings = dict(n_components=K,
                    sampling=Sampling(tune=200, draws=200, chains=2, cores=1), progressbar=False)
    settings.update(kw)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        m = DPMPM.from_settings(settings).fit(df, random_seed=3)
    return m, [w for w in caught if issubclass(w.category, BayesRiskWarning)]


def test_truncation_warning_when_and_only_when_kept_draws_fill_the_classes():
    df = _three_clusters()
    m3, w3 = _fit(df, 3)  # three well-separated clusters: every kept draw uses 3 = K classes
    assert "TRUNCATION_TOO_SMALL" in m3.warnings_
    assert any(getattr(w.message, "code", None) == "TRUNCATION_TOO_SMALL" for w in w3)
    # the structured warning that reaches risk results says what it means and what to do
    (rec,) = [w for w in m3.mcmc_warnings() if w["code"] == "TRUNCATION_TOO_SMALL"]
    assert rec["message"].startswith("DPMPM: the kept posterior draws occupy K - 1 or more")
    assert "increase n_components" in rec["message"]
    m20, w20 = _fit(df, 20)
    assert m20.posterior_["sample_stats"]["k_occupied"].values.max() < 19
    assert "TRUNCATION_TOO_SMALL" not in m20.warnings_
    assert not any(getattr(w.message, "code", None) == "TRUNCATION_TOO_SMALL" for w in w20)
    # warm-up draws do not count: a warm-up that visited every class changes nothing
    ws = m20.posterior_["warmup_sample_stats"].to_dataset()
    ws["k_occupied"] = ws["k_occupied"] * 0 + 20
    import xarray as xr

    m20.posterior_["warmup_sample_stats"] = xr.DataTree(ws)
    m20.warnings_ = []
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        m20.warnings_ += check_truncation(m20.posterior_, m20.n_components)
    assert m20.warnings_ == []


def test_convergence_recorded_in_model_folder_and_attribute_result(tmp_path):
    df = _three_clusters(80, seed=1)
    # one short chain: the checks fail and must be recorded, not only printed
    m, caught = _fit(df, 10, tune=20, draws=30, chains=2)
    codes = {getattr(w.message, "code", None) for w in caught}
    assert codes & {"RHAT_HIGH", "LOW_ESS"}
    summ = m.convergence_summary()
    assert {"loglik", "alpha", "k_occupied"} <= set(summ["quantities"])
    assert not summ["passed"] and summ["chains"] == 2
    # the ESS threshold is per chain (Vehtari et al. 2021): 200 for two chains
    assert summ["thresholds"] == {"rhat_max": 1.01, "ess_min": 200.0, "ess_min_per_chain": 100.0,
                                  "ess_tail_prob": [0.05, 0.95]}
    # every failed check, with its value and threshold (issue 35 item 2)
    assert summ["failed_checks"] == [c for w in summ["warnings"] for c in w["checks"]]
    for c in summ["failed_checks"]:
        q = summ["quantities"][c["quantity"]]
        assert c["value"] == q[c["statistic"]]
        assert c["code"] in q["flag"].split(",")
        assert (c["value"] > 1.01) if c["statistic"] == "rhat" else (c["value"] < 200.0)
    for q in summ["quantities"].values():
        if np.isfinite(q["ess_bulk"]):
            low = min(q["ess_bulk"], q["ess_tail"]) < 200
            assert ("LOW_ESS" in q["flag"].split(",")) == low
    assert {w["code"] for w in summ["warnings"]} == codes & {"RHAT_HIGH", "LOW_ESS"}
    m.save(tmp_path / "model")
    saved = json.loads((tmp_path / "model" / "convergence.json").read_text())
    assert saved["quantities"].keys() == summ["quantities"].keys()
    loaded = load_model(tmp_path / "model")
    syn = loaded.synthesize(1, random_seed=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = attribute_risk(df, syn, model=loaded, records=[0, 1], random_seed=4,
                             progressbar=False,
                             estimator=EstimatorSpec(kind="stabilised", bootstrap=0))
    fits = res.mcmc["fits"]
    assert set(fits) == {"model", "augmented_1"}
    assert fits["augmented_1"]["chains"] == 2
    got = {(w["fit"], w["code"]) for w in res.mcmc["warnings"]}
    assert ("model", "RHAT_HIGH") in got or ("model", "LOW_ESS") in got
    assert any(f == "augmented_1" for f, _ in got)  # the augmented fit is as short
    for _, c in got:
        assert c in res.warnings
    for w in res.mcmc["warnings"]:  # each failed check names its fit
        assert all(c["fit"] == w["fit"] and c["code"] == w["code"] for c in w["checks"])
    s = res.to_dict()
    assert s["mcmc"]["warnings"] and json.dumps(s, default=str)


# posterior of DPMPM(n_components=80) on the ACS extract from a long run (4 chains × (500 +
# 8,000) sweeps, seed 7; R-hat 1.001, bulk ESS 5,700 for k*, 14,000 for α): mean (MCSE)
_ACS_ALPHA = (0.5591, 0.0028)
_ACS_KOCC = (4.6345, 0.0116)


@pytest.mark.slow
def test_default_sampler_agrees_across_seeds_on_acs_extract():
    """Issue 10.1: the defaults (2 chains × (1,000 warm-up sweeps + 500 draws kept every 5th
    sweep)) on ss16pusa_sample_zeros, K = 80.

    Every seed passes every convergence check (no ``RHAT_HIGH``, no ``LOW_ESS`` on any diagnosed
    quantity): with 500 unthinned draws per chain seed 1 had recorded ``RHAT_HIGH`` (R-hat of
    the log-likelihood 1.015, of k* 1.010 with bulk ESS 162) although it agreed with the other
    seeds; ``test_dpmpm_mixing`` checks that fits short of the posterior still record it.

    Seeds 1–4 must agree on the posterior means of α and of the number of occupied classes k*,
    with each other and with a long run, within Monte Carlo error: MCSE of each mean from its
    ESS (ArviZ), ``z = difference / sqrt(MCSE_a² + MCSE_b²)``, 6 pairs + 4 seed-vs-long-run
    comparisons per quantity (20 in all) against the Bonferroni bound ``Φ⁻¹(1 − 0.01 / 40)``
    ≈ 3.48 (family-wise 1 %). So that the bound cannot pass through a useless MCSE, each
    seed's MCSE must stay below 0.15 posterior sd (ESS of the mean above ~45; a chain stuck in
    the ≈ 5.8-class state gave ESS 4–13, MCSE 0.28–0.5 sd). CPU ≈ 55 s.

    Before the merge–split moves, seeds 1 and 4 kept one chain for 1,000+ sweeps in a state
    with ≈ 5.8 classes (data log-likelihood ≈ −5,734 instead of ≈ −5,752): k* ESS 9–13,
    R-hat 1.11–1.15. NPBayesImputeCat's α ≈ 2.6–6.0 on these data is not reproduced by design
    (its floor in the stick update; docs, methods, compatibility).
    """
    import arviz_stats
    from scipy.stats import norm

    cols = ["AGEP", "MAR", "SCHL", "SEX", "WKL"]
    df = pd.read_csv(shared_path("data", "ss16pusa_sample_zeros.csv"))[cols].astype(str)
    seeds = (1, 2, 3, 4)
    est: dict[str, list[tuple[float, float]]] = {"alpha": [], "k*": []}
    for seed in seeds:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            m = DPMPM(n_components=80, progressbar=False).fit(df, random_seed=seed)
        assert "TRUNCATION_TOO_SMALL" not in m.warnings_
        assert m._run_settings()["thin"] == 5 and not m.mcmc_warnings(), (seed, m.convergence_)
        for name, x in (("alpha", m.posterior_["posterior"]["alpha"].values),
                        ("k*", m.posterior_["sample_stats"]["k_occupied"].values * 1.0)):
            se = float(arviz_stats.mcse(x, method="mean"))
            assert se < 0.15 * float(x.std()), (name, seed, se, float(x.std()))
            est[name].append((float(x.mean()), se))
    bound = norm.ppf(1 - 0.01 / (2 * 2 * (6 + 4)))
    ref = {"alpha": _ACS_ALPHA, "k*": _ACS_KOCC}
    zs = {}
    for name, vals in est.items():
        for a in range(len(seeds)):
            for b in range(a + 1, len(seeds)):
                (ma, sa), (mb, sb) = vals[a], vals[b]
                zs[f"{name} {seeds[a]}-{seeds[b]}"] = (ma - mb) / np.hypot(sa, sb)
            zs[f"{name} {seeds[a]}-long run"] = (vals[a][0] - ref[name][0]) / np.hypot(
                vals[a][1], ref[name][1])
    assert max(abs(v) for v in zs.values()) <= bound, (est, zs)


def test_ess_threshold_is_per_chain(monkeypatch):
    """LOW_ESS fires below 100 effective draws per chain (Vehtari et al. 2021), not 100 in all:
    iid draws of 2 chains x 80 (ESS ≈ 160) are flagged, 2 x 150 (ESS ≈ 300) are not."""
    m, _ = _fit(_three_clusters(60, seed=2), 3, tune=20, draws=30)
    rng = np.random.default_rng(0)
    for n, flagged in ((80, True), (150, False)):
        x = rng.normal(size=(2, n))
        monkeypatch.setattr(m, "convergence_quantities", lambda x=x: {"q": x})
        row = check_convergence(m).loc["q"]
        assert 100 < row.ess_bulk < 400 and row.rhat < 1.05
        assert ("LOW_ESS" in row.flag.split(",")) == flagged, (n, row.ess_bulk, row.ess_tail)
