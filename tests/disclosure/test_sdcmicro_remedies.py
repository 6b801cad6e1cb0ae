"""sdcMicro's remedies of a release (``sdcmicro``) against sdcMicro 5.8.1's own outputs.

References: ``sdcmicro_remedies_reference/`` (made by ``make_reference.R`` beside them; README
there). Where sdcMicro is deterministic the package gives the same numbers: MDAV's aggregated
values bit for bit, local suppression's suppressed values cell for cell, PRAM's transition
matrix from the same drawn diagonal to 1e-12. Where it draws, the package's draws (other seeds,
numpy's generator) agree with sdcMicro's within Monte Carlo error: PRAM's mean matrix, its
realised transitions and number of changes, the noise's variance and covariance.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from _shared import shared_path

from bayes_risk import SdcMicroSpec, SyntheticData, infer_schema, sdcmicro
from bayes_risk.disclosure.original_risk import _frequencies
from bayes_risk.disclosure.sdcmicro import invariant_matrix, mdav, suppress
from bayes_risk.exceptions import SchemaError, ValidationError

REF = Path(__file__).parent / "sdcmicro_remedies_reference"
SUMMARY = json.loads((REF / "summary.json").read_text())


@pytest.fixture(scope="module")
def ce() -> pd.DataFrame:
    return pd.read_csv(shared_path("data/CEdata.csv"))


@pytest.fixture(scope="module")
def sd2011() -> pd.DataFrame:
    sd = pd.read_csv(shared_path("data/SD2011.csv"))
    meta = json.loads(shared_path("data/datasets.json").read_text())["SD2011"]
    for col in meta["columns"]:
        if col.get("levels"):
            sd[col["name"]] = pd.Categorical(sd[col["name"]], categories=col["levels"])
    return sd


# ------------------------------------------------------------------ MDAV microaggregation
@pytest.mark.parametrize("name, data, cols, k, rows, strata", [
    ("mdav_CEdata_k3", "ce", ["Expenditure", "Income"], 3, None, None),
    ("mdav_CEdata_age_k5", "ce", ["Age", "Expenditure", "Income"], 5, 2000, None),
    ("mdav_CEdata_income_k3", "ce", ["Income"], 3, None, None),
    ("mdav_CEdata_urban_k3", "ce", ["Expenditure", "Income"], 3, 2000, "Urban"),
    ("mdav_SD2011_k3", "sd2011", ["income", "height", "weight"], 3, 2000, None),
])
def test_mdav_equals_sdcmicro_bit_for_bit(request, name, data, cols, k, rows, strata):
    d = request.getfixturevalue(data)
    d = d.iloc[:rows] if rows else d
    ref = pd.read_csv(REF / f"{name}.csv.gz")
    out = sdcmicro(d, d[[*cols, *([strata] if strata else [])]], microaggregation=cols,
                   settings=SdcMicroSpec(aggr=k), strata=strata)
    got, want = out[0][cols].to_numpy(), ref[cols].to_numpy()
    # the same doubles: sdcMicro's single-precision distances, its hash sort's order among
    # equal distances and its sums taken left to right
    assert np.array_equal(got, want, equal_nan=True)
    assert np.array_equal(np.isnan(got), d[cols].isna().to_numpy())
    step = out.extra["post_processing"][0]
    assert step["operation"] == "microaggregation" and step["aggr"] == k
    assert step["smallest_group"] == [k]
    assert step["method"] == ("mdav" if len(cols) > 1 else "sorted groups (one column)")


def test_mdav_breaks_single_precision_ties_as_sdcmicro():
    """Records 1 and 2 are equally far from record 0 in single precision (not in double):
    sdcMicro groups record 0 with the later one; 0.01 apart, with the nearer."""
    ties = pd.read_csv(REF / "mdav_ties.csv.gz")
    for _, t in ties.groupby("set"):
        res, _ = mdav(t[["a", "b"]].to_numpy(), 2)
        assert np.array_equal(res[:, 0], t["mx_a"].to_numpy())
    assert ties["mx_a"].iloc[0] == ties["mx_a"].iloc[2] != ties["mx_a"].iloc[1]


def test_mdav_groups_partition_and_means():
    """Invariants by hand: every group has k to 2k - 1 records and holds their mean."""
    rng = np.random.default_rng(3)
    x = rng.normal(size=(47, 3)) * [1.0, 10.0, 100.0]
    x[rng.random(x.shape) < 0.1] = np.nan
    res, group = mdav(x, 4)
    sizes = np.bincount(group)
    assert group.min() == 0 and sizes.min() >= 4 and sizes.max() <= 7
    assert (sizes == 4).sum() >= len(sizes) - 1  # only the last group is larger
    for g in range(len(sizes)):
        rows = group == g
        for j in range(3):
            obs = rows & ~np.isnan(x[:, j])
            if obs.any():
                np.testing.assert_allclose(res[obs, j], np.nanmean(x[rows, j]), rtol=1e-12)
    assert np.array_equal(np.isnan(res), np.isnan(x))


# ------------------------------------------------------------------ local suppression
@pytest.mark.parametrize("name, data, keys, k, importance, strata", [
    ("ls_CEdata_4keys_k3", "ce", ["Urban", "Tenure", "Marital", "Educ"], 3, None, None),
    ("ls_CEdata_age_k2", "ce", ["Age", "Urban", "Marital"], 2, None, None),
    ("ls_CEdata_importance_k5", "ce", ["Urban", "Tenure", "Marital", "Educ"], 5, [4, 1, 3, 2],
     None),
    ("ls_CEdata_strata_k3", "ce", ["Tenure", "Marital", "Educ"], 3, None, "Urban"),
    ("ls_SD2011_k3", "sd2011", ["sex", "agegr", "placesize", "region", "edu", "marital"], 3,
     None, None),
])
def test_local_suppression_equals_sdcmicro(request, name, data, keys, k, importance, strata):
    d = request.getfixturevalue(data)
    ref = pd.read_csv(REF / f"{name}.csv.gz")
    out = sdcmicro(d, d[[*keys, *([strata] if strata else [])]], local_suppression=keys,
                   settings=SdcMicroSpec(k=k, importance=importance), strata=strata)
    hit = (out[0][keys].isna() & d[keys].notna()).astype(int)
    assert np.array_equal(hit.to_numpy(), ref[keys].to_numpy())  # cell for cell
    step = out.extra["post_processing"][0]
    want = SUMMARY["local_suppression"][name]
    assert step["importance"] == want["importance"]
    assert {c: n[0] for c, n in step["n_suppressed"].items()} == want["suppressions"]
    # k-anonymity reached, a missing value matching every value (sdcMicro's freqCalc)
    groups = [np.arange(len(d))] if strata is None else [
        np.flatnonzero(d[strata] == v) for v in d[strata].unique()]
    for rows in groups:
        codes = np.column_stack([pd.factorize(out[0][c].iloc[rows])[0] for c in keys])
        f, _ = _frequencies(np.maximum(codes, 0), codes < 0, np.ones(len(rows)), True)
        assert f.min() >= k


def test_suppression_picks_the_least_important_key_where_a_neighbour_differs():
    """By hand: record 0 is alone; its nearest records (one key apart) differ from it in key 0
    (record 1) and in key 1 (record 2); key 1 is the less important, so it is suppressed, and
    the record then matches records 2 and 3 (a missing value matching every value)."""
    codes = np.array([[0, 0], [1, 0], [0, 1], [0, 1], [1, 0]])
    hit = suppress(codes, 2, np.array([1, 2]))
    assert hit.tolist() == [[False, True], *[[False, False]] * 4]
    hit = suppress(codes, 2, np.array([2, 1]))  # key 0 now the less important
    assert hit.tolist() == [[True, False], *[[False, False]] * 4]


# ------------------------------------------------------------------ PRAM
def test_pram_matrix_equals_sdcmicro_from_the_same_diagonal():
    for case in SUMMARY["pram_matrices"]:
        counts = np.array(case["counts"], dtype=float)
        R = invariant_matrix(counts, np.array(case["pds"]), case["alpha"])
        np.testing.assert_allclose(R, np.array(case["Rs"]), rtol=0, atol=1e-12)
        np.testing.assert_allclose(R.sum(axis=1), 1.0, atol=1e-12)
        np.testing.assert_allclose(counts @ R, counts, rtol=1e-12)  # invariant frequencies
    # a level no record holds is never drawn into; one level is left as it is
    R = invariant_matrix(np.array([5.0, 0.0, 3.0]), np.array([0.9, 0.8, 0.85]), 0.5)
    assert np.all(R[[0, 2], 1] == 0)
    assert invariant_matrix(np.array([4.0]), np.array([0.8]), 0.5).tolist() == [[1.0]]


@pytest.fixture(scope="module")
def pram_runs(ce):
    """100 PRAM runs of CEdata's Tenure and Educ (as factors, the levels held)."""
    d = ce[["Tenure", "Educ"]].astype("category")
    runs = []
    for seed in range(100):
        out = sdcmicro(ce, d, pram=["Tenure", "Educ"], random_seed=seed)
        runs.append((out[0], out.extra["post_processing"][0]))
    return d, runs


