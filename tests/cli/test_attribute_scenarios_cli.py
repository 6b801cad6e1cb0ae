"""``bayes-risk attribute --scenario``: the low-risk intruder and the largest-value scenarios.

Every command runs in this process through ``bayes_risk.cli.main`` (the installed package; the
working directory is the test's folder): what is checked is the command's output, not the
process boundary, which tests/cli/test_cli.py covers for ``python -m bayes_risk``.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import warnings

import numpy as np
import pandas as pd
import pytest

from bayes_risk.attribute import EstimatorSpec, ScenarioSpec
from bayes_risk.attribute.largest_value import largest_value_posterior
from bayes_risk.models import Sampling


def _in_process(argv: list[str], capsys) -> subprocess.CompletedProcess:
    """``bayes-risk ARGV`` run in this process: its exit status, stdout and stderr."""
    from bayes_risk.cli import main

    capsys.readouterr()
    try:
        status = main(argv)
    except SystemExit as e:  # argparse's own errors
        status = e.code
    cap = capsys.readouterr()
    return subprocess.CompletedProcess(argv, status, cap.out, cap.err)


def _cli(argv: list[str], cwd, capsys) -> subprocess.CompletedProcess:
    """``bayes-risk ARGV`` run in ``cwd`` (relative paths are the command's)."""
    with contextlib.chdir(cwd):
        return _in_process(argv, capsys)


@pytest.fixture(scope="module")
def saved_dpmpm(tmp_path_factory):
    from bayes_risk.data import make_acs_like
    from bayes_risk.models import DPMPM

    root = tmp_path_factory.mktemp("scen_dpmpm")
    df = make_acs_like(80, random_seed=5).iloc[:, :3]
    model = DPMPM(n_components=3, sampling=Sampling(tune=30, draws=60), progressbar=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(df, random_seed=1)
    model.save(root / "model")
    syn = model.synthesize(3, random_seed=2)
    syn.save(root / "syn")
    df.to_csv(root / "orig.csv", index=False)
    return root, df, syn


@pytest.mark.slow
def test_empty_scenario_cli(saved_dpmpm, tmp_path, capsys):
    root, df, syn = saved_dpmpm
    out = tmp_path / "low"
    r = _cli(["attribute", "--model", str(root / "model"), str(root / "orig.csv"),
              str(root / "syn"), "--scenario", "empty", "--quiet", "--out", str(out)],
             tmp_path, capsys)
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
    assert r.returncode != 0 and "--known needs --scenario partially-known" in r.stderr
    # --delta is read only by the largest-value scenarios: refused elsewhere, not ignored
    r = _in_process([*base, "--delta", "0.1", "--out", str(tmp_path / "d")], capsys)
    assert r.returncode != 0 and ("--delta needs --scenario largest-value, second-largest or "
                                  "two-largest-sum.") in r.stderr
    r = _in_process([*base, "--scenario", "second-largest", "--column", "AGE", "--delta", "-0.1",
                     "--out", str(tmp_path / "e")], capsys)
    assert r.returncode != 0 and "--delta must be a finite number > 0. Got -0.1" in r.stderr
    for d in "abde":
        assert not (tmp_path / d).exists()


def test_delta_default_is_the_library_default():
    """--delta's stated default is largest_value's and largest_value_risk's (the parser imports
    nothing heavy)."""
    import inspect

    from bayes_risk.attribute.largest_value import largest_value_risk
    from bayes_risk.attribute.specs import DEFAULT_DELTA
    from bayes_risk.attribute.summaries import largest_value

    assert inspect.signature(largest_value).parameters["delta"].default == DEFAULT_DELTA
    assert inspect.signature(largest_value_risk).parameters["delta"].default == DEFAULT_DELTA


@pytest.mark.slow
def test_second_largest_cli_matches_api(tmp_path, capsys):
    from bayes_risk.models import PoissonMixture

    rng = np.random.default_rng(3)
    df = pd.DataFrame({"workers": rng.poisson(4, 60), "wages": rng.poisson(30, 60)})
    df.loc[7, "wages"] = 80  # an outlying largest value
    model = PoissonMixture(variant="tcmm", q=0.8, n_components=4,
                           sampling=Sampling(tune=50, draws=100),
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
              "--upper", "120", "--delta", "0.1", "--quiet", "--out", str(out)], tmp_path, capsys)
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


@pytest.mark.slow
def test_two_records_cli(saved_dpmpm, tmp_path, capsys):
    """``--scenario two-records --pairs``: one row per pair, the Python API's numbers."""
    from bayes_risk import attribute_risk
    from bayes_risk.models import load_model

    root, df, syn = saved_dpmpm
    base = ["attribute", "--model", str(root / "model"), str(root / "orig.csv"), str(root / "syn")]
    out = tmp_path / "pairs"
    (tmp_path / "pairs.txt").write_text("0 1\n# a comment\n4:2\n")
    r = _cli([*base, "--pairs", str(tmp_path / "pairs.txt"), "--estimator", "is",
              "--bootstrap", "0", "--out", str(out)], tmp_path, capsys)
    assert r.returncode == 0, r.stderr
    assert "pairs of records" in r.stdout
    summ = json.loads((out / "summary.json").read_text())
    assert summ["scenario"] == "two_records" and summ["settings"]["pairs"] == [[0, 1], [4, 2]]
    rec = pd.read_csv(out / "records.csv")
    assert rec["pair"].tolist() == [0, 1]
    assert rec[["record_1", "record_2"]].to_numpy().tolist() == [[0, 1], [4, 2]]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = attribute_risk(df, syn, model=load_model(root / "model"),
                             progressbar=False,
                             scenario=ScenarioSpec(kind="two_records", pairs=[(0, 1), (4, 2)]),
                             estimator=EstimatorSpec(kind="is", bootstrap=0))
    np.testing.assert_allclose(rec["p_true"], res.records["p_true"], rtol=1e-9)
    # DPMPM's one-variable neighbourhood route: with the second record held at its truth the
    # pair's likelihoods are the first record's own (same draws)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        one = attribute_risk(df, syn, model=load_model(root / "model"), records=[0],
                             progressbar=False, estimator=EstimatorSpec(kind="is", bootstrap=0))
    v, g0 = res.candidates[0].values, res.candidates[0].g0
    q = v.shape[1] // 2
    held = np.all(v[:, q:] == v[g0, q:], axis=1)
    np.testing.assert_array_equal(v[held, :q], one.candidates[0].values)
    a, b = res.loglik[0][held], one.loglik[0]
    np.testing.assert_allclose(a - a.max(), b - b.max(), atol=1e-10)
    r = _cli([*base, "--scenario", "two-records", "--out", str(tmp_path / "a")], tmp_path, capsys)
    assert r.returncode != 0 and "--scenario two-records needs --pairs" in r.stderr
    r = _cli([*base, "--pairs", "0:1", "--records", "0-3", "--out", str(tmp_path / "b")],
             tmp_path, capsys)
    assert r.returncode != 0 and "--records does not apply" in r.stderr
    r = _cli([*base, "--pairs", "0-1", "--out", str(tmp_path / "c")], tmp_path, capsys)
    assert r.returncode != 0 and "is not a pair of record numbers" in r.stderr


