"""Options of ``bayes-risk fit`` declared by the Poisson mixtures
(:class:`bayes_risk.models.PoissonMixture`)."""

from __future__ import annotations

from typing import Any

from bayes_risk._specs import cli_option
from bayes_risk.fit_options.dpmpm import COMPONENTS, SAMPLER

__all__ = ["POISSON_MIXTURE"]

POISSON_MIXTURE: dict[str, dict[str, Any]] = {
    "n_components": COMPONENTS,
    "synthesis_mode": cli_option(
        "--synthesis-mode", "variant mp: marginal (class P) or posterior_class (class O)",
        choices=("marginal", "posterior_class"), dashes=False),
    "sampler": SAMPLER,
    "variant": cli_option(
        "--variant", "mp (mixture of Poissons), mm (totals preserved) or tcmm (tail-collapsed "
        "MM, provisional)", choices=("mp", "mm", "tcmm")),
    "q": cli_option("--q", "variant tcmm: tail quantile q in (0, 1]", type=float,
                    metavar="Q"),
}
