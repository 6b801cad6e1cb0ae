"""The vectorised Pólya-urn bookkeeping of the CART plug-in (``trees/cart_polya.py``) against a
straightforward reference: one ``Counter`` of donors and synthetic values per node, candidate and
dataset, each node's likelihood recomputed in full and the true donors' value subtracted (the
incremental computation as it was first written). Small trees with single-donor leaves (emptied
by a candidate), tied values, values absent from the data, partial synthesis, re-routing through
later trees and several synthesized columns, for both donor rules."""

from __future__ import annotations

import itertools
from collections import Counter
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from bayes_risk.data import infer_schema, make_ce_like

cart_mod = pytest.importorskip("bayes_risk.models.trees.cart")
from _exact import polya_brute  # noqa: E402

from bayes_risk.models.trees.cart_polya import PolyaTables  # noqa: E402
from bayes_risk.models.trees.plugins.plugin_cart import CARTPlugin  # noqa: E402


def _reference(plugin: CARTPlugin, i: int, cand: dict, columns: list, datasets: list):
    syn = plugin.synthesizer
    G = len(cand[columns[0]])
    out = np.zeros((len(datasets), G))
    sel = np.flatnonzero(syn.records_)
    for li, z in enumerate(datasets):
        zv = plugin._values(z.reset_index(drop=True))
        for col in syn.visit_sequence_:
            tree = syn.trees_[col]
            X, codes = plugin._design(col, zv, sel)
            node, _ = tree.route(X, codes, "climb", None)
            s_cnt = {int(u): Counter(zv[col][sel[node == u]].tolist()) for u in np.unique(node)}
            donors = {
                u: Counter(tree.y_sorted[tree.node_start[u] : tree.node_stop[u]].tolist())
                for u in s_cnt
            }
            base = {u: polya_brute(donors[u], s_cnt[u], plugin._uniform) for u in s_cnt}
            pos = int(plugin._pos[col][i])
            old_nodes = np.flatnonzero((tree.node_start <= pos) & (pos < tree.node_stop)).tolist()
            new_paths = None
            if any(p in columns for p in syn.predictors_[col]):
                Xc, cc = plugin._design(col, cand, np.arange(G))
                leaf, _ = tree.route(Xc, cc, "climb", None)
                new_paths = [plugin._path(col, int(u)) for u in leaf]
            old_v = plugin._vals[col][i]
            for g in range(G):
                new_v = cand[col][g]
                new_nodes = new_paths[g] if new_paths is not None else old_nodes
                for u in set(old_nodes) | set(new_nodes):
                    if u not in s_cnt:
                        continue
                    d = Counter(donors[u])
                    if u in old_nodes:
                        d[old_v] -= 1
                    if u in new_nodes:
                        d[new_v] += 1
                    d = Counter({k: v for k, v in d.items() if v > 0})
                    with np.errstate(invalid="ignore"):
                        out[li, g] += polya_brute(d, s_cnt[u], plugin._uniform) - base[u]
        if not syn.records_[i]:
            zi = {c: v[i] for c, v in zv.items()}
            out[li] += plugin._released_as_is(zi, cand, columns)
    return out


def _assert_same(new: np.ndarray, ref: np.ndarray) -> None:
    for f in (np.isnan, np.isposinf, np.isneginf):
        np.testing.assert_array_equal(f(new), f(ref))
    fin = np.isfinite(ref)
    np.testing.assert_allclose(new[fin], ref[fin], rtol=1e-12, atol=1e-11)


def _candidates(df: pd.DataFrame, grid: dict) -> pd.DataFrame:
    rows = list(itertools.product(*grid.values()))
    return pd.DataFrame(rows, columns=list(grid)).astype({c: df[c].dtype for c in grid})


CATEGORICAL = ["Urban", "Marital", "Tenure"]


