"""Group-wise risks of the inference and linkability attacks (anonymeter's risk_for_groups),
by hand from the per-record outcomes the same run reports."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest

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
                     str(tmp_path / "h.csv"), "--singling-out", "none", "--inference", "c",
                     "--linkability", "c,x", "y", "--groups", "c", "--n-attacks", "100",
                     "--random-seed", "5", "--out", str(out), "--quiet"]) == 0
    inf = pd.read_csv(out / "inference_groups.csv")
    lk = pd.read_csv(out / "linkability_groups.csv")
    assert set(inf["group"]) == set(lk["group"]) == {"p", "q", "r"}
    s = json.loads((out / "summary.json").read_text())
    assert len(s["inference"]["by_group"]) == len(inf)
