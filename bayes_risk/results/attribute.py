"""The result of :func:`bayes_risk.attribute_risk`; it imports nothing of the engine."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
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
from bayes_risk.results._base import RiskResult, draws, legend_below
from bayes_risk.results._summary import ResultWarning, Summary
from bayes_risk.warning_codes import message

__all__ = ["AttributeRiskResult", "CandidateSet", "bayes_factor", "file_null", "hrw_summary",
           "mc_table", "null_reading", "null_table", "EVIDENCE_FACTOR", "NULL_FIGURES",
           "QUANTILES"]

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
        mc_note: dict[str, Any] = {}
        if "mc_se_max" in df.columns:  # the smoothed plug-in's Monte Carlo error (its bounds)
            has = df["mc_se_max"].to_numpy() > 0
            mf = df["flag_codes"].str.contains("MC_ERROR_HIGH", regex=False).to_numpy()
            mc_note = {"rule": "material", "level": self.settings.get("mc_level"),
                       "tolerance": self.settings.get("khat_tolerance"),
                       "records_with_mc_error": int(has.sum()),
                       "records_mc_error_immaterial": int((has & ~mf).sum())}
        out = {
            "n_records": int(len(df)),
            "n_flagged": int(fl.sum()),
            "flag_counts": self._flag_counts(),
            "unflagged": hrw(df[~fl]),
            "flagged": hrw(df[fl]),
            "all": hrw(df),
            "random_guess_baseline": float(np.mean(df["baseline"])) if len(df) else float("nan"),
            "published_estimator": dict(self._degenerate),
            "pareto_khat": khat_note,
            "plugin_monte_carlo": mc_note,
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

    def headline(self) -> str:
        """The unflagged records' shares in a few lines, as ``bayes-risk attribute`` prints
        them: ranked first, mean ``p_true`` and with evidence, each beside what a release that
        said nothing would give; the release's ε and the between-chain check."""
        d = self.to_dict()
        un, null = d["unflagged"], d.get("null") or {}
        nan = float("nan")

        def beside(*keys: str) -> str:
            parts = [f"{k} expected {100 * e['expected']:.3g} % (95 % range "
                     f"{100 * e['low']:.3g}–{100 * e['high']:.3g} %; observed: "
                     f"{null_reading(float(un.get(k, nan)), e)})"
                     for k in keys if (e := null.get(k))]
            return (" (if the release said nothing about the records: " + ", ".join(parts)
                    + ")" if parts else "")

        what = "pairs of records" if self.settings.get("scenario") == "two_records" else "records"
        lines = [
            f"attribute risk of {d['n_records']} {what} ({d['n_flagged']} flagged, counted "
            "separately)",
            f"stable estimates (unflagged): share ranked first {100 * un.get('prop_top', nan):.3g}"
            f" % (prop_top in summary.json), mean p_true {100 * un.get('mean_p_true', nan):.3g} %"
            + beside("prop_top", "mean_p_true"),
            # what the release adds, to be read beside the ranking (methods page, issue 63)
            f"share with evidence {100 * un.get('prop_evidence', nan):.3g} % (prop_evidence: "
            f"Bayes factor of the true values >= {un.get('evidence_factor', nan):g}, the release "
            "multiplying the intruder's odds on them that many times)" + beside("prop_evidence"),
        ]
        dp = self.settings.get("differential_privacy")
        if dp:  # the release's ε beside its attribute risk (methods page, Differential privacy)
            from bayes_risk.privacy import beside_attribute

            q = (d["all"].get("bayes_factor_quantiles") or {}).get("100%")
            lines.append(beside_attribute(dp, None if q is None else float(q)))
        ch = d["between_chain_check"]
        lines.append(f"between-chain check: {ch['reason']}; {ch['records_flagged']} record(s) "
                     "flagged CHAINS_DISAGREE" if ch.get("status") == "run"
                     else f"between-chain check not run: {ch['reason']}")
        return "\n".join(lines)

    def summary(self, *, thresholds: Sequence[float] = (0.5,)) -> Summary:
        """Printable file-level summary (the figures of :meth:`to_dict`)."""
        d = self.to_dict(thresholds=thresholds)
        st = self.settings
        cand = st.get("candidates")
        header = [
            ("columns guessed", ", ".join(self.columns)),
            ("records evaluated", d["n_records"]),
            ("records flagged", d["n_flagged"]),
            ("estimator", st.get("estimator")),
            ("prior", st.get("prior")),
            ("candidates", cand.get("rule", cand) if isinstance(cand, dict) else cand),
            ("posterior draws H", st.get("H")),
            ("synthetic datasets m", st.get("m")),
        ]
        dp = st.get("differential_privacy")
        if dp:  # the release's ε beside its attribute risk (methods: Differential privacy)
            from bayes_risk.privacy import beside_attribute

            header.append(("differential privacy ε of the release", dp["epsilon"]))
        rows = [hrw_table_row(name, d[key]) for key, name in
                (("all", "all"), ("unflagged", "not flagged"), ("flagged", "flagged"))]
        notes = [
            "p_true: renormalised posterior probability of the record's true values among its "
            "candidates; rank 1 = the intruder's best guess (Hu, Reiter & Wang 2014). Flagged "
            "records have unreliable estimates and are reported separately."
        ]
        if "prop_evidence" in d["all"]:  # not for the low-risk stand-in
            notes.append(
                "Bayes factor: how many times the release multiplies the intruder's odds on the "
                "record's true values (1: the release tells nothing about the record); from "
                f"{EVIDENCE_FACTOR:g} on it counts as evidence (Kass & Raftery 1995).")
        if "null" in d:
            notes.append(
                "If the release said nothing about the records: each figure's expected value "
                "and 95 % range when every record's true values are a draw from the other "
                f"records' frequencies, independent of the release ({d['null']['method']}; "
                "methods page, Attribute disclosure risk: What a release that says nothing "
                "gives). A figure above its range says that the release points to the records' "
                "true values; within it, that it tells no more than the population does.")
        if dp:
            q = (d["all"].get("bayes_factor_quantiles") or {}).get("100%")
            notes.append("Differential privacy: " + beside_attribute(dp, q) + ".")
        if d["flag_counts"]:
            notes.append(
                "Flags: " + ", ".join(f"{k} × {v}" for k, v in d["flag_counts"].items()) + "."
            )
        pm = d["plugin_monte_carlo"]
        if pm.get("records_with_mc_error"):
            notes.append(
                f"Monte Carlo error of the plug-in likelihood: {pm['records_with_mc_error']} "
                f"record(s) have one; {pm['records_mc_error_immaterial']} of them are not "
                "flagged, as their p_true cannot be understated by more than "
                f"{pm['tolerance']:g} nor the truth be ranked first within the "
                f"{100 * pm['level']:g} % simultaneous Monte Carlo bounds of their candidates "
                "(p_true_lower, p_true_upper); the others are MC_ERROR_HIGH.")
        ch = d["between_chain_check"]
        if ch.get("status") == "run":
            notes.append(f"Between-chain check ({ch.get('reason')}): {ch['records_flagged']} "
                         "record(s) whose estimate depends on the chain (CHAINS_DISAGREE).")
        else:
            notes.append(f"Between-chain check: not run ({ch.get('reason')}).")
        tables = {"File-level summary": pd.DataFrame(rows)}
        if "null" in d:
            tables["If the release said nothing about the records"] = null_table(
                d["unflagged"], d["null"])
        mc = d.get("mc_uncertainty")
        if mc is not None:
            tables["Monte Carlo error (draw bootstrap)"] = mc_table(mc)
            notes.append(
                f"Monte Carlo error: MCSE and 90 % interval over {mc['bootstrap']} bootstrap "
                "resamples of the posterior draws (every record the same resample; each "
                "record's p_true replicates corrected for the bias they show); they cover "
                "the Monte Carlo error of the posterior draws only, and an interval of zero "
                "width is marked degenerate. Unflagged records; "
                f"{mc['n_flagged_excluded']} flagged record(s) left out."
            )
        return Summary(
            "Attribute disclosure risk",
            header=header,
            tables=tables,
            notes=notes,
            warnings=self.structured_warnings,
        )

    # ----- plots ----------------------------------------------------------------------------
    plot_kinds = ("p_true", "rank", "khat")

    @draws("p_true")
    def _plot_p_true(self, ax: Any) -> Any:
        """Stacked histogram of ``p_true``, stable and flagged, with two means of the stable
        estimates: before the release (the intruder's prior; 1/G under the uniform prior) and
        after a release that says nothing about the records (:meth:`null`)."""
        df = self.records
        codes = df["flag_codes"]
        flagged = np.asarray((codes.astype(str) != "").to_numpy() & codes.notna(), dtype=bool)
        p = df["p_true"].to_numpy(dtype=float)
        ok = ~np.isnan(p)
        # the whole [0, 1] unless every p_true is small (then [0, max]: the baseline stays visible)
        hi = 1.0 if not ok.any() or np.nanmax(p) > 0.5 else float(np.nanmax(p)) * 1.05
        ax.hist([p[~flagged & ok], p[flagged & ok]], bins=30, range=(0, hi), stacked=True,
                label=["stable estimate", "flagged (unstable)"], color=["tab:blue", "tab:orange"])
        # the records the summary's means are over (`unflagged`), and its prior mass
        keep = ~flagged & ok
        guess = df["baseline"].to_numpy(dtype=float)[keep]
        prior = self.prior_p_true()[keep] if self._fixed_candidates else guess
        if prior.size and np.isfinite(prior).all():
            uniform = " = 1/G" if np.allclose(prior, guess, rtol=1e-9, atol=0) else ""
            # candidates read off the release (Wang & Reiter's stand-in) have no "before"
            what = (f"before the release (the intruder's prior{uniform})"
                    if self._fixed_candidates else "uniform over the released candidates, 1/G")
            ax.axvline(float(np.mean(prior)), color="0.5", ls=":",
                       label=f"{what}: {100 * float(np.mean(prior)):.3g} %")
        null = (self.null() or {}).get("mean_p_true")
        if null:
            ax.axvline(null["expected"], color="k", ls="--",
                       label=f"after a release that says nothing of the records: "
                             f"{100 * null['expected']:.3g} %")
        from matplotlib.ticker import PercentFormatter

        # in per cent, as the report and the command line give p_true
        ax.xaxis.set_major_formatter(PercentFormatter(1.0))
        ax.set_xlabel("probability of the true values, p_true (renormalised over the "
                      "candidates)")
        ax.set_ylabel("records")
        legend_below(ax)
        return ax

    @draws("rank")
    def _plot_rank(self, ax: Any, prop_top_threshold: float | None = None) -> Any:
        """Histogram of the truth's rank among the candidates, with the mean rank of a release
        that says nothing about the records (:meth:`null`);
        with ``prop_top_threshold`` (per cent of the records, the audit's ``prop_top``), the
        records ranked first that it allows, beside those the estimate ranks first."""
        df = self.records
        r = df["rank_min"].to_numpy(dtype=float)
        r = r[~np.isnan(r)]
        if r.size:
            ax.hist(r, bins=np.arange(0.5, r.max() + 1.5, 1.0), color="tab:blue")
        null = (self.null() or {}).get("mean_rank")
        if null:
            ax.axvline(null["expected"], color="k", ls="--",
                       label=f"mean rank if the release said nothing of the records: "
                             f"{null['expected']:.3g}")
        if prop_top_threshold is not None and r.size:
            allowed = float(prop_top_threshold) / 100 * r.size
            ax.hlines(allowed, 0.5, 1.5, color="#a51d2d", ls="--", lw=1.5,
                      label=f"threshold of the share ranked first: {prop_top_threshold:g} % "
                            f"({allowed:,.0f} records)")
            ax.set_ylim(top=max(ax.get_ylim()[1], 1.1 * allowed))
        legend_below(ax, ncols=1 if prop_top_threshold is not None else 3)
        ax.set_xlabel("rank of the true values (1 = the intruder's best guess)")
        ax.set_ylabel("records")
        return ax

    @draws("khat")
    def _plot_khat(self, ax: Any) -> Any:
        """Largest Pareto k-hat over each record's candidates, with the threshold, and the
        records the k-hat rule flags (``KHAT_HIGH``) apart from those above the threshold it
        does not flag: under ``khat_rule="material"`` a high k-hat is flagged only where it
        could move the truth's probability by more than the tolerance (issue 66: about 100
        points above the line, one flagged, and the figure did not say which). Beyond
        :data:`KHAT_SCATTER_MAX` records a scatter is a smear: a histogram of k-hat (counts
        on a log scale, so that one flagged record shows)."""
        df = self.records
        thr = float(self.settings.get("khat_threshold", np.nan))
        k = df["khat_max"].to_numpy(dtype=float) if "khat_max" in df else np.full(len(df), np.nan)
        if np.isnan(k).all():  # the plug-in estimators: no importance weights, no k-hat
            ax.text(0.5, 0.5, f"no Pareto k-hat: estimator "
                    f"'{self.settings.get('estimator', '?')}'\nuses no importance weights",
                    ha="center", va="center", transform=ax.transAxes)
            ax.set_xticks([])
            ax.set_yticks([])
            ax.set_xlabel("record (0-based, as in records.csv)")
            ax.set_ylabel("max Pareto k-hat over candidates")
            return ax
        k = np.where(np.isinf(k), np.nan, k)
        groups = self._khat_groups()
        material = self.settings.get("khat_rule") == "material"
        tol = self.settings.get("khat_tolerance")
        labels = {
            "below": "k-hat at or below the threshold",
            "immaterial": (f"above, not flagged: p_true moves by less than {tol:g}"
                           if material and tol is not None else "above, not flagged"),
            "flagged": "flagged KHAT_HIGH" + (": p_true may move more" if material else ""),
        }
        style = {"below": ("tab:blue", 3, 1), "immaterial": ("0.6", 3, 2),
                 "flagged": ("#c0392b", 7, 3)}
        n = {g: int(mask.sum()) for g, mask in groups.items()}
        if len(df) <= KHAT_SCATTER_MAX:
            x = df.index.to_numpy()
            for g, mask in groups.items():
                colour, size, z = style[g]
                ax.plot(x[mask], k[mask], ".", ms=size, color=colour, zorder=z,
                        label=f"{labels[g]} ({n[g]:,})")
            ax.set_xlabel("record (0-based, as in records.csv)")
            ax.set_ylabel("max Pareto k-hat over candidates")
            if np.isfinite(thr):
                ax.axhline(thr, color="r", ls="--", label=f"threshold {thr:.2f}")
        else:
            fin = np.isfinite(k)
            bins = np.histogram_bin_edges(k[fin], bins=40) if fin.any() else 10
            order = ["below", "immaterial"]
            ax.hist([k[groups[g] & fin] for g in order], bins=bins, stacked=True,
                    color=[style[g][0] for g in order],
                    label=[f"{labels[g]} ({n[g]:,})" for g in order])
            # each flagged record a mark of its own under the bars: a bar of one on a
            # thousand would not show
            hit = groups["flagged"] & fin
            ax.plot(k[hit], np.full(int(hit.sum()), 0.03), "^", ms=7, color=style["flagged"][0],
                    transform=ax.get_xaxis_transform(), clip_on=False, zorder=3,
                    label=f"{labels['flagged']} ({n['flagged']:,}), one mark each")
            ax.set_yscale("log")
            ax.set_xlabel("max Pareto k-hat over candidates")
            ax.set_ylabel("records (log scale)")
            if np.isfinite(thr):
                ax.axvline(thr, color="r", ls="--", label=f"threshold {thr:.2f}")
        rule = ("k-hat above the threshold and material" if material
                else "k-hat above the threshold")
        ax.set_title(f"{n['flagged']:,} of {len(df):,} records flagged ({rule})",
                     fontsize="medium")
        legend_below(ax, ncols=2)
        return ax

    def _khat_groups(self) -> dict[str, np.ndarray]:
        """Masks over :attr:`records`: ``"flagged"`` (``KHAT_HIGH``), ``"immaterial"`` (k-hat
        above the threshold, not flagged: the material rule) and ``"below"`` (the others)."""
        df = self.records
        thr = float(self.settings.get("khat_threshold", np.nan))
        k = df["khat_max"].to_numpy(dtype=float) if "khat_max" in df else np.full(len(df), np.nan)
        flagged = df["flag_codes"].fillna("").astype(str).str.split(";").map(
            lambda c: "KHAT_HIGH" in c).to_numpy(dtype=bool)
        with np.errstate(invalid="ignore"):
            above = (k > thr) if np.isfinite(thr) else np.zeros(len(df), dtype=bool)
        return {"below": ~flagged & ~above, "immaterial": ~flagged & above, "flagged": flagged}

    def _figsize(self, kind: str) -> tuple[float, float]:
        return (6.0, 4.4) if kind == "khat" else (6.0, 4.0)


