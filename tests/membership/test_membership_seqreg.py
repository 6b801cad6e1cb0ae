"""Membership risk of the sequential regressions against exact values (methods, Membership
disclosure risk): fully synthetic releases and partially synthetic ones, whose released
unsynthesized values enter through ``1{x^us = r} / p(r | y_{-i})``.

The chains use families with exact posterior draws, so the exact values are closed forms:

* ``categorical`` (no covariates, Dirichlet(1) prior): ``p(b | data) = (1 + n_b) / (d + N)``;
* ``normal`` with the flat prior ``p(β, σ²) ∝ σ^{-2}``: the predictive is Student-t with
  ``N − q`` degrees of freedom, location ``x̃ β̂`` and scale² ``s² (1 + x̃ (XᵀX)^{-1} x̃ᵀ)``.

``A_l(x) = p(x | y_{-i}, Z_(l)) / p(x | y_{-i})``; the normaliser of ``m = 2`` datasets is a sum
over the levels (categorical) or a quadrature (normal); the unsynthesized values' factor is
``p(r | y_{-i}) = (n_r^{(-i)} + α / C) / (n − 1 + α)``. Replicate runs of the package (fit,
augmented fits, estimator; their own seeds) are compared with the exact posterior membership
probability as in ``test_membership_exact.py``.
"""

from __future__ import annotations

import functools
import warnings

import numpy as np
import pandas as pd
import pytest
from _exact import check_p_true, t_bound
from scipy import integrate, stats

from bayes_risk.exceptions import NotSupportedError, SchemaError
from bayes_risk.membership import AttackSpec, RatioSpec, membership_risk
from bayes_risk.membership.estimator import posterior_membership
from bayes_risk.models import Sampling, SequentialRegression

REPS = 6


# ------------------------------------------------------------------------------ exact values
def _dm(values: np.ndarray, d: int) -> np.ndarray:
    """Dirichlet(1)-multinomial predictive of each level."""
    return (1.0 + np.bincount(values, minlength=d)) / (d + values.size)


def _t_pred(X: np.ndarray, y: np.ndarray, x: np.ndarray) -> stats.rv_continuous:
    """The flat-prior normal regression's predictive at the design row ``x``."""
    XtX_inv = np.linalg.inv(X.T @ X)
    beta = XtX_inv @ X.T @ y
    nu = len(y) - X.shape[1]
    s2 = float(np.sum((y - X @ beta) ** 2) / nu)
    return stats.t(df=nu, loc=float(x @ beta), scale=np.sqrt(s2 * (1.0 + x @ XtX_inv @ x)))


def _log_p_r(ya: np.ndarray, i: int, alpha: float, cells: int) -> float:
    n_r = int(np.sum(np.delete(ya, i) == ya[i]))
    return float(np.log((n_r + alpha / cells) / (len(ya) - 1 + alpha)))


def exact_partial_categorical(ya, yb, zs, i, xa, xb, *, alpha, cells, d):
    """Exact ``log Λ``: ``A`` unsynthesized, ``B`` synthesized with the categorical family."""
    if xa != ya[i]:
        return -np.inf
    rest = np.delete(yb, i)
    base = _dm(rest, d)
    log_a = sum(np.log(_dm(np.concatenate([rest, z]), d)) - np.log(base) for z in zs)
    log_d = np.log(np.sum(base * np.exp(log_a)))
    return float(log_a[xb] - log_d - _log_p_r(ya, i, alpha, cells))


def exact_partial_normal(ya, yv, zs, i, xa, xv, *, alpha, cells, numeric=False):
    """Exact ``log Λ``: ``A`` unsynthesized (binary, or ``numeric``: the value itself is the
    regressor), ``Y ~ N(β0 + β1 A, σ²)`` synthesized."""
    if xa != ya[i]:
        return -np.inf
    X = np.column_stack([np.ones(len(ya)), ya if numeric else ya == 1]).astype(float)
    keep = np.arange(len(ya)) != i
    xr = X[i]
    base = _t_pred(X[keep], yv[keep], xr)
    augs = [_t_pred(np.vstack([X[keep], X]), np.concatenate([yv[keep], z]), xr) for z in zs]

    def log_a(v):
        return sum(a.logpdf(v) - base.logpdf(v) for a in augs)

    log_d = 0.0
    if len(zs) > 1:
        lo, hi = base.ppf(1e-10), base.ppf(1 - 1e-10)
        val, _ = integrate.quad(lambda v: base.pdf(v) * np.exp(log_a(v)), lo, hi, limit=200)
        log_d = np.log(val)
    return float(log_a(xv) - log_d - _log_p_r(ya, i, alpha, cells))


