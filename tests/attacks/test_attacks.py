"""Singling-out and linkability risk (anonymeter's definitions, Giomi et al. 2023) re-derived by
hand on small tables, their rates and risk from anonymeter's formulas, the options, the
warnings and the invariants (hypothesis)."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import integrate, stats

import bayes_risk as br
from bayes_risk.attacks import linkability, predicates, singling_out
from bayes_risk.attacks.rates import attack_risk, success_rate
from bayes_risk.exceptions import DataWarning, SchemaError, ValidationError

Z = stats.norm.ppf(0.975)


def wilson(k: float, n: int, z: float = Z) -> tuple[float, float]:
    """Wilson (1927) centre and half-width, written out."""
    return ((k + z * z / 2) / (n + z * z),
            z / (n + z * z) * math.sqrt(k * (n - k) / n + z * z / 4))


def residual(main: tuple[float, float], ctrl: tuple[float, float]) -> tuple[float, float]:
    (rm, em), (rc, ec) = main, ctrl
    value = (rm - rc) / (1 - rc)
    return value, math.sqrt((em / (1 - rc)) ** 2 + (ec * (rm - 1) / (1 - rc) ** 2) ** 2)


# ------------------------------------------------------------------------------------------ rates
def test_wilson_rate_and_residual_by_hand():
    r = success_rate(3, 10)
    c, e = wilson(3, 10)
    assert r.rate == pytest.approx(c, rel=1e-12) and r.error == pytest.approx(e, rel=1e-12)
    assert r.rate == pytest.approx((3 + 1.9207294103) / (10 + 3.8414588207), rel=1e-9)
    main, ctrl = success_rate(40, 100), success_rate(10, 100)
    risk = attack_risk(main, ctrl)
    v, err = residual(wilson(40, 100), wilson(10, 100))
    assert risk.residual == pytest.approx(v, rel=1e-12)
    assert risk.error == pytest.approx(err, rel=1e-12)
    assert risk.ci == pytest.approx((v - err, v + err), rel=1e-12)
    # the control doing better: a negative residual, clipped to 0 as anonymeter does
    neg = attack_risk(success_rate(10, 100), success_rate(40, 100))
    assert neg.residual < 0 and neg.risk == 0.0 and neg.ci[0] == 0.0
    # no control: the main rate, clipped
    alone = attack_risk(main, None)
    assert alone.risk == pytest.approx(wilson(40, 100)[0], rel=1e-12)
    # 90 % intervals are narrower
    assert success_rate(40, 100, 0.90).error < main.error
    assert math.isnan(success_rate(0, 0).rate)


@given(n=st.integers(1, 5000), k_frac=st.floats(0, 1), c_frac=st.floats(0, 1),
       level=st.floats(0.5, 0.999))
def test_rate_and_risk_invariants(n, k_frac, c_frac, level):
    k, c = round(k_frac * n), c_frac * n
    r, q = success_rate(k, n, level), success_rate(c, n, level)
    for x in (r, q):
        assert 0 < x.rate < 1 and x.error > 0
        assert 0 <= x.rate - x.error <= x.rate + x.error <= 1 + 1e-12
    risk = attack_risk(r, q)
    assert risk.residual <= 1
    assert 0 <= risk.ci[0] <= risk.risk <= risk.ci[1] <= 1
    if k == c:
        assert risk.residual == pytest.approx(0.0, abs=1e-12)


# ------------------------------------------------------------------------------- singling out
SYN = pd.DataFrame({"a": ["A", "A", "B", "B", "C"], "x": [1.0, 2.0, 2.0, 3.0, 5.0]})
ORIG = pd.DataFrame({"a": ["A", "C", "C", "B", "A"], "x": [1.0, 5.0, 4.0, 3.0, 2.0]})
# a duplicated record (anonymeter deduplicates: 5 distinct, as the original)
HOLD = pd.DataFrame({"a": ["A", "A", "B", "C", "C", "B"], "x": [1.0, 1.0, 2.0, 6.0, 7.0, 9.0]})


def _quiet(fn, *args, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)
        return fn(*args, **kw)


def test_univariate_singling_out_by_hand():
    # predicates on SYN: a == 'C' (rare level), x <= 1, x >= 5 (extremes), x == 1, x == 3,
    # x == 5 (values of one row). On ORIG all but a == 'C' (2 records) single out: 5 of 6;
    # on HOLD (5 distinct) x <= 1 and x == 1 only: 2 of 6
    res = _quiet(br.singling_out_risk, ORIG, SYN, holdout=HOLD, mode="univariate",
                 n_attacks=50, random_seed=3)
    row = res.table.iloc[0]
    assert set(res.queries["query"]) == {"a == 'C'", "x <= 1", "x >= 5", "x == 1", "x == 3",
                                         "x == 5"}
    assert (row.n_queries, row.n_main, row.n_control) == (6, 5, 2)
    assert math.isnan(row.control_correction)  # same number of distinct records
    got = res.queries.set_index("query")
    assert not got.loc["a == 'C'", "singles_out_original"]
    assert list(got.loc[["x <= 1", "x == 1"], "singles_out_holdout"]) == [True, True]
    v, err = residual(wilson(5, 6), wilson(2, 6))
    assert row.residual == pytest.approx(v, rel=1e-12)
    assert (row.ci_low, row.ci_high) == pytest.approx((max(v - err, 0), min(v + err, 1)))
    assert row.main_rate == pytest.approx(wilson(5, 6)[0])
    # the baseline's 50 random predicates: rate over n_attacks
    assert row.baseline_rate == pytest.approx(wilson(row.n_baseline, 50)[0])
    assert "FEW_SINGLING_OUT_QUERIES" in res.warnings


def test_multivariate_singling_out_by_hand():
    # n_cols = 2 = every column; the median of x in SYN is 2, so a row gives a == its level &
    # (x >= value if value > 2 else x <= value). Rows 1, 3, 4, 5 give predicates that single
    # out a synthetic row (row 2's, a == 'A' & x <= 2, matches rows 1 and 2):
    #   a=='A' & x<=1  -> ORIG 1, HOLD 1
    #   a=='B' & x<=2  -> ORIG 0, HOLD 1 ((B, 2))
    #   a=='B' & x>=3  -> ORIG 1, HOLD 1 ((B, 9))
    #   a=='C' & x>=5  -> ORIG 1, HOLD 2
    res = _quiet(br.singling_out_risk, ORIG, SYN, holdout=HOLD, mode="multivariate",
                 predicates=br.PredicateSpec(n_cols=2, max_attempts=3000), n_attacks=10,
                 random_seed=5)
    row = res.table.iloc[0]
    assert set(res.queries["query"]) == {"a == 'A' & x <= 1", "a == 'B' & x <= 2",
                                         "a == 'B' & x >= 3", "a == 'C' & x >= 5"}
    assert (row.n_queries, row.n_main, row.n_control) == (4, 3, 3)
    assert row.residual == pytest.approx(residual(wilson(3, 4), wilson(3, 4))[0], abs=1e-12)
    assert "FEW_SINGLING_OUT_QUERIES" in res.warnings


def test_missing_values_in_predicates():
    # a missing cell is matched by "is missing" only: x != 1 does not match it. The
    # synthetic table is deduplicated first (anonymeter's rule): 2 is then a value of one row
    syn = pd.DataFrame({"x": [1.0, np.nan, 2.0, 2.0]})
    orig = pd.DataFrame({"x": [np.nan, 2.0, 3.0, 1.0]})
    res = _quiet(br.singling_out_risk, orig, syn, mode="univariate", n_attacks=10,
                 random_seed=0)
    q = res.queries.set_index("query")["singles_out_original"]
    assert q.to_dict() == {"x is missing": True, "x <= 1": True, "x == 1": True,
                           "x >= 2": False, "x == 2": True}
    X = np.array([[np.nan], [1.0], [2.0]])
    P = predicates.Predicates(np.zeros((4, 1), dtype=np.int64),
                              np.array([[predicates.NE], [predicates.NOTNA], [predicates.GT],
                                        [predicates.ISNA]], dtype=np.int8),
                              np.array([[1.0], [np.nan], [1.0], [np.nan]]))
    assert predicates.count_matches(X, P).tolist() == [1, 2, 1, 1]


def test_size_correction_is_anonymeters_model():
    # the integral of P(w, n) = n w (1 - w)^(n - 1) over [0, w] (Cohen & Nissim 2020)
    for n, w in ((50, 0.01), (1000, 0.002), (7, 0.5)):
        num, _ = integrate.quad(lambda t, n=n: n * t * (1 - t) ** (n - 1), 0, w)
        assert singling_out._integral(n, w) == pytest.approx(num, rel=1e-9)
    rng = np.random.default_rng(0)
    C = rng.integers(0, 40, size=(3000, 2)).astype(float)
    S = rng.integers(0, 40, size=(800, 2)).astype(float)
    preds = singling_out._univariate_queries(S, np.array([False, False]), 200,
                                             np.random.default_rng(1))
    factor, info = singling_out.size_correction(C, preds, 1500, np.random.default_rng(2))
    assert info["sizes"][0] == 1000 and info["sizes"][-1] == 3000
    w, a = info["w_eff"], info["norm"]
    assert factor == pytest.approx(singling_out._integral(1500.0, w)
                                   / singling_out._integral(3000.0, w), rel=1e-12)
    assert a > 0
    # a smaller holdout: the fit starts at half its size (anonymeter's min(1000, n) would make
    # every size equal)
    _, small = singling_out.size_correction(C[:600], preds, 1500, np.random.default_rng(2))
    assert small["sizes"][0] == 300 and small["sizes"][-1] == 600


def test_control_count_is_corrected_for_the_holdout_size():
    rng = np.random.default_rng(7)
    orig = pd.DataFrame({"x": rng.integers(0, 600, 1200), "y": rng.integers(0, 50, 1200)})
    hold = pd.DataFrame({"x": rng.integers(0, 600, 500), "y": rng.integers(0, 50, 500)})
    syn = pd.DataFrame({"x": rng.integers(0, 600, 1200), "y": rng.integers(0, 50, 1200)})
    with pytest.warns(DataWarning, match="CONTROL_SIZE_CORRECTION"):
        res = br.singling_out_risk(orig, syn, holdout=hold, mode="univariate", n_attacks=100,
                                   random_seed=1)
    row = res.table.iloc[0]
    # 600 values in 1,200 records: a value unique among 500 is often shared among 1,200
    assert 0 < row.control_correction < 1
    assert row.n_control == pytest.approx(min(row.n_control_raw * row.control_correction,
                                              row.n_queries))
    assert res.settings["control_correction"]["1/univariate"]["factor"] == row.control_correction


# -------------------------------------------------------------------------------- linkability
LSYN = pd.DataFrame({"u": [0.0, 10, 20, 30], "v": [0.0, 30, 10, 20]})
LORIG = pd.DataFrame({"u": [1.0, 11, 29, 19], "v": [2.0, 12, 29, 1]})
LHOLD = pd.DataFrame({"u": [4.0, 16, 33, 7], "v": [26.0, 14, 3, 17]})


def test_linkability_by_hand():
    # nearest synthetic rows on u and on v (no ties):
    #   LORIG: (1, 2) s0|s0 -> k 1; (11, 12) s1,s2|s2,s3 -> 2; (29, 29) s3,s2|s1,s3 -> 2;
    #          (19, 1) s2,s1|s0,s2 -> 2
    #   LHOLD: (4, 26) s0,s1|s1,s3 -> 2; (16, 14) s2|s2 -> 1; (33, 3) s3,s2|s0,s2 -> 2;
    #          (7, 17) s1,s0|s3,s2 -> never
    res = br.linkability_risk(LORIG, LSYN, aux_columns=(["u"], ["v"]), holdout=LHOLD,
                              n_attacks=None, n_neighbors=2, random_seed=0)
    t = res.table.set_index("n_neighbors")
    assert t.loc[1, ["n_main", "n_control"]].tolist() == [1, 1]
    assert t.loc[2, ["n_main", "n_control"]].tolist() == [4, 3]
    recs = res.records.set_index(["role", "row"])["linked_at"]
    assert recs.loc["original"].tolist() == [1, 2, 2, 2]
    assert recs.loc["holdout"].tolist()[:3] == [2, 1, 2] and pd.isna(recs.loc[("holdout", 3)])
    v, err = residual(wilson(4, 4), wilson(3, 4))
    assert t.loc[2, "residual"] == pytest.approx(v, rel=1e-12)
    assert t.loc[2, "ci_high"] == pytest.approx(min(v + err, 1.0))
    assert not res.records["tied"].any()
    # the baseline: random rows, over the same n_attacks
    assert t.loc[2, "baseline_rate"] == pytest.approx(wilson(t.loc[2, "n_baseline"], 4)[0])


def test_gower_distance_by_hand():
    T = np.array([[0.0, 1.0, np.nan], [np.nan, 0.0, 5.0]])
    S = np.array([[0.0, 2.0, 5.0], [np.nan, 1.0, np.nan]])
    d = linkability._distances(T, S, np.array([True, False, False]), np.array([1, 0.5, 0.1]))
    # categorical 0/1 (missing equals missing), numeric |a - b| / range, missing vs value 1
    assert d.tolist() == [[0 + 0.5 + 1, 1 + 0 + 0], [1 + 1.0 + 0, 0 + 0.5 + 1]]


def test_equally_distant_rows_are_taken_in_random_order():
    # the first part of every record is at the same distance from all 10 synthetic rows: its 2
    # nearest are 2 of them at random. Its second part is nearest row 3, then rows 2 and 4
    # (equally distant, one of them at random). Each part orders its ties on its own: linked
    # at k = 1 with probability 1/10, at k <= 2 when the first part's 2 rows hold row 3 or the
    # second part's pick: 1 - C(8, 2) / C(10, 2) = 17/45
    syn = pd.DataFrame({"a": ["x"] * 10, "b": np.arange(10.0)})
    orig = pd.DataFrame({"a": ["x"] * 3000, "b": np.full(3000, 3.0)})
    res = _quiet(br.linkability_risk, orig, syn, aux_columns=(["a"], ["b"]), n_attacks=3000,
                 n_neighbors=2, random_seed=11)
    t = res.table.set_index("n_neighbors")
    for k, p in ((1, 0.1), (2, 17 / 45)):
        assert abs(t.loc[k, "n_main"] - 3000 * p) < 4 * math.sqrt(3000 * p * (1 - p))
    assert res.records["tied"].all() and t.loc[1, "share_tied_main"] == 1.0
    # no tie: the order is the distances' (the four-record example has none)
    lk = br.linkability_risk(LORIG, LSYN, aux_columns=(["u"], ["v"]), holdout=LHOLD,
                             n_attacks=4, n_neighbors=2, random_seed=0)
    assert not lk.records["tied"].any()


# ------------------------------------------------------------------ reproducibility and chunks
def _table(seed: int, n: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"c": rng.choice(["p", "q", "r"], n), "x": rng.integers(0, 60, n),
                         "y": rng.normal(size=n).round(2)})


def test_same_numbers_whatever_the_blocks(monkeypatch):
    orig, syn, hold = _table(1, 300), [_table(2, 300), _table(3, 250)], _table(4, 300)
    kw = dict(holdout=hold, n_attacks=60, random_seed=8)
    so = _quiet(br.singling_out_risk, orig, syn, **kw)
    lk = _quiet(br.linkability_risk, orig, syn, aux_columns=(["c", "x"], ["y"]), n_neighbors=3,
                **kw)
    # blocks of 7 predicates and of 2 records
    monkeypatch.setattr(predicates, "_BLOCK_CELLS", 7 * 300 + 1)
    monkeypatch.setattr(linkability, "_BLOCK_CELLS", 601)
    pd.testing.assert_frame_equal(_quiet(br.singling_out_risk, orig, syn, **kw).table, so.table)
    lk2 = _quiet(br.linkability_risk, orig, syn, aux_columns=(["c", "x"], ["y"]), n_neighbors=3,
                 **kw)
    pd.testing.assert_frame_equal(lk2.table, lk.table)
    pd.testing.assert_frame_equal(lk2.records, lk.records)
    # a mode gives the same numbers alone: its own stream
    uni = _quiet(br.singling_out_risk, orig, syn, mode="univariate", **kw)
    pd.testing.assert_frame_equal(uni.table, so.table[so.table["mode"] == "univariate"]
                                  .reset_index(drop=True))
    # the datasets are attacked on their own: two rows per mode, and the headline is the worse
    assert so.table["dataset"].tolist() == [1, 1, 2, 2]
    head = so.headline()
    assert list(head["mode"]) == ["univariate", "multivariate"]
    for _, h in head.iterrows():
        assert h["risk"] == so.table.loc[so.table["mode"] == h["mode"], "risk"].max()


@given(seed=st.integers(0, 10_000), n_cols=st.integers(1, 3))
def test_singling_out_invariants(seed, n_cols):
    rng = np.random.default_rng(seed)
    orig, syn, hold = (_table(int(s), int(rng.integers(20, 80))) for s in rng.integers(0, 99, 3))
    res = _quiet(br.singling_out_risk, orig, syn, holdout=hold, n_attacks=20,
                 predicates=br.PredicateSpec(n_cols=n_cols, max_attempts=2000),
                 random_seed=seed)
    t = res.table
    assert (t["n_queries"] <= 20).all() and (t["n_main"] <= t["n_queries"]).all()
    assert (t["n_control"] <= t["n_queries"]).all() and (t["n_baseline"] <= 20).all()
    ok = t["n_queries"] > 0
    assert ((t["ci_low"] <= t["risk"]) & (t["risk"] <= t["ci_high"]))[ok].all()
    assert t.loc[ok, ["risk", "ci_low", "ci_high"]].stack().between(0, 1).all()
    assert (t.loc[ok, "residual"] <= 1).all()


@given(seed=st.integers(0, 10_000), k=st.integers(1, 4))
def test_linkability_invariants(seed, k):
    rng = np.random.default_rng(seed)
    orig, syn, hold = (_table(int(s), int(rng.integers(20, 60))) for s in rng.integers(0, 99, 3))
    res = _quiet(br.linkability_risk, orig, syn, aux_columns=(["c"], ["x", "y"]), holdout=hold,
                 n_attacks=15, n_neighbors=k, random_seed=seed)
    t = res.table
    assert t["n_neighbors"].tolist() == list(range(1, k + 1))
    # the same nearest rows nest: more neighbours link at least as many records
    assert (np.diff(t["n_main"]) >= 0).all() and (np.diff(t["n_control"]) >= 0).all()
    assert ((t["ci_low"] <= t["risk"]) & (t["risk"] <= t["ci_high"])).all()
    assert t[["risk", "ci_low", "ci_high"]].stack().between(0, 1).all()


# ---------------------------------------------------------------------- options and warnings
def test_bad_options_name_the_argument():
    with pytest.raises(ValidationError, match="mode"):
        br.singling_out_risk(ORIG, SYN, mode="bivariate")
    with pytest.raises(ValidationError, match="n_cols=3 exceeds the 2 column"):
        br.singling_out_risk(ORIG, SYN, predicates=br.PredicateSpec(n_cols=3))
    with pytest.raises(ValidationError, match="n_attacks"):
        br.singling_out_risk(ORIG, SYN, n_attacks=0)
    with pytest.raises(ValidationError, match="confidence_level"):
        br.singling_out_risk(ORIG, SYN, confidence_level=95)
    with pytest.raises(SchemaError, match="zzz"):
        br.singling_out_risk(ORIG, SYN, predicates=br.PredicateSpec(columns=["a", "zzz"]))
    with pytest.raises(ValidationError, match="aux_columns"):
        br.linkability_risk(LORIG, LSYN, aux_columns=["u"])
    with pytest.raises(ValidationError, match=r"n_attacks=10 exceeds .* holdout 4"):
        br.linkability_risk(LORIG, LSYN, aux_columns=(["u"], ["v"]), holdout=LHOLD,
                            n_attacks=10)
    with pytest.raises(ValidationError, match="n_neighbors=5 exceeds the rows"):
        br.linkability_risk(LORIG, LSYN, aux_columns=(["u"], ["v"]), n_attacks=4, n_neighbors=5)
    with pytest.raises(SchemaError, match=r"dataset 1 is missing column\(s\) \['v'\]") as err:
        br.linkability_risk(LORIG, LSYN.drop(columns="v"), aux_columns=(["u"], ["v"]),
                            n_attacks=4)
    assert err.value.code == "MISSING_COLUMN"
    with pytest.raises(SchemaError):
        br.singling_out_risk(ORIG, SYN.assign(x=["a", "b", "c", "d", "e"]))


def test_a_holdout_copied_from_the_original_is_refused_or_screened():
    rng = np.random.default_rng(0)
    orig = pd.DataFrame({"x": rng.normal(size=200), "y": rng.normal(size=200)})
    syn = pd.DataFrame({"x": rng.normal(size=200), "y": rng.normal(size=200)})
    with pytest.raises(ValidationError) as err:
        br.singling_out_risk(orig, syn, holdout=orig.iloc[:50], mode="univariate")
    assert err.value.code == "HOLDOUT_OVERLAPS_ORIGINAL"
    hold = pd.concat([orig.iloc[:20], pd.DataFrame({"x": rng.normal(size=180),
                                                    "y": rng.normal(size=180)})])
    with pytest.warns(DataWarning) as caught:
        res = br.linkability_risk(orig, syn, aux_columns=(["x"], ["y"]), holdout=hold,
                                  n_attacks=100, random_seed=1)
    assert "HOLDOUT_OVERLAPS_ORIGINAL" in {w.message.code for w in caught}
    assert res.settings["n_holdout"] == 180 and res.settings["n_holdout_dropped"] == 20
    assert res.warnings[0] == "HOLDOUT_OVERLAPS_ORIGINAL"
    assert "control attack" in res.structured_warnings[0].message


def test_no_holdout_reads_the_main_rate_with_a_warning():
    with pytest.warns(DataWarning, match="NO_HOLDOUT"):
        res = br.linkability_risk(LORIG, LSYN, aux_columns=(["u"], ["v"]), n_attacks=4,
                                  n_neighbors=2, random_seed=0)
    row = res.table.iloc[-1]
    assert row.risk == pytest.approx(wilson(4, 4)[0]) and math.isnan(row.control_rate)
    assert "NO_HOLDOUT" in res.warnings


def test_result_conventions(tmp_path):
    res = _quiet(br.singling_out_risk, ORIG, SYN, holdout=HOLD, n_attacks=10,
                 predicates=br.PredicateSpec(n_cols=2, max_attempts=2000), random_seed=5)
    assert isinstance(res, br.SinglingOutResult) and isinstance(res, br.RiskResult)
    d = res.to_dict()
    import json

    json.dumps(d)
    assert d["measure"] == "singling_out" and len(d["table"]) == 2
    assert "Singling-out risk" in str(res) and "<table" in res._repr_html_()
    assert res.to_dataframe() is res.table
    import matplotlib.pyplot as plt
    from matplotlib.axes import Axes

    fig, axes = plt.subplots(1, 2)
    for kind, ax in zip(res.plot_kinds, axes, strict=True):  # drawn on the given Axes
        assert res.plot(kind, ax=ax) is ax and ax.get_ylabel()
    fig.savefig(tmp_path / "panels.png")
    plt.close(fig)
    lk = br.linkability_risk(LORIG, LSYN, aux_columns=(["u"], ["v"]), holdout=LHOLD,
                             n_attacks=4, n_neighbors=2, random_seed=0)
    assert isinstance(lk, br.LinkabilityResult)
    assert lk.headline()["n_neighbors"].tolist() == [2]
    for kind in lk.plot_kinds:
        ax = lk.plot(kind)  # pyplot's current Axes, returned
        assert isinstance(ax, Axes) and ax.get_xticklabels()
        ax.figure.savefig(tmp_path / f"link_{kind}.png")
        plt.close(ax.figure)
    assert "Linkability risk" in lk.summary().as_markdown()
