"""Monte Carlo intervals of file-level attribute-risk summaries (draw bootstrap)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from _bernoulli import _bern_frame, _bern_ll
from scipy.special import expit, logit

from bayes_risk.attribute import EstimatorSpec, attribute_risk, with_prior
from bayes_risk.attribute.summaries import log_posterior, rank_summary
from bayes_risk.attribute.uncertainty import FILE_FIGURES, file_uncertainty
from bayes_risk.data import infer_schema
from bayes_risk.exceptions import ImportanceSamplingWarning, ValidationError
from bayes_risk.models import ArrayModel


def _run(H, bootstrap=200, seed=0):
    """Beta–Bernoulli synthesis of 40 records: draws from the exact posterior, two synthetic
    sets from two of them (importance sampling is well behaved)."""
    rng = np.random.default_rng(seed)
    y = rng.random(40) < 0.3
    orig = _bern_frame(y.astype(int))
    post = (1 + y.sum(), 1 + (~y).sum())
    syn = [_bern_frame((rng.random(40) < t).astype(int)) for t in rng.beta(*post, size=2)]
    # the data and synthetic sets do not depend on H; only the number of draws changes
    theta = np.random.default_rng(seed + 1).beta(*post, size=H)
    model = ArrayModel(_bern_ll, theta, infer_schema(orig, synthesized=["y"]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ImportanceSamplingWarning)
        return attribute_risk(orig, syn, model=model,
                              random_seed=3, progressbar=False,
                              estimator=EstimatorSpec(kind="is", bootstrap=bootstrap))


def test_values_and_bootstrap_figures_recomputed_by_hand():
    res = _run(60)
    out = file_uncertainty(res, level=0.9)
    recs = res.records
    flagged = recs["flag_codes"].fillna("").astype(str) != ""
    keep = recs[~flagged]
    assert out["n_records"] == len(recs) and out["n_flagged_excluded"] == int(flagged.sum())
    assert out["value"]["mean_p_true"] == pytest.approx(keep["p_true"].mean(), rel=1e-12)
    assert out["value"]["prop_top"] == pytest.approx((keep["rank_min"] == 1).mean())
    assert out["value"]["p_true_q50"] == pytest.approx(keep["p_true"].median(), rel=1e-12)
    # replicate b of every record uses the same resampled draws: recompute each record's p_true
    # in each replicate from the kept bootstrap log-likelihoods, move the record's replicates on
    # the log-odds scale by twice their mean's distance from its estimate (the bias they show),
    # and take the mean over the records of each replicate
    idx = np.flatnonzero(~flagged.to_numpy())
    B = out["bootstrap"]
    table = np.empty((B, idx.size))
    for k, i in enumerate(idx):
        for b in range(B):
            lp = log_posterior(res._boot_loglik[i][b] + res.logprior[i])
            table[b, k] = rank_summary(lp[None, :], np.array([res.candidates[i].g0]))["p_true"][0]
        t = logit(table[:, k])
        table[:, k] = expit(t - 2 * (np.mean(t) - logit(keep["p_true"].iloc[k])))
    means = table.mean(axis=1)
    lo, hi = np.quantile(means, [0.05, 0.95])
    assert out["mc_interval_90"]["mean_p_true"] == pytest.approx([lo, hi], rel=1e-12)
    assert out["mc_se"]["mean_p_true"] == pytest.approx(np.std(means, ddof=1), rel=1e-12)
    for f in FILE_FIGURES:
        a, b = out["mc_interval_90"][f]
        assert a <= b


def test_blocks_of_replicates_give_the_same_figures(monkeypatch):
    """The figures over records are computed a block of replicates (and of records) at a time
    to bound their memory: the numbers do not depend on the blocks."""
    from bayes_risk.attribute import record_table, uncertainty

    res = _run(60)
    whole = file_uncertainty(res, level=0.9)
    monkeypatch.setattr(uncertainty, "BOOT_BLOCK_VALUES", 70)  # one replicate a block
    monkeypatch.setattr(record_table, "BOOT_BLOCK_VALUES", 1200)  # 3 records of 200 x 2
    assert file_uncertainty(res, level=0.9) == whole


def test_monte_carlo_error_shrinks_with_more_draws():
    # the same data and synthetic sets, ten times as many posterior draws: the bootstrap MCSE of
    # the mean p_true shrinks by about sqrt(10) (between 2 and 5 here)
    small = file_uncertainty(_run(100, bootstrap=100))["mc_se"]["mean_p_true"]
    large = file_uncertainty(_run(1000, bootstrap=100))["mc_se"]["mean_p_true"]
    assert 2.0 < small / large < 5.0


def test_needs_the_draw_bootstrap_and_a_valid_level():
    with pytest.raises(ValidationError, match="bootstrap > 0"):
        file_uncertainty(_run(30, bootstrap=0))
    with pytest.raises(ValidationError, match="level"):
        file_uncertainty(_run(30, bootstrap=20), level=1.5)


LOC = {0: (0.0, 0.0), 1: (3.0, 4.0)}  # the two values of y as locations 5 apart


def _draws_run(H, draws_seed, bootstrap=200):
    """The Beta–Bernoulli case of ``_run(seed=0)`` (the same data and synthetic sets) with the
    posterior draws from their own seed."""
    rng = np.random.default_rng(0)
    y = rng.random(40) < 0.3
    orig = _bern_frame(y.astype(int))
    post = (1 + y.sum(), 1 + (~y).sum())
    syn = [_bern_frame((rng.random(40) < t).astype(int)) for t in rng.beta(*post, size=2)]
    theta = np.random.default_rng(draws_seed).beta(*post, size=H)
    model = ArrayModel(_bern_ll, theta, infer_schema(orig, synthesized=["y"]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ImportanceSamplingWarning)
        return orig, attribute_risk(orig, syn, model=model,
                                    random_seed=draws_seed + 100, progressbar=False,
                                    estimator=EstimatorSpec(kind="is", bootstrap=bootstrap))


def test_wang_reiter_intervals_recomputed_by_hand():
    from bayes_risk.attribute.file_summary import file_summary
    from bayes_risk.attribute.summaries import wang_reiter, wang_reiter_file
    from bayes_risk.attribute.uncertainty import WANG_REITER_FIGURES

    orig, res = _draws_run(80, 1, bootstrap=30)
    s = file_summary(res, kind="wang_reiter", original=orig, location_columns=["y"], locations=LOC)
    mc = s["mc_uncertainty"]
    flagged = (res.records["flag_codes"].fillna("").astype(str) != "").to_numpy()
    assert mc["n_flagged_excluded"] == int(flagged.sum()) and mc["bootstrap"] == 30
    # the point values are the unflagged records' file-level figures of file_summary
    un = s["unflagged"]
    for f in WANG_REITER_FIGURES:
        name, stat = f.split("_")
        assert mc["value"][f] == pytest.approx(un[name][stat], rel=1e-12)
    # every replicate b by hand: each record's posterior from the same resampled draws
    allxy = np.array([LOC[int(v)] for v in orig["y"]])
    keep = np.flatnonzero(~flagged)
    figs = []
    for b in range(30):
        r1, r2 = [], []
        for i in keep:
            lp = log_posterior(res._boot_loglik[i][b] + res.logprior[i])
            cp = res.candidate_posteriors(i)
            cxy = np.array([LOC[int(v)] for v in cp["y"]])
            g0 = int(np.flatnonzero(cp["is_truth"])[0])
            w = wang_reiter(np.exp(lp), cxy, cxy[g0], np.delete(allxy, i, axis=0))
            r1.append(w["R1"])
            r2.append(w["R2"])
        fl = wang_reiter_file(np.array(r1), np.array(r2))
        figs.append([fl[n][st] for n in ("R1", "R2") for st in ("min", "q1", "median")])
    figs = np.array(figs)
    lo, hi = np.quantile(figs, [0.05, 0.95], axis=0)
    for j, f in enumerate(WANG_REITER_FIGURES):
        assert mc["mc_interval_90"][f] == pytest.approx([lo[j], hi[j]], rel=1e-10, abs=1e-12)
        assert mc["mc_se"][f] == pytest.approx(np.std(figs[:, j], ddof=1), rel=1e-10,
                                               abs=1e-12)
    # without the draw bootstrap there is no interval (and no error)
    _, nob = _draws_run(80, 1, bootstrap=0)
    assert "mc_uncertainty" not in file_summary(nob, kind="wang_reiter", original=orig,
                                                location_columns=["y"], locations=LOC)


def test_mc_intervals_cover_the_long_run_value():
    """The 90 % Monte Carlo intervals from H = 150 draws cover the value of the same figure
    computed from 100,000 draws (the long-run value, whose own Monte Carlo error is ~26 times
    smaller) in 90 % of 40 independent sets of draws; accepted: 30–40 of 40 (the binomial
    5th–100th percentile range is about 32–40; the percentile interval is a little narrow at
    this H)."""
    from bayes_risk.attribute.file_summary import file_summary

    orig, ref = _draws_run(100_000, 999, bootstrap=0)
    assert not (ref.records["flag_codes"].fillna("") != "").any()
    truth_mean = float(ref.records["p_true"].mean())
    truth_r1 = file_summary(ref, kind="wang_reiter", original=orig, location_columns=["y"],
                            locations=LOC)["unflagged"]["R1"]["median"]
    hits = np.zeros(2, dtype=int)
    for seed in range(40):
        orig, res = _draws_run(150, seed)
        assert not (res.records["flag_codes"].fillna("") != "").any()  # the same records
        a = file_uncertainty(res)["mc_interval_90"]["mean_p_true"]
        b = file_summary(res, kind="wang_reiter", original=orig, location_columns=["y"],
                         locations=LOC)["mc_uncertainty"]["mc_interval_90"]["R1_median"]
        hits += [a[0] <= truth_mean <= a[1], b[0] <= truth_r1 <= b[1]]
    assert (hits >= 30).all(), hits


def test_result_dict_and_summary_carry_the_mc_intervals():
    res = _run(60, bootstrap=40)
    d = res.to_dict()
    mc = d["mc_uncertainty"]
    assert mc == file_uncertainty(res)
    assert set(mc["mc_interval_90"]) == set(FILE_FIGURES)
    tab = res.summary().tables["Monte Carlo error (draw bootstrap)"]
    assert list(tab["figure"]) == list(FILE_FIGURES)
    # shares and probabilities in per cent, as the file-level table beside it
    assert tab.set_index("figure").loc["mean_p_true", "MCSE"] == pytest.approx(
        100 * mc["mc_se"]["mean_p_true"], rel=1e-12)
    assert "flagged record(s) left out" in res.summary().as_text()
    assert "mc_uncertainty" not in _run(60, bootstrap=0).to_dict()


def test_a_result_under_another_prior_recomputes_its_mc_intervals():
    # the result computes nothing itself: the engine's file_uncertainty, which it was built
    # with, runs on the new result (the posteriors, hence the figures, depend on the prior)
    res = _run(60, bootstrap=40)
    new = with_prior(res, prior="truth-weighted:2")
    mc = new.to_dict()["mc_uncertainty"]
    assert mc == file_uncertainty(new) and mc != res.to_dict()["mc_uncertainty"]


def test_a_degenerate_interval_is_said_to_be_one():
    """An interval of zero width (the figure is the same in at least 90 % of the replicates) is
    not shown as a 90 % interval "[10, 10]" but as what it is (issue 85, item 6)."""
    from bayes_risk.results.attribute import mc_table

    mc = {"bootstrap": 200, "n_flagged_excluded": 0,
          "value": {"mean_p_true": 0.05, "prop_evidence": 0.1},
          "mc_se": {"mean_p_true": 0.004, "prop_evidence": 0.0},
          "mc_interval_90": {"mean_p_true": [0.045, 0.061], "prop_evidence": [0.1, 0.1]}}
    tab = mc_table(mc).set_index("figure")["MC interval 90 %"]
    assert tab["mean_p_true"] == "[4.5, 6.1]"
    assert tab["prop_evidence"] == "10 in ≥ 90 % of replicates (degenerate)"


def test_the_interval_key_is_made_and_read_in_one_module():
    """``mc_interval_<level>`` is written by ``mc_interval_key`` and read by ``mc_interval``
    (issue 87: the engine, the result's table and the audit's line and block each spelt it):
    a level other than 0.9 reaches the table under its own name, and no other module of the
    package has the key's prefix as a string (docstrings name it in backquotes)."""
    from pathlib import Path

    import bayes_risk
    from bayes_risk.results._attribute_mc import mc_interval, mc_interval_key, mc_table

    res = _run(60, bootstrap=40)
    mc = file_uncertainty(res, level=0.8)
    assert mc_interval_key(0.8) == "mc_interval_80" in mc
    level, intervals = mc_interval(mc)
    assert level == 80 and intervals == mc["mc_interval_80"]
    assert mc_interval({"value": {}}) == (None, {})
    assert "MC interval 80 %" in mc_table(mc)
    root = Path(bayes_risk.__file__).parent
    spelt = sorted(p.name for p in root.rglob("*.py") if "\"mc_interval_" in p.read_text("utf-8"))
    assert spelt == ["_attribute_mc.py"], spelt
