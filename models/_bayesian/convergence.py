"""Convergence diagnostics of the Bayesian synthesizers (Vehtari et al. 2021, ``arviz_stats``):
:doc:`/user_guide/bayesian_models`."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pandas as pd

#: R-hat above this flags non-convergence (Vehtari et al. 2021)
RHAT_MAX = 1.01
#: bulk/tail ESS below this many **per chain** flags too few effective draws (Stan's 100)
ESS_MIN = 100.0
#: quantiles of the tail ESS (Vehtari et al. 2021), given: ArviZ's default follows a display
#: setting (0.89)
TAIL_PROB = (0.05, 0.95)
#: a self-extending run stops when a round leaves the largest R-hat above ``STUCK_RHAT`` and
#: takes less than a tenth off ``R-hat - 1`` (chains that agree roughly halve it per doubling;
#: chains in different states stay apart, e.g. NYexample: 1.084, 0.954, 0.955, 0.929)
STUCK_RHAT = 1.1
STUCK_SHRINK = 0.9
#: the posterior's group with the draws of the diagnosed label-invariant quantities
LABEL_INVARIANT_GROUP = "label_invariant"


def extension_stuck(previous: float | None, current: float) -> bool:
    """Whether a round of a self-extending run left its chains apart (``STUCK_RHAT``)."""
    if previous is None or not (np.isfinite(previous) and np.isfinite(current)):
        return False
    return current > STUCK_RHAT and current - 1 > STUCK_SHRINK * (previous - 1)


def rhat_rank(x: np.ndarray) -> float:
    """``arviz_stats.rhat(x, method="rank")`` of ``x[chain, draw]``."""
    import arviz_stats

    return float(arviz_stats.rhat(np.asarray(x, dtype=np.float64), method="rank"))


def ess_bulk(x: np.ndarray) -> float:
    """``arviz_stats.ess(x, method="bulk")`` of ``x[chain, draw]``."""
    import arviz_stats

    return float(arviz_stats.ess(np.asarray(x, dtype=np.float64), method="bulk"))


def ess_tail(x: np.ndarray) -> float:
    """``arviz_stats.ess(x, method="tail", prob=TAIL_PROB)`` of ``x[chain, draw]``."""
    import arviz_stats

    return float(arviz_stats.ess(np.asarray(x, dtype=np.float64), method="tail",
                                 prob=TAIL_PROB))


#: how each statistic of the convergence table is named in messages
STATISTIC_NAMES = {"rhat": "R-hat", "ess_bulk": "bulk ESS", "ess_tail": "tail ESS"}


def failed_checks(table: pd.DataFrame, ess_min: float) -> list[dict[str, Any]]:
    """The failed checks of a convergence table, one per quantity and statistic; values are
    compared unrounded, and an ESS that cannot be computed (NaN) fails."""
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


def _assessable(check: dict[str, Any]) -> bool:
    """Whether a check's value was computed: a statistic that could not be (fewer than 4 draws
    per chain, non-finite draws) is NaN in memory and null once read back from JSON."""
    return check["value"] is not None and bool(np.isfinite(check["value"]))


def check_text(check: dict[str, Any], *, with_quantity: bool = True) -> str:
    """One failed check in words: ``tail ESS of loglik 199.9996 < 200`` (``with_quantity``
    False: ``tail ESS 199.9996``)."""
    stat = check["statistic"]
    if not _assessable(check):
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
        if not _assessable(c):
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


def label_invariant_dataset(quantities: dict[str, Any], post: Any) -> Any:
    """The group ``label_invariant`` of a posterior group ``post``: one ``[chain, draw]`` variable
    per diagnosed quantity. xarray forbids ``/`` in a name: it is written ``∕`` (U+2215),
    attribute ``quantity`` keeps it."""
    import xarray as xr

    from bayes_risk._version import __version__

    shape = (post.sizes["chain"], post.sizes["draw"])
    data = {}
    for name, x in quantities.items():
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
    return ds


def convergence_table(ds: Any, ess_min: float) -> pd.DataFrame:
    """R-hat and bulk/tail ESS of the variables of a ``label_invariant`` group ``ds`` (index:
    quantity; ``mean``, ``sd``, ``ess_bulk``, ``ess_tail``, ``rhat``, ``flag``: the codes of
    the failed checks)."""
    rows = []
    for var in ds.data_vars:
        name = ds[var].attrs.get("quantity", str(var))
        x = np.asarray(ds[var].transpose("chain", "draw").values, dtype=np.float64)
        if x.shape[1] < 4 or not np.all(np.isfinite(x)):
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
    return df


def round_verdict(quantities: dict[str, Any], post: Any, history: list[float]) -> str:
    """The convergence checks of the diagnosed ``quantities`` of posterior group ``post`` between
    the rounds of a self-extending run: ``"passed"``, ``"failed"`` or ``"stuck"``
    (:func:`extension_stuck`; ``history``: the largest R-hat of the earlier rounds, appended to).
    """
    table = convergence_table(label_invariant_dataset(quantities, post),
                              ESS_MIN * int(post.sizes["chain"]))
    if not any(table["flag"]):
        return "passed"
    rhat = table["rhat"].to_numpy(dtype=float)
    worst = float(np.max(rhat[np.isfinite(rhat)])) if np.isfinite(rhat).any() else np.nan
    previous = history[-1] if history else None
    history.append(worst)
    return "stuck" if extension_stuck(previous, worst) else "failed"
