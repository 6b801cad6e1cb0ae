"""Tree plug-in likelihoods of synthesizers fitted to data with missing values (methods, Tree
synthesizers: missing values): a categorical column's missing value is a level of its own, a
numeric column is drawn in two steps (its missingness kind from the kind tree, then, for the
records whose kind is "observed", its value from the value tree fitted on the observed records),
and a numeric predictor with missing values routes through its filled value and its kind.

The plug-in's incremental bookkeeping is checked against direct counting on the fitted trees:
for every candidate, record ``i``'s values are changed, every donor is routed afresh through
every tree, each node's donors and synthetic values are counted and the node's likelihood is
computed in full (Pólya urn / multinomial, or the plug-in's kernel Monte Carlo estimator with the
same bootstrap streams). The intruder's view: the record's missing values are held at their
kind; a candidate that changes a kind has probability 0.
"""

from __future__ import annotations

import warnings
from collections import Counter

import numpy as np
import pandas as pd
import pytest
from _exact import polya_brute
from _shared import missing_table

from bayes_risk.attribute import attribute_risk
from bayes_risk.data import infer_schema
from bayes_risk.models import CARTSynthesizer, RandomForestSynthesizer
from bayes_risk.models.trees.missing import kind_codes
from bayes_risk.models.trees.plugins.plugin_cart import CARTPlugin
from bayes_risk.models.trees.plugins.plugin_rf import RFPlugin


def _steps(plugin, col, vals, zv, sel):
    """The draws of ``col`` as synthesis makes them: ``(tree key, tree, donor rows, donor
    values, synthetic rows, synthetic values)`` for the kind step and the value step."""
    syn = plugin.synthesizer
    every = np.arange(len(plugin.original))
    lay = syn.missing_.get(col)
    if lay is None or lay["type"] != "two_step":
        return [(col, syn.trees_[col], every, vals[col], sel, zv[col][sel])]
    kd = kind_codes(vals[col], lay["codes"])
    kz = kind_codes(zv[col][sel], lay["codes"])
    return [
        (("kind", col), syn.missing_trees_[col], every, kd.astype(float), sel, kz.astype(float)),
        (col, syn.trees_[col], every[kd == 0], vals[col][kd == 0], sel[kz == 0],
         zv[col][sel][kz == 0]),
    ]


def _brute(plugin, i, enc, zs):
    """``[m]`` log p(Z_l | record i's values := enc), every node counted from scratch."""
    syn = plugin.synthesizer
    vals = {c: v.copy() for c, v in plugin._vals.items()}
    for c, v in enc.items():
        vals[c][i] = v
    sel = np.flatnonzero(syn.records_)
    out = np.zeros(len(zs))
    for li, z in enumerate(zs):
        zv = plugin._values(z.reset_index(drop=True))
        for ci, col in enumerate(syn.visit_sequence_):
            for key, tree, drows, dvals, srows, svals in _steps(plugin, col, vals, zv, sel):
                X, codes = plugin._design(key, vals, drows)
                tnode, _ = tree.route(X, codes, "climb", None)
                paths = [set(plugin._path(key, int(u))) for u in tnode]
                X, codes = plugin._design(key, zv, srows)
                snode, _ = tree.route(X, codes, "climb", None)
                for u in np.unique(snode):
                    u = int(u)
                    members = [k for k in range(drows.size) if u in paths[k]]
                    if key in plugin._smoothed:
                        # the plug-in's estimator on the node's donors in tree order, i last
                        pos = plugin._pos[key]
                        others = sorted((k for k in members if drows[k] != i),
                                        key=lambda k: pos[drows[k]])
                        extra = [dvals[k] for k in members if drows[k] == i]
                        zu, zw = (a.astype(float) for a in np.unique(svals[snode == u],
                                                                    return_counts=True))
                        v, _ = plugin._node_loglik(
                            (li, ci, u), col, dvals[others],
                            np.array(extra) if extra else None, zu, zw)
                        out[li] += v[0]
                    else:
                        out[li] += polya_brute(Counter(dvals[members].tolist()),
                                          Counter(svals[snode == u].tolist()), plugin._uniform)
        if not syn.records_[i]:
            out[li] += plugin._released_as_is({c: v[i] for c, v in zv.items()},
                                              {c: np.array([v]) for c, v in enc.items()},
                                              list(enc))[0]
    return out


@pytest.fixture(scope="module")
def data():
    df = missing_table(160, seed=4)
    return df, infer_schema(df, missing_codes={"b": [-8]})


