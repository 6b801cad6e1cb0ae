"""Rebuilding a tree synthesizer from a release's manifest (``rebuild_synthesizer``): the
refitted synthesizer reproduces the release exactly, so its plug-in likelihood is the one of the
synthesizer that made the release."""

from __future__ import annotations

import numpy as np
import pytest

from bayes_risk.attribute import attribute_risk
from bayes_risk.data import infer_schema, make_ce_like, read_synthetic
from bayes_risk.exceptions import ValidationError
from bayes_risk.models import (
    CARTPlugin,
    CARTSynthesizer,
    RandomForestSynthesizer,
    RFPlugin,
    rebuild_synthesizer,
)

CATS = ["Urban", "Marital", "Tenure"]


@pytest.fixture(scope="module")
def ce():
    return make_ce_like(300, random_seed=4)


def _schema(df):
    return infer_schema(df, categorical=CATS)


def _same_trees(a, b):
    for col, t in a.trees_.items():
        u = b.trees_[col]
        assert np.array_equal(t.left, u.left) and np.array_equal(t.y_sorted, u.y_sorted)


def test_cart_release_round_trip_through_disk(ce, tmp_path):
    cart = CARTSynthesizer(min_leaf=5, smoothing=["Income"]).fit(
        ce, schema=_schema(ce), synthesized=["Tenure", "Income"], records=np.arange(0, 300, 2),
        random_seed=11,
    )
    syn = cart.synthesize(3, random_seed=12)
    syn.save(tmp_path / "rel")
    rel = read_synthetic(tmp_path / "rel")
    again = rebuild_synthesizer(ce, rel)
    _same_trees(cart, again)
    np.testing.assert_array_equal(again.records_, cart.records_)
    # the plug-in likelihood of the rebuilt synthesizer is that of the original one
    kw = dict(records=[0, 2, 5], random_seed=3, progressbar=False)
    a = attribute_risk(ce, syn, model=CARTPlugin(cart, ce, random_seed=1), **kw)
    b = attribute_risk(ce, rel, model=CARTPlugin(again, ce, random_seed=1), **kw)
    np.testing.assert_array_equal(a.records["p_true"], b.records["p_true"])


def test_rf_release_with_per_column_records(ce):
    recs = {"Tenure": np.arange(0, 300, 3), "Marital": np.arange(1, 300, 2)}
    rf = RandomForestSynthesizer(n_trees=20).fit(
        ce, schema=_schema(ce), synthesized=["Marital", "Tenure"], records=recs, random_seed=[7, 1]
    )
    syn = rf.synthesize(2, random_seed=8)
    again = rebuild_synthesizer(ce, syn)
    assert again.visit_sequence_ == rf.visit_sequence_
    for c in rf.records_:
        np.testing.assert_array_equal(again.records_[c], rf.records_[c])
    res = attribute_risk(ce, syn, model=RFPlugin(again, ce), records=[0, 3], progressbar=False)
    assert "APPROXIMATE_NONPARAMETRIC" in res.warnings


def test_rebuild_refuses_what_it_cannot_reproduce(ce):
    schema = _schema(ce)
    rng_fit = CARTSynthesizer().fit(ce, schema=schema, synthesized=["Tenure"],
                                    random_seed=np.random.default_rng(1))
    with pytest.raises(ValidationError, match="replayable seed"):
        rebuild_synthesizer(ce, rng_fit.synthesize(1, random_seed=2))
    cart = CARTSynthesizer().fit(ce, schema=schema, synthesized=["Tenure", "Income"], random_seed=1)
    syn = cart.synthesize(2, random_seed=2)
    edited = ce.copy()
    edited.loc[5, "Income"] = edited["Income"].max() * 3  # not the table of the release
    with pytest.raises(ValidationError, match="does not reproduce") as e:
        rebuild_synthesizer(edited, syn)
    assert e.value.code == "RELEASE_NOT_REPRODUCED"
    with pytest.raises(ValidationError, match="300 records"):
        rebuild_synthesizer(ce.iloc[:10], syn)
    with pytest.raises(ValidationError, match="SyntheticData"):
        rebuild_synthesizer(ce, list(syn))
    pmm_like = type(syn)(datasets=list(syn), method="dpmpm")
    with pytest.raises(ValidationError, match="not a registered synthesizer declaring a "
                       "plug-in likelihood") as err:
        rebuild_synthesizer(ce, pmm_like)
    assert err.value.code == "NOT_REBUILDABLE"
    # a Python caller is told the argument, not the command and its option
    assert str(err.value).endswith("a Bayesian model is fitted and passed as model.")