#: records up to which the k-hat figure is a scatter (beyond: a histogram)
KHAT_SCATTER_MAX = 10_000


def hrw_table_row(name: str, d: dict[str, Any],
                  evidence_factor: float = EVIDENCE_FACTOR) -> dict[str, Any]:
    """One row of the Hu–Reiter–Wang table from a group's summary (``to_dict()["all"]`` …),
    its probabilities and shares in per cent, as the audit's report and verdict give them (the
    files hold fractions), with the prior's mean mass on the truth and the share of records
    whose Bayes factor is at least ``evidence_factor``."""
    q = d.get("p_true_quantiles", {}) or {}
    r = d.get("rank_min_quantiles", {}) or {}

    def pct(x: Any) -> Any:
        return None if x is None else 100 * float(x)

    return {
        "records": name,
        "n": d.get("n_records"),
        "mean p_true (%)": pct(d.get("mean_p_true")),
        "mean p_true before the release, the prior (%)": pct(d.get("mean_prior_p_true")),
        "median p_true (%)": pct(q.get("50%")),
        "95th percentile of p_true (%)": pct(q.get("95%")),
        "median rank": r.get("50%"),
        "share ranked first (%)": pct(d.get("prop_top")),
        f"share with Bayes factor ≥ {evidence_factor:g} (%)": pct(d.get("prop_evidence")),
    }


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


