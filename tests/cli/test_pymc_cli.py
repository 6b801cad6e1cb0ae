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
from bayes_risk.exceptions import ValidationError
from bayes_risk.models import PyMCSynthesizer, load_model

pytestmark = pytest.mark.filterwarnings("ignore::bayes_risk.exceptions.ConvergenceWarning")

#: the saved model's function, named at every load (a model folder never imports it alone)
FN = ["--model-function", "_pymc_models:poisson_area"]


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
        "synthesize": ["synthesize", "--model", f"{d}/model", *FN, "-m", "3", "--random-seed", "2",
                       "--out", f"{d}/release"],
        "attribute": ["attribute", f"{d}/data.csv", f"{d}/release", "--model", f"{d}/model", *FN,
                      "--records", "0-9", "--estimator", "is", "--random-seed", "3",
                      "--out", f"{d}/attribute"],
        "identification": ["identification", f"{d}/data.csv", f"{d}/release", "--model",
                           f"{d}/model", *FN, "--known-unsynthesized", "area",
                           "--known-synthesized", "y", "--categorical", "area", "--radius",
                           "y=0.1", "--replicates", "20", "--random-seed", "4", "--out",
                           f"{d}/identification"],
        "audit": ["audit", f"{d}/data.csv", f"{d}/release", "--model", f"{d}/model", *FN,
                  "--known", "area", "x", "--records", "0-9", "--random-seed", "5", "--out",
                  f"{d}/audit"],
    }
    status = {name: _status([*args, "--quiet"]) for name, args in commands.items()}
    return work, status


def _status(argv):
    """The exit status of a run (a usage error too, which argparse raises as SystemExit)."""
    try:
        return cli.main(argv)
    except SystemExit as end:
        return end.code


def test_every_command_runs_with_a_pymc_model(runs):
    work, status = runs
    assert status == dict.fromkeys(status, 0)
    model = load_model(work / "model", model_function="_pymc_models:poisson_area")
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
    work, _ = runs
    model = load_model(work / "model", model_function="_pymc_models:poisson_area")
    lines = model.text_lines()  # what the command printed
    assert lines[0].startswith(f"fitted pymc to {len(pd.read_csv(work / 'data.csv'))} records")
    assert "synthesized columns: y" in lines
    conv = next(ln for ln in lines if ln.startswith("convergence: "))
    assert "quantities (parameters and the log-likelihood)" in conv
    assert "label-invariant" not in conv


# ------------------------------------------------- a model folder is data (issue 86)
#: a module that leaves a file behind when imported and when its function is called
_EVIL = '''
import pathlib
pathlib.Path({mark!r}).with_suffix(".import").write_text("imported")


def f(data):
    pathlib.Path({mark!r}).with_suffix(".call").write_text("called")
    from _pymc_models import poisson_area
    return poisson_area(data)
'''


def _resealed(src, dst, function=None, *, drop=None):
    """A copy of the model folder ``src`` whose model.json names ``function`` (or lacks the
    field ``drop``), its checksum recomputed as anyone can (the package's own json_sha256)."""
    import shutil

    from bayes_risk._checksums import json_sha256

    shutil.copytree(src, dst)
    meta = json.loads((dst / "model.json").read_text())
    if function is not None:
        meta["settings"]["model_function"] = function
        meta["sha256"]["model.json"] = json_sha256(
            {k: v for k, v in meta.items() if k != "sha256"})
    if drop is not None:
        del meta[drop]
    (dst / "model.json").write_text(json.dumps(meta))
    return dst


def _with_model(work, command, folder, *extra):
    d = str(work)
    inputs = [] if command == "synthesize" else [f"{d}/data.csv", f"{d}/release"]
    more = {"identification": ["--known-unsynthesized", "area", "--known-synthesized", "y",
                               "--categorical", "area"],
            "audit": ["--known", "area", "x"]}.get(command, [])
    return [command, *inputs, "--model", str(folder), *extra, *more,
            *(["-m", "1"] if command == "synthesize" else []), "--quiet",
            "--out", str(work / f"out_{command}_{folder.name}")]


