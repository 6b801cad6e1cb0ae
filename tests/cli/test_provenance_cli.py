"""Every sub-command given files that do not belong together (issue 46, items 1-3).

A CART model of Income alone against a release that synthesized Tenure, Expenditure and
Income (as a folder and as plain files), a CART model with another setting, a DPMPM with K = 3
against the release of one with K = 5, edited model folders, and a release folder whose second
dataset is a link to the first: each is one coded error line (exit 2, no output);
``--allow-other-model`` makes the run go on with warning ``MODEL_DIFFERS`` in ``summary.json``,
and a copied dataset is measured with warning ``DUPLICATE_DATASETS``.
"""

from __future__ import annotations

import json
import os
import warnings

import pytest

import bayes_risk as br
from bayes_risk.cli import main
from bayes_risk.data import SyntheticData

TYPES = ["--categorical", "Urban", "Tenure", "Marital"]


def _main(argv: list[str]) -> int:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return main([str(a) for a in argv])


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    w = tmp_path_factory.mktemp("provenance")
    br.make_ce_like(250, random_seed=2).to_csv(w / "orig.csv", index=False)
    for name, cols, leaf in (("income_only", ["Income"], "5"),
                             ("three", ["Tenure", "Expenditure", "Income"], "5"),
                             ("leaf12", ["Tenure", "Expenditure", "Income"], "12")):
        assert _main(["fit", w / "orig.csv", "--method", "cart", "--synthesize", *cols, *TYPES,
                      "--min-leaf", leaf, "--random-seed", "1", "-q", "--out", w / name]) == 0
    assert _main(["synthesize", "--model", w / "three", "-m", "2", "--random-seed", "2", "-q",
                  "--out", w / "syn"]) == 0
    for l, z in enumerate(SyntheticData.load(w / "syn"), start=1):
        z.to_csv(w / f"syn_{l}.csv", index=False)
    return w


def _refused(capsys, argv: list, code: str, out) -> str:
    capsys.readouterr()
    assert _main([*argv, "--out", out]) == 2
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and f"error [{code}]" in lines[0], err
    assert not out.exists()
    return lines[0]


def _allowed(argv: list, out) -> dict:
    assert _main([*argv, "--allow-other-model", "--out", out]) == 0
    s = json.loads((out / "summary.json").read_text())
    assert "MODEL_DIFFERS" in [w["code"] for w in s["run_warnings"]]
    return s


def _commands(w, syn: list, model: str = "income_only") -> dict[str, list]:
    o, m = w / "orig.csv", w / model
    return {
        "membership": ["membership", o, *syn, "--model", m, "--records", "0-39",
                       "--population", "10", "--normaliser-draws", "100", "--bootstrap", "0",
                       "--no-dcr", "-q"],
        "attribute": ["attribute", o, *syn, "--model", m, "--records", "0-3", "--bootstrap",
                      "0", "-q"],
        "identification": ["identification", o, *syn, "--model", m, "--known-unsynthesized",
                           "Age", "--known-synthesized", "Income", "--replicates", "4",
                           "--radius", "Income=0.1", "-q"],
        "audit": ["audit", o, *syn, "--model", m, "--known", "Age", "Income", "--skip",
                  "utility", "identification", "disclosure", "--records", "0-3", "-q"],
    }


@pytest.mark.parametrize("command", ["membership", "attribute", "identification", "audit"])
def test_a_model_that_did_not_make_the_release(work, capsys, command):
    argv = _commands(work, [work / "syn"])[command]
    line = _refused(capsys, argv, "MODEL_DIFFERS", work / f"{command}_refused")
    assert "the release synthesized ['Tenure', 'Expenditure', 'Income'], the model " \
           "synthesizes ['Income']" in line and "or --allow-other-model to go on" in line
    assert "in Python" not in line and "allow_other_model" not in line  # the command's words
    # a model of the same columns with another setting: refused, and measured when allowed
    argv = _commands(work, [work / "syn"], "leaf12")[command]
    line = _refused(capsys, argv, "MODEL_DIFFERS", work / f"{command}_leaf")
    assert "min_leaf = 5 for the release, 12 for the model" in line
    s = _allowed(argv, work / f"{command}_allowed")
    if command == "audit":
        att = json.loads((work / "audit_allowed" / "attribute" / "summary.json").read_text())
        assert "MODEL_DIFFERS" in att["warnings"]
        assert att["settings"]["model_check"] == "identity"
    else:
        result = s.get("settings") or {}
        assert "MODEL_DIFFERS" in s["warnings"] and result.get("model_check") == "identity"