def exact_full_normal(yv1, yv2, zs, i, x1, x2):
    """Exact ``log Λ`` of a fully synthetic chain ``Y1 ~ N(μ, σ1²)``, ``Y2 ~ N(β0 + β1 Y1,
    σ2²)`` and one dataset (the normaliser is 1)."""
    keep = np.arange(len(yv1)) != i

    def log_pred(v1, v2):
        X1 = np.ones((len(v1), 1))
        X2 = np.column_stack([np.ones(len(v1)), v1])
        return (_t_pred(X1, v1, np.ones(1)).logpdf(x1)
                + _t_pred(X2, v2, np.array([1.0, x1])).logpdf(x2))

    base = log_pred(yv1[keep], yv2[keep])
    out = 0.0
    for z1, z2 in zs:
        out += log_pred(np.concatenate([yv1[keep], z1]), np.concatenate([yv2[keep], z2])) - base
    return float(out)


# ------------------------------------------------------------------------------ the checks
def _replicates(fit, targets, exact, *, m, records, holdout, **kw):
    """``REPS`` runs (fit, synthesis fixed; refits and estimator seeded per run): estimated and
    exact posterior membership probabilities of each target."""
    y, syn, model0 = fit
    est, truth = [], []
    cache: dict = {}
    for r in range(REPS):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = model0(500 + r)
            res = membership_risk(model, y, syn[:m], holdout=holdout, records=records,
                                  population=0, random_seed=900 + r, **kw,
                                  attack=AttackSpec(bootstrap=0))
        rec = res.records
        assert (rec["flag_codes"] == "").all(), rec
        row_truth = []
        for s_, source, row in zip(rec["slot"], rec["source"], rec["row"], strict=True):
            key = (int(s_), source, int(row))
            if key not in cache:
                cache[key] = exact(int(s_), targets(source, int(row)))
            row_truth.append(cache[key])
        truth.append(posterior_membership(np.array(row_truth), 0.5))
        est.append(rec["p_member"].to_numpy())
    return np.array(est), np.array(truth), rec


@pytest.fixture(scope="module")
def categorical_release():
    rng = np.random.default_rng(7)
    n = 24
    ya = rng.integers(0, 2, n)
    ya[5] = 2  # the only record with A = 2: its unsynthesized values are unique
    yb = rng.integers(0, 3, n)
    yb[:8] = (ya[:8] + 1) % 3
    y = pd.DataFrame({"A": pd.Categorical(ya.astype(str), categories=["0", "1", "2"]),
                      "B": pd.Categorical(yb.astype(str), categories=["0", "1", "2"])})

    @functools.cache  # one fit per seed: the module's runs share the fitted models
    def model(seed):
        return SequentialRegression(families={"B": "categorical"}, sampling=Sampling(draws=3000),
                                    progressbar=False).fit(y, synthesized=["B"],
                                                           random_seed=seed)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        syn = list(model(1).synthesize(2, random_seed=2).datasets)
    hold = pd.DataFrame({"A": pd.Categorical(["0", "1", "2"], categories=["0", "1", "2"]),
                         "B": pd.Categorical(["1", "2", "0"], categories=["0", "1", "2"])})
    return y, syn, model, ya, yb, hold


