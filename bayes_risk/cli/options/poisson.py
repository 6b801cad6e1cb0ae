"""Options of ``bayes-risk fit`` declared by the Poisson mixtures
(:class:`bayes_risk.models.PoissonMixture`)."""

from __future__ import annotations

from bayes_risk.registry import ModelOption

__all__ = ["POISSON_MIXTURE"]

POISSON_MIXTURE: tuple[ModelOption, ...] = (
    ModelOption("--components", "n_components", "truncation level K of the mixture (default 50)",
                {"type": int, "metavar": "K"}),
    ModelOption("--synthesis-mode", "synthesis_mode",
                "variant mp: marginal (class P) or posterior_class (class O)",
                {"choices": ["marginal", "posterior_class"]}),
    ModelOption("--sampler", "sampler", "gibbs (default) or nuts",
                {"choices": ["gibbs", "nuts"]}),
    ModelOption("--starts", "starts",
                "Gibbs sampler: how each chain starts, cycled over the chains (spread, few or "
                "prior); default overdispersed (prior, spread, few)",
                {"nargs": "+", "metavar": "KIND",
                 "choices": ["overdispersed", "spread", "few", "prior"]}),
    ModelOption("--variant", "variant",
                "mp (mixture of Poissons), mm (totals preserved) or tcmm (tail-collapsed MM, "
                "provisional)", {"choices": ["mp", "mm", "tcmm"]}),
    ModelOption("--q", "q", "variant tcmm: tail quantile q in (0, 1]",
                {"type": float, "metavar": "Q"}),
)
