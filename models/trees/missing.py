"""Missing values in the tree synthesizers (synthpop's ``NA`` and ``cont.na``): a level of its
own, or a two-step kind and value. See :doc:`/methods/attribute`, Tree synthesizers.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from bayes_risk.data.missing import missing_kinds
from bayes_risk.data.schema import Schema
from bayes_risk.models.trees.seqtree import column_codes

__all__ = ["FILL", "KIND_SUFFIX", "missing_layout", "design_inputs", "encoded_values",
           "kind_codes", "refusal_hint"]

#: value given to the missing cells of a numeric predictor (its kind input tells them apart)
FILL = 0.0
#: name of the missingness-kind input of a numeric predictor in a tree's design
KIND_SUFFIX = ".missing"


def refusal_hint(method: str) -> str:
    """What the ``MISSING_VALUES`` error of a synthesizer without missing-value support adds."""
    return (f"The {method} synthesizer does not accept missing values; DPMPM, CART and random "
            "forests do, and so do the Poisson mixture's variant 'mp', the sequential "
            "regressions and the small-cell PMM (user guide, Synthesizers, Missing values). Leave "
            "the column or its records out, or fill the cells first.")


def missing_layout(data: pd.DataFrame, schema: Schema) -> dict[str, dict[str, Any]]:
    """Layout of every column with a missing value in ``data`` (empty for complete data).

    Returns
    -------
    dict
        ``{column: {"type": "level"}}`` for a categorical column, ``{column: {"type":
        "two_step", "codes": [code, ...]}}`` for a numeric one (its declared missing-value codes).
    """
    out: dict[str, dict[str, Any]] = {}
    for spec in schema:
        s = data[spec.name]
        if spec.is_categorical:
            if bool(s.isna().any()):
                out[spec.name] = {"type": "level"}
        else:
            codes = [float(c) for c in (spec.missing_codes or ())]
            if (kind_codes(s.to_numpy(dtype=np.float64, na_value=np.nan), codes) > 0).any():
                out[spec.name] = {"type": "two_step", "codes": codes}
    return out


def kind_codes(values: np.ndarray, codes: Sequence[float]) -> np.ndarray:
    """Missingness kind of numeric values: 0 observed, 1 empty, ``2 + k`` the ``k``-th code."""
    return missing_kinds(np.asarray(values, dtype=np.float64), tuple(codes))


def n_kinds(layout: Mapping[str, Any]) -> int:
    """Number of missingness kinds of a two-step column (observed, empty, each code)."""
    return 2 + len(layout["codes"])


def design_inputs(
    schema: Schema,
    predictors: Sequence[str],
    layout: Mapping[str, Mapping[str, Any]],
    value_of: Callable[[str], np.ndarray],
) -> tuple[list[str], list[str], list[int], list[np.ndarray]]:
    """Inputs of a tree's design for ``predictors`` (names, kinds, numbers of levels, arrays
    from ``value_of(p)``, the values as the synthesizer holds them)."""
    names: list[str] = []
    kinds: list[str] = []
    nlev: list[int] = []
    arrays: list[np.ndarray] = []
    for p in predictors:
        spec = schema[p]
        lay = layout.get(p)
        v = value_of(p)
        if spec.is_categorical:
            d = int(spec.n_levels)
            kind = "nominal" if spec.type == "categorical" else "ordinal"
            if lay is not None:
                c = np.asarray(v, dtype=np.int64)
                v = np.where(c < 0, d, c)
                d += 1
            names.append(p)
            kinds.append(kind)
            nlev.append(d)
            arrays.append(v)
        elif lay is None:
            names.append(p)
            kinds.append("numeric")
            nlev.append(0)
            arrays.append(v)
        else:
            x = np.asarray(v, dtype=np.float64)
            k = kind_codes(x, lay["codes"])
            names += [p, p + KIND_SUFFIX]
            kinds += ["numeric", "nominal"]
            nlev += [0, n_kinds(lay)]
            arrays += [np.where(k > 0, FILL, x), k]
    return names, kinds, nlev, arrays


def encoded_values(data: pd.DataFrame, schema: Schema, layout: dict[str, dict[str, Any]],
                   columns: Sequence[str] | None = None) -> dict[str, np.ndarray]:
    """The trees' view of ``data`` (``columns`` only): level codes (missing: ``d``) or floats."""
    values: dict[str, np.ndarray] = {}
    for c in schema.names if columns is None else columns:
        if schema[c].is_categorical:
            v = column_codes(data, schema, c)
            if c in layout:
                v = np.where(v < 0, schema[c].n_levels, v)
            values[c] = v
        else:
            values[c] = data[c].to_numpy(dtype=np.float64, na_value=np.nan) if c in layout \
                else data[c].to_numpy(dtype=np.float64)
    return values