def _records(df):
    """One record of each pattern: b observed, b empty, b = -8, a missing."""
    b = df["b"]
    return [int(np.flatnonzero(b.notna() & (b != -8) & df["a"].notna())[0]),
            int(np.flatnonzero(b.isna() & df["a"].notna())[0]),
            int(np.flatnonzero((b == -8) & df["a"].notna())[0]),
            int(np.flatnonzero(df["a"].isna() & b.notna() & (b != -8))[0])]


def _candidates(df, i):
    """Candidates over a and b: the truth first; b's other values observed ones (some shared
    with other records) when the truth is observed, else held (NaN: the engine's masked code)."""
    a0, b0 = df.loc[i, "a"], df.loc[i, "b"]
    obs = df["b"][df["b"].notna() & (df["b"] != -8)].to_numpy()
    missing_b = bool(np.isnan(b0) or b0 == -8)
    bs = [np.nan] if missing_b else [b0, obs[0], obs[1], float(np.median(obs)) + 0.05]
    as_ = [a0] if pd.isna(a0) else [a0] + [x for x in ("x", "y", "z") if x != a0]
    rows = [(x, y) for x in as_ for y in bs]
    return pd.DataFrame(rows, columns=["a", "b"]).astype({"a": object, "b": float})


def _held(plugin, i, cands):
    """The candidates as the plug-in evaluates them: encoded, missing values at their kind."""
    enc = plugin._candidate_values_many(np.array([i]), cands)
    off = plugin._hold_missing(np.array([i]), len(cands), enc, list(cands.columns))
    assert not off.any()
    return enc


@pytest.mark.parametrize("donor", ["bayes_bootstrap", "uniform"])
@pytest.mark.parametrize("partial", [False, True])
def test_cart_missing_values_match_direct_counting(data, donor, partial):
    """Pólya trees: a (missing level), b (kind tree + value tree), d (predictors a and b with
    their missing values); candidates re-route the record through b's and d's trees."""
    df, schema = data
    records = np.arange(0, len(df), 3) if partial else None
    cart = CARTSynthesizer(min_leaf=3, donor=donor).fit(
        df, schema=schema, synthesized=["a", "b", "d"], records=records, random_seed=1)
    zs = cart.synthesize(2, random_seed=2)
    plugin = CARTPlugin(cart, df)
    seen = []
    for i in _records(df):
        cands = _candidates(df, i)
        got = plugin.plugin_loglik(i, cands, zs)
        enc = _held(plugin, i, cands)
        ref = np.stack([_brute(plugin, i, {c: enc[c][g] for c in cands.columns}, zs)
                        for g in range(len(cands))], axis=1)
        np.testing.assert_array_equal(np.isneginf(got), np.isneginf(ref - ref[:, :1]))
        fin = np.isfinite(got)
        np.testing.assert_allclose(got[fin], (ref - ref[:, :1])[fin], rtol=1e-10, atol=1e-9)
        seen.append(got[fin])
    seen = np.concatenate(seen)
    assert (seen != 0).any()  # candidates do move the likelihood


def test_cart_smoothed_two_step_column_matches_direct_counting(data):
    """Kernel-smoothed b: its kind step is a Pólya urn, its value step the kernel Monte Carlo
    estimator over the observed donors (same bootstrap streams)."""
    df, schema = data
    cart = CARTSynthesizer(min_leaf=4, smoothing=["b"]).fit(
        df, schema=schema, synthesized=["a", "b", "d"], random_seed=3)
    zs = cart.synthesize(2, random_seed=4)
    plugin = CARTPlugin(cart, df, n_bootstrap=50, random_seed=5)
    for i in _records(df):
        cands = _candidates(df, i)
        got = plugin.plugin_loglik(i, cands, zs)
        enc = _held(plugin, i, cands)
        ref = np.stack([_brute(plugin, i, {c: enc[c][g] for c in cands.columns}, zs)
                        for g in range(len(cands))], axis=1)
        np.testing.assert_array_equal(np.isfinite(got), np.isfinite(ref))
        fin = np.isfinite(got)
        # a constant common to the candidates apart: differences from the truth (candidate 0)
        np.testing.assert_allclose((got - got[:, :1])[fin], (ref - ref[:, :1])[fin],
                                   rtol=1e-9, atol=1e-8)


