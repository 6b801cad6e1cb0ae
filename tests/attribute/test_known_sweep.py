"""Attribute risk over the synthesized values the intruder knows (issue 33 item 2): every subset
against a separate ``attribute_risk`` run, the refits made once, Shapley values by hand."""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pandas as pd
import pytest

from bayes_risk import LatticeSpec
from bayes_risk.attribute import EstimatorSpec, ScenarioSpec, attribute_known_sweep, attribute_risk
from bayes_risk.data import infer_schema
from bayes_risk.exceptions import ValidationError
from bayes_risk.models import ArrayModel
from bayes_risk.results._attribute_null import file_null
from bayes_risk.results.knowledge import ATTRIBUTE_SWEEP_MEASURES, KnowledgeSweepResult

COLS = ["a", "b", "c"]


def _case(n=30, H=40, seed=0, calls=None):
    """Three synthesized categorical columns (independent categorical draws), one
    unsynthesized; ``augment_fn`` draws ``p(Θ | y, Z_(l))`` from its seed (and counts calls)."""
    rng = np.random.default_rng(seed)
    orig = pd.DataFrame({
        "a": pd.Categorical(rng.integers(0, 3, n), categories=[0, 1, 2]),
        "b": pd.Categorical(rng.integers(0, 2, n), categories=[0, 1]),
        "c": pd.Categorical(rng.integers(0, 3, n), categories=[0, 1, 2]),
        "u": pd.Categorical(rng.integers(0, 2, n), categories=[0, 1]),
    })
    schema = infer_schema(orig, synthesized=COLS)
    sizes = {"a": 3, "b": 2, "c": 3}

    def draws(g, h):
        return {f"p{c}": g.dirichlet(np.ones(k) * 4, size=h) for c, k in sizes.items()}

    def ll(rec, d):
        out = 0.0
        for c in COLS:
            out = out + np.log(d[f"p{c}"][:, rec[c].astype(int).to_numpy()])
        return out

    def augment(data, synthetic, random_seed=None, **kw):
        if calls is not None:
            calls.append(1)
        return draws(np.random.default_rng(random_seed), H)

    model = ArrayModel(ll, draws(rng, H), schema, augment_fn=augment)
    syn = []
    for _ in range(2):
        z = orig.copy()
        for c, k in sizes.items():
            z[c] = pd.Categorical(rng.integers(0, k, n), categories=list(range(k)))
        syn.append(z)
    return model, orig, syn


def _quiet(fn, *args, **kw):
    kw.setdefault("progressbar", False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kw)


def _separate(model, orig, syn, s, **kw):
    s = list(s)
    return _quiet(attribute_risk, orig, syn, model=model, **kw,
                  scenario=ScenarioSpec(kind="partially_known" if s else "worst_case",
                                        known=s or None))


@pytest.mark.parametrize("estimator", ["is", "stabilised"])
def test_every_subset_equals_a_separate_attribute_risk_run(estimator):
    calls: list[int] = []
    model, orig, syn = _case(calls=calls)
    res = _quiet(attribute_known_sweep, orig, syn, model=model, known=["a", "b"], random_seed=5,
                 records=range(0, 30, 2), estimator=EstimatorSpec(kind=estimator, bootstrap=20))
    assert isinstance(res, KnowledgeSweepResult) and res.kind == "attribute"
    assert res.measures == ATTRIBUTE_SWEEP_MEASURES
    assert len(res.table) == 4  # (none), a, b, a+b
    if estimator == "stabilised":
        assert len(calls) == 2  # the m = 2 refits, made once for the four subsets
        assert res.settings["refits_shared"] is True
    calls.clear()
    for k in range(3):
        for s in itertools.combinations(["a", "b"], k):
            one = _separate(model, orig, syn, s, random_seed=5, records=range(0, 30, 2),
                            estimator=EstimatorSpec(kind=estimator, bootstrap=20))
            summ = one.to_dict()["all"]
            row = res.table[res.table["known"] == (", ".join(s) or "(none)")].iloc[0]
            assert row["mean_p_true"] == summ["mean_p_true"], s
            assert row["prop_top"] == summ["prop_top"], s
            assert row["n_records"] == summ["n_records"]
            assert row["n_flagged"] == int((one.records["flag_codes"] != "").sum())
            assert row["mean_baseline"] == pytest.approx(one.records["baseline"].mean(),
                                                         rel=1e-15)
            # beside them, the null of the same records (those with a p_true)
            per, ok = one.record_null(), one.records["p_true"].notna().to_numpy()
            null = file_null({c: per[c].to_numpy() for c in per.columns}, ok)
            assert row["null_prop_top"] == null["prop_top"]["expected"], s
            assert row["null_mean_p_true"] == null["mean_p_true"]["expected"], s
            assert 0 < row["null_mean_p_true"] < 1
    if estimator == "stabilised":
        assert len(calls) == 2 * 4  # separate runs refit every time