@pytest.mark.parametrize("m", [1, pytest.param(2, marks=pytest.mark.slow)])
def test_partial_categorical_matches_exact(categorical_release, m):
    """Members 0, 5 (unique unsynthesized values), 9 and three holdout records; with the
    non-members' random slots most are excluded exactly (p = 0), any that match is estimated."""
    y, syn, model, ya, yb, hold = categorical_release
    zs = [z["B"].astype(int).to_numpy() for z in syn[:m]]
    alpha = 2.0

    def targets(source, row):
        t = y if source == "original" else hold
        return int(t["A"].iloc[row]), int(t["B"].iloc[row])

    def exact(slot, x):
        return exact_partial_categorical(ya, yb, zs, slot, x[0], x[1], alpha=alpha, cells=3,
                                         d=3)

    est, truth, rec = _replicates((y, syn, model), targets, exact, m=m, records=[0, 5, 9],
                                  holdout=hold,
                                  ratio=RatioSpec(unsynthesized_concentration=alpha))
    assert rec["unsynthesized_match"].iloc[:3].all()
    # the unique record: p(r | y_{-i}) = (α / C) / (n − 1 + α), a large likelihood ratio
    assert rec["log_p_unsynthesized"].iloc[1] == pytest.approx(np.log((2 / 3) / 25))
    excluded = ~rec["unsynthesized_match"].to_numpy()
    assert excluded.any()  # the seeds give some non-member a slot with other values
    assert (rec.loc[excluded, "p_member"] == 0).all() and (truth[:, excluded] == 0).all()
    err = (est - truth)[:, ~excluded]
    check_p_true(err, np.zeros(err.shape[1]), 0.01, z_max=t_bound(REPS, err.shape[1], 0.01))