@pytest.mark.slow
def test_two_records_known_sums_cli(tmp_path, capsys):
    """``--pairs ... --known-sums [COL ...]``: the Python API's numbers, the sums and the
    unordered probability in records.csv; a bad column or a class O model refused by name."""
    from bayes_risk import attribute_risk
    from bayes_risk.models import PoissonMixture

    rng = np.random.default_rng(3)
    df = pd.DataFrame({"workers": rng.poisson(4, 60), "wages": rng.poisson(30, 60)})
    df.to_csv(tmp_path / "orig.csv", index=False)
    fits = {}
    for variant in ("mp", "mm"):
        model = PoissonMixture(variant=variant, n_components=4,
                               sampling=Sampling(tune=50, draws=100),
                               progressbar=False)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model.fit(df, random_seed=1)
        model.save(tmp_path / variant)
        fits[variant] = model
    syn = fits["mp"].synthesize(2, random_seed=2)
    syn.save(tmp_path / "syn")
    base = ["attribute", "--model", str(tmp_path / "mp"), str(tmp_path / "orig.csv"),
            str(tmp_path / "syn"), "--pairs", "0:1,2:3", "--estimator", "is", "--bootstrap",
            "0", "--quiet"]
    for cols, sums in (([], ["workers", "wages"]), (["wages"], ["wages"])):
        out = tmp_path / f"sums{len(cols)}"
        r = _cli([*base, "--known-sums", *cols, "--out", str(out)], tmp_path, capsys)
        assert r.returncode == 0, r.stderr
        summ = json.loads((out / "summary.json").read_text())
        assert summ["scenario"] == "two_records" and summ["settings"]["known_sums"] == sums
        rec = pd.read_csv(out / "records.csv")
        for c in sums:
            assert rec[f"sum_{c}"].tolist() == [df[c][0] + df[c][1], df[c][2] + df[c][3]]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = attribute_risk(df, syn, model=fits["mp"], progressbar=False,
                                 scenario=ScenarioSpec("two_records", pairs=[(0, 1), (2, 3)],
                                                       known_sums=cols or True),
                                 estimator=EstimatorSpec(kind="is", bootstrap=0))
        for c in ("G", "p_true", "p_true_unordered"):
            np.testing.assert_allclose(rec[c], res.records[c], rtol=1e-9)
        # every pair candidate keeps the known sums
        for k in (0, 1):
            v = res.candidates[k].frame(res.schema)
            for c in sums:
                assert (v[f"{c}[1]"] + v[f"{c}[2]"] == rec[f"sum_{c}"][k]).all()
    r = _cli([*base, "--known-sums", "salary", "--out", str(tmp_path / "bad")], tmp_path, capsys)
    assert r.returncode == 2 and "--known-sums: column 'salary'" in r.stderr
    assert "UNKNOWN_COLUMN" in r.stderr
    # refused in the command's own words (not the Python API's), nothing written
    for bad, msg in ((["--known-sums", "wages", "wages"],
                      "--known-sums lists column(s) ['wages'] more than once"),
                     (["--pairs", "4:4"], "--pairs: pair '4:4' names record 4 twice")):
        r = _cli([*base, *bad, "--out", str(tmp_path / "bad2")], tmp_path, capsys)
        assert r.returncode == 2 and msg in r.stderr and "BAD_OPTION_VALUE" in r.stderr
        assert not (tmp_path / "bad2").exists()
    fits["mm"].synthesize(2, random_seed=2).save(tmp_path / "syn_mm")
    mm = [*base[:2], str(tmp_path / "mm"), base[3], str(tmp_path / "syn_mm"), *base[5:]]
    r = _cli([*mm, "--known-sums", "--out", str(tmp_path / "mm_out")], tmp_path, capsys)
    assert r.returncode == 2 and "class P" in r.stderr and "two_largest_sum" in r.stderr
    assert "--scenario two-records needs a class P model" in r.stderr  # not scenario='two_records'


