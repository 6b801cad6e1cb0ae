"""``bayes-risk attribute --scenario known-records`` and ``--known-curve`` against the API."""

from __future__ import annotations

import contextlib
import json
import warnings

import numpy as np
import pandas as pd
import pytest

from bayes_risk import attribute_risk
from bayes_risk.attribute import EstimatorSpec, ScenarioSpec
from bayes_risk.models import Sampling


def _cli(argv, cwd, capsys):
    from bayes_risk.cli import main

    capsys.readouterr()
    with contextlib.chdir(cwd):
        try:
            status = main(argv)
        except SystemExit as e:
            status = e.code
    return status, capsys.readouterr()


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    from bayes_risk.data import make_acs_like
    from bayes_risk.models import DPMPM

    root = tmp_path_factory.mktemp("known_records")
    df = make_acs_like(60, random_seed=5).iloc[:, :3]
    model = DPMPM(n_components=3, sampling=Sampling(tune=30, draws=60), progressbar=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(df, random_seed=1)
    model.save(root / "model")
    syn = model.synthesize(2, random_seed=2)
    syn.save(root / "syn")
    df.to_csv(root / "orig.csv", index=False)
    return root, df, syn, model


@pytest.mark.slow
def test_known_fraction_cli_matches_api(saved, tmp_path, capsys):
    root, df, syn, model = saved
    out = tmp_path / "kr"
    status, cap = _cli(["attribute", "--model", str(root / "model"), str(root / "orig.csv"),
                        str(root / "syn"), "--known-fraction", "0.8", "--known-seed", "4",
                        "--estimator", "is", "--bootstrap", "0", "--records", "0-9",
                        "--quiet", "--out", str(out)], tmp_path, capsys)
    assert status == 0, cap.err
    summ = json.loads((out / "summary.json").read_text())
    assert summ["scenario"] == "known_records" and summ["settings"]["n_known"] == 48
    assert summ["settings"]["known_fraction"] == 0.8 and summ["settings"]["known_seed"] == 4
    rec = pd.read_csv(out / "records.csv", index_col="record")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        api = attribute_risk(df, syn, model=model, records=range(10), progressbar=False,
                             scenario=ScenarioSpec("known_records", known_fraction=0.8, seed=4),
                             estimator=EstimatorSpec("is", bootstrap=0))
    np.testing.assert_allclose(rec["p_true"], api.records["p_true"], rtol=1e-12)


@pytest.mark.slow
def test_known_curve_cli(saved, tmp_path, capsys):
    root, df, syn, model = saved
    out = tmp_path / "curve"
    status, cap = _cli(["attribute", "--model", str(root / "model"), str(root / "orig.csv"),
                        str(root / "syn"), "--known-curve", "1", "0.5", "--estimator", "is",
                        "--bootstrap", "0", "--records", "0-9", "--out", str(out)],
                       tmp_path, capsys)
    assert status == 0, cap.err
    tab = pd.read_csv(out / "known_curve.csv")
    assert tab["known_fraction"].tolist() == [0.5, 1.0]
    # the run's lines (AttributeRun.text_lines): the result's headline, then the curve's
    printed = [ln.strip() for ln in cap.out.splitlines()]
    assert printed[0].startswith("attribute risk of 10 records")
    assert printed[-2].startswith("risk by the share of other records known: 0.5: mean p_true")
    assert (out / "known_curve.png").is_file()
    # share 1 is the worst case: the command's own run
    rec = pd.read_csv(out / "records.csv")
    assert tab["mean_p_true"].iloc[-1] == pytest.approx(rec["p_true"].mean(), rel=1e-12)
    assert "known_curve" in json.loads((out / "summary.json").read_text())


@pytest.mark.parametrize("extra, needle", [
    (["--known-fraction", "1.5"], "--known-fraction must be a number in [0, 1]. Got 1.5"),
    (["--scenario", "known-records"], "--scenario known-records needs --known-records or "
     "--known-fraction (row positions or a boolean mask, or a share of the records in [0, 1])"),
    (["--scenario", "empty", "--known-fraction", "0.5"],
     "--known-fraction needs --scenario known-records. Got --scenario empty."),
    (["--known-curve", "0.5", "--known-fraction", "0.5"], "[OPTION_CONFLICT]: --known-curve "
     "needs --scenario worst-case (it sets the known records at each share itself"),
    (["--known-curve", "0.5", "1.5"], "[BAD_OPTION_VALUE]: --known-curve must be a non-empty "
     "sequence of numbers in [0, 1]. Got [0.5, 1.5]"),
])
def test_known_records_cli_errors(saved, tmp_path, capsys, extra, needle):
    root, *_ = saved
    status, cap = _cli(["attribute", "--model", str(root / "model"), str(root / "orig.csv"),
                        str(root / "syn"), *extra, "--quiet", "--out", str(tmp_path / "x")],
                       tmp_path, capsys)
    assert status == 2 and needle in cap.err, cap.err
