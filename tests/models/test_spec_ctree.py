"""synthpop 1.9-2's ``ctree`` method in a SynthesisSpec (``models/trees/spec_ctree.py``):
party's conditional inference tree, checked split by split against party's own trees
(synthpop_reference/ctree_splits.json, made by make_reference.R), its test statistic worked by
hand, the leaf draw, the bootstrap regrowth of ``donor="bayes_bootstrap"``, and the refusals.
The releases are compared with synthpop's in test_synthesis_spec.py
(test_other_methods_match_the_synthpop_releases[ctree])."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from _shared import shared_path
from scipy.stats import chi2

import bayes_risk as br
from bayes_risk.exceptions import NotSupportedError
from bayes_risk.models import CARTSynthesizer, SynthesisSpec
from bayes_risk.models.trees.seqtree import column_codes
from bayes_risk.models.trees.spec_ctree import _quad_test, grow_ctree

REFERENCE = Path(__file__).parent / "synthpop_reference"
CAT = ["Urban", "Marital", "Tenure"]


@pytest.fixture(scope="module")
def ce1000():
    df = br.read_table(shared_path("data", "CEdata.csv")).iloc[:1000].reset_index(drop=True)
    return df, br.infer_schema(df, categorical=CAT, continuous=["Age", "Expenditure", "Income"])


def _canonical(tree, k, names, levels):
    """A tree from node ``k`` as nested tuples; a nominal split by the side holding the first
    level (which side party calls left can flip where two outcome columns rank the levels
    alike: the partition, not the side, is the tree)."""
    s = tree.split[k]
    if s is None:
        return ("leaf", len(tree.rows[k]))
    left, right = tree.left[k], tree.right[k]
    name = names[s.input]
    if s.cutpoint is not None:
        here = (name, float(s.cutpoint))
    else:
        lv = levels[name]
        go = {lv[i] for i in s.left_levels}
        if lv[0] not in go:
            go, left, right = set(lv) - go, right, left
        here = (name, tuple(sorted(go)))
    return (here, _canonical(tree, left, names, levels), _canonical(tree, right, names, levels))


def _canonical_party(nodes, levels):
    """party's pre-order node list (ctree_splits.json) in the same form."""
    it = iter(nodes)

    def walk():
        nd = next(it)
        if "leaf" in nd:
            return ("leaf", int(nd["leaf"]))
        left, right = walk(), walk()
        if "cutpoint" in nd:
            return ((nd["input"], float(nd["cutpoint"])), left, right)
        lv = levels[nd["input"]]
        go = {str(v) for v in np.atleast_1d(nd["left_levels"])}
        if lv[0] not in go:
            go, left, right = set(lv) - go, right, left
        return ((nd["input"], tuple(sorted(go))), left, right)

    return walk()


def test_ctree_grows_partys_tree(ce1000):
    """party 1.3's ctree with syn.ctree's controls (minbucket 5, mincriterion 0.9) on CEdata's
    first 1000 records: every split (input and cutpoint, or the set of levels) and every
    leaf's size equal, for a numeric outcome (Income on Age, Educ, Urban, Marital: 9 splits,
    3 of them by levels) and a categorical one (Tenure on Age, Educ, Marital, Income: 9
    splits, 3 by levels)."""
    df, schema = ce1000
    ref = json.loads((REFERENCE / "ctree_splits.json").read_text())
    assert len(ref) == 2
    for formula, nodes in ref.items():
        target, rhs = formula.split(" ~ ")
        names = rhs.split(" + ")
        levels = {c: [str(v) for v in schema[c].levels] for c in names
                  if schema[c].is_categorical}
        inputs = [column_codes(df, schema, c) if c in levels else df[c].to_numpy(float)
                  for c in names]
        nominal = [len(levels[c]) if c in levels else 0 for c in names]
        if schema[target].is_categorical:
            tree = grow_ctree(inputs, nominal, column_codes(df, schema, target),
                              schema[target].n_levels)
        else:
            tree = grow_ctree(inputs, nominal, df[target].to_numpy(float))
        assert sum(s is not None for s in tree.split) == 9, formula
        assert _canonical(tree, 0, names, levels) == _canonical_party(nodes, levels), formula