def _count_range(p: np.ndarray) -> tuple[float, float]:
    """The 95 % range of a sum of independent Bernoulli(p) variables (a count)."""
    mu = float(p.sum())
    if mu < 5:  # Poisson of the same mean (Le Cam: within sum p^2 in total variation)
        from scipy import stats  # here: listing the measures imports this module

        return float(stats.poisson.ppf(0.025, mu)), float(stats.poisson.ppf(0.975, mu))
    sd = math.sqrt(float((p * (1 - p)).sum()))
    return max(0.0, math.floor(mu - 1.96 * sd)), math.ceil(mu + 1.96 * sd)


def file_null(nulls: dict[str, np.ndarray], keep: np.ndarray | None = None) -> dict[str, Any]:
    """The file-level null of the records ``keep`` (default all) from their own
    (:meth:`AttributeRiskResult.record_null`): for ``prop_top`` and ``prop_evidence`` the
    expected share and its 95 % range, for ``mean_rank`` and ``mean_p_true`` the expected mean
    and its 95 % range. Records are independent under the null: a count (ranked first, with
    evidence) is a sum of Bernoulli variables, its range from the Poisson distribution of the
    same mean when that mean is below 5 (Le Cam's bound), else the normal approximation; a mean
    has the range of the Pearson type III distribution with the three moments of a mean of
    independent terms (their central moments add; a record's null p_true is often near 0 with a
    rare large value, and the normal range of so skewed a mean reaches below 0 and stops short
    of its upper tail), within the figure's bounds (p_true in [0, 1], a rank at least 1).

    Examples
    --------
    >>> nulls = {"null_p_top": np.full(1000, 1e-4), "null_p_evidence": np.zeros(1000),
    ...          "null_rank_mean": np.full(1000, 18.0), "null_rank_var": np.full(1000, 10.0),
    ...          "null_rank_m3": np.zeros(1000), "null_p_true_mean": np.full(1000, 0.03),
    ...          "null_p_true_var": np.zeros(1000), "null_p_true_m3": np.zeros(1000)}
    >>> f = file_null(nulls)
    >>> round(f["prop_top"]["expected"], 12), f["prop_top"]["high"]
    (0.0001, 0.001)
    """
    pick = (slice(None) if keep is None else np.asarray(keep, dtype=bool))
    vals = {k: np.asarray(v, dtype=np.float64)[pick] for k, v in nulls.items()}
    ok = np.isfinite(vals["null_p_top"])
    n = int(ok.sum())
    if n == 0:
        return {}
    out: dict[str, Any] = {"n_records": n}
    for key, col in (("prop_top", "null_p_top"), ("prop_evidence", "null_p_evidence")):
        p = vals[col][ok]
        lo, hi = _count_range(p)
        out[key] = {"expected": float(p.mean()), "low": lo / n, "high": hi / n}
    from scipy import stats  # here: listing the measures imports this module

    for key, col, bounds in (("mean_rank", "null_rank", (1.0, np.inf)),
                             ("mean_p_true", "null_p_true", (0.0, 1.0))):
        m = float(vals[f"{col}_mean"][ok].mean())
        var = float(vals[f"{col}_var"][ok].sum())
        sd = math.sqrt(var) / n
        skew = float(vals[f"{col}_m3"][ok].sum()) / var ** 1.5 if var > 0 else 0.0
        lo, hi = (stats.pearson3.ppf([0.025, 0.975], skew, loc=m, scale=sd) if sd > 0
                  else (m, m))
        out[key] = {"expected": m, "low": float(np.clip(lo, *bounds)),
                    "high": float(np.clip(hi, *bounds))}
    return out



