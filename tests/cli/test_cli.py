"""The command-line shell: every sub-command is wired, documented and fails cleanly."""

from __future__ import annotations

import subprocess
import sys

import pytest

from bayes_risk.cli import SUBCOMMANDS, build_parser, main


@pytest.mark.parametrize("cmd", SUBCOMMANDS)
def test_every_subcommand_has_help(cmd, capsys):
    with pytest.raises(SystemExit) as e:
        main([cmd, "--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: bayes-risk {cmd}")


def test_parser_lists_all_subcommands():
    text = build_parser().format_help()
    for cmd in SUBCOMMANDS:
        assert cmd in text


def test_no_command_prints_help_and_fails(capsys):
    assert main([]) == 2
    assert "usage: bayes-risk" in capsys.readouterr().err


def test_python_dash_m_and_version():
    out = subprocess.run([sys.executable, "-m", "bayes_risk", "--version"], capture_output=True,
                         text=True, check=True, cwd="/")
    assert out.stdout.strip().startswith("bayes-risk 0.")


def test_user_error_is_one_line_without_traceback(tmp_path):
    out = subprocess.run(
        [sys.executable, "-m", "bayes_risk", "utility", str(tmp_path / "missing.csv"),
         str(tmp_path / "syn.csv"), "--out", str(tmp_path / "o")],
        capture_output=True, text=True, cwd="/",
    )
    assert out.returncode == 2
    lines = [ln for ln in out.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "missing.csv" in lines[0] and "Traceback" not in out.stderr
    assert not (tmp_path / "o").exists()


# ----------------------------------------------------------------------------- start-up
#: libraries that building the parser (``--help``) must not import (issue 15: start-up)
HEAVY = ("pandas", "numpy", "numba", "scipy", "pymc", "arviz", "matplotlib", "pyarrow",
         "xarray", "sklearn", "bayes_risk.models")


def test_building_the_parser_imports_nothing_heavy():
    """In a fresh interpreter, the parser and every ``--help`` leave the heavy libraries
    unimported; so do the sub-commands' declaration modules (their runs are imported only
    when they run)."""
    code = (
        "import contextlib, io, sys\n"
        "from bayes_risk.cli import SUBCOMMANDS, build_parser, main\n"
        "build_parser()\n"
        "for argv in ([], *([c] for c in SUBCOMMANDS)):\n"
        "    with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):\n"
        "        main([*argv, '--help'])\n"
        f"heavy = [m for m in {HEAVY!r} if m in sys.modules]\n"
        "runs = [c for c in SUBCOMMANDS if 'bayes_risk.cli.' + c in sys.modules]\n"
        "print(heavy, runs)\n"
    )
    out = subprocess.run([sys.executable, "-P", "-c", code], capture_output=True, text=True,
                         cwd="/", check=True)
    assert out.stdout.strip() == "[] []", out.stdout + out.stderr


@pytest.mark.parametrize("name", ["utility", "membership", "original_risk", "attacks",
                                  "orders", "disclosure", "remedy"])
def test_every_row_of_the_runner_names_a_function_that_takes_its_arguments(name):
    """A ``Run`` row names its library function as a string (the parser imports no engine):
    the function exists, and takes the row's inputs, reads, spec and argument-group keywords
    by name (a spec of an argument group: a keyword of that group's function)."""
    import importlib
    import inspect

    from bayes_risk.cli._runner import _READS

    row = importlib.import_module(f"bayes_risk.cli.parsers.{name}").RUN
    module, _, function = row.function.partition(":")
    params = inspect.signature(getattr(importlib.import_module(module), function)).parameters
    names = [*({"original", "synthetic"} & set(row.inputs)),
             *((_READS[r] if isinstance(r, str) else r)[0] for r in row.reads),
             *(k.partition(".")[0] for k in row.specs), *row.argument_groups]
    assert set(names) <= set(params), set(names) - set(params)
    for key in row.specs:  # "group.keyword": a keyword of the group's function
        group, _, keyword = key.partition(".")
        if keyword:
            module, _, function = row.argument_groups[group].partition(":")
            assert keyword in inspect.signature(
                getattr(importlib.import_module(module), function)).parameters, key


def test_a_run_imports_only_its_own_module(tmp_path):
    """``bayes-risk utility`` imports its own code (its parser, whose row the runner runs), not
    the other sub-commands' (nor,
    through them, the Bayesian models), nor the libraries its default pMSE and interval overlap
    do not use: scipy.stats (its t, normal, chi-square and F values come from scipy.special),
    scikit-learn (CART propensity only), statsmodels (--formula only) and the rest (issue 49:
    half a second of start-up)."""
    import pandas as pd

    df = pd.DataFrame({"a": [1, 2, 1, 2, 1, 2, 1, 2], "x": [1.0, 2, 3, 4, 5, 6, 7, 8]})
    df.to_csv(tmp_path / "o.csv", index=False)
    df.assign(x=df.x[::-1].to_numpy()).to_csv(tmp_path / "s.csv", index=False)
    code = (
        "import contextlib, io, sys\n"
        "from bayes_risk.cli import SUBCOMMANDS, main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    assert main(['utility', 'o.csv', 's.csv', '--categorical', 'a', '--max-order',\n"
        "                 '0', '-q', '--out', 'u']) == 0\n"
        "print([c for c in SUBCOMMANDS if {'bayes_risk.cli.' + c, 'bayes_risk.cli.parsers.' + c}\n"
        "       & set(sys.modules)],\n"
        "      [m for m in ('pymc', 'arviz', 'bayes_risk.models', 'scipy.stats', 'sklearn',\n"
        "                   'statsmodels', 'numba', 'matplotlib', 'dask', 'xarray')\n"
        "       if m in sys.modules])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=tmp_path, check=True)
    assert out.stdout.strip() == "['utility'] []", out.stdout + out.stderr


#: the probabilistic-programming stack, which only ``fit`` of a PyMC model and the models
#: written in PyMC use
PYMC = ("pymc", "pytensor", "arviz")
#: per command run on a small table: its arguments, and the libraries its path never uses
#: (issues 69 and 88: a command's fixed cost is what it imports)
NEVER_USED = {
    "identification": (
        ["o.csv", "s.csv", "--known-unsynthesized", "a", "--known-synthesized", "x",
         "--categorical", "a", "--radius", "0.1"],
        (*PYMC, "arviz_base", "xarray", "h5netcdf", "sklearn", "scipy.stats", "statsmodels",
         "matplotlib", "dask", "bayes_risk.models")),
    "utility": (
        ["o.csv", "s.csv", "--categorical", "a", "b", "--max-order", "0"],
        (*PYMC, "arviz_base", "xarray", "h5netcdf", "sklearn", "numba", "scipy.stats",
         "statsmodels", "matplotlib", "dask", "bayes_risk.models")),
    # CART's compiled routing (numba) is used from 50,000 records a call on
    "synthesize": (
        ["o.csv", "--method", "cart", "--synthesize", "x", "--categorical", "a", "b", "-m", "2",
         "--random-seed", "1"],
        (*PYMC, "arviz_base", "xarray", "h5netcdf", "statsmodels", "matplotlib", "dask",
         "bayes_risk.models.dpmpm")),
    # xarray imported dask and dask.distributed on its own when installed (0.4-0.9 s CPU)
    "fit": (
        ["o.csv", "--method", "dpmpm", "--categorical", "a", "b", "--components", "2",
         "--tune", "5", "--draws", "5", "--chains", "1", "--random-seed", "1"],
        (*PYMC, "sklearn", "statsmodels", "matplotlib", "dask", "distributed")),
}


@pytest.mark.parametrize("command", NEVER_USED)
def test_a_command_imports_nothing_its_path_never_uses(command, tmp_path):
    """``identification``, ``utility``, CART ``synthesize`` and DPMPM ``fit`` run in a fresh
    interpreter leave unimported the other sub-commands' runs and the libraries their path
    never uses (fails if, e.g., ``identification`` or ``utility`` imports PyMC, PyTensor or
    scikit-learn)."""
    import pandas as pd

    df = pd.DataFrame({"a": [1, 2, 1, 2, 1, 2, 1, 2] * 3, "b": [1, 1, 2, 2] * 6,
                       "x": [1.0, 2, 3, 4, 5, 6, 7, 8] * 3})
    df.to_csv(tmp_path / "o.csv", index=False)
    df.assign(x=df.x[::-1].to_numpy()).to_csv(tmp_path / "s.csv", index=False)
    args, never = NEVER_USED[command]
    code = (
        "import contextlib, io, sys, warnings\n"
        "from bayes_risk.cli import SUBCOMMANDS, main\n"
        "with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():\n"
        "    warnings.simplefilter('ignore')\n"
        f"    assert main([{command!r}, *{args!r}, '-q', '--out', 'out']) == 0\n"
        "print([c for c in SUBCOMMANDS if {'bayes_risk.cli.' + c, 'bayes_risk.cli.parsers.' + c}\n"
        "       & set(sys.modules)],\n"
        f"      [m for m in {never!r} if m in sys.modules])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=tmp_path, check=True)
    # synthesize reads its model options with fit's parser of them (no library of its own)
    runs = sorted({command, "fit"} if command == "synthesize" else {command})
    assert out.stdout.strip() == f"{runs!r} []", out.stdout + out.stderr


#: run in a fresh interpreter after a command: the package's compiled kernels (numba
#: dispatchers) loaded by the run, and those of the same modules left unloaded
_LOADED_KERNELS = """
import contextlib, io, json, sys, warnings
from bayes_risk.cli import main
from bayes_risk.identification import engine
engine.USE_NUMBA = True  # the compiled path of large problems, on a small one
with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
    warnings.simplefilter('ignore')
    assert main(sys.argv[1:] + ['-q', '--out', 'out']) == 0
from numba.core.registry import CPUDispatcher
loaded, idle = [], []
for name, mod in list(sys.modules.items()):
    for attr, obj in list(vars(mod).items()) if name.startswith('bayes_risk') else ():
        if isinstance(obj, CPUDispatcher) and obj.__module__ == name:
            (loaded if obj.overloads else idle).append(name + '.' + attr)
print(json.dumps([sorted(loaded), sorted(idle)]))
"""

#: the kernels each path may run (``identification`` per dataset: the index's build, the
#: windows' slices, their scan or count; DPMPM ``fit``: the Gibbs sweep's calls)
PATH_KERNELS = {
    "identification": ("bayes_risk.identification._kernels.",),
    "fit": ("bayes_risk.models.dpmpm.", "bayes_risk.models._bayesian."),
}


@pytest.mark.parametrize("command", PATH_KERNELS)
def test_compiled_kernels_are_loaded_only_for_the_path_that_runs_them(command, tmp_path):
    """numba loads a kernel from its cache at the kernel's first call: a run loads the kernels
    of its own path only, and not all of them (fails if a module loads or checks kernels
    at import or set-up, or a path calls another path's kernels; issue 88)."""
    import json

    import pandas as pd

    df = pd.DataFrame({"a": [1, 2, 1, 2, 1, 2, 1, 2] * 3, "b": [1, 1, 2, 2] * 6,
                       "x": [1.0, 2, 3, 4, 5, 6, 7, 8] * 3})
    df.to_csv(tmp_path / "o.csv", index=False)
    df.assign(x=df.x[::-1].to_numpy()).to_csv(tmp_path / "s.csv", index=False)
    args = (["identification", "o.csv", "s.csv", "--known-unsynthesized", "a",
             "--known-synthesized", "x", "--categorical", "a", "--radius", "0.1",
             "--aggregation", "per-dataset"] if command == "identification" else
            ["fit", *NEVER_USED["fit"][0]])
    out = subprocess.run([sys.executable, "-c", _LOADED_KERNELS, *args], capture_output=True,
                         text=True, cwd=tmp_path, check=True)
    loaded, idle = json.loads(out.stdout.strip().splitlines()[-1])
    assert loaded, out.stderr
    assert [k for k in loaded if not k.startswith(PATH_KERNELS[command])] == []
    assert idle  # the path's modules hold kernels it did not run: they stay unloaded


# ----------------------------------------------------------------------------- consistency
def _subparsers():
    import argparse

    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return sub.choices


def test_user_facing_text_cites_no_internal_document():
    """Help texts cite papers, equations or the package's docs, never a developers' file."""
    import re

    texts = [build_parser().format_help()] + [p.format_help() for p in _subparsers().values()]
    for text in texts:
        # output files such as report.md are fine; the developers' documents are not
        assert not re.search(r"\bSPEC\b|\bSTYLE\b|\bBRIEF\b|§\s*R\d", text), text[:200]


def test_one_name_for_one_thing():
    """``--model`` is a fitted-model folder wherever it is shown, ``--method`` a model type,
    ORIGINAL the confidential table (a positional argument), and ``--records`` has one
    syntax (0-based record numbers)."""
    from bayes_risk._specs import RECORDS_HELP

    for name, p in _subparsers().items():
        shown = {o: a for a in p._actions if a.help != "==SUPPRESS==" for o in a.option_strings}
        if "--model" in shown:
            assert shown["--model"].metavar == "DIR", name
        if "--records" in shown:
            assert RECORDS_HELP in shown["--records"].help, name
        positional = [a.metavar for a in p._actions if not a.option_strings]
        if positional and name not in ("demo",):
            assert positional[0] == "ORIGINAL", name
        assert "--model-dir" not in shown and "--original" not in shown, name
    # fit --method takes any registered synthesizer (entry points, bayes_risk.registry): no
    # fixed choices; the help names the group, and fit's help the registered ones
    fit = _subparsers()["fit"]
    method = fit._option_string_actions["--method"]
    assert method.metavar == "NAME" and method.choices is None
    assert "bayes_risk.synthesizers" in method.help
    text = " ".join(fit.format_help().split())
    assert all(m in text for m in ("dpmpm", "cart", "Registered models (--method)"))


@pytest.mark.parametrize("argv", [
    ["fit", "d.csv", "--model", "dpmpm", "--out", "o"],
    ["synthesize", "--model-dir", "m", "--out", "o"],
    ["attribute", "--original", "o.csv", "--synthetic", "s1", "s2", "--out", "o"],
])
def test_pre_release_spellings_are_usage_errors(argv):
    # 0.1.0 was never released: the old option spellings have no deprecation path
    with pytest.raises(SystemExit) as exc:
        build_parser().parse_args(argv)
    assert exc.value.code == 2
