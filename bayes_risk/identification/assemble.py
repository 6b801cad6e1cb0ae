"""Stage 3 of identification risk: record- and file-level measures from the engine output,
per dataset (Hornby & Hu 2021) or pooled (Reiter & Mitra 2009).
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from bayes_risk.identification import engine as _engine
from bayes_risk.identification.fallback import fallback_sets
from bayes_risk.identification.matching import MatchRule
from bayes_risk.identification.plan import IdentificationPlan, record_warning
from bayes_risk.identification.pooled_probabilities import PooledOutput, PooledProbabilities
from bayes_risk.identification.summary import file_measures, record_measures
from bayes_risk.results.identification import IdentificationResult

if TYPE_CHECKING:
    from bayes_risk.identification.evaluate import EngineOutput

__all__ = ["assemble"]


def _reported_T(rm: dict[str, np.ndarray], legacy_T: bool) -> np.ndarray:
    """``T`` as reported (IdentificationRiskCalculation: 1 when ``c = 0``), taken out of
    ``rm`` and set in place: no copy of an ``[N_T, m]`` table."""
    T_rep = rm.pop("T")
    if legacy_T:
        T_rep[rm["c"] == 0] = 1
    return T_rep


def _per_dataset(out: _engine.PerDatasetOutput, N_T: int, warn: dict[str, str]):
    rm = record_measures(out.c, out.T)
    fm = file_measures(out.c, out.T, rm)
    per = {k: np.asarray(v) for k, v in fm.items()}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        file = {k: float(np.nanmean(v)) if np.isfinite(v).any() else float("nan")
                for k, v in per.items()}
    zero_u = np.flatnonzero(per["n_unique"] == 0)
    if zero_u.size:
        record_warning(
            warn, "ZERO_UNIQUE",
            f"no unique match in dataset(s) {(zero_u + 1).tolist()}: true_match_rate_unique "
            "and false_match_rate are nan there (averages use the other datasets).")
    file["n_targets"] = N_T
    file["n_declared_mean"] = float(out.declared.sum(axis=0).mean())
    file["n_no_match"] = int(out.no_match_any.sum())
    return rm, file, per


def _pooled(plan: IdentificationPlan, rule: MatchRule, out: PooledOutput,
            T_rep: np.ndarray, rm: dict[str, np.ndarray], warn: dict[str, str]):
    prep = plan.prep
    fm = file_measures(out.c, out.T, rm)
    file = {k: (float(v) if np.ndim(v) == 0 else v) for k, v in fm.items()}
    file["n_unique"] = int(fm["n_unique"])
    file["true_match_risk"] = int(fm["true_match_risk"])
    rec_lab = np.where(prep.rec >= 0, prep.rec, 0)
    recs = pd.DataFrame({
        "target": np.asarray(plan.data.target_ids),
        "record": pd.array(np.asarray(plan.data.record_labels)[rec_lab], dtype=object),
        "in_sample": prep.in_sample,
        "c": rm["c"], "T": T_rep.astype(np.int64), "K": rm["K"].astype(np.int64),
        "W": rm["W"].astype(np.int64), "IR": rm["IR"],
        "declared": out.declared, "p_max": out.p_max, "p_out": out.p_out,
        "p_unassigned": out.p_unassigned,
    })
    recs.loc[~prep.in_sample, "record"] = None
    if int(fm["n_unique"]) == 0:
        record_warning(warn, "ZERO_UNIQUE",
                       "no unique match: true_match_rate_unique and false_match_rate are nan.")
    file["n_targets"] = prep.n_targets
    file["n_declared"] = int(out.declared.sum())
    file["n_no_match"] = int(out.no_match_any.sum())
    prob = None
    if out.prob is not None:  # None: the engine kept the measures only (knowledge sweep)
        fsets = fallback_sets(prep, rule) if out.fallback_extra.any() else None
        prob = PooledProbabilities(out.prob, out.fallback_value, out.fallback_extra, fsets,
                                   out.rows)
    return file, recs, prob


def assemble(plan: IdentificationPlan, rule: MatchRule, out: EngineOutput) -> IdentificationResult:
    """The :class:`~bayes_risk.identification.IdentificationResult` of one run."""
    warn = dict(plan.warnings)
    N_T = plan.prep.n_targets
    legacy_T = plan.settings.legacy_T_when_c0
    per_dataset = plan.settings.aggregation == "per_dataset"
    if per_dataset:
        rm, file, per = _per_dataset(out, N_T, warn)
        T_rep = _reported_T(rm, legacy_T)
        extra: dict[str, Any] = dict(_records=None, record_IR=rm["IR"].mean(axis=1), pooled=None,
                                     p_unassigned=None, per_dataset=per)
    else:
        rm = record_measures(out.c, out.T)
        T_rep = _reported_T(rm, legacy_T)
        file, recs, prob = _pooled(plan, rule, out, T_rep, rm, warn)
        extra = dict(_records=recs, record_IR=rm["IR"], pooled=prob,
                     p_unassigned=out.p_unassigned, per_dataset=None)
    n_nomatch = file["n_no_match"]
    if n_nomatch:
        record_warning(warn, "NO_MATCH",
                       f"{n_nomatch} of {N_T} target(s) match no released record in any "
                       "replicate (c = 0, IR = 0).")
    return IdentificationResult(
        c=rm["c"], T=T_rep, K=rm["K"], W=rm["W"], IR=rm["IR"], declared=out.declared,
        p_out=out.p_out, file=file, warnings=tuple(warn), warning_details=warn,
        settings=plan.settings_dict(rule), target_ids=np.asarray(plan.data.target_ids),
        population_counts=plan.counts.F, **extra,
    )