@pytest.mark.parametrize("donor", ["bayes_bootstrap", "uniform"])
@pytest.mark.parametrize("partial", [False, True])
def test_categorical_columns_match_reference(donor, partial):
    # min_leaf=1: leaves whose only donor is the record (emptied by a candidate); Marital's tree
    # has Tenure among its predictors, so Tenure candidates re-route the record there
    ce = make_ce_like(60, random_seed=5)
    sc = infer_schema(ce, categorical=CATEGORICAL)
    records = np.arange(0, 60, 2) if partial else None
    cart = cart_mod.CARTSynthesizer(min_leaf=1, donor=donor).fit(
        ce, schema=sc, synthesized=["Tenure", "Marital"], records=records, random_seed=1
    )
    zs = cart.synthesize(3, random_seed=2)
    plugin = CARTPlugin(cart, ce)
    grid = {"Tenure": sorted(ce.Tenure.unique()), "Marital": sorted(ce.Marital.unique())}
    cands = _candidates(ce, grid)
    seen = []
    for i in range(0, 60, 5):
        vals = plugin._candidate_values_many(np.array([i]), cands)
        slow = plugin._values(plugin._candidate_rows(i, cands))
        for c in ce.columns:
            np.testing.assert_array_equal(vals[c], slow[c])
        new, _ = plugin._loglik(i, vals, list(cands.columns), zs)
        ref = _reference(plugin, i, vals, list(cands.columns), zs)
        _assert_same(new, ref)
        seen.append(ref.ravel())
        one = cands[["Marital"]].drop_duplicates().reset_index(drop=True)
        vals = plugin._candidate_values_many(np.array([i]), one)
        new, _ = plugin._loglik(i, vals, ["Marital"], zs)
        _assert_same(new, _reference(plugin, i, vals, ["Marital"], zs))
    seen = np.concatenate(seen)
    assert np.isneginf(seen).any() and (np.isfinite(seen) & (seen != 0)).any()


@pytest.mark.parametrize("donor", ["bayes_bootstrap", "uniform"])
def test_numeric_columns_with_ties_match_reference(donor):
    # coarse values: many donors tie; candidates include values no record has, and Income's
    # tree uses Expenditure as a predictor
    ce = make_ce_like(70, random_seed=8)
    ce["Expenditure"] = (ce["Expenditure"] / 5000).round() * 5000
    ce["Income"] = (ce["Income"] / 20000).round() * 20000
    sc = infer_schema(ce, categorical=CATEGORICAL)
    cart = cart_mod.CARTSynthesizer(min_leaf=2, donor=donor).fit(
        ce, schema=sc, synthesized=["Expenditure", "Income", "Tenure"], random_seed=3
    )
    zs = cart.synthesize(2, random_seed=4)
    plugin = CARTPlugin(cart, ce)
    e, inc = sorted(ce.Expenditure.unique()), sorted(ce.Income.unique())
    grid = {"Expenditure": [e[0], e[-1], 12345.0], "Income": [inc[0], inc[1], -7.5]}
    cands = _candidates(ce, grid)
    seen = []
    for i in range(0, 70, 9):
        for cols in (["Expenditure", "Income"], ["Income"], ["Expenditure"]):
            c = cands[cols].drop_duplicates().reset_index(drop=True)
            vals = plugin._candidate_values_many(np.array([i]), c)
            new, _ = plugin._loglik(i, vals, cols, zs)
            ref = _reference(plugin, i, vals, cols, zs)
            _assert_same(new, ref)
            seen.append(ref.ravel())
    seen = np.concatenate(seen)
    assert np.isneginf(seen).any() and (np.isfinite(seen) & (seen != 0)).any()  # both covered


