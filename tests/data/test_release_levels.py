"""One check of a release's levels against its original's, on every path that compares them
(issue 64.1): a level of the release that the original never holds is an error
(``SYNTHETIC_ONLY_LEVEL``) unless the user says the release recodes the column (``--recoded``,
``SyntheticData.declare_recoded``); the attacks refuse a holdout coded otherwise than the
original (``UNKNOWN_LEVEL``), as membership does.

Before, an original whose Marital holds words against a release whose Marital holds codes gave
repU 0 and DiSCO 0 (28.3 % and 35.5 % when the codes match), with only a warning.
"""

from __future__ import annotations

import json
import os
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import bayes_risk as br
from bayes_risk.cli import main
from bayes_risk.data import SyntheticData, make_ce_like
from bayes_risk.exceptions import SchemaError

WORDS = {1: "Married", 2: "Widowed", 3: "Divorced", 4: "Separated", 5: "Never married"}
KEYS = ["Age", "Urban", "Marital"]


@pytest.fixture(scope="module")
def work(tmp_path_factory) -> Path:
    """A CE-like original (codes), the same with Marital in words, a CART release (codes) as
    plain files and as a folder, and holdouts coded as the original and in words."""
    root = tmp_path_factory.mktemp("levels")
    d = make_ce_like(600, random_seed=11)
    ce, hold = d.iloc[:300].reset_index(drop=True), d.iloc[300:].reset_index(drop=True)
    ce.to_csv(root / "ce.csv", index=False)
    ce.assign(Marital=ce["Marital"].map(WORDS)).to_csv(root / "olab.csv", index=False)
    hold.to_csv(root / "hold.csv", index=False)
    hold.assign(Marital=hold["Marital"].map(WORDS)).to_csv(root / "holdlab.csv", index=False)
    cwd = os.getcwd()
    os.chdir(root)
    try:
        assert main(["synthesize", "ce.csv", "--method", "cart", "--synthesize", "Tenure",
                     "Expenditure", "Income", "--categorical", "Urban", "Marital", "Tenure",
                     "-m", "2", "--random-seed", "1", "-q", "--out", "rel"]) == 0
    finally:
        os.chdir(cwd)
    for l in (1, 2):
        pd.read_parquet(root / "rel" / f"syn_00{l}.parquet").to_csv(root / f"s{l}.csv",
                                                                     index=False)
    return root


def _run(argv: list[str], capsys) -> tuple[int, str]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rc = main(argv)
    return rc, capsys.readouterr().err


SYN = ["s1.csv", "s2.csv"]
#: every command that compares the original with the release, on the words/codes pair
COMMANDS = {
    "disclosure": ["disclosure", "olab.csv", *SYN, "--keys", *KEYS, "--target", "Tenure"],
    "attacks": ["attacks", "olab.csv", *SYN, "--categorical", "Marital"],
    "utility": ["utility", "olab.csv", *SYN, "--synthesized", "Tenure", "Expenditure", "Income",
                "Marital"],
    "identification": ["identification", "olab.csv", *SYN, "--known-unsynthesized", "Age",
                       "--known-synthesized", "Marital"],
    "remedy": ["remedy", "olab.csv", *SYN, "--remove", "replicated-uniques", "--keys", *KEYS],
    # Marital synthesized, and the step that compared the unsynthesized columns skipped: the
    # audit's own check refuses the pair before a step runs
    "audit": ["audit", "olab.csv", *SYN, "--known", "Age", "Urban", "Income", "--synthesized",
              "Marital", "Tenure", "Expenditure", "Income", "--skip", "utility", "attribute",
              "membership"],
}


@pytest.mark.parametrize("command", list(COMMANDS))
def test_words_against_codes_are_refused_by_every_command(work, tmp_path, monkeypatch, capsys,
                                                          command):
    monkeypatch.chdir(work)
    out = tmp_path / "out"
    rc, err = _run([*COMMANDS[command], "-q", "--out", str(out)], capsys)
    assert rc == 2, err
    assert "error [SYNTHETIC_ONLY_LEVEL]: synthetic dataset 1: column 'Marital' holds 1, 2, 3, " \
        "4, 5, level(s) the original never holds (the original's levels: 'Divorced', " \
        "'Married', 'Never married', 'Separated', 'Widowed')" in err, err
    assert "--recoded Marital" in err
    assert not out.exists()  # nothing written


def test_the_folder_is_refused_with_a_different_original_allowed(work, tmp_path, monkeypatch,
                                                                 capsys):
    """The manifest's schema declares levels 1..5: they describe the release, not this
    original, whose levels are words."""
    monkeypatch.chdir(work)
    for argv in (["disclosure", "olab.csv", "rel", "--keys", *KEYS, "--target", "Tenure"],
                 ["audit", "olab.csv", "rel", "--known", *KEYS, "Income"]):
        rc, err = _run([*argv, "--allow-different-original", "-q", "--out",
                        str(tmp_path / argv[0])], capsys)
        assert rc == 2 and "error [SYNTHETIC_ONLY_LEVEL]" in err, err


