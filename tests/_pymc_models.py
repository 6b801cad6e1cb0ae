"""PyMC model functions of the tests of ``PyMCSynthesizer`` (importable by path:
``_pymc_models:NAME``, the tests folder being on ``sys.path``; command-line runs get it on
``PYTHONPATH``). Each takes the table and returns a ``pymc.Model`` whose columns are data
containers named after them."""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytensor.tensor as pt

#: components of the mixture forms below (the built-in models' draws they are compared with
#: are made with the same number)
K_DPMPM = 3
K_POISSON = 2


def contract_model(data):
    """kids ~ Poisson(exp(a0 + a1 [sex = M])), income ~ LogNormal(b0 + b1 kids, s): two observed
    columns, sex a covariate (the contract tests' case)."""
    with pm.Model() as model:
        sex = pm.Data("sex", data["sex"].cat.codes.to_numpy())
        kids = pm.Data("kids", data["kids"].to_numpy())
        income = pm.Data("income", data["income"].to_numpy())
        a = pm.Normal("a", 0.0, 1.0, shape=2)
        b = pm.Normal("b", [10.0, 0.0], 1.0, shape=2)
        s = pm.HalfNormal("s", 1.0)
        pm.Poisson("kids_obs", pt.exp(a[0] + a[1] * sex), observed=kids)
        pm.LogNormal("income_obs", b[0] + b[1] * kids, s, observed=income)
    return model


def poisson_area(data):
    """A count y with a random effect per area and a covariate x (hierarchical Poisson)."""
    with pm.Model(coords={"areas": data["area"].cat.categories}) as model:
        x = pm.Data("x", data["x"].to_numpy())
        area = pm.Data("area", data["area"].cat.codes.to_numpy())
        y = pm.Data("y", data["y"].to_numpy())
        b = pm.Normal("b", 0.0, 1.0, shape=2)
        s = pm.HalfNormal("s", 1.0)
        u = pm.Normal("u", 0.0, s, dims="areas")
        pm.Poisson("y_obs", pt.exp(b[0] + b[1] * x + u[area]), observed=y)
    return model


def poisson_area_dims(data):
    """``poisson_area`` with a dimension of the records in the coords (containers, a
    deterministic and the observed variable on it): PyMC then broadcasts the log-density to the
    number of records the model was built on."""
    coords = {"obs": np.arange(len(data)), "areas": data["area"].cat.categories}
    with pm.Model(coords=coords) as model:
        x = pm.Data("x", data["x"].to_numpy(), dims="obs")
        area = pm.Data("area", data["area"].cat.codes.to_numpy(), dims="obs")
        y = pm.Data("y", data["y"].to_numpy(), dims="obs")
        b = pm.Normal("b", 0.0, 1.0, shape=2)
        s = pm.HalfNormal("s", 1.0)
        u = pm.Normal("u", 0.0, s, dims="areas")
        mu = pm.Deterministic("mu", pt.exp(b[0] + b[1] * x + u[area]), dims="obs")
        pm.Poisson("y_obs", mu, observed=y, dims="obs")
    return model


def categorical_chain(data):
    """sex ~ Categorical(p); mar | sex ~ Categorical(softmax(B[sex])): categorical columns drawn
    one after another (mar reads the drawn sex)."""
    d_sex, d_mar = len(data["sex"].cat.categories), len(data["mar"].cat.categories)
    with pm.Model() as model:
        sex = pm.Data("sex", data["sex"].cat.codes.to_numpy())
        mar = pm.Data("mar", data["mar"].cat.codes.to_numpy())
        p = pm.Dirichlet("p", np.ones(d_sex))
        B = pm.Normal("B", 0.0, 1.0, shape=(d_sex, d_mar))
        pm.Categorical("mar_obs", logit_p=B[sex], observed=mar)
        pm.Categorical("sex_obs", p=p, observed=sex)
    return model