def test_single_record_leaf_emptied():
    # a categorical value carried by one record only, synthesized from a one-donor tree:
    # moving that donor away leaves its synthetic copies without donor (-inf)
    df = pd.DataFrame({"v": pd.Series(list("AAABBC"))})
    sc = infer_schema(df, categorical=["v"])
    cart = cart_mod.CARTSynthesizer(min_leaf=1).fit(df, schema=sc, synthesized=["v"],
                                                     random_seed=1)
    z = pd.DataFrame({"v": pd.Series(list("ABCCAB"))})
    plugin = CARTPlugin(cart, df)
    cands = pd.DataFrame({"v": ["A", "B", "C"]})
    vals = plugin._candidate_values_many(np.array([5]), cands)
    new, _ = plugin._loglik(5, vals, ["v"], [z])
    ref = _reference(plugin, 5, vals, ["v"], [z])
    _assert_same(new, ref)
    assert np.isneginf(new[0, :2]).all() and new[0, 2] == 0.0


def test_candidate_values_match_the_data_frame_path():
    # the pandas-free encoding equals encoding the candidate rows as a data frame, also for
    # narrow numeric dtypes (float32 rounds, int16 overflows: the careful path), values absent
    # from the data, missing values and labelled categories
    ce = make_ce_like(80, random_seed=3)
    ce["Expenditure"] = ce["Expenditure"].astype("float32")
    ce["Tenure"] = ce["Tenure"].astype("int16")
    ce["Marital"] = pd.Categorical(ce["Marital"].map(lambda v: f"m{v}"))
    sc = infer_schema(ce, categorical=["Urban", "Marital"])
    cart = cart_mod.CARTSynthesizer().fit(
        ce, schema=sc, synthesized=["Tenure", "Income", "Expenditure", "Marital"], random_seed=1
    )
    plugin = CARTPlugin(cart, ce)
    cands = pd.DataFrame({
        "Expenditure": [1.1, 2.3, 1e5], "Income": [1.0, 2.5, np.nan], "Tenure": [1, 2, 300],
        "Marital": ["m1", "m3", "m2"],
    })
    for i in (0, 5):
        fast = plugin._candidate_values_many(np.array([i]), cands)
        slow = plugin._values(plugin._candidate_rows(i, cands))
        for c in ce.columns:
            np.testing.assert_array_equal(fast[c], slow[c])


def test_donor_paths_are_the_nodes_holding_each_position():
    # issue 70: a record's donor path found from its leaf's ancestors equals its definition, the
    # nodes whose donor slice holds the position (compared with all N nodes, which grew as n·N),
    # for every donor position of each tree of a 400-record fit and for a position none holds
    ce = make_ce_like(400, random_seed=2)
    sc = infer_schema(ce, categorical=CATEGORICAL)
    cart = cart_mod.CARTSynthesizer().fit(
        ce, schema=sc, synthesized=["Tenure", "Expenditure", "Income"], random_seed=1)
    plugin = CARTPlugin(cart, ce)
    zs = cart.synthesize(2, random_seed=2)
    tables = plugin._polya_tables(zs)
    assert set(tables) == {"Tenure", "Expenditure", "Income"}
    for tab in tables.values():
        pos = np.concatenate([[-1], np.arange(tab.stop[0] + 1)])
        inside = (tab.start[None, :] <= pos[:, None]) & (pos[:, None] < tab.stop[None, :])
        dense = [np.flatnonzero(row).tolist() for row in inside]
        paths = tab.donor_paths(pos)
        assert paths.shape[1] == max(len(d) for d in dense) > 2
        assert [[u for u in row if u != -2] for row in paths.tolist()] == dense
        assert dense[0] == dense[-1] == []  # -1 and one past the last donor: no node
    # slices that do not nest (a child outside its parent's) are refused, never mis-pathed
    tree = cart.trees_["Tenure"]
    par = plugin._parent["Tenure"]
    bad = SimpleNamespace(**{k: getattr(tree, k) for k in ("n_nodes", "y_sorted")},
                          node_start=tree.node_start.copy(), node_stop=tree.node_stop.copy())
    bad.node_stop[tree.left[0]] += 1
    with pytest.raises(RuntimeError, match="do not nest"):
        PolyaTables(bad, par, [np.zeros(1, dtype=np.int64)], [tree.y_sorted[:1]], False)
