"""The business-data attribute measures (docs/methods/attribute.md, Business data): the relative
difference of the largest values (Kim et al. 2018) and the percentage of closest match
(Domingo-Ferrer et al. 2001; Kim et al. 2015), each against the hand-computed cases of the
methods page and against a brute-force definition written here on random releases; their
intervals, refusals and the command line end to end."""

from __future__ import annotations

import contextlib
import io
import json
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import bayes_risk.cli as cli
from bayes_risk.attribute.business import closest_match, relative_difference
from bayes_risk.data import SyntheticData, infer_schema
from bayes_risk.exceptions import NotSupportedError, SchemaError, ValidationError

# --------------------------------------------------------------- relative difference
Y = pd.DataFrame({"sales": [10.0, 50.0, 200.0]})
Z = [pd.DataFrame({"sales": [12.0, 40.0, 190.0]}), pd.DataFrame({"sales": [11.0, 230.0, 60.0]})]


def test_relative_difference_hand_computed_case():
    """The methods page's case: rank estimator (190 + 230)/2 = 210, RD 10/200 = 0.05, interval
    210 ± t(1, .975) · 28.28/√2 = [-44.12, 464.12] → RD 0 to 1.3206; own-record estimator
    (190 + 60)/2 = 125, RD 0.375, interval 125 ± 12.706 · 91.92/√2."""
    t = relative_difference(Y, Z, columns="sales").to_dataframe().set_index("estimator")
    rank, own = t.loc["rank"], t.loc["own_record"]
    assert (rank["record"], rank["true_value"], rank["estimate"]) == (2, 200.0, 210.0)
    assert rank["relative_difference"] == pytest.approx(0.05)
    half = 12.706204736174707 * 28.284271247461902 / math.sqrt(2)
    assert rank["estimate_lo"] == pytest.approx(210 - half)
    assert rank["estimate_hi"] == pytest.approx(210 + half)
    assert rank["rd_lo"] == 0.0 and rank["rd_hi"] == pytest.approx((10 + half) / 200)
    assert (rank["rd_dataset_min"], rank["rd_dataset_max"]) == pytest.approx((0.05, 0.15))
    assert bool(rank["within_delta"])  # 0.05 <= delta 0.05
    assert own["estimate"] == 125.0 and own["relative_difference"] == pytest.approx(0.375)
    half_own = 12.706204736174707 * np.std([190.0, 60.0], ddof=1) / math.sqrt(2)
    assert own["rd_hi"] == pytest.approx((75 + half_own) / 200)
    assert own["rd_lo"] == 0.0  # the interval holds 200
    assert not bool(own["within_delta"])
    res = relative_difference(Y, Z, columns="sales")
    assert res.smallest["estimator"] == "rank" and res.share_within_delta == 1.0


def _brute_rd(y: np.ndarray, zs: list[np.ndarray], r: int, own: bool) -> tuple[float, int]:
    """The r-th largest true value (ties: the first record), its estimate by rank or own row
    averaged over the datasets, and the relative difference: by sorting, written apart."""
    rec = sorted(range(y.size), key=lambda i: (-y[i], i))[r - 1]
    est = [z[rec] if own else sorted(z, reverse=True)[r - 1] for z in zs]
    return abs(np.mean(est) - y[rec]) / abs(y[rec]), rec


def test_relative_difference_against_brute_force_on_random_releases():
    rng = np.random.default_rng(7)
    for _ in range(20):
        n, m = int(rng.integers(5, 30)), int(rng.integers(1, 5))
        y = rng.lognormal(3, 1, n).round(1)
        zs = [rng.permutation(y) * rng.uniform(0.8, 1.2, n) for _ in range(m)]
        res = relative_difference(pd.DataFrame({"v": y}), [pd.DataFrame({"v": z}) for z in zs],
                                  columns=["v"], top=3)
        t = res.to_dataframe()
        for _, row in t.iterrows():
            rd, rec = _brute_rd(y, zs, int(row["rank"]), row["estimator"] == "own_record")
            assert row["record"] == rec
            assert row["relative_difference"] == pytest.approx(rd, rel=1e-12, abs=1e-15)
        assert res.smallest["relative_difference"] == t["relative_difference"].min()
        assert (m == 1) == ("M_EQUALS_ONE" in res.warnings)
        assert (m == 1) == bool(t["rd_lo"].isna().all())


