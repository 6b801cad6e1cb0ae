"""Whole commands as users run them: the rows of the benchmarks README's table against the R
packages (``VersusR``), ``bayes-risk audit`` of a CART release (CEdata, m = 20), and
``bayes-risk identification`` per dataset at 10⁶ records (``IdentificationMillionPerDataset``).
``VersusR.track_command_cpu`` is the median CPU seconds (user + system) of five fresh processes of
the command, the figure paired with the R package's call in the README; ``VersusR.peakmem_command``
is the peak memory of the same command run in the benchmark's process (``bayes_risk.cli.main``), its
set-up included. ``FixedCost.track_fixed_cpu`` is a command's fixed cost (issue 69): the command run
twice in one fresh process, the first run with the interpreter's start less the second;
``FixedCost.track_work_cpu`` the second run. The inputs are the README's: the scenario-4 CART
release written by ``bayes-risk synthesize`` as CSV files, and CEdata and the releases stacked 4 or
16 times (copies of the real files, named so); without the shared data the benchmark is skipped.
"""

from __future__ import annotations

import contextlib
import io
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import warnings

from ._data import CATEGORICAL, CE_PATH, KNOWN, SCENARIO1, SHARED_DATA, SYNTHESIZED, ce

NY_PATH = SHARED_DATA / "NYexample_X.csv"
NY_COLUMNS = ["OWNERSHP", "MORTGAGE", "AGE", "SEX", "MARST", "RACESING", "EDUC", "EMPSTAT",
              "DISABWRK", "VETSTAT"]
IDENTIFICATION = ["--known-unsynthesized", *KNOWN, "--known-synthesized", *SYNTHESIZED,
                  "--categorical", *CATEGORICAL, "--radius", "0.1", "--compat",
                  "IdentificationRiskCalculation"]
CART = ["--method", "cart", "--synthesize", *SYNTHESIZED, "--categorical", *CATEGORICAL]
PMSE = ["--categorical", *CATEGORICAL, "--pmse", "logit", "--max-order", "0"]
DPMPM = ["--method", "dpmpm", "--categorical", *NY_COLUMNS, "--components", "80", "--tune",
         "500", "--draws", "500", "--chains", "1", "--random-seed", "1"]
#: the README's rows: (sub-command, input, stacked copies, m)
ROWS = {
    "identification, m = 20": ("identification", "scenario 4", 1, 20),
    "identification, m = 5": ("identification", "scenario 4", 1, 5),
    "identification 4x stacked, m = 5": ("identification", "scenario 4", 4, 5),
    "CART, m = 20": ("synthesize", "CEdata", 1, 20),
    "CART 16x stacked, m = 5": ("synthesize", "CEdata", 16, 5),
    "pMSE logit, m = 20": ("utility", "scenario 1", 1, 20),
    "pMSE logit 16x stacked, m = 5": ("utility", "scenario 1", 16, 5),
    "DPMPM NYexample, K = 80": ("fit", "NYexample", 1, 1),
    "--help": ("--help", None, 1, 0),
}


def _stacked(path, k: int, out: str) -> str:
    """``path`` (CSV or Parquet) written ``k`` times over, one header, as the CSV ``out``."""
    import pandas as pd

    df = pd.read_parquet(path) if str(path).endswith(".parquet") else pd.read_csv(path)
    pd.concat([df] * k, ignore_index=True).to_csv(out, index=False)
    return out


def _fresh_cpu(argv: list[str]) -> float:
    """CPU seconds (user + system, all threads) of ``bayes-risk argv`` in a fresh process."""
    return _fresh_cpu_of([sys.executable, "-m", "bayes_risk", *argv])