def normal_regression(data):
    """LogIncome ~ Normal(b0 + b1 LogExpenditure, sigma) (AttributeRiskCalculation's run A1)."""
    with pm.Model() as model:
        x = pm.Data("LogExpenditure", data["LogExpenditure"].to_numpy())
        y = pm.Data("LogIncome", data["LogIncome"].to_numpy())
        b = pm.Flat("b", shape=2)
        sigma = pm.HalfFlat("sigma")
        pm.Normal("LogIncome_obs", b[0] + b[1] * x, sigma, observed=y)
    return model


def bernoulli(data):
    """y ~ Bernoulli(θ), θ ~ Beta(1, 1): the conjugate model of the brute-force test."""
    with pm.Model() as model:
        y = pm.Data("y", data["y"].cat.codes.to_numpy())
        theta = pm.Beta("theta", 1.0, 1.0)
        pm.Bernoulli("y_obs", theta, observed=y)
    return model


def dpmpm_form(data):
    """The class-marginalised DPMPM (products of multinomials, truncated stick breaking) of
    every column of the table, written as ``bayes_risk.models.dpmpm.fit.build_model`` writes it,
    with the records' columns as data containers stacked into one observed record."""
    from bayes_risk.models.dpmpm.fit import _marginal_logp

    cols = list(data.columns)
    d = [len(data[c].cat.categories) for c in cols]
    K = K_DPMPM
    with pm.Model() as model:
        codes = [pm.Data(c, data[c].cat.codes.to_numpy()) for c in cols]
        alpha = pm.Gamma("alpha", alpha=0.25, beta=0.25)
        V = pm.Beta("V", alpha=1.0, beta=alpha, shape=K - 1)
        cum = pt.cumsum(pt.log1p(-V))
        log_pi = pt.concatenate([pt.log(V) + pt.concatenate([pt.zeros(1), cum[:-1]]),
                                 cum[-1:]])
        log_phis = [pt.log(pm.Dirichlet(f"phi_{j}", a=np.ones((K, dj))))
                    for j, dj in enumerate(d)]
        sig = ",".join(["(k)"] + [f"(k,d{j})" for j in range(len(d))] + ["(p)"]) + "->(p)"
        pm.CustomDist("record", log_pi, *log_phis, np.zeros(len(d)), logp=_marginal_logp,
                      observed=pt.stack(codes, axis=1), signature=sig, dtype="int64")
    return model


def poisson_mixture_form(data):
    """The Poisson mixture MP (Wei & Reiter 2016) of every column of the table, written as
    ``bayes_risk.models.poisson.fit.build_pymc_model`` writes it, the count columns stacked."""
    from bayes_risk.models.poisson.fit import _mp_logp, _pt_log_stick

    cols = list(data.columns)
    K = K_POISSON
    with pm.Model() as model:
        counts = [pm.Data(c, data[c].to_numpy()) for c in cols]
        alpha = pm.Gamma("alpha", alpha=0.25, beta=0.25)
        v = pm.Beta("v", alpha=1.0, beta=alpha, shape=K - 1)
        lam = pm.Gamma("lam", alpha=1.0, beta=np.ones((1, len(cols))), shape=(K, len(cols)))
        pm.CustomDist("record", _pt_log_stick(v), lam, logp=_mp_logp,
                      signature="(k),(k,p)->(p)", observed=pt.stack(counts, axis=1),
                      dtype="int64")
    return model


def copy_chain(data):
    """x ~ Normal(0, 1); z ~ Normal(x, 0.001): a synthesized z follows the synthesized x."""
    with pm.Model() as model:
        x = pm.Data("x", data["x"].to_numpy())
        z = pm.Data("z", data["z"].to_numpy())
        m = pm.Normal("m", 0.0, 1.0)
        pm.Normal("z_obs", x, 0.001, observed=z)
        pm.Normal("x_obs", m, 1.0, observed=x)
    return model


