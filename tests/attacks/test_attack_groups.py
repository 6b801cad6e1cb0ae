"""Group-wise risks of the three attacks (anonymeter's risk_for_groups): inference and
linkability by hand from the per-record outcomes the same run reports, singling out by hand on
tables whose predicates are enumerated, and the invariants of its groups (hypothesis)."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import bayes_risk as br
from bayes_risk.attacks.rates import attack_risk, success_rate
from bayes_risk.exceptions import DataWarning, ValidationError


def _table(seed: int, n: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    c = rng.choice(["p", "q", "r"], n)
    return pd.DataFrame({"c": c, "x": rng.integers(0, 60, n),
                         "y": np.where(c == "p", 1.0, 0.0) + rng.normal(size=n).round(1)})


def _quiet(fn, *args, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)
        return fn(*args, **kw)


@pytest.fixture(scope="module")
def tables():
    return _table(1, 300), [_table(2, 300), _table(3, 300)], _table(4, 300)


def _check_groups(res, records, key_cols, success, orig, hold, group):
    """Each group's counts are those of its attacked records; the rates and risk are
    anonymeter's formulas on them, the control's over the attacked holdout records of the
    group; the groups add up to the whole attack."""
    bg = res.by_group
    for keys, rows in bg.groupby(key_cols):
        keys = keys if isinstance(keys, tuple) else (keys,)
        sel = np.ones(len(records), dtype=bool)
        for k, v in zip(key_cols, keys, strict=True):
            sel &= records[k].to_numpy() == v
        rec = records[sel]
        whole = res.table
        for k, v in zip(key_cols, keys, strict=True):
            whole = whole[whole[k] == v]
        assert rows["n_main"].sum() == whole["n_main"].iloc[0]
        assert rows["n_attacks"].sum() == whole["n_attacks"].iloc[0]
        for _, r in rows.iterrows():
            mine = rec[(rec["role"] == "original")
                       & (orig[group].to_numpy()[rec["row"]] == r["group"])]
            ctrl = rec[(rec["role"] == "holdout")
                       & (hold[group].to_numpy()[rec["row"]] == r["group"])]
            assert r["n_attacks"] == len(mine) and r["n_main"] == success(mine).sum()
            assert r["n_attacks_control"] == len(ctrl)
            m = success_rate(success(mine).sum(), len(mine))
            c = success_rate(success(ctrl).sum(), len(ctrl))
            assert r["main_rate"] == pytest.approx(m.rate)
            assert r["control_rate"] == pytest.approx(c.rate)
            assert r["risk"] == pytest.approx(attack_risk(m, c).risk, nan_ok=True)
            assert r["baseline_rate"] == whole["baseline_rate"].iloc[0]


def test_inference_risk_for_groups(tables):
    """Grouped by the secret c itself (anonymeter's risk_for_groups), for the secret c and for
    another secret y."""
    orig, syn, hold = tables
    for groups in ("c",):
        res = _quiet(br.inference_risk, orig, syn, secret=["c", "y"], holdout=hold,
                     n_attacks=200, random_seed=3, groups=groups)
        assert set(res.by_group["group"]) == {"p", "q", "r"}
        _check_groups(res, res.records, ["dataset", "secret"], lambda r: r["correct"],
                      orig, hold, groups)
    assert res.to_dict()["by_group"][0]["group"] == "p"
    assert _quiet(br.inference_risk, orig, syn, secret="y", holdout=hold, n_attacks=50,
                  random_seed=3).by_group is None


def test_linkability_risk_for_groups(tables):
    orig, syn, hold = tables
    res = _quiet(br.linkability_risk, orig, syn, aux_columns=(["c", "x"], ["y"]), holdout=hold,
                 n_attacks=200, n_neighbors=3, random_seed=4, groups="c")
    assert (res.by_group["n_neighbors"] == 3).all()
    import dataclasses

    at_k = dataclasses.replace(res, table=res.table[res.table["n_neighbors"] == 3])
    _check_groups(at_k, res.records, ["dataset"], lambda r: r["linked_at"].notna().to_numpy()
                  & (r["linked_at"].fillna(0).to_numpy() <= 3), orig, hold, "c")


# a synthetic table whose univariate predicates are, with the group of the row each singles out:
#   g == 'c' (c), x <= 1 (a), x == 1 (a), x == 6 (b), x >= 8 (c), x == 8 (c)
# (x == 3 matches two rows; 'a' and 'b' are held by two rows each)
SYN = pd.DataFrame({"g": ["a", "a", "b", "b", "c"], "x": [1.0, 3.0, 3.0, 6.0, 8.0]})
# on the original: x <= 1 and x == 1 single out (a, 1); x >= 8 and x == 8 single out (b, 8), a
# record of another group than the synthetic row's; x == 6 matches two, g == 'c' two
ORIG = pd.DataFrame({"g": ["a", "b", "a", "b", "c", "c"], "x": [1.0, 6.0, 6.0, 8.0, 2.0, 4.0]})
# on the holdout (as many distinct records: no size correction): x == 1 singles out (a, 1),
# x == 6 (b, 6), x >= 8 (c, 9); x <= 1 matches two, x == 8 none, g == 'c' two
HOLD = pd.DataFrame({"g": ["a", "a", "b", "c", "c", "b"], "x": [1.0, 0.0, 6.0, 5.0, 9.0, 3.0]})


def test_singling_out_risk_for_groups_by_hand():
    """A predicate belongs to the group of the synthetic row it singles out; per group the main
    and the control successes are over its predicates, the baseline that of all predicates."""
    res = _quiet(br.singling_out_risk, ORIG, SYN, holdout=HOLD, mode="univariate",
                 n_attacks=50, random_seed=3, groups="g")
    q = res.queries.set_index("query").sort_index()
    assert q["group"].to_dict() == {"g == 'c'": "c", "x <= 1": "a", "x == 1": "a",
                                    "x == 6": "b", "x >= 8": "c", "x == 8": "c"}
    # missing ("-" here): singles out no record
    assert q["group_original"].fillna("-").to_dict() == {
        "g == 'c'": "-", "x <= 1": "a", "x == 1": "a", "x == 6": "-", "x >= 8": "b",
        "x == 8": "b"}
    assert q["group_holdout"].fillna("-").to_dict() == {
        "g == 'c'": "-", "x <= 1": "-", "x == 1": "a", "x == 6": "b", "x >= 8": "c",
        "x == 8": "-"}
    bg = res.by_group.set_index("group")
    whole = res.table.iloc[0]
    assert (whole.n_queries, whole.n_main, whole.n_control) == (6, 4, 3)
    # group: predicates, main successes (of them on a record of another group), control
    hand = {"a": (2, 2, 0, 1), "b": (1, 0, 0, 1), "c": (3, 2, 2, 1)}
    assert list(bg.index) == ["a", "b", "c"]
    for g, (n, k, other, c) in hand.items():
        r = bg.loc[g]
        assert (r.n_queries, r.n_main, r.n_main_other_group, r.n_control) == (n, k, other, c)
        m, ctrl = success_rate(k, n), success_rate(c, n)
        risk = attack_risk(m, ctrl)
        assert (r.main_rate, r.main_error) == (m.rate, m.error)
        assert (r.control_rate, r.control_error) == (ctrl.rate, ctrl.error)
        assert (r.residual, r.risk, r.ci_low, r.ci_high) == (risk.residual, risk.risk,
                                                            *risk.ci)
        assert (r.baseline_rate, r.baseline_error) == (whole.baseline_rate,
                                                       whole.baseline_error)
    # group a written out: Wilson (1927) centres of 2 of 2 and 1 of 2, and the risk
    z2 = 1.959963984540054 ** 2
    rm, rc = (2 + z2 / 2) / (2 + z2), (1 + z2 / 2) / (2 + z2)
    assert bg.loc["a", "residual"] == pytest.approx((rm - rc) / (1 - rc), rel=1e-12)
    assert res.to_dict()["by_group"][2]["n_main_other_group"] == 2


def test_a_groups_size_corrected_control_count_is_at_most_its_predicates():
    """Singling out's control successes scaled up for a smaller holdout are capped per group, as
    the whole attack's are: never a rate above 1."""
    from bayes_risk.attacks.rates import group_rows

    code = np.array([0.0, 0.0, 1.0, 1.0, 1.0])
    hit = np.array([1.0, 1.0, 1.0, 0.0, 0.0])
    rows = group_rows({}, (code, hit), (code, 1.6 * hit), success_rate(1, 5), ["u", "v", "m"],
                      0.95)
    assert [r["n_control"] for r in rows] == [2.0, 1.6]
    assert rows[0]["control_rate"] == success_rate(2, 2).rate


def _groups_table(seed: int, n: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    g = rng.choice(["p", "q", "r"], n, p=[0.6, 0.3, 0.1])
    return pd.DataFrame({"g": g, "one": "k", "x": rng.integers(0, 40, n),
                         "y": (g == "p") + rng.normal(size=n).round(1)})


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000), n_hold=st.sampled_from([None, 40, 90]))
def test_singling_out_groups_add_up_and_one_group_is_the_whole(seed, n_hold):
    """The groups' predicates and successes add up to the dataset's and mode's (the control's
    size-corrected counts at most: each group's is capped at its predicates); grouped by a
    column of one level, the one group's rates, risk and interval are the table's exactly."""
    rng = np.random.default_rng(seed)
    orig, syn = (_groups_table(int(s), int(rng.integers(30, 90))) for s in rng.integers(0, 99, 2))
    hold = None if n_hold is None else _groups_table(int(rng.integers(100, 199)), n_hold)
    kw = dict(holdout=hold, n_attacks=20, predicates=br.PredicateSpec(n_cols=2, max_attempts=2000),
              random_seed=seed)
    by_g = _quiet(br.singling_out_risk, orig, syn, groups="g", **kw)
    one = _quiet(br.singling_out_risk, orig, syn, groups="one", **kw)
    pd.testing.assert_frame_equal(by_g.table, one.table)  # grouping does not change the attack
    t = by_g.table.set_index(["dataset", "mode"])
    sums = by_g.by_group.groupby(["dataset", "mode"])[["n_queries", "n_main",
                                                       "n_control"]].sum(min_count=1)
    assert len(sums) == int((t["n_queries"] > 0).sum())  # every dataset and mode with any
    written = t.loc[sums.index]
    assert (sums["n_queries"] == written["n_queries"]).all()
    assert (sums["n_main"] == written["n_main"]).all()
    if hold is not None:
        assert (sums["n_control"] <= written["n_control"] + 1e-9).all()
        same = written["control_correction"].isna()  # no correction: the counts add up
        assert (sums["n_control"][same] == written["n_control"][same]).all()
    bg = by_g.by_group
    assert (bg["n_main_other_group"] <= bg["n_main"]).all()
    cols = ["main_rate", "main_error", "control_rate", "control_error", "baseline_rate",
            "residual", "risk", "ci_low", "ci_high"]
    whole = one.table[one.table["n_queries"] > 0].reset_index(drop=True)
    single = one.by_group.reset_index(drop=True)
    assert (single["group"] == "k").all() and (single["n_main_other_group"] == 0).all()
    assert single["n_queries"].tolist() == whole["n_queries"].tolist()
    pd.testing.assert_frame_equal(single[cols], whole[cols])


