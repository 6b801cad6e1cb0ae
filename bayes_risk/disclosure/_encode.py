"""Input handling of the empirical disclosure measures: every key and the target as integer
codes shared by all tables (a missing value the level ``"Missing"``, as in synthpop; numeric
columns one level per value unless grouped).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from bayes_risk._constraints import COLUMN_NAMES, SequenceOf, check_value
from bayes_risk._numeric import decimals_of
from bayes_risk.data.levels import normalise_level
from bayes_risk.data.missing import missing_kinds
from bayes_risk.data.schema import CATEGORICAL_TYPES, Schema
from bayes_risk.data.validate import encode, harmonise_levels, require_columns, validate_table
from bayes_risk.disclosure._rcompat import r_as_character
from bayes_risk.exceptions import ValidationError
from bayes_risk.utility._inputs import base_schema

__all__ = ["EncodedVar", "resolve_inputs", "encode_var", "combine_keys", "level_labels",
           "column_names", "MISSING_LABEL"]

MISSING_LABEL = "Missing"


def column_names(value: Any, argument: str, *, required: bool = True) -> list[str]:
    """The column names of ``argument`` (a name alone, or a sequence of them; ``None`` is none
    unless ``required``), each once (the one place the measures' column arguments are
    checked)."""
    if value is None and not required:
        return []
    return list(check_value([value] if isinstance(value, str) else value,
                            SequenceOf(COLUMN_NAMES.item, "column names", min_len=int(required),
                                       unique=True), argument))


@dataclass(frozen=True)
class EncodedVar:
    """One column as codes ``0..L-1`` over the original and every synthetic dataset: its
    ``labels`` (``"Missing"`` for ``na_code = L - 1``), ``orig`` and ``syn`` codes, and the
    ``breaks`` of a grouped numeric column."""

    name: str
    kind: str
    labels: list[str]
    na_code: int
    orig: np.ndarray
    syn: list[np.ndarray]
    breaks: np.ndarray | None = None

    @property
    def n_codes(self) -> int:
        return len(self.labels)


def resolve_inputs(
    original: Any,
    datasets: Sequence[pd.DataFrame],
    carried: Schema | None,
    schema: Schema | None,
    categorical: Iterable[str] | None,
    columns: Sequence[str],
    target: bool = False,
    recoded: Sequence[str] = (),
) -> Schema:
    """Schema of ``columns``, harmonised over the tables, every table checked; ``target``: the
    last column is the target; ``recoded``: the columns the release recodes
    (:func:`~bayes_risk.data.harmonise_levels`)."""
    schema = base_schema(original, schema=schema, carried=carried, categorical=categorical)
    for c in columns:  # the keys, then the target (if any) last
        schema.check_columns([c], "target" if target and c == columns[-1] else "keys")
    sub = schema.select(columns)
    # the schema may be the release's (its manifest), so the original is checked on its own
    names = ["original", *(f"synthetic dataset {l}" for l in range(1, len(datasets) + 1))]
    tables = []
    for name, t in zip(names, [original, *datasets], strict=True):
        require_columns(t, columns, name)
        tables.append(t[list(columns)])
    # none is empty: the entries' as_synthetic_list(synthetic, original=...) refused it
    sub = harmonise_levels(tables[0], tables[1:], schema=sub, recoded=recoded)
    for name, t in zip(names, tables, strict=True):
        validate_table(t, sub, name=name, allow_nan=True)
    return sub


def level_labels(values: Iterable[Any], var: EncodedVar, argument: str) -> set[str]:
    """Labels of levels given by label or by value; an unknown level is an error."""
    out: set[str] = set()
    for v in values:
        if isinstance(v, str) and var.kind == "numeric" and v not in var.labels:
            try:  # a number typed on the command line: "100000" is the level "1e+05"
                out.add(r_as_character(float(v)))
            except ValueError:
                out.add(v)
        elif isinstance(v, str):
            out.add(v)
        elif var.kind == "numeric" and isinstance(v, (int, float, np.number)):
            out.add(r_as_character(float(v)))
        else:
            out.add(str(normalise_level(v)))
    unknown = sorted(out - set(var.labels))
    if unknown:
        raise ValidationError(
            f"{argument}: {unknown} are not levels of {var.name!r} "
            f"(levels: {var.labels[:10]}{' ...' if len(var.labels) > 10 else ''}).",
            code="UNKNOWN_LEVEL")
    return out


def _numeric_codes(arrays: list[np.ndarray], compat: bool) -> tuple[list[np.ndarray], list[str]]:
    """Codes of distinct values (numeric order); in compat mode values are merged by their R
    text form (15 significant digits), as ``factor()`` does."""
    finite = [a[~np.isnan(a)] for a in arrays]
    uv = np.unique(np.concatenate(finite)) if finite else np.empty(0)
    labels_u = [r_as_character(u) for u in uv]
    if compat and len(uv):
        new = np.ones(len(uv), dtype=bool)
        new[1:] = np.asarray(labels_u[1:]) != np.asarray(labels_u[:-1])
        ucode = np.cumsum(new) - 1
        labels = [lab for lab, keep in zip(labels_u, new, strict=True) if keep]
    else:
        ucode = np.arange(len(uv))
        labels = labels_u
    na = len(labels)
    out = []
    for a in arrays:
        c = np.full(len(a), na, dtype=np.int64)
        ok = ~np.isnan(a)
        c[ok] = ucode[np.searchsorted(uv, a[ok])]
        out.append(c)
    return out, [*labels, MISSING_LABEL]


def _group_breaks(values: np.ndarray, n: int) -> np.ndarray:
    """synthpop's grouping: quantile breaks of the pooled values (type 7), unique; equal-width
    breaks when that leaves fewer than 3 groups."""
    br = np.unique(np.quantile(values, np.linspace(0.0, 1.0, n + 1)))
    if len(br) - 1 < 3:
        br = np.unique(np.linspace(values.min(), values.max(), n + 1))
    return br


def _interval_labels(br: np.ndarray) -> list[str]:
    f = [f"{b:.8g}" for b in br]
    return [f"[{f[i]},{f[i + 1]}" + ("]" if i == len(br) - 2 else ")") for i in range(len(br) - 1)]


def encode_var(
    name: str,
    original: pd.DataFrame,
    datasets: Sequence[pd.DataFrame],
    schema: Schema,
    *,
    ngroups: int | None = None,
    compat: bool = False,
    argument: str = "ngroups_target",
) -> EncodedVar:
    """Codes of one column over the original and every synthetic dataset. A numeric column's
    released values are compared at the original's precision (rounded to the decimals to which
    every original value is recorded, at most 6), unless ``compat`` (synthpop's exact digits)."""
    spec = schema[name]
    tables = [original, *datasets]
    if spec.type in CATEGORICAL_TYPES:
        if ngroups:
            raise ValidationError(
                f"{argument} = {ngroups}: column {name!r} is {spec.type}; only a numeric "
                "column can be grouped.",
                code="WRONG_DTYPE")
        levels = list(spec.levels or ())
        na = len(levels)
        codes = []
        for t in tables:
            c = encode(t, schema, [name])[:, 0]
            codes.append(np.where(c < 0, na, c))
        labels = [str(v) for v in levels] + [MISSING_LABEL]
        return EncodedVar(name, "categorical", labels, na, codes[0], codes[1:])
    arrays = [t[name].to_numpy(dtype=np.float64) for t in tables]
    if ngroups:
        return _grouped(name, arrays, spec.missing_codes, int(ngroups), argument)
    digits = None if compat else decimals_of(arrays[0])
    if digits is not None:
        # the intruder reads released values at the precision the original records them (whole
        # dollars, say): a value moved by less, as a smoothing spline of dense values moves it,
        # is still the original's value (synthpop compares the digits as they are: compat)
        arrays = [arrays[0], *(np.round(a, digits) for a in arrays[1:])]
    codes, labels = _numeric_codes(arrays, compat)
    return EncodedVar(name, "numeric", labels, len(labels) - 1, codes[0], codes[1:])


def _grouped(name: str, arrays: list[np.ndarray], missing_codes: Sequence[float], ngroups: int,
             argument: str) -> EncodedVar:
    """A numeric column grouped into intervals; each declared missing-value code (synthpop's
    ``cont.na``) is a group of its own, left out of the breaks, and a missing value is
    ``"Missing"``."""
    kinds = [missing_kinds(a, missing_codes) for a in arrays]
    pooled = np.concatenate([a[k == 0] for a, k in zip(arrays, kinds, strict=True)])
    if pooled.size == 0 or pooled.min() == pooled.max():
        raise ValidationError(
            f"{argument} = {ngroups}: column {name!r} has a single distinct value (besides "
            "missing values); there is nothing to group.",
            code="CONSTANT_COLUMN")
    from bayes_risk._memory import check_memory

    # the quantile breaks (three arrays of ngroups + 1 doubles: ngroups=10**9 asked for 24 GB)
    # and, at most, a label of about 100 bytes a group
    check_memory(124.0 * (ngroups + 1), argument,
                 what=f"the breaks of {ngroups:,} groups of column {name!r}")
    br = _group_breaks(pooled, ngroups)
    ng = len(br) - 1
    na = ng + len(missing_codes)
    codes = []
    for a, kd in zip(arrays, kinds, strict=True):
        c = np.full(len(a), na, dtype=np.int64)
        ok = kd == 0
        # [b_i, b_{i+1}) with the last group closed (cut(right = FALSE, include.lowest))
        c[ok] = np.clip(np.searchsorted(br, a[ok], side="right") - 1, 0, ng - 1)
        for k in range(len(missing_codes)):
            c[kd == 2 + k] = ng + k
        codes.append(c)
    labels = [*_interval_labels(br), *(r_as_character(v) for v in missing_codes),
              MISSING_LABEL]
    return EncodedVar(name, "grouped", labels, na, codes[0], codes[1:], breaks=br)


def combine_keys(
    keys: Sequence[EncodedVar],
) -> tuple[np.ndarray, list[np.ndarray], np.ndarray, np.ndarray]:
    """One code per key combination, shared by all tables.

    Returns the original's codes, each synthetic dataset's codes, per combination a boolean
    row telling which key is missing in it, and per combination the code of every key.
    """
    m = len(keys[0].syn)
    lens = [len(keys[0].orig)] + [len(s) for s in keys[0].syn]
    cols = [np.concatenate([k.orig, *k.syn]) for k in keys]
    sizes = [k.n_codes for k in keys]
    if float(np.prod(np.asarray(sizes, dtype=np.float64))) < 2.0**62:
        # mixed-radix code of the combination: a 1-d unique is much faster than rows
        strides = np.cumprod([1, *sizes[::-1]])[:-1][::-1]
        flat = np.zeros(len(cols[0]), dtype=np.int64)
        for c, st in zip(cols, strides, strict=True):
            flat += c * np.int64(st)
        uflat, inverse = np.unique(flat, return_inverse=True)
        uniq = np.column_stack([(uflat // np.int64(st)) % n
                                for st, n in zip(strides, sizes, strict=True)])
    else:
        uniq, inverse = np.unique(np.column_stack(cols), axis=0, return_inverse=True)
    inverse = inverse.ravel()
    na = np.column_stack([uniq[:, j] == k.na_code for j, k in enumerate(keys)])
    bounds = np.cumsum([0, *lens])
    orig = inverse[: bounds[1]]
    syn = [inverse[bounds[l + 1]: bounds[l + 2]] for l in range(m)]
    return orig, syn, na, uniq