def test_relative_difference_reads_declared_codes_and_refuses_what_it_cannot_measure():
    y = pd.DataFrame({"v": [5.0, -8.0, 300.0, np.nan], "c": ["a", "b", "a", "b"]})
    z = y.assign(v=[6.0, -8.0, 280.0, 1.0])
    schema = infer_schema(y, missing_codes={"v": -8}).with_roles(["v"])
    rel = SyntheticData([z, z.assign(v=[4.0, 900.0, 320.0, 2.0])], schema=schema)
    t = relative_difference(y, rel, columns=["v"], top=2).to_dataframe()
    # -8 is a missing-value code, not a value; the empty cell is none either
    assert t.loc[t["rank"] == 2, "true_value"].unique().tolist() == [5.0]
    with pytest.raises(SchemaError) as err:
        relative_difference(y, rel, columns=["c"])
    assert err.value.code == "WRONG_DTYPE"
    with pytest.raises(SchemaError) as err:
        relative_difference(y, rel, columns=["nope"])
    assert err.value.code == "UNKNOWN_COLUMN"
    with pytest.raises(ValidationError, match="has only 2 observed"):
        relative_difference(y, rel, columns=["v"], top=3)
    with pytest.raises(ValidationError) as err:
        relative_difference(pd.DataFrame({"v": [0.0, 0.0]}), [pd.DataFrame({"v": [1.0, 0.0]})],
                            columns=["v"])
    assert err.value.code == "MEASURE_UNDEFINED"
    for bad in (0.0, -1.0, math.nan, "x"):
        with pytest.raises(ValidationError, match="delta must be a finite number > 0"):
            relative_difference(Y, Z, columns=["sales"], delta=bad)


def test_a_full_synthesis_has_no_own_record_estimator():
    schema = infer_schema(Y).with_roles(["sales"])
    res = relative_difference(Y, SyntheticData(Z, schema=schema), columns=["sales"])
    assert res.to_dataframe()["estimator"].tolist() == ["rank"]
    assert "full synthesis" in res.own_record_note


# ------------------------------------------------------------------------ closest match
def test_closest_match_hand_computed_case():
    """The methods page's case: records 0 and 3 find their own row, record 1 ties rows 0 and 2
    (its own at 1.0 is farther), record 2's closest is row 1: 2/4, Wilson 15.0–85.0 %."""
    y = pd.DataFrame({"x": [0.0, 1.0, 2.0, 3.0]})
    z = pd.DataFrame({"x": [0.1, 2.0, 1.9, 3.5]})
    res = closest_match(y, [z])
    assert res.pooled == 0.5 and res.per_dataset.tolist() == [0.5] and res.value == 0.5
    t = res.to_dataframe()
    assert t["score_pooled"].tolist() == [1.0, 0.0, 0.0, 1.0]
    assert t["n_tied"].tolist() == [1, 2, 1, 1]
    lo, hi = res.interval
    assert (lo, hi) == pytest.approx((0.15003898915214953, 0.8499610108478505))
    assert res.random_guess == 0.25
    # a tie that includes the own row shares the match
    tie = closest_match(pd.DataFrame({"x": [0.0, 2.0]}), [pd.DataFrame({"x": [1.0, 1.0]})])
    assert tie.to_dataframe()["score_pooled"].tolist() == [0.5, 0.5]


def _brute_closest(y: np.ndarray, zs: list[np.ndarray]) -> tuple[float, list[float]]:
    """Scores by explicit loops: standardise by the original's sd, Euclidean distance, the
    own row's share of the ties; pooled over datasets by summed squared distances."""
    sd = y.std(axis=0, ddof=1)
    a = y / sd
    n = len(y)

    def share(d2: np.ndarray) -> float:
        out = 0.0
        for i in range(n):
            best = min(d2[i])
            ties = [j for j in range(n) if d2[i][j] <= best * (1 + 1e-12) + 1e-300]
            out += (1 / len(ties)) if i in ties else 0.0
        return out / n

    per = []
    total = np.zeros((n, n))
    for z in zs:
        b = z / sd
        d2 = np.array([[float(((a[i] - b[j]) ** 2).sum()) for j in range(n)] for i in range(n)])
        total += d2
        per.append(share(d2))
    return share(total), per


def test_closest_match_against_brute_force_on_random_releases():
    rng = np.random.default_rng(3)
    for _ in range(10):
        n, m, k = int(rng.integers(4, 25)), int(rng.integers(1, 4)), int(rng.integers(1, 4))
        y = rng.normal(0, [1, 10, 100][:k], (n, k)).round(1)
        zs = [y + rng.normal(0, 1.5, (n, k)) * [1, 10, 100][:k] for _ in range(m)]
        cols = [f"c{j}" for j in range(k)]
        res = closest_match(pd.DataFrame(y, columns=cols),
                            [pd.DataFrame(z, columns=cols) for z in zs])
        pooled, per = _brute_closest(y, zs)
        assert res.pooled == pytest.approx(pooled, abs=1e-12)
        assert res.per_dataset.tolist() == pytest.approx(per, abs=1e-12)
        assert res.value == max(pooled, float(np.mean(per)))


