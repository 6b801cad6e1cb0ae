"""Unit tests of the attribute-risk building blocks against the SPEC §2 worked examples."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest

from bayes_risk.attribute.candidates import (
    CandidateSpec,
    GridSpec,
    SpatialGridSpec,
    build_candidates,
    full_size,
    grid_points,
    neighbourhood_size,
    one_variable_codes,
    parse_candidates,
    product_codes,
    spatial_points,
    with_zero_fallback,
)
from bayes_risk.attribute.diagnostics import (
    gpdfit,
    khat_threshold,
    kish_ess,
    pareto_khat,
    psis_log_mean,
    tail_size,
)
from bayes_risk.attribute.priors import (
    Empirical,
    PriorInputs,
    TruthWeighted,
    Uniform,
    UserWeights,
    evaluate_prior,
    parse_prior,
)
from bayes_risk.attribute.summaries import (
    largest_value,
    low_risk_posterior,
    paiva_measures,
    posterior,
    rank_summary,
    record_summary,
    wang_reiter,
)
from bayes_risk.data import infer_schema
from bayes_risk.exceptions import DataWarning, ValidationError

RTOL, ATOL = 1e-6, 1e-9

ACS_LEVELS = (2, 4, 6, 4, 5, 2, 7, 3, 3, 2, 2, 3, 3, 2)


# ----------------------------------------------------------------------------- §2.1
def test_posterior_log_space_example():
    ll = np.array([-1000.0, -1001.0, -1003.0])
    with np.errstate(all="ignore"):
        naive = np.exp(ll) / np.exp(ll).sum()
    assert np.all(np.isnan(naive))  # the naive computation underflows to 0/0
    np.testing.assert_allclose(posterior(ll), [0.705385, 0.259496, 0.035119], rtol=RTOL, atol=1e-6)
    lp = np.log([0.5, 0.25, 0.25])
    np.testing.assert_allclose(posterior(ll, lp), [0.827244, 0.152163, 0.020593], atol=1e-6)


def test_posterior_all_impossible_gives_nan():
    assert np.all(np.isnan(posterior(np.full(3, -np.inf))))


# ----------------------------------------------------------------------------- §2.3
def test_acs14_neighbourhood_sizes():
    assert neighbourhood_size(ACS_LEVELS) == 35
    assert full_size(ACS_LEVELS) == 8_709_120
    truth = np.zeros((1, 14), dtype=np.int64)
    assert one_variable_codes(truth, ACS_LEVELS).shape == (1, 35, 14)


def test_one_variable_order_and_truth_once():
    truth = np.array([[1, 0], [0, 2]])
    c = one_variable_codes(truth, (3, 3))
    # truth first, then column 0 levels ascending skipping truth, then column 1
    np.testing.assert_array_equal(c[0], [[1, 0], [0, 0], [2, 0], [1, 1], [1, 2]])
    for r in range(2):
        assert np.sum(np.all(c[r] == truth[r], axis=1)) == 1
        assert len(np.unique(c[r], axis=0)) == c.shape[1]


def test_product_codes_and_cap():
    pc = product_codes((2, 3))
    assert pc.shape == (6, 2) and len(np.unique(pc, axis=0)) == 6
    df = pd.DataFrame({"a": pd.Categorical(list("xyz")), "b": pd.Categorical(list("uvw"))})
    schema = infer_schema(df, synthesized=["a", "b"])
    cs = build_candidates({"a": 2, "b": 1}, ["a", "b"], schema, "full")
    assert cs.size == 9 and tuple(cs.values[cs.g0]) == (2.0, 1.0)
    with pytest.raises(ValidationError, match="max_candidates"):
        build_candidates(
            {"a": 0, "b": 0}, ["a", "b"], schema, CandidateSpec("product", max_candidates=5)
        )


def test_additive_grid_example():
    pts, g0 = grid_points(11.6, GridSpec("additive", 2.5, 2.5, 11))
    np.testing.assert_allclose(pts, np.linspace(9.1, 14.1, 11), rtol=RTOL, atol=ATOL)
    assert g0 == 5 and pts[g0] == 11.6


def test_percent_grid_negative_and_truth_insertion():
    pts, g0 = grid_points(-10.0, GridSpec("percent", 0.1, 0.1, 11))
    assert pts[0] == pytest.approx(-11.0) and pts[-1] == pytest.approx(-9.0)
    assert pts[g0] == -10.0 and np.sum(pts == -10.0) == 1
    pts, g0 = grid_points(5.0, GridSpec("percent", 0.1, 0.1, 10))  # even: truth not a grid point
    assert pts.size == 10 and pts[g0] == 5.0 and np.sum(pts == 5.0) == 1


def test_zero_value_percent_grid():
    with pytest.raises(ValidationError, match="ZERO_VALUE_PERCENT_GRID|degenerate") as e:
        grid_points(0.0, GridSpec("percent"), column="Income")
    assert e.value.code == "ZERO_VALUE_PERCENT_GRID"
    pts, g0 = grid_points(0.0, GridSpec("percent", zero_fallback=("additive", 1.0)))
    assert pts[0] == -1.0 and pts[-1] == 1.0 and pts[g0] == 0.0


def test_with_zero_fallback_states_a_width_per_percent_grid():
    """The rule of `bayes-risk attribute` and of the audit: the percent grid's fraction times the
    column's median non-zero |value| (1 without one); other grids and given fallbacks kept."""
    df = pd.DataFrame({"inc": [0.0, -20.0, 30.0, 40.0, np.nan], "exp": [0.0] * 5,
                       "kids": [0, 1, 2, 3, 4]})
    s = with_zero_fallback(parse_candidates("one-variable,grid:percent:0.2:5"), df,
                           ["inc", "exp"])
    assert s.grids["inc"] == GridSpec("percent", 0.2, 0.2, 5, zero_fallback=("additive", 6.0))
    assert s.grids["exp"].zero_fallback == ("additive", 1.0)
    assert "kids" not in s.grids and s.rule == "one_variable"
    pts, g0 = grid_points(0.0, s.grids["inc"], column="inc")
    assert pts[0] == -6.0 and pts[-1] == 6.0 and pts[g0] == 0.0
    assert s.to_dict()["grids"]["inc"]["zero_fallback"] == ("additive", 6.0)
    given = CandidateSpec(grids={"inc": GridSpec(zero_fallback=("additive", 2.0))})
    assert with_zero_fallback(given, df, ["inc"]) is given
    additive = parse_candidates("one-variable,grid:additive:5")
    assert with_zero_fallback(additive, df, ["inc"]) is additive