def test_candidates_that_change_a_kind_have_probability_zero(data):
    """The intruder knows which values are missing and how: making b missing (observed truth),
    giving an observed b to a record whose b is -8, the code -8 to a record whose b is empty, or
    a's missing level to an observed a: -inf."""
    df, schema = data
    cart = CARTSynthesizer(min_leaf=3).fit(df, schema=schema, synthesized=["a", "b"],
                                           random_seed=1)
    zs = cart.synthesize(1, random_seed=2)
    plugin = CARTPlugin(cart, df)
    i_obs, i_empty, i_code, _ = _records(df)
    b0 = df.loc[i_obs, "b"]
    got = plugin.plugin_loglik(i_obs, pd.DataFrame({"b": [b0, np.nan, -8.0]}), zs)
    assert got[0, 0] == 0 and np.isneginf(got[0, 1:]).all()
    got = plugin.plugin_loglik(i_code, pd.DataFrame({"b": [np.nan, -8.0, 40.0]}), zs)
    assert np.all(got[0, :2] == 0) and np.isneginf(got[0, 2])
    got = plugin.plugin_loglik(i_empty, pd.DataFrame({"b": [np.nan, -8.0]}), zs)
    assert got[0, 0] == 0 and np.isneginf(got[0, 1])  # empty is not the code -8
    a0 = df.loc[i_obs, "a"]
    got = plugin.plugin_loglik(i_obs, pd.DataFrame({"a": [a0, None]}, dtype=object), zs)
    assert np.isneginf(got[0, 1])


@pytest.mark.parametrize("procedure, options", [
    ("A", {}),
    ("B", {"probabilities": "leaf_dirichlet", "oob_only": True, "min_oob_trees": 5}),
])
@pytest.mark.slow
def test_rf_missing_level_and_predictor_kinds_match_direct_counting(data, procedure, options):
    """Random forests: a's missing level is a class of its own; b (empty and -8) enters as its
    filled value and kind. The plug-in's incremental counts equal the plug-in's own formula
    recomputed from scratch with the forests' leaf counts rebuilt from the changed data."""
    df, schema = data
    rf = RandomForestSynthesizer(n_trees=15, random_seed=2, procedure=procedure,
                                 **options).fit(df, schema=schema, synthesized=["a", "c"])
    zs = rf.synthesize(2, random_seed=3)
    plugin = RFPlugin(rf, df)
    for i in _records(df):
        a0 = df.loc[i, "a"]
        as_ = [a0] if pd.isna(a0) else [a0] + [x for x in ("x", "y", "z") if x != a0]
        cands = pd.DataFrame([(x, y) for x in as_ for y in ("p", "q")],
                             columns=["a", "c"], dtype=object)
        first = cands.index[cands["c"] == df.loc[i, "c"]][0]
        cands = pd.concat([cands.loc[[first]], cands.drop(index=first)], ignore_index=True)
        got = plugin.plugin_loglik(i, cands, zs)
        enc = _held(plugin, i, cands)
        ref = np.stack([_rf_brute(plugin, i, {c: enc[c][g] for c in cands.columns}, zs)
                        for g in range(len(cands))], axis=1)
        np.testing.assert_array_equal(np.isfinite(got), np.isfinite(ref))
        fin = np.isfinite(got)
        np.testing.assert_allclose(got[fin], ref[fin], rtol=1e-9, atol=1e-9)


def _rf_brute(plugin, i, enc, zs):
    """Σ_columns Σ_replaced r log p_r(z_r) with the leaf class counts of every tree rebuilt
    from the changed data (in-bag multiplicities and splits fixed); an emptied leaf uses its
    parent's counts (the plug-in's rule)."""
    syn = plugin.synthesizer
    vals = {c: v.copy() for c, v in plugin._vals.items()}
    for c, v in enc.items():
        vals[c][i] = v
    out = np.zeros(len(zs))
    for li, z in enumerate(zs):
        zv = plugin._values(z.reset_index(drop=True))
        for col in syn.visit_sequence_:
            # (column, None): the column's one forest (no group_by)
            F, train = plugin._forests[(col, None)], plugin._train[(col, None)]
            y = vals[col][train].astype(int)
            N = np.zeros(F.counts.shape)
            node = F.apply(plugin._inputs(col, vals, train)).T.astype(np.int64)  # (B, n_train)
            yy = np.broadcast_to(y, node.shape)
            while (node >= 0).any():  # each in-bag record counts in its leaf and its ancestors
                ok = node >= 0
                np.add.at(N, (node[ok], yy[ok]), F.inbag[ok])
                node = np.where(ok, F.parent[np.maximum(node, 0)], -1)
            sl = F.apply(plugin._syn_matrix(col, zv, vals, train))  # (n_train, B)
            cnt = N[sl]
            empty = cnt.sum(axis=2) == 0
            cnt[empty] = N[F.parent[sl[empty]]]
            q = plugin._q(cnt.reshape(-1, F.d)).reshape(cnt.shape)
            zc = zv[col][train].astype(int)
            qz = np.take_along_axis(q, zc[:, None, None], axis=2)[:, :, 0]
            p = (qz * F.valid.T).sum(axis=1) / F.n_valid
            with np.errstate(divide="ignore"):
                out[li] += np.log(p).sum()
    return out


