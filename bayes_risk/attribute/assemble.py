"""Stage 3 of attribute risk: the result from the merged partition outputs."""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from bayes_risk.attribute.candidates import columns_without_alternative
from bayes_risk.attribute.chains import ChainPlan, chain_agreement
from bayes_risk.attribute.missing import missing_policy, n_guessable
from bayes_risk.attribute.null import result_null
from bayes_risk.attribute.plan import AttributePlan, PartitionOutput
from bayes_risk.attribute.priors import PriorInputs, evaluate_prior
from bayes_risk.attribute.record_table import (
    MC_LEVEL,
    bootstrap_summaries,
    khat_material,
    material_flag,
    order_flags,
    point_summaries,
    set_point_columns,
)
from bayes_risk.attribute.uncertainty import file_uncertainty
from bayes_risk.contract import capabilities
from bayes_risk.exceptions import CALLER, DataWarning, ImportanceSamplingWarning, arg_name
from bayes_risk.results.attribute import AttributeRiskResult

__all__ = ["assemble", "mcmc_record"]


#: a candidate grid that reaches other values of a small count (named in NO_ALTERNATIVE)
_COUNT_GRID = "one-variable,grid:additive:2:5"


def assemble(plan: AttributePlan, part: PartitionOutput) -> AttributeRiskResult:
    """The :class:`~bayes_risk.attribute.AttributeRiskResult` of the merged outputs ``part``."""
    data, est = plan.data, plan.estimator.name
    mcmc = mcmc_record(plan.model.model, [a.model for a in plan.augmented.models])
    warn_codes = _warning_codes(plan, part, mcmc)
    regimes = (mcmc.get("fits", {}).get("model") or {}).get("regimes")
    if regimes and not regimes.get("agree", True) and plan.chains is not None \
            and plan.chains.run:
        # the model's chains sit in different regimes: the result's figures per regime
        warn_codes.append("RISK_BY_REGIME")
    recs = [int(i) for i in data.positions]
    syn_flags, unchanged = _released_unchanged(plan, part, recs)
    if unchanged:
        warn_codes.append("RECORDS_RELEASED_UNCHANGED")
    cands = [part.candidates[i] for i in recs]
    _warn_without_alternative(cands, warn_codes, data.is_cat)
    loglik = [part.loglik[i] for i in recs]
    g0_arr = np.array([c.g0 for c in cands], dtype=np.int64)
    pinp = PriorInputs(
        records=np.asarray(recs, dtype=np.int64), values=[c.values for c in cands], g0=g0_arr,
        columns=tuple(data.vary), categorical=data.is_cat, others=data.values,
        log_mean_r=None if est == "plugin" else [part.log_mean_r[i] for i in recs],
    )
    logprior, pcodes = evaluate_prior(plan.prior, pinp)
    warn_codes += [c for c in pcodes if c not in warn_codes]
    # compat mode: the R package adds the prior *probability* to the log-likelihood once per
    # dataset; emulate by folding it into the kept log-likelihoods
    if plan.compat == "AttributeRiskCalculation":
        loglik = [ll + data.m * np.exp(lp) for ll, lp in zip(loglik, logprior, strict=False)]
        logprior = [np.zeros_like(lp) for lp in logprior]
    log_post, rec = point_summaries(loglik, logprior, g0_arr)
    diags = [part.diag[i] for i in recs]
    bounds, code = None, material_flag(est, plan.diagnostics.khat_rule)
    if est == "plugin" or (est == "stabilised" and plan.diagnostics.khat != "none"):
        bounds = khat_material(loglik, diags, logprior, g0_arr, plan.diagnostics.khat_tolerance)
        if code is not None:
            for k, i in enumerate(recs):
                if bounds[2][k] and i not in unchanged:
                    part.flags[i] = order_flags([*part.flags[i], code])
    chains = _chain_flags(plan, part, recs, diags, logprior, g0_arr, unchanged)
    # G: the candidates that cover observed values; the two-record intruder: a row per pair
    key = "pair" if data.scenario == "two_records" else "record"
    df = pd.DataFrame({key: recs,
                       "G": [n_guessable(c.values, c.g0, data.is_cat) for c in cands]})
    if syn_flags is not None:
        df["synthesized"] = [i not in unchanged for i in recs]
    set_point_columns(df, rec)
    df["baseline"] = 1.0 / df["G"]
    _diagnostic_columns(df, plan, part, recs, cands, bounds)
    if chains is not None:
        for key in ("p_true_chain_min", "p_true_chain_max", "chain_z"):
            df[key] = chains[key]
    boot_list = _bootstrap_list(plan, part, recs, cands)
    for k, v in bootstrap_summaries(boot_list, logprior, g0_arr, len(recs),
                                       rec["p_true"]).items():
        df[k] = v
    if plan.rule.spec is not None and plan.rule.spec.rule == "product":
        for j, c in enumerate(data.vary):
            df[f"marg_{c}"] = [
                float(np.nansum(np.exp(lp)[_same_value(cs.values[:, j], cs.values[cs.g0, j])]))
                for lp, cs in zip(log_post, cands, strict=False)
            ]
    df["flag_codes"] = [";".join(part.flags[i]) for i in recs]
    n_flag = int((df["flag_codes"] != "").sum())
    if n_flag:
        # one text for both audiences: the command line writes the records to records.csv
        rows = "pairs" if data.scenario == "two_records" else "records"
        warnings.warn(
            ImportanceSamplingWarning(
                f"{n_flag} of {len(df)} {rows} are flagged (unreliable estimates, summarised "
                "apart from the others): the 'flag_codes' column of records.csv says why (in "
                "Python: result.flagged).",
                code="RECORDS_FLAGGED",
            ),
            skip_file_prefixes=CALLER,
        )
    return AttributeRiskResult(
        records=df, columns=tuple(data.vary), candidates=cands, loglik=loglik,
        logprior=logprior, log_post=log_post, diagnostics=diags, warnings=warn_codes,
        settings=_settings(plan, part), schema=data.schema, prior=plan.prior,
        _prior_inputs=pinp, _boot_loglik=boot_list, _degenerate=_degenerate(part),
        _mc_figures=file_uncertainty, _null_figures=result_null, mcmc=mcmc,
    )


