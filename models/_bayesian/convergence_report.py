"""The convergence report of a fitted Bayesian synthesizer: the checks run on its draws, the
structured warnings and ``convergence.json`` (:doc:`/user_guide/bayesian_models`). The figures
and thresholds are :mod:`~bayes_risk.models._bayesian.convergence`'s; the model gives the
quantities to diagnose (its ``convergence_quantities``)."""

from __future__ import annotations

import warnings
from typing import Any

import pandas as pd

from bayes_risk._io import to_jsonable
from bayes_risk.exceptions import CALLER, ConvergenceWarning, arg_name, on_command_line
from bayes_risk.models._bayesian import convergence
from bayes_risk.models._bayesian.convergence import (
    LABEL_INVARIANT_GROUP,
    STUCK_RHAT,
    TAIL_PROB,
    check_text,
    convergence_table,
    failed_checks,
    label_invariant_dataset,
)
from bayes_risk.models._bayesian.regimes import regime_summary, regime_warnings

__all__ = ["check_convergence", "convergence_summary", "convergence_warnings", "ess_min",
           "label_invariant", "mcmc_run", "mcmc_warnings"]


def label_invariant(model: Any, *, refresh: bool = False) -> Any:
    """The posterior's group ``label_invariant``, (re)made when missing or ``refresh``."""
    import xarray as xr

    tree = model.posterior_
    post = tree["posterior"]
    shape = (post.sizes["chain"], post.sizes["draw"])
    if not refresh and LABEL_INVARIANT_GROUP in tree.children:
        ds = tree[LABEL_INVARIANT_GROUP].to_dataset()
        if (ds.sizes.get("chain"), ds.sizes.get("draw")) == shape:
            return ds
    ds = label_invariant_dataset(model.convergence_quantities(), post)
    tree[LABEL_INVARIANT_GROUP] = xr.DataTree(ds)
    return ds


def check_convergence(model: Any, *, warn: bool = False) -> pd.DataFrame:
    """R-hat and ESS of the diagnosed quantities of fitted ``model``; ``warn``: one warning
    per failed code."""
    df = convergence_table(label_invariant(model, refresh=True), ess_min(model))
    df.attrs["mcmc_run"] = mcmc_run(model)
    if warn:
        for w in convergence_warnings(model, df) + model_regime_warnings(model):
            warnings.warn(ConvergenceWarning(w["message"], code=w["code"]),
                          skip_file_prefixes=CALLER)
    return df


def mcmc_run(model: Any) -> dict[str, Any]:
    """The run the kept draws come from (posterior attributes, else the settings)."""
    attrs = model.posterior_.attrs
    tune = int(model.resolved_sampling.tune or 0)  # exact draws (DPMultinomial): no tuning
    thin = int(attrs.get("thin", model._run_settings().get("thin", 1)))
    draws = int(model.posterior_["posterior"].sizes["draw"])
    return {"tune": tune, "thin": thin, "draws": draws,
            "rounds": int(attrs.get("gibbs_rounds", 1)),
            "sweeps_per_chain": tune + draws * thin,
            "max_sweeps": int(attrs.get("max_sweeps", 0)),
            "stopped": str(attrs.get("gibbs_stop", ""))}


def thresholds(model: Any) -> dict[str, Any]:
    """The thresholds the checks of ``model`` apply (``convergence.json``'s ``thresholds``)."""
    return {"rhat_max": convergence.RHAT_MAX, "ess_min": ess_min(model),
            "ess_min_per_chain": convergence.ESS_MIN, "ess_tail_prob": list(TAIL_PROB)}


def ess_min(model: Any) -> float:
    """``ESS_MIN`` per chain."""
    return convergence.ESS_MIN * int(model.posterior_["posterior"].sizes["chain"])


def model_regime_warnings(model: Any) -> list[dict[str, Any]]:
    """The warnings of chains that sit in different class structures (``regimes``)."""
    return regime_warnings(model.posterior_["posterior"], model.convergence_quantities(),
                           type(model).__name__)


def convergence_warnings(model: Any, df: pd.DataFrame) -> list[dict[str, Any]]:
    """One structured warning per code of the failed checks of a convergence table."""
    out = []
    n_chains = int(model.posterior_["posterior"].sizes["chain"])
    run = mcmc_run(model)
    # the settings as the caller gives them (bayes-risk fit --draws ...), and where the
    # checks are kept: convergence_summary() in Python, convergence.json of a model folder
    tune, draws, chains, thin = (arg_name(a) for a in ("tune", "draws", "chains", "thin"))
    see = "convergence.json" if on_command_line() else "convergence_summary()"
    if run["stopped"] == "stuck":  # a model-extending run that stopped early
        advice = (f"The run stopped extending itself at {run['sweeps_per_chain']:,} sweeps "
                  f"per chain (one kept per {run['thin']}, {run['rounds']} rounds): its last "
                  f"round left R-hat above {STUCK_RHAT}, as when chains sit in different "
                  "states that longer runs do not bring together. Compare fits with several "
                  f"seeds; a longer explicit run ({draws}, {thin}) shows whether they meet; "
                  f"see {see}.")
    elif run["max_sweeps"]:  # a model-extending run that stopped at its bound
        bound = arg_name("max_sweeps", f"{run['max_sweeps']:,}", cli=str(run["max_sweeps"]))
        advice = (f"The run extended itself to {run['sweeps_per_chain']:,} sweeps per chain "
                  f"(one kept per {run['thin']}, {run['rounds']} rounds), the longest that "
                  f"{bound} allows: raise {arg_name('max_sweeps')}, or run longer chains "
                  f"({draws}, {thin}) or more {chains}; see {see}.")
    else:
        advice = (f"Run longer chains (more {tune}, {draws}) or more {chains}; see {see}.")
    checks = failed_checks(df, ess_min(model)) if len(df) else []
    for code, what in (("RHAT_HIGH", f"R-hat > {convergence.RHAT_MAX}"),
                       ("LOW_ESS", f"bulk or tail ESS < {ess_min(model):.0f}, i.e. "
                                   f"{convergence.ESS_MIN:.0f} per chain for {n_chains} "
                                   "chain(s)")):
        mine = [c for c in checks if c["code"] == code]
        if not mine:
            continue
        quantities = list(dict.fromkeys(c["quantity"] for c in mine))
        # each quantity with the values that failed (not rounded onto the threshold)
        desc = "; ".join(
            f"{q}: " + ", ".join(check_text(c, with_quantity=False) for c in mine
                                 if c["quantity"] == q)
            for q in quantities
        )
        out.append({
            "code": code,
            "quantities": quantities,
            "checks": mine,
            "message": (
                f"{type(model).__name__}: MCMC may not have converged ({what}: {desc}) "
                f"({code}). {advice}"
            ),
        })
    return out


