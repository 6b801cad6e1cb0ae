"""What a release that says nothing about the record gives (``bayes_risk.attribute.null``):
the null beside which the share ranked first, the mean rank, the share with evidence and mean
p_true are read (issue 85: the share ranked first was compared with 1/G).

Checked against brute force: for a record whose candidates differ from the truth in one variable
at a time, every position of the truth among the levels (weighted by the population's
frequencies) is enumerated, the star of candidates around it built, and its rank, p_true and
Bayes factor computed from scratch; the formulas must give the same figures to rounding. With
equal frequencies and no ties the truth ranks first with probability exactly ``∏_j 1/d_j``.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from bayes_risk.attribute.null import NULL_COLUMNS, record_nulls
from bayes_risk.results._attribute_null import file_null, null_reading
from bayes_risk.results.attribute import CandidateSet, bayes_factor


def _star_values(truth: tuple[int, ...], d: tuple[int, ...]) -> np.ndarray:
    """The truth first, then every level of each variable with the others held at the truth."""
    rows = [truth]
    for j, dj in enumerate(d):
        for b in range(dj):
            if b != truth[j]:
                rows.append(tuple(b if k == j else t for k, t in enumerate(truth)))
    return np.asarray(rows, dtype=np.float64)


def _factorised(values: np.ndarray, per_var: list[np.ndarray]) -> np.ndarray:
    """Σ_j log w_j(value_j) of each candidate (a likelihood, prior or frequency that factorises
    over the variables)."""
    return sum(np.log(w[values[:, j].astype(int)]) for j, w in enumerate(per_var))


def _brute(d, scores, prior, freq, truth_weights, factor):
    """Every truth position enumerated: its star's rank, p_true and Bayes factor of the truth."""
    stats_ = []
    for t in itertools.product(*[range(dj) for dj in d]):
        vals = _star_values(t, d)
        lp = _factorised(vals, scores) + _factorised(vals, prior)
        p = np.exp(lp - lp.max())
        p /= p.sum()
        pr = np.exp(_factorised(vals, prior))
        pr /= pr.sum()
        top = p[0] >= p.max() * (1 - 1e-9)
        rank = 1 + int(np.sum(p > p[0] * (1 + 1e-9)))
        bf = float(bayes_factor(p[:1], pr[:1])[0])
        weight = math.prod(truth_weights[j][t[j]] for j in range(len(d)))
        stats_.append((weight, top, rank, p[0], bf >= factor))
    w = np.array([s[0] for s in stats_])
    w = w / w.sum()
    top = np.array([s[1] for s in stats_], dtype=float)
    rank = np.array([s[2] for s in stats_], dtype=float)
    pt = np.array([s[3] for s in stats_])
    ev = np.array([s[4] for s in stats_], dtype=float)
    rm, pm = w @ rank, w @ pt
    return {"null_p_top": w @ top, "null_rank_mean": rm, "null_rank_var": w @ (rank - rm) ** 2,
            "null_rank_m3": w @ (rank - rm) ** 3, "null_p_true_mean": pm,
            "null_p_true_var": w @ (pt - pm) ** 2, "null_p_true_m3": w @ (pt - pm) ** 3,
            "null_p_evidence": w @ ev}


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("d", [(3, 4, 2), (2, 2, 2, 5)])
def test_one_variable_null_equals_enumeration_of_the_truths_position(seed, d):
    rng = np.random.default_rng([seed, len(d)])
    scores = [rng.lognormal(0, 1, dj) for dj in d]
    if seed % 2:  # ties: two levels with the same score, and a flat variable
        scores[0][1] = scores[0][0]
        scores[-1][:] = 1.0
    prior = [rng.dirichlet(np.ones(dj)) if seed % 3 == 2 else np.full(dj, 1.0 / dj) for dj in d]
    freq = [rng.dirichlet(np.ones(dj)) for dj in d]
    truth = tuple(int(rng.integers(dj)) for dj in d)
    vals = _star_values(truth, d)
    lp = _factorised(vals, scores) + _factorised(vals, prior)
    lp = lp - np.log(np.exp(lp).sum())
    lpr = _factorised(vals, prior)
    lpr = lpr - np.log(np.exp(lpr).sum())
    lq = _factorised(vals, freq)
    got = record_nulls([lp], [lpr], [lq], [CandidateSet(("a",) * len(d), vals, 0)],
                       evidence_factor=3.0)
    assert got["method"] == "one variable at a time"
    want = _brute(d, scores, prior, freq, freq, 3.0)
    for k in NULL_COLUMNS:
        np.testing.assert_allclose(got[k][0], want[k], rtol=1e-10, atol=1e-13, err_msg=k)