@pytest.mark.parametrize("col", ["Tenure", "Educ"])
def test_pram_agrees_with_sdcmicro_within_monte_carlo_error(pram_runs, col):
    d, runs = pram_runs
    mc = SUMMARY["pram_monte_carlo"][col]
    n_r, n = mc["n_rep"], len(runs)
    levels = [int(v) for v in mc["levels"]]
    L = len(levels)
    before = np.searchsorted(levels, d[col].astype(int))
    mats, changes, trans = [], [], np.zeros((L, L))
    for z, step in runs:
        after = np.searchsorted(levels, z[col].astype(int))
        np.add.at(trans, (before, after), 1)
        changes.append(int((after != before).sum()))
        assert step["n_changed"][col] == [changes[-1]]
        mats.append(np.array(step["transition_matrices"][col][0][0]["matrix"]))
    mats = np.array(mats)
    sd_r = np.array(mc["Rs_sd"])
    # the mean transition matrix (its diagonal drawn uniformly in [pd, 1] per run)
    se = np.sqrt(mats.var(axis=0, ddof=1) / n + sd_r ** 2 / n_r)
    z = np.where(se > 0, (mats.mean(axis=0) - np.array(mc["Rs_mean"])) / np.where(se > 0, se, 1),
                 0)
    assert np.abs(z).max() < 4, z
    # the realised transitions, pooled over the runs, per level
    held = np.bincount(before, minlength=L)[:, None]
    mine, theirs = trans / (held * n), np.array(mc["transitions"]) / (held * n_r)
    p = (mine * n + theirs * n_r) / (n + n_r)
    se = np.sqrt((sd_r ** 2 + p * (1 - p) / held) * (1 / n + 1 / n_r))
    z = np.where(se > 0, (mine - theirs) / np.where(se > 0, se, 1), 0)
    assert np.abs(z).max() < 4, z
    # the number of values changed
    se = np.sqrt(np.var(changes, ddof=1) / n + mc["changes_sd"] ** 2 / n_r)
    assert abs(np.mean(changes) - mc["changes_mean"]) / se < 3.5