def test_quadratic_statistic_by_hand():
    """For a numeric input and outcome, party's quadratic statistic is (n - 1) r^2 (r: Pearson's
    correlation) on one degree of freedom; for a nominal input of d levels and a numeric
    outcome it is (n - 1) times the between-level share of the outcome's sum of squares
    (Kruskal-Wallis form on the values), on d - 1 degrees of freedom. To 1e-10."""
    rng = np.random.default_rng(3)
    n = 50
    x = rng.normal(size=n)
    y = x + rng.normal(size=n)
    H = y[:, None]
    eh, ch = H.mean(axis=0), np.cov(H.T, bias=True).reshape(1, 1)
    q, p = _quad_test(x[:, None], H, eh, ch)
    r = np.corrcoef(x, y)[0, 1]
    assert q == pytest.approx((n - 1) * r**2, rel=1e-10)
    assert p == pytest.approx(chi2.sf((n - 1) * r**2, 1), rel=1e-10)
    g = rng.integers(0, 3, n)
    q, p = _quad_test(np.eye(3)[g], H, eh, ch)
    between = sum((g == k).sum() * (y[g == k].mean() - y.mean()) ** 2 for k in range(3))
    expected = (n - 1) * between / ((y - y.mean()) ** 2).sum()
    assert q == pytest.approx(expected, rel=1e-10)
    assert p == pytest.approx(chi2.sf(expected, 2), rel=1e-10)
    # a constant input: no variance, p = 1 (R's pchisq(0, df = 0, lower.tail = FALSE))
    assert _quad_test(np.ones((n, 1)), H, eh, ch) == (0.0, 1.0)


def test_ctree_draws_a_donor_of_the_leaf(ce1000, tmp_path):
    """syn.ctree: each synthetic record takes the value of a record drawn uniformly from its
    leaf (4 binomial standard errors over 4000 draws); the tree is regrown alike when a saved
    model is loaded; the plug-in likelihood refuses a ctree column (MODEL_UNSUITED)."""
    df, schema = ce1000
    spec = SynthesisSpec(method={"Age": "", "Educ": "", "Income": "ctree"},
                         visit_sequence=["Age", "Educ", "Income"])
    syn = CARTSynthesizer(donor="uniform", spec=spec).fit(df, schema=schema, random_seed=1)
    col = syn.regressions_["Income"]
    assert col.method == "ctree"
    rec = df.iloc[[7]]
    values = {"Age": rec["Age"].to_numpy(float), "Educ": rec["Educ"].to_numpy(float)}
    leaf = col.tree.route([values["Age"], values["Educ"]])[0]
    donors = col.tree.rows[leaf]
    assert len(donors) >= 5
    n = 4000
    rows = col.draw(lambda p: np.repeat(values[p], n), np.random.default_rng(2))
    assert np.isin(rows, donors).all()
    freq = np.bincount(rows, minlength=len(df))[donors] / n
    e = 1 / len(donors)
    assert (np.abs(freq - e) <= 4 * np.sqrt(e * (1 - e) / n)).all()
    back = CARTSynthesizer.load(syn.save(tmp_path / "m"))
    pd.testing.assert_frame_equal(back.synthesize(1, random_seed=3)[0],
                                  syn.synthesize(1, random_seed=3)[0])
    with pytest.raises(NotSupportedError, match=r"'Income': 'ctree'") as e:
        syn.plugin_likelihood(df)
    assert e.value.code == "MODEL_UNSUITED"


def test_bayes_bootstrap_regrows_the_tree_on_a_bootstrap_sample(ce1000):
    """donor="bayes_bootstrap" (synthpop's proper = TRUE, whose ctree stops): each synthetic
    table's tree is grown on a bootstrap sample of the records and its donors are that
    sample's records; with the generator's state replayed, every donor shares the leaf of its
    record in that tree, and the trees of two tables differ."""
    df, schema = ce1000
    spec = SynthesisSpec(method={"Age": "", "Educ": "", "Income": "ctree"},
                         visit_sequence=["Age", "Educ", "Income"])
    col = CARTSynthesizer(spec=spec).fit(df, schema=schema, random_seed=1).regressions_["Income"]
    X = [df["Age"].to_numpy(float), df["Educ"].to_numpy(float)]
    rows = col.draw({"Age": X[0], "Educ": X[1]}.__getitem__, np.random.default_rng(5), True)
    rng = np.random.default_rng(5)
    boot = rng.integers(0, len(df), len(df))
    tree = grow_ctree([x[boot] for x in X], [0, 0], df["Income"].to_numpy(float)[boot])
    leaf = tree.route(X)
    for k in np.unique(leaf):
        assert np.isin(rows[leaf == k], boot[tree.rows[k]]).all()
    other = col.draw({"Age": X[0], "Educ": X[1]}.__getitem__, np.random.default_rng(6), True)
    assert not np.array_equal(rows, other)
    assert [s for s in tree.split if s] != [s for s in col.tree.split if s]


def test_ctree_refuses_missing_values(ce1000):
    """A ctree column, or one of its predictors, with a missing value: MISSING_VALUES."""
    df, _ = ce1000
    d = df.astype({"Age": float})
    d.loc[3, "Age"] = np.nan
    schema = br.infer_schema(d, categorical=CAT, continuous=["Age", "Expenditure", "Income"])
    spec = SynthesisSpec(method={"Age": "", "Educ": "", "Income": "ctree"},
                         visit_sequence=["Age", "Educ", "Income"])
    with pytest.raises(NotSupportedError, match=r"'Income' is drawn by 'ctree' and \['Age'\]") \
            as e:
        CARTSynthesizer(spec=spec).fit(d, schema=schema, random_seed=1)
    assert e.value.code == "MISSING_VALUES"
