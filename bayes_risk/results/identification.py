"""Results of identification risk (:doc:`/methods/identification`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from bayes_risk._io import to_jsonable
from bayes_risk._numeric import ties
from bayes_risk.results import _identification_plots as _plots
from bayes_risk.results import _identification_summary as _words
from bayes_risk.results._base import RiskResult

if TYPE_CHECKING:
    import scipy.sparse as sp

__all__ = ["IdentificationResult", "RadiusSweepResult", "UNCERTAIN_MEASURES"]

#: measures whose Monte Carlo error and replicate spread ``uncertainty()`` reports
UNCERTAIN_MEASURES = ("expected_match_risk", "true_match_rate_targets", "true_match_rate_unique",
                      "false_match_rate", "n_unique")


def _int64(res: IdentificationResult, *names: str) -> dict[str, np.ndarray]:
    """The tables ``names`` of ``res`` as int64 columns of a record table (the record tables
    and their files keep the integer columns of before the arrays were narrowed)."""
    return {k: getattr(res, k).ravel().astype(np.int64) for k in names}


def _row_sums(a: np.ndarray, dtype: type) -> np.ndarray:
    """``a.sum(axis=1, dtype=dtype)`` of an integer or 0/1 table ``[N_T, m]``, exact, a
    column at a time (numpy's sum walks each row's m values: 4x slower at m = 5)."""
    out = np.zeros(a.shape[0], dtype=dtype)
    for j in range(a.shape[1]):
        out += a[:, j]
    return out


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
            "target": np.array(self.target_ids),  # the table's own, as the sums below
            "IR": np.array(self.record_IR),
            "c_mean": _row_sums(self.c, np.float64) / self.c.shape[1],
            "T_datasets": _row_sums(self.T, np.int64),
            "K_datasets": _row_sums(self.K, np.int64),
            "W_datasets": _row_sums(self.W, np.int64),
            "declared_datasets": _row_sums(self.declared, np.int64),
        }
        if self.settings.get("membership") == "unknown":
            cols["p_out_mean"] = self.p_out.mean(axis=1)
        # arrays of its own, not copied again into one block per type (0.05 s at 10^6 targets)
        return pd.DataFrame(cols, copy=False)

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

    # the words and the figures (bayes_risk.results._identification_summary, _plots)
    summary = _words.summary
    headline = _words.headline
    plot_kinds = ("record_risk", "per_dataset", "running_estimate")
    _plot_record_risk = _plots.record_risk
    _plot_per_dataset = _plots.per_dataset
    _plot_running_estimate = _plots.running_estimate


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

    # the words (bayes_risk.results._identification_summary)
    headline = _words.sweep_headline
    summary = _words.sweep_summary

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

    # the figures (bayes_risk.results._identification_plots)
    _plot_profile = _plots.profile
    _plot_box = _plots.box

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

