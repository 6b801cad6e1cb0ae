"""Options of ``bayes-risk fit`` declared by the sequential regressions
(:class:`bayes_risk.models.SequentialRegression`)."""

from __future__ import annotations

from typing import Any

from bayes_risk._specs import cli_option

__all__ = ["REGRESSION"]

REGRESSION: dict[str, dict[str, Any]] = {
    "order": cli_option("--order", "visit order of the synthesized columns", nargs="+",
                        metavar="COL"),
    "families": cli_option(
        "--family", "GLM family per column, COL=FAMILY with FAMILY one of bernoulli_logit, "
        "categorical, multinomial_logit, normal, poisson_log", nargs="+", metavar="COL=FAMILY"),
    "formulas": cli_option(
        "--formula", "predictors of a column as 'y ~ a + b' (main effects only)", nargs="+",
        metavar="FORMULA"),
    "posterior_method": cli_option(
        "--posterior-method", "auto (exact for normal, NUTS for GLMs), exact, nuts, laplace",
        choices=("auto", "exact", "nuts", "laplace")),
}