@pytest.mark.slow
def test_rf_release_grown_within_groups_cli(tmp_path, capsys):
    """A random-forest release with forests grown within groups of an unsynthesized column:
    ``attribute`` rebuilds the synthesizer and scores it (it was refused before)."""
    from bayes_risk import attribute_risk
    from bayes_risk.data import make_acs_like
    from bayes_risk.data.synthetic import read_synthetic
    from bayes_risk.models import plugin_likelihood, rebuild_synthesizer

    df = make_acs_like(60, random_seed=11)[["SEX", "AGE", "RACE", "MAR", "EDUC"]]
    df.to_csv(tmp_path / "orig.csv", index=False)
    r = _cli(["synthesize", "orig.csv", "--method", "rf", "--synthesize", "MAR", "RACE", "SEX",
              "--categorical", "MAR", "RACE", "SEX", "EDUC", "--group-by", "EDUC",
              "--min-group-size", "9", "--n-trees", "8", "-m", "2", "--random-seed", "3",
              "--out", "syn", "-q"], tmp_path, capsys)
    assert r.returncode == 0, r.stderr
    r = _cli(["attribute", "orig.csv", "syn", "--records", "0-4", "--quiet", "--out", "att"],
             tmp_path, capsys)
    assert r.returncode == 0, r.stderr
    rec = pd.read_csv(tmp_path / "att" / "records.csv")
    orig = pd.read_csv(tmp_path / "orig.csv")
    for c in ("MAR", "RACE", "SEX", "EDUC"):
        orig[c] = orig[c].astype("category")
    syn = read_synthetic(tmp_path / "syn", like=orig)
    synth = rebuild_synthesizer(orig, syn)
    assert synth.groups_ and synth.group_fallback_["MAR"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = attribute_risk(orig, syn, model=plugin_likelihood(synth, orig), records=range(5),
                             progressbar=False)
    np.testing.assert_allclose(rec["p_true"], res.records["p_true"], rtol=1e-9)