def test_rf_brute_reproduces_the_plugin_base():
    """Guard of the RF reference: for the truth it equals the plug-in's cached base sums."""
    df = missing_table(80, seed=6)
    schema = infer_schema(df, missing_codes={"b": [-8]})
    rf = RandomForestSynthesizer(n_trees=8, random_seed=1).fit(df, schema=schema,
                                                               synthesized=["a"])
    zs = rf.synthesize(1, random_seed=2)
    plugin = RFPlugin(rf, df)
    st = plugin._dataset_state(0, zs[0])
    assert _rf_brute(plugin, 0, {}, zs)[0] == pytest.approx(st[("a", None)]["base_sum"],
                                                            rel=1e-12)


def test_attribute_risk_end_to_end_with_missing_values(data):
    """Records with missing values are evaluated (no refusal): G counts the observed values'
    candidates only, risks lie in [0, 1] and the settings record the intruder's view."""
    df, schema = data
    cart = CARTSynthesizer(min_leaf=5).fit(df, schema=schema, synthesized=["a", "b"],
                                           random_seed=1)
    zs = cart.synthesize(2, random_seed=2)
    recs = _records(df)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = attribute_risk(df, zs, model=CARTPlugin(cart, df), records=recs, progressbar=False)
    assert res.settings["missing_values"] == "held_at_kind"
    g = res.records["G"]
    n_b = g[recs[3]]  # a held: b's grid only (one-variable candidates)
    assert n_b > 1
    assert g[recs[0]] == n_b + 2  # the truth, a's 2 other levels, b's other grid points
    assert g[recs[1]] == 3 and g[recs[2]] == 3  # b held: a's levels only
    p = res.records["p_true"].to_numpy()
    assert np.all((p >= 0) & (p <= 1)) and np.isfinite(p).all()
    # the held value is the truth in every candidate
    cs = res.candidates[1]
    assert np.isnan(cs.values[:, list(cs.columns).index("b")]).all()


