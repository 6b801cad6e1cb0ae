"""anonymeter's attacks (singling out, linkability, inference) on a CART release of CEdata
(scenario 4, m = 1) with anonymeter's defaults (500 attacks). The holdout is a CE-like table of
the same size: the timings, not the risks, are the point."""

from __future__ import annotations

import time
import warnings

from ._data import CATEGORICAL, KNOWN, cart_release, ce


def _holdout():
    from bayes_risk.data import make_ce_like

    return make_ce_like(n=len(ce()), random_seed=7)[list(ce().columns)]


class SinglingOut:
    params = (["univariate", "multivariate"],)
    param_names = ["mode"]
    number = 1
    timer = time.process_time  # CPU seconds of all threads: the machine may be shared
    repeat = (3, 5, 60.0)

    def setup(self, mode):
        self.df, self.syn, self.hold = ce(), cart_release(1), _holdout()

    def _run(self, mode):
        from bayes_risk.attacks import singling_out_risk

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            singling_out_risk(self.df, self.syn, holdout=self.hold, mode=mode,
                              categorical=CATEGORICAL, random_seed=1)

    def time_singling_out_risk(self, mode):
        self._run(mode)

    def peakmem_singling_out_risk(self, mode):
        self._run(mode)


class Linkability:
    params = ([1, 5],)
    param_names = ["n_neighbors"]
    number = 1
    timer = time.process_time  # CPU seconds of all threads: the machine may be shared
    repeat = (3, 5, 60.0)

    def setup(self, n_neighbors):
        self.df, self.syn, self.hold = ce(), cart_release(1), _holdout()

    def time_linkability_risk(self, n_neighbors):
        from bayes_risk.attacks import linkability_risk

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            linkability_risk(self.df, self.syn, holdout=self.hold,
                             aux_columns=(KNOWN, ["Tenure", "Educ", "Expenditure", "Income"]),
                             n_neighbors=n_neighbors, categorical=CATEGORICAL, random_seed=1)


class Inference:
    """Every column guessed from the six others (the audit's setting), 500 targets each."""

    number = 1
    timer = time.process_time  # CPU seconds of all threads: the machine may be shared
    repeat = (3, 5, 60.0)

    def setup(self):
        self.df, self.syn, self.hold = ce(), cart_release(1), _holdout()

    def time_inference_risk(self):
        from bayes_risk.attacks import inference_risk

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            inference_risk(self.df, self.syn, holdout=self.hold, secret=list(self.df.columns),
                           categorical=CATEGORICAL, random_seed=1)