def _fresh_cpu_of(command: list[str]) -> float:
    """CPU seconds (user + system, all threads) of ``command`` in a fresh process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(command, check=True, capture_output=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime


class VersusR:
    """The README's commands paired with the R packages (bayes-risk's side): identification of
    the scenario-4 release, CART synthesis, pMSE of scenario 1, the DPMPM fit of NYexample
    (one chain of 1,000 sweeps), ``--help``."""

    params = (list(ROWS),)
    param_names = ["row"]
    number = 1
    repeat = 1
    timeout = 900

    def setup(self, row):
        command, data, k, m = ROWS[row]
        if data == "NYexample" and not NY_PATH.is_file():
            raise NotImplementedError(f"{NY_PATH} is needed (the shared data); skipped")
        if data == "scenario 1" and not SCENARIO1.is_dir():
            raise NotImplementedError(f"{SCENARIO1} is needed (the shared data); skipped")
        if data is not None and data != "NYexample":
            ce()  # NotImplementedError (asv: skipped) without CEdata
        self.tmp = tmp = tempfile.mkdtemp()
        out = ["--quiet", "--overwrite", "--out", os.path.join(tmp, "out")]
        orig = str(CE_PATH) if k == 1 else _stacked(CE_PATH, k, os.path.join(tmp, "orig.csv"))
        if data == "scenario 4":  # the release as the README makes it, then as CSV files
            subprocess.run([sys.executable, "-m", "bayes_risk", "synthesize", str(CE_PATH), *CART,
                            "-m", "20", "--random-seed", "2021", "--quiet", "--out",
                            os.path.join(tmp, "s4")], check=True, capture_output=True)
            syn = [_stacked(os.path.join(tmp, "s4", f"syn_{i:03d}.parquet"), k,
                            os.path.join(tmp, f"syn{i}.csv")) for i in range(1, m + 1)]
            self.argv = [command, orig, *syn, *IDENTIFICATION, *out]
        elif data == "scenario 1":
            syn = [str(SCENARIO1 / f"scenario1_syn{i}.csv") for i in range(1, m + 1)]
            if k > 1:
                syn = [_stacked(p, k, os.path.join(tmp, f"syn{i}.csv"))
                       for i, p in enumerate(syn, start=1)]
            self.argv = [command, orig, *syn, *PMSE, *out]
        elif data == "CEdata":
            self.argv = [command, orig, *CART, "-m", str(m), "--random-seed", "1", *out]
        elif data == "NYexample":
            self.argv = [command, str(NY_PATH), *DPMPM, *out]
        else:
            self.argv = [command]

    def teardown(self, row):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def track_command_cpu(self, row):
        # the median of five: the machine may be shared
        return sorted(_fresh_cpu(self.argv) for _ in range(5))[2]

    track_command_cpu.unit = "seconds"

    def peakmem_command(self, row):
        from bayes_risk.cli import main as cli

        with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()), \
                contextlib.redirect_stderr(io.StringIO()), contextlib.suppress(SystemExit):
            warnings.simplefilter("ignore")
            cli(self.argv)


class Audit:
    """``bayes-risk audit``: utility, identification with the radius sweep (intruder knows Age,
    Urban, Marital), the CART plug-in attribute risk of records 0-499, synthpop's measures for
    Income, HTML and Markdown reports (the full audit of all 5,571 records is goal 5: ≤ 90 s;
    ``asv run -b Audit`` with ``BAYES_RISK_AUDIT_RECORDS=all``)."""

    number = 1
    timer = time.process_time  # CPU seconds of all threads: the machine may be shared
    repeat = (1, 3, 300.0)
    timeout = 900

    def setup(self):
        from bayes_risk.cli import main as cli

        ce()  # skipped without the shared data (a stand-in would be timed under its name)
        self.tmp = tempfile.mkdtemp()
        orig = str(CE_PATH)
        self.orig, self.syn = orig, os.path.join(self.tmp, "release")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            assert cli(["synthesize", orig, "--method", "cart", "--synthesize", *SYNTHESIZED,
                        "--categorical", *CATEGORICAL, "Educ", "-m", "20", "--random-seed", "1",
                        "--quiet", "--out", self.syn]) == 0

    def teardown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def time_audit(self):
        from bayes_risk.cli import main as cli

        records = os.environ.get("BAYES_RISK_AUDIT_RECORDS", "0-499")
        argv = ["audit", self.orig, self.syn, "--known", "Age", "Urban", "Marital", "--target",
                "Income", "--random-seed", "2", "--quiet", "--overwrite", "--out",
                os.path.join(self.tmp, "audit")]
        if records != "all":
            argv += ["--records", records]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            assert cli(argv) == 0


class AuditScale:
    """The README's audit at agency scale (issue 70): a CE-like table of ``n`` records
    (``make_ce_like(n, random_seed=1)``), the CART release of Tenure, Expenditure and Income
    (m = 5), ``audit(..., known=["Age", "Urban", "Marital", "Income"])`` with its defaults and no
    files. Goal at 10⁵ records: ≤ 15 min CPU and ≤ 4 GB (the figures of each size and step are
    in the benchmarks README)."""

    params = ([5_000, 20_000, 50_000, 100_000],)
    param_names = ["n"]
    number = 1
    timer = time.process_time  # CPU seconds of all threads: the machine may be shared
    repeat = (1, 1, 3600.0)
    timeout = 7200

    def setup(self, n):
        import bayes_risk as br
        from bayes_risk.models import CARTSynthesizer

        self.ce = br.make_ce_like(n, random_seed=1)
        schema = br.infer_schema(self.ce, categorical=["Urban", "Marital", "Tenure"])
        cart = CARTSynthesizer().fit(self.ce, schema=schema,
                                     synthesized=["Tenure", "Expenditure", "Income"],
                                     random_seed=1)
        self.release = cart.synthesize(5, random_seed=2)

    def _run(self):
        import bayes_risk as br

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            br.audit(self.ce, self.release, known=["Age", "Urban", "Marital", "Income"],
                     random_seed=3, progressbar=False)

    def time_audit(self, n):
        self._run()

    def peakmem_audit(self, n):
        self._run()


class AuditScaleDask(AuditScale):
    """The audit of :class:`AuditScale` at 10⁶ records on a local Dask cluster (issue 70, item
    3): a ``LocalCluster`` of two worker processes of one thread each, ``audit(executor=
    client)``. Timed by the wall clock (the work is in the workers); ``peakmem`` is the driver's.
    Each worker's CPU and peak memory per step: ``python benchmarks/audit_dask.py 1000000``."""

    params = ([1_000_000],)
    param_names = ["n"]
    timer = time.perf_counter
    timeout = 4 * 3600

    def setup(self, n):
        import distributed

        super().setup(n)
        self.cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1,
                                                processes=True, dashboard_address=None)
        self.client = distributed.Client(self.cluster)

    def teardown(self, n):
        self.client.close()
        self.cluster.close()

    def _run(self):
        import bayes_risk as br

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            br.audit(self.ce, self.release, known=["Age", "Urban", "Marital", "Income"],
                     random_seed=3, progressbar=False,
                     settings=br.AuditSettings(executor=self.client))

    def time_audit(self, n):
        self._run()

    def peakmem_audit(self, n):
        self._run()


