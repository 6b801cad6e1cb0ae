"""Options of ``bayes-risk fit`` declared by the Poisson mixtures
(:class:`bayes_risk.models.PoissonMixture`)."""

from __future__ import annotations

from bayes_risk.cli.options.dpmpm import COMPONENTS, SAMPLER
from bayes_risk.registry import ModelOption

__all__ = ["POISSON_MIXTURE"]

POISSON_MIXTURE: tuple[ModelOption, ...] = (
    COMPONENTS,
    ModelOption("--synthesis-mode", "synthesis_mode",
                "variant mp: marginal (class P) or posterior_class (class O)",
                {"choices": ["marginal", "posterior_class"]}),
    SAMPLER,
    ModelOption("--variant", "variant",
                "mp (mixture of Poissons), mm (totals preserved) or tcmm (tail-collapsed MM, "
                "provisional)", {"choices": ["mp", "mm", "tcmm"]}),
    ModelOption("--q", "q", "variant tcmm: tail quantile q in (0, 1]",
                {"type": float, "metavar": "Q"}),
)
