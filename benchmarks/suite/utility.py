"""Utility: pMSE of the reference scenario 1 (CEdata, m = 20, Income synthesized) and the
utility summary."""

from __future__ import annotations

import time
import warnings

from ._data import CATEGORICAL, ce, scenario1

CASES = {
    "logit, main effects, theory": {"max_order": 0, "null": "theory"},
    "logit, 2-way, theory": {"max_order": 1, "null": "theory"},
    "logit, main effects, pairs": {"max_order": 0, "null": "pairs"},
    "logit, 2-way, pairs": {"max_order": 1, "null": "pairs"},
    "cart, pairs": {"method": "cart", "null": "pairs", "random_seed": 1},
}
#: the case's settings of the propensity model (PropensitySpec), the others pmse's arguments
PROPENSITY = {"method", "max_order"}


class PMSE:
    """``pmse`` as synthpop's ``utility.gen`` (logit, main effects, and 2-way interactions;
    the ``pairs`` null: 190 pairs of synthetic datasets; CART propensity model)."""

    params = (list(CASES),)
    param_names = ["case"]
    number = 1
    timer = time.process_time  # CPU seconds of all threads: the machine may be shared
    repeat = (1, 5, 60.0)
    timeout = 300

    def setup(self, case):
        self.df, self.syn = ce(), scenario1()

    def time_pmse(self, case):
        from bayes_risk.utility import PropensitySpec, pmse

        kw = {k: v for k, v in CASES[case].items() if k not in PROPENSITY}
        spec = PropensitySpec(**{k: v for k, v in CASES[case].items() if k in PROPENSITY})
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            pmse(self.df, self.syn, categorical=CATEGORICAL, synthesized=["Income"],
                 propensity=spec, **kw)


class UtilitySummary:
    """``utility_summary``: pMSE (logit, 2-way) and one regression's confidence-interval
    overlap."""

    number = 1
    timer = time.process_time  # CPU seconds of all threads: the machine may be shared
    repeat = (1, 5, 60.0)
    timeout = 300

    def setup(self):
        self.df, self.syn = ce(), scenario1()

    def time_utility_summary(self):
        from bayes_risk.utility import OverlapSpec, PropensitySpec, utility_summary

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            utility_summary(self.df, self.syn, categorical=CATEGORICAL,
                            propensity=PropensitySpec(max_order=1),
                            overlap=OverlapSpec(
                                estimands=["Income ~ Age + C(Marital) + Expenditure"]))
