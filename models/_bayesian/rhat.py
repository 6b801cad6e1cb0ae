"""The R-hat the convergence and regime checks share (``convergence``, ``regimes``): the
threshold and the rank-normalised split R-hat of Vehtari et al. (2021), ``arviz_stats``' own."""

from __future__ import annotations

import numpy as np

__all__ = ["RHAT_MAX", "rhat_rank"]

#: R-hat above this flags non-convergence (Vehtari et al. 2021 recommend 1.01).
RHAT_MAX = 1.01


def rhat_rank(x: np.ndarray) -> float:
    """Rank-normalised split R-hat (bulk and folded) of ``x[chain, draw]``:
    ``arviz_stats.rhat(x, method="rank")`` (NaN: fewer than 2 chains or 4 draws)."""
    import arviz_stats

    return float(arviz_stats.rhat(np.asarray(x, dtype=np.float64), method="rank"))
