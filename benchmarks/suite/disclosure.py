"""synthpop's empirical disclosure measures on the reference scenario 1 (CEdata, m = 20; keys
Age, Urban, Marital; target Income)."""

from __future__ import annotations

import time
import warnings

from ._data import CATEGORICAL, KNOWN, ce, scenario1

CASES = {
    "ungrouped": {},
    "compat synthpop": {"compat": "synthpop"},
    "ngroups_target 10": {"ngroups_target": 10},
}


class DisclosureMeasures:
    params = (list(CASES),)
    param_names = ["case"]
    number = 1
    timer = time.process_time  # CPU seconds of all threads: the machine may be shared
    repeat = (3, 10, 30.0)

    def setup(self, case):
        self.df, self.syn = ce(), scenario1()

    def time_disclosure_measures(self, case):
        from bayes_risk.disclosure import disclosure_measures

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            disclosure_measures(self.df, self.syn, KNOWN, "Income", categorical=CATEGORICAL,
                                **CASES[case])


class ReplicatedUniques:
    params = ([None, "synthpop"],)
    param_names = ["compat"]
    number = 1
    timer = time.process_time  # CPU seconds of all threads: the machine may be shared
    repeat = (3, 10, 30.0)

    def setup(self, compat):
        self.df, self.syn = ce(), scenario1()

    def time_replicated_uniques(self, compat):
        from bayes_risk.disclosure import replicated_uniques

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            replicated_uniques(self.df, self.syn, [*KNOWN, "Income"], categorical=CATEGORICAL,
                               compat=compat)