def test_a_missing_group_is_a_group_of_its_own():
    # the synthetic row (missing, 3) is singled out by "g is missing" only (x == 3 matches two)
    syn = SYN.assign(g=["a", None, "b", "b", "c"])
    orig = ORIG.assign(g=["a", "b", None, "b", "c", "c"])
    res = _quiet(br.singling_out_risk, orig, syn, mode="univariate", n_attacks=50,
                 random_seed=3, groups="g")
    q = res.queries.set_index("query")
    assert (q.loc["g is missing", "group"], q.loc["g is missing", "group_original"]) == (
        "missing", "missing")
    bg = res.by_group.set_index("group")
    assert list(bg.index) == ["a", "b", "c", "missing"]
    assert (bg.loc["missing", "n_queries"], bg.loc["missing", "n_main"]) == (1, 1)
    assert bg["n_queries"].sum() == res.table["n_queries"].iloc[0]


def test_singling_out_groups_must_be_a_predicate_column():
    with pytest.raises(ValidationError, match="'g' is not among the columns the predicates"):
        _quiet(br.singling_out_risk, ORIG, SYN, predicates=br.PredicateSpec(columns=["x"]),
               groups="g")
    with pytest.raises(ValidationError, match="column 'x' is .*categorical") as e:
        _quiet(br.singling_out_risk, ORIG, SYN, groups="x")
    assert e.value.code == "GROUPS_NOT_CATEGORICAL"
    with pytest.raises(ValidationError, match="groups: 'nope' is not a column"):
        _quiet(br.singling_out_risk, ORIG, SYN, groups="nope")


