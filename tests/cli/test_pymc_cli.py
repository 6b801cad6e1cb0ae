"""``--method pymc``: a model written in PyMC through every command (issue 67): ``fit
--model-function``, ``synthesize --model``, ``attribute --model``, ``identification --model``
and ``audit --model``; and the refusals of a bad model function. The model is
``tests/_pymc_models.py:poisson_area`` (the tests folder is on ``sys.path``)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

import bayes_risk.cli as cli
from bayes_risk.models import PyMCSynthesizer, load_model

pytestmark = pytest.mark.filterwarnings("ignore::bayes_risk.exceptions.ConvergenceWarning")


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The table, then fit, synthesize, attribute, identification and audit in turn."""
    work = tmp_path_factory.mktemp("pymc_cli")
    rng = np.random.default_rng(8)
    n = 80
    area = rng.choice(["north", "south", "east"], n)
    x = np.round(rng.normal(size=n), 2)
    y = rng.poisson(np.exp(1.8 + 0.3 * x))
    assert (y > 0).all()  # the percent grids of the count need a true value other than 0
    pd.DataFrame({"area": area, "x": x, "y": y}).to_csv(work / "data.csv", index=False)
    d = str(work)
    commands = {
        "fit": ["fit", f"{d}/data.csv", "--method", "pymc", "--model-function",
                "_pymc_models:poisson_area", "--categorical", "area", "--tune", "40",
                "--draws", "40", "--chains", "1", "--target-accept", "0.9", "--random-seed",
                "1", "--out", f"{d}/model"],
        "synthesize": ["synthesize", "--model", f"{d}/model", "-m", "3", "--random-seed", "2",
                       "--out", f"{d}/release"],
        "attribute": ["attribute", f"{d}/data.csv", f"{d}/release", "--model", f"{d}/model",
                      "--records", "0-9", "--estimator", "is", "--random-seed", "3",
                      "--out", f"{d}/attribute"],
        "identification": ["identification", f"{d}/data.csv", f"{d}/release", "--model",
                           f"{d}/model", "--known-unsynthesized", "area",
                           "--known-synthesized", "y", "--categorical", "area", "--radius",
                           "y=0.1", "--replicates", "20", "--random-seed", "4", "--out",
                           f"{d}/identification"],
        "audit": ["audit", f"{d}/data.csv", f"{d}/release", "--model", f"{d}/model",
                  "--known", "area", "x", "--records", "0-9", "--random-seed", "5", "--out",
                  f"{d}/audit"],
    }
    status = {name: cli.main([*args, "--quiet"]) for name, args in commands.items()}
    return work, status


def test_every_command_runs_with_a_pymc_model(runs):
    work, status = runs
    assert status == dict.fromkeys(status, 0)
    model = load_model(work / "model")
    assert isinstance(model, PyMCSynthesizer)
    assert model.get_params()["target_accept"] == 0.9 and model.n_draws == 40
    manifest = json.loads((work / "release" / "manifest.json").read_text())
    assert manifest["method"] == "pymc"
    assert manifest["settings"]["model_function"] == "_pymc_models:poisson_area"
    data = pd.read_csv(work / "data.csv")
    syn = pd.read_parquet(next((work / "release").glob("syn_*.parquet")))
    pd.testing.assert_series_equal(syn["x"], data["x"])  # a covariate, released as it is
    records = pd.read_csv(work / "attribute" / "records.csv")
    assert len(records) == 10 and records["p_true"].between(0, 1).all()
    summary = json.loads((work / "attribute" / "summary.json").read_text())
    assert summary["settings"]["estimator"] == "is"
    ident = json.loads((work / "identification" / "summary.json").read_text())
    assert "mc_se" in json.dumps(ident)
    assert (work / "audit" / "summary.json").is_file()


def test_fit_needs_the_model_function(tmp_path, capsys):
    pd.DataFrame({"y": [1, 2, 3, 4]}).to_csv(tmp_path / "d.csv", index=False)
    rc = cli.main(["fit", str(tmp_path / "d.csv"), "--method", "pymc", "--out",
                   str(tmp_path / "m")])
    err = capsys.readouterr().err
    assert rc == 2 and "error [OPTION_REQUIRED]" in err and "--model-function" in err
    rc = cli.main(["fit", str(tmp_path / "d.csv"), "--method", "pymc", "--model-function",
                   "no_such_module_xyz:model", "--out", str(tmp_path / "m")])
    err = capsys.readouterr().err
    assert rc == 2 and "error [MODEL_FUNCTION_UNAVAILABLE]" in err
    assert "no_such_module_xyz" in err and not (tmp_path / "m").exists()


def test_fit_summary_names_the_observed_columns_and_the_models_quantities(runs):
    """Issue 85: the PyMC fit's summary named every column as synthesized (the covariates
    too) and its convergence line spoke of a mixture's "label-invariant quantities"."""
    from types import SimpleNamespace

    from bayes_risk.cli import fit as fit_cli

    work, _ = runs
    model = load_model(work / "model")
    data = pd.read_csv(work / "data.csv")
    lines = fit_cli._summary_lines(SimpleNamespace(method="pymc"), model, data)
    assert "synthesized columns: y" in lines
    conv = next(ln for ln in lines if ln.startswith("convergence: "))
    assert "quantities (parameters and the log-likelihood)" in conv
    assert "label-invariant" not in conv
