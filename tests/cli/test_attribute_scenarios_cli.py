"""``bayes-risk attribute --scenario``: the low-risk intruder and the largest-value scenarios.

Run as a subprocess with the working directory outside the repository (the source tree would
shadow the installed package).
"""

from __future__ import annotations

import json
import subprocess
import sys
import warnings

import numpy as np
import pandas as pd
import pytest

from bayes_risk.attribute.largest_value import largest_value_posterior


def _cli(argv: list[str], cwd) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "bayes_risk", *argv], cwd=cwd,
                          capture_output=True, text=True)


def _in_process(argv: list[str], capsys) -> subprocess.CompletedProcess:
    """``bayes-risk ARGV`` run in this process: a refusal needs no fresh interpreter (the
    successful runs above and below go through ``python -m bayes_risk``)."""
    from bayes_risk.cli import main

    capsys.readouterr()
    try:
        status = main(argv)
    except SystemExit as e:  # argparse's own errors
        status = e.code
    return subprocess.CompletedProcess(argv, status, "", capsys.readouterr().err)


@pytest.fixture(scope="module")
def saved_dpmpm(tmp_path_factory):
    from bayes_risk.data import make_acs_like
    from bayes_risk.models import DPMPM

    root = tmp_path_factory.mktemp("scen_dpmpm")
    df = make_acs_like(80, random_seed=5).iloc[:, :3]
    model = DPMPM(n_components=3, tune=30, draws=60, progressbar=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(df, random_seed=1)
    model.save(root / "model")
    syn = model.synthesize(3, random_seed=2)
    syn.save(root / "syn")
    df.to_csv(root / "orig.csv", index=False)
    return root, df, syn


@pytest.mark.slow
def test_empty_scenario_cli(saved_dpmpm, tmp_path):
    root, df, syn = saved_dpmpm
    out = tmp_path / "low"
    r = _cli(["attribute", "--model", str(root / "model"), str(root / "orig.csv"),
              str(root / "syn"), "--scenario", "empty", "--quiet", "--out", str(out)], tmp_path)
    assert r.returncode == 0, r.stderr
    summ = json.loads((out / "summary.json").read_text())
    assert summ["scenario"] == "empty" and summ["settings"]["scenario"] == "empty"
    assert "APPROX_LOW_RISK" in summ["warnings"]
    rec = pd.read_csv(out / "records.csv")
    # brute force: the share of releases reproducing every synthesized value of the record
    cols = list(summ["settings"]["columns"])
    same = np.mean([(z[cols].astype(str).to_numpy() == df[cols].astype(str).to_numpy()).all(1)
                    for z in syn.datasets], axis=0)
    np.testing.assert_allclose(rec["p_true"], same)
    assert summ["all"]["mean_p_true"] == pytest.approx(same.mean())


@pytest.mark.slow
def test_scenario_errors_cli(saved_dpmpm, tmp_path, capsys):
    root, _, _ = saved_dpmpm
    base = ["attribute", "--model", str(root / "model"), str(root / "orig.csv"), str(root / "syn")]
    r = _in_process([*base, "--scenario", "second-largest", "--out", str(tmp_path / "a")], capsys)
    assert r.returncode != 0 and "needs --column" in r.stderr
    r = _in_process([*base, "--scenario", "second-largest", "--column", "AGE", "--out",
                     str(tmp_path / "b")], capsys)
    assert r.returncode != 0 and "largest-value likelihood" in r.stderr
    r = _in_process([*base, "--scenario", "empty", "--known", "AGE", "--out", str(tmp_path / "c")],
                    capsys)
    assert r.returncode != 0 and "--known applies to --scenario partially-known" in r.stderr
    # --delta is read only by the largest-value scenarios: refused elsewhere, not ignored
    r = _in_process([*base, "--delta", "0.1", "--out", str(tmp_path / "d")], capsys)
    assert r.returncode != 0 and "--delta applies to the largest-value scenarios" in r.stderr
    r = _in_process([*base, "--scenario", "second-largest", "--column", "AGE", "--delta", "-0.1",
                     "--out", str(tmp_path / "e")], capsys)
    assert r.returncode != 0 and "--delta must be a positive number. Got -0.1" in r.stderr
    for d in "abde":
        assert not (tmp_path / d).exists()


def test_delta_default_is_the_library_default():
    """The parser's --delta default is largest_value's (the parser imports nothing heavy)."""
    import inspect

    from bayes_risk.attribute.summaries import largest_value
    from bayes_risk.cli.parsers.attribute import DEFAULT_DELTA

    assert inspect.signature(largest_value).parameters["delta"].default == DEFAULT_DELTA


@pytest.mark.slow
def test_second_largest_cli_matches_api(tmp_path):
    from bayes_risk.models import PoissonMixture

    rng = np.random.default_rng(3)
    df = pd.DataFrame({"workers": rng.poisson(4, 60), "wages": rng.poisson(30, 60)})
    df.loc[7, "wages"] = 80  # an outlying largest value
    model = PoissonMixture(variant="tcmm", q=0.8, n_components=4, tune=50, draws=100,
                           progressbar=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(df, random_seed=1)
    model.save(tmp_path / "model")
    syn = model.synthesize(2, random_seed=2)
    syn.save(tmp_path / "syn")
    df.to_csv(tmp_path / "orig.csv", index=False)
    out = tmp_path / "lv"
    r = _cli(["attribute", "--model", str(tmp_path / "model"), str(tmp_path / "orig.csv"),
              str(tmp_path / "syn"), "--scenario", "second-largest", "--column", "wages",
              "--upper", "120", "--delta", "0.1", "--quiet", "--out", str(out)], tmp_path)
    assert r.returncode == 0, r.stderr
    summ = json.loads((out / "summary.json").read_text())
    assert summ["scenario"] == "second-largest" and summ["record"] == 7
    assert summ["largest_value"] == 80 and summ["second_largest"] == df["wages"].nlargest(2).iloc[1]
    table = pd.read_csv(out / "largest_value.csv")
    pieces = model.largest_value_loglik("wages", syn, scenario="second_largest", upper=120)
    post, _ = largest_value_posterior(pieces)
    np.testing.assert_allclose(table["posterior"], post, rtol=1e-10)
    np.testing.assert_array_equal(table["wages"], pieces.candidates)
    inside = (table["wages"] >= 72) & (table["wages"] <= 88)
    assert summ["P_interval"] == pytest.approx(table.loc[inside, "posterior"].sum())
    assert 0.0 <= summ["P_interval"] <= 1.0 and summ["p_true"] == pytest.approx(
        table.loc[table["is_truth"], "posterior"].iloc[0])