@pytest.fixture(scope="module")
def normal_release():
    rng = np.random.default_rng(11)
    n = 30
    ya = np.repeat([0, 1], n // 2)
    yv = 1.0 + 1.5 * ya + rng.normal(0, 1, n)
    y = pd.DataFrame({"A": pd.Categorical(ya.astype(str), categories=["0", "1"]), "Y": yv})

    @functools.cache  # one fit per seed: the module's runs share the fitted models
    def model(seed):
        return SequentialRegression(sampling=Sampling(draws=3000), progressbar=False).fit(
            y, synthesized=["Y"], random_seed=seed)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        syn = list(model(1).synthesize(2, random_seed=2).datasets)
    hold = pd.DataFrame({"A": pd.Categorical(["0", "1"], categories=["0", "1"]),
                         "Y": [0.5, 4.5]})
    return y, syn, model, ya, yv, hold


@pytest.mark.parametrize("m", [1, pytest.param(2, marks=pytest.mark.slow)])
def test_partial_normal_regression_matches_exact(normal_release, m):
    """``Y`` regressed on the unsynthesized ``A``: Student-t predictives, ``m = 2`` by
    quadrature."""
    y, syn, model, ya, yv, hold = normal_release
    zs = [z["Y"].to_numpy(dtype=float) for z in syn[:m]]

    def targets(source, row):
        t = y if source == "original" else hold
        return int(t["A"].iloc[row]), float(t["Y"].iloc[row])

    def exact(slot, x):
        return exact_partial_normal(ya, yv, zs, slot, x[0], x[1], alpha=1.0, cells=2)

    est, truth, _ = _replicates((y, syn, model), targets, exact, m=m, records=[0, 4, 17, 22],
                                holdout=hold)
    err = est - truth
    check_p_true(err, np.zeros(err.shape[1]), 0.01, z_max=t_bound(REPS, err.shape[1], 0.01))


@pytest.fixture(scope="module")
def numeric_release():
    """A numeric unsynthesized ``X`` recorded to one decimal (``9.5`` is the only record with
    its value): ``C`` = the multiples of 0.1 from 0 to 9.5 = 96 cells."""
    rng = np.random.default_rng(13)
    n = 30
    x = rng.integers(0, 7, n).astype(float)
    x[5] = 9.5
    yv = 1.0 + 0.5 * x + rng.normal(0, 1, n)
    y = pd.DataFrame({"X": x, "Y": yv})

    @functools.cache  # one fit per seed: the module's runs share the fitted models
    def model(seed):
        return SequentialRegression(sampling=Sampling(draws=3000), progressbar=False).fit(
            y, synthesized=["Y"], random_seed=seed)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        syn = list(model(1).synthesize(2, random_seed=2).datasets)
    # a shared value, the unique record's value, and a value no record has
    hold = pd.DataFrame({"X": [3.0, 9.5, 4.25], "Y": [2.0, 6.5, 3.0]})
    return y, syn, model, x, yv, hold


def test_numeric_unsynthesized_cells_by_hand():
    """Resolution, cells and keys of numeric unsynthesized columns, computed by hand."""
    from bayes_risk.data.schema import infer_schema
    from bayes_risk.membership import partial

    assert partial.resolution(pd.Series([1.0, 2.5, 3.25, np.nan])) == pytest.approx(0.01)
    assert partial.resolution(pd.Series([10, 20, 40])) == 1.0  # never coarser than 1
    assert partial.resolution(pd.Series([0.1, 0.7])) == pytest.approx(0.1)
    assert partial.resolution(pd.Series([2.675, 12345.67])) == pytest.approx(0.001)
    # logarithms carry all of a float's digits: a unit far finer than 1e-8
    assert partial.resolution(pd.Series(np.log([30000.0, 41234.0]))) < 1e-12
    y = pd.DataFrame({"X": [0.0, 2.5, 2.5, np.nan],
                      "A": pd.Categorical(["a", "b", "a", "a"])})
    schema = infer_schema(y)
    # X: 0.0, 0.1, ..., 2.5 and missing = 27; A: 2 levels
    assert partial.n_cells(y, schema, ["X", "A"]) == 27 * 2
    t = pd.DataFrame({"X": [2.5, np.nan, 2.4, 0.0],
                      "A": pd.Categorical(["a", "a", "a", "b"])})
    ok, kt = partial.cell_keys([y, t], schema, ["X", "A"], reference=y)
    assert ok[1] != ok[2] and kt[0] == ok[2] and kt[1] == ok[3]
    assert kt[2] == -1 and kt[3] == -1  # 2.4 is no record's value; (0.0, b) no record's cell
    # text where a number belongs is no record's value (not "missing", which a record has)
    txt = pd.DataFrame({"X": ["n/a"], "A": pd.Categorical(["a"])}, dtype=object)
    assert partial.cell_keys([txt], schema, ["X", "A"], reference=y)[0][0] == -1
    # a column recorded to 15 decimals: C beyond a 64-bit integer, log p still finite
    fine = pd.DataFrame({"X": [0.0, 12345.123456789012345]})
    c = partial.n_cells(fine, infer_schema(fine), ["X"])
    k = partial.cell_keys([fine], infer_schema(fine), ["X"], reference=fine)[0]
    lp = partial.log_p_unsynthesized(k, k, c, 1.0)
    assert np.isfinite(lp).all() and lp[0] == pytest.approx(-np.log(c) - np.log(2.0))


@pytest.mark.parametrize("m", [1, pytest.param(2, marks=pytest.mark.slow)])
def test_partial_numeric_unsynthesized_matches_exact(numeric_release, m):
    """``Y`` regressed on a numeric unsynthesized ``X``: the released value ``r`` is compared
    exactly, ``p(r | y_{-i}) = (n_r^{(-i)} + α / C) / (n − 1 + α)`` with ``C = 96``; members
    0, 5 (alone with 9.5), 17, 22 and three holdout records (one whose value no record has, so
    it is excluded whatever its slot)."""
    y, syn, model, x, yv, hold = numeric_release
    zs = [z["Y"].to_numpy(dtype=float) for z in syn[:m]]

    def targets(source, row):
        t = y if source == "original" else hold
        return float(t["X"].iloc[row]), float(t["Y"].iloc[row])

    def exact(slot, xx):
        return exact_partial_normal(x, yv, zs, slot, xx[0], xx[1], alpha=1.0, cells=96,
                                    numeric=True)

    est, truth, rec = _replicates((y, syn, model), targets, exact, m=m, records=[0, 5, 17, 22],
                                  holdout=hold)
    assert rec["unsynthesized_match"].iloc[:4].all()
    assert rec["log_p_unsynthesized"].iloc[1] == pytest.approx(np.log((1 / 96) / 30))
    assert not rec["unsynthesized_match"].iloc[6]  # 4.25: no record's value
    assert (truth[:, 6] == 0).all()
    # the non-members' slots change with each run's seed: excluded exactly where the exact
    # value is 0, and close to it where their value is the slot's
    non = np.s_[:, 4:]
    assert ((est[non] == 0) == (truth[non] == 0)).all()
    assert np.abs(est[non] - truth[non]).max() <= 0.02
    # the unique member: revealed all but surely
    assert truth[0, 1] > 0.99
    err = (est - truth)[:, :4]
    check_p_true(err, np.zeros(4), 0.01, z_max=t_bound(REPS, 4, 0.01))


def test_holdout_errors_number_the_holdouts_own_rows(numeric_release):
    """A bad value in the holdout is named by the holdout's row, not by the row after the
    members that it has in the table of targets (it said 'record 32' for the holdout's row 2)."""
    y, syn, model, _, _, hold = numeric_release
    bad = hold.astype(object)
    bad.loc[2, "X"] = "n/a"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fitted = model(1)
    with pytest.raises(SchemaError, match=r"holdout: column 'X' .*record 2: 'n/a'") as err:
        membership_risk(fitted, y, syn, holdout=bad)
    assert err.value.code == "WRONG_DTYPE"


def test_a_holdout_that_overlaps_the_original_is_flagged_or_refused(numeric_release):
    """Holdout rows that are records of the original would be scored as non-members (an
    understated advantage): some of them are flagged HOLDOUT_IN_ORIGINAL and left out of the
    summaries with a coded warning; a holdout made only of such rows is refused."""
    from bayes_risk.exceptions import DataWarning, ValidationError

    y, syn, model, _, _, hold = numeric_release
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fitted = model(1)
    # holdout rows 3-8 copy records of the original (30 distinct records: p ≈ 5e-5)
    mixed = pd.concat([hold, y.iloc[[4, 11, 14, 18, 21, 25]]], ignore_index=True)
    with pytest.warns(DataWarning, match="6 of the 9 holdout rows") as rec:
        res = membership_risk(fitted, y, syn, holdout=mixed, population=0, random_seed=1)
    assert any(getattr(w.message, "code", None) == "HOLDOUT_OVERLAPS_ORIGINAL" for w in rec)
    t = res.records
    copied = t["flag_codes"].str.contains("HOLDOUT_IN_ORIGINAL")
    assert set(t.loc[copied, "row"]) == set(range(3, 9))
    assert (t.loc[copied, "source"] == "holdout").all()
    assert res.file["n_flagged"] >= 6 and "HOLDOUT_OVERLAPS_ORIGINAL" in res.warnings
    with pytest.raises(ValidationError, match="is it a part of the original") as err:
        membership_risk(fitted, y, syn, holdout=y.iloc[:6], population=0, random_seed=1)
    assert err.value.code == "HOLDOUT_OVERLAPS_ORIGINAL"


def test_holdout_overlap_is_judged_against_the_originals_own_copies():
    """Identical records of different people are common in a few categorical columns: copies
    at the original's own rate are chance, and so are a few copies of a tiny table whose records
    are all distinct; the beta-binomial probability is computed by hand."""
    import math

    from scipy import special

    from bayes_risk.membership.holdout import holdout_overlap

    rng = np.random.default_rng(2)
    pop = pd.DataFrame({"A": rng.integers(0, 2, 400), "B": rng.integers(0, 3, 400)})
    ov = holdout_overlap(pop.iloc[:300], pop.iloc[300:])
    assert ov.copies.all() and ov.reference_share == 1.0 and not ov.overlapping
    x = pd.DataFrame({"X": [0.5, 1.25, 2.0, 3.5, 2.0], "K": ["a", "b", "a", None, "a"]})
    h = pd.DataFrame({"X": [1.25, 9.0, 3.5, 3.5], "K": ["b", "b", None, "a"]})
    ov = holdout_overlap(x, h)
    assert ov.copies.tolist() == [True, False, True, False]  # a missing value equals missing
    assert ov.reference_share == pytest.approx(2 / 5)  # rows 2 and 4 copy each other
    # P(X >= 2), X ~ BetaBinomial(4, d + 1, n - d + 1) with d = 2 of n = 5: by hand
    pmf = [math.comb(4, k) * special.beta(k + 3, 4 - k + 4) / special.beta(3, 4)
           for k in range(5)]
    assert ov.p_value == pytest.approx(sum(pmf[2:]), rel=1e-12)
    assert not ov.overlapping  # two copies are what the original's rate predicts
    # four distinct records, three of them among four holdout rows: chance is not ruled out,
    # p = 4 B(4, 6) / B(1, 5) + B(5, 5) / B(1, 5) = 1 / 21 (a binomial at q = 0 would give 0)
    tiny = pd.DataFrame({"A": list("aaab"), "B": list("xyzx")})
    ov = holdout_overlap(tiny, pd.DataFrame({"A": list("aaab"), "B": list("xyzy")}))
    assert ov.copies.tolist() == [True, True, True, False]
    assert ov.p_value == pytest.approx(1 / 21, rel=1e-12) and not ov.overlapping


def test_full_synthesis_normal_chain_matches_exact():
    """A fully synthetic chain (no unsynthesized column): its record likelihood is the joint
    ``p(y1) p(y2 | y1)``, and membership needs no population model of unsynthesized values."""
    rng = np.random.default_rng(3)
    n = 25
    v1 = rng.normal(0, 1, n)
    v2 = 0.5 + 0.8 * v1 + rng.normal(0, 0.6, n)
    y = pd.DataFrame({"Y1": v1, "Y2": v2})
    hold = pd.DataFrame({"Y1": [0.3, -1.2], "Y2": [0.7, -0.9]})

    def model(seed):
        return SequentialRegression(
                                    sampling=Sampling(draws=3000), progressbar=False).fit(y,
                                    random_seed=seed)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        syn = list(model(1).synthesize(1, random_seed=2).datasets)
    zs = [(z["Y1"].to_numpy(float), z["Y2"].to_numpy(float)) for z in syn]

    def targets(source, row):
        t = y if source == "original" else hold
        return float(t["Y1"].iloc[row]), float(t["Y2"].iloc[row])

    def exact(slot, x):
        return exact_full_normal(v1, v2, zs, slot, x[0], x[1])

    est, truth, rec = _replicates((y, syn, model), targets, exact, m=1, records=[0, 3, 11],
                                  holdout=hold)
    assert "unsynthesized_match" not in rec
    err = est - truth
    check_p_true(err, np.zeros(err.shape[1]), 0.01, z_max=t_bound(REPS, err.shape[1], 0.01))


# ------------------------------------------------------------------------------ refusals
def test_partial_synthesis_refusals(categorical_release):
    """Selected records and models of whole records with unsynthesized columns stay refused,
    with the reason."""
    y, syn, _, _, _, hold = categorical_release
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sel = SequentialRegression(families={"B": "categorical"}, sampling=Sampling(draws=50),
                                   progressbar=False).fit(y, synthesized=["B"],
                                                          records=np.arange(10), random_seed=1)
    with pytest.raises(NotSupportedError, match="selected records") as err:
        membership_risk(sel, y, syn, holdout=hold)
    assert err.value.code == "MEMBERSHIP_PARTIAL_SYNTHESIS"

    # a count column modelled as normal and rounded: the likelihood is not the release's
    cnt = pd.DataFrame({"K": np.arange(30) % 7, "Y": np.linspace(0, 1, 30)})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m_cnt = SequentialRegression(families={"K": "normal"}, sampling=Sampling(draws=50),
                                     progressbar=False).fit(cnt, random_seed=1)
    assert m_cnt.schema_["K"].type == "count"
    with pytest.raises(NotSupportedError, match="rounds its draws") as err:
        membership_risk(m_cnt, cnt, [cnt], holdout=cnt.iloc[:3])
    assert err.value.code == "MEMBERSHIP_MODEL_UNSUPPORTED"
    with pytest.raises(Exception, match="unsynthesized_concentration"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            membership_risk(SequentialRegression(families={"B": "categorical"},
                                                 sampling=Sampling(draws=50),
                                                 progressbar=False).fit(
                y, synthesized=["B"], random_seed=1), y, syn, holdout=hold,
                ratio=RatioSpec(unsynthesized_concentration=0.0))


def test_laplace_draws_carry_a_coded_warning():
    """A chain with Laplace draws (an approximate posterior) gives numbers with the code
    APPROXIMATE_POSTERIOR."""
    rng = np.random.default_rng(2)
    df = pd.DataFrame({"X": rng.normal(0, 1, 40)})
    df["B"] = pd.Categorical(np.where(df["X"] + rng.normal(0, 1, 40) > 0, "yes", "no"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lap = SequentialRegression(posterior_method="laplace", sampling=Sampling(draws=400),
                                   progressbar=False).fit(df, random_seed=1)
        syn = lap.synthesize(1, random_seed=2)
        res = membership_risk(lap, df, syn, records=[0, 1], population=2,
                              random_seed=3,
                              attack=AttackSpec(bootstrap=0))
    assert "APPROXIMATE_POSTERIOR" in res.warnings
    assert "APPROXIMATE_POSTERIOR" in {w.code for w in res.structured_warnings}