def test_groups_must_be_categorical_columns(tables):
    orig, syn, hold = tables
    with pytest.raises(ValidationError, match="column 'x' is .*categorical") as e:
        _quiet(br.inference_risk, orig, syn, secret="c", holdout=hold, n_attacks=20, groups="x")
    assert e.value.code == "GROUPS_NOT_CATEGORICAL"
    with pytest.raises(ValidationError, match="groups: 'nope' is not a column"):
        _quiet(br.linkability_risk, orig, syn, aux_columns=(["c"], ["y"]), holdout=hold,
               n_attacks=20, groups="nope")


def test_attacks_command_writes_the_groups(tables, tmp_path):
    from bayes_risk.cli import main

    orig, syn, hold = tables
    orig.to_csv(tmp_path / "o.csv", index=False)
    hold.to_csv(tmp_path / "h.csv", index=False)
    names = []
    for j, z in enumerate(syn):
        z.to_csv(tmp_path / f"s{j}.csv", index=False)
        names.append(str(tmp_path / f"s{j}.csv"))
    out = tmp_path / "a"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)
        assert main(["attacks", str(tmp_path / "o.csv"), *names, "--holdout",
                     str(tmp_path / "h.csv"), "--singling-out", "univariate", "--inference", "c",
                     "--linkability", "c,x", "y", "--groups", "c", "--n-attacks", "100",
                     "--random-seed", "5", "--out", str(out), "--quiet"]) == 0
    inf = pd.read_csv(out / "inference_groups.csv")
    lk = pd.read_csv(out / "linkability_groups.csv")
    so = pd.read_csv(out / "singling_out_groups.csv")
    assert set(inf["group"]) == set(lk["group"]) == set(so["group"]) == {"p", "q", "r"}
    s = json.loads((out / "summary.json").read_text())
    assert len(s["inference"]["by_group"]) == len(inf)
    assert len(s["singling_out"]["by_group"]) == len(so)
    # the groups' predicates and successes are those of the queries file, per dataset
    q = pd.read_csv(out / "singling_out_queries.csv")
    per = q.groupby(["dataset", "group"]).agg(n_queries=("query", "size"),
                                              n_main=("singles_out_original", "sum"))
    got = so.set_index(["dataset", "group"])[["n_queries", "n_main"]]
    pd.testing.assert_frame_equal(got.sort_index(), per.sort_index(), check_dtype=False)
