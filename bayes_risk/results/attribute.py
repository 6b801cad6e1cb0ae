"""The result of :func:`bayes_risk.attribute_risk`; it imports nothing of the engine."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from bayes_risk._io import to_jsonable
from bayes_risk._numeric import normalise_log
from bayes_risk._thresholds import EVIDENCE_FACTOR
from bayes_risk.data.schema import Schema
from bayes_risk.data.validate import decode_values
from bayes_risk.exceptions import ValidationError
from bayes_risk.results import _attribute_plots as _plots
from bayes_risk.results import _attribute_summary as _words
from bayes_risk.results._attribute_mc import (  # mc_table: documented here (docs/api)
    flagged_at_worst,
    mc_table,
    plugin_mc_note,
)
from bayes_risk.results._attribute_null import file_null
from bayes_risk.results._base import RiskResult
from bayes_risk.results._summary import ResultWarning
from bayes_risk.warning_codes import message

__all__ = ["AttributeRiskResult", "CandidateSet", "bayes_factor", "hrw_summary", "mc_table",
           "EVIDENCE_FACTOR", "QUANTILES"]

#: quantiles of ``p_true`` and of the truth's rank in the Hu–Reiter–Wang summary
QUANTILES = (0.0, 0.05, 0.25, 0.5, 0.75, 0.95, 1.0)


@dataclass(frozen=True)
class CandidateSet:
    """One record's candidate set.

    Attributes
    ----------
    columns : tuple of str
        The varying columns.
    values : ndarray, shape (G, len(columns))
        Codes (categorical columns) or values (numeric columns).
    g0 : int
        Index of the truth.
    """

    columns: tuple[str, ...]
    values: np.ndarray
    g0: int

    @property
    def size(self) -> int:
        """``G``."""
        return int(self.values.shape[0])

    def frame(self, schema: Schema) -> pd.DataFrame:
        """Candidates as a DataFrame of level values (categorical) and numbers."""
        return decode_values(self.values, self.columns, schema)


@dataclass(frozen=True, repr=False)
class AttributeRiskResult(RiskResult):
    """Result of :func:`~bayes_risk.attribute_risk` (frozen;
    :func:`~bayes_risk.attribute.with_prior` returns a new one under another prior).

    Attributes
    ----------
    records : DataFrame
        One row per evaluated record, indexed by ``record`` (by ``pair`` for
        ``scenario="two_records"``): ``G``, ``p_true``, ``rank_min``, ``n_tie``, ``rank_avg``,
        ``is_top``, ``top_share``, ``baseline`` (1/G), the diagnostics (``ess_q_min``,
        ``khat_max``, …, :doc:`/methods/attribute`), bootstrap quantiles ``boot_*`` and
        ``flag_codes``; the stabilised estimator (its k̂ bounds) and the smoothed CART plug-in
        (its Monte Carlo bounds) add ``p_true_lower`` / ``p_true_upper``, two or more chains
        ``p_true_chain_min`` / ``p_true_chain_max`` and ``chain_z``.
    columns : tuple of str
        The varying (unknown) columns.
    candidates : list of CandidateSet
    loglik, logprior, log_post : list of arrays (G,)
        Per-candidate log-likelihoods, log prior and log posterior.
    diagnostics : list of dict
        Per record: ``ess_q``, ``khat`` and, when available, the stabilised estimator's and the
        chains' arrays.
    warnings : list of str
        Machine-readable codes, MCMC problems of the fits included.
    settings : dict
        Estimator, prior, candidates, scenario, H, m, seed, ``missing_values``.
    mcmc : dict
        Convergence of every MCMC fit the estimate uses: ``fits`` and ``warnings``.
    prior : Prior
        The prior applied (a :class:`bayes_risk.attribute.priors.Prior`).
    """

    records: pd.DataFrame
    columns: tuple[str, ...]
    candidates: list[CandidateSet]
    loglik: list[np.ndarray]
    logprior: list[np.ndarray]
    log_post: list[np.ndarray]
    diagnostics: list[dict[str, np.ndarray]]
    warnings: list[str]
    settings: dict[str, Any]
    schema: Any = field(repr=False)
    # the engine's Prior and PriorInputs (typed loosely: the result imports nothing of it)
    prior: Any = field(repr=False)
    _prior_inputs: Any = field(repr=False)
    _boot_loglik: list[np.ndarray] | None = field(repr=False, default=None)
    _degenerate: dict[str, Any] = field(repr=False, default_factory=dict)
    #: the engine's ``file_uncertainty``, run on first use (it costs as much as the bootstrap)
    _mc_figures: Callable[..., dict[str, Any]] | None = field(
        repr=False, default=None, compare=False
    )
    #: the engine's ``result_null`` (bayes_risk.attribute.null), run on first use
    _null_figures: Callable[..., dict[str, Any]] | None = field(
        repr=False, default=None, compare=False
    )
    _cache: dict[str, Any] = field(repr=False, default_factory=dict, compare=False)
    mcmc: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # frozen: the record (or pair) number becomes the index once
        key = "pair" if self.settings.get("scenario") == "two_records" else "record"
        object.__setattr__(self, "records", records_by_record(self.records, key))

    # ----- access -------------------------------------------------------------------------
    @property
    def flagged(self) -> pd.DataFrame:
        """Records carrying any of the record flags (``bayes_risk.warning_codes.RECORD_FLAGS``)."""
        return self.records[self.records["flag_codes"] != ""].copy()

    def _position(self, record: int) -> int:
        hit = np.flatnonzero(self.records.index.to_numpy() == int(record))
        if hit.size == 0:
            raise ValidationError(
                f"record {record!r} was not evaluated; evaluated records are "
                f"{self.records.index.tolist()[:10]}{'...' if len(self.records) > 10 else ''}."
            )
        return int(hit[0])

    def candidate_posteriors(self, record: int) -> pd.DataFrame:
        """Candidates of ``record`` with ``loglik``, ``prior``, ``posterior``, ``is_truth``."""
        k = self._position(record)
        cs = self.candidates[k]
        df = decode_values(cs.values, cs.columns, self.schema)
        df["loglik"] = self.loglik[k]
        df["prior"] = np.exp(self.logprior[k])
        df["posterior"] = np.exp(self.log_post[k])
        df["is_truth"] = np.arange(cs.size) == cs.g0
        return df

    # ----- what a new prior needs (``bayes_risk.attribute.with_prior``) ------------------------
    def _g0(self) -> np.ndarray:
        if "g0" not in self._cache:
            self._cache["g0"] = np.array([c.g0 for c in self.candidates], dtype=np.int64)
        return self._cache["g0"]

    # ----- summaries ------------------------------------------------------------------------
    def to_dict(
        self, *, thresholds: Sequence[float] = (0.5,), records: bool = False,
        evidence_factor: float = EVIDENCE_FACTOR,
    ) -> dict[str, Any]:
        """File-level summary (Hu, Reiter & Wang 2014), JSON-safe: ``summary.json`` of
        ``bayes-risk attribute`` (:doc:`/user_guide/attribute`).

        Parameters
        ----------
        thresholds : sequence of float
            Count the records whose ``p_true`` exceeds each threshold.
        records : bool
            Add the record table (``"records"``, column → list).
        evidence_factor : float
            Bayes factor of the true values (> 1) from which a record counts in
            ``prop_evidence`` (see :func:`bayes_factor`).

        Returns
        -------
        dict
            ``n_records``, ``n_flagged``, ``flag_counts``, the Hu–Reiter–Wang summaries of
            ``unflagged``, ``flagged`` and ``all`` records (with the Bayes factors of the true
            values: ``prop_evidence``, ``bayes_factor_quantiles``, ``mean_prior_p_true``;
            not for the low-risk stand-in, whose candidates come from the release),
            ``random_guess_baseline``, ``published_estimator``, ``pareto_khat``,
            ``plugin_monte_carlo``, ``between_chain_check``, ``settings``, ``warnings``,
            ``mcmc`` and, with the draw bootstrap, ``mc_uncertainty``.
        """
        df = self.records
        fl = df["flag_codes"] != ""
        prior = (pd.Series(self.prior_p_true(), index=df.index) if self._fixed_candidates
                 else None)

        def hrw(d: pd.DataFrame) -> dict[str, Any]:
            return hrw_summary(
                d["p_true"].to_numpy(),
                d["rank_min"].to_numpy(),
                d["is_top"].to_numpy(),
                d["top_share"].to_numpy(),
                thresholds=thresholds,
                prior_p_true=None if prior is None else prior[d.index].to_numpy(),
                evidence_factor=evidence_factor,
            )

        khat_note: dict[str, Any] = {}
        if "n_khat_high" in df.columns:
            hi = df["n_khat_high"].to_numpy() > 0
            kf = df["flag_codes"].str.contains("KHAT_HIGH", regex=False).to_numpy()
            with np.errstate(invalid="ignore"):
                over = (df["p_true_lower"] < df["p_true"] * (1 - 1e-9)).to_numpy()
            khat_note = {
                "rule": self.settings.get("khat_rule"),
                "tolerance": self.settings.get("khat_tolerance"),
                "records_with_high_khat": int(hi.sum()),
                "records_high_khat_immaterial": int((hi & ~kf).sum()),
                "records_p_true_may_overstate": int((over & ~kf).sum()),
            }
        out = {
            "n_records": int(len(df)),
            "flagged_at_worst": flagged_at_worst(df[fl], None if prior is None else bayes_factor(
                df.loc[fl, "p_true_upper"] if "p_true_upper" in df else np.full(int(fl.sum()),
                                                                                 np.nan),
                prior[fl]),
                evidence_factor),
            "n_flagged": int(fl.sum()),
            "flag_counts": self._flag_counts(),
            "unflagged": hrw(df[~fl]),
            "flagged": hrw(df[fl]),
            "all": hrw(df),
            "random_guess_baseline": float(np.mean(df["baseline"])) if len(df) else float("nan"),
            "published_estimator": dict(self._degenerate),
            "pareto_khat": khat_note,
            "plugin_monte_carlo": plugin_mc_note(df, self.settings),
            "between_chain_check": self._chain_note(),
            "settings": dict(self.settings),
            "warnings": list(self.warnings),
            "mcmc": dict(self.mcmc),
        }
        regimes = self.regime_figures(thresholds=thresholds, evidence_factor=evidence_factor)
        if regimes is not None:
            out["regimes"] = regimes
        mc = self._mc_uncertainty(evidence_factor)
        if mc is not None:
            out["mc_uncertainty"] = mc
        null = self.null(evidence_factor)
        if null is not None:
            out["null"] = null
        if records:
            out["records"] = df.reset_index().to_dict(orient="list")
        return to_jsonable(out)

    def regime_figures(
        self, *, thresholds: Sequence[float] = (0.5,), evidence_factor: float = EVIDENCE_FACTOR,
    ) -> dict[str, Any] | None:
        """The file-level figures under each regime of the model's fit when its chains disagree
        (``REGIMES_DISAGREE``); ``None`` when they agree or there are no chains.

        Parameters
        ----------
        thresholds, evidence_factor
            As in :meth:`to_dict`.

        Returns
        -------
        dict or None
            ``status`` ("computed" or "not computed" with ``reason``), ``n_records``, ``regimes``
            (each with ``chains``, the fit's figures and the Hu–Reiter–Wang ``summary``),
            ``largest_prop_top``, ``largest_prop_evidence`` and ``mass_prop_top``,
            ``mass_prop_evidence`` (the shares of the regime that holds the posterior mass,
            ``holds_mass`` of the fit's regime record; ``None``: none does).
        """
        fit = (self.mcmc or {}).get("fits", {}).get("model") or {}
        reg = fit.get("regimes")
        if not reg or reg.get("agree", True):
            return None
        groups = [list(r["chains"]) for r in reg["regimes"]]
        n_chains = sum(len(g) for g in groups)
        base = {"regimes": [dict(r) for r in reg["regimes"]]}
        ok = [k for k, d in enumerate(self.diagnostics)
              if "chain_loglik" in d and set(filter(None, str(self.records["flag_codes"].iloc[k])
                                                      .split(";"))) <= {"CHAINS_DISAGREE"}]
        if not ok or any(np.shape(self.diagnostics[k]["chain_loglik"])[0] != n_chains
                         for k in ok):
            why = ((self.settings.get("chain_check") or {}).get("reason")
                   or "no estimates per chain")
            return {"status": "not computed", "reason": f"no per-chain estimates ({why})",
                    **base, "n_records": 0, "largest_prop_top": None,
                    "largest_prop_evidence": None, "mass_prop_top": None,
                    "mass_prop_evidence": None}
        g0 = self._g0()
        per: list[dict[str, np.ndarray]] = []
        for g in groups:
            p = np.empty(len(ok))
            top = np.zeros(len(ok), dtype=bool)
            for i, k in enumerate(ok):
                a = self.diagnostics[k]["chain_loglik"][g] + self.logprior[k][None, :]
                with np.errstate(invalid="ignore", over="ignore"):
                    post = np.exp(a - np.max(a, axis=1, keepdims=True))
                    post = (post / post.sum(axis=1, keepdims=True)).mean(axis=0)
                p[i] = post[g0[k]]
                top[i] = bool(post[g0[k]] >= np.max(post) * (1 - 1e-9))
            per.append({"p": p, "top": top})
        out_reg = []
        prior = self.prior_p_true()[ok] if self._fixed_candidates else None
        for r, f in zip(base["regimes"], per, strict=True):
            summ = hrw_summary(f["p"], np.where(f["top"], 1.0, 2.0), f["top"],
                               f["top"].astype(float), thresholds=thresholds,
                               prior_p_true=prior, evidence_factor=evidence_factor)
            summ.pop("rank_min_quantiles", None)  # only ranked first or not is kept
            out_reg.append({**r, "summary": summ})
        heavy = next((i for i, r in enumerate(out_reg) if r.get("holds_mass")), None)

        def pick(key: str) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
            # the regime with the largest share, and the one that holds the posterior mass
            shares = [float(r["summary"].get(key, np.nan)) for r in out_reg]
            best = int(np.nanargmax(shares)) if np.isfinite(shares).any() else None
            return (None if best is None else {"regime": best + 1, key: shares[best]},
                    None if heavy is None else {"regime": heavy + 1, key: shares[heavy]})

        (big_top, mass_top), (big_ev, mass_ev) = pick("prop_top"), pick("prop_evidence")
        return {"status": "computed", "n_records": len(ok), "regimes": out_reg,
                "largest_prop_top": big_top, "largest_prop_evidence": big_ev,
                "mass_prop_top": mass_top, "mass_prop_evidence": mass_ev}

    def _chain_note(self) -> dict[str, Any]:
        """``settings["chain_check"]`` with the number of records flagged ``CHAINS_DISAGREE``."""
        note = dict(self.settings.get("chain_check") or {"status": "not run",
                                                        "reason": "no posterior draws"})
        ran = note.get("status") == "run"
        note["records_flagged"] = (
            int(self.records["flag_codes"].str.contains("CHAINS_DISAGREE", regex=False).sum())
            if ran else None
        )
        return note

    def _mc_uncertainty(
        self, evidence_factor: float = EVIDENCE_FACTOR
    ) -> dict[str, Any] | None:
        """The draw bootstrap's Monte Carlo figures (computed once per factor), or ``None``."""
        if not self._boot_loglik or self._mc_figures is None:
            return None
        key = f"mc_uncertainty_{float(evidence_factor)!r}"
        if key not in self._cache:
            self._cache[key] = self._mc_figures(self, evidence_factor=evidence_factor)
        return self._cache[key]

    def record_null(self, evidence_factor: float = EVIDENCE_FACTOR) -> pd.DataFrame | None:
        """What each record's figures would be if the release said nothing about it (its true
        values a draw from the other records' frequencies, independent of the posterior):
        ``null_p_top`` (probability it ranks first), ``null_rank_mean`` / ``_var`` / ``_m3``
        (third central moment), ``null_p_true_mean`` / ``_var`` / ``_m3`` and
        ``null_p_evidence`` (probability its
        Bayes factor reaches ``evidence_factor``); ``None`` for a result without fixed
        candidates. See :doc:`/methods/attribute`, What a release that says nothing gives.

        Returns
        -------
        DataFrame or None
            Indexed as :attr:`records`; ``attrs["method"]`` says how it was computed.
        """
        if self._null_figures is None or not self._fixed_candidates:
            return None
        key = f"null_{float(evidence_factor)!r}"
        if key not in self._cache:
            figs = self._null_figures(self, evidence_factor=evidence_factor)
            df = pd.DataFrame({k: v for k, v in figs.items() if k != "method"},
                              index=self.records.index)
            df.attrs["method"] = figs["method"]
            self._cache[key] = df
        return self._cache[key]

    def null(self, evidence_factor: float = EVIDENCE_FACTOR) -> dict[str, Any] | None:
        """The file-level null of the unflagged records, beside which the share ranked first,
        the mean rank, the share with evidence and mean ``p_true`` are read: each statistic's
        expected value and 95 % range if the release said nothing about the records
        (:meth:`record_null`), with ``method``; ``None`` without fixed candidates.

        Returns
        -------
        dict or None
        """
        per = self.record_null(evidence_factor)
        if per is None:
            return None
        keep = (self.records["flag_codes"] == "").to_numpy()
        out = file_null({c: per[c].to_numpy() for c in per.columns}, keep)
        return {**out, "method": per.attrs["method"]} if out else None

    @property
    def _fixed_candidates(self) -> bool:
        """Whether each record's candidates were set before the release was read, so that the
        prior over them is the intruder's belief before it and a Bayes factor says what the
        release adds; not so for Wang & Reiter's low-risk stand-in, whose candidates are the
        record's released values (``estimator="synthetic_values"``)."""
        return self.settings.get("estimator") != "synthetic_values"

    def prior_p_true(self) -> np.ndarray:
        """The intruder's prior probability of each record's true values among its candidates,
        before the release (``1/G`` under the uniform prior); ``nan`` for a record without
        candidates.

        Returns
        -------
        ndarray (n_records,)
        """
        if "prior_p_true" not in self._cache:
            g0 = self._g0()
            out = np.full(len(g0), np.nan)
            sizes = np.array([lp.size for lp in self.logprior], dtype=np.int64)
            for G in np.unique(sizes[sizes > 0]):
                # records with G candidates at once (the prior is normalised over C_i)
                k = np.flatnonzero(sizes == G)
                lp = np.stack([np.asarray(self.logprior[i], dtype=np.float64) for i in k])
                out[k] = normalise_log(lp)[np.arange(k.size), g0[k]]
            self._cache["prior_p_true"] = out
        return self._cache["prior_p_true"]

    def to_dataframe(self) -> pd.DataFrame:
        """The record table (a copy of :attr:`records`) with, after ``baseline``, the prior's
        mass on the true values (``prior_p_true``) and their Bayes factor (``bayes_factor``,
        :func:`bayes_factor`): ``records.csv`` of ``bayes-risk attribute`` and of the audit."""
        df = self.records.copy()
        if not self._fixed_candidates:
            return df
        at = df.columns.get_loc("baseline") + 1 if "baseline" in df.columns else df.shape[1]
        prior = self.prior_p_true()
        df.insert(at, "prior_p_true", prior)
        df.insert(at + 1, "bayes_factor",
                  bayes_factor(df["p_true"].to_numpy(dtype=np.float64), prior))
        return df

    @property
    def structured_warnings(self) -> list[ResultWarning]:
        """File-level codes, record flags and MCMC warnings as ResultWarnings."""
        out: list[ResultWarning] = []
        mc = list(self.mcmc.get("warnings", [])) if self.mcmc else []
        mc_codes = {w.get("code") for w in mc}
        flags = self._flag_counts()
        for c in self._warning_codes():
            if c not in mc_codes and c not in flags:
                out.append(ResultWarning(c, message(c)))
        out += self._flag_warnings("record(s)")
        for w in mc:
            where = f"fit {w.get('fit', 'model')}"
            q = w.get("quantities")
            if q:
                where += " (" + ", ".join(map(str, q)) + ")"
            code = str(w.get("code"))
            out.append(ResultWarning(code, str(w.get("message") or message(code)), where))
        return out

    # ----- words and plots (bayes_risk.results._attribute_summary, _attribute_plots) --------
    headline = _words.headline
    summary = _words.summary
    plot_kinds = ("p_true", "rank", "khat")
    _plot_p_true = _plots.p_true
    _plot_rank = _plots.rank
    _plot_khat = _plots.khat

    def _figsize(self, kind: str) -> tuple[float, float]:
        return (6.0, 4.4) if kind == "khat" else (6.0, 4.0)


def bayes_factor(p_true: Any, prior_p_true: Any) -> np.ndarray:
    """How many times the release multiplies the intruder's odds on a record's true values:
    the Bayes factor ``[p/(1 − p)] / [π/(1 − π)]`` of the truth against its other candidates,
    ``p`` = ``p_true`` (after the release) and ``π`` = the prior's mass on the truth (before).

    It is the likelihood of the release under the true values over its prior-weighted
    likelihood under the other candidates, so it does not depend on the prior's mass on the
    truth; under the uniform prior it is ``(G − 1) p / (1 − p)``. A release that says nothing
    about the record gives 1. ``inf`` where ``p = 1 > π``; 1 where the prior decides alone
    (``π`` of 0 or 1: the release cannot move the intruder); ``nan`` where ``p`` is ``nan``.

    Parameters
    ----------
    p_true, prior_p_true : array_like
        Posterior and prior probabilities of the true values, per record.

    Returns
    -------
    ndarray

    Examples
    --------
    >>> bayes_factor([0.1, 0.5, 1 / 35, 1.0], [1 / 35, 1 / 35, 1 / 35, 0.5]).round(3).tolist()
    [3.778, 34.0, 1.0, inf]
    """
    p = np.asarray(p_true, dtype=np.float64)
    pi = np.broadcast_to(np.asarray(prior_p_true, dtype=np.float64), p.shape)
    decided = (pi <= 0) | (pi >= 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        # log odds (log1p keeps 1 − p exact near 0): p = 1 gives +inf
        log_bf = (np.log(p) - np.log1p(-p)) - (np.log(pi) - np.log1p(-pi))
        out = np.exp(log_bf)
    return np.where(decided & ~np.isnan(p), 1.0, out)


def check_evidence_factor(value: Any, argument: str = "evidence_factor") -> float:
    """``value`` as a float if it is a Bayes factor above 1, else a ``ValidationError`` naming
    ``argument`` (a factor of 1 is no evidence, below 1 evidence against the truth)."""
    try:
        f = float(value)
    except (TypeError, ValueError):
        f = float("nan")
    if not f > 1:
        raise ValidationError(
            f"{argument} must be a Bayes factor above 1 (how many times the release multiplies "
            f"the intruder's odds on the true values; 1 is no evidence). Got {value!r}.",
            code="INVALID_ARGUMENT")
    return f


def hrw_summary(
    p_true: np.ndarray,
    rank_min: np.ndarray,
    is_top: np.ndarray,
    top_share: np.ndarray,
    *,
    thresholds: Sequence[float] = (0.5,),
    prior_p_true: np.ndarray | None = None,
    evidence_factor: float = EVIDENCE_FACTOR,
) -> dict[str, Any]:
    """File-level summary of Hu, Reiter & Wang (2014); ``nan`` records excluded and counted.

    With ``prior_p_true`` (the prior's mass on each record's true values) also the Bayes
    factors of the true values (:func:`bayes_factor`): ``prop_evidence``, the share of records
    whose factor is at least ``evidence_factor``, their quantiles and ``mean_prior_p_true``.

    Examples
    --------
    >>> s = hrw_summary(np.array([0.04, 0.05, 0.2, 0.9]), np.array([2, 1, 1, 1]),
    ...                 np.array([0, 1, 1, 1]), np.array([0, 1, 1, 1]),
    ...                 prior_p_true=np.full(4, 0.04), evidence_factor=3)
    >>> s["prop_top"], s["prop_evidence"], s["mean_prior_p_true"]
    (0.75, 0.5, 0.04)
    """
    p = np.asarray(p_true, dtype=np.float64)
    ok = ~np.isnan(p)
    rk = np.asarray(rank_min, dtype=np.float64)[ok]
    p = p[ok]
    out: dict[str, Any] = {"n_records": int(ok.sum()), "n_excluded_nan": int((~ok).sum())}
    if ok.sum() == 0:
        return out
    out["rank_min_quantiles"] = {f"{int(q * 100)}%": float(np.quantile(rk, q)) for q in QUANTILES}
    out["mean_rank"] = float(np.mean(rk))
    out["p_true_quantiles"] = {f"{int(q * 100)}%": float(np.quantile(p, q)) for q in QUANTILES}
    # is_top of a skipped record is missing (a nullable boolean column): left out with it
    top = pd.array(np.asarray(is_top, dtype=object), dtype="Float64").to_numpy(
        dtype=np.float64, na_value=np.nan)
    out["prop_top"] = float(np.mean(top[ok]))
    out["prop_top_shared"] = float(np.mean(np.asarray(top_share, dtype=np.float64)[ok]))
    out["mean_p_true"] = float(np.mean(p))
    out["n_p_true_above"] = {f"{t:g}": int(np.sum(p > t)) for t in thresholds}
    if prior_p_true is not None:
        evidence_factor = check_evidence_factor(evidence_factor)
        pi = np.asarray(prior_p_true, dtype=np.float64)[ok]
        bf = bayes_factor(p, pi)
        out["evidence_factor"] = float(evidence_factor)
        out["prop_evidence"] = float(np.mean(bf >= evidence_factor))
        # the order statistic at or above each quantile: a factor of inf (p_true = 1) is
        # never averaged with another into nan
        out["bayes_factor_quantiles"] = {f"{int(q * 100)}%": float(np.quantile(bf, q,
                                                                               method="higher"))
                                         for q in QUANTILES}
        out["mean_prior_p_true"] = float(np.mean(pi))
    return out


def records_by_record(records: pd.DataFrame, key: str = "record") -> pd.DataFrame:
    """The record table indexed by ``record`` (or ``pair``), from an index or a column."""
    what = ("the pair numbers: a column or index named 'pair' (the pair's position in pairs)"
            if key == "pair" else "the record numbers: a column or index named 'record' (the "
            "row number in the original, 0-based)")
    if records.index.name == key and key not in records.columns:
        out = records
    elif key in records.columns:
        out = records.set_index(key)
    else:
        raise ValidationError(
            f"the attribute-risk record table needs {what}. Got columns {list(records)}.",
            code="MISSING_COLUMN"
        )
    if out.index.has_duplicates:
        raise ValidationError(f"the attribute-risk record table lists a {key} twice.",
                              code="DUPLICATE_ID")
    index = pd.Index(np.asarray(out.index, dtype=np.int64), name=key)
    return out.set_axis(index, axis=0)
