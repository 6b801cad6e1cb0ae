"""Convergence diagnostics of :class:`~bayes_risk.models._bayesian.base.BayesianSynthesizer`.

Rank-normalised bulk/tail ESS and R-hat (Vehtari et al. 2021) of the label-invariant scalars
each model supplies (``_convergence_quantities``), the structured warnings they raise and the
JSON record written to ``convergence.json`` with a saved model. The scalars' draws are kept in
the posterior's group ``label_invariant`` (:func:`label_invariant`), so that ArviZ's own tools
(``arviz.summary(model.posterior_, group="label_invariant")``, trace and rank plots) show what
is checked, and a saved model keeps them in its NetCDF file.

The estimators are ``arviz_stats``' own, called on the stored draws of each quantity
(``ess(method="bulk")``, ``ess(method="tail", prob=(0.05, 0.95))``, ``rhat(method="rank")``):
the values equal ArviZ's on the saved posterior. Importing ``arviz_stats`` (and ``scipy.stats``)
takes about half a second of CPU; a Gibbs run does it in a thread while its chains run
(``bayes_risk.models._bayesian.gibbs._warm_up_output``).
"""

from __future__ import annotations

import warnings
from typing import Any, Literal

import numpy as np
import pandas as pd

from bayes_risk._io import to_jsonable
from bayes_risk.exceptions import CALLER, ConvergenceWarning, ValidationError
from bayes_risk.models._bayesian.regimes import regime_summary, regime_warnings
from bayes_risk.models._bayesian.rhat import RHAT_MAX, rhat_rank

#: bulk/tail ESS below this many **per chain** flags too few effective draws (Vehtari et al.
#: 2021 and Stan: about 100 per chain, i.e. 400 for four chains, 200 for two).
ESS_MIN = 100.0
#: quantiles of the tail ESS (Vehtari et al. 2021; Stan and R ``posterior``): the smaller ESS of
#: the indicators ``x <= q_0.05`` and ``x <= q_0.95``. Passed to ``arviz_stats.ess``, whose own
#: default (ArviZ 1.x: ``rcParams["stats.ci_prob"]`` = 0.89, the 11 % and 89 % quantiles)
#: measures less extreme quantiles, gives larger values and would move with a display setting.
TAIL_PROB = (0.05, 0.95)
#: a self-extending run stops early when a round leaves the largest R-hat above ``STUCK_RHAT``
#: and takes less than a tenth off ``R-hat - 1``: for chains that agree but have too few
#: effective draws, R-hat - 1 ≈ 2 / ESS roughly halves per doubling of the run (ACS extract with
#: structural zeros and missing values, seed 1: 0.258, 0.090, 0.029, 0.007; with structural zeros
#: only, seed 4: 0.457, 0.352, 0.084, 0.043), whereas chains in different states stay apart
#: (NYexample seed 1: 1.084, 0.954, 0.955, 0.929). A quarter would have stopped the second
#: (ratio 0.77 in its second round), which went on improving.
STUCK_RHAT = 1.1
STUCK_SHRINK = 0.9
#: the posterior's group with the draws of the diagnosed label-invariant quantities
LABEL_INVARIANT_GROUP = "label_invariant"


def extension_stuck(previous: float | None, current: float) -> bool:
    """Whether a round of a self-extending run left its chains apart: the largest R-hat is above
    ``STUCK_RHAT`` and its distance from 1 fell by less than a tenth since the last round."""
    if previous is None or not (np.isfinite(previous) and np.isfinite(current)):
        return False
    return current > STUCK_RHAT and current - 1 > STUCK_SHRINK * (previous - 1)


# ---------------------------------------------------------------------- ESS and R-hat
def ess_bulk(x: np.ndarray) -> float:
    """Bulk ESS of ``x[chain, draw]``: ``arviz_stats.ess(x, method="bulk")`` (rank-normalised
    split chains; NaN with fewer than 4 draws or a NaN draw)."""
    import arviz_stats

    return float(arviz_stats.ess(np.asarray(x, dtype=np.float64), method="bulk"))


def ess_tail(x: np.ndarray) -> float:
    """Tail ESS of ``x[chain, draw]``: ``arviz_stats.ess(x, method="tail", prob=TAIL_PROB)``,
    the smaller ESS of the indicators of the 5 % and 95 % quantiles (Vehtari et al. 2021).

    ``prob`` is given: without it ArviZ 1.x takes ``rcParams["stats.ci_prob"]`` (0.89), i.e. the
    11 % and 89 % quantiles, which gives a larger value than the tail ESS of Vehtari et al.
    """
    import arviz_stats

    return float(arviz_stats.ess(np.asarray(x, dtype=np.float64), method="tail",
                                 prob=TAIL_PROB))


