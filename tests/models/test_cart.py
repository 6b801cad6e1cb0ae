"""CART synthesizer with Bayesian bootstrap (SPEC §3.4) and its leaf likelihoods (§2.10)."""

from __future__ import annotations

import weakref

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import integrate

from bayes_risk.data import infer_schema, make_ce_like
from bayes_risk.exceptions import NotFittedError, SchemaError, ValidationError
from bayes_risk.models import get_synthesizer
from bayes_risk.models.trees.cart import CARTSynthesizer, polya_logprob, truncated_kde_logpdf
from bayes_risk.models.trees.seqtree import segment_choice

RTOL, ATOL = 1e-6, 1e-9
SYN = ["Tenure", "Expenditure", "Income"]


@pytest.fixture(scope="module")
def ce():
    df = make_ce_like()
    return df, infer_schema(df, categorical=["Urban", "Marital", "Tenure"])


@pytest.fixture(scope="module")
def ce_small():
    df = make_ce_like(600, random_seed=7)
    return df, infer_schema(df, categorical=["Urban", "Marital", "Tenure"])


# ----- SPEC worked examples -------------------------------------------------------------------
def test_polya_fixture():
    donors = ["c1", "c1", "c1", "c2"]  # counts (3, 1)
    assert np.exp(polya_logprob(donors, ["c1"])) == pytest.approx(0.75, rel=RTOL, abs=ATOL)
    assert np.exp(polya_logprob(donors, ["c1", "c1"])) == pytest.approx(0.6, rel=RTOL, abs=ATOL)
    assert np.exp(polya_logprob(donors, ["c1", "c2"])) == pytest.approx(0.15, rel=RTOL, abs=ATOL)
    # numeric donors (10, 12, 12, 20) → counts (1, 2, 1); synthetic pair (12, 20)
    assert np.exp(polya_logprob([10, 12, 12, 20], [12, 20])) == pytest.approx(
        0.1, rel=RTOL, abs=ATOL
    )
    assert polya_logprob([10, 12], [11]) == -np.inf
    assert polya_logprob([10, 12], []) == 0.0
    with pytest.raises(ValidationError, match="donor_values"):
        polya_logprob([], [1])


def test_leafcat_fixture():
    # record i is one of the A donors; candidates move its donor value
    synthetic = ["A", "A", "B", "B"]
    cands = {"A": ["A", "A", "A", "B"], "B": ["B", "A", "A", "B"], "C": ["C", "A", "A", "B"]}
    p = {k: np.exp(polya_logprob(d, synthetic)) for k, d in cands.items()}
    assert p["A"] == pytest.approx(144 / 5040, rel=RTOL, abs=ATOL)
    assert p["B"] == pytest.approx(216 / 5040, rel=RTOL, abs=ATOL)
    assert p["C"] == pytest.approx(72 / 5040, rel=RTOL, abs=ATOL)
    tot = sum(p.values())
    post = [p[k] / tot for k in "ABC"]
    np.testing.assert_allclose(post, [1 / 3, 0.5, 1 / 6], rtol=RTOL, atol=ATOL)


def test_kde_fixture():
    b, h, lo, hi = [10, 10, 20], 2.0, 10.0, 20.0
    f = lambda x: np.exp(truncated_kde_logpdf(x, b, h, lo, hi))  # noqa: E731
    assert f(11.0) == pytest.approx(0.234716, rel=1e-5)
    assert f(20.0) == pytest.approx(0.132982, rel=1e-5)
    assert f(9.0) == 0.0
    total, _ = integrate.quad(f, lo, hi, points=[10, 20])
    assert total == pytest.approx(1.0, rel=1e-7)
    # degenerate support: a point mass
    assert truncated_kde_logpdf(5.0, [5, 5], 1.0, 5, 5) == 0.0
    with pytest.raises(ValidationError, match="bandwidth"):
        truncated_kde_logpdf(1.0, [1.0], 0.0, 0, 2)
    with pytest.raises(ValidationError, match="lo <= hi"):
        truncated_kde_logpdf(1.0, [1.0], 1.0, 3, 2)


