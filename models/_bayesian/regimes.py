"""Regimes of the chains of a mixture fit: which chains agree on the class structure
(warning ``REGIMES_DISAGREE``). See :doc:`/methods/models`.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np

from bayes_risk.models._bayesian import convergence

__all__ = ["REGIME_QUANTITIES", "EVIDENCE_ATTR", "EVIDENCE_MIN_SWAP", "BOUNDS_ATTR",
           "BOUNDS_SE_ATTR", "DECISIVE", "DRIFT_ATTR", "DRIFT_Z", "STARTS_ATTR", "chain_regimes",
           "heavy_regime", "record_starts", "regime_summary", "regime_warnings", "regime_text",
           "share_words"]

#: the quantities that tell regimes apart, and how messages name them
REGIME_QUANTITIES: dict[str, str] = {"alpha": "α", "k_occupied": "k*", "n_occupied": "k*",
                                     "loglik": "log-likelihood"}
#: posterior attributes of a tempered fit: per chain, the stepping-stone log evidence and its
#: Monte Carlo standard error (``bayes_risk.models.dpmpm.tempering``)
EVIDENCE_ATTR = "log_evidence"
#: the smallest swap rate of every adjacent pair of a ladder for its stepping-stone estimate to
#: be used (below it the estimate can be biased far beyond its standard error)
EVIDENCE_MIN_SWAP = 0.2
#: family-wise level of the test of a difference between two chains' means
REGIME_ALPHA = 0.01
EVIDENCE_SE_ATTR = "log_evidence_se"
#: posterior attributes of a DPMPM fit whose chains disagree: per chain, the lower and upper
#: bounds of the log marginal likelihood of the region of partitions it holds, and their Monte
#: Carlo standard errors (``bayes_risk.models.dpmpm.evidence``)
BOUNDS_ATTR = ("log_evidence_lower", "log_evidence_upper")
BOUNDS_SE_ATTR = ("log_evidence_lower_se", "log_evidence_upper_se")
#: per chain: the largest change of the terms of its bounds (``log p(P, y)`` and the two entropy
#: terms) between the halves of the measured sweeps, in standard errors. Both bounds hold for a
#: chain at rest in its region only: a chain above ``DRIFT_Z`` (or a fit that recorded no
#: drift, made before the check) gives no bounds, and the regimes are not ranked
DRIFT_ATTR = "log_evidence_drift"
#: a term of the bounds is stationary when the means of the two halves of the measured sweeps
#: differ by at most this many standard errors (three terms a chain: under stationarity a
#: false alarm has probability below 2·10⁻⁴ a chain, normal approximation of the batch means)
DRIFT_Z = 4.0
#: a regime holds the mass when the other regimes together hold at most this share of it (their
#: upper bounds and its lower bound each taken ``BOUNDS_Z`` standard errors against it)
DECISIVE = 1e-6
BOUNDS_Z = 4.0


def _quantities(q: dict[str, Any]) -> dict[str, np.ndarray]:
    """The regime quantities among a model's diagnosed ones, each ``[chain, draw]``."""
    out = {}
    for name in REGIME_QUANTITIES:
        if name in q:
            x = np.asarray(q[name], dtype=np.float64)
            out[name] = x if x.ndim == 2 else x[None, :]
    return out


def _mcse(x: np.ndarray) -> float:
    """``arviz_stats.mcse(method="mean")`` of one chain's draws ``x [draw]``."""
    import arviz_stats

    return float(arviz_stats.mcse(x[None, :], method="mean"))


def _agree(x: np.ndarray, a: int, b: int, crit: float) -> bool:
    """Whether chains ``a`` and ``b`` of ``x [chain, draw]`` agree: pair R-hat at most
    ``RHAT_MAX``, or means within ``crit`` standard errors (a pair not diagnosable agrees)."""
    pair = x[[a, b]]
    if pair.shape[1] < 4 or not np.all(np.isfinite(pair)) or np.ptp(pair) == 0:
        return True
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        r = convergence.rhat_rank(pair)
        if not (np.isfinite(r) and r > convergence.RHAT_MAX):
            return True
        se = np.hypot(_mcse(pair[0]), _mcse(pair[1]))
    diff = abs(float(pair[0].mean() - pair[1].mean()))
    return bool(np.isfinite(se) and diff <= crit * se)


