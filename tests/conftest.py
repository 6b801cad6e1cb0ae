"""Test configuration: hypothesis profiles, a guard against use of numpy's global RNG, and the
order of the test files (longest first, from tests/durations.json)."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, settings

# tests/ helpers (e.g. tests/_shared.py) importable under --import-mode=importlib
sys.path.insert(0, str(Path(__file__).resolve().parent))

settings.register_profile(
    # derandomized: `make test` (CI) gives the same examples on every run; "deep" explores
    "fast", max_examples=25, deadline=None, derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile(
    "deep", max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "fast"))

# Numba threads in the parent process make forked PyMC chains abort unless the workqueue layer
# is used (platform fact recorded in issue 4).
os.environ.setdefault("NUMBA_THREADING_LAYER", "workqueue")

# Under pytest-xdist every worker gets its share of the cores for BLAS, as scikit-learn's
# conftest does: two workers on two cores, each running OpenBLAS with two spinning threads,
# spend much of the suite's CPU time waiting. The environment variable carries the limit to
# the processes the tests start (CLI runs, the docs build's kernels), so that a subprocess
# computes what the test process computes.
_XDIST_WORKERS = os.environ.get("PYTEST_XDIST_WORKER_COUNT")
if _XDIST_WORKERS:
    from threadpoolctl import threadpool_limits

    _BLAS_THREADS = str(max((os.cpu_count() or 1) // int(_XDIST_WORKERS), 1))
    os.environ.setdefault("OPENBLAS_NUM_THREADS", _BLAS_THREADS)
    threadpool_limits(int(os.environ["OPENBLAS_NUM_THREADS"]), user_api="blas")

# The interrupt tests need Ctrl-C to behave as in a terminal. A suite started as a background
# job of a script inherits an ignored SIGINT, which bayes-risk rightly leaves ignored; restore
# Python's own handler here (children started by the tests then get the default action).
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture(autouse=True)
def _check_global_rng_untouched():
    """Fail any test that draws from numpy's global RNG (statsmodels' guard, STYLE.md R7)."""
    state = np.random.get_state()[1].copy()
    yield
    assert np.array_equal(state, np.random.get_state()[1]), (
        "test changed numpy's global random state; pass random_seed/rng explicitly"
    )


@pytest.fixture(autouse=True)
def _close_pyplot_figures():
    """Close the pyplot figures a test opened (``result.plot()`` without ``ax`` draws on
    pyplot's current figure, as pandas and ArviZ do), as statsmodels' suite does: the next test
    starts without a current figure and pyplot never holds more than a test's figures."""
    yield
    plt = sys.modules.get("matplotlib.pyplot")
    if plt is not None:
        plt.close("all")


def shared_artefact(tmp_path_factory, name: str, build) -> Path:
    """The folder ``name`` made by ``build(folder)`` once per test run, shared by the files
    (and the pytest-xdist workers) that use it: an expensive artefact (a release and its audit)
    is built by the first worker that asks for it while the others wait on a lock, as
    pytest-xdist's documentation shares session data. Under xdist the folder sits beside the
    workers' temporary folders (one run's, never another run's); without xdist in this run's
    own. A folder is used only once ``build`` returned (the ``.done`` mark), so an interrupted
    build is made again, never read."""
    from filelock import FileLock

    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent
    folder, done = base / name, base / f"{name}.done"
    with FileLock(str(base / f"{name}.lock")):
        if not done.is_file():
            if folder.exists():
                import shutil

                shutil.rmtree(folder)
            folder.mkdir(parents=True)
            build(folder)
            done.touch()
    return folder


def _build_ce_audit_with_holdout(d: Path) -> None:
    import warnings

    import bayes_risk as br
    from bayes_risk.cli import main

    table = br.make_ce_like(360, random_seed=1)
    table.iloc[:240].to_csv(d / "ce.csv", index=False)
    table.iloc[240:].to_csv(d / "holdout.csv", index=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert main(["synthesize", str(d / "ce.csv"), "--method", "cart", "--synthesize",
                     "Tenure", "Expenditure", "Income", "--categorical", *CE_CATEGORICAL,
                     "-m", "2", "--random-seed", "1", "--out", str(d / "syn"), "--quiet"]) == 0
        assert main(["audit", str(d / "ce.csv"), str(d / "syn"), "--known", "Age", "Urban",
                     "Marital", "Income", "--holdout", str(d / "holdout.csv"), "--records",
                     "0-19", "--random-seed", "2", "--out", str(d / "audit"), "--quiet"]) == 0


#: the categorical columns of the CE-like demo table
CE_CATEGORICAL = ("Urban", "Marital", "Tenure")


@pytest.fixture(scope="session")
def ce_audit_with_holdout(tmp_path_factory) -> Path:
    """A CE-like table (the first 240 of 360 records; the other 120 a holdout, ``ce.csv`` and
    ``holdout.csv``), its CART release (Tenure, Expenditure and Income synthesized, m = 2:
    ``syn/``) and the audit of Hornby & Hu's intruder (Age, Urban, Marital and Income known)
    with the holdout and 20 attribute records (``audit/``), built once per run for
    tests/auditing/test_worst_case.py and tests/test_units.py. Tests read it and write only
    into new sub-folders."""
    return shared_artefact(tmp_path_factory, "ce_audit_with_holdout",
                           _build_ce_audit_with_holdout)


#: seconds per test file measured by ``pytest --store-durations`` (a whole run of the suite);
#: ``pytest_collection_modifyitems`` hands the files out longest first
DURATIONS = Path(__file__).resolve().parent / "durations.json"


@pytest.fixture
def cli(capsys, monkeypatch):
    """``bayes-risk ARGV`` run in process in ``cwd`` (a subprocess would pay a fresh interpreter
    and its imports for each run; tests/cli/test_cli.py runs the real command): its exit code
    and printed text, as a ``subprocess.CompletedProcess``."""
    import subprocess

    from bayes_risk.cli import main

    def run(argv: list[str], cwd: Path) -> subprocess.CompletedProcess:
        monkeypatch.chdir(cwd)
        capsys.readouterr()
        try:
            rc = main(argv)
        except SystemExit as err:  # argparse usage errors
            rc = int(err.code or 0)
        out = capsys.readouterr()
        return subprocess.CompletedProcess(argv, rc, out.out, out.err)

    return run


def pytest_addoption(parser):
    parser.addoption(
        "--store-durations", action="store_true", default=False,
        help="write the seconds each test file took (setup, call and teardown of its tests) "
             "into tests/durations.json, which orders the files of the next runs; files not "
             "run keep their recorded figure",
    )


def _recorded_durations() -> dict[str, float]:
    import json

    try:
        return {str(k): float(v) for k, v in json.loads(DURATIONS.read_text())["files"].items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return {}  # no table (or a broken one): every file is estimated from its markers


def _file_of(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def pytest_collection_modifyitems(config, items):
    """Put the test files in decreasing order of their recorded duration.

    ``make test`` runs ``--dist loadfile --no-loadscope-reorder``: pytest-xdist hands whole
    files to the two workers in this order, so a long file that came last (the docs build, the
    ground-truth studies) would leave one worker idle while the other finishes it. Longest
    first is the classic greedy schedule (LPT). The durations are those measured by the last
    ``pytest --store-durations`` run (``tests/durations.json``); a file not in that table is
    estimated from its tests (10 s per ``slow`` test, 0.2 s per other test). The sort is stable
    (within a file and between files of equal weight the collection order is kept) and only
    reorders: every collected test still runs, and a random-order plugin may shuffle the
    result.
    """
    recorded = _recorded_durations()
    estimate: dict[str, float] = {}
    for item in items:
        f = _file_of(item.nodeid)
        slow = item.get_closest_marker("slow") is not None
        estimate[f] = estimate.get(f, 0.0) + (10.0 if slow else 0.2)
    weight = {f: recorded.get(f, est) for f, est in estimate.items()}
    items.sort(key=lambda it: -weight[_file_of(it.nodeid)])


_measured: dict[str, float] = {}


def pytest_runtest_logreport(report):
    # in the process that reports (the xdist controller, or the only process with -n 0)
    if report.when in ("setup", "call", "teardown"):
        f = _file_of(report.nodeid)
        _measured[f] = _measured.get(f, 0.0) + float(report.duration)


_CHECKOUT = Path(__file__).resolve().parent.parent
#: when this file was loaded, before any test (a session-start hook here would come too late:
#: pytest reads tests/conftest.py while collecting)
_STARTED = __import__("time").time()


def _checkout_kernels_compiled() -> list[str]:
    """The checkout's numba cache files written since the session began, when the suite tests
    the installed package: a subprocess (``python -c`` or a notebook kernel started in the
    checkout) then imported the checkout instead, which a fresh clone pays for by compiling
    every kernel it calls (20-35 s a test); run it with ``-P`` or outside the checkout."""
    import bayes_risk

    if Path(bayes_risk.__file__).resolve().parent == _CHECKOUT / "bayes_risk":
        return []  # the suite itself imports the checkout: its kernels are compiled there
    return sorted(str(f.relative_to(_CHECKOUT)) for d in ("bayes_risk", "models")
                  for f in (_CHECKOUT / d).rglob("__pycache__/*.nbi")
                  if f.stat().st_mtime >= _STARTED)


def pytest_sessionfinish(session, exitstatus):
    import json

    config = session.config
    if not hasattr(config, "workerinput") and (bad := _checkout_kernels_compiled()):
        sys.stderr.write("\nA test's subprocess imported the checkout, not the installed "
                         "package, and compiled its numba kernels there: "
                         f"{bad[:5]}{' ...' if len(bad) > 5 else ''} (tests/conftest.py, "
                         "_checkout_kernels_compiled)\n")
        session.exitstatus = 1
    if not config.getoption("--store-durations") or hasattr(config, "workerinput"):
        return  # not asked, or an xdist worker (the controller writes the table)
    files = {**_recorded_durations(), **{f: round(s, 1) for f, s in _measured.items()}}
    DURATIONS.write_text(json.dumps({
        "about": "seconds per test file (setup + call + teardown of its tests) from "
                 "`pytest --store-durations`; tests/conftest.py orders the files by them",
        "files": dict(sorted(files.items())),
    }, indent=1) + "\n")