def test_kde_far_tail_is_finite():
    # centres far outside the support: the A.1 mirrored log-difference keeps the mass positive
    v = truncated_kde_logpdf(np.array([100.0, 100.5]), [0.0], 1.0, 100.0, 101.0)
    assert np.all(np.isfinite(v))
    total, _ = integrate.quad(
        lambda x: np.exp(truncated_kde_logpdf(x, [0.0], 1.0, 100, 101)), 100, 101
    )
    assert total == pytest.approx(1.0, rel=1e-6)


# ----- the Bayesian-bootstrap kernel ------------------------------------------------------------
def test_segment_choice_stays_in_segment_and_is_flat_dirichlet():
    rng = np.random.default_rng(0)
    start, size = np.array([0, 3, 4]), np.array([3, 1, 5])
    which = np.repeat([0, 1, 2], 1000)
    pos = segment_choice(start, size, which, rng)
    for g in range(3):
        p = pos[which == g]
        assert p.min() >= start[g] and p.max() < start[g] + size[g]
    # one donor routed per draw, weights redrawn each call: P(first donor of segment 0) = 1/3
    # over many independent calls (Dirichlet(1,1,1) mean); 4000 calls → SE ≈ 0.0075
    hits = [
        segment_choice(start[:1], size[:1], np.array([0]), np.random.default_rng(s))[0] == 0
        for s in range(4000)
    ]
    assert np.mean(hits) == pytest.approx(1 / 3, abs=4 * np.sqrt(2 / 9 / 4000))


def test_bayes_bootstrap_pair_probability_matches_polya():
    # two records routed to a leaf with donors (a, a, a, b): P(both take 'a') = 0.6 under the
    # per-leaf Bayesian bootstrap (SPEC §3.4.4) versus 0.5625 for uniform donors.
    # 20000 replications → SE ≈ 0.0035; tolerance 4 SE.
    n_rep = 20000
    rng = np.random.default_rng(11)
    start = np.arange(n_rep) * 4
    size = np.full(n_rep, 4)
    which = np.repeat(np.arange(n_rep), 2)
    pos = segment_choice(start, size, which, rng) % 4
    both_a = ((pos[0::2] < 3) & (pos[1::2] < 3)).mean()
    assert both_a == pytest.approx(0.6, abs=4 * np.sqrt(0.24 / n_rep))
    pos_u = segment_choice(start, size, which, rng, bayes_bootstrap=False) % 4
    both_u = ((pos_u[0::2] < 3) & (pos_u[1::2] < 3)).mean()
    assert both_u == pytest.approx(0.5625, abs=4 * np.sqrt(0.25 / n_rep))


# ----- tree structure and routing -------------------------------------------------------------
def _routing_oracle(model, col, X, codes, unroutable_flag):
    """Per-record reference: walk the sklearn path, stop at the first nominal split whose level
    was not seen among the node's training records (computed independently via decision_path)."""
    tree = model.trees_[col]
    design = tree.design
    preds = model.predictors_[col]
    data = model._data
    # training design rebuilt from the confidential data
    from bayes_risk.models.trees.seqtree import column_codes

    vals = [
        column_codes(data, model.schema_, p)
        if model.schema_[p].is_categorical
        else data[p].to_numpy(float)
        for p in preds
    ]
    Xtr, ctr = design.matrix(vals)
    # membership of every node via the same split rules, walked record by record
    member = [set() for _ in range(tree.n_nodes)]
    for i in range(Xtr.shape[0]):
        k = 0
        member[k].add(i)
        while tree.left[k] != -1:
            k = tree.left[k] if Xtr[i, tree.feature[k]] <= tree.threshold[k] else tree.right[k]
            member[k].add(i)
    out = np.empty(X.shape[0], dtype=np.int64)
    for r in range(X.shape[0]):
        k = 0
        while not tree.is_leaf[k]:
            f = tree.feature[k]
            pj = design.feature_pred[f]
            slot = design.nominal_index[pj]
            if slot >= 0:
                seen = {ctr[i, slot] for i in member[k]}
                if codes[r, slot] not in seen:
                    break
            k = tree.left[k] if X[r, f] <= tree.threshold[k] else tree.right[k]
        out[r] = k
    return out, member


