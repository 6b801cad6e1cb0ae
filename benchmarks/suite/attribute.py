"""Attribute risk: the engine alone (one-variable-different candidates, stabilised estimator with
its diagnostics and a B = 200 bootstrap), on random Dirichlet draws of DPMPM shapes in an
``ArrayModel`` (no MCMC)."""

from __future__ import annotations

import time
import warnings

import numpy as np

N_RECORDS, N_DRAWS, K, M = 1000, 200, 20, 5


def _array_setup(n: int, seed: int = 2026, chains: int | None = None):
    from bayes_risk._numeric import logsumexp
    from bayes_risk.data import infer_schema, make_acs_like
    from bayes_risk.data.validate import encode
    from bayes_risk.models import ArrayModel

    df = make_acs_like(n, random_seed=seed)
    schema = infer_schema(df, synthesized=list(df.columns))
    d = [schema[c].n_levels for c in df.columns]
    rng = np.random.default_rng(seed)

    def draws():
        return {"pi": rng.dirichlet(np.ones(K), size=N_DRAWS),
                **{f"phi{j}": rng.dirichlet(np.ones(dj), size=(N_DRAWS, K))
                   for j, dj in enumerate(d)}}

    def class_terms(codes, dr):
        s = np.broadcast_to(np.log(dr["pi"])[:, None, :], (N_DRAWS, codes.shape[0], K)).copy()
        for j in range(len(d)):
            s += np.log(dr[f"phi{j}"][:, :, codes[:, j]]).transpose(0, 2, 1)
        return s

    def loglik(rec, dr):
        return logsumexp(class_terms(encode(rec, schema), dr), axis=-1)

    def neighbourhood(rec, dr):
        codes = encode(rec, schema)
        s = class_terms(codes, dr)  # [H, n, K]
        outs = [logsumexp(s, axis=-1)]
        for j, dj in enumerate(d):
            lphi = np.log(dr[f"phi{j}"])
            own = lphi[:, :, codes[:, j]].transpose(0, 2, 1)
            for c in range(dj - 1):
                new = lphi[:, :, c + (c >= codes[:, j])].transpose(0, 2, 1)
                outs.append(logsumexp(s - own + new, axis=-1))
        return np.stack(outs, axis=-1)

    model = ArrayModel(loglik, draws(), schema, neighbourhood_fn=neighbourhood, chains=chains)
    syn = [df.sample(frac=1.0, random_state=i).reset_index(drop=True) for i in range(M)]
    aug = [model.with_draws(draws(), chains=chains) for _ in range(M)]
    return model, df, syn, aug


class AttributeEngine:
    """1,000 records of the ACS-like table (14 categorical columns), K = 20, H = 200, m = 5."""

    number = 1
    timer = time.process_time  # CPU seconds of all threads: the machine may be shared
    repeat = (1, 3, 120.0)
    timeout = 600

    def setup(self):
        self.model, self.df, self.syn, self.aug = _array_setup(N_RECORDS)

    def _run(self):
        from bayes_risk.attribute import EstimatorSpec, attribute_risk

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            attribute_risk(self.df, self.syn, model=self.model,
                           random_seed=2026, progressbar=False,
                           estimator=EstimatorSpec(augmented=self.aug, bootstrap=200))

    def time_attribute_risk(self):
        self._run()

    def peakmem_attribute_risk(self):
        self._run()


class PriorSweep:
    """``prior_sensitivity`` with 1 and 100 truth-weighted priors over the result of
    :class:`AttributeEngine`'s case (the engine's run is set-up, not timed)."""

    number = 1
    timer = time.process_time
    repeat = (1, 3, 120.0)
    timeout = 600
    params = ([1, 100],)
    param_names = ["n_priors"]

    def setup(self, n_priors):
        from bayes_risk.attribute import EstimatorSpec, attribute_risk

        model, df, syn, aug = _array_setup(N_RECORDS)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self.res = attribute_risk(df, syn, model=model,
                                      random_seed=2026, progressbar=False,
                                      estimator=EstimatorSpec(augmented=aug, bootstrap=0))
        self.priors = [f"truth-weighted:{k:.3f}" for k in np.linspace(0.2, 10, n_priors)]

    def time_prior_sensitivity(self, n_priors):
        from bayes_risk.attribute import prior_sensitivity

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            prior_sensitivity(self.res, priors=self.priors)


