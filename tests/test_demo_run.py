"""``bayes_risk.demo.run_demo``: the demo's run, callable from Python with any runner
of its steps (``bayes-risk demo`` runs them with ``bayes_risk.cli.main``)."""

import json
from pathlib import Path

import pytest

from bayes_risk._specs import cli_arguments
from bayes_risk.demo import run_demo
from bayes_risk.exceptions import ValidationError


def _command(calls):
    def command(name, argv):
        calls.append((name, argv))
        if argv[0] == "audit":  # what an audit leaves for the demo's summary
            out = Path(argv[argv.index("--out") + 1])
            out.mkdir(parents=True)
            (out / "summary.json").write_text(json.dumps({"step_warnings": [
                {"step": "utility", "code": "SOME_WARNING"}]}))
    return command


def test_run_demo_runs_its_steps_and_gathers_the_warnings(tmp_path):
    calls = []
    reports = run_demo(tmp_path, _command(calls), part="ce", n_ce=60, m=1, random_seed=3)
    assert reports == ["ce/audit/report.html"]
    assert [name for name, _ in calls] == ["CE: CART synthesis", "CE: audit"]
    synthesize = calls[0][1]
    assert synthesize[synthesize.index("--random-seed") + 1] == "4"  # the seed + 1
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["warnings"] == ["SOME_WARNING"]
    assert summary["steps_with_warnings"] == ["ce/audit/utility"]
    assert set(summary["timings"]) == {"CE: CART synthesis", "CE: audit"}


def test_run_demo_names_its_own_arguments_before_any_step(tmp_path):
    calls = []
    for kw, message in (({"m": 0}, "m must be an integer >= 1"),
                        ({"n_ce": 0}, "n_ce must be an integer >= 1"),
                        ({"components": 0}, "components must be an integer >= 1"),
                        ({"part": "cee"}, "part must be 'all', 'ce' or 'acs'. Got 'cee'"),
                        ({"random_seed": None}, "random_seed must be an integer >= 0"),
                        ({"random_seed": -1}, "random_seed must be an integer >= 0")):
        with pytest.raises(ValidationError, match=message):
            run_demo(tmp_path, _command(calls), **kw)
    assert calls == [] and list(tmp_path.iterdir()) == []


def test_the_parameters_declare_the_demo_options():
    assert [o.flag for _, o in cli_arguments(run_demo)] == [
        "-m", "--n-ce", "--n-acs", "--components", "--tune", "--draws", "--chains", "--part"]


def test_run_demo_refuses_a_bad_folder_or_runner_before_any_step(tmp_path):
    calls = []
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "notes.txt").write_text("mine")
    (tmp_path / "file.csv").write_text("a\n1\n")
    for out, command, message, code in (
            (tmp_path / "taken", _command(calls), "out .* is a folder that is not empty",
             "OUT_EXISTS"),
            (tmp_path / "file.csv", _command(calls), "out .* is a file", "OUT_EXISTS"),
            (None, _command(calls), "out must be a path to a folder. Got NoneType",
             "INVALID_ARGUMENT"),
            (tmp_path / "new", None, "command must be a function", "INVALID_ARGUMENT")):
        with pytest.raises(ValidationError, match=message) as err:
            run_demo(out, command, part="ce", n_ce=60, m=1)
        assert err.value.code == code
    assert calls == [] and sorted(p.name for p in tmp_path.iterdir()) == ["file.csv", "taken"]
    assert [p.name for p in (tmp_path / "taken").iterdir()] == ["notes.txt"]


@pytest.mark.parametrize("exists", [True, False])
def test_an_interrupted_run_demo_leaves_no_half_written_folder(tmp_path, exists):
    out = tmp_path / "demo" / "out"
    if exists:
        out.mkdir(parents=True)
    calls = []

    def interrupted(name, argv):
        _command(calls)(name, argv)
        if argv[0] == "audit":  # after the data and a release were written
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_demo(out, interrupted, part="ce", n_ce=60, m=1)
    assert len(calls) == 2
    # left as it was: the empty folder given, or nothing where the run made the folders
    assert list(out.iterdir()) == [] if exists else list(tmp_path.iterdir()) == []