def _critical(n_chains: int, n_quantities: int) -> float:
    """Two-sided normal quantile at level ``REGIME_ALPHA``, Bonferroni over pairs and quantities."""
    from scipy.special import ndtri

    tests = max(1, n_chains * (n_chains - 1) // 2 * n_quantities)
    return float(ndtri(1.0 - REGIME_ALPHA / (2.0 * tests)))


def chain_regimes(qs: dict[str, np.ndarray], C: int) -> list[list[int]]:
    """The regimes of ``C`` chains (lists of 0-based chain indices ordered by their first): groups
    of chains connected by agreement on every quantity (``_agree``; single linkage)."""
    parent = list(range(C))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    crit = _critical(C, len(qs))
    for a in range(C):
        for b in range(a + 1, C):
            if root(a) != root(b) and all(_agree(x, a, b, crit) for x in qs.values()):
                parent[root(b)] = root(a)
    groups: dict[int, list[int]] = {}
    for c in range(C):
        groups.setdefault(root(c), []).append(c)
    return sorted(groups.values(), key=lambda g: g[0])


#: posterior attribute of a Gibbs fit: how each chain started (``models._bayesian.starts``)
STARTS_ATTR = "chain_starts"


def record_starts(dt: Any, kinds: tuple[str, ...], chains: int) -> None:
    """Record how each chain of a Gibbs run started in the posterior group's attributes."""
    dt["posterior"].attrs[STARTS_ATTR] = [kinds[c % len(kinds)] for c in range(int(chains))]


def _starts(post: Any, C: int) -> list[str | None]:
    """How each chain started, as the fit recorded it (``None``: draws made elsewhere, NUTS)."""
    kinds = post.attrs.get(STARTS_ATTR)
    if kinds is None:
        return [None] * C
    kinds = [str(k) for k in np.atleast_1d(kinds)]
    return [kinds[c] if c < len(kinds) else None for c in range(C)]


def regime_summary(post: Any, quantities: dict[str, Any]) -> dict[str, Any] | None:
    """The record ``convergence_summary()["regimes"]`` (``None``: no regime quantity): ``agree``,
    ``chains``, ``regimes`` (with ``log_evidence`` and ``mass`` when estimated), ``quantities``,
    ``rhat_max`` and ``evidence`` (how the evidences were estimated, or why not)."""
    qs = _quantities(quantities)
    if not qs:
        return None
    C, D = int(post.sizes["chain"]), int(post.sizes["draw"])
    groups = chain_regimes(qs, C)
    starts = _starts(post, C)
    attrs = post.attrs
    ev = attrs.get(EVIDENCE_ATTR)
    ev = None if ev is None else np.atleast_1d(np.asarray(ev, dtype=np.float64))
    ev_se = np.atleast_1d(np.asarray(attrs.get(EVIDENCE_SE_ATTR, np.nan), dtype=np.float64))
    swap = attrs.get("swap_rate")
    min_swap = (np.nanmin(np.atleast_2d(np.asarray(swap, dtype=np.float64)), axis=1)
                if ev is not None and swap is not None else None)
    chains = [{"chain": c, "start": starts[c],
               **{k: float(np.mean(x[c])) for k, x in qs.items()},
               "log_evidence": None if ev is None else float(ev[c]),
               "log_evidence_se": None if ev is None else float(ev_se[c]),
               "min_swap_rate": None if min_swap is None else float(min_swap[c])}
              for c in range(C)]
    bounds = _chain_bounds(attrs, C)
    for c, ch in enumerate(chains):
        ch["log_evidence_bounds"] = None if bounds is None else [
            None if not np.isfinite(v) else float(v) for v in bounds[0][c]]
        ch["evidence_drift"] = None if bounds is None or not np.isfinite(bounds[2][c]) else (
            float(bounds[2][c]))
    regimes, problems = [], []
    for i, g in enumerate(groups, 1):
        r: dict[str, Any] = {"chains": list(g), "draws": len(g) * D,
                             **{k: float(np.mean(x[g])) for k, x in qs.items()},
                             "log_evidence": None, "log_evidence_se": None, "mass": None,
                             "log_evidence_bounds": None, "mass_bounds": None,
                             "log10_rest": None, "holds_mass": False}
        if ev is not None:
            # the chains of a regime estimate the same evidence
            r["log_evidence"] = float(np.mean(ev[g]))
            r["log_evidence_se"] = float(np.sqrt(np.sum(ev_se[g] ** 2)) / len(g))
            problems += _evidence_problems(i, g, ev, ev_se, min_swap)
        regimes.append(r)
    T = int(attrs.get("temperatures", 0))
    bounds_how = _regime_bounds(regimes, bounds, attrs) if len(regimes) > 1 else None
    if bounds_how is not None and (ev is None or any(r["holds_mass"] for r in regimes)):
        how = bounds_how
    elif ev is None:
        how = ("not estimated: the fit ran no tempered ladders (refit with temperatures=T, "
               "command line --temperatures T, to estimate it)")
    elif problems:
        how = (f"stepping-stone estimates over each chain's tempered ladder ({T} "
               f"temperatures), not reliable: {'; '.join(problems)}; the regimes' posterior "
               "probabilities are not given")
    else:
        le = np.array([r["log_evidence"] for r in regimes])
        mass = np.exp(le - le.max())
        mass /= mass.sum()
        for r, p in zip(regimes, mass, strict=True):
            r["mass"] = float(p)
        how = (f"stepping-stone estimates over each chain's tempered ladder ({T} "
               "temperatures)")
    return {"agree": len(groups) == 1, "quantities": list(qs), "rhat_max": convergence.RHAT_MAX,
            "chains": chains, "regimes": regimes, "evidence": how}


def _chain_bounds(attrs: Any, C: int) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """Each chain's ``[lower, upper]`` bounds of its region's log evidence, their standard
    errors (``[C, 2]`` each) and its drift (``[C]``: ``inf`` when the fit recorded none), or
    ``None`` when the fit recorded no bounds."""
    if BOUNDS_ATTR[0] not in attrs:
        return None
    b = np.column_stack([np.atleast_1d(np.asarray(attrs[k], dtype=np.float64))
                         for k in BOUNDS_ATTR])
    se = np.column_stack([np.atleast_1d(np.asarray(attrs[k], dtype=np.float64))
                          for k in BOUNDS_SE_ATTR])
    if b.shape != (C, 2) or se.shape != (C, 2):
        return None
    drift = np.atleast_1d(np.asarray(attrs.get(DRIFT_ATTR, np.full(C, np.inf)),
                                     dtype=np.float64))
    if drift.shape != (C,):
        drift = np.full(C, np.inf)
    return b, se, np.where(np.isnan(drift), np.inf, np.abs(drift))


def _sweeps_words(attrs: Any, chains: list[int]) -> str:
    """``, 100 + 300 + 300 sweeps a chain`` (the most any of ``chains`` ran) or ``""``."""
    sw = attrs.get("evidence_sweeps")
    if sw is None:
        return ""
    sw = np.asarray(sw, dtype=np.int64).reshape(-1, 3)
    w, f, s = (int(v) for v in sw[min(max(chains), len(sw) - 1)])
    return f", {w} + {f} + {s} sweeps a chain"


def _regime_bounds(regimes: list[dict[str, Any]], bounds: Any, attrs: Any) -> str | None:
    """Each regime's bounds of its log evidence and of its share of the mass of the regions
    the chains visited, in place; the words of ``evidence`` (``None``: no bounds recorded).

    A regime's lower bound is the mean of its chains' (each bounds the same region from
    below), its upper bound the log of the sum of its chains' exponentiated upper bounds (the
    regions they hold, together). Both are expectations under the region's posterior: a chain
    whose terms still drifted (``DRIFT_ATTR`` above ``DRIFT_Z``, or none recorded) gives
    neither, and the regimes are not ranked. Regime ``h`` holds at least
    ``1 / (1 + Σ_o e^(U_o − L_h))`` of the mass of the visited regions, ``L`` and ``U`` taken
    ``BOUNDS_Z`` standard errors against it (``log10_rest``: the log10 of the others' share at
    most); it *holds the mass* when the others' share is at most ``DECISIVE``. A region no chain
    visited is in no denominator: this is not the posterior probability of the regime."""
    from scipy.special import logsumexp

    if bounds is None:
        return None
    b, se, drift = bounds
    all_chains = [c for r in regimes for c in r["chains"]]
    moving = [c for c in all_chains if not drift[c] <= DRIFT_Z]
    if moving:
        for r in regimes:
            r["log_evidence_bounds"] = None
        z = [drift[c] for c in moving if np.isfinite(drift[c])]
        failed = attrs.get("evidence_reason") or ""  # "chain 2: why; ..." (the pass stopped)
        what = " or ".join(
            ([f"drifted by up to {max(z):.1f} standard errors between the halves of the "
              f"measured sweeps (at most {DRIFT_Z:g} asked)"] if z else [])
            + ([f"gave no bounds ({failed})"] if failed else [])
            or ["recorded no stationarity check (a fit made before it: refit)"])
        return ("the regimes could not be ranked (REGIMES_NOT_RANKED): the bounds of a "
                "region's marginal likelihood hold for a collapsed Gibbs chain at rest in it, "
                f"and the log density or entropy terms of chain(s) "
                f"{', '.join(str(c + 1) for c in moving)} {what}"
                f"{_sweeps_words(attrs, moving)}; refit with longer runs")
    low, high = [], []  # the conservative bounds of each regime
    for r in regimes:
        g = r["chains"]
        lo = float(np.mean(b[g, 0]))
        lo_se = float(np.sqrt(np.sum(se[g, 0] ** 2)) / len(g))
        up = float(logsumexp(b[g, 1]))
        up_se = float(np.sqrt(np.sum(se[g, 1] ** 2)))
        r["log_evidence_bounds"] = [lo, up]
        low.append(lo - BOUNDS_Z * lo_se)
        high.append(up + BOUNDS_Z * up_se)
    low_a, high_a = np.array(low), np.array(high)
    if not (np.all(np.isfinite(low_a)) and np.all(np.isfinite(high_a))):
        for r in regimes:
            r["log_evidence_bounds"] = None
        return ("partition-space bounds not computed: "
                f"{attrs.get('evidence_reason') or 'a chain gave none'}")
    for i, r in enumerate(regimes):
        # log of the others' share at most: Σ_o e^(U_o − L_i) / (1 + Σ_o e^(U_o − L_i))
        t = float(logsumexp(np.delete(high_a, i) - low_a[i]))
        log_rest = t - float(np.logaddexp(0.0, t))
        u = float(logsumexp(np.delete(low_a, i) - high_a[i]))
        r["mass_bounds"] = [float(-np.expm1(log_rest)), float(np.exp(-np.logaddexp(0.0, u)))]
        r["log10_rest"] = log_rest / float(np.log(10.0))
        r["holds_mass"] = bool(log_rest <= np.log(DECISIVE))
    how = ("bounds of each regime's log marginal likelihood from its partitions "
           f"(entropy bounds over a collapsed Gibbs chain{_sweeps_words(attrs, all_chains)}, "
           f"each chain's terms stationary within {DRIFT_Z:g} standard errors); a share is "
           "of the mass of the regions the chains visited, not a posterior probability (a "
           "region no chain visited is not counted)")
    if not any(r["holds_mass"] for r in regimes):
        how += ("; they do not set one regime above the others by the margin asked "
                f"(its share of the visited regions' mass at least 1 − {DECISIVE:g}): which "
                "regime holds the mass is not settled")
    return how


def heavy_regime(summary: dict[str, Any] | None) -> int | None:
    """The 1-based number of the regime that holds the posterior mass (``holds_mass``), or
    ``None``."""
    if not summary:
        return None
    for i, r in enumerate(summary.get("regimes") or [], 1):
        if r.get("holds_mass"):
            return i
    return None


def _evidence_problems(i: int, g: list[int], ev: np.ndarray, se: np.ndarray,
                       min_swap: np.ndarray | None) -> list[str]:
    """Why regime ``i``'s evidence estimate cannot be used: a pair of temperatures that rarely
    swap, or chains whose estimates differ beyond 4 standard errors."""
    out = []
    if min_swap is not None:
        low = [c for c in g if not min_swap[c] >= EVIDENCE_MIN_SWAP]
        if low:
            out.append(f"regime {i}: the ladder of chain(s) {', '.join(str(c + 1) for c in low)}"
                       f" has a pair of temperatures swapping in "
                       f"{min(float(min_swap[c]) for c in low):.2g} of proposals (below "
                       f"{EVIDENCE_MIN_SWAP}: a phase transition of the tempered posterior)")
    if len(g) > 1:
        spread = float(np.ptp(ev[g]))
        tol = 4.0 * float(np.sqrt(np.sum(se[g] ** 2)))
        if not spread <= tol:
            out.append(f"regime {i}: its chains' estimates differ by {spread:.3g}, more than 4 "
                       f"standard errors ({tol:.3g})")
    return out


def _fmt(name: str, v: float) -> str:
    if name == "loglik":
        return f"{REGIME_QUANTITIES[name]} {v:,.1f}"
    return f"{REGIME_QUANTITIES[name]} {v:.3g}"


def share_words(regime: dict[str, Any]) -> str:
    """The share of the visited regions' mass the regime holds (``holds_mass``) at least, or
    holds at most, in words that keep its size: ``at least 1 − 1e-287``, ``at most 2e-12``."""
    if regime.get("holds_mass"):
        lr = regime.get("log10_rest")
        if lr is None:  # a record made before log10_rest
            lr = float(np.log10(max(1.0 - regime["mass_bounds"][0], 1e-300)))
        rest = f"1e{math.ceil(lr)}" if lr < -3 else f"{10.0 ** lr:.1g}"
        return f"at least 1 − {rest}"
    x = regime["mass_bounds"][1]
    return f"at most {x:.3g}" if x >= 1e-3 or x == 0.0 else f"at most {x:.1g}"


def regime_text(summary: dict[str, Any]) -> str:
    """The regimes in words: ``regime 1 (chain 1, started 'spread'): α 0.56, k* 4.7, ...``."""
    starts = {c["chain"]: c["start"] for c in summary["chains"]}
    parts = []
    for i, r in enumerate(summary["regimes"], 1):
        ch = ", ".join(str(c + 1) for c in r["chains"])
        st = sorted({str(starts[c]) for c in r["chains"] if starts[c] is not None})
        started = f", started {'/'.join(repr(s) for s in st)}" if st else ""
        vals = ", ".join(_fmt(k, r[k]) for k in summary["quantities"])
        ev = ""
        lb = r.get("log_evidence_bounds")
        if lb is not None and r.get("mass_bounds") is not None:
            ev = (f", log evidence {lb[0]:,.1f} to {lb[1]:,.1f}, {share_words(r)} of the "
                  "mass of the regions the chains visited")
        elif r.get("log_evidence") is not None:
            se = r.get("log_evidence_se")
            ev = (f", log evidence {r['log_evidence']:,.1f}"
                  + (f" (MCSE {se:.2g})" if se is not None else "")
                  + (f", posterior probability {r['mass']:.3g}" if r.get("mass") is not None
                     else ""))
        parts.append(f"regime {i} (chain{'s' if len(r['chains']) > 1 else ''} {ch}{started}): "
                     f"{vals}{ev}")
    return "; ".join(parts)


def regime_warnings(post: Any, quantities: dict[str, Any], model: str) -> list[dict[str, Any]]:
    """``[REGIMES_DISAGREE]`` when the chains form more than one regime (else ``[]``)."""
    if int(post.sizes["chain"]) < 2:
        return []
    summ = regime_summary(post, quantities)
    if summ is None or summ["agree"]:
        return []
    names = list(dict.fromkeys(REGIME_QUANTITIES[q] for q in summ["quantities"]))
    heavy = [r for r in summ["regimes"] if r.get("mass") is not None]
    h = heavy_regime(summ)
    if h is not None:
        which = (f" By the bounds of each regime's marginal likelihood ({summ['evidence']}), "
                 f"regime {h} holds {share_words(summ['regimes'][h - 1])} of the mass of the "
                 "regions the chains visited: the risk engines read its figure and show the "
                 "other regimes' beside it.")
    elif heavy:
        best = max(range(len(heavy)), key=lambda i: heavy[i]["mass"])
        which = (f" By the stepping-stone estimates of the evidence, regime {best + 1} carries "
                 f"posterior probability {heavy[best]['mass']:.3g}; the kept draws of the "
                 "other regimes are still in the fit.")
    elif any(r.get("mass_bounds") is not None for r in summ["regimes"]) or (
            "REGIMES_NOT_RANKED" in summ["evidence"]):
        ev = summ["evidence"]
        which = " " + (ev[0].upper() + ev[1:] if ev.startswith("the ") else f"The {ev}") + "."
    else:
        which = (" Which regime carries the posterior mass is not estimated: refit with "
                 "temperatures=T (parallel tempering; command line --temperatures T), which "
                 "also estimates each regime's marginal likelihood.")
    msg = (f"{model}: the chains sit in {len(summ['regimes'])} regimes of the "
           f"class structure (the pair R-hat of {', '.join(names)} above {convergence.RHAT_MAX}): "
           f"{regime_text(summ)}. Every risk computed from this fit depends on the regime its "
           "draws come from: the risk engines report each regime's figure and use "
           + ("the figure of the regime that holds the mass" if h is not None else "the larger")
           + f" (RISK_BY_REGIME).{which} Compare refits with other seeds, more chains or longer "
           "runs (REGIMES_DISAGREE).")
    out = [{"code": "REGIMES_DISAGREE", "quantities": list(summ["quantities"]), "checks": [],
            "regimes": summ["regimes"], "message": msg}]
    if "REGIMES_NOT_RANKED" in summ["evidence"]:
        out.append({"code": "REGIMES_NOT_RANKED", "quantities": list(summ["quantities"]),
                    "checks": [], "regimes": summ["regimes"],
                    "message": f"{model}: {summ['evidence']}."})
    return out
