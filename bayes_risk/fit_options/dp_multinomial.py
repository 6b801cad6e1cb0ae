"""Options of ``bayes-risk fit`` declared by the multinomial–Dirichlet synthesizer
(:class:`bayes_risk.models.DPMultinomial`)."""

from __future__ import annotations

from typing import Any

from bayes_risk._specs import cli_option

__all__ = ["DP_MULTINOMIAL"]

DP_MULTINOMIAL: dict[str, dict[str, Any]] = {
    "epsilon": cli_option(
        "--epsilon", "ε of differential privacy of each synthetic dataset (a release of m "
        "datasets has m·ε); sets the prior count per cell to n/(e^ε − 1)",
        type=float, metavar="E"),
    "alpha": cli_option(
        "--alpha", "Dirichlet prior count per cell (instead of --epsilon; then ε = log(1 + n/α) "
        "per dataset)", type=float, metavar="A"),
}
