"""Stage 2 of :func:`bayes_risk.membership.membership_risk`: the targets (members, holdout rows,
look-alikes) with their role, source and slot, and the population rows drawn from the model."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from bayes_risk.membership import partial as _partial

__all__ = ["plan", "population_rows", "conditional_population_rows", "ROWS_PER_DRAW"]

#: population records drawn per posterior-predictive dataset for the normaliser (m > 1)
ROWS_PER_DRAW = 4


def plan(model: Any, orig: pd.DataFrame, members: np.ndarray, hold: pd.DataFrame | None,
         population: int, pop_rng: np.random.Generator, slot_rng: np.random.Generator,
         rows_: np.ndarray | None = None) -> tuple[Any, ...]:
    """The targets (members, holdout rows, population look-alikes): role, source, row and slot."""
    look = population_rows(model, population, pop_rng, rows_) if population else None
    targets, role, source, src_row = _targets(orig, members, hold, look)
    n_non = len(targets) - len(members)
    slots = np.concatenate([members, slot_rng.integers(0, len(orig), size=n_non)])
    return targets, role, source, src_row, slots.astype(np.int64)


def _targets(orig: pd.DataFrame, members: np.ndarray, hold: pd.DataFrame | None,
             look: pd.DataFrame | None) -> tuple[pd.DataFrame, list[str], list[str], list[int]]:
    """The targets (members, holdout rows, look-alikes) with role, source and row."""
    parts = [orig.iloc[members]]
    role = ["member"] * len(members)
    source = ["original"] * len(members)
    src_row = list(members)
    for tab, name in ((hold, "holdout"), (look, "population")):
        if tab is not None and len(tab):
            parts.append(tab)
            role += ["non-member"] * len(tab)
            source += [name] * len(tab)
            src_row += list(range(len(tab)))
    return pd.concat(parts, ignore_index=True), role, source, src_row


def population_rows(model: Any, k: int, rng: np.random.Generator,
                     rows_: np.ndarray | None = None) -> pd.DataFrame:
    """``k`` records from the posterior predictive ``p(· | y)``, a few rows per dataset."""
    sets = max(1, math.ceil(k / ROWS_PER_DRAW))
    syn = model.synthesize(sets, random_seed=rng)
    rows = []
    for z in syn.datasets:
        if rows_ is not None:
            z = z.iloc[rows_]
        take = rng.choice(len(z), size=min(ROWS_PER_DRAW, len(z)), replace=False)
        rows.append(z.iloc[np.sort(take)])
    return pd.concat(rows, ignore_index=True).iloc[:k].reset_index(drop=True)


def _stacked_datasets(model: Any, sets: int, rng: np.random.Generator,
                      rows_: np.ndarray | None) -> tuple[pd.DataFrame, list[int]]:
    """``model.synthesize(sets)``'s datasets stacked (rows ``rows_``), and each one's row count."""
    direct = getattr(model, "_synthesize_stacked", None)
    if direct is not None:
        return direct(sets, random_seed=rng, rows=rows_)
    syn = model.synthesize(sets, random_seed=rng)
    frames = [z if rows_ is None else z.iloc[rows_] for z in syn.datasets]
    return pd.concat(frames, ignore_index=True), [len(z) for z in frames]


def conditional_population_rows(
    model: Any, original: pd.DataFrame, original_keys: np.ndarray, keys: list[int], k: int,
    rng: np.random.Generator, schema: Any, us: list[str], rows_: np.ndarray | None = None,
) -> dict[int, pd.DataFrame]:
    """Up to ``k`` rows of ``p(· | r, y)`` for each cell ``r`` of the unsynthesized columns."""
    if not keys:
        return {}
    uniq, counts = np.unique(original_keys if rows_ is None else original_keys[rows_],
                             return_counts=True)
    fewest = int(counts[np.searchsorted(uniq, keys)].min())
    per = min(ROWS_PER_DRAW, fewest)
    sets = max(1, math.ceil(k / per))
    sets = min(sets, int(getattr(model, "n_draws", sets)))
    stacked, sizes = _stacked_datasets(model, sets, rng, rows_)
    # positions of each cell's records in the datasets stacked, gathered with one take per cell
    # at the end (a take per cell and dataset is what cost: up to H datasets x the cells)
    take: dict[int, list[np.ndarray]] = {key: [] for key in keys}
    need = np.asarray(keys, dtype=np.int64)
    # the cells of all the datasets' rows at once (a key depends on its row and the reference
    # only): one pass over the stacked table, not one per dataset
    stacked_keys = _partial.cell_keys([stacked], schema, us, reference=original)[0]
    bounds = np.cumsum([0, *sizes])
    for offset, end in zip(bounds[:-1], bounds[1:], strict=True):
        zkeys = stacked_keys[offset:end]
        order = np.argsort(zkeys, kind="stable")
        lo = np.searchsorted(zkeys[order], need, side="left")
        hi = np.searchsorted(zkeys[order], need, side="right")
        for key, a, b in zip(keys, lo, hi, strict=True):
            rows = order[a:b]
            size = min(len(rows), max(1, math.ceil(k / sets)))
            if size:
                take[key].append(offset + np.sort(rng.choice(rows, size=size, replace=False)))
    return {key: stacked.iloc[np.concatenate(v)[:k]].reset_index(drop=True)
            for key, v in take.items()}
