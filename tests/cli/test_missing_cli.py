"""End to end on NYexample with its missing values: fit a DPMPM on a subset, synthesize, then
utility, identification, attribute risk and disclosure run without refusing the NAs (only
about a third of NYexample's records are complete).

Small and fast: 150 records, 3 components, a short chain (the figures are not the point; the
pipeline is).
"""

from __future__ import annotations

import json
import warnings

import pandas as pd
import pytest
from _shared import shared_path

from bayes_risk.cli import main


@pytest.fixture(scope="module")
def ny_release(tmp_path_factory):
    src = shared_path("data", "NYexample_X.csv")
    d = tmp_path_factory.mktemp("ny")
    df = pd.read_csv(src, nrows=150)
    assert df.isna().any(axis=1).mean() > 0.3  # the point: many incomplete records
    df.to_csv(d / "ny.csv", index=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert main(["fit", str(d / "ny.csv"), "--method", "dpmpm", "--components", "3",
                     "--tune", "30", "--draws", "60", "--synthesize", "MORTGAGE", "EMPSTAT",
                     "--random-seed", "1", "-q", "--out", str(d / "model")]) == 0
        assert main(["synthesize", "--model", str(d / "model"), "-m", "2", "--random-seed",
                     "2", "-q", "--out", str(d / "syn")]) == 0
    return d, df


def test_utility_identification_attribute_disclosure(ny_release):
    d, df = ny_release
    orig, syn = str(d / "ny.csv"), str(d / "syn")
    cat = ["OWNERSHP", "MORTGAGE", "SEX", "MARST", "RACESING", "EDUC", "EMPSTAT", "DISABWRK",
           "VETSTAT"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert main(["utility", orig, syn, "--max-order", "0", "--categorical", *cat,
                     "--random-seed", "1", "-q", "--out", str(d / "util")]) == 0
        for mode in ("any", "level"):
            assert main(["identification", orig, syn, "--known-unsynthesized", "AGE", "SEX",
                         "MARST", "--known-synthesized", "MORTGAGE", "--categorical", *cat,
                         "--missing-known", mode, "-q", "--out", str(d / f"id_{mode}")]) == 0
        assert main(["attribute", "--model", str(d / "model"), orig, syn, "--records", "0-2",
                     "--random-seed", "1", "-q", "--out", str(d / "attr")]) == 0
        assert main(["disclosure", orig, syn, "--keys", "AGE", "SEX", "MARST", "--target",
                     "EMPSTAT", "-q", "--out", str(d / "disc")]) == 0
    util = json.loads((d / "util" / "summary.json").read_text())
    assert "pmse" in json.dumps(util).lower()
    ida = json.loads((d / "id_any" / "summary.json").read_text())
    idl = json.loads((d / "id_level" / "summary.json").read_text())
    assert ida["settings"]["missing_known"] == "any" and idl["settings"]["missing_known"] == "level"
    # a missing known value matches more records under "any" than under "level"
    ra = pd.read_csv(d / "id_any" / "records.csv")
    rl = pd.read_csv(d / "id_level" / "records.csv")
    miss = df[["AGE", "SEX", "MARST", "MORTGAGE"]].isna().any(axis=1).to_numpy()
    assert miss.any()
    rec = pd.read_csv(d / "attr" / "records.csv")
    # record 0 misses EMPSTAT: its candidates cover MORTGAGE only; record 2 has both (its
    # missing unsynthesized SEX is marginalised)
    assert rec.loc[rec["record"] == 0, "G"].item() < rec.loc[rec["record"] == 2, "G"].item()
    assert rec["p_true"].between(0, 1).all()
    assert len(ra) == len(rl) == len(df)
