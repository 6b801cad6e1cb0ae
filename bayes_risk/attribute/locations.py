"""What the distance-based file-level summaries read from an attribute-risk result: each
record's decoded candidates with their posterior, and the candidates' locations."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from bayes_risk._constraints import InstanceOf, Interval, SequenceOf, check_value
from bayes_risk.data.validate import decode_values
from bayes_risk.exceptions import ValidationError

__all__ = ["location_xy", "check_location_columns", "record_posteriors"]

_LOCATIONS = InstanceOf(Mapping, "a mapping {level: (x, y)}")
_XY = SequenceOf(Interval(float), "numbers, an (x, y) pair", min_len=2, max_len=2)


def location_xy(values: pd.DataFrame, location_columns: Sequence[str],
                locations: Mapping[Any, Sequence[float]] | None) -> np.ndarray:
    """Coordinates ``[n, 2]`` of decoded values (two columns, or an areal one via ``locations``,
    checked by :func:`check_location_columns`)."""
    if len(location_columns) == 2 and locations is None:
        return values[list(location_columns)].to_numpy(dtype=np.float64)
    if len(location_columns) == 1 and locations is not None:
        col = location_columns[0]
        out = np.empty((len(values), 2))
        for i, v in enumerate(values[col].tolist()):
            key = v if v in locations else (str(v) if str(v) in locations else None)
            if key is None:
                raise ValidationError(
                    f"locations has no centroid for level {v!r} of column {col!r}; give one "
                    "(x, y) pair for every level."
                )
            out[i] = np.asarray(locations[key], dtype=np.float64)
        return out
    raise ValidationError(
        "location_columns must be two numeric columns (coordinates), or one areal column "
        "together with locations={level: (x, y)}. "
        f"Got location_columns={list(location_columns)!r}"
        f" and locations={'given' if locations is not None else None}."
    )


def check_location_columns(result: Any, location_columns: Sequence[str] | None,
                           locations: Mapping[Any, Sequence[float]] | None) -> list[str]:
    """``location_columns`` as a list, among the columns the intruder guesses; each centroid of
    ``locations`` an (x, y) pair (checked here once, for every :func:`location_xy` after)."""
    for key, xy in (check_value(locations, [_LOCATIONS, None], "locations") or {}).items():
        check_value(xy, _XY, f"locations[{key!r}]")
    if not location_columns:
        raise ValidationError(
            f"kind needs location_columns (candidate columns {list(result.columns)})."
        )
    cols = list(location_columns)
    bad = [c for c in cols if c not in result.columns]
    if bad:
        raise ValidationError(
            f"location_columns {bad} are not among the columns the intruder guesses "
            f"({list(result.columns)}).",
            code="UNKNOWN_COLUMN"
        )
    return cols


def record_posteriors(result: Any) -> Iterator[tuple[int, int, pd.DataFrame, np.ndarray, int]]:
    """Yield ``(position, record id, decoded candidates, posterior, g0)`` per evaluated record."""
    recs = result.records.index.to_numpy()
    for k, cs in enumerate(result.candidates):
        post = np.exp(np.asarray(result.log_post[k], dtype=np.float64))
        yield k, int(recs[k]), decode_values(cs.values, cs.columns, result.schema), post, int(cs.g0)