class PriorSweepLarge:
    """``prior_sensitivity`` with 100 truth-weighted priors at n = 10,000 (issue 49: <= 3 s CPU):
    the engine's result, made once (``setup_cache``, not timed), has two chains of 100 draws, so
    the between-chain check and the k̂ bounds are recomputed under every prior."""

    number = 1
    timer = time.process_time
    repeat = (1, 3, 120.0)
    timeout = 1200

    def setup_cache(self):
        from bayes_risk.attribute import EstimatorSpec, attribute_risk

        model, df, syn, aug = _array_setup(10_000, chains=2)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return attribute_risk(df, syn, model=model, random_seed=2026, progressbar=False,
                                  estimator=EstimatorSpec(augmented=aug, bootstrap=0))

    def time_prior_sensitivity(self, res):
        from bayes_risk.attribute import prior_sensitivity

        priors = [f"truth-weighted:{k:.3f}" for k in np.linspace(0.2, 10, 100)]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            prior_sensitivity(res, priors=priors)


class SmoothedCARTPlugin:
    """CART's plug-in likelihood of a smoothed release: the README's (1,000 CE-like records,
    Tenure, Expenditure and Income synthesized, the two numeric ones smoothed, m = 5), every
    record's attribute risk: the audit's attribute step alone (the audit plan's rate for
    smoothed columns is measured on it)."""

    number = 1
    timer = time.process_time
    repeat = (1, 2, 240.0)
    timeout = 900

    def setup(self):
        from bayes_risk.data import infer_schema, make_ce_like
        from bayes_risk.models import CARTSynthesizer

        self.df = make_ce_like(1000, random_seed=1)
        schema = infer_schema(self.df, categorical=["Urban", "Marital", "Tenure"])
        self.cart = CARTSynthesizer(smoothing=True).fit(
            self.df, schema=schema, synthesized=["Tenure", "Expenditure", "Income"],
            random_seed=1)
        self.syn = self.cart.synthesize(5, random_seed=2)

    def time_smoothed_plugin(self):
        import bayes_risk as br

        # the audit's attribute step alone (its candidate sets and options)
        skip = ["utility", "identification", "posterior_identification", "membership",
                "attacks", "disclosure", "relative_difference", "closest_match"]
        br.audit(self.df, self.syn, known=["Age", "Urban", "Marital", "Income"], random_seed=3,
                 progressbar=False, settings=br.AuditSettings(skip=skip))


class SmoothedCARTLikelihood:
    """The smoothed CART plug-in's likelihood alone (``CARTPlugin.plugin_loglik_many``): the
    release of :class:`SmoothedCARTPlugin`, every record's Expenditure (smoothed) on an 11-point
    ±10 % grid, at 500 (the default) and 2,000 Bayesian-bootstrap replicates a node (a fresh
    plug-in each run: nothing kept from the run before)."""

    number = 1
    timer = time.process_time
    repeat = (1, 3, 240.0)
    timeout = 900
    params = ([500, 2000],)
    param_names = ["n_bootstrap"]

    def setup(self, n_bootstrap):
        import pandas as pd

        from bayes_risk.data import infer_schema, make_ce_like
        from bayes_risk.models import CARTSynthesizer

        self.df = make_ce_like(1000, random_seed=1)
        schema = infer_schema(self.df, categorical=["Urban", "Marital", "Tenure"])
        self.cart = CARTSynthesizer(smoothing=True).fit(
            self.df, schema=schema, synthesized=["Tenure", "Expenditure", "Income"],
            random_seed=1)
        self.syn = list(self.cart.synthesize(5, random_seed=2))
        grid = 1.0 + np.linspace(-0.1, 0.1, 11)
        self.records = np.arange(len(self.df))
        self.candidates = pd.DataFrame({"Expenditure": np.round(
            np.outer(self.df["Expenditure"].to_numpy(), grid).ravel(), 2)})

    def time_plugin_loglik(self, n_bootstrap):
        from bayes_risk.models import CARTPlugin

        plugin = CARTPlugin(self.cart, self.df, n_bootstrap=n_bootstrap, random_seed=3)
        plugin.plugin_loglik_many(self.records, self.candidates, self.syn)
