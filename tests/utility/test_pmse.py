"""pMSE (SPEC §5.2): worked examples, synthpop reference values, nulls, warnings, properties."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest
from _shared import shared_path
from hypothesis import given
from hypothesis import strategies as st

from bayes_risk.data import SyntheticData, infer_schema
from bayes_risk.exceptions import ConvergenceWarning, DataWarning, SchemaError, ValidationError
from bayes_risk.utility.pmse import (
    PropensitySpec,
    fit_logit,
    pmse,
    pmse_null_moments,
    propensity_design,
)

RTOL, ATOL = 1e-6, 1e-9
CE_CATEGORICAL = ["Urban", "Marital", "Tenure"]


# --------------------------------------------------------------------------- worked examples
@pytest.mark.parametrize("as_categorical", [True, False])
def test_example_i_saturated_binary(as_categorical):
    orig = pd.DataFrame({"x": [0, 0, 1, 1]})
    syn = pd.DataFrame({"x": [0, 1, 1, 1]})
    with pytest.warns(DataWarning, match="LARGE_MODEL"):  # k = 2 > N/5 = 1.6
        r = pmse(orig, syn, categorical=["x"] if as_categorical else None,
                 propensity=PropensitySpec(max_order=0))
    np.testing.assert_allclose(r.pmse, [0.0166667], rtol=1e-5)
    np.testing.assert_allclose(r.pmse, [1 / 60], rtol=RTOL, atol=ATOL)
    assert r.k.tolist() == [2] and r.df.tolist() == [1]
    np.testing.assert_allclose(r.e0, [0.015625], rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(r.sd0, [0.0220971], rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(r.ratio, [1.066667], rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(r.std, [0.0471405], rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(r.c, [0.5])
    assert r.null == "theory" and r.incomplete is False
    assert "LARGE_MODEL" in r.warnings
    json.dumps(r.to_dict(), allow_nan=False)


def test_example_i_fitted_probabilities():
    X = np.array([[1, 0], [1, 0], [1, 1], [1, 1], [1, 0], [1, 1], [1, 1], [1, 1]], float)
    y = np.array([0, 0, 0, 0, 1, 1, 1, 1], float)
    f = fit_logit(X, y)
    np.testing.assert_allclose(f.prob, [1 / 3] * 2 + [3 / 5] * 2 + [1 / 3] + [3 / 5] * 3,
                               rtol=1e-9)
    assert f.converged


def test_example_ii_snoke_null_moments():
    e0, sd0 = pmse_null_moments(55, 5000, 5000)
    np.testing.assert_allclose([e0, sd0], [0.0006875, 0.000131101], rtol=1e-6)
    e0, sd0 = pmse_null_moments(19, 5000, 5000)
    np.testing.assert_allclose([e0, sd0], [0.0002375, 7.70552e-5], rtol=1e-6)


# --------------------------------------------------------------------------- design
def test_design_matches_r_dot_squared():
    df = pd.DataFrame({"a": ["p", "q", "r", "p"], "x": [1.0, 2.0, 3.0, 5.0], "b": [1, 2, 1, 2]})
    schema = infer_schema(df, categorical=["a", "b"])
    X, names, involves, codes = propensity_design([df, df], schema, ["a", "x", "b"], 1)
    assert names == ["(Intercept)", "a[q]", "a[r]", "x", "b[2]", "a[q]:x", "a[r]:x",
                     "a[q]:b[2]", "a[r]:b[2]", "x:b[2]"]
    assert involves[5] == frozenset({"a", "x"})
    assert X.shape == (8, 10) and codes == []
    X0, names0, _, _ = propensity_design([df, df], schema, ["a", "x", "b"], 0)
    assert names0 == names[:5]


def test_aliased_columns_are_dropped():
    rng = np.random.default_rng(0)
    x = rng.normal(size=200)
    orig = pd.DataFrame({"x": x[:100], "y": 2 * x[:100] + 1})
    syn = pd.DataFrame({"x": x[100:], "y": 2 * x[100:] + 1})
    r = pmse(orig, syn, propensity=PropensitySpec(max_order=0))
    assert r.k.tolist() == [2]  # intercept + x; y is aliased


def test_fit_logit_matches_statsmodels():
    import statsmodels.api as sm

    rng = np.random.default_rng(1)
    X = np.column_stack([np.ones(300), rng.normal(size=(300, 3))])
    y = (rng.random(300) < 1 / (1 + np.exp(-(X @ [0.2, 1.0, -0.5, 0.3])))).astype(float)
    f = fit_logit(X, y)
    ref = sm.GLM(y, X, family=sm.families.Binomial()).fit(tol=1e-12)
    np.testing.assert_allclose(f.prob, ref.fittedvalues, rtol=1e-7)
    np.testing.assert_allclose(f.beta, ref.params, rtol=1e-6)


# --------------------------------------------------------------------------- synthpop reference
def _scenario1():
    orig = pd.read_csv(shared_path("data", "CEdata.csv"))
    folder = shared_path("reference", "identification", "synthetic")
    syn = [pd.read_csv(folder / f"scenario1_syn{l}.csv") for l in range(1, 21)]
    return orig, syn


@pytest.mark.reference
@pytest.mark.parametrize("max_order", [0, 1])
def test_reference_synthpop_pmse(max_order):
    orig, syn = _scenario1()
    ref = pd.read_csv(shared_path("reference", "utility",
                                  f"utility_gen_logit_maxorder{max_order}_scenario1.csv"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)  # max_order 1: quasi-separation
        r = pmse(orig, syn, categorical=CE_CATEGORICAL,
                 synthesized=["Income"],
                 propensity=PropensitySpec(method="logit", max_order=max_order))
    np.testing.assert_allclose(r.pmse, ref["pMSE"].to_numpy(), rtol=1e-8)
    assert r.incomplete and r.null == "theory"
    # k*-1 = estimable columns involving Income: main effect (+ its 12 two-way products)
    assert set(r.df.tolist()) == ({1} if max_order == 0 else {13})
    assert set(r.k.tolist()) == ({14} if max_order == 0 else {77})  # 3 aliased Tenure:Marital
    if max_order == 1:
        assert "SEPARATION" in r.warnings
    none = pd.read_csv(shared_path("reference", "utility",
                                   "utility_gen_logit_maxorder0_none_scenario1.csv"))
    if max_order == 0:  # resamp.method = 'none' reports the same pMSE and S_pMSE = NA
        np.testing.assert_allclose(r.pmse, none["pMSE"].to_numpy(), rtol=1e-8)
        assert none["S_pMSE"].isna().all()


def _pairs_check(max_order):
    orig, syn = _scenario1()
    ref = pd.read_csv(shared_path("reference", "utility",
                                  f"utility_gen_logit_maxorder{max_order}_scenario1.csv"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)
        r = pmse(orig, syn, categorical=CE_CATEGORICAL,
                 synthesized=["Income"],
                 propensity=PropensitySpec(method="logit", max_order=max_order, null="pairs"))
    np.testing.assert_allclose(r.pmse, ref["pMSE"].to_numpy(), rtol=1e-8)
    np.testing.assert_allclose(r.ratio, ref["S_pMSE"].to_numpy(), rtol=1e-8)
    assert r.null_pmse.shape == (190,)
    np.testing.assert_allclose(r.e0, np.mean(r.null_pmse) / 2)


@pytest.mark.reference
def test_reference_synthpop_s_pmse_pairs_main_effects():
    _pairs_check(0)


@pytest.mark.reference
@pytest.mark.slow
def test_reference_synthpop_s_pmse_pairs_two_way():
    _pairs_check(1)


# --------------------------------------------------------------------------- behaviour
def _mixed(n, rng, shift=0.0):
    a = rng.choice(["u", "v", "w"], size=n, p=[0.5, 0.3, 0.2])
    x = rng.normal(size=n) + shift + (a == "v") * 0.5
    b = rng.integers(1, 3, size=n)
    return pd.DataFrame({"a": a, "x": x, "b": b})


def test_identical_data_give_zero_pmse_both_methods():
    d = _mixed(200, np.random.default_rng(3))
    # the same table twice is reported (it is not two draws), and measured as given
    with pytest.warns(DataWarning, match="DUPLICATE_DATASETS"):
        r = pmse(d, [d, d], categorical=["b"])
    np.testing.assert_allclose(r.pmse, 0, atol=1e-20)
    assert "DUPLICATE_DATASETS" in r.warnings
    with pytest.warns(DataWarning, match="DUPLICATE_DATASETS"):
        c = pmse(d, [d, d], categorical=["b"], random_seed=1,
                 propensity=PropensitySpec(method="cart", n_perm=5))
    np.testing.assert_allclose(c.pmse, 0, atol=1e-20)


def test_incomplete_counts_only_synthesized_terms():
    rng = np.random.default_rng(4)
    o = pd.DataFrame({"s": rng.normal(size=300), "u": rng.normal(size=300)})
    z = o.assign(s=rng.normal(size=300))
    r = pmse(o, z, synthesized=["s"], propensity=PropensitySpec(max_order=1))
    assert r.incomplete and r.k.tolist() == [4] and r.df.tolist() == [2]  # s, s:u
    r2 = pmse(o, z, synthesized=["s"], incomplete=False, propensity=PropensitySpec(max_order=1))
    assert r2.df.tolist() == [3]
    np.testing.assert_allclose(r.e0 * 3 / 2, r2.e0)


def test_pmse_shifted_data_detected():
    rng = np.random.default_rng(5)
    o = _mixed(400, rng)
    z = _mixed(400, rng, shift=1.0)
    r = pmse(o, z, propensity=PropensitySpec(max_order=0))
    assert r.ratio[0] > 20 and r.std[0] > 10


def test_perm_null_reproducible_and_halved():
    rng = np.random.default_rng(6)
    o = _mixed(150, rng)
    zs = [_mixed(150, rng) for _ in range(2)]
    r1 = pmse(o, zs, random_seed=11, categorical=["b"],
              propensity=PropensitySpec(method="cart", null="perm", n_perm=8))
    r2 = pmse(o, zs, random_seed=11, categorical=["b"],
              propensity=PropensitySpec(method="cart", null="perm", n_perm=8))
    np.testing.assert_array_equal(r1.pmse, r2.pmse)
    np.testing.assert_array_equal(r1.null_pmse, r2.null_pmse)
    assert r1.null_pmse.shape == (2, 8) and r1.null == "perm"
    np.testing.assert_allclose(r1.e0, r1.null_pmse.mean(axis=1))
    np.testing.assert_allclose(r1.ratio, r1.pmse / r1.e0)
    assert r1.nnosplits is not None and r1.nnosplits[1] == 16
    assert r1.k.tolist() == [-1, -1]
    # a permutation null is also available for the logistic model (synthpop allows it)
    lg = pmse(o, zs, random_seed=2,
              propensity=PropensitySpec(method="logit", max_order=0, null="perm", n_perm=8))
    assert lg.null == "perm" and np.all(lg.e0 > 0) and lg.null_pmse.shape == (2, 8)


def test_auto_null_for_cart_incomplete_is_pairs():
    rng = np.random.default_rng(7)
    o = _mixed(120, rng)
    zs = [o.assign(x=rng.normal(size=120)) for _ in range(4)]
    r = pmse(o, zs, synthesized=["x"], random_seed=3, propensity=PropensitySpec(method="cart"))
    assert r.null == "pairs" and r.null_pmse.shape == (6,)
    np.testing.assert_allclose(r.ratio, 2 * r.pmse / r.null_pmse.mean())


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"method": "forest"}, "PropensitySpec.method must be one of"),
        ({"null": "bootstrap"}, "PropensitySpec.null must be one of"),
        ({"method": "cart", "null": "theory"},
         r"PropensitySpec.null='theory' needs PropensitySpec.method='logit' \(its chi-square"),
        ({"null": "perm", "synthesized": ["x"]}, "complete synthesis only"),
        ({"null": "pairs"}, "needs m >= 2"),
        ({"max_order": -1}, "PropensitySpec.max_order must be"),
        ({"min_leaf": 0}, "PropensitySpec.min_leaf must be"),
        ({"cp": -1.0}, "PropensitySpec.cp must be"),
        ({"columns": "x"}, "PropensitySpec.columns must be a non-empty sequence of column names"),
        ({"n_perm": 1}, "PropensitySpec.n_perm must be"),
        ({"incomplete": True}, "needs the synthesized columns"),
        ({"method": "cart", "synthesized": ["x"]}, "needs the 'pairs' null"),
    ],
)
def test_argument_errors(kwargs, match):
    d = _mixed(50, np.random.default_rng(8))
    fields = {"method", "max_order", "columns", "cp", "min_leaf", "min_split", "max_depth",
              "max_iter", "null", "n_perm"}
    spec = {k: kwargs.pop(k) for k in list(kwargs) if k in fields}
    with pytest.raises(ValidationError, match=match):
        pmse(d, d, propensity=PropensitySpec(**spec), **kwargs)


def test_propensity_argument():
    d = _mixed(50, np.random.default_rng(8))
    # a method's name stands for its spec; anything else is refused, naming the argument
    assert pmse(d, d, propensity="cart", random_seed=1).method == "cart"
    with pytest.raises(ValidationError, match="propensity must be a PropensitySpec"):
        pmse(d, d, propensity={"max_order": 0})
    with pytest.raises(TypeError, match="max_order"):  # the settings moved to PropensitySpec
        pmse(d, d, max_order=0)


def test_schema_errors():
    d = _mixed(50, np.random.default_rng(9))
    with pytest.raises(SchemaError, match="'Marital'"):
        pmse(d, d, categorical=["Marital"])
    with pytest.raises(SchemaError, match=r"missing column\(s\) \['x'\]"):
        pmse(d, d.drop(columns="x"))
    # missing values are no longer refused: synthpop's NA indicator (tests/data/
    # test_missing_values.py has the worked checks)
    r = pmse(d, d.assign(x=np.where(np.arange(50) == 3, np.nan, d["x"])),
             propensity=PropensitySpec(max_order=0))
    assert r.k[0] == pmse(d, d, propensity=PropensitySpec(max_order=0)).k[0] + 1


def test_separation_and_nonconvergence_warnings():
    o = pd.DataFrame({"x": np.r_[np.zeros(30), np.ones(30)], "z": np.arange(60.0)})
    z = pd.DataFrame({"x": np.r_[np.ones(30) * 2, np.ones(30) * 3], "z": np.arange(60.0)})
    # levels 2 and 3 of x exist only in the synthetic data: an error unless the release says
    # it recodes x, then warned about as well
    with pytest.raises(SchemaError, match="SYNTHETIC_ONLY_LEVEL"):
        pmse(o, z, categorical=["x"], propensity=PropensitySpec(max_order=0))
    recoded = SyntheticData([z]).declare_recoded(["x"])
    with pytest.warns(DataWarning, match="SYNTHETIC_ONLY_LEVEL"):
        with pytest.warns(DataWarning, match="SEPARATION"):
            r = pmse(o, recoded, categorical=["x"], propensity=PropensitySpec(max_order=0))
    assert "SEPARATION" in r.warnings
    with pytest.warns(ConvergenceWarning, match="NOT_CONVERGED"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DataWarning)
            r = pmse(o, z, propensity=PropensitySpec(max_order=0, max_iter=1))
    assert "NOT_CONVERGED" in r.warnings and not r.converged.all()


@given(
    st.lists(st.tuples(st.integers(0, 2), st.integers(0, 1)), min_size=6, max_size=30),
    st.lists(st.tuples(st.integers(0, 2), st.integers(0, 1)), min_size=6, max_size=30),
    st.sampled_from(["logit", "cart"]),
)
def test_pmse_bounds(orig, syn, method):
    o = pd.DataFrame(orig, columns=["a", "b"])
    # levels of the synthetic data only are kept as levels of their own: the bound holds too
    z = SyntheticData([pd.DataFrame(syn, columns=["a", "b"])]).declare_recoded(["a", "b"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = pmse(o, z, categorical=["a", "b"], random_seed=0,
                 propensity=PropensitySpec(method=method, max_order=1, n_perm=2))
    c = r.c[0]
    # p̂ ∈ [0, 1] with mean c (intercept / leaf means) ⇒ 0 ≤ pMSE = var(p̂) ≤ c(1 − c)
    assert 0 <= r.pmse[0] <= c * (1 - c) + 1e-12


def test_ratio_is_one_on_average_under_the_null():
    """Correct synthesis (data drawn from the model fitted to the original): E[ratio] = 1.

    The chi-square null of Snoke et al. holds when the synthetic data are drawn from the
    original's *fitted* model (here: level proportions of ``a`` and normal ``x | a`` with the
    original's group means and sds). (Two independent samples from the population would give
    about twice the null value, Snoke App. A.3 — that is why permutation pMSEs are halved.)
    max_order 1 on (a: 3 levels, x numeric): k − 1 = 2 + 1 + 2 = 5, so one ratio has sd
    sqrt(2/5) ≈ 0.63; given the original the 60 ratios are independent, their mean has sd
    0.082, and the tolerance is 4 × 0.082 ≈ 0.33 (std: sd 1/sqrt(60), tolerance 4/sqrt(60)).
    """
    rng = np.random.default_rng(2024)
    n = 400
    a = rng.choice(["u", "v", "w"], size=n, p=[0.5, 0.3, 0.2])
    o = pd.DataFrame({"a": a, "x": rng.normal(size=n) + (a == "v")})
    levels, counts = np.unique(o["a"], return_counts=True)
    mu = o.groupby("a")["x"].mean()
    sd = o.groupby("a")["x"].std()

    def synthesize():
        az = rng.choice(levels, size=n, p=counts / n)
        return pd.DataFrame({"a": az, "x": rng.normal(mu[az].to_numpy(), sd[az].to_numpy())})

    r = pmse(o, [synthesize() for _ in range(60)], propensity=PropensitySpec(max_order=1))
    assert set(r.df.tolist()) == {5}
    assert abs(r.mean_ratio - 1) < 0.33
    assert abs(r.mean_std) < 4 / np.sqrt(60)


def test_synthetic_data_input_columns_and_empty_levels():
    rng = np.random.default_rng(12)
    o = _mixed(200, rng)
    z1 = o.assign(x=rng.normal(size=200))
    z2 = z1.assign(a=np.where(np.arange(200) < 5, "new", z1["a"]))  # a level unseen elsewhere
    schema = infer_schema(o, categorical=["b"], synthesized=["x", "a"])
    with pytest.raises(SchemaError, match=r"synthetic dataset 2: column 'a' holds 'new'"):
        pmse(o, SyntheticData([z1, z2], method="test", schema=schema))
    sd = SyntheticData([z1, z2], method="test", schema=schema).declare_recoded(["a"])
    with pytest.warns(DataWarning, match="SYNTHETIC_ONLY_LEVEL.*'a': 'new' \\(dataset 2\\)"):
        r = pmse(o, sd, propensity=PropensitySpec(max_order=0))
    assert r.incomplete and sorted(r.synthesized) == ["a", "x"]
    assert "EMPTY_LEVELS_DROPPED" in r.warnings  # dataset 1 + original lack level "new"
    assert r.k.tolist() == [5, 6]  # 1 + a(2) + x + b(1), plus a[new] in dataset 2
    # the levels of every column are harmonised, so 'a' is warned about even when only x is
    # modelled (noted for the utility inputs' normaliser)
    with pytest.warns(DataWarning, match="SYNTHETIC_ONLY_LEVEL"):
        only_x = pmse(o, sd, propensity=PropensitySpec(max_order=0, columns=["x"]))
    assert only_x.columns == ["x"] and only_x.k.tolist() == [2, 2]
    assert not only_x.incomplete  # every modelled column is synthesized


def test_cart_rpart_style_pruning():
    from bayes_risk.utility.pmse import _cart_prob

    rng = np.random.default_rng(13)
    x = rng.normal(size=400)
    y = (x > 0).astype(float)
    kw = {"min_leaf": 5, "min_split": 20, "max_depth": 30, "seed": 1}
    # one split separates the labels: kept at the synthpop default cp, p̂ ∈ {0, 1}
    p = _cart_prob(x[:, None], y, cp=1e-3, **kw)
    np.testing.assert_array_equal(p, y)
    # cp = 1 (α = root risk) collapses the tree to the root: p̂ = c everywhere
    np.testing.assert_allclose(_cart_prob(x[:, None], y, cp=1.0, **kw), y.mean())
    # pure noise: splits that do not reduce the misclassification risk by cp are pruned
    noise = rng.normal(size=(400, 2))
    yn = rng.permutation(np.r_[np.zeros(200), np.ones(200)])
    pn = _cart_prob(noise, yn, cp=0.05, **kw)
    assert len(np.unique(pn)) <= 3


def test_design_too_large_for_memory_is_refused_before_allocating(monkeypatch):
    """Interactions of many-level factors grow the design multiplicatively: the size is
    estimated first and refused with the argument to change, instead of an out-of-memory kill."""
    import bayes_risk._memory as mem

    i = np.arange(200)
    df = pd.DataFrame({"a": (i % 40).astype(str), "b": ((i * 7 + i // 40) % 40).astype(str)})
    schema = infer_schema(df, categorical=["a", "b"])
    # 400 rows x (1 + 39 + 39 + 39*39) columns x 32 bytes is about 20.5 MB
    monkeypatch.setattr(mem, "available_memory", lambda: 10_000_000)
    msg = r"1,600 columns.*reduce max_order or the levels"
    with pytest.raises(ValidationError, match=msg) as e:
        propensity_design([df, df], schema, ["a", "b"], 1)
    assert e.value.code == "MEMORY_TOO_LARGE"
    monkeypatch.setattr(mem, "available_memory", lambda: 30_000_000)
    X, names, _, _ = propensity_design([df, df], schema, ["a", "b"], 1)
    assert X.shape == (400, 1600)


def _estimable_columns_reference(X, tol):
    # the rank-revealing pass as first written (a copy of the design for every QR)
    from scipy.linalg import LinAlgError, cholesky, qr

    norms = np.linalg.norm(X, axis=0)
    keep = np.flatnonzero(norms > 0)
    first = True
    while True:
        Xn = X[:, keep] / norms[keep]
        if not first:
            try:
                L = cholesky(Xn.T @ Xn, lower=True, check_finite=False)
                if np.all(np.diag(L) >= 10 * tol):
                    return keep
            except LinAlgError:
                pass
        first = False
        R = qr(Xn, mode="r", check_finite=False)[0]
        ok = np.zeros(keep.size, dtype=bool)
        d = np.abs(np.diag(R))
        ok[: d.size] = d >= tol
        if ok.all():
            return keep
        keep = keep[ok]


def test_rank_revealing_pass_factorises_in_place_same_columns(monkeypatch):
    # the QR gets the unit-norm design in Fortran order, to overwrite (no copy); the kept
    # columns, the R factor and so every fit are those of the pass that copied the design.
    # A design whose columns are all clearly kept or clearly aliased is settled without the QR
    # (the same columns); a column near the tolerance goes to the QR
    import scipy.linalg

    from bayes_risk.utility._propensity import RANK_TOL, _estimable_columns

    rng = np.random.default_rng(11)
    calls = []
    real_qr = scipy.linalg.qr

    def spy(a, *args, **kw):
        calls.append((a.flags.f_contiguous, kw.get("overwrite_a", False)))
        return real_qr(a, *args, **kw)

    qr_used = []
    for n, p, near in [(400, 12, 1e-9), (60, 80, 1e-9), (1000, 40, 1e-9), (400, 12, 1e-7),
                       (1000, 40, 3e-7), (1000, 40, 1e-5)]:
        X = (rng.random((n, p)) < 0.25).astype(float)
        X[:, 0] = 1.0
        X[:, 5] = X[:, 3] + X[:, 4]  # aliased: dropped
        X[:, 7] = 0.0  # empty column
        # aliased within the tolerance, or near it (unit-norm residual about `near`)
        X[:, 9] = 2 * X[:, 8] + near * 2 * np.linalg.norm(X[:, 8]) * rng.standard_normal(n) / n**0.5
        expected = _estimable_columns_reference(X, RANK_TOL)
        calls.clear()
        monkeypatch.setattr(scipy.linalg, "qr", spy)
        got = _estimable_columns(X, RANK_TOL)
        monkeypatch.setattr(scipy.linalg, "qr", real_qr)
        np.testing.assert_array_equal(got, expected)
        assert not {5, 7} & set(got.tolist())
        assert (9 in got) == (near > 2e-7)
        assert all(f and o for f, o in calls)
        qr_used.append(bool(calls))
        y = (rng.random(n) < 0.5).astype(float)
        Xs = X[:, expected] / np.linalg.norm(X[:, expected], axis=0)
        np.testing.assert_array_equal(
            real_qr(np.asfortranarray(Xs), mode="r", check_finite=False, overwrite_a=True)[0],
            real_qr(Xs, mode="r", check_finite=False)[0])
        assert fit_logit(X, y).keep.tolist() == expected.tolist()
    # clear designs skip the QR; a column whose residual is near the tolerance does not
    assert qr_used == [False, True, False, True, True, True]


def test_irls_normal_equations_weighted_design_in_fortran_order(monkeypatch):
    # the weighted design goes to the rank-k update in Fortran order as it is written (no
    # transposing copy); the solution is the one of the copied design (LAPACK's Cholesky
    # called directly: equal to the last bits)
    import scipy.linalg.blas as blas
    from scipy.linalg import cho_factor, cho_solve

    from bayes_risk.utility._propensity import _wls

    rng = np.random.default_rng(5)
    Xs = rng.normal(size=(500, 9))
    w = rng.uniform(0.01, 0.25, size=500)
    rhs = rng.normal(size=500)
    H = blas.dsyrk(1.0, np.asfortranarray(Xs * np.sqrt(w)[:, None]), trans=1, lower=0)
    expected = cho_solve(cho_factor(H, lower=False, check_finite=False), Xs.T @ rhs,
                         check_finite=False)
    seen, copies = [], []
    real, real_f = blas.dsyrk, np.asfortranarray
    monkeypatch.setattr(blas, "dsyrk", lambda *a, **kw: seen.append(a[1]) or real(*a, **kw))
    monkeypatch.setattr(np, "asfortranarray",
                        lambda a, *r, **kw: copies.append(np.ndim(a) == 2 and not
                                                          np.asarray(a).flags.f_contiguous)
                        or real_f(a, *r, **kw))
    got = _wls(Xs, w, rhs)
    monkeypatch.setattr(np, "asfortranarray", real_f)
    np.testing.assert_allclose(got, expected, rtol=1e-13)
    assert len(seen) == 1 and seen[0].flags.f_contiguous
    assert not any(copies)  # no C-ordered copy of the weighted design is transposed


def _fit_logit_reference(X, y, max_iter=100, tol=1e-8):
    # R's glm.fit for the binomial family as first written here: the columns the rank pass
    # keeps, a copy scaled to unit RMS, each step's normal equations formed from the weighted
    # design and solved by least squares, step-halving on a deviance increase
    from scipy.special import expit

    from bayes_risk.utility._propensity import RANK_TOL

    top = np.abs(X).max(axis=0)  # each column by a power of two first (exact)
    X = X / np.where(top > 0, 2.0 ** np.floor(np.log2(np.where(top > 0, top, 1.0))), 1.0)
    keep = _estimable_columns_reference(X, RANK_TOL)
    Xs = X[:, keep] / np.sqrt(np.mean(X[:, keep] ** 2, axis=0))

    def dev(eta):
        return float(2.0 * np.sum(np.logaddexp(0.0, eta) - y * eta))

    mu = (y + 0.5) / 2.0
    eta = np.log(mu / (1 - mu))
    d, beta = dev(eta), None
    for it in range(1, max_iter + 1):  # noqa: B007 (returned as the iteration count)
        w = mu * (1 - mu)
        Xw = Xs * np.sqrt(w)[:, None]
        nb = np.linalg.lstsq(Xw.T @ Xw, Xs.T @ (w * eta + (y - mu)), rcond=None)[0]
        ne, halvings = Xs @ nb, 0
        while beta is not None and halvings < 30 and not dev(ne) <= d * (1 + 1e-10):
            nb = (nb + beta) / 2
            ne, halvings = Xs @ nb, halvings + 1
        old, beta, eta, d = d, nb, ne, dev(ne)
        mu = expit(eta)
        if abs(d - old) / (abs(d) + 0.1) < tol:
            break
    return mu, keep, it


def test_fit_logit_equals_the_plain_irls():
    # the fit writes one Fortran-ordered copy of the design, takes the first step's normal
    # equations from the rank pass's cross-products and solves by LAPACK's Cholesky: the same
    # fit as the plain iteration to rounding, on CEdata's designs (main effects, two-way, 16x
    # stacked: 178,272 records), on designs with aliased and empty columns and on one whose
    # columns are tiny or huge
    orig, syn = _scenario1()
    schema = infer_schema(orig, categorical=CE_CATEGORICAL)
    cases = []
    for z, order, k in [(syn[0], 0, 1), (syn[2], 1, 1), (syn[1], 0, 16)]:
        X, *_ = propensity_design([pd.concat([z] * k), pd.concat([orig] * k)], schema,
                                  list(schema.names), order)
        cases.append((X, np.r_[np.ones(len(z) * k), np.zeros(len(orig) * k)]))
    rng = np.random.default_rng(3)
    for n, p in [(300, 8), (2000, 30)]:
        X = np.column_stack([np.ones(n), rng.normal(size=(n, p - 1))])
        X[:, 3] = X[:, 1] - 2 * X[:, 2]  # aliased
        X[:, 5] = 0.0  # empty
        X[:, 6] = (rng.random(n) < 0.3) * 1e-300
        X[:, 7] *= 1e250
        y = (rng.random(n) < 1 / (1 + np.exp(-(X[:, :3] @ [0.3, 0.8, -0.6])))).astype(float)
        cases.append((X, y))
    for X, y in cases:
        f = fit_logit(X, y)
        mu, keep, n_iter = _fit_logit_reference(X, y)
        assert f.keep.tolist() == keep.tolist() and f.n_iter == n_iter and f.converged
        np.testing.assert_allclose(f.prob, mu, rtol=1e-10)
        c = y.mean()
        np.testing.assert_allclose(np.mean((f.prob - c) ** 2), np.mean((mu - c) ** 2),
                                   rtol=1e-10)


def test_differing_share_vectorised_equals_the_record_by_record_comparison():
    # categorical columns that float64 holds exactly are compared as numbers; the others (text,
    # integers beyond 2**53, mixed objects) value by value after normalising (2 and 2.0 are one
    # level; both missing is no difference)
    from bayes_risk.data.levels import normalise_level
    from bayes_risk.utility._inputs import differing_share

    rng = np.random.default_rng(4)
    n = 400
    big = 2**60 + rng.integers(0, 3, n)
    orig = pd.DataFrame({
        "i": rng.integers(0, 4, n), "f": rng.integers(0, 4, n).astype(float),
        "g": np.where(rng.random(n) < 0.1, np.nan, rng.integers(0, 3, n)),
        "s": rng.choice(["a", "b", "c"], n), "big": big, "x": rng.normal(size=n)})
    syn = []
    for _ in range(3):
        z = orig.copy()
        flip = rng.random(n) < 0.2
        z["i"] = np.where(flip, rng.integers(0, 4, n), z["i"])
        z["f"] = z["f"].astype(int)  # 2.0 against 2: no difference
        z["g"] = np.where(flip, np.nan, z["g"])
        z["s"] = np.where(flip, "a", z["s"])
        z["big"] = np.where(flip, big + 1, big)
        syn.append(z)
    schema = infer_schema(orig, categorical=["i", "f", "g", "s", "big"])
    got = differing_share(orig, syn, schema)
    for c in ["i", "f", "g", "s", "big"]:
        expected = [float(np.mean([normalise_level(a) != normalise_level(b)
                                   and not (pd.isna(a) and pd.isna(b))
                                   for a, b in zip(orig[c], z[c], strict=True)]))
                    for z in syn]
        assert got.get(c, [0.0] * 3) == expected, c
    assert "f" not in got and "x" not in got
