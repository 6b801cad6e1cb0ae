"""The draw bootstrap's Monte Carlo figures of an attribute summary (``mc_uncertainty`` of
:meth:`~bayes_risk.results.AttributeRiskResult.to_dict`): the key of their intervals, made
(:func:`bayes_risk.attribute.uncertainty.file_uncertainty`) and read only through this
module, and their table (:func:`mc_table`, documented as
``bayes_risk.results.attribute.mc_table``); the smoothed plug-in's Monte Carlo error
(:func:`plugin_mc_note`) and the flagged records its bounds, or k̂'s, count at worst
(:func:`flagged_at_worst`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["BOUND_FLAGS", "flagged_at_worst", "mc_interval", "mc_interval_key", "mc_table",
           "plugin_mc_note"]

#: the record flags that bound ``p_true`` (``p_true_lower``, ``p_true_upper``, ``is_top_upper``):
#: a record flagged for them alone is counted at its bounds' worst (:func:`flagged_at_worst`)
BOUND_FLAGS = frozenset({"MC_ERROR_HIGH", "KHAT_HIGH"})

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


def plugin_mc_note(records: pd.DataFrame, settings: Mapping[str, Any]) -> dict[str, Any]:
    """The smoothed plug-in's Monte Carlo error (``plugin_monte_carlo`` of the summary): the
    records with one and those the material rule leaves unflagged (``{}``: no plug-in)."""
    if "mc_se_max" not in records.columns:
        return {}
    has = records["mc_se_max"].to_numpy() > 0
    mf = records["flag_codes"].str.contains("MC_ERROR_HIGH", regex=False).to_numpy()
    return {"rule": "material", "level": settings.get("mc_level"),
            "tolerance": settings.get("khat_tolerance"),
            "records_with_mc_error": int(has.sum()),
            "records_mc_error_immaterial": int((has & ~mf).sum())}


def flagged_at_worst(flagged: pd.DataFrame, bf_upper: np.ndarray | None,
                     evidence_factor: float) -> dict[str, int]:
    """How many of the ``flagged`` records each share counts at risk at its worst case
    (``flagged_at_worst`` of the summary): a record flagged for its bounds alone
    (:data:`BOUND_FLAGS`) where they allow it — the truth ranked first (``is_top_upper``), its
    Bayes factor at ``p_true_upper`` (``bf_upper``; ``None``: no evidence share) at least
    ``evidence_factor`` — and every other one.

    Examples
    --------
    >>> recs = pd.DataFrame({"flag_codes": ["MC_ERROR_HIGH", "MC_ERROR_HIGH", "LOW_ESS_Q"],
    ...                      "p_true_upper": [0.6, 0.05, np.nan],
    ...                      "is_top_upper": [1.0, 0.0, np.nan]})
    >>> flagged_at_worst(recs, np.array([13.5, 0.47, np.nan]), 3.0)
    {'prop_top': 2, 'prop_evidence': 2}
    """
    bounded = np.zeros(len(flagged), dtype=bool)
    if "p_true_upper" in flagged.columns:
        only = flagged["flag_codes"].map(lambda s: set(s.split(";")) <= BOUND_FLAGS)
        bounded = only.to_numpy(dtype=bool) & np.isfinite(
            flagged["p_true_upper"].to_numpy(dtype=float))
    top = flagged["is_top_upper"].to_numpy(dtype=float) > 0 if bounded.any() else bounded
    out = {"prop_top": int(np.sum(~bounded | top))}
    if bf_upper is not None:
        with np.errstate(invalid="ignore"):
            out["prop_evidence"] = int(np.sum(~bounded | (bf_upper >= evidence_factor)))
    return out
