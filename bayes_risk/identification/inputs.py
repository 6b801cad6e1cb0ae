"""Reading the replicates of the known columns: the released datasets (checked, levels
harmonised) or user replicates of the synthesized known columns.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from bayes_risk._constraints import InstanceOf, SequenceOf, check_value
from bayes_risk.data.alignment import unchanged_column_error
from bayes_risk.data.levels import level_codes, normalise_level
from bayes_risk.data.missing import mask_missing_codes
from bayes_risk.data.normalise import select_columns
from bayes_risk.data.schema import (
    CATEGORICAL_TYPES,
    Schema,
    _describe_cells,
    _not_numbers,
    _sort_levels,
)
from bayes_risk.data.validate import (
    check_no_infinity,
    check_release_levels,
    harmonise_levels,
    release_levels,
    require_columns,
)
from bayes_risk.exceptions import SchemaError, ValidationError, arg_name

__all__ = ["released_replicates", "user_replicates", "numeric"]

#: one replicate of the known columns: column name → values
Replicate = Mapping[str, Any]


def numeric(s: pd.Series | np.ndarray, name: str, what: str) -> np.ndarray:
    """A known numeric column as float64, or a ``SchemaError`` naming it (text:
    ``WRONG_DTYPE``; ``inf``: ``INFINITE_VALUE``, the check every entry point shares)."""
    try:
        out = np.asarray(s, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise SchemaError(
            f"{what}: column {name!r} must be numeric (it is matched with a radius or exactly "
            "as a number).",
            code="WRONG_DTYPE",
        ) from err
    check_no_infinity(out, what, name)
    return out


def released_replicates(
    original: pd.DataFrame,
    datasets: Sequence[pd.DataFrame],
    known_us: list[str],
    known: list[str],
    sk: Schema,
    recoded: Sequence[str] = (),
    released: Sequence[np.ndarray] | None = None,
) -> tuple[list[Replicate], Schema]:
    """The known columns of every released dataset, checked, and the harmonised schema
    (``recoded``: the columns the release recodes, :func:`harmonise`; ``released``: per
    dataset, the records whose rows it holds when rows were removed after synthesis,
    ``bayes_risk.data.synthetic.released_records``)."""
    n = len(original)
    if not datasets:
        raise ValidationError("give the synthetic datasets (or replicates=).")
    if released is not None and known_us:
        raise ValidationError(
            f"rows were removed from this release after synthesis, and the known column(s) "
            f"{known_us} are released unsynthesized: the original's values of a record whose "
            "row was removed are not released. Declare them synthesized (the release's "
            "manifest says so of a full synthesis) or audit the release before the removal.",
            code="REMEDY_NOT_APPLICABLE")
    colmaps = []
    for l, z in enumerate(datasets, start=1):
        cmap = {str(c): c for c in z.columns}
        require_columns(z, known, f"synthetic dataset {l}")
        # rows removed after synthesis: each row is its record's (released_records checked)
        if released is None and len(z) != n:
            raise SchemaError(
                f"synthetic dataset {l} has {len(z)} rows but the original has {n}; "
                "identification risk pairs each record with its own row of every dataset (the "
                "true match, Hornby & Hu 2021), which a release with another number of rows "
                "(records removed after synthesis, a synthetic population) does not have: "
                "measure it with the disclosure measures or the attacks instead.",
                code="ROW_COUNT_MISMATCH",
            )
        colmaps.append(cmap)
    rep_all = []
    for l, (z, cmap) in enumerate(zip(datasets, colmaps, strict=True), start=1):
        d = {}
        for c in known:
            col = z[cmap[c]]  # missing values are allowed (user guide, Missing values)
            if sk[c].missing_codes:
                col = mask_missing_codes(pd.DataFrame({c: col}), sk.missing_codes)[c]
            if sk[c].type not in CATEGORICAL_TYPES and (
                not pd.api.types.is_numeric_dtype(col.dtype)
                or pd.api.types.is_bool_dtype(col.dtype)
            ):
                bad = _not_numbers(col)[0]
                raise SchemaError(
                    f"synthetic dataset {l}: column {c!r} is {sk[c].type} but holds text"
                    + (f" ({_describe_cells(col, bad)}; records numbered from 0)"
                       if len(bad) else "")
                    + "; expected numbers.",
                    code="WRONG_DTYPE",
                )
            if sk[c].type not in CATEGORICAL_TYPES:
                check_no_infinity(col.to_numpy(dtype=np.float64, na_value=np.nan),
                                  f"synthetic dataset {l}", c)
            d[c] = col
        rep_all.append(d)
    sk = harmonise(sk, rep_all, original, recoded)
    check_unsynthesized_equal(original, rep_all, known_us, sk)
    return rep_all, sk


def user_replicates(
    replicates: Any, original: pd.DataFrame, known_s: list[str], sk: Schema,
    recoded: Sequence[str] = (),
) -> tuple[list[Replicate], Schema]:
    """User replicates of the synthesized known columns, checked, and the harmonised schema
    (``recoded``: the columns the release recodes, as for released datasets)."""
    n = len(original)
    check_value(replicates, SequenceOf(InstanceOf(object, "an array"), "arrays [n, number of "
                                       "synthesized known columns]"), "replicates")
    rep_s = []
    want = pd.Index(known_s)
    for r, arr in enumerate(replicates, start=1):
        if isinstance(arr, pd.DataFrame):
            require_columns(arr, known_s, f"replicate {r}")
            df = select_columns(arr, known_s, want)
        else:
            a = np.asarray(arr)
            if a.ndim == 1 and len(known_s) == 1:
                a = a[:, None]
            if a.ndim != 2 or a.shape != (n, len(known_s)):
                raise ValidationError(
                    f"replicate {r} has shape {a.shape}; expected ({n}, {len(known_s)}) "
                    f"(columns {known_s}).",
                    code="ROW_COUNT_MISMATCH"
                )
            df = pd.DataFrame({c: a[:, j] for j, c in enumerate(known_s)})
        if len(df) != n:
            raise ValidationError(f"replicate {r} has {len(df)} rows; expected {n}.",
                                  code="ROW_COUNT_MISMATCH")
        df = mask_missing_codes(df, sk.missing_codes)  # declared codes are missing, as released
        for c in known_s:
            if sk[c].type not in CATEGORICAL_TYPES:
                df[c] = numeric(df[c], c, f"replicate {r}")
        rep_s.append(df)  # missing values: as in released datasets (user guide, Missing values)
    sk = harmonise_levels(original, rep_s, schema=sk, recoded=recoded)
    return rep_s, sk


def harmonise(sk: Schema, frames: Sequence[Mapping[str, pd.Series]], original: pd.DataFrame,
              recoded: Sequence[str] = ()) -> Schema:
    """Categorical levels of ``sk`` with the synthetic columns' appended sorted, as
    :func:`bayes_risk.data.validate.harmonise_levels` (one ``pd.unique`` per column), whose
    check of the levels the original never holds it shares."""
    new = {}
    syn_only: dict[str, list] = {}
    for c in sk.categorical:
        base = list(sk[c].levels or ())
        seen = {normalise_level(v) for v in base}
        allowed = release_levels(sk[c], original)
        parts: dict[tuple, np.ndarray] = {}
        for d in frames:
            col = d[c]
            a = (col.astype(object).to_numpy() if isinstance(col.dtype, pd.CategoricalDtype)
                 else col.to_numpy())
            # the same memory once (an unsynthesized column every dataset shares with the
            # original: at 10^6 records and 5 datasets 0.07 s of CPU fewer for three columns)
            parts.setdefault((a.__array_interface__["data"][0], a.shape, a.strides, a.dtype.str),
                             a)
        try:
            vals = pd.unique(np.concatenate(list(parts.values())))
        except (TypeError, ValueError):
            vals = pd.unique(np.concatenate([np.asarray(p, dtype=object)
                                             for p in parts.values()]))
        extra, outside = [], []
        for v in vals:
            if v is None or (isinstance(v, float) and np.isnan(v)):
                continue
            nv = normalise_level(v)
            if nv not in seen:
                seen.add(nv)
                extra.append(nv)
            if allowed is not None and nv not in allowed:
                allowed.add(nv)
                outside.append(nv)
        if extra:
            new[c] = tuple(base) + _sort_levels(extra)
        if outside:
            syn_only[c] = [
                (next(l for l, d in enumerate(frames, start=1)
                      if (np.asarray([normalise_level(x) for x in d[c]], dtype=object)
                          == v).any()), v)
                for v in outside
            ]
    check_release_levels(syn_only, recoded, original=original)
    return sk.with_levels(new) if new else sk


def check_unsynthesized_equal(original, frames, known_us, sk) -> None:
    for c in known_us:
        raw = original[c].to_numpy()
        a = None
        for l, z in enumerate(frames, start=1):
            zr = z[c].to_numpy()
            if zr.dtype == raw.dtype and zr.dtype.kind in "iufb" and np.array_equal(zr, raw):
                continue
            if a is None:
                a = _comparable(original[c], sk, c)
            b = _comparable(z[c], sk, c)
            neq = (a != b) & ~(np.isnan(a) & np.isnan(b)) if a.dtype.kind == "f" else a != b
            if neq.any():
                raise unchanged_column_error(
                    f"synthetic dataset {l}", c, original[c], z[c], np.asarray(neq),
                    what="known unsynthesized column",
                    hint=f"list the column in {arg_name('synthesized')}",
                )


def _comparable(col: pd.Series, sk: Schema, c: str) -> np.ndarray:
    """Level codes (categorical) or float64 values, to compare a column across tables."""
    if sk[c].type in CATEGORICAL_TYPES:
        return level_codes(col, sk[c].levels or (), unknown="missing")
    return col.to_numpy(dtype=np.float64)