def test_equal_frequencies_rank_the_truth_first_with_the_product_of_one_over_d():
    """Issue 85's formula: with every level equally frequent and no ties, whatever the scores,
    P(rank 1) = ∏_j 1/d_j and the mean rank is 1 + Σ_j (d_j - 1)/2 (for the ACS demo's
    35 candidates, 1/G would be 2.86 %)."""
    d = (2, 5, 4, 7, 3)
    rng = np.random.default_rng(4)
    truth = (1, 3, 0, 6, 2)
    vals = _star_values(truth, d)
    for _ in range(5):
        scores = [rng.lognormal(0, 2, dj) for dj in d]
        lp = _factorised(vals, scores)
        flat = np.zeros(len(vals))
        got = record_nulls([lp], [flat], [flat], [CandidateSet(("a",) * 5, vals, 0)],
                           evidence_factor=3.0)
        assert got["null_p_top"][0] == pytest.approx(math.prod(1 / x for x in d), rel=1e-12)
        assert got["null_rank_mean"][0] == pytest.approx(1 + sum((x - 1) / 2 for x in d))
    assert len(vals) == 1 + sum(x - 1 for x in d) == 17


def test_any_other_candidate_set_places_the_truth_by_the_frequencies():
    """A full product of levels: the truth is a draw from the frequencies over the candidates;
    each figure is their weighted mean over the candidates, by hand."""
    vals = np.array(list(itertools.product(range(3), range(2))), dtype=np.float64)  # 6 cells
    p = np.array([0.40, 0.05, 0.20, 0.20, 0.10, 0.05])
    q = np.array([0.10, 0.30, 0.20, 0.20, 0.15, 0.05])
    flat = np.full(6, -math.log(6))
    got = record_nulls([np.log(p)], [flat], [np.log(q)], [CandidateSet(("a", "b"), vals, 2)],
                       evidence_factor=3.0)
    assert got["method"] == "exchangeable with the candidates"
    assert got["null_p_top"][0] == pytest.approx(0.10)  # cell 0 alone is first
    rank = np.array([1, 5, 2, 2, 4, 5])  # ties share the better rank (rank_min)
    assert got["null_rank_mean"][0] == pytest.approx(q @ rank)
    assert got["null_p_true_mean"][0] == pytest.approx(q @ p)
    bf = (p / (1 - p)) / (1 / 5)  # prior odds 1/5 under the uniform prior over 6
    assert got["null_p_evidence"][0] == pytest.approx(q @ (bf >= 3))


def test_file_null_counts_and_means():
    """The file level: the expected share and its 95 % range (Poisson below a mean count of 5,
    else normal), and the range of a mean of independent records (normal when not skewed)."""
    n = 2000
    nulls = {"null_p_top": np.full(n, 1e-4), "null_p_evidence": np.full(n, 0.05),
             "null_rank_mean": np.full(n, 18.0), "null_rank_var": np.full(n, 20.0),
             "null_rank_m3": np.zeros(n), "null_p_true_mean": np.full(n, 0.03),
             "null_p_true_var": np.full(n, 1e-4), "null_p_true_m3": np.zeros(n)}
    f = file_null(nulls)
    assert f["prop_top"] == {"expected": pytest.approx(1e-4), "low": 0.0, "high": 0.0005}
    mu, sd = 100.0, math.sqrt(n * 0.05 * 0.95)
    assert f["prop_evidence"]["low"] == math.floor(mu - 1.96 * sd) / n
    assert f["prop_evidence"]["high"] == math.ceil(mu + 1.96 * sd) / n
    # no skew: the normal range (the Pearson type III of skewness 0)
    z = 1.959963984540054
    assert f["mean_rank"]["high"] - 18.0 == pytest.approx(z * math.sqrt(n * 20.0) / n, rel=1e-12)
    keep = np.arange(n) < 10
    assert file_null(nulls, keep)["n_records"] == 10


def _beta_moments(a, b, k):
    """E[X^k] of Beta(a, b)."""
    out = np.ones_like(a)
    for j in range(k):
        out = out * (a + j) / (a + b + j)
    return out