#: how each statistic of the convergence table is named in messages
STATISTIC_NAMES = {"rhat": "R-hat", "ess_bulk": "bulk ESS", "ess_tail": "tail ESS"}


def failed_checks(table: pd.DataFrame, ess_min: float) -> list[dict[str, Any]]:
    """The failed checks of a convergence table, one per quantity and statistic.

    Parameters
    ----------
    table : DataFrame
        Index: quantity; columns ``ess_bulk``, ``ess_tail``, ``rhat`` (as
        :func:`check_convergence`).
    ess_min : float
        The fit's ESS threshold (``ESS_MIN`` per chain).

    Returns
    -------
    list of dict
        ``code`` (``"RHAT_HIGH"``: ``rhat > RHAT_MAX``; ``"LOW_ESS"``: ``ess_bulk`` or
        ``ess_tail`` below ``ess_min``), ``quantity``, ``statistic`` (``"rhat"``,
        ``"ess_bulk"``, ``"ess_tail"``), ``value`` and ``threshold``. The decision uses the
        value as computed (no rounding): a tail ESS of 199.9996 fails a threshold of 200. An
        ESS that cannot be computed (``NaN``: non-finite draws, fewer than 4 draws per chain)
        fails too, with ``value`` NaN: convergence that cannot be assessed is not vouched for.
    """
    out: list[dict[str, Any]] = []
    for q, r in table.iterrows():
        if np.isfinite(r["rhat"]) and r["rhat"] > RHAT_MAX:
            out.append({"code": "RHAT_HIGH", "quantity": str(q), "statistic": "rhat",
                        "value": float(r["rhat"]), "threshold": RHAT_MAX})
        for stat in ("ess_bulk", "ess_tail"):
            if not np.isfinite(r[stat]) or r[stat] < ess_min:
                out.append({"code": "LOW_ESS", "quantity": str(q), "statistic": stat,
                            "value": float(r[stat]), "threshold": float(ess_min)})
    return out


def shown_against(value: float, threshold: float, decimals: int) -> str:
    """``value`` with ``decimals`` decimals, or with as many more (up to 6) as it takes to tell
    it from ``threshold``: a tail ESS of 199.9996 against 200 reads ``199.9996``, not ``200``."""
    for d in range(decimals, decimals + 7):
        text = f"{value:.{d}f}"
        if text != f"{threshold:.{d}f}":
            return text
    return repr(float(value))


def check_text(check: dict[str, Any], *, with_quantity: bool = True) -> str:
    """One failed check in words: ``tail ESS of loglik 199.9996 < 200`` (``with_quantity``
    False: ``tail ESS 199.9996``)."""
    stat = check["statistic"]
    if not np.isfinite(check["value"]):
        what = "not computable (non-finite draws, or fewer than 4 draws per chain)"
        return (f"{STATISTIC_NAMES[stat]} {what}" if not with_quantity else
                f"{STATISTIC_NAMES[stat]} of {check['quantity']} {what}")
    value = shown_against(check["value"], check["threshold"], 3 if stat == "rhat" else 0)
    if not with_quantity:
        return f"{STATISTIC_NAMES[stat]} {value}"
    sign = ">" if stat == "rhat" else "<"
    return (f"{STATISTIC_NAMES[stat]} of {check['quantity']} {value} {sign} "
            f"{check['threshold']:g}")


