"""Whole commands: ``bayes-risk audit`` of a CART release (CEdata, m = 20) and the start-up of
``bayes-risk --help``."""

from __future__ import annotations

import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import warnings

from ._data import CATEGORICAL, CE_PATH, SYNTHESIZED, ce


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


class StartUp:
    """CPU seconds of ``bayes-risk --help`` in a fresh process (goal: ≤ 0.15 s)."""

    number = 1
    repeat = 1

    def track_help_cpu(self):
        runs = []
        for _ in range(5):
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            subprocess.run([sys.executable, "-m", "bayes_risk", "--help"], check=True,
                           capture_output=True)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            runs.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
        return sorted(runs)[len(runs) // 2]

    track_help_cpu.unit = "seconds"
