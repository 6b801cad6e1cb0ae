"""``bayes-risk original-risk`` end to end: the files, the printed summary, the numbers of the
Python function, and bad input naming the option (exit 2, nothing written)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from bayes_risk import cli, original_risk
from bayes_risk.data import make_ce_like

KEYS = ["Age", "Urban", "Marital"]


@pytest.fixture(scope="module")
def orig(tmp_path_factory):
    d = make_ce_like(n=300, random_seed=5)
    d["w"] = 50.0 + (np.arange(len(d)) % 7) * 20
    p = tmp_path_factory.mktemp("original_risk_cli") / "orig.csv"
    d.to_csv(p, index=False)
    return p, d


def test_end_to_end(orig, tmp_path, capsys):
    path, d = orig
    out = tmp_path / "o"
    assert cli.main(["original-risk", str(path), "--keys", *KEYS, "--weights", "w",
                     "--sensitive", "Tenure", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "expected re-identifications" in printed and "Benedetti" in printed
    assert "k = 2:" in printed and "SUDA2" in printed and "l-diversity of Tenure" in printed
    assert sorted(p.name for p in out.iterdir()) == ["records.csv", "suda_contributions.csv",
                                                     "summary.json"]
    rec = pd.read_csv(out / "records.csv")
    ref = original_risk(d, keys=KEYS, weights="w", sensitive="Tenure")
    assert rec["record"].tolist() == list(range(len(d)))
    for c in ref.records.columns:
        np.testing.assert_allclose(rec[c], ref.records[c], rtol=1e-12, err_msg=c)
    s = json.loads((out / "summary.json").read_text())
    assert s["command"] == "original-risk" and s["keys"] == KEYS
    assert s["global_risk"]["expected_reidentifications"] == pytest.approx(
        ref.global_risk["expected_reidentifications"])
    assert s["settings"]["weights"] == "w" and s["settings"]["method"] == "approx"
    assert set(s["k_anonymity"]) == {"2", "3", "5"} and "Tenure" in s["l_diversity"]
    contrib = pd.read_csv(out / "suda_contributions.csv")
    assert list(contrib.columns) == ["variable", "level", "contribution"]
    tot = contrib[contrib["level"] == "(all)"].set_index("variable")["contribution"]
    np.testing.assert_allclose(
        tot[KEYS], ref.suda["attribute_contributions"].set_index("variable")["contribution"])


def test_unweighted_no_suda_exact_compat(orig, tmp_path, capsys):
    path, d = orig
    out = tmp_path / "o"
    assert cli.main(["original-risk", str(path), "--keys", *KEYS, "--no-suda",
                     "--k-anonymity", "2", "4", "--compat", "sdcmicro",
                     "--out", str(out)]) == 0
    assert "1/f_k" in capsys.readouterr().out
    assert sorted(p.name for p in out.iterdir()) == ["records.csv", "summary.json"]
    rec = pd.read_csv(out / "records.csv")
    np.testing.assert_allclose(rec["risk"], 1 / rec["fk"])
    s = json.loads((out / "summary.json").read_text())
    assert set(s["k_anonymity"]) == {"2", "4"} and s["suda"] is None
    assert s["settings"]["compat"] == "sdcmicro"


@pytest.mark.parametrize(("extra", "code", "words"), [
    (["--keys", "Age", "Urbn"], "MISSING_COLUMN", "--keys: column(s) ['Urbn']"),
    (["--keys", *KEYS, "--weights", "ww"], "MISSING_COLUMN", "--weights: column(s) ['ww']"),
    (["--keys", *KEYS, "--sensitive", "x"], "MISSING_COLUMN", "--sensitive: column(s) ['x']"),
    (["--keys", *KEYS, "--dis-fraction", "1.5"], "BAD_OPTION_VALUE", "--dis-fraction"),
    (["--keys", *KEYS, "--recursive-c", "0"], "BAD_OPTION_VALUE", "--recursive-c"),
    (["--keys", *KEYS, "--max-size", "0"], "BAD_OPTION_VALUE", "--max-size"),
    (["--keys", *KEYS, "--k-anonymity", "1"], "BAD_OPTION_VALUE", "--k-anonymity"),
    (["--keys", *KEYS, "--weights", "Income"], "INVALID_ARGUMENT", "positive"),
])
def test_bad_input(orig, tmp_path, capsys, extra, code, words):
    path, _ = orig
    out = tmp_path / "o"
    assert cli.main(["original-risk", str(path), *extra, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"error [{code}]" in err and words in err, err
    assert not out.exists()