def test_pram_keeps_missing_values_and_the_column_type(sd2011):
    d = sd2011[["sex", "edu", "marital"]].iloc[:400]
    out = sdcmicro(sd2011.iloc[:400], d, pram=["edu", "marital"], random_seed=5)
    for c in ("edu", "marital"):
        assert out[0][c].dtype == d[c].dtype
        assert out[0][c].isna().equals(d[c].isna())
    assert out[0]["sex"].equals(d["sex"])
    again = sdcmicro(sd2011.iloc[:400], d, pram=["edu", "marital"], random_seed=5)
    pd.testing.assert_frame_equal(out[0], again[0])  # same seed, same release
    other = sdcmicro(sd2011.iloc[:400], d, pram=["edu", "marital"], random_seed=6)
    assert not other[0].equals(out[0])


# ------------------------------------------------------------------ noise
def test_noise_agrees_with_sdcmicro_within_monte_carlo_error(ce):
    ref = SUMMARY["add_noise"]
    cols = ref["columns"]
    x = ce[cols]
    var, cov = [], []
    for seed in range(100):
        e = sdcmicro(ce, x, add_noise=cols, random_seed=seed)[0][cols].to_numpy() - x.to_numpy()
        var.append(e.var(axis=0, ddof=1))
        out = sdcmicro(ce, x, add_noise=cols,
                       settings=SdcMicroSpec(noise_method="correlated"), random_seed=seed)
        c = np.cov(out[0][cols].to_numpy() - x.to_numpy(), rowvar=False)
        cov.append([c[0, 0], c[0, 1], c[1, 1]])
    n, n_r = len(var), ref["n_rep"]
    for mine, key, sd_key in ((np.array(var), "var_mean", "var_sd"),
                              (np.array(cov), "cov_mean", "cov_sd")):
        what = ref["additive" if key == "var_mean" else "correlated"]
        se = np.sqrt(mine.var(axis=0, ddof=1) / n + np.array(what[sd_key]) ** 2 / n_r)
        assert np.all(np.abs(mine.mean(axis=0) - what[key]) / se < 3.5)
    # both against the definitions: sd 150 % of the column's; covariance 150 % of theirs
    want = (1.5 * np.array(ref["additive"]["x_sd"])) ** 2
    np.testing.assert_allclose(np.mean(var, axis=0), want, rtol=0.01)
    np.testing.assert_allclose(np.mean(cov, axis=0), 1.5 * np.array(ref["correlated"]["x_cov"]),
                               rtol=0.01)


def test_noise_leaves_missing_values_and_codes(sd2011):
    d = sd2011[["income", "height"]].iloc[:300]
    schema = infer_schema(d, missing_codes={"income": [-8]}).with_roles(["income", "height"])
    rel = SyntheticData([d], schema=schema)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = sdcmicro(sd2011.iloc[:300][["income", "height"]], rel, add_noise=["income"],
                       random_seed=1)
    kept = d["income"].isna() | (d["income"] == -8)
    assert out[0]["income"][kept].equals(d["income"][kept])
    assert (out[0]["income"][~kept] != d["income"][~kept]).all()
    sd = out.extra["post_processing"][0]["noise_sd"]["income"][0]
    assert sd == pytest.approx(1.5 * d["income"][~kept].std(ddof=1))
    assert "random_seed" not in json.dumps(out.extra["post_processing"])


