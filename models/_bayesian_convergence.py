"""Convergence diagnostics of :class:`~bayes_risk.models.bayesian.BayesianSynthesizer`.

Rank-normalised bulk/tail ESS and R-hat (Vehtari et al. 2021, with ``arviz_stats``) of the
label-invariant scalars each model supplies (``_convergence_quantities``), the structured
warnings they raise and the JSON record written to ``convergence.json`` with a saved model.
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
#: bulk/tail ESS below this flags too few effective draws (Vehtari et al. 2021: 100).
ESS_MIN = 100.0


class _BayesianConvergence:
    """Mixin of ``BayesianSynthesizer``: convergence report, warnings and summary."""

    def convergence_report(self, *, warn: bool = False) -> pd.DataFrame:
        """Rank-normalised bulk/tail ESS and R-hat of label-invariant scalars.

        Mixture labels switch freely, so component-wise parameters are not diagnosed; the model
        supplies quantities that do not depend on labels (log-likelihood, cell probabilities,
        concentration, number of occupied components). With one chain, R-hat is computed on the
        chain split in two halves (split-R-hat). Computed with ``arviz_stats.ess`` /
        ``arviz_stats.rhat``.

        Parameters
        ----------
        warn : bool
            Issue a :class:`ConvergenceWarning` naming the quantities with R-hat > 1.01 or
            bulk/tail ESS < 100 (Vehtari et al. 2021).

        Returns
        -------
        DataFrame
            Index: quantity; columns ``mean``, ``sd``, ``ess_bulk``, ``ess_tail``, ``rhat``,
            ``flag`` (``""``, ``"RHAT_HIGH"``, ``"LOW_ESS"`` or both joined by ``","``).

        References
        ----------
        Vehtari, A., Gelman, A., Simpson, D., Carpenter, B., Bürkner, P.-C. (2021). Rank-
        normalization, folding, and localization: an improved R-hat for assessing convergence of
        MCMC. Bayesian Analysis 16(2), 667–718. https://doi.org/10.1214/20-BA1221
        """
        import arviz_stats

        self._check_fitted()
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
                eb = float(arviz_stats.ess(x, method="bulk"))
                et = float(arviz_stats.ess(x, method="tail", prob=(0.05, 0.95)))
                rh = float(arviz_stats.rhat(xr_))
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
            if (np.isfinite(r.ess_bulk) and r.ess_bulk < ESS_MIN) or (
                np.isfinite(r.ess_tail) and r.ess_tail < ESS_MIN
            ):
                f.append("LOW_ESS")
            flags.append(",".join(f))
        df["flag"] = flags
        if warn:
            for w in self._convergence_warnings(df):
                warnings.warn(ConvergenceWarning(w["message"], code=w["code"]),
                              skip_file_prefixes=CALLER)
        return df

    def _convergence_warnings(self, df: pd.DataFrame) -> list[dict[str, Any]]:
        """One structured warning per failed check of a convergence table (code, quantities,
        message)."""
        out = []
        for code, what in (("RHAT_HIGH", f"R-hat > {RHAT_MAX}"),
                           ("LOW_ESS", f"bulk or tail ESS < {ESS_MIN:.0f}")):
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
                    f"({code}). Run longer chains (more tune/draws) or more chains; see "
                    "convergence_report()."
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
        for code in getattr(self, "warnings_", None) or []:
            if code not in {w["code"] for w in out}:
                out.append({"code": str(code), "quantities": [],
                            "message": f"{type(self).__name__}: {code}"})
        return out

    def convergence_summary(self) -> dict[str, Any]:
        """JSON-ready convergence record of the fit (written to ``convergence.json`` by
        :meth:`save`; included in the outputs of every run that uses the model).

        Returns
        -------
        dict
            ``chains``, ``draws`` (per chain), ``tune``, ``thresholds`` (R-hat, ESS),
            ``quantities`` (per diagnosed quantity: ``mean``, ``sd``, ``ess_bulk``,
            ``ess_tail``, ``rhat``, ``flag``), ``warnings`` (:meth:`mcmc_warnings`) and
            ``passed`` (no failed check).
        """
        warns = self.mcmc_warnings()
        post = self.posterior_["posterior"]
        return to_jsonable({
            "model": type(self).__name__,
            "chains": int(post.sizes["chain"]),
            "draws": int(post.sizes["draw"]),
            "tune": int(self.tune),
            "thresholds": {"rhat_max": RHAT_MAX, "ess_min": ESS_MIN},
            "quantities": {
                str(q): {k: (float(v) if k != "flag" else v) for k, v in r.items()}
                for q, r in self.convergence_.iterrows()
            },
            "warnings": warns,
            "passed": not warns,
        })
