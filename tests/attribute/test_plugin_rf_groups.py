"""Random-forest plug-in likelihood for forests grown within groups (Caiola & Reiter 2010 §5):
a hand-computable case, the synthesizer's own probabilities for the truth, a from-scratch
recomputation with a pooled fallback forest, and the refusal for a synthesized grouping column.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from bayes_risk.attribute import attribute_risk
from bayes_risk.data import make_acs_like
from bayes_risk.exceptions import NotSupportedError
from bayes_risk.models.trees.forest_leaves import leaf_probabilities
from bayes_risk.models.trees.plugins.plugin_rf import RFPlugin
from bayes_risk.models.trees.random_forest import RandomForestSynthesizer
from bayes_risk.models.trees.seqtree import column_codes


def _codes(df, schema, c):
    return column_codes(df, schema, c) if schema[c].is_categorical else df[c].to_numpy(float)


_SAMPLES: dict[int, tuple[object, list[np.ndarray]]] = {}


def _samples(rf) -> list[np.ndarray]:
    # scikit-learn regenerates the bootstrap indices on every access; the forest is kept in the
    # cache so that its id cannot be reused by another one
    if id(rf) not in _SAMPLES:
        _SAMPLES[id(rf)] = (rf, list(rf.estimators_samples_))
    return _SAMPLES[id(rf)][1]


def test_hand_computable_group_forests():
    """A constant predictor: every tree of a group's forest is one leaf holding its bootstrap
    sample, so a record of group g synthesizes from p_g(c) = mean_b (n_bc + α)/(n_b + dα) over
    the trees of g's forest. A candidate for record i (group A) changes group A's forest only."""
    y = pd.Categorical(list("AABCABBCAB"), categories=list("ABC"))
    g = pd.Categorical(list("uuuuuvvvvv"), categories=["u", "v"])
    df = pd.DataFrame({"x": np.zeros(10), "g": g, "y": y})
    syn = RandomForestSynthesizer(n_trees=3, probabilities="leaf_dirichlet", alpha=0.5,
                                  group_by="g", min_group_size=2).fit(
        df, synthesized=["y"], random_seed=3)
    assert sorted(syn.group_forests_["y"]) == [0, 1] and syn.group_fallback_["y"] == []
    z = syn.synthesize(2, random_seed=4)
    codes = y.codes.astype(int)
    groups = g.codes.astype(int)
    cands = pd.DataFrame({"y": list("ABC")})
    i = 2  # in group u (code 0)
    got = RFPlugin(syn, df).plugin_loglik(i, cands, list(z))
    for c in range(3):
        yc = codes.copy()
        yc[i] = c
        want = np.zeros(len(z))
        for code in (0, 1):
            rows = np.flatnonzero(groups == code)
            rf = syn.group_forests_["y"][code]
            assert all(e.tree_.node_count == 1 for e in rf.estimators_)
            counts = np.array([np.bincount(yc[rows][s], minlength=3) for s in _samples(rf)])
            p = ((counts + 0.5) / (counts.sum(axis=1, keepdims=True) + 1.5)).mean(axis=0)
            for li, d in enumerate(z):
                zc = pd.Categorical(d["y"], categories=list("ABC")).codes[rows]
                want[li] += np.log(p[zc]).sum()
        np.testing.assert_allclose(got[:, c], want, rtol=0, atol=1e-12)


@pytest.fixture(scope="module")
def acs():
    return make_acs_like(60, random_seed=11)[["SEX", "AGE", "RACE", "MAR", "EDUC"]]


def _grouped(acs, **kw):
    syn = RandomForestSynthesizer(n_trees=8, group_by="EDUC", min_group_size=9, **kw).fit(
        acs, synthesized=["MAR", "RACE", "SEX"], random_seed=3)
    # some levels have a forest of their own, others fall back to the pooled forest
    assert syn.group_forests_["MAR"] and syn.group_fallback_["MAR"]
    return syn


def _forests(syn, col, gcodes, T):
    """(forest, training rows, synthesized rows) of ``col`` as the synthesizer uses them."""
    own = sorted(syn.group_forests_[col])
    out = [(syn.group_forests_[col][c], T[gcodes[T] == c], T[gcodes[T] == c]) for c in own]
    out.append((syn.forests_[col], T, T[~np.isin(gcodes[T], own)]))
    return out


def _brute(syn, original, i, cand, z) -> float:
    """log p(Z | y_i := cand), every forest's class counts rebuilt from its bootstrap samples."""
    sc = syn.schema_
    mod = original.copy()
    for c, v in cand.items():
        mod.loc[i, c] = v
    mv = {c: _codes(mod, sc, c) for c in sc.names}
    zv = {c: _codes(z, sc, c) for c in sc.names}
    gcodes = mv["EDUC"].astype(int)
    total, done = 0.0, []
    for col in syn.visit_sequence_:
        T = np.flatnonzero(syn.records_[col])
        preds = syn.predictors_[col]
        d = sc[col].n_levels
        for rf, tr_rows, s_rows in _forests(syn, col, gcodes, T):
            if s_rows.size == 0:
                continue
            Xtr = np.ascontiguousarray(np.column_stack([mv[p] for p in preds])[tr_rows],
                                       dtype=np.float32)
            ytr = mv[col][tr_rows].astype(int)
            Xs = np.ascontiguousarray(
                np.column_stack([(zv if p in done else mv)[p] for p in preds])[s_rows],
                dtype=np.float32)
            zc = zv[col][s_rows].astype(int)
            spos = np.searchsorted(tr_rows, s_rows)  # synthesized rows among training rows
            num = np.zeros(s_rows.size)
            ntree = np.zeros(s_rows.size)
            for est, s in zip(rf.estimators_, _samples(rf), strict=True):
                tr = est.tree_
                node_counts = np.asarray(tr.decision_path(Xtr[s]).T @ np.eye(d)[ytr[s]])
                parent = np.full(tr.node_count, -1)
                inner = np.flatnonzero(tr.children_left >= 0)
                parent[tr.children_left[inner]] = inner
                parent[tr.children_right[inner]] = inner
                leaf = tr.apply(Xs)
                cnt = node_counts[leaf]
                empty = cnt.sum(axis=1) == 0
                cnt[empty] = node_counts[parent[leaf[empty]]]
                q = leaf_probabilities(cnt, syn.probabilities, syn.alpha)[np.arange(zc.size), zc]
                use = ~np.isin(spos, s) if syn.oob_only else np.ones(zc.size, bool)
                num += np.where(use, q, 0.0)
                ntree += use
            with np.errstate(divide="ignore"):
                total += float(np.sum(np.log(num / ntree)))
        done.append(col)
    return total