def _warning_codes(plan: AttributePlan, part: PartitionOutput, mcmc: dict[str, Any]
                   ) -> list[str]:
    """Result warnings: the plan's, the model's labels, MCMC problems and record-level events."""
    warn_codes = list(plan.warn_codes)
    warn_codes += [c for c in part.warn_codes if c not in warn_codes]
    warn_codes += [c for c in dict.fromkeys(w["code"] for w in mcmc.get("warnings", []))
                   if c not in warn_codes]
    if part.any_unknown:
        warn_codes.append("UNKNOWN_CATEGORY_IN_CANDIDATES")
        warnings.warn(
            "some candidates hold categories the model was never fitted with; they get "
            "probability 0 (UNKNOWN_CATEGORY_IN_CANDIDATES).",
            ImportanceSamplingWarning, skip_file_prefixes=CALLER,
        )
    if any("TRUTH_OUTSIDE_SUPPORT" in f for f in part.flags.values()):
        warn_codes.append("TRUTH_OUTSIDE_SUPPORT")
    if any(v > 0 for v in part.n_dropped.values()):
        warn_codes.append("DRAW_DROPPED")
    return warn_codes


def _same_value(v: np.ndarray, t: float) -> np.ndarray:
    """``v == t``, a missing value (``NaN``, held in every candidate) equal to itself."""
    return (v == t) | (np.isnan(v) & np.isnan(t))


def _warn_without_alternative(cands: Sequence[Any], warn_codes: list[str],
                              is_cat: np.ndarray) -> None:
    """``NO_ALTERNATIVE``: columns for which some records are offered no value but the truth."""
    collapsed = columns_without_alternative(cands, is_cat)
    if not collapsed:
        return
    n_single = sum(c.size == 1 for c in cands)
    warn_codes.append("NO_ALTERNATIVE")
    warnings.warn(
        "some records have no candidate other than the truth in column(s) "
        + ", ".join(f"{c!r} ({k} of {len(cands)} records)" for c, k in collapsed.items())
        + (f"; {n_single} record(s) have the truth as their only candidate (G = 1, p_true = 1 "
           "by construction)" if n_single else "")
        + " (NO_ALTERNATIVE). A numeric grid collapses when its points round to the truth, "
        "e.g. a ±10 % grid on a small count: give a grid that reaches other values, such as "
        f"{arg_name('candidates', repr(_COUNT_GRID), cli=_COUNT_GRID)} for counts.",
        DataWarning, skip_file_prefixes=CALLER,
    )


