"""Posterior-predictive replicates of synthesized columns, drawn in chunks (the models'
``posterior_replicates``); replicate ``r`` uses child stream ``r`` of the seed, so chunking
and ``start`` do not change them. See :doc:`/user_guide/posterior_replicates`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

import numpy as np
import pandas as pd

from bayes_risk._constraints import Interval, check_params
from bayes_risk._rng import RandomSeed, replicate_rng, seed_sequence
from bayes_risk.data.normalise import select_columns
from bayes_risk.data.validate import require_synthesized

__all__ = ["iter_replicates", "check_replicate_columns"]

_SETTINGS = {"chunk_size": Interval(int, 1), "n": [Interval(int, 0), None]}


def check_replicate_columns(
    columns: Sequence[str] | None, synthesized: Sequence[str], model: str
) -> list[str]:
    """Requested columns (default: every synthesized one); each must be synthesized."""
    synthesized = list(synthesized)
    if columns is None:
        return synthesized
    cols = [columns] if isinstance(columns, str) else [str(c) for c in columns]
    require_synthesized(cols, synthesized, f"posterior replicates of this {model}",
                        note="; unsynthesized columns are released unchanged and need no "
                             "replicates")
    return cols


def iter_replicates(
    draw_one: Callable[[np.random.Generator], pd.DataFrame],
    n: int | None,
    *,
    columns: Sequence[str],
    chunk_size: int,
    random_seed: RandomSeed,
    start: int = 0,
) -> Iterator[list[pd.DataFrame]]:
    """Yield lists of at most ``chunk_size`` replicates ``draw_one(rng)`` (``columns`` only);
    ``n=None``: until the consumer stops."""
    check_params({"chunk_size": chunk_size, "n": n}, _SETTINGS)
    seq = seed_sequence(random_seed)
    cols = list(columns)
    want = pd.Index(cols)
    r = int(start)
    stop = None if n is None else int(start) + int(n)
    while stop is None or r < stop:
        hi = r + int(chunk_size) if stop is None else min(stop, r + int(chunk_size))
        chunk = []
        for k in range(r, hi):
            z = draw_one(replicate_rng(seq, k))
            chunk.append(select_columns(z, cols, want))
        yield chunk
        r = hi

