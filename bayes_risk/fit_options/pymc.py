"""Options of ``bayes-risk fit`` declared by the PyMC adapter
(:class:`bayes_risk.models.PyMCSynthesizer`)."""

from __future__ import annotations

from typing import Any

from bayes_risk._specs import cli_option

__all__ = ["PYMC"]

PYMC: dict[str, dict[str, Any]] = {
    "model_function": cli_option(
        "--model-function", "the model, MODULE:FUNCTION: a function that takes the table "
        "(categorical columns as pandas Categoricals) and returns a pymc.Model whose columns "
        "are data containers named after them; its observed columns are synthesized (docs: "
        "user guide, Your own PyMC model). MODULE must be importable: installed, or its folder "
        "on PYTHONPATH", metavar="MODULE:FUNCTION"),
    "target_accept": cli_option(
        "--target-accept", "NUTS target acceptance rate (default 0.8; raise it towards 0.95 "
        "when the fit reports DIVERGENCES)", type=float, metavar="P"),
    "diagnose": cli_option(
        "--diagnose", "free variables (and loglik) whose R-hat and ESS are checked (default: "
        "every element of every free variable, and loglik); name label-invariant ones for a "
        "mixture", nargs="+", metavar="NAME"),
}
