"""Options of ``bayes-risk fit`` declared by the multinomial–Dirichlet synthesizer
(:class:`bayes_risk.models.DPMultinomial`)."""

from __future__ import annotations

from bayes_risk.registry import ModelOption

__all__ = ["DP_MULTINOMIAL"]

DP_MULTINOMIAL: tuple[ModelOption, ...] = (
    ModelOption("--epsilon", "epsilon",
                "ε of differential privacy of each synthetic dataset (a release of m datasets "
                "has m·ε); sets the prior count per cell to n/(e^ε − 1)",
                {"type": float, "metavar": "E"}),
    ModelOption("--alpha", "alpha",
                "Dirichlet prior count per cell (instead of --epsilon; then ε = log(1 + n/α) "
                "per dataset)", {"type": float, "metavar": "A"}),
)