def test_fixed_and_explicit_grids():
    with pytest.raises(ValidationError, match="outside the fixed grid"):
        grid_points(20.0, GridSpec("fixed", bounds=(0.0, 10.0)))
    pts, g0 = grid_points(3.3, GridSpec("explicit", values=(1.0, 2.0, 4.0)))
    np.testing.assert_allclose(pts, [1.0, 2.0, 3.3, 4.0])
    assert g0 == 2
    pts, g0 = grid_points(7, GridSpec("additive", 2.2, 2.2, 5), integer=True)
    assert np.all(pts == np.round(pts)) and pts[g0] == 7


def test_spatial_sizes():
    pts, g0 = spatial_points((50, 50), SpatialGridSpec(("x", "y"), 1.0, 2.0))
    assert pts.shape == (25, 2) and tuple(pts[g0]) == (50.0, 50.0)
    pts, g0 = spatial_points((50, 50), SpatialGridSpec(("x", "y"), 1.0, 2.0, disk=True))
    assert pts.shape == (13, 2) and tuple(pts[g0]) == (50.0, 50.0)


def test_mixed_candidate_sets():
    df = pd.DataFrame({"c": pd.Categorical(list("ab")), "x": [1.0, 2.0]})
    schema = infer_schema(df, synthesized=["c", "x"])
    spec = CandidateSpec("product", default_grid=GridSpec("additive", 1, 1, 3))
    cs = build_candidates({"c": 0, "x": 2.0}, ["c", "x"], schema, spec)
    assert cs.size == 6 and tuple(cs.values[cs.g0]) == (0.0, 2.0)
    spec1 = CandidateSpec("one_variable", default_grid=GridSpec("additive", 1, 1, 3))
    cs1 = build_candidates({"c": 0, "x": 2.0}, ["c", "x"], schema, spec1)
    assert cs1.size == 1 + 1 + 2 and cs1.g0 == 0


