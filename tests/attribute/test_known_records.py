"""The intruder who knows some of the other records (``ScenarioSpec("known_records")``) against
brute-force enumeration of the records the intruder does not know.

The model is a categorical column with a Dirichlet prior, released fully synthetic (each
``Z_(l)`` is ``n`` draws from one ``θ_l ~ p(θ | y)``). For a target ``i``, candidate ``c`` and
known records ``K``, the enumeration sums over every value ``y_U`` of the unknown records:
``p(Z_(l) | c, y_K) = Σ_{y_U} p(y_U | c, y_K) p(Z_(l) | c, y_K, y_U)``, each factor a ratio of
multivariate beta functions. The package never enumerates: it reweights posterior draws.
"""

from __future__ import annotations

import itertools
import re
import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.special import gammaln, logsumexp

from bayes_risk import ArrayModel, attribute_risk
from bayes_risk.attribute import (
    EstimatorSpec,
    KnownFractionResult,
    ScenarioSpec,
    known_fraction_curve,
)
from bayes_risk.attribute.known_records import known_mask
from bayes_risk.data import infer_schema
from bayes_risk.exceptions import NotSupportedError, ValidationError
from bayes_risk.results._attribute_null import file_null

LEVELS = ["a", "b", "c"]
ALPHA = np.full(3, 6.0)  # finite-variance weights for every known set (see the test)
Y = np.array([0, 0, 1, 2, 1, 0])  # the confidential codes
Z = [np.array([0, 1, 1, 0, 2, 0]), np.array([0, 0, 2, 1, 0, 1])]


def _frame(codes: np.ndarray) -> pd.DataFrame:
    return pd.DataFrame({"y": pd.Categorical(np.asarray(LEVELS)[codes], categories=LEVELS)})


def _log_beta(a: np.ndarray) -> float:
    return float(gammaln(a).sum() - gammaln(a.sum()))


def _counts(codes) -> np.ndarray:
    return np.bincount(np.asarray(codes, dtype=np.int64), minlength=3).astype(float)


def _exact_posterior(i: int, known: np.ndarray, datasets) -> np.ndarray:
    """``[3]`` posterior of ``Y_i`` by enumeration of the unknown records (uniform prior);
    the released datasets each enter through their own likelihood (the estimator's target)."""
    others = [u for u in range(len(Y)) if u != i]
    K = [u for u in others if known[u]]
    U = [u for u in others if not known[u]]
    out = np.empty(3)
    for c in range(3):
        base = ALPHA + _counts(Y[K]) + _counts([c])  # p(θ | c, y_K) is Dirichlet(base)
        total = 0.0
        for z in datasets:
            terms = []
            for yu in itertools.product(range(3), repeat=len(U)):
                cu = _counts(yu)
                log_pred = _log_beta(base + cu) - _log_beta(base)  # p(y_U | c, y_K)
                full = base + cu  # posterior given the whole data with Y_i = c
                terms.append(log_pred + _log_beta(full + _counts(z)) - _log_beta(full))
            total += logsumexp(terms)
        out[c] = total
    return np.exp(out - logsumexp(out))


def _loglik(records: pd.DataFrame, theta: np.ndarray) -> np.ndarray:
    codes = records["y"].cat.codes.to_numpy()
    return np.log(np.asarray(theta))[:, codes]


def _model(H: int, seed: int, datasets=Z) -> tuple[ArrayModel, list[ArrayModel]]:
    """Exact Dirichlet draws of ``p(θ | y)`` and of each ``p(θ | y, Z_(l))``."""
    rng = np.random.default_rng(seed)
    schema = infer_schema(_frame(Y), synthesized=["y"])
    cy = _counts(Y)
    model = ArrayModel(_loglik, rng.dirichlet(ALPHA + cy, size=H), schema)
    aug = [model.with_draws(rng.dirichlet(ALPHA + cy + _counts(z), size=H)) for z in datasets]
    return model, aug


