"""``bayes_risk.auditing.demo.run_demo``: the demo's run, callable from Python with any runner
of its steps (``bayes-risk demo`` runs them with ``bayes_risk.cli.main``)."""

import json
from pathlib import Path

import pytest

from bayes_risk._specs import cli_arguments
from bayes_risk.auditing.demo import run_demo
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
                        ({"components": 0}, "components must be an integer >= 1")):
        with pytest.raises(ValidationError, match=message):
            run_demo(tmp_path, _command(calls), **kw)
    assert calls == [] and list(tmp_path.iterdir()) == []


def test_the_parameters_declare_the_demo_options():
    assert [o.flag for _, o in cli_arguments(run_demo)] == [
        "-m", "--n-ce", "--n-acs", "--components", "--tune", "--draws", "--chains", "--part"]