def test_knowing_a_column_restricts_the_candidates():
    # one-variable candidates: a known column is fixed at the truth (fewer candidates)
    model, orig, syn = _case(n=12, seed=3)
    res = _quiet(attribute_known_sweep, orig, syn, model=model, known=["a", "c"], random_seed=1,
                 estimator=EstimatorSpec(kind="is", bootstrap=0))
    base = res.table.set_index("known")["mean_baseline"]
    # G = 1 + (3-1) + (2-1) + (3-1) = 6 in the worst case; 4 knowing a; 2 knowing a and c
    assert base["(none)"] == pytest.approx(1 / 6)
    assert base["a"] == pytest.approx(1 / 4)
    assert base["a, c"] == pytest.approx(1 / 2)


def test_shapley_values_by_hand_and_frontier():
    model, orig, syn = _case(n=20, seed=4)
    res = _quiet(attribute_known_sweep, orig, syn, model=model, known=["a", "b"], random_seed=2,
                 estimator=EstimatorSpec(kind="is", bootstrap=0))
    v = res.table.set_index("known")["mean_p_true"]
    phi_a = 0.5 * (v["a"] - v["(none)"]) + 0.5 * (v["a, b"] - v["b"])
    phi_b = 0.5 * (v["b"] - v["(none)"]) + 0.5 * (v["a, b"] - v["a"])
    d = res.drivers.set_index("variable")["shapley_mean_p_true"]
    assert d["a"] == pytest.approx(phi_a, rel=1e-12)
    assert d["b"] == pytest.approx(phi_b, rel=1e-12)
    assert d.sum() == pytest.approx(v["a, b"] - v["(none)"], rel=1e-12)
    assert res.drivers.set_index("variable").loc["a", "mean_p_true_without"] == v["b"]
    # the frontier: no subset knows as few columns and has as high a risk (one strictly)
    t = res.table
    for _, r in t[t["frontier"]].iterrows():
        dom = t[(t["n_known"] > 0) & (t["n_known"] <= r["n_known"])
                & (t["mean_p_true"] >= r["mean_p_true"])
                & ((t["n_known"] < r["n_known"]) | (t["mean_p_true"] > r["mean_p_true"]))]
        assert dom.empty


def test_levels_sum_to_the_full_set_and_outputs():
    model, orig, syn = _case(n=24, seed=6)
    res = _quiet(attribute_known_sweep, orig, syn, model=model, known=["a", "b"], random_seed=3,
                 estimator=EstimatorSpec(kind="is", bootstrap=0))
    full = _separate(model, orig, syn, ["a", "b"], random_seed=3,
                     estimator=EstimatorSpec(kind="is", bootstrap=0))
    total = float(full.records["p_true"].sum())
    for var, part in res.levels.groupby("variable"):
        assert part["p_true"].sum() == pytest.approx(total, rel=1e-12)
        assert part["n_targets"].sum() == 24
        # each level's p_true: the records with that value of the column
        for _, r in part.iterrows():
            sel = orig[var].astype(str).to_numpy() == r["level"]
            assert r["p_true"] == pytest.approx(full.records["p_true"].to_numpy()[sel].sum())
    import json

    d = res.to_dict()
    json.dumps(d, allow_nan=False)
    assert d["kind"] == "attribute"
    assert d["headline"].startswith("Withholding")
    assert "Attribute risk by the intruder's knowledge" in res.summary().as_text()
    for kind in res.plot_kinds:
        assert res.plot(kind).has_data()


def test_errors_name_the_argument():
    model, orig, syn = _case(n=10)
    with pytest.raises(ValidationError, match="not synthesize"):
        attribute_known_sweep(orig, syn, model=model, known=["u"])
    with pytest.raises(ValidationError, match="nothing is left to guess"):
        attribute_known_sweep(orig, syn, model=model, known=["a", "b", "c"])
    with pytest.raises(ValidationError, match="sets scenario and known"):
        attribute_known_sweep(orig, syn, model=model, known=["a"], scenario="worst_case")
    with pytest.raises(ValidationError, match="unknown argument"):
        attribute_known_sweep(orig, syn, model=model, known=["a"], prior_typo=1)
    with pytest.raises(ValidationError, match="max_size"):
        attribute_known_sweep(orig, syn, model=model, known=["a"],
                              lattice=LatticeSpec(max_size=2))
    with pytest.raises(ValidationError, match="more than once"):
        attribute_known_sweep(orig, syn, model=model, known=["a", "a"])


