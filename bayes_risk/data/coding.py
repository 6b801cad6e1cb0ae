"""Bottom and top coding of values (synthpop's ``sdc()``, :func:`bayes_risk.sdc`) and the
original coded as a release's manifest says its values were, for the measures that match what
an intruder knows to the release."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["code_values", "coded_as_released", "coding_text", "without_coding"]


def code_values(col: pd.Series, bottom: float | None, top: float | None,
                exclude: Any = ()) -> tuple[pd.Series, int, int]:
    """``col`` bottom- and top-coded (values in ``exclude`` left alone), with the numbers of
    values coded at each end."""
    x = col.to_numpy(dtype=np.float64, na_value=np.nan)
    free = ~np.isin(x, np.asarray(exclude, dtype=np.float64))
    # float bounds: a None side in np.where would make the column's values Python objects
    lo, hi = (-np.inf if bottom is None else float(bottom)), (np.inf if top is None else float(top))
    below, above = free & (x < lo), free & (x > hi)
    coded = pd.Series(np.where(below, lo, np.where(above, hi, x)), index=col.index,
                      name=col.name)
    # an integer column coded at integer bounds stays an integer column
    fits = not pd.api.types.is_integer_dtype(col) or all(
        b is None or float(b).is_integer() for b in (bottom, top))
    return (coded.astype(col.dtype) if fits else coded), int(below.sum()), int(above.sum())


def coded_as_released(original: pd.DataFrame, release: Any, columns: Sequence[str]
                      ) -> tuple[pd.DataFrame, dict[str, list[float | None]]]:
    """The original's ``columns`` bottom- and top-coded as the release's manifest says its
    values were (``extra["post_processing"]``), and the bounds applied by column.

    The bounds are published with the release, so an intruder who knows a target's true value
    codes it the same way before matching it to the released values; a measure that matched the
    uncoded value would miss every coded record's match and understate the risk.
    ``original`` itself when the release codes none of ``columns``.
    """
    steps = [s for s in (getattr(release, "extra", None) or {}).get("post_processing") or []
             if s.get("operation") == "bottom_top_coding"]
    applied: dict[str, list[float | None]] = {}
    out = original
    for step in steps:
        for c, (b, t) in step["bounds"].items():
            if c in columns and c in original.columns:
                out = out.copy() if out is original else out
                out[c] = code_values(out[c], b, t, (step.get("exclude") or {}).get(c, ()))[0]
                applied[c] = [b, t]
    return out, applied


def without_coding(extra: dict[str, Any] | None, column: str) -> dict[str, Any]:
    """A release's ``extra`` with ``column`` taken out of its bottom and top coding steps (the
    release with that column's values put back uncoded)."""
    extra = dict(extra or {})
    steps = []
    for s in extra.get("post_processing") or []:
        if s.get("operation") == "bottom_top_coding" and column in s["bounds"]:
            s = {**s, "bounds": {c: b for c, b in s["bounds"].items() if c != column}}
        steps.append(s)
    if "post_processing" in extra:
        extra["post_processing"] = steps
    return extra


def coding_text(bounds: dict[str, list[float | None]]) -> str:
    """``{"Age": [None, 82]}`` as ``"Age top 82"``."""
    return "; ".join(c + "".join(f" {side} {v:g}" for side, v in zip(("bottom", "top"), b,
                                                                       strict=True)
                                 if v is not None) for c, b in bounds.items())
