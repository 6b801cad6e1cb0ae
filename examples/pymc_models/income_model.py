"""A model no built-in synthesizer covers, written in PyMC: household income as a zero-inflated
log-normal given expenditure, urban/rural and marital status (the CE sample's columns).

Income is 0 for a household with probability ``1 - psi``; otherwise it is log-normal. Both parts
depend on log expenditure and marital status, the log-normal's on urban/rural too; the marital
statuses' effects on the log income are pooled towards each other (a hierarchical prior, its
effects summing to zero so that the intercept stays identified). Only
Income is observed, so only Income is synthesized; the other columns are covariates, released as
they are. Fit it with ``bayes-risk fit --method pymc --model-function income_model:income_model``
(this folder on PYTHONPATH) or ``PyMCSynthesizer(model_function="income_model:income_model")``.
"""

import pymc as pm
import pytensor.tensor as pt


def income_model(data):
    """The PyMC model of ``data`` (a DataFrame: Urban and Marital as pandas Categoricals)."""
    coords = {"marital": list(data["Marital"].cat.categories)}
    with pm.Model(coords=coords) as model:
        # every column the model reads: a data container named after it, one value per record
        expenditure = pm.Data("Expenditure", data["Expenditure"].to_numpy())
        urban = pm.Data("Urban", data["Urban"].cat.codes.to_numpy())
        marital = pm.Data("Marital", data["Marital"].cat.codes.to_numpy())
        income = pm.Data("Income", data["Income"].to_numpy())
        # log expenditure, centred at a fixed value (not the table's mean: a constant computed
        # from the records would make one record's likelihood depend on the others)
        x = pt.log1p(expenditure) - 9.0

        # P(income > 0)
        a = pm.Normal("a", 0.0, 2.0, shape=2)
        a_marital = pm.ZeroSumNormal("a_marital", 1.0, dims="marital")
        psi = pm.math.invlogit(a[0] + a[1] * x + a_marital[marital])

        # log income of the households with an income
        b = pm.Normal("b", [10.5, 0.0], [2.0, 1.0], shape=2)
        b_urban = pm.Normal("b_urban", 0.0, 1.0)
        tau = pm.HalfNormal("tau", 0.5)
        b_marital = pm.ZeroSumNormal("b_marital", tau, dims="marital")
        sigma = pm.HalfNormal("sigma", 2.0)
        mu = b[0] + b[1] * x + b_urban * urban + b_marital[marital]

        pm.HurdleLogNormal("income", psi=psi, mu=mu, sigma=sigma, observed=income)
    return model