@pytest.mark.parametrize("case", ["beta", "rare large value"])
def test_the_range_of_the_mean_p_true_holds_95_percent_of_simulated_files(case):
    """The file-level range of the mean p_true against a simulated null: 300 records whose null
    p_true is skewed as real ones are (near 0, with a rare large value), 20,000 files drawn.
    Each tail of the range must hold between 1.5 % and 3.3 % of the files (2.5 % each ± the
    approximation's error; the Monte Carlo error is 0.11 %), and the range stays within
    [0, 1]. The normal range fails both: below 0 for the second case, and 3.5 % and 3.8 % of
    the files above it."""
    rng = np.random.default_rng([7, len(case)])
    n, sims = 300, 20_000
    a, b = rng.uniform(0.03, 0.1, n), rng.uniform(5, 15, n)
    pi = rng.uniform(0.002, 0.01, n)
    if case == "beta":
        raw = [_beta_moments(a, b, k) for k in (1, 2, 3)]
    else:  # a large value U(0.7, 1) with probability pi, else Beta(0.5, 200)
        a, b = np.full(n, 0.5), np.full(n, 200.0)
        raw = [pi * (1 - 0.7 ** (k + 1)) / (0.3 * (k + 1)) + (1 - pi) * _beta_moments(a, b, k)
               for k in (1, 2, 3)]
    mean = raw[0]
    var, m3 = raw[1] - mean ** 2, raw[2] - 3 * mean * raw[1] + 2 * mean ** 3
    z = np.zeros(n)
    f = file_null({"null_p_top": z, "null_p_evidence": z, "null_rank_mean": z + 1,
                   "null_rank_var": z, "null_rank_m3": z, "null_p_true_mean": mean,
                   "null_p_true_var": var, "null_p_true_m3": m3})["mean_p_true"]
    files = []
    for _ in range(sims // 5000):
        x = rng.beta(a, b, (5000, n))
        if case != "beta":
            x = np.where(rng.random((5000, n)) < pi, rng.uniform(0.7, 1, (5000, n)), x)
        files.append(x.mean(axis=1))
    files = np.concatenate(files)
    assert 0 <= f["low"] < f["expected"] < f["high"] <= 1
    assert f["expected"] == pytest.approx(files.mean(), rel=0.01)
    above, below = np.mean(files > f["high"]), np.mean(files < f["low"])
    assert 0.015 <= above <= 0.033, above
    assert below <= 0.033, below
    if case == "beta":  # continuous: the lower tail too (the other's sum is bounded away)
        assert below >= 0.015, below


# ------------------------------------------------------------------- on attribute_risk itself
def _one_class(n: int, seed: int):
    """A one-class model on three independent categorical columns with unequal frequencies,
    its exact posterior draws (Dirichlet given the counts), and m = 3 fully synthetic releases
    drawn from the population's frequencies, which say nothing about any record."""
    import pandas as pd

    from bayes_risk.data import infer_schema
    from bayes_risk.models import ArrayModel

    rng = np.random.default_rng(seed)
    d, freq = (3, 4, 2), ([0.6, 0.3, 0.1], [0.4, 0.3, 0.2, 0.1], [0.7, 0.3])
    cols = {f"v{j}": rng.choice(dj, n, p=freq[j]) for j, dj in enumerate(d)}
    orig = pd.DataFrame({c: pd.Categorical(v, categories=range(dj))
                         for (c, v), dj in zip(cols.items(), d, strict=True)})
    schema = infer_schema(orig, synthesized=list(orig.columns))
    H = 200
    draws = {c: rng.dirichlet(1 + np.bincount(v, minlength=dj), size=H)
             for (c, v), dj in zip(cols.items(), d, strict=True)}

    def ll(rec, th):
        return sum(np.log(th[c][:, rec[c].astype(int).to_numpy()]) for c in cols)

    model = ArrayModel(ll, draws, schema)
    syn = [pd.DataFrame({c: pd.Categorical(rng.choice(dj, n, p=freq[j]), categories=range(dj))
                         for j, (c, dj) in enumerate(zip(cols, d, strict=True))})
           for _ in range(3)]
    return orig, syn, model


def _risk(orig, syn, model):
    import warnings

    import bayes_risk as br

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return br.attribute_risk(orig, syn, model=model, random_seed=5, progressbar=False,
                                 estimator=br.EstimatorSpec("is", bootstrap=0))


def test_a_release_that_says_nothing_of_the_records_lies_within_its_null():
    """A release drawn from the population's frequencies says nothing about any record: read
    through a one-class model on independent columns, every figure (share ranked first, mean
    rank, share with evidence) lies within the null's 95 % range, mean p_true within 2 % of
    its expected value."""
    res = _risk(*_one_class(400, 11))
    s = res.to_dict()
    null, un = s["null"], s["unflagged"]
    assert null["method"] == "one variable at a time"
    for key in ("prop_top", "mean_rank", "prop_evidence"):
        e = null[key]
        assert e["low"] <= un[key] <= e["high"], (key, un[key], e)
    # mean p_true: the null holds each record's scores fixed, while a record's own value is
    # among the counts its scores come from; moved elsewhere, its scores would change by
    # O(1/n). The mean's range, of a mean over 400 records, is narrower than that (0.1357
    # against 0.1343, range 0.1333–0.1352): within 2 % of the expected value
    assert un["mean_p_true"] == pytest.approx(null["mean_p_true"]["expected"], rel=0.02)
    table = res.summary().tables["If the release said nothing about the records"]
    assert list(table["reading"][:3]) == ["within", "within", "within"]


@pytest.mark.parametrize(("w", "expected"), [((0.5, 0.5), 1 / 3),
                                              ((0.9, 0.1), (9 / 11 + 2 * 9 / 91 + 1 / 19)
                                               / 4)])
def test_the_nulls_mean_p_true_is_1_over_g_only_for_a_flat_posterior(w, expected):
    """The methods page's worked example: two columns of two levels, equal frequencies,
    G = 3. A flat posterior gives the null mean p_true 1/G; weights 0.9 and 0.1 on the levels of
    each column give 26.7 %, below 1/G, though the release says nothing of the record (the
    four positions of the truth: 9/11, 9/91 twice and 1/19)."""
    vals = _star_values((0, 0), (2, 2))
    lp = _factorised(vals, [np.array(w), np.array(w)])
    flat = np.log(np.full(3, 1 / 3))
    out = record_nulls([lp], [flat], [np.zeros(3)], [CandidateSet(("a", "b"), vals, 0)],
                       evidence_factor=3.0)
    assert out["null_p_true_mean"][0] == pytest.approx(expected, rel=1e-9)
    assert (out["null_p_true_mean"][0] < 1 / 3 - 0.06) == (w[0] == 0.9)


@pytest.mark.parametrize("prior", ["uniform", "empirical"])
def test_the_p_true_plot_draws_the_summarys_before_and_null_means(prior):
    """The histogram's two lines are the summary's figures of the stable estimates: the mean
    prior mass on the truth before the release (1/G only under the uniform prior; under the
    empirical prior it is not 1/G) and the null's expected mean p_true, each named in the
    legend; neither is recomputed from the candidates' count."""
    import warnings

    import matplotlib.pyplot as plt

    import bayes_risk as br

    orig, syn, model = _one_class(150, 4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = br.attribute_risk(orig, syn, model=model, random_seed=5, progressbar=False,
                                prior=prior, estimator=br.EstimatorSpec("is", bootstrap=0))
    s = res.to_dict()
    before, after = s["unflagged"]["mean_prior_p_true"], s["null"]["mean_p_true"]["expected"]
    ax = res.plot("p_true", ax=plt.figure().add_subplot())
    lines = {ln.get_label(): ln.get_xdata()[0] for ln in ax.get_lines()}
    plt.close(ax.figure)
    (b_label,) = [k for k in lines if k.startswith("before the release")]
    (n_label,) = [k for k in lines if k.startswith("after a release that says nothing")]
    assert lines[b_label] == pytest.approx(before, rel=1e-12)
    assert lines[n_label] == pytest.approx(after, rel=1e-12)
    assert f"{100 * before:.3g} %" in b_label and f"{100 * after:.3g} %" in n_label
    guess = float(res.records["baseline"].mean())
    if prior == "uniform":
        assert "= 1/G" in b_label and before == pytest.approx(guess)
    else:
        assert "1/G" not in b_label and abs(before - guess) > 0.01


def test_a_release_that_copies_the_records_lies_above_its_null():
    """CART with leaves of one record synthesizes two columns of which one nearly copies a
    column the intruder knows: read through CART's own likelihood (the plug-in), the share
    ranked first and the mean p_true lie above the null's range."""
    import pandas as pd

    from bayes_risk.data import infer_schema
    from bayes_risk.models import CARTSynthesizer

    rng = np.random.default_rng(3)
    n = 300
    a = rng.integers(0, 4, n)
    orig = pd.DataFrame({"a": pd.Categorical(a), "b": pd.Categorical((a + rng.integers(0, 2, n))
                                                                      % 3),
                         "c": pd.Categorical(rng.integers(0, 3, n)),
                         "x": rng.normal(size=n).round(2)})
    schema = infer_schema(orig, categorical=["a", "b", "c"])
    cart = CARTSynthesizer(min_leaf=1).fit(orig, schema=schema, synthesized=["b", "c"],
                                           random_seed=1)
    release = cart.synthesize(3, random_seed=2)
    import warnings

    import bayes_risk as br

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = br.attribute_risk(orig, release, model=br.CARTPlugin(cart, orig),
                                progressbar=False)
    s = res.to_dict()
    null, un = s["null"], s["unflagged"]
    assert un["prop_top"] > null["prop_top"]["high"]
    assert un["mean_p_true"] > null["mean_p_true"]["high"]
    assert null_reading(un["prop_top"], null["prop_top"]) == "above"
