"""Options of ``bayes-risk fit`` declared by the sequential regressions
(:class:`bayes_risk.models.SequentialRegression`)."""

from __future__ import annotations

from bayes_risk.registry import ModelOption

__all__ = ["REGRESSION"]

REGRESSION: tuple[ModelOption, ...] = (
    ModelOption("--order", "order", "visit order of the synthesized columns",
                {"nargs": "+", "metavar": "COL"}),
    ModelOption("--family", "families",
                "GLM family per column, COL=FAMILY with FAMILY one of bernoulli_logit, "
                "categorical, multinomial_logit, normal, poisson_log",
                {"nargs": "+", "metavar": "COL=FAMILY"}),
    ModelOption("--formula", "formulas", "predictors of a column as 'y ~ a + b' (main effects "
                "only)", {"nargs": "+", "metavar": "FORMULA"}),
    ModelOption("--posterior-method", "posterior_method",
                "auto (exact for normal, NUTS for GLMs), exact, nuts, laplace",
                {"choices": ["auto", "exact", "nuts", "laplace"]}),
)