def _released_unchanged(
    plan: AttributePlan, part: PartitionOutput, recs: Sequence[int]
) -> tuple[np.ndarray | None, set[int]]:
    """Records the model did not synthesize, with their exact likelihood set in ``part``."""
    model = plan.model.model
    syn_flags = None
    if plan.data.scenario == "two_records":  # pairs of synthesized records only (pairs.py)
        return None, set()
    if plan.estimator.name != "plugin" and capabilities(model).partial_synthesis:
        syn_flags = model.synthesized_records_
    unchanged: set[int] = set()
    if syn_flags is None:
        return None, unchanged
    syn_flags = np.asarray(syn_flags, dtype=bool)
    for i in recs:
        if syn_flags[i] or "TRUTH_OUTSIDE_SUPPORT" in part.flags[i]:
            continue
        ll = np.full(part.candidates[i].size, -np.inf)
        ll[part.candidates[i].g0] = 0.0
        part.loglik[i] = ll
        if i in part.boot:
            part.boot[i] = np.broadcast_to(ll, np.shape(part.boot[i])).copy()
        part.flags[i] = []  # the estimate is exact: no Monte Carlo diagnostics apply
        for key in ("loglik_lo", "loglik_hi", "khat_high", "chain_loglik", "chain_dev"):
            part.diag[i].pop(key, None)
        unchanged.add(i)
    return syn_flags, unchanged


def _chain_flags(plan: AttributePlan, part: PartitionOutput, recs: Sequence[int],
                 diags: Sequence[dict[str, np.ndarray]], logprior: Sequence[np.ndarray],
                 g0: np.ndarray, unchanged: set[int]) -> dict[str, np.ndarray] | None:
    """The between-chain check (``CHAINS_DISAGREE``, :mod:`bayes_risk.attribute.chains`)."""
    if plan.chains is None or not plan.chains.run:
        return None
    t_c = time.perf_counter()
    chains = chain_agreement(diags, logprior, g0)
    part.timing["chain_check_s"] = (part.timing.get("chain_check_s", 0.0)
                                    + time.perf_counter() - t_c)
    for k, i in enumerate(recs):
        if chains["flag"][k] and i not in unchanged:
            part.flags[i] = order_flags([*part.flags[i], "CHAINS_DISAGREE"])
    return chains


def _diagnostic_columns(df: pd.DataFrame, plan: AttributePlan, part: PartitionOutput,
                        recs: Sequence[int], cands: Sequence[Any],
                        bounds: tuple[np.ndarray, np.ndarray, np.ndarray] | None) -> None:
    """Per-record summaries of the diagnostics (over the candidates other than the truth)."""
    est, diag_d = plan.estimator.name, part.diag

    def agg(key: str, fn: Callable[[np.ndarray], float], nontrue: bool = True) -> list[float]:
        out = []
        for i, c in zip(recs, cands, strict=False):
            a = diag_d[i].get(key)
            if a is None:
                out.append(float("nan"))
                continue
            a = np.asarray(a, dtype=np.float64)
            if nontrue:
                a = np.delete(a, c.g0, axis=-1)
            a = a[np.isfinite(a)] if key != "khat" else a[~np.isnan(a)]
            out.append(float(fn(a)) if a.size else float("nan"))
        return out

    df["ess_q_min"] = agg("ess_q", np.min)
    df["khat_max"] = agg("khat", np.max)
    if est == "stabilised":
        df["khat_aug_max"] = agg("khat_aug", np.max)
        df["ess_aug_min"] = agg("ess_aug", np.min)
        if bounds is not None:
            df["n_khat_high"] = [int(np.sum(diag_d[i].get("khat_high", 0))) for i in recs]
    if est == "plugin":
        df["mc_se_max"] = agg("mc_se", np.max)
    if bounds is not None:
        df["p_true_lower"], df["p_true_upper"], df["is_top_upper"] = bounds[0], bounds[1], \
            bounds[3]
    if est in ("stabilised", "is"):
        df["max_weight_share"] = agg("max_share", np.max, nontrue=False)
    df["ess_omega_min"] = agg("ess_omega", np.min, nontrue=False)
    df["max_omega_max"] = agg("max_omega", np.max, nontrue=False)
    df["n_dropped"] = [part.n_dropped[i] for i in recs]