@pytest.mark.parametrize("estimator", ["is", "stabilised"])
def test_uniform_prior_risk_does_not_fall_when_a_column_becomes_known(estimator):
    # the same candidate likelihoods, fewer candidates in the renormalising sum: record by
    # record, p_true with a and b known is at least p_true with nothing or a alone known
    model, orig, syn = _case(n=30, seed=11)
    runs = {k: _separate(model, orig, syn, k, random_seed=4,
                         estimator=EstimatorSpec(kind=estimator, bootstrap=0))
            for k in ((), ("a",), ("a", "b"))}
    p0, pa, pab = (runs[k].records["p_true"].to_numpy() for k in ((), ("a",), ("a", "b")))
    assert (pa >= p0 * (1 - 1e-12)).all() and (pab >= pa * (1 - 1e-12)).all()
    res = _quiet(attribute_known_sweep, orig, syn, model=model, known=["a", "b"], random_seed=4,
                 estimator=EstimatorSpec(kind=estimator, bootstrap=0))
    assert (res.drivers["shapley_mean_p_true"] >= -1e-12).all()
    assert (res.drivers["shapley_prop_top"] >= -1e-12).all()


def test_flagged_records_reach_the_sweep_warnings():
    # every subset's RECORDS_FLAGGED warning is summarised once for the sweep, never dropped
    model, orig, syn = _case(n=20, seed=11)
    with pytest.warns(Warning, match="RECORDS_FLAGGED: in 4 of 4 subsets") as rec:
        res = attribute_known_sweep(orig, syn, model=model, known=["a", "b"],
                                    random_seed=4, progressbar=False,
                                    estimator=EstimatorSpec(kind="is", bootstrap=0))
    assert (res.table["n_flagged"] > 0).all()
    assert "RECORDS_FLAGGED" in res.warnings
    assert "in 4 of 4 subsets" in res.warning_details["RECORDS_FLAGGED"]
    assert sum("RECORDS_FLAGGED" in str(w.message) for w in rec) == 1


def test_both_sweeps_tabulate_the_same_subsets_in_the_same_order():
    """The attribute and identification sweeps run one lattice: for the same known columns, the
    same subsets in the same order (size, then the order given), in tables of one layout."""
    from bayes_risk.identification import known_sweep

    model, orig, syn = _case()
    att = _quiet(attribute_known_sweep, orig, syn, model=model, known=["c", "a"], random_seed=1,
                 records=range(0, 30, 3))
    ide = _quiet(known_sweep, orig, syn, candidates=["c", "a"], synthesized=["c", "a"])
    assert att.table["known"].tolist() == ide.table["known"].tolist() == [
        "(none)", "c", "a", "c, a"]
    for res in (att, ide):
        assert [c for c in res.table.columns if c not in res.measures] == [
            "known", "n_known", "c", "a", "greedy_step", "frontier"]
        assert list(res.drivers.columns[:2]) == ["variable", "synthesized"]
        assert list(res.levels.columns[:4]) == ["variable", "level", "n_targets", "share_targets"]


def test_attribute_run_makes_the_refits_once_for_the_run_its_sweep_and_curve():
    """``attribute_run`` (the command line's and the audit's run): the m refits made once for
    the run, the sweep's subsets and the curve's shares; the empty subset is the run itself."""
    from bayes_risk.attribute.run import attribute_run

    calls: list[int] = []
    model, orig, syn = _case(calls=calls)
    run = _quiet(attribute_run, orig, syn, model=model, known_sweep=["a", "b"],
                 known_curve=[1, 0.5], random_seed=5, records=range(0, 30, 2),
                 estimator=EstimatorSpec(kind="stabilised", bootstrap=0))
    assert len(calls) == 2 and len(run.estimator.augmented) == 2
    summ = run.result.to_dict()["all"]
    assert run.known_sweep.risk([], "mean_p_true") == summ["mean_p_true"]
    assert run.known_curve.table["known_fraction"].tolist() == [0.5, 1.0]
    alone = _quiet(attribute_run, orig, syn, model=model, random_seed=5, records=range(0, 30, 2),
                   estimator=EstimatorSpec(kind="stabilised", bootstrap=0))
    # nothing beside the run: no refits made ahead, no sweep, no curve
    assert alone.known_sweep is None and alone.known_curve is None
    assert alone.estimator.augmented is None and len(calls) == 4