# log-likelihoods of three records' candidates on complete data, as float.hex, recorded with the
# plug-ins as they were before missing values were supported (commit f2f06bb): complete data
# must take the code paths they always took. Compared within 1e-13 relative, not bit for bit:
# the sums of a vectorised log or exp differ in their last bits with the CPU's vector width
# (2e-15 relative on an AMD EPYC without AVX-512, issue 92), and a path that changed would move
# them by far more than that
_COMPLETE_REFERENCE = {
    "cart": [
        ['0x0.0p+0', '-0x1.ac26a8ec9382ep-2', '-0x1.844851e5f5116p+0', '-0x1.0e4cfbea84edep-2',
         '-0x1.36d0e85344a28p+0', '-0x1.36d0e85344a28p+0', '-0x1.36d0e85344a28p+0',
         '-0x1.36d0e85344a28p+0', '0x0.0p+0', '0x0.0p+0', '0x0.0p+0', '0x0.0p+0', '0x0.0p+0',
         '0x0.0p+0', '0x0.0p+0', '0x0.0p+0', '0x0.0p+0', '0x0.0p+0'],
        ['0x0.0p+0', '-0x1.b1d10670aae9ap+0', '-0x1.a1b0eb420bdadp+1', '-0x1.40b512eb53d60p+1',
         '-0x1.48bd929aff108p+0', '-0x1.48bd929aff108p+0', '-0x1.48bd929aff108p+0',
         '-0x1.48bd929aff108p+0', '-inf', '-inf', '-inf', '-inf', '-inf', '-inf', '-inf',
         '-inf', '-inf', '-inf'],
        ['0x0.0p+0', '-0x1.fc8b7f138bdebp+0', '-0x1.fc8b7f138bdf0p-1', '-0x1.9f323ecbf984ep+0',
         '-0x1.5471d4593b9a8p+0', '-0x1.5471d4593b9a8p+0', '-0x1.5471d4593b9a8p+0',
         '-0x1.5471d4593b9a8p+0', '-inf', '-inf', '-inf', '-inf', '-inf', '-inf', '-inf',
         '-inf', '-inf', '-inf'],
    ],
    "smoothed": [
        ['-0x1.7cbbb638a3b12p+7', '-0x1.7d700c7a98947p+7', '-0x1.8014c9a90c9f4p+7',
         '-0x1.8014c9a90c9f4p+7', '-0x1.7ca7a42b72771p+7', '-0x1.7cb07d9f30b5ep+7',
         '-0x1.7cb5dc97c1982p+7', '-0x1.7cb8ffa1a6c14p+7', '-0x1.7cbac2ac75aa5p+7',
         '-0x1.7cbc349f79a7cp+7', '-0x1.7cbc73abfce36p+7', '-0x1.7cbc91e4e30c2p+7',
         '-0x1.7cbc9fd0bb7bbp+7', '-0x1.7cbca5fa2cc53p+7'],
        ['-0x1.4f6e7e0c3d70ep+7', '-0x1.500c57b93f7f6p+7', '-0x1.52d220191ec6ap+7',
         '-0x1.52d220191ec6ap+7', '-inf', '-0x1.4c36bf8f9c2c6p+7', '-0x1.4d21f58e98c42p+7',
         '-0x1.4df9c4c7c05d2p+7', '-0x1.4ebdf42341ec8p+7', '-0x1.500b9e2f998aap+7',
         '-0x1.5095da57ede67p+7', '-0x1.510e04f9dcbe0p+7', '-0x1.51753857ff0a8p+7',
         '-0x1.51ccca74ad1c1p+7'],
        ['-0x1.b18e81149f006p+7', '-0x1.b22c5ac1a10eep+7', '-0x1.b4f2232180562p+7',
         '-0x1.b4f2232180562p+7', '-0x1.b1bf38f723706p+7', '-0x1.b1b6921179807p+7',
         '-0x1.b1ad5ec269ae6p+7', '-0x1.b1a39f52271f0p+7', '-0x1.b19954cb8d10bp+7',
         '-0x1.b183270848072p+7', '-0x1.b1774a90ec998p+7', '-0x1.b16af0c33a062p+7',
         '-0x1.b15e1ff87fd16p+7', '-0x1.b150dfe7b7206p+7'],
    ],
    "rf": [
        ['-0x1.186b335b53fb1p+8', '-0x1.18aec69a4e9c4p+8', '-0x1.18ccfda23ccc9p+8',
         '-0x1.18ccfda23ccc9p+8', '-0x1.18c58d2491804p+8', '-0x1.1a7e945fe570ap+8',
         '-0x1.1a4fe7bfc1a78p+8', '-0x1.19a8d9fbfa3bep+8'],
        ['-0x1.186b335b53fb1p+8', '-0x1.1733cdac3afffp+8', '-0x1.194dc5382ebdcp+8',
         '-0x1.194dc5382ebdcp+8', '-0x1.186b335b53fb1p+8', '-0x1.18c9b08734a0cp+8',
         '-0x1.18cdb89ccac59p+8', '-0x1.1975db50f03ebp+8'],
        ['-0x1.186b335b53fb1p+8', '-0x1.18934dd222eb6p+8', '-0x1.188f7ba7475e0p+8',
         '-0x1.188f7ba7475e0p+8', '-0x1.18a1252b960f9p+8', '-0x1.18ada2aeb5890p+8',
         '-0x1.18ada2aeb5890p+8', '-0x1.182d605c20ad6p+8'],
    ],
}


def test_complete_data_results_are_those_of_before():
    from bayes_risk.data import make_ce_like

    ce = make_ce_like(150, random_seed=7)
    sc = infer_schema(ce, categorical=["Urban", "Marital", "Tenure"])
    cart = CARTSynthesizer(min_leaf=4).fit(ce, schema=sc, synthesized=["Tenure", "Income",
                                                                      "Marital"], random_seed=1)
    cs = CARTSynthesizer(min_leaf=6, smoothing=["Income"]).fit(
        ce, schema=sc, synthesized=["Tenure", "Income"], random_seed=3)
    rf = RandomForestSynthesizer(n_trees=10, random_seed=5).fit(
        ce, schema=sc, synthesized=["Tenure", "Marital"])
    cases = {
        "cart": (CARTPlugin(cart, ce), cart.synthesize(2, random_seed=2)),
        "smoothed": (CARTPlugin(cs, ce, n_bootstrap=40, random_seed=8),
                     cs.synthesize(2, random_seed=4)),
        "rf": (RFPlugin(rf, ce), rf.synthesize(2, random_seed=6)),
    }
    for name, (plugin, release) in cases.items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = attribute_risk(ce, release, model=plugin, records=[0, 3, 11], progressbar=False)
        assert res.settings["missing_values"] == "held_at_kind"
        for got, ref in zip(res.loglik, _COMPLETE_REFERENCE[name], strict=True):
            np.testing.assert_allclose(got, [float.fromhex(x) for x in ref], rtol=1e-13,
                                       atol=0, err_msg=name)


