"""Options of ``bayes-risk fit`` declared by DPMPM (:class:`bayes_risk.models.DPMPM`)."""

from __future__ import annotations

from typing import Any

from bayes_risk._specs import cli_option

__all__ = ["COMPONENTS", "DPMPM", "SAMPLER"]

#: options the Poisson mixtures declare alike
COMPONENTS = cli_option("--components", "truncation level K of the mixture (default 50)",
                        type=int, metavar="K")
SAMPLER = cli_option("--sampler", "gibbs (default) or nuts", choices=("gibbs", "nuts"))

DPMPM: dict[str, dict[str, Any]] = {
    "n_components": COMPONENTS,
    # the modes as the model spells them (conditional_us)
    "synthesis_mode": cli_option(
        "--synthesis-mode", "marginal (full synthesis default), conditional_us (partial "
        "synthesis default) or posterior_class",
        choices=("marginal", "conditional_us", "posterior_class"), dashes=False),
    "sampler": SAMPLER,
    "alpha_prior": cli_option(
        "--alpha-prior", "Gamma(shape, rate) prior of the concentration (default 0.25 0.25)",
        type=float, nargs=2, metavar=("SHAPE", "RATE")),
    "dirichlet_prior": cli_option(
        "--dirichlet-prior", "Dirichlet parameter of the category probabilities (default 1)",
        type=float, metavar="A"),
    "structural_zeros": cli_option(
        "--structural-zeros", "CSV of impossible combinations (structural zeros; "
        "NPBayesImputeCat's MCZ format: one pattern per row, an empty field = any level). They "
        "get probability zero in the model, the synthetic data and the risk likelihoods; the "
        "table is saved in the model folder", metavar="FILE"),
    "alpha_warmup_bound": cli_option(
        "--alpha-warmup-bound", "Gibbs sampler: upper bound of the concentration α in the first "
        "warm-up sweeps of each chain (default: the 95 %% quantile of its prior, 4.9 for the "
        "default prior); the kept draws are never bounded", type=float, metavar="B"),
    "alpha_warmup_sweeps": cli_option(
        "--alpha-warmup-sweeps", "Gibbs sampler: warm-up sweeps per chain with α bounded "
        "(default 100; 0: no bound)", type=int, metavar="W"),
}
