"""KHAT_HIGH under the "material" rule: bounds of p_true where Pareto k̂ is high (issue 10 item 4).

Ground truth: a categorical synthesizer with exact Dirichlet posterior draws. For
``θ ~ Dir(α)`` and ``r(c, θ) = θ_c / θ_t``, ``E[r] = α_c / (α_t − 1)`` (``α_t > 1``), and ``r``
has a Pareto tail with shape ``k = 1/α_t`` (``P(θ_t < ε) ∝ ε^{α_t}``). So the stabilised
estimator's target ``loglik(c) = log E_{y,Z}[r] − log E_y[r]`` is known exactly, and ``α_t``
sets how heavy the tail is.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st_h

from bayes_risk.attribute import EstimatorSpec, attribute_risk, prior_sensitivity, with_prior
from bayes_risk.attribute.diagnostics import tail_size
from bayes_risk.attribute.estimator import RatioStats, stabilised_bounds, truncated_log_mean
from bayes_risk.attribute.record_table import khat_material as _khat_material
from bayes_risk.data import infer_schema
from bayes_risk.exceptions import ImportanceSamplingWarning, ValidationError
from bayes_risk.models import ArrayModel, Sampling

D = 6  # categories


def _frame(values):
    return pd.DataFrame({"y": pd.Categorical(values, categories=list(range(D)))})


def _ll(records, theta):
    y = records["y"].astype(int).to_numpy()
    return np.log(np.asarray(theta)[:, y])


def _setup(alpha0, alpha1, *, H, seed, truth=0):
    """Model with exact Dir(alpha0) draws, one augmented model with Dir(alpha1) draws."""
    rng = np.random.default_rng(seed)
    orig = _frame([truth, 1, 2, 3, 4, 5, 1, 2])
    schema = infer_schema(orig, synthesized=["y"])
    model = ArrayModel(_ll, rng.dirichlet(alpha0, size=H), schema)
    aug = model.with_draws(rng.dirichlet(alpha1, size=H))
    z = _frame([1, 2, 3, 4, 5, 1, 2, 3])
    return model, orig, z, aug


def _exact_loglik(alpha0, alpha1, t=0):
    a0, a1 = np.asarray(alpha0, float), np.asarray(alpha1, float)
    ll = np.log(a1 / (a1[t] - 1.0)) - np.log(a0 / (a0[t] - 1.0))
    ll[t] = 0.0
    return ll


def _run(*args, **kw):
    kw.setdefault("progressbar", False)
    kw["estimator"] = kw.get("estimator", EstimatorSpec()).replace(bootstrap=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ImportanceSamplingWarning)
        return attribute_risk(*args, **kw)


def _p_true(ll, t=0):
    return float(np.exp(ll[t] - np.logaddexp.reduce(ll)))


# ------------------------------------------------------------------ building blocks
def test_truncated_log_mean_matches_direct_computation():
    rng = np.random.default_rng(3)
    H = 400
    logr = rng.standard_normal((2, H, 3)) * 1.5
    logr[:, :, 0] = 0.0  # truth column
    st = RatioStats.from_logp(np.moveaxis(logr, 1, 0), np.zeros(2, dtype=np.int64), tail=0)
    got = truncated_log_mean(st)
    m = tail_size(H)
    for r in range(2):
        for g in range(1, 3):
            x = np.sort(np.exp(logr[r, :, g]))
            u = x[H - m - 1]
            v = np.minimum(x, u)
            want = np.log(v.mean() - 2.0 * v.std() / np.sqrt(H))
            assert got[r, g] == pytest.approx(want, rel=1e-10)
            assert got[r, g] < np.log(np.exp(logr[r, :, g]).mean())
    # the same value from the tails selected in the compiled ratio pass
    st2 = RatioStats.from_logp(np.moveaxis(logr, 1, 0), np.zeros(2, dtype=np.int64), tail=m)
    np.testing.assert_allclose(truncated_log_mean(st2), got, rtol=1e-12)


def test_stabilised_bounds_formula():
    # one record, candidates (truth, c1, c2), m = 2 datasets
    est = {
        "loglik": np.array([[0.0, -0.5, 0.2]]),
        "log_mean_r": np.array([[0.0, -1.0, -2.0]]),
        "log_mean_aug": np.array([[[0.0, -1.2, -1.9], [0.0, -1.3, -1.9]]]),
    }
    est["loglik"] = est["log_mean_aug"].sum(axis=1) - 2 * est["log_mean_r"]
    lo0 = np.array([[0.0, -1.5, -2.5]])
    lo_a = np.array([[[0.0, -1.4, -2.2], [0.0, -1.6, -2.4]]])
    bad0 = np.array([[False, True, False]])
    bad_a = np.array([[[False, False, True], [False, False, False]]])
    lo, hi = stabilised_bounds(est, lo0, lo_a, bad0, bad_a)
    ll = est["loglik"][0]
    # c1: base mean untrusted -> could be arbitrarily large -> loglik unbounded below;
    #     its upper end uses the truncated (lower) base mean
    assert lo[0, 1] == -np.inf
    assert hi[0, 1] == pytest.approx(-1.2 - 1.3 - 2 * (-1.5))
    # c2: first augmented mean untrusted -> unbounded above; lower end uses its truncated mean
    assert hi[0, 2] == np.inf
    assert lo[0, 2] == pytest.approx(-2.2 - 1.9 - 2 * (-2.0))
    assert lo[0, 0] == hi[0, 0] == ll[0]
    assert np.all(lo[0] <= ll) and np.all(hi[0] >= ll)


def test_khat_material_rule_small_and_large_mass():
    g0 = np.array([0, 0, 0])
    flat = np.zeros(4)
    # record 0: an untrusted candidate with tiny mass -> immaterial
    ll0 = np.array([0.0, 0.0, 0.0, -9.0])
    d0 = {"loglik_lo": np.array([0.0, 0.0, 0.0, -np.inf]), "loglik_hi": np.array([0, 0, 0, np.inf])}
    # record 1: the untrusted candidate holds a quarter of the mass -> material
    ll1 = np.zeros(4)
    d1 = {"loglik_lo": np.array([0.0, 0.0, 0.0, -np.inf]), "loglik_hi": np.array([0, 0, 0, 0.0])}
    # record 2: truth second; the candidate above it is untrusted -> could become top
    ll2 = np.array([0.0, 0.001, -50.0, -50.0])
    d2 = {"loglik_lo": np.array([0.0, -np.inf, -50, -50]), "loglik_hi": ll2.copy()}
    p_lo, p_up, mat, _ = _khat_material([ll0, ll1, ll2], [d0, d1, d2], [flat] * 3, g0, 0.01)
    assert mat.tolist() == [False, True, True]
    assert p_up[0] == pytest.approx(1 / 3) and p_lo[0] == 0.0
    assert p_up[1] == pytest.approx(1 / 3) and p_lo[1] == pytest.approx(0.25)
    assert p_up[2] > 0.99
    # records without bounds (other estimators) get nan and no flag
    p_lo, p_up, mat, _ = _khat_material([ll0], [{}], [flat], g0[:1], 0.01)
    assert np.isnan(p_lo[0]) and np.isnan(p_up[0]) and not mat[0]


# ------------------------------------------------------------------ ground truth
def test_light_tails_no_bounds_and_exact_answer():
    """α_t = 40: k̂ small, no mean is untrusted; the estimate matches the closed form."""
    a0 = np.array([40.0, 3, 5, 2, 8, 4])
    a1 = a0 + np.array([0.0, 2, 2, 2, 1, 1])
    model, orig, z, aug = _setup(a0, a1, H=20_000, seed=1)
    res = _run(orig, [z], model=model, records=[0], estimator=EstimatorSpec(augmented=[aug]))
    row = res.records.iloc[0]
    assert row["n_khat_high"] == 0 and "KHAT_HIGH" not in row["flag_codes"]
    # no untrusted mean: no k̂ range (not p_true twice, which would claim no Monte Carlo
    # error); that error is the draw bootstrap's interval
    assert np.isnan(row["p_true_lower"]) and np.isnan(row["p_true_upper"])
    exact = _exact_loglik(a0, a1)
    assert row["p_true"] == pytest.approx(_p_true(exact), abs=0.005)


@pytest.mark.parametrize("seed", range(8))
def test_heavy_tails_bounds_contain_the_truth(seed):
    """α_t = 1.25 (k = 0.8 for every candidate): the estimate cannot be trusted and is flagged;
    the exact log-likelihoods and p_true lie inside the reported bounds (8 seeds)."""
    a0 = np.array([1.25, 3, 5, 2, 8, 4])
    a1 = a0 + np.array([0.0, 2, 2, 2, 1, 1])
    model, orig, z, aug = _setup(a0, a1, H=2_000, seed=100 + seed)
    res = _run(orig, [z], model=model, records=[0], estimator=EstimatorSpec(augmented=[aug]))
    row = res.records.iloc[0]
    d = res.diagnostics[0]
    exact = _exact_loglik(a0, a1)
    assert row["n_khat_high"] >= 1
    bad = d["khat_high"]
    assert np.all(d["loglik_lo"][bad] <= exact[bad]) and np.all(exact[bad] <= d["loglik_hi"][bad])
    assert row["p_true_lower"] <= _p_true(exact) <= row["p_true_upper"]
    assert row["p_true_lower"] < row["p_true"] < row["p_true_upper"]  # a range, not a point
    assert "KHAT_HIGH" in row["flag_codes"]  # every candidate untrusted: p_true could be 1


def test_rules_share_estimates_and_material_flags_are_a_subset():
    a0 = np.array([1.25, 3, 5, 2, 8, 4])
    a1 = a0 + np.array([0.0, 2, 2, 2, 1, 1])
    model, orig, z, aug = _setup(a0, a1, H=1_000, seed=7)
    mat = _run(orig, [z], model=model, estimator=EstimatorSpec(augmented=[aug]))
    anyr = _run(orig, [z], model=model, estimator=EstimatorSpec(augmented=[aug], khat_rule="any"))
    np.testing.assert_array_equal(mat.records["p_true"], anyr.records["p_true"])
    np.testing.assert_array_equal(mat.records["p_true_upper"], anyr.records["p_true_upper"])
    k_any = anyr.records["flag_codes"].str.contains("KHAT_HIGH")
    k_mat = mat.records["flag_codes"].str.contains("KHAT_HIGH")
    assert (k_any == (anyr.records["n_khat_high"] > 0)).all()
    assert not (k_mat & ~k_any).any()
    assert mat.settings["khat_rule"] == "material" and anyr.settings["khat_rule"] == "any"
    s = mat.to_dict()["pareto_khat"]
    assert s["records_with_high_khat"] == int((mat.records["n_khat_high"] > 0).sum())
    assert s["records_high_khat_immaterial"] == int((k_any & ~k_mat).sum())


def test_with_prior_recomputes_bounds_and_flag():
    a0 = np.array([1.25, 3, 5, 2, 8, 4])
    a1 = a0 + np.array([0.0, 2, 2, 2, 1, 1])
    model, orig, z, aug = _setup(a0, a1, H=1_000, seed=11)
    res = _run(orig, [z], model=model, records=[0], estimator=EstimatorSpec(augmented=[aug]))
    # an intruder who is nearly certain of the truth: little mass left for the other candidates
    strong = with_prior(res, prior="truth-weighted:100000", bootstrap=False)
    row = strong.records.iloc[0]
    assert row["p_true"] > 0.99
    assert row["p_true_upper"] - row["p_true"] < 0.01
    assert "KHAT_HIGH" not in row["flag_codes"]
    back = with_prior(strong, prior="uniform", bootstrap=False)
    pd.testing.assert_series_equal(back.records["flag_codes"], res.records["flag_codes"])
    np.testing.assert_allclose(back.records["p_true_upper"], res.records["p_true_upper"])


def test_prior_sensitivity_reports_each_priors_bounds_and_flags():
    # the sweep is what with_prior gives for each prior: a record flagged under one prior and not
    # under another says so in its row, so that averages can leave it out
    a0 = np.array([1.25, 3, 5, 2, 8, 4])
    a1 = a0 + np.array([0.0, 2, 2, 2, 1, 1])
    model, orig, z, aug = _setup(a0, a1, H=1_000, seed=11)
    res = _run(orig, [z], model=model, records=[0], estimator=EstimatorSpec(augmented=[aug]))
    priors = ["uniform", "truth-weighted:100000"]
    sweep = prior_sensitivity(res, priors=priors)
    assert list(sweep["prior"]) == priors
    assert list(sweep.columns[-4:]) == ["p_true_lower", "p_true_upper", "is_top_upper",
                                        "flag_codes"]
    for p, (_, row) in zip(priors, sweep.iterrows(), strict=True):
        ref = with_prior(res, prior=p, bootstrap=False).records.iloc[0]
        for key in ("p_true", "rank_min", "p_true_lower", "p_true_upper", "is_top_upper",
                    "flag_codes"):
            assert row[key] == ref[key]
    assert "KHAT_HIGH" in sweep["flag_codes"].iloc[0]
    assert "KHAT_HIGH" not in sweep["flag_codes"].iloc[1]


def test_khat_rule_arguments_are_validated():
    a0 = np.array([40.0, 3, 5, 2, 8, 4])
    model, orig, z, aug = _setup(a0, a0, H=200, seed=1)
    with pytest.raises(ValidationError, match="khat_rule"):
        _run(orig, [z], model=model, estimator=EstimatorSpec(augmented=[aug], khat_rule="some"))
    with pytest.raises(ValidationError, match="khat_tolerance"):
        _run(orig, [z], model=model, estimator=EstimatorSpec(augmented=[aug], khat_tolerance=-0.1))


# ------------------------------------------------------------------ immaterial heavy tails
def _two_var_setup(a0u, a0v, a1u, a1v, *, H, seed):
    """y = (u, v), independent Dirichlet-categorical parts; truth (0, 0) in record 0."""
    rng = np.random.default_rng(seed)
    du, dv = len(a0u), len(a0v)
    orig = pd.DataFrame(
        {
            "u": pd.Categorical([0, 1, 2, 1], categories=list(range(du))),
            "v": pd.Categorical([0, 1, 1, 2], categories=list(range(dv))),
        }
    )
    schema = infer_schema(orig, synthesized=["u", "v"])

    def ll(records, th):
        u = records["u"].astype(int).to_numpy()
        v = records["v"].astype(int).to_numpy()
        return np.log(th["u"][:, u]) + np.log(th["v"][:, v])

    def draws(au, av):
        return {"u": rng.dirichlet(au, size=H), "v": rng.dirichlet(av, size=H)}

    model = ArrayModel(ll, draws(a0u, a0v), schema)
    aug = model.with_draws(draws(a1u, a1v))
    return model, orig, orig.copy(), aug


@pytest.mark.parametrize("seed", range(6))
def test_immaterial_heavy_tail_is_not_flagged_and_truth_is_inside(seed):
    """The v-candidates' base means are heavy-tailed (α_t = 1.1, k = 0.9), but the released
    data make them unlikely (α'_t = 61.1): whatever their true mean, they cannot hold more
    than a sliver of the posterior. Not flagged; the exact p_true is inside the bounds and
    within the tolerance of the estimate."""
    a0u, a1u = np.array([30.0, 20, 25]), np.array([40.0, 22, 26])
    a0v, a1v = np.array([1.1, 4, 3, 6]), np.array([61.1, 5, 3, 7])
    model, orig, z, aug = _two_var_setup(a0u, a0v, a1u, a1v, H=4_000, seed=300 + seed)
    res = _run(orig, [z], model=model, records=[0], estimator=EstimatorSpec(augmented=[aug]))
    row = res.records.iloc[0]
    cs = res.candidates[0]
    exact = np.zeros(cs.size)
    for g in range(cs.size):
        cu, cv = (int(x) for x in cs.values[g])
        if cu != 0:
            exact[g] = _exact_loglik(a0u, a1u)[cu]
        elif cv != 0:
            exact[g] = _exact_loglik(a0v, a1v)[cv]
    p_exact = _p_true(exact, t=cs.g0)
    d = res.diagnostics[0]
    assert d["khat_high"].sum() >= 1  # some v-candidate's k̂ is high ...
    assert "KHAT_HIGH" not in row["flag_codes"]  # ... but immaterial
    bad = d["khat_high"]
    assert np.all(d["loglik_lo"][bad] <= exact[bad]) and np.all(exact[bad] <= d["loglik_hi"][bad])
    # the trusted (light-tailed) means keep their Monte Carlo error (H = 4,000: SE of p_true
    # about 0.001, reported by the draw bootstrap), hence the 0.003 margin
    assert row["p_true_lower"] - 0.003 <= p_exact <= row["p_true_upper"] + 0.003
    assert row["p_true_upper"] - row["p_true"] <= 0.01
    assert abs(row["p_true"] - p_exact) < 0.01


# ------------------------------------------------------------------ DPMPM, long-run reference
@pytest.mark.slow
def test_dpmpm_truncated_bound_below_long_run_mean():
    """DPMPM (K = 10) on 300 ACS-like records, 6 variables: for every candidate mean whose k̂
    is above the threshold with H = 400 draws, the truncated lower bound lies below the same
    mean computed from an independent run of 40,000 draws (the reference; Monte Carlo error
    of the reference about 0.01 on the log scale, the smallest margin seen is 0.03)."""
    from bayes_risk.attribute.diagnostics import khat_threshold
    from bayes_risk.data import make_acs_like
    from bayes_risk.models.dpmpm.dpmpm import DPMPM

    df = make_acs_like(300, random_seed=3).iloc[:, :6].reset_index(drop=True)

    def fit(draws, seed):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return DPMPM(n_components=10,
                         sampling=Sampling(tune=500, draws=draws), progressbar=False).fit(
                df, random_seed=seed
            )

    small, big = fit(400, 1), fit(40_000, 2)
    g0 = np.zeros(len(df), dtype=np.int64)
    st = RatioStats.from_logp(small.neighbourhood_loglik(df), g0, tail=tail_size(400))
    from bayes_risk.attribute.diagnostics import khat_from_tails

    k = khat_from_tails(*st.tails).reshape(st.mx.shape)
    bad = k > khat_threshold(400)
    bad[:, 0] = False
    assert bad.sum() >= 5  # the check is not empty
    lo = truncated_log_mean(st)
    # the reference only for the records with a flagged candidate: a record's likelihoods and
    # ratio means do not depend on the other records, and 80,000 draws of all 300 records cost
    # a third of this test
    rows = np.flatnonzero(bad.any(axis=1))
    ref = RatioStats.from_logp(big.neighbourhood_loglik(df.iloc[rows]), g0[rows]).log_mean()
    assert np.all(lo[rows][bad[rows]] <= ref[bad[rows]])


# ------------------------------------------------------------------ invariants
@given(
    st_h.lists(st_h.floats(-20, 20), min_size=2, max_size=8),
    st_h.data(),
)
@settings(max_examples=200, deadline=None)
def test_bounds_bracket_p_true_and_flags_are_monotone(ll_list, data):
    """p_true_lower ≤ p_true ≤ p_true_upper for any intervals around the estimates, and a
    looser tolerance never flags more."""
    ll = np.array(ll_list)
    g = ll.size
    t = data.draw(st_h.integers(0, g - 1))
    ll[t] = 0.0
    down = np.array(
        data.draw(st_h.lists(st_h.sampled_from([0.0, 0.5, 3.0, np.inf]), min_size=g, max_size=g))
    )
    up = np.array(
        data.draw(st_h.lists(st_h.sampled_from([0.0, 0.5, 3.0, np.inf]), min_size=g, max_size=g))
    )
    down[t] = up[t] = 0.0
    d = {"loglik_lo": ll - down, "loglik_hi": ll + up}
    lp = np.full(g, -np.log(g))
    p = float(np.exp(ll[t] - np.logaddexp.reduce(ll)))
    p_lo, p_up, m1, top1 = _khat_material([ll], [d], [lp], np.array([t]), 0.01)
    if not (np.any(down > 0) or np.any(up > 0)):  # every interval a point: no range
        assert np.isnan(p_lo[0]) and np.isnan(p_up[0]) and not m1[0]
        return
    assert p_lo[0] <= p * (1 + 1e-12) and p <= p_up[0] * (1 + 1e-12)
    # the truth ranked first now can be ranked first within its bounds
    assert top1[0] == 1.0 or ll[t] < np.max(np.delete(ll, t), initial=-np.inf)
    _, _, m2, _ = _khat_material([ll], [d], [lp], np.array([t]), 0.2)
    assert m1[0] or not m2[0]
    if not (np.any(np.isinf(down)) or np.any(down > 0)):
        assert not m1[0]  # nothing can raise p_true: never flagged