#: the fixed cost's rows (issue 69): the commands of ``VersusR`` whose start-up the issue measured
FIXED_ROWS = ["identification, m = 20", "CART, m = 20", "pMSE logit, m = 20",
              "DPMPM NYexample, K = 80"]
#: the libraries each row's work calls (issue 88: the floor its fixed cost is measured against):
#: the tables (pandas, with numpy and pyarrow), CART's trees, the pMSE's t quantiles and BLAS
#: threads, the DPMPM's compiled sweep, ESS and R-hat and NetCDF writer
FLOOR_IMPORTS = {
    "identification, m = 20": "import pandas",
    "CART, m = 20": "import pandas, sklearn.tree",
    "pMSE logit, m = 20": "import pandas, scipy.special, threadpoolctl",
    "DPMPM NYexample, K = 80": "import pandas, numba, scipy.stats, arviz_stats, xarray, h5netcdf",
}

#: run in a fresh interpreter: the command twice, then the process's CPU seconds (user + system,
#: the interpreter's start included) after the first run and the second run's alone
_TWICE = """
import contextlib, io, resource, sys, warnings
from bayes_risk.cli import main

def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime

marks = []
for _ in range(2):
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()), \\
            contextlib.redirect_stderr(io.StringIO()):
        warnings.simplefilter("ignore")
        assert main(sys.argv[1:]) == 0
    marks.append(cpu())
print(marks[0], marks[1] - marks[0])
"""