def test_route_climbs_to_deepest_reachable_node(ce_small):
    df, schema = ce_small
    model = CARTSynthesizer(min_leaf=5).fit(
        df, schema=schema, synthesized=["Tenure", "Income"], random_seed=0
    )
    col = "Income"
    tree = model.trees_[col]
    rng = np.random.default_rng(3)
    # records with random (often unseen) combinations of the categorical predictors
    preds = model.predictors_[col]
    vals = []
    for p in preds:
        if schema[p].is_categorical:
            vals.append(rng.integers(schema[p].n_levels, size=400))
        else:
            vals.append(rng.choice(df[p].to_numpy(float), size=400))
    X, codes = tree.design.matrix(vals)
    node, flag = tree.route(X, codes, "climb")
    ref, member = _routing_oracle(model, col, X, codes, flag)
    np.testing.assert_array_equal(node, ref)
    assert flag.sum() > 0, "test data must contain unroutable records"
    assert np.all(~tree.is_leaf[node[flag]])
    assert np.all(tree.is_leaf[node[~flag]])
    # donors of a node are exactly its training records
    for k in np.unique(node):
        d = set(tree.donor_rows[tree.node_start[k] : tree.node_stop[k]].tolist())
        assert d == member[k]
    # random descent always ends in a leaf
    node2, flag2 = tree.route(X, codes, "random_descent", rng=np.random.default_rng(1))
    assert np.all(tree.is_leaf[node2])
    np.testing.assert_array_equal(flag, flag2)


def test_growth_controls(ce_small):
    df, schema = ce_small
    base = CARTSynthesizer(min_leaf=5).fit(df, schema=schema, synthesized=["Income"], random_seed=0)
    t = base.trees_["Income"]
    assert t.node_size[t.leaves()].min() >= 5
    shallow = CARTSynthesizer(max_depth=2).fit(
        df, schema=schema, synthesized=["Income"], random_seed=0
    )
    assert len(shallow.trees_["Income"].leaves()) <= 4
    mindev = CARTSynthesizer(min_deviance=0.01).fit(
        df, schema=schema, synthesized=["Income"], random_seed=0
    )
    assert len(mindev.trees_["Income"].leaves()) < len(t.leaves())
    div = CARTSynthesizer(min_leaf=5, prune_to_diversity=4).fit(
        df, schema=schema, synthesized=["Tenure"], random_seed=0
    )
    td = div.trees_["Tenure"]
    for k in td.leaves():
        vals = td.y_sorted[td.node_start[k] : td.node_stop[k]]
        assert np.unique(vals).size >= 4 or k == 0


# ----- synthesis properties ---------------------------------------------------------------------
def test_registry_and_result_provenance(ce_small):
    df, schema = ce_small
    assert get_synthesizer("cart") is CARTSynthesizer
    z = (
        CARTSynthesizer()
        .fit(df, schema=schema, synthesized=SYN, random_seed=1)
        .synthesize(3, random_seed=5)
    )
    assert z.m == 3 and z.method == "cart"
    # a release holds the settings flat: the tree options by name, in place of trees=
    assert z.settings == CARTSynthesizer().flat_settings()
    assert z.settings["min_leaf"] == 5 and "trees" not in z.settings
    assert z.random_seed == 5
    assert z.schema.synthesized == SYN
    assert z.synthesized_records.all()
    for d in z:
        assert list(d.columns) == list(df.columns)
        assert (d.dtypes == df.dtypes).all()
        for c in ["Age", "Urban", "Educ", "Marital"]:
            pd.testing.assert_series_equal(d[c], df[c])
        # without smoothing every synthetic value is an observed confidential value
        for c in SYN:
            assert d[c].isin(df[c]).all()
    assert z[0][SYN].ne(df[SYN]).any().any()


