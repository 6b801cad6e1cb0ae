"""What drives each verdict line: numbers the steps compute from the data the measure saw."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

__all__ = [
    "attribute_drivers",
    "identification_drivers",
    "marginal_discrepancy",
]


def _aligned(original: pd.DataFrame, datasets: Sequence[pd.DataFrame], aligned: bool) -> bool:
    """Whether record ``i`` of every dataset is the synthetic version of original record ``i``."""
    return aligned and bool(datasets) and all(len(z) == len(original) for z in datasets)


def _same(a: pd.Series, b: pd.Series) -> np.ndarray:
    """Element-wise equality of two columns, missing values never equal."""
    # as objects: a categorical column compares with another dtype only value by value
    a, b = a.astype(object).reset_index(drop=True), b.astype(object).reset_index(drop=True)
    return (a == b).fillna(False).to_numpy(dtype=bool) & a.notna().to_numpy() & b.notna().to_numpy()


def attribute_drivers(original: pd.DataFrame, datasets: Sequence[pd.DataFrame],
                      columns: Sequence[str], records: Sequence[int], spec: Any,
                      numeric: Sequence[str], *, aligned: bool) -> dict[str, Any] | None:
    """How often a record's true synthesized value is among the released values, against how
    often one of its alternative candidates is (:doc:`/methods/attribute`).

    Row-aligned datasets (``aligned``) compare the record's ``m`` released values (``scope``
    ``"record"``); otherwise every value of the pooled datasets (``scope`` ``"pooled"``).
    ``None`` when no record is assessed.
    """
    from bayes_risk.attribute.candidates import grid_points

    if not datasets or not len(records):
        return None
    by_record = _aligned(original, datasets, aligned)
    rec = np.asarray(records, dtype=int)
    out: dict[str, Any] = {"n_records": len(rec), "m": len(datasets),
                           "scope": "record" if by_record else "pooled", "columns": {}}
    any_true = np.zeros(len(rec), dtype=bool)
    for c in columns:
        truth = original[c].to_numpy()[rec]
        ok = pd.notna(truth)
        if by_record:
            # [R, m]: each record's released values, compared element by element
            rel = np.column_stack([z[c].to_numpy()[rec] for z in datasets])
            with np.errstate(invalid="ignore"):
                has_true = ok & np.any(rel == truth[:, None], axis=1)
            if c in numeric:
                rel_num = pd.to_numeric(pd.Series(rel.ravel()), errors="coerce").to_numpy(
                    dtype=float).reshape(rel.shape)
            else:
                has_alt = ok & np.any(pd.notna(rel) & (rel != truth[:, None]), axis=1)
        else:
            pooled = pd.concat([z[c] for z in datasets], ignore_index=True).dropna()
            shown = pd.unique(pooled.to_numpy())
            has_true = np.array([bool(ok[i]) and bool(np.any(shown == truth[i]))
                                 for i in range(len(rec))], dtype=bool)
            if c in numeric:  # sorted once: each record's alternatives looked up, not scanned
                shown_num = np.sort(pd.to_numeric(pd.Series(shown), errors="coerce").dropna()
                                    .to_numpy(float))
            else:
                has_alt = np.array([bool(ok[i]) and any(pd.notna(v) and v != truth[i]
                                                        for v in shown)
                                    for i in range(len(rec))], dtype=bool)
        if c in numeric:
            has_alt = np.zeros(len(rec), dtype=bool)
            grid = spec.grids.get(c, spec.default_grid)
            for i in np.flatnonzero(ok):
                try:
                    pts, g0 = grid_points(float(truth[i]), grid, column=c)
                except Exception:  # a grid the step itself refused: no alternatives to count
                    continue
                alts = np.delete(pts, g0)
                if by_record:
                    has_alt[i] = bool(np.isin(rel_num[i], alts).any())
                elif shown_num.size:
                    k = np.minimum(np.searchsorted(shown_num, alts), shown_num.size - 1)
                    has_alt[i] = bool(np.any(shown_num[k] == alts))
        any_true |= has_true
        out["columns"][c] = {"pct_true_released": float(has_true.mean() * 100),
                             "pct_alternative_released": float(has_alt.mean() * 100),
                             "kind": "numeric" if c in numeric else "categorical"}
    out["pct_any_true_released"] = float(any_true.mean() * 100)
    return out


def identification_drivers(original: pd.DataFrame, datasets: Sequence[pd.DataFrame],
                           known: Sequence[str],
                           known_synthesized: Sequence[str], *,
                           aligned: bool) -> dict[str, Any]:
    """Targets unique on the known columns (``n_sample_unique``) and, per synthesized known
    column, the per cent of records released with their original value (``pct_released_equal``;
    ``None`` unless row-aligned)."""
    # one label per combination of known values (missing values a value of their own)
    codes = [pd.factorize(original[c], use_na_sentinel=False)[0] for c in known]
    combo = pd.Series(list(zip(*codes, strict=True))) if codes else pd.Series([], dtype=object)
    n_unique = int((combo.map(combo.value_counts()) == 1).sum())
    eq: dict[str, float] | None = None
    if _aligned(original, datasets, aligned):
        eq = {c: float(np.mean([_same(original[c], z[c]).mean() for z in datasets]) * 100)
              for c in known_synthesized}
    return {"n_targets": len(original), "n_sample_unique": n_unique,
            "pct_sample_unique": float(n_unique / max(len(original), 1) * 100),
            "pct_released_equal": eq}


def marginal_discrepancy(original: pd.DataFrame, datasets: Sequence[pd.DataFrame],
                         columns: Sequence[str], categorical: Sequence[str],
                         top: int = 3) -> list[dict[str, Any]]:
    """The synthesized variables whose marginal differs most between the original and the
    pooled release, largest first, in percentage points (level shares; KS distance for numbers)."""
    pooled = pd.concat(list(datasets), ignore_index=True)
    rows = []
    for c in columns:
        if c in categorical:
            po = original[c].astype("object").fillna("<NA>").value_counts(normalize=True)
            ps = pooled[c].astype("object").fillna("<NA>").value_counts(normalize=True)
            d = float((po.reindex(po.index.union(ps.index), fill_value=0.0)
                       - ps.reindex(po.index.union(ps.index), fill_value=0.0)).abs().max())
        else:
            a = pd.to_numeric(original[c], errors="coerce").dropna().to_numpy(dtype=float)
            b = pd.to_numeric(pooled[c], errors="coerce").dropna().to_numpy(dtype=float)
            if not (a.size and b.size):
                continue
            grid = np.union1d(a, b)
            fa = np.searchsorted(np.sort(a), grid, side="right") / a.size
            fb = np.searchsorted(np.sort(b), grid, side="right") / b.size
            d = float(np.abs(fa - fb).max())
        rows.append({"variable": str(c), "points": d * 100,
                     "kind": "categorical" if c in categorical else "numeric"})
    rows.sort(key=lambda r: -r["points"])
    return rows[:top]
