"""Posterior Monte Carlo replicates for identification risk (PosteriorReplicates).

Exactness against the released-dataset path, the batched pooling against the engine, invariance
to the chunk size, a closed-form case (synthesis that ignores the data) with a calibrated Monte
Carlo standard error, the models' replicate methods and the refusals.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest

from bayes_risk import (
    MatchSpec,
    PopulationSpec,
    PosteriorReplicates,
    identification_risk,
)
from bayes_risk.contract import capabilities
from bayes_risk.data import infer_schema
from bayes_risk.exceptions import DataWarning, ValidationError
from bayes_risk.identification.summary import MEASURES

pytestmark = [
    pytest.mark.filterwarnings("ignore:NO_MATCH:bayes_risk.exceptions.DataWarning"),
    pytest.mark.filterwarnings("ignore:ZERO_UNIQUE:bayes_risk.exceptions.DataWarning"),
    # one-class DPMPM built from four identical draws: no MCMC to converge
    pytest.mark.filterwarnings("ignore::bayes_risk.exceptions.ConvergenceWarning"),
]


class Released:
    """A 'model' whose replicates are given tables, in order (cycled)."""

    def __init__(self, datasets):
        self.datasets = [d.reset_index(drop=True) for d in datasets]

    def posterior_replicates(self, n, *, columns=None, chunk_size=50, random_seed=None, start=0):
        k = start
        while n is None or k < start + n:
            hi = k + chunk_size if n is None else min(start + n, k + chunk_size)
            yield [self.datasets[i % len(self.datasets)][list(columns)] for i in range(k, hi)]
            k = hi


def make_data(n=400, seed=0):
    rng = np.random.default_rng(seed)
    y = pd.DataFrame({
        "sex": rng.choice(["F", "M"], n),
        "region": rng.integers(1, 4, n),
        "race": rng.choice(list("WBAO"), n, p=[0.55, 0.25, 0.15, 0.05]),
        "income": np.round(rng.lognormal(10, 0.6, n), 0),
    })
    return y


def perturb(y, m, seed):
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(m):
        z = y.copy()
        flip = rng.random(len(y)) < 0.3
        z.loc[flip, "race"] = rng.choice(list("WBAO"), int(flip.sum()))
        z["income"] = np.round(y["income"] * rng.lognormal(0, 0.1, len(y)), 0)
        out.append(z)
    return out


KW = dict(categorical=["region"], match=MatchSpec(radius={"income": 0.05}), progressbar=False)
SETTINGS = [
    {},
    {"fallback": "none"},
    {"population": "user"},
    {"strategy": ("threshold", 0.6), "population": "user"},
]


def _kw(extra, y):
    kw = dict(KW, **extra)
    if kw.get("population") == "user":
        kw["population"] = PopulationSpec(membership="unknown", counts=np.full(len(y), 3.0))
    rule = {k: kw.pop(k) for k in ("fallback", "strategy") if k in kw}
    kw["match"] = kw["match"].replace(**rule)
    return kw


@pytest.mark.parametrize("extra", SETTINGS)
def test_released_datasets_as_posterior_replicates_reproduce_today_bitwise(extra):
    y = make_data()
    syn = perturb(y, 5, 1)
    kw = _kw(extra, y)
    base = identification_risk(y, syn, known=["sex", "region", "race", "income"],
                               synthesized=["race", "income"], **kw)
    with pytest.warns(DataWarning, match="MCSE_UNAVAILABLE"):  # one batch: no jackknife
        post = identification_risk(
            y, syn, known=["sex", "region", "race", "income"], synthesized=["race", "income"],
            replicates=PosteriorReplicates(Released(syn), n=5, random_seed=0), **kw)
    for k in MEASURES:
        a, b = base.file[k], post.file[k]
        assert (np.isnan(a) and np.isnan(b)) or a == b, k
    cols = list(base.records.columns)
    pd.testing.assert_frame_equal(base.records, post.records[cols])
    pa, pb = base.prob, post.prob
    assert np.array_equal(pa.indptr, pb.indptr) and np.array_equal(pa.indices, pb.indices)
    assert np.array_equal(pa.data, pb.data)
    assert post.settings["n_replicates"] == 5


@pytest.mark.parametrize("extra", SETTINGS)
def test_batched_pooling_equals_engine_and_per_replicate_equals_per_dataset(extra):
    y = make_data(seed=3)
    syn = perturb(y, 7, 4)
    kw = _kw(extra, y)
    base = identification_risk(y, syn, known=["sex", "region", "race", "income"],
                               synthesized=["race", "income"], **kw)
    post = identification_risk(
        y, syn, known=["sex", "region", "race", "income"], synthesized=["race", "income"],
        replicates=PosteriorReplicates(Released(syn), n=7, batch_size=3, n_groups=2,
                                       random_seed=0), **kw)
    # the per-replicate measures use the run's settings (fallback included)
    per = identification_risk(y, syn, known=["sex", "region", "race", "income"],
                              synthesized=["race", "income"],
                              aggregation="per_dataset",
                              **dict(kw, match=kw["match"].replace(
                                  fallback=post.settings["fallback"])))
    # pooled over three batches: the same probabilities (summed in another order) and top sets
    np.testing.assert_allclose(post.prob.toarray(), base.prob.toarray(), rtol=1e-12, atol=0)
    for c in ("c", "T", "K", "W", "declared"):
        assert np.array_equal(post.records[c], base.records[c]), c
    np.testing.assert_allclose(post.records["p_out"], base.records["p_out"], rtol=1e-12)
    # per-replicate measures are the per-dataset aggregation of the same replicates
    for k in MEASURES:
        v = np.asarray(per.per_dataset[k], dtype=float)
        ok = np.isfinite(v)
        exp = v[ok].mean() if ok.any() else np.nan
        got = post.file["replicate_mean"][k]
        assert (np.isnan(exp) and np.isnan(got)) or got == pytest.approx(exp, rel=1e-12), k
    np.testing.assert_allclose(post.records["IR_replicate_mean"], per.record_IR, rtol=1e-12)
    assert np.isfinite(post.file["mc_se"]["expected_match_risk"])


@pytest.mark.parametrize("extra", SETTINGS[:2])
def test_each_batch_pooled_on_its_own_is_a_release_of_that_many_datasets(extra):
    """Issue 85 (item 4): the replicates pooled batch_size at a time are releases of that many
    datasets from the model, so their figures are comparable with a release's pooled figure.
    With the released datasets as the replicates (3 batches of the m = 4 datasets, cycled)
    every batch is the release itself: each batch's pooled measures equal the release's, and
    so does their mean, exactly in count and to the last digits in rate; an incomplete last
    batch is not counted."""
    y = make_data(seed=5)
    syn = perturb(y, 4, 6)
    kw = _kw(extra, y)
    known = dict(known=["sex", "region", "race", "income"], synthesized=["race", "income"])
    base = identification_risk(y, syn, **known, **kw)
    post = identification_risk(
        y, syn, **known, **kw,
        replicates=PosteriorReplicates(Released(syn), n=14, batch_size=4, n_groups=2,
                                       random_seed=0))
    f = post.file
    assert f["batch_pooled_size"] == 4 and f["n_batches_pooled"] == 3
    for k in ("expected_match_risk", "true_match_rate_targets", "n_unique"):
        assert f["batch_pooled_mean"][k] == pytest.approx(base.file[k], rel=1e-12), k
        assert f["batch_pooled_mean_mc_se"][k] == pytest.approx(0.0, abs=1e-9), k
    # pooled over all 14 replicates: another figure (more datasets), not a release of 4
    assert post.file["n_replicates"] == 14


def _fixed_model(y, probs, synthesized_records=None):
    """DPMPM with one class: ``race`` drawn from fixed probabilities, ignoring the data."""
    from bayes_risk.models.dpmpm.dpmpm import DPMPM

    df = y[["sex", "race"]].assign(
        sex=pd.Categorical(y["sex"], categories=["F", "M"]),
        race=pd.Categorical(y["race"], categories=list("WBAO")))
    schema = infer_schema(df, synthesized=["race"])
    post = {"pi": np.ones((4, 1)), "phi_0": np.full((4, 1, 2), 0.5),
            "phi_1": np.tile(np.asarray(probs, float), (4, 1, 1))}
    return DPMPM.from_posterior(post, schema, data=df,
                                synthesized_records=synthesized_records), df


PROBS = [0.55, 0.25, 0.15, 0.05]


class FixedProbabilities:
    """Synthesis that ignores the data: ``race`` (codes 0..3) ~ Cat(PROBS) for every record."""

    def __init__(self, n):
        self.n = n

    def posterior_replicates(self, n, *, columns=None, chunk_size=50, random_seed=None, start=0):
        from bayes_risk.models._replicates import iter_replicates

        def one(rng):
            return pd.DataFrame({"race": rng.choice(4, self.n, p=PROBS)})

        return iter_replicates(one, n, columns=["race"], chunk_size=chunk_size,
                               random_seed=random_seed, start=start)


def coded_data(n, seed):
    rng = np.random.default_rng(seed)
    y = pd.DataFrame({"sex": rng.integers(0, 2, n), "race": rng.choice(4, n, p=PROBS)})
    return y, infer_schema(y, categorical=["sex", "race"])


def closed_form_risk(y):
    """Expected match risk of one replicate when race ~ Cat(p) independently of the data.

    Target i (own record in sex group g of size n_g) matches its own record with probability
    p = p(race_i) and each other record of the group independently with probability p, so
    E[IR_i] = p E[1 / (1 + Bin(n_g − 1, p))] = (1 − (1 − p)^n_g) / n_g.
    """
    ng = y.groupby("sex")["sex"].transform("size").to_numpy(dtype=float)
    p = np.asarray(PROBS)[y["race"].to_numpy()]
    return float(((1 - (1 - p) ** ng) / ng).sum())


def _closed_form_run(y, schema, R, seed, model=None, **pr):
    return identification_risk(
        y, None, known=["sex", "race"], synthesized=["race"], schema=schema, progressbar=False,
        replicates=PosteriorReplicates(model or FixedProbabilities(len(y)), n=R,
                                       random_seed=seed, **pr),
        match=MatchSpec(fallback="none"))


def test_same_seed_same_numbers_whatever_the_chunk_size():
    y, schema = coded_data(120, seed=5)
    runs = [_closed_form_run(y, schema, 130, 11, chunk_size=cs, batch_size=40)
            for cs in (1, 7, 200)]
    for r in runs[1:]:
        pd.testing.assert_frame_equal(r.records, runs[0].records)
        assert r.file["mc_se"] == runs[0].file["mc_se"]
        assert r.file["replicate_quantiles"] == runs[0].file["replicate_quantiles"]
    other = _closed_form_run(y, schema, 130, 12, batch_size=40)
    assert other.file["replicate_mean"] != runs[0].file["replicate_mean"]
    # a real model (DPMPM with one latent class: the same data-ignoring synthesis)
    yl = make_data(60, seed=5)
    model, df = _fixed_model(yl, PROBS)
    a, b = (identification_risk(df, None, known=["sex", "race"], synthesized=["race"],
                                progressbar=False,
                                replicates=PosteriorReplicates(model, n=30, chunk_size=cs,
                                                               batch_size=10, random_seed=4),
                                match=MatchSpec(fallback="none"))
            for cs in (3, 30))
    pd.testing.assert_frame_equal(a.records, b.records)



def test_one_batch_has_no_monte_carlo_error_and_says_so():
    # n <= batch_size: one batch, nothing for the jackknife to delete; the result says why its
    # mc_se is nan (warning and code), and two batches give finite standard errors
    y, schema = coded_data(80, seed=2)
    with pytest.warns(DataWarning, match=r"MCSE_UNAVAILABLE: the 20 replicates form a single "
                                         r"batch \(batch_size=50\)"):
        one = _closed_form_run(y, schema, 20, 1)
    assert "MCSE_UNAVAILABLE" in one.warnings
    assert all(np.isnan(v) for v in one.file["mc_se"].values())
    assert np.isnan(one.records["IR_mc_se"]).all()
    assert any(w.code == "MCSE_UNAVAILABLE" and "single batch" in w.message
               for w in one.structured_warnings)
    two = _closed_form_run(y, schema, 20, 1, batch_size=10)
    assert "MCSE_UNAVAILABLE" not in two.warnings
    assert np.isfinite(two.file["mc_se"]["expected_match_risk"])

def test_closed_form_converges_at_root_R():
    y, schema = coded_data(150, seed=6)
    truth = closed_form_risk(y)
    res = _closed_form_run(y, schema, 1500, 1, batch_size=250)
    est = res.file["replicate_mean"]["expected_match_risk"]
    se = res.file["replicate_mean_mc_se"]["expected_match_risk"]
    assert abs(est - truth) < 3.5 * se
    small = _closed_form_run(y, schema, 150, 1)
    # the iid standard error shrinks like 1 / sqrt(R): ratio sqrt(10) within 20 %
    ratio = small.file["replicate_mean_mc_se"]["expected_match_risk"] / se
    assert ratio == pytest.approx(np.sqrt(10), rel=0.2)


@pytest.mark.slow
def test_closed_form_mcse_is_calibrated_over_200_seeds():
    """±2 MCSE covers the closed-form expected match risk in 94–96 % of 200 seeds.

    (With a perfectly calibrated MCSE the coverage count over 200 seeds is about
    Binomial(200, 0.95): the 94–96 % window holds with probability about 0.6, so the seeds are
    fixed, 0..199, not searched.)
    """
    y, schema = coded_data(60, seed=8)
    truth = closed_form_risk(y)
    hits = 0
    for seed in range(200):
        res = _closed_form_run(y, schema, 100, seed)
        est = res.file["replicate_mean"]["expected_match_risk"]
        se = res.file["replicate_mean_mc_se"]["expected_match_risk"]
        hits += abs(est - truth) <= 2 * se
    assert 0.94 <= hits / 200 <= 0.96, hits


def test_auto_stops_at_the_tolerance_and_warns_at_the_cap():
    y = make_data(200, seed=9)
    syn = perturb(y, 3, 2)
    model = Released(perturb(y, 40, 7))
    res = identification_risk(
        y, syn, known=["sex", "region", "race", "income"], synthesized=["race", "income"], **KW,
        replicates=PosteriorReplicates(model, n="auto", mcse_tol=0.2, batch_size=10,
                                       min_replicates=20, max_replicates=400, random_seed=1))
    f = res.file
    R = f["n_replicates"]
    assert res.settings["posterior_replicates"]["stopped_by_tolerance"]
    assert f["mc_se"]["expected_match_risk"] <= 0.2 * f["expected_match_risk"]
    assert f["mc_trace"]["n_replicates"][-1] == R and 20 <= R < 400
    with pytest.warns(DataWarning, match="MCSE_NOT_REACHED"):
        capped = identification_risk(
            y, syn, known=["sex", "region", "race", "income"], synthesized=["race",
                                                                              "income"], **KW,
            replicates=PosteriorReplicates(model, n="auto", mcse_tol=1e-6, batch_size=10,
                                           min_replicates=20, max_replicates=40,
                                           random_seed=1))
    assert "MCSE_NOT_REACHED" in capped.warnings and capped.file["n_replicates"] == 40
    ax = res.plot("running_estimate")
    assert ax.get_xlabel().startswith("number of posterior replicates")
    assert "not reached" not in ax.get_title()
    # few match events: the ± 2 MCSE band is cut at 0 (no negative risk drawn); that the
    # tolerance was not reached is a warning beside the figure (its legend), not its title
    trace = {"n_replicates": [20, 30, 40], "expected_match_risk": [0.1, 0.5, 1.0],
             "mc_se": [0.5, 0.9, 0.2]}
    rare = dataclasses.replace(capped, file={**capped.file, "mc_trace": trace})
    import matplotlib.pyplot as plt

    plt.figure()  # pyplot's current Axes hold the plot above: a new figure for this one
    ax = rare.plot("running_estimate")
    band = ax.collections[0].get_paths()[0].vertices
    assert band[:, 1].min() == 0.0 and band[:, 1].max() == pytest.approx(2.3)
    assert "not reached" not in ax.get_title()
    warning = ax.get_legend().get_title()
    assert warning.get_text().startswith("⚠ MCSE_NOT_REACHED: relative MCSE above")
    assert warning.get_color() == "#8a5300"


def test_partial_synthesis_replicates_only_selected_records():
    y = make_data(80, seed=2)
    sel = np.zeros(len(y), dtype=bool)
    sel[:30] = True
    model, df = _fixed_model(y, PROBS, synthesized_records=sel)
    assert capabilities(model).posterior_replicates
    chunks = list(model.posterior_replicates(6, columns=["race"], chunk_size=4, random_seed=3))
    assert [len(c) for c in chunks] == [4, 2]
    reps = [z for c in chunks for z in c]
    for z in reps:
        assert list(z.columns) == ["race"] and len(z) == len(y)
        assert (z["race"].astype(str).to_numpy()[~sel] == y["race"].to_numpy()[~sel]).all()
    assert any((z["race"].astype(str).to_numpy()[sel] != y["race"].to_numpy()[sel]).any()
               for z in reps)
    again = list(model.posterior_replicates(2, columns=["race"], random_seed=3, start=4))[0]
    for a, b in zip(again, reps[4:], strict=True):
        pd.testing.assert_frame_equal(a, b)
    with pytest.raises(ValidationError, match="not synthesized"):
        next(iter(model.posterior_replicates(1, columns=["sex"], random_seed=1)))


def test_cart_replicates_and_intruder_view():
    from bayes_risk.models.trees.cart import CARTSynthesizer

    y = make_data(300, seed=4)
    schema = infer_schema(y, categorical=["region"])
    model = CARTSynthesizer(progressbar=False).fit(y, schema=schema, synthesized=["race", "income"],
                                                   random_seed=1)
    a = [z for c in model.posterior_replicates(5, columns=["income"], chunk_size=2,
                                               random_seed=9) for z in c]
    b = [z for c in model.posterior_replicates(5, columns=["income"], chunk_size=5,
                                               random_seed=9) for z in c]
    for u, v in zip(a, b, strict=True):
        pd.testing.assert_frame_equal(u, v)
    assert not a[0].equals(a[1])  # a fresh bootstrap per replicate
    syn = model.synthesize(3, random_seed=2)
    for view in ("agency", "intruder"):
        res = identification_risk(
            y, syn, known=["sex", "region", "race", "income"], synthesized=["race",
                                                                              "income"], **KW,
            replicates=PosteriorReplicates(model, n=60, view=view, batch_size=20,
                                           random_seed=5))
        assert res.settings["posterior_replicates"]["view"] == view
        assert res.file["n_replicates"] == 60
        assert np.isfinite(res.file["mc_se"]["expected_match_risk"])
    uniform = CARTSynthesizer(donor="uniform", progressbar=False).fit(
        y, schema=schema, synthesized=["race"], random_seed=1)
    with pytest.raises(ValidationError, match="bayes_bootstrap"):
        identification_risk(y, syn, known=["sex", "race"], synthesized=["race"], **KW,
                            replicates=PosteriorReplicates(uniform, n=5))


def test_refusals_and_bad_arguments():
    from bayes_risk.models.trees.pmm import SmallCellPMMSynthesizer
    from bayes_risk.models.trees.random_forest import RandomForestSynthesizer

    for cls in (RandomForestSynthesizer, SmallCellPMMSynthesizer):
        with pytest.raises(ValidationError, match="not available"):
            PosteriorReplicates(cls())
    with pytest.raises(ValidationError, match="posterior_replicates"):
        PosteriorReplicates(object())
    y = make_data(50)
    m = Released([y])
    for bad in ({"n": 0}, {"view": "public"}, {"mcse_tol": 1.5}, {"n_groups": 1},
                {"min_replicates": 10, "max_replicates": 5}, {"refit_dataset": -1}):
        with pytest.raises(ValidationError):
            PosteriorReplicates(m, **bad)
    with pytest.raises(ValidationError, match="nothing to replicate"):
        identification_risk(y, None, known=["sex"], synthesized=[],
                            progressbar=False,
                            replicates=PosteriorReplicates(m, n=2))
    with pytest.raises(ValidationError, match="pooled"):
        identification_risk(y, None, known=["sex", "race"], synthesized=["race"],
                            aggregation="per_dataset",
                            progressbar=False, replicates=PosteriorReplicates(m, n=2))
    with pytest.raises(ValidationError, match="released datasets as synthetic"):
        identification_risk(y, None, known=["sex", "race"], synthesized=["race"],
                            progressbar=False,
                            replicates=PosteriorReplicates(m, n=2, view="intruder"))


@pytest.mark.filterwarnings("ignore::bayes_risk.exceptions.DataWarning")
def test_cli_posterior_replicates_from_a_cart_release(tmp_path):
    """``bayes-risk identification --model release --replicates R``: summary.json carries the
    point value, MCSE and replicate quantiles, equal to the Python API; the running-estimate
    plot is written."""
    import json

    from bayes_risk.cli import main
    from bayes_risk.data import make_ce_like, read_synthetic
    from bayes_risk.models import rebuild_synthesizer

    ce = make_ce_like(200, random_seed=3)
    orig = tmp_path / "ce.csv"
    ce.to_csv(orig, index=False)
    syn_dir = tmp_path / "syn"
    assert main(["synthesize", str(orig), "--method", "cart", "--synthesize", "Tenure",
                 "Income", "--categorical", "Urban", "Marital", "Tenure", "-m", "2",
                 "--random-seed", "9", "-q", "--out", str(syn_dir)]) == 0
    out = tmp_path / "risk"
    args = ["identification", str(orig), str(syn_dir), "--known-unsynthesized", "Age", "Urban",
            "--known-synthesized", "Tenure", "Income", "--categorical", "Urban", "Marital",
            "Tenure", "--radius", "Income=0.1", "--model", "release", "--replicates", "60",
            "--random-seed", "4", "-q", "--out", str(out)]
    assert main(args) == 0
    s = json.loads((out / "summary.json").read_text())
    unc = s["uncertainty"]
    assert unc["n_replicates"] == 60
    assert set(unc["expected_match_risk"]) == {
        "value", "mc_se", "replicate_mean", "replicate_mean_mc_se", "replicate_quantiles"}
    assert (out / "running_estimate.png").stat().st_size > 1000
    df = pd.read_csv(orig)
    release = read_synthetic(syn_dir)
    model = rebuild_synthesizer(df, release)
    res = identification_risk(
        df, release, known=["Age", "Urban", "Tenure", "Income"], synthesized=["Tenure",
                                                                              "Income"],
                                                                              categorical=["Urban",
                                                                                           "Marital",
                                                                          "Tenure"],
        match=MatchSpec(radius={"Income": 0.1}), progressbar=False,
        replicates=PosteriorReplicates(model, n=60, random_seed=4))
    assert unc["expected_match_risk"]["value"] == pytest.approx(res.file["expected_match_risk"])
    assert unc["expected_match_risk"]["mc_se"] == pytest.approx(
        res.file["mc_se"]["expected_match_risk"])
    # the replicate flags need --model
    assert main(["identification", str(orig), str(syn_dir), "--known-unsynthesized", "Age",
                 "--known-synthesized", "Tenure", "--categorical", "Urban", "Marital", "Tenure",
                 "--view", "intruder", "-q", "--out", str(tmp_path / "x")]) == 2


def test_sequential_regression_replicates_partial_synthesis():
    """Seqreg: a replicate draws b, then y given the replicate's b (x unsynthesized); records not
    selected keep their values."""
    from bayes_risk.models.seqreg.seqreg import SequentialRegression

    rng = np.random.default_rng(8)
    n = 60
    x = rng.normal(size=n)
    df = pd.DataFrame({"x": x, "b": pd.Categorical((x > 0).astype(int)),
                       "y": 1.0 + 2.0 * x + rng.normal(0, 0.5, n)})
    schema = infer_schema(df, synthesized=["b", "y"])
    H = 4
    draws_b = np.tile([0.0, 0.0], (H, 1))  # P(b = 1) = 1/2 whatever x
    draws_y = pd.DataFrame({"(Intercept)": [1.0] * H, "x": [2.0] * H, "b[T.1]": [5.0] * H,
                            "sigma": [1e-6] * H})
    flags = np.arange(n) % 2 == 0
    model = SequentialRegression.from_posterior({"b": draws_b, "y": draws_y}, schema, data=df,
                                                synthesized_records=flags)
    reps = [z for c in model.posterior_replicates(8, columns=["b", "y"], chunk_size=3,
                                                  random_seed=2) for z in c]
    for z in reps:
        zb = z["b"].astype(int).to_numpy()
        np.testing.assert_allclose(z["y"].to_numpy()[flags], (1 + 2 * x + 5 * zb)[flags],
                                   atol=1e-4)
        np.testing.assert_array_equal(z["y"].to_numpy()[~flags], df["y"].to_numpy()[~flags])
    b_sel = np.array([z["b"].astype(int).to_numpy()[flags] for z in reps])
    assert 0.3 < b_sel.mean() < 0.7  # P(b = 1) = 1/2 in every replicate


def test_result_reports_the_uncertainty_in_summary_dict_and_plot():
    """The Monte Carlo errors and replicate spread reach ``summary()``, ``to_dict()`` (hence
    summary.json) and ``plot("running_estimate")``; a released-data result has none of them."""
    y = make_data()
    syn = perturb(y, 6, 4)
    base = identification_risk(y, syn[:2], known=["sex", "region", "race", "income"],
                               synthesized=["race", "income"], **KW)
    res = identification_risk(
        y, syn[:2], known=["sex", "region", "race", "income"], synthesized=["race",
                                                                              "income"], **KW,
        replicates=PosteriorReplicates(Released(syn), n=60, batch_size=10, n_groups=6,
                                       random_seed=2))
    d = res.to_dict()
    u = d["uncertainty"]
    assert u["n_replicates"] == 60 and "jackknife over 6 groups" in u["method"]
    emr = u["expected_match_risk"]
    assert emr["value"] == res.file["expected_match_risk"] == d["summary"]["expected_match_risk"]
    assert emr["mc_se"] == res.file["mc_se"]["expected_match_risk"] > 0
    q = emr["replicate_quantiles"]
    assert q["0.025"] <= q["0.5"] <= q["0.975"]
    tab = res.summary().tables["File-level measures"]
    row = tab.set_index("measure").loc["expected match risk (targets, sum of IR)"]
    assert row["MCSE"] == emr["mc_se"] and row["replicate median"] == q["0.5"]
    assert "MCSE" in res.summary().as_text()
    ax = res.plot("running_estimate")
    assert ax.get_xlabel().startswith("number of posterior replicates")
    # the released datasets: no uncertainty block, no MCSE column, no running estimate
    assert base.uncertainty() is None and "uncertainty" not in base.to_dict()
    assert "MCSE" not in base.summary().tables["File-level measures"].columns
    with pytest.raises(ValidationError, match="running_estimate"):
        base.plot("running_estimate")


def test_posterior_replicates_refuse_a_bad_executor_and_compat():
    y = make_data(60)
    syn = perturb(y, 2, 5)
    pr = PosteriorReplicates(Released(syn), n=4, random_seed=0)
    with pytest.raises(ValidationError, match="executor"):
        identification_risk(y, syn, known=["sex", "region", "race", "income"],
                            synthesized=["race", "income"], **KW,
                            replicates=pr, executor=object())
    with pytest.raises(ValidationError, match="compat"):
        identification_risk(y, syn, known=["sex", "region", "race", "income"],
                            synthesized=["race", "income"], categorical=["region"],
                            match=MatchSpec(radius={"income": 0.05},
                                            compat="IdentificationRiskCalculation"),
                                            progressbar=False,
                            replicates=pr)


@pytest.mark.parametrize("extra", SETTINGS)
def test_pruned_jackknife_equals_the_full_evaluation(extra, monkeypatch):
    """The jackknife and the running estimate evaluated on the candidate pairs only give the
    numbers of the evaluation over every stored pair (fallback, unknown membership, threshold
    strategy)."""
    from bayes_risk.identification import replicates as rep

    y = make_data(200, seed=3)
    syn = perturb(y, 3, 4)
    model = Released(perturb(y, 30, 8))
    dropped = {"candidate_pairs": [], "group_candidates": []}

    def counting(name):
        real = getattr(rep._unc, name)

        def f(*args, **kw):
            out = real(*args, **kw)
            keep = out[0] if isinstance(out, tuple) else out  # group_candidates: (mask, bounds)
            dropped[name].append(int((~keep).sum()))
            return out
        return f

    def run():
        return identification_risk(
            y, syn, known=["sex", "region", "race", "income"], synthesized=["race", "income"],
            **_kw(extra, y), replicates=PosteriorReplicates(model, n=60, batch_size=6,
                                                            n_groups=10, random_seed=2))

    for name in dropped:
        monkeypatch.setattr(rep._unc, name, counting(name))
    a = run()
    # the reference: every stored pair evaluated (no pair left out as a non-candidate)
    monkeypatch.setattr(rep._unc, "candidate_pairs",
                        lambda keys, *args, **kw: np.ones(keys.size, dtype=bool))
    monkeypatch.setattr(rep._unc, "group_candidates", lambda keys, vals, in_u, groups, *args,
                        **kw: (np.ones(keys.size, dtype=bool), [None] * len(groups)))
    b = run()
    assert np.isfinite(a.file["mc_se"]["expected_match_risk"])
    # pairs were left out of the running estimate and of the jackknife
    assert all(sum(v) > 0 for v in dropped.values()), dropped
    np.testing.assert_equal(a.file, b.file)  # mc_se, the trace (nan before two groups), …
    pd.testing.assert_frame_equal(a.records, b.records)
    # the final pooled evaluation too: the output's probabilities and fallback counts
    for part in ("indptr", "indices", "data"):
        assert np.array_equal(getattr(a.prob, part), getattr(b.prob, part)), part
    for part in ("fallback_value", "fallback_extra"):
        assert np.array_equal(getattr(a.pooled, part), getattr(b.pooled, part)), part


@pytest.mark.parametrize("extra", SETTINGS)
def test_spilled_jackknife_groups_give_the_same_numbers(extra, monkeypatch, tmp_path):
    """The groups' pair sums kept in the spill folder between uses (several batches per group,
    so spilled groups are read back and merged) give the numbers of groups held in memory, and
    the folder is removed after the run."""
    from bayes_risk.identification import replicates as rep

    y = make_data(200, seed=3)
    syn = perturb(y, 3, 4)
    model = Released(perturb(y, 30, 8))
    folders = []

    def mkdtemp(**kw):
        folders.append(tmp_path / f"spill{len(folders)}")
        folders[-1].mkdir()
        return str(folders[-1])

    monkeypatch.setattr(rep, "scratch_folder", lambda kind: mkdtemp())
    written = []
    real_save = np.save
    monkeypatch.setattr(rep._unc.np, "save", lambda f, a: (written.append(f), real_save(f, a)))
    runs = []
    for at in (0, 10**12):
        monkeypatch.setattr(rep._unc, "SPILL_MIN_PAIRS", at)
        runs.append(identification_risk(
            y, syn, known=["sex", "region", "race", "income"], synthesized=["race",
                                                                              "income"],
                                                                              **_kw(extra, y),
            replicates=PosteriorReplicates(model, n=60, batch_size=6, n_groups=4,
                                           random_seed=2)))
    a, b = runs
    assert written and all(f.startswith(str(folders[0])) for f in written)
    assert not any(f.exists() for f in folders)  # removed after each run
    np.testing.assert_equal(a.file, b.file)
    pd.testing.assert_frame_equal(a.records, b.records)
    assert np.isfinite(a.file["mc_se"]["expected_match_risk"])


def test_unwritable_spill_folder_keeps_the_groups_in_memory(monkeypatch, tmp_path):
    """A temporary folder that cannot be created or written (full or read-only disk) does not
    stop the run: the groups stay in memory, the numbers are the same and a coded warning
    says why."""
    from bayes_risk.exceptions import BayesRiskWarning
    from bayes_risk.identification import replicates as rep

    y = make_data(200, seed=3)
    syn = perturb(y, 3, 4)
    model = Released(perturb(y, 30, 8))

    def run():
        return identification_risk(
            y, syn, known=["sex", "region", "race", "income"], synthesized=["race",
                                                                              "income"], **KW,
            replicates=PosteriorReplicates(model, n=30, batch_size=6, n_groups=4,
                                           random_seed=2))

    monkeypatch.setattr(rep._unc, "SPILL_MIN_PAIRS", 10**12)
    ref = run()
    monkeypatch.setattr(rep._unc, "SPILL_MIN_PAIRS", 0)

    def full(*a, **k):
        raise OSError(28, "No space left on device")

    with monkeypatch.context() as m:
        m.setattr(rep._unc.np, "save", full)
        sub = tmp_path / "spill"
        sub.mkdir()
        m.setattr(rep, "scratch_folder", lambda kind: str(sub))
        with pytest.warns(BayesRiskWarning, match="SPILL_UNAVAILABLE"):
            a = run()
    assert not sub.exists()  # removed after the run, no partial file left behind
    with monkeypatch.context() as m:
        m.setattr(rep, "scratch_folder", full)
        with pytest.warns(BayesRiskWarning, match="SPILL_UNAVAILABLE"):
            b = run()
    for res in (a, b):
        np.testing.assert_equal(res.file, ref.file)
        pd.testing.assert_frame_equal(res.records, ref.records)


@pytest.mark.parametrize("extra", SETTINGS[:2])
def test_next_batch_drawn_in_a_thread_gives_the_same_numbers(extra, monkeypatch):
    """In process the next batch is drawn in a thread while one is matched, a batch's flushes
    are summed in a thread while its next replicates are matched, and a checkpoint is
    evaluated in a thread while the next batch is matched: the numbers and the stopping
    point are those of doing everything in turn (as with any other executor), a run stopped by
    the tolerance draws at most two batches it does not use, and an error while drawing reaches
    the caller."""
    from bayes_risk.identification import _replicate_batches as rb

    y = make_data(200, seed=3)
    syn = perturb(y, 3, 4)
    model = Released(perturb(y, 30, 8))
    monkeypatch.setattr(rb, "_PENDING", 300)  # several flushes per batch (in a thread)
    drawn = []
    real = rb.draw_chunk
    monkeypatch.setattr(rb, "draw_chunk",
                        lambda job, b, i: (drawn.append(b), real(job, b, i))[1])

    class InTurn:  # an executor other than the in-process one: every batch in turn
        partition_size = None

        def map(self, fn, shared, parts, *, progressbar=True, description=""):
            return [fn(shared, p) for p in parts]

    def run(executor=None, **pr):
        return identification_risk(y, syn, known=["sex", "region", "race", "income"],
                                   synthesized=["race", "income"], executor=executor,
                                   **_kw(extra, y), replicates=PosteriorReplicates(
                                       model, batch_size=6, n_groups=4, random_seed=2, **pr))

    for pr in ({"n": 60}, {"n": "auto", "mcse_tol": 0.5, "min_replicates": 18,
                           "max_replicates": 120}):
        runs = []
        for prefetch in (True, False):
            drawn.clear()
            runs.append(run(None if prefetch else InTurn(), **pr))
            used = runs[-1].file["n_replicates"] // 6
            if prefetch:  # batches 1 … used − 1, and at most two more (one matched while
                # the last checkpoint was evaluated, one drawn ahead of it)
                assert sorted(drawn)[:used - 1] == list(range(1, used))
                assert len(drawn) <= used + 1
        a, b = runs
        np.testing.assert_equal(a.file, b.file)
        pd.testing.assert_frame_equal(a.records, b.records)
        for part in ("indptr", "indices", "data"):
            assert np.array_equal(getattr(a.prob, part), getattr(b.prob, part)), part
    stopped = runs[0].file["n_replicates"]
    assert runs[0].settings["posterior_replicates"]["stopped_by_tolerance"] and stopped < 120

    def failing(job, b, i):
        if b == 3:
            raise RuntimeError("replicate model failed")
        return real(job, b, i)

    monkeypatch.setattr(rb, "draw_chunk", failing)
    with pytest.raises(RuntimeError, match="replicate model failed"):
        run(n=60)


@pytest.mark.parametrize("extra", SETTINGS[1:3])
def test_chunks_of_a_batch_change_its_memory_not_its_numbers(extra, monkeypatch):
    """A batch drawn and matched ``chunk_size`` replicates at a time (the audit sizes the chunk
    from its memory budget) holds at most that many replicates at once and gives the numbers
    of the batch matched whole, bit for bit: the batch (the jackknife's and the stopping
    rule's unit) does not move, and the pair sums flush where the pending pairs overflow, never
    at a chunk's end (issue 70)."""
    from bayes_risk.identification import _replicate_batches as rb

    y = make_data(150, seed=4)
    model = Released(perturb(y, 9, 5))
    monkeypatch.setattr(rb, "_PENDING", 250)  # flushes fall inside the chunks and across them
    held = []
    real = rb.draw_chunk
    monkeypatch.setattr(rb, "draw_chunk",
                        lambda job, b, i: (p := real(job, b, i), held.append(p.prep.R))[0])

    def run(chunk):
        held.clear()
        res = identification_risk(y, perturb(y, 2, 6), known=["sex", "region", "race", "income"],
                                  synthesized=["race", "income"], **_kw(extra, y),
                                  replicates=PosteriorReplicates(
                                      model, n=22, batch_size=6, n_groups=3, chunk_size=chunk,
                                      random_seed=3))
        return res, list(held)

    (whole, h6), (two, h2), (one, h1) = run(6), run(2), run(1)
    # 22 replicates: batches of 6, 6, 6 and 4, the first chunk of batch 0 drawn by the run
    assert h6 == [6, 6, 4] and h2 == [2] * 10 and h1 == [1] * 21
    for res in (two, one):
        np.testing.assert_equal(res.file, whole.file)
        pd.testing.assert_frame_equal(res.records, whole.records)
        for part in ("indptr", "indices", "data"):
            assert np.array_equal(getattr(res.prob, part), getattr(whole.prob, part)), part
        assert res.settings["posterior_replicates"] == whole.settings["posterior_replicates"]


@pytest.mark.parametrize("extra", SETTINGS[::3])
def test_compiled_pair_kernels_give_the_numbers_of_the_numpy_code(extra, monkeypatch):
    """The whole run on the compiled pair walks (flushes, merges, candidate selection) and on
    the numpy code (used below ``PAIR_KERNELS_MIN`` pairs): the same numbers, bit for bit."""
    from bayes_risk.identification import engine

    y = make_data(200, seed=3)
    syn = perturb(y, 3, 4)
    model = Released(perturb(y, 30, 8))
    runs = []
    for compiled in (True, False):
        monkeypatch.setattr(engine, "USE_NUMBA", compiled)
        runs.append(identification_risk(
            y, syn, known=["sex", "region", "race", "income"], synthesized=["race",
                                                                              "income"],
                                                                              **_kw(extra, y),
            replicates=PosteriorReplicates(model, n=60, batch_size=6, n_groups=4,
                                           random_seed=2)))
    a, b = runs
    np.testing.assert_equal(a.file, b.file)
    pd.testing.assert_frame_equal(a.records, b.records)
    for part in ("indptr", "indices", "data"):
        assert np.array_equal(getattr(a.prob, part), getattr(b.prob, part)), part


def _frames_for_selection():
    rng = np.random.default_rng(3)
    base = pd.DataFrame({
        "race": pd.Categorical(rng.choice(list("WBAO"), 30), categories=list("WBAO")),
        "income": rng.lognormal(10, 0.5, 30),
        "sex": rng.integers(0, 2, 30),
    })
    return [
        base[["race", "income"]],  # exactly the columns, rows 0..n-1: the shallow copy
        base,  # an extra column
        base[["income", "race"]],  # the columns in another order
        base[["race", "income"]].set_axis(np.arange(30) + 5),  # rows not numbered 0..n-1
        base[["race", "income"]].iloc[::-1],  # a reversed RangeIndex
        base[["race", "income"]].iloc[::2],  # a RangeIndex of step 2
    ]


@pytest.mark.parametrize("cow", [True, False], ids=["copy-on-write", "pandas-2-default"])
def test_select_columns_is_the_label_lookup(cow, monkeypatch):
    """``select_columns`` is ``df[cols].reset_index(drop=True)`` (values, dtypes, labels), and
    editing its result never edits the table it came from (with or without pandas'
    copy-on-write)."""
    from bayes_risk.data import normalise
    from bayes_risk.data.normalise import select_columns

    monkeypatch.setattr(normalise, "_copy_on_write", lambda: cow)
    cols = ["race", "income"]
    for df in _frames_for_selection():
        before = df.copy()
        out = select_columns(df, cols)
        pd.testing.assert_frame_equal(out, df[cols].reset_index(drop=True))
        assert out.columns.dtype == df[cols].columns.dtype
        out.loc[0, "income"] = -1.0
        out["race"] = "W"
        pd.testing.assert_frame_equal(df, before)
    with pytest.raises(KeyError):
        select_columns(_frames_for_selection()[0], ["race", "age"])


def test_replicates_of_the_columns_only_skip_the_label_lookup(monkeypatch):
    """``iter_replicates`` gives, replicate by replicate, the draw's ``z[cols]`` on rows
    ``0..n-1`` (the draws of fixed seeds, before and after the fast path), and a model that
    draws only the requested columns pays no pandas label lookup or re-indexing."""
    from bayes_risk._rng import replicate_rng, seed_sequence
    from bayes_risk.models._replicates import iter_replicates

    def wide(rng):
        return pd.DataFrame({"sex": rng.integers(0, 2, 40), "race": rng.choice(4, 40, p=PROBS),
                             "income": rng.normal(size=40)}).set_axis(np.arange(40) * 3)

    def narrow(rng):
        return pd.DataFrame({"race": rng.choice(4, 40, p=PROBS)})

    for draw, cols in ((wide, ["race", "income"]), (wide, ["income"]), (narrow, ["race"])):
        got = [z for ch in iter_replicates(draw, 9, columns=cols, chunk_size=4,
                                           random_seed=17, start=3) for z in ch]
        seq = seed_sequence(17)
        ref = [draw(replicate_rng(seq, k))[cols].reset_index(drop=True) for k in range(3, 12)]
        assert len(got) == len(ref) == 9
        for a, b in zip(got, ref, strict=True):
            pd.testing.assert_frame_equal(a, b)

    def no_lookup(*args, **kwargs):
        raise AssertionError("label lookup or re-indexing of a replicate that needs none")

    monkeypatch.setattr(pd.DataFrame, "reset_index", no_lookup)
    got = list(FixedProbabilities(50).posterior_replicates(6, columns=["race"], chunk_size=4,
                                                            random_seed=2))
    assert [len(ch) for ch in got] == [4, 2]


class ReleasedWide(Released):
    """``Released``, but each replicate the whole table, its columns in reverse order."""

    def posterior_replicates(self, n, *, columns=None, chunk_size=50, random_seed=None, start=0):
        for chunk in super().posterior_replicates(n, columns=list(self.datasets[0].columns),
                                                  chunk_size=chunk_size, start=start):
            yield [z[z.columns[::-1]] for z in chunk]


def test_batches_give_the_same_numbers_whatever_columns_the_replicates_hold():
    """Later batches are encoded into the first batch's plan (``Recoder``): replicates holding
    exactly the synthesized known columns (no label lookup) and the same replicates as whole
    tables in another column order give the same numbers."""
    y = make_data(150, seed=4)
    syn = perturb(y, 5, seed=5)
    kw = dict(KW, known=["sex", "region", "race", "income"], synthesized=["race", "income"])
    narrow, wide = (identification_risk(
        y, None, replicates=PosteriorReplicates(model(syn), n=12, batch_size=4, random_seed=1),
        **kw) for model in (Released, ReleasedWide))
    pd.testing.assert_frame_equal(narrow.records, wide.records)
    np.testing.assert_equal(narrow.file, wide.file)
    assert narrow.file["n_replicates"] == 12


def test_posterior_replicates_keep_their_pooled_probabilities():
    y = make_data()
    syn = perturb(y, 3, 1)
    with pytest.raises(ValidationError, match="aggregation='pooled_measures' applies to released"):
        identification_risk(y, syn, known=["sex", "region", "race"], synthesized=["race"],
                            replicates=PosteriorReplicates(Released(syn), n=3, random_seed=0),
                            aggregation="pooled_measures", progressbar=False)


def test_pairs_of_a_replicate_that_would_not_fit_are_refused(monkeypatch):
    """A replicate whose (target, record) pairs would not fit in the memory left is refused
    with MEMORY_TOO_LARGE before they are listed (at 10^6 CE-like records matched exactly, a
    replicate holds about 2.7·10^9 pairs: a worker was killed instead)."""
    from bayes_risk.identification import _replicate_batches

    y = make_data(seed=3)
    syn = perturb(y, 7, 4)
    kw = _kw(SETTINGS[0], y)
    run = dict(known=["sex", "region", "race", "income"], synthesized=["race", "income"],
               replicates=PosteriorReplicates(Released(syn), n=7, batch_size=3, n_groups=2,
                                              random_seed=0), **kw)
    from bayes_risk.identification import index

    listed = []  # want_list of every match of an index: the pairs never listed
    for cls in (index.ReplicateIndex, index.NumbaIndex):
        def spy(self, key, b, want_list, *a, _real=cls.match, **k):
            listed.append(want_list)
            return _real(self, key, b, want_list, *a, **k)
        monkeypatch.setattr(cls, "match", spy)
    monkeypatch.setattr(_replicate_batches, "PAIR_BYTES", 1e15)  # a pair larger than memory
    with pytest.raises(ValidationError, match=r"pairs of posterior replicates") as err:
        identification_risk(y, syn, **run)
    assert err.value.code == "MEMORY_TOO_LARGE"
    assert "the number of records or the radius" in str(err.value)
    assert listed and not any(listed)  # counted, refused before any pair is listed


def _shared_keys_data(n=300, seed=6, missing=True):
    """Targets that share their known values: an income atom at 0, coarse incomes and
    (``missing``) missing known values, matched on fewer columns."""
    y = make_data(n, seed=seed)
    rng = np.random.default_rng(seed)
    y["income"] = np.round(y["income"], -4)
    y.loc[rng.random(n) < 0.2, "income"] = 0.0
    if not missing:  # population counts are of complete keys
        return y
    y.loc[rng.choice(n, 8, replace=False), "race"] = None
    y.loc[rng.choice(n, 6, replace=False), "income"] = np.nan
    return y


@pytest.mark.parametrize("extra", SETTINGS)
def test_targets_that_match_alike_share_their_pairs_bit_for_bit(extra, monkeypatch):
    """Targets with the same known values are matched once, as one query (issue 70: an atom's
    targets listed every pair of its cell, n² pairs): the numbers are those of the targets
    matched one by one, bit for bit — the records, the file measures with their jackknife
    errors and trace, and the pooled probabilities row by row."""
    from bayes_risk.identification import _replicate_batches as rb

    y = _shared_keys_data(missing=extra.get("population") != "user")
    model = Released(perturb(y, 12, 9))
    listed = []
    real_match = rb._Group.match

    def counting(self, r, left=1):
        out = real_match(self, r, left)
        listed.append(int(out[0].sum()))
        return out

    monkeypatch.setattr(rb._Group, "match", counting)

    def run():
        listed.clear()
        res = identification_risk(
            y, None, known=["sex", "region", "race", "income"],
            synthesized=["race", "income"], **_kw(extra, y),
            replicates=PosteriorReplicates(model, n=24, batch_size=4, n_groups=3,
                                           random_seed=2))
        return res, sum(listed)

    shared, pairs_shared = run()
    queries = rb.target_queries  # every target its own query: the path before queries
    monkeypatch.setattr(rb, "target_queries", lambda prep, inv_f: (
        np.arange(prep.n_targets), np.arange(prep.n_targets)))
    alone, pairs_alone = run()
    monkeypatch.setattr(rb, "target_queries", queries)
    assert pairs_shared < pairs_alone / 2  # the atom's targets were matched once
    assert shared.pooled.rows is not None and alone.pooled.rows is None
    assert shared.pooled.explicit.shape[0] < len(y)
    pd.testing.assert_frame_equal(shared.records, alone.records)
    np.testing.assert_equal(shared.file, alone.file)
    a, b = shared.prob, alone.prob
    for part in ("indptr", "indices", "data"):
        assert np.array_equal(getattr(a, part), getattr(b, part)), part
    assert shared.pooled.nnz == alone.pooled.nnz == a.nnz
    # expanded to one row per target, the shared rows count against the limit
    from bayes_risk.identification import engine

    monkeypatch.setattr(engine, "MAX_NNZ", a.nnz - 1)
    with pytest.raises(ValidationError, match="row by row") as err:
        shared.pooled.tocsr()
    assert err.value.code == "PROBLEM_TOO_LARGE"
    for i in (0, 7, int(np.flatnonzero(y["income"].to_numpy() == 0)[0])):
        for x, z in zip(shared.pooled.row(i), alone.pooled.row(i), strict=True):
            assert np.array_equal(x, z)


def test_target_queries_group_equal_known_values():
    """Queries: equal known values (missing ones included) and counts, numbered by first
    target; a target with other counts is a query of its own."""
    from types import SimpleNamespace

    from bayes_risk.identification._replicate_batches import target_queries

    prep = SimpleNamespace(
        n_targets=5, tgt_drop=None,
        tgt_exact=np.array([[1, 2], [0, 0], [1, 2], [1, 2], [0, 0]]),
        tgt_radius=np.array([[0.0], [np.inf], [0.0], [0.0], [np.inf]]))
    query, rep = target_queries(prep, None)
    assert query.tolist() == [0, 1, 0, 0, 1] and rep.tolist() == [0, 1]
    query, rep = target_queries(prep, np.array([[0.5], [1.0], [0.5], [0.25], [1.0]]))
    assert query.tolist() == [0, 1, 0, 2, 1] and rep.tolist() == [0, 1, 3]


def test_targets_share_queries_with_counts_refitted_on_each_replicate(monkeypatch):
    """Log-linear counts refitted on every replicate (each batch prepared anew): the queries,
    fixed from the first batch, give the numbers of the targets matched alone, bit for bit."""
    from bayes_risk.identification import _replicate_batches as rb

    y = make_data(300, seed=2)
    model = Released(perturb(y, 12, 9))

    def run():
        return identification_risk(
            y, None, known=["sex", "region", "race"], synthesized=["race"],
            categorical=["region"], progressbar=False, match=MatchSpec(strategy="always"),
            population=PopulationSpec(membership="unknown", counts="loglinear_synthetic",
                                      sampling_fraction=0.1),
            replicates=PosteriorReplicates(model, n=24, batch_size=4, n_groups=3,
                                           random_seed=2))

    shared = run()
    monkeypatch.setattr(rb, "target_queries", lambda prep, inv_f: (
        np.arange(prep.n_targets), np.arange(prep.n_targets)))
    alone = run()
    assert shared.pooled.explicit.shape[0] == 24 and alone.pooled.rows is None
    assert shared.file["expected_match_risk"] > 0
    pd.testing.assert_frame_equal(shared.records, alone.records)
    np.testing.assert_equal(shared.file, alone.file)
    for part in ("indptr", "indices", "data"):
        assert np.array_equal(getattr(shared.prob, part), getattr(alone.prob, part)), part
