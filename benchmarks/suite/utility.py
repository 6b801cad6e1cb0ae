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
        from bayes_risk.utility import pmse

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            pmse(self.df, self.syn, categorical=CATEGORICAL, synthesized=["Income"],
                 **CASES[case])


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
        from bayes_risk.utility import utility_summary

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            utility_summary(self.df, self.syn, categorical=CATEGORICAL, max_order=1,
                            estimands=["Income ~ Age + C(Marital) + Expenditure"])
