"""Results of identification risk (:doc:`/methods/identification`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from bayes_risk._io import to_jsonable
from bayes_risk._numeric import ties
from bayes_risk.exceptions import ValidationError, arg_name
from bayes_risk.results._base import RiskResult, draws, legend_below
from bayes_risk.results._summary import Summary

if TYPE_CHECKING:
    import scipy.sparse as sp

__all__ = ["IdentificationResult", "RadiusSweepResult", "ID_MEASURES", "UNCERTAIN_MEASURES"]

#: file-level identification measures and their labels, in display order
ID_MEASURES = (
    ("expected_match_risk", "expected match risk (sum of IR)"),
    ("expected_match_rate", "expected match rate"),
    ("true_match_risk", "true match risk (correct unique matches)"),
    ("n_unique", "unique matches"),
    ("true_match_rate_targets", "true match rate (over targets)"),
    ("true_match_rate_unique", "true match rate (over unique matches)"),
    ("false_match_rate", "false match rate"),
)

#: each file-level measure in a printed summary: its label with its unit, and its factor from
#: the files (which hold the rates as fractions: bayes_risk._units)
_SUMMARY_UNITS = {
    "expected_match_risk": ("expected match risk (targets, sum of IR)", 1.0),
    "expected_match_rate": ("expected match rate (% of targets)", 100.0),
    "true_match_risk": ("true match risk (targets, correct unique matches)", 1.0),
    "n_unique": ("unique matches (targets)", 1.0),
    "true_match_rate_targets": ("true match rate (% of targets)", 100.0),
    "true_match_rate_unique": ("true match rate (% of unique matches)", 100.0),
    "false_match_rate": ("false match rate (% of unique matches)", 100.0),
}

#: measures whose Monte Carlo error and replicate spread ``uncertainty()`` reports
UNCERTAIN_MEASURES = ("expected_match_risk", "true_match_rate_targets", "true_match_rate_unique",
                      "false_match_rate", "n_unique")


def _int64(res: IdentificationResult, *names: str) -> dict[str, np.ndarray]:
    """The tables ``names`` of ``res`` as int64 columns of a record table (the record tables
    and their files keep the integer columns of before the arrays were narrowed)."""
    return {k: getattr(res, k).ravel().astype(np.int64) for k in names}


@dataclass(frozen=True, repr=False)
class IdentificationResult(RiskResult):
    """Identification risk of a release (Hu 2019 §4; :doc:`/methods/identification`).

    Attributes
    ----------
    records : DataFrame
        One row per target (pooled) or per target and dataset: ``c, T, K, W, IR, declared`` and
        the probabilities of no match.
    c, T, K, W, IR, declared : ndarray
        ``[N_T]`` (pooled) or ``[N_T, m]`` (per dataset): ``c`` integer (int32 per dataset
        while the records fit it), ``T``, ``K``, ``W`` and ``declared`` bool, ``IR`` float64;
        in :attr:`records` ``c``, ``T``, ``K`` and ``W`` are int64.
    record_IR : ndarray [N_T]
        ``IR_τ`` (per dataset: ``mean_l IR_τ^(l)``).
    prob : scipy.sparse.csr_matrix [N_T, n] or None
        Pooled ``π_τ(k)``, built from :attr:`pooled` on first access; ``None`` per dataset.
    pooled : PooledProbabilities or None
        The same probabilities in compact form (``.row(i)``, ``.tocsr()``, ``.nnz``).
    p_out, p_unassigned : ndarray
        ``π_τ(n+1)`` and the mass of replicates without any match (known membership). Per
        dataset with membership known, ``p_out`` is 0 throughout and held as a read-only view
        of one zero, not a table.
    file : dict
        File-level figures by name (means over datasets per dataset; with posterior replicates
        their Monte Carlo figures, :meth:`uncertainty`).
    per_dataset : dict or None
        File-level measures as vectors over datasets (per-dataset aggregation).
    warnings : tuple of str
        Machine-readable codes.
    warning_details : dict
        Human-readable message per code.
    settings : dict
        Every setting used (JSON-safe).
    """

    c: np.ndarray
    T: np.ndarray
    K: np.ndarray
    W: np.ndarray
    IR: np.ndarray
    declared: np.ndarray
    record_IR: np.ndarray
    # the engine's PooledProbabilities (typed loosely: no engine import)
    pooled: Any | None
    p_out: np.ndarray
    p_unassigned: np.ndarray | None
    file: dict[str, Any]
    per_dataset: dict[str, np.ndarray] | None
    warnings: tuple[str, ...]
    warning_details: dict[str, str]
    settings: dict[str, Any]
    target_ids: np.ndarray = field(repr=False)
    population_counts: np.ndarray | None = field(default=None, repr=False)
    #: the record table; ``None``: built from the arrays on first access
    _records: pd.DataFrame | None = field(default=None, repr=False)

    @property
    def records(self) -> pd.DataFrame:
        """The record-level table (see the class docstring)."""
        recs = self._records
        if recs is None:
            N_T, R = self.c.shape
            recs = pd.DataFrame({
                "target": np.repeat(self.target_ids, R),
                "dataset": np.tile(np.arange(1, R + 1), N_T),
                **_int64(self, "c", "T", "K", "W"),
                "IR": self.IR.ravel(), "declared": self.declared.ravel(),
            })
            if self.settings.get("membership") == "unknown":
                recs["p_out"] = self.p_out.ravel()
            object.__setattr__(self, "_records", recs)
        return recs

    @property
    def prob(self) -> sp.csr_matrix | None:
        """Pooled ``π_τ(k)`` as a CSR matrix ``[N_T, n]`` (``None`` per dataset)."""
        if self.pooled is None:
            return None
        cached = self.__dict__.get("_prob")
        if cached is None:
            cached = self.pooled.tocsr()
            object.__setattr__(self, "_prob", cached)
        return cached

    def _summary_dict(self) -> dict[str, Any]:
        """File-level figures by name (means over datasets, vectors under ``"per_dataset"``)."""
        out: dict[str, Any] = {"aggregation": self.settings["aggregation"]}
        out.update(self.file)
        if self.per_dataset is not None:
            out["per_dataset"] = {k: np.asarray(v).tolist() for k, v in self.per_dataset.items()}
        out["warnings"] = list(self.warnings)
        return out

    @property
    def has_uncertainty(self) -> bool:
        """Whether the result carries Monte Carlo errors (posterior replicates)."""
        return "mc_se" in self.file

    def uncertainty(self) -> dict[str, Any] | None:
        """Per headline measure: the pooled value and its Monte Carlo error ``mc_se``, and the
        spread over single replicates (``replicate_*``); ``None`` without posterior replicates."""
        if not self.has_uncertainty:
            return None
        f = self.file
        out: dict[str, Any] = {
            k: {
                "value": f[k],
                "mc_se": f["mc_se"][k],
                "replicate_mean": f["replicate_mean"][k],
                "replicate_mean_mc_se": f["replicate_mean_mc_se"][k],
                "replicate_quantiles": f["replicate_quantiles"][k],
            }
            for k in UNCERTAIN_MEASURES
        }
        out["n_replicates"] = f["n_replicates"]
        out["method"] = (self.settings.get("posterior_replicates") or {}).get("mc_method")
        return out

    def to_dataframe(self) -> pd.DataFrame:
        """The record-level table (a copy of :attr:`records`)."""
        return self.records.copy()

    def target_table(self) -> pd.DataFrame:
        """One row per target: :attr:`records` itself when pooled; per dataset, ``target``, ``IR``
        (``mean_l IR^(l)``), ``c_mean``, ``T_datasets``, ``K_datasets``, ``W_datasets``,
        ``declared_datasets`` and, when membership is unknown, ``p_out_mean``."""
        if self.per_dataset is None:
            return self.records
        cols: dict[str, Any] = {
            "target": self.target_ids,
            "IR": self.record_IR,
            "c_mean": self.c.mean(axis=1),
            "T_datasets": self.T.sum(axis=1),
            "K_datasets": self.K.sum(axis=1),
            "W_datasets": self.W.sum(axis=1),
            "declared_datasets": self.declared.sum(axis=1),
        }
        if self.settings.get("membership") == "unknown":
            cols["p_out_mean"] = self.p_out.mean(axis=1)
        return pd.DataFrame(cols)

    def to_dict(self, records: bool = False) -> dict[str, Any]:
        """JSON-safe dictionary: ``summary.json`` of ``bayes-risk identification``."""
        d = {
            "summary": self._summary_dict(),
            "settings": self.settings,
            "warnings": list(self.warnings),
            "warning_details": dict(self.warning_details),
        }
        if self.has_uncertainty:
            d["uncertainty"] = self.uncertainty()
        if records:
            d["records"] = self.records.to_dict(orient="list")
        return to_jsonable(d)

    def summary(self) -> Summary:
        """Printable summary: the file-level measures, the knowledge and the match rule."""
        st = self.settings
        rule = st.get("match_rule") or {}
        radius = rule.get("radius") or {}
        header = [
            ("targets", self.file.get("n_targets", len(self.target_ids))),
            ("aggregation", st.get("aggregation")),
            ("membership", st.get("membership", "known")),
            ("known unsynthesized", ", ".join(st.get("known_unsynthesized", [])) or "none"),
            ("known synthesized", ", ".join(st.get("known_synthesized", [])) or "none"),
            ("match rule", (f"{rule.get('radius_type')} radius "
                            + ", ".join(f"{k} = {v:g}" for k, v in radius.items()))
             if radius else "exact matching"),
        ]
        rows = []
        unc = self.has_uncertainty
        for key, _ in ID_MEASURES:
            if key not in self.file:
                continue
            # each row's unit in its name: the rates in per cent, as the audit gives them
            label, scale = _SUMMARY_UNITS[key]

            def sc(x: Any, scale: float = scale) -> Any:
                return None if x is None else scale * float(x)

            row: dict[str, Any] = {"measure": label, "value": sc(self.file[key])}
            if self.per_dataset is not None and key in self.per_dataset:
                v = np.asarray(self.per_dataset[key], dtype=float)
                fin = np.isfinite(v).any()
                row["min over datasets"] = sc(np.nanmin(v)) if fin else None
                row["max over datasets"] = sc(np.nanmax(v)) if fin else None
            if unc:
                q = self.file["replicate_quantiles"].get(key, {})
                row["MCSE"] = sc(self.file["mc_se"].get(key))
                row["replicate 2.5%"] = sc(q.get("0.025"))
                row["replicate median"] = sc(q.get("0.5"))
                row["replicate 97.5%"] = sc(q.get("0.975"))
            rows.append(row)
        notes = [
            "IR: the probability that the intruder's declared match is the target's own "
            "record, summed over targets for the expected match risk (Reiter & Mitra 2009; "
            "Hu 2019 §4)."
        ]
        if unc:
            pr = st.get("posterior_replicates") or {}
            header.append(("replicates", st.get("replicates")))
            header.append(("posterior replicates R", self.file["n_replicates"]))
            notes.append(
                "MCSE: Monte Carlo standard error of the pooled value ("
                + (pr.get("mc_method") or "jackknife") + "); replicate 2.5% / median / 97.5%: "
                "the spread of the measure computed on one replicate at a time (it does not "
                "shrink with R)."
            )
        return Summary(
            "Identification disclosure risk",
            header=header,
            tables={"File-level measures": pd.DataFrame(rows)},
            notes=notes,
            warnings=self.structured_warnings,
        )

    def headline(self) -> str:
        """The file-level figures in a few lines, as ``bayes-risk identification`` prints them:
        the expected, true and false match rates, the posterior replicates' Monte Carlo error,
        and what the intruder knew of a sampling design or a selection of records."""
        s, st = self.file, self.settings
        n, agg, m = int(s["n_targets"]), st["aggregation"], st["n_replicates"]
        what = ("synthetic dataset(s)" if st["replicates"] == "released datasets"
                else st["replicates"])
        lines = [f"identification risk ({agg.replace('_', '-')}) of {m} {what}: "
                 f"expected match rate {100 * s['expected_match_rate']:.3g} % = "
                 f"{s['expected_match_risk']:.4g} of {n:,} targets (the expected match risk)",
                 f"true match rate {100 * s['true_match_rate_targets']:.3g} % of the targets, "
                 f"false match rate {100 * s['false_match_rate']:.3g} % of the unique matches "
                 "(summary.json: fractions)"]
        sampling = st.get("sampling")
        if sampling:  # the probability that a target is in the released sample
            lines.append(f"sampling with synthesis: {sampling['sample_size']:,} of the census's "
                         f"{sampling['population_size']:,} units released (a target is in the "
                         f"release with probability {sampling['sample_fraction']:.4g}); "
                         f"membership {sampling['membership']}, counts: {sampling['counts']}")
        if agg == "per_dataset" and m > 1:  # the smaller figure: the audit reads the larger
            pooled = arg_name("aggregation", "'pooled'", cli="pooled")
            lines.append(f"per dataset: the intruder holding one dataset; one holding all {m} "
                         f"pools them ({pooled}, the default), which can give a higher risk")
        if self.has_uncertainty:
            lines.append(f"{m} posterior replicates; Monte Carlo standard error of the expected "
                         f"match risk {s['mc_se']['expected_match_risk']:.3g} targets")
        sel = st.get("selection")
        if sel is not None:
            lines.append(f"given the selection R ({sel['description']}): {sel['n_selected']:,} "
                         f"of {sel['n_records']:,} records synthesized; "
                         f"{sel['n_targets_selected']:,} of {sel['n_targets']:,} targets known "
                         "to be selected, the others known to be released unchanged")
        return "\n".join(lines)

    plot_kinds = ("record_risk", "per_dataset", "running_estimate")

    @draws("record_risk")
    def _plot_record_risk(self, ax: Any) -> Any:
        """Histogram of the record-level identification risk ``IR`` of the targets."""
        ir = np.asarray(self.record_IR, dtype=float)
        ax.hist(ir[np.isfinite(ir)], bins=30)
        ax.set(xlabel="record-level identification risk IR", ylabel="targets")
        ax.set_title(f"Expected match risk {self.file.get('expected_match_risk', np.nan):.4g}")
        return ax

    @draws("per_dataset")
    def _plot_per_dataset(self, ax: Any) -> Any:
        """Expected match risk of each synthetic dataset (per-dataset aggregation)."""
        if self.per_dataset is None:
            raise ValidationError(
                "kind='per_dataset' needs a result with aggregation='per_dataset'; this one "
                "pools the datasets.",
                code="RESULT_UNSUITED"
            )
        v = np.asarray(self.per_dataset["expected_match_risk"], dtype=float)
        pos = np.arange(1, v.size + 1)
        ax.plot(pos, v, "o-", lw=1, ms=4)
        ax.axhline(float(np.nanmean(v)), color="k", ls="--", label="mean")
        ax.set_xticks(pos)
        ax.set(xlabel="synthetic dataset", ylabel="expected match risk (sum of IR)")
        ax.legend(loc="best")
        return ax

    @draws("running_estimate")
    def _plot_running_estimate(self, ax: Any) -> Any:
        """Running pooled expected match risk by replicates, with its ±2 MCSE band."""
        trace = self.file.get("mc_trace")
        if not trace:
            raise ValidationError(
                "kind='running_estimate' needs a result computed with posterior replicates "
                "(PosteriorReplicates); this one has no Monte Carlo trace.",
                code="RESULT_UNSUITED"
            )
        R = np.asarray(trace["n_replicates"], dtype=float)
        est = np.asarray(trace["expected_match_risk"], dtype=float)
        se = np.nan_to_num(np.asarray(trace["mc_se"], dtype=float))
        # Σ IR lies in [0, number of targets]: the ± 2 MCSE band is cut there
        n_targets = self.file.get("n_targets")
        lo = np.clip(est - 2 * se, 0.0, None)
        hi = est + 2 * se if n_targets is None else np.clip(est + 2 * se, None, float(n_targets))
        ax.fill_between(R, lo, hi, alpha=0.3,
                        label="± 2 MCSE (jackknife), cut at the possible range")
        ax.errorbar(R, est, yerr=np.vstack([est - lo, hi - est]), fmt="o-", ms=3, capsize=2,
                    label="pooled estimate")
        pr = self.settings.get("posterior_replicates", {})
        warning = ""
        if pr.get("n") == "auto":
            tol = float(pr["mcse_tol"])
            for sign in (-1, 1):
                ax.axhline(est[-1] * (1 + sign * 2 * tol), ls=":", color="grey", lw=1,
                           label="final ± 2 × tolerance" if sign < 0 else None)
            if not pr.get("stopped_by_tolerance", True):
                warning = (f"MCSE_NOT_REACHED: relative MCSE above {100 * tol:g} % at\n"
                           f"R = {int(R[-1])}, the cap: the pooled figure is uncertain")
        ax.set(xlabel="number of posterior replicates R", ylabel="expected match risk (targets)")
        # whether the tolerance was reached is a warning beside the figure, not its title
        ax.set_title(f"Running pooled estimate ({pr.get('view', '')} view, R = {int(R[-1])})",
                     fontsize="medium")
        legend_below(ax, ncols=1, warning=warning)
        return ax


@dataclass(frozen=True, repr=False)
class RadiusSweepResult(RiskResult):
    """Risk curve over a grid of radii.

    Attributes
    ----------
    columns : tuple of str
        The radius columns that were varied.
    radii : ndarray, shape (B,) for a common radius or (B, q) for a per-column grid
    risk : ndarray, shape (B, m)
        Expected match risk per grid point and dataset (``m = 1`` for pooled).
    statistic : {"mean", "median"}
    risk_summary : ndarray (B,)
        ``statistic`` of ``risk`` over datasets.
    r_star : float or ndarray (q,)
        The smallest radius attaining the maximum.
    risk_star : float
    argmax : tuple of int
        Every grid index attaining the maximum.
    settings : dict
    warnings : list of str
    true_match_rate : ndarray, shape (B, m), optional
        Share of the targets correctly and uniquely matched per grid point and dataset; its
        maximum (``tmr_star``, ``tmr_star_value``) may lie at other radii than the risk's.
    """

    columns: tuple[str, ...]
    radii: np.ndarray
    risk: np.ndarray
    statistic: str
    risk_summary: np.ndarray
    r_star: Any
    risk_star: float
    argmax: tuple[int, ...]
    settings: dict[str, Any]
    warnings: list[str] = field(default_factory=list)
    true_match_rate: np.ndarray | None = None
    #: what each warning code means for this result (else the code's general message)
    warning_details: dict[str, str] = field(default_factory=dict)

    @property
    def tmr_summary(self) -> np.ndarray | None:
        """``statistic`` over the datasets of the true match rate per grid point."""
        t = self.true_match_rate
        if t is None:
            return None
        return t.mean(axis=1) if self.statistic == "mean" else np.median(t, axis=1)

    @property
    def tmr_argmax(self) -> tuple[int, ...]:
        """Every grid index attaining the largest true match rate (``()`` without it)."""
        summ = self.tmr_summary
        if summ is None or not np.isfinite(summ).any():
            return ()
        return tuple(int(i) for i in np.flatnonzero(ties(summ, float(np.nanmax(summ)))))

    @property
    def tmr_star(self) -> Any:
        """The smallest radius (per column) attaining the largest true match rate."""
        arg = self.tmr_argmax
        if not arg:
            return None
        if self.common:
            return float(self.radii[min(arg, key=lambda i: self.radii[i])])
        return self.radii[sorted(arg, key=lambda i: tuple(self.radii[i]))[0]].copy()

    @property
    def tmr_star_value(self) -> float:
        """The largest true match rate over the grid (a share of the targets)."""
        summ = self.tmr_summary
        return float(np.nanmax(summ)) if summ is not None and np.isfinite(summ).any() \
            else float("nan")

    def radii_at(self, index: int) -> dict[str, float]:
        """``{column: radius}`` of grid point ``index``."""
        row = np.atleast_1d(self.radii[index])
        if self.common:
            return {c: float(row[0]) for c in self.columns}
        return {c: float(r) for c, r in zip(self.columns, row, strict=True)}

    @property
    def common(self) -> bool:
        """Whether one common radius was used for every column."""
        return self.radii.ndim == 1

    def labels(self) -> list[str]:
        """Text label of every grid point."""
        if self.common:
            return [f"{r:g}" for r in self.radii]
        return [
            ", ".join(f"{c}={r:g}" for c, r in zip(self.columns, row, strict=False))
            for row in self.radii
        ]

    def to_frame(self) -> pd.DataFrame:
        """Long table: one row per grid point and dataset."""
        B, m = self.risk.shape
        d: dict[str, Any] = {}
        if self.common:
            d["radius"] = np.repeat(self.radii, m)
        else:
            for j, c in enumerate(self.columns):
                d[f"radius_{c}"] = np.repeat(self.radii[:, j], m)
        d["dataset"] = np.tile(np.arange(1, m + 1), B)
        d["expected_match_risk"] = self.risk.ravel()
        if self.true_match_rate is not None:
            d["true_match_rate_targets"] = self.true_match_rate.ravel()
        return pd.DataFrame(d)

    to_dataframe = to_frame

    @property
    def search(self) -> dict[str, Any]:
        """How a :func:`~bayes_risk.radius_search` searched (empty for a sweep)."""
        return dict(self.settings.get("search") or {})

    @property
    def grid_points(self) -> int:
        """The rows of ``radii`` that are the grid's (the refinement's points follow them)."""
        return int(self.search.get("grid_points", len(self.radii)))

    @property
    def search_status(self) -> str:
        """``"exact"``: the largest figures over every radius of the range searched;
        ``"bounded"``: the largest found, the supremum below :attr:`bounds`; ``"grid"``: the
        largest over the grid's points, not bounded between them; ``"coordinate"``: a
        coordinate search; ``"sweep"``: the radii given (:func:`~bayes_risk.radius_sweep`)."""
        s = self.search
        if not s:
            return "sweep"
        if s.get("mode") == "coordinate":
            return "coordinate"
        return {"exact": "exact", "bounded": "bounded"}.get(
            (s.get("refinement") or {}).get("status"), "grid")

    @property
    def bounds(self) -> tuple[float, float]:
        """Upper bounds of the summarised expected match risk and true match rate over every
        radius of the range searched (``risk_star`` and ``tmr_star_value`` when exact, ``nan``
        when the search did not bound them)."""
        ref = self.search.get("refinement") or {}
        if self.search_status not in ("exact", "bounded"):
            return float("nan"), float("nan")
        return (float(ref["expected_match_risk_bound"]), float(ref["true_match_rate_bound"]))

    def at_edge(self, figure: str = "expected_match_risk") -> list[str]:
        """The columns whose radius at the largest ``figure`` (``"expected_match_risk"`` or
        ``"true_match_rate"``) is the largest radius searched: an intruder who matches them
        more loosely, or not at all, may find more (``RADIUS_AT_GRID_EDGE``)."""
        arg = self.argmax if figure == "expected_match_risk" else self.tmr_argmax
        if not arg or not self.search:
            return []
        top = max(float(v) for v in self.search.get("values", [0.0]))
        best = sorted(arg, key=lambda i: tuple(np.atleast_1d(self.radii[i])))[0]
        return [c for c, r in self.radii_at(best).items() if top > 0 and r >= top]

    def search_text(self, risk: str = "{:.4g}", rate: str = "{:.3g} %") -> str:
        """What the maxima cover, in words: exact over the range, or the grid and the bound
        between its points (``risk``, ``rate``: the formats of a risk and of a per cent)."""
        s, n = self.search, self.grid_points
        top = max(float(v) for v in s.get("values", [0.0]))
        more = len(self.radii) - n
        status = self.search_status
        if status == "exact":
            return (f"exact: the largest over every radius from 0 to {top:g} of each column "
                    f"({n} grid points and {more} between them evaluated; no bound between "
                    "them exceeds it)")
        if status == "bounded":
            e, t = self.bounds
            return (f"over a grid of {n} radii and {more} points between them; anywhere "
                    f"between them at most {risk.format(e)} (expected match risk) and "
                    f"{rate.format(100 * t)} (true match rate) (RADIUS_SEARCH_BOUNDED)")
        if status == "coordinate":
            return (f"a coordinate search of {n} points (RADIUS_COORDINATE_SEARCH); not "
                    "bounded between them")
        return (f"over a grid of {n} radii; not bounded between them "
                f"({(s.get('refinement') or {}).get('reason')}; RADIUS_GRID_ONLY)")

    def with_search_warnings(self) -> RadiusSweepResult:
        """This result with the codes that qualify its maxima (``RADIUS_AT_GRID_EDGE``,
        ``RADIUS_SEARCH_BOUNDED``, ``RADIUS_GRID_ONLY``, ``RADIUS_COORDINATE_SEARCH``), each
        with what it means here."""
        import dataclasses

        codes = dict(getattr(self, "warning_details", None) or {})
        codes.update({c: "" for c in self.warnings if c not in codes})
        status, n = self.search_status, self.grid_points
        edge = {f: self.at_edge(k) for f, k in (("expected match risk", "expected_match_risk"),
                                                ("true match rate", "true_match_rate"))}
        if any(edge.values()):
            codes["RADIUS_AT_GRID_EDGE"] = "; ".join(
                f"the largest {f} lies at the largest radius searched for {', '.join(c)}"
                for f, c in edge.items() if c) + (": an intruder who matches more loosely (or "
                                                  "not at all) may find more")
        if status == "bounded":
            e, t = self.bounds
            ref = self.search["refinement"]
            codes["RADIUS_SEARCH_BOUNDED"] = (
                f"over a grid of {n} radii and {ref['points']} points between them the "
                f"expected match risk is at most {e:.4g} (largest found {self.risk_star:.4g}) "
                f"and the true match rate at most {100 * t:.3g} % (largest found "
                f"{100 * self.tmr_star_value:.3g} %); the search stopped at "
                f"{ref.get('stopped', 'the points allowed')}; more points (refine=...) narrow "
                "it")
        elif status == "grid":
            codes["RADIUS_GRID_ONLY"] = (
                f"the largest figures over a grid of {n} radii; between them not bounded "
                f"({self.search['refinement'].get('reason')})")
        elif status == "coordinate":
            codes["RADIUS_COORDINATE_SEARCH"] = (
                f"a coordinate search of {n} points stood in for the grid of "
                f"{self.search.get('full_grid_points')}: it may miss the grid's largest figure, "
                "and between the points it is not bounded")
        return dataclasses.replace(self, warnings=list(codes), warning_details={
            k: v for k, v in codes.items() if v})

    @property
    def fixed_radii(self) -> dict[str, float]:
        """The radius columns the sweep did not vary, with the radius they kept."""
        rule = self.settings.get("match_rule") or {}
        return {c: float(r) for c, r in (rule.get("radius") or {}).items()
                if c not in self.columns}

    @property
    def definition(self) -> str:
        """What one point of the risk curve is, in words."""
        m = self.risk.shape[1]
        if self.settings.get("aggregation") == "pooled":
            return "expected match risk of the intruder holding every dataset (pooled)"
        return f"{self.statistic} over the {m} datasets of each dataset's expected match risk"

    def headline(self) -> str:
        """The maximising radius in a line (a sweep), or a search's worst case with the
        columns whose maximum lies at the largest radius searched (``RADIUS_AT_GRID_EDGE``)."""
        if not self.search:
            fixed = ", ".join(f"{c}={r:g}" for c, r in self.fixed_radii.items())
            return (f"radius sweep: risk-maximising radius r* = {self.r_star} (varying "
                    f"{', '.join(self.columns)}{'; fixed ' + fixed if fixed else ''}; "
                    f"{self.definition})")

        def at(r: Any) -> str:
            return ", ".join(f"{c} exact" if x == 0 else f"{c}={x:g}"
                             for c, x in zip(self.columns, np.atleast_1d(r), strict=True))

        n = int(self.settings["n_targets"])
        lines = [f"radius search (worst case over the radii of {', '.join(self.columns)}, "
                 f"{self.search['points']} points): expected match risk {self.risk_star:.4g} of "
                 f"{n:,} targets ({100 * self.risk_star / n:.3g} %) at {at(self.r_star)}; true "
                 f"match rate {100 * self.tmr_star_value:.3g} % at {at(self.tmr_star)}; "
                 f"{self.search_text()}"]
        for fig, words in (("expected_match_risk", "expected match risk"),
                           ("true_match_rate", "true match rate")):
            if edge := self.at_edge(fig):
                lines.append(f"RADIUS_AT_GRID_EDGE: the largest {words} lies at the largest "
                             f"radius searched of {', '.join(edge)}: matching more loosely may "
                             "give more (widen the radii searched)")
        return "\n".join(lines)

    def summary(self) -> Summary:
        """Printable summary: the risk curve and the maximising radius."""
        # the grid's points, and the refinement's where a maximum lies
        rows = [i for i in range(len(self.risk_summary))
                if i < self.grid_points or i in self.argmax or i in self.tmr_argmax]
        tab = pd.DataFrame({
            "radius": [self.labels()[i] for i in rows],
            f"{self.statistic} expected match risk": self.risk_summary[rows],
            "maximum": [i in self.argmax for i in rows],
        })
        r_star = self.r_star if self.common else ", ".join(
            f"{c}={r:g}" for c, r in zip(self.columns, np.atleast_1d(self.r_star), strict=False))
        fixed = self.fixed_radii
        return Summary(
            "Identification risk by radius",
            header=[
                ("radii varied", ", ".join(self.columns)
                 + (" (one common radius)" if self.common and len(self.columns) > 1 else "")),
                ("radii held fixed", ", ".join(f"{c}={r:g}" for c, r in fixed.items())
                 or "none"),
                ("radius type", self.settings.get("radius_type", "")),
                ("risk per grid point", self.definition),
                ("grid points", self.grid_points),
                *([("search", self.search_text())] if self.search else []),
                ("synthetic datasets", self.risk.shape[1]),
                ("maximising radius r*", r_star),
                ("risk at r*", self.risk_star),
            ],
            tables={"Risk curve": tab},
            notes=["The maximising radius is the conservative value to report (Hornby & Hu "
                   "2021 §4.1); ties at the maximum are all marked, r* is the smallest."],
            warnings=self.structured_warnings,
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe dictionary: ``summary.json`` of ``bayes-risk identification``."""
        return to_jsonable(
            {
                "columns": list(self.columns),
                "fixed_radii": self.fixed_radii,
                "definition": self.definition,
                "radii": self.radii,
                "risk": self.risk,
                "statistic": self.statistic,
                "risk_summary": self.risk_summary,
                "r_star": self.r_star,
                "risk_star": self.risk_star,
                "argmax": list(self.argmax),
                **({} if self.true_match_rate is None else {
                    "true_match_rate_targets": self.true_match_rate,
                    "tmr_star": self.tmr_star,
                    "tmr_star_value": self.tmr_star_value,
                    "tmr_argmax": list(self.tmr_argmax)}),
                **({} if not self.search else {
                    "search_status": self.search_status,
                    "risk_bound": self.bounds[0], "tmr_bound": self.bounds[1],
                    "at_edge": {"expected_match_risk": self.at_edge("expected_match_risk"),
                                "true_match_rate": self.at_edge("true_match_rate")}}),
                "settings": self.settings,
                "warnings": list(self.warnings),
                **({"warning_details": dict(self.warning_details)}
                   if self.warning_details else {}),
            }
        )

    plot_kinds = ("box", "profile")

    def _figsize(self, kind: str) -> tuple[float, float]:
        if kind == "profile":
            return (6.5, 4.0 + 0.25 * len(self.columns))
        return (max(5.0, 0.8 * len(self.risk) + 2), 4.0)

    @draws("profile")
    def _plot_profile(self, ax: Any, rate_threshold: float | None = None,
                      n_targets: int | None = None) -> Any:
        """The risk against each column's radius, the other columns held where the risk is
        largest (a per-column grid's profile through its maximum; a band over the datasets);
        ``rate_threshold`` and ``n_targets``: as :meth:`_plot_box`."""
        B = self.grid_points  # the grid's rows; a refinement's points follow them
        grid = (np.atleast_2d(self.radii.T).T if self.common else self.radii)[:B]
        summ = self.risk_summary[:B]
        best = np.atleast_1d(self.r_star) if not self.common else np.full(
            len(self.columns), float(self.r_star))
        # the profiles pass through the grid's own maximum
        g = int(np.flatnonzero(ties(summ, float(np.max(summ))))[0])
        gbest = grid[g]
        values = np.unique(grid)

        def pos(v: float) -> float:  # the categorical axis, between its ticks off the grid
            return float(np.interp(v, values, np.arange(len(values))))

        for j, col in enumerate(self.columns):
            others = [k for k in range(grid.shape[1]) if k != j]
            on = np.all(np.isclose(grid[:, others], gbest[others]), axis=1) if others else \
                np.ones(len(grid), bool)
            idx = np.flatnonzero(on)
            idx = idx[np.argsort(grid[idx, j])]
            x = [pos(float(v)) for v in grid[idx, j]]
            line, = ax.plot(x, summ[idx], "o-", ms=4, lw=1.2,
                            label=f"{col} (the other columns where the grid's risk is largest)"
                            if others else col)
            if self.risk.shape[1] > 1:
                ax.fill_between(x, self.risk[:B][idx].min(axis=1),
                                self.risk[:B][idx].max(axis=1), color=line.get_color(),
                                alpha=0.15, lw=0)
        # every profile passes through the grid's maximum, at its own column's radius there
        ax.scatter([pos(float(r)) for r in gbest], [float(summ[g])] * len(gbest), s=120,
                   facecolors="none", edgecolors="C3", zorder=3)
        if self.risk_star > float(summ[g]):  # found between the grid's points
            ax.scatter([pos(float(r)) for r in best], [self.risk_star] * len(best), s=90,
                       marker="*", color="C3", zorder=4,
                       label="largest between the grid's points (each column's radius)")
        pooled = self.settings.get("aggregation") == "pooled"
        what = ("pooled over the datasets" if pooled
                else f"{self.statistic} over the {self.risk.shape[1]} datasets")
        ax.axhline(self.risk_star, color="C3", ls=":", lw=1,
                   label=f"largest: {self.risk_star:.4g}")
        if self.search_status in ("exact", "bounded"):
            ax.axhline(self.bounds[0], color="0.4", ls="--", lw=0.8,
                       label=("no radius gives more (exact)" if self.search_status == "exact"
                              else f"bound between the points: {self.bounds[0]:.4g}"))
        ax.set_xticks(range(len(values)))
        ax.set_xticklabels(["exact" if v == 0 else f"{v:g}" for v in values])
        rt = self.settings.get("radius_type", "")
        ax.set_xlabel("radius, fraction of the value (0.1 = ±10 %)" if rt == "percentage"
                      else "radius" + (f" ({rt})" if rt else ""))
        ax.set_ylabel("expected match risk (targets, sum of IR)")
        ax.set_ylim(bottom=0)
        _rate_threshold(ax, rate_threshold, n_targets)
        at = ", ".join(f"{c} {'exact' if r == 0 else f'{r:g}'}"
                       for c, r in zip(self.columns, best, strict=True))
        ax.set_title(f"Identification risk by radius ({what}):\nlargest at {at}",
                     fontsize="medium")
        legend_below(ax, ncols=1)
        return ax

    def indistinguishable(self, level: float = 0.95) -> list[int] | None:
        """The grid points whose risk cannot be told from the maximum's: the ``level`` t-interval of
        the paired differences over datasets includes 0 (``None`` with one dataset)."""
        from scipy.stats import t as student_t

        risk = np.asarray(self.risk, dtype=np.float64)
        B, m = risk.shape
        if m < 2 or not self.argmax:
            return None
        best = self.argmax[0]
        d = risk[best] - risk
        half = student_t.ppf(0.5 + level / 2, m - 1) * d.std(axis=1, ddof=1) / np.sqrt(m)
        return [i for i in range(B) if i != best and not d[i].mean() - half[i] > 0]

    @draws("box")
    def _plot_box(self, ax: Any, rate_threshold: float | None = None,
                  n_targets: int | None = None) -> Any:
        """Box plot of the expected match risk over datasets (Hornby & Hu 2021 Fig. 6), from 0;
        with ``rate_threshold`` (per cent of the ``n_targets`` targets: the audit's
        ``expected_match_rate``), the threshold in targets, and the rate on the right axis."""
        pos = np.arange(1, len(self.risk) + 1)
        ax.boxplot(list(self.risk), positions=pos, widths=0.6)
        ax.plot(pos, self.risk_summary, "o-", color="C1", lw=1, ms=4,
                label=f"{self.statistic} over the datasets")
        for i in self.argmax:
            ax.axvline(pos[i], color="C3", ls=":", lw=1)
        ax.set_ylim(bottom=0)
        _rate_threshold(ax, rate_threshold, n_targets)
        ax.set_xticks(pos)
        ax.set_xticklabels(
            self.labels(),
            rotation=0 if self.common else 45,
            ha="center" if self.common else "right",
        )
        rt = self.settings.get("radius_type", "")
        # a percentage radius is a fraction: 0.1 is ±10 %
        ax.set_xlabel("radius, fraction of the value (0.1 = ±10 %)" if rt == "percentage"
                      else "radius" + (f" ({rt})" if rt else ""))
        ax.set_ylabel("expected match risk (targets, sum of IR)")
        labels = self.labels()
        best = labels[self.argmax[0]] if self.argmax else ""
        same = self.indistinguishable()
        m = self.risk.shape[1]
        verdict = ("one dataset: no spread to judge it by" if same is None else
                   f"above every other radius beyond the spread over the {m} datasets"
                   if not same else
                   "not distinguishable from the other radii (paired 95 % intervals)"
                   if len(same) == len(labels) - 1 else
                   f"not distinguishable from {', '.join(labels[i] for i in same)}")
        ax.set_title(f"Identification risk by radius: largest {self.statistic} at {best},\n"
                     f"{verdict}", fontsize="medium")
        legend_below(ax)
        return ax


def _rate_threshold(ax: Any, rate: float | None, n_targets: int | None) -> None:
    """On an axis of the expected match risk (targets): the audit's threshold of the expected
    match rate (``rate``, per cent of the ``n_targets`` targets), in targets, and the rate on a
    right axis, so that the figure reads in the verdict's unit too (issue 66)."""
    if rate is None or not n_targets:
        return
    n = float(n_targets)
    allowed = float(rate) / 100 * n
    ax.axhline(allowed, color="#a51d2d", ls="--", lw=1.2,
               label=f"threshold: expected match rate {rate:g} % ({allowed:,.4g} targets)")
    right = ax.secondary_yaxis("right", functions=(lambda y: 100 * y / n,
                                                   lambda p: p * n / 100))
    right.set_ylabel("expected match rate (% of targets)")
    ax.set_ylim(top=max(ax.get_ylim()[1], 1.1 * allowed))