def _run(model, aug, kind="stabilised", datasets=Z, **kw):
    est = EstimatorSpec(kind, augmented=aug if kind == "stabilised" else None, bootstrap=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return attribute_risk(_frame(Y), [_frame(z) for z in datasets], model=model,
                              progressbar=False, estimator=est, candidates="full", **kw)


@pytest.mark.parametrize("kind", ["stabilised", "is"])
def test_every_known_set_matches_enumeration(kind):
    """Every subset of the other records known, for two targets: each candidate's probability
    within 0.015 of the enumeration (H = 20,000 exact draws; the largest error measured is
    0.005). The prior α = 6 keeps the weights ``1 / Π_u θ_{y_u}`` of finite variance; with
    α = 1 some known sets give infinite-variance weights, which the engine flags."""
    model, aug = _model(20_000, 1)
    for i in (0, 3):
        others = [u for u in range(len(Y)) if u != i]
        for r in range(len(others) + 1):
            for K in itertools.combinations(others, r):
                known = np.zeros(len(Y), dtype=bool)
                known[list(K)] = True
                res = _run(model, aug, kind, records=[i],
                           scenario=ScenarioSpec("known_records", known_records=list(K)))
                exact = _exact_posterior(i, known, Z)
                got = np.exp(res.log_post[0])
                vals = res.candidates[0].values[:, 0].astype(int)
                np.testing.assert_allclose(got, exact[vals], atol=0.015, err_msg=f"K={K}")
                assert res.records.loc[i, "p_true"] == pytest.approx(exact[Y[i]], abs=0.015)
                assert res.settings["n_known"] == len(K)


def test_one_dataset_is_the_exact_bayes_posterior():
    """With one released dataset the per-dataset likelihood is the whole likelihood: the
    enumeration above is then the exact posterior p(Y_i | Z, y_K)."""
    ds = Z[:1]
    model, aug = _model(20_000, 2, ds)
    known = np.array([False, True, False, True, False, False])
    res = _run(model, aug, datasets=ds, records=[2],
               scenario=ScenarioSpec("known_records", known_records=known))
    # the exact joint: Σ_{y_U} p(y_U | c, y_K) p(Z | c, y_K, y_U), one dataset
    exact = _exact_posterior(2, known, ds)
    vals = res.candidates[0].values[:, 0].astype(int)
    np.testing.assert_allclose(np.exp(res.log_post[0]), exact[vals], atol=0.015)


@pytest.mark.parametrize("kind", ["stabilised", "is"])
def test_all_known_is_the_worst_case_bit_for_bit(kind):
    model, aug = _model(500, 3)
    worst = _run(model, aug, kind)
    full = _run(model, aug, kind, scenario=ScenarioSpec("known_records", known_fraction=1.0))
    for a, b in zip(worst.loglik, full.loglik, strict=True):
        np.testing.assert_array_equal(a, b)
    pd.testing.assert_series_equal(worst.records["p_true"], full.records["p_true"])


def test_none_known_matches_the_prior_predictive_enumeration():
    """A = ∅: the exact Bayes answer, which the low-risk approximation of scenario='empty'
    is not."""
    model, aug = _model(20_000, 4)
    res = _run(model, aug, records=[1],
               scenario=ScenarioSpec("known_records", known_fraction=0.0))
    exact = _exact_posterior(1, np.zeros(len(Y), dtype=bool), Z)
    vals = res.candidates[0].values[:, 0].astype(int)
    np.testing.assert_allclose(np.exp(res.log_post[0]), exact[vals], atol=0.015)


def test_known_mask_fractions_are_nested_and_sized():
    masks = [known_mask(ScenarioSpec("known_records", known_fraction=f, seed=7), 40)
             for f in (0.0, 0.3, 0.6, 1.0)]
    assert [int(m.sum()) for m in masks] == [0, 12, 24, 40]
    for a, b in itertools.pairwise(masks):
        assert not np.any(a & ~b)
    explicit = known_mask(ScenarioSpec("known_records", known_records=[3, 1]), 5)
    assert explicit.tolist() == [False, True, False, True, False]


def test_curve_end_points_and_table():
    model, aug = _model(400, 5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        curve = known_fraction_curve(
            _frame(Y), [_frame(z) for z in Z], model=model, fractions=[1, 0, 0.5],
            estimator=EstimatorSpec(augmented=aug, bootstrap=0), progressbar=False,
            random_seed=0)
    assert isinstance(curve, KnownFractionResult)
    tab = curve.to_dataframe()
    assert tab["known_fraction"].tolist() == [0.0, 0.5, 1.0]
    assert tab["n_known"].tolist() == [0, 3, 6]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = attribute_risk(_frame(Y), [_frame(z) for z in Z], model=model, progressbar=False,
                             estimator=EstimatorSpec(augmented=aug, bootstrap=0),
                             random_seed=0)
    assert tab["mean_p_true"].iloc[-1] == pytest.approx(float(ref.records["p_true"].mean()),
                                                        rel=1e-12)
    assert "risk by known fraction" in curve.summary().tables
    import matplotlib

    matplotlib.use("Agg")
    ax = curve.plot()
    assert ax.get_xlabel().startswith("other records known")
    # the dashed line: each fraction's null of the same records (not the random guess 1/G)
    (null,) = [ln for ln in ax.get_lines() if ln.get_linestyle() == "--"]
    assert null.get_label() == "if the release said nothing of the records"
    for k, res in enumerate(curve.results):
        per, ok = res.record_null(), res.records["p_true"].notna().to_numpy()
        want = file_null({c: per[c].to_numpy() for c in per.columns}, ok)["mean_p_true"]
        assert null.get_ydata()[k] == pytest.approx(100 * want["expected"], rel=1e-12)
        assert tab["null_mean_p_true"].iloc[k] == pytest.approx(want["expected"], rel=1e-12)
    import matplotlib.pyplot as plt

    ax = curve.plot(measure="prop_top", ax=plt.figure().add_subplot())
    (null,) = [ln for ln in ax.get_lines() if ln.get_linestyle() == "--"]
    np.testing.assert_allclose(null.get_ydata(), 100 * tab["null_prop_top"].to_numpy())


def test_refusals():
    model, aug = _model(50, 6)
    with pytest.raises(ValidationError, match="ScenarioSpec.kind='known_records' needs "
                       "ScenarioSpec.known_records or ScenarioSpec.known_fraction"):
        ScenarioSpec("known_records")
    with pytest.raises(ValidationError, match="known_fraction: give one of them, not both"):
        ScenarioSpec("known_records", known_records=[1], known_fraction=0.5)
    with pytest.raises(ValidationError, match=r"in \[0, 1\]"):
        ScenarioSpec("known_records", known_fraction=1.5)
    with pytest.raises(ValidationError,
                       match=r"ScenarioSpec.known_fraction needs ScenarioSpec.kind='known_records'"
                       r"\. Got ScenarioSpec.kind='worst_case'\."):
        ScenarioSpec("worst_case", known_fraction=0.5)
    with pytest.raises(ValidationError, match=r"known_records: index 99 is outside 0\.\."):
        _run(model, aug, scenario=ScenarioSpec("known_records", known_records=[99]))
    with pytest.raises(NotSupportedError, match="reads every other record"):
        _run(model, aug, scenario=ScenarioSpec("known_records", known_fraction=0.5),
             prior="empirical:1")
    with pytest.raises(ValidationError, match="fractions"):
        known_fraction_curve(_frame(Y), [_frame(z) for z in Z], model=model, fractions=[2])


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mask=st.lists(st.booleans(), min_size=len(Y), max_size=len(Y)),
       kind=st.sampled_from(["stabilised", "is"]))
def test_probabilities_are_probabilities(mask, kind):
    model, aug = _model(200, 8)
    res = _run(model, aug, kind,
               scenario=ScenarioSpec("known_records", known_records=np.array(mask)))
    p = res.records["p_true"].to_numpy()
    assert np.all((p >= 0) & (p <= 1))
    for lp in res.log_post:
        assert np.exp(lp).sum() == pytest.approx(1.0)


def test_identical_records_known_and_unknown_are_evaluated_apart():
    """Records 0 and 5 (and 2 and 4) hold the same value, one known and one not: their
    posteriors differ, and each matches the enumeration (no record copies another's)."""
    model, aug = _model(20_000, 9)
    known = np.array([True, False, False, False, True, False])
    res = _run(model, aug, scenario=ScenarioSpec("known_records", known_records=known))
    for k, i in enumerate(res.records.index):
        exact = _exact_posterior(int(i), known, Z)
        vals = res.candidates[k].values[:, 0].astype(int)
        np.testing.assert_allclose(np.exp(res.log_post[k]), exact[vals], atol=0.015)
    assert res.records.loc[0, "p_true"] != res.records.loc[5, "p_true"]


def test_between_chain_check_only_when_every_record_is_known():
    """Two chains: the check runs for the worst case (share 1, the worst-case run exactly) and
    is stated as not run when records are unknown (it counts draws by the truth's ratio)."""
    rng = np.random.default_rng(10)
    cy = _counts(Y)
    base, _ = _model(10, 0)
    model = base.with_draws(rng.dirichlet(ALPHA + cy, size=400), chains=2)
    aug = [model.with_draws(rng.dirichlet(ALPHA + cy + _counts(z), size=400), chains=2)
           for z in Z]
    full = _run(model, aug, scenario=ScenarioSpec("known_records", known_fraction=1.0))
    part = _run(model, aug, scenario=ScenarioSpec("known_records", known_fraction=0.5))
    assert full.settings["chain_check"]["status"] == "run"
    assert part.settings["chain_check"]["status"] == "not run"
    assert "only some records" in part.settings["chain_check"]["reason"]


def test_attribute_run_refuses_arguments_that_do_not_go_together_before_any_work():
    """The run's relations (formerly the command line's own checks) hold in Python too: no
    model is read, no refit made, before the refusal."""
    from bayes_risk.attribute.run import attribute_run

    d = pd.DataFrame({"a": [1, 2]})
    for kw, code, text in [
        (dict(scenario=ScenarioSpec("known_records", known_fraction=0.5), known_curve=[0.5]),
         "OPTION_CONFLICT", "known_curve needs scenario='worst_case' (it sets the known records"),
        (dict(scenario="second_largest", records=[1], largest_value={"column": "a"}),
         "OPTION_CONFLICT", "records needs scenario='worst_case', 'partially_known'"),
        (dict(scenario="second_largest"), "OPTION_REQUIRED",
         "scenario='largest_value', 'second_largest' or 'two_largest_sum' needs column (the "
         "magnitude column)"),
        (dict(largest_value={"delta": 0.1}), "OPTION_CONFLICT",
         "delta needs scenario='largest_value', 'second_largest' or 'two_largest_sum'."),
        (dict(max_size=1), "OPTION_REQUIRED", "max_size needs known_sweep"),
        (dict(known_curve=[0.5, 1.5]), "INVALID_ARGUMENT", "known_curve must be"),
    ]:
        with pytest.raises(ValidationError, match=re.escape(text)) as err:
            attribute_run(d, [d], model=None, **kw)
        assert err.value.code == code
    # a field of one scenario beside a largest-value kind names both
    with pytest.raises(ValidationError, match=re.escape(
            "ScenarioSpec.known needs ScenarioSpec.kind='partially_known'")):
        ScenarioSpec("second_largest", known=["a"])