@pytest.mark.parametrize("probabilities", ["vote", "leaf_dirichlet"])
def test_truth_equals_the_synthesizers_group_probabilities(acs, probabilities):
    """For the truth, Σ log p_r(z_r) with the synthesizer's own probabilities: each record by
    the forest of its group, the levels without one by the pooled forest."""
    syn = _grouped(acs, probabilities=probabilities)
    z = syn.synthesize(2, random_seed=5)
    got = RFPlugin(syn, acs).plugin_loglik(0, acs.iloc[[0]][["MAR"]], list(z))[:, 0]
    for li, d in enumerate(z):
        zc = {c: _codes(d, syn.schema_, c) for c in syn.schema_.names}
        ref, done = 0.0, []
        for col in syn.visit_sequence_:
            sel = np.flatnonzero(syn.records_[col])
            X = np.column_stack([(zc[p] if p in done else syn.state_.table.values[p])[sel]
                                 for p in syn.predictors_[col]]).astype(np.float32)
            gcur = syn.state_.table.values["EDUC"][sel].astype(int)
            for code in np.unique(gcur):
                rows = np.flatnonzero(gcur == code)
                tpos = syn.state_.groups.positions[col].get(int(code))
                ti = tpos[rows] if tpos is not None else rows
                P = syn.predict_proba(col, X[rows], ti, group=int(code))
                P /= P.sum(axis=1, keepdims=True)
                ref += np.log(P[np.arange(rows.size), zc[col][sel][rows].astype(int)]).sum()
            done.append(col)
        assert got[li] == pytest.approx(ref, rel=1e-6)


@pytest.mark.parametrize("oob_only", [False, True])
def test_group_forests_equal_brute_force(acs, oob_only):
    syn = _grouped(acs, oob_only=oob_only, min_oob_trees=1)
    z = list(syn.synthesize(2, random_seed=3))
    plugin = RFPlugin(syn, acs)
    gcodes = syn.state_.table.values["EDUC"].astype(int)
    own = set(syn.group_forests_["MAR"])
    # a record of a level with its own forest and one of a fallback level
    picks = [int(np.flatnonzero(np.isin(gcodes, list(own)))[0]),
             int(np.flatnonzero(~np.isin(gcodes, list(own)))[0])]
    for i in picks:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = attribute_risk(acs, z, model=plugin, records=[i], progressbar=False)
        cp = res.candidate_posteriors(i)
        got = cp["loglik"].to_numpy()
        brute = np.array([
            sum(_brute(syn, acs, i, {"MAR": r.MAR, "RACE": r.RACE, "SEX": r.SEX}, d) for d in z)
            for r in cp.itertuples()
        ])
        fin = np.isfinite(brute)
        np.testing.assert_array_equal(np.isfinite(got), fin)
        np.testing.assert_allclose(got[fin], brute[fin], rtol=0, atol=1e-9)
        assert fin[res.candidates[0].g0]


def test_synthesized_grouping_column_is_refused(acs):
    syn = RandomForestSynthesizer(n_trees=4, group_by={"RACE": "MAR"}, min_group_size=5,
                                  visit_sequence=["MAR", "RACE"]).fit(
        acs, synthesized=["MAR", "RACE"], random_seed=1)
    with pytest.raises(NotSupportedError, match="no multiplicity"):
        RFPlugin(syn, acs)
