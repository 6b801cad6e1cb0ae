"""The compiled routing of the ``"climb"`` rule gives the nodes and flags of the vectorised loop."""

from __future__ import annotations

import numpy as np
import pytest

import bayes_risk.models.trees.seqtree as _trees
from bayes_risk.data import infer_schema, make_ce_like
from bayes_risk.models.trees.cart import CARTSynthesizer


@pytest.mark.parametrize("seed", [0, 1])
def test_compiled_climb_routing_equals_the_vectorised_loop(seed, monkeypatch):
    ce = make_ce_like(400, random_seed=seed)
    schema = infer_schema(ce, categorical=["Urban", "Marital", "Tenure"])
    model = CARTSynthesizer(progressbar=False).fit(
        ce, schema=schema, synthesized=["Marital", "Tenure", "Income", "Expenditure"],
        random_seed=seed)
    rng = np.random.default_rng(seed)
    n_flagged = 0
    for col in model.visit_sequence_:
        tree, preds = model.trees_[col], model.predictors_[col]
        if not preds:
            continue
        # predictors shuffled independently: level combinations no node saw (unroutable records)
        fitted = model.state_.table.values
        X, codes = tree.design.matrix([rng.permutation(fitted[p]) for p in preds])
        monkeypatch.setattr(_trees, "COMPILED_ROUTE", True)
        node, flag = tree.route(X, codes, "climb")
        monkeypatch.setattr(_trees, "COMPILED_ROUTE", False)
        ref_node, ref_flag = tree.route(X, codes, "climb")
        np.testing.assert_array_equal(node, ref_node)
        np.testing.assert_array_equal(flag, ref_flag)
        n_flagged += int(flag.sum())
    assert n_flagged > 0  # the unroutable branch was exercised


def test_compiled_route_chosen_when_it_pays(monkeypatch):
    """Default (None): the compiled walk for large calls or once loaded; the vectorised loop
    otherwise (loading numba costs more than it saves on a table of CEdata's size)."""
    import sys

    monkeypatch.setattr(_trees, "COMPILED_ROUTE", None)
    monkeypatch.delitem(sys.modules, "bayes_risk.models.trees.route", raising=False)
    assert not _trees._compiled_route(5_571)
    assert _trees._compiled_route(_trees.COMPILED_ROUTE_MIN)
    monkeypatch.setitem(sys.modules, "bayes_risk.models.trees.route", object())
    assert _trees._compiled_route(10)
    monkeypatch.setattr(_trees, "COMPILED_ROUTE", False)
    assert not _trees._compiled_route(10**7)
