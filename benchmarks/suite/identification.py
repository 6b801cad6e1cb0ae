"""Identification risk: CEdata with m = 5 and 20 (Hornby & Hu's scenario 4, compat mode), and a
large file (100,000 records, m = 5) per dataset and pooled."""

from __future__ import annotations

import time
import warnings

import numpy as np
import pandas as pd

from bayes_risk import MatchSpec

from ._data import CATEGORICAL, KNOWN, SYNTHESIZED, cart_release, ce


class IdentificationCEdata:
    """``identification_risk`` as the R package IdentificationRiskCalculation computes it
    (percentage radius 0.1, per dataset). The whole command beside the R package is
    ``bench_identification_cli.py``."""

    params = ([5, 20],)
    param_names = ["m"]
    number = 1
    timer = time.process_time  # CPU seconds of all threads: the machine may be shared
    repeat = (3, 10, 30.0)

    def setup(self, m):
        self.df = ce()
        self.syn = cart_release(20)[:m]
        self._run()  # the numba kernels loaded from their cache before timing

    def _run(self):
        from bayes_risk.identification import identification_risk

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return identification_risk(
                self.df, self.syn, known=[*KNOWN, *SYNTHESIZED], synthesized=SYNTHESIZED,
                categorical=CATEGORICAL,
                match=MatchSpec(radius=0.1, compat="IdentificationRiskCalculation"),
                progressbar=False)

    def time_identification(self, m):
        self._run()

    def peakmem_identification(self, m):
        self._run()


def _large(n: int, m: int, seed: int = 1) -> tuple[pd.DataFrame, list[pd.DataFrame]]:
    """Three categorical known columns (10 x 8 x 5 levels), two continuous synthesized ones
    (synthetic = original x log-normal noise, sd 0.1)."""
    rng = np.random.default_rng(seed)
    y = pd.DataFrame({"region": rng.integers(0, 10, n), "hhsize": rng.integers(0, 8, n),
                      "sex": rng.integers(0, 5, n)})
    inc = rng.lognormal(10.5, 1.0, n)
    y["income"] = inc.round(0)
    y["expend"] = (inc**0.6 * rng.lognormal(0, 0.5, n)).round(2)
    syn = [y.assign(income=(y["income"] * rng.lognormal(0, 0.1, n)).round(0),
                    expend=(y["expend"] * rng.lognormal(0, 0.1, n)).round(2)) for _ in range(m)]
    return y, syn


class IdentificationLarge:
    """100,000 records, m = 5, percentage radius 0.05; pooled without the fallback to the
    unsynthesized key (with it every unmatched target would have thousands of candidates)."""

    params = (["per_dataset", "pooled"],)
    param_names = ["aggregation"]
    number = 1
    timer = time.process_time  # CPU seconds of all threads: the machine may be shared
    repeat = (1, 3, 60.0)
    timeout = 300

    def setup(self, aggregation):
        self.y, self.syn = _large(100_000, 5)

    def _run(self, aggregation):
        from bayes_risk.identification import identification_risk

        keys = ["region", "hhsize", "sex"]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            identification_risk(self.y, self.syn, known=[*keys, "income", "expend"],
                                synthesized=["income", "expend"], categorical=keys,
                                match=MatchSpec(radius=0.05, fallback="none"),
                                aggregation=aggregation,
                                progressbar=False)

    def time_identification(self, aggregation):
        self._run(aggregation)

    def peakmem_identification(self, aggregation):
        self._run(aggregation)


class KnownSweepCEdata:
    """``known_sweep`` pooled over the 32 subsets of Age, Urban, Marital, Income and Tenure,
    CEdata with a CART release (m = 20; Income within a 10 % percentage radius): issue 49's
    README case (it peaked at 13.5 GB; the goal is ≤ 2 GB)."""

    number = 1
    timer = time.process_time  # CPU seconds of all threads: the machine may be shared
    repeat = (1, 3, 120.0)
    timeout = 600

    def setup(self):
        self.df = ce()
        self.syn = cart_release(20)

    def _run(self):
        from bayes_risk.identification import known_sweep

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return known_sweep(self.df, self.syn,
                               candidates=["Age", "Urban", "Marital", "Income", "Tenure"],
                               synthesized=["Income", "Tenure"], categorical=CATEGORICAL,
                               match=MatchSpec(radius={"Income": 0.1}), progressbar=False)

    def time_known_sweep(self):
        self._run()

    def peakmem_known_sweep(self):
        self._run()
