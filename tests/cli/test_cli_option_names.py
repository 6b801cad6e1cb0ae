"""The command line's messages name its own options (issue 46, item 7).

The library's messages name its arguments through :func:`bayes_risk.exceptions.arg_name`, which
writes the running sub-command's option when the command line called it
(:func:`~bayes_risk.cli._run.command_line_options`, set by ``main`` from the sub-command's
parser, :func:`~bayes_risk.cli.parsers.option_names`); what a message still says in Python's
words is rewritten when it is printed (:func:`~bayes_risk.cli.parsers.command_line_text`). The
cases below are the issue's and others found by trying bad values of every option of every
sub-command; each error line is checked for any name of the library (``tests/_cli_names.py``),
as every case of the bad-input corpus is.
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import json
import os
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from _cli_names import library_leaks

import bayes_risk as br
from bayes_risk.cli import SUBCOMMANDS, build_parser, main
from bayes_risk.cli._run import command_line_options
from bayes_risk.cli.parsers import command_line_text, option_names
from bayes_risk.exceptions import SchemaError, ValidationError, arg_name, has_option

pytestmark = pytest.mark.filterwarnings("ignore::bayes_risk.exceptions.BayesRiskWarning")


def _run(argv: list[str], capsys) -> tuple[int, list[str], list[str]]:
    """Exit status, error lines and warning lines of a run."""
    capsys.readouterr()
    try:
        rc = main(argv)
    except SystemExit as err:
        rc = int(err.code or 0)
    err = capsys.readouterr().err
    assert "Traceback" not in err, err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    return (rc, [ln for ln in lines if not ln.startswith("warning [")],
            [ln for ln in lines if ln.startswith("warning [")])


def _error(argv: list[str], capsys, code: str | None = None) -> str:
    rc, errors, warns = _run(argv, capsys)
    assert rc == 2 and len(errors) == 1, (rc, errors)
    line = errors[0]
    if code is not None:
        assert f"[{code}]" in line, line
    assert not library_leaks(line), (library_leaks(line), line)
    for w in warns:
        assert not library_leaks(w), (library_leaks(w), w)
    return line


def _subparsers() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


# ---------------------------------------------------------------- the mechanism
def test_every_option_of_every_sub_command_is_named():
    subs = _subparsers()
    assert set(subs) == set(SUBCOMMANDS)
    for name, p in subs.items():
        opts = option_names(p)
        for a in p._actions:
            if a.dest in ("help", argparse.SUPPRESS) or a.help is argparse.SUPPRESS:
                continue
            shown = opts[a.dest]
            assert shown in a.option_strings or (not a.option_strings and shown == a.metavar), (
                name, a.dest, shown)
    # the library's names that options set under another name
    fit, syn = option_names(subs["fit"]), option_names(subs["synthesize"])
    assert fit["n_components"] == "--components" and fit["dirichlet_prior"] == "--dirichlet-prior"
    assert syn["synthesized"] == "--synthesize" and syn["missing_labels"] == "--missing-code"
    assert option_names(subs["audit"])["targets"] == "--target"
    assert option_names(subs["identification"])["candidates"] == "--known-sweep"


#: an option named in a text (``--radius``, ``-m``), not a part of a word (``quantile-sd``)
_FLAG = re.compile(r"(?<![\w-])--?[A-Za-z][\w-]*")
#: another command's invocation in a text (``'bayes-risk attribute --estimator'``, an epilog's
#: example): it runs to the end of its line (a ``\`` goes on to the next), a quote or ``)``
_COMMAND = re.compile(r"bayes-risk ([a-z][a-z-]*)((?:\\\n|[^\n'\")])*)")


def test_every_option_a_help_text_names_is_the_commands_own():
    # orders' --radius named --compat, its --sampling-fraction --n-pop, audit's --refit-draws
    # --estimator: options those commands do not have
    for name, p in _subparsers().items():
        own = {o for a in p._actions for o in a.option_strings}
        texts = [(a.dest, a.help) for a in p._actions
                 if a.help and a.help is not argparse.SUPPRESS]
        texts += [("description", p.description or ""), ("epilog", p.epilog or "")]
        for where, text in texts:
            named = set(_FLAG.findall(text))
            for m in _COMMAND.finditer(text):
                if m.group(1) != name:  # another command's options, named as its own
                    named -= set(_FLAG.findall(m.group(2))) - set(_FLAG.findall(
                        _COMMAND.sub("", text)))
            assert named <= own, (name, where, sorted(named - own))


def test_arg_name_in_python_and_on_the_command_line():
    assert arg_name("max_order", 0) == "max_order=0" and arg_name("skip") == "skip"
    assert has_option("anything")  # Python sets every argument
    with command_line_options({"max_order": "--max-order", "skip": "--skip"}):
        assert arg_name("max_order", 0) == "--max-order 0"
        assert arg_name("skip", "['attribute']", cli="attribute") == "--skip attribute"
        assert arg_name("known_sweep", True, cli="") == "known_sweep=True"  # no such option
        assert not has_option("max_subsets") and has_option("skip")
        with command_line_options({"known": "--known-sweep"}):  # a call's own names
            assert arg_name("known") == "--known-sweep" and has_option("skip")
        assert not has_option("known")
    assert arg_name("max_order", 0) == "max_order=0"  # restored


@pytest.mark.parametrize("text,shown", [
    ("tune must be an integer >= 0. Got -1.", "--tune must be an integer >= 0. Got -1."),
    ("n_components (the truncation level K) must be >= 1.",
     "--components (the truncation level K) must be >= 1."),
    ("use max_order=0 or fewer levels", "use --max-order 0 or fewer levels"),
    ("pass skip=['attribute', 'membership'].", "pass --skip attribute membership."),
    ("keys contain duplicated column(s) ['Age'].", "--keys contain duplicated column(s) ['Age']."),
    ("raise max_replicates", "raise --max-replicates"),
    # not rewritten: prose, quoted names and values, an option's value, unknown names
    ("the tune is fine", "the tune is fine"),
    ("column 'max_order' is odd", "column 'max_order' is odd"),
    ("--threshold max_order=3 given", "--threshold max_order=3 given"),
    ("raise max_subsets", "raise max_subsets"),
])
def test_command_line_text(text, shown):
    opts = {"tune": "--tune", "n_components": "--components", "max_order": "--max-order",
            "skip": "--skip", "keys": "--keys", "max_replicates": "--max-replicates"}
    assert command_line_text(text, opts) == shown


# ---------------------------------------------------------------- inputs
@pytest.fixture(scope="module")
def work(tmp_path_factory) -> Path:
    """A CE-like table with 14 columns and a CART release of it; an ACS-like table, a DPMPM
    model fitted to it and its release."""
    d = tmp_path_factory.mktemp("names")
    rng = np.random.default_rng(46)
    ce = br.make_ce_like(150, random_seed=3)
    for j in range(7):
        ce[f"Q{j}"] = rng.integers(0, 3, len(ce))
    ce.to_csv(d / "wide.csv", index=False)
    cwd = os.getcwd()
    os.chdir(d)
    try:
        assert main(["synthesize", "wide.csv", "--method", "cart", "--synthesize", "Income",
                     "Expenditure", "--categorical", "Urban", "Marital", "Tenure",
                     "-m", "2", "--random-seed", "1", "-q", "--out", "rel"]) == 0
        acs = br.make_acs_like(150, random_seed=4).iloc[:, :4]
        acs.to_csv("acs.csv", index=False)
        (d / "acs_cols").write_text(" ".join(acs.columns))
        assert main(["fit", "acs.csv", "--method", "dpmpm", "--categorical", *acs.columns,
                     "--components", "3", "--tune", "20", "--draws", "20", "--chains", "1",
                     "--random-seed", "1", "-q", "--out", "model"]) == 0
        assert main(["synthesize", "--model", "model", "-m", "2", "--random-seed", "2", "-q",
                     "--out", "acssyn"]) == 0
    finally:
        os.chdir(cwd)
    return d


@pytest.fixture()
def at(work, monkeypatch, tmp_path) -> Path:
    monkeypatch.chdir(work)
    return work


# ---------------------------------------------------------------- the cases
def test_audit_knowledge_sweep_of_too_many_columns_fails_before_any_step(at, capsys):
    cols = ["Age", "Urban", "Tenure", "Educ", "Marital", "Income", "Expenditure",
            *[f"Q{j}" for j in range(7)]]
    line = _error(["audit", "wide.csv", "rel", "--known", *cols, "--known-sweep",
                   "--categorical", "Urban", "Marital", "Tenure", "--radius-sweep", "none",
                   "--out", "out"], capsys, "BAD_OPTION_VALUE")
    assert "--known-sweep" in line and "14 known columns" in line and "--known" in line
    assert "16384" in line and "at most 12" in line and "--max-size K" in line
    for api in ("max_subsets", "skip=", "max_size", "known_sweep"):
        assert api not in line, line
    assert not (at / "out").exists()
    # in Python the same check names the arguments
    with pytest.raises(ValidationError, match=r"known_sweep=True: .* in known") as info:
        br.audit(str(at / "wide.csv"), str(at / "rel"), known=cols, progressbar=False,
                 settings=br.AuditSettings(known_sweep=True))
    assert "max_size=K" in str(info.value)


def test_identification_sweep_of_an_unknown_column_names_the_sweep(at, capsys):
    base = ["identification", "wide.csv", "rel", "--known-unsynthesized", "Age",
            "--known-synthesized", "Income", "--radius", "Income=0.1", "-q", "--out", "out"]
    line = _error([*base, "--known-sweep", "Age", "Nope"], capsys, "UNKNOWN_COLUMN")
    assert line.split("]: ", 1)[1].startswith("--known-sweep: column(s) ['Nope']")
    assert "--known-unsynthesized" not in line
    line = _error([*base, "--known-sweep", "Age", "Age"], capsys)
    assert "--known-sweep lists variable(s)" in line
    # 13 candidates: 8192 subsets; the remedy names the option the command line has
    cands = ["Age", "Urban", "Tenure", "Educ", "Marital", "Income", "Expenditure",
             *[f"Q{j}" for j in range(6)]]
    line = _error([*base, "--known-sweep", *cands], capsys, "BAD_OPTION_VALUE")
    assert "8192 subsets" in line and "lower --max-size" in line and "max_subsets" not in line


def test_membership_population_names_the_option(at, capsys):
    line = _error(["membership", "acs.csv", "acssyn", "--model", "model", "--population",
                   "1000000000", "-q", "--out", "out"], capsys, "TOO_FEW_DRAWS")
    assert "--population 1000000000" in line and "at most 80 records" in line
    assert "m = " not in line and "synthetic datasets need" not in line
    # the normaliser (m = 2 datasets) is checked by name too, before any refit
    line = _error(["membership", "acs.csv", "acssyn", "--model", "model",
                   "--normaliser-draws", "100000", "--population", "0", "-q", "--out", "out"],
                  capsys, "TOO_FEW_DRAWS")
    assert "--normaliser-draws 100000" in line


def test_audit_checks_the_membership_inputs_before_the_first_step(at, capsys, tmp_path,
                                                                  monkeypatch):
    from bayes_risk.auditing.measures import utility

    ran = []
    monkeypatch.setattr(utility, "MEASURE", dataclasses.replace(
        utility.MEASURE, step=lambda ctx: ran.append("utility")))
    hold = br.make_acs_like(60, random_seed=9)[pd.read_csv(at / "acs.csv").columns]
    hold.drop(columns=hold.columns[0]).to_csv(tmp_path / "bad.csv", index=False)
    hold.to_csv(tmp_path / "hold.csv", index=False)
    base = ["audit", "acs.csv", "acssyn", "--model", "model", "--known",
            *(at / "acs_cols").read_text().split()[:2], "-q", "--out", str(tmp_path / "out")]
    line = _error([*base, "--holdout", str(tmp_path / "bad.csv")], capsys, "MISSING_COLUMN")
    assert "--holdout is missing" in line and "give --skip membership" in line
    line = _error([*base, "--holdout", str(tmp_path / "hold.csv"), "--membership-selection",
                   "nope > 1"], capsys, "BAD_SELECTION_RULE")
    assert "--membership-selection 'nope > 1'" in line and "give --skip membership" in line
    assert not ran and not (tmp_path / "out").exists()


def test_out_given_a_link_says_it_is_a_link(at, capsys, tmp_path):
    (tmp_path / "folder").mkdir()
    (tmp_path / "folder" / "keep.txt").write_text("keep")
    link = tmp_path / "link"
    link.symlink_to(tmp_path / "folder", target_is_directory=True)
    line = _error(["utility", "wide.csv", "rel", "-q", "--out", str(link)], capsys,
                  "OUT_EXISTS")
    assert "is a link to a folder" in line and "existing file" not in line
    dangling = tmp_path / "dangling"
    dangling.symlink_to(tmp_path / "nowhere")
    line = _error(["utility", "wide.csv", "rel", "-q", "--out", str(dangling)], capsys)
    assert "a link to nothing" in line
    assert (tmp_path / "folder" / "keep.txt").read_text() == "keep"


# ---------------------------------------------------------------- found by the sweep
@pytest.mark.parametrize("argv,code,named", [
    (["fit", "acs.csv", "--method", "dpmpm", "--components", "0"], "BAD_OPTION_VALUE",
     "--components (the truncation level K) must be"),
    (["fit", "acs.csv", "--method", "dpmpm", "--tune", "-1"], "BAD_OPTION_VALUE",
     "--tune must be an integer >= 0"),
    (["fit", "acs.csv", "--method", "dpmpm", "--dirichlet-prior", "0"], "BAD_OPTION_VALUE",
     "--dirichlet-prior must be a finite number > 0"),
    (["synthesize", "wide.csv", "--method", "cart", "--synthesize", "Nope"], "UNKNOWN_COLUMN",
     "--synthesize: column 'Nope'"),
    (["synthesize", "wide.csv", "--method", "cart", "--synthesize", "Age", "Age"], None,
     "--synthesize lists column(s) ['Age']"),
    (["synthesize", "wide.csv", "--method", "cart", "--synthesize", "Income", "--min-leaf",
      "0"], "BAD_OPTION_VALUE", "--min-leaf must be an integer >= 1"),
    (["synthesize", "wide.csv", "--method", "cart", "--synthesize", "Income",
      "--missing-code", "Nope=1"], "UNKNOWN_COLUMN", "--missing-code: column 'Nope'"),
    (["synthesize", "wide.csv", "--method", "cart", "--synthesize", "Income", "-m",
      "1000000000"], "MEMORY_TOO_LARGE", "reduce -m"),
    (["synthesize", "--model", "model", "-m", "1000000000000"], "MEMORY_TOO_LARGE",
     "reduce -m"),
    (["utility", "wide.csv", "rel", "--n-perm", "0"], "BAD_OPTION_VALUE", "--n-perm must be"),
    (["identification", "wide.csv", "rel", "--known-unsynthesized", "Age", "Urban",
      "--known-synthesized", "Age"], "BAD_OPTION_VALUE",
     "--known-unsynthesized + --known-synthesized lists column(s) ['Age'] more than once"),
    (["identification", "wide.csv", "rel", "--known-unsynthesized", "Age",
      "--known-synthesized", "Income", "--radius", "Income=0.1", "--r-min", "-1"],
     "BAD_OPTION_VALUE", "--r-min must be a finite number >= 0"),
    (["identification", "wide.csv", "rel", "--known-unsynthesized", "Age",
      "--known-synthesized", "Income", "--radius", "Income=-1"],
     "BAD_OPTION_VALUE", "--radius Income must be a finite number >= 0"),
    (["identification", "wide.csv", "rel", "--known-unsynthesized", "Age",
      "--known-synthesized", "Income", "--radius", "Income=0.1", "--quantile-groups", "0"],
     "BAD_OPTION_VALUE", "--quantile-groups must be an integer >= 1"),
    (["identification", "wide.csv", "rel", "--known-unsynthesized", "Age",
      "--known-synthesized", "Income"], "BAD_OPTION_VALUE", "--radius Income=R"),
    (["identification", "wide.csv", "rel", "--known-unsynthesized", "Age",
      "--known-synthesized", "Income", "--radius", "Income=0.1", "--original-id", "Nope"],
     "MISSING_COLUMN", "--original-id column 'Nope'"),
    (["identification", "wide.csv", "rel", "--known-unsynthesized", "Age",
      "--known-synthesized", "Income", "--radius", "Income=0.1", "--workers", "100000"],
     "BAD_OPTION_VALUE", "--workers must be an integer in [1, "),
    (["disclosure", "wide.csv", "rel", "--keys", "Age", "Nope", "--target", "Tenure"],
     "UNKNOWN_COLUMN", "--keys: column 'Nope'"),
    (["disclosure", "wide.csv", "rel", "--keys", "Age", "--target", "Nope"],
     "UNKNOWN_COLUMN", "--target: column 'Nope'"),
    (["disclosure", "wide.csv", "rel", "--keys", "Age", "Age", "--target", "Tenure"],
     "BAD_OPTION_VALUE", "--keys must be a non-empty sequence of column names, each listed once"),
    (["audit", "wide.csv", "rel", "--known", "Age", "Income", "--radius-type",
      "quantile-sd"], "OPTION_CONFLICT", "--radius-sweep none"),
    (["audit", "wide.csv", "rel", "--known", "Age", "Urban", "--target", "Age"],
     "BAD_OPTION_VALUE", "--known and --target both name ['Age']; a target of the"),
    (["audit", "wide.csv", "rel", "--known", "Age", "--model", "nope"], "NOT_A_MODEL",
     "--model 'nope' is not a fitted-model folder"),
    (["attribute", "acs.csv", "acssyn", "--model", "model", "--candidates", "nope"],
     "BAD_OPTION_VALUE", "--candidates 'nope' not understood"),
    (["attribute", "acs.csv", "acssyn", "--model", "model", "--prior", "nope"],
     "BAD_OPTION_VALUE", "--prior 'nope' not understood"),
    (["membership", "acs.csv", "acssyn", "--model", "model", "--selection", "nope"],
     "BAD_SELECTION_RULE", "--selection 'nope' could not be evaluated"),
    (["utility", "wide.csv", "rel", "--random-seed", "-1"], "USAGE",
     "argument --random-seed: must be an integer >= 0"),
])
def test_errors_name_the_options(argv, code, named, at, capsys, tmp_path):
    out = str(tmp_path / "out")
    rc, errors, warns = _run([*argv, "-q", "--out", out] if argv[0] != "disclosure"
                             else [*argv, "--out", out], capsys)
    assert rc == 2 and errors, (rc, errors)
    line = errors[-1]
    if code is not None:
        assert f"[{code}]" in line, line
    assert named in line, line
    assert not library_leaks(line), (library_leaks(line), line)


def test_a_dask_scheduler_that_is_not_there(at, capsys, tmp_path):
    distributed = pytest.importorskip("distributed")
    import dask

    gc.disable()  # the failed client must be closed by the package, not by a garbage collection
    try:
        line = _error(["identification", "wide.csv", "rel", "--known-unsynthesized", "Age",
                       "--known-synthesized", "Income", "--radius", "Income=0.1", "--scheduler",
                       "nope", "-q", "--out", str(tmp_path / "out")], capsys,
                      "DASK_SCHEDULER_UNREACHABLE")
        # and is not left as the default client and Dask's scheduler for the rest of the
        # process (later netCDF writes went through a Dask lock at 'nope')
        assert dask.config.get("scheduler", None) is None
        with pytest.raises(ValueError, match="No global client"):
            distributed.get_client()
    finally:
        gc.enable()
    assert "--scheduler 'nope'" in line


def test_warnings_name_the_options_too(at, capsys, tmp_path):
    # a label pandas would read as missing: the warning says how to declare it, as an option
    d = pd.read_csv(at / "wide.csv")
    d["Region"] = np.where(np.arange(len(d)) % 7 == 0, "NA", "Europe")
    d.to_csv(tmp_path / "na.csv", index=False)
    rc, errors, warns = _run(["utility", str(tmp_path / "na.csv"), str(tmp_path / "na.csv"),
                              "--synthesized", "Income", "-q", "--out",
                              str(tmp_path / "out")], capsys)
    na = [w for w in warns if "[NA_LIKE_LABEL]" in w]
    assert na and "--missing-code Region=NA" in na[0] and "missing_labels" not in na[0]
    assert not [w for w in warns if library_leaks(w)], warns
    if rc == 0:
        rec = json.loads((tmp_path / "out" / "summary.json").read_text())["run_warnings"]
        assert any("--missing-code Region=NA" in w["message"] for w in rec)


def test_an_out_name_too_long_is_refused_before_the_work(at, capsys, tmp_path):
    name = "o" * 240  # fits the file system, but not with '.NAME.tmp-PID-XXXXXXXX'
    line = _error(["identification", "wide.csv", "rel", "--known-unsynthesized", "Age",
                   "--known-synthesized", "Income", "--radius", "Income=0.1", "-q", "--out",
                   str(tmp_path / name)], capsys, "OUT_INVALID")
    assert "bytes long" in line and "shorter name" in line
    assert not list(tmp_path.iterdir())


def test_python_messages_keep_python_names():
    # the same library call, outside the command line, names its arguments
    df = pd.DataFrame({"a": [1, 2, 3], "b": [1, 1, 2]})
    from bayes_risk.identification import known_sweep

    with pytest.raises(SchemaError, match=r"^candidates: column\(s\) \['z'\]"):
        known_sweep(df, [df], candidates=["a", "z"], progressbar=False)


def test_python_messages_tell_the_python_way(tmp_path):
    # what the command line advises as a command, a Python caller is told as a call
    from bayes_risk.data.release_reader import read_release

    with pytest.raises(ValidationError, match="a folder written by SyntheticData.save") as err:
        read_release(tmp_path)
    assert err.value.code == "NOT_A_RELEASE" and "bayes-risk" not in str(err.value)
    df = pd.DataFrame({"a": ["x", "y"] * 10, "b": ["u", "v"] * 10})
    with pytest.raises(ValidationError, match=r"^model '.*nope' is not a fitted-model folder "
                       r"\(no model.json\); give the folder written by a fitted model's save\(\)"
                       ) as err:
        br.audit(df, [df], known=["a"], synthesized=["b"], model=str(tmp_path / "nope"),
                 progressbar=False)
    assert err.value.code == "NOT_A_MODEL"


# ------------------------------------------ fit and synthesize: one message, two callers
_T = pd.DataFrame({"a": ["x", "y"] * 10, "b": ["u", "v"] * 10})


@pytest.mark.parametrize("argv, call, code, cli_words, python_words", [
    (["fit", "--method", "nosuch"], lambda: br.models.fitting.fit_model(_T, "nosuch"),
     "UNKNOWN_SYNTHESIZER", "--method must be one of", "method must be one of"),
    (["synthesize", "--method", "nosuch"],
     lambda: br.models.fitting.fit_synthesizer(_T, "nosuch"),
     "UNKNOWN_SYNTHESIZER", "--method must be one of", "method must be one of"),
    # the way to fit a model fitted by MCMC: the command, or the function
    (["synthesize", "--method", "dpmpm"], lambda: br.models.fitting.fit_synthesizer(_T, "dpmpm"),
     "OPTION_CONFLICT", "--method dpmpm: DPMPM is fitted by MCMC, whose convergence checks "
     "'bayes-risk fit' reports; fit it with 'bayes-risk fit ORIGINAL --method dpmpm",
     "method='dpmpm': DPMPM is fitted by MCMC, whose convergence checks fit_model reports; fit "
     "it with fit_model(original, 'dpmpm'), then synthesize with the model's synthesize(m)."),
    # what the model cannot default (the registry's check_required)
    (["fit", "--method", "cart"], lambda: br.models.fitting.fit_model(_T, "cart"),
     "OPTION_REQUIRED", "--synthesize COL [COL ...] is required with --method cart",
     "synthesized is required with method='cart'"),
    (["synthesize", "--method", "pmm"], lambda: br.models.fitting.fit_synthesizer(_T, "pmm"),
     "OPTION_REQUIRED", "--identifying COL [COL ...] is required with --method pmm",
     "options['identifying'] is required with method='pmm'"),
    # settings the model does not take (the registry's model_settings)
    (["fit", "--method", "cart", "--synthesize", "a", "--draws", "3"],
     lambda: br.models.fitting.fit_model(_T, "cart", synthesized=["a"],
                                         sampling={"draws": 3}),
     "OPTION_CONFLICT", "--draws: MCMC options do not apply to --method cart",
     "draws: MCMC options do not apply to method='cart'"),
    (["fit", "--method", "cart", "--synthesize", "a", "--identifying", "b"],
     lambda: br.models.fitting.fit_model(_T, "cart", synthesized=["a"],
                                         options={"identifying": ["b"]}),
     "OPTION_CONFLICT", "--identifying: not an option of --method cart (CARTSynthesizer takes "
     "no setting 'identifying'; the option applies to --method pmm)",
     "options: 'identifying' is not a setting of method='cart'; CARTSynthesizer takes "
     "'bandwidth'"),
])
def test_fit_and_synthesize_name_the_option_or_the_parameter(argv, call, code, cli_words,
                                                             python_words, capsys, tmp_path,
                                                             monkeypatch):
    monkeypatch.chdir(tmp_path)
    _T.to_csv("t.csv", index=False)
    line = _error([argv[0], "t.csv", *argv[1:], "-q", "--out", "out"], capsys, code)
    assert cli_words in line, line
    with pytest.raises(ValidationError) as err:
        call()
    assert err.value.code == code and str(err.value).startswith(python_words), str(err.value)
    # a Python caller is told no option and no command
    assert "--" not in str(err.value) and "bayes-risk " not in str(err.value), str(err.value)
