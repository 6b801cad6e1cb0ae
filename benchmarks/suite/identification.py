"""Identification risk: CEdata with m = 5 and 20 (Hornby & Hu's scenario 4, compat mode), a
large file (100,000 records, m = 5) per dataset and pooled, 10⁶ records pooled, the knowledge
sweep (against separate runs) and posterior replicates."""

from __future__ import annotations

import itertools
import time
import warnings

import numpy as np
import pandas as pd

from bayes_risk import MatchSpec

from ._data import CATEGORICAL, KNOWN, SYNTHESIZED, cart_release, ce


class IdentificationCEdata:
    """``identification_risk`` as the R package IdentificationRiskCalculation computes it
    (percentage radius 0.1, per dataset)."""

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


class IdentificationMillion:
    """10⁶ records, m = 5, pooled, as :class:`IdentificationLarge` (issue 49: ≤ 2 GB and
    ≤ 30 s CPU)."""

    number = 1
    timer = time.process_time  # CPU seconds of all threads: the machine may be shared
    repeat = (1, 2, 120.0)
    timeout = 900

    def setup(self):
        self.y, self.syn = _large(1_000_000, 5)

    def _run(self):
        IdentificationLarge._run(self, "pooled")

    def time_identification(self):
        self._run()

    def peakmem_identification(self):
        self._run()


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


class KnownSweepSeparate:
    """The knowledge sweep against separate runs (issue 33): per dataset, CEdata with a CART
    release (uniform donor, random descent; m = 20), 6 candidates (Age, Income and Expenditure
    within a 10 % percentage radius): ``known_sweep`` over the 64 subsets, or the 63
    ``identification_risk`` calls of the non-empty subsets."""

    CANDIDATES = ["Age", "Urban", "Marital", "Tenure", "Income", "Expenditure"]
    RADIUS = {"Age": 0.1, "Income": 0.1, "Expenditure": 0.1}
    params = (["known_sweep", "separate"],)
    param_names = ["how"]
    number = 1
    timer = time.process_time  # CPU seconds of all threads: the machine may be shared
    repeat = (1, 3, 120.0)
    timeout = 600

    def setup(self, how):
        from bayes_risk.data import infer_schema
        from bayes_risk.models import CARTSynthesizer

        self.df = ce()
        self.schema = infer_schema(self.df, categorical=CATEGORICAL,
                                   continuous=["Age", "Expenditure", "Income"])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = CARTSynthesizer(donor="uniform", unroutable="random_descent").fit(
                self.df, schema=self.schema, synthesized=SYNTHESIZED, random_seed=[2021, 4])
            self.syn = model.synthesize(20, random_seed=[2022, 4])
        self._run(how)  # imports, numba and the compiled mask kernel loaded before timing

    def _run(self, how):
        from bayes_risk import identification_risk, known_sweep

        kw = dict(schema=self.schema, aggregation="per_dataset", progressbar=False)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if how == "known_sweep":
                return known_sweep(self.df, self.syn, candidates=self.CANDIDATES,
                                   match=MatchSpec(radius=self.RADIUS), **kw)
            for k in range(1, len(self.CANDIDATES) + 1):
                for s in itertools.combinations(self.CANDIDATES, k):
                    syn = [c for c in s if c in SYNTHESIZED]
                    radius = {c: r for c, r in self.RADIUS.items() if c in s} or None
                    identification_risk(self.df, self.syn,
                                        known=[*(c for c in s if c not in syn), *syn],
                                        synthesized=syn, match=MatchSpec(radius=radius), **kw)
            return None

    def time_known_sweep(self, how):
        self._run(how)

    def peakmem_known_sweep(self, how):
        self._run(how)


class PosteriorReplicatesRisk:
    """Identification risk from R posterior replicates (issue 12), Hornby & Hu's scenario 4
    (CART with the per-leaf Bayesian bootstrap, m = 5, percentage radius 0.1): CEdata with
    R = 200 and 1,000 (flat memory in R), and 100,000 generated CE-like records
    (``make_ce_like``, never CEdata's name) with R = 200. Generation, matching, pooling and the
    jackknife together."""

    params = (["CEdata", "CE-like 100,000"], [200, 1000])
    param_names = ["data", "R"]
    number = 1
    timer = time.process_time  # CPU seconds of all threads: the machine may be shared
    repeat = (1, 2, 600.0)
    timeout = 1800

    def setup(self, data, R):
        from bayes_risk.data import infer_schema, make_ce_like
        from bayes_risk.models import CARTSynthesizer

        if data != "CEdata" and R != 200:
            raise NotImplementedError("100,000 records are run with R = 200 only")
        self.df = ce() if data == "CEdata" else make_ce_like(100_000, random_seed=1)
        schema = infer_schema(self.df, categorical=CATEGORICAL)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self.model = CARTSynthesizer(progressbar=False).fit(
                self.df, schema=schema, synthesized=SYNTHESIZED, random_seed=1)
            self.syn = self.model.synthesize(5, random_seed=2)

    def _run(self, R):
        from bayes_risk import PosteriorReplicates, identification_risk

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return identification_risk(
                self.df, self.syn, known=[*KNOWN, *SYNTHESIZED], synthesized=SYNTHESIZED,
                categorical=CATEGORICAL, match=MatchSpec(radius=0.1), progressbar=False,
                replicates=PosteriorReplicates(self.model, n=R, random_seed=3))

    def time_identification(self, data, R):
        self._run(R)

    def peakmem_identification(self, data, R):
        self._run(R)


class MillionChecks:
    """Two steps of the per-dataset command at 10⁶ records (issue 88): the association check
    of the synthesized columns of plain files (``unconfirmed_columns``, m = 5, two columns:
    tested on 10⁵ evenly spaced rows first) and the sort of one replicate's radius columns by
    the compiled radix sort (``index.value_orders``) beside ``np.argsort``."""

    params = (["association", "value_orders", "argsort"],)
    param_names = ["step"]
    number = 1
    timer = time.process_time  # CPU seconds of all threads: the machine may be shared
    repeat = (3, 5, 60.0)
    timeout = 300

    def setup(self, step):
        from bayes_risk.identification.index import value_orders

        self.y, self.syn = _large(1_000_000, 5)
        self.vals = np.ascontiguousarray(self.syn[0][["income", "expend"]].to_numpy().T)
        value_orders(self.vals[:, :10])  # the kernel loaded from numba's cache before timing

    def time_step(self, step):
        if step == "association":
            from bayes_risk.data.alignment import unconfirmed_columns

            unconfirmed_columns(self.y, self.syn, ["income", "expend"])
        elif step == "value_orders":
            from bayes_risk.identification.index import value_orders

            value_orders(self.vals)
        else:
            np.argsort(self.vals, axis=1)