def worst_checks(checks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The worst failed check of each code (the highest R-hat; the ESS furthest below its
    threshold, relative to it), in the order of the codes' first appearance."""

    def badness(c: dict[str, Any]) -> float:
        if not np.isfinite(c["value"]):
            return np.inf  # not assessable: the worst
        return c["value"] if c["statistic"] == "rhat" else -c["value"] / c["threshold"]

    worst: dict[str, dict[str, Any]] = {}
    for c in checks:
        if c["code"] not in worst or badness(c) > badness(worst[c["code"]]):
            worst[c["code"]] = c
    return list(worst.values())


def checks_headline(checks: list[dict[str, Any]], *, where: str) -> str:
    """The failed checks in one line for a command's headline: per code, the fits that failed
    it (when the checks name fits) and its worst check with its fit, quantity and value
    (``LOW_ESS (fits model, augmented_1; worst fit model): tail ESS of loglik 199.9996 <
    200``), then how many checks failed in all and ``where`` (the file that lists them)."""
    parts = []
    for c in worst_checks(checks):
        fits = list(dict.fromkeys(str(d["fit"]) for d in checks
                                  if d["code"] == c["code"] and d.get("fit") is not None))
        which = (f" (fit{'s' if len(fits) > 1 else ''} {', '.join(fits)}"
                 + (f"; worst fit {c['fit']})" if len(fits) > 1 else ")")) if fits else ""
        parts.append(f"{c['code']}{which}: {check_text(c)}")
    return "; ".join(parts) + f" ({len(checks)} failed check(s) in all: {where})"


def label_invariant(model, *, refresh: bool = False) -> Any:
    """The draws of the diagnosed quantities: the posterior's group ``label_invariant``.

    One variable ``[chain, draw]`` per quantity of the model's ``_convergence_quantities``
    (mixture labels switch freely, so these are functions of the draws that do not depend on
    them), with the posterior's ``chain`` and ``draw`` coordinates. Made from the draws and
    put in ``model.posterior_`` when the tree lacks it or ``refresh`` (the convergence checks
    refresh it, so that it always holds what they diagnosed); a saved model keeps it in
    ``posterior.nc``. xarray forbids ``/`` in a variable name: such a name is written with
    ``∕`` (U+2215); every variable keeps the quantity's own name in its attribute
    ``quantity``.

    Returns
    -------
    xarray.Dataset
    """
    import xarray as xr

    from bayes_risk._version import __version__

    tree = model.posterior_
    post = tree["posterior"]
    shape = (post.sizes["chain"], post.sizes["draw"])
    if not refresh and LABEL_INVARIANT_GROUP in tree.children:
        ds = tree[LABEL_INVARIANT_GROUP].to_dataset()
        if (ds.sizes.get("chain"), ds.sizes.get("draw")) == shape:
            return ds
    data = {}
    for name, x in model._convergence_quantities().items():
        x = np.asarray(x, dtype=np.float64)
        x = x.reshape(shape) if x.size == shape[0] * shape[1] else x.reshape(-1, x.shape[-1])
        var = str(name).replace("/", "\u2215")
        data[var] = xr.DataArray(x, dims=("chain", "draw"), attrs={"quantity": str(name)})
    coords = {d: post[d].values for d in ("chain", "draw") if d in post.coords}
    ds = xr.Dataset(data, attrs={
        "description": "label-invariant functions of each posterior draw: the quantities "
                       "whose R-hat and bulk/tail ESS bayes-risk checks (convergence_summary)",
        "creation_library": "bayes-risk",
        "creation_library_version": __version__,
        "ess_tail_prob": list(TAIL_PROB),
    })
    if (ds.sizes.get("chain"), ds.sizes.get("draw")) == shape:
        ds = ds.assign_coords(coords)
    tree[LABEL_INVARIANT_GROUP] = xr.DataTree(ds)
    return ds


def check_convergence(model, *, warn: bool = False) -> pd.DataFrame:
    """R-hat and bulk/tail ESS of the diagnosed quantities (the figures of
    :meth:`BayesianSynthesizer.convergence_summary`'s ``quantities``; ``warn``: issue a
    :class:`ConvergenceWarning` per failed code).

    Returns
    -------
    DataFrame
        Index: quantity; columns ``mean``, ``sd``, ``ess_bulk``, ``ess_tail``, ``rhat``,
        ``flag`` (``""``, ``"RHAT_HIGH"``, ``"LOW_ESS"`` or both joined by ``","``);
        ``attrs["mcmc_run"]``: the run the draws come from (:func:`mcmc_run`).
    """
    model._check_fitted()
    ess_min = model._ess_min()
    rows = []
    for var in (ds := label_invariant(model, refresh=True)).data_vars:
        name = ds[var].attrs.get("quantity", str(var))
        x = np.asarray(ds[var].transpose("chain", "draw").values, dtype=np.float64)
        finite = np.all(np.isfinite(x))
        if x.shape[1] < 4 or not finite:
            rows.append((name, np.nanmean(x), np.nanstd(x), np.nan, np.nan, np.nan))
            continue
        xr_ = x if x.shape[0] > 1 else x[:, : 2 * (x.shape[1] // 2)].reshape(2, -1)
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            eb, et, rh = ess_bulk(x), ess_tail(x), rhat_rank(xr_)
        if np.ptp(x) == 0:  # a constant (e.g. K = 1): nothing to diagnose
            eb, et, rh = float(x.size), float(x.size), 1.0
        rows.append((name, float(x.mean()), float(x.std()), eb, et, rh))
    df = pd.DataFrame(rows, columns=["quantity", "mean", "sd", "ess_bulk", "ess_tail", "rhat"])
    df = df.set_index("quantity")
    failed: dict[str, list[str]] = {}
    for c in failed_checks(df, ess_min):
        codes = failed.setdefault(c["quantity"], [])
        if c["code"] not in codes:
            codes.append(c["code"])
    df["flag"] = [",".join(failed.get(str(q), [])) for q in df.index]
    df.attrs["mcmc_run"] = model._mcmc_run()
    if warn:

        for w in model._convergence_warnings(df) + regime_warnings(model):
            warnings.warn(ConvergenceWarning(w["message"], code=w["code"]),
                          skip_file_prefixes=CALLER)
    return df


def mcmc_run(model) -> dict[str, Any]:
    """The run the kept draws come from: warm-up sweeps, final thinning, kept draws per
    chain, rounds (more than 1: the run extended itself, ``max_sweeps``), sweeps per chain
    and the bound of a model-extending run (0: none). Read from the posterior's attributes
    (``bayes_risk.models._bayesian.gibbs``), else from the settings."""
    attrs = model.posterior_.attrs
    tune = int(model.tune)
    thin = int(attrs.get("thin", model._run_settings().get("thin", 1)))
    draws = int(model.posterior_["posterior"].sizes["draw"])
    return {"tune": tune, "thin": thin, "draws": draws,
            "rounds": int(attrs.get("gibbs_rounds", 1)),
            "sweeps_per_chain": tune + draws * thin,
            "max_sweeps": int(attrs.get("max_sweeps", 0)),
            "stopped": str(attrs.get("gibbs_stop", ""))}


def round_verdict(model, posterior: Any, schema: Any, history: list[float]) -> str:
    """The convergence checks of :func:`check_convergence` on draws (a DataTree of this
    model's posterior for ``schema``) between the rounds of a model-extending run:
    ``"passed"``, ``"failed"`` or ``"stuck"`` (``extension_stuck``; ``history``: the
    largest R-hat of the earlier rounds, appended to). A new instance with the same
    settings is diagnosed; this one is left as it is."""
    probe = type(model)(**model.get_params())
    probe.posterior_, probe.schema_ = posterior, schema
    probe._after_posterior()
    rep = probe._check_convergence(warn=False)
    if not any(rep["flag"]):
        return "passed"
    rhat = rep["rhat"].to_numpy(dtype=float)
    worst = float(np.max(rhat[np.isfinite(rhat)])) if np.isfinite(rhat).any() else np.nan
    previous = history[-1] if history else None
    history.append(worst)
    return "stuck" if extension_stuck(previous, worst) else "failed"


def convergence_warnings(model, df: pd.DataFrame) -> list[dict[str, Any]]:
    """One structured warning per code of the failed checks of a convergence table
    (``code``, ``quantities``, ``checks``: :func:`failed_checks`, ``message``)."""
    out = []
    chains = int(model.posterior_["posterior"].sizes["chain"])
    run = model._mcmc_run()
    if run["stopped"] == "stuck":  # a model-extending run that stopped early
        advice = (f"The run stopped extending itself at {run['sweeps_per_chain']:,} sweeps "
                  f"per chain (one kept per {run['thin']}, {run['rounds']} rounds): its last "
                  f"round left R-hat above {STUCK_RHAT}, as when chains sit in different "
                  "states that longer runs do not bring together. Compare fits with several "
                  "seeds; a longer explicit run (draws, thin) shows whether they meet; see "
                  "convergence_summary().")
    elif run["max_sweeps"]:  # a model-extending run that stopped at its bound
        advice = (f"The run extended itself to {run['sweeps_per_chain']:,} sweeps per chain "
                  f"(one kept per {run['thin']}, {run['rounds']} rounds), the longest that "
                  f"max_sweeps={run['max_sweeps']:,} allows: raise max_sweeps, or run longer "
                  "chains (draws, thin) or more chains; see convergence_summary().")
    else:
        advice = ("Run longer chains (more tune/draws) or more chains; see "
                  "convergence_summary().")
    checks = failed_checks(df, model._ess_min()) if len(df) else []
    for code, what in (("RHAT_HIGH", f"R-hat > {RHAT_MAX}"),
                       ("LOW_ESS", f"bulk or tail ESS < {model._ess_min():.0f}, i.e. "
                                   f"{ESS_MIN:.0f} per chain for {chains} chain(s)")):
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


def mcmc_warnings(model) -> list[dict[str, Any]]:
    """The work of :meth:`BayesianSynthesizer.mcmc_warnings` (documented there)."""
    model._check_fitted()
    if model.convergence_ is None:
        model.convergence_ = model._check_convergence(warn=False)
    out = model._convergence_warnings(model.convergence_)
    from bayes_risk.warning_codes import message

    out += regime_warnings(model)  # chains in different class structures (REGIMES_DISAGREE)

    for code in getattr(model, "warnings_", None) or []:
        if code not in {w["code"] for w in out}:
            # the code's meaning and remedy, as the result's structured warnings give it
            out.append({"code": str(code), "quantities": [], "checks": [],
                        "message": f"{type(model).__name__}: {message(str(code))} ({code})"})
    return out


#: what replaces the table forms of the convergence figures (deprecated)
TABLE_REPLACEMENT = ("convergence_summary()['quantities'] (the same figures; "
                     "pandas.DataFrame.from_dict(..., orient='index') makes it a table), or "
                     "arviz.summary(model.posterior_, group='label_invariant') (ArviZ's own "
                     "table of the same draws)")


def warn_deprecated(what: str) -> None:
    """The ``FutureWarning`` of a deprecated form of the convergence figures."""
    warnings.warn(f"{what} is deprecated and will be removed in a future release: use "
                  f"{TABLE_REPLACEMENT}.", FutureWarning, skip_file_prefixes=CALLER)


def convergence_summary(
    model, kind: Literal["dict", "table"] | None = None
) -> dict[str, Any] | pd.DataFrame:
    """The work of :meth:`BayesianSynthesizer.convergence_summary` (documented there)."""
    if kind not in (None, "dict", "table"):
        raise ValidationError(
            f"kind must be 'dict' (the convergence.json record) or 'table' (one row per "
            f"diagnosed quantity, as arviz.summary); got {kind!r}.", code="INVALID_ARGUMENT")

    if kind == "table":
        warn_deprecated("convergence_summary(kind='table')")
    elif kind == "dict":
        warnings.warn("convergence_summary(kind='dict') is deprecated and will be removed in a "
                      "future release: convergence_summary() returns the record.",
                      FutureWarning, skip_file_prefixes=CALLER)
    warns = model.mcmc_warnings()
    if kind == "table":
        return model._convergence_table(passed=not warns)
    post = model.posterior_["posterior"]
    run = model._mcmc_run()
    return to_jsonable({
        "model": type(model).__name__,
        "chains": int(post.sizes["chain"]),
        "draws": int(post.sizes["draw"]),
        "thin": run["thin"],
        "tune": int(model.tune),
        "rounds": run["rounds"],
        "sweeps_per_chain": run["sweeps_per_chain"],
        "max_sweeps_per_chain": run["max_sweeps"],
        "stopped": run["stopped"],
        "thresholds": {"rhat_max": RHAT_MAX, "ess_min": model._ess_min(),
                       "ess_min_per_chain": ESS_MIN, "ess_tail_prob": list(TAIL_PROB)},
        "quantities": {
            str(q): {k: (float(v) if k != "flag" else v) for k, v in r.items()}
            for q, r in model.convergence_.iterrows()
        },
        "failed_checks": [c for w in warns for c in w.get("checks", [])],
        "warnings": warns,
        "passed": not warns,
        # which chains agree on α, k* and the log-likelihood, and (tempered fits) which
        # regime carries the posterior mass
        "regimes": regime_summary(model) if int(post.sizes["chain"]) > 1 else None,
    })


def convergence_table(model, *, passed: bool) -> pd.DataFrame:
    """The convergence figures under ArviZ's column names (the deprecated
    ``convergence_summary(kind="table")``): ``r_hat`` for ``rhat``, ``failed_checks`` for
    ``flag``."""
    df = model.convergence_.rename(columns={"rhat": "r_hat", "flag": "failed_checks"})
    df = df[["mean", "sd", "ess_bulk", "ess_tail", "r_hat", "failed_checks"]].copy()
    df.attrs = {
        "model": type(model).__name__,
        "thresholds": {"rhat_max": RHAT_MAX, "ess_min": model._ess_min(),
                       "ess_min_per_chain": ESS_MIN, "ess_tail_prob": list(TAIL_PROB)},
        "passed": passed,
        "mcmc_run": model._mcmc_run(),
    }
    return df
