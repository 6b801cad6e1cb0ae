"""Options of ``bayes-risk fit`` declared by the sequential regressions
(:class:`bayes_risk.models.SequentialRegression`)."""

from __future__ import annotations

from typing import Any

from bayes_risk._specs import cli_option, parse_key_value
from bayes_risk.exceptions import ValidationError

__all__ = ["REGRESSION"]

def _formula(text: str) -> tuple[str, str]:
    """``"y ~ a + b"`` → ``("y", "y ~ a + b")`` (the model checks the right-hand side)."""
    lhs, sep, _ = text.partition("~")
    if not sep or not lhs.strip():
        raise ValidationError(f"--formula needs an outcome: 'y ~ a + b'. Got {text!r}.",
                              code="BAD_OPTION_VALUE")
    return lhs.strip(), text


REGRESSION: dict[str, dict[str, Any]] = {
    "order": cli_option("--order", "visit order of the synthesized columns", nargs="+",
                        metavar="COL"),
    "families": cli_option(
        "--family", "GLM family per column, COL=FAMILY with FAMILY one of bernoulli_logit, "
        "categorical, multinomial_logit, normal, poisson_log", nargs="+", metavar="COL=FAMILY",
        parse=lambda v: {k.strip(): x.strip()
                         for k, x in parse_key_value(v, "--family", str).items()}),
    "formulas": cli_option(
        "--formula", "predictors of a column as 'y ~ a + b' (main effects only)", nargs="+",
        metavar="FORMULA", parse=lambda v: dict(_formula(text) for text in v)),
    "posterior_method": cli_option(
        "--posterior-method", "auto (exact for normal, NUTS for GLMs), exact, nuts, laplace",
        choices=("auto", "exact", "nuts", "laplace")),
}
