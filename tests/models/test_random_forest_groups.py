"""Random forests within groups and the comparison of visit orders (Caiola & Reiter 2010 §3, §5)."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest

from bayes_risk import (
    PopulationSpec,
    RFPlugin,
    compare_visit_orders,
    identification_risk,
    make_acs_like,
    pmse,
)
from bayes_risk.data import infer_schema
from bayes_risk.exceptions import NotSupportedError, ValidationError
from bayes_risk.models import CARTSynthesizer, RandomForestSynthesizer


def _blocks(n=240, seed=0):
    """G in {a, b, c}; Y takes values {0, 1} in group a, {2, 3} in group b, {0..3} in group c
    (c is small); X is noise. Y's classes are fixed by G, so a forest grown on group a alone can
    only ever draw 0 or 1."""
    rng = np.random.default_rng(seed)
    g = rng.choice(["a", "b", "c"], size=n, p=[0.47, 0.47, 0.06])
    x = rng.integers(0, 3, n)
    y = np.where(g == "a", rng.integers(0, 2, n), np.where(g == "b", 2 + rng.integers(0, 2, n),
                                                            rng.integers(0, 4, n)))
    df = pd.DataFrame({"G": g, "X": x, "Y": y})
    return df, infer_schema(df, categorical=["G", "X", "Y"])


ALLOWED = {"a": {0, 1}, "b": {2, 3}}


def test_group_forests_draw_only_their_groups_classes():
    df, schema = _blocks()
    rf = RandomForestSynthesizer(n_trees=25, group_by="G", min_group_size=30)
    rf.fit(df, schema=schema, synthesized=["Y"], random_seed=1)
    assert rf.groups_ == {"Y": "G"}
    sizes = df["G"].value_counts()
    assert rf.group_sizes_["Y"] == {k: int(sizes.get(k, 0)) for k in ("a", "b", "c")}
    assert rf.group_fallback_["Y"] == ["c"]  # 6 % of 240 < 30: the pooled forest
    assert sorted(rf.group_forests_["Y"]) == [0, 1]
    z = rf.synthesize(3, random_seed=2)
    for d in z.datasets:
        for g, allowed in ALLOWED.items():
            assert set(d.loc[df["G"] == g, "Y"]) <= allowed
        pd.testing.assert_series_equal(d["G"], df["G"])
    assert z.extra["groups"] == {"Y": "G"} and z.extra["group_fallback"] == {"Y": ["c"]}
    json.dumps(z.to_dict() if hasattr(z, "to_dict") else z.extra)  # JSON-safe provenance


def test_synthetic_grouping_value_steers_the_group_forest():
    # G synthesized first, then Y within the groups of the *synthetic* G: Y always agrees with
    # the released G (a record moved to group b gets a value of b's forest)
    df, schema = _blocks(seed=3)
    rf = RandomForestSynthesizer(n_trees=25, group_by={"Y": "G"}, min_group_size=30,
                                 visit_sequence=["G", "Y"])
    rf.fit(df, schema=schema, synthesized=["G", "Y"], random_seed=4)
    z = rf.synthesize(3, random_seed=5)
    moved = 0
    for d in z.datasets:
        for g, allowed in ALLOWED.items():
            assert set(d.loc[d["G"] == g, "Y"]) <= allowed
        moved += int((d["G"] != df["G"]).sum())
    assert moved > 0  # the test exercises records whose group changed


def test_pooled_forest_mixes_classes_across_groups_without_grouping():
    # the same data without group_by, X alone as predictor: Y cannot follow G, so classes of
    # the other group appear — the grouped synthesis above is what keeps them apart
    df, schema = _blocks(seed=3)
    rf = RandomForestSynthesizer(n_trees=25, procedure="B")
    rf.fit(df.drop(columns="G"), schema=infer_schema(df.drop(columns="G"), categorical=["X", "Y"]),
           synthesized=["Y"], random_seed=4)
    d = rf.synthesize(1, random_seed=5).datasets[0]
    assert not set(d.loc[df["G"] == "a", "Y"]) <= ALLOWED["a"]


def test_reproducible_oob_and_jobs():
    df, schema = _blocks(seed=6)

    def run(**kw):
        rf = RandomForestSynthesizer(n_trees=20, group_by="G", min_group_size=30,
                                     min_oob_trees=3, **kw)
        rf.fit(df, schema=schema, synthesized=["Y"], random_seed=7)
        return rf.synthesize(2, random_seed=8).datasets

    a, b = run(), run(n_jobs=2)
    for x, y in zip(a, b, strict=True):
        pd.testing.assert_frame_equal(x, y)
    oob = run(oob_only=True)
    for d in oob:
        for g, allowed in ALLOWED.items():
            assert set(d.loc[df["G"] == g, "Y"]) <= allowed


def test_ungrouped_columns_are_unchanged_by_grouping_others():
    # grouping Y does not change the forest or draws of a column synthesized before it
    acs = make_acs_like(300, random_seed=1)[["SEX", "AGE", "RACE", "MAR"]]
    kw = dict(n_trees=15, visit_sequence=["MAR", "RACE", "SEX"])
    plain = RandomForestSynthesizer(**kw).fit(acs, synthesized=["MAR", "RACE", "SEX"],
                                              random_seed=3)
    grouped = RandomForestSynthesizer(group_by={"SEX": "MAR"}, min_group_size=20, **kw).fit(
        acs, synthesized=["MAR", "RACE", "SEX"], random_seed=3)
    zp, zg = plain.synthesize(1, random_seed=4).datasets[0], grouped.synthesize(
        1, random_seed=4).datasets[0]
    pd.testing.assert_series_equal(zp["MAR"], zg["MAR"])
    pd.testing.assert_series_equal(zp["RACE"], zg["RACE"])


def test_group_errors():
    df, schema = _blocks()
    with pytest.raises(ValidationError, match="synthesized later"):
        RandomForestSynthesizer(n_trees=5, group_by={"G": "Y"}, visit_sequence=["G", "Y"]).fit(
            df, schema=schema, synthesized=["G", "Y"], random_seed=1)
    with pytest.raises(ValidationError, match="within groups of itself"):
        RandomForestSynthesizer(n_trees=5, group_by={"Y": "Y"}).fit(df, schema=schema,
                                                                    synthesized=["Y"])
    with pytest.raises(ValidationError, match="not synthesized"):
        RandomForestSynthesizer(n_trees=5, group_by={"X": "G"}).fit(df, schema=schema,
                                                                    synthesized=["Y"])
    num = df.assign(V=np.arange(len(df), dtype=float))
    with pytest.raises(ValidationError, match="is continuous"):
        RandomForestSynthesizer(n_trees=5, group_by="V").fit(
            num, schema=infer_schema(num, categorical=["G", "X", "Y"]), synthesized=["Y"])
    with pytest.raises(ValidationError, match="min_group_size"):
        RandomForestSynthesizer(n_trees=5, group_by="G", min_group_size=0).fit(
            df, schema=schema, synthesized=["Y"])
    with pytest.raises(ValidationError, match="group_by must be"):
        RandomForestSynthesizer(n_trees=5, group_by=3).fit(df, schema=schema, synthesized=["Y"])
    # forests grown within groups of an unsynthesized column have a plug-in likelihood (one
    # forest per group; tests/attribute/test_plugin_rf_groups.py checks its values), a group
    # column that is itself synthesized has none
    rf = RandomForestSynthesizer(n_trees=5, group_by="G", min_group_size=30).fit(
        df, schema=schema, synthesized=["Y"], random_seed=1)
    assert any(k[0] == "Y" and k[1] is not None for k in RFPlugin(rf, df)._forests)
    both = RandomForestSynthesizer(n_trees=5, group_by={"Y": "G"}, visit_sequence=["G", "Y"],
                                   min_group_size=30).fit(df, schema=schema,
                                                          synthesized=["G", "Y"], random_seed=1)
    with pytest.raises(NotSupportedError, match="itself synthesized"):
        RFPlugin(both, df)


# ----------------------------------------------------------------------------------------------
# visit orders
# ----------------------------------------------------------------------------------------------
ORDERS = [["MAR", "RACE", "SEX"], ["SEX", "RACE", "MAR"]]


@pytest.fixture(scope="module")
def acs():
    return make_acs_like(300, random_seed=2010)[["SEX", "AGE", "RACE", "MAR"]]


def test_compare_visit_orders_matches_direct_runs(acs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cmp = compare_visit_orders(
            acs, synthesizer=RandomForestSynthesizer(n_trees=15), orders=ORDERS,
            known=["AGE", "MAR", "RACE", "SEX"], m=2,
            identification={"population": PopulationSpec(membership="known")},
            keep_releases=True, random_seed=11,
        )
        t = cmp.table
        assert list(t["order"]) == ["MAR → RACE → SEX", "SEX → RACE → MAR"]
        assert list(t.columns) == ["order", "pmse", "pmse_ratio", "expected_match_risk",
                                   "true_match_risk", "n_unique", "true_match_rate_targets",
                                   "false_match_rate"]
        for i, order in enumerate(ORDERS):
            rel = cmp.releases[tuple(order)]
            assert rel.extra["visit_sequence"] == order
            r = identification_risk(acs, rel, known=["AGE", *order], synthesized=order,
                                    progressbar=False).file
            for k in ("expected_match_risk", "true_match_risk", "n_unique", "false_match_rate"):
                assert t.loc[i, k] == pytest.approx(r[k], rel=1e-12)
            u = pmse(acs, rel, random_seed=1)
            assert t.loc[i, "pmse"] == pytest.approx(np.mean(u.pmse), rel=1e-12)
        # common random numbers: the same seed gives the same table
        again = compare_visit_orders(acs, synthesizer=RandomForestSynthesizer(n_trees=15),
                                     orders=ORDERS[:1],
                                     known=["AGE", "MAR", "RACE", "SEX"], m=2, random_seed=11)
    pd.testing.assert_frame_equal(again.table, t.iloc[:1])
    json.dumps(cmp.to_dict())


def test_compare_visit_orders_with_cart_and_the_order_matters(acs):
    # CART's order is the order of `synthesized`; the first visited column is grown without the
    # others, so two orders give different releases
    schema = infer_schema(acs, categorical=list(acs.columns))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cmp = compare_visit_orders(acs, synthesizer=CARTSynthesizer(), orders=ORDERS, schema=schema,
                                   known=["AGE", "MAR", "RACE", "SEX"], m=2, keep_releases=True,
                                   random_seed=12)
    a, b = (cmp.releases[tuple(o)].datasets[0] for o in ORDERS)
    assert not a.equals(b)
    assert cmp.table["pmse"].gt(0).all() and cmp.table["expected_match_risk"].gt(0).all()


def test_compare_visit_orders_errors(acs):
    rf = RandomForestSynthesizer(n_trees=5)
    with pytest.raises(ValidationError, match="same columns"):
        compare_visit_orders(acs, synthesizer=rf, orders=[["MAR", "SEX"], ["SEX", "RACE"]])
    with pytest.raises(ValidationError, match="orders must be a non-empty sequence"):
        compare_visit_orders(acs, synthesizer=rf, orders=[])
    with pytest.raises(ValidationError, match="more than once"):
        compare_visit_orders(acs, synthesizer=rf, orders=[["MAR", "MAR"]])
    with pytest.raises(ValidationError, match="visit orders .*, each listed once"):
        compare_visit_orders(acs, synthesizer=rf, orders=[["MAR", "SEX"], ["MAR", "SEX"]])
    with pytest.raises(ValidationError, match="not in the original"):
        compare_visit_orders(acs, synthesizer=rf, orders=[["MAR", "INCOME"]])
    with pytest.raises(ValidationError, match="not in the original"):
        compare_visit_orders(acs, synthesizer=rf, orders=[["MAR", "SEX"]],
                             known=["MAR", "INCOME"])
    with pytest.raises(ValidationError, match="set by compare_visit_orders"):
        compare_visit_orders(acs, synthesizer=rf, orders=[["MAR", "SEX"]],
                             identification={"synthesized": []})
    with pytest.raises(ValidationError, match="synthesizer must be"):
        compare_visit_orders(acs, synthesizer=object(), orders=[["MAR", "SEX"]])


# ----------------------------------------------------------------------------------------------
# command line
# ----------------------------------------------------------------------------------------------
@pytest.mark.filterwarnings("ignore::bayes_risk.exceptions.DataWarning")
def test_cli_synthesize_group_by_and_orders(tmp_path, monkeypatch):
    from bayes_risk.cli import main
    from bayes_risk.data import read_synthetic

    monkeypatch.chdir(tmp_path)  # outside the repository: the installed package is used
    df, _ = _blocks(seed=9)
    df.to_csv("blocks.csv", index=False)
    rc = main(["synthesize", "blocks.csv", "--method", "rf", "--synthesize", "G", "Y",
               "--visit-sequence", "G", "Y", "--group-by", "Y=G", "--min-group-size", "30",
               "--categorical", "G", "X", "Y", "--n-trees", "15", "-m", "2",
               "--random-seed", "3", "--quiet", "--out", "syn"])
    assert rc == 0
    syn = read_synthetic("syn")
    assert syn.extra["groups"] == {"Y": "G"}
    for d in syn.datasets:
        for g, allowed in ALLOWED.items():
            assert set(d.loc[d["G"] == g, "Y"]) <= allowed
    # a grouping column visited after the column it groups: one-line error, exit status 2
    assert main(["synthesize", "blocks.csv", "--method", "rf", "--synthesize", "G", "Y",
                 "--visit-sequence", "Y", "G", "--group-by", "Y=G", "--categorical", "G", "X",
                 "Y", "--quiet", "--out", "bad"]) == 2
    assert not (tmp_path / "bad").exists()

    acs = make_acs_like(250, random_seed=5)[["SEX", "AGE", "RACE", "MAR"]]
    acs.to_csv("acs.csv", index=False)
    rc = main(["orders", "acs.csv", "--method", "rf", "--order", "MAR,RACE,SEX",
               "--order", "SEX,RACE,MAR", "--categorical", "SEX", "AGE", "RACE", "MAR",
               "--known-unsynthesized", "AGE", "--n-trees", "10", "-m", "2",
               "--random-seed", "7", "--quiet", "--out", "ord"])
    assert rc == 0
    table = pd.read_csv(tmp_path / "ord" / "orders.csv")
    summ = json.loads((tmp_path / "ord" / "summary.json").read_text())
    assert list(table["order"]) == ["MAR → RACE → SEX", "SEX → RACE → MAR"]
    assert summ["settings"]["synthesizer"] == "RandomForestSynthesizer"
    schema = infer_schema(acs, categorical=list(acs.columns))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        direct = compare_visit_orders(acs, synthesizer=RandomForestSynthesizer(n_trees=10),
                                      orders=[["MAR", "RACE", "SEX"], ["SEX", "RACE", "MAR"]],
                                      known=["AGE", "MAR", "RACE", "SEX"], schema=schema, m=2,
                                      identification={"population": PopulationSpec()},
                                      random_seed=7)
    np.testing.assert_allclose(table["expected_match_risk"], direct.table["expected_match_risk"],
                               rtol=1e-12)
    np.testing.assert_allclose(table["pmse"], direct.table["pmse"], rtol=1e-9)
    assert main(["orders", "acs.csv", "--method", "rf", "--order", "MAR,SEX", "--order",
                 "SEX,RACE", "--categorical", "SEX", "AGE", "RACE", "MAR", "--quiet",
                 "--out", "bad2"]) == 2