def test_same_seed_same_output_and_n_jobs_invariance(ce_small):
    df, schema = ce_small
    a = CARTSynthesizer(smoothing=True).fit(df, schema=schema, synthesized=SYN, random_seed=1)
    b = CARTSynthesizer(smoothing=True, n_jobs=2).fit(
        df, schema=schema, synthesized=SYN, random_seed=1
    )
    za, zb = a.synthesize(3, random_seed=9), b.synthesize(3, random_seed=9)
    for x, y in zip(za, zb, strict=False):
        pd.testing.assert_frame_equal(x, y)
    zc = a.synthesize(3, random_seed=10)
    assert not za[0].equals(zc[0])
    # dataset l is the same stream whatever m
    pd.testing.assert_frame_equal(a.synthesize(1, random_seed=9)[0], za[0])


def test_partial_synthesis_leaves_unflagged_records_untouched(ce_small):
    df, schema = ce_small
    rng = np.random.default_rng(0)
    mask = rng.random(len(df)) < 0.3
    model = CARTSynthesizer().fit(df, schema=schema, synthesized=SYN, records=mask, random_seed=2)
    z = model.synthesize(4, random_seed=3)
    np.testing.assert_array_equal(z.synthesized_records, mask)
    for d in z:
        pd.testing.assert_frame_equal(d[~mask], df[~mask])
        assert d.loc[mask, SYN].ne(df.loc[mask, SYN]).any().any()
    # integer positions are accepted too
    idx = np.flatnonzero(mask)
    z2 = (
        CARTSynthesizer()
        .fit(df, schema=schema, synthesized=SYN, records=idx, random_seed=2)
        .synthesize(4, random_seed=3)
    )
    for x, y in zip(z, z2, strict=False):
        pd.testing.assert_frame_equal(x, y)


def test_smoothing_respects_leaf_support_and_rounding(ce_small):
    df, schema = ce_small
    df = df.assign(Age2=df["Age"])
    schema2 = infer_schema(df, categorical=["Urban", "Marital", "Tenure"])
    model = CARTSynthesizer(smoothing=True, min_leaf=10).fit(
        df, schema=schema2, synthesized=["Age2", "Expenditure"], random_seed=0
    )
    z = model.synthesize(2, random_seed=1)
    for d in z:
        assert d["Age2"].dtype == df["Age2"].dtype  # count column stays integer
        assert d["Age2"].between(df["Age2"].min(), df["Age2"].max()).all()
        # recorded precision of Expenditure is 2 decimals
        cents = d["Expenditure"].to_numpy() * 100
        np.testing.assert_allclose(cents, np.round(cents), atol=1e-6)
        assert d["Expenditure"].between(df["Expenditure"].min(), df["Expenditure"].max()).all()
    # smoothing actually creates values never observed
    assert (~z[0]["Expenditure"].isin(df["Expenditure"])).mean() > 0.5
    # bandwidth floor: never below the data resolution (1 for Age2)
    assert model.bandwidth_["Age2"].min() >= 1.0