def _bootstrap_list(
    plan: AttributePlan, part: PartitionOutput, recs: Sequence[int], cands: Sequence[Any]
) -> list[np.ndarray] | None:
    """Each record's ``[B, G]`` bootstrap log-likelihoods (``nan`` for a skipped record)."""
    B, boot_d = plan.draws.n_boot, part.boot
    if not B or not any(i in boot_d for i in recs):
        return None
    if all(i in boot_d for i in recs):
        return [boot_d[i] for i in recs]
    return [boot_d.get(i, np.full((B, c.size), np.nan)) for i, c in zip(recs, cands, strict=False)]


def _degenerate(part: PartitionOutput) -> dict[str, Any]:
    """How degenerate the published estimator's sums were (when computed)."""
    if not part.deg_total:
        return {}
    return {
        "share_degenerate_triples": part.deg_count / part.deg_total,
        "n_triples": part.deg_total,
        "definition": "share of (record, candidate, dataset) triples of the published "
        "estimator (Hu 2019 §3.2.5) with ESS_omega < 1.5 and max omega > 0.9",
    }


def _settings(plan: AttributePlan, part: PartitionOutput) -> dict[str, Any]:
    """The result's ``settings``: everything needed to reproduce it, and the timing."""
    model, data, dg, est = plan.model.model, plan.data, plan.diagnostics, plan.estimator.name
    spec = plan.rule.spec
    return {
        "estimator": est, "model_class": model.model_class,
        "ratio_form": None if est == "plugin" else model.ratio_form,
        # the smoothed CART plug-in's Bayesian-bootstrap replicates (EstimatorSpec's; None:
        # the likelihood draws none)
        "plugin_replicates": getattr(model, "replicates", None),
        "scenario": data.scenario, "known": data.known, "columns": list(data.vary),
        "candidates": "callable" if spec is None else spec.to_dict(),
        "prior": plan.prior.label(), "H": plan.draws.H, "H_augmented": plan.augmented.n_draws,
        "m": data.m, "psis": bool(dg.psis), "khat": dg.khat,
        "khat_rule": dg.khat_rule if est == "stabilised" else "any",
        "khat_tolerance": dg.khat_tolerance,
        **({"mc_level": MC_LEVEL} if est == "plugin" else {}), "bootstrap": plan.draws.n_boot,
        "compat": plan.compat, "random_seed": plan.random_seed_json,
        "khat_threshold": dg.khat_threshold, "low_ess_threshold": dg.low_ess_threshold,
        "missing_values": missing_policy(model),
        "chain_check": (plan.chains if plan.chains is not None
                        else ChainPlan(False, "not prepared")).to_dict(),
        "timing": dict(part.timing),
        **({} if plan.known is None else plan.known.description),
    }


def mcmc_record(model: Any, aug_models: Sequence[Any]) -> dict[str, Any]:
    """Convergence summaries and structured MCMC warnings of the model's and augmented fits."""
    fits: dict[str, Any] = {}
    warns: list[dict[str, Any]] = []
    named = [("model", model)] + [(f"augmented_{l + 1}", a) for l, a in enumerate(aug_models)]
    for name, mdl in named:
        if not capabilities(mdl).convergence:
            continue
        summ = mdl.convergence_summary()
        fits[name] = summ
        # each failed check names its fit too (the audit's and the CLI's lists of warnings)
        warns += [dict(w, fit=name, checks=[dict(c, fit=name) for c in w.get("checks", [])])
                  for w in summ["warnings"]]
    return {"fits": fits, "warnings": warns} if fits else {}
