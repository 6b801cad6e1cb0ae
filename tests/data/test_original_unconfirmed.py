"""Plain release files carry no fingerprint of the original, so a wrong *synthesized* column of
the original (edited, another wave, its values in another row order than the other columns)
passes the row check of the unsynthesized columns. The synthesized columns are checked by their
row-by-row association with the original's (``ORIGINAL_UNCONFIRMED``): a risk measured against a
wrong column is understated, and the run must say so."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pandas as pd
import pytest

import bayes_risk as br
from bayes_risk.data import alignment
from bayes_risk.data.alignment import check_rows_aligned, row_association


def _brute_moments(o, zs):
    """Mean and variance of the association statistic over every pairing of the rows."""
    n = len(o)
    s = []
    for perm in itertools.permutations(range(n)):
        r, z = row_association(o.iloc[list(perm)].reset_index(drop=True), zs)
        s.append(r)
    s = np.asarray(s)
    return s.mean(), s.var()


@pytest.mark.parametrize("kind", ["ranks", "levels", "levels_sparse", "text_missing"])
def test_standardised_value_uses_the_exact_permutation_moments(monkeypatch, kind):
    """On 6 records, every one of the 6! pairings is enumerated: the statistic has mean 0 and
    the variance the closed form gives (z = statistic / its permutation standard deviation)."""
    rng = np.random.default_rng(3)
    n = 6
    if kind == "ranks":
        monkeypatch.setattr(alignment, "_RANK_LEVELS", 3)
        o = pd.Series(rng.normal(size=n))
        zs = [pd.Series(rng.normal(size=n)) for _ in range(3)]
    elif kind == "text_missing":
        o = pd.Series(["a", "b", None, "a", "c", "b"], dtype=object)
        zs = [pd.Series(rng.choice(["a", "b", "c", None], n), dtype=object) for _ in range(2)]
    else:
        if kind == "levels_sparse":  # the pairwise sums used for many levels on long tables
            monkeypatch.setattr(alignment, "_DENSE_CELLS", 0)
        o = pd.Series(rng.integers(0, 3, n))
        zs = [pd.Series(rng.integers(0, 3, n)) for _ in range(3)]
    mean, var = _brute_moments(o, zs)
    r, z = row_association(o, zs)
    assert abs(mean) < 1e-12
    assert z == pytest.approx(r / np.sqrt(var), rel=1e-9)


def test_many_levels_on_a_long_table_give_the_dense_path_s_numbers(monkeypatch):
    rng = np.random.default_rng(4)
    o = pd.Series(rng.integers(0, 6, 400))
    zs = [pd.Series(np.where(rng.random(400) < 0.3, o, rng.integers(0, 6, 400)))
          for _ in range(4)]
    dense = row_association(o, zs)
    monkeypatch.setattr(alignment, "_DENSE_CELLS", 0)
    assert row_association(o, zs) == pytest.approx(dense, rel=1e-12)


@pytest.mark.parametrize("kind", ["numeric", "categorical"])
def test_a_column_paired_at_random_is_standard_normal(kind):
    """The null the threshold rests on: 400 random pairings of a 300-record column with three
    released columns that follow the true one. Tolerances: the mean of 400 standard normal
    values is within 0.2 of 0 and their standard deviation within 0.12 of 1 (both over 3.5
    standard errors)."""
    rng = np.random.default_rng(11)
    n = 300
    if kind == "numeric":
        o = rng.lognormal(10, 1, n)
        zs = [pd.Series(o * rng.lognormal(0, 0.5, n)) for _ in range(3)]
    else:
        o = rng.integers(0, 4, n)
        zs = [pd.Series(np.where(rng.random(n) < 0.5, o, rng.integers(0, 4, n)))
              for _ in range(3)]
    z_true = row_association(pd.Series(o), zs)[1]
    assert z_true > 8  # the true pairing: a strong association
    z = np.array([row_association(pd.Series(rng.permutation(o)), zs)[1] for _ in range(400)])
    assert abs(z.mean()) < 0.2 and abs(z.std() - 1) < 0.12
    assert np.mean(z > 3.09) < 0.01  # the one-sided 0.001 threshold


def test_constant_columns_are_not_tested():
    o = pd.Series(np.ones(60))
    assert np.isnan(row_association(o, [pd.Series(np.arange(60.0))])[1])
    o = pd.Series(np.arange(60.0))
    assert np.isnan(row_association(o, [pd.Series(np.ones(60))])[1])


def _cart_model(ce):
    from bayes_risk.models import CARTSynthesizer

    sch = br.infer_schema(ce, categorical=["Urban", "Tenure", "Educ", "Marital"])
    return CARTSynthesizer(random_seed=1).fit(ce, schema=sch,
                                              synthesized=["Income", "Expenditure"])


@pytest.fixture(scope="module")
def cart_release():
    """A CART release of Income and Expenditure as plain DataFrames (no manifest)."""
    ce = br.make_ce_like(600, random_seed=5)
    return ce, [z.copy() for z in _cart_model(ce).synthesize(3, random_seed=2)]


def _risk(original, datasets):
    return br.identification_risk(original, datasets, known=["Age", "Urban", "Income"],
                                  synthesized=["Income"], match=br.MatchSpec(radius=0.1),
                                  progressbar=False)


def test_cart_release_with_its_own_original_is_confirmed(cart_release):
    ce, zs = cart_release
    res = _risk(ce, zs)  # BayesRiskWarning is an error in this suite: none is raised
    assert "ORIGINAL_UNCONFIRMED" not in res.warnings


def test_a_permuted_synthesized_column_is_reported_with_the_understated_risk(cart_release):
    ce, zs = cart_release
    bad = ce.assign(Income=np.random.default_rng(0).permutation(ce["Income"].to_numpy()))
    with pytest.warns(br.BayesRiskWarning, match="ORIGINAL_UNCONFIRMED") as rec:
        res = _risk(bad, zs)
    assert "['Income']" in str(rec[0].message)
    assert "ORIGINAL_UNCONFIRMED" in res.warnings
    assert "understated" in res.warning_details["ORIGINAL_UNCONFIRMED"]
    # what the warning is for: the risk against the wrong column is far below the true one
    assert res.file["expected_match_risk"] < 0.6 * _risk(ce, zs).file["expected_match_risk"]


def test_a_release_with_its_manifest_is_left_to_the_fingerprint(cart_release):
    """With its manifest, the release's fingerprint of the original refuses the wrong column
    outright (an error, not this warning)."""
    ce, _ = cart_release
    release = _cart_model(ce).synthesize(3, random_seed=2)
    bad = ce.assign(Income=np.random.default_rng(0).permutation(ce["Income"].to_numpy()))
    with pytest.raises(br.SchemaError) as err:
        _risk(bad, release)
    assert err.value.code == "ORIGINAL_DIFFERS"


def test_small_tables_are_not_tested():
    rng = np.random.default_rng(2)
    n = alignment.ASSOCIATION_MIN_ROWS - 1
    o = pd.DataFrame({"k": rng.integers(0, 3, n), "s": rng.normal(size=n)})
    z = o.assign(s=rng.normal(size=n))  # no association at all
    assert check_rows_aligned(o, [z], synthesized=["s"]) == ["k"]  # and no warning


def test_fully_synthetic_plain_files_declared_synthesized_are_reported():
    """Every shared column declared synthesized: the row order cannot be checked from an
    unchanged column, and the association test is what reports it (no warning before)."""
    rng = np.random.default_rng(6)
    o = pd.DataFrame({"a": rng.integers(0, 4, 200), "x": rng.normal(size=200)})
    z = pd.DataFrame({"a": rng.integers(0, 4, 200), "x": rng.normal(size=200)})
    record = {}
    with pytest.warns(br.BayesRiskWarning, match="ORIGINAL_UNCONFIRMED"):
        check_rows_aligned(o, [z], synthesized=["a", "x"], record=record)
    assert list(record) == ["ORIGINAL_UNCONFIRMED"]


def test_cli_records_the_warning_and_the_audit_line_carries_it(cart_release, tmp_path, capsys):
    from bayes_risk.cli import main

    ce, zs = cart_release
    bad = ce.assign(Income=np.random.default_rng(0).permutation(ce["Income"].to_numpy()))
    bad.to_csv(tmp_path / "original.csv", index=False)
    files = []
    for l, z in enumerate(zs, start=1):
        z.to_parquet(tmp_path / f"syn{l}.parquet")
        files.append(str(tmp_path / f"syn{l}.parquet"))
    out = tmp_path / "ident"
    code = main(["identification", str(tmp_path / "original.csv"), *files,
                 "--known-unsynthesized", "Age", "Urban", "--known-synthesized", "Income",
                 "--radius", "Income=0.1", "--out", str(out), "-q"])
    assert code in (0, None)
    assert "warning [ORIGINAL_UNCONFIRMED]" in capsys.readouterr().err
    summary = json.loads((out / "summary.json").read_text())
    assert "ORIGINAL_UNCONFIRMED" in summary["warnings"]
    audit = tmp_path / "audit"
    main(["audit", str(tmp_path / "original.csv"), *files, "--known", "Age", "Urban",
          "Income", "--synthesized", "Income", "Expenditure", "--categorical", "Urban",
          "Tenure", "Educ", "Marital", "--radius", "Income=0.1", "--skip", "utility",
          "attribute", "membership", "--out", str(audit), "-q"])
    assert "ORIGINAL_UNCONFIRMED" in capsys.readouterr().err
    lines = json.loads((audit / "summary.json").read_text())["verdicts"]
    # identification pairs records; synthpop's repU and DiSCO (keys Age, Urban, Income) read
    # the original's Income: every line built on the unconfirmed column carries the code
    for step in ("identification", "disclosure"):
        got = [v for v in lines if v["step"] == step]
        assert got and all("ORIGINAL_UNCONFIRMED" in v["warnings"] for v in got), got


def test_only_disclosure_lines_built_on_the_unconfirmed_column_carry_the_code(cart_release):
    """Keys Age and Urban (unsynthesized): DiSCO of the target Income carries the code, DiSCO
    of the target Expenditure (whose original column is right) does not."""
    ce, zs = cart_release
    bad = ce.assign(Income=np.random.default_rng(0).permutation(ce["Income"].to_numpy()))
    with pytest.warns(br.BayesRiskWarning) as rec:  # and RELEASE_INDEPENDENT (known: Age, Urban)
        res = br.audit(bad, zs, known=["Age", "Urban"], synthesized=["Income", "Expenditure"],
                       progressbar=False,
                       settings=br.AuditSettings(
                           categorical=["Urban", "Tenure", "Educ", "Marital"],
                           skip=["utility", "attribute", "membership", "posterior_identification"]))
    assert any("ORIGINAL_UNCONFIRMED" in str(w.message) for w in rec)
    d = next(s for s in res.steps if s.name == "disclosure")
    assert d.extra["unconfirmed"] == ["Income"]
    disco = {v.measure: v.warnings for v in res.verdicts if v.measure.startswith("DiSCO")}
    assert "ORIGINAL_UNCONFIRMED" in disco["DiSCO (%), target Income"]
    assert "ORIGINAL_UNCONFIRMED" not in disco["DiSCO (%), target Expenditure"]


def test_average_ranks_are_pandas_ranks_bit_for_bit():
    # issue 69: the association's ranks from one sort, not pandas' rank (3.5 s at 10^6 rows);
    # hand values: -0.0 and 0.0 tie (ranks 1, 2 -> 1.5), the two 2.0s share 4.5, NaN stays NaN
    x = np.array([2.0, np.nan, 1.0, 2.0, -0.0, 0.0])
    np.testing.assert_array_equal(alignment._average_ranks(x), [4.5, np.nan, 3.0, 4.5, 1.5, 1.5])
    assert alignment._n_distinct(x) == 3
    rng = np.random.default_rng(11)
    for x in (rng.integers(0, 30, 500).astype(float), rng.normal(size=500), np.full(4, np.nan),
              np.zeros(0), np.array([np.inf, -np.inf, 1.0, np.inf])):
        x[::7] = np.nan
        expected = pd.Series(x).rank(method="average").to_numpy(dtype=np.float64)
        assert np.array_equal(alignment._average_ranks(x), expected, equal_nan=True)
        assert alignment._n_distinct(x) == len(np.unique(x[~np.isnan(x)]))


def test_a_long_table_is_tested_on_a_subset_first_and_on_every_row_when_it_does_not_confirm(
        monkeypatch):
    """Above ``SUBSET_ROWS`` records a column is tested on evenly spaced rows first: a strong
    association is confirmed there (one call, on the subset); a column with no association,
    and one whose association is too weak for the subset's threshold, are tested on every row,
    so the warnings and their figures are those of the whole table."""
    monkeypatch.setattr(alignment, "SUBSET_ROWS", 400)
    rng = np.random.default_rng(8)
    n = 4000
    o = pd.DataFrame({"k": rng.integers(0, 3, n), "strong": rng.normal(size=n),
                      "none": rng.normal(size=n), "weak": rng.normal(size=n)})
    zs = [o.assign(strong=o["strong"] + rng.normal(scale=0.5, size=n),
                   none=rng.normal(size=n),
                   weak=0.12 * o["weak"] + rng.normal(size=n)) for _ in range(2)]
    calls = []
    real = alignment.row_association
    monkeypatch.setattr(alignment, "row_association",
                        lambda a, b: calls.append((a.name, len(a))) or real(a, b))
    out = alignment.unconfirmed_columns(o, zs, ["strong", "none", "weak"])
    assert calls == [("strong", 400), ("none", 400), ("none", n), ("weak", 400), ("weak", n)]
    assert list(out) == ["none"]
    r, z = real(o["none"], [d["none"] for d in zs])  # the whole table's figures
    assert out["none"] == (r, alignment._upper_tail(z))
    # the weak column: confirmed by every row, not by the subset (z below 4.75 there)
    assert alignment._upper_tail(real(o["weak"].iloc[::10], [d["weak"].iloc[::10]
                                                              for d in zs])[1]) > 1e-6
