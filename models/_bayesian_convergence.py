"""Convergence diagnostics of :class:`~bayes_risk.models.bayesian.BayesianSynthesizer`.

Rank-normalised bulk/tail ESS and R-hat (Vehtari et al. 2021) of the label-invariant scalars
each model supplies (``_convergence_quantities``), the structured warnings they raise and the
JSON record written to ``convergence.json`` with a saved model.

The estimators are ``arviz_stats``' (``ess(method="bulk")``, ``ess(method="tail")``,
``rhat(method="rank")``), computed here with numpy step for step as ``arviz_stats.base`` does
them (the tests check agreement to 1e-12): importing ``arviz_stats`` imports ``scipy.stats``,
half a second of every ``bayes-risk fit`` for a few thousand numbers (issue 15).
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pandas as pd

from bayes_risk._io import to_jsonable
from bayes_risk.exceptions import CALLER, ConvergenceWarning

#: R-hat above this flags non-convergence (Vehtari et al. 2021 recommend 1.01).
RHAT_MAX = 1.01
#: bulk/tail ESS below this many **per chain** flags too few effective draws (Vehtari et al.
#: 2021 and Stan: about 100 per chain, i.e. 400 for four chains, 200 for two).
ESS_MIN = 100.0
#: a self-extending run stops early when a round leaves the largest R-hat above ``STUCK_RHAT``
#: and takes less than a tenth off ``R-hat - 1``: for chains that agree but have too few
#: effective draws, R-hat - 1 ≈ 2 / ESS roughly halves per doubling of the run (ACS extract with
#: structural zeros and missing values, seed 1: 0.258, 0.090, 0.029, 0.007; with structural zeros
#: only, seed 4: 0.457, 0.352, 0.084, 0.043), whereas chains in different states stay apart
#: (NYexample seed 1: 1.084, 0.954, 0.955, 0.929). A quarter would have stopped the second
#: (ratio 0.77 in its second round), which went on improving.
STUCK_RHAT = 1.1
STUCK_SHRINK = 0.9


def extension_stuck(previous: float | None, current: float) -> bool:
    """Whether a round of a self-extending run left its chains apart: the largest R-hat is above
    ``STUCK_RHAT`` and its distance from 1 fell by less than a tenth since the last round."""
    if previous is None or not (np.isfinite(previous) and np.isfinite(current)):
        return False
    return current > STUCK_RHAT and current - 1 > STUCK_SHRINK * (previous - 1)


# ---------------------------------------------------------------------- ESS and R-hat
# Rank normalisation, splitting, autocovariance and Geyer's initial monotone sequence as in
# arviz_stats.base.diagnostics / core (the same operations in the same order).
def _z_scale(x: np.ndarray) -> np.ndarray:
    """Normal scores of the average ranks (Blom's offset 3/8) of all values of ``x``."""
    from scipy.special import ndtri  # what scipy.stats.norm.ppf evaluates

    flat = x.ravel()
    order = np.argsort(flat, kind="mergesort")
    inv = np.empty(order.size, dtype=np.intp)
    inv[order] = np.arange(order.size)
    srt = flat[order]
    first = np.r_[True, srt[1:] != srt[:-1]]
    dense = np.cumsum(first)[inv]
    count = np.r_[np.flatnonzero(first), first.size]
    rank = 0.5 * (count[dense] + count[dense - 1] + 1)
    return ndtri((rank - 3 / 8) / (rank.size - 2 * 3 / 8 + 1)).reshape(x.shape)


def _split(x: np.ndarray) -> np.ndarray:
    half = x.shape[1] // 2
    return np.vstack((x[:, :half], x[:, -half:]))


def _fast_len(n: int) -> int:
    """Smallest 5-smooth number >= ``n`` (``scipy.fftpack.next_fast_len``)."""
    best, p5 = 1 << max(n - 1, 0).bit_length(), 1
    while p5 < best:
        p35 = p5
        while p35 < best:
            q = -(-n // p35)  # smallest power of two with p35 * 2**j >= n
            cand = p35 * (1 << max(q - 1, 0).bit_length())
            best = min(best, cand)
            p35 *= 3
        p5 *= 5
    return best


def _rhat_plain(x: np.ndarray) -> float:
    n = x.shape[1]
    between = n * np.var(np.mean(x, axis=1), ddof=1)
    within = np.mean(np.var(x, axis=1, ddof=1))
    return float(np.sqrt((between / within + n - 1) / n))


def rhat_rank(x: np.ndarray) -> float:
    """Rank-normalised split R-hat (bulk and folded) of ``x[chain, draw]`` (NaN: fewer than 2
    chains or 4 draws)."""
    x = np.asarray(x, dtype=np.float64)
    if x.shape[0] < 2 or x.shape[1] < 4 or np.isnan(x).any():
        return float("nan")
    sp = _split(x)
    folded = np.abs(sp - np.median(sp))
    return max(_rhat_plain(_z_scale(sp)), _rhat_plain(_z_scale(folded)))


def _ess(x: np.ndarray) -> float:
    x = np.asarray(x, dtype=np.float64)
    if np.max(x) - np.min(x) < np.finfo(float).resolution:
        return float(x.size)
    n_chain, n_draw = x.shape
    m = _fast_len(2 * n_draw)
    c = x - x.mean(axis=1, keepdims=True)
    f = np.fft.rfft(c, n=m, axis=1)
    f *= np.conjugate(f)
    acov = np.fft.irfft(f, n=m, axis=1)[:, :n_draw]
    acov /= n_draw
    mean_var = np.mean(acov[:, 0]) * n_draw / (n_draw - 1.0)
    var_plus = mean_var * (n_draw - 1.0) / n_draw
    if n_chain > 1:
        var_plus += np.var(x.mean(axis=1), axis=None, ddof=1)
    rho = np.zeros(n_draw)
    even = 1.0
    rho[0] = even
    odd = 1.0 - (mean_var - np.mean(acov[:, 1])) / var_plus
    rho[1] = odd
    t = 1  # Geyer's initial positive sequence
    while t < n_draw - 3 and even + odd > 0.0:
        even = 1.0 - (mean_var - np.mean(acov[:, t + 1])) / var_plus
        odd = 1.0 - (mean_var - np.mean(acov[:, t + 2])) / var_plus
        if even + odd >= 0:
            rho[t + 1] = even
            rho[t + 2] = odd
        t += 2
    max_t = t - 2
    if even > 0:
        rho[max_t + 1] = even
    t = 1  # Geyer's initial monotone sequence
    while t <= max_t - 2:
        if rho[t + 1] + rho[t + 2] > rho[t - 1] + rho[t]:
            rho[t + 1] = (rho[t - 1] + rho[t]) / 2.0
            rho[t + 2] = rho[t + 1]
        t += 2
    size = n_chain * n_draw
    tau = -1.0 + 2.0 * np.sum(rho[: max_t + 1]) + np.sum(rho[max_t + 1 : max_t + 2])
    tau = max(tau, 1 / np.log10(size))
    return float("nan") if np.isnan(rho).any() else float(size / tau)


def ess_bulk(x: np.ndarray) -> float:
    """Bulk ESS (rank-normalised split chains) of ``x[chain, draw]`` (at least 4 draws)."""
    x = np.asarray(x, dtype=np.float64)
    return float("nan") if np.isnan(x).any() else _ess(_z_scale(_split(x)))


def ess_tail(x: np.ndarray, prob: tuple[float, float] = (0.05, 0.95)) -> float:
    """Tail ESS: the smaller ESS of the indicators of the ``prob`` quantiles."""
    x = np.asarray(x, dtype=np.float64)
    if np.isnan(x).any():
        return float("nan")
    return min(_ess(_split(x <= np.quantile(x, q, axis=None))) for q in prob)


class _BayesianConvergence:
    """Mixin of ``BayesianSynthesizer``: convergence report, warnings and summary."""

    def convergence_report(self, *, warn: bool = False) -> pd.DataFrame:
        """Rank-normalised bulk/tail ESS and R-hat of label-invariant scalars.

        Mixture labels switch freely, so component-wise parameters are not diagnosed; the model
        supplies quantities that do not depend on labels (log-likelihood, cell probabilities,
        concentration, number of occupied components). With one chain, R-hat is computed on the
        chain split in two halves (split-R-hat). The estimators of ``arviz_stats.ess``
        (``method="bulk"``, ``"tail"``) and ``arviz_stats.rhat`` (``method="rank"``).

        Parameters
        ----------
        warn : bool
            Issue a :class:`ConvergenceWarning` naming the quantities with R-hat > 1.01 or
            bulk/tail ESS below 100 per chain (Vehtari et al. 2021).

        Returns
        -------
        DataFrame
            Index: quantity; columns ``mean``, ``sd``, ``ess_bulk``, ``ess_tail``, ``rhat``,
            ``flag`` (``""``, ``"RHAT_HIGH"``, ``"LOW_ESS"`` or both joined by ``","``).
            ``attrs["mcmc_run"]``: the run the draws come from (as in
            :meth:`convergence_summary`: ``tune``, ``thin``, ``draws``, ``rounds``,
            ``sweeps_per_chain``, ``max_sweeps``, ``stopped``).

        References
        ----------
        Vehtari, A., Gelman, A., Simpson, D., Carpenter, B., Bürkner, P.-C. (2021). Rank-
        normalization, folding, and localization: an improved R-hat for assessing convergence of
        MCMC. Bayesian Analysis 16(2), 667–718. https://doi.org/10.1214/20-BA1221
        """
        self._check_fitted()
        ess_min = self._ess_min()
        rows = []
        for name, x in self._convergence_quantities().items():
            x = np.asarray(x, dtype=np.float64)
            if x.ndim == 1:
                x = x[None, :]
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
        flags = []
        for _, r in df.iterrows():
            f = []
            if np.isfinite(r.rhat) and r.rhat > RHAT_MAX:
                f.append("RHAT_HIGH")
            if (np.isfinite(r.ess_bulk) and r.ess_bulk < ess_min) or (
                np.isfinite(r.ess_tail) and r.ess_tail < ess_min
            ):
                f.append("LOW_ESS")
            flags.append(",".join(f))
        df["flag"] = flags
        df.attrs["mcmc_run"] = self._mcmc_run()
        if warn:
            for w in self._convergence_warnings(df):
                warnings.warn(ConvergenceWarning(w["message"], code=w["code"]),
                              skip_file_prefixes=CALLER)
        return df

    def _mcmc_run(self) -> dict[str, Any]:
        """The run the kept draws come from: warm-up sweeps, final thinning, kept draws per
        chain, rounds (more than 1: the run extended itself, ``max_sweeps``), sweeps per chain
        and the bound of a self-extending run (0: none). Read from the posterior's attributes
        (``bayes_risk.models._gibbs_run``), else from the settings."""
        attrs = self.posterior_.attrs
        tune = int(self.tune)
        thin = int(attrs.get("thin", getattr(self, "thin", 1)))
        draws = int(self.posterior_["posterior"].sizes["draw"])
        return {"tune": tune, "thin": thin, "draws": draws,
                "rounds": int(attrs.get("gibbs_rounds", 1)),
                "sweeps_per_chain": tune + draws * thin,
                "max_sweeps": int(attrs.get("max_sweeps", 0)),
                "stopped": str(attrs.get("gibbs_stop", ""))}

    def _round_verdict(self, posterior: Any, schema: Any, history: list[float]) -> str:
        """The convergence checks of :meth:`convergence_report` on draws (a DataTree of this
        model's posterior for ``schema``) between the rounds of a self-extending run:
        ``"passed"``, ``"failed"`` or ``"stuck"`` (``extension_stuck``; ``history``: the
        largest R-hat of the earlier rounds, appended to). A new instance with the same
        settings is diagnosed; this one is left as it is."""
        probe = type(self)(**self.get_params())
        probe.posterior_, probe.schema_ = posterior, schema
        probe._after_posterior()
        rep = probe.convergence_report(warn=False)
        if not any(rep["flag"]):
            return "passed"
        rhat = rep["rhat"].to_numpy(dtype=float)
        worst = float(np.max(rhat[np.isfinite(rhat)])) if np.isfinite(rhat).any() else np.nan
        previous = history[-1] if history else None
        history.append(worst)
        return "stuck" if extension_stuck(previous, worst) else "failed"

    def _ess_min(self) -> float:
        """The ESS threshold of this fit: ``ESS_MIN`` per chain (Vehtari et al. 2021)."""
        return ESS_MIN * int(self.posterior_["posterior"].sizes["chain"])

    def _convergence_warnings(self, df: pd.DataFrame) -> list[dict[str, Any]]:
        """One structured warning per failed check of a convergence table (code, quantities,
        message)."""
        out = []
        chains = int(self.posterior_["posterior"].sizes["chain"])
        run = self._mcmc_run()
        if run["stopped"] == "stuck":  # a self-extending run that stopped early
            advice = (f"The run stopped extending itself at {run['sweeps_per_chain']:,} sweeps "
                      f"per chain (one kept per {run['thin']}, {run['rounds']} rounds): its last "
                      f"round left R-hat above {STUCK_RHAT}, as when chains sit in different "
                      "states that longer runs do not bring together. Compare fits with several "
                      "seeds; a longer explicit run (draws, thin) shows whether they meet; see "
                      "convergence_report().")
        elif run["max_sweeps"]:  # a self-extending run that stopped at its bound
            advice = (f"The run extended itself to {run['sweeps_per_chain']:,} sweeps per chain "
                      f"(one kept per {run['thin']}, {run['rounds']} rounds), the longest that "
                      f"max_sweeps={run['max_sweeps']:,} allows: raise max_sweeps, or run longer "
                      "chains (draws, thin) or more chains; see convergence_report().")
        else:
            advice = ("Run longer chains (more tune/draws) or more chains; see "
                      "convergence_report().")
        for code, what in (("RHAT_HIGH", f"R-hat > {RHAT_MAX}"),
                           ("LOW_ESS", f"bulk or tail ESS < {self._ess_min():.0f}, i.e. "
                                       f"{ESS_MIN:.0f} per chain for {chains} chain(s)")):
            bad = df[[code in str(f).split(",") for f in df["flag"]]] if len(df) else df
            if not len(bad):
                continue
            desc = "; ".join(
                f"{q}: R-hat {r.rhat:.3f}, ESS bulk {r.ess_bulk:.0f}, tail {r.ess_tail:.0f}"
                for q, r in bad.iterrows()
            )
            out.append({
                "code": code,
                "quantities": [str(q) for q in bad.index],
                "message": (
                    f"{type(self).__name__}: MCMC may not have converged ({what}: {desc}) "
                    f"({code}). {advice}"
                ),
            })
        return out

    def mcmc_warnings(self) -> list[dict[str, Any]]:
        """Structured MCMC warnings of this fit: failed convergence checks and model codes.

        Returns
        -------
        list of dict
            Each with ``code`` (``"RHAT_HIGH"``, ``"LOW_ESS"``, or a model code such as
            ``"TRUNCATION_TOO_SMALL"``), ``quantities`` (the diagnosed quantities concerned)
            and ``message``.
        """
        self._check_fitted()
        if self.convergence_ is None:
            self.convergence_ = self.convergence_report(warn=False)
        out = self._convergence_warnings(self.convergence_)
        from bayes_risk.results._warnings import message

        for code in getattr(self, "warnings_", None) or []:
            if code not in {w["code"] for w in out}:
                # the code's meaning and remedy, as the result's structured warnings give it
                out.append({"code": str(code), "quantities": [],
                            "message": f"{type(self).__name__}: {message(str(code))} ({code})"})
        return out

    def convergence_summary(self) -> dict[str, Any]:
        """JSON-ready convergence record of the fit (written to ``convergence.json`` by
        :meth:`save`; included in the outputs of every run that uses the model).

        Returns
        -------
        dict
            ``chains``, ``draws`` (kept per chain), ``thin`` (sampler sweeps per kept draw
            after the warm-up; 1 where every draw is kept; the final one of a run that extended
            itself), ``tune``, ``rounds`` (1, or the rounds of a run that extended itself until
            its checks passed or its bound was reached), ``sweeps_per_chain`` (warm-up
            included), ``max_sweeps_per_chain`` (the bound of a self-extending run; 0: the
            run had the length asked for), ``stopped`` (why a self-extending run ended:
            ``"passed"``, ``"stuck"`` (R-hat stayed high, see ``DPMPM``, ``max_sweeps``),
            ``"max_sweeps"``; ``""``: no extension), ``thresholds`` (R-hat, ESS),
            ``quantities`` (per diagnosed quantity: ``mean``, ``sd``, ``ess_bulk``,
            ``ess_tail``, ``rhat``, ``flag``), ``warnings`` (:meth:`mcmc_warnings`) and
            ``passed`` (no failed check).
        """
        warns = self.mcmc_warnings()
        post = self.posterior_["posterior"]
        run = self._mcmc_run()
        return to_jsonable({
            "model": type(self).__name__,
            "chains": int(post.sizes["chain"]),
            "draws": int(post.sizes["draw"]),
            "thin": run["thin"],
            "tune": int(self.tune),
            "rounds": run["rounds"],
            "sweeps_per_chain": run["sweeps_per_chain"],
            "max_sweeps_per_chain": run["max_sweeps"],
            "stopped": run["stopped"],
            "thresholds": {"rhat_max": RHAT_MAX, "ess_min": self._ess_min(),
                           "ess_min_per_chain": ESS_MIN},
            "quantities": {
                str(q): {k: (float(v) if k != "flag" else v) for k, v in r.items()}
                for q, r in self.convergence_.iterrows()
            },
            "warnings": warns,
            "passed": not warns,
        })