def test_closest_match_excludes_records_and_refuses_releases_without_records():
    y = pd.DataFrame({"x": [0.0, 1.0, np.nan, 3.0], "k": [5.0, 5.0, 5.0, 5.0]})
    z = y.assign(x=[0.2, 1.1, 2.0, 2.9])
    released = [z, z.assign(x=[0.1, 1.2, 2.0, 3.1])]
    # by default the synthesized numeric columns: k is released as it is
    assert closest_match(y, released).keys == ["x"]
    res = closest_match(y, released, keys=["x", "k"])
    assert res.n_excluded == 1 and res.warnings == ["RECORDS_EXCLUDED"]
    assert res.keys == ["x"] and res.constant_keys == ["k"]  # a constant column says nothing
    assert len(res.to_dataframe()) == 3 and res.value == 1.0
    with pytest.raises(NotSupportedError) as err:
        closest_match(y, [z.iloc[:3]])
    assert err.value.code == "MEASURE_UNDEFINED" and "number of rows" in str(err.value)
    # the manifest's roles decide: k differs in the release but is not declared synthesized
    moved = [r.assign(k=[5.0, 5.0, 5.0, 6.0]) for r in released]
    plain = closest_match(y, moved, keys=None)  # k differs: a key (constant in the original)
    assert (plain.keys, plain.constant_keys) == (["x"], ["k"])
    roles = SyntheticData(moved, schema=infer_schema(y).with_roles(["x"]))
    assert closest_match(y, roles).keys == ["x"]
    full = SyntheticData([z], schema=infer_schema(y).with_roles(["x", "k"]))
    with pytest.raises(NotSupportedError, match="full synthesis"):
        closest_match(y, full)
    with pytest.raises(ValidationError) as err:
        closest_match(y, [z], keys=["k"])
    assert err.value.code == "MEASURE_UNDEFINED"


def test_wilson_interval_against_scipy():
    from bayes_risk.results.business import wilson_interval

    for k, n in ((3, 40), (0, 10), (10, 10), (57, 500)):
        ci = stats.binomtest(k, n).proportion_ci(0.95, method="wilson")
        assert wilson_interval(k / n, n) == pytest.approx((ci.low, ci.high), abs=1e-12)


# ----------------------------------------------------------------------- command line
def test_the_command_line_prints_what_the_functions_compute(tmp_path):
    Y.to_csv(tmp_path / "y.csv", index=False)
    for l, z in enumerate(Z, 1):
        z.to_csv(tmp_path / f"z{l}.csv", index=False)
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        assert cli.main(["attribute", str(tmp_path / "y.csv"), str(tmp_path / "z1.csv"),
                         str(tmp_path / "z2.csv"), "--relative-difference", "sales",
                         "--closest-match", "--out", str(tmp_path / "o")]) == 0
    text = " ".join(out.getvalue().split())
    assert ("relative difference of the largest values: smallest 0.05 (sales, rank 1, record 2, "
            "estimator rank, 95 % interval 0–1.32); 100 % of the targets within 0.05") in text
    cm = closest_match(Y, Z)
    lo, hi = cm.interval
    assert (f"closest match: {100 * cm.value:.3g} % of 3 records have their own released row "
            f"closest (95 % interval {100 * lo:.3g}–{100 * hi:.3g} %") in text
    s = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert s["relative_difference"]["smallest"]["relative_difference"] == pytest.approx(0.05)
    assert s["closest_match"]["value"] == pytest.approx(cm.value)
    t = pd.read_csv(tmp_path / "o" / "relative_difference.csv")
    assert t["relative_difference"].tolist() == pytest.approx([0.05, 0.375])
    for args, code in ((["--closest-match", "--delta", "0.1"], "OPTION_CONFLICT"),
                       (["--relative-difference", "sales", "--records", "0-1"],
                        "OPTION_CONFLICT"),
                       (["--top", "2"], "OPTION_CONFLICT")):
        err = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            assert cli.main(["attribute", str(tmp_path / "y.csv"), str(tmp_path / "z1.csv"),
                             *args, "--out", str(tmp_path / "x")]) == 2
        assert f"[{code}]" in err.getvalue()
