"""Inference risk (anonymeter's definition, Giomi et al. 2023) re-derived by hand on small
tables: the nearest synthetic row's guess, right within the tolerance or when equal, the rates
and the risk from anonymeter's formulas, the options, the warnings and the invariants."""

from __future__ import annotations

import json
import math
import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

import bayes_risk as br
from bayes_risk.attacks import linkability
from bayes_risk.attacks.inference import correct_guesses
from bayes_risk.exceptions import DataWarning, SchemaError, ValidationError

Z = stats.norm.ppf(0.975)


def wilson(k: float, n: int, z: float = Z) -> tuple[float, float]:
    """Wilson (1927) centre and half-width, written out."""
    return ((k + z * z / 2) / (n + z * z),
            z / (n + z * z) * math.sqrt(k * (n - k) / n + z * z / 4))


def _quiet(fn, *args, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)
        return fn(*args, **kw)


# the intruder knows a, guesses s (numeric) and c (categorical) from the nearest synthetic row
ISYN = pd.DataFrame({"a": [0.0, 10, 20, 30], "s": [100.0, 200, 300, -50],
                     "c": ["x", "y", "x", "z"]})
IORIG = pd.DataFrame({"a": [1.0, 9, 22, 31, 14], "s": [104.0, 250, 300, 10, 191],
                      "c": ["x", "y", "y", "z", "x"]})
IHOLD = pd.DataFrame({"a": [2.0, 19, 29, 11], "s": [300.0, 290, -48, 200],
                      "c": ["z", "x", "z", "y"]})


def test_inference_by_hand():
    # nearest synthetic rows on a (no ties): IORIG 0, 1, 2, 3, 1; IHOLD 0, 2, 3, 1.
    # s, right within 5 % of the guess: IORIG 104~100 yes, 250~200 no, 300~300 yes,
    #   10~-50 no (|60| > 2.5), 191~200 yes (9 <= 10): 3 of 5;
    #   IHOLD 300~100 no, 290~300 yes, -48~-50 yes (2 <= 2.5), 200~200 yes: 3 of 4.
    # c, right when equal: IORIG x=x, y=y, y!=x, z=z, x!=y: 3 of 5; IHOLD z!=x, x, z, y: 3 of 4
    res = _quiet(br.inference_risk, IORIG, ISYN, secret=["s", "c"], aux_columns=["a"],
                 holdout=IHOLD, n_attacks=None, random_seed=0)
    t = res.table.set_index("secret")
    assert t["regression"].tolist() == [True, False]
    assert t.loc["s", ["n_main", "n_control"]].tolist() == [3, 3]
    assert t.loc["c", ["n_main", "n_control"]].tolist() == [3, 3]
    assert t.loc["s", ["n_attacks", "n_attacks_control", "n_attacks_baseline"]].tolist() == \
        [5, 4, 4]  # the baseline: as many guesses as the main attack, at most the synthetic rows
    (rm, em), (rc, ec) = wilson(3, 5), wilson(3, 4)
    value = (rm - rc) / (1 - rc)
    err = math.sqrt((em / (1 - rc)) ** 2 + (ec * (rm - 1) / (1 - rc) ** 2) ** 2)
    assert t.loc["s", "residual"] == pytest.approx(value, rel=1e-12)
    assert t.loc["s", "risk"] == 0.0 and t.loc["s", "ci_high"] == pytest.approx(
        min(max(value + err, 0.0), 1.0), rel=1e-12)
    assert t.loc["s", "baseline_rate"] == pytest.approx(wilson(t.loc["s", "n_baseline"], 4)[0])
    recs = res.records
    got = recs[(recs["secret"] == "s") & (recs["role"] == "original")]["correct"].tolist()
    assert got == [True, False, True, False, True]
    got = recs[(recs["secret"] == "c") & (recs["role"] == "holdout")]["correct"].tolist()
    assert got == [False, True, True, True]
    assert not recs["tied"].any()
    # equality for the numeric secret too (anonymeter 1.1.0's regression=False): only 300
    exact = _quiet(br.inference_risk, IORIG, ISYN, secret="s", aux_columns=["a"],
                   holdout=IHOLD, n_attacks=None, guess=br.GuessSpec(regression=False),
                   random_seed=0)
    assert exact.table[["n_main", "n_control"]].iloc[0].tolist() == [1, 1]
    # a wider tolerance: 250~200 (50 <= 0.25 * 200) is right too
    wide = _quiet(br.inference_risk, IORIG, ISYN, secret="s", aux_columns=["a"],
                  holdout=IHOLD, n_attacks=None, guess=br.GuessSpec(tolerance=0.25),
                  random_seed=0)
    assert wide.table["n_main"].iloc[0] == 4


