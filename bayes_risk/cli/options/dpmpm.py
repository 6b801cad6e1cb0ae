"""Options of ``bayes-risk fit`` declared by DPMPM (:class:`bayes_risk.models.DPMPM`)."""

from __future__ import annotations

from bayes_risk.registry import ModelOption

__all__ = ["COMPONENTS", "DPMPM", "SAMPLER"]

#: options the Poisson mixtures declare alike
COMPONENTS = ModelOption("--components", "n_components",
                         "truncation level K of the mixture (default 50)",
                         {"type": int, "metavar": "K"})
SAMPLER = ModelOption("--sampler", "sampler", "gibbs (default) or nuts",
                      {"choices": ["gibbs", "nuts"]})

DPMPM: tuple[ModelOption, ...] = (
    COMPONENTS,
    ModelOption("--synthesis-mode", "synthesis_mode",
                "marginal (full synthesis default), conditional_us (partial synthesis default) "
                "or posterior_class",
                {"choices": ["marginal", "conditional_us", "posterior_class"]}),
    SAMPLER,
    ModelOption("--alpha-prior", "alpha_prior",
                "Gamma(shape, rate) prior of the concentration (default 0.25 0.25)",
                {"type": float, "nargs": 2, "metavar": ("SHAPE", "RATE")}),
    ModelOption("--dirichlet-prior", "dirichlet_prior",
                "Dirichlet parameter of the category probabilities (default 1)",
                {"type": float, "metavar": "A"}),
    ModelOption("--structural-zeros", "structural_zeros",
                "CSV of impossible combinations (structural zeros; NPBayesImputeCat's MCZ "
                "format: one pattern per row, an empty field = any level). They get probability "
                "zero in the model, the synthetic data and the risk likelihoods; the table is "
                "saved in the model folder",
                {"metavar": "FILE"}),
    ModelOption("--alpha-warmup-bound", "alpha_warmup_bound",
                "Gibbs sampler: upper bound of the concentration α in the first warm-up sweeps "
                "of each chain (default: the 95 %% quantile of its prior, 4.9 for the default "
                "prior); the kept draws are never bounded",
                {"type": float, "metavar": "B"}),
    ModelOption("--alpha-warmup-sweeps", "alpha_warmup_sweeps",
                "Gibbs sampler: warm-up sweeps per chain with α bounded (default 100; 0: no "
                "bound)", {"type": int, "metavar": "W"}),
)
