"""Wei & Reiter's (2016) weaker intruders of the largest-value scenario (PoissonMixture).

Hand-made posteriors (one draw, ``K = 2``: ``π = (0.5, 0.5)``, ``λ = (4, 1)``) on a six-record
table, so that every posterior can be written out and checked against brute-force enumeration of
the unknown records' values:

* MM, ``second_largest``: the target's component ``{0, 2, 3}`` releases the sum 14; the two
  unknown members lie in ``0..7`` (below ``y_(2) = 7``) and share one component, weighted by
  ``π_k Poisson(14 | 3 λ_k)``: posterior on ``y* = 7..12`` =
  ``(0.310222, 0.271444, 0.203585, 0.127245, 0.063631, 0.023874)``.
* TCMM (``q = 0.5``, tail ``{9, 7, 3}`` above ``τ = 2``): the tail releases 19; with ``y_(2) = 7``
  known one unknown tail value in ``3..7`` remains: posterior ``(0.254269, 0.336179, 0.409552,
  0, 0, 0)``.
* MP with the column total known (table ``6, 4, 1, 0``): the two unknown values in ``0..4`` sum to
  ``7 − y*``: posterior on ``4..8`` = ``(0.342639, 0.314681, 0.238349, 0.104331, 0)``.
"""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import poisson

import bayes_risk.models.poisson.weak as pw
from bayes_risk.attribute.largest_value import largest_value_posterior
from bayes_risk.data import infer_schema
from bayes_risk.exceptions import BayesRiskWarning, ValidationError
from bayes_risk.models import PoissonMixture

LAM = np.array([4.0, 1.0])
PI = np.array([0.5, 0.5])
WAGES = [9, 7, 3, 2, 1, 0]
MEMB = np.array([0, 1, 0, 0, 1, 1])


def _model(variant: str, wages, **kw) -> PoissonMixture:
    df = pd.DataFrame({"wages": wages})
    schema = infer_schema(df)
    post = {"lam": LAM.reshape(1, 2, 1), "w": PI.reshape(1, 2)}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BayesRiskWarning)
        return PoissonMixture.from_posterior(post, schema, data=df, variant=variant,
                                             n_components=2, **kw)


def _posterior(pieces):
    post, _ = largest_value_posterior(pieces)
    return post


# ------------------------------------------------------------------------------ exact numbers
def test_mm_second_largest_worked_numbers():
    m = _model("mm", WAGES)
    z = pd.DataFrame({"wages": [5, 6, 5, 4, 1, 1]})  # group sums 14 and 8, as the truth's
    p = m.largest_value_loglik("wages", [z], scenario="second_largest", upper=12,
                               memberships=MEMB)
    post = _posterior(p)
    np.testing.assert_array_equal(p.candidates, np.arange(7, 13))
    np.testing.assert_allclose(
        post, [0.310222, 0.271444, 0.203585, 0.127245, 0.063631, 0.023874], atol=1e-6)
    # brute force: both unknown members enumerated, component weights by hand
    w = PI * poisson.pmf(14, 3 * LAM)
    w /= w.sum()
    want = []
    for ys in range(7, 13):
        p_s = 0.0
        for wk, lam in zip(w, LAM, strict=True):
            f = poisson.pmf(np.arange(8), lam)
            f /= f.sum()
            p_s += wk * sum(f[a] * f[b] for a, b in itertools.product(range(8), repeat=2)
                            if a + b == 14 - ys)
        want.append(p_s)
    np.testing.assert_allclose(post, np.array(want) / sum(want), rtol=1e-10)
    # the worst-case intruder (everyone else known) is certain
    wc = m.largest_value_loglik("wages", [z], upper=12, memberships=MEMB)
    np.testing.assert_allclose(_posterior(wc), np.eye(6)[p.g0])


def test_tcmm_second_largest_worked_numbers_and_one_look_at_the_tail():
    m = _model("tcmm", WAGES, q=0.5)
    z = pd.DataFrame({"wages": [8, 6, 5, 2, 0, 1]})  # tail {0, 1, 2} sums to 19
    p = m.largest_value_loglik("wages", [z], scenario="second_largest", upper=12,
                               memberships=MEMB)
    post = _posterior(p)
    np.testing.assert_allclose(post, [0.254269, 0.336179, 0.409552, 0, 0, 0], atol=1e-6)
    y = np.arange(3, 8)
    f = (PI[:, None] * poisson.pmf(y[None, :], LAM[:, None])).sum(0)
    want = np.array([f[12 - ys - 3] if 3 <= 12 - ys <= 7 else 0.0 for ys in range(7, 13)])
    np.testing.assert_allclose(post, want / want.sum(), rtol=1e-10)
    # the tail is the same records in every dataset: three releases are one look at its sum
    z2 = pd.DataFrame({"wages": [6, 7, 6, 2, 1, 0]})
    p3 = m.largest_value_loglik("wages", [z, z2, z], scenario="second_largest", upper=12,
                                memberships=MEMB)
    assert p3.constraint_loglik.shape[1] == 1
    np.testing.assert_allclose(_posterior(p3), post, rtol=1e-12)


