"""The record log-likelihood a PyMC model compiles (``PyMCSynthesizer``, issue 67) against the
hand-written kernels of the built-in models, on the same draws: the sequential regression's
normal regression and DPMPM's latent-class mixture, n = 10,000 records and H = 1,000 draws
(goal: within 3x). The DPMPM form is timed as three writings of the same density: the one of
DPMPM's own PyMC model (``log φ[:, y].T``, columns gathered), rows gathered (``log φ.T[y]``),
and in probability space (``φ.T[y]``, no exponential per record and class).
"""

from __future__ import annotations

import time
import warnings

import numpy as np
import pandas as pd

N, H = 10_000, 1_000
#: DPMPM's shape: K classes, the levels of four categorical columns (CEdata's Urban, Tenure,
#: Educ, Marital have 2, 5, 17, 5; these are smaller, the work per record and class the same)
K, LEVELS = 30, (3, 4, 2, 5)


def _quiet(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kwargs)


def normal_regression(data):
    """LogIncome ~ Normal(b0 + b1 LogExpenditure, sigma)."""
    import pymc as pm

    with pm.Model() as model:
        x = pm.Data("LogExpenditure", data["LogExpenditure"].to_numpy())
        y = pm.Data("LogIncome", data["LogIncome"].to_numpy())
        b = pm.Flat("b", shape=2)
        sigma = pm.HalfFlat("sigma")
        pm.Normal("LogIncome_obs", b[0] + b[1] * x, sigma, observed=y)
    return model


def _logp_columns(value, log_pi, *params):
    """DPMPM's own writing (``bayes_risk.models.dpmpm.fit._marginal_logp``)."""
    from bayes_risk.models.dpmpm.fit import _marginal_logp

    return _marginal_logp(value, log_pi, *params)


def _logp_rows(value, log_pi, *params):
    import pytensor.tensor as pt

    log_pi = log_pi[(0,) * (log_pi.ndim - 1)]
    terms = log_pi[None, :]
    for j, lp in enumerate(params[:-1]):
        terms = terms + lp[(0,) * (lp.ndim - 2)].T[value[:, j]]
    return pt.logsumexp(terms, axis=1)


def _logp_probability(value, log_pi, *params):
    import pytensor.tensor as pt

    log_pi = log_pi[(0,) * (log_pi.ndim - 1)]
    w = pt.exp(log_pi)[None, :]
    for j, lp in enumerate(params[:-1]):
        w = w * pt.exp(lp[(0,) * (lp.ndim - 2)]).T[value[:, j]]
    return pt.log(w.sum(axis=1))


def _dpmpm_function(logp):
    def model_function(data):
        import pymc as pm
        import pytensor.tensor as pt

        cols = list(data.columns)
        with pm.Model() as model:
            codes = [pm.Data(c, data[c].cat.codes.to_numpy()) for c in cols]
            alpha = pm.Gamma("alpha", alpha=0.25, beta=0.25)
            V = pm.Beta("V", alpha=1.0, beta=alpha, shape=K - 1)
            cum = pt.cumsum(pt.log1p(-V))
            log_pi = pt.concatenate([pt.log(V) + pt.concatenate([pt.zeros(1), cum[:-1]]),
                                     cum[-1:]])
            log_phis = [pt.log(pm.Dirichlet(f"phi_{j}", a=np.ones((K, d))))
                        for j, d in enumerate(LEVELS)]
            sig = ",".join(["(k)"] + [f"(k,d{j})" for j in range(len(LEVELS))]
                           + ["(p)"]) + "->(p)"
            pm.CustomDist("record", log_pi, *log_phis, np.zeros(len(LEVELS)), logp=logp,
                          observed=pt.stack(codes, axis=1), signature=sig, dtype="int64")
        return model

    return model_function


MODELS = {
    "regression (built-in)": None,
    "regression (PyMC)": normal_regression,
    "DPMPM (built-in)": None,
    "DPMPM log φ[:, y].T (PyMC)": _dpmpm_function(_logp_columns),
    "DPMPM log φ.T[y] (PyMC)": _dpmpm_function(_logp_rows),
    "DPMPM φ.T[y] (PyMC)": _dpmpm_function(_logp_probability),
}


class RecordLoglik:
    """``record_loglik`` of 10,000 records under 1,000 draws: the built-in kernels and the PyMC
    forms of the same densities on the same draws (compiled before the timing)."""

    params = (list(MODELS),)
    param_names = ["model"]
    number = 1
    timer = time.process_time  # CPU seconds of all threads: the machine may be shared
    repeat = (1, 5, 120.0)
    timeout = 600

    def setup(self, model):
        from bayes_risk.data import infer_schema
        from bayes_risk.models import DPMPM, PyMCSynthesizer, SequentialRegression

        rng = np.random.default_rng(0)
        if model.startswith("regression"):
            x = rng.normal(9.0, 1.0, N)
            self.data = pd.DataFrame({"LogExpenditure": x,
                                      "LogIncome": 1.0 + x + rng.normal(0.0, 0.5, N)})
            draws = pd.DataFrame({"(Intercept)": rng.normal(1.0, 0.05, H),
                                  "LogExpenditure": rng.normal(1.0, 0.01, H),
                                  "sigma": rng.uniform(0.45, 0.55, H)})
            schema = infer_schema(self.data)
            if model == "regression (built-in)":
                self.model = _quiet(SequentialRegression.from_posterior, {"LogIncome": draws},
                                    schema.with_roles(["LogIncome"]), data=self.data,
                                    n_records=N)
            else:
                post = {"b": draws[["(Intercept)", "LogExpenditure"]].to_numpy(),
                        "sigma": draws["sigma"].to_numpy()}
                self.model = _quiet(PyMCSynthesizer.from_posterior, post, schema,
                                    data=self.data, model_function=MODELS[model])
        else:
            self.data = pd.DataFrame({
                f"c{j}": pd.Categorical.from_codes(rng.integers(0, d, N), categories=range(d))
                for j, d in enumerate(LEVELS)})
            schema = infer_schema(self.data)
            post = {"alpha": rng.gamma(2.0, 1.0, (1, H)), "V": rng.beta(1.0, 2.0, (1, H, K - 1))}
            for j, d in enumerate(LEVELS):
                post[f"phi_{j}"] = rng.dirichlet(np.ones(d), (1, H, K))
            if model == "DPMPM (built-in)":
                self.model = _quiet(DPMPM.from_posterior, post, schema.with_roles(schema.names),
                                    n_records=N, n_components=K)
            else:
                self.model = _quiet(PyMCSynthesizer.from_posterior, post, schema,
                                    data=self.data, model_function=MODELS[model])
        self.model.record_loglik(self.data.head(50))  # compiled (or kernels loaded) first

    def time_record_loglik(self, model):
        self.model.record_loglik(self.data)