def test_recoded_release_is_measured_with_the_warning(work, tmp_path, monkeypatch, capsys):
    """Said to recode Marital, the release is measured as it is (its codes match no word, so
    the DiSCO is that of a release that recodes the key), with the warning in summary.json;
    coded as the original, the same measure is far from zero (worked: 35.5 % on issue 64's
    pair; this pair's figure is checked positive)."""
    monkeypatch.chdir(work)
    out = tmp_path / "rec"
    rc, err = _run([*COMMANDS["disclosure"], "--recoded", "Marital", "-q", "--out", str(out)],
                   capsys)
    assert rc == 0, err
    s = json.loads((out / "summary.json").read_text())
    assert "SYNTHETIC_ONLY_LEVEL" in s["warnings"]
    assert s["means"]["DiSCO"] == 0  # no code matches a word
    same = tmp_path / "same"
    rc, err = _run(["disclosure", "ce.csv", *SYN, "--keys", *KEYS, "--target", "Tenure", "-q",
                    "--out", str(same)], capsys)
    assert rc == 0, err
    assert json.loads((same / "summary.json").read_text())["means"]["DiSCO"] > 5


def test_python_api_refuses_and_accepts_a_declared_recoding(work):
    olab = pd.read_csv(work / "olab.csv")
    syn = [pd.read_csv(work / f) for f in SYN]
    calls = {
        "disclosure_measures": lambda z: br.disclosure_measures(olab, z, keys=KEYS,
                                                                target="Tenure"),
        "pmse": lambda z: br.pmse(olab, z, categorical=["Marital"]),
        "singling_out_risk": lambda z: br.singling_out_risk(olab, z, n_attacks=20,
                                                            categorical=["Marital"],
                                                            random_seed=1),
        "sdc": lambda z: br.sdc(olab, z, keys=KEYS, remove="replicated_uniques"),
    }
    for name, call in calls.items():
        with pytest.raises(SchemaError, match="column 'Marital' holds 1, 2, 3, 4, 5") as err:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                call(syn)
        assert err.value.code == "SYNTHETIC_ONLY_LEVEL", name
        assert "release.declare_recoded(['Marital'])" in str(err.value), name
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            call(SyntheticData(syn).declare_recoded(["Marital"]))
        assert any("SYNTHETIC_ONLY_LEVEL" in str(w.message) for w in caught), name
    with pytest.raises(SchemaError, match="not columns of the release") as err:
        SyntheticData(syn).declare_recoded(["Marrital"])
    assert err.value.code == "UNKNOWN_COLUMN"


def test_declared_levels_no_record_holds_are_no_release_only_levels():
    """A schema whose levels describe the original (every level it holds among them) declares
    the rest as levels a release may hold (a codebook's level no record holds)."""
    orig = pd.DataFrame({"r": ["a", "b", "a", "b"], "x": [1.0, 2.0, 3.0, 4.0]})
    syn = orig.assign(r=["a", "c", "a", "b"])
    declared = br.infer_schema(orig, levels={"r": ["a", "b", "c"]})
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # neither error nor warning
        out = br.harmonise_levels(orig, [syn], schema=declared)
    assert out["r"].levels == ("a", "b", "c")
    # levels that do not describe the original (it holds "b", they do not) declare nothing
    other = br.infer_schema(orig.assign(r=["a", "c", "a", "c"]))
    with pytest.raises(SchemaError, match="column 'r' holds 'c'"):
        br.harmonise_levels(orig, [syn], schema=other)


def test_attacks_refuse_a_holdout_coded_otherwise(work, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(work)
    base = ["attacks", "ce.csv", *SYN, "--categorical", "Marital", "--n-attacks", "40",
            "--random-seed", "1", "-q"]
    rc, err = _run([*base, "--holdout", "holdlab.csv", "--out", str(tmp_path / "a")], capsys)
    assert rc == 2, err
    assert "error [UNKNOWN_LEVEL]: holdout row 0: column 'Marital' holds 'Married', a level " \
        "absent from the original" in err, err
    assert "300 of its 300 records hold levels of 'Marital' that none of the original's 300 " \
        "holds" in err
    rc, err = _run([*base, "--holdout", "hold.csv", "--out", str(tmp_path / "b")], capsys)
    assert rc == 0, err


def test_a_rare_level_of_the_population_in_the_holdout_is_no_other_coding():
    """A level none of the original's n records holds but k of the holdout's n_h do: drawn from
    one population, the k records all fall in the holdout with probability
    C(n_h, k) / C(n + n_h, k); with n = n_h = 100 that is 0.5 · 99/199 · 98/198 = 0.123 for
    k = 3 (accepted) and below 0.001 / 1 for k = 10 (refused; 1 categorical column)."""
    from bayes_risk.attacks._inputs import attack_inputs

    rng = np.random.default_rng(4)
    orig = pd.DataFrame({"r": rng.choice(["a", "b"], 100), "x": rng.normal(size=100)})
    syn = orig.assign(x=rng.normal(size=100))
    p3 = 100 / 200 * 99 / 199 * 98 / 198
    assert p3 == pytest.approx(0.1231, abs=1e-4)
    for k, refused in ((3, False), (10, True)):
        hold = pd.DataFrame({"r": ["z"] * k + list(rng.choice(["a", "b"], 100 - k)),
                             "x": rng.normal(size=100)})
        if refused:
            with pytest.raises(SchemaError, match="10 of its 100 records hold levels of 'r'"):
                attack_inputs(orig, [syn], hold, columns=None, schema=None, categorical=["r"])
        else:
            inp = attack_inputs(orig, [syn], hold, columns=None, schema=None,
                                categorical=["r"])
            assert (inp.holdout["r"] == "z").sum() == k  # kept: a record of the population
