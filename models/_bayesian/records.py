"""The records and draws of a Bayesian synthesizer: record selections, the synthesized rows of a
release, ``draw_indices=`` arguments and posterior variables as ``[H, ...]`` arrays."""


from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from bayes_risk._constraints import Interval, SequenceOf, check_value
from bayes_risk.data.validate import record_mask, require_frame
from bayes_risk.exceptions import SchemaError, ValidationError


def check_synthesized_records(records: Any, n: int) -> np.ndarray | None:
    """A ``records=`` argument of ``fit``: ``None`` (every record) or its
    :func:`~bayes_risk.data.validate.record_mask`."""
    return None if records is None else record_mask(records, n)


def synthesized_part(z: pd.DataFrame, rows: np.ndarray, n: int, name: str = "synthetic"
                     ) -> pd.DataFrame:
    """The rows ``rows`` (the synthesized records) of a released dataset ``z`` of ``n`` rows."""
    require_frame(z, name)
    if len(z) != n:
        raise SchemaError(
            f"{name} has {len(z)} rows; the model synthesizes selected records of a table of "
            f"{n} rows, so a released dataset must have {n}.",
            code="ROW_COUNT_MISMATCH",
        )
    return z.iloc[rows].reset_index(drop=True)


def check_draw_indices(H: int, draw_indices: Any = None) -> np.ndarray:
    """A ``draw_indices=`` argument of a model with ``H`` draws as flattened draw indices."""
    if draw_indices is None:
        return np.arange(H, dtype=np.int64)
    arr = np.asarray(draw_indices)
    if arr.dtype == bool:
        if arr.shape != (H,):
            raise ValidationError(
                f"draw_indices given as a boolean mask must have length H = {H}. "
                f"Got shape {arr.shape}."
            )
        return np.flatnonzero(arr).astype(np.int64)
    arr = np.atleast_1d(arr)
    check_value(arr.tolist() if arr.ndim == 1 else arr, SequenceOf(
        Interval(int, 0, H - 1), f"draw indices in 0..{H - 1} (or a boolean mask of the H = "
        f"{H} draws)", min_len=0), "draw_indices")
    return arr.astype(np.int64)


def stacked_values(post: Any, name: str, draw_indices: np.ndarray | None = None) -> np.ndarray:
    """Variable ``name`` of the ``posterior`` group ``post`` as an ``[H, ...]`` array
    (chain-major), optionally restricted to the flattened indices ``draw_indices``."""
    if name not in post.data_vars:
        raise ValidationError(f"posterior has no variable {name!r}.", code="POSTERIOR_INVALID")
    da = post[name]
    dims = ["chain", "draw", *[d for d in da.dims if d not in ("chain", "draw")]]
    vals = np.asarray(da.transpose(*dims).values)
    vals = vals.reshape(-1, *vals.shape[2:])
    return vals if draw_indices is None else vals[draw_indices]