class FixedCost:
    """The fixed cost of a command: the command run twice in one fresh process; the first run
    (with the interpreter's start) less the second, which pays no imports, no compiled-kernel
    loads and no one-off set-up, only the work. The median of three processes.
    ``track_floor_cpu``: ``python -c "import <the libraries the work calls>"``
    (:data:`FLOOR_IMPORTS`), run in turn with them; ``track_above_floor_cpu``: the fixed cost
    less the floor, pair by pair (issue 88: at most 0.25 s)."""

    params = (FIXED_ROWS,)
    param_names = ["row"]
    number = 1
    repeat = 1
    timeout = 900
    setup = VersusR.setup  # the same inputs and command lines as the README's rows
    teardown = VersusR.teardown

    def _runs(self, row) -> list[tuple[float, float, float]]:
        """Three processes' (first run with the interpreter's start, second run) CPU seconds,
        each beside a process importing the row's libraries (its CPU seconds)."""
        key = tuple(self.argv)
        if getattr(self, "_measured", (None,))[0] != key:
            runs = []
            for _ in range(3):
                out = subprocess.run([sys.executable, "-c", _TWICE, *self.argv], check=True,
                                     capture_output=True, text=True)
                first, second = map(float, out.stdout.split())
                floor = _fresh_cpu_of([sys.executable, "-c", FLOOR_IMPORTS[row]])
                runs.append((first, second, floor))
            self._measured = (key, runs)
        return self._measured[1]

    def track_fixed_cpu(self, row):
        fixed = sorted(first - second for first, second, _ in self._runs(row))
        return fixed[len(fixed) // 2]

    track_fixed_cpu.unit = "seconds"

    def track_work_cpu(self, row):
        work = sorted(second for _, second, _ in self._runs(row))
        return work[len(work) // 2]

    track_work_cpu.unit = "seconds"

    def track_floor_cpu(self, row):
        floor = sorted(f for _, _, f in self._runs(row))
        return floor[len(floor) // 2]

    track_floor_cpu.unit = "seconds"

    def track_above_floor_cpu(self, row):
        above = sorted(first - second - f for first, second, f in self._runs(row))
        return above[len(above) // 2]

    track_above_floor_cpu.unit = "seconds"


class IdentificationMillionPerDataset:
    """``bayes-risk identification`` per dataset at 10⁶ records, m = 5 (issue 88 item 3: 1.5x
    less CPU and peak memory than ``7c1914f3``, ``asv continuous 7c1914f3 HEAD``): the CSV
    files of ``identification._large(10**6, 5)``, three categorical
    known columns and a percentage radius of 0.05 on the two synthesized ones, as the README's
    row. ``track_command_cpu``: CPU seconds of a fresh process (all threads);
    ``track_command_peak_mb``: its peak resident memory (MB, 10⁶ bytes)."""

    number = 1
    repeat = 1
    timeout = 900

    def setup(self):
        from .identification import _large

        self.tmp = tmp = tempfile.mkdtemp()
        y, syn = _large(1_000_000, 5)
        files = [os.path.join(tmp, "orig.csv")]
        y.to_csv(files[0], index=False)
        for i, z in enumerate(syn, start=1):
            files.append(os.path.join(tmp, f"syn{i}.csv"))
            z.to_csv(files[-1], index=False)
        keys = ["region", "hhsize", "sex"]
        self.argv = ["identification", *files, "--known-unsynthesized", *keys,
                     "--known-synthesized", "income", "expend", "--categorical", *keys,
                     "--radius", "income=0.05", "--radius", "expend=0.05", "--radius-type",
                     "percentage", "--aggregation", "per-dataset", "--quiet", "--overwrite",
                     "--out", os.path.join(tmp, "out")]

    def teardown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def track_command_cpu(self):
        return _fresh_cpu(self.argv)

    track_command_cpu.unit = "seconds"

    def track_command_peak_mb(self):
        _fresh_cpu(self.argv)
        # ru_maxrss: KiB on Linux, the largest of the children waited for (this one alone)
        return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024 / 1e6

    track_command_peak_mb.unit = "MB"
