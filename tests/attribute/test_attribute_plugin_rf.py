"""Random-forest plug-in likelihood for attribute risk (SPEC §3.5.4): a hand-computable forest,
agreement with the synthesizer's own synthesis probabilities, the incremental bookkeeping
against a from-scratch recomputation (vote / leaf_dirichlet, procedures A / B, out-of-bag), the
result-level APPROXIMATE_NONPARAMETRIC label and input errors."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from bayes_risk.attribute import attribute_risk
from bayes_risk.data import make_acs_like
from bayes_risk.exceptions import NotFittedError, ValidationError
from bayes_risk.models.trees.forest_leaves import leaf_probabilities
from bayes_risk.models.trees.plugins.plugin_rf import RFPlugin
from bayes_risk.models.trees.random_forest import RandomForestSynthesizer
from bayes_risk.models.trees.seqtree import column_codes


def _codes(df, schema, c):
    return column_codes(df, schema, c) if schema[c].is_categorical else df[c].to_numpy(float)


def _brute(syn: RandomForestSynthesizer, original: pd.DataFrame, i: int, cand: dict,
           z: pd.DataFrame) -> float:
    """log p(Z | y_i := cand) recomputed from scratch with the forests fixed.

    Every tree's class counts are rebuilt from its bootstrap sample (scikit-learn's
    ``estimators_samples_``, with multiplicities) with record i's values replaced; node counts
    come from scikit-learn's ``decision_path``, and a leaf left without in-bag records uses its
    parent's counts.
    """
    sc = syn.schema_
    mod = original.copy()
    for c, v in cand.items():
        mod.loc[i, c] = v
    n = len(mod)
    mv = {c: _codes(mod, sc, c) for c in sc.names}
    zv = {c: _codes(z, sc, c) for c in sc.names}
    total = 0.0
    done: list[str] = []
    for col in syn.visit_sequence_:
        T = np.flatnonzero(syn.records_[col])
        preds = syn.predictors_[col]
        rf = syn.forests_[col]
        d = sc[col].n_levels
        Xtr = np.ascontiguousarray(np.column_stack([mv[p] for p in preds])[T], dtype=np.float32)
        ytr = mv[col][T].astype(int)
        Xs = np.ascontiguousarray(
            np.column_stack([(zv if p in done else mv)[p] for p in preds])[T], dtype=np.float32
        )
        zc = zv[col][T].astype(int)
        num = np.zeros(T.size)
        ntree = np.zeros(T.size)
        for est, s in zip(rf.estimators_, _samples(rf), strict=True):
            tr = est.tree_
            path = tr.decision_path(Xtr[s])  # (in-bag draws, nodes), sparse
            node_counts = np.asarray(path.T @ np.eye(d)[ytr[s]])  # class counts of every node
            parent = np.full(tr.node_count, -1)
            inner = np.flatnonzero(tr.children_left >= 0)
            parent[tr.children_left[inner]] = inner
            parent[tr.children_right[inner]] = inner
            leaf = tr.apply(Xs)
            cnt = node_counts[leaf]
            empty = cnt.sum(axis=1) == 0
            cnt[empty] = node_counts[parent[leaf[empty]]]
            q = leaf_probabilities(cnt, syn.probabilities, syn.alpha)[np.arange(T.size), zc]
            use = ~np.isin(np.arange(T.size), s) if syn.oob_only else np.ones(T.size, bool)
            num += np.where(use, q, 0.0)
            ntree += use
        with np.errstate(divide="ignore"):
            total += float(np.sum(np.log(num / ntree)))
        kept = np.setdiff1d(np.arange(n), T)  # not replaced: released as they are
        if np.any(zv[col][kept] != mv[col][kept]):
            total = -np.inf
        done.append(col)
    return total


_SAMPLES: dict[int, tuple[object, list[np.ndarray]]] = {}


def _samples(rf) -> list[np.ndarray]:
    # scikit-learn regenerates the bootstrap indices on every access; the forest is kept in the
    # cache so that its id cannot be reused by another one
    if id(rf) not in _SAMPLES:
        _SAMPLES[id(rf)] = (rf, list(rf.estimators_samples_))
    return _SAMPLES[id(rf)][1]


@pytest.fixture(scope="module")
def acs():
    return make_acs_like(40, random_seed=11)[["SEX", "AGE", "RACE", "MAR", "EDUC"]]


def test_hand_computable_single_leaf_forest():
    """A constant predictor: every tree is one leaf holding its bootstrap sample, so
    p(c) = mean_b (n_bc + α)/(n_b + dα) for every record, with n_bc the class counts of tree
    b's sample; a candidate for record i moves i's multiplicity to the candidate class."""
    y = pd.Categorical(list("AAABBCAB"), categories=list("ABC"))
    df = pd.DataFrame({"x": np.zeros(8), "y": y})
    syn = RandomForestSynthesizer(n_trees=3, probabilities="leaf_dirichlet", alpha=0.5).fit(
        df, synthesized=["y"], random_seed=3
    )
    z = syn.synthesize(2, random_seed=4)
    rf = syn.forests_["y"]
    assert all(e.tree_.node_count == 1 for e in rf.estimators_)
    codes = y.codes.astype(int)
    cands = pd.DataFrame({"y": list("ABC")})
    got = RFPlugin(syn, df).plugin_loglik(2, cands, list(z))
    for g, c in enumerate(range(3)):
        yc = codes.copy()
        yc[2] = c
        counts = np.array([np.bincount(yc[s], minlength=3) for s in rf.estimators_samples_])
        p = ((counts + 0.5) / (counts.sum(axis=1, keepdims=True) + 1.5)).mean(axis=0)
        for li, d in enumerate(z):
            zc = pd.Categorical(d["y"], categories=list("ABC")).codes
            assert got[li, g] == pytest.approx(np.log(p[zc]).sum(), abs=1e-12)


@pytest.mark.parametrize("probabilities", ["vote", "leaf_dirichlet"])
def test_truth_equals_the_synthesizers_probabilities(acs, probabilities):
    """For the truth, the plug-in log-likelihood is Σ log p_r(z_r) with the synthesizer's own
    synthesis probabilities (predict_proba, float32 tables)."""
    syn = RandomForestSynthesizer(n_trees=15, probabilities=probabilities).fit(
        acs, synthesized=["MAR", "RACE", "SEX"], random_seed=4
    )
    z = syn.synthesize(2, random_seed=5)
    got = RFPlugin(syn, acs).plugin_loglik(0, acs.iloc[[0]][["MAR"]], list(z))[:, 0]
    for li, d in enumerate(z):
        zc = {c: _codes(d, syn.schema_, c) for c in syn.schema_.names}
        ref, done = 0.0, []
        for col in syn.visit_sequence_:
            sel = np.flatnonzero(syn.records_[col])
            X = np.column_stack([(zc[p] if p in done else syn.state_.table.values[p])[sel]
                                 for p in syn.predictors_[col]]).astype(np.float32)
            P = syn.predict_proba(col, X, np.arange(sel.size))
            P /= P.sum(axis=1, keepdims=True)
            ref += np.log(P[np.arange(sel.size), zc[col][sel].astype(int)]).sum()
            done.append(col)
        assert got[li] == pytest.approx(ref, rel=1e-6)


@pytest.mark.parametrize(
    "probabilities, alpha, procedure, oob_only",
    [
        ("vote", 1.0, "A", False),
        ("leaf_dirichlet", 1.0, "A", True),
        ("vote", 1.0, "B", True),
        ("leaf_dirichlet", 0.0, "B", False),
    ],
)
def test_incremental_equals_brute_force(acs, probabilities, alpha, procedure, oob_only):
    n = len(acs)
    if procedure == "A":  # different replaced records per column
        records = {"MAR": np.arange(0, 30), "RACE": np.arange(n), "SEX": np.arange(8, n)}
    else:
        records = np.arange(0, 34)
    # 12 trees give every record an out-of-bag tree with this seed (no extra batch of 100)
    syn = RandomForestSynthesizer(
        n_trees=12 if oob_only else 8, probabilities=probabilities, alpha=alpha,
        procedure=procedure, oob_only=oob_only, min_oob_trees=1,
    ).fit(acs, synthesized=["MAR", "RACE", "SEX"], records=records, random_seed=3)
    assert max(syn.n_trees_.values()) <= 12
    z = list(syn.synthesize(2, random_seed=3))
    plugin = RFPlugin(syn, acs)
    n_inf = 0
    # the product set changes a record's class and its predictors together
    full = "one-variable" if oob_only else "full"
    for i, cands in [(0, "one-variable"), (5, full), (36, "one-variable")]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = attribute_risk(acs, z, model=plugin, records=[i], candidates=cands,
                                 progressbar=False)
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
        n_inf += int((~fin).sum())
    if probabilities == "vote" and procedure == "A":
        assert n_inf > 0  # classes that win no tree: legitimate -inf


def test_approximation_label_is_a_result_warning_not_a_record_flag(acs):
    syn = RandomForestSynthesizer(n_trees=10).fit(acs, synthesized=["MAR", "SEX"], random_seed=1)
    z = syn.synthesize(2, random_seed=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = attribute_risk(acs, z, model=RFPlugin(syn, acs), records=range(10), progressbar=False)
    assert "APPROXIMATE_NONPARAMETRIC" in res.warnings
    assert "APPROXIMATE_NONPARAMETRIC" in res.to_dict()["warnings"]
    # a label of the method, not of a record: the unflagged summary keeps every record
    assert not res.records["flag_codes"].str.contains("APPROXIMATE").any()
    s = res.to_dict()
    assert s["n_flagged"] == 0 and s["unflagged"]["n_records"] == 10


def test_input_errors(acs):
    syn = RandomForestSynthesizer(n_trees=4).fit(acs, synthesized=["MAR"], records=np.arange(30),
                                                 random_seed=1)
    with pytest.raises(ValidationError, match="RandomForestSynthesizer. Got CARTSynthesizer"):
        from bayes_risk.models.trees.cart import CARTSynthesizer

        RFPlugin(CARTSynthesizer().fit(acs, synthesized=["MAR"], random_seed=1), acs)
    with pytest.raises(NotFittedError, match="not fitted"):
        RFPlugin(RandomForestSynthesizer(), acs)
    with pytest.raises(ValidationError, match="original has 39 rows"):
        RFPlugin(syn, acs.iloc[:39])
    with pytest.raises(ValidationError, match="column 'MAR', row 0"):
        RFPlugin(syn, acs.assign(MAR=np.roll(acs["MAR"].to_numpy(), 1)))
    with pytest.raises(ValidationError, match="missing the synthesizer's column"):
        RFPlugin(syn, acs.drop(columns="AGE"))
    plugin = RFPlugin(syn, acs)
    z = syn.synthesize(1, random_seed=2)[0].copy()
    lv = list(acs["MAR"].cat.categories)
    z.loc[35, "MAR"] = lv[(lv.index(acs.loc[35, "MAR"]) + 1) % len(lv)]  # record 35: not replaced
    with pytest.raises(ValidationError, match="record 35, which the synthesizer does not replace"):
        plugin.plugin_loglik(0, acs.iloc[[0]][["MAR"]], [z])