@pytest.mark.parametrize("command", ["membership", "attribute", "identification", "audit"])
def test_the_same_pair_as_plain_files(work, capsys, command):
    argv = _commands(work, [work / "syn_1.csv", work / "syn_2.csv"])[command]
    line = _refused(capsys, argv, "MODEL_DIFFERS", work / f"{command}_plain")
    assert "'Tenure'" in line and "'Expenditure'" in line and "releases unchanged" in line


def test_the_model_that_made_the_release_is_accepted(work):
    out = work / "own"
    assert _main(["membership", work / "orig.csv", work / "syn", "--model", work / "three",
                  "--records", "0-39", "--population", "10", "--normaliser-draws", "100",
                  "--bootstrap", "0", "--no-dcr", "-q", "--out", out]) == 0
    s = json.loads((out / "summary.json").read_text())
    assert s["settings"]["model_check"] == "identity"
    assert "MODEL_DIFFERS" not in [w["code"] for w in s["run_warnings"]]
    assert json.loads((work / "syn" / "manifest.json").read_text())["model_id"] == \
        json.loads((work / "three" / "model.json").read_text())["model_id"]


def test_the_issues_dpmpm_case(tmp_path, capsys):
    data = br.make_acs_like(150, random_seed=3)
    data.to_csv(tmp_path / "acs.csv", index=False)
    for k in (5, 3):
        assert _main(["fit", tmp_path / "acs.csv", "--method", "dpmpm", "--components", k,
                      "--tune", "10", "--draws", "10", "--chains", "1", "--random-seed", "1",
                      "-q", "--out", tmp_path / f"k{k}"]) == 0
    assert _main(["synthesize", "--model", tmp_path / "k5", "-m", "2", "--random-seed", "2",
                  "-q", "--out", tmp_path / "syn"]) == 0
    line = _refused(capsys, ["membership", tmp_path / "acs.csv", tmp_path / "syn", "--model",
                             tmp_path / "k3", "-q"], "MODEL_DIFFERS", tmp_path / "m")
    assert "n_components = 5 for the release, 3 for the model" in line


def test_allow_other_model_needs_a_model_in_identification(work, capsys):
    _refused(capsys, ["identification", work / "orig.csv", work / "syn", "--known-synthesized",
                      "Income", "--radius", "Income=0.1", "--allow-other-model", "-q"],
             "OPTION_REQUIRED", work / "id_no_model")


# --------------------------------------------------------------------- repeated datasets
@pytest.mark.parametrize("command", ["utility", "disclosure", "identification", "attribute",
                                     "membership", "audit"])
def test_a_release_folder_with_a_linked_dataset(work, tmp_path, capsys, command):
    """The issue's case: a release folder whose second dataset file is a link to the first."""
    linked = tmp_path / "linked"
    SyntheticData.load(work / "syn").save(linked)
    os.remove(linked / "syn_002.parquet")
    os.symlink("syn_001.parquet", linked / "syn_002.parquet")
    o = work / "orig.csv"
    argv = {
        "utility": ["utility", o, linked, "-q"],
        "disclosure": ["disclosure", o, linked, "--keys", "Age", "Urban", "--target", "Tenure"],
        "identification": ["identification", o, linked, "--known-unsynthesized", "Age",
                           "--known-synthesized", "Income", "--radius", "Income=0.1", "-q"],
        "attribute": ["attribute", o, linked, "--model", work / "three", "--records", "0-3",
                      "-q"],
        "membership": ["membership", o, linked, "--model", work / "three", "-q"],
        "audit": ["audit", o, linked, "--known", "Age", "Income", "-q"],
    }[command]
    line = _refused(capsys, argv, "DUPLICATE_DATASETS", tmp_path / "out")
    assert "datasets 1 and 2 are the same file" in line


