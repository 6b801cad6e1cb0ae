"""Wei & Reiter's two-record intruder (``scenario="two_records"``) against exact enumeration.

The model is a categorical column with a Dirichlet prior, released fully synthetic: each
``Z_(l)`` is ``n`` draws from one posterior draw ``θ_l ~ p(θ | y)``. Its likelihood of the
release is exact: ``p(Z_(l) | y) = B(α + c(y) + c(Z_(l))) / B(α + c(y))`` (``c`` the level counts,
``B`` the multivariate beta function), so the intruder's posterior over a pair's joint candidates,
``∝ Π_l p(Z_(l) | y with Y_i = a, Y_j = b)``, is a sum over the 3 × 3 candidates.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from scipy.special import gammaln, logsumexp

from bayes_risk import ArrayModel, attribute_risk, file_summary
from bayes_risk.attribute import EstimatorSpec, ScenarioSpec, with_prior
from bayes_risk.attribute.candidates import CandidateSpec
from bayes_risk.data import infer_schema
from bayes_risk.exceptions import NotSupportedError, ValidationError

LEVELS = ["a", "b", "c"]
ALPHA = np.ones(3)
Y = np.array([0, 0, 1, 2, 1, 0, 2, 1])  # the confidential codes
Z = [np.array([0, 1, 1, 0, 2, 0, 1, 1]), np.array([0, 0, 2, 1, 0, 1, 0, 2])]


def _frame(codes: np.ndarray) -> pd.DataFrame:
    return pd.DataFrame({"y": pd.Categorical(np.asarray(LEVELS)[codes], categories=LEVELS)})


def _log_beta(a: np.ndarray) -> float:
    return float(gammaln(a).sum() - gammaln(a.sum()))


def _exact_pair_posterior(i: int, j: int) -> np.ndarray:
    """``[3, 3]`` posterior over (Y_i, Y_j) by enumeration (uniform prior)."""
    out = np.empty((3, 3))
    for a in range(3):
        for b in range(3):
            y = Y.copy()
            y[i], y[j] = a, b
            cy = np.bincount(y, minlength=3)
            out[a, b] = sum(
                _log_beta(ALPHA + cy + np.bincount(z, minlength=3)) - _log_beta(ALPHA + cy)
                for z in Z
            )
    return np.exp(out - logsumexp(out))


def _loglik(records: pd.DataFrame, theta: np.ndarray) -> np.ndarray:
    codes = records["y"].cat.codes.to_numpy()
    return np.log(np.asarray(theta))[:, codes]


def _model(H: int, seed: int) -> tuple[ArrayModel, list[ArrayModel]]:
    """Exact Dirichlet draws of ``p(θ | y)`` and of each ``p(θ | y, Z_(l))``."""
    rng = np.random.default_rng(seed)
    schema = infer_schema(_frame(Y), synthesized=["y"])
    cy = np.bincount(Y, minlength=3)
    model = ArrayModel(_loglik, rng.dirichlet(ALPHA + cy, size=H), schema)
    aug = [model.with_draws(rng.dirichlet(ALPHA + cy + np.bincount(z, minlength=3), size=H))
           for z in Z]
    return model, aug


def _run(model, aug, estimator=None, **kw):
    est = (estimator or EstimatorSpec()).replace(augmented=aug)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return attribute_risk(_frame(Y), [_frame(z) for z in Z], model=model,
                              progressbar=False, estimator=est, **kw)


def test_two_records_posterior_matches_exact_enumeration():
    """Stabilised estimator with H = 40,000 exact draws: every pair probability within 0.01
    of the enumeration (seed fixed; the largest error measured is 0.003)."""
    model, aug = _model(40_000, seed=1)
    pairs = [(0, 2), (3, 6), (1, 7)]
    res = _run(model, aug, scenario=ScenarioSpec(kind="two_records", pairs=pairs),
               estimator=EstimatorSpec(bootstrap=0))
    assert res.settings["scenario"] == "two_records"
    assert res.records.index.name == "pair"
    assert res.records[["record_1", "record_2"]].to_numpy().tolist() == [list(p) for p in pairs]
    for k, (i, j) in enumerate(pairs):
        exact = _exact_pair_posterior(i, j)
        cp = res.candidate_posteriors(k)
        got = np.zeros((3, 3))
        for _, row in cp.iterrows():
            got[LEVELS.index(row["y[1]"]), LEVELS.index(row["y[2]"])] = row["posterior"]
        np.testing.assert_allclose(got, exact, atol=0.01)
        # the truth is (Y_i, Y_j): p_true is the exact posterior of that cell
        assert res.records.loc[k, "p_true"] == pytest.approx(exact[Y[i], Y[j]], abs=0.01)
        assert res.records.loc[k, "G"] == 9
    # same diagnostics as one record: ESS, k̂ and the range allowed by high k̂ (stabilised)
    for col in ("ess_q_min", "khat_max", "khat_aug_max", "ess_aug_min", "p_true_lower"):
        assert col in res.records.columns
    fs = file_summary(res)
    assert fs["n_records"] == 3
    # the swap (Y_i, Y_j) = (y_j, y_i) has exactly the truth's likelihood (exchangeable
    # records): equal posterior, and no k̂ to flag the pair for (k̂ of a constant ratio is +inf)
    vals = res.candidates[0].values.astype(int)
    swap = int(np.flatnonzero((vals[:, 0] == Y[2]) & (vals[:, 1] == Y[0]))[0])
    assert res.loglik[0][swap] == res.loglik[0][res.candidates[0].g0]
    assert np.isnan(res.diagnostics[0]["khat"][swap])
    assert res.records.loc[0, "flag_codes"] == ""


def test_two_records_reduces_to_one_record_when_the_second_is_known():
    """Holding the second record at its truth, the pair's posterior over the first record is
    the one-record posterior, for both estimators (same draws: equal to rounding)."""
    model, aug = _model(500, seed=2)
    for est in ("stabilised", "is"):
        a = aug if est == "stabilised" else None
        pair = _run(model, a, scenario=ScenarioSpec(kind="two_records", pairs=[(4, 5)]),
                    estimator=EstimatorSpec(kind=est, bootstrap=0, khat="none"))
        one = _run(model, a, records=[4],
                   estimator=EstimatorSpec(kind=est, bootstrap=0, khat="none"))
        vals = pair.candidates[0].values.astype(int)
        ll = pair.loglik[0][vals[:, 1] == Y[5]]
        ll1 = one.loglik[0]
        # same order: the first record's candidates are the one-record set
        np.testing.assert_array_equal(vals[vals[:, 1] == Y[5], 0],
                                      one.candidates[0].values[:, 0].astype(int))
        np.testing.assert_allclose(ll - logsumexp(ll), ll1 - logsumexp(ll1), atol=1e-10)


def test_two_records_published_estimator_by_hand():
    """The published estimator (Hu 2019 §3.2.5) of a pair from four draws, summed by hand:
    ``p̂(Z | a, b) = Σ_h q_h p(Z | θ_h)`` with ``q_h ∝ r_{i,h}(a) r_{j,h}(b)``."""
    theta = np.array([[0.5, 0.3, 0.2], [0.2, 0.5, 0.3], [0.3, 0.3, 0.4], [0.6, 0.1, 0.3]])
    model = ArrayModel(_loglik, theta, infer_schema(_frame(Y), synthesized=["y"]))
    res = _run(model, None, scenario=ScenarioSpec(kind="two_records", pairs=[(0, 3)]),
               estimator=EstimatorSpec(kind="is", bootstrap=0))
    logL = np.array([[np.log(t[z]).sum() for z in Z] for t in theta])  # [H, m]
    i, j = 0, 3
    want = np.empty((3, 3))
    for a in range(3):
        for b in range(3):
            lr = np.log(theta[:, a] * theta[:, b] / (theta[:, Y[i]] * theta[:, Y[j]]))
            lq = lr - logsumexp(lr)
            want[a, b] = sum(logsumexp(lq + logL[:, l]) for l in range(len(Z)))
    # the pair's candidates: the first record's (truth first) × the second record's
    vals = res.candidates[0].values.astype(int)
    got = res.loglik[0]
    want = want[vals[:, 0], vals[:, 1]]
    np.testing.assert_allclose(got - got.max(), want - want.max(), atol=1e-10)
    assert tuple(vals[res.candidates[0].g0]) == (Y[i], Y[j])
    assert res.records.loc[0, "G"] == 9
    assert {"ess_q_min", "khat_max", "max_omega_max"} <= set(res.records.columns)


def test_two_records_prior_and_with_prior():
    model, aug = _model(300, seed=3)
    res = _run(model, aug,
               random_seed=4,
               scenario=ScenarioSpec(kind="two_records", pairs=[(0, 1)]),
               estimator=EstimatorSpec(bootstrap=20))
    assert res.records["boot_p_true_q50"].notna().all()
    tw = with_prior(res, prior="truth-weighted:3")
    assert tw.records.loc[0, "p_true"] > res.records.loc[0, "p_true"]
    with pytest.raises(NotSupportedError, match="other record"):
        with_prior(res, prior="empirical:1")


def test_two_records_refusals():
    model, aug = _model(50, seed=5)
    with pytest.raises(ValidationError, match="needs pairs") as e:
        _run(model, aug, scenario="two_records")
    assert e.value.code == "INVALID_ARGUMENT"
    with pytest.raises(ValidationError, match="one record twice"):
        _run(model, aug, scenario=ScenarioSpec(kind="two_records", pairs=[(1, 1)]))
    with pytest.raises(ValidationError, match="listed twice"):
        _run(model, aug, scenario=ScenarioSpec(kind="two_records", pairs=[(1, 2), (2, 1)]))
    with pytest.raises(ValidationError, match="outside 0..7") as e:
        _run(model, aug, scenario=ScenarioSpec(kind="two_records", pairs=[(1, 8)]))
    assert e.value.code == "RECORD_OUT_OF_RANGE"  # a condition of the data, not of the argument
    with pytest.raises(ValidationError, match="records does not apply"):
        _run(model, aug, records=[1], scenario=ScenarioSpec(kind="two_records", pairs=[(1, 2)]))
    with pytest.raises(ValidationError, match="ScenarioSpec.pairs applies to kind='two_records'"):
        _run(model, aug, scenario=ScenarioSpec(pairs=[(1, 2)]))
    with pytest.raises(ValidationError, match="ScenarioSpec.known does not apply"):
        ScenarioSpec("two_records", known=["y"], pairs=[(1, 2)])
    with pytest.raises(NotSupportedError, match="other record") as e:
        _run(model, aug, prior="empirical:1",
             scenario=ScenarioSpec(kind="two_records", pairs=[(1, 2)]))
    assert e.value.code == "OPTION_CONFLICT"
    with pytest.raises(ValidationError, match="more than max_candidates"):
        _run(model, aug,
             candidates=CandidateSpec(rule="one_variable", max_candidates=8),
             scenario=ScenarioSpec(kind="two_records", pairs=[(1, 2)]))
    own = ArrayModel(_loglik, model.draws, model.schema_, model_class="O",
                     own_record_delta_fn=lambda r, c, d, t: np.zeros((len(t), len(d), len(c))))
    with pytest.raises(NotSupportedError, match="class P") as e:
        _run(own, None, scenario=ScenarioSpec(kind="two_records", pairs=[(1, 2)]),
             estimator=EstimatorSpec(kind="is"))
    assert e.value.code == "MODEL_UNSUITED"