def test_candidate_blocks_hold_a_missing_truth():
    """A missing true value gives its column one candidate, the truth itself (NaN for a
    numeric column, code -1 for a categorical one, whatever the rule), and is not reported as a
    collapsed grid."""
    from bayes_risk.attribute.candidates import build_candidates, columns_without_alternative

    df = pd.DataFrame({"a": ["x", "y", "z", None], "b": [1.0, 2.5, np.nan, 4.0]}, dtype=object)
    df["b"] = df["b"].astype(float)
    schema = infer_schema(df, categorical=["a"], synthesized=["a", "b"])
    cs = build_candidates({"a": 1, "b": np.nan}, ["a", "b"], schema, "full")
    assert cs.values.shape == (3, 2) and np.isnan(cs.values[:, 1]).all()
    assert cs.values[cs.g0, 0] == 1
    cs2 = build_candidates({"a": -1, "b": 2.5}, ["a", "b"], schema, "one-variable")
    assert np.all(cs2.values[:, 0] == -1) and cs2.values[cs2.g0, 1] == 2.5
    assert cs2.size == 11  # b's default grid only
    cs3 = build_candidates({"a": -1, "b": 2.5}, ["a", "b"], schema, "k-different:2")
    assert np.all(cs3.values[:, 0] == -1)  # was the last level "z" (code 2)
    assert columns_without_alternative([cs, cs2], [True, False]) == {}


def test_full_candidates_with_a_missing_categorical_truth(data):
    """candidates="full" over categorical columns holds a's missing value (the product fast
    path cannot index code -1): G is c's number of levels."""
    df, schema = data
    cart = CARTSynthesizer(min_leaf=5).fit(df, schema=schema, synthesized=["a", "c"],
                                           random_seed=1)
    zs = cart.synthesize(2, random_seed=2)
    i = _records(df)[3]  # a missing
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = attribute_risk(df, zs, model=CARTPlugin(cart, df), records=[0, i], candidates="full",
                             progressbar=False)
    g = res.records["G"]
    assert g[i] == 2 and g[0] == 6
    assert res.records["p_true"].between(0, 1).all()


def test_low_risk_intruder_refuses_a_missing_truth(data):
    """scenario='empty' compares the record's synthetic values with its truth: a missing truth
    is refused by name (it would quietly get probability 0); complete records still run."""
    from bayes_risk.exceptions import ValidationError

    df, schema = data
    cart = CARTSynthesizer(min_leaf=5).fit(df, schema=schema, synthesized=["a", "b"],
                                           random_seed=1)
    zs = cart.synthesize(2, random_seed=2)
    i_obs, i_empty, _, _ = _records(df)
    with pytest.raises(ValidationError, match=r"scenario='empty': column 'b' is missing in "
                                              rf"record {i_empty}"):
        attribute_risk(df, zs, model=CARTPlugin(cart, df), records=[i_obs, i_empty],
                       scenario="empty")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = attribute_risk(df, zs, model=CARTPlugin(cart, df), records=[i_obs], scenario="empty")
    assert res.records["p_true"].between(0, 1).all()


