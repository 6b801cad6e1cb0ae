"""CART plug-in likelihood for attribute risk (SPEC §2.10, §3.4.4): leafcat fixture and a
brute-force recomputation of the incremental bookkeeping (donor moves and re-routing)."""

from __future__ import annotations

import warnings
from collections import Counter

import numpy as np
import pandas as pd
import pytest

from bayes_risk.attribute import attribute_risk
from bayes_risk.data import infer_schema
from bayes_risk.exceptions import ValidationError

cart_mod = pytest.importorskip("bayes_risk.models.cart")
from bayes_risk.attribute.plugin import CARTPlugin, _polya  # noqa: E402


def test_leafcat_fixture():
    cat = pd.CategoricalDtype(["A", "B", "C"])
    df = pd.DataFrame({"v": pd.Series(list("AAAB"), dtype=cat)})
    schema = infer_schema(df, synthesized=["v"])
    cart = cart_mod.CARTSynthesizer().fit(df, schema, random_seed=1)
    z = pd.DataFrame({"v": pd.Series(list("AABB"), dtype=cat)})
    res = attribute_risk(CARTPlugin(cart, df), df, [z], records=[0], progressbar=False)
    cp = res.candidate_posteriors(0)
    assert cp["v"].tolist() == ["A", "B", "C"]
    ll = cp["loglik"].to_numpy()
    # Pólya probabilities 144/5040, 216/5040, 72/5040 (up to the common constant)
    np.testing.assert_allclose(ll - ll[0], np.log([144 / 144, 216 / 144, 72 / 144]), atol=1e-12)
    np.testing.assert_allclose(cp["posterior"], [1 / 3, 0.5, 1 / 6], atol=1e-6)
    assert res.settings["estimator"] == "plugin"


def _brute(plugin: CARTPlugin, i: int, cand: dict, z: pd.DataFrame) -> float:
    """log p(Z | y_i := cand) recomputed from scratch with the fixed tree structure."""
    syn = plugin.synthesizer
    mod = plugin.original.copy()
    for c, v in cand.items():
        mod.loc[i, c] = v
    vals = plugin._values(mod)
    zv = plugin._values(z)
    n = len(mod)
    sel = np.flatnonzero(syn.records_)
    total = 0.0
    for col in syn.visit_sequence_:
        tree = syn.trees_[col]
        Xt, ct = plugin._design(col, vals, np.arange(n))
        tnode, _ = tree.route(Xt, ct, "climb", None)
        paths = [set(plugin._path(col, int(u))) for u in tnode]
        Xs, cs = plugin._design(col, zv, sel)
        snode, _ = tree.route(Xs, cs, "climb", None)
        for u in np.unique(snode):
            donors = Counter(vals[col][r] for r in range(n) if int(u) in paths[r])
            s = Counter(zv[col][sel[snode == u]].tolist())
            total += _polya(donors, s, plugin._uniform)
    return total


@pytest.mark.parametrize("donor", ["bayes_bootstrap", "uniform"])
def test_incremental_equals_brute_force(donor):
    from bayes_risk.data import make_ce_like

    ce = make_ce_like(120, random_seed=3)
    sc = infer_schema(ce, categorical=["Urban", "Marital", "Tenure"])
    cart = cart_mod.CARTSynthesizer(min_leaf=5, donor=donor).fit(
        ce, sc, synthesized=["Tenure", "Marital"], random_seed=1
    )
    syn = cart.synthesize(1, random_seed=2)
    plugin = CARTPlugin(cart, ce)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = attribute_risk(plugin, ce, syn, records=[0, 7], candidates="full", progressbar=False)
    for k, i in enumerate([0, 7]):
        cp = res.candidate_posteriors(i)
        brute = np.array(
            [
                _brute(plugin, i, {"Tenure": r.Tenure, "Marital": r.Marital}, syn[0])
                for r in cp.itertuples()
            ]
        )
        g0 = res.candidates[k].g0
        fin = np.isfinite(brute)
        np.testing.assert_array_equal(fin, np.isfinite(cp["loglik"].to_numpy()))
        np.testing.assert_allclose(
            cp["loglik"].to_numpy()[fin], (brute - brute[g0])[fin], atol=1e-9
        )


def test_plugin_refuses_unsupported_settings():
    from bayes_risk.data import make_ce_like

    ce = make_ce_like(60, random_seed=3)
    sc = infer_schema(ce, categorical=["Urban", "Marital", "Tenure"])
    cart = cart_mod.CARTSynthesizer(smoothing=True).fit(
        ce, sc, synthesized=["Income"], random_seed=1
    )
    with pytest.raises(ValidationError, match="smoothed"):
        CARTPlugin(cart, ce)
    cart2 = cart_mod.CARTSynthesizer().fit(ce, sc, synthesized=["Tenure"], random_seed=1)
    with pytest.raises(ValidationError, match="estimator must be 'auto'"):
        attribute_risk(
            CARTPlugin(cart2, ce),
            ce,
            cart2.synthesize(1, random_seed=1),
            estimator="is",
            progressbar=False,
        )