# ------------------------------------------------------------------ models that are refused
def latent_per_record(data):
    """A latent value per record (not integrated out)."""
    with pm.Model() as model:
        y = pm.Data("y", data["y"].to_numpy())
        u = pm.Normal("u", 0.0, 1.0, shape=len(data))
        pm.Poisson("y_obs", pt.exp(u), observed=y)
    return model


def joint_over_records(data):
    """One multivariate normal over all the records."""
    n = len(data)
    with pm.Model() as model:
        x = pm.Data("x", data["x"].to_numpy())
        mu = pm.Normal("mu", 0.0, 1.0)
        pm.MvNormal("x_obs", mu * np.ones(n), np.eye(n) + 0.5, observed=x)
    return model


def lagged(data):
    """Each record's mean is the previous record's x."""
    with pm.Model() as model:
        x = pm.Data("x", data["x"].to_numpy())
        y = pm.Data("y", data["y"].to_numpy())
        b = pm.Normal("b", 0.0, 1.0)
        pm.Poisson("y_obs", pt.exp(b * pt.concatenate([pt.zeros(1), x[:-1]])), observed=y)
    return model


def centred_constant(data):
    """x centred at the table's mean, a constant baked into the graph."""
    centre = float(data["x"].mean())
    with pm.Model() as model:
        x = pm.Data("x", data["x"].to_numpy())
        y = pm.Data("y", data["y"].to_numpy())
        b = pm.Normal("b", 0.0, 1.0)
        pm.Poisson("y_obs", pt.exp(b * (x - centre)), observed=y)
    return model


def centred_container(data):
    """A container named after a column that holds the column transformed."""
    with pm.Model() as model:
        x = pm.Data("x", (data["x"] - data["x"].mean()).to_numpy())
        y = pm.Data("y", data["y"].to_numpy())
        b = pm.Normal("b", 0.0, 1.0)
        pm.Poisson("y_obs", pt.exp(b * x), observed=y)
    return model


def observed_array(data):
    """The observed values given as an array."""
    with pm.Model() as model:
        b = pm.Normal("b", 0.0, 1.0)
        pm.Poisson("y_obs", pt.exp(b), observed=data["y"].to_numpy())
    return model


def data_potential(data):
    """A potential reading the data."""
    with pm.Model() as model:
        y = pm.Data("y", data["y"].to_numpy())
        b = pm.Normal("b", 0.0, 1.0)
        pm.Poisson("y_obs", pt.exp(b), observed=y)
        pm.Potential("penalty", -0.01 * pt.sum(y) * b)
    return model


def count_potential(data):
    """A potential holding a term per record (the number of records times a function of Θ)."""
    n = len(data)
    with pm.Model() as model:
        y = pm.Data("y", data["y"].to_numpy())
        b = pm.Normal("b", 0.0, 1.0)
        pm.Poisson("y_obs", pt.exp(b), observed=y)
        pm.Potential("truncation", -n * pt.log1p(-pt.exp(-pt.exp(b))))
    return model


def not_a_model(data):
    """Returns the table, not a model."""
    return data



def big_free_variable(data):
    """A free variable of 3,000,000 values beside a normal model of y: its draws, gradients and
    NUTS's trees are sized before sampling (issue 86)."""
    with pm.Model() as model:
        y = pm.Data("y", data["y"].to_numpy())
        pm.Normal("big", 0.0, 1.0, shape=3_000_000)
        mu = pm.Normal("mu", 0.0, 1.0)
        pm.Normal("y_obs", mu, 1.0, observed=y)
    return model


def renamed_container(data):
    """y ~ Poisson given area, whose codes are held by a container not named after it (issue
    86: named in the error, not taken for records that depend on each other)."""
    with pm.Model() as model:
        area = pm.Data("area_code", data["area"].cat.codes.to_numpy())
        y = pm.Data("y", data["y"].to_numpy())
        b = pm.Normal("b", 0.0, 1.0, shape=3)
        pm.Poisson("y_obs", pt.exp(b[area]), observed=y)
    return model
