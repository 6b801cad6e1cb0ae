"""The distance-to-closest-record (DCR) baseline. See :doc:`/methods/membership`."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from bayes_risk.exceptions import arg_name, on_command_line

__all__ = ["closest_distance", "overfitting_share", "encode_for_distance"]

#: targets per block of the distance computation (fewer when the memory budget is smaller)
_BLOCK = 64
#: bytes a (target, row) pair takes in a block (measured: 64 targets x 150,000 rows peaked
#: 330 MB): the sum of distances and a column's differences, indicators and choices
_PAIR_BYTES = 40


def encode_for_distance(tables: list[pd.DataFrame], schema: Any,
                        reference: pd.DataFrame) -> tuple[list[np.ndarray], np.ndarray, np.ndarray]:
    """The tables coded for the distance: ``coded``, ``is_cat`` and ``scale``."""
    cols = list(schema.names)
    is_cat = np.array([schema[c].is_categorical for c in cols])
    coded = [np.empty((len(t), len(cols))) for t in tables]
    scale = np.ones(len(cols))
    for j, c in enumerate(cols):
        if is_cat[j]:
            pooled = pd.concat([t[c] for t in tables], ignore_index=True).astype(object)
            codes, _ = pd.factorize(pooled, use_na_sentinel=True)  # NaN -> -1, its own code
            a = 0
            for k, t in enumerate(tables):
                coded[k][:, j] = codes[a : a + len(t)]
                a += len(t)
        else:
            ref = pd.to_numeric(reference[c], errors="coerce").to_numpy(np.float64)
            rng = float(np.nanmax(ref) - np.nanmin(ref)) if np.isfinite(ref).any() else 0.0
            scale[j] = 1.0 / rng if rng > 0 else 0.0
            for k, t in enumerate(tables):
                coded[k][:, j] = pd.to_numeric(t[c], errors="coerce").to_numpy(np.float64)
    return coded, is_cat, scale


def _min_distance(a: np.ndarray, b: np.ndarray, is_cat: np.ndarray,
                  scale: np.ndarray) -> np.ndarray:
    """Smallest distance from each row of ``a`` to the rows of ``b``, in blocks of rows of
    ``a`` sized from the memory budget (the distances do not depend on the blocks)."""
    from bayes_risk._memory import check_memory, working_bytes

    per = _PAIR_BYTES * max(len(b), 1)
    # the distance baseline is turned off by AttackSpec(dcr=False), on the command line --no-dcr
    off = arg_name("dcr", False) if on_command_line() else "AttackSpec(dcr=False)"
    check_memory(per, f"the synthetic datasets or {off}",
                 what=f"the distances of a record to {len(b):,} released rows")
    block = int(min(_BLOCK, max(1, working_bytes(_BLOCK * per) // per)))
    out = np.empty(len(a))
    p = a.shape[1]
    for s in range(0, len(a), block):
        x = a[s : s + block, None, :]
        y = b[None, :, :]
        d = np.zeros((x.shape[0], b.shape[0]))
        for j in range(p):
            xj, yj = x[:, :, j], y[:, :, j]
            if is_cat[j]:
                d += xj != yj
            else:
                nx, ny = np.isnan(xj), np.isnan(yj)
                diff = np.minimum(np.abs(xj - yj) * scale[j], 1.0)
                d += np.where(nx & ny, 0.0, np.where(nx | ny, 1.0, diff))
        out[s : s + block] = d.min(axis=1) / p
    return out


def closest_distance(targets: pd.DataFrame, datasets: list[pd.DataFrame], original: pd.DataFrame,
                     schema: Any) -> np.ndarray:
    """DCR of each target: its smallest distance to a row of any released dataset."""
    coded, is_cat, scale = encode_for_distance([targets, *datasets], schema, original)
    release = np.concatenate(coded[1:], axis=0)
    release = np.unique(release, axis=0)  # identical rows have the same distance
    return _min_distance(coded[0], release, is_cat, scale)


def overfitting_share(datasets: list[pd.DataFrame], original: pd.DataFrame, holdout: pd.DataFrame,
                      schema: Any, rng: np.random.Generator) -> dict[str, float]:
    """SDMetrics' ``DCROverfittingProtection`` (ties count one half)."""
    k = min(len(original), len(holdout))
    train = original.iloc[np.sort(rng.choice(len(original), size=k, replace=False))]
    hold = holdout.iloc[np.sort(rng.choice(len(holdout), size=k, replace=False))]
    coded, is_cat, scale = encode_for_distance([train, hold, *datasets], schema, original)
    syn = np.concatenate(coded[2:], axis=0)
    d_train = _min_distance(syn, coded[0], is_cat, scale)
    d_hold = _min_distance(syn, coded[1], is_cat, scale)
    closer = float(np.mean(d_train < d_hold))
    ties = float(np.mean(d_train == d_hold))
    return {"share_closer_to_training": closer + 0.5 * ties, "share_ties": ties,
            "n_compared": int(k)}