def test_fixed_bandwidth_kernel_draws_match_truncated_kde():
    # one leaf (min_leaf = n) with two donor values; fixed bandwidth. Conditional on the
    # bootstrap centres, values follow truncated_kde_logpdf; averaged over datasets the centres
    # are each donor with probability 1/2, so the marginal density is the average of the KDE over
    # the 3 possible centre multisets with Pólya weights. Check with a KS test (alpha = 0.001:
    # fixed seed, failure would indicate a sampler bug, not chance).
    from scipy import stats

    n = 2
    lo, hi = 10.0371, 20.0371  # 4 recorded decimals: rounding to 1e-4 is invisible to the KS test
    df = pd.DataFrame({"x": [0.0, 1.0], "y": [lo, hi]})
    model = CARTSynthesizer(min_leaf=n, smoothing=True, bandwidth=3.0).fit(
        df, synthesized=["y"], random_seed=0
    )
    z = model.synthesize(1500, random_seed=4)
    vals = np.concatenate([d["y"].to_numpy() for d in z])
    # centre multisets for n_L = 2 under BB: (lo,lo), (lo,hi), (hi,hi) with probabilities 1/3
    # each (BB weight w ~ U(0,1); P(both lo) = E[w^2] = 1/3)
    grid = np.linspace(lo, hi, 2001)
    dens = np.mean(
        [
            np.exp(truncated_kde_logpdf(grid, b, 3.0, lo, hi))
            for b in ([lo, lo], [lo, hi], [hi, hi])
        ],
        axis=0,
    )
    cdf = np.concatenate([[0], np.cumsum((dens[1:] + dens[:-1]) / 2 * np.diff(grid))])
    cdf /= cdf[-1]
    # the two records of a dataset share centres; use one value per dataset for independence
    one = np.array([d["y"].iloc[0] for d in z])
    res = stats.kstest(one, lambda x: np.interp(x, grid, cdf))
    assert res.pvalue > 0.001
    assert vals.min() >= lo and vals.max() <= hi


def test_uniform_donor_and_random_descent_options(ce_small):
    df, schema = ce_small
    z = (
        CARTSynthesizer(donor="uniform", unroutable="random_descent")
        .fit(df, schema=schema, synthesized=SYN, random_seed=0)
        .synthesize(2, random_seed=1)
    )
    assert z.extra["unroutable_rule"] == "random_descent"
    assert z.settings["donor"] == "uniform"
    for d in z:
        for c in SYN:
            assert d[c].isin(df[c]).all()


def test_not_fitted_and_bad_inputs(ce_small):
    df, schema = ce_small
    with pytest.raises(NotFittedError, match="not fitted"):
        CARTSynthesizer().synthesize(1)
    with pytest.raises(SchemaError, match="Incom"):
        CARTSynthesizer().fit(df, schema=schema, synthesized=["Incom"])
    with pytest.raises(ValidationError, match="donor must be"):
        CARTSynthesizer(donor="bootstrap").fit(df, schema=schema, synthesized=["Income"])
    with pytest.raises(ValidationError, match="unroutable must be"):
        CARTSynthesizer(unroutable="up").fit(df, schema=schema, synthesized=["Income"])
    with pytest.raises(ValidationError, match="min_leaf must be an integer >= 1"):
        CARTSynthesizer(min_leaf=0).fit(df, schema=schema, synthesized=["Income"])
    with pytest.raises(ValidationError, match="records as a boolean mask needs one flag per"):
        CARTSynthesizer().fit(df, schema=schema, synthesized=["Income"], records=np.ones(3, bool))
    with pytest.raises(ValidationError, match="records: index 99999 is outside"):
        CARTSynthesizer().fit(df, schema=schema, synthesized=["Income"], records=[0, 99999])
    with pytest.raises(ValidationError, match="selects no record"):
        CARTSynthesizer().fit(
            df, schema=schema, synthesized=["Income"], records=np.zeros(len(df), bool)
        )
    with pytest.raises(ValidationError, match="smoothing: column 'Tenure' is categorical"):
        CARTSynthesizer(smoothing=["Tenure"]).fit(df, schema=schema, synthesized=["Tenure"])
    with pytest.raises(ValidationError, match="no column to synthesize"):
        CARTSynthesizer().fit(df, schema=schema)
    with pytest.raises(ValidationError, match="m must be an integer >= 1"):
        CARTSynthesizer().fit(df, schema=schema, synthesized=["Income"]).synthesize(0)
    # a column with no observed value has nothing to synthesize from (empty cells are accepted:
    # tests/models/test_cart_missing.py)
    bad = df.assign(Income=np.nan)
    with pytest.raises(ValidationError, match="'Income' has no observed value"):
        CARTSynthesizer().fit(bad, schema=schema, synthesized=["Income"])


