"""Stage 4 of :func:`bayes_risk.membership.membership_risk`: the record table, warning codes,
file summary and settings of :class:`~bayes_risk.results.membership.MembershipRiskResult`."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from bayes_risk._rng import RandomSeed, seed_to_json
from bayes_risk.membership import dcr as _dcr
from bayes_risk.membership import partial as _partial
from bayes_risk.membership.summaries import file_summary

__all__ = ["record_table", "result_warnings", "result_summary", "unsynthesized_summary",
           "selection_summary"]


def record_table(columns: dict[str, Any], *, partial: tuple[Any, Any] | None,
                 normaliser: tuple[Any, Any, Any] | None, dcr: np.ndarray | None,
                 flags: list[list[str]], selection: dict[str, Any] | None = None) -> pd.DataFrame:
    """The per-target table of :class:`MembershipRiskResult` (index ``target``)."""
    table = pd.DataFrame(columns)
    if partial is not None:
        table["unsynthesized_match"], table["log_p_unsynthesized"] = partial
    for name, col in (selection or {}).items():
        table[name] = col
    if normaliser is not None:
        table["log_normaliser"], table["normaliser_khat"], table["normaliser_ess"] = normaliser
    if dcr is not None:
        table["dcr"] = dcr
    table["flag_codes"] = [";".join(f) for f in flags]
    table.index.name = "target"
    return table


def result_warnings(table: pd.DataFrame, n_non: int, H: int, model: Any,
                     posteriors: list[Any]) -> list[str]:
    """The result's warning codes (flags, no non-member, few draws, approximations, MCMC)."""
    warnings_: list[str] = []
    # a record released whole is not an unstable estimate (MEMBERSHIP_RELEASED_WHOLE says so)
    if int((~table["flag_codes"].isin(["", "RELEASED_WHOLE"])).sum()):
        warnings_.append("MEMBERSHIP_FLAGGED")
    if n_non == 0:
        warnings_.append("NO_NON_MEMBERS")
    if H < 20:
        warnings_.append("H_TOO_SMALL")
    methods = getattr(model, "posterior_methods", None)
    if callable(methods) and "laplace" in set(methods().values()):
        warnings_.append("APPROXIMATE_POSTERIOR")
    for post in posteriors:  # MCMC problems of the fit and of the refits (RHAT_HIGH, ...)
        warnings_ += [str(c) for c in getattr(post, "warnings_", []) or []
                      if str(c) not in warnings_]
    return warnings_


def result_summary(table: pd.DataFrame, datasets: list[pd.DataFrame], orig: pd.DataFrame,
             hold: pd.DataFrame | None, schema: Any, *, threshold: float, bootstrap: int,
             rng: np.random.Generator, dcr: bool) -> dict[str, Any]:
    """The result's file summary, with the DCR overfitting share given a holdout."""
    overfit = None
    if dcr and hold is not None and len(hold):
        overfit = _dcr.overfitting_share(datasets, orig, hold, schema, rng.spawn(1)[0])
    summary = file_summary(table, threshold=threshold, bootstrap=bootstrap, rng=rng, dcr=dcr)
    if overfit is not None:
        summary["dcr_overfitting"] = overfit
    return summary


def unsynthesized_summary(orig: pd.DataFrame, schema: Any, us: list[str],
                           orig_keys: np.ndarray, members: np.ndarray, log_p_us: np.ndarray,
                           match: np.ndarray, role: list[str]) -> dict[str, Any]:
    """What the released unsynthesized values alone reveal (the audit's cause reads it)."""
    uniq, counts = np.unique(orig_keys, return_counts=True)
    alone = counts[np.searchsorted(uniq, orig_keys[members])] == 1
    is_non = np.asarray(role) == "non-member"
    return {
        "columns": us,
        "n_cells": _partial.n_cells(orig, schema, us),
        # the recorded unit of each numeric column, which sets its cells
        "resolution": {c: _partial.resolution(orig[c]) for c in us
                       if not schema[c].is_categorical},
        "share_members_unique": float(alone.mean()) if len(alone) else float("nan"),
        # 1 / p(r | y_{-i}): what the unsynthesized values alone multiply a member's ratio by
        "median_factor_members": float(np.median(np.exp(-log_p_us[:len(members)])))
        if len(members) else float("nan"),
        "share_non_members_matching": float(match[is_non].mean()) if is_non.any()
        else float("nan"),
    }


def selection_summary(rule: Any, selected: np.ndarray, members: np.ndarray,
                       released_whole: np.ndarray, columns: dict[str, np.ndarray],
                       role: list[str]) -> dict[str, Any]:
    """The file summary of the selection rule."""
    is_non = np.asarray(role) == "non-member"
    ruled_out = columns["slot_selected"] & ~columns.get(
        "selected_by_rule", np.ones(len(role), dtype=bool))
    return {"rule": rule.description, "kind": rule.kind, "n_selected": int(selected.sum()),
            "n_records": int(selected.size),
            "n_members_released_whole": int(released_whole[: len(members)].sum()),
            "n_non_members_released_whole": int(released_whole[is_non].sum()),
            "n_non_members_ruled_out": int(ruled_out[is_non].sum())}


def _result_settings(pi: float, prior: float | str, threshold: float,
                     mc_thresholds: tuple[float, float], *, m: int, H: int, normaliser_draws: int,
                     n_members: int, n_holdout: int, population: int, bootstrap: int,
                     random_seed: RandomSeed, model: Any, us: list[str], alpha: float,
                     selection: Any = None, n_selected: int | None = None) -> dict[str, Any]:
    """The settings a :class:`MembershipRiskResult` reports."""
    return {
        "prior": pi,
        "prior_spec": prior if isinstance(prior, str) else "user",
        "threshold": float(threshold),
        "m": m,
        "n_draws": H,
        "khat_threshold": mc_thresholds[0],
        "ess_threshold": mc_thresholds[1],
        "normaliser": "exact (m = 1)" if m == 1 else f"{normaliser_draws} population draws",
        "n_members": n_members,
        "n_holdout": n_holdout,
        "n_population": population,
        "bootstrap": bootstrap,
        "random_seed": seed_to_json(random_seed),
        "model": type(model).__name__,
        "unsynthesized": us,
        "unsynthesized_concentration": alpha if us else None,
        # releases that synthesize selected records: the stated rule and how many it selects
        "selection": None if selection is None else selection.description,
        "n_selected": n_selected,
    }