#: the figures read against the null: key of the summary, key of the null, label, in per cent
NULL_FIGURES = (("prop_top", "prop_top", "share ranked first (%)", True),
                ("mean_rank", "mean_rank", "mean rank of the true values", False),
                ("prop_evidence", "prop_evidence", "share with evidence (%)", True),
                ("mean_p_true", "mean_p_true", "mean p_true (%)", True))


def null_reading(observed: float, entry: Mapping[str, float], *, larger_worse: bool = True
                 ) -> str:
    """``"above"``, ``"within"`` or ``"below"`` the null's 95 % range (``""``: not a number);
    for the mean rank (``larger_worse=False``: a smaller rank is the disclosure) ``"above"``
    means a rank better for the intruder than the null's."""
    lo, hi = float(entry.get("low", np.nan)), float(entry.get("high", np.nan))
    if not (np.isfinite(observed) and np.isfinite(lo) and np.isfinite(hi)):
        return ""
    if observed > hi:
        return "above" if larger_worse else "below"
    if observed < lo:
        return "below" if larger_worse else "above"
    return "within"


def null_table(group: Mapping[str, Any], null: Mapping[str, Any]) -> pd.DataFrame:
    """Each figure of ``group`` (a summary's ``unflagged``) beside its null: observed,
    expected, the 95 % range and the reading (:func:`null_reading`)."""
    rows = []
    for key, nkey, label, percent in NULL_FIGURES:
        entry = null.get(nkey)
        if not entry:
            continue
        k = 100.0 if percent else 1.0
        obs = float(group.get(key, np.nan))
        rows.append({"figure": label, "observed": k * obs, "expected": k * entry["expected"],
                     "95 % range": f"{k * entry['low']:.4g}–{k * entry['high']:.4g}",
                     "reading": null_reading(obs, entry, larger_worse=key != "mean_rank")})
    return pd.DataFrame(rows)


def mc_table(mc: Mapping[str, Any]) -> pd.DataFrame:
    """The figures of a Monte Carlo uncertainty dict as a table."""
    name = next(k for k in mc if k.startswith("mc_interval_"))
    level = name.rsplit("_", 1)[1]
    label = f"MC interval {level} %"

    def num(x: Any) -> float:
        return float("nan") if x is None else float(x)

    from bayes_risk._units import unit_of

    rows = []
    for f, v in mc["value"].items():
        lo, hi = mc[name][f]
        unit = unit_of(f) or "rank"
        # shares and probabilities in per cent, as the file-level table beside it (issue 92)
        k = 100.0 if unit.startswith(("fraction", "probability")) else 1.0
        # a zero-width interval is not a 90 % interval: said as what it is
        rows.append({"figure": f, "unit": "per cent" if k == 100.0 else unit,
                     "value": k * num(v), "MCSE": k * num(mc["mc_se"][f]),
                     label: f"[{k * num(lo):.4g}, {k * num(hi):.4g}]" if lo != hi else
                     f"{k * num(lo):.4g} in ≥ {level} % of replicates (degenerate)"})
    return pd.DataFrame(rows)


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
