"""The draw bootstrap's Monte Carlo figures of an attribute summary (``mc_uncertainty`` of
:meth:`~bayes_risk.results.AttributeRiskResult.to_dict`): the key of their intervals, made
(:func:`bayes_risk.attribute.uncertainty.file_uncertainty`) and read only through this
module, and their table (:func:`mc_table`, documented as
``bayes_risk.results.attribute.mc_table``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

__all__ = ["mc_interval", "mc_interval_key", "mc_table"]

_PREFIX = "mc_interval_"


def mc_interval_key(level: float) -> str:
    """The key of the Monte Carlo intervals at ``level`` (a fraction): ``mc_interval_90`` for
    0.9, the level in whole per cent."""
    return f"{_PREFIX}{round(level * 100):d}"


def mc_interval(mc: Mapping[str, Any]) -> tuple[int | None, dict[str, list[float]]]:
    """The level in per cent and the intervals (figure → ``[low, high]``) of a Monte Carlo
    uncertainty dict (:func:`mc_interval_key`); ``(None, {})`` when it holds none."""
    key = next((k for k in mc if k.startswith(_PREFIX)), None)
    return (None, {}) if key is None else (int(key.removeprefix(_PREFIX)), mc[key])


def mc_table(mc: Mapping[str, Any]) -> pd.DataFrame:
    """The figures of a Monte Carlo uncertainty dict as a table."""
    level, intervals = mc_interval(mc)
    label = f"MC interval {level} %"

    def num(x: Any) -> float:
        return float("nan") if x is None else float(x)

    from bayes_risk._units import unit_of

    rows = []
    for f, v in mc["value"].items():
        lo, hi = intervals[f]
        unit = unit_of(f) or "rank"
        # shares and probabilities in per cent, as the file-level table beside it (issue 92)
        k = 100.0 if unit.startswith(("fraction", "probability")) else 1.0
        # a zero-width interval is not a 90 % interval: said as what it is
        rows.append({"figure": f, "unit": "per cent" if k == 100.0 else unit,
                     "value": k * num(v), "MCSE": k * num(mc["mc_se"][f]),
                     label: f"[{k * num(lo):.4g}, {k * num(hi):.4g}]" if lo != hi else
                     f"{k * num(lo):.4g} in ≥ {level} % of replicates (degenerate)"})
    return pd.DataFrame(rows)
