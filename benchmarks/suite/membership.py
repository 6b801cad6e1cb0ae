"""Membership risk: CEdata releases of 2,000 members and 500 holdout records, m = 5, and a
DPMPM release with and without the refit cache.

A CART release under the plug-in (every column synthesized; age, expenditure and income banded,
or as recorded) and a partially synthetic release of normal regressions (log expenditure and log
income given urban/rural status, marital status and tenure, exact posterior draws; the m
augmented refits timed apart from the engine). Without CEdata they are skipped.
"""

from __future__ import annotations

import time
import warnings

import numpy as np
import pandas as pd

from bayes_risk.models import Sampling

from ._data import ce

MEMBERS, HOLDOUT, M = 2000, 500, 5


def _split(df: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    df = df.sample(frac=1, random_state=1).reset_index(drop=True)
    return (df.iloc[:MEMBERS].reset_index(drop=True),
            df.iloc[MEMBERS:MEMBERS + HOLDOUT].reset_index(drop=True))


def _band(x: pd.Series, k: int) -> pd.Categorical:
    return pd.qcut(x.rank(method="first"), k, labels=[f"q{j + 1}" for j in range(k)])


class MembershipCART:
    """``membership_risk`` of a CART release (Bayesian bootstrap, seed 1) under the plug-in:
    every member, the holdout, the normaliser, the distance baseline, a B = 200 bootstrap."""

    params = (["banded", "raw"],)
    param_names = ["version"]
    number = 1
    timer = time.process_time  # CPU seconds of all threads: the machine may be shared
    repeat = (1, 3, 300.0)
    timeout = 900

    def setup(self, version):
        from bayes_risk.models import CARTSynthesizer

        raw = ce()
        df = pd.DataFrame({c: raw[c].astype("category")
                           for c in ("Urban", "Tenure", "Marital", "Educ")})
        for c, k in (("Age", 6), ("Expenditure", 5), ("Income", 5)):
            df[c] = _band(raw[c], k) if version == "banded" else raw[c].astype(np.float64)
        self.train, self.hold = _split(df)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self.model = CARTSynthesizer(random_seed=1).fit(
                self.train, synthesized=list(self.train.columns), random_seed=1)
            self.syn = self.model.synthesize(M, random_seed=2)

    def _run(self):
        from bayes_risk import membership_risk

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return membership_risk(self.model, self.train, self.syn, holdout=self.hold,
                                   random_seed=3)

    def time_membership_risk(self, version):
        self._run()

    def peakmem_membership_risk(self, version):
        self._run()


class MembershipPartial:
    """``membership_risk`` of a partially synthetic release of sequential regressions (CEdata
    households with positive income and expenditure), given the m augmented refits; the refits
    are timed on their own."""

    number = 1
    timer = time.process_time  # CPU seconds of all threads: the machine may be shared
    repeat = (1, 3, 300.0)
    timeout = 900

    def setup(self):
        from bayes_risk.models import SequentialRegression

        raw = ce()
        raw = raw[(raw["Income"] > 0) & (raw["Expenditure"] > 0)]
        df = pd.DataFrame({
            "Urban": raw["Urban"].astype("category"),
            "Marital": raw["Marital"].astype("category"),
            "Tenure": raw["Tenure"].astype("category"),
            "LogExpenditure": np.log(raw["Expenditure"]), "LogIncome": np.log(raw["Income"]),
        })
        self.train, self.hold = _split(df)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self.model = SequentialRegression(progressbar=False).fit(
                self.train, synthesized=["LogExpenditure", "LogIncome"], random_seed=1)
            self.syn = self.model.synthesize(M, random_seed=2)
            self.aug = self._refits()

    def _refits(self):
        return [self.model.fit_augmented(self.train, z, random_seed=10 + i)
                for i, z in enumerate(self.syn.datasets)]

    def _run(self):
        from bayes_risk import RatioSpec, membership_risk

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return membership_risk(self.model, self.train, self.syn, holdout=self.hold,
                                   ratio=RatioSpec(augmented=self.aug), random_seed=3)

    def time_refits(self):
        self._refits()

    def time_membership_risk(self):
        self._run()

    def peakmem_membership_risk(self):
        self._run()


class MembershipRefitCache:
    """``membership_risk`` of a DPMPM release (1,000 ACS-like persons, 14 variables, m = 3)
    after ``attribute_risk`` on the same model, release and seed: with the refit cache the
    attribute run filled (no refit) and without it (m refits)."""

    params = (["cached", "refits"],)
    param_names = ["cache"]
    number = 1
    timer = time.process_time  # CPU seconds of all threads: the machine may be shared
    repeat = (1, 3, 300.0)
    timeout = 900

    def setup(self, cache):
        import tempfile

        from bayes_risk import EstimatorSpec, attribute_risk
        from bayes_risk.data import make_acs_like
        from bayes_risk.models import DPMPM

        df = make_acs_like(1200, random_seed=1)
        self.train, self.hold = df.iloc[:1000], df.iloc[1000:].reset_index(drop=True)
        self.folder = tempfile.mkdtemp()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self.model = DPMPM(n_components=20, sampling=Sampling(tune=200, draws=200, chains=1),
                               progressbar=False).fit(self.train, random_seed=1)
            self.syn = self.model.synthesize(3, random_seed=2)
            attribute_risk(self.train, self.syn, model=self.model, records=range(10),
                           random_seed=3, progressbar=False,
                           estimator=EstimatorSpec(refit_cache=self.folder))

    def teardown(self, cache):
        import shutil

        shutil.rmtree(self.folder, ignore_errors=True)

    def time_membership_risk(self, cache):
        from bayes_risk import RatioSpec, membership_risk

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            membership_risk(self.model, self.train, self.syn, holdout=self.hold, random_seed=3,
                            progressbar=False,
                            ratio=RatioSpec(refit_cache=self.folder if cache == "cached"
                                            else None))
