"""Declared missing-value codes and the missingness of a column (:doc:`/user_guide/data`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from bayes_risk._constraints import InstanceOf, check_value
from bayes_risk.exceptions import SchemaError, ValidationError

__all__ = [
    "check_missing_codes", "code_mask", "missing_kinds", "missing_mask",
    "mask_missing_codes", "parse_missing_codes", "parse_missing_labels"
]


def check_missing_codes(missing_codes: Any, columns: Sequence[str]) -> dict[str, tuple[float, ...]]:
    """Validate ``missing_codes`` (``{column: code or [codes]}``) against the table's columns.

    Returns
    -------
    dict
        ``{column: (float, ...)}``, codes as finite float64 numbers without repeats.

    Raises
    ------
    ValidationError
        Not a mapping, an unknown column, or a code that is not a finite number.
    """
    if missing_codes is None:
        return {}
    check_value(missing_codes, InstanceOf(Mapping, "a mapping {column: [codes]}, e.g. "
                                          "{'nociga': [-8]}"), "missing_codes")
    out: dict[str, tuple[float, ...]] = {}
    for c, codes in missing_codes.items():
        if c not in columns:
            raise SchemaError(f"missing_codes: column {c!r} is not in the data (columns: "
                              f"{list(columns)}).", code="UNKNOWN_COLUMN")
        vals = [codes] if np.isscalar(codes) else list(codes)
        fl = []
        for v in vals:
            try:
                f = float(v)
            except (TypeError, ValueError):
                f = float("nan")
            if isinstance(v, bool) or not np.isfinite(f):
                raise ValidationError(f"missing_codes: code {v!r} of column {c!r} is not a finite "
                                      "number; codes are declared for count and continuous "
                                      "columns (an empty cell is missing without a code).")
            fl.append(f)
        if fl:
            out[str(c)] = tuple(dict.fromkeys(fl))
    return out


def parse_missing_codes(items: Sequence[str] | None, argument: str = "--missing-code"
                        ) -> dict[str, list[float]]:
    """The numeric codes of ``COL=VALUE`` items: ``["nociga=-8", "Marital=NA"]`` gives
    ``{"nociga": [-8.0]}``."""
    return _missing_items(items, argument)[0]


def parse_missing_labels(items: Sequence[str] | None, argument: str = "--missing-code"
                         ) -> dict[str, list[str]]:
    """The text labels of ``COL=VALUE`` items (e.g. ``Marital=NA``) as ``{column: [label]}``."""
    return _missing_items(items, argument)[1]


def _missing_items(items: Sequence[str] | None, argument: str
                   ) -> tuple[dict[str, list[float]], dict[str, list[str]]]:
    """``COL=VALUE`` items split into finite numeric codes and labels (``nan``, ``inf``: as
    written in the file)."""
    codes: dict[str, list[float]] = {}
    labels: dict[str, list[str]] = {}
    for it in items or ():
        k, _, v = it.rpartition("=")
        if not k or not v:
            raise ValidationError(f"{argument} expects COLUMN=VALUE, e.g. nociga=-8 or "
                                  f"Marital=NA. Got {it!r}.")
        try:
            f = float(v)
        except ValueError:
            f = float("nan")
        if np.isfinite(f):
            codes.setdefault(k, []).append(f)
        else:
            labels.setdefault(k, []).append(v)
    return codes, labels


def _as_float(s: pd.Series | np.ndarray) -> np.ndarray | None:
    try:
        return np.asarray(pd.to_numeric(pd.Series(s), errors="coerce"), dtype=np.float64) \
            if isinstance(s, pd.Series) and not pd.api.types.is_numeric_dtype(s.dtype) \
            else np.asarray(s, dtype=np.float64)
    except (TypeError, ValueError):
        return None


def code_mask(s: pd.Series | np.ndarray, codes: Sequence[float]) -> np.ndarray:
    """Boolean mask of the cells holding one of ``codes``."""
    n = len(s)
    if not codes:
        return np.zeros(n, dtype=bool)
    v = _as_float(s)
    if v is None:
        return np.zeros(n, dtype=bool)
    return np.isin(v, np.asarray(codes, dtype=np.float64))


def missing_mask(s: pd.Series | np.ndarray, codes: Sequence[float] = ()) -> np.ndarray:
    """Boolean mask of the missing cells: empty, or one of the column's ``codes``."""
    dtype = getattr(s, "dtype", None)
    if isinstance(dtype, np.dtype) and dtype.kind in "biuf":
        # plain numpy numbers: NaN is the only empty value (``pd.isna`` costs a Series per call,
        # which the identification command pays once per column and dataset)
        v = np.asarray(s)
        empty = np.isnan(v) if dtype.kind == "f" else np.zeros(len(v), dtype=bool)
    else:
        empty = np.asarray(pd.isna(s), dtype=bool)
    return empty | code_mask(s, codes)


def missing_kinds(s: pd.Series | np.ndarray, codes: Sequence[float] = ()) -> np.ndarray:
    """Kind of missingness of every cell: 0 observed, 1 empty, ``2 + k`` the ``k``-th code."""
    out = np.where(np.asarray(pd.isna(s), dtype=bool), 1, 0).astype(np.int64)
    if codes:
        v = _as_float(s)
        if v is not None:
            for k, code in enumerate(codes):
                out[v == code] = 2 + k
    return out


def mask_missing_codes(df: pd.DataFrame, codes: Mapping[str, Sequence[float]]) -> pd.DataFrame:
    """``df`` with every declared missing-value code replaced by ``NaN`` (a copy when any is)."""
    hit = {c: code_mask(df[c], cs) for c, cs in codes.items() if c in df.columns and cs}
    hit = {c: m for c, m in hit.items() if m.any()}
    if not hit:
        return df
    out = df.copy()
    for c, m in hit.items():
        col = pd.to_numeric(out[c], errors="coerce").astype(np.float64)
        col[m] = np.nan
        out[c] = col
    return out