# ------------------------------------------------------------------ refusals
@pytest.fixture(scope="module")
def small():
    orig = pd.DataFrame({"a": ["x", "y", "x", "y", "x", "y"] * 2,
                         "b": [1, 2, 3, 1, 2, 3] * 2,
                         "v": np.linspace(1.0, 12.0, 12), "w": np.arange(12.0) ** 1.5,
                         "n": list(range(12))})
    schema = infer_schema(orig, categorical=["a"]).with_roles(["a", "v", "w", "n"])
    syn = orig.assign(v=orig["v"] + 0.5, w=orig["w"] * 1.1, a=orig["a"][::-1].to_numpy())
    return orig, SyntheticData([syn], schema=schema)


@pytest.mark.parametrize("kw, exc, code, text", [
    ({}, ValidationError, "OPTION_REQUIRED", "nothing to do"),
    ({"pram": ["v"]}, ValidationError, "WRONG_DTYPE", "PRAM redraws"),
    ({"pram": ["b"]}, ValidationError, "REMEDY_NOT_APPLICABLE", "unsynthesized"),
    ({"microaggregation": ["a"]}, ValidationError, "WRONG_DTYPE", "not numeric"),
    ({"add_noise": ["n"]}, ValidationError, "WRONG_DTYPE", "is a count"),
    ({"local_suppression": ["v"]}, ValidationError, "WRONG_DTYPE", "continuous key"),
    ({"add_noise": ["zz"]}, SchemaError, "MISSING_COLUMN", "['zz']"),
    ({"add_noise": ["v"], "noise_method": "correlated"}, ValidationError, "INVALID_ARGUMENT",
     "two columns or more"),
    ({"microaggregation": ["v"], "aggr": 1}, ValidationError, "INVALID_ARGUMENT", "aggr"),
    ({"pram": ["a"], "pram_pd": 1.5}, ValidationError, "INVALID_ARGUMENT", "pram_pd"),
    ({"local_suppression": ["a", "n"], "importance": [1, 3]}, ValidationError,
     "INVALID_ARGUMENT", "importance"),
    ({"microaggregation": ["v"], "importance": [1]}, ValidationError, "OPTION_CONFLICT",
     "importance"),
    ({"microaggregation": ["v"], "strata": ["v"]}, ValidationError, "OPTION_CONFLICT",
     "also changed"),
    ({"add_noise": ["v"], "strata": ["b"]}, ValidationError, "OPTION_CONFLICT",
     "strata needs pram, local_suppression or microaggregation"),
    ({"microaggregation": ["v", "w"], "strata": ["n"]}, ValidationError,
     "REMEDY_NOT_APPLICABLE", "fewer than aggr=3"),
    ({"local_suppression": ["a"], "k": 7, "strata": ["b"]}, ValidationError,
     "REMEDY_NOT_APPLICABLE", "fewer than k=7"),
])
def test_bad_arguments_are_refused(small, kw, exc, code, text):
    orig, rel = small
    fields = set(SdcMicroSpec.__dataclass_fields__)
    with pytest.raises(exc) as err:  # a setting is a field of the remedies' settings
        sdcmicro(orig, rel, **{k: v for k, v in kw.items() if k not in fields},
                 settings=SdcMicroSpec(**{k: v for k, v in kw.items() if k in fields}))
    assert err.value.code == code and text in str(err.value), str(err.value)


def test_each_remedy_is_registered_for_the_design(small):
    from bayes_risk.designing import REMEDIES

    orig, rel = small
    cand = {"columns": ["a", "v", "w", "n"], "known": ["a", "n"], "numeric_synthesized": ["v", "w"],
            "random_seed": [1, 2]}
    for name, op in (("pram", "pram"), ("local_suppression", "local_suppression"),
                     ("microaggregation", "microaggregation"), ("add_noise", "add_noise")):
        remedy = REMEDIES[name]
        assert remedy.applies(orig, rel.schema, cand) is None
        out = remedy.apply(orig, rel, cand)
        assert out.extra["post_processing"][-1]["operation"] == op
    # the reasons a candidate is left out
    partial = {**cand, "columns": ["v", "w"], "known": ["b"]}
    assert "released unsynthesized" in REMEDIES["local_suppression"].applies(orig, rel.schema,
                                                                             partial)
    assert REMEDIES["pram"].applies(orig, rel.schema, partial) == \
        "no categorical synthesized column"
