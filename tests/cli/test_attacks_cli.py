"""``bayes-risk attacks`` end to end: the files, the numbers of the Python API, the errors."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest

import bayes_risk as br
from bayes_risk import cli
from bayes_risk.data import make_ce_like
from bayes_risk.exceptions import DataWarning

CAT = ["Urban", "Marital", "Tenure"]


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    root = tmp_path_factory.mktemp("attacks_cli")
    d = make_ce_like(n=400, random_seed=5)
    orig, hold = d.iloc[:200].reset_index(drop=True), d.iloc[200:].reset_index(drop=True)
    rng = np.random.default_rng(8)
    syn = orig.copy()
    syn["Income"] = orig["Income"].to_numpy()[rng.permutation(200)]
    for name, t in (("orig", orig), ("hold", hold), ("syn", syn)):
        t.to_csv(root / f"{name}.csv", index=False)
    return root, orig, hold, syn


def test_end_to_end_matches_the_api(files, tmp_path, capsys):
    root, orig, hold, syn = files
    out = tmp_path / "att"
    argv = ["attacks", str(root / "orig.csv"), str(root / "syn.csv"), "--holdout",
            str(root / "hold.csv"), "--categorical", *CAT, "--n-attacks", "40",
            "--linkability", "Age,Urban", "Income,Expenditure", "--n-neighbors", "2",
            "--inference", "Income", "Tenure", "--random-seed", "4", "--out", str(out)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)
        assert cli.main(argv) == 0
        so = br.singling_out_risk(orig, syn, holdout=hold, n_attacks=40, categorical=CAT,
                                  random_seed=4)
        lk = br.linkability_risk(orig, syn, holdout=hold, n_attacks=40, n_neighbors=2,
                                 aux_columns=(["Age", "Urban"], ["Income", "Expenditure"]),
                                 categorical=CAT, random_seed=4)
        inf = br.inference_risk(orig, syn, holdout=hold, n_attacks=40, categorical=CAT,
                                secret=["Income", "Tenure"], random_seed=4)
    printed = capsys.readouterr().out
    assert "singling out: univariate" in printed and "linkability of (Age, Urban)" in printed
    assert "inference from every other column: Income" in printed
    assert sorted(p.name for p in out.iterdir()) == sorted(
        ["summary.json", "singling_out.csv", "singling_out_queries.csv", "singling_out.png",
         "linkability.csv", "linkability_records.csv", "linkability.png", "inference.csv",
         "inference_records.csv", "inference.png"])
    got = pd.read_csv(out / "singling_out.csv")
    np.testing.assert_allclose(got["risk"], so.table["risk"])
    assert got["n_main"].tolist() == so.table["n_main"].tolist()
    np.testing.assert_allclose(pd.read_csv(out / "linkability.csv")["risk"], lk.table["risk"])
    s = json.loads((out / "summary.json").read_text())
    assert s["singling_out"]["settings"]["n_attacks"] == 40
    assert s["linkability"]["settings"]["aux_columns"] == [["Age", "Urban"],
                                                           ["Income", "Expenditure"]]
    assert s["inputs"]["holdout"].endswith("hold.csv")
    got = pd.read_csv(out / "inference.csv")
    np.testing.assert_allclose(got["risk"], inf.table["risk"])
    assert got["n_main"].tolist() == inf.table["n_main"].tolist()
    assert s["inference"]["settings"]["regression"] == {"Income": True, "Tenure": False}


def test_linkability_alone_and_bad_options(files, tmp_path, capsys):
    root = files[0]
    base = ["attacks", str(root / "orig.csv"), str(root / "syn.csv"), "--categorical", *CAT]
    out = tmp_path / "link"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)
        assert cli.main([*base, "--singling-out", "none", "--linkability", "Age", "Income",
                         "--n-attacks", "30", "--quiet", "--out", str(out)]) == 0
    assert not (out / "singling_out.csv").exists() and (out / "linkability.csv").is_file()
    assert "NO_HOLDOUT" in json.loads((out / "summary.json").read_text())["warnings"]
    capsys.readouterr()
    assert cli.main([*base, "--singling-out", "none", "--out", str(tmp_path / "x")]) == 2
    assert "[OPTION_REQUIRED]" in capsys.readouterr().err
    assert cli.main([*base, "--linkability", "Age", ",", "--out", str(tmp_path / "y")]) == 2
    assert "[BAD_OPTION_VALUE]" in capsys.readouterr().err
    assert cli.main([*base, "--n-cols", "9", "--out", str(tmp_path / "z")]) == 2
    err = capsys.readouterr().err
    assert "[BAD_OPTION_VALUE]" in err and "--n-cols 9" in err
    assert not any((tmp_path / n).exists() for n in ("x", "y", "z"))


def test_inference_alone_and_its_options(files, tmp_path, capsys):
    root, orig, _, syn = files
    base = ["attacks", str(root / "orig.csv"), str(root / "syn.csv"), "--categorical", *CAT,
            "--singling-out", "none"]
    out = tmp_path / "inf"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)
        assert cli.main([*base, "--inference", "Income", "--aux-columns", "Age", "Expenditure",
                         "--regression", "no", "--n-attacks", "30", "--random-seed", "2",
                         "--out", str(out)]) == 0
        inf = br.inference_risk(orig, syn, secret="Income", aux_columns=["Age", "Expenditure"],
                                guess=br.GuessSpec(regression=False), n_attacks=30, categorical=CAT,
                                random_seed=2)
    assert "inference from Age, Expenditure: Income" in capsys.readouterr().out
    got = pd.read_csv(out / "inference.csv")
    assert got["n_main"].tolist() == inf.table["n_main"].tolist()
    assert not got["regression"].any()
    assert cli.main([*base, "--inference", "Urban", "--regression", "yes",
                     "--out", str(tmp_path / "x")]) == 2
    assert "categorical secret 'Urban'" in capsys.readouterr().err
    assert cli.main([*base, "--inference", "Nope", "--out", str(tmp_path / "y")]) == 2
    assert "[MISSING_COLUMN]" in capsys.readouterr().err
    assert cli.main(["attacks", str(root / "orig.csv"), str(root / "syn.csv"), "--aux-columns",
                     "Age", "--out", str(tmp_path / "z")]) == 2
    assert "[OPTION_REQUIRED]" in capsys.readouterr().err
    assert not any((tmp_path / n).exists() for n in ("x", "y", "z"))
