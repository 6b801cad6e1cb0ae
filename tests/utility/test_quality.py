"""SDMetrics' quality report, computed by the package, against SDMetrics 0.32's own
(sdmetrics_reference/, made by its make_reference.py) and by hand."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from _shared import shared_path

import bayes_risk as br
from bayes_risk.exceptions import ValidationError
from bayes_risk.utility.quality import quality_report, tv_complement

REFERENCE = Path(__file__).parent / "sdmetrics_reference"
CAT = ["Urban", "Marital", "Tenure"]


def _holes(d: pd.DataFrame) -> pd.DataFrame:
    d = d.copy()
    i = np.arange(len(d))
    d["Income"] = d["Income"].astype(float).mask(i % 13 == 2)
    d["Marital"] = d["Marital"].astype("Int64").mask(i % 17 == 5)
    return d


@pytest.fixture(scope="module")
def release():
    df = br.read_table(shared_path("data", "CEdata.csv")).iloc[:1000].reset_index(drop=True)
    rel = pd.read_csv(Path(__file__).parent / "synthpop_tables_reference" / "release.csv.gz")
    syn = [g.drop(columns="dataset").reset_index(drop=True) for _, g in rel.groupby("dataset")]
    return df, syn


@pytest.mark.parametrize("case", ["complete", "missing", "complete_all_pairs",
                                  "missing_all_pairs"])
def test_report_is_sdmetrics(release, case):
    """Every column's and pair's score, the two properties and the overall score of each of
    the 3 datasets equal SDMetrics 0.32's QualityReport (to 1e-9; TVComplement to 1e-6, its
    regularisation), with its default thresholds (1 pair of 21 counts on CEdata) and with
    every pair counted; with missing values in a numeric and a categorical column."""
    df, syn = release
    ref = json.loads((REFERENCE / "quality_report.json").read_text())["cases"][case]
    if case.startswith("missing"):
        df, syn = _holes(df), [_holes(z) for z in syn]
    th = 0.0 if case.endswith("all_pairs") else None
    kw = {} if th is None else {"correlation_threshold": th, "association_threshold": th}
    q = quality_report(df, syn, schema=br.infer_schema(df, categorical=CAT), **kw)
    for j, r in enumerate(ref, start=1):
        sh = q.shapes[q.shapes["dataset"] == j].reset_index(drop=True)
        assert sh["metric"].tolist() == [x["Metric"] for x in r["column_shapes"]]
        np.testing.assert_allclose(sh["score"], [x["Score"] for x in r["column_shapes"]],
                                   rtol=0, atol=1e-6)
        pt = q.pair_trends[q.pair_trends["dataset"] == j].reset_index(drop=True)
        assert list(zip(pt["column_1"], pt["column_2"], pt["metric"], strict=True)) == [
            (x["Column 1"], x["Column 2"], x["Metric"]) for x in r["column_pair_trends"]]
        for ours, theirs in (("score", "Score"), ("real_correlation", "Real Correlation"),
                             ("synthetic_correlation", "Synthetic Correlation"),
                             ("real_association", "Real Association")):
            np.testing.assert_allclose(
                pt[ours].astype(float), [x[theirs] if x[theirs] is not None else math.nan
                                         for x in r["column_pair_trends"]],
                rtol=1e-9, atol=1e-12, err_msg=ours)
        assert pt["meets_threshold"].tolist() == [x["Meets Threshold?"]
                                                  for x in r["column_pair_trends"]]
        got = q.per_dataset.iloc[j - 1]
        assert got["column_shapes"] == pytest.approx(r["properties"]["Column Shapes"], abs=1e-6)
        assert got["column_pair_trends"] == pytest.approx(r["properties"]["Column Pair Trends"],
                                                          abs=1e-9)
        assert got["score"] == pytest.approx(r["score"], abs=1e-6)
    assert q.score == pytest.approx(np.mean([r["score"] for r in ref]), abs=1e-6)


def test_scores_by_hand():
    """TVComplement of (a, a, b, b) against (a, b, b, b): 1 − (1/4 + 1/4)/2 = 0.75; a level only
    the synthetic data hold counts fully against it; identical tables score 1."""
    assert tv_complement(pd.Series(list("aabb")), pd.Series(list("abbb"))) == pytest.approx(0.75)
    assert tv_complement(pd.Series(list("aaaa")), pd.Series(list("aacc"))) == pytest.approx(
        0.5, abs=1e-6)
    d = pd.DataFrame({"x": np.arange(20.0), "y": np.arange(20.0) ** 2, "g": list("ab") * 10})
    q = quality_report(d, [d], correlation_threshold=0, association_threshold=0)
    assert q.score == 1.0 and (q.shapes["score"] == 1).all()
    with pytest.raises(ValidationError, match="correlation_threshold"):
        quality_report(d, [d], correlation_threshold=2)
