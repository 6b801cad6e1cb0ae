"""sdcMicro's risk of the original (``original_risk``): hand-computed small tables for every
measure, SUDA2 against a brute-force enumeration of minimal sample uniques, invariants
(hypothesis), the result's API and bad input. The comparison with sdcMicro's own outputs is in
``test_original_risk_reference.py``."""

from __future__ import annotations

import math
import warnings
from itertools import combinations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

import bayes_risk as br
from bayes_risk.disclosure import OriginalRisk, original_risk
from bayes_risk.exceptions import DataWarning, SchemaError, ValidationError

#: sdcMicro's francdat (keys Key1-Key4, weights w, sensitive Num3)
FRANCDAT = pd.DataFrame({
    "Key1": [1, 1, 1, 3, 4, 4, 6, 1], "Key2": [2, 2, 2, 3, 3, 3, 2, 2],
    "Key3": [5, 1, 1, 1, 1, 1, 1, 5], "Key4": [1, 1, 1, 5, 4, 1, 5, 1],
    "Num3": [4, 22, 8, 91, 13, 14, 1, 5], "w": [18, 45.5, 39, 17, 541, 8, 5, 92],
})
FKEYS = ["Key1", "Key2", "Key3", "Key4"]


def _quiet(*args, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return original_risk(*args, **kw)


# ---- individual and global risk by hand ----------------------------------------------------
def test_unweighted_risk_is_one_over_fk():
    """Cells (1,1) x2, (1,2) x1, (2,1) x3: risk 1/f_k, expected re-identifications = number of
    key cells (3), global risk 3/6; k-anonymity f_k < 2, 3, 5: 1, 3, 6 records."""
    d = pd.DataFrame({"a": [1, 1, 1, 2, 2, 2], "b": [1, 1, 2, 1, 1, 1]})
    r = original_risk(d, keys=["a", "b"], suda=False)
    np.testing.assert_array_equal(r.records["fk"], [2, 2, 1, 3, 3, 3])
    np.testing.assert_array_equal(r.records["Fk"], r.records["fk"])
    np.testing.assert_allclose(r.records["risk"], [1 / 2, 1 / 2, 1, 1 / 3, 1 / 3, 1 / 3])
    assert r.global_risk["expected_reidentifications"] == pytest.approx(3.0)
    assert r.global_risk["global_risk"] == pytest.approx(0.5)
    assert r.global_risk["global_risk_pct"] == pytest.approx(50.0)
    assert [r.k_anonymity[k]["n_violating"] for k in ("2", "3", "5")] == [1, 3, 6]
    assert r.key_cells == {"n_records": 6, "n_key_combinations": 3, "n_sample_uniques": 1,
                           "pct_sample_uniques": pytest.approx(100 / 6)}
    assert not r.weighted and r.settings["method"] == "sample (1/f_k)"


def test_weighted_risk_by_hand():
    """Benedetti-Franconi with p = f/F: f = 1: (p/q) log(1/p); f = 2: p/q - (p/q)^2 log(1/p);
    f = 3: the approximation p/(f - q), the exact integral of s^2/(1 + s) on [0, 1]."""
    d = pd.DataFrame({"a": [1, 1, 1, 2, 2, 2], "b": [1, 1, 2, 1, 1, 1],
                      "w": [10, 30, 5, 2, 2, 2]})
    r = original_risk(d, keys=["a", "b"], weights="w", suda=False)
    np.testing.assert_array_equal(r.records["Fk"], [40, 40, 5, 6, 6, 6])
    r2 = 1 / 19 - (1 / 19) ** 2 * math.log(20)  # f = 2, p = 1/20
    r1 = 0.25 * math.log(5)  # f = 1, p = 1/5
    r3 = 0.5 / (3 - 0.5)  # f = 3, p = 1/2
    np.testing.assert_allclose(r.records["risk"], [r2, r2, r1, r3, r3, r3], rtol=1e-13)
    assert r.global_risk["expected_reidentifications"] == pytest.approx(2 * r2 + r1 + 3 * r3)
    # F_k < k: the weighted k-anonymity count of sdcMicro's kAnon_violations
    assert r.k_anonymity["5"]["n_violating_population"] == 0
    assert r.k_anonymity["2"]["n_violating"] == 1
    ex = original_risk(d, keys=["a", "b"], weights="w", suda=False, method="exact")
    np.testing.assert_allclose(ex.records["risk"],
                               [r2, r2, r1, *[math.log(2) - 0.5] * 3], rtol=1e-10)


def test_weights_as_a_vector_and_equal_weights():
    """Weights given per record; weights of 1 make F_k = f_k and the risk 1/f_k (sdcMicro)."""
    d = pd.DataFrame({"a": [1, 1, 2, 3, 3, 3]})
    r = original_risk(d, keys=["a"], weights=np.ones(6), suda=False)
    np.testing.assert_allclose(r.records["risk"], 1 / r.records["fk"])
    assert r.settings["weights"] == "given (one per record)"


def test_weights_near_one_do_not_cancel_digits():
    """F_k = f_k (1 + 1e-9): the risk is 1/f_k to 1e-9, where the textbook formula for f = 2,
    p/q - (p/q)^2 log(1/p), loses every digit."""
    d = pd.DataFrame({"a": [1, 1, 2, 3, 3, 3]})
    r = original_risk(d, keys=["a"], weights=np.full(6, 1 + 1e-9), suda=False)
    np.testing.assert_allclose(r.records["risk"], 1 / r.records["fk"], rtol=1e-8)


def test_weights_below_one_warn_and_take_the_largest_risk():
    d = pd.DataFrame({"a": [1, 1, 2], "w": [0.4, 0.5, 3.0]})
    with pytest.warns(DataWarning, match="WEIGHTED_FREQUENCY_BELOW_SAMPLE"):
        r = original_risk(d, keys=["a"], weights="w", suda=False)
    assert r.warnings == ["WEIGHTED_FREQUENCY_BELOW_SAMPLE"]
    np.testing.assert_allclose(r.records["risk"][:2], 0.5)  # 1/f_k, never above it
    assert 0 < r.records["risk"][2] < 1


def test_approximation_never_understates_the_exact_risk():
    """sdcMicro's approximation for f_k >= 3 overstates E(1/F | f) by at most about 4 %."""
    from bayes_risk.disclosure.original_risk import _risk_approx, _risk_exact

    f = np.repeat(np.arange(1.0, 13.0), 60)
    z = np.tile(np.logspace(-5, 5, 60), 12)
    a, e = _risk_approx(f, z), _risk_exact(f, z)
    assert np.all(a >= e * (1 - 1e-10))
    assert 1.03 < (a / e).max() < 1.045
    np.testing.assert_allclose(a[f <= 2], e[f <= 2], rtol=1e-9)  # exact for 1 and 2


def test_exact_risk_is_the_negative_binomial_expectation():
    """E(1/F | f) with F - f ~ NB(f, p), summed term by term, for a few cells."""
    from scipy.stats import nbinom

    from bayes_risk.disclosure.original_risk import _risk_exact

    for f, F in ((3, 4.5), (5, 10), (2, 40), (8, 9)):
        p = f / F
        h = np.arange(0, 20000)
        expect = float(np.sum(nbinom.pmf(h, f, p) / (f + h)))
        assert _risk_exact(np.array([f], float), np.array([(F - f) / f]))[0] == \
            pytest.approx(expect, rel=1e-9)


# ---- missing key values ---------------------------------------------------------------------
MISS = pd.DataFrame({"a": [1, 1, 1, 2, None, 2], "b": [1, 1, None, None, None, 3],
                     "w": [10, 20, 30, 40, 50, 60]})


def test_missing_keys_are_a_value_by_default():
    r = original_risk(MISS, keys=["a", "b"], weights="w", suda=False)
    np.testing.assert_array_equal(r.records["fk"], [2, 2, 1, 1, 1, 1])
    np.testing.assert_array_equal(r.records["Fk"], [30, 30, 30, 40, 50, 60])
    assert r.settings["n_missing_keys"] == {"a": 1, "b": 3}


def test_missing_keys_as_sdcmicro_wildcards():
    """sdcMicro's freqCalc (checked against sdcMicro 5.8.1): (1, NA) counts the records with
    a = 1 and (NA, NA); (1, 1) counts (1, NA) but not (NA, NA); (NA, NA) counts everyone."""
    r = original_risk(MISS, keys=["a", "b"], weights="w", suda=False, compat="sdcmicro")
    np.testing.assert_array_equal(r.records["fk"], [3, 3, 4, 3, 6, 2])
    np.testing.assert_array_equal(r.records["Fk"], [60, 60, 110, 150, 210, 100])
    # one key: the complete records count every record missing it
    one = original_risk(pd.DataFrame({"a": [1, 1, None, 2]}), keys=["a"], suda=False,
                        compat="sdcmicro")
    np.testing.assert_array_equal(one.records["fk"], [3, 3, 4, 2])


# ---- SUDA2 ----------------------------------------------------------------------------------
def test_suda_francdat_by_hand():
    """M = 4 keys, an MSU of size k scores (4 - k)!. Record 4 (3,3,1,5): {Key1} (6) and
    {Key2, Key4} (2): 8; record 5: {Key4}: 6; record 6: {Key1, Key4}, {Key2, Key4}: 4;
    record 7: {Key1}, {Key2, Key4}: 8; the others are not unique on the four keys."""
    r = original_risk(FRANCDAT, keys=FKEYS)
    np.testing.assert_array_equal(r.records["suda_score"], [0, 0, 0, 8, 6, 4, 8, 0])
    np.testing.assert_array_equal(r.records["min_msu_size"], [0, 0, 0, 1, 1, 2, 1, 0])
    contrib = r.records[[f"{k}_contribution" for k in FKEYS]].to_numpy()
    np.testing.assert_allclose(contrib[3], [0.75, 0.25, 0, 0.25])
    np.testing.assert_allclose(contrib[5], [0.5, 0.5, 0, 1.0])
    assert r.suda["n_msu_by_size"] == {"1": 3, "2": 4, "3": 0, "4": 0}
    # attribute contributions: 100 * (MSU weight holding the key) / total score 26
    np.testing.assert_allclose(r.suda["attribute_contributions"]["contribution"],
                               [1400 / 26, 600 / 26, 0, 1400 / 26])
    # DIS: 4 records in full-key pairs, f = 0.01, Q = 1 + (8 - 4)/20
    s = np.array([8.0, 6.0, 4.0, 8.0])
    Q = 1.2
    adj = np.sum(s ** -Q)
    dis = 1 / (1 + 4 * 0.99 / 0.01 / (s ** Q * adj))
    np.testing.assert_allclose(r.records["dis_suda_score"].to_numpy()[3:7], dis, rtol=1e-12)
    assert r.records["dis_suda_score"].to_numpy()[[0, 1, 2, 7]].tolist() == [0, 0, 0, 0]
    tab = r.suda["dis_table"]
    assert tab["records"].sum() == 8 and tab.loc[0, "records"] == 4


def _brute_msu(codes: np.ndarray, usable: np.ndarray) -> list[list[tuple[int, ...]]]:
    """Every record's minimal sample uniques by enumeration: the key sets (of keys the record
    may use) on which no other record shares its values, none of whose proper subsets is one
    (a lone record is unique on the empty set: it has none)."""
    n, p = codes.shape
    out = []
    for i in range(n):
        uniq: list[tuple[int, ...]] = [()] if n == 1 else []
        for k in range(1, p + 1):
            for S in combinations(range(p), k):
                if not usable[i, list(S)].all():
                    continue
                if any(set(T) <= set(S) for T in uniq):
                    continue
                others = np.all(codes[:, list(S)] == codes[i, list(S)], axis=1)
                if others.sum() == 1:
                    uniq.append(S)
        out.append([S for S in uniq if S])
    return out


@given(st.lists(st.tuples(st.integers(0, 2), st.integers(0, 2), st.integers(0, 1),
                          st.sampled_from([0, 1, None])), min_size=1, max_size=14),
       st.integers(1, 4))
def test_suda_matches_enumeration(rows, max_size):
    d = pd.DataFrame(rows, columns=list("abcd"))
    keys = list("abcd")
    codes = np.column_stack([pd.factorize(d[k], use_na_sentinel=False)[0] for k in keys])
    for compat in (None, "sdcmicro"):
        usable = (np.ones_like(codes, dtype=bool) if compat is None
                  else d[keys].notna().to_numpy())
        msus = _brute_msu(codes, usable)
        r = _quiet(d, keys=keys, compat=compat, max_size=max_size)
        score = [sum(math.factorial(4 - len(S)) for S in m if len(S) <= max_size)
                 for m in msus]
        np.testing.assert_allclose(r.records["suda_score"], score)


def test_few_keys_warn_and_score_as_three():
    d = pd.DataFrame({"a": [1, 1, 2, 3], "b": [1, 2, 1, 1]})
    with pytest.warns(DataWarning, match="SUDA_FEW_KEYS"):
        r = original_risk(d, keys=["a", "b"])
    # M = 3 (sdcMicro pads): a 1-key MSU scores 2! = 2 (b = 2, a = 2, a = 3), a 2-key MSU
    # 1! = 1 ((1, 1))
    np.testing.assert_array_equal(r.records["suda_score"], [1, 2, 2, 2])
    assert "SUDA_FEW_KEYS" in r.warnings


def test_suda_refuses_too_many_subsets():
    d = pd.DataFrame({f"k{i}": [0, 1] for i in range(17)})
    with pytest.raises(ValidationError, match="max_size"):
        original_risk(d, keys=list(d.columns))
    r = original_risk(d, keys=list(d.columns), max_size=2)  # 17 + 136 subsets
    assert r.suda["max_size"] == 2


# ---- l-diversity ----------------------------------------------------------------------------
def test_l_diversity_by_hand():
    """One key cell with sensitive counts 3, 2, 1: distinct 3, entropy exp(H), recursive (c, l):
    the largest l with r_1 < c (r_l + ... + r_m): 2 for c = 2, 1 for c = 1."""
    d = pd.DataFrame({"k": [1] * 6 + [2, 2], "s": ["x", "x", "x", "y", "y", "z", "u", "u"]})
    r = original_risk(d, keys=["k"], sensitive="s", suda=False)
    ent = math.exp(-sum(p * math.log(p) for p in (3 / 6, 2 / 6, 1 / 6)))
    np.testing.assert_allclose(r.records["s_Distinct_Ldiversity"], [3] * 6 + [1, 1])
    np.testing.assert_allclose(r.records["s_Entropy_Ldiversity"], [ent] * 6 + [1, 1])
    np.testing.assert_allclose(r.records["s_Recursive_Ldiversity"], [2] * 6 + [1, 1])
    c1 = original_risk(d, keys=["k"], sensitive="s", suda=False, recursive_c=1)
    np.testing.assert_allclose(c1.records["s_Recursive_Ldiversity"], [1] * 8)
    s = r.l_diversity["s"]
    assert s["n_records_l1"] == 2 and s["pct_records_l1"] == pytest.approx(25.0)
    assert s["min"] == 1 and s["max"] == 3


def test_missing_sensitive_values():
    """By default a missing sensitive value is one value; sdcMicro counts each as distinct."""
    d = pd.DataFrame({"k": [1, 1, 1, 1], "s": [1.0, None, None, 1.0]})
    assert original_risk(d, keys=["k"], sensitive="s", suda=False).records[
        "s_Distinct_Ldiversity"].tolist() == [2] * 4
    assert original_risk(d, keys=["k"], sensitive="s", suda=False, compat="sdcmicro").records[
        "s_Distinct_Ldiversity"].tolist() == [3] * 4


def test_mostly_unique_numeric_sensitive_column_warns():
    """A numeric sensitive column with mostly distinct values: l-diversity counts close values
    as diverse (it overstates the protection), so it warns; grouped first, it does not, and
    the distinct l-diversity counts the ranges."""
    rng = np.random.default_rng(0)
    d = pd.DataFrame({"k": np.repeat([1, 2, 3, 4], 25),
                      "income": np.round(rng.lognormal(10, 0.1, 100), 2)})
    with pytest.warns(DataWarning, match="SENSITIVE_MOSTLY_UNIQUE"):
        r = original_risk(d, keys=["k"], sensitive="income", suda=False)
    assert "SENSITIVE_MOSTLY_UNIQUE" in r.warnings
    assert r.l_diversity["income"]["min"] == 25  # every value distinct: the cell size
    grouped = d.assign(income=pd.qcut(d["income"], 3, labels=False))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        g = original_risk(grouped, keys=["k"], sensitive="income", suda=False)
    assert "SENSITIVE_MOSTLY_UNIQUE" not in g.warnings
    assert g.l_diversity["income"]["max"] <= 3
    # 20 distinct values or fewer: a coded column, no warning
    coded = d.assign(income=np.arange(100) % 20)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        original_risk(coded, keys=["k"], sensitive="income", suda=False)


# ---- invariants -----------------------------------------------------------------------------
_TABLES = st.lists(st.tuples(st.integers(0, 3), st.integers(0, 2), st.integers(0, 2),
                             st.floats(1.0, 50.0), st.integers(0, 3)), min_size=1, max_size=40)


def _frame(rows):
    return pd.DataFrame(rows, columns=["a", "b", "c", "w", "s"])


@given(_TABLES, st.sampled_from(["approx", "exact"]))
def test_risk_is_a_probability(rows, method):
    d = _frame(rows)
    for w in (None, "w"):
        r = _quiet(d, keys=["a", "b", "c"], weights=w, method=method, sensitive="s")
        risk = r.records["risk"].to_numpy()
        assert np.all((risk > 0) & (risk <= 1 / r.records["fk"].to_numpy() + 1e-12))
        dis = r.records["dis_suda_score"].to_numpy()
        assert np.all((dis >= 0) & (dis <= 1))
        assert r.global_risk["expected_reidentifications"] == pytest.approx(risk.sum())


@given(_TABLES)
def test_adding_a_key_never_lowers_the_counts(rows):
    """Finer key cells: no k-anonymity count, sample-based risk or SUDA score can fall."""
    d = _frame(rows)
    few = _quiet(d, keys=["a", "b"], sensitive="s")
    more = _quiet(d, keys=["a", "b", "c"], sensitive="s")
    for k in ("2", "3", "5"):
        assert more.k_anonymity[k]["n_violating"] >= few.k_anonymity[k]["n_violating"]
    assert np.all(more.records["risk"].to_numpy() >= few.records["risk"].to_numpy())
    assert np.all(more.records["s_Distinct_Ldiversity"].to_numpy()
                  <= few.records["s_Distinct_Ldiversity"].to_numpy())


@given(_TABLES, st.randoms(use_true_random=False))
def test_row_order_does_not_matter(rows, rnd):
    d = _frame(rows)
    perm = list(range(len(d)))
    rnd.shuffle(perm)
    for compat in (None, "sdcmicro"):
        a = _quiet(d, keys=["a", "b", "c"], weights="w", sensitive="s", compat=compat)
        b = _quiet(d.iloc[perm], keys=["a", "b", "c"], weights="w", sensitive="s",
                   compat=compat)
        pd.testing.assert_frame_equal(a.records.loc[d.index[perm]], b.records, rtol=1e-12)
        assert a.global_risk["expected_reidentifications"] == pytest.approx(
            b.global_risk["expected_reidentifications"])


@given(_TABLES)
def test_compat_changes_nothing_without_missing_values(rows):
    d = _frame(rows)
    a = _quiet(d, keys=["a", "b", "c"], weights="w", sensitive="s")
    b = _quiet(d, keys=["a", "b", "c"], weights="w", sensitive="s", compat="sdcmicro")
    pd.testing.assert_frame_equal(a.records, b.records)


# ---- the result -----------------------------------------------------------------------------
def test_result_api():
    r = original_risk(FRANCDAT, keys=FKEYS, weights="w", sensitive="Num3")
    assert isinstance(r, OriginalRisk) and isinstance(r, br.RiskResult)
    assert br.original_risk is original_risk and br.OriginalRisk is OriginalRisk
    d = r.to_dict()
    assert d["global_risk"]["expected_reidentifications"] == pytest.approx(0.966526045199967)
    assert d["suda"]["attribute_contributions"][0] == {"variable": "Key1",
                                                       "contribution": pytest.approx(1400 / 26)}
    assert set(d["l_diversity"]) == {"Num3"} and d["settings"]["weights"] == "w"
    import json

    json.dumps(d)  # JSON-safe
    text = r.summary().as_text()
    assert "expected re-identifications" in text and "Benedetti" in text
    assert "k-anonymity" in text and "SUDA2" in text and "l-diversity" in text
    assert r.to_dataframe().equals(r.records) and r.to_dataframe() is not r.records
    assert "1/f_k" in original_risk(FRANCDAT, keys=FKEYS, suda=False).summary().as_text()


def test_plots_draw_on_the_given_axes():
    from matplotlib.figure import Figure

    r = original_risk(FRANCDAT, keys=FKEYS, weights="w", sensitive="Num3")
    for kind in OriginalRisk.plot_kinds:
        ax, other = Figure().subplots(1, 2)
        where = other.get_position().bounds
        assert r.plot(kind, ax=ax) is ax  # the package's convention: the Axes drawn on
        assert ax.has_data() and not other.has_data()
        assert other.get_position().bounds == where  # a caller's panels are not laid out
    leg = r.plot("risk", ax=Figure().add_subplot()).get_legend()
    assert "global risk" in leg.get_texts()[0].get_text()
    r0 = original_risk(FRANCDAT, keys=FKEYS, suda=False)
    with pytest.raises(ValidationError, match="no SUDA2"):
        r0.plot("suda")
    with pytest.raises(ValidationError, match="no l-diversity"):
        r0.plot("l_diversity")
    with pytest.raises(ValidationError, match="sensitive must be one of"):
        r.plot("l_diversity", sensitive="nope")


# ---- bad input ------------------------------------------------------------------------------
@pytest.mark.parametrize(("kw", "err", "match"), [
    ({"keys": ["Key1", "nope"]}, SchemaError, r"keys: column\(s\) \['nope'\]"),
    ({"keys": FKEYS, "sensitive": "nope"}, SchemaError, "sensitive: column"),
    ({"keys": FKEYS, "weights": "nope"}, SchemaError, "weights: column"),
    ({"keys": []}, ValidationError, "keys must be a non-empty sequence of column names"),
    ({"keys": ["Key1", "Key1"]}, ValidationError, "each listed once"),
    ({"keys": FKEYS, "sensitive": "Key1"}, ValidationError,
     r"sensitive and keys both name \['Key1'\]"),
    ({"keys": FKEYS, "method": "mc"}, ValidationError, "method must be"),
    ({"keys": FKEYS, "compat": "R"}, ValidationError, "compat must be"),
    ({"keys": FKEYS, "max_size": 0}, ValidationError, "max_size must be"),
    ({"keys": FKEYS, "dis_fraction": 1.0}, ValidationError, "dis_fraction must be"),
    ({"keys": FKEYS, "recursive_c": 0}, ValidationError, "recursive_c must be"),
    ({"keys": FKEYS, "k_anonymity": [1]}, ValidationError, "k_anonymity values"),
    ({"keys": FKEYS, "weights": [1.0, 2.0]}, ValidationError, "one weight per original"),
    ({"keys": FKEYS, "weights": [1.0] * 7 + [-1.0]}, ValidationError, "positive"),
])
def test_bad_input_names_the_argument(kw, err, match):
    with pytest.raises(err, match=match):
        original_risk(FRANCDAT, **kw)


def test_bad_tables():
    with pytest.raises(ValidationError, match="original must be a pandas DataFrame"):
        original_risk(FRANCDAT.to_numpy(), keys=["Key1"])
    with pytest.raises(ValidationError, match="no records") as e:
        original_risk(FRANCDAT.iloc[:0], keys=["Key1"])
    assert e.value.code == "EMPTY_TABLE"