def mcmc_warnings(model: Any) -> list[dict[str, Any]]:
    """Structured MCMC warnings of fitted ``model``: :meth:`BayesianSynthesizer.mcmc_warnings`."""
    from bayes_risk.warning_codes import message

    if model.convergence_ is None:
        model.convergence_ = check_convergence(model, warn=False)
    out = convergence_warnings(model, model.convergence_)
    out += model_regime_warnings(model)  # chains in different class structures
    for code in getattr(model, "warnings_", None) or []:
        if code not in {w["code"] for w in out}:
            # the code's meaning and remedy, as the result's structured warnings give it
            out.append({"code": str(code), "quantities": [], "checks": [],
                        "message": f"{type(model).__name__}: {message(str(code))} ({code})"})
    return out


def convergence_summary(model: Any) -> dict[str, Any]:
    """The convergence record of ``model`` (its ``convergence.json``):
    :meth:`BayesianSynthesizer.convergence_summary`."""
    warns = mcmc_warnings(model)
    post = model.posterior_["posterior"]
    run = mcmc_run(model)
    return to_jsonable({
        "model": type(model).__name__,
        "chains": int(post.sizes["chain"]),
        "draws": int(post.sizes["draw"]),
        "thin": run["thin"],
        "tune": run["tune"],
        "rounds": run["rounds"],
        "sweeps_per_chain": run["sweeps_per_chain"],
        "max_sweeps_per_chain": run["max_sweeps"],
        "stopped": run["stopped"],
        "thresholds": thresholds(model),
        "quantities": {
            str(q): {k: (float(v) if k != "flag" else v) for k, v in r.items()}
            for q, r in model.convergence_.iterrows()
        },
        "failed_checks": [c for w in warns for c in w.get("checks", [])],
        "warnings": warns,
        "passed": not warns,
        "regimes": (regime_summary(post, model.convergence_quantities())
                    if int(post.sizes["chain"]) > 1 else None),
    })


def convergence_lines(model: Any, summary: dict[str, Any] | None = None,
                      method: str | None = None) -> list[str]:
    """The fit's run and convergence in lines for a person (``bayes-risk fit`` prints them):
    :meth:`BayesianSynthesizer.convergence_text`. ``summary``: the model's
    :meth:`~BayesianSynthesizer.convergence_summary`, if already computed; ``method``: the
    name the fit was asked for (default: the model's ``method_name``)."""
    conv = model.convergence_summary() if summary is None else summary
    lines = [f"{conv['chains']} chain(s) x {conv['draws']} draws after {conv['tune']} tuning"
             + (f", one kept per {conv['thin']} sweeps" if conv["thin"] > 1 else "")
             + (f"; extended itself in {conv['rounds']} rounds to "
                f"{conv['sweeps_per_chain']:,} sweeps per chain"
                if conv.get("rounds", 1) > 1 else "")]
    q = conv["quantities"]
    rhat = [v["rhat"] for v in q.values() if _finite(v["rhat"])]
    ess = [v["ess_bulk"] for v in q.values() if _finite(v["ess_bulk"])]
    if rhat and ess:
        # a mixture's components swap labels between chains: its checks are of functions of the
        # draws that do not depend on them; other models' of their parameters
        lines.append(
            f"convergence: max R-hat {max(rhat):.3f}, min bulk ESS {min(ess):.0f} over {len(q)} "
            + ("label-invariant quantities" if hasattr(model, "n_components")
               else "quantities (parameters and the log-likelihood)") + " ("
            + ("passed" if conv["passed"] else "FAILED: see convergence.json") + ")")
    reg = conv.get("regimes")
    if reg and not reg["agree"]:
        from bayes_risk.models._bayesian.regimes import regime_text

        lines.append(f"chains in {len(reg['regimes'])} regimes of the class structure "
                     f"(REGIMES_DISAGREE): {regime_text(reg)}; risks computed from this fit "
                     "are reported per regime (see convergence.json)")
    if conv["failed_checks"]:
        # which quantity, which value: the check that failed, not only that one did
        lines.append(f"convergence FAILED for the {method or model.method_name} fit: "
                     + convergence.checks_headline(conv["failed_checks"],
                                                   where="convergence.json"))
    return lines


def _finite(x: Any) -> bool:
    """A number that is not NaN (undiagnosable quantities are None or NaN in the record)."""
    return isinstance(x, (int, float)) and x == x and abs(x) != float("inf")
