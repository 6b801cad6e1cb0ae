"""SD2011 (synthpop's showcase data) with its empty cells and ``-8`` codes through the CLI's CART:
``synthesize --method cart --missing-code nociga=-8`` and ``fit`` / ``synthesize --model``."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest
from _shared import shared_path

from bayes_risk.cli import main

COLS = ["sex", "age", "edu", "marital", "income", "ls", "smoke", "nociga", "height", "weight",
        "mmarr", "region"]
SYN = ["marital", "income", "ls", "smoke", "nociga", "mmarr", "weight"]


@pytest.fixture(scope="module")
def sd(tmp_path_factory):
    df = pd.read_csv(shared_path("data", "SD2011.csv"))[COLS].head(1500)
    assert df["income"].isna().any() and (df["income"] == -8).any()
    assert (df["nociga"] == -8).any() and df["mmarr"].isna().any()
    d = tmp_path_factory.mktemp("sd")
    df.to_csv(d / "sd.csv", index=False)
    return d, df


def _rates(df, col):
    return df[col].isna().mean(), (df[col] == -8).mean()


def test_sd2011_cart_synthesize_with_missing_codes(sd):
    """Shares of empty cells and of -8 in each synthesized column within 0.04 of the original's
    (mean of m = 3 datasets of 1500 records: binomial sd of a share <= 0.013, halved by the
    mean, plus the leaf bootstrap)."""
    d, df = sd
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert main(["synthesize", str(d / "sd.csv"), "--method", "cart", "--synthesize", *SYN,
                     "--missing-code", "nociga=-8", "--missing-code", "income=-8", "-m", "3",
                     "--random-seed", "1", "-q", "--out", str(d / "syn")]) == 0
    manifest = json.loads((d / "syn" / "manifest.json").read_text())
    assert manifest["method"] == "cart"
    syn = [pd.read_parquet(d / "syn" / f"syn_00{i}.parquet") for i in (1, 2, 3)]
    for col in SYN:
        na, code = _rates(df, col)
        assert abs(np.mean([_rates(s, col)[0] for s in syn]) - na) < 0.04, col
        assert abs(np.mean([_rates(s, col)[1] for s in syn]) - code) < 0.04, col
    obs = set(df["income"][df["income"].notna() & (df["income"] != -8)])
    for s in syn:
        v = s["income"][s["income"].notna() & (s["income"] != -8)]
        assert set(v) <= obs


def test_sd2011_cart_fit_then_synthesize_from_the_saved_folder(sd):
    """The saved folder holds the missing-value state: synthesize --model reproduces empty
    cells and codes."""
    d, _ = sd
    args = ["--synthesize", "income", "nociga", "mmarr", "--missing-code", "nociga=-8",
            "--missing-code", "income=-8"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert main(["fit", str(d / "sd.csv"), "--method", "cart", *args, "--random-seed", "3",
                     "-q", "--out", str(d / "model")]) == 0
        assert main(["synthesize", "--model", str(d / "model"), "-m", "2", "--random-seed", "4",
                     "-q", "--out", str(d / "syn_model")]) == 0
    a = pd.read_parquet(d / "syn_model" / "syn_001.parquet")
    assert a["income"].isna().any() and (a["income"] == -8).any() and (a["nociga"] == -8).any()


def test_sd2011_release_rebuilds_and_attribute_runs(sd, capsys):
    """The release is reproduced by the synthesizer rebuilt from its manifest (empty cells in
    the same places count as equal), and attribute risk uses its plug-in likelihood with the
    missing values held at their kind."""
    from bayes_risk.data import read_synthetic, read_table
    from bayes_risk.models import rebuild_synthesizer

    d, _ = sd
    if not (d / "syn").exists():
        test_sd2011_cart_synthesize_with_missing_codes(sd)
    release = read_synthetic(d / "syn")
    model = rebuild_synthesizer(read_table(d / "sd.csv"), release)
    assert "income" in model.missing_
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert main(["attribute", str(d / "sd.csv"), str(d / "syn"), "--records", "0-4",
                     "--out", str(d / "att")]) == 0
    summary = json.loads((d / "att" / "summary.json").read_text())
    assert summary["settings"]["missing_values"] == "held_at_kind"
    # prop_top is "share ranked first" on the command line as in the report, in per cent
    un = summary["unflagged"]
    printed = capsys.readouterr().out
    assert (f"share ranked first {100 * un['prop_top']:.3g} % (prop_top in summary.json), mean "
            f"p_true {100 * un['mean_p_true']:.3g} %") in printed
    # and what the release adds beside it (issue 63)
    assert (f"share with evidence {100 * un['prop_evidence']:.3g} % (prop_evidence: Bayes "
            "factor of the true values >= 3, ") in printed
    p = pd.read_csv(d / "att" / "records.csv")["p_true"]
    assert len(p) == 5 and p.between(0, 1).all()


@pytest.mark.slow
def test_sd2011_audit_runs_posterior_identification_with_missing_values(sd):
    """``bayes-risk audit`` of the CART release reaches and runs its posterior-identification
    step (replicates with empty cells and -8 codes, drawn in several batches), and its
    settings state how missing known values were matched."""
    d, df = sd
    if not (d / "syn").exists():
        test_sd2011_cart_synthesize_with_missing_codes(sd)
    out = d / "audit"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert main(["audit", str(d / "sd.csv"), str(d / "syn"), "--known", "sex", "marital",
                     "nociga", "--skip", "utility", "identification", "attribute",
                     "disclosure", "--random-seed", "2", "-q", "--out", str(out)]) == 0
    s = json.loads((out / "posterior_identification" / "summary.json").read_text())
    assert s["settings"]["missing_known"] == "any"
    n_missing = int(df["marital"].isna().sum() + df["nociga"].isna().sum()
                    + (df["nociga"] == -8).sum())
    assert s["settings"]["n_missing_known_values"] == n_missing
    assert s["uncertainty"]["n_replicates"] >= 100  # several batches


@pytest.fixture(scope="module")
def sd_small(tmp_path_factory):
    """500 SD2011 records: income has empty cells and -8 codes."""
    df = pd.read_csv(shared_path("data", "SD2011.csv"))[
        ["sex", "age", "placesize", "edu", "income"]].head(500)
    assert df["income"].isna().any() and (df["income"] == -8).any()
    d = tmp_path_factory.mktemp("sd_small")
    df.to_csv(d / "sd.csv", index=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert main(["fit", str(d / "sd.csv"), "--method", "cart", "--synthesize", "edu",
                     "income", "--missing-code", "income=-8", "--random-seed", "1", "-q",
                     "--out", str(d / "model")]) == 0
        assert main(["synthesize", "--model", str(d / "model"), "-m", "3", "--random-seed", "2",
                     "-q", "--out", str(d / "syn")]) == 0
    return d, df


@pytest.mark.parametrize("known", [[], ["--known", "edu"]])
def test_sd2011_attribute_with_a_saved_cart_folder_fitted_with_missing_values(sd_small, known):
    """``attribute --model`` with a CART folder fitted with empty cells and -8 codes of income:
    every record is evaluated (records with a missing income included), p_true in [0, 1] with
    the plug-in's diagnostics; a missing income is held (not guessed): such a record's G counts
    edu's levels only, or is 1 when income is the only target (--known edu)."""
    d, df = sd_small
    out = d / ("att_known" if known else "att")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert main(["attribute", str(d / "sd.csv"), str(d / "syn"), "--model",
                     str(d / "model"), "--records", "0-59", *known, "--random-seed", "3", "-q",
                     "--out", str(out)]) == 0
    rec = pd.read_csv(out / "records.csv")
    summary = json.loads((out / "summary.json").read_text())
    assert summary["settings"]["missing_values"] == "held_at_kind"
    assert summary["settings"]["estimator"] == "plugin"
    assert len(rec) == 60 and rec["p_true"].between(0, 1).all()
    assert {"mc_se_max", "baseline", "rank_min"} <= set(rec.columns)
    miss = (df["income"].isna() | (df["income"] == -8)).to_numpy()[:60]
    assert miss.any() and (~miss).any()
    g_missing = 1 if known else df["edu"].nunique()
    assert (rec["G"][miss] == g_missing).all()
    assert (rec["G"][~miss] > g_missing).all()  # an observed income is guessed on its grid
    for png in ("p_true_hist.png", "rank_hist.png"):
        assert (out / png).stat().st_size > 0
