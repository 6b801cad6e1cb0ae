"""Options of ``bayes-risk fit`` declared by DPMPM (:class:`bayes_risk.models.DPMPM`)."""

from __future__ import annotations

from bayes_risk.registry import ModelOption

__all__ = ["DPMPM"]

DPMPM: tuple[ModelOption, ...] = (
    ModelOption("--components", "n_components", "truncation level K of the mixture (default 50)",
                {"type": int, "metavar": "K"}),
    ModelOption("--synthesis-mode", "synthesis_mode",
                "marginal (full synthesis default), conditional_us (partial synthesis default) "
                "or posterior_class",
                {"choices": ["marginal", "conditional_us", "posterior_class"]}),
    ModelOption("--sampler", "sampler", "gibbs (default) or nuts",
                {"choices": ["gibbs", "nuts"]}),
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
    ModelOption("--thin", "thin",
                "Gibbs sampler: sweeps per kept draw after the warm-up (default 5 when --draws "
                "is not given, else 1)", {"type": int, "metavar": "T"}),
    ModelOption("--max-sweeps", "max_sweeps",
                "Gibbs sampler: most sweeps per chain (warm-up included) of a run that extends "
                "itself, doubling its window and thinning, until its convergence checks pass or "
                "its chains stay apart (default 50000 when --draws is not given, else 0; 0: "
                "none)", {"type": int, "metavar": "N"}),
    ModelOption("--alpha-warmup-bound", "alpha_warmup_bound",
                "Gibbs sampler: upper bound of the concentration α in the first warm-up sweeps "
                "of each chain (default: the 95 %% quantile of its prior, 4.9 for the default "
                "prior); the kept draws are never bounded",
                {"type": float, "metavar": "B"}),
    ModelOption("--alpha-warmup-sweeps", "alpha_warmup_sweeps",
                "Gibbs sampler: warm-up sweeps per chain with α bounded (default 100; 0: no "
                "bound)", {"type": int, "metavar": "W"}),
    ModelOption("--starts", "starts",
                "Gibbs sampler: how each chain starts, cycled over the chains: spread (every "
                "class occupied), few (3 classes) or prior (a prior draw); default overdispersed "
                "(spread, few, prior), so that the chains come from both ends of the number of "
                "classes",
                {"nargs": "+", "metavar": "KIND",
                 "choices": ["overdispersed", "spread", "few", "prior"]}),
    ModelOption("--temperatures", "temperatures",
                "Gibbs sampler: replicas of each chain's parallel-tempering ladder (default 1: "
                "none); T >= 2 also estimates each chain's marginal likelihood (which regime "
                "carries the posterior mass) at about T times the sweeps",
                {"type": int, "metavar": "T"}),
)