def test_a_guess_is_right_as_anonymeter_judges_it_but_for_negative_guesses():
    g = np.array([100.0, 100.0, 0.0, 0.0, np.nan, np.nan, 5.0, -50.0, -50.0])
    v = np.array([105.0, 105.01, 0.0, 1e-9, np.nan, 1.0, np.nan, -52.0, 10.0])
    ours = correct_guesses(g, v, regression=True, tolerance=0.05)
    # anonymeter's evaluate_inference_guesses, written out
    with np.errstate(invalid="ignore", divide="ignore"):
        theirs = (np.abs(g - v) / (g + 1e-12) <= 0.05) | (np.isnan(g) & np.isnan(v))
    assert ours.tolist() == [True, False, True, False, True, False, False, True, False]
    # the two agree but for a negative guess far from the value: anonymeter's denominator is
    # negative there, and every negative guess is right
    assert (ours == theirs).tolist() == [True] * 8 + [False]
    assert correct_guesses(np.array([1.0, 2.0]), np.array([1.0, 2.5]), regression=False,
                           tolerance=0.5).tolist() == [True, False]


def test_equally_distant_rows_are_taken_in_random_order():
    # every target is as near to each of the 10 synthetic rows: the guess is a random one of
    # their 10 values, right with probability 1/10
    syn = pd.DataFrame({"a": ["x"] * 10, "s": np.arange(10.0)})
    orig = pd.DataFrame({"a": ["x"] * 3000, "s": np.full(3000, 3.0)})
    res = _quiet(br.inference_risk, orig, syn, secret="s", n_attacks=None, random_seed=11)
    k = res.table["n_main"].iloc[0]
    assert abs(k - 300) < 4 * math.sqrt(3000 * 0.1 * 0.9)
    assert res.records["tied"].all() and res.table["share_tied_main"].iloc[0] == 1.0


def _table(seed: int, n: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"c": rng.choice(["p", "q", "r"], n), "x": rng.integers(0, 60, n),
                         "y": rng.normal(size=n).round(2)})


def test_same_numbers_whatever_the_blocks(monkeypatch):
    orig, syn, hold = _table(1, 300), [_table(2, 300), _table(3, 250)], _table(4, 300)
    kw = dict(secret=["c", "y"], holdout=hold, n_attacks=60, random_seed=8)
    first = _quiet(br.inference_risk, orig, syn, **kw)
    monkeypatch.setattr(linkability, "_BLOCK_CELLS", 601)  # blocks of 2 targets
    again = _quiet(br.inference_risk, orig, syn, **kw)
    pd.testing.assert_frame_equal(again.table, first.table)
    pd.testing.assert_frame_equal(again.records, first.records)
    assert first.table["dataset"].tolist() == [1, 1, 2, 2]


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000))
def test_inference_invariants(seed):
    rng = np.random.default_rng(seed)
    orig, syn, hold = (_table(int(s), int(rng.integers(20, 60))) for s in rng.integers(0, 99, 3))
    res = _quiet(br.inference_risk, orig, syn, secret=["c", "x", "y"], holdout=hold,
                 n_attacks=15, random_seed=seed)
    t = res.table
    assert (t["n_main"] <= t["n_attacks"]).all() and (t["n_control"] <= 15).all()
    ok = t["risk"].notna()
    assert ((t.loc[ok, "ci_low"] <= t.loc[ok, "risk"])
            & (t.loc[ok, "risk"] <= t.loc[ok, "ci_high"])).all()
    assert t.loc[ok, ["risk", "ci_low", "ci_high"]].stack().between(0, 1).all()
    # a wider tolerance never makes a numeric guess wrong
    wide = _quiet(br.inference_risk, orig, syn, secret=["x", "y"], holdout=hold, n_attacks=15,
                  guess=br.GuessSpec(tolerance=0.5), random_seed=seed).table.set_index("secret")
    narrow = t.set_index("secret")
    assert (wide["n_main"] >= narrow.loc[["x", "y"], "n_main"]).all()