@pytest.mark.parametrize("donor", ["bayes_bootstrap", "uniform"])
@pytest.mark.slow
def test_kind_then_value_is_the_samplers_distribution(donor):
    """Enumeration on a one-leaf CART of b = [1, 1, 2, empty, -8]: the probability of each of
    the 56 vectors of outcome counts (1, 2, empty, -8) over the 5 synthetic records is the
    multinomial coefficient times the kind urn times the value urn over the records whose kind
    is "observed" — the two terms the plug-in adds. They sum to 1, the frequencies of 8000
    syntheses agree with them (chi-square over bins expected >= 5, p > 0.001 at fixed seeds),
    and the plug-in's change for a candidate value is the change of this probability."""
    from itertools import product

    from scipy.special import gammaln
    from scipy.stats import chisquare

    df = pd.DataFrame({"b": [1.0, 1.0, 2.0, np.nan, -8.0]})
    schema = infer_schema(df, missing_codes={"b": [-8]}, synthesized=["b"])
    cart = CARTSynthesizer(min_leaf=1, donor=donor).fit(df, schema=schema, random_seed=1)
    assert cart.trees_["b"].n_nodes == 1 and cart.missing_trees_["b"].n_nodes == 1
    uniform = donor == "uniform"

    def log_seq(n1, n2, ne, nc, d1=2, d2=1):  # one sequence with these counts
        kinds = polya_brute(Counter({0: d1 + d2, 1: 1, 2: 1}),
                       Counter({0: n1 + n2, 1: ne, 2: nc}), uniform)
        values = polya_brute(Counter({1.0: d1, 2.0: d2}), Counter({1.0: n1, 2.0: n2}), uniform)
        return kinds + values

    vecs = [v for v in product(range(6), repeat=4) if sum(v) == 5]
    assert len(vecs) == 56
    logp = np.array([gammaln(6) - gammaln(np.array(v) + 1).sum() + log_seq(*v) for v in vecs])
    assert np.exp(logp).sum() == pytest.approx(1.0, abs=1e-12)
    m = 8000
    zs = cart.synthesize(m, random_seed=2)
    seen = Counter()
    for z in zs:
        b = z["b"].to_numpy()
        seen[(int((b == 1).sum()), int((b == 2).sum()), int(np.isnan(b).sum()),
              int((b == -8).sum()))] += 1
    assert sum(seen.values()) == m  # every synthetic value is one of the four outcomes
    expected = m * np.exp(logp)
    observed = np.array([seen[v] for v in vecs], dtype=float)
    big = expected >= 5
    f_obs, f_exp = observed[big], expected[big]
    if (~big).any():  # the rare vectors in one bin
        f_obs = np.append(f_obs, observed[~big].sum())
        f_exp = np.append(f_exp, expected[~big].sum())
    assert chisquare(f_obs, f_exp).pvalue > 1e-3
    # the plug-in: record 0's value 1 -> 2 changes log p(Z) as the formula says
    plugin = CARTPlugin(cart, df)
    b = zs[0]["b"].to_numpy()
    v = (int((b == 1).sum()), int((b == 2).sum()), int(np.isnan(b).sum()), int((b == -8).sum()))
    got = plugin.plugin_loglik(0, pd.DataFrame({"b": [1.0, 2.0]}), [zs[0]])
    assert got[0, 1] - got[0, 0] == pytest.approx(log_seq(*v, d1=1, d2=2) - log_seq(*v),
                                                  abs=1e-12)


def test_empirical_prior_with_missing_values(data):
    """The empirical prior: a's part counts the other records' levels; b's kernel density uses
    the other records whose b is observed (its missing values are not values), and a record
    whose b is held has no b part (the same in every candidate). Without this every weight was
    NaN as soon as one record's b was missing."""
    from scipy.special import logsumexp as lse

    from bayes_risk.attribute.priors import silverman_bandwidth

    df, schema = data
    cart = CARTSynthesizer(min_leaf=5).fit(df, schema=schema, synthesized=["a", "b"],
                                           random_seed=1)
    zs = cart.synthesize(1, random_seed=2)
    i_obs, i_empty, _, _ = _records(df)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = attribute_risk(df, zs, model=CARTPlugin(cart, df), records=[i_obs, i_empty],
                             prior="empirical:1", progressbar=False)
    b = df["b"].where(df["b"] != -8).to_numpy(dtype=float)  # the engine's view: -8 is missing
    h = silverman_bandwidth(b[~np.isnan(b)])
    for k, i in enumerate([i_obs, i_empty]):
        cs = res.candidates[k]
        ja, jb = list(cs.columns).index("a"), list(cs.columns).index("b")
        levels = list(schema["a"].levels)
        codes = df["a"].map({v: n for n, v in enumerate(levels)}).to_numpy()
        others = np.arange(len(df)) != i
        lw = np.log([np.sum((codes == c) & others) + 1.0 for c in cs.values[:, ja]])
        if not np.isnan(cs.values[0, jb]):
            o = b[others & ~np.isnan(b)]
            zk = (cs.values[:, jb][:, None] - o[None, :]) / h
            lw = lw + lse(-0.5 * zk * zk, axis=1)
        want = lw - lse(lw)
        np.testing.assert_allclose(res.logprior[k], want, rtol=1e-10, atol=1e-12)


