"""End-to-end tests of ``bayes-risk attribute`` (and the CLI record-range parser)."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest

from bayes_risk.exceptions import ValidationError
from bayes_risk.models import Sampling


def run_cli(argv: list[str]) -> int:
    """``bayes_risk.cli.main(argv)``: the exit status."""
    from bayes_risk.cli import main

    return main(argv)


def test_parse_records(tmp_path):
    from bayes_risk._specs import parse_records

    # records are numbered from 0 everywhere (as pandas' iloc and the Python API)
    assert parse_records("0-2,6", 10) == [0, 1, 2, 6]
    assert parse_records(None, 10) is None
    f = tmp_path / "rows.txt"
    f.write_text("1\n3\n")
    assert parse_records(str(f), 10) == [1, 3]
    with pytest.raises(ValidationError, match=r"outside 0\.\.9"):
        parse_records("7-10", 10)
    with pytest.raises(ValidationError, match="neither a file nor record numbers"):
        parse_records("a-b", 10)


@pytest.fixture(scope="module")
def saved_dpmpm(tmp_path_factory):
    dpmpm = pytest.importorskip("bayes_risk.models.dpmpm.dpmpm")
    from bayes_risk.data import make_acs_like

    root = tmp_path_factory.mktemp("attr_cli")
    df = make_acs_like(120, random_seed=5).iloc[:, :3]
    model = dpmpm.DPMPM(n_components=3, sampling=Sampling(tune=30, draws=200), progressbar=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(df, random_seed=1)
    model.save(root / "model")
    model.synthesize(2, random_seed=2).save(root / "syn")
    df.to_csv(root / "orig.csv", index=False)
    return root


def test_cli_end_to_end(saved_dpmpm, tmp_path, capsys):
    root = saved_dpmpm
    out = tmp_path / "att"
    argv = [
        "attribute",
        "--model",
        str(root / "model"),
        str(root / "orig.csv"),
        str(root / "syn"),
        "--records",
        "0-4",
        "--prior",
        "truth-weighted:2",
        "--bootstrap",
        "50",
        "--random-seed",
        "3",
    ]
    rc = run_cli([*argv, "--out", str(out)])
    assert rc == 0
    # the model's two chains: the records' estimates are compared across them, and the
    # summary says so (and how many records disagree)
    printed = capsys.readouterr().out
    chains = json.loads((out / "summary.json").read_text())["between_chain_check"]
    assert chains["status"] == "run" and chains["chains"] == 2
    assert (f"between-chain check: 2 chains, 20 batches per chain; "
            f"{chains['records_flagged']} record(s) flagged CHAINS_DISAGREE") in printed
    for f in ("records.csv", "summary.json", "p_true_hist.png", "rank_hist.png", "khat.png"):
        assert (out / f).is_file(), f
    rec = pd.read_csv(out / "records.csv")
    assert len(rec) == 5 and {"p_true", "rank_min", "khat_max", "flag_codes"} <= set(rec.columns)
    summ = json.loads((out / "summary.json").read_text())
    assert summ["n_records"] == 5 and summ["settings"]["prior"] == "truth-weighted:2"
    assert summ["settings"]["estimator"] == "stabilised"
    # convergence of the model's fit and of both augmented fits reaches summary.json
    assert set(summ["mcmc"]["fits"]) == {"model", "augmented_1", "augmented_2"}
    assert "alpha" in summ["mcmc"]["fits"]["augmented_2"]["quantities"]
    for w in summ["mcmc"]["warnings"]:
        assert w["code"] in summ["warnings"] and w["fit"] in summ["mcmc"]["fits"]
    # same seed, same numbers
    out2 = tmp_path / "att2"
    run_cli([*argv, "--out", str(out2)])
    pd.testing.assert_frame_equal(rec, pd.read_csv(out2 / "records.csv"))
    # the IS estimator through the CLI too
    rc = run_cli(
        [
            "attribute",
            "--model",
            str(root / "model"),
            str(root / "orig.csv"),
            str(root / "syn"),
            "--records",
            "2",
            "--estimator",
            "is",
            "--bootstrap",
            "0",
            "--quiet",
            "--out",
            str(tmp_path / "is"),
        ]
    )
    assert rc == 0
    assert np.isfinite(pd.read_csv(tmp_path / "is" / "records.csv")["p_true"]).all()


def test_cli_bad_input_is_one_line_error(saved_dpmpm, tmp_path, capsys):
    root = saved_dpmpm
    rc = run_cli(
        [
            "attribute",
            "--model",
            str(root / "model"),
            str(root / "orig.csv"),
            str(root / "syn"),
            "--prior",
            "flat",
            "--quiet",
            "--out",
            str(tmp_path / "x"),
        ]
    )
    assert rc == 2
    assert not (tmp_path / "x").exists()  # nothing half-written


@pytest.mark.parametrize("method", ["cart", "rf"])
def test_cli_tree_release_without_model(method, tmp_path, capsys):
    """A CART / random-forest release: the synthesizer is rebuilt from the manifest and the
    original (checked to reproduce the release), and its plug-in likelihood is used; the
    records equal the Python API on the synthesizer that made the release."""
    from bayes_risk.attribute import attribute_risk
    from bayes_risk.data import make_ce_like, read_synthetic, read_table
    from bayes_risk.models import CARTPlugin, RFPlugin

    ce = make_ce_like(200, random_seed=3)
    orig = tmp_path / "ce.csv"
    ce.to_csv(orig, index=False)
    syn_dir = tmp_path / "syn"
    extra = ["--n-trees", "20"] if method == "rf" else []
    assert run_cli(["synthesize", str(orig), "--method", method, "--synthesize", "Tenure",
                    "Marital", "--categorical", "Urban", "Marital", "Tenure", "-m", "2",
                    "--random-seed", "9", *extra, "-q", "--out", str(syn_dir)]) == 0
    out = tmp_path / "att"
    assert run_cli(["attribute", str(orig), str(syn_dir),
                    "--records", "0-14", "--random-seed", "4", "--out", str(out)]) == 0
    assert "attribute risk of 15 records (" in capsys.readouterr().out  # summary on stdout
    rec = pd.read_csv(out / "records.csv")
    summary = json.loads((out / "summary.json").read_text())
    assert len(rec) == 15 and summary["inputs"]["model"].startswith(method)
    assert ("APPROXIMATE_NONPARAMETRIC" in summary["warnings"]) == (method == "rf")
    # the same numbers from the Python API with the synthesizer fitted as the CLI fitted it
    from bayes_risk.models import rebuild_synthesizer

    df = read_table(orig)
    release = read_synthetic(syn_dir)
    synth = rebuild_synthesizer(df, release)
    plug = CARTPlugin(synth, df, random_seed=4) if method == "cart" else RFPlugin(synth, df)
    res = attribute_risk(df, release, model=plug, records=range(15), random_seed=4,
                         progressbar=False)
    np.testing.assert_allclose(rec["p_true"], res.records["p_true"], rtol=1e-12)
    # a table that is not the one the release was made from is refused by the fingerprint in
    # its manifest, before the synthesizer is rebuilt from it, nothing written; accepted as
    # another table, the rebuilt synthesizer does not reproduce the release
    bad = df.copy()
    bad["Tenure"] = bad["Tenure"].iloc[::-1].to_numpy()
    bad_path = tmp_path / "bad.csv"
    bad.to_csv(bad_path, index=False)
    assert run_cli(["attribute", str(bad_path), str(syn_dir),
                    "-q", "--out", str(tmp_path / "att_bad")]) == 2
    err = capsys.readouterr().err
    assert "error [ORIGINAL_DIFFERS]" in err and "['Tenure']" in err
    assert run_cli(["attribute", str(bad_path), str(syn_dir), "--allow-different-original",
                    "-q", "--out", str(tmp_path / "att_bad")]) == 2
    assert "does not reproduce" in capsys.readouterr().err
    assert not (tmp_path / "att_bad").exists()
    # the plug-in has no posterior draws: the estimator's options are refused by the library,
    # named as typed
    assert run_cli(["attribute", str(orig), str(syn_dir), "--psis", "--refit-draws", "5",
                    "-q", "--out", str(tmp_path / "att_psis")]) == 2
    err = capsys.readouterr().err
    assert "[OPTION_CONFLICT]" in err and "--refit-draws, --psis: not with a plug-in" in err
    # the plug-ins of these releases (no smoothed column) draw no replicates: recorded as none,
    # and --plugin-replicates refused before any work, nothing written
    assert summary["settings"]["plugin_replicates"] is None
    rc = run_cli(["attribute", str(orig), str(syn_dir), "--records", "0-4", "--random-seed", "4",
                  "--plugin-replicates", "50", "-q", "--out", str(tmp_path / "att_reps")])
    err = capsys.readouterr().err
    assert rc == 2 and "[OPTION_UNUSED]" in err and "--plugin-replicates 50 sets" in err, err
    assert f"{'CART' if method == 'cart' else 'RF'}Plugin has none" in err
    assert not (tmp_path / "att_reps").exists()


def test_cli_true_value_zero_uses_the_stated_fallback(tmp_path, capsys):
    """A CART release of incomes with zeros (as the CE data: 449 of 5,571 incomes are <= 0):
    the default percent grid meets a true 0 with the additive fallback of the audit, recorded in
    summary.json (the run stopped with ZERO_VALUE_PERCENT_GRID and a hint at a Python-only
    argument)."""
    from bayes_risk.data import make_ce_like

    ce = make_ce_like(150, random_seed=3)
    ce.loc[[0, 3], "Income"] = 0.0
    orig = tmp_path / "ce.csv"
    ce.to_csv(orig, index=False)
    syn_dir = tmp_path / "syn"
    assert run_cli(["synthesize", str(orig), "--method", "cart", "--synthesize", "Tenure",
                    "Income", "--categorical", "Urban", "Marital", "Tenure", "-m", "2",
                    "--random-seed", "9", "-q", "--out", str(syn_dir)]) == 0
    out = tmp_path / "att"
    rc = run_cli(["attribute", str(orig), str(syn_dir), "--records", "0-4",
                  "--random-seed", "4", "-q", "--out", str(out)])
    assert rc == 0, capsys.readouterr().err
    rec = pd.read_csv(out / "records.csv")
    assert rec["p_true"].notna().all() and (rec["G"] > 1).all()
    grids = json.loads((out / "summary.json").read_text())["settings"]["candidates"]["grids"]
    inc = ce["Income"].abs()
    assert grids["Income"]["zero_fallback"] == ["additive",
                                                pytest.approx(0.1 * inc[inc > 0].median())]
    assert "Tenure" not in grids  # categorical: its levels are the candidates


def test_cli_bayesian_release_needs_model(saved_dpmpm, tmp_path, capsys):
    root = saved_dpmpm
    assert run_cli(["attribute", str(root / "orig.csv"), str(root / "syn"), "-q",
                    "--out", str(tmp_path / "o")]) == 2
    assert "--model is required" in capsys.readouterr().err