def test_parse_candidates():
    assert parse_candidates("one-variable").rule == "one_variable"
    assert parse_candidates("full").rule == "product"
    s = parse_candidates("grid:percent:0.1:11")
    assert s.rule == "product" and s.default_grid.n_points == 11 and s.default_grid.lower == 0.1
    assert parse_candidates("k-different:2").k == 2
    with pytest.raises(ValidationError, match="not understood"):
        parse_candidates("neighbours")


# ----------------------------------------------------------------------------- §2.4
def _inputs(values, g0, others, cat=(True,)):
    return PriorInputs(
        records=np.array([0]),
        values=[np.asarray(values, float)],
        g0=np.array([g0]),
        columns=("v",),
        categorical=np.array(cat),
        others=np.asarray(others, float),
    )


def test_truth_weighted_example():
    inp = _inputs([[0], [1]], 1, [[1], [0]])
    lp, _ = evaluate_prior(TruthWeighted(2), inp)
    np.testing.assert_allclose(np.exp(lp[0]), [1 / 3, 2 / 3], rtol=RTOL)


def test_empirical_example():
    # candidates (A, B, C) = codes (0, 1, 2); record 0 holds A, others hold A x3 and B x1
    others = [[0], [0], [0], [0], [1]]
    inp = _inputs([[0], [1], [2]], 0, others)
    lp, _ = evaluate_prior(Empirical(1), inp)
    np.testing.assert_allclose(np.exp(lp[0]), [4 / 7, 2 / 7, 1 / 7], rtol=RTOL, atol=ATOL)


def test_empirical_continuous_kde_and_uniform_and_user():
    inp = _inputs([[1.0], [2.0], [10.0]], 1, [[2.0], [1.9], [2.1], [2.05]], cat=(False,))
    p = np.exp(evaluate_prior(Empirical(), inp)[0][0])
    assert p.sum() == pytest.approx(1.0) and p[1] > p[0] > p[2]
    u = np.exp(evaluate_prior(Uniform(), inp)[0][0])
    np.testing.assert_allclose(u, 1 / 3)
    with pytest.warns(DataWarning, match="renormalised"):
        lp, codes = evaluate_prior(UserWeights([1.0, 1.0, 2.0]), inp)
    assert "PRIOR_RENORMALISED" in codes
    np.testing.assert_allclose(np.exp(lp[0]), [0.25, 0.25, 0.5])
    with pytest.raises(ValidationError, match="shape"):
        evaluate_prior(UserWeights([1.0, 1.0]), inp)


def test_parse_prior():
    assert isinstance(parse_prior("uniform"), Uniform)
    assert parse_prior("truth-weighted:2").kappa == 2
    assert parse_prior("empirical:0.5").alpha == 0.5
    with pytest.raises(ValidationError, match="not understood"):
        parse_prior("flat")
    with pytest.raises(ValidationError, match="kappa"):
        parse_prior("truth-weighted:-1")


# ----------------------------------------------------------------------------- §2.7
def test_gpdfit_reference_values():
    assert gpdfit([5, 3, 2, 4, 1])[0] == pytest.approx(0.1265339, abs=1e-7)
    assert gpdfit([5, 3, 2, 4, 1], wip=False)[0] == pytest.approx(-0.6203983, abs=1e-7)


def test_pareto_khat_fixtures_vectorised():
    u = (np.arange(1, 101) - 0.5) / 100
    lr = np.stack([np.log(u**-0.5), np.log(1 / u), np.zeros(100), np.full(100, -np.inf)])
    k = pareto_khat(lr)
    assert k[0] == pytest.approx(0.491960, abs=1e-6)
    assert k[1] == pytest.approx(0.777800, abs=1e-6)
    assert k[2] == np.inf
    assert np.isnan(k[3])
    assert pareto_khat(np.zeros(10)) == np.inf  # M < 5
    assert np.isnan(pareto_khat(np.full(10, -np.inf)))
    assert khat_threshold(100) == pytest.approx(0.5)
    assert khat_threshold(10_000) == pytest.approx(0.7)