def test_product_candidates_marginal_of_a_held_value_is_one(data):
    """With the full (product) candidate set, the marginal posterior of a held missing value is
    1 (it is the value of every candidate), not 0 (NaN compared unequal)."""
    df, schema = data
    cart = CARTSynthesizer(min_leaf=5).fit(df, schema=schema, synthesized=["a", "b"],
                                           random_seed=1)
    zs = cart.synthesize(1, random_seed=2)
    i_obs, i_empty, _, _ = _records(df)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = attribute_risk(df, zs, model=CARTPlugin(cart, df), records=[i_obs, i_empty],
                             candidates="full", progressbar=False)
    rec = res.records
    assert rec.loc[i_empty, "marg_b"] == pytest.approx(1.0, abs=1e-12)
    assert rec.loc[i_empty, "G"] == 3
    assert 0 <= rec.loc[i_obs, "marg_b"] <= 1 and rec.loc[i_obs, "G"] == 3 * 11


def test_distance_summaries_refuse_a_held_missing_value(data):
    """file_summary kinds that measure distances to the truth refuse a record whose value is
    held missing (naming it) instead of returning NaN or 0 for it."""
    from bayes_risk.attribute.file_summary import file_summary
    from bayes_risk.exceptions import ValidationError

    df, schema = data
    cart = CARTSynthesizer(min_leaf=5).fit(df, schema=schema, synthesized=["b"], random_seed=1)
    zs = cart.synthesize(1, random_seed=2)
    i_obs, i_empty, _, _ = _records(df)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = attribute_risk(df, zs, model=CARTPlugin(cart, df), records=[i_obs, i_empty],
                             progressbar=False)
        one = attribute_risk(df, zs, model=CARTPlugin(cart, df), records=[i_obs], progressbar=False)
    with pytest.raises(ValidationError, match=rf"column 'b' is missing in record {i_empty}"):
        file_summary(res, kind="largest_value")
    assert file_summary(one, kind="largest_value")["n_records"] == 1


@pytest.mark.parametrize("slab", [1, 10**6])
@pytest.mark.parametrize("options", [dict(partial=True), dict(smoothing=["b"])])
def test_plugin_loglik_many_is_each_records_plugin_loglik(data, monkeypatch, slab, options):
    """The batched likelihood of records of every missing-value pattern (issue 70): each record's
    ``[m, G]`` block equals its own ``plugin_loglik`` bit for bit, in slabs of one record or all,
    and direct counting (Pólya trees) to 1e-10."""
    from bayes_risk.models.trees.plugins import plugin_cart

    df, schema = data
    monkeypatch.setattr(plugin_cart, "_SLAB_ROWS", slab)
    recs = np.arange(0, len(df), 3) if options.get("partial") else None
    cart = CARTSynthesizer(min_leaf=3, smoothing=options.get("smoothing", False)).fit(
        df, schema=schema, synthesized=["a", "b", "d"], records=recs, random_seed=1)
    zs = cart.synthesize(2, random_seed=2)
    plugin = CARTPlugin(cart, df, n_bootstrap=20, random_seed=5)
    # the same two candidates for every record: b held or moved, a kept or changed
    picks = [i for i in range(len(df)) if pd.notna(df.loc[i, "a"])][:4] + _records(df)
    obs = df["b"][df["b"].notna() & (df["b"] != -8)].to_numpy()
    cands = pd.concat([pd.DataFrame({"a": [df.loc[i, "a"], "x" if df.loc[i, "a"] != "x" else "y"],
                                     "b": [df.loc[i, "b"], obs[0]]}) for i in picks],
                      ignore_index=True).astype({"a": object, "b": float})
    ll, se = plugin.plugin_loglik_many(picks, cands, zs)
    assert ll.shape == se.shape == (len(picks), 2, 2)
    for k, i in enumerate(picks):
        one = cands.iloc[2 * k:2 * k + 2].reset_index(drop=True)
        ref, ref_se = CARTPlugin(cart, df, n_bootstrap=20, random_seed=5).plugin_loglik(
            i, one, zs, return_se=True)
        np.testing.assert_array_equal(ll[k], ref)
        np.testing.assert_array_equal(se[k], ref_se)
        if slab == 1 and not options.get("smoothing"):  # the brute count once
            enc = _held(plugin, i, one) if not np.isneginf(ref).any() else None
            if enc is not None:
                brute = np.stack([_brute(plugin, i, {c: enc[c][g] for c in one.columns}, zs)
                                  for g in range(2)], axis=1)
                fin = np.isfinite(ll[k])
                np.testing.assert_allclose(ll[k][fin], (brute - brute[:, :1])[fin], rtol=1e-10,
                                           atol=1e-9)