@given(st.integers(min_value=0, max_value=10_000))
def test_property_partial_synthesis_any_seed(seed):
    df = pd.DataFrame(
        {
            "g": ["a", "b", "c", "a", "b", "c", "a", "b"] * 3,
            "x": np.arange(24, dtype=float),
            "y": np.arange(24, dtype=float) ** 2,
        }
    )
    mask = np.arange(24) % 3 == 0
    z = (
        CARTSynthesizer(min_leaf=2)
        .fit(df, synthesized=["g", "y"], records=mask, random_seed=seed)
        .synthesize(2, random_seed=seed)
    )
    for d in z:
        pd.testing.assert_frame_equal(d[~mask], df[~mask])
        assert d["g"].isin(["a", "b", "c"]).all() and d["y"].isin(df["y"]).all()


# ----- statistical agreement with the original (demo data) -------------------------------------
def _ols(d: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """OLS of log1p(Expenditure) on log1p(max(Income, 0)), Age, rural: estimates, variances."""
    y = np.log1p(d["Expenditure"].to_numpy(float))
    X = np.column_stack(
        [
            np.ones(len(d)),
            np.log1p(np.maximum(d["Income"].to_numpy(float), 0)),
            d["Age"].to_numpy(float),
            (d["Urban"].to_numpy() == 2).astype(float),
            (d["Tenure"].to_numpy() == 1).astype(float),
        ]
    )
    beta, *_ = np.linalg.lstsq(X, y, rcond=None)
    resid = y - X @ beta
    s2 = resid @ resid / (len(y) - X.shape[1])
    return beta, np.diag(s2 * np.linalg.inv(X.T @ X))


def test_marginals_and_regression_agree_with_original(ce):
    """m = 5 full synthesis of Tenure, Expenditure, Income on the 5,571-row demo table.

    Marginals: a partially synthetic proportion/mean has per-dataset sampling variance at most
    about twice the simple-random-sampling variance (Bayesian bootstrap in each leaf: Pólya draw),
    so the mean over m datasets is within 4·sqrt(2 σ²/(n m)) of the original value unless the
    synthesizer is biased. Regression: Reiter's (2003) partial-synthesis variance
    T_p = b_m/m + ū_m bounds the error of q̄_m as an estimate of the original-data estimate when
    the synthesis model is valid; we require |q̄_m − q_obs| ≤ 3·sqrt(T_p) for every coefficient.
    """
    df, schema = ce
    m, n = 5, len(df)
    z = (
        CARTSynthesizer()
        .fit(df, schema=schema, synthesized=SYN, random_seed=2018)
        .synthesize(m, random_seed=2019)
    )
    for lev in [1, 2, 4]:
        p = (df["Tenure"] == lev).mean()
        pbar = np.mean([(d["Tenure"] == lev).mean() for d in z])
        assert abs(pbar - p) <= 4 * np.sqrt(2 * p * (1 - p) / (n * m)), lev
    for c in ["Income", "Expenditure"]:
        mu, sd = df[c].mean(), df[c].std()
        mbar = np.mean([d[c].mean() for d in z])
        assert abs(mbar - mu) <= 4 * np.sqrt(2 * sd**2 / (n * m)), c
        med = df[c].median()
        pm = np.mean([(d[c] <= med).mean() for d in z])
        assert abs(pm - 0.5) <= 4 * np.sqrt(2 * 0.25 / (n * m)), c
    q_obs, _ = _ols(df)
    qs, us = zip(*[_ols(d) for d in z], strict=False)
    qs, us = np.array(qs), np.array(us)
    qbar, b, ubar = qs.mean(0), qs.var(0, ddof=1), us.mean(0)
    T = b / m + ubar
    assert np.all(np.abs(qbar - q_obs) <= 3 * np.sqrt(T)), (qbar, q_obs, np.sqrt(T))


def test_route_and_donors_public_access(ce_small):
    # the fitted data routed again lands every record in a leaf that contains it (SPEC §2.10)
    df, schema = ce_small
    model = CARTSynthesizer().fit(df, schema=schema, synthesized=SYN, random_seed=0)
    for col in SYN:
        node, flag = model.route(df, col)
        assert not flag.any()
        for i in range(0, len(df), 37):
            assert i in set(model.donors(col, node[i]).tolist())
    with pytest.raises(ValidationError, match="not synthesized"):
        model.route(df, "Age")
    with pytest.raises(ValidationError, match=r"node must be an integer in \[0, "):
        model.donors("Income", -1)


def test_custom_index_is_kept(ce_small):
    df, schema = ce_small
    df2 = df.set_index(pd.Index(np.arange(len(df)) * 10 + 7, name="id"))
    z = (
        CARTSynthesizer()
        .fit(df2, schema=schema, synthesized=["Income"], random_seed=0)
        .synthesize(1, random_seed=0)
    )
    assert z[0].index.equals(df2.index)
    pd.testing.assert_frame_equal(z[0].drop(columns="Income"), df2.drop(columns="Income"))


@given(
    st.lists(st.integers(0, 3), min_size=1, max_size=5),
    st.integers(min_value=1, max_value=3),
)
def test_property_polya_sums_to_one_over_sequences(donors, u):
    # the Pólya probabilities of all ordered sequences of length u over the donor values sum to 1
    import itertools

    vals = sorted(set(donors))
    total = sum(np.exp(polya_logprob(donors, seq)) for seq in itertools.product(vals, repeat=u))
    assert total == pytest.approx(1.0, rel=1e-9)


@pytest.mark.parametrize("smoothing", [False, True])
def test_fixed_routes_reused_give_the_same_syntheses(ce_small, monkeypatch, smoothing):
    """The routing of a tree whose predictors are never synthesized is computed once and reused
    (``unroutable="climb"`` draws no random numbers): the syntheses and posterior replicates
    are those of routing every time, partial synthesis and ``random_descent`` included."""
    import bayes_risk.models.trees.cart_synthesis as _cart_synthesis

    class NoCache:
        def get(self, key):
            return None

        def __setitem__(self, key, value):  # nothing kept: every synthesis routes again
            pass

    df, schema = ce_small
    flags = np.arange(len(df)) % 3 > 0
    for kw, fit_kw in (({}, {}), ({}, {"records": flags}),
                       ({"unroutable": "random_descent"}, {})):
        model = CARTSynthesizer(smoothing=smoothing, **kw).fit(
            df, schema=schema, synthesized=SYN, random_seed=1, **fit_kw)
        outs = []
        for cache in (weakref.WeakKeyDictionary(), NoCache()):
            monkeypatch.setattr(_cart_synthesis, "_FIXED_ROUTES", cache)
            syn = model.synthesize(2, random_seed=9)
            reps = [z for c in model.posterior_replicates(3, columns=SYN[1:], chunk_size=2,
                                                          random_seed=4) for z in c]
            outs.append((syn, reps))
            if isinstance(cache, weakref.WeakKeyDictionary):
                assert len(cache) == (0 if kw else 1)  # the first tree (known predictors)
        for x, y in zip(outs[0][0], outs[1][0], strict=True):
            pd.testing.assert_frame_equal(x, y)
            assert x.attrs == y.attrs
        for x, y in zip(outs[0][1], outs[1][1], strict=True):
            pd.testing.assert_frame_equal(x, y)