def test_plain_files_given_twice_or_copied(work, capsys):
    line = _refused(capsys, ["utility", work / "orig.csv", work / "syn_1.csv", work / "syn_2.csv",
                             work / "syn_1.csv", "-q"], "DUPLICATE_DATASETS", work / "u_twice")
    assert "datasets 1 and 3 are the same file" in line
    # a copy under another name holds the same content: measured, with the warning recorded
    (work / "syn_3.csv").write_bytes((work / "syn_1.csv").read_bytes())
    out = work / "u_copy"
    assert _main(["utility", work / "orig.csv", work / "syn_1.csv", work / "syn_2.csv",
                  work / "syn_3.csv", "-q", "--out", out]) == 0
    s = json.loads((out / "summary.json").read_text())
    assert "DUPLICATE_DATASETS" in [w["code"] for w in s["run_warnings"]]
    assert "DUPLICATE_DATASETS" in s["warnings"]


@pytest.mark.parametrize("command", ["disclosure", "identification", "attribute", "membership",
                                     "audit"])
def test_every_command_records_a_copied_dataset(work, tmp_path, command):
    """A copy of dataset 1 under another name: measured, the code in summary.json (the run's
    warnings and the result's) of every command that reads a release."""
    copy = tmp_path / "copy_of_1.csv"
    copy.write_bytes((work / "syn_1.csv").read_bytes())
    o, syn = work / "orig.csv", [work / "syn_1.csv", work / "syn_2.csv", copy]
    argv = {
        "disclosure": ["disclosure", o, *syn, "--keys", "Age", "Urban", "--target", "Tenure",
                       "--differencing"],
        "identification": ["identification", o, *syn, "--model", work / "three",
                           "--known-unsynthesized", "Age", "--known-synthesized", "Income",
                           "--replicates", "4", "--radius", "Income=0.1", "--radius-sweep",
                           "0.05,0.1", "-q"],
    }.get(command) or _commands(work, syn, "three")[command]
    out = tmp_path / "out"
    assert _main([*argv, "--out", out]) == 0
    s = json.loads((out / "summary.json").read_text())
    assert "DUPLICATE_DATASETS" in [w["code"] for w in s["run_warnings"]]
    assert "DUPLICATE_DATASETS" in s["warnings"]
    if command == "disclosure":
        assert "DUPLICATE_DATASETS" in (out / "differencing.json").read_text()


# ------------------------------------------------------------------------- model folders
def test_an_edited_model_folder_is_refused_naming_the_file(work, tmp_path, capsys):
    import shutil

    folder = tmp_path / "edited"
    shutil.copytree(work / "three", folder)
    meta = json.loads((folder / "model.json").read_text())
    for c in meta["schema"]["columns"]:
        if c["name"] == "Tenure":
            c["role"] = "unsynthesized"  # the issue's edit
    (folder / "model.json").write_text(json.dumps(meta, indent=2))
    line = _refused(capsys, ["synthesize", "--model", folder, "-m", "1", "-q"],
                    "MODEL_DAMAGED", tmp_path / "syn")
    assert "model.json was edited" in line
    # a reversed visit sequence in a folder whose model.json records no checksum of its own
    meta = json.loads((work / "three" / "model.json").read_text())
    del meta["sha256"]["model.json"]
    meta["format_version"] = 1  # as an older bayes-risk wrote it (version 2 records it)
    meta["state"]["visit_sequence"] = meta["state"]["visit_sequence"][::-1]
    (folder / "model.json").write_text(json.dumps(meta, indent=2))
    capsys.readouterr()
    assert _main(["synthesize", "--model", folder, "-m", "1", "-q", "--out",
                  tmp_path / "syn2"]) == 2
    err = capsys.readouterr().err
    assert "warning [MODEL_UNVERIFIED]" in err and "error [MODEL_DAMAGED]" in err
    assert "Traceback" not in err and "IndexError" not in err