@pytest.mark.parametrize("command", ["synthesize", "attribute", "identification", "audit",
                                     "membership"])
def test_a_model_folder_never_imports_the_module_it_names(runs, tmp_path, monkeypatch, capsys,
                                                          command):
    work, _ = runs
    mark = tmp_path / "evil"
    (tmp_path / "evil_issue86.py").write_text(_EVIL.format(mark=str(mark)))
    monkeypatch.syspath_prepend(str(tmp_path))
    evil = _resealed(work / "model", tmp_path / "evil_model", "evil_issue86:f")
    # no --model-function: refused, naming the function the folder names and the option
    assert cli.main(_with_model(work, command, evil)) == 2
    err = capsys.readouterr().err
    assert "error [MODEL_FUNCTION_REQUIRED]" in err
    assert "'evil_issue86:f'" in err and "--model-function evil_issue86:f" in err
    # another function than the folder's: refused, naming both
    assert cli.main(_with_model(work, command, evil, *FN)) == 2
    err = capsys.readouterr().err
    assert "error [MODEL_FUNCTION_MISMATCH]" in err
    assert "'_pymc_models:poisson_area'" in err and "'evil_issue86:f'" in err
    assert not list(tmp_path.glob("evil.*"))  # neither imported nor called
    assert not list(work.glob(f"out_{command}_evil_model"))


@pytest.mark.parametrize("function", ["this:s", "os:system"])
def test_a_standard_module_named_by_a_folder_is_not_run(runs, tmp_path, capsys, function):
    work, _ = runs
    folder = _resealed(work / "model", tmp_path / "other", function)
    assert cli.main(_with_model(work, "synthesize", folder)) == 2
    out, err = capsys.readouterr()
    assert "The Zen of Python" not in out + err and "error [MODEL_FUNCTION_REQUIRED]" in err
    for load in (load_model, PyMCSynthesizer.load):
        with pytest.raises(ValidationError) as caught:
            load(folder)
        assert caught.value.code == "MODEL_FUNCTION_REQUIRED" and function in str(caught.value)
        with pytest.raises(ValidationError) as caught:
            load(folder, model_function="_pymc_models:poisson_area")
        assert caught.value.code == "MODEL_FUNCTION_MISMATCH"
    assert "The Zen of Python" not in "".join(capsys.readouterr())


def test_the_named_function_loads_the_folder(runs):
    # (its graph is then checked against the saved one: tests/models/test_pymc_model.py,
    # test_a_changed_model_function_is_refused_at_load)
    from _pymc_models import poisson_area

    work, _ = runs
    for fn in ("_pymc_models:poisson_area", poisson_area):  # by its path, or the function
        model = load_model(work / "model", model_function=fn)
        assert model.get_params()["model_function"] is fn


def test_a_deleted_checksum_is_damage_not_an_older_folder(runs, tmp_path, capsys):
    work, _ = runs
    folder = _resealed(work / "model", tmp_path / "nosum", drop="sha256")
    assert cli.main(_with_model(work, "synthesize", folder, *FN)) == 2
    err = capsys.readouterr().err
    assert "error [MODEL_DAMAGED]" in err and "format version 2" in err
    assert "MODEL_UNVERIFIED" not in err and "older bayes-risk" not in err


def test_model_function_with_another_model_or_without_one(runs, tmp_path, capsys):
    work, _ = runs
    d = str(work)
    assert cli.main(["fit", f"{d}/data.csv", "--method", "cart", "--synthesize", "y",
                     "--categorical", "area", "--quiet", "--random-seed", "1", "--out",
                     str(tmp_path / "cart")]) == 0
    capsys.readouterr()
    assert cli.main(_with_model(work, "synthesize", tmp_path / "cart", *FN)) == 2
    err = capsys.readouterr().err
    assert "error [OPTION_CONFLICT]" in err and "--model-function" in err and "'cart'" in err
    assert cli.main(["attribute", f"{d}/data.csv", f"{d}/release", *FN, "--quiet", "--out",
                     str(tmp_path / "a")]) == 2
    assert "error [OPTION_REQUIRED]" in capsys.readouterr().err
