"""Interval overlap, standardised coefficient difference, comparison table and utility summary
(SPEC §5.3, §5.4, §5.1)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats

from bayes_risk.data import make_ce_like
from bayes_risk.exceptions import DataWarning, SchemaError, ValidationError
from bayes_risk.utility.combining import combine_scalar
from bayes_risk.utility.compare import compare_estimates
from bayes_risk.utility.overlap import ci_overlap, std_coef_diff
from bayes_risk.utility.pmse import PropensitySpec
from bayes_risk.utility.summary import OverlapSpec, utility_summary

RTOL, ATOL = 1e-6, 1e-9
Z = stats.norm.ppf(0.975)
CAT = ["Urban", "Marital", "Tenure"]


# --------------------------------------------------------------------------- SPEC examples
def test_karr_illustration():
    r = ci_overlap([8, 8], [10, 10], [-12, 3], [30, 15])
    np.testing.assert_allclose(r.values, [0.523810, 0.583333], rtol=RTOL, atol=1e-6)
    assert r.values[1] > r.values[0]  # release 2 preferred
    np.testing.assert_allclose(r.mean, np.mean(r.values))


def test_disjoint_and_partial():
    assert ci_overlap(0, 1, 2, 3, kind="signed").values[0] == pytest.approx(-1.0)
    assert ci_overlap(0, 1, 2, 3, kind="length").values[0] == 0.0
    np.testing.assert_allclose(ci_overlap(0, 2, 1, 5).values, [0.375], rtol=RTOL, atol=ATOL)
    r = ci_overlap([0, 0], [1, 2], [2, 1], [3, 5], kind="signed")
    np.testing.assert_allclose(r.values, [-1.0, 0.375])
    np.testing.assert_allclose(r.mean_truncated, 0.375 / 2)


def test_probability_overlap():
    same = ci_overlap(-Z, Z, -Z, Z, kind="probability", est_o=0, se_o=1, est_s=0, se_s=1)
    np.testing.assert_allclose(same.values, [0.95], rtol=RTOL, atol=ATOL)
    shift = ci_overlap(-Z, Z, 1 - Z, 1 + Z, kind="probability", est_o=0, se_o=1, est_s=1,
                       se_s=1)
    np.testing.assert_allclose(shift.values, [0.829925], rtol=RTOL, atol=ATOL)
    # t densities with many df approach the normal result
    t = ci_overlap(-Z, Z, 1 - Z, 1 + Z, kind="probability", est_o=0, se_o=1, est_s=1, se_s=1,
                   df_o=1e7, df_s=np.inf)
    np.testing.assert_allclose(t.values, shift.values, rtol=1e-6)


def test_std_coef_diff_example():
    r = std_coef_diff(1.0, 1.3, 0.2)
    np.testing.assert_allclose(r.values, [1.5], rtol=RTOL, atol=ATOL)
    r = std_coef_diff([1.0, 0.0, 2.0], [1.3, 0.1, 2.0], [0.2, 0.1, 1.0])
    np.testing.assert_allclose([r.mean, r.median], [2.5 / 3, 1.0])


@pytest.mark.parametrize(
    ("args", "kwargs", "match"),
    [
        ((0, 0, 1, 2), {}, "zero length"),
        ((0, 1, 1, 1), {}, "zero length"),
        ((0, np.inf, 1, 2), {}, "must be finite"),
        ((0, 1, 2, 1), {}, "below lower bound"),
        ((0, 1, 0, 1), {"kind": "probability"}, "needs est_o"),
        ((0, 1, 0, 1), {"kind": "probability", "est_o": 0.5, "se_o": 0, "est_s": 0.5,
                        "se_s": 1}, "se_o must be"),
        ((0, 1, 0, 1), {"kind": "area"}, "kind must be"),
        (([0, 0], [1, 1], [0, 0, 0], [1, 1, 1]), {}, "same length"),
        (([0, 0], [1, 1], [0, 0], [1, 1]), {"kind": "probability", "est_o": [0.5] * 3,
                                            "se_o": 1, "est_s": 0.5, "se_s": 1},
         r"est_o must be a scalar or have one value per estimand \(2\); got 3 values"),
        (([0, 0], [1, 1], [0, 0], [1, 1]), {"kind": "probability", "est_o": 0.5, "se_o": 1,
                                            "est_s": 0.5, "se_s": 1, "df_s": [5, 5, 5]},
         "df_s must be a scalar or have one value per estimand"),
        ((np.nan, 1, 0, 1), {}, "NaN"),
    ],
)
def test_overlap_errors(args, kwargs, match):
    with pytest.raises(ValidationError, match=match):
        ci_overlap(*args, **kwargs)


def test_std_coef_diff_errors():
    with pytest.raises(ValidationError, match="se_orig"):
        std_coef_diff(1.0, 1.0, 0.0)


interval = st.tuples(st.floats(-100, 100), st.floats(1e-3, 50)).map(lambda t: (t[0], t[0] + t[1]))


@given(interval, interval)
def test_overlap_properties(a, b):
    j = ci_overlap(a[0], a[1], b[0], b[1]).values[0]
    j_sym = ci_overlap(b[0], b[1], a[0], a[1]).values[0]
    s = ci_overlap(a[0], a[1], b[0], b[1], kind="signed").values[0]
    assert 0 <= j <= 1 + 1e-12
    assert j == pytest.approx(j_sym, rel=1e-12, abs=1e-12)
    assert s <= j + 1e-12
    assert ci_overlap(a[0], a[1], a[0], a[1]).values[0] == pytest.approx(1.0)


@given(st.floats(-5, 5), st.floats(0.1, 3), st.floats(-5, 5), st.floats(0.1, 3))
def test_probability_overlap_at_most_confidence_level(e1, s1, e2, s2):
    r = ci_overlap(e1 - Z * s1, e1 + Z * s1, e2 - Z * s2, e2 + Z * s2, kind="probability",
                   est_o=e1, se_o=s1, est_s=e2, se_s=s2)
    assert 0 <= r.values[0] <= 0.95 + 1e-12


# --------------------------------------------------------------------------- compare_estimates
@pytest.fixture(scope="module")
def ce_small():
    d = make_ce_like(n=400, random_seed=11)
    rng = np.random.default_rng(5)
    syn = []
    for _ in range(3):
        z = d.copy()
        z["Income"] = d["Income"].to_numpy() * np.exp(rng.normal(0, 0.2, size=len(d)))
        syn.append(z)
    return d, syn


def test_compare_estimates_combines_per_dataset_fits(ce_small):
    import statsmodels.formula.api as smf

    d, syn = ce_small
    t = compare_estimates(d, syn, formula="Income ~ Age + Marital", categorical=CAT)
    assert "Marital[T.2]" in list(t["term"])  # integer-coded factor treated as categorical
    fits = [smf.ols("Income ~ Age + C(Marital)", z).fit() for z in syn]
    c = combine_scalar([f.params["Age"] for f in fits], [f.bse["Age"] ** 2 for f in fits])
    row = t.set_index("term").loc["Age"]
    np.testing.assert_allclose([row["estimate_syn"], row["se_syn"], row["df_syn"]],
                               [c.estimate, c.se, c.df], rtol=1e-8)
    o = smf.ols("Income ~ Age + C(Marital)", d).fit()
    lo, hi = o.conf_int().loc["Age"]
    np.testing.assert_allclose([row["ci_lower_orig"], row["ci_upper_orig"]], [lo, hi], rtol=1e-8)
    j = ci_overlap(lo, hi, c.ci_lower, c.ci_upper).values[0]
    np.testing.assert_allclose(row["overlap"], j, rtol=1e-10)
    np.testing.assert_allclose(row["std_coef_diff"], abs(o.params["Age"] - c.estimate)
                               / o.bse["Age"], rtol=1e-8)
    assert t.attrs["overlap_per_dataset"].shape == (len(t), 3)


def test_compare_identical_data_overlap_one(ce_small):
    d, _ = ce_small
    d2 = d.assign(High=(d["Income"] > d["Income"].median()).astype(int))
    with pytest.warns(DataWarning, match="DUPLICATE_DATASETS"):  # one table given twice
        t = compare_estimates(d2, [d2, d2], formula="High ~ Age + C(Urban)", family="logit",
                              categorical=CAT)
    np.testing.assert_allclose(t["overlap"], 1.0)
    np.testing.assert_allclose(t["std_coef_diff"], 0.0, atol=1e-12)
    with pytest.warns(DataWarning, match="DUPLICATE_DATASETS"):
        t = compare_estimates(d2, [d2, d2], formula="Educ ~ Age", family="poisson")
    np.testing.assert_allclose(t["overlap"], 1.0)


def test_compare_errors(ce_small):
    d, syn = ce_small
    with pytest.raises(ValidationError, match="could not be evaluated"):
        compare_estimates(d, syn, formula="Income ~ Agee")
    with pytest.raises(ValidationError, match="family must be"):
        compare_estimates(d, syn, formula="Income ~ Age", family="probit")
    with pytest.raises(ValidationError, match="formula must be"):
        compare_estimates(d, syn, formula="Income")
    with pytest.raises(SchemaError, match="Maritl"):
        compare_estimates(d, syn, formula="Income ~ Age", categorical=["Maritl"])


# --------------------------------------------------------------------------- utility_summary
def test_utility_summary_default_estimands(ce_small):
    d, syn = ce_small
    s = utility_summary(d, syn, categorical=CAT, propensity=PropensitySpec(max_order=0))
    assert s.synthesized == ["Income"] and s.synthesized_inferred
    assert list(s.overlap["estimand"]) == ["mean(Income)"]
    row = s.overlap.iloc[0]
    q = [z["Income"].mean() for z in syn]
    u = [z["Income"].var(ddof=1) / len(z) for z in syn]
    c = combine_scalar(q, u)
    np.testing.assert_allclose([row["estimate_syn"], row["ci_lower_syn"]],
                               [c.estimate, c.ci_lower], rtol=1e-10)
    # per-dataset overlap uses that dataset's own t interval
    n = len(d)
    lo_o, hi_o = row["ci_lower_orig"], row["ci_upper_orig"]
    t = stats.t.ppf(0.975, n - 1)
    j1 = ci_overlap(lo_o, hi_o, q[0] - t * np.sqrt(u[0]), q[0] + t * np.sqrt(u[0])).values[0]
    np.testing.assert_allclose(s.overlap_per_dataset[0], j1, rtol=1e-10)
    d_json = s.to_dict()
    json.dumps(d_json, allow_nan=False)
    assert set(d_json) >= {"pmse", "s_pmse", "pmse_std", "k", "null", "interval_overlap"}
    assert d_json["pmse"]["per_dataset"] == pytest.approx(list(s.pmse.pmse))


def test_utility_summary_proportions_and_formulas(ce_small):
    d, syn = ce_small
    rng = np.random.default_rng(9)
    syn2 = [z.assign(Urban=rng.choice([1, 2], size=len(z))) for z in syn]
    s = utility_summary(d, syn2, categorical=CAT, synthesized=["Income", "Urban"],
                        propensity=PropensitySpec(max_order=0))
    names = list(s.overlap["estimand"])
    assert names == ["P(Urban = 1)", "P(Urban = 2)", "mean(Income)"]
    assert not s.synthesized_inferred
    f = utility_summary(d, syn, categorical=CAT, propensity=PropensitySpec(max_order=0),
                        overlap=OverlapSpec(estimands=["Income ~ Age", "Expenditure ~ Income"]))
    assert f.estimand_kind == "formulas" and len(f.comparison) == 4
    assert math.isclose(f.mean_overlap, float(f.comparison["overlap"].mean()))


def test_utility_summary_refuses_an_unknown_family(ce_small):
    # as compare_estimates does: a misspelt family is an error, never a silent Poisson GLM
    d, syn = ce_small
    for estimands in (["Income ~ Age"], None):
        with pytest.raises(ValidationError, match=r"family must be one of \['ols', 'logit', "
                                                  r"'poisson'\]. Got 'logistic'"):
            utility_summary(d, syn, categorical=CAT, propensity=PropensitySpec(max_order=0),
                            overlap=OverlapSpec(estimands=estimands, family="logistic"))