def _khat_cases(rng, n_rows, s):
    """Random log-ratio rows with -inf entries, constant tails, heavy tails, ties and nan/inf."""
    x = rng.standard_normal((n_rows, s)) * rng.uniform(0.05, 6.0, (n_rows, 1))
    x[::7, : s // 2] = -np.inf  # half the ratios zero
    x[1::11, rng.random(s) < 0.9] = -np.inf  # mostly zero: tail reaches -inf
    x[2::11] = -np.inf  # all zero -> nan
    x[3::13] = 0.0  # all equal -> +inf
    x[4::13, -(s // 3) :] = 1.5  # constant tail -> +inf
    x[5::17] = np.log(rng.pareto(0.5, s) + 1e-300)  # very heavy tail
    x[6::17] = -np.log(rng.random(s))  # exponential-tailed ratios
    x[7::19, 3] = np.nan
    x[8::19, 5] = np.inf
    x[9::23] = np.round(rng.standard_normal(s), 1)  # many ties
    x[10::23] = -800.0  # exceedances underflow to 0 -> +inf
    x[10::23, 0] = 0.0
    return x


def _khat_arviz(row, m):
    """k̂ of one row by arviz-stats' own PSIS tail fit (``nan`` where it declines the row)."""
    from arviz_stats.base import array_stats

    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            return array_stats._ps_tail(row, row.size, m, tail="right", log_weights=True)[1]
    except ValueError:  # constant tail
        return np.nan


@pytest.mark.parametrize("s", [30, 100, 1000, 3000])
def test_pareto_khat_matches_arviz_stats(s):
    rng = np.random.default_rng(s)
    x = _khat_cases(rng, 600, s)
    a = pareto_khat(x)
    # nan where a ratio is nan or +inf or all are -inf; +inf where the tail is constant or an
    # exceedance over the cutoff is not positive (underflow)
    m = tail_size(s)
    mx = x.max(axis=1)
    bad = ~np.isfinite(mx)
    with np.errstate(invalid="ignore", over="ignore"):
        top = np.sort(x - mx[:, None], axis=1)[:, s - m - 1 :]
        exc = np.exp(top[:, 1:]) - np.exp(top[:, :1])
    flat = (top[:, -1] - top[:, 1] < np.finfo(float).eps / 100) | ~np.all(exc > 0, axis=1)
    np.testing.assert_array_equal(np.isnan(a), bad)
    np.testing.assert_array_equal(np.isposinf(a), ~bad & flat)
    # the rest against arviz-stats' Zhang-Stephens fit with the weakly informative prior (which
    # declines rows whose first quartile equals the minimum exceedance: ties)
    ref = np.array([np.nan if bad[r] or flat[r] else _khat_arviz(x[r], m) for r in range(600)])
    fin = np.isfinite(ref)
    assert fin.sum() > 300
    np.testing.assert_allclose(a[fin], ref[fin], rtol=1e-10, atol=0)
    # shape handling and chunk/thread-split invariance
    x3 = x[:600].reshape(20, 30, s)
    np.testing.assert_array_equal(pareto_khat(x3), a.reshape(20, 30))
    # strided [R, G, H] view of an [R, H, G] array, as the engine passes it
    logr = np.ascontiguousarray(np.moveaxis(x3, 2, 1))
    np.testing.assert_array_equal(pareto_khat(np.moveaxis(logr, 1, -1)), a.reshape(20, 30))
    np.testing.assert_array_equal(pareto_khat(x3[None, :, :4]), a.reshape(20, 30)[None, :, :4])
    np.testing.assert_array_equal(pareto_khat(x, chunk=7), a)


def test_khat_tails_selects_largest_sorted():
    from bayes_risk.attribute._kernels import khat_tails

    rng = np.random.default_rng(5)
    for s, m in [(100, 20), (1000, 95), (37, 36)]:
        x = _khat_cases(rng, 200, s)
        top, bad = khat_tails(x[None], m)
        top_t, bad_t = khat_tails(np.moveaxis(x.reshape(20, 10, s), 1, 0), m)  # strided view
        top_ref = top.reshape(20, 10, m + 1).transpose(1, 0, 2).reshape(200, m + 1)
        np.testing.assert_array_equal(top_t, top_ref)
        np.testing.assert_array_equal(bad_t, bad.reshape(20, 10).T.ravel())
        mx = x.max(axis=1)
        exp_bad = ~np.isfinite(mx)
        np.testing.assert_array_equal(bad, exp_bad)
        ref = np.sort(x[~exp_bad] - mx[~exp_bad, None], axis=1)[:, s - m - 1 :]
        np.testing.assert_array_equal(top[~exp_bad], ref)


def test_psis_log_mean_close_to_plain_for_light_tails():
    rng = np.random.default_rng(0)
    lr = rng.normal(0, 0.3, size=(3, 2000))
    lm, k = psis_log_mean(lr)
    plain = np.log(np.mean(np.exp(lr), axis=1))
    np.testing.assert_allclose(lm, plain, atol=5e-3)
    assert np.all(k < 0.5)


def test_kish_ess():
    q = np.log(np.array([0.620253, 0.265823, 0.113924]))
    assert kish_ess(q) == pytest.approx(2.135135, rel=1e-5)
    assert kish_ess(np.zeros(7)) == pytest.approx(7.0)


# ----------------------------------------------------------------------------- §2.8 / §2.9
def test_record_summary_example():
    s = record_summary(np.array([0.30, 0.30, 0.25, 0.15]), 1)
    assert s["p_true"] == pytest.approx(0.30)
    assert (s["rank_min"], s["n_tie"], s["rank_avg"], s["is_top"], s["top_share"]) == (
        1,
        2,
        1.5,
        True,
        0.5,
    )
    assert s["map_set"] == [0, 1] and s["map_value"] == 0 and s["baseline"] == 0.25


def test_rank_summary_ties_within_tolerance():
    lp = np.log(np.array([[1 / 3 + 1 / 6, 0.5 * (1 + 1e-12), 0.0 + 1e-300]]))
    rs = rank_summary(lp, np.array([0]))
    assert rs["rank_min"][0] == 1 and rs["n_tie"][0] == 2


def test_record_summary_marginals_and_errors():
    cands = np.array([[10.0], [11.0], [12.0]])
    s = record_summary(np.array([0.2, 0.5, 0.3]), 0, cands)
    assert s["marginals"] == [pytest.approx(0.2)]
    assert s["abs_err"] == [pytest.approx(1.0)]
    assert s["E_dist"] == pytest.approx(0.5 * 1 + 0.3 * 2)


def test_paiva4():
    posts = [
        np.array(p) for p in ((0.5, 0.3, 0.2), (0.2, 0.5, 0.3), (0.4, 0.4, 0.2), (0.1, 0.1, 0.8))
    ]
    locs = [np.array([[0, 0], [1, 0], [0, 2]], float)] * 4
    out = paiva_measures(posts, [0, 0, 1, 2], locs, [True, False, True, True])
    assert out["pct_true_is_map"] == pytest.approx(75.0)
    assert out["pct_true_is_map_shared"] == pytest.approx(62.5)
    assert out["pct_true_is_map_unique"] == pytest.approx(100.0)
    np.testing.assert_allclose(out["dist_map"], [0, 1, 0.5, 0])


def test_wang_reiter_example():
    cl = np.array([[3, 4], [0, 5], [6, 8]], float)
    others = np.array([[1, 1], [6, 0], [7, 0], [5, 5]], float)
    out = wang_reiter(np.ones(3) / 3, cl, np.zeros(2), others)
    assert out["R1"] == pytest.approx(6.666667, rel=1e-6)
    assert out["R2"] == 2
    mc = wang_reiter(np.ones(3) / 3, cl, np.zeros(2), others, n_mc=20_000, random_seed=1)
    # MC mean of distances in {5, 5, 10}: sd 2.36 / sqrt(20000) = 0.017; 4 SE = 0.07
    assert mc["R1"] == pytest.approx(6.666667, abs=0.07)
    loc, post, flags = low_risk_posterior(np.array([[0, 0], [1, 1]]), np.array([1, 1]))
    assert flags == ["APPROX_LOW_RISK"] and post.tolist() == [0.5, 0.5]
    assert loc.tolist() == [[1, 1], [0, 0]]  # the truth first
    loc, post, _ = low_risk_posterior(np.array([[2, 2], [3, 3], [2, 2]]), np.array([1, 1]))
    assert loc.tolist() == [[1, 1], [2, 2], [3, 3]] and post.tolist() == [0.0, 2 / 3, 1 / 3]


def test_largest_value_example():
    out = largest_value(np.array([0.1, 0.2, 0.4, 0.2, 0.1]), np.arange(100, 105), 102, delta=0.01)
    assert out["interval_lo"] == pytest.approx(100.98) and out["interval_hi"] == pytest.approx(
        103.02
    )
    assert out["P_interval"] == pytest.approx(0.8)
    assert out["mode"] == 102 and out["relative_error"] == 0


def test_largest_value_risk_refusals():
    """The largest-value intruder's own arguments are checked before the model is read; a model
    without the largest-value likelihood is refused by name."""
    from bayes_risk.attribute.largest_value import largest_value_risk
    from bayes_risk.exceptions import ValidationError
    from bayes_risk.models import CARTSynthesizer

    df = pd.DataFrame({"wages": [1, 2, 30]})
    for delta in (0, -0.1, float("nan"), "0.1"):
        with pytest.raises(ValidationError, match="delta must be a finite number > 0"):
            largest_value_risk(None, df, None, "wages", delta=delta)
    with pytest.raises(ValidationError, match="scenario"):
        largest_value_risk(None, df, None, "wages", scenario="worst_case")
    # a Python caller is told the function that fits one, not the command
    with pytest.raises(ValidationError, match=r"largest-value likelihood \(a Poisson-mixture "
                       r"model, fit_model\(original, 'poisson-mixture'\)\); CARTSynthesizer "
                       "has none"):
        largest_value_risk(CARTSynthesizer(), df, None, "wages")


def test_khat_threshold_small():
    assert math.isinf(khat_threshold(1))


def test_select_places_kth_value_on_ties_and_orders():
    """``_select`` (branch-free quickselect) leaves ``a[k]`` the ``k``-th smallest value with no
    larger value before it and no smaller one after it, the values unchanged as a multiset —
    also when most values tie (all equal, long runs of ``-inf``), sorted or reversed."""
    from bayes_risk.attribute._kernels import _select

    rng = np.random.default_rng(13)
    cases = [
        np.zeros(200),
        np.full(97, -np.inf),
        np.r_[np.full(150, -np.inf), rng.normal(size=50)],
        np.arange(300, dtype=float),
        np.arange(300, dtype=float)[::-1].copy(),
        np.repeat(rng.normal(size=7), 31),
        rng.standard_cauchy(1000),
        rng.normal(size=2),
        np.array([1.5]),
    ]
    for v in cases:
        ref = np.sort(v)
        for k in sorted({0, len(v) // 3, len(v) // 2, len(v) - 1}):
            a = v.copy()
            _select(a, k)
            assert a[k] == ref[k]
            assert np.all(a[:k] <= a[k]) and np.all(a[k:] >= a[k])
            np.testing.assert_array_equal(np.sort(a), ref)


def test_top_sorted_adversarial_orders_use_exact_fallback():
    """The sampled threshold of ``_top_sorted`` can miss (sorted chains, long ties): the result
    must still be the exact ``k`` largest values, ascending."""
    from bayes_risk.attribute._kernels import _top_sorted

    rng = np.random.default_rng(11)
    s, k = 1000, 96
    cases = [
        np.arange(s, dtype=float),  # increasing: the strided sample is exact
        np.arange(s, dtype=float)[::-1].copy(),
        np.r_[np.zeros(s - 10), np.arange(10.0)],  # long tie below the tail
        np.r_[np.full(900, -np.inf), rng.normal(size=100)],  # mostly dropped draws
        np.repeat(rng.normal(size=10), 100),  # heavy ties everywhere
        rng.standard_cauchy(s),
    ]
    for v in cases:
        out = np.empty(k)
        small = np.empty(4 * k)
        _top_sorted(v.copy(), s, k, out, small)
        np.testing.assert_array_equal(out, np.sort(v)[-k:])


def test_ratio_pass_tails_equal_khat_tails_on_adversarial_orders():
    """The Pareto tails gathered inside ``ratio_pass`` (sampled thresholds on whole draw rows)
    are exactly ``khat_tails``' on ratios whose thresholds miss (sorted chains, long ties,
    mostly dropped draws), with a draw count that is not a multiple of the row block."""
    from bayes_risk.attribute._kernels import khat_tails, ratio_pass

    rng = np.random.default_rng(12)
    H, m = 1003, 95
    cols = [
        np.arange(H, dtype=float),
        np.arange(H, dtype=float)[::-1].copy(),
        np.r_[np.zeros(H - 10), np.arange(10.0)],
        np.repeat(rng.normal(size=17), 59),
        rng.standard_cauchy(H),
        rng.normal(size=H),
    ]
    G = len(cols) + 1
    logp = np.empty((H, 3, G))
    for r in range(3):
        logp[:, r, 0] = 0.0  # the truth
        for g, c in enumerate(cols, start=1):
            logp[:, r, g] = rng.permutation(c) if r == 2 else c
    logp[:900, 1, 0] = -np.inf  # record 1: most draws dropped
    g0 = np.zeros(3, dtype=np.int64)
    X = np.empty_like(logp)
    mx, n_ok, top, bad = ratio_pass(logp, g0, X, m)
    logr = logp - np.where(np.isfinite(logp[:, :, :1]), logp[:, :, :1], 0.0)
    logr[~np.isfinite(logp[:, :, 0])] = -np.inf
    top_ref, bad_ref = khat_tails(np.moveaxis(logr, 0, -1), m)
    np.testing.assert_array_equal(bad, bad_ref)
    np.testing.assert_array_equal(top, top_ref)
    np.testing.assert_array_equal(n_ok, [H, H - 900, H])


def test_neg_outer_equals_numpy_broadcast():
    from bayes_risk.attribute._kernels import neg_outer

    rng = np.random.default_rng(4)
    theta, x = rng.normal(size=(9, 41)), rng.exponential(size=(9, 135))
    np.testing.assert_array_equal(
        neg_outer(theta, x), np.multiply((-theta)[:, :, None], x[:, None, :])
    )


def test_ratio_stats_from_logp_matches_reference_path():
    """``RatioStats.from_logp`` (one compiled pass) equals ``RatioStats(log_ratios(...))`` and
    the separate k̂ / published-estimator computations, including dropped draws, impossible
    candidates and ``nan`` ratios."""
    from bayes_risk.attribute.diagnostics import khat_from_tails, tail_size
    from bayes_risk.attribute.estimator import RatioStats, is_estimate, log_ratios

    rng = np.random.default_rng(3)
    H, R, G, m = 400, 7, 5, 3
    logp = rng.normal(scale=3.0, size=(H, R, G))
    g0 = rng.integers(0, G, R)
    logp[:10, 1, g0[1]] = -np.inf  # 10 dropped draws for record 1
    logp[:, 2, (g0[2] + 1) % G] = -np.inf  # an impossible candidate
    logp[5, 3, (g0[3] + 2) % G] = np.nan
    L = rng.normal(scale=20.0, size=(H, m))
    logr, ndrop = log_ratios(np.moveaxis(logp, 0, 1), g0)
    ref = RatioStats(logr)
    M = tail_size(H)
    st = RatioStats.from_logp(logp, g0, tail=M, L=L)
    np.testing.assert_array_equal(st.finite, ref.finite)
    np.testing.assert_array_equal(st.n_ok, ref.n_ok)
    np.testing.assert_array_equal(st.n_dropped, ndrop)
    for a in ("mx", "s1", "s2"):
        np.testing.assert_allclose(getattr(st, a), getattr(ref, a), rtol=1e-12)
    np.testing.assert_allclose(st.E, ref.E, rtol=1e-13, atol=0)
    np.testing.assert_array_equal(st.logr, logr)  # formed lazily on request
    k_ref = pareto_khat(np.moveaxis(logr, 1, -1))
    np.testing.assert_array_equal(khat_from_tails(*st.tails).reshape(R, G), k_ref)
    fast = is_estimate(None, L, stats=st)
    slow = is_estimate(logr, L, stats=ref)
    for key in ("loglik", "logphat", "ess_omega", "max_omega", "ess_q"):
        np.testing.assert_allclose(fast[key], slow[key], rtol=1e-10, equal_nan=True)


def test_ratio_pass_sees_one_array_layout():
    """``RatioStats.from_logp`` gives the compiled ratio pass C-contiguous likelihoods whatever
    their layout (a strided ``moveaxis`` view, Fortran order), so the kernel is compiled once
    per process (issue 47), and the statistics do not depend on the layout."""
    from bayes_risk.attribute._kernels import ratio_pass
    from bayes_risk.attribute.diagnostics import tail_size
    from bayes_risk.attribute.estimator import RatioStats

    rng = np.random.default_rng(5)
    R, H, G = 4, 120, 6
    logp_rhg = rng.normal(scale=2.0, size=(R, H, G))
    g0 = rng.integers(0, G, R)
    views = [np.ascontiguousarray(np.moveaxis(logp_rhg, 1, 0)), np.moveaxis(logp_rhg, 1, 0),
             np.asfortranarray(np.moveaxis(logp_rhg, 1, 0))]
    assert not views[1].flags.c_contiguous and views[2].flags.f_contiguous
    stats = [RatioStats.from_logp(v, g0, tail=tail_size(H)) for v in views]
    for st in stats[1:]:
        for a in ("mx", "s1", "s2", "n_ok", "E"):
            np.testing.assert_array_equal(getattr(st, a), getattr(stats[0], a))
        np.testing.assert_array_equal(st.tails[0], stats[0].tails[0])
    assert {sig[0].layout for sig in ratio_pass.signatures} == {"C"}


def test_bootstrap_product_does_not_depend_on_blas_threads_or_columns():
    """The draw bootstrap's ``counts @ E`` gives the same bits with one or two BLAS threads (a
    Dask worker runs one) and for any slice of the columns (a record's chunk), and equals the
    plain product to rounding."""
    from threadpoolctl import threadpool_limits

    from bayes_risk.attribute.estimator import _product_by_blocks, bootstrap_counts

    rng = np.random.default_rng(8)
    # B = 200 replicates of 1,000 draws (the engine's default B): two OpenBLAS threads sum a
    # plain product over the draws in another order than one
    counts = bootstrap_counts(rng, 200, 1000)
    E = rng.random((1000, 37 * 35))
    ref = _product_by_blocks(counts, E)
    for limit in (1, 2):
        with threadpool_limits(limits=limit, user_api="blas"):
            np.testing.assert_array_equal(_product_by_blocks(counts, E), ref)
    np.testing.assert_array_equal(_product_by_blocks(counts, E[:, 35 * 3 : 35 * 30]),
                                  ref[:, 35 * 3 : 35 * 30])
    np.testing.assert_allclose(ref, counts @ E, rtol=1e-12)


def test_khat_background_fits_equal_synchronous_fits_and_any_row_split():
    """The k̂ fits started in the background after a ratio pass (``RatioStats.start_khat``) give
    bitwise the k̂ of the synchronous fits, whatever the split of the rows over threads and
    the block size (rows are fitted independently); constant and unusable tails keep
    ``inf`` / ``nan``."""
    from bayes_risk.attribute.diagnostics import KhatJob, khat_from_tails, tail_size
    from bayes_risk.attribute.estimator import RatioStats

    rng = np.random.default_rng(11)
    H, R, G = 300, 9, 6
    logp = rng.standard_t(3, size=(H, R, G)) * 2.0
    g0 = rng.integers(0, G, R)
    logp[:, 4, (g0[4] + 1) % G] = logp[:, 4, g0[4]]  # a candidate equal to the truth: constant
    logp[7, 5, (g0[5] + 1) % G] = np.nan  # unusable tail
    st = RatioStats.from_logp(logp, g0, tail=tail_size(H))
    ref = khat_from_tails(*st.tails).reshape(R, G)
    assert np.isinf(ref[4, (g0[4] + 1) % G]) and np.isnan(ref[5, (g0[5] + 1) % G])
    st.start_khat()
    np.testing.assert_array_equal(st.tail_khat(), ref)
    np.testing.assert_array_equal(st.tail_khat(), ref)  # again, synchronously
    for n_parts, chunk in ((1, 3), (4, 8), (R * G, 1)):
        job = KhatJob(*st.tails, chunk=chunk)
        job.cuts = np.linspace(0, R * G, n_parts + 1).astype(np.int64)
        for k in range(n_parts):
            job.fit_part(k)
        np.testing.assert_array_equal(job.result().reshape(R, G), ref)
