"""Smoothed terminal values of the numeric random forests (Caiola & Reiter 2010 §5): each leaf's
truncated Gaussian kernel density of its bootstrap copies, checked against Silverman's rule
written out and against the mixture's distribution function; the release, the settings that
are refused, persistence and the command line."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from bayes_risk.data import infer_schema, make_ce_like
from bayes_risk.exceptions import NotSupportedError, ValidationError
from bayes_risk.models import load_model
from bayes_risk.models.trees.cart_fit import silverman
from bayes_risk.models.trees.forest_leaves import (
    draw_smoothed,
    forest_apply_distinct,
    leaf_kernels,
)
from bayes_risk.models.trees.random_forest import RandomForestSynthesizer


@pytest.fixture(scope="module")
def ce():
    df = make_ce_like(300, random_seed=5)
    return df, infer_schema(df, categorical=["Urban", "Marital", "Tenure"])


def _fitted(ce, **kw):
    df, schema = ce
    opts = {"n_trees": 20, "min_samples_leaf": 5, "smoothing": True, "random_seed": 1, **kw}
    return RandomForestSynthesizer(**opts).fit(df, schema=schema,
                                               synthesized=["Income", "Expenditure", "Tenure"])


def test_leaf_kernels_are_silverman_on_the_bootstrap_copies(ce):
    syn = _fitted(ce)
    donors = syn.state_.tables["Income"]
    leaves = np.flatnonzero(donors["size"] > 0)
    lo, hi, h = leaf_kernels(donors, leaves, 0.5)
    for j, node in enumerate(leaves[:: max(1, leaves.size // 60)]):
        k = np.flatnonzero(leaves == node)[0]
        s = slice(donors["start"][node], donors["start"][node] + donors["size"][node])
        v, c = donors["values"][s], donors["counts"][s]
        copies = np.repeat(v, c)  # the leaf's bootstrap sample
        assert lo[k] == v.min() and hi[k] == v.max()
        assert h[k] == pytest.approx(max(silverman(copies), 0.5), rel=1e-10), j


def _mixture_cdf(z, b, w, h, lo, hi):
    """The truncated kernel mixture's CDF, ``Σ w_k [Φ((z−b_k)/h) − Φ((lo−b_k)/h)] / Σ w_k M_k``,
    written out."""
    num = (w * (stats.norm.cdf((z[:, None] - b) / h) - stats.norm.cdf((lo - b) / h))).sum(1)
    return num / (w * (stats.norm.cdf((hi - b) / h) - stats.norm.cdf((lo - b) / h))).sum()


def test_draws_follow_the_leaf_density(ce):
    """Many draws of one record in one tree: its leaf's truncated kernel density of the
    bootstrap copies (Kolmogorov–Smirnov against the mixture's CDF, and inside the support)."""
    syn = _fitted(ce, n_trees=1)
    donors = syn.state_.tables["Income"]
    df = ce[0]
    X = np.column_stack([df[p].to_numpy(float) for p in syn.predictors_["Income"]])
    leaves = forest_apply_distinct(syn.forests_["Income"], X)
    i = int(np.argmax(donors["size"][leaves[:, 0]]))  # the record in the largest leaf
    node = leaves[i, 0]
    s = slice(donors["start"][node], donors["start"][node] + donors["size"][node])
    b, w = donors["values"][s], donors["counts"][s].astype(float)
    lo, hi, h = (a[0] for a in leaf_kernels(donors, np.array([node]), 0.0))
    assert hi > lo and b.size >= 5
    z, point = draw_smoothed(donors, np.repeat(leaves[i:i + 1], 20_000, axis=0),
                             np.random.default_rng(3))
    assert not point.any() and z.min() >= lo and z.max() <= hi
    ks = stats.kstest(z, lambda x: _mixture_cdf(np.atleast_1d(x), b, w, h, lo, hi))
    assert ks.pvalue > 1e-3, ks
    # the release's rounding keeps the support; a leaf of one value is a point mass, counted
    zr, _ = draw_smoothed(donors, leaves[i:i + 1].repeat(50, 0), np.random.default_rng(4),
                          integer=True)
    assert np.all(zr == np.round(zr)) and zr.min() >= lo and zr.max() <= hi
    one = {k: v.copy() for k, v in donors.items()}
    one["values"][s] = b[0]
    zp, pp = draw_smoothed(one, leaves[i:i + 1].repeat(10, 0), np.random.default_rng(5))
    assert pp.all() and np.all(zp == b[0])


def test_release_draws_new_values_and_reports_point_masses(ce):
    df, _ = ce
    plain = _fitted(ce, smoothing=False).synthesize(2, random_seed=2)
    smooth = _fitted(ce).synthesize(2, random_seed=2)
    for c in ("Income", "Expenditure"):
        donor_share = np.mean([d[c].isin(df[c]).mean() for d in smooth])
        assert np.mean([d[c].isin(df[c]).mean() for d in plain]) == 1.0  # donors' values
        # smoothed: a value equals a confidential one only from a one-value leaf or by rounding
        assert donor_share <= smooth.extra["smoothing_point_mass"][c] + 0.05, (c, donor_share)
        assert smooth[0][c].between(df[c].min(), df[c].max()).all()
    assert smooth.extra["smoothed"] == ["Income", "Expenditure"]
    assert smooth[0].dtypes.equals(df.dtypes)  # an integer column stays integer
    assert smooth[0]["Tenure"].isin(df["Tenure"]).all()  # categorical: not smoothed
    again = _fitted(ce).synthesize(2, random_seed=2)
    pd.testing.assert_frame_equal(again[1], smooth[1])
    # only the listed column is smoothed
    one = _fitted(ce, smoothing=["Income"]).synthesize(1, random_seed=2)
    assert one[0]["Expenditure"].isin(df["Expenditure"]).all()
    assert one.extra["smoothed"] == ["Income"]


def test_bad_settings_are_refused_before_any_forest(ce):
    df, schema = ce
    fit = dict(schema=schema, synthesized=["Income", "Tenure"])
    with pytest.raises(ValidationError, match="needs min_samples_leaf >= 2") as e:
        RandomForestSynthesizer(n_trees=3, smoothing=True).fit(df, **fit)
    assert e.value.code == "INVALID_ARGUMENT"
    with pytest.raises(ValidationError, match="'Tenure' is categorical; kernel smoothing"):
        RandomForestSynthesizer(n_trees=3, min_samples_leaf=3, smoothing=["Tenure"]).fit(df, **fit)
    with pytest.raises(ValidationError, match="'Age' is not synthesized"):
        RandomForestSynthesizer(n_trees=3, min_samples_leaf=3, smoothing=["Age"]).fit(df, **fit)
    with pytest.raises(ValidationError, match="smoothing must be True or False or a sequence"):
        RandomForestSynthesizer(n_trees=3, min_samples_leaf=3, smoothing="Income").fit(df, **fit)
    # categorical only: nothing to smooth, nothing refused
    RandomForestSynthesizer(n_trees=3, smoothing=True).fit(df, schema=schema,
                                                           synthesized=["Tenure"])


def test_plugin_refusal_names_the_smoothing(ce):
    df, _ = ce
    with pytest.raises(NotSupportedError, match="smoothed: a candidate value moves") as e:
        _fitted(ce).plugin_likelihood(df)
    assert e.value.code == "MODEL_UNSUITED"


def test_save_load_and_command_line(ce, tmp_path):
    import bayes_risk.cli as cli
    from bayes_risk.data import SyntheticData

    syn = _fitted(ce, smoothing=["Income"])
    loaded = load_model(syn.save(tmp_path / "m"))
    assert loaded.smoothing == ["Income"]
    for x, y in zip(syn.synthesize(2, random_seed=9), loaded.synthesize(2, random_seed=9),
                    strict=True):
        pd.testing.assert_frame_equal(x, y)
    df, _ = ce
    path = tmp_path / "ce.csv"
    df.to_csv(path, index=False)
    assert cli.main(["synthesize", str(path), "--method", "rf", "--synthesize", "Income",
                     "Tenure", "--categorical", "Urban", "Marital", "Tenure", "--n-trees", "10",
                     "--min-samples-leaf", "5", "--smoothing", "--random-seed", "4", "--quiet",
                     "--out", str(tmp_path / "rel")]) == 0
    rel = SyntheticData.load(tmp_path / "rel")
    assert rel.settings["smoothing"] is True and rel.extra["smoothed"] == ["Income"]
    assert rel[0]["Income"].isin(df["Income"]).mean() < 0.2
    assert cli.main(["synthesize", str(path), "--method", "rf", "--synthesize", "Income",
                     "--n-trees", "5", "--smoothing", "--out", str(tmp_path / "bad")]) == 2
    assert not (tmp_path / "bad").exists()
