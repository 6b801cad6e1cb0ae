"""``bayes-risk disclosure`` end to end."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from bayes_risk import ExclusionSpec, cli, disclosure_measures
from bayes_risk.data import make_ce_like

CAT = ["Urban", "Marital", "Tenure"]
KEYS = ["Age", "Urban", "Marital"]


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    root = tmp_path_factory.mktemp("disclosure_cli")
    d = make_ce_like(n=300, random_seed=5)
    rng = np.random.default_rng(8)
    paths, syn = [], []
    for l in range(1, 4):
        z = d.copy()
        z["Income"] = d["Income"].to_numpy()[rng.permutation(len(d))]
        syn.append(z)
        p = root / f"syn{l}.csv"
        z.to_csv(p, index=False)
        paths.append(p)
    orig = root / "orig.csv"
    d.to_csv(orig, index=False)
    return {"orig": orig, "syn": paths, "data": d, "datasets": syn}


def test_end_to_end(files, tmp_path, capsys):
    out = tmp_path / "disc"
    argv = ["disclosure", str(files["orig"]), *map(str, files["syn"]), "--keys", *KEYS,
            "--target", "Income", "--categorical", *CAT, "--ngroups-target", "5",
            "--ngroups-keys", "4", "--denom-lim", "3", "--out", str(out)]
    assert cli.main(argv) == 0
    printed = capsys.readouterr().out
    assert "repU" in printed and "sample uniques" in printed
    assert sorted(p.name for p in out.iterdir()) == sorted(
        ["summary.json", "ident.csv", "attrib.csv", "allCAPs.csv", "replicated_uniques.csv"])
    ident = pd.read_csv(out / "ident.csv")
    attrib = pd.read_csv(out / "attrib.csv")
    caps = pd.read_csv(out / "allCAPs.csv")
    repu = pd.read_csv(out / "replicated_uniques.csv")
    assert list(ident.columns) == ["syn", "UiO", "UiS", "UiOiS", "repU"]
    assert list(attrib.columns) == ["syn", "Dorig", "Dsyn", "iS", "DiS", "DiSCO", "DiSDiO",
                                    "max_denom", "mean_denom"]
    assert list(caps.columns) == ["syn", "baseCAPd", "CAPd", "CAPs", "DCAP", "TCAP"]
    assert {"Replicated uniques", "Synthetic uniques in original"} <= set(repu.columns)
    assert len(ident) == len(attrib) == len(caps) == len(repu) == 3
    s = json.loads((out / "summary.json").read_text())
    assert s["m"] == 3 and s["keys"] == KEYS and s["target"] == "Income"
    assert s["settings"]["ngroups_target"] == 5 and s["settings"]["denom_lim"] == 3
    assert s["settings"]["ngroups_keys"] == {"Age": 4}
    assert set(s["key_baseline"]["k_anonymity"]) == {"2", "3", "5"}
    assert s["inputs"]["original"] == str(files["orig"])
    # the files hold what the library computes
    res = disclosure_measures(files["data"], files["datasets"], keys=KEYS, target="Income",
                              categorical=CAT,
                              ngroups_target=5, ngroups_keys=4,
                              exclude=ExclusionSpec(denom_lim=3))
    np.testing.assert_allclose(caps["TCAP"], res.allCAPs["TCAP"], rtol=1e-12)
    np.testing.assert_allclose(attrib["DiSCO"], res.attrib["DiSCO"], rtol=1e-12)
    assert s["attrib"]["DiSCO"] == pytest.approx(list(res.attrib["DiSCO"]), rel=1e-12)


def test_compat_and_exclusion_options(files, tmp_path, capsys):
    out = tmp_path / "disc_compat"
    argv = ["disclosure", str(files["orig"]), str(files["syn"][0]), "--keys", "Age", "Urban",
            "--target", "Marital", "--categorical", *CAT, "--exclude-ov-denom-lim",
            "--not-targetlev", "1", "--exclude-combination", "Urban", "1", "2",
            "--compat", "synthpop", "--out", str(out)]
    assert cli.main(argv) == 0
    printed = capsys.readouterr().out  # the summary
    assert printed.startswith("Empirical disclosure measures")  # the result's own summary
    assert "original records:           300" in printed
    assert printed.rstrip().endswith(f"wrote {out}: allCAPs.csv, attrib.csv, ident.csv, "
                                     "replicated_uniques.csv, summary.json")
    s = json.loads((out / "summary.json").read_text())
    assert s["settings"]["compat"] == "synthpop" and s["settings"]["not_targetlev"] == ["1"]
    assert s["settings"]["exclude_ov_denom_lim"] is True
    assert s["settings"]["exclude_combinations"] == [["Urban", "1", "2"]]
    assert s["diagnostics"]["n_excluded_original"][0] > 0


@pytest.mark.parametrize("extra, match", [
    (["--keys", "Age", "Agee", "--target", "Income"], "Did you mean 'Age'"),
    (["--keys", "Age", "--target", "Age"], "--target and --keys both name ['Age']"),
    (["--keys", "Age", "--target", "Income", "--ngroups-target", "1"], "--ngroups-target must be"),
    (["--keys", "Age", "--target", "Income", "--denom-lim", "0"], "--denom-lim must be"),
    (["--keys", "Age", "--target", "Urban", "--ngroups-target", "3"], "only a numeric column"),
])
def test_user_errors(files, tmp_path, capsys, extra, match):
    out = tmp_path / "bad"
    argv = ["disclosure", str(files["orig"]), str(files["syn"][0]), "--categorical", *CAT,
            *extra, "--out", str(out)]
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert match in err and err.startswith("bayes-risk disclosure: error")
    assert not out.exists()


def test_out_folder_with_other_files_is_refused(files, tmp_path, capsys):
    out = tmp_path / "busy"
    out.mkdir()
    (out / "keep.txt").write_text("x")
    argv = ["disclosure", str(files["orig"]), str(files["syn"][0]), "--keys", *KEYS,
            "--target", "Income", "--categorical", *CAT, "--out", str(out)]
    assert cli.main(argv) == 2
    assert "--overwrite" in capsys.readouterr().err  # the shared --out policy (cli._run)
    assert (out / "keep.txt").read_text() == "x"


def test_subprocess_error_is_one_line(files, tmp_path):
    out = tmp_path / "o"
    r = subprocess.run(
        [sys.executable, "-m", "bayes_risk", "disclosure", str(files["orig"]),
         str(files["syn"][0]), "--keys", "Age", "Nope", "--target", "Income",
         "--out", str(out)],
        capture_output=True, text=True, cwd="/",
    )
    assert r.returncode == 2
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "'Nope'" in lines[0] and "Traceback" not in r.stderr
    assert not out.exists()


def test_original_without_a_column_of_the_release(files, tmp_path, capsys):
    """A SyntheticData folder whose manifest has the target, an ORIGINAL without it: a one-line
    error naming the column (was a KeyError traceback)."""
    rel = tmp_path / "rel"
    assert cli.main(["synthesize", str(files["orig"]), "--method", "cart", "--synthesize",
                     "Income", "--categorical", *CAT, "-m", "1", "--random-seed", "1", "-q",
                     "--out", str(rel)]) == 0
    orig = tmp_path / "no_income.csv"
    files["data"].drop(columns="Income").to_csv(orig, index=False)
    capsys.readouterr()
    rc = cli.main(["disclosure", str(orig), str(rel), "--keys", *KEYS, "--target", "Income",
                   "-q", "--out", str(tmp_path / "disc")])
    err = capsys.readouterr().err
    assert rc == 2 and "Traceback" not in err
    assert err.strip().splitlines() == [
        "bayes-risk disclosure: error [MISSING_COLUMN]: ORIGINAL is missing column(s) "
        "['Income']; expected columns ['Age', 'Urban', 'Marital', 'Income']."
    ]
    assert not (tmp_path / "disc").exists()
