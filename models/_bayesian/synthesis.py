"""Where the synthetic datasets of a Bayesian synthesizer come from: ``m`` posterior draws far
apart in the chain (Hu 2019 §3.2.5)."""

from __future__ import annotations

import numpy as np


def spread_draws(H: int, m: int) -> np.ndarray:
    """``m`` flattened draw indices evenly spaced over ``0..H-1``, ending at the last draw:
    ``h_l = floor(l H / m) - 1``, ``l = 1..m`` (spacing ``H/m``; Hu 2019 §3.2.5)."""
    return ((np.arange(1, m + 1, dtype=np.int64) * H) // m - 1).astype(np.int64)
