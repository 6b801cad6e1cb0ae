"""``bayes-risk remedy``: the post-processed release written with its manifest, audited again
with the model-based steps withheld; bad options refused before anything is written."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from bayes_risk.cli import main
from bayes_risk.data import SyntheticData, make_ce_like

CE_CAT = ["Urban", "Marital", "Tenure"]

#: the audits here are about the remedies: few points between the radius grid's (the
#: refinement is tests/identification/test_radius_supremum.py's; at its default of 200 points
#: it was 40 % of this file's time)
FEW_POINTS = ["--radius-refine", "10"]


@pytest.fixture(scope="module")
def work(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("remedy")
    make_ce_like(300, random_seed=5).to_csv(root / "ce.csv", index=False)
    cwd = os.getcwd()
    os.chdir(root)
    try:
        assert main(["synthesize", "ce.csv", "--method", "cart", "--synthesize", "Income",
                     "Expenditure", "--categorical", *CE_CAT, "-m", "2", "--random-seed", "1",
                     "-q", "--out", "rel"]) == 0
    finally:
        os.chdir(cwd)
    return root


def test_remedy_then_audit(work, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(work)
    top = round(float(pd.read_csv("ce.csv")["Income"].quantile(0.8)))
    out = tmp_path / "coded"
    assert main(["remedy", "ce.csv", "rel", "--bottom-top", f"Income=:{top}",
                 "--smooth", "Expenditure", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "top-coded" in text and "smoothed: Expenditure" in text
    # the result's own first line: the release read, by the folder the run recorded
    assert text.splitlines()[0].endswith(f"dataset(s) of {work / 'rel'}"), text
    before, after = SyntheticData.load("rel"), SyntheticData.load(out)
    for z0, z1 in zip(before, after, strict=True):
        assert (z1["Income"] <= top).all()
        assert ((z0["Income"] <= top) == (z1["Income"] == z0["Income"])).all()
        assert not z1["Expenditure"].equals(z0["Expenditure"])
        pd.testing.assert_frame_equal(z1.drop(columns=["Income", "Expenditure"]),
                                      z0.drop(columns=["Income", "Expenditure"]))
    ops = [s["operation"] for s in after.extra["post_processing"]]
    assert ops == ["bottom_top_coding", "smoothing"]
    assert after.model_id == before.model_id and after.schema == before.schema
    aud0, aud = tmp_path / "aud0", tmp_path / "aud"
    common = ["--known", "Age", "Urban", "Marital", "--categorical", *CE_CAT, "--random-seed",
              "1", "-q"]
    assert main(["audit", *FEW_POINTS, "ce.csv", "rel", *common, "--skip", "attribute",
                 "posterior-identification", "--out", str(aud0)]) == 0
    assert main(["audit", *FEW_POINTS, "ce.csv", str(out), *common, "--before", str(aud0),
                 "--out", str(aud)]) == 0
    summary = json.loads((aud / "summary.json").read_text())
    steps = {s["name"]: s for s in summary["steps"]}
    for name in ("attribute", "posterior_identification"):
        assert steps[name]["status"] == "skipped"
        assert "post-processed" in steps[name]["reason"]
    assert steps["identification"]["status"] == "ran"
    assert steps["disclosure"]["status"] == "ran"
    report = (aud / "report.md").read_text()
    assert "post-processed" in report and "### Before and after" in report
    assert "Before and after" in (aud / "report.html").read_text()
    # the verdict lines of both audits, matched by step and measure
    before = {(v["step"], v["measure"]): v["value"] for v in json.loads(
        (aud0 / "summary.json").read_text())["verdicts"]}
    pairs = summary["before_after"]["lines"]
    assert {(r["step"], r["measure"]) for r in pairs} >= set(before)
    for r in pairs:
        if (r["step"], r["measure"]) in before:
            assert r["before"] == before[(r["step"], r["measure"])]
    # an audit of another original is refused before anything runs
    other = tmp_path / "other.csv"
    make_ce_like(300, random_seed=6).to_csv(other, index=False)
    assert main(["audit", *FEW_POINTS, str(other), str(out), *common, "--before", str(aud0),
                 "--out", str(tmp_path / "aud2")]) == 2
    err = capsys.readouterr().err
    assert "[ORIGINAL_DIFFERS]" in err and "--before" in err, err
    assert not (tmp_path / "aud2").exists()


@pytest.mark.parametrize("extra, code, text", [
    (["--bottom-top", "Income=5"], "BAD_OPTION_VALUE", "COL=BOTTOM:TOP"),
    (["--bottom-top", "Income=a:5"], "BAD_OPTION_VALUE", "'a' is not a number"),
    (["--bottom-top", "Income=9:5"], "BAD_OPTION_VALUE", "--bottom-top Income: bottom 9"),
    (["--exclude", "Income=1"], "OPTION_CONFLICT", "--exclude"),
    (["--bottom-top", "Income=:5", "--exclude", "Income="], "BAD_OPTION_VALUE",
     "--exclude Income: '' is not a number"),
    (["--bottom-top", "Income=:5", "--exclude", "Expenditure=1"], "BAD_OPTION_VALUE",
     "--exclude names ['Expenditure'], which --bottom-top does not name"),
    ([], "OPTION_REQUIRED", "nothing to do"),
    (["--smooth", "Urban"], "REMEDY_NOT_APPLICABLE", "unsynthesized"),
    (["--keys", "Age", "--smooth", "Income"], "OPTION_CONFLICT", "--keys"),
    (["--remove", "replicated-uniques"], "REMEDY_NOT_APPLICABLE",
     "--remove replicated-uniques applies to fully synthetic releases"),
    (["--smooth", "Nope"], "MISSING_COLUMN", "'Nope'"),
    # sdcMicro's remedies (Income and Expenditure are the synthesized columns)
    (["--pram", "Income"], "WRONG_DTYPE", "--pram: column 'Income' is continuous"),
    (["--pram", "Tenure"], "REMEDY_NOT_APPLICABLE", "--pram: column 'Tenure' is released "
     "unsynthesized"),
    (["--local-suppression", "Income"], "WRONG_DTYPE", "continuous key"),
    (["--add-noise", "Nope"], "MISSING_COLUMN", "--add-noise: column(s) ['Nope']"),
    (["--microaggregation", "Income", "--aggr", "1"], "BAD_OPTION_VALUE",
     "--aggr must be an integer >= 2"),
    (["--microaggregation", "Income", "--pram-pd", "1.5"], "BAD_OPTION_VALUE",
     "--pram-pd must be a number in [0, 1]"),
    (["--add-noise", "Income", "--noise-method", "correlated"], "BAD_OPTION_VALUE",
     "--noise-method correlated draws noise with the columns' covariance"),
    (["--microaggregation", "Income", "--importance", "1"], "OPTION_CONFLICT",
     "--importance needs --local-suppression"),
    (["--microaggregation", "Income", "--strata", "Income"], "OPTION_CONFLICT",
     "--strata: column(s) ['Income'] are also changed"),
    (["--add-noise", "Income", "--strata", "Urban"], "OPTION_CONFLICT",
     "--strata needs --pram, --local-suppression or --microaggregation"),
    (["--microaggregation", "Income", "Expenditure", "--strata", "Age"],
     "REMEDY_NOT_APPLICABLE", "fewer than --aggr 3"),
])
def test_bad_options_write_nothing(work, tmp_path, monkeypatch, capsys, extra, code, text):
    monkeypatch.chdir(work)
    out = tmp_path / "o"
    assert main(["remedy", "ce.csv", "rel", *extra, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"[{code}]" in err and text in err, err
    # worded for the command line: the options, never the Python arguments
    assert not any(w in err for w in ("bottom_top_coding", "recode_exclude", "remove=",
                                      "pram_pd", "local_suppression", "add_noise",
                                      "noise_method", "aggr=")), err
    assert not out.exists()


# ---- the remedy-then-audit loop of every remedy (issue 64.3), on a full synthesis (63.5) ----
FULL = ["Age", "Urban", "Tenure", "Educ", "Expenditure", "Marital", "Income"]


@pytest.fixture(scope="module")
def full(work) -> Path:
    """The package's own fully synthesized CART release of ``work``'s original (manifest:
    ``full-same-n``, every record listed as synthesized), a holdout, and the audit before."""
    cwd = os.getcwd()
    os.chdir(work)
    try:
        assert main(["synthesize", "ce.csv", "--method", "cart", "--synthesize", *FULL,
                     "--categorical", *CE_CAT, "-m", "2", "--random-seed", "1", "-q",
                     "--out", "full"]) == 0
        make_ce_like(600, random_seed=5).iloc[300:].to_csv("hold.csv", index=False)
        assert main(["audit", *FEW_POINTS, "ce.csv", "full", "--known", "Age", "Urban", "Marital",
                     "--categorical", *CE_CAT, "--skip", "attribute", "membership",
                     "posterior-identification", "--random-seed", "1", "-q",
                     "--out", "full_audit"]) == 0
    finally:
        os.chdir(cwd)
    return work


def test_remove_accepts_the_package_own_full_cart_release(full, tmp_path, monkeypatch, capsys):
    """Issue 63.5: the folder was refused as "partially synthetic" (REMEDY_NOT_APPLICABLE)
    while its files given one by one were accepted; both now remove the same rows."""
    monkeypatch.chdir(full)
    rel = SyntheticData.load("full")
    assert rel.generation == "full-same-n" and rel.synthesized_records is not None
    assert bool(rel.synthesized_records.all())
    for l, z in enumerate(rel, start=1):
        z.to_csv(f"full_{l}.csv", index=False)
    a, b = tmp_path / "a", tmp_path / "b"
    assert main(["remedy", "ce.csv", "full", "--remove", "replicated-uniques", "-q",
                 "--out", str(a)]) == 0, capsys.readouterr().err
    assert main(["remedy", "ce.csv", "full_1.csv", "full_2.csv", "--remove",
                 "replicated-uniques", "-q", "--out", str(b)]) == 0
    ra, rb = SyntheticData.load(a), SyntheticData.load(b)
    na = ra.extra["post_processing"][0]["n_removed"]
    assert na == rb.extra["post_processing"][0]["n_removed"] and sum(na) > 0
    for za, zb, z in zip(ra, rb, rel, strict=True):
        assert len(za) == len(z) - na.pop(0)
        pd.testing.assert_frame_equal(za.reset_index(drop=True), zb[list(za.columns)],
                                      check_dtype=False, check_categorical=False)
    # rows are no records once some are removed: no per-record flags, the scheme kept
    assert ra.synthesized_records is None and ra.generation == "full-same-n"
    # a partially synthetic release is still refused
    assert main(["remedy", "ce.csv", "rel", "--remove", "replicated-uniques", "-q",
                 "--out", str(tmp_path / "c")]) == 2
    assert "[REMEDY_NOT_APPLICABLE]" in capsys.readouterr().err


def _audit_after(folder: Path, before: Path, out: Path) -> dict:
    assert main(["audit", *FEW_POINTS, "ce.csv", str(folder), "--known", "Age", "Urban", "Marital",
                 "--categorical", *CE_CAT, "--holdout", "hold.csv", "--before", str(before),
                 "--random-seed", "1", "-q", "--out", str(out)]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["complete"] and summary["before_after"]["lines"]
    assert "Before and after" in (out / "report.md").read_text()
    return {s["name"]: s for s in summary["steps"]}


def test_removal_then_audit_disclosure_utility_attacks(full, tmp_path, monkeypatch, capsys):
    """Issue 64.3: after removing replicated uniques every command measures the remedied
    folder (before: ORIGINAL_DIFFERS "300 vs 281 records"; with --allow-different-original,
    ROW_COUNT_MISMATCH calling a full synthesis partially synthetic)."""
    monkeypatch.chdir(full)
    rem = tmp_path / "rem"
    assert main(["remedy", "ce.csv", "full", "--remove", "replicated-uniques", "--keys", "Age",
                 "Urban", "Marital", "-q", "--out", str(rem)]) == 0
    sizes = [len(z) for z in SyntheticData.load(rem)]
    assert all(k < 300 for k in sizes)
    steps = _audit_after(rem, full / "full_audit", tmp_path / "aud")
    assert steps["disclosure"]["status"] == "ran" and steps["utility"]["status"] == "ran"
    assert steps["attacks"]["status"] == "ran"
    # issue 85: the manifest records the rows removed, so each remaining row is still paired
    # with its record and identification is measured (it was withheld)
    assert steps["identification"]["status"] == "ran"
    # the removal took out the keys' replicated uniques: repU on those keys is 0 after
    after = json.loads((tmp_path / "aud" / "summary.json").read_text())
    rep = [v for v in after["verdicts"] if v["measure"].startswith("repU")]
    assert rep and rep[0]["value"] == 0
    for argv in (["disclosure", "--keys", "Age", "Urban", "Marital", "--target", "Tenure"],
                 ["utility"], ["attacks", "--holdout", "hold.csv", "--n-attacks", "40"]):
        out = tmp_path / argv[0]
        assert main([argv[0], "ce.csv", str(rem), *argv[1:], "-q", "--out", str(out)]) == 0, \
            capsys.readouterr().err
        assert (out / "summary.json").is_file()
    # identification on its own: a column declared unsynthesized is refused (a removed
    # record's value is not released), the synthesized one measured
    assert main(["identification", "ce.csv", str(rem), "--known-unsynthesized", "Age",
                 "-q", "--out", str(tmp_path / "ident")]) == 2
    err = capsys.readouterr().err
    assert "[REMEDY_NOT_APPLICABLE]" in err and "rows were removed" in err, err
    assert main(["identification", "ce.csv", str(rem), "--known-synthesized", "Age",
                 "Urban", "-q", "--out", str(tmp_path / "ident")]) == 0, \
        capsys.readouterr().err


@pytest.mark.parametrize("remedy", [["--bottom-top", "Income=:150000"],
                                    ["--smooth", "Expenditure"]],
                         ids=["top-coding", "smoothing"])
def test_each_remedy_of_a_full_release_then_audit(full, tmp_path, monkeypatch, remedy):
    """The loop of the README for one remedy at a time on the full synthesis (coding and
    smoothing together on a partial one: test_remedy_then_audit)."""
    monkeypatch.chdir(full)
    out = tmp_path / "r"
    assert main(["remedy", "ce.csv", "full", *remedy, "-q", "--out", str(out)]) == 0
    steps = _audit_after(out, full / "full_audit", tmp_path / "aud")
    for name in ("utility", "identification", "disclosure", "attacks"):
        assert steps[name]["status"] == "ran", (name, steps[name])


def test_sdcmicro_remedies_of_a_full_release_then_audit(full, tmp_path, monkeypatch, capsys):
    """sdcMicro's four remedies in one run: each recorded in the manifest (what it changed,
    never the seed), the release reproducible from its seed, k-anonymous on the keys, and
    audited again against the audit before."""
    from bayes_risk.disclosure.original_risk import _frequencies

    monkeypatch.chdir(full)
    keys = ["Age", "Urban", "Marital"]
    argv = ["remedy", "ce.csv", "full", "--pram", "Tenure", "--local-suppression", *keys,
            "--k", "3", "--microaggregation", "Expenditure", "Income", "--add-noise", "Income",
            "--random-seed", "7"]
    out, again = tmp_path / "r", tmp_path / "r2"
    assert main([*argv, "--out", str(out)]) == 0
    text = capsys.readouterr().out
    for line in ("post-randomized Tenure (PRAM, pd 0.8, alpha 0.5)",
                 "3-anonymity on Age, Urban, Marital: value(s) suppressed Age",
                 "microaggregated Expenditure, Income (MDAV, groups of 3 or more)",
                 "noise added to Income (additive: its standard deviation 150 %"):
        assert line in text, text
    assert main([*argv, "-q", "--out", str(again)]) == 0
    before, after = SyntheticData.load("full"), SyntheticData.load(out)
    for z1, z2 in zip(after, SyntheticData.load(again), strict=True):
        pd.testing.assert_frame_equal(z1, z2)  # same seed, same release
    steps = after.extra["post_processing"]
    assert [s["operation"] for s in steps] == ["pram", "microaggregation", "add_noise",
                                               "local_suppression"]
    assert all(s["source"] == steps[0]["source"] and s["source"]["folder"] for s in steps)
    assert "random_seed" not in json.dumps(steps)
    pram, micro, _, supp = steps
    for l, (z0, z1) in enumerate(zip(before, after, strict=True)):
        assert int((z0["Tenure"] != z1["Tenure"]).sum()) == pram["n_changed"]["Tenure"][l]
        for c in keys:
            assert int(z1[c].isna().sum()) == supp["n_suppressed"][c][l]
        # 3-anonymity on the keys, a suppressed value matching every value (sdcMicro's)
        codes = np.column_stack([pd.factorize(z1[c])[0] for c in keys])
        f, _ = _frequencies(np.maximum(codes, 0), codes < 0, np.ones(len(z1)), True)
        assert f.min() >= 3
        assert z1["Expenditure"].value_counts().min() >= 3  # MDAV's groups of 3 or more
        assert micro["smallest_group"][l] >= 3
        assert z1["Educ"].equals(z0["Educ"])
    aud = tmp_path / "aud"
    assert main(["audit", *FEW_POINTS, "ce.csv", str(out), "--known", *keys, "--categorical",
                 *CE_CAT, "--skip", "attribute", "membership", "posterior-identification",
                 "--random-seed", "1", "-q", "--before", str(full / "full_audit"),
                 "--out", str(aud)]) == 0
    summary = json.loads((aud / "summary.json").read_text())
    status = {s["name"]: s["status"] for s in summary["steps"]}
    assert status["identification"] == status["disclosure"] == "ran"
    lines = {v["measure"]: v for v in summary["verdicts"]}
    # the suppressed keys count as a level of their own: every line matching on them says so
    for v in lines.values():
        if v["step"] in ("identification", "disclosure"):
            assert "SUPPRESSED_AS_MISSING" in v["warnings"], v
    pairs = summary["before_after"]["lines"]
    assert {r["measure"] for r in pairs} >= set(lines)
    report = (aud / "report.md").read_text()
    assert "### Before and after" in report and "pram, microaggregation" in report


def test_removal_reaudit_measures_identification_and_carries_attribute(
        full, tmp_path, monkeypatch):
    """Issue 85.2: after ``--remove replicated-uniques`` on known keys the re-audit measures
    the identification lines (every record a target, its true match only where its row is
    kept) and carries the attribute lines of the release before the remedy as upper bounds,
    counted as such by the banner (before: identification withheld, attribute "not
    assessed", the banner's denominator smaller)."""
    monkeypatch.chdir(full)
    common = ["--known", "Age", "Urban", "Marital", "--categorical", *CE_CAT,
              "--records", "0-39", "--skip", "membership", "posterior-identification",
              "attacks", "--random-seed", "1", "-q"]
    before, after, rem = tmp_path / "before", tmp_path / "after", tmp_path / "rem"
    assert main(["audit", *FEW_POINTS, "ce.csv", "full", *common, "--out", str(before)]) == 0
    assert main(["remedy", "ce.csv", "full", "--remove", "replicated-uniques", "--keys", "Age",
                 "Urban", "Marital", "-q", "--out", str(rem)]) == 0
    man = json.loads((rem / "manifest.json").read_text())
    step = man["extra"]["post_processing"][0]
    assert [len(r) for r in step["removed_rows"]] == step["n_removed"]
    assert main(["audit", *FEW_POINTS, "ce.csv", str(rem), *common, "--before", str(before),
                 "--out", str(after)]) == 0
    b = json.loads((before / "summary.json").read_text())
    a = json.loads((after / "summary.json").read_text())
    ident = [v for v in a["verdicts"] if v["step"] == "identification"]
    assert ident and all(not v["carried"] for v in ident)
    attr_b = [v for v in b["verdicts"] if v["step"] == "attribute"]
    attr_a = [v for v in a["verdicts"] if v["step"] == "attribute"]
    assert attr_b and [v["value"] for v in attr_a] == [v["value"] for v in attr_b]
    assert all(v["carried"].startswith("release before the remedy, an upper bound")
               for v in attr_a)
    lines = {(r["step"], r["measure"]): r for r in a["before_after"]["lines"]}
    assert all(lines[("attribute", v["measure"])]["status_after"].startswith("upper bound")
               for v in attr_a)
    assert all(lines[("identification", v["measure"])]["status_after"] != "not assessed"
               for v in ident)
    text = a["verdict_text"]
    k = len(attr_a)
    assert f"{len(a['verdicts']) - k} measured now" in text
    assert f"{k} {'is' if k == 1 else 'are'} not measured again but carried from the release " \
        "before the remedy as upper bounds" in text, text
    md = (after / "report.md").read_text()
    assert "exceeds (upper bound)" in md and "Not measured on this release: release before" in md
    assert "(upper bound, carried)" in md
    # without --before the attribute lines stay not assessed, with the reason
    alone = tmp_path / "alone"
    assert main(["audit", *FEW_POINTS, "ce.csv", str(rem), *common, "--out", str(alone)]) == 0
    s = json.loads((alone / "summary.json").read_text())
    assert not [v for v in s["verdicts"] if v["step"] == "attribute"]
    reason = next(x["reason"] for x in s["steps"] if x["name"] == "attribute")
    assert "carried as upper bounds" in reason
    # a removal on a column the intruder does not know bounds nothing: not carried
    rem2, after2 = tmp_path / "rem2", tmp_path / "after2"
    assert main(["remedy", "ce.csv", "full", "--remove", "replicated-uniques", "--keys", "Age",
                 "Tenure", "-q", "--out", str(rem2)]) == 0
    assert main(["audit", *FEW_POINTS, "ce.csv", str(rem2), *common, "--before", str(before),
                 "--out", str(after2)]) == 0
    s2 = json.loads((after2 / "summary.json").read_text())
    assert not [v for v in s2["verdicts"] if v["step"] == "attribute"]
    assert "not measured again" in s2["verdict_text"]