def test_mp_total_known_worked_numbers():
    m = _model("mp", [6, 4, 1, 0])
    df = pd.DataFrame({"wages": [6, 4, 1, 0]})
    z = pd.DataFrame({"wages": [5, 3, 2, 1]})
    p = m.largest_value_loglik("wages", [z], scenario="second_largest", total_known=True,
                               upper=8, data=df)
    assert "THETA_GIVEN_OTHER_RECORDS" in p.warnings
    np.testing.assert_allclose(
        _posterior(p), [0.342639, 0.314681, 0.238349, 0.104331, 0.0], atol=1e-6)
    # without T_j the one-draw MP likelihood is flat in y* except through the record ratios
    p0 = m.largest_value_loglik("wages", [z], scenario="second_largest", upper=8, data=df)
    assert p0.constraint_loglik is None


def test_two_largest_sum_flat_in_one_group_certain_across_groups():
    m = _model("mm", WAGES)
    same = np.array([0, 0, 1, 1, 1, 1])
    z = pd.DataFrame({"wages": [10, 6, 3, 1, 1, 1]})  # group sums 16 and 6
    p = m.largest_value_loglik("wages", [z], scenario="two_largest_sum", memberships=same)
    np.testing.assert_array_equal(p.candidates, np.arange(8, 14))  # T2 = 16, y(3) = 3
    assert p.pair_total == 16
    np.testing.assert_allclose(_posterior(p), np.full(6, 1 / 6))
    z = pd.DataFrame({"wages": [5, 6, 5, 4, 1, 1]})
    p = m.largest_value_loglik("wages", [z], scenario="two_largest_sum", memberships=MEMB)
    np.testing.assert_allclose(_posterior(p), np.eye(6)[p.g0])


def test_sum_logpmf_matches_enumeration():
    lam_j = np.array([[2.5, 0.7]])
    log_pi = np.log([[0.3, 0.7]])
    member = pw.predictive_logpmf(log_pi, lam_j, 1, 4)
    f = (np.array([0.3, 0.7])[:, None] * poisson.pmf(np.arange(1, 5)[None, :],
                                                         lam_j[0][:, None])).sum(0)
    np.testing.assert_allclose(np.exp(member[0]), f / f.sum())
    s = np.arange(0, 14)
    got = np.exp(pw.sum_logpmf(member, 1, 3, s)[0])
    want = np.zeros(s.size)
    for a, b, c in itertools.product(range(4), repeat=3):
        want[3 + a + b + c] += f[a] * f[b] * f[c] / f.sum() ** 3
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-300)


def test_far_tail_totals_keep_their_relative_accuracy():
    # 400 values of Poisson(3) truncated to 0..30 summing to 3,000 (mean 1,200: ~ 50 sd away);
    # the exponential tilt keeps the ratio of neighbouring totals exact: P(s+1)/P(s) tends to
    # the tilted ratio, checked against the saddle-point value exp(-theta) within 1 %
    member = pw.predictive_logpmf(np.zeros((1, 1)), np.array([[3.0]]), 0, 30)
    s = np.array([2990.0, 2991.0, 3000.0])
    lp = pw.sum_logpmf(member, 0, 400, s)[0]
    assert np.all(np.isfinite(lp)) and lp[0] > lp[1] > lp[2]
    theta = pw._tilt(member[0], np.arange(31.0), 2995.0 / 400)
    assert lp[1] - lp[0] == pytest.approx(-theta, rel=0.01)


@settings(max_examples=30, deadline=None)
@given(st.floats(0.05, 40.0), st.integers(0, 5), st.integers(0, 30), st.integers(1, 12))
def test_sum_pmf_is_a_distribution(lam, lo, width, r):
    member = pw.predictive_logpmf(np.zeros((1, 1)), np.array([[lam]]), lo, lo + width)
    s = np.arange(r * lo, r * (lo + width) + 1)
    p = np.exp(pw.sum_logpmf(member, lo, r, s)[0])
    assert np.all((p >= 0) & (p <= 1 + 1e-12))
    assert p.sum() == pytest.approx(1.0, abs=1e-9)
    mean = float(np.exp(member[0]) @ np.arange(lo, lo + width + 1))
    assert float(p @ s) == pytest.approx(r * mean, rel=1e-8, abs=1e-8)


def test_errors():
    m = _model("mm", WAGES)
    z = pd.DataFrame({"wages": [5, 6, 5, 4, 1, 1]})
    with pytest.raises(ValidationError, match="scenario must be one of"):
        m.largest_value_loglik("wages", [z], scenario="nosy", upper=12)
    with pytest.raises(ValidationError, match="total_known needs scenario='second_largest'"):
        m.largest_value_loglik("wages", [z], total_known=True, upper=12)
    with pytest.raises(ValidationError, match="synthesis groups"):
        m.largest_value_loglik("wages", [z], scenario="second_largest", upper=12,
                               memberships="map")
    with pytest.raises(ValidationError, match="integers in 8..13"):
        m.largest_value_loglik("wages", [z], scenario="two_largest_sum", candidates=[7, 9],
                               memberships=MEMB)
