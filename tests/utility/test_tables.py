"""Per-table utility and compare() against synthpop 1.9-2 (synthpop_tables_reference/, made by
its make_reference.R), and the statistics by hand."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from _shared import shared_path

import bayes_risk as br
from bayes_risk.exceptions import ValidationError
from bayes_risk.utility.tables import _statistics, compare_marginals, r_pretty, table_utility

REFERENCE = Path(__file__).parent / "synthpop_tables_reference"
CAT = ["Urban", "Marital", "Tenure"]
STATS = ["VW", "FT", "JSD", "U", "pMSE", "S_pMSE", "S_FT", "S_JSD", "df"]


@pytest.fixture(scope="module")
def release():
    df = br.read_table(shared_path("data", "CEdata.csv")).iloc[:1000].reset_index(drop=True)
    rel = pd.read_csv(REFERENCE / "release.csv.gz")
    syn = [g.drop(columns="dataset").reset_index(drop=True).astype(df.dtypes.to_dict())
           for _, g in rel.groupby("dataset")]
    return df, syn, br.infer_schema(df, categorical=CAT)


@pytest.fixture(scope="module")
def tables(release):
    df, syn, schema = release
    return table_utility(df, syn, schema=schema, order=3)


def test_every_table_is_synthpops(tables):
    """Every one-, two- and three-way table of the 7 columns (7 + 21 + 35), each statistic
    the mean over the 3 datasets, equals synthpop's utility.tables(tab.stats = ...) to 1e-9
    relative (R's names: "1.Age:2.Urban")."""
    ref = pd.read_csv(REFERENCE / "utility_tables.csv")
    ref["table"] = [":".join(p.split(".", 1)[1] for p in t.split(":")) for t in ref["table"]]
    ours = tables.tables.set_index("table").loc[ref["table"]]
    assert len(ref) == 63 and (tables.tables["order"].value_counts().sort_index()
                                 == [7, 21, 35]).all()
    for s in STATS:
        np.testing.assert_allclose(ours[s].to_numpy(), ref[s].to_numpy(), rtol=1e-9, atol=1e-15,
                                   err_msg=s)


def test_per_dataset_figures_are_synthpops(tables):
    """utility.tab's figures of each dataset (a table of two numeric columns; a three-way
    table of two factors and a numeric column)."""
    ref = pd.read_csv(REFERENCE / "utility_tab_per_dataset.csv")
    ours = tables.per_dataset.set_index(["table", "dataset"])
    for s in ("VW", "FT", "JSD", "U", "pMSE", "S_pMSE", "df"):
        got = ours.loc[list(zip(ref["table"].str.replace("Tenure:Marital:Educ",
                                                         "Tenure:Educ:Marital"),
                                ref["dataset"], strict=True)), s]
        np.testing.assert_allclose(got.to_numpy(), ref[s].to_numpy(), rtol=1e-9, err_msg=s)


def test_compare_is_synthpops(release):
    """compare(): each variable's percentages (levels; numeric columns by the bins of R's
    hist(breaks = 20), labelled by their lower break) and its one-way pMSE, S_pMSE and df."""
    df, syn, schema = release
    marg, util = compare_marginals(df, syn, schema=schema)
    ref = pd.read_csv(REFERENCE / "compare_marginals.csv", dtype={"value": str})
    assert marg["variable"].tolist() == ref["variable"].tolist()
    assert marg["value"].tolist() == ref["value"].tolist()
    np.testing.assert_allclose(marg[["original", "synthetic"]].to_numpy(),
                               ref[["observed", "synthetic"]].to_numpy(), rtol=1e-12, atol=1e-12)
    u = pd.read_csv(REFERENCE / "compare_utility.csv").set_index("variable")
    got = util.set_index("variable").loc[u.index]
    np.testing.assert_allclose(got[["pMSE", "S_pMSE", "df"]].to_numpy(), u.to_numpy(), rtol=1e-9)


def test_statistics_by_hand():
    """Two cells, original (3, 1), synthetic (1, 3): c = 1/2, expected (2, 2), VW = 2 + 2 = 4,
    pMSE = 4 (1/2)(1/4) / 8 = 1/16, df = 1; JSD of (3/4, 1/4) and (1/4, 3/4); U: the 3
    synthetic records of propensity 3/4 beat the 3 original records of 1/4 (9 pairs), the
    other pairs tie or lose: 9 + (1·3 + 3·1)/2 = 12."""
    st = _statistics(np.array([3, 1]), np.array([1, 3]))
    assert st["VW"] == pytest.approx(4.0) and st["pMSE"] == pytest.approx(1 / 16)
    assert st["df"] == 1 and st["S_pMSE"] == pytest.approx(4.0)
    jsd = 0.5 * (0.75 * np.log2(0.75 / 0.5) + 0.25 * np.log2(0.25 / 0.5)) * 2
    assert st["JSD"] == pytest.approx(jsd)
    assert st["FT"] == pytest.approx(4 * 2 * (1 - np.sqrt(3)) ** 2)
    assert st["U"] == pytest.approx(12.0)
    # empty cells of both tables do not count: the same with a zero cell added
    assert _statistics(np.array([3, 0, 1]), np.array([1, 0, 3])) == st


@pytest.mark.parametrize(("lo", "up", "n", "expected"), [
    # R 4.2.2: pretty(c(lo, up), n = 20, min.n = 1)
    (15, 87, 20, np.arange(15, 91, 5)),
    (0, 1, 20, np.round(np.arange(0, 1.0001, 0.05), 10)),
    (-1234.5, 98765.4, 20, np.arange(-5000, 100001, 5000)),
    (3, 3, 20, [2, 4]),
])
def test_pretty_is_r(lo, up, n, expected):
    np.testing.assert_allclose(r_pretty(lo, up, n, 1), expected, atol=1e-12)


def test_settings_are_checked(release):
    df, syn, schema = release
    with pytest.raises(ValidationError, match="order must be an integer in \\[1, 3\\]"):
        table_utility(df, syn, schema=schema, order=4)
    with pytest.raises(ValidationError, match="ngroups"):
        table_utility(df, syn, schema=schema, ngroups=1)
    with pytest.raises(Exception, match="Nope"):
        table_utility(df, syn, schema=schema, columns=["Nope"])


@pytest.mark.filterwarnings("ignore::bayes_risk.exceptions.DataWarning")  # ROWS_NOT_VERIFIED
def test_utility_command_writes_the_tables_and_figures(release, tmp_path):
    """``bayes-risk utility`` writes tables.csv (every table of 1 to --table-order columns, the
    figures of table_utility) and marginals.csv (compare()'s percentages); summary.json names
    the tables with the largest S_pMSE and each column's utility.
    ``utility_summary`` gives the same tables."""
    import json

    from bayes_risk.cli import main

    df, syn, schema = release
    df.to_csv(tmp_path / "orig.csv", index=False)
    names = []
    for j, z in enumerate(syn, start=1):
        z.to_csv(tmp_path / f"syn{j}.csv", index=False)
        names.append(str(tmp_path / f"syn{j}.csv"))
    out = tmp_path / "u"
    assert main(["utility", str(tmp_path / "orig.csv"), *names, "--categorical", *CAT,
                 "--synthesized", *df.columns, "--table-order", "3", "--ngroups", "5",
                 "--max-order", "0", "--out", str(out), "--quiet"]) == 0
    tabs = pd.read_csv(out / "tables.csv")
    ref = table_utility(df, syn, schema=schema, order=3).tables
    pd.testing.assert_frame_equal(tabs, ref, check_dtype=False)
    marg = pd.read_csv(out / "marginals.csv", dtype={"value": str})
    pd.testing.assert_frame_equal(marg, compare_marginals(df, syn, schema=schema)[0],
                                  check_dtype=False)
    summ = json.loads((out / "summary.json").read_text())
    assert summ["tables"]["n_tables"] == 63 and summ["tables"]["order"] == 3
    top = ref.sort_values("S_pMSE", ascending=False).iloc[0]
    assert summ["tables"]["worst"][0]["table"] == top["table"]
    assert [v["variable"] for v in summ["variables"]] == list(df.columns)
    q = br.quality_report(df, syn, schema=schema)
    assert summ["quality"]["score"] == pytest.approx(q.score, rel=1e-12)
    assert len(pd.read_csv(out / "quality.csv")) == 7 * 3
    assert len(pd.read_csv(out / "quality_pairs.csv")) == 21 * 3
    s = br.utility_summary(df, syn, schema=schema, propensity=br.PropensitySpec(max_order=0))
    pd.testing.assert_frame_equal(s.tables.tables, table_utility(df, syn, schema=schema).tables)
    with pytest.raises(ValidationError, match="table_order"):
        br.utility_summary(df, syn, schema=schema, table_order=4)