def test_bad_options_name_the_argument():
    kw = dict(aux_columns=["a"], n_attacks=None)
    with pytest.raises(ValidationError) as err:
        br.inference_risk(IORIG, ISYN, secret="zzz", **kw)
    assert err.value.code == "MISSING_COLUMN" and "zzz" in str(err.value)
    with pytest.raises(ValidationError, match=r"secret and aux_columns both name \['a'\]"):
        br.inference_risk(IORIG, ISYN, secret="a", aux_columns=["a", "c"])
    with pytest.raises(ValidationError, match="regression=True for the categorical secret 'c'"):
        br.inference_risk(IORIG, ISYN, secret="c", guess=br.GuessSpec(regression=True), **kw)
    with pytest.raises(ValidationError, match="GuessSpec.tolerance"):
        br.GuessSpec(tolerance=-0.1)
    with pytest.raises(ValidationError, match="n_attacks"):
        br.inference_risk(IORIG, ISYN, secret="s", aux_columns=["a"], n_attacks=0)
    with pytest.raises(ValidationError, match=r"secret lists column\(s\)"):
        br.inference_risk(IORIG, ISYN, secret=["s", "s"], **kw)
    with pytest.raises(ValidationError, match="GuessSpec.regression must be"):
        br.GuessSpec(regression="yes")
    with pytest.raises(ValidationError, match="guess must be a GuessSpec"):
        br.inference_risk(IORIG, ISYN, secret="s", guess={"tolerance": 0.1}, **kw)
    with pytest.raises(SchemaError, match=r"dataset 1 is missing column\(s\) \['s'\]") as err:
        br.inference_risk(IORIG, ISYN.drop(columns="s"), secret="s", **kw)
    assert err.value.code == "MISSING_COLUMN"


def test_no_holdout_reads_the_main_rate_with_a_warning():
    with pytest.warns(DataWarning, match="NO_HOLDOUT"):
        res = br.inference_risk(IORIG, ISYN, secret="c", aux_columns=["a"], n_attacks=None,
                                random_seed=0)
    row = res.table.iloc[0]
    assert row.risk == pytest.approx(wilson(3, 5)[0]) and math.isnan(row.control_rate)
    assert "NO_HOLDOUT" in res.warnings
    assert set(res.records["role"]) == {"original"}


def test_result_conventions(tmp_path):
    res = _quiet(br.inference_risk, IORIG, ISYN, secret=["s", "c"], aux_columns=["a"],
                 holdout=IHOLD, n_attacks=None, random_seed=0)
    assert isinstance(res, br.InferenceResult) and isinstance(res, br.RiskResult)
    d = res.to_dict()
    json.dumps(d)
    assert d["measure"] == "inference" and len(d["table"]) == 2
    assert res.headline()["secret"].tolist() == ["s", "c"]
    text = str(res)
    assert "Inference risk" in text and "a" in text and "<table" in res._repr_html_()
    # the records name who was attacked, never a confidential value
    assert list(res.records.columns) == ["dataset", "secret", "role", "row", "correct", "tied"]
    import matplotlib.pyplot as plt

    for kind in res.plot_kinds:
        ax = res.plot(kind)
        assert ax.get_ylabel() and [t.get_text() for t in ax.get_xticklabels()] == ["s", "c"]
        ax.figure.savefig(tmp_path / f"inference_{kind}.png")
        plt.close(ax.figure)
